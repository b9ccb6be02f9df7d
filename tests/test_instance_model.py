"""The instance model against its done-when lines (issue 8): published measurements, Rubin CPX
scaling, a Groq LPU pipeline, fp8 KV, where the estimate's time goes, and joint calibration."""

from __future__ import annotations

import csv
import json
import math
import statistics

import numpy as np
import pytest
import yaml
from conftest import DATA, REPO

from prfaas_plan import api, published
from prfaas_plan.choices import EngineName, PrefillCapacity
from prfaas_plan.errors import PlanInputError
from prfaas_plan.timing.instance import Instance
from prfaas_plan.timing.layout import Layout
from prfaas_plan.timing.memory import chips_needed
from prfaas_plan.timing.prefill import RooflinePrefill

PUBLISHED_CSV = DATA / "published_benchmarks.csv"


@pytest.fixture(scope="module")
def predictions():
    return published.predict_all(str(PUBLISHED_CSV))


# --- published measurements -----------------------------------------------------------------


def test_every_published_row_is_predicted(predictions):
    with open(PUBLISHED_CSV, newline="") as f:
        ids = [row["id"] for row in csv.DictReader(f)]
    assert [p.id for p in predictions] == ids and len(ids) == 15
    for p in predictions:
        assert np.isfinite(p.predicted) and p.predicted > 0, p


def test_published_median_error_at_most_25pct(predictions):
    errors = [p.error for p in predictions]
    assert statistics.median(errors) <= 0.25
    summary = published.summary(predictions)
    assert summary["median_error"] == pytest.approx(statistics.median(errors))
    assert summary["worst_factor"] == pytest.approx(max(max(p.ratio, 1 / p.ratio) for p in predictions))


def test_published_rows_within_2x(predictions):
    for p in predictions:
        assert 0.5 <= p.ratio <= 2.0, p


def test_published_trtllm_bench_rows_run_as_the_tool_ran_them(predictions):
    """B06 (DeepSeek-R1 1K/1K on 8 x H200): 3,000 requests queued at once, at most 384 running per
    rank and 2,048 tokens per iteration (trtllm-bench's own limits), predicted below the steady
    state at the memory-limited batch, which was 2.05x the published figure."""
    by_id = {p.id: p for p in predictions}
    model = api.precision_of(api.model_of("deepseek-v3"), {"kv": "fp8"})
    steady = api.estimate(model, "h200", 8, input_tokens=1024, output_tokens=1024, parallel={"ep": 8, "dp_attention": 8})
    assert steady.e2e_output_tokens_per_s / 8 / 1620 > 2.0  # the old prediction
    run = api.estimate(
        model,
        "h200",
        8,
        input_tokens=1024,
        output_tokens=1024,
        parallel={"ep": 8, "dp_attention": 8},
        max_batch=384 * 8,
        requests=3000,
        engine={"prefill_tokens_per_pass": 2048, "chunked_prefill": False},
    )
    assert by_id["B06"].predicted == pytest.approx(run.e2e_output_tokens_per_s / 8)
    assert run.concurrency == 3072 and run.offline.requests == 3000
    assert run.e2e_output_tokens_per_s < run.e2e_steady_output_tokens_per_s < steady.e2e_output_tokens_per_s


def test_published_layouts_follow_the_source(predictions):
    by_id = {p.id: p for p in predictions}
    assert by_id["B01"].layout == "dp-attn32 ep32"  # 'EP32 + DP attention'
    assert by_id["B09"].layout == "tp2"  # 'TP2'
    assert by_id["B14"].layout == "tp8"
    assert by_id["B05"].gpus == 5 and "cannot hold" in by_id["B05"].note  # 4 GPUs offload weights to the host


def test_published_script_prints_table_and_summary(tmp_path):
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "published.py"), str(PUBLISHED_CSV)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert "B15" in out.stdout and "median |error|" in out.stdout and "worst" in out.stdout
    # the engine-neutral figures beside the engines' own, per row and in the summary
    by_id = {p.id: p for p in published.predict_all(str(PUBLISHED_CSV), EngineName.generic)}
    own = {p.id: p for p in published.predict_all(str(PUBLISHED_CSV))}
    b12 = next(line for line in out.stdout.splitlines() if line.startswith("B12 "))
    assert own["B12"].ratio != pytest.approx(by_id["B12"].ratio)  # TensorRT-LLM's FP8 KV for an FP8 checkpoint
    assert f" {own['B12'].ratio:.2f} {by_id['B12'].ratio:>7.2f}  " in b12
    generic = published.summary(list(by_id.values()))
    assert f"engine generic: median |error| {100 * generic['median_error']:.1f}%" in out.stdout


# --- Rubin CPX: prefill time falls with chips and precision until something else binds --------

RUBIN_PROMPT = 32768


def rubin_ttft(chips: int, precision=None):
    """One 32K prompt of the 1T hybrid on Rubin CPX, pipelined over 8 stages of chips / 8."""
    est = api.estimate(
        "prfaas-1t-hybrid",
        "rubin-cpx",
        chips,
        input_tokens=RUBIN_PROMPT,
        output_tokens=1,
        parallel={"tp": chips // 8, "pp": 8},
        precision=precision,
    )
    return est.ttft_s, est.first_token


@pytest.mark.filterwarnings("ignore:prfaas-1t-hybrid's measured points")
def test_rubin_cpx_prefill_falls_with_chips_until_communication_binds():
    times, budgets = zip(*(rubin_ttft(n) for n in (8, 16, 32, 64, 128)))
    assert times[0] > times[1] > times[2] > times[3]  # more chips, less time ...
    assert times[4] > times[3]  # ... until the PCIe all-reduce costs more than the chips save
    assert budgets[0].binding == "memory"  # 8 chips: each stage reads its weights per chunk
    assert [b.binding for b in budgets[2:]] == ["communication"] * 3  # and the report says so
    assert budgets[4].compute_s < budgets[2].compute_s / 3.9  # compute keeps falling as 1 / chips
    for t, b in zip(times, budgets):
        assert b.seconds == pytest.approx(t, rel=1e-9)
        assert b.compute_s + b.memory_s + b.communication_s + b.overhead_s == pytest.approx(b.seconds, rel=1e-9)


@pytest.mark.filterwarnings("ignore:prfaas-1t-hybrid's measured points")
@pytest.mark.parametrize("chips", [16, 32, 64])
def test_rubin_cpx_prefill_falls_as_compute_precision_drops(chips):
    # the default profile computes in bf16 (experts int4, widened to bf16); then fp8 attention,
    # fp4 experts (same bytes as int4) and fp4 dense weights
    steps = [
        None,
        {"attention": "fp8"},
        {"attention": "fp8", "experts": "fp4"},
        {"attention": "fp8", "experts": "fp4", "weights": "fp4"},
    ]
    results = [rubin_ttft(chips, p) for p in steps]
    times = [t for t, _ in results]
    computes = [b.compute_s for _, b in results]
    assert times[1] < times[0] and computes[1] < computes[0]  # attention at 32K is compute-bound
    # a chunk sends ~170 tokens to each of 384 experts: reading their weights binds, not their
    # FLOPs, so fp4 expert math changes nothing: memory binds there
    assert times[2] == pytest.approx(times[1], rel=1e-12)
    assert times[3] < times[2] and computes[3] < computes[2]  # the dense projections are compute-bound
    assert results[-1][1].binding in ("memory", "communication")
    assert results[-1][1].compute_s < 0.25 * results[-1][1].seconds


# --- Groq LPU: a pipeline over the chips its weights need ---------------------------------------


def test_groq_llama2_70b_decode_is_a_pipeline_at_about_300_tokens_per_user():
    est = api.estimate("llama-2-70b", "groq-lpu", None, input_tokens=1024, output_tokens=1024, concurrency=1)
    layout = est.decode.layout
    model = api.model_of("llama-2-70b")
    hw = api.hardware_of("groq-lpu")
    needed, _ = chips_needed(model, Instance(hw, 1), 2048)
    assert est.gpus == needed and layout.chips == needed
    assert layout.pp > 1 and layout.pp * layout.tp == needed
    # 140 GB of fp16 weights on 230 MB chips: no fewer than the weights need at the usable fraction
    weights = 2 * 68.98e9
    assert needed >= weights / (hw.memory_gib * 2**30)
    # every stage's hop is paid, per token
    assert est.decode.communication_s >= layout.pp * hw.scale_up_latency_us * 1e-6
    assert 150 <= est.per_user_tokens_per_s <= 600  # published ~300 tokens/s per user (Groq)


# --- fp8 KV ----------------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:prfaas-1t-hybrid's measured points")
@pytest.mark.parametrize("model", ["llama-3.1-8b", "deepseek-v3", "prfaas-1t-hybrid"])
def test_fp8_kv_halves_skv_and_phi_kv_exactly(model):
    lengths = [1024, 32768]
    bf16 = api.kv_report(model, "h200", 8, lengths, source="roofline")
    fp8 = api.kv_report(model, "h200", 8, lengths, source="roofline", precision={"kv": "fp8"})
    assert fp8.kv_model.growing_bytes_per_token == bf16.kv_model.growing_bytes_per_token / 2
    assert fp8.kv_model.fixed_bytes == bf16.kv_model.fixed_bytes  # recurrent state keeps its own dtype
    for a, b in zip(bf16.rows, fp8.rows):
        assert b.prefill_s == a.prefill_s
        if bf16.kv_model.fixed_bytes == 0:
            assert b.kv_bytes * 2 == a.kv_bytes
            assert b.phi_kv_gbps * 2 == pytest.approx(a.phi_kv_gbps, rel=1e-12)
        else:
            growing = bf16.kv_model.growing_bytes_per_token * a.length_tokens
            assert a.kv_bytes - b.kv_bytes == pytest.approx(growing / 2, rel=1e-9)


@pytest.mark.parametrize("model", ["llama-3.1-8b", "deepseek-v3"])
def test_fp8_kv_raises_the_memory_limited_decode_batch(model):
    bf16 = api.decode(model, "h200", 8, 32768)
    fp8 = api.decode(model, "h200", 8, 32768, precision={"kv": "fp8"})
    assert fp8.kv_bytes_per_request * 2 == pytest.approx(bf16.kv_bytes_per_request, rel=1e-9)
    assert fp8.bs_max_memory >= 2 * bf16.bs_max_memory - 1


def test_a_precision_change_drops_measured_points():
    report = api.kv_report("prfaas-1t-hybrid", "h200", 8, [1024])
    assert report.source == "measured"
    with pytest.warns(UserWarning, match="measured points were taken at its own dtypes"):
        report = api.kv_report("prfaas-1t-hybrid", "h200", 8, [1024], precision={"kv": "fp8"})
    assert report.source == "roofline"
    same = api.precision_of(api.model_of("prfaas-1t-hybrid"), {"kv": "bf16"})
    assert same.measured  # no change, the measurements still hold


# --- where the estimate's time goes ------------------------------------------------------------


def test_estimate_ep32_over_four_nodes_charges_the_nic():
    est = api.estimate("deepseek-v3", "h100", 32, input_tokens=1024, output_tokens=1024, parallel="{ep: 32, dp_attention: 32}")
    assert est.prefill.layout == Layout(ep=32, dp_attention=32)
    for budget in (est.prefill, est.decode):
        assert budget.nic_bytes > 0 and budget.communication_s > 0
    # the all-to-all leaves the 8-GPU node for 24 of 32 ranks: most bytes cross the NIC
    assert est.prefill.nic_bytes > est.prefill.scale_up_bytes


def test_estimate_tp8_in_one_node_charges_nvlink_only():
    est = api.estimate("deepseek-v3", "h200", 8, input_tokens=1024, output_tokens=1024, parallel={"tp": 8})
    for budget in (est.prefill, est.decode):
        assert budget.nic_bytes == 0 and budget.scale_up_bytes > 0 and budget.communication_s > 0


def test_estimate_cli_shows_the_budget(run_cli):
    r = run_cli(
        "estimate",
        "deepseek-v3",
        "-H",
        "h100",
        "-g",
        "32",
        "-P",
        "{ep: 32, dp_attention: 32}",
        "-i",
        "1024",
        "-O",
        "1024",
        "-f",
        "json",
    )
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    jobs = {b["job"]: b for b in doc["budget"]}
    assert set(jobs) == {"first token", "prefill pass", "decode step"}
    assert jobs["prefill pass"]["nic_gb_per_chip"] > 0 and jobs["prefill pass"]["layout"] == "dp-attn32 ep32"
    r = run_cli("estimate", "deepseek-v3", "-H", "h200", "-g", "8", "-P", "tp=8", "-f", "csv")
    assert r.code == 0, r.err
    rows = list(csv.DictReader(r.out.splitlines()))
    assert len(rows) == 1 and float(rows[0]["e2e_output_tokens_per_s_per_gpu"]) > 0


def test_estimate_output_that_looks_like_tokens_is_refused(tmp_path, run_cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = run_cli("estimate", "deepseek-v3", "-H", "h200", "-g", "8", "--output", "2K")
    assert r.code == 2 and "--output-tokens" in r.err
    assert list(tmp_path.iterdir()) == []


# --- calibration -------------------------------------------------------------------------------


def test_fewer_points_than_parameters_is_exit_2(tmp_path, run_cli):
    points = tmp_path / "one.csv"
    points.write_text("length,prefill_s\n32768,1.5\n")
    r = run_cli("calibrate", "-m", "prfaas-1t-hybrid", "-H", "h200", "--points", str(points))
    assert r.code == 2 and "Traceback" not in r.err
    assert "--points" in r.err and "1 point cannot determine 3 parameters" in r.err
    r = run_cli("calibrate", "-m", "prfaas-1t-hybrid", "-H", "h200", "--points", str(points), "--fit", "compute")
    assert r.code == 0, r.err


def joint_points(tmp_path):
    """Prefill latencies of two models generated from an h200 with known factors, +/- 1% noise."""
    hw = api.hardware_of("h200")
    truth = {"matmul": 0.6, "attention": 0.55, "prefill_overhead_s": 0.05}
    fp8 = hw.efficiency.matmul_fp8 * truth["matmul"] / hw.efficiency.matmul  # the fit keeps the fp8/bf16 ratio
    true_hw = hw.model_copy(update={"efficiency": hw.efficiency.model_copy(update={**truth, "matmul_fp8": fp8})})
    lengths = np.array([1024.0, 8192.0, 32768.0, 131072.0])
    noise = [1.01, 0.99, 1.01, 0.99]
    path = tmp_path / "joint.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["model", "gpus", "length", "prefill_s"])
        for name in ("llama-3.1-8b", "deepseek-v3"):
            model = api.model_of(name)
            held = RooflinePrefill(model, Instance(hw, 8), capacity=PrefillCapacity.per_request).layout
            times = RooflinePrefill(model, Instance(true_hw, 8, held)).prefill_s(lengths)
            for length, t, n in zip(lengths, times, noise):
                w.writerow([name, 8, int(length), f"{t * n:.6f}"])
    return path, truth


def test_joint_fit_reports_uncertainty_and_leave_one_model_out(tmp_path, run_cli):
    path, truth = joint_points(tmp_path)
    r = run_cli("calibrate", "-H", "h200", "--points", str(path), "-f", "json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert doc["model"] == "deepseek-v3+llama-3.1-8b"
    for key, value in truth.items():
        sd = doc["uncertainty"][key]
        assert sd is not None and sd > 0
        assert abs(doc["fitted"][key] - value) <= 3 * sd + 0.02 * value, (key, doc["fitted"][key], sd)
    loo = doc["leave_one_model_out"]
    assert set(loo) == {"llama-3.1-8b", "deepseek-v3"}
    assert all(e is not None and 0 < e < 0.10 for e in loo.values()), loo
    assert {row["model"] for row in doc["rows"]} == {"llama-3.1-8b", "deepseek-v3"}
    table = run_cli("calibrate", "-H", "h200", "--points", str(path))
    assert "+/-" in table.out and "leave-one-model-out" in table.out


def test_joint_fit_without_noise_recovers_the_factors(tmp_path):
    path, truth = joint_points(tmp_path)
    text = path.read_text().splitlines()
    rows = [text[0]] + [
        ",".join(line.split(",")[:3] + [f"{float(line.split(',')[3]) / n:.9f}"])
        for line, n in zip(text[1:], [1.01, 0.99, 1.01, 0.99] * 2)
    ]
    path.write_text("\n".join(rows) + "\n")
    result = api.calibrate(None, "h200", None, str(path))
    for key, value in truth.items():
        assert result.fitted[key] == pytest.approx(value, rel=1e-3)
    assert all(e < 1e-3 for e in result.leave_one_model_out.values())


def test_points_without_a_model_need_model(tmp_path, run_cli):
    points = tmp_path / "p.csv"
    points.write_text("length,prefill_s\n1024,0.5\n8192,1.0\n32768,2.0\n")
    r = run_cli("calibrate", "-H", "h200", "--points", str(points))
    assert r.code == 2 and "--model" in r.err and "Traceback" not in r.err


# --- which prefill capacity sized each pool -----------------------------------------------------


def test_plan_reports_the_prefill_capacity_of_each_pool(tmp_path, run_cli):
    from conftest import write_case_study

    r = run_cli("plan", "-f", "json")
    assert r.code == 0, r.err
    curves = json.loads(r.out)["prefill_curves"]
    assert curves["prfaas"]["source"] == "measured" and curves["prfaas"]["capacity"] == "per_request"
    assert curves["pd"]["source"] == "calibrated" and curves["pd"]["capacity"] == "per_request"
    scenario = write_case_study(tmp_path, pd__prefill_capacity="saturated")
    r = run_cli("plan", str(scenario))
    assert r.code == 0, r.err
    assert "PD prefill" in r.out and "capacity saturated: batched passes" in r.out
    saturated = api.plan(str(scenario))
    assert saturated.point.stages.theta_pdp > 0


def test_mtp_multiplies_tokens_per_step_and_pays_for_its_drafts():
    dep8 = {"ep": 8, "dp_attention": 8}
    one = api.estimate("deepseek-v3", "h200", 8, input_tokens=1024, output_tokens=1024, concurrency=256, parallel=dep8)
    two = api.estimate(
        "deepseek-v3",
        "h200",
        8,
        input_tokens=1024,
        output_tokens=1024,
        concurrency=256,
        parallel=dep8,
        engine={"mtp_tokens_per_step": 1.8},
    )
    # each request verifies ceil(1.8) = 2 tokens a step: twice the FLOPs; the weights and KV are read
    # once (a few more experts touched, twice the activations)
    assert two.decode.compute_s > 1.5 * one.decode.compute_s
    assert two.decode.memory_s < 1.1 * one.decode.memory_s
    assert one.decode.seconds < two.decode.seconds < 2 * one.decode.seconds
    assert two.decode_tokens_per_s == pytest.approx(256 * 1.8 / two.decode.seconds, rel=1e-12)
    assert two.per_user_tokens_per_s == pytest.approx(1.8 / two.decode.seconds, rel=1e-12)
    assert two.tpot_s == pytest.approx(two.decode.seconds / 1.8, rel=1e-12)
    d1 = api.decode("deepseek-v3", "h200", 8, 4096, parallel=dep8)
    d2 = api.decode("deepseek-v3", "h200", 8, 4096, parallel=dep8, engine={"mtp_tokens_per_step": 1.8})
    assert d1.tokens_per_s < d2.tokens_per_s < 1.8 * d1.tokens_per_s


@pytest.mark.parametrize("mtp", [1.0, 4.0, 16.0])
def test_decode_never_beats_the_compute_peak(mtp):
    """Accepted tokens/s x 2 x active parameters is at most the chips' peak FLOP/s."""
    from prfaas_plan.accounting.params import count_params

    model = api.model_of("qwen3-8b")
    est = api.estimate(model, "h100", 1, input_tokens=1024, output_tokens=1024, engine={"mtp_tokens_per_step": mtp})
    peak = api.hardware_of("h100").peak_tflops.bf16 * 1e12
    assert est.decode_tokens_per_s * 2 * count_params(model).active <= peak


def test_e2e_throughput_and_latency_by_hand():
    i, o, c = 2048, 512, 300
    est = api.estimate("llama-3.1-8b", "h200", 2, input_tokens=i, output_tokens=o, concurrency=c)
    model = api.model_of("llama-3.1-8b")
    inst = api.instance_of(model, "h200", 2).with_layout(est.decode.layout)
    prefill_s = float(RooflinePrefill(model, inst, fit_tokens=i).capacity_s([float(i)])[0])  # saturated, per prompt
    step = est.decode.seconds
    # the prefill pass yields the first token: o - 1 decode steps a request
    assert est.e2e_output_tokens_per_s == pytest.approx(o / (prefill_s + (o - 1) * step / c), rel=1e-9)
    assert est.e2e_output_tokens_per_s < est.decode_tokens_per_s
    # c requests started together: the whole batch's prefill, then its decode (hand-checked in
    # test_published_format.py); one prompt's prefill alone is far shorter
    assert est.e2e_latency_s == pytest.approx(est.batch_prefill_s + (o - 1) * est.tpot_s, rel=1e-12)
    assert est.batch_prefill_s > 10 * est.ttft_s
    assert est.decode_tokens_per_s == pytest.approx(c / step, rel=1e-12)


def test_uncertainty_is_the_standard_error_of_the_fit():
    """One parameter (compute) on three noisy points: s^2 = sum r^2 / (n - 1) and
    sd(log x) = s / sqrt(sum J^2), J by finite differences through the public API."""
    from prfaas_plan.timing.calibrate import CalibrationPoint, calibrate

    model, hw = api.model_of("llama-3.1-8b"), api.hardware_of("h200")
    held = RooflinePrefill(model, Instance(hw, 8), capacity=PrefillCapacity.per_request).layout
    lengths = np.array([8192.0, 32768.0, 131072.0])
    base = RooflinePrefill(model, Instance(hw, 8, held)).prefill_s(lengths)
    measured = base * np.array([1.2, 0.9, 1.05])
    result = calibrate(model, hw, 8, [CalibrationPoint(int(l), float(t)) for l, t in zip(lengths, measured)], fit=["compute"])
    x = result.fitted["compute"]

    def log_t(scale: float) -> np.ndarray:
        e = hw.efficiency
        eff = e.model_copy(
            update={"matmul": e.matmul * scale, "matmul_fp8": e.matmul_fp8 * scale, "attention": e.attention * scale}
        )
        return np.log(RooflinePrefill(model, Instance(hw.model_copy(update={"efficiency": eff}), 8, held)).prefill_s(lengths))

    r = log_t(x) - np.log(measured)
    eps = 1e-4
    jac = (log_t(x * np.exp(eps)) - log_t(x * np.exp(-eps))) / (2 * eps)
    sd_log = math.sqrt(float(np.sum(r**2)) / (len(lengths) - 1) / float(np.sum(jac**2)))
    assert result.uncertainty["compute"] == pytest.approx(x * sd_log, rel=0.02)


def test_a_lone_prompt_sends_all_its_routed_tokens():
    """Expert-parallel dispatch is bound by the busier side: one busy attention group of 32 sends
    all of its routed tokens; spread over all 32 groups, the busiest expert rank receives its
    share x the imbalance (1.18). So a lone prompt moves 32 / 1.18 x as many bytes per chip."""
    from prfaas_plan.accounting.work import prefill_work
    from prfaas_plan.timing.cost import Engine, stage_cost

    model, hw = api.model_of("deepseek-v3"), api.hardware_of("h100")
    layout = Layout(ep=32, dp_attention=32)
    work = [g for g in prefill_work(model, np.array([2048.0])) if g[1].num_experts]  # the MoE layers
    lone = stage_cost(model, hw, layout, Engine(), work, busy_groups=1, prefill=True)
    spread = stage_cost(model, hw, layout, Engine(), work, busy_groups=32, prefill=True)
    assert float(lone.nic_bytes[0]) == pytest.approx(32 / Engine().expert_imbalance * float(spread.nic_bytes[0]), rel=1e-9)
    assert float(lone.communication_s[0]) > float(spread.communication_s[0])


def test_pipeline_reads_the_model_once_per_token():
    """A decode step of one request reads every weight once, however many stages hold them."""
    one = api.estimate("qwen3-8b", "h100", 1, input_tokens=1024, output_tokens=1024, concurrency=1, parallel={"tp": 1})
    eight = api.estimate("qwen3-8b", "h100", 8, input_tokens=1024, output_tokens=1024, concurrency=1, parallel={"pp": 8})
    assert eight.decode.memory_s == pytest.approx(one.decode.memory_s, rel=1e-9)
    assert eight.decode.communication_s > 0  # but pays a hop per stage


def test_a_profile_without_a_nic_searches_only_layouts_within_its_domain(tmp_path):
    doc = yaml.safe_load((REPO / "hardware_profiles" / "h20.yaml").read_text())
    del doc["nic_gbps"]
    doc["name"] = "h20-no-nic"
    path = tmp_path / "h20-no-nic.yaml"
    path.write_text(yaml.safe_dump(doc))
    est = api.estimate("deepseek-v3", str(path), 16, input_tokens=1024, output_tokens=1024)
    for budget in (est.first_token, est.prefill, est.decode):
        assert budget.layout.replica_chips <= 8 and budget.nic_bytes == 0
    with pytest.raises(PlanInputError, match="nic_gbps"):
        api.estimate("deepseek-v3", str(path), 16, parallel={"ep": 16, "dp_attention": 16})


def test_pipeline_memory_is_that_of_the_fullest_stage():
    """61 DeepSeek-V3 layers on 8 stages: the first 5 stages hold 8 layers, the last 3 hold 7;
    3 dense layers sit on stage 1. The fullest chip holds 8 MoE layers (stage 2), more than
    the mean of 61 / 8 layers, plus nothing of the embeddings (those are on stages 1 and 8)."""
    from prfaas_plan.accounting.work import prefill_work
    from prfaas_plan.timing.cost import weights_per_chip

    model = api.model_of("deepseek-v3")
    groups = prefill_work(model, np.array([1024.0]))
    whole = weights_per_chip(model, Layout(), groups)
    dense, moe = [w for _, w in groups[:-1]]
    assert dense.num_experts == 0 and moe.num_experts > 0
    per_layer = {id(w): w.mixer_weight_bytes + w.dense_weight_bytes + w.num_experts * w.per_expert_bytes for w in (dense, moe)}
    scale = whole / (
        3 * per_layer[id(dense)] + 58 * per_layer[id(moe)] + 2 * model.vocab_size * model.hidden_size * 1.0
    )  # fp8 embeddings; declared-size scaling
    stage2 = 8 * per_layer[id(moe)] * scale
    stage1 = (3 * per_layer[id(dense)] + 5 * per_layer[id(moe)] + model.vocab_size * model.hidden_size) * scale
    assert weights_per_chip(model, Layout(pp=8), groups) == pytest.approx(max(stage1, stage2), rel=1e-9)
    assert weights_per_chip(model, Layout(pp=8), groups) > whole / 8


@pytest.mark.parametrize(
    "fn, lo, hi, root",
    [
        (lambda x: math.exp(20 * x) - math.exp(-60), -4.25, 0.357, -3.0),  # values over 70 orders of magnitude
        (lambda x: (x - 0.2) ** 3, -4.0, 1.0, 0.2),  # flat at the root
        (lambda x: -1.0 if x < 0.3 else 1.0, -4.0, 1.0, 0.3),  # a step
        (lambda x: 2 * x - 1, -4.0, 1.0, 0.5),
    ],
)
def test_calibration_root_finder_meets_its_tolerance(fn, lo, hi, root):
    from prfaas_plan.timing.calibrate import _bisect

    assert _bisect(fn, lo, hi) == pytest.approx(root, abs=1e-9)
    if fn(root) == 0:
        assert _bisect(fn, root, hi) == root  # a root at the bracket's end
    assert _bisect(lambda x: fn(x) + 1e9, lo, hi) is None  # no sign change


@pytest.mark.parametrize("column, value", [("gpus", "abc"), ("input_len", "1e400")])
def test_a_malformed_published_row_is_one_error(tmp_path, column, value):
    with open(PUBLISHED_CSV, newline="") as f:
        rows = list(csv.DictReader(f))
    rows[0][column] = value
    path = tmp_path / "bad.csv"
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerow(rows[0])
    with pytest.raises(PlanInputError, match="line 2"):
        published.predict_all(str(path))


def test_both_published_sets_hold_todays_accuracy():
    """A regression guard, not the aim (median 15%, none beyond 2x, issue 17): over the 80 rows of both
    sets no row is refused, the median |error| stays at most 30% and no row is beyond 3x, with the
    engine each row names; the engine-neutral profile is predicted for every row too."""
    rows = published.predict_all(str(PUBLISHED_CSV)) + published.predict_all(str(DATA / "published_benchmarks_new.csv"))
    assert len(rows) == 80
    summary = published.summary(rows)
    assert summary["median_error"] <= 0.30 and summary["worst_factor"] <= 3.0, summary
    generic = published.predict_all(str(DATA / "published_benchmarks_new.csv"), EngineName.generic)
    assert len(generic) == 65 and all(p.predicted > 0 for p in generic)


def test_a_static_batch_prefills_on_the_chips_that_decode_it():
    """With no layout given, the e2e latency's batch prefill runs on the decode layout (one set of chips
    does both jobs), not on the lone prompt's fastest layout, and equals the passes of C prompts there."""
    m = api.model_of("llama-3.3-70b")
    est = api.estimate(m, "h100", 8, input_tokens=4096, output_tokens=1024, concurrency=64)
    assert est.first_token.layout != est.decode.layout  # the case this is about
    inst = api.instance_of(m, "h100", 8, None, None, 4096 + 1024).with_layout(est.decode.layout)
    burst = RooflinePrefill(m, inst, capacity=PrefillCapacity.saturated, fit_tokens=4096).batch(4096, 64)
    assert est.batch_prefill_s == pytest.approx(burst.seconds, rel=1e-12)
    assert est.e2e_latency_s == pytest.approx(burst.seconds + 1023 * est.tpot_s, rel=1e-12)


def test_estimate_says_what_the_measured_points_give_where_the_model_has_them(run_cli):
    """estimate times the roofline; where the model profile has measured prefill points for the
    instance (prfaas-1t-hybrid on 8 x H200, the paper's Table 5), it gives the measured prefill of
    one prompt beside it, as kv and plan use it, and says so; elsewhere nothing."""
    args = ("estimate", "prfaas-1t-hybrid", "-H", "h200", "-g", "8", "-i", "32K", "-O", "1K")
    (row,) = json.loads(run_cli(*args, "-f", "json").out)["rows"]
    kv = json.loads(run_cli("kv", "prfaas-1t-hybrid", "-H", "h200", "-g", "8", "-l", "32K", "-f", "json").out)
    assert kv["source"] == "measured" and row["measured_prefill_s"] == pytest.approx(kv["rows"][0]["prefill_s"], abs=5e-4)
    assert row["measured_prefill_s"] != pytest.approx(row["ttft_s"], rel=0.05)  # the roofline's TTFT is another figure
    assert "measured: prfaas-1t-hybrid has measured prefill points on 8xh200" in run_cli(*args).out
    (other,) = json.loads(run_cli("estimate", "qwen3-8b", "-H", "h200", "-g", "1", "-f", "json").out)["rows"]
    assert other["measured_prefill_s"] is None
