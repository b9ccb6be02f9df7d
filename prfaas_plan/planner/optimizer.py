"""Choose the threshold t and the instance counts (N_prfaas, N_p, N_d).

A mixed-integer program (pulp, with its bundled CBC solver), in the per-request work
form of the throughput model: one binary z_k per candidate threshold k, a rate
lambda_k >= 0 that may be non-zero only for the chosen k, and integer instance counts:

    sum_k z_k = 1,        lambda_k <= U z_k
    sum_k lambda_k * p_k T_long_k      <= N_prfaas      (PrfaaS compute)
    sum_k lambda_k * p_k S_long_k      <= B_out         (link egress, bytes/s)
    sum_k lambda_k * (1-p_k) T_short_k <= N_p           (PD prefill)
    sum_k lambda_k                     <= r_d N_d       (PD decode)
    instance ranges, GPU budgets per hardware, $/hour budget (provisioned: each pool's
    instances at their price, plus the committed link times a binary u >= N_prfaas / max)

maximising sum_k lambda_k (= Lambda_max), or minimising $/hour subject to
sum_k lambda_k >= a target rate. It is solved over a coarse grid of thresholds (quantiles of
L): over it a heuristic (hypothesis found it $32/hour off a min_cost optimum), and over all
4,097 thresholds exact but 5-10 s at 24,000 combinations. So every answer is the exact optimum of every threshold at once
(``exact.best_over_thresholds``, milliseconds); the programme's answer stands only where that
does not beat it (among equal optima, the one the programme found). Finally, for the chosen
counts, t is moved along the fine grid to the balance point of eq. 7
(Theta_prfaas / p = Theta_pdp / (1 - p)) among thresholds with the same Lambda_max.

``enumerate_best`` visits every combination, each over every threshold (vectorised): the
reference, and the fastest for a small count space. ``method: auto`` (the default)
enumerates up to ENUMERATE_MAX_COMBINATIONS combinations and takes the per-threshold optimum
above that; ``milp`` solves the programme above (the 1x1 study of ``planner.formulation``),
``per_threshold`` and ``enumerate`` force theirs. The multi-site programme (``sites.py``),
whose sites share links and PrfaaS instances, is where the MILP pays.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..choices import ObjectiveKind, OptimiserMethod
from ..errors import PlanInputError
from ..ranges import MIN_CAPACITY_RPS
from ..study.model import Limits, PlanInputs
from .cost import chips_of, require_prices, usd_per_hour
from .exact import best_over_thresholds, within_maxima
from .throughput import TIE_REL, ThresholdTable, best_thresholds, bounds, threshold_table


@dataclass(frozen=True)
class Solution:
    threshold_index: int
    threshold_tokens: float
    n_prfaas: int
    n_p: int
    n_d: int
    lambda_max: float
    usd_per_hour: float | None


def at_best_threshold(table: ThresholdTable, inputs: PlanInputs, n_f: int, n_p: int, n_d: int, cost: float | None) -> Solution:
    """The counts (N_prfaas, N_p, N_d) at the first threshold where they serve the most; ``cost``
    their provisioned $/hour."""
    lam, k = best_threshold(table, inputs, n_f, n_p, n_d)
    return Solution(k, float(table.thresholds_tokens[k]), n_f, n_p, n_d, lam, cost)


def best_threshold(table: ThresholdTable, inputs: PlanInputs, n_f: int, n_p: int, n_d: int) -> tuple[float, int]:
    """(Lambda_max, threshold index) of the counts at the first threshold where they serve the most."""
    lam = np.broadcast_to(bounds(table, np.arange(len(table)), n_f, n_p, n_d, inputs).lambda_max, (len(table),))
    k = int(np.argmax(lam))
    return float(lam[k]), k


def check_limits(inputs: PlanInputs, limits: Limits, objective: ObjectiveKind, target_rps: float | None) -> None:
    """Errors no search can get round: min_cost without a target rate (it plans one steady rate; a
    min_cost day gives ``schedule`` its targets), no decode capacity, or no price on a pool that may
    be used while a cost objective or a $/hour budget needs one (``cost.require_prices``). Both
    optimisers call it before any search (``optimise`` and ``slo.slo_optimise``), with the objective
    and target they optimise."""
    if objective == ObjectiveKind.min_cost and target_rps is None:
        raise PlanInputError(
            "min_cost needs target_rate_rps to plan one steady rate (the day's windows are the schedule's targets)",
            field="objective.target_rate_rps",
        )
    decode_max = limits.pd_max if limits.decode_max is None else limits.decode_max  # separate_decode: decode_max set
    if decode_max == 0 or inputs.decode_rps_per_instance <= 0:
        raise PlanInputError(
            "zero decode capacity: the PD cluster has no instances to decode",
            field="pd_decode.instances" if limits.separate_decode else "pd.instances",
        )
    if objective == ObjectiveKind.min_cost or limits.usd_per_hour is not None:
        pools = ((inputs.prfaas, limits.prfaas_max), (inputs.pd, limits.pd_max), (inputs.decode_pool, decode_max))
        require_prices([(f"{pool.role}", pool, most) for pool, most in pools], "pool's")


def _solve_milp(
    table: ThresholdTable,
    cand: np.ndarray,
    inputs: PlanInputs,
    limits: Limits,
    objective: ObjectiveKind,
    target_rps: float | None,
) -> Solution | None:
    """The programme of ``planner.formulation`` on the 1x1 study of ``inputs`` (``one_site_study``)
    over the candidate thresholds ``cand``: its counts at their best threshold, checked exactly
    against the ranges and budgets (and, min_cost, the target rate); None when CBC gives no such
    answer, once without presolve and tightly either."""
    from .formulation import Cell, Goal, NoPlanInTime, solve

    study = one_site_study(inputs, limits, objective, target_rps)
    if study is None:
        return None
    hours, rates = study.windows[0].hours, study.windows[0].rates_rps
    cells = [Cell(0, 0, hours, rates, {("pd", "prfaas"): table}, study.links, {"pd": inputs.decode_rps_per_instance})]
    for tight in (False, True):  # an answer the exact check refuses: once more without presolve, tightly
        try:
            sol = solve(study, cells, {(0, 0, "pd"): [int(k) for k in cand]}, Goal(objective), tight=tight)
        except NoPlanInTime:  # the exact search the caller falls back on decides
            return None
        if sol is None:
            continue
        counts = (sol.n_prfaas["prfaas"], sol.cells[0].n_p["pd"], sol.cells[0].n_d["pd"])
        cost = feasible_cost(inputs, limits, *counts)
        if cost is False:
            continue
        exact = at_best_threshold(table, inputs, *counts, cost)
        if objective != ObjectiveKind.min_cost or exact.lambda_max >= min_cost_target(target_rps) * (1 - 1e-9):
            return exact
    return None


def one_site_study(inputs: PlanInputs, limits: Limits, objective: ObjectiveKind, target_rps: float | None):
    """The 1x1 ``Study`` of one-site inputs under ``limits``: one PD site "pd" of demand 1 req/s
    (so that its scale is Lambda_max; ``min_cost``: the target rate) and one PrfaaS site "prfaas".
    The one-site planner pays the committed link with any PrfaaS instance (``usd_per_hour``), the
    programme with traffic; they differ only where a PrfaaS minimum above 0 is bought without
    traffic, so there the link is a constant of the cost, taken off the $/hour budget (None when
    it alone breaks it)."""
    from ..study.model import PdSite, PrfaasSite, Study, Window

    link, budget = inputs.link, limits.usd_per_hour
    if limits.prfaas_min > 0 and link.fixed_usd_per_hour > 0:
        if budget is not None:
            budget -= link.fixed_usd_per_hour
            if budget < 0:
                return None
        link = replace(link, cost=replace(link.cost, usd_per_gbps_month=0.0))
    demand = min_cost_target(target_rps) if objective == ObjectiveKind.min_cost else 1.0
    site = PdSite(
        "pd",
        inputs.pd,
        inputs.pd_decode,
        inputs.workload,
        inputs.decode,
        (limits.pd_min, limits.pd_max),
        _decode_range(limits) if limits.separate_decode else None,
        demand,
    )
    return Study(
        inputs.name,
        inputs.source,
        inputs.model,
        (PrfaasSite("prfaas", inputs.prfaas, (limits.prfaas_min, limits.prfaas_max)),),
        (site,),
        {("prfaas", "pd"): link},
        (Window("steady", 24.0, {"pd": demand}),),
        dict(limits.gpu_budget),
        budget,
        objective,
    )


def coarse_indices(table: ThresholdTable, count: int) -> np.ndarray:
    """About ``count`` thresholds evenly spaced in p, always including 'all' and 'none' offloaded."""
    targets = np.linspace(0.0, 1.0, count)
    # p falls from 1 to 0 along the table; search on -p (ascending)
    idx = np.searchsorted(-table.p, -targets, side="left").clip(0, len(table) - 1)
    return np.unique(np.concatenate(([0, len(table) - 1], idx)))


def _balance(table: ThresholdTable, sol: Solution, inputs: PlanInputs) -> Solution:
    """For the chosen counts, the best threshold on the fine grid; among ties, the balance
    point of eq. 7 (``throughput.best_thresholds``)."""
    pick, lam = best_thresholds(table, inputs, sol.n_prfaas, sol.n_p, sol.n_d, np.array([inputs.link.usable_bytes_per_s]))
    k = int(pick[0])
    return replace(sol, threshold_index=k, threshold_tokens=float(table.thresholds_tokens[k]), lambda_max=float(lam[0]))


ENUMERATE_MAX_COMBINATIONS = 2000


def optimise(
    inputs: PlanInputs,
    table: ThresholdTable | None = None,
    *,
    objective: str | None = None,
    target_rps: float | None = None,
    limits: Limits | None = None,
    method: str | None = None,
) -> Solution:
    """The operating point (see ``_optimise``); unset arguments come from ``inputs`` (its objective,
    limits and optimiser settings). A plan whose Lambda_max is below ``ranges.MIN_CAPACITY_RPS`` has
    effectively no capacity: an error, not a table of zeros."""
    kind = ObjectiveKind(objective or inputs.objective.kind)
    target = target_rps if target_rps is not None else inputs.objective.target_rate_rps
    limits = limits or inputs.limits
    check_limits(inputs, limits, kind, target)
    how = OptimiserMethod(method or inputs.optimiser.method)
    sol = _optimise(inputs, table or threshold_table(inputs), limits, kind, target, how)
    if sol.lambda_max < MIN_CAPACITY_RPS:
        what = "any request" if sol.lambda_max <= 0 else f"{MIN_CAPACITY_RPS:g} requests/s (best: {sol.lambda_max:.3g})"
        raise PlanInputError(
            f"no plan within the ranges and budgets can serve {what}: it needs prefill "
            "capacity (a PrfaaS instance with a usable link, or a PD-P instance) and a decode "
            "instance, on hardware fast enough to matter",
            field="pd.instances",
        )
    return sol


def _optimise(
    inputs: PlanInputs,
    table: ThresholdTable,
    limits: Limits,
    objective: ObjectiveKind,
    target_rps: float | None,
    method: OptimiserMethod,
) -> Solution:
    """The operating point. ``enumerate``: exhaustive; ``per_threshold``: the exact optimum of every
    threshold (``exact.py``); ``milp``: the programme over the coarse thresholds, its answer kept
    where the per-threshold optimum does not beat it; ``auto``: enumerate when the count space has
    at most ENUMERATE_MAX_COMBINATIONS combinations, else per_threshold. Each ends at the balance
    point. ``optimise`` has checked the limits (``check_limits``)."""
    if method == OptimiserMethod.enumerate or (
        method == OptimiserMethod.auto and combination_count(limits) <= ENUMERATE_MAX_COMBINATIONS
    ):
        return enumerate_best(inputs, table, limits, objective, target_rps)
    # The exact optimum of every threshold (planner.exact): no plan there is the proof that none
    # exists, and ``infeasible`` names the reason. It replaces a MILP answer that a threshold
    # outside the coarse grid beats, and stands in when CBC gave no usable answer (a solution that
    # breaks a constraint, or an infeasibility that may be wrong).
    best = best_over_thresholds(table, inputs, limits, objective, target_rps)
    if best is None:
        raise infeasible(inputs, table, limits, objective, target_rps)
    _, n_f, n_p, n_d = best
    sol = at_best_threshold(table, inputs, n_f, n_p, n_d, usd_per_hour(inputs, n_f, n_p, n_d))
    if method == OptimiserMethod.milp:
        coarse = coarse_indices(table, inputs.optimiser.coarse_thresholds)
        milp = _solve_milp(table, coarse, inputs, limits, objective, target_rps)
        if milp is not None and not _improves(sol, milp, objective, target_rps):
            sol = milp
    return _balance(table, sol, inputs)


def _improves(a: Solution, b: Solution | None, objective: ObjectiveKind, target_rps: float | None) -> bool:
    """Whether plan ``a`` is better than ``b`` (None: no plan yet); for min_cost only one reaching the target."""
    if objective == ObjectiveKind.max_throughput:
        return b is None or beats((a.lambda_max, a.n_prfaas + a.n_p + a.n_d), (b.lambda_max, b.n_prfaas + b.n_p + b.n_d), "+-")
    if a.lambda_max < min_cost_target(target_rps) * (1 - 1e-12):
        return False
    return b is None or beats((a.usd_per_hour or 0.0, a.lambda_max), (b.usd_per_hour or 0.0, b.lambda_max), "$+")


def beats(a: tuple, b: tuple, order: str) -> bool:
    """Whether ``a`` beats ``b``, compared key by key until one decides: ``order`` gives each key's
    rule, "+" larger is better (within a relative TIE_REL a tie), "$" smaller is better (a $/hour:
    within 1e-9 a tie), "-" smaller is better (exactly)."""
    for x, y, rule in zip(a, b, order):
        if rule == "+":
            ahead, tie = x > y * (1 + TIE_REL), x >= y * (1 - TIE_REL)
        elif rule == "$":
            ahead, tie = x < y - 1e-9, abs(x - y) <= 1e-9
        else:
            ahead, tie = x < y, x == y
        if ahead or not tie:
            return ahead
    return False


def _decode_range(limits: Limits) -> tuple[int, int]:
    """N_d (min, max) of the decode-only pool, for ``limits.separate_decode`` only."""
    # the scenario's decode range sets both or neither (study.resolve._limits, Study.pair)
    assert limits.decode_min is not None and limits.decode_max is not None
    return limits.decode_min, limits.decode_max


def min_cost_target(target_rps: float | None) -> float:
    """The min_cost target rate, req/s, where only min_cost reads it."""
    # optimise and slo.slo_optimise refuse min_cost without a target before any search (check_limits)
    assert target_rps is not None
    return target_rps


def _minimal_counts(limits: Limits) -> tuple[int, int, int]:
    """The smallest counts within the ranges (a shared PD pool: its minimum as PD-D)."""
    if limits.separate_decode:
        return limits.prfaas_min, limits.pd_min, _decode_range(limits)[0]
    return limits.prfaas_min, 0, limits.pd_min


def infeasible(
    inputs: PlanInputs, table: ThresholdTable, limits: Limits, objective: ObjectiveKind, target_rps: float | None
) -> PlanInputError:
    """The proven reason no plan exists, naming what makes it so. Every budget is a sum of
    non-negative terms, so the smallest counts are the cheapest under each: when they fit every
    budget some plan fits, and a max-throughput plan always exists; otherwise the first budget
    they break is named. A min_cost target is out of reach when the most any plan serves (the
    certified max-throughput optimum) is below it; a budget is blamed only when one is set and
    lifting the budgets would reach the target, else the ranges and the demand are."""
    n_f, n_p, n_d = _minimal_counts(limits)
    for name, budget in limits.gpu_budget.items():
        need = chips_of(inputs, name, n_f, n_p, n_d)
        if need > budget:
            return PlanInputError(
                f"the smallest counts the instance ranges allow ({n_f} / {n_p} / {n_d}) need {need} "
                f"{name} chips, more than the budget of {budget}",
                field=f"budgets.gpus.{name}",
            )
    cost = usd_per_hour(inputs, n_f, n_p, n_d)
    if limits.usd_per_hour is not None and cost is not None and cost > limits.usd_per_hour + 1e-9:
        return PlanInputError(
            f"the smallest counts the instance ranges allow ({n_f} / {n_p} / {n_d}) cost "
            f"${cost:,.2f}/hour, more than the budget of ${limits.usd_per_hour:,.2f}/hour",
            field="budgets.usd_per_hour",
        )
    if objective != ObjectiveKind.min_cost:  # not reached: the smallest counts are a plan
        return PlanInputError("no plan fits the instance ranges and budgets", field="budgets")
    method = OptimiserMethod(inputs.optimiser.method)
    best = _optimise(inputs, table, limits, ObjectiveKind.max_throughput, None, method).lambda_max
    if limits.gpu_budget or limits.usd_per_hour is not None:
        free = replace(limits, gpu_budget={}, usd_per_hour=None)
        unbudgeted = _optimise(inputs, table, free, ObjectiveKind.max_throughput, None, method).lambda_max
        if unbudgeted >= min_cost_target(target_rps) * (1 - 1e-9):
            return PlanInputError(
                f"the budgets stop it: within them the most any plan serves is {best:.4g} req/s, "
                f"below the target {target_rps:g} req/s (without the budgets: {unbudgeted:.4g})",
                field="budgets",
            )
        best = unbudgeted
    return PlanInputError(
        f"the most any plan within the instance ranges serves is {best:.4g} req/s, below the "
        f"target {target_rps:g} req/s: widen the ranges or lower the target",
        field="objective.target_rate_rps",
    )


def feasible_cost(inputs: PlanInputs, limits: Limits, n_f: int, n_p: int, n_d: int):
    """Provisioned $/hour of (N_prfaas, N_p, N_d) if it is within the ranges and budgets (None:
    unpriced), else False."""
    lo_f, lo_p, lo_d = _minimal_counts(limits)
    below = n_p < lo_p or n_d < lo_d if limits.separate_decode else n_p + n_d < lo_d
    if n_f < lo_f or below or not within_maxima(inputs, limits, n_f, n_p, n_d):
        return False
    cost = usd_per_hour(inputs, n_f, n_p, n_d)
    return False if cost is None and limits.usd_per_hour is not None else cost


def count_combinations(inputs: PlanInputs, limits: Limits):
    """Every feasible (N_prfaas, N_p, N_d, $/hour) within the ranges and budgets."""
    for n_f in range(limits.prfaas_min, limits.prfaas_max + 1):
        if limits.separate_decode:
            d_lo, d_hi = _decode_range(limits)
            pairs = ((n_p, n_d) for n_p in range(limits.pd_min, limits.pd_max + 1) for n_d in range(d_lo, d_hi + 1))
        else:
            pairs = ((n_p, n_pd - n_p) for n_pd in range(limits.pd_min, limits.pd_max + 1) for n_p in range(n_pd + 1))
        for n_p, n_d in pairs:
            cost = feasible_cost(inputs, limits, n_f, n_p, n_d)
            if cost is not False:
                yield n_f, n_p, n_d, cost


def combination_count(limits: Limits) -> int:
    """Number of (N_prfaas, N_p, N_d) combinations an enumeration visits."""
    if limits.separate_decode:
        d_lo, d_hi = _decode_range(limits)
        local = (limits.pd_max - limits.pd_min + 1) * (d_hi - d_lo + 1)
    else:
        local = sum(n + 1 for n in range(limits.pd_min, limits.pd_max + 1))
    return (limits.prfaas_max - limits.prfaas_min + 1) * local


def enumerate_best(
    inputs: PlanInputs, table: ThresholdTable, limits: Limits, objective: ObjectiveKind, target_rps: float | None
) -> Solution:
    """Exact optimum by enumerating every count combination, each over every threshold
    (vectorised); fast when the space is small."""
    best: Solution | None = None
    for n_f, n_p, n_d, cost in count_combinations(inputs, limits):
        cand = at_best_threshold(table, inputs, n_f, n_p, n_d, cost)
        if _improves(cand, best, objective, target_rps):
            best = cand
    if best is None:
        raise infeasible(inputs, table, limits, objective, target_rps)
    return _balance(table, best, inputs)
