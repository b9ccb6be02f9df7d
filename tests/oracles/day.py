"""Day schedules by brute force, and the one programme on the same windows."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np

from prfaas_plan.choices import ObjectiveKind
from prfaas_plan.planner.formulation import Cell, Goal, solve
from prfaas_plan.planner.optimizer import one_site_study
from prfaas_plan.planner.throughput import bounds
from prfaas_plan.study.model import Window

from .robust import counts, fits


def day_grid(window, n_f: int, n_pd: int) -> np.ndarray:
    """Lambda_max (req/s, the best threshold) with a PD-P and b PD-D instances, a + b <= N_pd (0 beyond)."""
    idx = np.arange(len(window.table))
    grid = np.zeros((n_pd + 1, n_pd + 1))
    for a in range(n_pd + 1):
        for b in range(n_pd + 1 - a):
            grid[a, b] = float(np.max(bounds(window.table, idx, n_f, a, b, window.inputs).lambda_max))
    return grid


def best_schedule(windows, grids, n: int, conversion_s: float, limit: int | None) -> float:
    """The best day scale over every cyclic sequence of splits of n PD instances with at most ``limit``
    switches between consecutive windows (the last precedes the first): a switched window's capacity
    is (1 - f) Lambda(split) + f Lambda(min of both splits), f = min(1, conversion_s / window)."""
    best = 0.0
    for seq in itertools.product(range(n + 1), repeat=len(windows)):
        if limit is not None and any(abs(seq[k] - seq[k - 1]) > limit for k in range(len(seq))):
            continue
        score = np.inf
        for k, w in enumerate(windows):
            cur, prev = seq[k], seq[k - 1]
            full = grids[k][cur, n - cur]
            if cur != prev:
                f = min(1.0, conversion_s / (w.hours * 3600))
                full = (1 - f) * full + f * grids[k][min(cur, prev), min(n - cur, n - prev)]
            score = min(score, full / w.rate_rps)
        best = max(best, score)
    return best


def day_scale(windows, n_f: int, n_p: int, n_d: int) -> float:
    """Counts held all day (beside a decode-only pool): min over windows of (the best threshold's
    Lambda_max) / the window's rate."""
    return min(
        float(bounds(w.table, np.arange(len(w.table)), n_f, n_p, n_d, w.inputs).lambda_max.max()) / w.rate_rps for w in windows
    )


def brute_force_day(windows, limits) -> tuple[float, tuple[int, int, int]]:
    """The largest day scale over every (N_prfaas, N_p, N_d) beside a decode-only pool in the ranges
    and budgets, and its counts."""
    best = None
    inputs = windows[0].inputs
    for n_f, n_p, n_d in counts(limits):
        if not fits(inputs, limits, n_f, n_p, n_d):
            continue
        scale = day_scale(windows, n_f, n_p, n_d)
        if best is None or scale > best[0] * (1 + 1e-9):
            best = (scale, (n_f, n_p, n_d))
    assert best is not None
    return best


def formulation_day(inputs, windows, conversion_s: float, max_switches: int | None):
    """The one programme (``planner.formulation.solve``) over the windows of a one-site day, a cell per
    window with every threshold of its table a candidate (exact on a small table); its role switches
    idle an instance for f of the window on the switched resource (PD-P N_p - f into_p, decode
    r_d (N_d - f into_d)). Returns ``formulation.Solved``."""
    study = one_site_study(inputs, inputs.limits, ObjectiveKind.max_throughput, 1.0)
    day = tuple(Window(w.name, w.hours, {"pd": w.rate_rps}) for w in windows)
    study = replace(study, windows=day, conversion_s=conversion_s, max_switches=max_switches)
    cells = []
    for k, w in enumerate(windows):
        decode = {"pd": w.inputs.decode_rps_per_instance}
        cells.append(Cell(0, k, w.hours, {"pd": w.rate_rps}, {("pd", "prfaas"): w.table}, study.links, decode))
    cands = {(0, k, "pd"): list(range(len(w.table))) for k, w in enumerate(windows)}
    return solve(study, cells, cands, Goal(ObjectiveKind.max_throughput))
