"""Plans where each constraint binds, checked against the paper's formulas evaluated by hand.

The scenario: the case study's model and pools, a workload of two lengths (8K and 64K tokens,
half each), PrfaaS instances free in 0..8, 8 PD instances, and a thin link. With two lengths
the threshold is one of three (all offloaded, 64K offloaded, none), so the throughput model
(PRFAAS.md section 3.4) can be written out in the test:

    Theta_prfaas / p  = min(N_prfaas / (p T_prfaas(l_long)),  B / (p S_kv(l_long)))
    Theta_pdp / (1-p) = N_p / ((1 - p) T_pd(l_short))
    Theta_pdd         = N_d x 800 tokens/s / 1024 tokens

T and S come from the pools' curves (the inputs of the throughput model); everything after
them (bounds, the optimum over every count, egress in decimal Gbps, the binding constraint,
budgets) is computed here by brute force and compared with the planner, MILP and enumeration.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import yaml
from conftest import REPO, case_study_doc

from prfaas_plan.planner.chips import load_inputs
from prfaas_plan.planner.plan import plan
from prfaas_plan.profiles.scenario import load_scenario
from prfaas_plan.study.resolve import build_inputs

SHORT, LONG = 8192, 65536
DECODE_TOKENS_PER_S, OUTPUT_TOKENS = 800, 1024
PD_INSTANCES = 8
H200_USD_PER_INSTANCE_HOUR, H20_USD_PER_INSTANCE_HOUR = 8 * 4.0, 8 * 2.0  # the shipped example prices


def two_length_inputs(gbps: float, method: str = "auto", budgets: dict | None = None):
    doc = case_study_doc()
    doc["workload"]["input"] = {
        "type": "mixture",
        "components": [{"weight": 1, "type": "fixed", "tokens": SHORT}, {"weight": 1, "type": "fixed", "tokens": LONG}],
    }
    doc["prfaas"]["instances"] = {"min": 0, "max": 8}
    doc["link"]["bandwidth_gbps"] = gbps
    doc["optimiser"] = {"method": method}
    if budgets:
        doc["budgets"] = budgets
    return build_inputs(load_scenario(yaml.safe_load(yaml.safe_dump(doc))), str(REPO / "prfaas_plan/scenarios/x.yaml"))


def by_hand(inputs, gbps: float, gpu_budget_h200: int | None = None, usd_per_hour: float | None = None):
    """Every (t, N_prfaas, N_p, N_d) evaluated with the paper's formulas; the best Lambda_max, the
    fewest PrfaaS instances that reach it, and the bound that binds there."""
    t_f = dict(zip((SHORT, LONG), inputs.prfaas.curve.prefill_s(np.array([SHORT, LONG], float))))
    s_kv = dict(zip((SHORT, LONG), inputs.prfaas.curve.kv_bytes(np.array([SHORT, LONG], float))))
    t_pd = dict(zip((SHORT, LONG), inputs.pd.curve.prefill_s(np.array([SHORT, LONG], float))))
    link_bytes_per_s = gbps * 1e9 / 8  # decimal Gbps
    splits = {  # threshold -> (p, work per request of PrfaaS s, link bytes, PD-P s)
        0: (1.0, (t_f[SHORT] + t_f[LONG]) / 2, (s_kv[SHORT] + s_kv[LONG]) / 2, 0.0),
        SHORT: (0.5, 0.5 * t_f[LONG], 0.5 * s_kv[LONG], 0.5 * t_pd[SHORT]),
        LONG: (0.0, 0.0, 0.0, (t_pd[SHORT] + t_pd[LONG]) / 2),
    }
    over = lambda capacity, work: capacity / work if work > 0 else np.inf  # noqa: E731
    results = []
    for (t, (_p, w_f, w_link, w_pd)), n_f, n_p in itertools.product(splits.items(), range(9), range(PD_INSTANCES + 1)):
        if gpu_budget_h200 is not None and 8 * n_f > gpu_budget_h200:
            continue
        cost = n_f * H200_USD_PER_INSTANCE_HOUR + PD_INSTANCES * H20_USD_PER_INSTANCE_HOUR
        if usd_per_hour is not None and cost > usd_per_hour:
            continue
        n_d = PD_INSTANCES - n_p
        b = {
            "prfaas_compute": over(n_f, w_f),
            "link": over(link_bytes_per_s, w_link),
            "pd_prefill": over(n_p, w_pd),
            "pd_decode": n_d * DECODE_TOKENS_PER_S / OUTPUT_TOKENS,
        }
        lam = min(b.values())
        results.append((lam, t, n_f, n_p, n_d, min(b, key=b.get), lam * w_link * 8 / 1e9))
    best = max(r[0] for r in results)
    optimal = [r for r in results if r[0] >= best * (1 - 1e-9)]
    fewest = min(r[2] for r in optimal)
    return best, [r for r in optimal if r[2] == fewest]


@pytest.mark.parametrize("method", ["enumerate", "milp"])
def test_link_bound_plan_matches_the_formulas(method):
    """At 8 Gbps the link binds: Lambda_max = B / (p S_kv(64K)), egress = the usable 8 Gbps exactly,
    and no more PrfaaS instances than the link can feed."""
    inputs = two_length_inputs(8.0, method)
    point = plan(inputs, with_marginals=False).point
    best, optimal = by_hand(inputs, 8.0)
    assert point.lambda_max == pytest.approx(best, rel=1e-9)
    assert {r[1] for r in optimal} == {SHORT} and point.threshold_tokens == SHORT
    assert point.n_prfaas == optimal[0][2]  # idle PrfaaS instances are not bought
    assert (point.n_prfaas, point.n_p, point.n_d) in {(r[2], r[3], r[4]) for r in optimal}
    assert point.stages.binding == "link" and {r[5] for r in optimal} == {"link"}
    assert point.stages.egress_gbps == pytest.approx(8.0, rel=1e-9)  # the whole usable link, decimal Gbps
    assert point.link_utilisation == pytest.approx(1.0, rel=1e-9)
    # Theta_prfaas = p x min(compute bound, link bound), the paper's definition
    assert point.stages.theta_prfaas == pytest.approx(0.5 * best, rel=1e-9)


def test_link_too_thin_to_offload_plans_local_only():
    """At 3 Gbps offloading the 64K class cannot beat keeping everything local (hand enumeration),
    so the plan offloads nothing, buys no PrfaaS instance and sends nothing over the link."""
    inputs = two_length_inputs(3.0)
    result = plan(inputs, with_marginals=False)
    best, optimal = by_hand(inputs, 3.0)
    assert result.point.lambda_max == pytest.approx(best, rel=1e-9)
    assert {r[1] for r in optimal} == {LONG} and result.point.p == 0.0
    assert result.point.n_prfaas == 0 and result.point.stages.egress_gbps == 0.0
    assert any("local-only" in note for note in result.notes)


def test_more_usable_bandwidth_raises_a_link_bound_plan_by_the_formula():
    """Marginal value of +1 usable Gbps on the link-bound plan: re-planned at 9 Gbps by hand."""
    inputs = two_length_inputs(8.0)
    result = plan(inputs, with_marginals=True)
    best_8, _ = by_hand(inputs, 8.0)
    best_9, _ = by_hand(inputs, 9.0)
    assert result.marginal["per_gbps"] == pytest.approx(best_9 - best_8, rel=1e-9)
    assert result.marginal["per_gbps"] > 0


@pytest.mark.parametrize("method", ["enumerate", "milp"])
def test_gpu_budget_bound_plan(method):
    """A budget of 16 H200 chips (two PrfaaS instances) binds: the plan is the hand optimum within
    the budget, PrfaaS compute limits it, and the budget is reported as tight."""
    inputs = two_length_inputs(8.0, method, budgets={"gpus": {"h200": 16}})
    point = plan(inputs, with_marginals=False).point
    best, optimal = by_hand(inputs, 8.0, gpu_budget_h200=16)
    assert point.lambda_max == pytest.approx(best, rel=1e-9)
    assert point.n_prfaas == 2 and point.gpus["h200"] == 16
    assert point.stages.binding == "prfaas_compute" and "gpu_budget_h200" in point.tight
    assert best < by_hand(inputs, 8.0)[0]  # the budget costs throughput


@pytest.mark.parametrize("method", ["enumerate", "milp"])
def test_dollar_budget_bound_plan(method):
    """$200/hour buys 8 H20 instances ($128) and two H200 instances ($64), not a third ($32 more): the
    hand optimum within it, and the budget named as binding although $8/hour is left."""
    inputs = two_length_inputs(8.0, method, budgets={"usd_per_hour": 200})
    point = plan(inputs, with_marginals=False).point
    best, _ = by_hand(inputs, 8.0, usd_per_hour=200)
    assert point.lambda_max == pytest.approx(best, rel=1e-9)
    assert point.usd_per_hour == pytest.approx(2 * H200_USD_PER_INSTANCE_HOUR + 8 * H20_USD_PER_INSTANCE_HOUR)
    assert "usd_per_hour_budget" in point.tight


def test_naive_baseline_sends_every_request_over_the_link():
    """The naive baseline prefills everything remotely: its egress is Lambda x E[S_kv(L)], and at 8 Gbps
    the link caps it at B / E[S_kv(L)]."""
    inputs = two_length_inputs(8.0)
    naive = plan(inputs, with_marginals=False).baselines["naive_heterogeneous"]
    mean_s = float(np.mean(inputs.prfaas.curve.kv_bytes(np.array([SHORT, LONG], float))))
    assert naive.egress_gbps == pytest.approx(naive.lambda_max * mean_s * 8 / 1e9, rel=1e-9)
    assert naive.lambda_max <= 8e9 / 8 / mean_s * (1 + 1e-12)


def test_link_what_if_reports_against_the_new_link():
    """with_link_gbps(15) replaces the whole link: utilisation and the report use 15 Gbps."""
    from prfaas_plan.views.plan import plan_view

    result = plan(load_inputs("paper-case-study").with_link_gbps(15), with_marginals=False)
    egress = result.point.stages.egress_gbps
    assert result.point.link_utilisation == pytest.approx(egress / 15, rel=1e-9)
    assert 0.5 < result.point.link_utilisation < 1.0
    details = {row["item"]: row["value"] for row in plan_view(result).sections[0].rows}
    assert f"{100 * egress / 15:.1f}% of the usable 15 Gbps" in details["egress"]
