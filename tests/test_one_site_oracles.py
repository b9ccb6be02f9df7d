"""The one-site robust plan and day schedule against brute force (``tests/oracles``), in the cases
that make each constraint bind: a robust plan whose $/hour budget binds, a day whose switch limit
binds, a day beside a decode-only pool. The package solves these by exact search (enumeration over
the counts, the cyclic programme over the splits); the one programme (``planner.formulation``, what
the multi-site robust plan and day use) is checked against the same oracles on small threshold
tables, with every threshold a candidate, so both answers are held to one model."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import yaml
from oracles import (
    best_schedule,
    brute_force_day,
    day_grid,
    formulation_day,
    formulation_robust,
    robust_brute_force,
)
from test_routing_days_and_sites import _day, _day_doc, _robust_doc, _write
from test_study_combinations import decode_pool_day_doc

from prfaas_plan import api
from prfaas_plan.choices import RobustObjective
from prfaas_plan.planner.robust import robust_inputs
from prfaas_plan.planner.schedule import day_plan
from prfaas_plan.planner.throughput import threshold_table
from prfaas_plan.profiles.registry import resolve_scenario_file

TARGETS = (2.0, 3.0, 1.5)  # req/s per case, for min_cost


def _small(table, every: int = 128):
    """Every ``every``-th threshold of a table and its last: a table small enough for every threshold
    to be a candidate of the programme."""
    return table.subset(np.unique(np.r_[np.arange(0, len(table), every), len(table) - 1]))


def _robust_cases(tmp_path, objective: str, budget: float | None = 350.0):
    doc = _robust_doc(objective=objective)
    doc["budgets"] = {} if budget is None else {"usd_per_hour": budget}
    if objective == "min_cost":
        for case, target in zip(doc["robust"]["cases"], TARGETS):
            case["target_rate_rps"] = target
    path = _write(tmp_path, doc)
    _, cases = robust_inputs(*resolve_scenario_file(path))
    return path, cases


def _figure(result, objective: str) -> float:
    if objective == "min_cost":
        return result.usd_per_hour
    return result.worst_lambda_rps if objective == "worst_case" else result.weighted_lambda_rps


@pytest.mark.parametrize("objective", ["worst_case", "weighted", "min_cost"])
def test_a_budget_bound_robust_plan_is_the_brute_force_best(tmp_path, objective):
    """Three mixes within $350/hour: the package's shared counts reach the brute-force best figure
    (and are among the counts that do), and the budget binds (without it the figure is better)."""
    path, cases = _robust_cases(tmp_path, objective)
    result = api.robust(path)
    best, argbest = robust_brute_force(cases, [threshold_table(c.inputs) for c in cases], RobustObjective(objective))
    assert _figure(result, objective) == pytest.approx(best, rel=1e-9)
    counts = (result.n_prfaas, result.n_pd, 0)
    assert counts in argbest and result.usd_per_hour <= 350
    free = api.robust(_robust_cases(tmp_path, objective, budget=None)[0])
    if objective == "min_cost":
        assert free.usd_per_hour == pytest.approx(result.usd_per_hour)  # the cheapest plan fits the budget
    else:
        assert _figure(free, objective) > best * (1 + 1e-3)


@pytest.mark.parametrize("objective", ["worst_case", "weighted", "min_cost"])
def test_the_programme_over_every_threshold_is_the_brute_force_robust_plan(tmp_path, objective):
    """The one programme, a cell per case and every threshold of small tables a candidate, reaches
    the brute-force figure on the same tables within CBC's tolerance, under the binding budget."""
    _, cases = _robust_cases(tmp_path, objective)
    tables = [_small(threshold_table(c.inputs)) for c in cases]
    best, _ = robust_brute_force(cases, tables, RobustObjective(objective))
    sol = formulation_robust(cases, tables, RobustObjective(objective))
    assert sol is not None and sol.proven
    if objective == "min_cost":
        assert sol.usd_per_hour == pytest.approx(best, rel=1e-9)
    elif objective == "worst_case":
        assert min(sol.scales) == pytest.approx(best, rel=1e-6)
    else:
        assert sum(c.weight * x for c, x in zip(cases, sol.scales)) == pytest.approx(best, rel=1e-6)


SWITCH_LIMITED = [
    {"name": "a", "hours": 2, "rate_rps": 3.0},
    {"name": "b", "hours": 1, "rate_rps": 2.0, "input_scale": 2.0},
    {"name": "c", "hours": 3, "rate_rps": 1.2, "input_scale": 1.5},
]


def test_a_switch_limited_day_without_conversion_is_one_answer_three_ways(tmp_path):
    """Three windows, 8 PD instances, at most 1 switch per window and no conversion time, on small
    tables: the schedule's cyclic programme, the one programme (every threshold a candidate) and
    brute force over every cyclic sequence of splits give one day scale; the limit binds (the best
    with no switch and with 2 differ from it). Without conversion time the two programmes' switch
    models agree; with it, the one programme idles the switched resource (N_p - f into_p), the
    schedule a share f of the window's capacity (``planner.schedule``)."""
    (_, windows), _ = _day(tmp_path, _day_doc(max_switches_per_window=1, windows=SWITCH_LIMITED))
    small = [replace(w, table=_small(w.table)) for w in windows]
    inputs = small[0].inputs
    n_f, n_pd = inputs.limits.prfaas_max, inputs.limits.pd_max
    grids = [day_grid(w, n_f, n_pd) for w in small]
    hand = {limit: best_schedule(small, grids, n_pd, 0.0, limit) for limit in (0, 1, 2)}
    assert hand[0] < hand[1] * (1 - 1e-3) and hand[1] < hand[2] * (1 - 1e-3)
    day = day_plan(inputs, small, 0.0, 1)
    assert day.scale == pytest.approx(hand[1], rel=1e-9)
    sol = formulation_day(inputs, small, 0.0, 1)
    assert sol is not None and sol.scales[0] == pytest.approx(hand[1], rel=1e-6)
    splits = [cell.n_p["pd"] for cell in sol.cells]
    assert max(abs(a - b) for a, b in zip(splits, splits[-1:] + splits[:-1])) <= 1


@pytest.mark.parametrize("usd_per_hour", [None, 250.0])
def test_a_decode_only_day_is_one_answer_three_ways(tmp_path, usd_per_hour):
    """Beside a decode-only pool (no role switches), on small tables: enumeration over the counts,
    the one programme with every threshold a candidate and brute force give one day scale, with
    and without a binding $250/hour budget."""
    doc = decode_pool_day_doc()
    if usd_per_hour is not None:
        doc["budgets"] = {"usd_per_hour": usd_per_hour}
    path = tmp_path / "day.yaml"
    path.write_text(yaml.safe_dump(doc))
    _, windows = api.schedule(str(path))
    small = [replace(w, table=_small(w.table)) for w in windows]
    inputs = small[0].inputs
    scale, counts = brute_force_day(small, inputs.limits)
    day = day_plan(inputs, small, 300.0, None, method="enumerate")
    assert day.scale == pytest.approx(scale, rel=1e-9)
    sol = formulation_day(inputs, small, 300.0, None)
    assert sol is not None and sol.scales[0] == pytest.approx(scale, rel=1e-6)
    if usd_per_hour is not None:
        assert sol.usd_per_hour <= usd_per_hour + 1e-6
        assert brute_force_day(small, replace(inputs.limits, usd_per_hour=None))[0] > scale * (1 + 1e-3)


def test_searches_too_large_are_refused_in_one_line(tmp_path):
    """The exact searches refuse, before searching, what would run for minutes: the robust plan's
    (split, threshold) evaluations, the day's count combinations and its (N_p, N_d, threshold) cells."""
    from prfaas_plan.errors import PlanInputError

    doc = _robust_doc()
    doc["prfaas"]["instances"], doc["pd"]["instances"] = {"min": 0, "max": 200}, {"min": 4, "max": 200}
    with pytest.raises(PlanInputError, match=r"about 5e\+10 evaluations \(at most 1\.5e\+09, about 30 s\)") as info:
        api.robust(_write(tmp_path, doc))
    assert info.value.field == "robust"
    refused = {
        r"6000 count combinations \(at most 5000\)": ({"min": 0, "max": 99}, {"min": 1, "max": 60}),
        r"about 7(\.\d)?e\+11 evaluations \(at most 3\.5e\+09": ({"min": 0, "max": 9}, {"min": 0, "max": 300}),
    }
    for message, (prfaas, pd) in refused.items():
        doc = _day_doc()
        doc["prfaas"]["instances"], doc["pd"]["instances"] = prfaas, pd
        with pytest.raises(PlanInputError, match=message) as info:
            _day(tmp_path, doc)
        assert info.value.field == "day"


def test_programmes_too_large_are_refused_in_one_line():
    """The multi-site programme refuses, before solving, more than MAX_VARIABLES variables: 300
    windows of two PD sites (8 candidates each), or 100 windows of the four robust cases."""
    from prfaas_plan.errors import PlanInputError
    from prfaas_plan.planner.sites import plan_robust_sites, plan_sites

    day = api.study("two-edges-day")
    with pytest.raises(PlanInputError, match=r"about 14,400 variables \(at most 5,000\): use fewer windows") as info:
        plan_sites(replace(day, windows=(day.windows * 300)[:300]))
    assert info.value.field == "day.windows"
    robust = api.study("two-edges-robust")
    with pytest.raises(PlanInputError, match=r"about 19,200 variables \(at most 5,000\): use fewer cases") as info:
        plan_robust_sites(replace(robust, windows=robust.windows * 100))
    assert info.value.field == "robust.cases"
