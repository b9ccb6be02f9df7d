"""Questions that combine two features, planned by the one programme (``planner.formulation``)
and checked against brute force on small cases: a day schedule beside a decode-only pool, and a
robust plan over several sites."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import yaml
from oracles import brute_force_day

from prfaas_plan import api
from prfaas_plan.planner.cost import usd_per_hour
from prfaas_plan.planner.schedule import day_plan
from prfaas_plan.planner.throughput import bounds
from prfaas_plan.profiles.scenario import load_scenario
from prfaas_plan.profiles.sites import load_sites_scenario as load_sites
from prfaas_plan.study.resolve import build_inputs

REPO = Path(__file__).resolve().parents[1]
DAY = REPO / "tests" / "data" / "day_profile.yaml"


# --------------------------------------------------------------------------------------------
# a day beside a decode-only pool


def decode_pool_day_doc(objective: str = "max_throughput") -> dict:
    """The day profile (a 3.36 req/s day, then 2.24 req/s with inputs twice as long) with 0..6 H20
    PD-P instances beside 1..6 H20 decode-only instances and 0..4 H200 PrfaaS instances."""
    doc = yaml.safe_load(DAY.read_text())
    doc["prfaas"]["instances"] = {"min": 0, "max": 4}
    doc["pd"]["instances"] = {"min": 0, "max": 6}
    doc["pd_decode"] = {"hardware": "h20", "gpus_per_instance": 8, "instances": {"min": 1, "max": 6}}
    if objective == "min_cost":
        doc["objective"] = {"type": "min_cost", "target_rate_rps": 1.0}
    return doc


def _day(tmp_path, doc):
    path = tmp_path / "day.yaml"
    path.write_text(yaml.safe_dump(doc))
    return api.schedule(str(path))


def test_a_day_beside_a_decode_only_pool_is_the_brute_force_best(tmp_path):
    """max_throughput: the day scale of the counts bought is the brute-force best; the counts hold all
    day and each window has its own threshold, whose capacity covers the scaled rate."""
    day, windows = _day(tmp_path, decode_pool_day_doc())
    limits = windows[0].inputs.limits
    assert limits.separate_decode
    scale, counts = brute_force_day(windows, limits)
    assert day.scale == pytest.approx(scale, rel=1e-9)
    assert day.n_decode is not None and day.n_pd == day.windows[0].n_p
    # no role switches: every window keeps the counts bought, and the threshold follows the window
    assert all((w.n_p, w.n_d, w.switched) == (day.n_pd, day.n_decode, 0) for w in day.windows)
    assert day.windows[0].threshold_tokens != day.windows[1].threshold_tokens
    for w, plan_w in zip(windows, day.windows):
        assert plan_w.capacity_rps >= day.scale * w.rate_rps * (1 - 1e-9)


@pytest.mark.parametrize("usd_per_hour", [None, 250.0])
def test_the_programme_and_enumeration_agree_on_a_decode_only_day(tmp_path, usd_per_hour):
    """The same day planned by the one programme (``method: milp``) and by enumeration: the counts
    the programme buys reach the brute-force day scale. Under a $250/hour budget the mix matters:
    the long evening needs a third PD-P instance where the day alone would buy a fifth decode one."""
    doc = decode_pool_day_doc()
    if usd_per_hour is not None:
        doc["budgets"] = {"usd_per_hour": usd_per_hour}
    _, windows = _day(tmp_path, doc)
    inputs = windows[0].inputs
    by_programme = day_plan(inputs, windows, 300.0, None, method="milp")
    by_enumeration = day_plan(inputs, windows, 300.0, None, method="enumerate")
    scale, _ = brute_force_day(windows, inputs.limits)
    assert by_enumeration.scale == pytest.approx(scale, rel=1e-9)
    assert by_programme.scale == pytest.approx(scale, rel=1e-3)
    if usd_per_hour is not None:
        assert (by_programme.n_pd, by_programme.n_decode) == (3, 4) and by_programme.usd_per_hour <= usd_per_hour


def test_a_min_cost_day_beside_a_decode_only_pool_serves_every_window(tmp_path):
    """min_cost: the cheapest counts (brute force over the ranges) whose day scale is at least 1."""
    doc = decode_pool_day_doc("min_cost")
    day, windows = _day(tmp_path, doc)
    assert day.scale >= 1.0 - 1e-9
    inputs = windows[0].inputs
    cheapest = None
    for n_f, n_p, n_d in itertools.product(range(5), range(7), range(1, 7)):
        if (
            min(bounds(w.table, np.arange(len(w.table)), n_f, n_p, n_d, w.inputs).lambda_max.max() / w.rate_rps for w in windows)
            < 1
        ):
            continue

        cost = usd_per_hour(inputs, n_f, n_p, n_d)
        cheapest = cost if cheapest is None else min(cheapest, cost)
    assert day.usd_per_hour == pytest.approx(cheapest, rel=1e-9)


def test_a_decode_only_day_prints_its_counts(run_cli, tmp_path):
    path = tmp_path / "day.yaml"
    path.write_text(yaml.safe_dump(decode_pool_day_doc()))
    res = run_cli("schedule", str(path))
    assert res.code == 0, res.err
    assert "N_d" in res.out and "decode-only pool" in res.out and "static" not in res.out


def test_validate_accepts_a_day_beside_a_decode_only_pool(run_cli, tmp_path):
    path = tmp_path / "day.yaml"
    path.write_text(yaml.safe_dump(decode_pool_day_doc()))
    res = run_cli("validate", str(path))
    assert res.code == 0, res.err
    assert build_inputs(load_scenario(decode_pool_day_doc())).limits.decode_max == 6


# --------------------------------------------------------------------------------------------
# a robust plan over two sites

SHORT, LONG = 4096, 32768  # tokens: a two-length mixture keeps each site's threshold table small


def robust_sites_doc(objective: str = "worst_case", peak: float = 3.0, off: float = 1.0, budget: float | None = None) -> dict:
    """East (10 Gbps) and west (100 Gbps) share 0..4 H200 PrfaaS instances; two cases: east peaks
    (``peak`` and ``off`` req/s: 3 and 1) or west does. With a $/hour ``budget`` each PD site has
    1..4 instances, so that the counts trade off between the sites (else 4 each)."""
    mixture = {
        "type": "mixture",
        "components": [{"weight": 1, "type": "fixed", "tokens": SHORT}, {"weight": 1, "type": "fixed", "tokens": LONG}],
    }
    return {
        "name": "two-edges-robust",
        "model": "prfaas-1t-hybrid",
        "prfaas_sites": [{"name": "factory", "hardware": "h200", "gpus_per_instance": 8, "instances": {"min": 0, "max": 4}}],
        "pd_sites": [
            {
                "name": name,
                "hardware": "h20",
                "gpus_per_instance": 8,
                "instances": 4 if budget is None else {"min": 1, "max": 4},
                "rate_rps": 2.0,
            }
            for name in ("east", "west")
        ],
        **({} if budget is None else {"budgets": {"usd_per_hour": budget}}),
        "links": [
            {"prfaas": "factory", "pd": name, "bandwidth_gbps": gbps, "rtt_ms": 20}
            for name, gbps in (("east", 10.0), ("west", 100.0))
        ],
        "workload": {"input": mixture, "output": {"type": "fixed", "tokens": 1024}},
        "decode": {"max_batch": 64, "tokens_per_s_per_instance": 800},
        "robust": {
            "objective": objective,
            "cases": [
                {"name": "east-peak", "weight": 0.5, "rates": {"east": peak, "west": off}},
                {"name": "west-peak", "weight": 0.5, "rates": {"east": off, "west": peak}},
            ],
        },
    }


def _robust_sites(tmp_path, doc):
    path = tmp_path / "sites.yaml"
    path.write_text(yaml.safe_dump(doc))
    return api.robust_sites(str(path))


def case_scale(tables: dict, rates: dict, n_f: int, n_pd: dict, links: dict, r_d: float) -> float:
    """Brute force: the largest demand scale of one case for the counts, over each site's threshold
    and N_p / N_d split (one PrfaaS site: each site offloads its share above its threshold there)."""
    over = lambda cap, work: cap / work if work > 0 else np.inf  # noqa: E731
    names = list(rates)
    best = 0.0
    for ks in itertools.product(*(range(len(tables[n])) for n in names)):
        shared = over(n_f, sum(rates[n] * tables[n].prfaas_work_s[k] for n, k in zip(names, ks)))
        for n, k in zip(names, ks):
            shared = min(shared, over(links.get(n, 0.0), rates[n] * tables[n].link_work_bytes[k]))  # no link: no offload
        local = min(
            max(min(over(n_p, rates[n] * tables[n].pd_work_s[k]), r_d * (n_pd[n] - n_p) / rates[n]) for n_p in range(n_pd[n] + 1))
            for n, k in zip(names, ks)
        )
        best = max(best, min(shared, local))
    return best


def case_scales(study, n_f: int, n_pd: dict) -> list[float]:
    """Each case's best demand scale for the counts (brute force, ``case_scale``)."""
    from prfaas_plan.planner.sites import pair_tables

    scales = []
    for case in study.cases:
        tables = {n: t for (n, _), t in pair_tables(study.under(case)).items()}
        rates = {s.name: s.demand_rps for s in case.pd_sites}
        links = {pd: link.usable_bytes_per_s for (_, pd), link in study.under(case).links.items()}
        scales.append(case_scale(tables, rates, n_f, n_pd, links, 800 / 1024))
    return scales


def brute_force_robust(study, score, counts: bool = False):
    """The best ``score`` of the case scales over every count (the PrfaaS site's and each PD
    site's, within their ranges and the $/hour budget); with ``counts``, (best, its counts)."""
    factory, (east, west) = study.prfaas_sites[0], study.pd_sites
    ranges = (factory.instances, east.instances, west.instances)
    best = (-np.inf, None)
    for n_f, n_e, n_w in itertools.product(*(range(lo, hi + 1) for lo, hi in ranges)):
        cost = n_f * factory.pool.usd_per_hour_per_instance + (n_e + n_w) * east.pool.usd_per_hour_per_instance
        if study.usd_per_hour is not None and cost > study.usd_per_hour:
            continue
        value = score(case_scales(study, n_f, {"east": n_e, "west": n_w}))
        if value > best[0] * (1 + 1e-9):
            best = (value, (n_f, {"east": n_e, "west": n_w}))
    return best if counts else best[0]


def test_a_robust_plan_over_two_sites_is_the_brute_force_worst_case(tmp_path):
    """worst_case: the shared PrfaaS count whose worse case scales furthest is the brute-force best;
    each case's scale is the most its own thresholds and splits give for those counts."""
    result, study = _robust_sites(tmp_path, robust_sites_doc())
    assert len(result.cases) == 2 and result.n_pd == {"east": 4, "west": 4}
    assert result.worst_scale == pytest.approx(brute_force_robust(study, min), rel=1e-6)
    bought = result.n_prfaas["factory"]
    at_counts = replace(study, prfaas_sites=(replace(study.prfaas_sites[0], instances=(bought, bought)),))
    for k, case in enumerate(result.cases):  # every case at its own best for the counts bought
        assert case.scale == pytest.approx(brute_force_robust(at_counts, lambda s, k=k: s[k]), rel=1e-6)
    for case, spec in zip(result.cases, study.cases):
        served = {s.name: s.served_rps for s in case.windows[0].pd}
        assert served == pytest.approx({s.name: case.scale * s.demand_rps for s in spec.pd_sites})
    # the cases pull apart: each peaks where the other does not
    assert result.cases[0].windows[0].pd[0].served_rps > result.cases[1].windows[0].pd[0].served_rps


def test_a_weighted_robust_plan_over_two_sites_is_the_brute_force_best(tmp_path):
    result, study = _robust_sites(tmp_path, robust_sites_doc("weighted"))
    assert result.weighted_scale == pytest.approx(brute_force_robust(study, lambda s: 0.5 * s[0] + 0.5 * s[1]), rel=1e-6)


@pytest.mark.parametrize("objective", ["worst_case", "weighted"])
def test_a_budgeted_robust_plan_over_two_sites_trades_the_counts_as_brute_force_does(tmp_path, objective):
    """Under $250/hour each PD site may have 1..4 instances: the east-peak case alone would buy for
    east, the west-peak case for west; the worst case (or the mean) is the brute-force best over
    every count the budget allows."""
    result, study = _robust_sites(tmp_path, robust_sites_doc(objective, budget=250.0))
    score = min if objective == "worst_case" else (lambda s: 0.5 * s[0] + 0.5 * s[1])
    figure = result.worst_scale if objective == "worst_case" else result.weighted_scale
    assert figure == pytest.approx(brute_force_robust(study, score), rel=1e-6)
    assert result.usd_per_hour <= 250.0 + 1e-6
    _, (n_f, n_pd) = brute_force_robust(study, lambda s: s[0], counts=True)  # the east-peak case's own best counts
    assert score(case_scales(study, n_f, n_pd)) < figure * (1 - 1e-3)  # do worse on both cases: the budget binds


def test_every_case_of_a_budgeted_robust_plan_is_planned_on_the_counts_bought(tmp_path):
    """Each case is reported as ``sites`` plans the file with the bought counts fixed: its PD-P and
    PD-D instances are the site's bought N_pd (not the site's range of 1..4 planned afresh), and its
    scale is the brute-force best for those counts (each case's thresholds and splits free). Under
    $150/hour with a mild west case, east's peak binds and the plan buys 1 west instance; planned
    afresh, the west case would use 2 (a scale of 1.5625 where the purchase gives 0.78125)."""
    doc = robust_sites_doc("worst_case", budget=150.0)
    doc["robust"]["cases"][1]["rates"] = {"east": 0.5, "west": 1.0}  # west's case does not bind
    result, study = _robust_sites(tmp_path, doc)
    n_f, n_pd = result.n_prfaas["factory"], result.n_pd
    assert min(n_pd.values()) < 4  # the budget buys less than a range allows: the case where it matters
    for case in result.cases:
        assert {s.name: s.n_p + s.n_d for s in case.windows[0].pd} == n_pd
    assert [case.scale for case in result.cases] == pytest.approx(case_scales(study, n_f, n_pd), rel=1e-6)


def test_a_min_cost_robust_plan_over_two_sites_serves_every_case(tmp_path):
    """min_cost at 60% of the worst-case rates (which 4 PrfaaS instances serve 84% of): the fewest
    PrfaaS instances with which every case's rates are served (brute force)."""
    result, study = _robust_sites(tmp_path, robust_sites_doc("min_cost", peak=1.8, off=0.6))
    assert result.worst_scale >= 1.0 - 1e-9
    fewest = min(
        n_f
        for n_f in range(5)
        if brute_force_robust(replace(study, prfaas_sites=(replace(study.prfaas_sites[0], instances=(n_f, n_f)),)), min)
        >= 1.0 - 1e-9
    )
    assert result.n_prfaas == {"factory": fewest}


def test_robust_over_a_sites_file_from_the_cli(run_cli, tmp_path):
    path = tmp_path / "sites.yaml"
    path.write_text(yaml.safe_dump(robust_sites_doc()))
    res = run_cli("robust", str(path))
    assert res.code == 0, res.err
    assert "east-peak" in res.out and "west-peak" in res.out and "Robust multi-site plan" in res.out
    assert run_cli("validate", str(path)).code == 0
    bad = robust_sites_doc()
    bad["robust"]["cases"][0]["rates"] = {"north": 1.0}
    path.write_text(yaml.safe_dump(bad))
    res = run_cli("robust", str(path))
    assert res.code == 2 and "north" in res.err and len(res.err.strip().splitlines()) == 1, res.err


# --------------------------------------------------------------------------------------------
# compare over a sites file


def test_compare_over_a_sites_file_plans_each_option_as_sites_does(tmp_path):
    """Two PrfaaS hardware x two link bandwidths over the two-site file: each option's figures are
    those of ``sites`` on that variant written out by hand (the brute force: every option planned
    alone), and the ranking is by req/s served (every site's demand x the demand scale)."""
    doc = robust_sites_doc()
    del doc["robust"]
    path = tmp_path / "sites.yaml"
    path.write_text(yaml.safe_dump(doc))
    comparison = api.compare(str(path), prfaas=["h200", "b200"], link_gbps=[10.0, 100.0])
    assert len(comparison.results) == 4 and all(r.feasible for r in comparison.results)
    for r in comparison.results:
        variant = yaml.safe_load(path.read_text())
        variant["prfaas_sites"][0]["hardware"] = r.option.prfaas
        for link in variant["links"]:
            link["bandwidth_gbps"] = r.option.link_gbps
        alone = tmp_path / "variant.yaml"
        alone.write_text(yaml.safe_dump(variant))
        plan, _ = api.sites(str(alone))
        assert r.lambda_max_rps == pytest.approx(plan.scale * 4.0, rel=1e-9)  # two sites of 2 req/s
        assert r.usd_per_hour == pytest.approx(plan.usd_per_hour, rel=1e-9)
        assert r.n_prfaas == plan.n_prfaas["factory"]
        assert r.identity["prfaas_hardware"] == r.option.prfaas and r.identity["link_gbps"] == r.option.link_gbps
    served = [r.capacity_rps for r in comparison.results]
    assert served == sorted(served, reverse=True)


def test_compare_over_a_sites_file_from_the_cli(run_cli, tmp_path):
    doc = robust_sites_doc()
    del doc["robust"]
    path = tmp_path / "sites.yaml"
    path.write_text(yaml.safe_dump(doc))
    res = run_cli("compare", str(path), "--prfaas", "h200,b200", "--jobs", "1")
    assert res.code == 0, res.err
    assert "b200" in res.out and "h200" in res.out
    res = run_cli("compare", str(path), "--decode", "groq-lpu", "--jobs", "1")
    assert res.code == 2 and "decode-only" in res.err and len(res.err.strip().splitlines()) == 1, res.err


# --------------------------------------------------------------------------------------------
# one programme in the package


def test_one_milp_builder_in_the_package():
    """Every mixed-integer programme is built by planner/formulation.py: no other module of the
    package constructs a pulp problem or adds a variable to one."""
    import ast

    builders = set()
    for path in sorted((REPO / "prfaas_plan").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in ("LpProblem", "LpVariable", "add_variable"):
                builders.add(path.relative_to(REPO).as_posix())
    assert builders == {"prfaas_plan/planner/formulation.py"}


# --------------------------------------------------------------------------------------------
# what-ifs on the resolved study


def test_what_ifs_on_a_study_equal_the_file_changed_by_hand(tmp_path):
    """A link's bandwidth, a window alone and a case alone, as typed replacements of the resolved
    study, plan as the file with that change written out does."""
    from prfaas_plan.planner.sites import plan_sites
    from prfaas_plan.study.resolve import resolve_sites

    doc = robust_sites_doc()
    path = tmp_path / "sites.yaml"
    path.write_text(yaml.safe_dump(doc))
    _, study = api.robust_sites(str(path))
    thin = plan_sites(study.with_link("factory", "west", 25.0))
    by_hand = yaml.safe_load(path.read_text())
    by_hand["links"][1]["bandwidth_gbps"] = 25.0
    del by_hand["robust"]
    alone = tmp_path / "thin.yaml"
    alone.write_text(yaml.safe_dump(by_hand))
    written, _ = api.sites(str(alone))
    assert thin.scale == pytest.approx(written.scale, rel=1e-9)
    east_peak = plan_sites(study.case("east-peak"))
    by_hand = yaml.safe_load(path.read_text())
    by_hand["pd_sites"][0]["rate_rps"], by_hand["pd_sites"][1]["rate_rps"] = 3.0, 1.0
    del by_hand["robust"]
    alone.write_text(yaml.safe_dump(by_hand))
    written, _ = api.sites(str(alone))
    assert east_peak.scale == pytest.approx(written.scale, rel=1e-9)
    assert plan_sites(resolve_sites(load_sites(by_hand)).window("steady")).scale == pytest.approx(written.scale, rel=1e-9)
    with pytest.raises(Exception, match="no case 'north'"):
        study.case("north")


def test_a_day_of_sites_prints_the_fewest_role_switches():
    """two-edges-day's cheapest plan ($147.92/hour: 8 PrfaaS, 2 + 2 PD instances) can keep every split
    all day; among the plans of that cost the planner prints one with no role switch (the day is
    cyclic: the first window follows the last)."""
    result, _ = api.sites(str(REPO / "prfaas_plan" / "scenarios" / "two-edges-day.yaml"))
    assert result.usd_per_hour == pytest.approx(147.92, abs=0.005)
    for site in ("us-east", "europe"):
        splits = [next(s.n_p for s in w.pd if s.name == site) for w in result.windows]
        assert sum(a != b for a, b in zip(splits, splits[-1:] + splits[:-1])) == 0, (site, splits)


def test_settle_replans_the_splits_of_the_counts_bought():
    """Given a day's plan whose splits switch in every window, the second step keeps the counts and
    the scale and returns splits with the fewest switches (two-edges-day: none)."""
    from dataclasses import replace as swap

    from prfaas_plan.choices import ObjectiveKind
    from prfaas_plan.planner.formulation import Goal, settle, solve
    from prfaas_plan.planner.optimizer import coarse_indices
    from prfaas_plan.planner.sites import pair_tables, window_cells
    from prfaas_plan.study.resolve import resolve_sites

    spec = load_sites(yaml.safe_load((REPO / "prfaas_plan" / "scenarios" / "two-edges-day.yaml").read_text()))
    study = resolve_sites(spec)
    tables = pair_tables(study)
    cells = window_cells(study, tables)
    cands = {(0, w, s.name): coarse_indices(tables[s.name, "factory"], 16) for s in study.pd_sites for w in range(3)}
    goal = Goal(ObjectiveKind.min_cost)
    sol = solve(study, cells, cands, goal)
    switching = swap(sol, cells=tuple(swap(c, n_p={k: w % 2 for k in c.n_p}) for w, c in enumerate(sol.cells)))
    kept = settle(study, cells, cands, goal, switching)
    assert (kept.n_prfaas, kept.n_pd, kept.scales) == (sol.n_prfaas, sol.n_pd, sol.scales)
    for name in sol.n_pd:
        splits = [c.n_p[name] for c in kept.cells]
        assert splits == [splits[0]] * 3, (name, splits)


# --------------------------------------------------------------------------------------------
# review fixes, each pinned


def _write(tmp_path, doc, name="f.yaml") -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def test_settle_buys_no_instance_that_adds_nothing(tmp_path):
    """Only west is linked to the factory; case a puts east at 1 req/s, case b cuts west's link to
    1 Gbps: the worst case is east's, which PrfaaS instances cannot help, so none is bought."""
    doc = robust_sites_doc()
    doc["links"] = [doc["links"][1]]
    doc["robust"]["cases"] = [
        {"name": "a", "rates": {"east": 1.0}},
        {"name": "b", "links": [{"prfaas": "factory", "pd": "west", "bandwidth_gbps": 1.0}]},
    ]
    result, study = _robust_sites(tmp_path, doc)
    assert result.n_prfaas == {"factory": 0}
    assert result.worst_scale == pytest.approx(brute_force_robust(study, min), rel=1e-6)


def test_a_one_pair_study_plans_its_window_rate():
    """A window of a one-site-pair study plans that window's rate, not the site's rate_rps."""
    from prfaas_plan.planner.sites import plan_sites

    doc = yaml.safe_load((REPO / "prfaas_plan" / "scenarios" / "two-edges-day.yaml").read_text())
    doc["pd_sites"] = doc["pd_sites"][:1]
    doc["links"] = doc["links"][:1]
    for window in doc["day"]["windows"]:
        window["rates"] = {"us-east": window["rates"]["us-east"]}
    doc["objective"] = {"type": "max_throughput"}
    study = api.study(_write_tmp(doc))
    scales = {w.name: plan_sites(study.window(w.name)) for w in study.windows}
    for w in study.windows:
        plan = scales[w.name]
        assert plan.windows[0].pd[0].demand_rps == w.rates_rps["us-east"]
        assert plan.scale * w.rates_rps["us-east"] == pytest.approx(plan.windows[0].pd[0].served_rps, rel=1e-9)
    assert len({round(p.scale, 6) for p in scales.values()}) == 3  # three rates, three scales


def _write_tmp(doc) -> str:
    import tempfile

    path = Path(tempfile.mkdtemp()) / "f.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def test_a_what_if_on_the_study_reaches_every_robust_case(tmp_path):
    from prfaas_plan.planner.sites import plan_robust_sites

    _, study = _robust_sites(tmp_path, robust_sites_doc())
    thin = study.with_link("factory", "west", 1.0)
    for case in thin.cases:
        assert thin.under(case).links["factory", "west"].bandwidth_gbps == pytest.approx(1.0)
    assert plan_robust_sites(thin).worst_scale < plan_robust_sites(study).worst_scale * (1 - 1e-3)


def test_budgets_of_a_sites_file_and_with_limits_resolve_names(tmp_path):
    """'H200' is h200 in a sites file's budgets as in a one-site file's; with_limits checks its input."""
    from prfaas_plan.errors import PlanInputError

    doc = robust_sites_doc()
    doc["budgets"] = {"gpus": {"H200": 16}}
    result, study = _robust_sites(tmp_path, doc)
    assert study.gpu_budget == {"h200": 16} and result.n_prfaas["factory"] * 8 <= 16
    assert study.with_limits(gpu_budget={"H200": 8}).gpu_budget == {"h200": 8}
    for bad, field in (({"h2OO": 8}, "budgets.gpus.h2OO"), ({"h200": -1}, "budgets.gpus.h200")):
        with pytest.raises(PlanInputError) as info:
            study.with_limits(gpu_budget=bad)
        assert info.value.field == field
    with pytest.raises(PlanInputError) as info:
        study.with_limits(usd_per_hour=-5)
    assert info.value.field == "budgets.usd_per_hour"


def test_unpriced_hardware_in_a_sites_file_is_refused_where_a_price_is_needed(run_cli, tmp_path):
    """gb300 has no price: a min_cost sites file on it is refused naming the site's hardware, and
    compare puts that option among those with no price instead of ranking it cheapest."""
    doc = robust_sites_doc()
    del doc["robust"]
    doc["objective"] = {"type": "min_cost"}
    doc["prfaas_sites"][0]["hardware"] = "gb300"
    res = run_cli("sites", _write(tmp_path, doc))
    assert res.code == 2 and "prfaas_sites.factory.hardware" in res.err and "no price" in res.err, res.err
    doc["prfaas_sites"][0]["hardware"] = "h200"
    comparison = api.compare(_write(tmp_path, doc, "g.yaml"), prfaas=["h200", "gb300"])
    gb300 = next(r for r in comparison.results if r.option.prfaas == "gb300")
    assert not gb300.feasible and gb300.failure == "no price" and comparison.results[0].option.prfaas == "h200"


def test_settle_keeps_the_splits_of_a_day_without_conversion(tmp_path):
    """With conversion_s 0 a switch costs nothing, yet the printed day switches no instance when
    none needs to (two-edges-day: every split the same all day)."""
    doc = yaml.safe_load((REPO / "prfaas_plan" / "scenarios" / "two-edges-day.yaml").read_text())
    doc["day"]["conversion_s"] = 0.0
    result, _ = api.sites(_write(tmp_path, doc))
    assert result.usd_per_hour == pytest.approx(147.92, abs=0.005)
    for site in ("us-east", "europe"):
        assert len({next(s.n_p for s in w.pd if s.name == site) for w in result.windows}) == 1


def test_a_min_cost_day_needs_no_steady_target(run_cli, tmp_path):
    """min_cost with a day: the windows' rates are the targets; plan, which plans one steady rate,
    asks for target_rate_rps."""
    doc = yaml.safe_load((REPO / "prfaas_plan" / "scenarios" / "day-rebalance.yaml").read_text())
    doc["objective"] = {"type": "min_cost"}
    doc["prfaas"]["instances"] = {"min": 0, "max": 6}
    doc["pd"]["instances"] = {"min": 2, "max": 10}
    path = _write(tmp_path, doc)
    day, windows = api.schedule(path)
    assert day.scale >= 1.0 - 1e-9
    res = run_cli("plan", path)
    assert res.code == 2 and "objective.target_rate_rps" in res.err, res.err


@pytest.mark.parametrize(
    "change, field",
    [
        (lambda d: d["day"]["windows"][0].update(rates={"pd": 3.0}), "day.windows[0].rates"),
        (lambda d: d.update(robust={"cases": [{"name": "a", "rates": {"pd": 1.0}}, {"name": "b"}]}), "robust.cases[0].rates"),
    ],
)
def test_a_one_site_file_names_the_field_of_the_other_form(run_cli, tmp_path, change, field):
    doc = yaml.safe_load(DAY.read_text())
    change(doc)
    res = run_cli("validate", _write(tmp_path, doc))
    assert res.code == 2 and field in res.err and len(res.err.strip().splitlines()) == 1, res.err


def test_robust_results_carry_no_weight_where_the_cases_give_none(run_cli):
    """The library says what the reports say: a worst-case plan over cases without weights gives
    each case's weight as None (not 0.0) and no weighted figure; cases with weights keep them."""
    sites, _ = api.robust_sites(str(REPO / "prfaas_plan" / "scenarios" / "two-edges-robust.yaml"))
    assert [c.weight for c in sites.cases] == [None] * len(sites.cases) and sites.weighted_scale is None
    doc = json.loads(run_cli("robust", "two-edges-robust", "-f", "json").out)
    assert [c["weight"] for c in doc["cases"]] == [None] * len(sites.cases)
    one_site = api.robust("robust-three-mixes")
    assert [c.weight for c in one_site.cases] == [0.4, 0.3, 0.3]
    assert one_site.weighted_lambda_rps == pytest.approx(sum(c.weight * c.lambda_max_rps for c in one_site.cases), rel=1e-12)
