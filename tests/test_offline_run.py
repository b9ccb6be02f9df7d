"""An offline run of a finite number of requests (``timing.offline``), the prefill chunking switch,
and the limits trtllm-bench sets itself (``published.trtllm_bench_limits``): hand counts, the
steady-state limit and the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest

from prfaas_plan import api, published
from prfaas_plan.errors import PlanInputError
from prfaas_plan.timing.decode import step_cost
from prfaas_plan.timing.offline import batch_per_iteration, offline_run
from prfaas_plan.timing.prefill import RooflinePrefill

GIB = 2**30


# --- admission, counted by hand --------------------------------------------------------------


def test_one_wave_when_everything_fits():
    # 10 requests, room for all, 4 output tokens: admitted together (first token), then 3 decode steps
    assert batch_per_iteration(10, 10, 100, 4, 10**6, True).tolist() == [0, 10, 10, 10]


def test_whole_prompts_within_the_budget_and_the_concurrency():
    # 5 requests, 3 slots, 100-token prompts, budget 250 per iteration shared with decode tokens,
    # 3 output tokens (2 decode steps after the first):
    # it0: 2 prompts fit (floor(250/100)) -> run 0; it1: 1 slot left -> run 2; it2: full -> run 3;
    # it3: the first 2 leave, 2 admitted -> run 1; it4, it5: run 2; then done
    assert batch_per_iteration(5, 3, 100, 3, 250, False).tolist() == [0, 2, 3, 1, 2, 2]
    # with chunked prefill the budget admits prompt fractions: 2.5 in the first iteration
    assert batch_per_iteration(5, 3, 100, 3, 250, True).tolist() == [0, 2.5, 3, 0.5, 2, 2]


def test_decode_tokens_share_the_budget():
    # budget 200, 100-token prompts: 2 fit an empty pass, but beside 2 running decodes only 1
    assert batch_per_iteration(6, 10, 100, 3, 200, False).tolist() == [0, 2, 3, 2, 2, 2, 1]


def test_every_request_decodes_its_output():
    for chunked in (True, False):
        batch = batch_per_iteration(37, 9, 700, 11, 2048, chunked)
        assert batch.sum() == pytest.approx(37 * 10)  # O - 1 decode steps each
        assert batch.max() <= 9


def test_a_prompt_longer_than_the_budget_still_runs_without_chunking():
    # it fits no pass beside running requests, so each runs alone once the one before has finished
    assert batch_per_iteration(3, 3, 5000, 2, 2048, False).tolist() == [0, 1, 0, 1, 0, 1]


def test_one_output_token_is_prefill_only():
    assert batch_per_iteration(5, 3, 100, 1, 250, False).tolist() == [0, 0, 0]


# --- the run's seconds ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def llama():
    model = api.model_of("llama-3.1-8b")
    inst = api.instance_of(model, "h200", 1, {"tp": 1}, {"prefill_tokens_per_pass": 250, "chunked_prefill": False})
    return model, inst


def test_run_seconds_are_prefill_plus_each_iterations_step(llama):
    model, inst = llama
    cap = 0.01
    run = offline_run(model, inst, inst.layout, 100, 3, 5, 3, cap)
    steps, _ = step_cost(model, inst, inst.layout, [2, 3, 1, 2, 2], 100 + 1.5)
    assert run.iterations == 6
    assert run.seconds == pytest.approx(5 * cap + steps.sum(), rel=1e-12)
    assert run.output_tokens_per_s == pytest.approx(5 * 3 / run.seconds)
    assert run.mean_batch == pytest.approx(10 / 6)


def test_run_approaches_the_steady_state_from_below(llama):
    model, inst = llama
    steady = api.estimate(model, "h200", 1, input_tokens=1024, output_tokens=256, parallel={"tp": 1},
                          max_batch=64).e2e_steady_tokens_per_s
    rates = [api.estimate(model, "h200", 1, input_tokens=1024, output_tokens=256, parallel={"tp": 1}, max_batch=64,
                          requests=n).e2e_output_tokens_per_s for n in (16, 64, 640, 64_000)]
    assert all(r <= steady * (1 + 1e-9) for r in rates)
    assert rates == sorted(rates)  # more requests, less ramp and drain per token
    assert rates[-1] == pytest.approx(steady, rel=0.01)
    assert rates[0] < 0.6 * steady  # 16 requests never fill 64 slots


def test_a_smaller_token_budget_slows_the_ramp(llama):
    model, _ = llama
    rates = [api.estimate(model, "h200", 1, input_tokens=1024, output_tokens=1024, parallel={"tp": 1}, requests=300,
                          engine={"prefill_tokens_per_pass": p, "chunked_prefill": False}).e2e_output_tokens_per_s
             for p in (1024, 4096, 16384)]
    assert rates == sorted(rates) and rates[0] < rates[-1]


def test_requests_out_of_range_is_an_error():
    with pytest.raises(PlanInputError, match="--requests"):
        api.estimate("llama-3.1-8b", "h200", 1, requests=0)


# --- chunked prefill on or off ----------------------------------------------------------------


def test_without_chunking_a_long_prompt_is_one_pass():
    model = api.model_of("llama-3.1-8b")

    def curve(**engine):
        inst = api.instance_of(model, "h200", 1, {"tp": 1}, {"prefill_tokens_per_pass": 2048, **engine})
        return RooflinePrefill(model, inst)

    on, off = curve(), curve(chunked_prefill=False)
    lengths = np.array([1024.0, 16384.0])
    # a prompt within the budget: the same either way
    assert off.prefill_s(lengths)[0] == pytest.approx(on.prefill_s(lengths)[0])
    assert off.capacity_s(lengths)[0] == pytest.approx(on.capacity_s(lengths)[0])
    # 16K tokens: 8 chunks with chunking, each paying a pass's fixed costs, 1 without
    fixed = off.instance.hardware.efficiency.prefill_overhead_s  # once per request either way
    _, parts_on = on.single_prompt(lengths)
    _, parts_off = off.single_prompt(lengths)
    assert parts_on.overhead_s[1] - fixed == pytest.approx(8 * (parts_off.overhead_s[1] - fixed))
    assert off.prefill_s(lengths)[1] < on.prefill_s(lengths)[1]


# --- trtllm-bench's own limits, counted by hand -----------------------------------------------


def _fp8(ref, kv="fp8"):
    return api.precision_of(api.model_of(ref), {"weights": "fp8", "kv": kv} if kv else {"weights": "fp8"})


def test_trtllm_limits_for_deepseek_mla_by_hand():
    # DeepSeek-R1 FP8, FP8 KV, 8 x H200 (141e9 B), 1K/1K: the tool reads MLA as 128 kv heads of
    # 7168 / 128 = 56: 2 x 61 x 128 x 56 x 1 B = 874,496 B a token; 0.9 x (8 x 141e9 - 671e9) B free
    # / (874,496 x 2,048) = 229.6 requests -> rounded up to 32s: 256; tokens 229.6 x 2 = 459 -> 2,048
    model = api.precision_of(api.model_of("deepseek-v3"), {"kv": "fp8"})
    requests = 0.9 * (8 * 141e9 - 671e9) / (874_496 * 2048)
    assert requests == pytest.approx(229.6, abs=0.1)
    assert published.trtllm_bench_limits(model, api.hardware_of("h200"), 8, 1024, 1024) == (256, 2048)
    # 1K/8K: 0.9 x 457e9 / (874,496 x 9,216) = 51 -> at least 64; tokens 51 x 1.125 -> 2,048
    assert published.trtllm_bench_limits(model, api.hardware_of("h200"), 8, 1024, 8192) == (64, 2048)


@pytest.mark.parametrize("tp", [1, 16])
def test_trtllm_limits_rounding_branches(tp):
    # GQA: 32 layers, 8 kv heads of 128; at tp 16 the tool counts at least one kv head per rank: 16
    model = api.model_of("llama-3.1-8b")
    hw = api.hardware_of("h200")
    per_token = 2 * 32 * max(tp, 8) * 128 * 2  # bf16 KV
    from prfaas_plan.accounting.params import count_params
    params = model.total_params_b * 1e9 if model.total_params_b else count_params(model).total
    for i, o in ((128, 128), (1000, 2000), (20000, 2000)):
        requests = 0.9 * (tp * 141e9 - params * 2) / (per_token * (i + o))
        batch, tokens = published.trtllm_bench_limits(model, hw, tp, i, o)
        raw = min(requests, 4096)
        step = 32 if raw < 256 else 128 if raw < 1024 else 256
        assert batch % step == 0 and raw <= batch < raw + step and batch >= 64
        raw_tokens = min(raw * (1 + i / o), 32768)
        t_step = 256 if raw_tokens < 4096 else 512 if raw_tokens < 8192 else 1024
        expected = max(2048 if t_step == 256 else 0, t_step * -(-raw_tokens // t_step))
        assert tokens == max(expected, i + batch)


# --- the CLI ----------------------------------------------------------------------------------


def test_estimate_cli_runs_a_finite_offline_benchmark(tmp_path, run_cli):
    out = tmp_path / "e.json"
    result = run_cli("estimate", "llama-3.1-8b", "-H", "h200", "-g", "1", "-i", "1000", "-O", "2000",
                     "--requests", "1500", "--max-batch", "384", "--pass-tokens", "2048", "--no-chunked-prefill",
                     "-f", "json", "-o", str(out))
    assert result.code == 0, result.err
    row = json.loads(out.read_text())["rows"][0]
    assert row["requests"] == 1500 and row["concurrency"] <= 384
    assert row["e2e_output_tokens_per_s"] < row["e2e_steady_output_tokens_per_s"]
    assert row["offline_run_s"] == pytest.approx(1500 * 2000 / row["e2e_output_tokens_per_s"], rel=1e-3)


@pytest.mark.parametrize("args", [["--requests", "0"], ["--requests", "1000001"], ["--max-batch", "0"]])
def test_estimate_cli_refuses_out_of_range_counts(args, run_cli):
    result = run_cli("estimate", "llama-3.1-8b", "-g", "1", *args)
    assert result.code == 2 and "must be in" in result.err and "Traceback" not in result.err
