"""Edge cases: objectives other than throughput, zero capacity, large searches, mixed dtypes,
fit checks, output paths and permissions, strict inputs."""

import json
import os
import stat
from pathlib import Path

import numpy as np
import pytest
import yaml
from oracles.one_site import brute_force

from prfaas_plan import api
from prfaas_plan.accounting.params import count_params, weight_bytes
from prfaas_plan.choices import Dtype
from prfaas_plan.planner.optimizer import optimise
from prfaas_plan.planner.throughput import bounds, threshold_table

REPO = Path(__file__).resolve().parents[1]
CASE = yaml.safe_load((REPO / "prfaas_plan/scenarios/paper-case-study.yaml").read_text())


@pytest.fixture(scope="module")
def case(case_inputs):
    return case_inputs


@pytest.mark.slow
def test_slo_plan_keeps_throughput_marginals_and_jensen(tmp_path, run_cli, case_study_file):
    plain = json.loads(run_cli("plan", "-f", "json").out)
    slo = json.loads(run_cli("plan", case_study_file(tmp_path, slo={"ttft_p90_s": 4.0}), "-f", "json").out)
    assert slo["marginal_lambda_rps"] == plain["marginal_lambda_rps"]  # both of the max-throughput plan
    # the Jensen gap is of the plan shown (issue 16): the SLO plan's counts, not the max-throughput plan's
    assert slo["jensen"]["lambda_exact_rps"] < plain["jensen"]["lambda_exact_rps"]
    assert slo["marginal_lambda_rps"]["per_gbps"] == pytest.approx(0.0, abs=1e-9)  # the link is 12% used
    assert (slo["prfaas_pd"]["n_p"], slo["prfaas_pd"]["n_d"]) != (plain["prfaas_pd"]["n_p"], plain["prfaas_pd"]["n_d"])


def test_no_capacity_is_an_error(tmp_path, run_cli, case_study_file):
    out = tmp_path / "plan.json"
    for changes in ({"prfaas__instances": 0, "pd__instances": 1}, {"link__bandwidth_gbps": 0, "pd__instances": 1}):
        res = run_cli("plan", case_study_file(tmp_path, **changes), "-f", "json", "-o", out)
        assert res.code == 2 and "serve any request" in res.err and "Traceback" not in res.err
        assert not out.exists()


def test_milp_matches_brute_force_on_a_wide_search(case):
    """Wide ranges, where a threshold window around the coarse choice alone used to miss."""
    inputs = case.with_limits(prfaas_min=0, prfaas_max=12, pd_min=0, pd_max=20)
    table = threshold_table(inputs, "paper")
    milp = optimise(inputs, table, method="milp")
    brute = brute_force(inputs, table)
    assert milp.lambda_max == pytest.approx(brute.lambda_max, rel=1e-9)


def test_min_cost_takes_the_best_threshold_for_its_counts(case):
    inputs = case.with_limits(prfaas_min=0, prfaas_max=4)
    table = threshold_table(inputs, "exact")
    sol = optimise(inputs, table, objective="min_cost", target_rps=2.0)
    lam = bounds(table, np.arange(len(table)), sol.n_prfaas, sol.n_p, sol.n_d, inputs).lambda_max
    assert sol.lambda_max == pytest.approx(lam.max())
    brute = optimise(inputs, table, objective="min_cost", target_rps=2.0, method="enumerate")
    assert (sol.usd_per_hour, sol.lambda_max) == pytest.approx((brute.usd_per_hour, brute.lambda_max))


def test_mixed_dtype_weight_bytes(case):
    m = api.model_of("prfaas-1t-hybrid")  # routed experts int4, the rest bf16
    counts = count_params(m)
    dense = counts.total - counts.routed_expert_total
    assert weight_bytes(m) == pytest.approx(counts.routed_expert_total * 0.5 + dense * 2)
    assert 540e9 < weight_bytes(m) < 560e9


def test_prfaas_instance_must_hold_the_model(tmp_path, run_cli, case_study_file):
    res = run_cli("plan", case_study_file(tmp_path, prfaas__hardware="h100", prfaas__gpus_per_instance=1))
    assert res.code == 2 and "prfaas.gpus_per_instance" in res.err and "does not fit" in res.err


def test_prefix_cache_keeps_the_full_context_for_decode(tmp_path):
    from prfaas_plan.profiles.scenario import load_scenario
    from prfaas_plan.study.resolve import build_inputs

    doc = yaml.safe_load(yaml.safe_dump(CASE))
    doc["workload"]["prefix_cache"] = {"hit_fractions": [0.9], "probs": [1.0]}
    inputs = build_inputs(load_scenario(doc), str(REPO / "prfaas_plan/scenarios/x.yaml"))
    assert inputs.input_dist.mean_tokens() == pytest.approx(0.1 * 27_486, rel=0.01)  # routing: uncached
    assert inputs.decode.context_tokens == pytest.approx(27_486 + 512, rel=0.01)  # decode: everything


def test_unknown_or_negative_gpu_budget(tmp_path, run_cli, case_study_file):
    res = run_cli("plan", case_study_file(tmp_path, budgets={"gpus": {"h2OO": 8}}))
    assert res.code == 2 and "budgets.gpus.h2OO" in res.err and "no pool uses" in res.err
    res = run_cli("plan", case_study_file(tmp_path, budgets={"gpus": {"h20": -8}}))
    assert res.code == 2 and "budgets.gpus" in res.err


@pytest.mark.parametrize(
    "instances,needle", [(True, "must be a number, not true"), ("4", "must be an integer"), ({"min": 3}, "prfaas.instances.max")]
)
def test_instance_counts_are_strict(tmp_path, run_cli, instances, needle, case_study_file):
    res = run_cli("plan", case_study_file(tmp_path, prfaas__instances=instances))
    assert res.code == 2 and needle in res.err, res.err
    assert "function-after" not in res.err and "CountRange" not in res.err


def test_output_paths(tmp_path, run_cli):
    res = run_cli("kv", "qwen3-8b", "-H", "h100", "-o", tmp_path)
    assert res.code == 2 and "is a folder" in res.err
    res = run_cli("kv", "qwen3-8b", "-H", "h100", "-o", tmp_path / "missing" / "kv.txt")
    assert res.code == 2 and "does not exist" in res.err
    res = run_cli("plot", "-o", tmp_path / "missing" / "f.png")
    assert res.code == 2 and "Traceback" not in res.err


def test_output_file_permissions(tmp_path, run_cli):
    out = tmp_path / "kv.csv"
    assert run_cli("kv", "qwen3-8b", "-H", "h100", "-f", "csv", "-o", out).code == 0
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~umask
    out.chmod(0o640)
    assert run_cli("kv", "qwen3-8b", "-H", "h100", "-f", "csv", "-o", out).code == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o640  # a replaced file keeps its mode


def test_impossible_calibration_is_an_error(tmp_path, run_cli):
    points = tmp_path / "p.csv"
    points.write_text("length,prefill_s\n1K,0.0001\n8K,0.0002\n32K,0.0003\n")
    out = tmp_path / "hw.yaml"
    res = run_cli("calibrate", "--model", "prfaas-1t-hybrid", "--hardware", "h200", "--points", points, "-o", out)
    assert res.code == 2 and "cannot reproduce" in res.err and not out.exists()


def test_kv_checks_lengths_before_fit(run_cli):
    res = run_cli("kv", "qwen3-8b", "-H", "h100", "--gpus", "1", "-l", "999999999K")
    assert res.code == 2 and "above the limit" in res.err
    res = run_cli("kv", "qwen3-8b", "-H", "h100", "--gpus", "1", "-l", "8M")  # within 16M, beyond the model
    assert res.code == 2 and "exceeds qwen3-8b's context" in res.err


@pytest.mark.parametrize("lengths", ["1K,,", ",8K", "1K, ,2K"])
def test_empty_length_items(run_cli, lengths):
    res = run_cli("kv", "qwen3-8b", "-H", "h100", "-l", lengths)
    assert res.code == 2 and "empty item" in res.err


def test_reversed_override_range(tmp_path, run_cli):
    doc = yaml.safe_load((REPO / "model_profiles/deepseek-v3.yaml").read_text())
    doc["layers"]["overrides"] = [{"layers": "5-2", "ffn": "dense"}]
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(doc))
    res = run_cli("validate", path)
    assert res.code == 2 and "backwards" in res.err


def test_fp4_peak_below_fp8_rejected(tmp_path, run_cli):
    doc = yaml.safe_load((REPO / "hardware_profiles/b200.yaml").read_text())
    doc["peak_tflops"]["fp4"] = 100
    path = tmp_path / "hw.yaml"
    path.write_text(yaml.safe_dump(doc))
    res = run_cli("validate", path)
    assert res.code == 2 and "fp4" in res.err


@pytest.mark.parametrize(
    "profile, edit, needle",
    [
        ("h100", {"peak_tflops": {"bf16": 0.989, "fp8": 1979}}, "peak_tflops.fp8 is 2,001x peak_tflops.bf16, more than 8x"),
        ("b200", {"peak_tflops": {"bf16": 2250, "fp8": 4.5, "fp4": 9000}}, "peak_tflops.fp8 is below peak_tflops.bf16"),
        ("b200", {"peak_tflops": {"bf16": 2250, "fp8": 4500, "fp4": 4.5e5}}, "peak_tflops.fp4 is 100x peak_tflops.fp8"),
        ("h100", {"memory_bandwidth_tb_per_s": 3350}, "is 0.2952 FLOP per byte, outside 1 to 1e+06"),
        ("groq-lpu", {"peak_tflops": {"bf16": 50, "fp8": 200}}, "is 0.625 FLOP per byte"),
        ("h100", {"peak_tflops": {"bf16": 989000}}, "peak_tflops.bf16: must be in [0.001, 500,000] TFLOPS"),
    ],
    ids=["bf16-in-pflops", "fp8-in-pflops", "fp4-in-gflops", "bandwidth-in-gb-per-s", "sram-faster-than-compute", "in-gflops"],
)
def test_hardware_figures_in_the_wrong_unit_are_refused(tmp_path, run_cli, profile, edit, needle):
    """A peak more than 8x the next wider dtype's, or a BF16 peak below 1 FLOP per byte of memory
    bandwidth (the shipped chips span 2.4 to 2,500, ranges.MACHINE_BALANCE), is a figure in another
    unit: refused in one line, exit 2; every shipped profile passes."""
    doc = yaml.safe_load((REPO / f"hardware_profiles/{profile}.yaml").read_text())
    doc.update(edit)
    path = tmp_path / "hw.yaml"
    path.write_text(yaml.safe_dump(doc))
    res = run_cli("validate", path)
    assert res.code == 2 and needle in res.err and len(res.err.strip().splitlines()) == 1, res.err
    for shipped in (REPO / "hardware_profiles").glob("*.yaml"):
        assert run_cli("validate", shipped).code == 0, shipped


def test_fp4_experts_run_at_the_fp4_peak():
    """gpt-oss-style MXFP4 experts prefill faster on a chip with fp4 tensor cores than the same
    model with bf16 experts; on a chip without fp4 they fall back to fp8."""
    from prfaas_plan.timing.instance import Instance
    from prfaas_plan.timing.prefill import RooflinePrefill

    m = api.model_of("qwen3-235b")
    fp4 = m.model_copy(update={"dtypes": m.dtypes.model_copy(update={"experts": Dtype.fp4})})
    b200 = Instance(api.hardware_of("b200"), 8)
    h200 = Instance(api.hardware_of("h200"), 8)
    t = lambda model, inst: RooflinePrefill(model, inst, capacity="per_request").prefill_s([32768])[0]
    assert t(fp4, b200) < t(m, b200)
    fp8 = m.model_copy(update={"dtypes": m.dtypes.model_copy(update={"experts": Dtype.fp8})})
    assert t(fp4, h200) == pytest.approx(t(fp8, h200), rel=1e-3)


def test_a_declared_input_bound_past_the_context_is_refused_though_its_top_bin_fits(tmp_path, run_cli, case_study_file):
    """The case study's model holds 131,072 tokens. A lognormal to 131,100 has its top support point
    (the last bin's conditional mean, about 131,010) inside the context; the declared bound is not,
    and the error quotes it."""
    path = case_study_file(
        tmp_path, workload__input={"type": "lognormal", "mu": 9.9, "sigma": 1.0, "min_tokens": 128, "max_tokens": 131100}
    )
    res = run_cli("plan", path)
    assert res.code == 2 and "workload.input" in res.err and "131,100 tokens" in res.err and "context of 131,072" in res.err


def test_inputs_that_leave_no_room_for_the_output_are_planned_with_a_note_of_their_share(tmp_path, case_study_file):
    """A quarter of the requests have 131,000 input tokens and 1,024 outputs: 132,023 tokens of KV
    beyond the 131,072 context. vLLM refuses prompt + max_tokens above max_model_len, so inputs
    above 131,072 - 1,024 = 130,048 tokens; the note gives that bound and the 25% share; the
    other three quarters (1,000 tokens) fit, and 130,048 + 1,024 fits exactly."""
    mix = {
        "type": "mixture",
        "components": [{"type": "fixed", "tokens": 131000, "weight": 0.25}, {"type": "fixed", "tokens": 1000, "weight": 0.75}],
    }
    path = case_study_file(tmp_path, workload__input=mix)
    notes = [n for n in api.plan(str(path), with_marginals=False).inputs.notes if "context" in n]
    assert len(notes) == 1
    assert "131,000 tokens with outputs up to 1,024" in notes[0] and "132,023 tokens of KV" in notes[0]
    assert "more than 130,048 input tokens (25.00% of them)" in notes[0]
    fits = case_study_file(tmp_path, workload__input={"type": "fixed", "tokens": 130048})  # exactly the room: no note
    assert not [n for n in api.plan(str(fits), with_marginals=False).inputs.notes if "context" in n]


def test_kv_default_lengths_stop_at_a_short_context(run_cli):
    """Llama-2-70B holds 4,096 tokens: kv's default lengths are 1K and then the context itself (not an
    error at 8K); a 128K model keeps 1K, 8K, 32K and 128K; lengths given past the context still fail."""
    res = run_cli("kv", "llama-2-70b", "-H", "h100", "-f", "json")
    assert res.code == 0, res.err
    assert [row["length_tokens"] for row in json.loads(res.out)["rows"]] == [1024, 4096]
    res = run_cli("kv", "qwen3-8b", "-H", "h100", "--gpus", "1", "-f", "json")
    assert [row["length_tokens"] for row in json.loads(res.out)["rows"]] == [1024, 8192, 32768, 131072]
    res = run_cli("kv", "llama-2-70b", "-H", "h100", "-l", "8K")
    assert res.code == 2 and "exceeds llama-2-70b's context" in res.err
