"""The one-site plan by brute force: every instance-count combination within the ranges and
budgets, each at every threshold of the table (``throughput.bounds``), the most Lambda_max
winning (ties: the fewest instances). Written apart from the package's searches
(``optimizer.enumerate_best``, ``exact.best_over_thresholds``), which the tests check against it.
"""

from __future__ import annotations

import numpy as np

from prfaas_plan.planner.optimizer import Solution
from prfaas_plan.planner.throughput import ThresholdTable, bounds
from prfaas_plan.study.model import Limits, PlanInputs

TIE_REL = 1e-9


def counts(limits: Limits):
    """Every (N_prfaas, N_p, N_d) within the ranges: N_p + N_d within the PD range for a shared
    pool, N_p and N_d each within its own beside a decode-only pool."""
    for n_f in range(limits.prfaas_min, limits.prfaas_max + 1):
        if limits.decode_max is not None:
            assert limits.decode_min is not None
            for n_p in range(limits.pd_min, limits.pd_max + 1):
                for n_d in range(limits.decode_min, limits.decode_max + 1):
                    yield n_f, n_p, n_d
        else:
            for n_pd in range(limits.pd_min, limits.pd_max + 1):
                for n_p in range(n_pd + 1):
                    yield n_f, n_p, n_pd - n_p


def within_budgets(inputs: PlanInputs, limits: Limits, n_f: int, n_p: int, n_d: int) -> bool:
    """Chips per hardware and provisioned $/hour (the committed link with any PrfaaS instance) of
    the counts within the budgets; an unpriced pool in use breaks a $/hour budget."""
    used = [(inputs.prfaas, n_f), (inputs.pd, n_p), (inputs.decode_pool, n_d)]
    for name, budget in limits.gpu_budget.items():
        if sum(pool.gpus_per_instance * n for pool, n in used if pool.hardware_name == name) > budget:
            return False
    if limits.usd_per_hour is None:
        return True
    prices = [(pool.usd_per_hour_per_instance, n) for pool, n in used if n]
    if any(price is None for price, _ in prices):
        return False
    usd = sum(price * n for price, n in prices) + (inputs.link.fixed_usd_per_hour if n_f else 0.0)
    return usd <= limits.usd_per_hour + 1e-9


def brute_force(inputs: PlanInputs, table: ThresholdTable, limits: Limits | None = None) -> Solution:
    """The max-throughput plan (t, N_prfaas, N_p, N_d) by exhaustive enumeration ($/hour not given)."""
    limits = limits or inputs.limits
    idx = np.arange(len(table))
    best: Solution | None = None
    for n_f, n_p, n_d in counts(limits):
        if not within_budgets(inputs, limits, n_f, n_p, n_d):
            continue
        lam = bounds(table, idx, n_f, n_p, n_d, inputs).lambda_max
        k = int(np.argmax(lam))
        cand = Solution(k, float(table.thresholds_tokens[k]), n_f, n_p, n_d, float(lam[k]), None)
        if best is None or cand.lambda_max > best.lambda_max * (1 + TIE_REL):
            best = cand
        elif cand.lambda_max >= best.lambda_max * (1 - TIE_REL) and n_f + n_p + n_d < best.n_prfaas + best.n_p + best.n_d:
            best = cand
    assert best is not None, "no count combination within the ranges and budgets"
    return best
