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
sum_k lambda_k >= a target rate. It is solved first over a coarse grid of thresholds
(quantiles of L), then over every distinct threshold between the neighbours of the coarse
choice; finally, for the chosen counts, t is moved along the fine grid to the balance
point of eq. 7 (Theta_prfaas / p = Theta_pdp / (1 - p)) among thresholds with the same
Lambda_max. Over a coarse grid the MILP is a heuristic (hypothesis found it $32/hour off a
min_cost optimum), and over every one of the 4,097 thresholds exact but 5-10 s at 24,000
combinations, so each answer is certified by ``exact.best_over_thresholds``, the exact
optimum of every threshold at once (milliseconds), which replaces it when better.

``enumerate_best`` visits every combination, each over every threshold (vectorised): the
reference, and the fastest for a small count space. ``method: auto`` (the default)
enumerates up to ENUMERATE_MAX_COMBINATIONS combinations and takes the per-threshold optimum
above that; ``milp`` runs the programme above (certified), ``per_threshold`` and
``enumerate`` force theirs. The multi-site programme (``sites.py``), whose sites share links
and PrfaaS instances, is where the MILP pays.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..choices import ObjectiveKind, OptimiserMethod
from ..errors import PlanInputError
from ..ranges import MIN_CAPACITY_RPS
from ..study.model import Limits, PlanInputs
from .exact import best_over_thresholds
from .throughput import ThresholdTable, bounds, threshold_table

TIE_REL = 1e-7  # relative tolerance when comparing Lambda values


@dataclass(frozen=True)
class Solution:
    threshold_index: int
    threshold_tokens: float
    n_prfaas: int
    n_p: int
    n_d: int
    lambda_max: float
    usd_per_hour: float | None


def _cost_terms(inputs: PlanInputs) -> tuple[float | None, float | None, float | None]:
    """Provisioned $/hour of one PrfaaS, PD(-P) and decoding instance."""
    return (
        inputs.prfaas.usd_per_hour_per_instance,
        inputs.pd.usd_per_hour_per_instance,
        inputs.decode_pool.usd_per_hour_per_instance,
    )


def usd_per_hour(inputs: PlanInputs, n_prfaas: int, n_p: int, n_d: int) -> float | None:
    """Provisioned $/hour of the counts (capital + full-load power) plus the committed link
    (counted when PrfaaS instances use it); None when a used pool has no price."""
    c_f, c_p, c_d = _cost_terms(inputs)
    if (n_prfaas and c_f is None) or (n_p and c_p is None) or (n_d and c_d is None):
        return None
    link = inputs.link.fixed_usd_per_hour if n_prfaas else 0.0
    return (c_f or 0.0) * n_prfaas + (c_p or 0.0) * n_p + (c_d or 0.0) * n_d + link


def _used_pools(inputs: PlanInputs, n_prfaas: int, n_p: int, n_d: int, missing) -> list[str]:
    """'hardware (role)' of each pool the counts use for which ``missing(pool)`` holds, each once."""
    out = []
    for pool, count in ((inputs.prfaas, n_prfaas), (inputs.pd, n_p), (inputs.decode_pool, n_d)):
        name = f"{pool.hardware_name} ({pool.role})"
        if count and missing(pool) and name not in out:
            out.append(name)
    return out


def unpriced_pools(inputs: PlanInputs, n_prfaas: int, n_p: int, n_d: int) -> list[str]:
    """'hardware (role)' of each pool the counts use whose hardware has no price."""
    return _used_pools(inputs, n_prfaas, n_p, n_d, lambda pool: pool.usd_per_hour_per_instance is None)


def power_unpriced_pools(inputs: PlanInputs, n_prfaas: int, n_p: int, n_d: int) -> list[str]:
    """'hardware (role)' of each pool the counts use whose billed power has no TDP
    (``ChipCost.power_unpriced``): any $/hour of the counts is then a lower bound."""
    return _used_pools(inputs, n_prfaas, n_p, n_d, lambda pool: pool.cost.power_unpriced)


def check_limits(inputs: PlanInputs, limits: Limits, objective: ObjectiveKind) -> None:
    """Errors no search can get round: no decode capacity, or no price on a pool that may be used
    while a cost objective or a $/hour budget needs one (no capital price, or billed power of
    hardware without a TDP: ``ChipCost.power_unpriced``). Every optimiser calls it (``optimise``,
    ``enumerate_best`` and ``slo.slo_optimise``), with the objective it optimises."""
    decode_max = limits.pd_max if limits.decode_max is None else limits.decode_max  # separate_decode: decode_max set
    if decode_max == 0 or inputs.decode_rps_per_instance <= 0:
        raise PlanInputError(
            "zero decode capacity: the PD cluster has no instances to decode",
            field="pd_decode.instances" if limits.separate_decode else "pd.instances",
        )
    needs_price = objective == ObjectiveKind.min_cost or limits.usd_per_hour is not None
    if needs_price:
        for pool, count_max in ((inputs.prfaas, limits.prfaas_max), (inputs.pd, limits.pd_max), (inputs.decode_pool, decode_max)):
            if count_max > 0 and pool.usd_per_hour_per_instance is None:
                raise PlanInputError(
                    f"hardware '{pool.hardware_name}' has no price (price_usd_per_gpu_hour in its "
                    "profile, or the pool's cost), needed for a cost objective or budget",
                    field=f"{pool.role}.hardware",
                )
            if count_max > 0 and pool.cost.power_unpriced:
                raise PlanInputError(
                    f"hardware '{pool.hardware_name}' has no tdp_w, so its billed power "
                    f"(${pool.cost.usd_per_kwh:g}/kWh) has no price, needed for a cost objective "
                    "or budget",
                    field=f"{pool.role}.hardware",
                )


def _gpu_rows(inputs: PlanInputs, limits: Limits):
    """(budget, chips per PrfaaS, PD(-P) and decoding instance) for each budgeted hardware."""
    rows = []
    for name, budget in limits.gpu_budget.items():
        sizes = tuple(
            pool.gpus_per_instance if pool.hardware_name == name else 0 for pool in (inputs.prfaas, inputs.pd, inputs.decode_pool)
        )
        rows.append((budget, *sizes))
    return rows


def _solve_milp(
    table: ThresholdTable,
    cand: np.ndarray,
    inputs: PlanInputs,
    limits: Limits,
    objective: ObjectiveKind,
    target_rps: float | None,
) -> Solution | None:
    """The programme of ``planner.formulation`` on the 1x1 study of ``inputs`` (``one_site_study``)
    over the candidate thresholds ``cand``, its answer checked exactly (``exact_solution``)."""
    from .formulation import Cell, Goal, solve

    study = one_site_study(inputs, limits, objective, target_rps)
    if study is None:
        return None
    site = study.pd_sites[0]
    cell = Cell(
        0,
        0,
        24.0,
        {site.name: site.demand_rps},
        {(site.name, "prfaas"): table},
        study.links,
        {site.name: inputs.decode_rps_per_instance},
    )
    for tight in (False, True):  # an answer the exact check refuses: once more without presolve, tightly
        sol = solve(study, [cell], {(0, 0, site.name): [int(k) for k in cand]}, Goal(objective), tight=tight)
        if sol is None:
            continue
        plan = sol.cells[0]
        counts = (sol.n_prfaas["prfaas"], plan.n_p[site.name], plan.n_d[site.name])
        exact = exact_solution(table, plan.k[site.name], counts, inputs, limits, objective, target_rps)
        if exact is not None:
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


def exact_solution(
    table: ThresholdTable,
    idx: int,
    count_vars,
    inputs: PlanInputs,
    limits: Limits,
    objective: ObjectiveKind,
    target_rps: float | None,
) -> Solution | None:
    """The solver's counts, rounded and checked exactly against the ranges and budgets, with
    Lambda_max recomputed by the model at threshold ``idx``; None when the rounded counts break a
    range or a budget, or (min_cost) miss the target rate."""
    n_f, n_p, n_d = count_vars
    cost = feasible_cost(inputs, limits, n_f, n_p, n_d)
    if cost is False:
        return None
    lam = float(bounds(table, idx, n_f, n_p, n_d, inputs).lambda_max)
    if objective == ObjectiveKind.min_cost and lam < min_cost_target(target_rps) * (1 - 1e-9):
        return None
    return Solution(idx, float(table.thresholds_tokens[idx]), n_f, n_p, n_d, lam, cost)


def coarse_indices(table: ThresholdTable, count: int) -> np.ndarray:
    """About ``count`` thresholds evenly spaced in p, always including 'all' and 'none' offloaded."""
    targets = np.linspace(0.0, 1.0, count)
    # p falls from 1 to 0 along the table; search on -p (ascending)
    idx = np.searchsorted(-table.p, -targets, side="left").clip(0, len(table) - 1)
    return np.unique(np.concatenate(([0, len(table) - 1], idx)))


def _balance(table: ThresholdTable, sol: Solution, inputs: PlanInputs) -> Solution:
    """For the chosen counts, the best threshold on the fine grid; among ties, the balance
    point of eq. 7 (the largest min(PrfaaS bound, PD-P bound))."""
    b = bounds(table, np.arange(len(table)), sol.n_prfaas, sol.n_p, sol.n_d, inputs)
    lam = b.lambda_max
    best = lam.max()
    if best < sol.lambda_max * (1 - TIE_REL):
        return sol
    prefill = np.minimum(np.minimum(b.prfaas_compute, b.link), b.pd_prefill)
    tied = lam >= best * (1 - TIE_REL)
    idx = int(np.argmax(np.where(tied, prefill, -np.inf)))
    return replace(sol, threshold_index=idx, threshold_tokens=float(table.thresholds_tokens[idx]), lambda_max=float(lam[idx]))


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
    """The operating point (see ``_optimise``). A plan whose Lambda_max is below
    ``ranges.MIN_CAPACITY_RPS`` has effectively no capacity: an error, not a table of zeros."""
    sol = _optimise(inputs, table, objective=objective, target_rps=target_rps, limits=limits, method=method)
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
    table: ThresholdTable | None = None,
    *,
    objective: str | None = None,
    target_rps: float | None = None,
    limits: Limits | None = None,
    method: str | None = None,
) -> Solution:
    """The operating point. ``milp``: coarse MILP, fine MILP around its threshold, a local search,
    certified by the per-threshold optimum; ``enumerate``: exhaustive; ``per_threshold``: the exact
    optimum of every threshold (``exact.py``); ``auto``: enumerate when the count space has at most
    ENUMERATE_MAX_COMBINATIONS combinations, else per_threshold. Each ends at the balance point.
    Unset arguments come from ``inputs`` (its objective, limits and optimiser settings)."""
    objective = ObjectiveKind(objective or inputs.objective.kind)
    target_rps = target_rps if target_rps is not None else inputs.objective.target_rate_rps
    if objective == ObjectiveKind.min_cost and target_rps is None:  # a min_cost day gives schedule its targets
        raise PlanInputError(
            "min_cost needs target_rate_rps to plan one steady rate (the day's windows are the schedule's targets)",
            field="objective.target_rate_rps",
        )
    limits = limits or inputs.limits
    method = OptimiserMethod(method or inputs.optimiser.method)
    table = table or threshold_table(inputs)
    check_limits(inputs, limits, objective)
    if method == OptimiserMethod.enumerate or (
        method == OptimiserMethod.auto and combination_count(limits) <= ENUMERATE_MAX_COMBINATIONS
    ):
        return enumerate_best(inputs, table, limits, objective, target_rps)
    if method in (OptimiserMethod.auto, OptimiserMethod.per_threshold):
        exact = _certificate(table, inputs, limits, objective, target_rps)
        if exact is None:
            raise infeasible(inputs, table, limits, objective, target_rps)
        return _balance(table, exact, inputs)
    coarse = coarse_indices(table, inputs.optimiser.coarse_thresholds)
    sol = _solve_milp(table, coarse, inputs, limits, objective, target_rps)
    if sol is not None:
        pos = int(np.searchsorted(coarse, sol.threshold_index))
        lo = coarse[max(pos - 1, 0)]
        hi = coarse[min(pos + 1, len(coarse) - 1)]
        fine = np.unique(np.linspace(lo, hi, min(hi - lo + 1, FINE_MAX_CANDIDATES)).round().astype(int))
        refined = _solve_milp(table, fine, inputs, limits, objective, target_rps)
        if refined is not None and _better(refined, sol, objective):
            sol = refined
        sol = _polish(table, sol, inputs, limits, objective, target_rps)
    # The certificate: the exact optimum of every threshold (planner.exact). It replaces a MILP answer
    # that a threshold outside the coarse-to-fine grid beats, and stands in when CBC gave no usable
    # answer (a solution that breaks a constraint, or an infeasibility that may be wrong); no plan
    # there either is the proof that none exists, and ``infeasible`` names the reason.
    certified = _certificate(table, inputs, limits, objective, target_rps)
    if certified is None:
        if sol is not None:  # not reached: the certificate covers every combination the MILP can return
            return sol
        raise infeasible(inputs, table, limits, objective, target_rps)
    if sol is None or _improves(certified, sol, objective, target_rps):
        sol = _balance(table, certified, inputs)
    return sol


def _certificate(
    table: ThresholdTable, inputs: PlanInputs, limits: Limits, objective: ObjectiveKind, target_rps: float | None
) -> Solution | None:
    """The exact optimum over every threshold and count combination (``exact.best_over_thresholds``)
    as a Solution, its Lambda_max the best threshold's for its counts; None when no plan exists."""
    best = best_over_thresholds(table, inputs, limits, objective, target_rps)
    if best is None:
        return None
    _, n_f, n_p, n_d = best
    lam = bounds(table, np.arange(len(table)), n_f, n_p, n_d, inputs).lambda_max
    k = int(np.argmax(lam))
    return Solution(k, float(table.thresholds_tokens[k]), n_f, n_p, n_d, float(lam[k]), usd_per_hour(inputs, n_f, n_p, n_d))


FINE_MAX_CANDIDATES = 256  # binaries in the fine MILP; the polish step scans every threshold anyway


def _polish(
    table: ThresholdTable, sol: Solution, inputs: PlanInputs, limits: Limits, objective: ObjectiveKind, target_rps: float | None
) -> Solution:
    """Exact local search around the MILP's counts: every N_p / N_d split of N_prfaas +- 1 and
    N_pd +- 1 (within ranges and budgets), each over every threshold (vectorised). It fixes
    what the coarse-to-fine threshold grid can miss. For min_cost, the cheapest neighbour that
    still reaches the target wins, with ties broken by Lambda_max."""
    idx = np.arange(len(table))
    best = sol
    for n_f, n_p, n_d in _neighbours(sol, limits):
        cost = feasible_cost(inputs, limits, n_f, n_p, n_d)
        if cost is False:
            continue
        lam = bounds(table, idx, n_f, n_p, n_d, inputs).lambda_max
        k = int(np.argmax(lam))
        cand = Solution(k, float(table.thresholds_tokens[k]), n_f, n_p, n_d, float(lam[k]), cost)
        if _improves(cand, best, objective, target_rps):
            best = cand
    return _balance(table, best, inputs)


def _neighbours(sol: Solution, limits: Limits):
    """N_prfaas +- 1 with, for a shared PD pool, every split of N_pd +- 1; for a decode-only pool,
    N_p +- 1 and N_d +- 1."""
    for n_f in range(sol.n_prfaas - 1, sol.n_prfaas + 2):
        if limits.separate_decode:
            for n_p in range(sol.n_p - 1, sol.n_p + 2):
                for n_d in range(sol.n_d - 1, sol.n_d + 2):
                    if n_p >= 0 and n_d >= 0:
                        yield n_f, n_p, n_d
        else:
            for n_pd in range(sol.n_p + sol.n_d - 1, sol.n_p + sol.n_d + 2):
                for n_p in range(n_pd + 1):
                    yield n_f, n_p, n_pd - n_p


def _improves(a: Solution, b: Solution, objective: ObjectiveKind, target_rps: float | None) -> bool:
    if objective == ObjectiveKind.max_throughput:
        if a.lambda_max > b.lambda_max * (1 + TIE_REL):
            return True
        tie = a.lambda_max >= b.lambda_max * (1 - TIE_REL)
        return tie and a.n_prfaas + a.n_p + a.n_d < b.n_prfaas + b.n_p + b.n_d
    if a.lambda_max < min_cost_target(target_rps) * (1 - 1e-12):
        return False
    ca, cb = a.usd_per_hour or 0.0, b.usd_per_hour or 0.0
    return ca < cb - 1e-9 or (abs(ca - cb) <= 1e-9 and a.lambda_max > b.lambda_max * (1 + TIE_REL))


def _better(a: Solution, b: Solution, objective: ObjectiveKind) -> bool:
    if objective == ObjectiveKind.max_throughput:
        return a.lambda_max > b.lambda_max * (1 + TIE_REL)
    return (a.usd_per_hour or 0.0) < (b.usd_per_hour or 0.0) - 1e-9


def _decode_range(limits: Limits) -> tuple[int, int]:
    """N_d (min, max) of the decode-only pool, for ``limits.separate_decode`` only."""
    # the scenario's decode range sets both or neither (study.resolve._limits, Study.pair)
    assert limits.decode_min is not None and limits.decode_max is not None
    return limits.decode_min, limits.decode_max


def min_cost_target(target_rps: float | None) -> float:
    """The min_cost target rate, req/s, where only min_cost reads it."""
    # _optimise and slo.slo_optimise refuse min_cost without a target before any search
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
    for name, (budget, g_f, g_p, g_d) in zip(limits.gpu_budget, _gpu_rows(inputs, limits)):
        need = g_f * n_f + g_p * n_p + g_d * n_d
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
    best = _optimise(inputs, table, objective=ObjectiveKind.max_throughput, limits=limits).lambda_max
    if limits.gpu_budget or limits.usd_per_hour is not None:
        free = replace(limits, gpu_budget={}, usd_per_hour=None)
        unbudgeted = _optimise(inputs, table, objective=ObjectiveKind.max_throughput, limits=free).lambda_max
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
    if not limits.prfaas_min <= n_f <= limits.prfaas_max:
        return False
    if limits.separate_decode:
        d_lo, d_hi = _decode_range(limits)
        if not (limits.pd_min <= n_p <= limits.pd_max and d_lo <= n_d <= d_hi):
            return False
    elif not limits.pd_min <= n_p + n_d <= limits.pd_max:
        return False
    if any(g_f * n_f + g_p * n_p + g_d * n_d > budget for budget, g_f, g_p, g_d in _gpu_rows(inputs, limits)):
        return False
    cost = usd_per_hour(inputs, n_f, n_p, n_d)
    if limits.usd_per_hour is not None and (cost is None or cost > limits.usd_per_hour + 1e-9):
        return False
    return cost


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
    inputs: PlanInputs,
    table: ThresholdTable,
    limits: Limits | None = None,
    objective: str = ObjectiveKind.max_throughput,
    target_rps: float | None = None,
) -> Solution:
    """Exact optimum by enumerating every count combination, each over every threshold
    (vectorised). The reference the MILP is tested against; fast when the space is small."""
    limits = limits or inputs.limits
    objective = ObjectiveKind(objective)
    check_limits(inputs, limits, objective)
    best: Solution | None = None
    idx = np.arange(len(table))
    for n_f, n_p, n_d, cost in count_combinations(inputs, limits):
        lam = bounds(table, idx, n_f, n_p, n_d, inputs).lambda_max
        k = int(np.argmax(lam))
        cand = Solution(k, float(table.thresholds_tokens[k]), n_f, n_p, n_d, float(lam[k]), cost)
        if best is None:
            if objective == ObjectiveKind.max_throughput or cand.lambda_max >= min_cost_target(target_rps) * (1 - 1e-12):
                best = cand
        elif _improves(cand, best, objective, target_rps):
            best = cand
    if best is None:
        raise infeasible(inputs, table, limits, objective, target_rps)
    return _balance(table, best, inputs)


def brute_force(inputs: PlanInputs, table: ThresholdTable, limits: Limits | None = None) -> Solution:
    """Best (t, N_prfaas, N_p, N_d) for maximum throughput, by exhaustive enumeration."""
    return enumerate_best(inputs, table, limits)
