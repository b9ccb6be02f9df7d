"""Issue 16, items 2 and 4: prices are explicit, and every line of a report describes the plan shown.

Prices: a cost objective or a $/hour budget on a pool whose hardware has no price is a one-line
error in ``plan`` (exit 2, naming the hardware and the field) and the status ``no price`` in
``compare``, with or without an SLO (the SLO optimiser used to skip the check and maximise
throughput instead); a report without any price shows no $ column.

The unpriced hardware is a copy of the shipped H200 profile with its price removed, so that the
tests do not depend on which shipped profiles happen to lack a price.
"""

from __future__ import annotations

import csv
import io
import json

import pytest
import yaml
from conftest import REPO, case_study_doc

HARDWARE = REPO / "hardware_profiles"


def unpriced_h200(folder) -> str:
    """The H200 profile without a price, written to ``folder``; returns its path."""
    doc = yaml.safe_load((HARDWARE / "h200.yaml").read_text())
    doc.pop("price_usd_per_gpu_hour")
    doc.pop("price_note", None)
    doc["name"] = "h200-unpriced"
    path = folder / "h200-unpriced.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def scenario(folder, prfaas_hardware: str | None = None, pd_hardware: str | None = None, **top) -> str:
    """The case study with top-level sections replaced (``objective=...``, ``slo=...``)."""
    doc = case_study_doc()
    if prfaas_hardware:
        doc["prfaas"]["hardware"] = prfaas_hardware
    if pd_hardware:
        doc["pd"]["hardware"] = pd_hardware
        doc["pd"].pop("calibration_points")  # measured on H20: not this hardware's
        doc["pd"].pop("calibration_fit")
        doc["pd"].pop("calibration_note")
    doc.update(top)
    path = folder / "scenario.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


MIN_COST = {"type": "min_cost", "target_rate_rps": 2.0}
SLO = {"ttft_p90_s": 10.0}


# --------------------------------------------------------------------------------------------
# A cost objective or a budget on unpriced hardware


@pytest.mark.parametrize(
    "top",
    [
        {"objective": MIN_COST, "slo": SLO},  # the SLO optimiser skipped the check: max throughput, blank $/h
        {"objective": MIN_COST},
        {"budgets": {"usd_per_hour": 1000}, "slo": SLO},
        {"budgets": {"usd_per_hour": 1000}},
    ],
    ids=["min_cost+slo", "min_cost", "budget+slo", "budget"],
)
def test_plan_refuses_a_cost_objective_or_budget_on_unpriced_hardware(tmp_path, run_cli, top):
    path = scenario(tmp_path, unpriced_h200(tmp_path), **top)
    out = tmp_path / "plan.json"
    res = run_cli("plan", path, "-f", "json", "-o", out)
    assert res.code == 2, res.out
    lines = res.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.err
    assert "scenario.yaml" in lines[0] and "prfaas.hardware" in lines[0] and "'h200-unpriced' has no price" in lines[0]
    assert not out.exists()


def test_slo_optimiser_checks_prices_itself(tmp_path):
    """The cause, in the library: ``slo_optimise`` under min_cost raises before any search."""
    from prfaas_plan.errors import PlanInputError
    from prfaas_plan.planner.chips import load_inputs
    from prfaas_plan.planner.slo import slo_optimise
    from prfaas_plan.planner.throughput import threshold_table
    from prfaas_plan.study.model import decode_model

    inputs = load_inputs(scenario(tmp_path, unpriced_h200(tmp_path), objective=MIN_COST, slo=SLO))
    with pytest.raises(PlanInputError) as err:
        slo_optimise(inputs, threshold_table(inputs), decode_model(inputs), inputs.slo, objective="min_cost", target_rps=2.0)
    assert err.value.field == "prfaas.hardware" and "no price" in err.value.reason


def test_compare_row_of_unpriced_hardware_is_no_price(tmp_path, run_cli):
    """Table, CSV and JSON: status ``no price`` (not ``ok`` with a blank $/h), no rank, no count."""
    path = scenario(tmp_path, objective=MIN_COST, slo=SLO)
    hw = unpriced_h200(tmp_path)
    args = ("compare", path, "--prfaas", hw, "--pd", "h20", "--decode", "none", "-j", "1")
    table = run_cli(*args)
    assert table.code == 0, table.err
    # the hardware by its profile name, as on a planned row (the option resolved before the price check)
    row = next(line for line in table.out.splitlines() if "h200-unpriced / h20" in line)
    assert row.rstrip().endswith("no price") and " ok" not in row
    doc = json.loads(run_cli(*args, "-f", "json").out)
    (option,) = doc["options"]
    assert option["status"] == "no price" and option["rank"] is None and option["n_prfaas"] is None
    assert "'h200-unpriced' has no price" in option["reason"]
    (csv_row,) = csv.DictReader(io.StringIO(run_cli(*args, "-f", "csv").out))
    assert csv_row["status"] == "no price" and csv_row["usd_per_hour"] == ""


# --------------------------------------------------------------------------------------------
# A report without prices shows no $ column


def test_no_dollar_columns_without_any_price(tmp_path, run_cli):
    """Max throughput on unpriced PrfaaS and PD hardware: the plan has no $/h column and says why
    in one line instead of '-/hour = capital - + ...'; compare has no $/h or $/Mtok column."""
    hw = unpriced_h200(tmp_path)
    path = scenario(tmp_path, hw, hw, pd_decode=None)
    res = run_cli("plan", path)
    assert res.code == 0, res.err
    header = next(line for line in res.out.splitlines() if line.strip().startswith("deployment"))
    assert "$/h" not in header and "Λ_max" in header
    items = [line.strip() for line in res.out.splitlines()]
    assert not any(line.startswith(("cost at that rate", "$ per million tokens")) for line in items)
    assert "provisioned cost              not known: no price for h200-unpriced (prfaas), h200-unpriced (pd)" in res.out
    cmp = run_cli("compare", path, "--prfaas", hw, "--pd", hw, "-j", "1")
    assert cmp.code == 0, cmp.err
    header = next(line for line in cmp.out.splitlines() if line.strip().startswith("#"))
    assert "$/h" not in header and "$/Mtok" not in header and "status" in header
    assert "no option has a price" in cmp.out


def test_dollar_column_stays_when_some_deployment_is_priced(tmp_path, run_cli):
    """Unpriced PrfaaS, priced H20: the homogeneous baseline has a price, so the column stays, and
    a note names the hardware without a price."""
    res = run_cli("plan", scenario(tmp_path, unpriced_h200(tmp_path)))
    assert res.code == 0, res.err
    header = next(line for line in res.out.splitlines() if line.strip().startswith("deployment"))
    assert "$/h" in header
    homog = next(line for line in res.out.splitlines() if line.strip().startswith("homogeneous"))
    assert "192" in homog  # 12 x 8 H20 x $2.0 per GPU-hour
    assert "- no price for h200-unpriced (prfaas) (price_usd_per_gpu_hour in its profile" in res.out  # not h20


# --------------------------------------------------------------------------------------------
# kv: the table and its footnote agree


KV_1K_ARCHITECTURE_BYTES = (
    # prfaas-1t-hybrid: 61 layers in the pattern [kda, kda, kda, mla]: MLA at layers 3, 7, ..., 59
    # (15 layers), KDA at the other 46.
    15 * (512 + 64) * 2 * 1024  # MLA: (kv_lora_rank 512 + qk_rope_head_dim 64) bf16 per token: 17,280 B/token
    + 46
    * (
        64 * 128 * 128 * 4  # KDA state: 64 heads x 128 x 128, fp32 (4 MiB a layer)
        + 24576 * (4 - 1) * 2
    )  # short convolution: 24,576 channels x (kernel 4 - 1), bf16
)  # = 17,694,720 + 199,720,960 (190.47 MiB) = 217,415,680 B
KV_1K_MEASURED_BYTES = round(190.8 * 2**20)  # the profile's Table 5 point: 190.8 MiB at 1,024 tokens


def test_kv_architecture_by_hand(run_cli):
    """The architecture's S_kv(1K), counted by hand above, is the roofline table's and the footnote's."""
    assert KV_1K_ARCHITECTURE_BYTES == 217_415_680
    res = run_cli("kv", "prfaas-1t-hybrid", "-H", "h200", "-g", "8", "--source", "roofline", "-l", "1K", "-f", "json")
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    assert doc["rows"][0]["kv_bytes"] == KV_1K_ARCHITECTURE_BYTES and doc["kv_source"] == "architecture"
    kv = doc["kv_model"]
    assert kv["growing_bytes_per_token"] * 1024 + kv["fixed_bytes"] == KV_1K_ARCHITECTURE_BYTES


def test_kv_footnote_describes_the_measured_table(run_cli):
    """With the measured source the table shows Table 5's sizes; the footnote says so and gives the
    architecture's value beside it (it used to claim the formula for the measured numbers)."""
    res = run_cli("kv", "prfaas-1t-hybrid", "-H", "h200", "-g", "8")
    assert res.code == 0, res.err
    row = next(line for line in res.out.splitlines() if line.strip().startswith("1,024"))
    assert f"{KV_1K_MEASURED_BYTES:,}" in row
    note = next(line for line in res.out.splitlines() if line.startswith("- S_kv"))
    assert "measured" in note and "17,280 B/token x l + 190.47 MiB" in note
    assert f"{KV_1K_ARCHITECTURE_BYTES:,} B at 1,024 tokens against {KV_1K_MEASURED_BYTES:,} B measured" in note


# --------------------------------------------------------------------------------------------
# simulate: why fewer requests are measured than -n, and which rate is which


def test_simulate_says_what_it_counted_and_which_rate_is_which(run_cli):
    n, rate = 400, 2.0
    table = run_cli("simulate", "--rate", rate, "-n", n)
    assert table.code == 0, table.err
    doc = json.loads(run_cli("simulate", "--rate", rate, "-n", n, "-f", "json").out)
    warmup = n // 10  # the first 10% of completions (SimConfig.warmup_fraction)
    assert doc["completed"] == n and doc["ttft"]["overall"]["count"] == n - warmup
    overall = next(line for line in table.out.splitlines() if line.strip().startswith("overall"))
    assert f"{n - warmup:,}" in overall.split()[1]
    assert (
        f"{n:,} requests simulated (seed 0, arrivals poisson), {n:,} completed; the first {warmup:,} completions "
        f"(10% warm-up) are left out: {n - warmup:,} measured"
    ) in table.out
    start, end = doc["window_s"]
    assert (
        f"rates: asked {rate:.3f} req/s (the arrival process's mean; load {rate / doc['lambda_max']:.2f} of the "
        f"closed-form Λ_max {doc['lambda_max']:.3f}, the deployment's capacity); measured in the window "
        f"{start:,.0f}-{end:,.0f} s"
    ) in table.out
    assert (
        f"offered {doc['offered_rps']:.3f} (arrivals per second), achieved {doc['achieved_rps']:.3f} (completions per second)"
    ) in table.out


# --------------------------------------------------------------------------------------------
# The Jensen gap and the marginal values describe the plan shown


def _details(result) -> tuple[dict[str, str], dict]:
    """The plan report's "Operating point" section as {item: text}."""
    from prfaas_plan.views.plan import plan_view

    report = plan_view(result)
    return {row["item"]: row["value"] for row in report.sections[0].rows}, report.json_doc


def test_jensen_line_of_a_min_cost_plan_is_of_that_plan(tmp_path):
    """Case study with 0-16 PD instances at a 2 req/s target: the cheapest plan is 4 PrfaaS + 3
    decode instances (everything offloaded), bound by decode at 3 x 800 / 1024 = 2.34375 req/s in
    both modes (decode does not depend on the mode), so the gap is 0. The max-throughput plan,
    which the line used to describe, has 6 decode instances: 6 x 800 / 1024 = 4.6875 req/s."""
    from prfaas_plan import api

    decode_rps = 800 / 1024  # the scenario's tokens/s per instance over the fixed 1,024-token output
    path = scenario(tmp_path, objective={"type": "min_cost", "target_rate_rps": 2.0})
    doc = yaml.safe_load(open(path))
    doc["pd"]["instances"] = {"min": 0, "max": 16}
    open(path, "w").write(yaml.safe_dump(doc))
    details, out = _details(api.plan(path))
    shown = 3 * decode_rps
    jensen = details["Jensen gap"]
    assert "of this plan's counts (4/0/3)" in jensen and f"exact {shown:.3f} vs paper {shown:.3f} req/s" in jensen
    assert "by 0.0%" in jensen and details["Λ_max"].startswith(f"{shown:.3f} req/s")
    assert (
        f"of the max-throughput plan (N_f/N_p/N_d 4/10/6, Λ_max {6 * decode_rps:.3f} req/s), not of the plan shown"
    ) in details["marginal values"]
    assert out["jensen"]["lambda_exact_rps"] == pytest.approx(shown, rel=1e-9) == out["prfaas_pd"]["lambda_max_rps"]
    assert out["jensen"]["lambda_paper_rps"] == pytest.approx(shown, rel=1e-9) and out["jensen"]["gap_fraction"] == 0


def test_marginal_separates_own_gain_from_the_budget_relaxation():
    """phase-split ($2,500/hour): the plan is 1 Rubin CPX PrfaaS + 1 LPU decode instance at
    $1,261.73, bound by decode (r_d). A second LPU instance ($1,248) would come to $2,509.73 with
    the cheapest prefill: over budget. So one more PD-P instance ($32) adds nothing with the budget
    held (decode binds); the $32 of budget it would add buys the second LPU instead (1/0/2, +r_d).
    The report used to credit the PD-P instance with that: "+12.0751 req/s, worth $412.38"."""
    from prfaas_plan import api

    result = api.plan("phase-split")
    pt = result.point
    assert (pt.n_prfaas, pt.n_p, pt.n_d) == (1, 0, 1)
    r_d = pt.stages.theta_pdd  # one LPU decode instance
    lpu = result.inputs.decode_pool.usd_per_hour_per_instance
    assert lpu == pytest.approx(1664 * 0.75) and pt.usd_per_hour + lpu > 2500 >= pt.usd_per_hour
    pd = result.marginals["per_pd_instance"]
    assert pd.price_usd_per_hour == pytest.approx(8 * 4.0)
    assert pd.fits and pd.lambda_rps == pytest.approx(0.0, abs=1e-9) and pd.value_usd_per_hour == pytest.approx(0.0)
    assert pd.budget_counts == (1, 0, 2) and pd.budget_lambda_rps == pytest.approx(r_d, rel=1e-9)
    dec = result.marginals["per_decode_instance"]
    assert not dec.fits and dec.blocked_by == ("usd_per_hour_budget",)
    assert dec.budget_lambda_rps == pytest.approx(r_d, rel=1e-9)  # $1,248 more buys the instance itself
    details, out = _details(result)
    line = details["marginal +1 PD instance"]
    assert line.startswith(
        "price $32.00/hour; own gain with the budgets held 0.0000 req/s, worth $0.00/hour; the "
        "budgets raised by its price allow another plan, N_f/N_p/N_d 1/0/2 at "
    )
    assert line.endswith(f"): {r_d:+.4f} req/s")
    assert out["marginal"]["per_pd_instance"]["budget_counts"] == [1, 0, 2]
