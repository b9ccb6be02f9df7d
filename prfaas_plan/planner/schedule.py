"""Traffic over a day and role rebalancing (the paper's long-term scheduling).

A day is a sequence of windows, each with an arrival rate and a shift of the input lengths
(``day:`` in a scenario). The counts are bought once for the day (N_prfaas and the PD pool's
N_pd); per window the planner chooses the PD-P / PD-D split and the threshold. Switching k
instances between roles at a window's start leaves them idle for ``conversion_s``: with
f = min(1, conversion_s / window length), the window's capacity is
(1 - f) Lambda(N_p, N_d) + f Lambda(min(N_p, N_p'), min(N_d, N_d')), N_p' the previous split;
at most ``max_switches_per_window`` instances switch between consecutive windows, and the
day repeats (the last window precedes the first).

The measure is the **day scale** s = min over windows of capacity / rate: the largest factor
by which the whole day's traffic can grow and still be served (s >= 1: every window is served).
For given counts the best schedule is a max-min dynamic programme over the splits (each
starting split tried, the cycle closed); the best **static** plan keeps one split all day (the
threshold still follows each window). ``max_throughput`` maximises s within the ranges and
budgets; ``min_cost`` finds the cheapest counts with s >= 1. A schedule that does not beat the
static plan (e.g. when conversion takes longer than a window) falls back to it.

Beside a decode-only pool (``pd_decode``) no instance switches role: N_prfaas, N_p and N_d are
bought once and only the threshold follows each window, so the schedule is its own static
plan. Its day scale is min over windows of max_t Lambda(t) / rate: exact by enumeration over
the counts when there are at most ``MAX_DAY_COMBINATIONS``, else the one programme
(``planner.formulation``: a cell per window) chooses the counts, and every window's best
threshold for them is then found exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from ..choices import ObjectiveKind, OptimiserMethod
from ..errors import PlanInputError
from ..ranges import MIN_CAPACITY_RPS
from ..study.model import PlanInputs
from .optimizer import TIE_REL, beats, best_threshold, feasible_cost
from .robust import shared_count, shared_counts
from .throughput import ThresholdTable, bounds, threshold_table

MAX_DAY_COMBINATIONS = 5_000
MAX_DAY_WORK = 3.5e9  # (N_p, N_d, threshold) cells over every count and window: about 30 s on one core


@dataclass(frozen=True)
class Window:
    name: str
    hours: float
    rate_rps: float
    input_scale: float
    inputs: PlanInputs
    table: ThresholdTable


@dataclass(frozen=True)
class WindowPlan:
    name: str
    hours: float
    rate_rps: float
    n_p: int
    n_d: int
    threshold_tokens: float
    capacity_rps: float  # with the conversion of switched instances
    switched: int  # instances that changed role at the window's start

    @property
    def utilisation(self) -> float:
        return self.rate_rps / self.capacity_rps if self.capacity_rps > 0 else float("inf")


@dataclass(frozen=True)
class DayPlan:
    n_prfaas: int
    n_pd: int
    usd_per_hour: float | None
    scale: float  # day scale of the schedule
    static_scale: float  # of the best static split with the same counts
    windows: tuple[WindowPlan, ...]
    static_windows: tuple[WindowPlan, ...]
    static_counts: tuple[int, int, float | None]  # N_prfaas, N_pd and $/hour of the best static plan
    fell_back: bool  # the schedule is the static plan (switching does not pay)
    n_decode: int | None = None  # N_d of a decode-only pool (then n_pd is N_p, and no role switches)
    notes: tuple[str, ...] = ()  # e.g. the chips per instance the day chose


def windows_of(inputs: PlanInputs, specs: list[tuple[str, float, float, float]]) -> list[Window]:
    out = []
    for name, hours, rate, scale in specs:
        w_inputs = inputs.with_input_scale(scale, field="day.windows")
        out.append(Window(name, hours, rate, scale, w_inputs, threshold_table(w_inputs)))
    return out


def _grid(window: Window, n_f: int, n_pd: int) -> tuple[np.ndarray, np.ndarray]:
    """Lambda_max (best threshold) and that threshold's index for a PD-P and b PD-D instances, a + b <= N_pd."""
    a = np.arange(n_pd + 1)
    idx = np.arange(len(window.table))
    lam = bounds(window.table, idx[None, None, :], n_f, a[:, None, None], a[None, :, None], window.inputs).lambda_max
    lam = np.broadcast_to(lam, (n_pd + 1, n_pd + 1, len(idx)))
    best = lam.argmax(axis=2)
    values = np.take_along_axis(lam, best[..., None], axis=2)[..., 0]
    over = a[:, None] + a[None, :] > n_pd
    return np.where(over, 0.0, values), best


def _scores(window: Window, grid: np.ndarray, n_pd: int, conversion_s: float) -> np.ndarray:
    """capacity / rate for each (previous split, split) of N_pd, with the switch's idle time."""
    splits = np.arange(n_pd + 1)
    full = grid[splits, n_pd - splits]  # by split
    low = grid[np.minimum.outer(splits, splits), np.minimum.outer(n_pd - splits, n_pd - splits)]
    f = min(1.0, conversion_s / (window.hours * 3600.0))
    switched = splits[:, None] != splits[None, :]
    capacity = np.where(switched, (1 - f) * full[None, :] + f * low, full[None, :])
    return capacity / window.rate_rps


def _best_schedule(scores: list[np.ndarray], max_switches: int | None) -> tuple[float, list[int]]:
    """Max over cyclic split sequences of min over windows of scores[w][prev, cur]."""
    n = scores[0].shape[0]
    splits = np.arange(n)
    allowed = np.ones((n, n), bool) if max_switches is None else np.abs(splits[:, None] - splits[None, :]) <= max_switches
    best_value, best_path = -np.inf, []
    for start in range(n):
        value = np.full(n, -np.inf)
        value[start] = np.inf
        back = []
        for s in scores:
            cand = np.where(allowed, np.minimum(value[:, None], s), -np.inf)
            prev = cand.argmax(axis=0)
            back.append(prev)
            value = cand[prev, splits]
        if value[start] > best_value * (1 + TIE_REL):
            path, cur = [start], start
            for prev in reversed(back[1:]):
                cur = int(prev[cur])
                path.append(cur)
            best_value, best_path = float(value[start]), list(reversed(path))
    return best_value, best_path


def _plans(windows: list[Window], grids, splits: list[int], n_pd: int, conversion_s: float) -> tuple[WindowPlan, ...]:
    out = []
    for k, (w, (grid, best)) in enumerate(zip(windows, grids)):
        cur, prev = splits[k], splits[k - 1]
        score = _scores(w, grid, n_pd, conversion_s)[prev, cur]
        out.append(
            WindowPlan(
                w.name,
                w.hours,
                w.rate_rps,
                cur,
                n_pd - cur,
                float(w.table.thresholds_tokens[best[cur, n_pd - cur]]),
                score * w.rate_rps,
                abs(cur - prev),
            )
        )
    return tuple(out)


def _evaluate(windows, n_f, n_pd, conversion_s, max_switches):
    grids = [_grid(w, n_f, n_pd) for w in windows]
    scores = [_scores(w, g, n_pd, conversion_s) for w, (g, _) in zip(windows, grids)]
    static_by_split = np.min([np.diagonal(s) for s in scores], axis=0)
    static_split = int(np.argmax(static_by_split))
    static = float(static_by_split[static_split])
    value, path = _best_schedule(scores, max_switches)
    return grids, value, path, static, static_split


def day_plan(
    inputs: PlanInputs, windows: list[Window], conversion_s: float, max_switches: int | None, method: str | None = None
) -> DayPlan:
    """The counts to buy and the per-window schedule (see the module docstring). ``method``
    (``OptimiserMethod``, default the scenario's) chooses enumeration or the programme beside a
    decode-only pool."""
    limits = inputs.limits
    if limits.separate_decode:
        return _fixed_roles_day(inputs, windows, OptimiserMethod(method or inputs.optimiser.method))
    count = shared_count(limits)
    if count > MAX_DAY_COMBINATIONS:
        raise PlanInputError(
            f"{count} count combinations (at most {MAX_DAY_COMBINATIONS}); narrow the instance ranges", field="day"
        )
    work = (
        (limits.prfaas_max - limits.prfaas_min + 1)
        * sum((n + 1) ** 2 for n in range(limits.pd_min, limits.pd_max + 1))
        * sum(len(w.table) for w in windows)
    )
    if work > MAX_DAY_WORK:
        raise PlanInputError(
            f"about {work:.2g} evaluations (at most {MAX_DAY_WORK:.2g}, about 30 s): narrow the "
            "instance ranges or use fewer windows",
            field="day",
        )
    min_cost = inputs.objective.kind == ObjectiveKind.min_cost
    best = best_static = None
    for n_f, n_pd, _, cost in shared_counts(inputs, limits):
        if n_pd == 0:
            continue
        grids, value, path, static, static_split = _evaluate(windows, n_f, n_pd, conversion_s, max_switches)
        statics = [static_split] * len(windows)
        best = _pick(best, (value, cost, n_f + n_pd, n_f, n_pd, grids, path, static, statics), min_cost)
        best_static = _pick(best_static, (static, cost, n_f + n_pd, n_f, n_pd, grids, statics), min_cost)
    if best is None or (min_cost and best[0] < 1.0):
        what = "serves every window" if min_cost else "fits"
        raise PlanInputError(f"no count within the ranges and budgets {what}", field="day")
    if best[0] * min(w.rate_rps for w in windows) < MIN_CAPACITY_RPS:
        raise PlanInputError(
            f"no count within the ranges and budgets serves {MIN_CAPACITY_RPS:g} requests/s in "
            "every window: it needs prefill and decode capacity",
            field="day",
        )
    assert best_static is not None  # picked beside best from the same first candidate (_pick keeps a first one)
    value, cost, _, n_f, n_pd, grids, path, static, statics = best
    s_value, s_cost, _, s_f, s_pd, s_grids, s_path = best_static
    fell_back = value <= static * (1 + TIE_REL)
    if fell_back:  # switching does not pay: the static split of these counts
        path, value = statics, static
    return DayPlan(
        n_f,
        n_pd,
        cost,
        value,
        s_value,
        _plans(windows, grids, path, n_pd, conversion_s),
        _plans(windows, s_grids, s_path, s_pd, conversion_s),
        (s_f, s_pd, s_cost),
        fell_back,
    )


def _pick(best, cand, min_cost: bool):
    """The better of two (scale, cost, size, ...) candidates: max scale (ties: cheaper, smaller), or for
    min_cost the cheapest with scale >= 1 (ties: larger scale)."""
    if best is None:
        return cand
    value, cost, size = cand[:3]
    b_value, b_cost, b_size = best[:3]
    cost, b_cost = (np.inf if cost is None else cost), (np.inf if b_cost is None else b_cost)
    if min_cost:
        if value < 1.0:
            return best
        return cand if b_value < 1.0 or beats((cost, value), (b_cost, b_value), "$+") else best
    return cand if beats((value, cost, size), (b_value, b_cost, b_size), "+--") else best


def _window_scales(windows: list[Window], n_f: int, n_p: int, n_d: int) -> tuple[float, list[tuple]]:
    """min over windows of max_t Lambda(t) / rate, and each window's (Lambda_max, threshold index)
    at its best threshold (``optimizer.best_threshold``: the counts fixed, no split)."""
    best = [best_threshold(w.table, w.inputs, n_f, n_p, n_d) for w in windows]
    return min(lam / w.rate_rps for (lam, _), w in zip(best, windows)), best


def _fixed_roles_day(inputs: PlanInputs, windows: list[Window], method: OptimiserMethod) -> DayPlan:
    """A day beside a decode-only pool (see the module docstring)."""
    limits = inputs.limits
    min_cost = inputs.objective.kind == ObjectiveKind.min_cost
    if method == OptimiserMethod.enumerate or (method != OptimiserMethod.milp and shared_count(limits) <= MAX_DAY_COMBINATIONS):
        best = None
        for n_f, n_p, n_d, cost in shared_counts(inputs, limits):
            value, _ = _window_scales(windows, n_f, n_p, n_d)
            best = _pick(best, (value, cost, n_f + n_p + n_d, (n_f, n_p, n_d)), min_cost)
        counts = None if best is None else best[3]
    else:
        counts = _programme_counts(inputs, windows, min_cost)
    served = "serves every window" if min_cost else f"serves {MIN_CAPACITY_RPS:g} requests/s in every window"
    if counts is None:
        raise PlanInputError(f"no count within the ranges and budgets {served}", field="day")
    n_f, n_p, n_d = counts
    scale, best = _window_scales(windows, n_f, n_p, n_d)
    if (min_cost and scale < 1.0 - 1e-9) or scale * min(w.rate_rps for w in windows) < MIN_CAPACITY_RPS:
        raise PlanInputError(f"no count within the ranges and budgets {served}", field="day")
    plans = tuple(
        WindowPlan(w.name, w.hours, w.rate_rps, n_p, n_d, float(w.table.thresholds_tokens[k]), lam, 0)
        for w, (lam, k) in zip(windows, best)
    )
    cost = feasible_cost(inputs, limits, n_f, n_p, n_d)
    return DayPlan(n_f, n_p, cost, scale, scale, plans, plans, (n_f, n_p, cost), False, n_d)


def _programme_counts(inputs: PlanInputs, windows: list[Window], min_cost: bool) -> tuple[int, int, int] | None:
    """The counts of the one programme with a cell per window (coarse thresholds per window)."""
    from ..study.model import Window as StudyWindow
    from .formulation import Cell, Goal, NoPlanInTime, solve
    from .optimizer import coarse_indices, one_site_study

    objective = ObjectiveKind.min_cost if min_cost else ObjectiveKind.max_throughput
    study = one_site_study(inputs, inputs.limits, objective, 1.0)
    if study is None:
        return None
    cells = [
        Cell(
            0, k, w.hours, {"pd": w.rate_rps}, {("pd", "prfaas"): w.table}, study.links, {"pd": w.inputs.decode_rps_per_instance}
        )
        for k, w in enumerate(windows)
    ]
    cands = {
        (0, k, "pd"): [int(i) for i in coarse_indices(w.table, inputs.optimiser.coarse_thresholds)] for k, w in enumerate(windows)
    }
    day = tuple(StudyWindow(w.name, w.hours, {"pd": w.rate_rps}) for w in windows)
    try:
        sol = solve(replace(study, windows=day, day=True), cells, cands, Goal(objective))
    except NoPlanInTime:  # as for no answer: the caller's enumeration decides
        return None
    if sol is None:
        return None
    return sol.n_prfaas["prfaas"], sol.n_pd["pd"], sol.n_decode["pd"]


def choose_day(
    variants: list[PlanInputs], specs: list[tuple[str, float, float, float]], conversion_s: float, max_switches: int | None
) -> tuple[DayPlan, list[Window]]:
    """The day plan of the best combination of chips per instance (``study.resolve.build_variants``),
    chosen by the day's own objective: the largest day scale (ties: the lower $/hour, then fewer
    chips), or for ``min_cost`` the lowest $/hour serving every window (ties: the larger scale).
    Combinations with no day plan are left out; if none has one, the first one's error is raised."""
    best, first_error = None, None
    for inputs in variants:
        try:
            windows = windows_of(inputs, specs)
            day = day_plan(inputs, windows, conversion_s, max_switches)
        except PlanInputError as exc:
            first_error = first_error or exc
            continue
        cost = math.inf if day.usd_per_hour is None else day.usd_per_hour
        chips = sum(pool.gpus_per_instance for pool in inputs.pools)
        key = (cost, -day.scale, chips) if inputs.objective.kind == ObjectiveKind.min_cost else (-day.scale, cost, chips)
        if best is None or key < best[0]:
            best = (key, day, windows, inputs)
    if best is None:
        assert first_error is not None  # variants is never empty (study.resolve.build_variants raises instead)
        raise first_error
    _, day, windows, inputs = best
    day = replace(day, notes=inputs.notes + day.notes)  # what resolving the scenario said (measurements dropped, ...)
    if len(variants) > 1:
        chosen = "; ".join(f"{p.role} {p.gpus_per_instance} of {list(p.chip_options)}" for p in inputs.pools if p.chip_options)
        day = replace(
            day, notes=day.notes + (f"chips per instance chosen by the day plan ({len(variants)} combinations): {chosen}",)
        )
    return day, windows
