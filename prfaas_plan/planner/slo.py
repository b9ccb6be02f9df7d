"""SLO-aware planning: the largest rate that meets TTFT/TPOT targets (goodput), and the
deployment that maximises it, or the cheapest one that reaches a target rate under them.

Goodput of a deployment = the largest rate <= its Lambda_max at which the closed-form
latency (``planner.latency``) meets every target; latency grows with the rate, so it is
found by bisection. A threshold that misses the SLO on an idle deployment (its prefill and
transfer alone are too slow) is skipped for every count. The search enumerates instance-count combinations (largest
throughput bound first, pruning any whose Lambda_max cannot beat the best goodput found)
and, for each, candidate thresholds at quantiles of L, then refines t between the
neighbours of the best one. Within a candidate the thresholds are taken in falling order of
Lambda_max, and only one that could beat the best so far is bisected (its goodput is at most
its Lambda_max, and below any rate at which it misses the SLO: one check at the best so far),
which finds the same best threshold as bisecting every one. A min_cost target that no plan
reaches is refused with the most goodput any plan within the ranges serves under the SLO.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

import numpy as np

from ..choices import DeploymentName, ObjectiveKind
from ..errors import PlanInputError
from ..study.model import DecodeModel, Limits, PlanInputs, Slo
from .deployment import Deployment
from .latency import LatencyModel, SupportArrays
from .optimizer import Solution, check_limits, coarse_indices, combination_count, count_combinations, min_cost_target, optimise
from .throughput import ThresholdTable, bounds

MAX_COMBINATIONS = 5000
_BISECTIONS = 30
IDLE_RATE_RPS = 1e-6  # "an idle deployment": a rate at which no request waits


@dataclass(frozen=True)
class SloPlan:
    deployment: Deployment
    threshold_index: int
    goodput_rps: float
    lambda_max: float
    usd_per_hour: float | None


def bounds_queueing(slo) -> bool:
    """Whether the SLO limits queueing: only a TTFT target does (TPOT is set by the decode batch)."""
    return slo.ttft_p90_s is not None or slo.ttft_p99_s is not None


def goodput(model: LatencyModel, slo, upper_rps: float, arrival_scv: float = 1.0) -> float:
    """Largest rate in (0, upper_rps] meeting the SLO (0 if none does), by bisection. An SLO
    without a TTFT target does not bound the queues, which never settle at Lambda_max
    (``upper_rps``): its goodput is at most ``latency.operating_load`` x ``upper_rps``."""
    if upper_rps <= 0 or not np.isfinite(upper_rps):
        return 0.0
    top = upper_rps * (1 - 1e-9) if bounds_queueing(slo) else model.inputs.latency.operating_load * upper_rps
    if model.meets(top, slo, arrival_scv):
        return top
    if not model.meets(upper_rps * 2.0**-_BISECTIONS, slo, arrival_scv):
        return 0.0  # missed even on an idle deployment: no bisection can find a rate
    lo, hi = 0.0, top
    for _ in range(_BISECTIONS):
        mid = 0.5 * (lo + hi)
        if model.meets(mid, slo, arrival_scv):
            lo = mid
        else:
            hi = mid
    return lo


def slo_optimise(
    inputs: PlanInputs,
    table: ThresholdTable,
    decode: DecodeModel,
    slo: Slo,
    *,
    objective: str = ObjectiveKind.max_throughput,
    target_rps: float | None = None,
    limits: Limits | None = None,
) -> SloPlan:
    """Maximise goodput under the SLO, or minimise $/hour with goodput >= target."""
    limits = limits or inputs.limits
    objective = ObjectiveKind(objective)
    min_cost = objective == ObjectiveKind.min_cost
    check_limits(inputs, limits, objective, target_rps)  # an unpriced pool under min_cost or a budget: an error, not a blank $
    splits = combination_count(limits)
    if splits > MAX_COMBINATIONS:
        raise PlanInputError(
            f"{splits} instance-count combinations are too many for SLO planning "
            f"(at most {MAX_COMBINATIONS}); narrow the instance ranges",
            field="slo",
        )
    scv = inputs.latency.arrival_scv
    support = SupportArrays.of(inputs)
    coarse = coarse_indices(table, inputs.optimiser.coarse_thresholds)
    all_idx = np.arange(len(table))
    candidates = []
    for n_f, n_p, n_d, cost in count_combinations(inputs, limits):
        lam = bounds(table, all_idx, n_f, n_p, n_d, inputs).lambda_max
        candidates.append((float(lam.max()), n_f, n_p, n_d, cost, lam))
    if min_cost:  # the cheapest first (unpriced last), then the most throughput
        candidates.sort(key=lambda c: (c[4] if c[4] is not None else np.inf, -c[0]))
    else:
        candidates.sort(key=lambda c: -c[0])
    best: SloPlan | None = None

    @cache
    def idle_ok(k: int) -> bool:
        """Whether threshold k meets the SLO on an idle deployment (no queueing: prefill, transfer
        and the smallest decode batch only), which no instance count changes."""
        dep = Deployment(DeploymentName.prfaas_pd, float(table.thresholds_tokens[k]), 1, 1, 1)
        return LatencyModel(inputs, dep, decode, support).meets(IDLE_RATE_RPS, slo, scv)

    if not any(idle_ok(int(k)) for k in coarse):
        idle = [
            LatencyModel(
                inputs, Deployment(DeploymentName.prfaas_pd, float(table.thresholds_tokens[k]), 1, 1, 1), decode, support
            ).at(IDLE_RATE_RPS, scv)
            for k in coarse
        ]
        raise PlanInputError(f"no routing threshold meets it even on an idle deployment: {idle_misses(idle, slo)}", field="slo")

    def best_of(ks, n_f: int, n_p: int, n_d: int, lam: np.ndarray, cost, floor: float = 0.0) -> SloPlan | None:
        """The threshold of ``ks`` with the most goodput, the lowest one among equals (a max over
        them in rising order); with ``floor`` > 0 only one above it (None: none is). Only a threshold
        that could beat the best so far is bisected: its goodput is below its Lambda_max, and below
        any rate at which it misses the SLO (latency grows with the rate), so in falling order of
        Lambda_max one check at the best so far rules most out."""
        found = None
        for k in sorted((int(k) for k in ks if lam[int(k)] > 0), key=lambda k: (-lam[k], k)):
            m = max(floor, found.goodput_rps if found is not None else 0.0)
            if m > 0 and lam[k] <= m:
                break  # falling Lambda_max: none left can reach m
            dep = Deployment(DeploymentName.prfaas_pd, float(table.thresholds_tokens[k]), n_f, n_p, n_d)
            model = LatencyModel(inputs, dep, decode, support) if idle_ok(k) else None
            if model is not None and m > 0 and not model.meets(m, slo, scv):
                continue  # its goodput is below m
            good = 0.0 if model is None else goodput(model, slo, float(lam[k]), scv)
            if good <= floor and floor > 0:
                continue
            if found is None or good > found.goodput_rps or (good == found.goodput_rps and k < found.threshold_index):
                found = SloPlan(dep, k, good, float(lam[k]), cost)
        return found

    for top, n_f, n_p, n_d, cost, lam in candidates:
        if min_cost:
            if top < min_cost_target(target_rps) or (best is not None and (cost or 0.0) > (best.usd_per_hour or 0.0)):
                continue
        elif best is not None and top <= best.goodput_rps:
            break  # sorted by Lambda_max: nobody left can beat the best goodput
        pick = best_of(coarse, n_f, n_p, n_d, lam, cost)
        if pick is None:
            continue
        pos = int(np.searchsorted(coarse, pick.threshold_index))
        lo, hi = coarse[max(pos - 1, 0)], coarse[min(pos + 1, len(coarse) - 1)]
        fine = best_of(np.unique(np.linspace(lo, hi, 24).round()), n_f, n_p, n_d, lam, cost, floor=pick.goodput_rps)
        pick = fine if fine is not None and fine.goodput_rps > pick.goodput_rps else pick
        if min_cost:
            if pick.goodput_rps >= min_cost_target(target_rps) and (best is None or (cost or 0.0) < (best.usd_per_hour or 0.0)):
                best = pick
        elif best is None or pick.goodput_rps > best.goodput_rps:
            best = pick
    if best is None or best.goodput_rps <= 0:
        what = f"reaches {target_rps:g} req/s under it" if min_cost else "meets it at any rate"
        if min_cost:  # what the ranges and budgets can do under the SLO: the most goodput
            try:
                most = slo_optimise(inputs, table, decode, slo, limits=limits)
            except PlanInputError:
                most = None
            if most is not None:
                dep = most.deployment
                what += (
                    f": the most any serves is {most.goodput_rps:.3g} req/s "
                    f"(N_prfaas {dep.n_prfaas}, N_p {dep.n_p}, N_d {dep.n_d})"
                )
        raise PlanInputError(f"no deployment within the ranges and budgets {what}", field="slo")
    return best


def idle_misses(idle: list, slo) -> str:
    """What an idle deployment misses: for each target, the best any threshold reaches
    (``idle``: ``LatencyResult`` at an idle rate, one per threshold), where it is above the target."""
    figures = (
        ("TTFT P90", "ttft_p90_s", [r.overall_p90_s for r in idle], "s"),
        ("TTFT P99", "ttft_p99_s", [r.overall_p99_s for r in idle], "s"),
        ("TPOT", "tpot_ms", [r.tpot_ms if r.decode_batch is not None else math.inf for r in idle], "ms"),
    )
    said = [
        f"the best {what} is {min(values):.4g} {unit} against {field} {limit:g}"
        for what, field, values, unit in figures
        if (limit := getattr(slo, field)) is not None and min(values) > limit
    ]
    return "; ".join(said) or "each threshold misses one target or another (none meets them all at once)"


def best_plan(inputs: PlanInputs, table: ThresholdTable, decode: DecodeModel) -> tuple[Solution, float | None]:
    """The plan of the scenario's own objective and its SLO goodput (req/s): with an SLO, the
    deployment ``slo_optimise`` chooses; else ``optimise``'s operating point (no goodput)."""
    if inputs.slo is None:
        return optimise(inputs, table), None
    objective = inputs.objective
    chosen = slo_optimise(inputs, table, decode, inputs.slo, objective=objective.kind, target_rps=objective.target_rate_rps)
    k, dep = chosen.threshold_index, chosen.deployment
    sol = Solution(k, dep.threshold_tokens, dep.n_prfaas, dep.n_p, dep.n_d, chosen.lambda_max, chosen.usd_per_hour)
    return sol, chosen.goodput_rps
