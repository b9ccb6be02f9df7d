"""Questions that combine two features, planned by the one programme (``planner.formulation``)
and checked against brute force on small cases: a day schedule beside a decode-only pool, and a
robust plan over several sites."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
import yaml

from prfaas_plan import api
from prfaas_plan.planner.optimizer import usd_per_hour
from prfaas_plan.planner.schedule import day_plan
from prfaas_plan.planner.throughput import bounds
from prfaas_plan.profiles.scenario import load_scenario
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


def day_scale(windows, n_f: int, n_p: int, n_d: int) -> float:
    """min over windows of (the best of every threshold's Lambda_max) / the window's rate."""
    return min(
        float(bounds(w.table, np.arange(len(w.table)), n_f, n_p, n_d, w.inputs).lambda_max.max()) / w.rate_rps for w in windows
    )


def brute_force_day(windows, limits) -> tuple[float, tuple[int, int, int]]:
    """The largest day scale over every (N_prfaas, N_p, N_d) in the ranges, and its counts."""
    best = None
    for n_f, n_p, n_d in itertools.product(
        range(limits.prfaas_min, limits.prfaas_max + 1),
        range(limits.pd_min, limits.pd_max + 1),
        range(limits.decode_min, limits.decode_max + 1),
    ):
        scale = day_scale(windows, n_f, n_p, n_d)
        if best is None or scale > best[0] * (1 + 1e-9):
            best = (scale, (n_f, n_p, n_d))
    return best


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


def test_the_programme_and_enumeration_agree_on_a_decode_only_day(tmp_path):
    """The same day planned by the one programme (``method: milp``) and by enumeration: the counts
    the programme buys reach the brute-force day scale (the second window binds)."""
    _, windows = _day(tmp_path, decode_pool_day_doc())
    inputs = windows[0].inputs
    by_programme = day_plan(inputs, windows, 300.0, None, method="milp")
    by_enumeration = day_plan(inputs, windows, 300.0, None, method="enumerate")
    scale, _ = brute_force_day(windows, inputs.limits)
    assert by_enumeration.scale == pytest.approx(scale, rel=1e-9)
    assert by_programme.scale == pytest.approx(scale, rel=1e-3)


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
