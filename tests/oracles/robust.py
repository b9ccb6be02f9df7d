"""One-site robust plans by brute force, and the one programme on the same cases."""

from __future__ import annotations

import itertools

import numpy as np

from prfaas_plan.choices import ObjectiveKind, RobustObjective
from prfaas_plan.planner.formulation import Cell, Goal, solve
from prfaas_plan.planner.optimizer import one_site_study, usd_per_hour
from prfaas_plan.planner.throughput import bounds


def case_lambda(inputs, table, n_f: int, n_p: int, n_d: int, shared: bool) -> float:
    """A case's Lambda_max (req/s) for the counts: the best over every threshold of ``table`` and,
    for a shared PD pool, every split of N_p + N_d."""
    idx = np.arange(len(table))
    splits = [(a, n_p + n_d - a) for a in range(n_p + n_d + 1)] if shared else [(n_p, n_d)]
    return max(float(np.max(bounds(table, idx, n_f, a, b, inputs).lambda_max)) for a, b in splits)


def fits(inputs, limits, n_f: int, n_p: int, n_d: int) -> bool:
    """Whether the counts are within the instance ranges and the GPU and $/hour budgets."""
    pools = [(inputs.prfaas, n_f), (inputs.pd, n_p), (inputs.decode_pool, n_d)]
    for hardware, budget in limits.gpu_budget.items():
        if sum(pool.gpus_per_instance * n for pool, n in pools if pool.hardware_name == hardware) > budget:
            return False
    cost = usd_per_hour(inputs, n_f, n_p, n_d)
    return limits.usd_per_hour is None or (cost is not None and cost <= limits.usd_per_hour + 1e-9)


def counts(limits):
    """Every (N_prfaas, N_p, N_d) in the ranges; a shared PD pool as (N_prfaas, N_pd, 0)."""
    decode = range(limits.decode_min, limits.decode_max + 1) if limits.separate_decode else (0,)
    return itertools.product(range(limits.prfaas_min, limits.prfaas_max + 1), range(limits.pd_min, limits.pd_max + 1), decode)


def robust_brute_force(cases, tables, objective) -> tuple[float, list[tuple[int, int, int]]]:
    """The best figure over every count in the ranges and budgets, and the counts reaching it (within
    1e-9): ``worst_case`` min_c x_c, ``weighted`` sum_c w_c x_c (x_c = Lambda_c, or Lambda_c / target_c
    when every case has a target), ``min_cost`` the lowest $/hour with every Lambda_c >= target_c."""
    base = cases[0].inputs
    limits = base.limits
    normalised = all(c.target_rate_rps is not None for c in cases)
    scored = {}
    for n_f, n_p, n_d in counts(limits):
        if not fits(base, limits, n_f, n_p, n_d):
            continue
        lams = [case_lambda(c.inputs, t, n_f, n_p, n_d, not limits.separate_decode) for c, t in zip(cases, tables)]
        xs = [lam / c.target_rate_rps for lam, c in zip(lams, cases)] if normalised else lams
        if objective == RobustObjective.min_cost:
            if all(x >= 1 - 1e-12 for x in xs):
                scored[n_f, n_p, n_d] = -usd_per_hour(base, n_f, n_p, n_d)
        elif objective == RobustObjective.worst_case:
            scored[n_f, n_p, n_d] = min(xs)
        else:
            scored[n_f, n_p, n_d] = sum(c.weight * x for c, x in zip(cases, xs))
    best = max(scored.values())
    return abs(best), [k for k, v in scored.items() if v >= best - 1e-9 * abs(best)]


def formulation_robust(cases, tables, objective):
    """The one programme (``planner.formulation.solve``) over the cases of a one-site robust plan,
    a cell per case with every threshold of its table a candidate (exact on a small table): the 1x1
    study of the first case's inputs, each case's demand 1 req/s (its target when every case has
    one), link and decode rate its own. Returns ``formulation.Solved``."""
    base = cases[0].inputs
    kind = ObjectiveKind.min_cost if objective == RobustObjective.min_cost else ObjectiveKind.max_throughput
    study = one_site_study(base, base.limits, kind, 1.0)
    normalised = all(c.target_rate_rps is not None for c in cases)
    cells = []
    for k, (case, table) in enumerate(zip(cases, tables)):
        links = one_site_study(case.inputs, base.limits, kind, 1.0).links
        demand = case.target_rate_rps if normalised else 1.0
        decode = {"pd": case.inputs.decode_rps_per_instance}
        cells.append(Cell(k, 0, 24.0, {"pd": demand}, {("pd", "prfaas"): table}, links, decode))
    cands = {(k, 0, "pd"): list(range(len(t))) for k, t in enumerate(tables)}
    return solve(study, cells, cands, Goal(kind, RobustObjective(objective), tuple(c.weight for c in cases)))
