"""Billed power of hardware without a TDP makes a $/hour a lower bound (and unpriced under a
budget or min_cost); the paper's figures are quoted only beside the paper's own plan."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
import yaml

from prfaas_plan.profiles.registry import resolve_hardware
from prfaas_plan.study.prices import ChipCost, chip_cost

REPO = Path(__file__).resolve().parents[1]
PHASE_SPLIT = REPO / "prfaas_plan" / "scenarios" / "phase-split.yaml"
HOURS_PER_YEAR = 8760
HOURS_PER_MONTH = HOURS_PER_YEAR / 12
# a Rubin CPX purchase whose power is billed at the site (phase-split's pool as it was)
PURCHASE = {"purchase_usd_per_gpu": 25000, "depreciation_years": 4, "cost_of_capital": 0.08}
BILLED_SITE = {"usd_per_kwh": 0.05, "pue": 1.2}


def _bought_rubin(tmp_path: Path, budget: bool, **changes) -> Path:
    """phase-split with Rubin CPX bought and its power billed, without its decode pool (so that a
    plan is quick), with or without its $2,500/hour budget."""
    doc = yaml.safe_load(PHASE_SPLIT.read_text())
    doc["prfaas"]["cost"], doc["prfaas"]["site"] = dict(PURCHASE), dict(BILLED_SITE)
    doc.pop("pd_decode")
    doc.pop("compare")
    if not budget:
        doc.pop("budgets")
    doc.update(changes)
    path = tmp_path / "bought.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_which_chip_costs_leave_power_unpriced():
    """Power is unpriced exactly when it is billed ($/kWh > 0) and the hardware has no TDP: a
    purchase (billed at the site's or the default $/kWh), or a rental at a site with a $/kWh; a
    rental without one includes its power."""
    from prfaas_plan.profiles.scenario import CostSpec, SiteSpec

    cpx, h200 = resolve_hardware("rubin-cpx"), resolve_hardware("h200")
    assert cpx.tdp_w is None and h200.tdp_w is not None
    bought, rented = CostSpec(purchase_usd_per_gpu=25000), CostSpec(usd_per_gpu_hour=1.0)
    assert chip_cost(cpx, bought, SiteSpec()).power_unpriced  # the default $/kWh
    assert chip_cost(cpx, bought, SiteSpec(usd_per_kwh=0.05)).power_unpriced
    assert chip_cost(cpx, rented, SiteSpec(usd_per_kwh=0.05)).power_unpriced
    assert not chip_cost(cpx, rented, SiteSpec()).power_unpriced
    assert not chip_cost(h200, bought, SiteSpec(usd_per_kwh=0.05)).power_unpriced
    assert not ChipCost(1.0, "rental", None, 0.0, 1.2, 0.3).power_unpriced


def test_billed_power_without_tdp_marks_every_dollar_figure_a_lower_bound(tmp_path, run_cli):
    """Without a budget the plan is made, and its $ figures are marked as lower bounds: '≥ $'
    in the cost lines, 'power ≥ $0.00 (rubin-cpx not counted)', the flag in JSON and CSV. The
    figure itself is the capital annuity (by hand) plus the link, with no power."""
    path = _bought_rubin(tmp_path, budget=False)
    res = run_cli("plan", path, "-f", "json")
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    row, cost = doc["prfaas_pd"], doc["operating"]["cost"]
    assert row["usd_per_hour_is_lower_bound"] is True and row["n_prfaas"] > 0
    assert cost["usd_per_hour_is_lower_bound"] is True and cost["power_usd_not_counted"] == ["rubin-cpx"]
    r, years = PURCHASE["cost_of_capital"], PURCHASE["depreciation_years"]
    per_chip = PURCHASE["purchase_usd_per_gpu"] * r / (1 - (1 + r) ** -years) / HOURS_PER_YEAR
    h200 = resolve_hardware("h200").price_usd_per_gpu_hour
    link = 50 * 100 / HOURS_PER_MONTH
    assert row["usd_per_hour"] == pytest.approx(
        row["n_prfaas"] * 8 * per_chip + (row["n_p"] + row["n_d"]) * 8 * h200 + link, abs=0.006
    )
    baselines = doc["baselines"]
    assert baselines["homogeneous"]["usd_per_hour_is_lower_bound"] is False  # H200 only

    text = run_cli("plan", path).out
    cost_line = next(line for line in text.splitlines() if "cost at that rate" in line)
    assert "≥ $" in cost_line.split("=")[0] and "power ≥ $0.00 (rubin-cpx not counted)" in cost_line
    provisioned = next(line for line in text.splitlines() if "provisioned cost" in line)
    assert "≥ $" in provisioned and "rubin-cpx" in provisioned and "tdp_w" in provisioned
    assert "≥ $" in next(line for line in text.splitlines() if "$ per million tokens" in line)
    mtok_range = next(line for line in text.splitlines() if "$/Mtok range" in line)
    assert mtok_range.count("≥ $") == 3  # both ends and the model's figure
    prfaas_row = next(line for line in text.splitlines() if line.strip().startswith("PrfaaS-PD"))
    assert "≥ " in prfaas_row

    rows = list(csv.DictReader(io.StringIO(run_cli("plan", path, "-f", "csv").out)))
    flags = {r["deployment"]: r["usd_per_hour_is_lower_bound"] for r in rows}
    assert flags["prfaas_pd"].lower() == "true" and flags["homogeneous"].lower() == "false"


def test_the_shipped_phase_split_is_priced_whole():
    """phase-split rents Rubin CPX with power included: its $/hour is not a lower bound and it
    plans within its budget."""
    from prfaas_plan import api
    from prfaas_plan.views.plan import plan_json

    result = api.plan("phase-split")
    assert result.tco.power_usd_not_counted == () and not result.tco.usd_per_hour_is_lower_bound
    assert plan_json(result)["prfaas_pd"]["usd_per_hour_is_lower_bound"] is False
    assert result.point.usd_per_hour <= 2500


@pytest.mark.parametrize("changes", [{}, {"objective": {"type": "min_cost", "target_rate_rps": 10}}])
def test_a_budget_or_min_cost_on_unpriced_power_is_an_error(tmp_path, run_cli, changes):
    """With the $2,500/hour budget, or min_cost, the uncounted power could break the budget or
    change the cheapest plan: a one-line error, exit 2, naming the hardware and tdp_w."""
    path = _bought_rubin(tmp_path, budget=not changes, **changes)
    res = run_cli("plan", path)
    assert res.code == 2 and res.out == ""
    line = res.err.strip()
    assert "\n" not in line and "Traceback" not in line
    assert "rubin-cpx" in line and "tdp_w" in line and "prfaas.hardware" in line and str(path) in line


def test_compare_says_no_price_for_unpriced_power_and_marks_lower_bounds(tmp_path, run_cli):
    """compare: under the budget the bought Rubin CPX is 'no price' (why: tdp_w), H200 is ok;
    without the budget its $/h is '≥ x' in the table and flagged in CSV."""
    args = ("--prfaas", "rubin-cpx,h200", "--decode", "none", "--jobs", "1")
    res = run_cli("compare", _bought_rubin(tmp_path, budget=True), *args, "-f", "json")
    assert res.code == 0, res.err
    rows = {r["prfaas_hardware"]: r for r in json.loads(res.out)["options"]}
    assert rows["rubin-cpx"]["status"] == "no price" and "tdp_w" in rows["rubin-cpx"]["reason"]
    assert rows["h200"]["status"] == "ok" and rows["h200"]["usd_per_hour_is_lower_bound"] is False

    free = _bought_rubin(tmp_path, budget=False)
    rows = {r["prfaas_hardware"]: r for r in csv.DictReader(io.StringIO(run_cli("compare", free, *args, "-f", "csv").out))}
    assert rows["rubin-cpx"]["status"] == "ok" and rows["rubin-cpx"]["usd_per_hour_is_lower_bound"].lower() == "true"
    assert rows["h200"]["usd_per_hour_is_lower_bound"].lower() == "false"
    table = run_cli("compare", free, *args).out
    cpx = next(line for line in table.splitlines() if "rubin-cpx / h200" in line)
    h200 = next(line for line in table.splitlines() if "h200 / h200" in line)
    usd = f"{float(rows['rubin-cpx']['usd_per_hour']):,.0f}"
    assert f"≥ {usd}" in cpx and "≥" not in h200  # H200 has a TDP: neither its $ nor its kW is a bound


# the paper's figures beside the paper's plan only


def _mu_with_mean(sigma: float, mean_tokens: float, min_tokens: float, max_tokens: float) -> float:
    """The mu of a truncated lognormal of ``sigma`` whose mean is ``mean_tokens`` (bisection)."""
    from prfaas_plan.workload.distributions import truncated_lognormal

    lo, hi = 5.0, 15.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if truncated_lognormal(mid, sigma, min_tokens, max_tokens).mean_tokens() < mean_tokens:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def test_an_slo_a_budget_an_objective_or_another_shape_is_not_the_case_study(case_inputs, tmp_path, case_study_file):
    """A copy with a TTFT SLO, with a budget, with min_cost, or with the input lognormal of
    another sigma and the same mean is not the paper's case study (the plain copy still is)."""
    from prfaas_plan.planner.chips import load_inputs
    from prfaas_plan.planner.paper import is_case_study

    assert is_case_study(load_inputs(str(case_study_file(tmp_path, name="copy"))))
    assert not is_case_study(load_inputs(str(case_study_file(tmp_path, slo={"ttft_p90_s": 4.0}))))
    assert not is_case_study(load_inputs(str(case_study_file(tmp_path, budgets={"usd_per_hour": 10000}))))
    assert not is_case_study(load_inputs(str(case_study_file(tmp_path, objective={"type": "min_cost", "target_rate_rps": 2.0}))))
    spec = {"type": "lognormal", "sigma": 0.8, "min_tokens": 128, "max_tokens": 131072}
    mean = case_inputs.workload.full_input_dist.mean_tokens()
    spec["mu"] = _mu_with_mean(0.8, mean, 128, 131072)
    other = load_inputs(str(case_study_file(tmp_path, workload__input=spec)))
    assert other.workload.full_input_dist.mean_tokens() == pytest.approx(mean, rel=1e-12)  # same mean
    assert not is_case_study(other)


@pytest.mark.slow
def test_the_slo_plan_does_not_quote_the_paper(tmp_path, case_study_file, run_cli):
    """The case study with a 4 s TTFT P90 SLO plans another deployment: its latency report quotes
    no figure of the paper's case study."""
    res = run_cli("plan", case_study_file(tmp_path, slo={"ttft_p90_s": 4.0}))
    assert res.code == 0, res.err
    assert "paper's case study" not in res.out
    plain = run_cli("plan", "paper-case-study").out
    assert "paper's case study" in plain
