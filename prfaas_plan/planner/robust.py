"""Robust plans: one set of instance counts for several cases (workload mixes, rates or link
bandwidths, ``robust:`` in a scenario), each case with its own threshold and PD split.

The counts bought are shared: N_prfaas and the PD pool's N_pd = N_p + N_d (with a
decode-only pool, N_p and N_d themselves). For given counts each case is evaluated exactly:
every N_p / N_d split of N_pd and every threshold (vectorised), its Lambda_max_c the best.
Objectives over the cases:

- ``worst_case``: maximise min_c Lambda_max_c;
- ``weighted``: maximise sum_c w_c Lambda_max_c (the weights sum to 1);
  with a target rate for every case both count Lambda_max_c / target_c instead (the demand each
  case can grow to), and ties go to the better weighted result, then to fewer instances;
- ``min_cost``: minimise the provisioned $/hour with Lambda_max_c >= target_c for every case.

Every count combination within the scenario's ranges and budgets is enumerated (at most
``MAX_SHARED_COMBINATIONS``); ties go to fewer instances (for ``min_cost``: to the larger
worst case). Each case is also planned alone with the same ranges and budgets (its own
optimum: its max-throughput plan, or for ``min_cost`` its cheapest plan meeting its target), and
the report gives each case's loss against it (throughput lost, or the extra cost share).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..choices import ObjectiveKind, RobustObjective
from ..errors import PlanInputError
from ..ranges import MIN_CAPACITY_RPS
from ..study.model import Limits, PlanInputs
from .optimizer import beats, best_threshold, combination_count, feasible_cost, optimise
from .throughput import ThresholdTable, bounds, threshold_table

MAX_SHARED_COMBINATIONS = 20_000


@dataclass(frozen=True)
class RobustCase:
    """One case's inputs and what it weighs."""

    name: str
    weight: float
    inputs: PlanInputs
    target_rate_rps: float | None = None


@dataclass(frozen=True)
class CaseResult:
    name: str
    weight: float | None  # None: the cases carry no weights (worst case)
    target_rate_rps: float | None
    threshold_tokens: float
    p: float
    n_p: int
    n_d: int
    lambda_max_rps: float  # with the shared counts
    own_lambda_rps: float  # the case planned alone (max throughput within the same ranges and budgets)
    own_counts: tuple[int, int, int]  # its N_prfaas, N_p, N_d
    own_usd_per_hour: float | None = None  # min_cost: the case's own cheapest plan meeting its target
    shared_usd_per_hour: float | None = None  # of the shared counts
    link_gbps: float | None = None  # the case's link, raw decimal Gbps (its own link_gbps, else the scenario's)

    @property
    def loss(self) -> float:
        """Throughput objectives: 1 - Lambda_max with the shared counts / the case's own optimum.
        min_cost: the extra cost of the shared counts over the case's own cheapest plan, a share of it."""
        if self.own_usd_per_hour is not None and self.shared_usd_per_hour is not None:
            return self.shared_usd_per_hour / self.own_usd_per_hour - 1.0 if self.own_usd_per_hour > 0 else 0.0
        return 1.0 - self.lambda_max_rps / self.own_lambda_rps if self.own_lambda_rps > 0 else 0.0


@dataclass(frozen=True)
class RobustPlan:
    objective: RobustObjective
    n_prfaas: int
    n_pd: int  # N_p + N_d (shared pool), or N_p (decode-only pool beside it)
    n_decode: int | None  # N_d of a decode-only pool
    usd_per_hour: float | None  # provisioned
    cases: tuple[CaseResult, ...]
    notes: tuple[str, ...] = ()  # what resolving the scenario and its cases said (measurements dropped, ...)

    @property
    def worst_lambda_rps(self) -> float:
        return min(c.lambda_max_rps for c in self.cases)

    @property
    def weighted_lambda_rps(self) -> float | None:
        """sum_c w_c Lambda_max_c; None when the cases carry no weights."""
        weights = [c.weight for c in self.cases]
        return None if None in weights else sum(w * c.lambda_max_rps for w, c in zip(weights, self.cases) if w is not None)


def case_best(
    inputs: PlanInputs, table: ThresholdTable, n_f: int, n_p: int, n_d: int, shared: bool
) -> tuple[float, int, int, int]:
    """(Lambda_max, threshold index, N_p, N_d) of one case with counts (N_p + N_d split freely when
    ``shared``), over every threshold and split."""
    if not shared:
        return (*best_threshold(table, inputs, n_f, n_p, n_d), n_p, n_d)
    total = n_p + n_d
    splits = np.arange(total + 1)
    lam = bounds(table, np.arange(len(table))[None, :], n_f, splits[:, None], (total - splits)[:, None], inputs).lambda_max
    lam = np.broadcast_to(lam, (len(splits), len(table)))
    i, j = np.unravel_index(int(np.argmax(lam)), lam.shape)
    return float(lam[i, j]), int(j), int(splits[i]), int(total - splits[i])


MAX_WORK = 1.5e9  # (split, threshold) evaluations over every count and case: about 30 s on one core


def _check_work(limits: Limits, table_sizes: list[int]) -> None:
    """Refuse a search that would run for minutes (a one-line error, not a hang): every
    (N_prfaas, N_p, N_d) of the counts and splits (``optimizer.combination_count``) at every threshold."""
    work = combination_count(limits) * sum(table_sizes)
    if work > MAX_WORK:
        raise PlanInputError(
            f"about {work:.2g} evaluations (at most {MAX_WORK:.2g}, about 30 s): narrow the instance ranges or use fewer cases",
            field="robust",
        )


def shared_count(limits: Limits) -> int:
    """How many (N_prfaas, N_pd) combinations (beside a decode-only pool: (N_prfaas, N_p, N_d)) the ranges hold."""
    d_lo, d_hi = limits.decode_min or 0, limits.decode_max or 0  # both set beside a decode-only pool
    decode = (d_hi - d_lo + 1) if limits.separate_decode else 1
    return (limits.prfaas_max - limits.prfaas_min + 1) * (limits.pd_max - limits.pd_min + 1) * decode


def shared_counts(inputs: PlanInputs, limits: Limits):
    """Every (N_prfaas, N_p, N_d, $/hour) to share, within the ranges and budgets; for a shared PD
    pool N_p carries the whole count (N_d = 0) and each case (or window) splits it."""
    d_lo, d_hi = limits.decode_min or 0, limits.decode_max or 0  # both set beside a decode-only pool
    for n_f in range(limits.prfaas_min, limits.prfaas_max + 1):
        for n_p in range(limits.pd_min, limits.pd_max + 1):
            for n_d in range(d_lo, d_hi + 1) if limits.separate_decode else (0,):
                cost = feasible_cost(inputs, limits, n_f, n_p, n_d)
                if cost is not False:
                    yield n_f, n_p, n_d, cost


def robust_inputs(scenario, source: str | None = None) -> tuple[RobustObjective, list[RobustCase]]:
    """The resolved inputs of each case of a scenario's ``robust:`` section (``study.resolve.
    one_site_cases``): what-ifs of the scenario's own resolved inputs, with the chips per instance
    its plan chooses (counts are shared, so instances must be alike)."""
    from ..study.resolve import one_site_cases
    from .chips import choose

    chosen = choose(scenario, source)
    cases = [RobustCase(*case) for case in one_site_cases(scenario, chosen, source)]
    return RobustObjective(scenario.robust.objective), cases


def robust_plan(cases: list[RobustCase], objective: RobustObjective) -> RobustPlan:
    """The shared counts that serve the cases best (see the module docstring)."""
    objective = RobustObjective(objective)
    base = cases[0].inputs
    limits = base.limits
    shared = not limits.separate_decode
    if objective == RobustObjective.min_cost:
        missing = [c.name for c in cases if c.target_rate_rps is None]
        if missing:
            raise PlanInputError(
                f"min_cost needs a target rate for every case ({', '.join(missing)} has none): give "
                "target_rate_rps per case or in the objective",
                field="robust.cases",
            )
    tables = [threshold_table(c.inputs) for c in cases]
    _check_work(limits, [len(t) for t in tables])
    # with a target rate for every case, cases count relative to their demand (Lambda_c / target_c)
    targets = [c.target_rate_rps for c in cases if c.target_rate_rps is not None]
    normalised = len(targets) == len(cases)  # min_cost: always (checked above)
    count = shared_count(limits)
    if count > MAX_SHARED_COMBINATIONS:
        raise PlanInputError(
            f"{count} shared count combinations (at most {MAX_SHARED_COMBINATIONS}); narrow the instance ranges", field="robust"
        )
    # a score beats another (``optimizer.beats``) by (cost, worst case, instances) for min_cost, else by
    # (value, weighted value, instances)
    order = "$+-" if objective == RobustObjective.min_cost else "++-"
    best, best_score = None, None
    for n_f, n_p, n_d, cost in shared_counts(base, limits):
        per_case = [case_best(c.inputs, t, n_f, n_p, n_d, shared) for c, t in zip(cases, tables)]
        lams = [r[0] for r in per_case]
        scaled = [lam / target for lam, target in zip(lams, targets)] if normalised else lams
        weighted = sum(c.weight * x for c, x in zip(cases, scaled))
        if objective == RobustObjective.min_cost:
            if any(lam < target * (1 - 1e-12) for lam, target in zip(lams, targets)):
                continue
            score = (math.inf if cost is None else cost, min(scaled), n_f + n_p + n_d)
        else:
            value = min(scaled) if objective == RobustObjective.worst_case else weighted
            score = (value, weighted, n_f + n_p + n_d)
        if best_score is None or beats(score, best_score, order):
            best, best_score = (n_f, n_p, n_d, cost, per_case), score
    if best is None:
        what = "reaches every case's target rate" if objective == RobustObjective.min_cost else "fits"
        raise PlanInputError(f"no set of instance counts within the ranges and budgets {what}", field="robust")
    n_f, n_p, n_d, cost, per_case = best
    if objective != RobustObjective.min_cost and max(r[0] for r in per_case) < MIN_CAPACITY_RPS:
        raise PlanInputError("no shared counts serve any case: every case has effectively no capacity", field="robust")
    results = []
    alone = ObjectiveKind.min_cost if objective == RobustObjective.min_cost else ObjectiveKind.max_throughput
    for case, table, (lam, k, case_np, case_nd) in zip(cases, tables, per_case):
        own = optimise(case.inputs, table, objective=alone, target_rps=case.target_rate_rps)
        own_usd = own.usd_per_hour if alone == ObjectiveKind.min_cost else None
        results.append(
            CaseResult(
                case.name,
                case.weight if any(c.weight for c in cases) else None,
                case.target_rate_rps,
                float(table.thresholds_tokens[k]),
                float(table.p[k]),
                case_np,
                case_nd,
                lam,
                own.lambda_max,
                (own.n_prfaas, own.n_p, own.n_d),
                own_usd,
                cost,
                case.inputs.link.bandwidth_gbps,
            )
        )
    notes = tuple(dict.fromkeys(n for case in cases for n in case.inputs.notes))
    return RobustPlan(objective, n_f, n_p + (n_d if shared else 0), None if shared else n_d, cost, tuple(results), notes)
