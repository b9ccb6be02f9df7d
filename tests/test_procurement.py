"""Issue 9: pools per phase, chips per instance chosen by the planner, `compare`, the cost of
ownership, numbers at the user's operating point, and baselines under the scenario's rules.

Every figure is checked against a value computed here: the cost of ownership from the
prices, TDPs and the capital recovery factor written out; $/Mtok from the $/hour and the
token rates; the smallest memory-fitting chip count by trying every count; the ranking of
`compare` by planning each option's scenario file separately.
"""

from __future__ import annotations

import csv
import io
import json
import math

import numpy as np
import pytest
import yaml
from conftest import REPO, case_study_doc

from prfaas_plan import api
from prfaas_plan.errors import PlanInputError
from prfaas_plan.planner.chips import choose
from prfaas_plan.planner.plan import plan
from prfaas_plan.planner.throughput import bounds
from prfaas_plan.profiles.scenario import load_scenario
from prfaas_plan.study.prices import HOURS_PER_MONTH, capital_recovery_factor

H200_8_USD_HOUR, H20_8_USD_HOUR = 8 * 4.0, 8 * 2.0  # the shipped example rental prices
SCENARIO_PATH = str(REPO / "prfaas_plan" / "scenarios" / "x.yaml")


def scenario_doc(**changes) -> dict:
    """The case study with top-level or nested changes (``a__b=value``; None deletes)."""
    doc = case_study_doc()
    for path, value in changes.items():
        *parents, last = path.split("__")
        node = doc
        for key in parents:
            node = node.setdefault(key, {})
        if value is None:
            node.pop(last, None)
        else:
            node[last] = value
    return doc


def inputs_of(doc: dict):
    return choose(load_scenario(yaml.safe_load(yaml.safe_dump(doc))), SCENARIO_PATH)


def write(tmp_path, doc: dict, name: str = "scenario.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc))
    return path


# --------------------------------------------------------------------------------------------
# Units of the cost model


def test_capital_recovery_factor_and_hours():
    """CRF(8%, 4 years) = 0.08 x 1.08^4 / (1.08^4 - 1) = 0.301921 (the annuity table's value);
    at 0% it is 1/4; a month is 8,760 / 12 = 730 hours."""
    assert capital_recovery_factor(0.08, 4) == pytest.approx(0.301921, abs=1e-6)
    assert capital_recovery_factor(0.0, 4) == 0.25
    assert HOURS_PER_MONTH == 730.0


# --------------------------------------------------------------------------------------------
# Pools per phase


@pytest.fixture(scope="module")
def phase_split():
    return api.plan("phase-split")


def test_phase_split_decodes_on_lpus_and_never_prefills_there(phase_split):
    """Rubin CPX PrfaaS, H200 PD-P and a Groq LPU decode-only pool: the prefill curves are the
    CPX's and the H200's, the LPU pool has none, every PD-D instance is an LPU instance, and
    the LPUs are busy only decoding."""
    inputs = phase_split.inputs
    assert (inputs.prfaas.hardware_name, inputs.pd.hardware_name) == ("rubin-cpx", "h200")
    assert inputs.pd_decode.hardware_name == "groq-lpu" and inputs.decode_pool is inputs.pd_decode
    assert inputs.pd_decode.curve is None  # no prefill on LPUs
    assert inputs.decode.capacity.layout.chips == inputs.pd_decode.gpus_per_instance
    pt = phase_split.point
    assert pt.gpus.get("groq-lpu", 0) == pt.n_d * inputs.pd_decode.gpus_per_instance
    assert pt.gpus.get("h200", 0) == pt.n_p * 8
    roles = {p.role: p for p in phase_split.tco.pools}
    assert roles["pd_decode"].hardware == "groq-lpu" and roles["pd_prefill"].hardware == "h200"
    assert all(p.hardware != "groq-lpu" for r, p in roles.items() if r != "pd_decode")
    doc = json.loads(api_plan_json("phase-split"))
    assert doc["identity"]["pd_decode_hardware"] == "groq-lpu"


def api_plan_json(scenario: str) -> str:
    from prfaas_plan.report import render
    from prfaas_plan.views.plan import plan_view

    return render(plan_view(api.plan(scenario)), "json")


def test_lpu_chips_per_instance_come_from_sram(phase_split):
    """The LPU pool's chips per instance are `auto`: the fewest chips whose 230 MB SRAM (x the
    usable fraction) holds the weights and one longest request, and its multiples. The count is at
    least the weights over the usable SRAM, and its layout fits."""
    from prfaas_plan.accounting.params import weight_bytes
    from prfaas_plan.timing.instance import Instance
    from prfaas_plan.timing.memory import chip_bytes, chips_needed, usable_per_chip

    inputs = phase_split.inputs
    pool = inputs.pd_decode
    hw = pool.instance.hardware
    assert hw.memory_gib == 0.2148  # 220 MiB of SRAM, not HBM
    sram_bytes = 0.23e9 * hw.efficiency.memory_usable_fraction
    longest = int(inputs.workload.full_input_dist.lengths_tokens[-1])
    least, layout = chips_needed(inputs.model, Instance(hw, 1), longest)
    assert least >= math.ceil(weight_bytes(inputs.model) / sram_bytes)
    assert sum(chip_bytes(inputs.model, layout, longest)) <= usable_per_chip(Instance(hw, least))
    assert pool.chip_options == (least, 2 * least)
    assert pool.gpus_per_instance in pool.chip_options


def test_auto_chips_pick_the_smallest_fitting_count_for_kimi_k2_on_h20():
    """`gpus_per_instance: auto` for kimi-k2 on H20 gives the smallest count for which some layout
    holds the model and the longest request: found here by trying every count from 1."""
    from prfaas_plan.timing.instance import Instance
    from prfaas_plan.timing.memory import fitting_layouts

    doc = scenario_doc(
        model="kimi-k2",
        pd__gpus_per_instance="auto",
        pd__max_gpus_per_instance=None,
        pd__calibration_points=None,
        pd__calibration_fit=None,
        decode__tokens_per_s_per_instance=None,
        prfaas__gpus_per_instance="auto",
    )
    doc["workload"]["input"]["max_tokens"] = 32768
    inputs = inputs_of(doc)
    model, h20 = inputs.model, inputs.pd.instance.hardware
    need = max(inputs.decode.context_tokens, 32768)

    def fits(n: int) -> bool:
        try:
            fitting_layouts(model, Instance(h20, n), need)
            return True
        except PlanInputError:
            return False

    smallest = next(n for n in range(1, 64) if fits(n))
    assert smallest >= 12  # 1.04 TB of fp8 weights over 92.8 GB usable per H20: more than 11 chips
    docs = " ".join((REPO / "docs" / "procurement.md").read_text().split())
    assert f"`auto` gives {smallest} chips and their multiple {2 * smallest}" in docs and f"{smallest - 1} do not hold" in docs
    assert inputs.pd.chip_options[0] == smallest and inputs.pd.chip_options == (smallest, 2 * smallest)
    assert inputs.pd.gpus_per_instance in inputs.pd.chip_options
    # capped at the smallest: that count is used
    doc["pd"]["max_gpus_per_instance"] = smallest
    assert inputs_of(doc).pd.gpus_per_instance == smallest


def test_chips_list_is_chosen_by_the_objective():
    """A list of counts is planned per count; max throughput within a $/hour budget keeps the one
    whose plan serves most (checked by planning each count alone)."""
    base = scenario_doc(prfaas__instances={"min": 0, "max": 8}, budgets={"usd_per_hour": 300})
    alone = {}
    for g in (8, 16):
        doc = scenario_doc(prfaas__instances={"min": 0, "max": 8}, budgets={"usd_per_hour": 300}, prfaas__gpus_per_instance=g)
        alone[g] = plan(inputs_of(doc), with_marginals=False).point.lambda_max
    base["prfaas"]["gpus_per_instance"] = [16, 8]
    chosen = inputs_of(base)
    assert chosen.prfaas.chip_options == (8, 16)
    assert chosen.prfaas.gpus_per_instance == max(alone, key=alone.get)
    assert any("chosen by the planner" in n for n in chosen.notes)


# --------------------------------------------------------------------------------------------
# Numbers at the operating point


def test_min_cost_reports_latency_link_and_cost_at_the_target_rate():
    """min_cost at 2 req/s: latency, link utilisation and $/Mtok at 2 req/s, each by hand."""
    doc = scenario_doc(
        prfaas__instances={"min": 0, "max": 8},
        pd__instances={"min": 2, "max": 12},
        objective={"type": "min_cost", "target_rate_rps": 2.0},
    )
    result = plan(inputs_of(doc), with_marginals=False)
    pt, inputs = result.point, result.inputs
    assert result.operating_rate_rps == 2.0 and result.operating_basis == "target rate"
    assert result.operating_latency.rate_rps == 2.0
    assert pt.lambda_max >= 2.0
    # link utilisation: 2 req/s x E[S_kv; L > t] / usable bytes/s
    dist = inputs.input_dist
    long = dist.lengths_tokens > pt.threshold_tokens
    egress = 2.0 * float(np.sum(dist.probs[long] * inputs.prfaas.curve.kv_bytes(dist.lengths_tokens[long])))
    assert result.operating_latency.link_utilisation == pytest.approx(egress / 12.5e9, rel=1e-6)
    # $/Mtok from the rental prices at 2 req/s
    usd = pt.n_prfaas * H200_8_USD_HOUR + (pt.n_p + pt.n_d) * H20_8_USD_HOUR
    assert result.tco.usd_per_hour == pytest.approx(usd, rel=1e-12)
    assert result.tco.usd_per_mtok_output == pytest.approx(usd / (2.0 * 1024 * 3600) * 1e6, rel=1e-12)
    full = inputs.workload.full_input_dist
    mean_in = float(np.sum(full.probs * full.lengths_tokens))
    assert result.tco.usd_per_mtok_blended == pytest.approx(usd / (2.0 * (mean_in + 1024) * 3600) * 1e6, rel=1e-9)
    assert result.tco.usd_per_mtok_blended < result.tco.usd_per_mtok_output / 10  # inputs dominate the tokens


def test_slo_plan_costs_per_token_at_its_goodput():
    """With a TTFT P90 target, $/Mtok is at the goodput (not at Lambda_max)."""
    doc = scenario_doc(slo={"ttft_p90_s": 6.0})
    result = plan(inputs_of(doc), with_marginals=False)
    good = result.goodput_rps
    assert good is not None and good < result.point.lambda_max * 0.99
    assert result.operating_rate_rps == good and result.tco.rate_rps == good
    usd = 4 * H200_8_USD_HOUR + 8 * H20_8_USD_HOUR
    assert result.tco.usd_per_mtok_output == pytest.approx(usd / (good * 1024 * 3600) * 1e6, rel=1e-12)
    assert result.operating_latency.overall_p90_s <= 6.0 * (1 + 1e-6)


# --------------------------------------------------------------------------------------------
# Budgets named, marginal values in $/hour


def test_a_budget_that_stops_a_gain_is_binding_and_marginals_are_priced(run_cli, tmp_path):
    """$200/hour buys 8 H20 instances and two H200 instances; a third (+$32) would add throughput.
    The budget is named as binding, the marginal PrfaaS instance is blocked by it (no own gain with
    the budget held, issue 16) and the $32/hour of budget its price would add buys the third one."""
    doc = scenario_doc(prfaas__instances={"min": 0, "max": 8}, budgets={"usd_per_hour": 200})
    result = plan(inputs_of(doc))
    pt = result.point
    assert (pt.n_prfaas, pt.usd_per_hour) == (2, 2 * H200_8_USD_HOUR + 8 * H20_8_USD_HOUR)
    assert "usd_per_hour_budget" in pt.tight
    m = result.marginals["per_prfaas_instance"]
    assert m.lambda_rps == 0 and not m.fits and m.blocked_by == ("usd_per_hour_budget",)
    assert m.price_usd_per_hour == H200_8_USD_HOUR
    assert m.value_usd_per_hour == pytest.approx(m.lambda_rps * pt.usd_per_hour / pt.lambda_max, rel=1e-12)
    # the budget relaxation buys the plan with a third PrfaaS instance and $32/hour more
    more = scenario_doc(prfaas__instances={"min": 3, "max": 8}, budgets={"usd_per_hour": 232})
    assert m.budget_lambda_rps > 0 and m.budget_counts[0] == 3
    assert m.budget_lambda_rps == pytest.approx(
        plan(inputs_of(more), with_marginals=False).point.lambda_max - pt.lambda_max, rel=1e-9
    )
    res = run_cli("plan", write(tmp_path, doc), "-f", "json")
    assert res.code == 0, res.err
    out = json.loads(res.out)
    assert "usd_per_hour_budget" in out["prfaas_pd"]["tight"]
    assert out["marginal"]["per_prfaas_instance"]["value_usd_per_hour"] == pytest.approx(m.value_usd_per_hour, rel=1e-5)
    table = run_cli("plan", write(tmp_path, doc)).out
    assert "the plan plus it breaks usd_per_hour_budget" in table
    assert "the budgets raised by its price allow another plan" in table


def test_a_unit_that_fits_only_if_others_give_way_says_so(run_cli, tmp_path):
    """$200/hour with 2..8 PD instances buys 4 H200 and 4 H20 instances ($192/hour): a fifth PrfaaS
    instance (+$32) still fits if a PD instance goes, so its own gain with the budget held is a
    loss (the report says the others give way), where the budget raised by its price gains."""
    doc = scenario_doc(prfaas__instances={"min": 0, "max": 8}, pd__instances={"min": 2, "max": 8}, budgets={"usd_per_hour": 200})
    m = plan(inputs_of(doc)).marginals["per_prfaas_instance"]
    assert m.fits and m.blocked_by == ("usd_per_hour_budget",) and m.lambda_rps < 0
    table = run_cli("plan", write(tmp_path, doc)).out
    assert "(the plan plus it breaks usd_per_hour_budget; with it other instances give way)" in table


# --------------------------------------------------------------------------------------------
# Power, energy per token and link cost, by hand on one case

TCO_CASE = dict(
    prfaas__cost={"purchase_usd_per_gpu": 32000, "depreciation_years": 4, "cost_of_capital": 0.08},
    prfaas__site={"usd_per_kwh": 0.10, "pue": 1.25, "idle_power_fraction": 0.3},
    pd__site={"usd_per_kwh": 0.06, "pue": 1.5, "idle_power_fraction": 0.2},
    link__usd_per_gbps_month=20.0,
    link__usd_per_gb_egress=0.01,
)


def test_power_energy_and_link_cost_by_hand(run_cli, tmp_path):
    """The case study with bought H200s (power billed at $0.10/kWh, PUE 1.25), rented H20s with
    power billed at $0.06/kWh (PUE 1.5) and a priced link, at 0.8 x Lambda_max."""
    doc = scenario_doc(**TCO_CASE)
    result = plan(inputs_of(doc), with_marginals=False)
    inputs, pt = result.inputs, result.point
    assert (pt.threshold_tokens, pt.n_prfaas, pt.n_p, pt.n_d) == pytest.approx((19349.255, 4, 3, 5), abs=1e-3)
    rate = 0.8 * pt.lambda_max
    from prfaas_plan.planner.throughput import threshold_table

    table = threshold_table(inputs)
    k = int(np.searchsorted(table.thresholds_tokens, pt.threshold_tokens))
    b = bounds(table, k, 4, 3, 5, inputs)
    busy = {
        "prfaas": rate / float(b.prfaas_compute),
        "pd_prefill": rate / float(b.pd_prefill),
        "pd_decode": rate / float(b.pd_decode),
    }
    chips = {"prfaas": 32, "pd_prefill": 24, "pd_decode": 40}
    tdp = {"prfaas": 700, "pd_prefill": 400, "pd_decode": 400}
    idle = {"prfaas": 0.3, "pd_prefill": 0.2, "pd_decode": 0.2}
    pue = {"prfaas": 1.25, "pd_prefill": 1.5, "pd_decode": 1.5}
    kwh = {"prfaas": 0.10, "pd_prefill": 0.06, "pd_decode": 0.06}
    kw = {r: chips[r] * tdp[r] * (idle[r] + (1 - idle[r]) * busy[r]) * pue[r] / 1000 for r in chips}
    capital = 32 * 32000 * 0.301921 / 8760 + 64 * 2.0
    power_usd = sum(kw[r] * kwh[r] for r in kw)
    egress_bytes_per_s = rate * float(table.link_work_bytes[k])
    link_usd = 20.0 * 100 / 730 + 0.01 * egress_bytes_per_s * 3600 / 1e9
    tco = result.tco
    assert {p.role: p.busy for p in tco.pools} == pytest.approx(busy, rel=1e-9)
    assert tco.power_kw == pytest.approx(sum(kw.values()), rel=1e-9)
    assert tco.capital_usd_per_hour == pytest.approx(capital, rel=1e-5)
    assert tco.power_usd_per_hour == pytest.approx(power_usd, rel=1e-9)
    assert tco.link_usd_per_hour == pytest.approx(link_usd, rel=1e-9)
    assert tco.usd_per_hour == pytest.approx(capital + power_usd + link_usd, rel=1e-5)
    assert tco.joules_per_output_token == pytest.approx(sum(kw.values()) * 1000 / (rate * 1024), rel=1e-9)
    # provisioned (budgets, min_cost): capital + power at full load + the committed link
    full_kw = {r: chips[r] * tdp[r] * pue[r] / 1000 for r in chips}
    provisioned = capital + sum(full_kw[r] * kwh[r] for r in chips) + 20.0 * 100 / 730
    assert pt.usd_per_hour == pytest.approx(provisioned, rel=1e-5)
    # the report and the CSV carry them
    res = run_cli("plan", write(tmp_path, doc), "-f", "csv")
    assert res.code == 0, res.err
    row = next(csv.DictReader(io.StringIO(res.out)))
    assert float(row["power_kw"]) == pytest.approx(tco.power_kw, rel=1e-6)
    assert float(row["joules_per_output_token"]) == pytest.approx(tco.joules_per_output_token, rel=1e-6)
    assert float(row["link_operating_usd_per_hour"]) == pytest.approx(link_usd, rel=1e-6)
    assert float(row["usd_per_hour_operating"]) == pytest.approx(tco.usd_per_hour, rel=1e-6)
    table_text = run_cli("plan", write(tmp_path, doc)).out
    assert "kW at the meter" in table_text and "J per output token" in table_text and "committed $2.74" in table_text


# --------------------------------------------------------------------------------------------
# Baselines under the same rules


def test_homogeneous_baseline_respects_a_gpu_budget():
    """With at most 72 H20 chips (9 instances) the homogeneous baseline has 9 local instances, not
    the plan's 12, and says so."""
    doc = scenario_doc(budgets={"gpus": {"h20": 72}})
    result = plan(inputs_of(doc), with_marginals=False)
    homog = result.baselines["homogeneous"]
    assert homog.n_prfaas == 0 and homog.n_p + homog.n_d == 9
    assert any("budgets stop more" in n for n in result.notes)
    equal = result.baselines["homogeneous_equal_cost"]
    assert (equal.n_p + equal.n_d) * 8 <= 72


def test_naive_baseline_respects_the_dollar_budget():
    """Without a usable link the plan buys no PrfaaS instance; the naive baseline then takes as many
    as the $/hour budget allows beside the PD cluster ($192: two), not the range's eight."""
    doc = scenario_doc(prfaas__instances={"min": 0, "max": 8}, budgets={"usd_per_hour": 192}, link__bandwidth_gbps=0)
    result = plan(inputs_of(doc), with_marginals=False)
    assert result.point.n_prfaas == 0
    naive = result.baselines["naive_heterogeneous"]
    assert naive.n_prfaas == 2 and naive.usd_per_hour <= 192


def test_equal_cost_baseline_uses_the_same_cost_model():
    """Equal cost counts provisioned $/hour (capital + full-load power + link) for both sides."""
    doc = scenario_doc(**TCO_CASE)
    result = plan(inputs_of(doc), with_marginals=False)
    per_pd = result.inputs.pd.usd_per_hour_per_instance
    assert per_pd == pytest.approx(16 + 8 * 400 * 1.5 / 1000 * 0.06, rel=1e-12)
    equal = result.baselines["homogeneous_equal_cost"]
    assert equal.n_p + equal.n_d == int(result.point.usd_per_hour / per_pd)


# --------------------------------------------------------------------------------------------
# compare


def option_doc(prfaas: str, pd: str, model: str) -> dict:
    """An option's scenario written by hand with the documented rules: a new PD hardware or model
    drops the H20 calibration and the measured decode rate."""
    doc = case_study_doc()
    doc["prfaas"]["hardware"] = prfaas
    doc["pd"]["hardware"] = pd
    doc["model"] = model
    if pd != "h20" or model != "prfaas-1t-hybrid":
        for key in ("calibration_points", "calibration_fit"):
            doc["pd"].pop(key, None)
        doc["decode"].pop("tokens_per_s_per_instance", None)
    return doc


def _ranked_separately(tmp_path, combos) -> list[tuple]:
    rows = []
    for prfaas, pd, model in combos:
        path = write(tmp_path, option_doc(prfaas, pd, model), f"{prfaas}-{pd}-{model}.yaml")
        result = api.plan(str(path), with_marginals=False)
        rows.append(
            (
                -round(result.point.lambda_max, 9),
                result.point.usd_per_hour,
                result.ttft_p90_s,
                (prfaas, pd, model),
                result.point.lambda_max,
            )
        )
    rows.sort()
    return rows


def _compare_csv(run_cli, *args) -> list[dict]:
    res = run_cli("compare", *args, "-f", "csv")
    assert res.code == 0, res.err
    return list(csv.DictReader(io.StringIO(res.out)))


def test_compare_two_options_ranks_as_separate_plans(run_cli, tmp_path):
    combos = [(p, "h20", "prfaas-1t-hybrid") for p in ("h200", "b200")]
    expected = _ranked_separately(tmp_path, combos)
    rows = _compare_csv(run_cli, "--prfaas", "h200,b200", "--jobs", "1", "--basis", "as-given")
    assert [(r["prfaas_hardware"], r["pd_hardware"], r["model"]) for r in rows] == [e[3] for e in expected]
    assert [float(r["lambda_max_rps"]) for r in rows] == pytest.approx([e[4] for e in expected], rel=1e-6)


@pytest.mark.slow
def test_compare_twelve_options_ranks_as_separate_plans(run_cli, tmp_path):
    """3 PrfaaS x 2 PD x 2 models in one command (two processes): the same ranking, Lambda_max and
    $/hour as planning each option's scenario file alone; the CSV names every option and unit."""
    combos = [
        (p, d, m) for p in ("h200", "b200", "rubin-cpx") for d in ("h20", "h200") for m in ("prfaas-1t-hybrid", "kimi-linear-48b")
    ]
    expected = _ranked_separately(tmp_path, combos)
    plot = tmp_path / "front.png"
    rows = _compare_csv(
        run_cli,
        "--prfaas",
        "h200,b200,rubin-cpx",
        "--pd",
        "h20,h200",
        "--model",
        "prfaas-1t-hybrid,kimi-linear-48b",
        "--jobs",
        "2",
        "--plot",
        str(plot),
        "--basis",
        "as-given",
    )
    assert len(rows) == 12 and plot.stat().st_size > 10_000
    assert [(r["prfaas_hardware"], r["pd_hardware"], r["model"]) for r in rows] == [e[3] for e in expected]
    assert [float(r["lambda_max_rps"]) for r in rows] == pytest.approx([e[4] for e in expected], rel=1e-6)
    assert [float(r["usd_per_hour"]) for r in rows] == pytest.approx([e[1] for e in expected], rel=1e-6)
    assert [int(r["rank"]) for r in rows] == list(range(1, 13))
    assert {r["scenario"] for r in rows} == {"paper-case-study"}
    assert all(r["prfaas_gpus_per_instance"] == "8" and r["link_gbps"] == "100.0" for r in rows)


def test_compare_csv_columns_carry_identity_and_units(run_cli):
    rows = _compare_csv(run_cli, "--prfaas", "h200,b200", "--jobs", "1")
    header = list(rows[0])
    for column in (
        "scenario",
        "model",
        "prfaas_hardware",
        "prfaas_gpus_per_instance",
        "pd_hardware",
        "pd_gpus_per_instance",
        "pd_decode_hardware",
        "pd_decode_gpus_per_instance",
        "link_gbps",
        "lambda_max_rps",
        "usd_per_hour",
        "usd_per_mtok_output",
        "usd_per_mtok_blended",
        "ttft_p90_s",
        "power_kw",
        "joules_per_output_token",
        "link_operating_usd_per_hour",
    ):
        assert column in header
    unitless = {
        "scenario",
        "model",
        "prfaas_hardware",
        "pd_hardware",
        "pd_decode_hardware",
        "option",
        "rank",
        "pareto",
        "status",
        "reason",
        "objective",
        "binding",
        "n_prfaas",
        "n_p",
        "n_d",
        "ratio_vs_homogeneous",
        "ratio_vs_colocated",
        "link_utilisation_at_capacity",
        "link_utilisation_at_operating_rate",
        "notes",
        "basis",
        "prfaas_prefill_source",
        "usd_per_hour_is_lower_bound",
        "prfaas_prefill_capacity",
        "prfaas_layout",
        "pd_prefill_source",
        "pd_prefill_capacity",
        "pd_layout",
        "decode_source",
        "decode_layout",
        "versus_best",
        "distinguishable_from_best",
        "shares_error_with_best",
    }
    units = (
        "_rps",
        "_s",
        "_ms",
        "_gbps",
        "_tokens",
        "_usd_per_hour",
        "usd_per_hour",
        "_kw",
        "_instance",
        "usd_per_mtok_output",
        "usd_per_mtok_blended",
        "_per_output_token",
        "gpus_total",
        "usd_per_hour_operating",
        "usd_per_mtok_output_low",
        "usd_per_mtok_output_high",
    )
    for column in set(header) - unitless:
        assert column.endswith(units), column


def test_plan_csv_rows_carry_identity(run_cli):
    res = run_cli("plan", "-f", "csv")
    rows = list(csv.DictReader(io.StringIO(res.out)))
    assert [r["deployment"] for r in rows][0] == "prfaas_pd"
    for r in rows:
        assert (r["scenario"], r["model"], r["prfaas_hardware"], r["pd_hardware"], r["link_gbps"]) == (
            "paper-case-study",
            "prfaas-1t-hybrid",
            "h200",
            "h20",
            "100.0",
        )
        assert (r["prfaas_gpus_per_instance"], r["pd_gpus_per_instance"]) == ("8", "8")
    assert float(rows[0]["operating_rate_rps"]) == pytest.approx(0.8 * float(rows[0]["lambda_max_rps"]), rel=1e-5)


def test_compare_says_why_options_fail():
    from prfaas_plan.planner.compare import plan_option
    from prfaas_plan.study.resolve.options import CompareOption, scenario_set

    def outcome(doc, option=CompareOption()):
        scenarios = scenario_set(load_scenario(yaml.safe_load(yaml.safe_dump(doc))), SCENARIO_PATH, basis="as-given")
        return plan_option(scenarios, option)

    assert outcome(case_study_doc(), CompareOption(model="kimi-k2")).failure == "does not fit"
    assert outcome(scenario_doc(budgets={"usd_per_hour": 100})).failure == "over budget"
    assert (
        outcome(
            scenario_doc(objective={"type": "min_cost", "target_rate_rps": 50.0}, prfaas__instances={"min": 0, "max": 8})
        ).failure
        == "cannot reach the target rate"
    )
    assert outcome(scenario_doc(slo={"ttft_p90_s": 0.01})).failure == "misses the SLO"
    ok = outcome(case_study_doc())
    assert ok.feasible and ok.lambda_max_rps == pytest.approx(3.2369, rel=1e-4)


def test_pareto_front_by_brute_force():
    from prfaas_plan.planner.compare import OptionResult, pareto_front
    from prfaas_plan.study.resolve.options import CompareOption

    rng = np.random.default_rng(7)
    pts = rng.integers(1, 6, size=(40, 3)).astype(float)
    results = [
        OptionResult(CompareOption(link_gbps=float(i)), usd_per_hour=c, lambda_max_rps=r, ttft_p90_s=t)
        for i, (c, r, t) in enumerate(pts)
    ]
    results.append(OptionResult(CompareOption(), failure="invalid"))
    front = pareto_front(results)
    for i, (c, r, t) in enumerate(pts):
        dominated = any(c2 <= c and r2 >= r and t2 <= t and (c2, r2, t2) != (c, r, t) for c2, r2, t2 in pts)
        assert (i in front) == (not dominated)
    assert len(results) - 1 not in front


def test_compare_bad_input_is_one_line_exit_2(run_cli, tmp_path):
    for args, needle in (
        (("--prfaas", "h2000"), "--prfaas"),
        (("--link", "10,abc"), "--link"),
        (("--pd", "h20,,h200"), "--pd"),
        (("--jobs", "100"), "--jobs"),
        (("--model", "nope"), "--model"),
        (("--plot", str(tmp_path / "f.txt")), "--plot"),
    ):
        res = run_cli("compare", *args)
        assert res.code == 2 and needle in res.err and len(res.err.strip().splitlines()) == 1, (args, res.err)


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"pd__gpus_per_instance": "autox"}, "pd.gpus_per_instance"),
        ({"pd__max_gpus_per_instance": 16}, "pd"),
        ({"prfaas__cost": {"usd_per_gpu_hour": 3, "purchase_usd_per_gpu": 30000}}, "prfaas.cost"),
        ({"prfaas__site": {"pue": 0.5}}, "prfaas.site.pue"),
        ({"link__usd_per_gb_egress": -1}, "link.usd_per_gb_egress"),
        ({"pd_decode": {"hardware": "h20", "instances": 0}}, "pd_decode"),
    ],
)
def test_bad_pool_and_cost_fields_exit_2(run_cli, tmp_path, changes, field):
    res = run_cli("plan", write(tmp_path, scenario_doc(**changes)))
    assert res.code == 2 and field in res.err and len(res.err.strip().splitlines()) == 1, res.err


def test_old_scenarios_keep_their_figures(case_inputs):
    """The case study (no pd_decode, fixed chips, no cost or site) plans as before (issue 3)."""
    result = plan(case_inputs, with_marginals=False)
    pt = result.point
    assert (round(pt.threshold_tokens), pt.n_prfaas, pt.n_p, pt.n_d) == (19349, 4, 3, 5)
    assert pt.lambda_max == pytest.approx(3.2369, rel=1e-4)
    assert case_inputs.pd_decode is None and pt.usd_per_hour == 4 * H200_8_USD_HOUR + 8 * H20_8_USD_HOUR


def test_np_sweep_with_a_decode_only_pool_keeps_its_decode_count(run_cli):
    """With a decode-only pool, the N_p sweep runs over the PD-P range with N_d at the plan's."""
    plan_doc = json.loads(run_cli("plan", "phase-split", "-f", "json").out)["prfaas_pd"]
    rows = list(csv.DictReader(io.StringIO(run_cli("sweep", "phase-split", "--over", "np").out)))
    assert [int(r["n_p"]) for r in rows] == list(range(0, 17))
    assert {int(r["n_d"]) for r in rows} == {plan_doc["n_d"]}


@pytest.mark.parametrize(
    "objective, budgets",
    [
        ({"type": "min_cost", "target_rate_rps": 3.0}, {}),
        ({"type": "max_throughput"}, {"usd_per_hour": 600}),
    ],
)
def test_milp_pays_the_committed_link_only_when_prfaas_is_used(objective, budgets):
    """A link at $2,000/Gbps-month ($274/hour for 100 Gbps) is paid only by plans with PrfaaS
    instances: the MILP (link as a binary) finds the same optimum as the enumeration, here a
    local-only plan that does not pay for the link."""
    found = {}
    for method in ("milp", "enumerate"):
        doc = scenario_doc(
            prfaas__instances={"min": 0, "max": 8},
            pd__instances={"min": 0, "max": 40},
            link__usd_per_gbps_month=2000.0,
            objective=objective,
            budgets=budgets,
            optimiser={"method": method},
        )
        pt = plan(inputs_of(doc), with_marginals=False).point
        found[method] = (pt.n_prfaas, pt.n_p + pt.n_d, round(pt.lambda_max, 9), pt.usd_per_hour)
    assert found["milp"] == found["enumerate"]
    assert found["milp"][0] == 0  # the link costs more than offloading saves


def test_compare_prices_swapped_hardware_at_its_own_price():
    """A pool's purchase cost belongs to its hardware: an option that swaps the hardware is priced
    at the new profile's rental (B200: $6.3 per chip-hour), and the report says so."""
    from prfaas_plan.planner.compare import plan_option
    from prfaas_plan.study.resolve.options import CompareOption, scenario_set

    doc = scenario_doc(prfaas__cost={"purchase_usd_per_gpu": 25000})
    scenarios = scenario_set(load_scenario(yaml.safe_load(yaml.safe_dump(doc))), SCENARIO_PATH)
    b200 = plan_option(scenarios, CompareOption(prfaas="b200"))
    assert b200.usd_per_hour == pytest.approx(b200.n_prfaas * 8 * 6.3 + (b200.n_p + b200.n_d) * H20_8_USD_HOUR)
    assert any("cost of h200 dropped" in n for n in b200.notes)
    h200 = plan_option(scenarios, CompareOption(prfaas="h200"))
    per_chip = 25000 * 0.25 / 8760  # the scenario's purchase, 4 years at 0%, power in the rental's absence
    assert h200.usd_per_hour == pytest.approx(4 * 8 * (per_chip + 0.7 * 1.3 * 0.08) + 8 * H20_8_USD_HOUR, rel=1e-9)


def test_failed_options_keep_their_identity_and_say_why(run_cli, tmp_path):
    doc = scenario_doc(budgets={"usd_per_hour": 300})
    rows = _compare_csv(run_cli, write(tmp_path, doc), "--prfaas", "h200,mi355x", "--jobs", "1")
    failed = next(r for r in rows if r["status"] != "ok")
    assert failed["status"] == "no price" and failed["rank"] == ""
    assert (failed["scenario"], failed["model"], failed["prfaas_hardware"], failed["pd_hardware"], failed["link_gbps"]) == (
        "paper-case-study",
        "prfaas-1t-hybrid",
        "mi355x",
        "h20",
        "100.0",
    )


def test_compare_section_references_are_checked(run_cli, tmp_path):
    """A typo in the compare: section is an error of validate and of compare, naming the field."""
    path = write(tmp_path, scenario_doc(compare={"prfaas": ["h200", "b2000"]}))
    for args in (("validate", path), ("compare", path)):
        res = run_cli(*args)
        assert res.code == 2 and "compare.prfaas" in res.err and "b2000" in res.err, res.err
    res = run_cli("compare")
    assert res.code == 2 and "no options to compare" in res.err
    assert "give --prfaas, --pd, --decode, --model or --link" in res.err  # the CLI's options, not the API's names


def test_validate_and_plan_accept_a_chips_list_whose_first_count_does_not_fit(run_cli, tmp_path):
    """[4, 8] H200 chips for the 1T model: 4 do not hold it, 8 do; the plan uses 8 and says 4 was left out."""
    path = write(tmp_path, scenario_doc(prfaas__gpus_per_instance=[4, 8]))
    assert run_cli("validate", path).code == 0
    doc = json.loads(run_cli("plan", path, "-f", "json").out)
    assert doc["identity"]["prfaas_gpus_per_instance"] == 8
    assert any("left out" in n and "4xh200" in n for n in doc["notes"])


def test_too_many_chip_combinations_is_an_error(run_cli, tmp_path):
    path = write(
        tmp_path,
        scenario_doc(
            prfaas__gpus_per_instance=list(range(5, 14)),
            pd__gpus_per_instance=list(range(8, 16)),
            pd__calibration_points=None,
            pd__calibration_fit=None,
        ),
    )
    res = run_cli("plan", path)
    assert res.code == 2 and "72 combinations of chips per instance" in res.err


def test_slo_missed_even_when_idle_fails_fast():
    """A TTFT target below any prefill time is refused without searching every count."""
    import time

    doc = scenario_doc(prfaas__instances={"min": 0, "max": 20}, pd__instances={"min": 0, "max": 20}, slo={"ttft_p90_s": 0.05})
    start = time.perf_counter()
    with pytest.raises(PlanInputError, match="even on an idle deployment"):
        plan(inputs_of(doc), with_marginals=False)
    assert time.perf_counter() - start < 60  # a guard against the exhaustive search, not a benchmark


def test_first_prfaas_instance_is_priced_with_the_link_it_brings():
    """With no PrfaaS instance in the plan, one more brings the committed link: its price is the
    instance's plus the link's ($2,000/Gbps-month x 100 Gbps / 730 h)."""
    doc = scenario_doc(
        prfaas__instances={"min": 0, "max": 8},
        link__usd_per_gbps_month=2000.0,
        budgets={"usd_per_hour": 600},
        pd__instances={"min": 0, "max": 40},
    )
    result = plan(inputs_of(doc))
    assert result.point.n_prfaas == 0
    m = result.marginals["per_prfaas_instance"]
    assert m.price_usd_per_hour == pytest.approx(H200_8_USD_HOUR + 2000.0 * 100 / 730, rel=1e-12)


def test_power_of_a_profile_without_tdp_is_flagged(tmp_path):
    """Rubin CPX has no published TDP: the plan says its power is not counted."""
    result = api.plan("phase-split")
    assert any("no tdp_w" in n and "rubin-cpx" in n for n in result.notes)


def test_a_plan_without_prfaas_that_co_location_beats_blames_the_split():
    """No PrfaaS instance may be bought (0..0): the 8 local instances split 6 / 2 serve 1.342 req/s
    where co-locating prefill and decode on all 8 serves 1.391 at the same $128/hour; the note
    says the split does not pay (there is no PrfaaS cluster to blame)."""
    from prfaas_plan.planner.plan import plan

    doc = case_study_doc()
    doc["prfaas"]["instances"] = {"min": 0, "max": 0}
    result = plan(inputs_of(doc), with_marginals=False)
    assert result.point.n_prfaas == 0
    said = [note for note in result.notes if "does not pay" in note]
    assert len(said) == 1 and said[0].startswith("co-located (local PD only, $128.00/hour")
    assert said[0].endswith("splitting the PD instances into prefill and decode does not pay") and "PrfaaS" not in said[0]


def test_a_plan_that_local_only_beats_at_its_price_says_so():
    """At 2 Gbps the case study's 4 PrfaaS instances serve 1.600 req/s, while the equal-cost
    homogeneous baseline (16 local instances for the same $256/hour) serves 2.684 and the
    co-located one (12 instances, $192/hour) 2.087: the plan's notes say PrfaaS does not pay;
    at 100 Gbps (3.237 req/s) they do not."""
    from prfaas_plan.planner.chips import load_inputs
    from prfaas_plan.planner.plan import plan

    thin = plan(load_inputs("paper-case-study").with_link_gbps(2), with_marginals=False)
    said = [note for note in thin.notes if "does not pay" in note or "pays" in note]
    assert thin.point.lambda_max == pytest.approx(1.600, abs=1e-3)
    assert len(said) == 2 and said[0].startswith("homog. equal-$ (local PD only, $256.00/hour against the plan's $256.00)")
    assert said[0].endswith(
        "serves 2.684 req/s, more than this plan's 1.600: at these prices and counts the PrfaaS cluster does not pay for itself"
    )
    # the co-located rival runs the homogeneous instances unsplit: its lead says more than the PrfaaS cluster
    assert said[1].startswith("co-located (local PD only, $192.00/hour") and "2.087 req/s" in said[1]
    assert said[1].endswith("neither the PrfaaS cluster nor the PD-P / PD-D split pays")
    wide = plan(load_inputs("paper-case-study"), with_marginals=False)
    assert not [note for note in wide.notes if "does not pay" in note]


def test_a_plan_that_may_buy_no_prfaas_instance_says_so_and_shows_no_prfaas_bound(run_cli, tmp_path):
    """PrfaaS range 0..0: nothing is offloaded because nothing may be bought (not because the link
    or the cluster would not pay), and the table has no Θ_prfaas (a pool of none has no bound;
    JSON null), where a PrfaaS pool that may grow but is not bought keeps its reason."""
    doc = case_study_doc()
    doc["prfaas"]["instances"] = {"min": 0, "max": 0}
    path = tmp_path / "no-factory.yaml"
    path.write_text(yaml.safe_dump(doc))
    out = json.loads(run_cli("plan", str(path), "-f", "json").out)
    assert out["prfaas_pd"]["n_prfaas"] == 0 and out["prfaas_pd"]["theta_prfaas_rps"] is None
    assert (
        "no request is offloaded: no PrfaaS instance may be bought (the PrfaaS range is 0), so this is a local-only plan"
        in out["notes"]
    )
    doc["prfaas"]["instances"] = {"min": 0, "max": 4}
    doc["link"]["bandwidth_gbps"] = 0.001
    path.write_text(yaml.safe_dump(doc))
    out = json.loads(run_cli("plan", str(path), "-f", "json").out)
    assert out["prfaas_pd"]["p"] == 0 and out["prfaas_pd"]["n_prfaas"] == 0  # a 1 Mbps link carries no KV in time
    assert any("the link or the PrfaaS cluster cannot carry any offload profitably" in n for n in out["notes"])


def test_each_pools_price_row_names_its_basis_and_every_default(run_cli, tmp_path):
    """A purchase of $32,000 with nothing else: 32,000 / 4 / 8,760 = $0.9132 per chip-hour, the
    4 years and 0% marked as defaults, power at the default $0.08/kWh; the same at 8% over 4
    years given: CRF 0.3019, 32,000 x 0.3019 / 8,760 = $1.1029, no default on either. The PD pool
    rents at the h20 profile's example price, which the row says. The rows are the JSON's."""
    bought = write(tmp_path, scenario_doc(prfaas__cost={"purchase_usd_per_gpu": 32000}), "bought.yaml")
    doc = json.loads(run_cli("plan", bought, "-f", "json").out)
    terms = doc["prices"]["prfaas"]
    assert "$32,000 per chip over 4 years (default) at 0.0% a year (default): $0.9132 per chip-hour" in terms
    assert "$0.08/kWh (default" in terms and "PUE 1.3 (default)" in terms
    assert (
        doc["prices"]["pd"].startswith("rented at $2.00 per chip-hour (h20's example price")
        and doc["prices"]["pd_decode"] is None
    )
    table = run_cli("plan", bought).out
    assert f"price PrfaaS                  h200: {terms}" in table
    financed = scenario_doc(prfaas__cost={"purchase_usd_per_gpu": 32000, "depreciation_years": 4, "cost_of_capital": 0.08})
    terms = json.loads(run_cli("plan", write(tmp_path, financed, "financed.yaml"), "-f", "json").out)["prices"]["prfaas"]
    assert "over 4 years at 8.0% a year: $1.1029 per chip-hour" in terms and "years (default)" not in terms


@pytest.mark.parametrize("cost", [{"usd_per_gpu_hour": 3.0, "depreciation_years": 3}, {"cost_of_capital": 0.08}])
def test_depreciation_terms_beside_a_rental_are_refused(run_cli, tmp_path, cost):
    """depreciation_years and cost_of_capital price a purchase; beside a rental (given, or the
    profile's price) they would be silently ignored: an error naming the pool's cost."""
    res = run_cli("plan", write(tmp_path, scenario_doc(prfaas__cost=cost)))
    assert res.code == 2 and "prfaas.cost" in res.err and "apply only to purchase_usd_per_gpu" in res.err


MINIMAL_CHIP = """name: mini
peak_tflops: {bf16: 1000}
memory_gib: 141
memory_bandwidth_tb_per_s: 4.8
scale_up_gb_per_s: 450
price_usd_per_gpu_hour: 3.0
efficiency: {matmul: 0.6, memory: 0.8, attention: 0.5}
"""


def test_a_half_specified_chip_says_which_efficiencies_it_took_by_default(run_cli, tmp_path):
    """A user's chip that sets three efficiencies without sources: `hardware show` says each is set
    without a source and lists the schema's defaults it takes (zero overheads, network 0.8, nic
    0.9, usable memory 0.9); a plan on it carries the same as a note naming the pool. Every shipped
    profile sets or sources each field, so none lists defaults; a full copy of h200 adds no note."""
    chip = tmp_path / "mini.yaml"
    chip.write_text(MINIMAL_CHIP)
    shown = run_cli("hardware", "show", chip).out
    assert "efficiency matmul 0.6: set in the profile without a source" in shown
    defaults = (
        "network 0.8, nic 0.9, kernel_overhead_us 0, prefill_pass_overhead_s 0, prefill_overhead_s 0, "
        "decode_step_overhead_s 0, memory_usable_fraction 0.9"
    )
    flat = " ".join(shown.split())
    assert f"efficiency at the schema's defaults (not set in the profile, no source): {defaults};" in flat
    assert "fixed costs at 0 make the chip faster than the shipped GPU profiles assume" in flat
    assert "links at the schema's defaults: scale_up_domain_chips 8, scale_up_latency_us 2, nic_latency_us 5" in flat
    for name in sorted(p.stem for p in (REPO / "hardware_profiles").glob("*.yaml")):
        assert "schema's defaults (not set" not in run_cli("hardware", "show", name).out, name
    doc = scenario_doc(prfaas__hardware=str(chip), prfaas__gpus_per_instance=8)
    notes = json.loads(run_cli("plan", write(tmp_path, doc), "-f", "json").out)["notes"]
    assert any(n.startswith("prfaas: mini (") and defaults in n for n in notes), notes
    copy = tmp_path / "h200-copy.yaml"
    copy.write_text((REPO / "hardware_profiles" / "h200.yaml").read_text().replace("name: h200\n", "name: h200-copy\n"))
    notes = json.loads(run_cli("plan", write(tmp_path, scenario_doc(prfaas__hardware=str(copy)), "copy.yaml"), "-f", "json").out)[
        "notes"
    ]
    assert not any("schema's defaults" in n for n in notes)


def test_a_pool_moved_to_other_hardware_rents_it_with_its_power_in_the_price(run_cli, tmp_path):
    """The case study's PrfaaS pool bought at $32,000 a chip, its power billed at $0.15/kWh: compare
    --prfaas b200 rents 32 B200 at the profile's example price, which holds their power; the site's
    $/kWh is not billed on top (1,000 W x PUE 1.3 x $0.15 = $0.195 per chip-hour more). The PD pool
    keeps its own terms: h20 rented at $2.00."""
    doc = scenario_doc(prfaas__cost={"purchase_usd_per_gpu": 32000}, prfaas__site={"usd_per_kwh": 0.15})
    out = run_cli("compare", write(tmp_path, doc), "--prfaas", "b200", "--jobs", "1", "-f", "json")
    assert out.code == 0, out.err
    (row,) = json.loads(out.out)["options"]
    b200 = api.hardware_of("b200")
    assert row["n_prfaas"] == 4 and row["usd_per_hour"] == pytest.approx(32 * b200.price_usd_per_gpu_hour + 64 * 2.0, rel=1e-9)
