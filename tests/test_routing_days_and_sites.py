"""Issue 10: the routing table, robust plans, ... (the parts built so far).

Each figure is checked against an independent value: the routing table against a brute-force
search over every threshold at each bandwidth and against the planner at the scenario's own
bandwidth; the robust plan against each single-mix plan evaluated on the other mixes.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import replace

import numpy as np
import pytest
import yaml
from conftest import REPO, case_study_doc

from prfaas_plan import api
from prfaas_plan.planner.chips import choose
from prfaas_plan.planner.plan import plan
from prfaas_plan.planner.sites import pair_tables
from prfaas_plan.planner.throughput import bounds, threshold_table
from prfaas_plan.profiles.scenario import load_scenario
from prfaas_plan.study.model import Objective

SCENARIO_PATH = str(REPO / "prfaas_plan" / "scenarios" / "x.yaml")


def inputs_of(doc: dict):
    return choose(load_scenario(yaml.safe_load(yaml.safe_dump(doc))), SCENARIO_PATH)


# --------------------------------------------------------------------------------------------
# route-table


def test_route_table_thresholds_rise_as_bandwidth_falls(run_cli):
    """The case study's table: thresholds never fall as the bandwidth falls, everything stays
    local at 0 Gbps, and the row of the scenario's 100 Gbps is the plan's threshold."""
    res = run_cli("route-table", "-f", "csv")
    assert res.code == 0, res.err
    rows = list(csv.DictReader(io.StringIO(res.out)))
    gbps = [float(r["usable_gbps"]) for r in rows]
    thresholds = [float(r["threshold_tokens"]) for r in rows]
    assert gbps == sorted(gbps) and gbps[0] == 0.0
    assert all(a >= b for a, b in zip(thresholds, thresholds[1:]))  # ascending bandwidth, falling t
    assert float(rows[0]["p"]) == 0.0
    # nothing offloaded: no input exceeds the threshold, not even one of the declared 131,072
    # tokens above the binned support's top point (130,961, a bin's mean)
    assert (
        thresholds[0] >= 131072
        and thresholds[0] > api.plan("paper-case-study", with_marginals=False).inputs.input_dist.lengths_tokens[-1]
    )
    assert thresholds[0] > thresholds[-1]
    planned = [r for r in rows if r["planned"] == "True"]
    assert len(planned) == 1 and float(planned[0]["usable_gbps"]) == 100.0
    point = api.plan("paper-case-study", with_marginals=False).point
    assert float(planned[0]["threshold_tokens"]) == pytest.approx(point.threshold_tokens, rel=1e-12)
    assert float(planned[0]["lambda_max_rps"]) == pytest.approx(point.lambda_max, rel=1e-6)


def test_route_table_rows_are_the_best_threshold_by_brute_force():
    """At each bandwidth the row's Lambda_max is the largest over every threshold for the plan's counts
    (evaluated here threshold by threshold), and its threshold reaches it."""
    table_doc = api.route_table("paper-case-study", start=0.5, stop=30, points=12)
    inputs, pt = table_doc.inputs, table_doc.point
    table = threshold_table(inputs)
    for row in table_doc.rows:
        link = row.usable_gbps * 1e9 / 8
        best = max(
            float(bounds(table, k, pt.n_prfaas, pt.n_p, pt.n_d, inputs, link_bytes_per_s=link).lambda_max)
            for k in range(len(table))
        )
        assert row.lambda_max_rps == pytest.approx(best, rel=1e-9)
        k = int(np.searchsorted(table.thresholds_tokens, row.threshold_tokens))
        at = float(bounds(table, k, pt.n_prfaas, pt.n_p, pt.n_d, inputs, link_bytes_per_s=link).lambda_max)
        assert at == pytest.approx(best, rel=1e-6)
        assert row.egress_gbps <= row.usable_gbps * (1 + 1e-9)


def test_route_table_of_a_link_bound_plan_matches_the_plan(run_cli, tmp_path):
    """On an 8 Gbps link (the link binds) the row at 8 Gbps is the plan's threshold, and rows below
    it offload less."""
    doc = case_study_doc()
    doc["link"]["bandwidth_gbps"] = 8
    doc["prfaas"]["instances"] = {"min": 0, "max": 8}
    path = tmp_path / "thin.yaml"
    path.write_text(yaml.safe_dump(doc))
    out = json.loads(run_cli("route-table", path, "-f", "json").out)
    rows = out["rows"]
    planned = next(r for r in rows if r["planned"])
    point = api.plan(str(path), with_marginals=False).point
    assert planned["threshold_tokens"] == pytest.approx(point.threshold_tokens, rel=1e-12)
    below = [r for r in rows if 0 < r["usable_gbps"] < 8]
    assert below and all(r["p"] <= planned["p"] + 1e-12 for r in below)
    assert out["n_prfaas"] == point.n_prfaas


def test_route_table_bad_input(run_cli):
    for args, field in ((("--from", "5", "--to", "1"), "--from/--to"), (("--to", "-1"), "--to"), (("--points", "1"), "--points")):
        res = run_cli("route-table", *args)
        assert res.code == 2 and field in res.err and len(res.err.strip().splitlines()) == 1, res.err


# --------------------------------------------------------------------------------------------
# robust plans

ROBUST = REPO / "tests" / "data" / "robust_three_mixes.yaml"


def _robust_doc(**changes) -> dict:
    doc = yaml.safe_load(ROBUST.read_text())
    doc["robust"].update(changes)
    return doc


def _write(tmp_path, doc) -> str:
    path = tmp_path / "robust.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


@pytest.mark.parametrize("objective", ["worst_case", "weighted"])
def test_robust_plan_beats_each_single_mix_plan_on_the_other_mixes(tmp_path, objective):
    """Three workload mixes, one set of counts: its worst case (or weighted mean) is at least that
    of each mix's own plan evaluated, with its best threshold and split, on every mix."""
    from oracles import case_lambda

    from prfaas_plan.planner.robust import robust_inputs
    from prfaas_plan.profiles.registry import resolve_scenario_file

    path = _write(tmp_path, _robust_doc(objective=objective))
    result = api.robust(path)
    _, cases = robust_inputs(*resolve_scenario_file(path))
    tables = [threshold_table(c.inputs) for c in cases]
    scores = []
    for own in result.cases:
        n_f, n_p, n_d = own.own_counts
        lams = [case_lambda(c.inputs, t, n_f, n_p + n_d, 0, True) for c, t in zip(cases, tables)]
        scores.append(min(lams) if objective == "worst_case" else sum(c.weight * lam for c, lam in zip(cases, lams)))
    value = result.worst_lambda_rps if objective == "worst_case" else result.weighted_lambda_rps
    assert value >= max(scores) * (1 - 1e-9)
    for case, c in zip(result.cases, cases):  # each case's own optimum is its plan alone
        assert case.own_lambda_rps == pytest.approx(plan(c.inputs, with_marginals=False).point.lambda_max, rel=1e-9)
        assert case.lambda_max_rps <= case.own_lambda_rps * (1 + 1e-9) and 0 <= case.loss < 1


def test_robust_worst_case_by_brute_force(tmp_path):
    """The shared counts are the best of every count within the ranges and the $350/hour budget,
    each case evaluated threshold by threshold and split by split here."""
    from prfaas_plan.planner.robust import robust_inputs
    from prfaas_plan.profiles.registry import resolve_scenario_file

    path = _write(tmp_path, _robust_doc())
    result = api.robust(path)
    _, cases = robust_inputs(*resolve_scenario_file(path))
    tables = [threshold_table(c.inputs) for c in cases]
    best = 0.0
    for n_f in range(0, 9):
        for n_pd in range(4, 13):
            if n_f * 32 + n_pd * 16 > 350:
                continue
            worst = min(
                max(
                    float(np.max(bounds(t, np.arange(len(t)), n_f, n_p, n_pd - n_p, c.inputs).lambda_max))
                    for n_p in range(n_pd + 1)
                )
                for c, t in zip(cases, tables)
            )
            best = max(best, worst)
    assert result.worst_lambda_rps == pytest.approx(best, rel=1e-9)
    assert result.usd_per_hour <= 350


def test_robust_min_cost_meets_every_target(tmp_path):
    doc = _robust_doc(objective="min_cost")
    for case, target in zip(doc["robust"]["cases"], (2.0, 3.0, 1.5)):
        case["target_rate_rps"] = target
    path = _write(tmp_path, doc)
    result = api.robust(path)
    assert all(c.lambda_max_rps >= c.target_rate_rps for c in result.cases)
    # no cheaper count meets every target: every count within the ranges and the $350 budget, by hand
    from oracles import case_lambda

    from prfaas_plan.planner.robust import robust_inputs
    from prfaas_plan.profiles.registry import resolve_scenario_file

    _, cases = robust_inputs(*resolve_scenario_file(path))
    tables = [threshold_table(c.inputs) for c in cases]
    cheapest = min(
        n_f * 32 + n_pd * 16
        for n_f in range(9)
        for n_pd in range(4, 13)
        if n_f * 32 + n_pd * 16 <= 350
        and all(case_lambda(c.inputs, t, n_f, n_pd, 0, True) >= c.target_rate_rps for c, t in zip(cases, tables))
    )
    assert result.usd_per_hour == cheapest
    for case, c in zip(result.cases, cases):  # loss: the extra cost share over the case's own cheapest plan
        own = plan(replace(c.inputs, objective=Objective("min_cost", c.target_rate_rps)), with_marginals=False).point.usd_per_hour
        assert case.loss == pytest.approx(cheapest / own - 1, rel=1e-12)


def test_robust_report_and_csv(run_cli, tmp_path):
    path = _write(tmp_path, _robust_doc())
    res = run_cli("robust", path, "-f", "csv")
    assert res.code == 0, res.err
    rows = list(csv.DictReader(io.StringIO(res.out)))
    assert [r["case"] for r in rows] == ["mixed", "short", "long"]
    assert {r["scenario"] for r in rows} == {"robust-demo"} and {r["n_prfaas"] for r in rows} == {rows[0]["n_prfaas"]}
    table = run_cli("robust", path).out
    assert "loss" in table and "worst case" in table


@pytest.mark.parametrize(
    "change, field",
    [
        ({"objective": "weighted", "cases": [{"name": "a", "weight": 0.5}, {"name": "b", "weight": 0.4}]}, "weights sum to 0.9"),
        ({"cases": [{"name": "a"}, {"name": "a"}]}, "case names must differ"),
        ({"cases": [{"name": "a", "target_rate_rps": -1}, {"name": "b"}]}, "robust.cases[0].target_rate_rps"),
        ({"cases": [{"name": "a"}]}, "robust.cases"),
        ({"objective": "min_cost"}, "target rate for every case"),
    ],
)
def test_robust_bad_input_is_one_line(run_cli, tmp_path, change, field):
    res = run_cli("robust", _write(tmp_path, _robust_doc(**change)))
    assert res.code == 2 and field in res.err and len(res.err.strip().splitlines()) == 1, res.err


# --------------------------------------------------------------------------------------------
# cache-aware routing

SHORT, LONG = 8192, 65536


def cache_doc(gbps: float, pd_cache=None, prfaas_cache=None, regime="auto", prfaas_max: int = 8) -> dict:
    doc = case_study_doc()
    doc["workload"]["input"] = {
        "type": "mixture",
        "components": [{"weight": 1, "type": "fixed", "tokens": SHORT}, {"weight": 1, "type": "fixed", "tokens": LONG}],
    }
    caches = {"regime": regime}
    if pd_cache:
        caches["pd"] = {"hit_fractions": list(pd_cache), "probs": [1] * len(pd_cache)}
    if prfaas_cache:
        caches["prfaas"] = {"hit_fractions": list(prfaas_cache), "probs": [1] * len(prfaas_cache)}
    doc["workload"]["cluster_caches"] = caches
    doc["link"]["bandwidth_gbps"] = gbps
    doc["prfaas"]["instances"] = {"min": 0, "max": prfaas_max}
    return doc


def _table_by_hand(inputs, classes, t):
    """Work per request at threshold t from (prob, route, prfaas tokens, pd tokens, offload KV tokens,
    local KV tokens) classes written out by hand."""
    f, pd = inputs.prfaas.curve, inputs.pd.curve
    T = lambda c, n: float(c.capacity_s(np.array([float(n)]))[0])  # noqa: E731
    S = lambda n: float(f.kv_bytes(np.array([float(n)]))[0]) if n > 0 else 0.0  # noqa: E731
    prfaas = sum(w * T(f, cf) for w, r, cf, cp, off, loc in classes if r > t)
    link = sum(w * S(off) for w, r, cf, cp, off, loc in classes if r > t) + sum(
        w * S(loc) for w, r, cf, cp, off, loc in classes if r <= t
    )
    local = sum(w * T(pd, cp) for w, r, cf, cp, off, loc in classes if r <= t)
    return prfaas, link, local


def test_scarce_bandwidth_routes_on_the_pd_uncached_length():
    """A PD cache only (h = 0 or 0.5) on a thin 5 Gbps link: the planner keeps the scarce rule; requests
    route on L (1 - h); PrfaaS (no cache) computes all of L and ships the KV of L (1 - h); the table
    equals the hand computation at every threshold and the plan is its brute-force optimum."""
    inputs = inputs_of(cache_doc(5.0, pd_cache=(0.0, 0.5)))
    assert inputs.workload.routed.regime == "scarce"
    assert any("cache regime: scarce" in n for n in inputs.notes)
    classes = [(0.25, L * (1 - h), L, L * (1 - h), L * (1 - h), 0) for L in (SHORT, LONG) for h in (0.0, 0.5)]
    assert sorted(inputs.input_dist.lengths_tokens) == sorted({c[1] for c in classes})
    table = threshold_table(inputs)
    for k, t in enumerate(table.thresholds_tokens):
        hand = _table_by_hand(inputs, classes, t)
        got = (table.prfaas_work_s[k], table.link_work_bytes[k], table.pd_work_s[k])
        assert got == pytest.approx(hand, rel=1e-9)
    point = plan(inputs, with_marginals=False).point
    best = 0.0
    for k in range(len(table)):
        for n_f in range(9):
            for n_p in range(9):
                lam = float(bounds(table, k, n_f, n_p, 8 - n_p, inputs).lambda_max)
                best = max(best, lam)
    assert point.lambda_max == pytest.approx(best, rel=1e-9)


def test_plentiful_bandwidth_uses_the_best_cache_and_ships_cached_kv():
    """Caches in both clusters (PD h = 0 or 0.5, PrfaaS g = 0 or 0.75) on 400 Gbps: the planner keeps the
    plentiful rule; requests route on L (1 - max(h, g)); a local request whose PrfaaS prefix is longer
    receives L (g - h) tokens of cached KV over the link, which the plan's egress includes (two PrfaaS
    instances at most, so that short requests stay local)."""
    inputs = inputs_of(cache_doc(400.0, pd_cache=(0.0, 0.5), prfaas_cache=(0.0, 0.75), prfaas_max=2))
    assert inputs.workload.routed.regime == "plentiful"
    classes = []
    for L in (SHORT, LONG):
        for h in (0.0, 0.5):
            for g in (0.0, 0.75):
                u = L * (1 - max(h, g))
                classes.append((0.125, u, u, u, L * (1 - h), L * max(g - h, 0.0)))
    table = threshold_table(inputs)
    for k, t in enumerate(table.thresholds_tokens):
        assert (table.prfaas_work_s[k], table.link_work_bytes[k], table.pd_work_s[k]) == pytest.approx(
            _table_by_hand(inputs, classes, t), rel=1e-9
        )
    result = plan(inputs, with_marginals=False)
    t = result.point.threshold_tokens
    S = lambda n: float(inputs.prfaas.curve.kv_bytes(np.array([float(n)]))[0])  # noqa: E731
    cached = sum(w * S(loc) for w, r, cf, cp, off, loc in classes if r <= t and loc > 0)
    assert cached > 0
    assert result.cache["cache_egress_gbps"] == pytest.approx(result.point.lambda_max * cached * 8 / 1e9, rel=1e-9)
    offloaded = sum(w * S(off) for w, r, cf, cp, off, loc in classes if r > t)
    assert result.point.stages.egress_gbps == pytest.approx(result.point.lambda_max * (offloaded + cached) * 8 / 1e9, rel=1e-6)
    assert result.point.lambda_max > result.cache["lambda_without_caches_rps"]


def test_a_forced_regime_and_the_old_single_cache_still_work(run_cli, tmp_path):
    inputs = inputs_of(cache_doc(400.0, pd_cache=(0.0, 0.5), prfaas_cache=(0.0, 0.75), regime="scarce"))
    assert inputs.workload.routed.regime == "scarce"
    assert not any("cache regime" in n for n in inputs.notes)
    doc = cache_doc(100.0, pd_cache=(0.0, 0.5))
    doc["workload"]["prefix_cache"] = {"hit_fractions": [0.0], "probs": [1.0]}
    path = tmp_path / "both.yaml"
    path.write_text(yaml.safe_dump(doc))
    res = run_cli("plan", path)
    assert res.code == 2 and "prefix_cache" in res.err and "cluster_caches" in res.err


def test_route_table_switches_cache_regime_by_bandwidth():
    """With caches in both clusters and regime auto, the table routes by the scarce rule when
    bandwidth is short and by the plentiful rule when it is ample, and each row gives the better."""
    path = REPO / "tests" / "data" / "cluster_caches.yaml"
    table = api.route_table(str(path))
    regimes = [r.cache_regime for r in table.rows]
    assert regimes[0] == "scarce" and regimes[-1] == "plentiful"
    assert regimes == sorted(regimes, key=lambda r: r == "plentiful")  # one switch, scarce below
    inputs, pt = table.inputs, table.point
    for regime in ("scarce", "plentiful"):
        other = inputs.with_cache_regime(regime)
        t = threshold_table(other)
        for row in table.rows[::8]:
            best = float(
                np.max(
                    bounds(
                        t, np.arange(len(t)), pt.n_prfaas, pt.n_p, pt.n_d, other, link_bytes_per_s=row.usable_gbps * 1.25e8
                    ).lambda_max
                )
            )
            assert row.lambda_max_rps >= best * (1 - 1e-9)


# --------------------------------------------------------------------------------------------
# a day profile and role rebalancing

DAY = REPO / "tests" / "data" / "day_profile.yaml"


def _day_doc(**day_changes) -> dict:
    doc = yaml.safe_load(DAY.read_text())
    doc["day"].update(day_changes)
    return doc


def _day(tmp_path, doc):
    path = tmp_path / "day.yaml"
    path.write_text(yaml.safe_dump(doc))
    return api.schedule(str(path)), str(path)


def test_role_schedule_beats_the_static_split_and_the_simulator_agrees(tmp_path):
    """12 h at 3.36 req/s, then 12 h at 2.24 req/s with inputs twice as long: switching two PD
    instances to prefill for the evening serves the day (scale >= 1) where no single split does;
    simulated, the schedule's queues stay bounded in both windows and the static plan's grow in the
    window it cannot carry."""
    path = tmp_path / "day.yaml"
    path.write_text(DAY.read_text())
    day, runs = api.simulate_day(str(path), requests=4000)
    assert day.scale >= 1.0 > day.static_scale and not day.fell_back
    assert [(w.n_p, w.n_d) for w in day.windows] != [(w.n_p, w.n_d) for w in day.static_windows]
    assert day.windows[1].n_p > day.windows[0].n_p  # the long evening gets more prefill
    for (_, sched, static), w, s in zip(runs, day.windows, day.static_windows):
        assert sched.stable and w.utilisation < 1
        if s.utilisation > 1:
            assert static.stable is False
    assert any(s.utilisation > 1 for s in day.static_windows)


def test_schedule_is_the_brute_force_best_sequence(tmp_path):
    """Every sequence of splits of the 8 PD instances over three windows, scored by hand with the
    conversion formula (idle f = 300 s / window of the converted instances): the planner's day scale is
    the best of them."""
    from oracles import best_schedule, day_grid

    doc = _day_doc(
        windows=[
            {"name": "a", "hours": 2, "rate_rps": 3.0},
            {"name": "b", "hours": 1, "rate_rps": 2.0, "input_scale": 2.0},
            {"name": "c", "hours": 3, "rate_rps": 1.2, "input_scale": 1.5},
        ]
    )
    (day, windows), _ = _day(tmp_path, doc)
    grids = [day_grid(w, day.n_prfaas, day.n_pd) for w in windows]
    best = best_schedule(windows, grids, day.n_pd, 300.0, None)
    assert day.scale == pytest.approx(best, rel=1e-9)


def test_very_long_conversion_falls_back_to_the_static_split(tmp_path):
    (day, _), _ = _day(tmp_path, _day_doc(conversion_s=1e6))
    assert day.fell_back and len({(w.n_p, w.n_d) for w in day.windows}) == 1
    assert day.scale == pytest.approx(day.static_scale, rel=1e-12)
    assert all(w.switched == 0 for w in day.windows)


def test_switch_limit_is_kept(tmp_path):
    (day, _), _ = _day(tmp_path, _day_doc(max_switches_per_window=1))
    splits = [w.n_p for w in day.windows]
    assert all(abs(a - b) <= 1 for a, b in zip(splits, splits[1:] + splits[:1]))
    (free, _), _ = _day(tmp_path, _day_doc())
    assert day.scale <= free.scale * (1 + 1e-12)


def test_min_cost_day_serves_every_window_for_less(tmp_path):
    """min_cost over PD counts 4..12: the cheapest counts whose schedule serves every window; the best
    static plan needs at least as much."""
    doc = _day_doc()
    doc["pd"]["instances"] = {"min": 4, "max": 12}
    doc["objective"] = {"type": "min_cost", "target_rate_rps": 1.0}
    (day, _), _ = _day(tmp_path, doc)
    assert day.scale >= 1.0 and all(w.utilisation <= 1 for w in day.windows)
    s_f, s_pd, s_cost = day.static_counts
    assert day.usd_per_hour <= s_cost


@pytest.mark.parametrize(
    "window, field",
    [
        ({"hours": 8, "rate_rps": -1.0}, "day.windows[0].rate_rps"),
        ({"hours": 0, "rate_rps": 1.0}, "day.windows[0].hours"),
        ({"hours": 8, "rate_rps": 1.0, "input_scale": 0}, "day.windows[0].input_scale"),
    ],
)
def test_bad_day_profile_is_one_line(run_cli, tmp_path, window, field):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(_day_doc(windows=[window])))
    res = run_cli("schedule", path)
    assert res.code == 2 and field in res.err and len(res.err.strip().splitlines()) == 1, res.err


def test_schedule_report_and_csv(run_cli):
    res = run_cli("schedule", DAY, "-f", "csv")
    assert res.code == 0, res.err
    rows = list(csv.DictReader(io.StringIO(res.out)))
    assert [r["window"] for r in rows] == ["day", "evening"]
    assert {r["scenario"] for r in rows} == {"day-demo"}
    assert "day scale" in run_cli("schedule", DAY).out


def test_sites_says_each_sites_decode_rate_and_that_robust_cases_are_not_planned_here(run_cli):
    """sites gives each PD site's decode rate per instance and where it comes from (the roofline
    here: no measured rate in the file), and on a file with robust: cases says they are the robust
    plan's; a file without says nothing of cases."""
    notes = json.loads(run_cli("sites", "two-edges-robust", "-f", "json").out)["notes"]
    study = api.study(str(REPO / "prfaas_plan" / "scenarios" / "two-edges-robust.yaml"))
    rates = ", ".join(f"{s.name} {s.decode.tokens_per_s_per_instance:,.0f} tokens/s (roofline)" for s in study.pd_sites)
    assert f"decode per PD-D instance: {rates}" in notes
    assert "the file's robust: section (4 cases) is not planned here: the robust plan serves them all" in notes
    assert not any("robust: section" in n for n in json.loads(run_cli("sites", "two-edges-day", "-f", "json").out)["notes"])


def test_a_window_beyond_the_counts_bought_is_said_not_served(run_cli, tmp_path):
    """A window at 10x the day's rate: the notes say which windows the counts do not serve, by how
    much (their load column), and the day scale; windows that do not span 24 hours are noted; the
    shipped day says neither."""
    doc = yaml.safe_load((REPO / "prfaas_plan" / "scenarios" / "day-rebalance.yaml").read_text())
    doc["day"]["windows"][0]["rate_rps"] = 33.6
    doc["day"]["windows"][1]["hours"] = 30
    out = json.loads(run_cli("schedule", _write(tmp_path, doc), "-f", "json").out)
    loads = {r["window"]: r["utilisation_fraction"] for r in out["rows"]}
    over = [w for w, load in loads.items() if load > 1]
    (note,) = [n for n in out["notes"] if n.startswith("not served: ")]
    assert note.startswith(f"not served: {', '.join(over)} ") and f"{max(loads.values()):.3g}x the capacity" in note
    assert f"fall to {out['plan']['day_scale']:.3g}x for all to be served" in note
    assert "the windows span 42 hours, not 24: each window counts for its hours, as given" in out["notes"]
    shipped = json.loads(run_cli("schedule", "day-rebalance", "-f", "json").out)["notes"]
    assert not [n for n in shipped if n.startswith("not served") or "not 24" in n]


@pytest.mark.parametrize("command, name", [("schedule", "day-rebalance"), ("robust", "robust-three-mixes")])
def test_schedule_and_robust_json_carry_their_headline_figures_and_the_scenarios_notes(run_cli, tmp_path, command, name):
    """The JSON's `plan` gives, as numbers, what the title and first note say (counts, $/hour, day
    scale or worst case); moved onto H100, the H20 measurements are dropped and the notes say so, as
    plan's do."""
    doc = json.loads(run_cli(command, name, "-f", "json").out)
    plan, text = doc["plan"], run_cli(command, name).out
    assert f"N_prfaas {plan['n_prfaas']}, N_pd {plan['n_pd']}" in text and f"${plan['usd_per_hour']:,.2f}/hour" in text
    if command == "schedule":
        assert f"schedule {plan['day_scale']:.3f}, best static plan {plan['static_day_scale']:.3f}" in text
        assert (plan["day_scale"], plan["static_day_scale"]) == (pytest.approx(1.046, abs=5e-4), pytest.approx(0.960, abs=5e-4))
    else:
        assert f"worst case {plan['worst_lambda_rps']:.3f} req/s, weighted {plan['weighted_lambda_rps']:.3f}" in text
        assert plan["worst_lambda_rps"] == pytest.approx(3.006, abs=5e-4)
    moved = yaml.safe_load((REPO / "prfaas_plan" / "scenarios" / f"{name}.yaml").read_text())
    moved["pd"]["hardware"] = "h100"
    notes = json.loads(run_cli(command, _write(tmp_path, moved), "-f", "json").out)["notes"]
    assert "decode on h100: the scenario's 800 tokens/s measured on h20 is not used: its roofline is" in notes


# --------------------------------------------------------------------------------------------
# several sites


def sites_doc(rates=(2.0, 2.0), links=(10.0, 100.0), pd_instances=4, prfaas_max=4) -> dict:
    mixture = {
        "type": "mixture",
        "components": [{"weight": 1, "type": "fixed", "tokens": SHORT}, {"weight": 1, "type": "fixed", "tokens": LONG}],
    }
    return {
        "name": "two-edges",
        "model": "prfaas-1t-hybrid",
        "prfaas_sites": [
            {"name": "factory", "hardware": "h200", "gpus_per_instance": 8, "instances": {"min": 0, "max": prfaas_max}}
        ],
        "pd_sites": [
            {"name": name, "hardware": "h20", "gpus_per_instance": 8, "instances": pd_instances, "rate_rps": rate}
            for name, rate in zip(("east", "west"), rates)
        ],
        "links": [
            {"prfaas": "factory", "pd": name, "bandwidth_gbps": gbps, "rtt_ms": 20} for name, gbps in zip(("east", "west"), links)
        ],
        "workload": {"input": mixture, "output": {"type": "fixed", "tokens": 1024}},
        "decode": {"max_batch": 64, "tokens_per_s_per_instance": 800},
    }


def _sites(tmp_path, doc):
    path = tmp_path / "sites.yaml"
    path.write_text(yaml.safe_dump(doc))
    return api.sites(str(path))


def test_two_sites_fill_the_small_link_to_its_cap_and_match_brute_force(tmp_path):
    """East (10 Gbps) and west (100 Gbps) share one PrfaaS site: the plan sends east's KV up to the
    10 Gbps and no further, and its demand scale is the brute-force best over the PrfaaS count,
    each site's threshold and each site's N_p / N_d split."""
    result, si = _sites(tmp_path, sites_doc(rates=(2.0, 2.0), prfaas_max=8))
    east = next(s for s in result.pd if s.name == "east")
    assert east.egress_gbps["factory"] <= 10.0 * (1 + 1e-6)  # within the solver's tolerance
    assert east.egress_gbps["factory"] == pytest.approx(10.0, rel=1e-6)  # the small link binds
    tables = {name: threshold_table(si.pair(name, "factory")) for name in ("east", "west")}
    rates = {"east": 2.0, "west": 2.0}
    r_d = 800 / 1024
    best = 0.0
    over = lambda cap, work: cap / work if work > 0 else np.inf  # noqa: E731
    for n_f in range(9):
        for ke in range(len(tables["east"])):
            for kw in range(len(tables["west"])):
                te, tw = tables["east"], tables["west"]
                prfaas = over(n_f, rates["east"] * te.prfaas_work_s[ke] + rates["west"] * tw.prfaas_work_s[kw])
                links = min(
                    over(10e9 / 8, rates["east"] * te.link_work_bytes[ke]),
                    over(100e9 / 8, rates["west"] * tw.link_work_bytes[kw]),
                )
                for npe in range(5):
                    for npw in range(5):
                        local = min(
                            over(npe, rates["east"] * te.pd_work_s[ke]),
                            over(npw, rates["west"] * tw.pd_work_s[kw]),
                            r_d * (4 - npe) / rates["east"],
                            r_d * (4 - npw) / rates["west"],
                        )
                        best = max(best, min(prfaas, links, local))
    assert result.scale == pytest.approx(best, rel=1e-6)
    assert not result.one_site
    west = next(s for s in result.pd if s.name == "west")
    assert west.link_utilisation_at_planned_rate["factory"] < 0.5  # the wide link has room; the small one is full


def test_one_site_scenario_gives_the_case_study_plan_exactly(tmp_path):
    """The case study written as one PD site and one PrfaaS site: today's plan, figure for figure."""
    case = case_study_doc()
    doc = {
        "name": "one-site",
        "model": case["model"],
        "prfaas_sites": [{"name": "factory", **case["prfaas"]}],
        "pd_sites": [{"name": "local", **case["pd"], "rate_rps": 2.0}],
        "links": [{"prfaas": "factory", "pd": "local", **case["link"]}],
        "workload": case["workload"],
        "decode": case["decode"],
    }
    result, _ = _sites(tmp_path, doc)
    point = api.plan("paper-case-study", with_marginals=False).point
    site = result.pd[0]
    assert result.one_site
    assert (site.threshold_tokens, result.n_prfaas["factory"], site.n_p, site.n_d) == (
        point.threshold_tokens,
        point.n_prfaas,
        point.n_p,
        point.n_d,
    )
    assert site.served_rps == point.lambda_max and result.scale == point.lambda_max / 2.0
    assert site.egress_gbps["factory"] == point.stages.egress_gbps


def test_sites_report_per_site_and_total(run_cli, tmp_path):
    path = tmp_path / "sites.yaml"
    path.write_text(yaml.safe_dump(sites_doc()))
    res = run_cli("sites", path, "-f", "csv")
    assert res.code == 0, res.err
    rows = [r for r in csv.DictReader(io.StringIO(res.out)) if r["part"] in ("pd_site", "total")]
    assert [r["pd_site"] or r["part"] for r in rows] == ["east", "west", "total"]
    assert float(rows[2]["served_rps"]) == pytest.approx(float(rows[0]["served_rps"]) + float(rows[1]["served_rps"]), rel=1e-5)
    assert run_cli("validate", path).code == 0


@pytest.mark.parametrize(
    "change, field",
    [
        (lambda d: d["links"][0].update(pd="north"), "links[0].pd: unknown PD site 'north'"),
        (lambda d: d["links"][1].update(prfaas="plant"), "links[1].prfaas: unknown PrfaaS site 'plant'"),
        (lambda d: d["pd_sites"][0].update(rate_rps=-1), "pd_sites[0].rate_rps"),
        (lambda d: d["links"][0].update(bandwidth_gbps=-5), "links[0].bandwidth_gbps"),
    ],
)
def test_bad_multi_site_input_is_one_line(run_cli, tmp_path, change, field):
    doc = sites_doc()
    change(doc)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc))
    for command in ("sites", "validate"):
        res = run_cli(command, path)
        assert res.code == 2 and field in res.err and len(res.err.strip().splitlines()) == 1, res.err


def test_two_edges_through_a_day_meets_every_constraint():
    """docs/sites-and-days.md's worked example: every window's plan keeps each site's instances (N_p + N_d is the
    count bought), serves its demand within decode, PD-P, link and the shared PrfaaS capacity, all
    checked here against the throughput model's work per request."""
    result, si = api.sites(str(REPO / "prfaas_plan" / "scenarios" / "two-edges-day.yaml"))
    assert len(result.windows) == 3 and result.scale == 1.0
    tables = pair_tables(si)
    n_f = result.n_prfaas["factory"]
    for window in result.windows:
        prfaas_seconds = 0.0
        for site in window.pd:
            inputs = si.pair(site.name, "factory")
            table = tables[site.name, "factory"]
            k = int(np.searchsorted(table.thresholds_tokens, site.threshold_tokens))
            assert site.n_p + site.n_d == result.n_pd[site.name]
            assert site.served_rps >= site.demand_rps * (1 - 1e-9)
            assert site.served_rps <= inputs.decode_rps_per_instance * site.n_d * (1 + 1e-6)
            assert site.served_rps * table.pd_work_s[k] <= site.n_p * (1 + 1e-6) + 1e-9
            assert site.offload_rps["factory"] == pytest.approx(site.served_rps * table.p[k], rel=1e-6, abs=1e-9)
            assert site.link_utilisation_at_planned_rate["factory"] <= 1 + 1e-6
            prfaas_seconds += site.served_rps * table.prfaas_work_s[k]
        assert prfaas_seconds <= n_f * (1 + 1e-6)
    assert result.usd_per_hour > 0


# --------------------------------------------------------------------------------------------
# role rebalancing in the simulator


@pytest.mark.slow
def test_role_switches_let_the_queues_recover_after_a_link_drop():
    """The case study at 0.8 x Lambda_max with the adaptive threshold and a 90% link drop from 600 s on.
    The threshold keeps PD-P from flooding (issue 16), so fixed roles stay bounded too, near the 3 / 5
    split's capacity; with rebalancing a decode instance becomes a PD-P instance (4 / 4, the planner's
    split for a 10 Gbps link) and the queues and TTFT are lower; with a conversion longer than the run
    no switch completes."""
    common = dict(load=0.8, requests=10_000, policy="adaptive", drop_at_s=600, drop_for_s=1e7, drop_to_fraction=0.1)
    fixed = api.simulate("paper-case-study", **common).result
    switching = api.simulate("paper-case-study", rebalance=True, conversion_s=120, **common).result
    never = api.simulate("paper-case-study", rebalance=True, conversion_s=1e7, **common).result
    assert switching.stable is True
    assert [change[1:] for change in switching.role_changes] == [(4, 4)]
    assert switching.queue_growth["last_mean"] < fixed.queue_growth["last_mean"] / 2
    assert switching.ttft["overall"]["p90_s"] < fixed.ttft["overall"]["p90_s"]
    assert not never.role_changes


def test_rebalancing_options_are_checked(run_cli):
    res = run_cli("simulate", "-n", "100", "--rebalance", "--conversion", "-5")
    assert res.code == 2 and "--conversion" in res.err


def test_simulator_runs_a_multi_site_plan(tmp_path):
    """The two-site plan simulated at 0.8 x its rates: every site's queues stay bounded and each link
    carries about 0.8 x its planned egress; at 1.3 x the site whose small link binds falls behind."""
    from prfaas_plan.simulate.sites import simulate_sites

    plan, si = _sites(tmp_path, sites_doc(rates=(2.0, 2.0), prfaas_max=8))
    under = simulate_sites(si, plan, load=0.8, requests=4000)
    for sim, site in zip(under, plan.pd):
        assert sim.stable and sim.completed == 4000
        assert sim.egress_gbps["factory"] == pytest.approx(0.8 * site.egress_gbps["factory"], rel=0.1)
    over = {sim.name: sim for sim in simulate_sites(si, plan, load=1.3, requests=4000)}
    assert not over["east"].stable
    assert over["east"].egress_gbps["factory"] <= 10.0 * (1 + 1e-6)  # the link never carries more than it can


def test_sites_cli_simulates_every_window(run_cli):
    res = run_cli("sites", REPO / "prfaas_plan" / "scenarios" / "two-edges-day.yaml", "--simulate", "1500", "-f", "csv")
    assert res.code == 0, res.err
    rows = [r for r in csv.DictReader(io.StringIO(res.out)) if r["part"] == "pd_site"]
    assert len(rows) == 6 and all(r["sim_queues"] == "bounded" for r in rows)


def test_latency_model_and_simulator_carry_the_cached_kv():
    """With caches in both clusters (plentiful regime) the closed-form link load at a rate is the
    throughput model's link work per request x the rate (offloaded KV plus cached KV moved to PD), and
    the simulator measures that egress within 10%."""
    from prfaas_plan.planner.deployment import Deployment
    from prfaas_plan.planner.latency import LatencyModel
    from prfaas_plan.simulate import SimConfig, simulate
    from prfaas_plan.study.model import decode_model

    inputs = inputs_of(yaml.safe_load((REPO / "tests" / "data" / "cluster_caches.yaml").read_text()))
    assert inputs.workload.routed.regime == "plentiful"
    point = plan(inputs, with_marginals=False).point
    table = threshold_table(inputs)
    k = int(np.searchsorted(table.thresholds_tokens, point.threshold_tokens))
    rate = 0.8 * point.lambda_max
    dep = Deployment("prfaas_pd", point.threshold_tokens, point.n_prfaas, point.n_p, point.n_d)
    decode = decode_model(inputs)
    closed = LatencyModel(inputs, dep, decode).at(rate)
    assert closed.link_utilisation == pytest.approx(rate * table.link_work_bytes[k] / inputs.link.usable_bytes_per_s, rel=1e-9)
    sim = simulate(inputs, dep, decode, SimConfig(rate_rps=rate, requests=3000))
    measured_gbps = sim.egress["mean_gbps"]
    assert measured_gbps == pytest.approx(closed.link_utilisation * inputs.link.usable_gbps, rel=0.1)


def test_rebalancing_a_separate_decode_pool_is_refused(run_cli):
    res = run_cli("simulate", "phase-split", "-n", "100", "--rebalance")
    assert res.code == 2 and "rebalance" in res.err and "pd_decode" in res.err


def test_robust_worst_case_counts_cases_against_their_targets(tmp_path):
    """With a target per case, worst_case maximises min_c Lambda_c / target_c (by hand over every count)."""
    from oracles import case_lambda

    from prfaas_plan.planner.robust import robust_inputs
    from prfaas_plan.profiles.registry import resolve_scenario_file

    doc = _robust_doc()
    for case, target in zip(doc["robust"]["cases"], (1.0, 4.0, 1.0)):
        case["target_rate_rps"] = target
    path = _write(tmp_path, doc)
    result = api.robust(path)
    _, cases = robust_inputs(*resolve_scenario_file(path))
    tables = [threshold_table(c.inputs) for c in cases]
    best = max(
        min(case_lambda(c.inputs, t, n_f, n_pd, 0, True) / c.target_rate_rps for c, t in zip(cases, tables))
        for n_f in range(9)
        for n_pd in range(4, 13)
        if n_f * 32 + n_pd * 16 <= 350
    )
    assert min(c.lambda_max_rps / c.target_rate_rps for c in result.cases) == pytest.approx(best, rel=1e-9)


def test_baselines_without_prfaas_use_the_pd_cache_only():
    """Under the plentiful rule the homogeneous baseline has no PrfaaS cache to draw on: it is the best
    split of its instances routing everything locally on the PD-uncached length (the scarce classes)."""
    inputs = inputs_of(yaml.safe_load((REPO / "tests" / "data" / "cluster_caches.yaml").read_text()))
    assert inputs.workload.routed.regime == "plentiful"
    result = plan(inputs, with_marginals=False)
    homog = result.baselines["homogeneous"]
    local = inputs.with_cache_regime("scarce")
    table = threshold_table(local)
    total = homog.n_p + homog.n_d
    best = max(float(bounds(table, len(table) - 1, 0, n_p, total - n_p, local).lambda_max) for n_p in range(total + 1))
    assert homog.lambda_max == pytest.approx(best, rel=1e-12)
    plentiful_table = threshold_table(inputs)
    flattering = max(
        float(bounds(plentiful_table, len(plentiful_table) - 1, 0, n_p, total - n_p, inputs).lambda_max)
        for n_p in range(total + 1)
    )
    assert homog.lambda_max < flattering  # the PrfaaS cache would flatter it


def test_validate_checks_robust_and_day_sections(run_cli, tmp_path):
    day = yaml.safe_load(DAY.read_text())  # a schema-valid day that the schedule refuses
    day["workload"]["cluster_caches"] = {"pd": {"hit_fractions": [0.5], "probs": [1.0]}, "regime": "scarce"}
    path = tmp_path / "day_caches.yaml"
    path.write_text(yaml.safe_dump(day))
    res = run_cli("validate", path)
    assert res.code == 2 and "day.windows" in res.err and "cluster_caches" in res.err, res.err
    robust = _robust_doc()
    robust["robust"]["cases"][1]["workload"]["input"]["max_tokens"] = 10_000_000
    path = tmp_path / "robust_long.yaml"
    path.write_text(yaml.safe_dump(robust))
    res = run_cli("validate", path)
    assert res.code == 2 and "context" in res.err


def test_commands_name_the_file_kind_they_want(run_cli):
    res = run_cli("plan", REPO / "prfaas_plan" / "scenarios" / "two-edges-day.yaml")
    assert res.code == 2 and "prfaas-plan sites" in res.err
    res = run_cli("sites", "paper-case-study")
    assert res.code == 2 and "prfaas-plan plan" in res.err
    assert run_cli("sites", "two-edges-day").code == 0  # shipped names work


def _two_edges_day() -> dict:
    """The shipped two-edges-day scenario, as a document to edit."""
    return yaml.safe_load((REPO / "prfaas_plan" / "scenarios" / "two-edges-day.yaml").read_text())


@pytest.mark.parametrize("day_change", [{"conversion_s": 1e6}, {"max_switches_per_window": 0}])
def test_multi_site_day_prices_role_switches(tmp_path, day_change):
    """With a conversion longer than a window, or no switch allowed, every site keeps one split all day;
    the plan costs at least as much as with cheap switches."""
    doc = _two_edges_day()
    free, _ = _sites(tmp_path, doc)
    doc["day"].update(day_change)
    fixed, _ = _sites(tmp_path, doc)
    for name in fixed.n_pd:
        assert len({(s.n_p, s.n_d) for w in fixed.windows for s in w.pd if s.name == name}) == 1
    assert fixed.usd_per_hour >= free.usd_per_hour * (1 - 1e-9)


def test_solution_check_refuses_a_solution_that_breaks_a_constraint():
    """CBC can report an infeasible programme as optimal with values that break its constraints (seen
    on the sites MILP); solution_valid checks every constraint of the values it returned."""
    import pulp

    from prfaas_plan.planner.formulation import solution_valid

    prob = pulp.LpProblem("check", pulp.LpMinimize)
    x = prob.add_variable("x", 0, 10, cat="Integer")
    y = prob.add_variable("y", 0, 10)
    prob += x + y
    prob += x + y >= 3
    prob += x - y == 1
    x.varValue, y.varValue = 2, 1
    assert solution_valid(prob)
    x.varValue, y.varValue = 0, 0  # what CBC returned for the infeasible fine pass: zeros
    assert not solution_valid(prob)
    x.varValue, y.varValue = 2, 1.0000001  # within the tolerance
    assert solution_valid(prob)


def test_searches_that_would_run_for_minutes_are_refused(run_cli, tmp_path):
    """Robust and schedule searches, and the sites programme, are bounded by their size: a one-line
    error naming the section, not minutes of silence."""
    robust = _robust_doc()
    robust["prfaas"]["instances"] = {"min": 0, "max": 40}
    robust["pd"]["instances"] = {"min": 0, "max": 100}
    robust["budgets"] = {}
    day = _day_doc()
    day["prfaas"]["instances"] = {"min": 0, "max": 40}
    day["pd"]["instances"] = {"min": 1, "max": 90}
    sites = sites_doc()
    sites["day"] = {"windows": [{"hours": 1, "rates": {"east": 1.0}}] * 150}
    for command, doc, field in (("robust", robust, "robust"), ("schedule", day, "day"), ("sites", sites, "day.windows")):
        path = tmp_path / f"{command}.yaml"
        path.write_text(yaml.safe_dump(doc))
        res = run_cli(command, path)
        assert res.code == 2 and field in res.err and "at most" in res.err, (command, res.err)


@pytest.mark.parametrize("windows", [1, 3])
def test_a_day_no_plan_can_serve_names_the_windows_rates(tmp_path, run_cli, windows):
    """min_cost over a day whose window asks more than the ranges can serve: the error is about the
    windows' rates (day.windows), not the sites' own rate_rps, whether the day has three windows or
    one (a one-window day is still a day section)."""
    doc = _two_edges_day()
    doc["objective"] = {"type": "min_cost"}
    doc["day"]["windows"] = doc["day"]["windows"][:windows]
    doc["day"]["windows"][0]["rates"]["us-east"] = 300.0
    path = tmp_path / "day.yaml"
    path.write_text(yaml.safe_dump(doc))
    res = run_cli("sites", str(path))
    assert res.code == 2 and res.err.strip() == (
        f"prfaas-plan: error: {path}: day.windows: no multi-site plan within the ranges and budgets serves "
        "every site's rate in every window (day.windows[].rates)"
    ), res.err


def _same_input_cases(doc: dict) -> dict:
    """``doc`` with a 512-token output and two cases: the file as given, and one whose workload
    repeats the file's input (and says nothing of the output)."""
    doc["workload"]["output"] = {"type": "fixed", "tokens": 512}
    doc["robust"] = {
        "objective": "worst_case",
        "cases": [{"name": "given"}, {"name": "same", "workload": {"input": dict(doc["workload"]["input"])}}],
    }
    return doc


def test_a_case_that_gives_only_an_input_keeps_the_scenarios_output(tmp_path):
    """A case's workload gives what it changes: one that repeats the file's input is the file's
    case, output (512 tokens, not the schema's default 1,024) and all, on one site and on several."""
    one = api.robust(_write(tmp_path, _same_input_cases(_robust_doc())))
    given, same = one.cases
    assert same.lambda_max_rps == given.lambda_max_rps and same.own_lambda_rps == given.own_lambda_rps
    doc = _same_input_cases(yaml.safe_load((REPO / "prfaas_plan" / "scenarios" / "two-edges-robust.yaml").read_text()))
    # a site with a workload of its own keeps its own output under the case
    doc["pd_sites"][1]["workload"] = {"input": dict(doc["workload"]["input"]), "output": {"type": "fixed", "tokens": 256}}
    path = tmp_path / "sites-robust.yaml"
    path.write_text(yaml.safe_dump(doc))
    study = api.study(str(path))
    outputs = [[s.workload.output_mean_tokens for s in c.pd_sites] for c in study.cases]
    assert outputs == [[512.0, 256.0], [512.0, 256.0]]
    # the case that repeats the input is the file's, decode rate and all (what its plan is made of)
    given, same = study.cases
    assert [s.decode for s in same.pd_sites] == [s.decode for s in given.pd_sites]


def test_a_sites_own_workload_is_named_under_its_site_and_the_shared_ones_notes_come_once(run_cli, tmp_path):
    """A PD site's own workload: its notes and errors name ``pd_sites.<site>.workload``; the scenario's
    workload, shared by the other sites, gives its notes once (not once a site)."""
    doc = yaml.safe_load((REPO / "prfaas_plan" / "scenarios" / "two-edges-day.yaml").read_text())
    doc["workload"]["prefix_cache"] = {"hit_fractions": [0.0, 0.5], "probs": [0.6, 0.5]}
    doc["pd_sites"].append(dict(doc["pd_sites"][1], name="asia"))
    for window in doc["day"]["windows"]:
        window["rates"]["asia"] = 1.0
    own = {"input": dict(doc["workload"]["input"]), "prefix_cache": {"hit_fractions": [0.0, 0.25], "probs": [1.0, 1.0]}}
    doc["pd_sites"][1]["workload"] = own
    path = tmp_path / "own-workload.yaml"
    path.write_text(yaml.safe_dump(doc))
    notes = [n for n in api.study(str(path)).notes if "probs" in n]
    assert notes == [
        f"workload.prefix_cache: the probs sum to 1.1, not 1: each is divided by the sum (shares {6 / 11:.3g}, {5 / 11:.3g})",
        "pd_sites.europe.workload.prefix_cache: the probs sum to 2, not 1: each is divided by the sum (shares 0.5, 0.5)",
    ]
    own["input"]["max_tokens"] = 4 * 1024 * 1024  # beyond the model's context
    path.write_text(yaml.safe_dump(doc))
    res = run_cli("sites", str(path))
    assert res.code == 2 and "pd_sites.europe.workload.input" in res.err, res.err


def test_robust_rows_give_each_cases_link_and_no_weight_when_none_is_given(run_cli, tmp_path):
    """A case with its own link_gbps is planned on it, and its CSV and JSON rows say so; cases
    without weights show none (not 0)."""
    doc = _robust_doc(cases=[{"name": "as-given"}, {"name": "wide", "link_gbps": 200}])
    path = _write(tmp_path, doc)
    rows = list(csv.DictReader(io.StringIO(run_cli("robust", path, "-f", "csv").out)))
    assert [(r["case"], float(r["link_gbps"]), r["weight"]) for r in rows] == [("as-given", 100.0, ""), ("wide", 200.0, "")]
    doc_json = json.loads(run_cli("robust", path, "-f", "json").out)
    assert [(r["link_gbps"], r["weight"]) for r in doc_json["rows"]] == [(100.0, None), (200.0, None)]
    table = run_cli("robust", path).out
    assert re.search(r"^\s+wide\s+-\s", table, re.M), table


def test_a_one_window_day_says_there_is_nothing_to_switch_between(run_cli, tmp_path):
    """A day of one 24-hour window has no switch to weigh: the schedule is the static plan, and the
    note says why (not that switches do not pay for their conversion time)."""
    doc = case_study_doc()
    doc["day"] = {"conversion_s": 300, "windows": [{"name": "all", "hours": 24, "rate_rps": 2.0}]}
    path = tmp_path / "one-window.yaml"
    path.write_text(yaml.safe_dump(doc))
    notes = json.loads(run_cli("schedule", str(path), "-f", "json").out)["notes"]
    assert "one window: nothing to switch between, so the schedule is the static plan" in notes
    assert not any("do not pay here" in n for n in notes)


def test_a_decode_only_pool_in_a_pd_site_says_it_is_a_one_site_field(run_cli, tmp_path):
    """pd_decode under a PD site of a multi-site file is a one-site scenario's field, said so (it
    read 'unknown field (check the spelling)', spelt right)."""
    doc = _two_edges_day()
    doc["pd_sites"][0]["pd_decode"] = {"hardware": "h200", "gpus_per_instance": 8, "instances": 2}
    path = tmp_path / "sites-decode.yaml"
    path.write_text(yaml.safe_dump(doc))
    res = run_cli("validate", str(path))
    assert res.code == 2 and res.err.strip() == (
        f"prfaas-plan: error: {path}: pd_sites[0]: pd_decode: a one-site field; a PD site of a multi-site file "
        "has no decode-only pool"
    ), res.err


def test_a_plan_that_offloads_nothing_has_a_threshold_no_input_exceeds(tmp_path, run_cli, case_study_file):
    """On a 1 Mbps link the plan keeps everything local (p = 0). Its threshold is then the model's
    context, at or above every input (the lognormal's declared 131,072-token bound), and the report
    says nothing is offloaded; the binned support's top point (a bin's mean) would have let a
    router offload the longest inputs onto a link that carries nothing."""
    path = case_study_file(tmp_path, link__bandwidth_gbps=0.001)
    result = api.plan(str(path), with_marginals=False)
    assert result.point.p == 0.0
    assert result.point.threshold_tokens >= 131072 > result.inputs.input_dist.lengths_tokens[-1]
    out = run_cli("plan", path).out
    assert re.search(r"threshold t\s+131,072 tokens \(128K, K = 1,024\): nothing offloaded", out)
