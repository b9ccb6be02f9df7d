"""The co-located baseline (``planner.colocated``): hand-checked on fixed lengths, its bounds and
monotonicity, its TPOT limit by brute force, and its rows in plan (table, JSON, CSV) and compare
(table, CSV).

The small case (``tests/data/colocated_fixed.yaml``): the case study with every prompt 10,224
tokens (a PD calibration point: the H20 pool prefills it in 1.83 s, per request) and 1,024 output
tokens, decode 800 tokens/s at a batch of 64 (80 ms a step). The homogeneous baseline has 4 + 8 = 12 instances, so by hand

    co-located   12 / (1.83 + 1024 / 800) = 12 / 3.11 = 3.8585 req/s
    TPOT         80 ms + 64 x 1.83 s / 1024 = 194.375 ms
    homogeneous  the best whole split of 12: N_p 7 -> 7 / 1.83 = 3.825, N_d 5 -> 5 x 0.78125 = 3.906: 3.825
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import replace

import pytest
from conftest import REPO

from prfaas_plan.planner.chips import load_inputs
from prfaas_plan.planner.colocated import colocated
from prfaas_plan.planner.plan import local_only, plan
from prfaas_plan.planner.throughput import threshold_table
from prfaas_plan.study.model import Slo, decode_model

PROMPT, T_PD, OUT, TOKENS_PER_S, BATCH, STEP = 10224, 1.83, 1024, 800.0, 64, 0.08
HAND_RPS = 12 / (T_PD + OUT / TOKENS_PER_S)


@pytest.fixture(scope="module")
def fixed_file():
    """The case study with fixed lengths (docs/planning.md shows its plan)."""
    return REPO / "tests" / "data" / "colocated_fixed.yaml"


@pytest.fixture(scope="module")
def fixed_plan(fixed_file):
    return plan(load_inputs(str(fixed_file)), with_marginals=False)


def _parts(inputs):
    table = threshold_table(inputs)
    return local_only(inputs, table)[1], decode_model(inputs)


def test_hand_check_on_fixed_lengths(fixed_plan):
    c = fixed_plan.colocated
    assert c is not None and c.instances == 12 and c.batch == BATCH == c.batch_max
    assert c.prefill_work_s == pytest.approx(T_PD, rel=1e-4)  # the calibration point, fitted exactly
    assert c.lambda_max_rps == pytest.approx(HAND_RPS, rel=1e-4)
    assert c.lambda_max_rps == pytest.approx(3.8585, abs=1e-3)
    assert c.tpot_ms == pytest.approx(1e3 * (STEP + BATCH * T_PD / OUT), rel=1e-4)  # 194.375 ms
    assert c.prompt_tokens_per_step == pytest.approx(BATCH * PROMPT / OUT)  # 639 prompt tokens a step
    assert c.usd_per_hour == fixed_plan.baselines["homogeneous"].usd_per_hour == 192.0
    assert c.gpus == {"h20": 96}
    homog = fixed_plan.baselines["homogeneous"]
    assert (homog.n_p, homog.n_d) == (7, 5) and homog.lambda_max == pytest.approx(7 / T_PD, rel=1e-4)
    assert c.lambda_max_rps > homog.lambda_max  # the fractional split beats the best whole one


def test_tpot_limit_by_brute_force(fixed_plan):
    """A TPOT limit of 150 ms: the largest batch whose step with its chunks is within it, found
    here by a plain loop over the decode model's step times."""
    inputs = replace(fixed_plan.inputs, slo=Slo(tpot_ms=150.0))
    local_table, decode = _parts(inputs)
    c = colocated(inputs, local_table, decode, 12)
    w_p = float(local_table.pd_work_s[-1])
    best = 0
    for b in range(1, decode.batch_size + 1):
        if float(decode.step_s_by_batch[b - 1]) + b * w_p / OUT <= 0.150:
            best = b
    assert 1 < best < BATCH and c.batch == best and c.limited_by == "tpot_limit"
    step = float(decode.step_s_by_batch[best - 1])
    assert c.lambda_max_rps == pytest.approx(12 / (w_p + OUT * step / best), rel=1e-12)
    assert c.tpot_ms <= 150.0 < 1e3 * (float(decode.step_s_by_batch[best]) + (best + 1) * w_p / OUT)
    assert c.lambda_max_rps < fixed_plan.colocated.lambda_max_rps
    for decode_ms, slo_ms in ((400.0, 150.0), (150.0, 400.0)):  # the lower of the two limits
        both = replace(inputs, decode=replace(inputs.decode, tpot_ms=decode_ms), slo=Slo(tpot_ms=slo_ms))
        assert colocated(both, local_table, decode, 12).batch == best
    tight = colocated(replace(inputs, slo=Slo(tpot_ms=1.0)), local_table, decode, 12)
    assert tight.batch == 0 and tight.lambda_max_rps == 0.0


@pytest.mark.parametrize("tpot_ms", [None, 150.0])
def test_monotone_and_within_its_bounds(fixed_plan, tpot_ms):
    """Lambda grows with the instances, stays below prefill only (N / w_p) and decode only (N r_d),
    and without a TPOT limit is at least the best whole split of the same instances."""
    inputs = replace(fixed_plan.inputs, slo=None if tpot_ms is None else Slo(tpot_ms=tpot_ms))
    local_table, decode = _parts(inputs)
    w_p, r_d = float(local_table.pd_work_s[-1]), inputs.decode_rps_per_instance
    last = 0.0
    for n in range(1, 25):
        c = colocated(inputs, local_table, decode, n)
        assert c.lambda_max_rps > last
        assert c.lambda_max_rps < min(n / w_p, n * r_d) == pytest.approx(min(c.prefill_only_rps, c.decode_only_rps))
        assert 0 < c.prefill_share < 1
        if tpot_ms is None:
            split = max(min(k / w_p, (n - k) * r_d) for k in range(n + 1))
            assert c.lambda_max_rps >= split * (1 - 1e-12)
        last = c.lambda_max_rps


def test_in_plan_table_json_and_csv(run_cli, fixed_file):
    doc = json.loads(run_cli("plan", str(fixed_file), "-f", "json").out)
    row = doc["baselines"]["colocated"]
    assert row["lambda_max_rps"] == pytest.approx(HAND_RPS, rel=1e-4)
    assert (row["n_prfaas"], row["n_p"], row["n_d"], doc["colocated"]["batch"]) == (0, 12, 12, 64)
    assert doc["colocated"]["tpot_ms"] == pytest.approx(1e3 * (STEP + BATCH * T_PD / OUT), rel=1e-4)
    assert row["binding"] == "decode_batch" and row["usd_per_hour"] == 192.0
    homog = doc["baselines"]["homogeneous"]["lambda_max_rps"]
    assert row["ratio_vs_homogeneous"] == pytest.approx(row["lambda_max_rps"] / homog, abs=1e-6)
    assert doc["ratios_vs_homogeneous"]["colocated"] == row["ratio_vs_homogeneous"]
    rows = list(csv.DictReader(io.StringIO(run_cli("plan", str(fixed_file), "-f", "csv").out)))
    colo = [r for r in rows if r["deployment"] == "colocated"]
    assert len(colo) == 1 and float(colo[0]["lambda_max_rps"]) == row["lambda_max_rps"]
    text = run_cli("plan", str(fixed_file)).out
    line = next(x for x in text.splitlines() if x.strip().startswith("co-located") and "batch" in x and "x 8xh20" not in x)
    assert line.split()[1:5] == ["0", "12", "12", "-"] and f"{HAND_RPS:.2f}" in line.split()
    assert "12 x 8xh20, each prefilling and decoding: batch 64 of 64" in text


def test_in_compare_table_and_csv(run_cli, fixed_file):
    """As given, the one option is the scenario itself: its co-located Lambda is the hand figure."""
    args = ("compare", str(fixed_file), "--prfaas", "h200", "--basis", "as-given", "--jobs", "1")
    (row,) = csv.DictReader(io.StringIO(run_cli(*args, "-f", "csv").out))
    colo = float(row["colocated_lambda_max_rps"])
    assert colo == pytest.approx(HAND_RPS, rel=1e-4)
    assert float(row["ratio_vs_colocated"]) == pytest.approx(float(row["lambda_max_rps"]) / colo, abs=1e-6)
    text = run_cli(*args).out
    header = next(x for x in text.splitlines() if "TTFT P90" in x).split()
    assert "colo" in header and f"{float(row['lambda_max_rps']) / colo:.2f}" in text


def test_left_out_beside_a_decode_only_pool():
    result = plan(load_inputs("phase-split"), with_marginals=False, with_other_mode=False)
    assert result.colocated is None
    assert any("co-located baseline is left out" in n for n in result.notes)


def test_two_tokens_a_step_halve_tpot_and_double_the_chunks(fixed_plan):
    """With m = 2 tokens a step (multi-token prediction: the decode rate doubled over the same step
    times), by hand: each step carries b m w_p / O of prefill, tau = s(B) + 2 B w_p / O,
    TPOT = tau / 2 and Lambda = N B 2 / (O tau)."""
    inputs = fixed_plan.inputs
    doubled = replace(inputs, decode=replace(inputs.decode, tokens_per_s_per_instance=2 * TOKENS_PER_S))
    local_table, _ = _parts(inputs)
    c = colocated(doubled, local_table, decode_model(inputs), 12)
    tau = STEP + BATCH * 2 * T_PD / OUT
    assert c.tokens_per_step == pytest.approx(2.0)
    assert c.step_s == pytest.approx(tau, rel=1e-4)
    assert c.tpot_ms == pytest.approx(1e3 * tau / 2, rel=1e-4)
    assert c.lambda_max_rps == pytest.approx(12 * BATCH * 2 / (OUT * tau), rel=1e-4)
