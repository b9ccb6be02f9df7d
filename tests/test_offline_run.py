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


def test_a_prompt_longer_than_the_budget_without_chunking_is_an_error(run_cli):
    with pytest.raises(PlanInputError, match="whole prompt"):
        batch_per_iteration(3, 3, 5000, 2, 2048, False)
    result = run_cli(
        "estimate", "llama-3.1-8b", "-g", "1", "-i", "16K", "--pass-tokens", "8192", "--no-chunked-prefill", "-N", "100"
    )
    assert result.code == 2 and "--pass-tokens" in result.err and "whole prompt" in result.err
    assert len(result.err.strip().splitlines()) == 1


def test_mtp_shortens_the_decode_and_takes_more_of_the_budget():
    # 2 tokens a step: 6 output tokens need ceil(5 / 2) = 3 decode steps: 3 admitted, 3 steps, then
    # the last one (its 3 steps) once the first 3 have left
    assert batch_per_iteration(4, 3, 100, 6, 300, False, 2.0).tolist() == [0, 3, 3, 3, 0, 1, 1, 1]
    assert batch_per_iteration(4, 3, 100, 6, 300, False, 1.0).sum() == pytest.approx(4 * 5)
    # each running request takes ceil(mtp) = 2 tokens of the budget: the second iteration admits
    # (300 - 2 x 3) / 100 prompt fractions beside the 3 running
    batch = batch_per_iteration(10, 10, 100, 6, 300, True, 2.0)
    assert batch[2] == pytest.approx(3 + (300 - 2 * 3) / 100)


def test_a_run_beyond_the_iteration_limit_is_refused_before_counting(monkeypatch):
    import prfaas_plan.timing.offline as offline

    monkeypatch.setattr(offline, "MAX_ITERATIONS", 1000)
    # 100 requests one at a time, 20 decode steps each: at least 2,100 iterations
    with pytest.raises(PlanInputError, match="more than 1,000 iterations"):
        offline.batch_per_iteration(100, 1, 100, 21, 10**6, True)
    assert offline.batch_per_iteration(10, 1, 100, 21, 10**6, True).size == 210


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
    run = offline_run(model, inst, inst.layout, 100, 3, 5, 3, cap, 101)
    steps, _ = step_cost(model, inst, inst.layout, [2, 3, 1, 2, 2], 101)
    assert run.iterations == 6
    assert run.seconds == pytest.approx(5 * cap + steps.sum(), rel=1e-12)
    assert run.output_tokens_per_s == pytest.approx(5 * 3 / run.seconds)
    assert run.mean_batch_requests == pytest.approx(10 / 6)


def test_attention_groups_each_run_their_share():
    # 4 data-parallel attention groups, 20 requests: each group runs 5 as in the hand count above,
    # and every step carries the four groups' requests together
    model = api.model_of("qwen3-235b")
    inst = api.instance_of(
        model, "h200", 4, {"ep": 4, "dp_attention": 4}, {"prefill_tokens_per_pass": 250, "chunked_prefill": False}
    )
    run = offline_run(model, inst, inst.layout, 100, 3, 20, 12, 0.01, 101)
    steps, _ = step_cost(model, inst, inst.layout, [8, 12, 4, 8, 8], 101)
    assert run.iterations == 6 and run.mean_batch_requests == pytest.approx(4 * 10 / 6)
    assert run.seconds == pytest.approx(20 * 0.01 + steps.sum(), rel=1e-12)


def test_run_approaches_the_steady_state_from_below(llama):
    model, _ = llama
    steady = api.estimate(
        model, "h200", 1, input_tokens=1024, output_tokens=256, parallel={"tp": 1}, max_batch=64
    ).e2e_steady_output_tokens_per_s
    rates = [
        api.estimate(
            model, "h200", 1, input_tokens=1024, output_tokens=256, parallel={"tp": 1}, max_batch=64, requests=n
        ).e2e_output_tokens_per_s
        for n in (16, 64, 640, 64_000)
    ]
    assert all(r <= steady * (1 + 1e-9) for r in rates)
    assert rates == sorted(rates)  # more requests, less ramp and drain per token
    assert rates[-1] == pytest.approx(steady, rel=0.01)
    assert rates[0] < 0.6 * steady  # 16 requests never fill 64 slots


def test_steady_state_batch_is_capped_by_the_token_budget():
    # 128-token prompts, 1K outputs, 256 tokens a pass: decode tokens b and the b / 1023 prompts
    # that replace finishing requests share the budget, so b <= 256 / (1 + 128 / 1023) = 227.5,
    # far below the memory-limited batch; a long run converges to that steady state
    kwargs = dict(input_tokens=128, output_tokens=1024, parallel={"tp": 1}, engine={"prefill_tokens_per_pass": 256})
    free = api.estimate("llama-3.1-8b", "h200", 1, **{**kwargs, "engine": None})
    capped = api.estimate("llama-3.1-8b", "h200", 1, **kwargs)
    assert capped.concurrency > 228  # memory holds more
    model = api.model_of("llama-3.1-8b")
    inst = api.instance_of(model, "h200", 1, {"tp": 1}, {"prefill_tokens_per_pass": 256})
    step, _ = step_cost(model, inst, inst.layout, [256 / (1 + 128 / 1023)], 128 + 512)
    prefill_s = 1024 / capped.e2e_steady_output_tokens_per_s - 1023 * step[0] / (256 / (1 + 128 / 1023))
    assert 0 < prefill_s < 1024 / free.e2e_steady_output_tokens_per_s  # the rest is one prompt's prefill
    long = api.estimate("llama-3.1-8b", "h200", 1, requests=20_000, **kwargs)
    assert long.e2e_output_tokens_per_s == pytest.approx(capped.e2e_steady_output_tokens_per_s, rel=0.02)
    assert long.e2e_output_tokens_per_s <= capped.e2e_steady_output_tokens_per_s * (1 + 1e-9)


def test_a_smaller_token_budget_slows_the_ramp(llama):
    # the same prefill cost for all three, so only the admission differs
    model, _ = llama
    seconds = []
    for budget in (1024, 4096, 16384):
        inst = api.instance_of(model, "h200", 1, {"tp": 1}, {"prefill_tokens_per_pass": budget, "chunked_prefill": False})
        seconds.append(offline_run(model, inst, inst.layout, 1024, 1024, 300, 300, 0.01, 1536).seconds)
    assert seconds == sorted(seconds, reverse=True) and seconds[0] > 1.05 * seconds[-1]


def test_requests_out_of_range_is_an_error():
    with pytest.raises(PlanInputError) as info:
        api.estimate("llama-3.1-8b", "h200", 1, requests=0)
    assert info.value.field == "requests"


# --- chunked prefill on or off ----------------------------------------------------------------


def test_without_chunking_a_long_prompt_is_one_pass():
    model = api.model_of("llama-3.1-8b")

    def curve(**engine):
        inst = api.instance_of(model, "h200", 1, {"tp": 1}, {"prefill_tokens_per_pass": 2048} | engine)
        return RooflinePrefill(model, inst)

    on, off, wide = curve(), curve(chunked_prefill=False), curve(prefill_tokens_per_pass=16384)
    # a prompt within the budget: the same either way
    short = np.array([1024.0])
    assert off.prefill_s(short)[0] == pytest.approx(on.prefill_s(short)[0])
    assert off.capacity_s(short)[0] == pytest.approx(on.capacity_s(short)[0])
    # 16K tokens: 8 chunks with chunking, each paying a pass's fixed costs; without chunking the
    # budget must hold the prompt (an error), and a pass of 16K holds it in one
    long = np.array([16384.0])
    with pytest.raises(PlanInputError, match="whole prompt"):
        off.prefill_s(long)
    fixed = on.instance.hardware.efficiency.prefill_overhead_s  # once per request either way
    _, parts_on = on.single_prompt(long)
    _, parts_one = wide.single_prompt(long)
    assert parts_on.overhead_s[0] - fixed == pytest.approx(8 * (parts_one.overhead_s[0] - fixed))


# --- trtllm-bench's own limits, counted by hand -----------------------------------------------


def _fp8(ref, kv="fp8"):
    return api.precision_of(api.model_of(ref), {"weights": "fp8", "kv": kv} if kv else {"weights": "fp8"})


def test_trtllm_limits_for_deepseek_mla_by_hand():
    # DeepSeek-R1 FP8, FP8 KV, 8 x H200 (141 GiB as the device reports it), 1K/1K: the tool reads
    # MLA as 128 kv heads of 7168 / 128 = 56: 2 x 61 x 128 x 56 x 1 B = 874,496 B a token;
    # 0.9 x (8 x 141 x 2^30 - 671e9) B free / (874,496 B x 2,048) = 271.4 requests -> rounded up
    # to 128s: 384; tokens 271.4 x 2 = 543 -> at least 2,048 (and at least 1,024 + 384)
    model = api.precision_of(api.model_of("deepseek-v3"), {"kv": "fp8"})
    requests = 0.9 * (8 * 141 * 2**30 - 671e9) / (874_496 * 2048)
    assert requests == pytest.approx(271.4, abs=0.1)
    assert published.trtllm_bench_limits(model, api.hardware_of("h200"), 8, 1024, 1024) == (384, 2048)
    # 1K/8K: 0.9 x 540.1e9 / (874,496 x 9,216) = 60.3 -> at least 64; tokens 60.3 x 1.125 -> 2,048
    assert published.trtllm_bench_limits(model, api.hardware_of("h200"), 8, 1024, 8192) == (64, 2048)
    # two pipeline stages of 8: 0.9 x (16 x 141 GiB - 671e9 B) / (874,496 B x 2,048) = 880.1 requests,
    # 440 per stage -> 512
    assert published.trtllm_bench_limits(model, api.hardware_of("h200"), 8, 1024, 1024, pp_size=2)[0] == 512


@pytest.mark.parametrize("tp", [1, 16])
def test_trtllm_limits_rounding_branches(tp):
    # GQA: 32 layers, 8 kv heads of 128; at tp 16 the tool counts at least one kv head per rank: 16
    model = api.model_of("llama-3.1-8b")
    hw = api.hardware_of("h200")
    per_token = 2 * 32 * max(tp, 8) * 128 * 2  # bf16 KV
    from prfaas_plan.accounting.params import count_params

    params = model.total_params_b * 1e9 if model.total_params_b else count_params(model).total
    for i, o in ((128, 128), (1000, 2000), (20000, 2000)):
        requests = 0.9 * (tp * 141 * 2**30 - params * 2) / (per_token * (i + o))
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
    result = run_cli(
        "estimate",
        "llama-3.1-8b",
        "-H",
        "h200",
        "-g",
        "1",
        "-i",
        "1000",
        "-O",
        "2000",
        "--requests",
        "1500",
        "--max-batch",
        "384",
        "--pass-tokens",
        "2048",
        "--no-chunked-prefill",
        "-f",
        "json",
        "-o",
        str(out),
    )
    assert result.code == 0, result.err
    row = json.loads(out.read_text())["rows"][0]
    assert row["offline_requests"] == 1500 and row["concurrency_requests"] <= 384 and row["offline_mean_batch_requests"] <= 384
    assert row["e2e_output_tokens_per_s"] < row["e2e_steady_output_tokens_per_s"]
    table = run_cli(
        "estimate", "llama-3.1-8b", "-H", "h200", "-g", "1", "-i", "1000", "-O", "2000", "-N", "1500", "--max-batch", "384"
    )
    assert table.code == 0 and "a run of 1,500 requests queued at once" in table.out


@pytest.mark.parametrize("args", [["--requests", "0"], ["--requests", "1000001"], ["--max-batch", "0"]])
def test_estimate_cli_refuses_out_of_range_counts(args, run_cli):
    result = run_cli("estimate", "llama-3.1-8b", "-g", "1", *args)
    assert result.code == 2 and "must be in" in result.err and "Traceback" not in result.err


# --- a CSV of one's own: bad rows are one-line errors naming the file and line ----------------


@pytest.mark.parametrize(
    "value,needle",
    [
        ("-3", "line 2: requests: must be in [1, 1,000,000]"),
        ("nan", "line 2: malformed value"),
        ("1e400", "line 2: malformed value"),
    ],
)
def test_published_csv_requests_out_of_range(tmp_path, value, needle):
    import csv

    from conftest import DATA

    with open(DATA / "published_benchmarks.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    row = next(r for r in rows if r["id"] == "B06")
    path = tmp_path / "mine.csv"
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerow({**row, "requests": value})
    with pytest.raises(PlanInputError) as err:
        published.predict_all(str(path))
    assert str(path) in str(err.value) and needle in str(err.value)


def test_published_csv_without_rows(tmp_path):
    path = tmp_path / "empty.csv"
    path.write_text("id,kind,model_ref,tool_hw,gpus,measured,unit\n")
    with pytest.raises(PlanInputError, match="no rows to predict"):
        published.predict_all(str(path))
    path.write_text("id,kind\n")  # and a header without the required columns names them
    with pytest.raises(PlanInputError, match="no column model_ref, tool_hw, gpus, measured, unit"):
        published.predict_all(str(path))
