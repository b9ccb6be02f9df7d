"""Report lines that say what is true of the plan: the plan a budget relaxation reaches and its
$/hour (the marginal value), the sites' link utilisation named by the rate it is at, and the
layout of a measured prefill curve named by its role in `kv` and in `plan`."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
import yaml
from conftest import REPO

from prfaas_plan import api

PHASE_SPLIT = REPO / "prfaas_plan" / "scenarios" / "phase-split.yaml"
HOURS_PER_YEAR = 8760  # 365 x 24
HOURS_PER_MONTH = HOURS_PER_YEAR / 12


def _phase_split_usd_per_hour(n_prfaas: int, n_p: int, n_d: int, lpu_chips: int) -> float:
    """The provisioned $/hour of phase-split counts, by hand from the scenario file and the
    hardware profiles' prices: Rubin CPX, H200 and LPU rented per chip-hour, the committed link
    ($/Gbps-month x Gbps / 730 h) with any PrfaaS instance. No power term: no pool's site gives a
    $/kWh, so each rental includes its power."""
    doc = yaml.safe_load(PHASE_SPLIT.read_text())
    cost, link = doc["prfaas"]["cost"], doc["link"]
    assert "usd_per_kwh" not in doc["prfaas"].get("site", {})
    rubin_per_chip = cost["usd_per_gpu_hour"]
    h200 = api.hardware_of("h200").price_usd_per_gpu_hour
    lpu = api.hardware_of("groq-lpu").price_usd_per_gpu_hour
    committed = link["usd_per_gbps_month"] * link["bandwidth_gbps"] / HOURS_PER_MONTH if n_prfaas else 0.0
    return (
        n_prfaas * doc["prfaas"]["gpus_per_instance"] * rubin_per_chip
        + n_p * doc["pd"]["gpus_per_instance"] * h200
        + n_d * lpu_chips * lpu
        + committed
    )


@pytest.fixture(scope="module")
def phase_split():
    from prfaas_plan.views.plan import plan_view

    result = api.plan("phase-split")
    report = plan_view(result)
    return result, {row["item"]: row["value"] for row in report.sections[0].rows}, report.json_doc


USD = r"\$([\d,]+\.\d\d)"


def _usd(text: str) -> float:
    return float(text.replace(",", ""))


def test_budget_relaxation_names_the_plan_it_reaches_and_its_price(phase_split):
    """+1 PD instance ($32/hour) on phase-split: the $32 raises the $2,500 budget, but what it
    reaches is 1/0/2, a second LPU decode instance: the line gives that plan's $/hour, which
    equals the provisioned cost of its counts by hand, its rise over the plan (the LPU's price, far
    more than $32) and that the rest is the budget the plan left unused (2,500 - its cost)."""
    result, details, doc = phase_split
    pt = result.point
    lpu_chips = result.inputs.decode_pool.gpus_per_instance
    plan_cost = _phase_split_usd_per_hour(pt.n_prfaas, pt.n_p, pt.n_d, lpu_chips)
    assert pt.usd_per_hour == pytest.approx(plan_cost, rel=1e-9)
    line = details["marginal +1 PD instance"]
    found = re.search(
        r"allow another plan, N_f/N_p/N_d (\d+)/(\d+)/(\d+) at "
        + USD
        + r"/hour \(\+"
        + USD
        + r"/hour over this plan: "
        + USD
        + r"/hour more than its price, from the "
        + USD
        + r"/hour of the budget this plan left unused\): \+([\d.]+) req/s",
        line,
    )
    assert found, line
    counts = tuple(int(found.group(i)) for i in (1, 2, 3))
    stated, extra, beyond, unused = (_usd(found.group(i)) for i in (4, 5, 6, 7))
    by_hand = _phase_split_usd_per_hour(*counts, lpu_chips)
    assert counts == (1, 0, 2)
    assert stated == pytest.approx(by_hand, abs=0.005)
    assert extra == pytest.approx(by_hand - plan_cost, abs=0.005)
    assert extra == pytest.approx(lpu_chips * api.hardware_of("groq-lpu").price_usd_per_gpu_hour, abs=0.005)
    pd_price = 8 * api.hardware_of("h200").price_usd_per_gpu_hour
    assert beyond == pytest.approx(by_hand - plan_cost - pd_price, abs=0.005)
    budget = yaml.safe_load(PHASE_SPLIT.read_text())["budgets"]["usd_per_hour"]
    assert unused == pytest.approx(budget - plan_cost, abs=0.005)
    assert float(found.group(8)) == pytest.approx(result.marginals["per_pd_instance"].budget_lambda_rps, abs=1e-4)
    # the same figures in JSON
    m = doc["marginal"]["per_pd_instance"]
    assert m["budget_counts"] == [1, 0, 2]
    assert m["budget_usd_per_hour"] == pytest.approx(by_hand, abs=1e-4)
    assert m["plan_usd_per_hour"] == pytest.approx(plan_cost, abs=1e-4)
    assert m["unused_budget_usd_per_hour"] == pytest.approx(budget - plan_cost, abs=1e-4)


def test_a_relaxation_within_the_unit_price_and_one_that_buys_nothing(phase_split):
    """+1 decode instance: its $1,248 price raises the budget by as much as the plan it reaches
    costs more, so no unused budget is spent and the line does not say so; +1 PrfaaS instance: the
    raised budget reaches the same counts, and the line says there is no other plan."""
    result, details, doc = phase_split
    lpu_chips = result.inputs.decode_pool.gpus_per_instance
    dec = details["marginal +1 decode instance"]
    found = re.search(r"N_f/N_p/N_d 1/0/2 at " + USD + r"/hour \(\+" + USD + r"/hour over this plan\):", dec)
    assert found, dec
    assert _usd(found.group(1)) == pytest.approx(_phase_split_usd_per_hour(1, 0, 2, lpu_chips), abs=0.005)
    assert _usd(found.group(2)) == pytest.approx(result.marginals["per_decode_instance"].price_usd_per_hour, abs=0.005)
    assert "unused" not in dec
    pt = result.point
    anchor = f"{pt.n_prfaas}/{pt.n_p}/{pt.n_d}"
    assert result.marginals["per_prfaas_instance"].budget_counts == (pt.n_prfaas, pt.n_p, pt.n_d)
    assert f"allow no other plan (N_f/N_p/N_d {anchor} again): 0.0000 req/s" in details["marginal +1 PrfaaS instance"]


SITES = {
    "name": "two-edges",
    "model": "prfaas-1t-hybrid",
    "prfaas_sites": [{"name": "factory", "hardware": "h200", "gpus_per_instance": 8, "instances": {"min": 0, "max": 4}}],
    "pd_sites": [
        {"name": n, "hardware": "h20", "gpus_per_instance": 8, "instances": 4, "rate_rps": 2.0} for n in ("east", "west")
    ],
    "links": [
        {"prfaas": "factory", "pd": "east", "bandwidth_gbps": 10, "rtt_ms": 20},
        {"prfaas": "factory", "pd": "west", "bandwidth_gbps": 100, "rtt_ms": 35, "usable_fraction": 0.5},
    ],
    "workload": {"input": {"type": "fixed", "tokens": 30000}, "output": {"type": "fixed", "tokens": 1024}},
    "decode": {"max_batch": 64, "tokens_per_s_per_instance": 800},
}


def test_sites_link_utilisation_is_named_at_the_planned_rate(run_cli, tmp_path):
    """Each link row's utilisation is the egress at the planned rate: its offloaded req/s x one
    30K-token prompt's KV (kv's S_kv, as every prompt is 30K and offloaded whole) over the usable
    bandwidth; CSV and JSON call it link_utilisation_at_planned_rate, never plain link_utilisation."""
    path = tmp_path / "sites.yaml"
    path.write_text(yaml.safe_dump(SITES))
    kv_bytes = api.kv_report("prfaas-1t-hybrid", "h200", 8, [30000]).rows[0].kv_bytes
    usable = {"east": 10.0, "west": 50.0}
    res = run_cli("sites", path, "-f", "csv")
    assert res.code == 0, res.err
    rows = list(csv.DictReader(io.StringIO(res.out)))
    assert "link_utilisation" not in rows[0] and "link_utilisation_at_planned_rate" in rows[0]
    links = [r for r in rows if r["part"] == "link"]
    assert {r["pd_site"] for r in links} == {"east", "west"}
    for row in links:
        offload = float(row["offload_rps"])
        assert offload > 0
        assert float(row["link_utilisation_at_planned_rate"]) == pytest.approx(
            offload * kv_bytes * 8 / 1e9 / usable[row["pd_site"]], rel=1e-4
        )
    doc = json.loads(run_cli("sites", path, "-f", "json").out)
    assert all("link_utilisation" not in r for r in doc["rows"])
    assert [r["link_utilisation_at_planned_rate"] for r in doc["rows"] if r["part"] == "link"] == [
        pytest.approx(float(r["link_utilisation_at_planned_rate"]), abs=1e-6) for r in links
    ]
    table = run_cli("sites", path).out
    assert "link util: the link's egress at the planned rate" in table
    for row in links:  # the table shows the fraction as a percentage, as plan does
        assert f"{100 * float(row['link_utilisation_at_planned_rate']):.1f}%" in table


def test_kv_and_plan_name_what_their_layouts_of_one_measured_curve_are_for(run_cli, case_plan):
    """The case study's H200 PrfaaS pool and `kv prfaas-1t-hybrid -H h200 -g 8` use the same
    measured points (the same T_prefill at each point) but name different layouts: kv the one of
    one prompt alone (the lowest one-prompt TTFT), plan the one its saturated-pass roofline picks.
    Each says what its layout is for, so they do not read as a contradiction."""
    kv = api.kv_report("prfaas-1t-hybrid", "h200", 8)
    pool = case_plan.inputs.prfaas
    lengths = [r.length_tokens for r in kv.rows]
    assert [r.prefill_s for r in kv.rows] == pytest.approx(list(pool.curve.prefill_s(lengths)), rel=1e-9)
    plan_layout = pool.curve.roofline.layout.label
    assert kv.layout.label != plan_layout  # two layouts for one curve: what each is for must be said
    res = run_cli("kv", "prfaas-1t-hybrid", "-H", "h200", "-g", "8")
    assert res.code == 0, res.err
    note = next(line for line in res.out.splitlines() if line.startswith("- T_prefill source"))
    assert (
        f"layout {kv.layout.label}: the layout whose one-prompt roofline shapes the curve around the measured "
        "points (the fitting layout with the lowest one-prompt TTFT)"
    ) in note
    roof = run_cli("kv", "prfaas-1t-hybrid", "-H", "h200", "-g", "8", "--source", "roofline").out
    assert "the layout its one-prompt latency is computed on" in roof
    plan_out = run_cli("plan").out
    sources = plan_out[plan_out.index("Sources") : plan_out.index("Latency")]
    assert f"shape {plan_layout}" in sources
    assert (
        f"PrfaaS layout shape {plan_layout}: the curve is the measured points on 8xh200; {plan_layout} is the "
        "layout whose roofline shapes it around them (the fitting layout with the lowest time per token in a "
        "saturated pass)"
    ) in " ".join(sources.split())
