"""The exact optimum at every threshold at once (vectorised over the threshold table).

At threshold k a rate lambda (req/s) is served by the counts (N_prfaas, N_p, N_d) exactly when

    N_prfaas >= lambda w_f(k),   N_p >= lambda w_p(k),   N_d >= lambda / r_d,   lambda w_l(k) <= B

(w_f, w_p: instance-seconds per request, w_l: link bytes per request, r_d: req/s per PD-D
instance, B: usable link bytes/s; the terms of ``throughput.bounds``), and, with a transport
model, N_prfaas >= lambda w_l / r_t (each PrfaaS instance streams one transfer at a time at
r_t bytes/s, ``timing.transport``). So the smallest counts
serving lambda are N(lambda) = max(N_min, ceil(lambda w)), non-decreasing in lambda component by
component, and every instance range and budget (sums of non-negative terms) only gets harder as
counts grow. Hence, at each k:

- ``min_cost``: the cheapest plan reaching the target rate is N(target), if it fits;
- ``max_throughput``: the largest lambda whose N(lambda) fits, by bisection on lambda; the optimum
  is a breakpoint (N / w, r_d N_d or B / w_l) and the counts just below it are the optimum's.

A shared PD pool (PD-P and PD-D from one pool, one price and chip count) pads N_p + N_d up to its
minimum with PD-D instances. The best over k is the optimum over every count combination and
every threshold, what enumeration finds, in time linear in the table rather than the count
space: the answer of ``optimizer._optimise`` above its enumeration size.
"""

from __future__ import annotations

import numpy as np

from ..choices import ObjectiveKind
from ..study.model import Limits, PlanInputs
from .cost import chips_of, provisioned_usd_per_hour
from .throughput import ThresholdTable, bounds

BISECTION_STEPS = 200  # halvings of the rate bracket: far past float precision (stops when it stalls)
_CEIL_REL = 1e-12  # lambda w within this of an integer counts as that integer (float noise)


def _ceil(x: np.ndarray) -> np.ndarray:
    return np.ceil(x * (1 - _CEIL_REL))


def smallest_counts(table: ThresholdTable, inputs: PlanInputs, limits: Limits, rate_rps: np.ndarray):
    """N(lambda) at every threshold: the smallest (N_prfaas, N_p, N_d) serving ``rate_rps`` (one
    rate per threshold), and whether the link carries it. Counts are float arrays of integers."""
    n_f = np.maximum(limits.prfaas_min, _ceil(rate_rps * table.prfaas_work_s))
    n_p = _ceil(rate_rps * table.pd_work_s)
    n_d = _ceil(rate_rps / inputs.decode_rps_per_instance)
    if limits.separate_decode:
        assert limits.decode_min is not None  # set with decode_max (study.resolve._limits, Study.pair)
        n_p, n_d = np.maximum(limits.pd_min, n_p), np.maximum(limits.decode_min, n_d)
    else:
        n_d = np.maximum(n_d, limits.pd_min - n_p)
    link_ok = rate_rps * table.link_work_bytes <= inputs.link.usable_bytes_per_s * (1 + _CEIL_REL)
    if inputs.link.transport is not None:  # N_prfaas streams carry lambda w_l: N_prfaas >= lambda w_l / r_transfer
        n_f = np.maximum(n_f, _ceil(rate_rps * table.link_work_bytes / inputs.link.transfer_bytes_per_s))
    return n_f, n_p, n_d, link_ok


def within_maxima(inputs: PlanInputs, limits: Limits, n_f, n_p, n_d) -> np.ndarray:
    """Whether counts (ints or arrays) are within the ranges' maxima and the GPU and $/hour budgets
    (an unpriced pool counts $0: ``optimizer.feasible_cost`` refuses it under a $/hour budget)."""
    ok = n_f <= limits.prfaas_max
    ok &= (n_p <= limits.pd_max) & (n_d <= limits.decode_max) if limits.separate_decode else n_p + n_d <= limits.pd_max
    for name, budget in limits.gpu_budget.items():
        ok &= chips_of(inputs, name, n_f, n_p, n_d) <= budget
    if limits.usd_per_hour is not None:
        ok &= provisioned_usd_per_hour(inputs, n_f, n_p, n_d) <= limits.usd_per_hour + 1e-9
    return ok


def threshold_optima(
    table: ThresholdTable, inputs: PlanInputs, limits: Limits, objective: ObjectiveKind, target_rps: float | None = None
):
    """Per threshold: the optimal counts (n_f, n_p, n_d; float arrays of integers), whether any plan
    exists there, and the rate those counts serve at that threshold (req/s)."""

    def fitting(rate_rps: np.ndarray) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], np.ndarray]:
        """N(rate) at every threshold, and whether it fits: the link carries the rate, the counts
        within the ranges and budgets."""
        n_f, n_p, n_d, link_ok = smallest_counts(table, inputs, limits, rate_rps)
        return (n_f, n_p, n_d), link_ok & within_maxima(inputs, limits, n_f, n_p, n_d)

    if objective == ObjectiveKind.min_cost:
        assert target_rps is not None  # optimizer.check_limits refuses min_cost without a target
        counts, ok = fitting(np.full(len(table), float(target_rps)))
    else:
        lo = np.zeros(len(table))
        _, ok = fitting(lo)
        decode_max = limits.pd_max if limits.decode_max is None else limits.decode_max  # separate_decode: decode_max set
        hi = np.full(len(table), inputs.decode_rps_per_instance * decode_max * (1 + 1e-9) + 1e-12)
        for _ in range(BISECTION_STEPS):
            mid = 0.5 * (lo + hi)
            if not np.any((mid > lo) & (mid < hi)):
                break
            _, good = fitting(mid)
            lo, hi = np.where(good, mid, lo), np.where(good, hi, mid)
        counts, _ = fitting(lo)
    served = bounds(table, np.arange(len(table)), *counts, inputs).lambda_max
    return (*counts, ok, np.where(ok, served, 0.0))


def best_over_thresholds(
    table: ThresholdTable, inputs: PlanInputs, limits: Limits, objective: ObjectiveKind, target_rps: float | None = None
) -> tuple[int, int, int, int] | None:
    """(threshold index, N_prfaas, N_p, N_d) of the exact optimum over every threshold and count
    combination; None when no plan fits (or, for min_cost, none reaches the target). Ties: the
    fewest instances for max_throughput, the higher rate for min_cost."""
    n_f, n_p, n_d, ok, served = threshold_optima(table, inputs, limits, objective, target_rps)
    if not ok.any():
        return None
    total = n_f + n_p + n_d
    if objective == ObjectiveKind.min_cost:
        cost = np.where(ok, provisioned_usd_per_hour(inputs, n_f, n_p, n_d), np.inf)
        order = np.lexsort((-served, cost))
    else:
        order = np.lexsort((total, -np.where(ok, served, -np.inf)))
    k = int(order[0])
    return k, int(n_f[k]), int(n_p[k]), int(n_d[k])
