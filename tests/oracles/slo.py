"""The SLO search as it was before its pruning (every coarse threshold of every count bisected,
then every fine one around the best): the oracle ``planner.slo.slo_optimise`` must equal exactly,
same counts, same threshold, same goodput (``tests/test_latency.py``)."""

from __future__ import annotations

import numpy as np

from prfaas_plan.choices import DeploymentName
from prfaas_plan.planner.deployment import Deployment
from prfaas_plan.planner.latency import LatencyModel, SupportArrays
from prfaas_plan.planner.optimizer import coarse_indices, count_combinations, min_cost_target
from prfaas_plan.planner.slo import IDLE_RATE_RPS, SloPlan, goodput
from prfaas_plan.planner.throughput import bounds


def unpruned_slo_optimise(inputs, table, decode, slo, min_cost: bool = False, target_rps: float | None = None):
    """The best SloPlan by the unpruned search (None: none meets the SLO, or none reaches the target)."""
    scv, support = inputs.latency.arrival_scv, SupportArrays.of(inputs)
    coarse = coarse_indices(table, inputs.optimiser.coarse_thresholds)
    everything = np.arange(len(table))
    candidates = []
    for n_f, n_p, n_d, cost in count_combinations(inputs, inputs.limits):
        lam = bounds(table, everything, n_f, n_p, n_d, inputs).lambda_max
        candidates.append((float(lam.max()), n_f, n_p, n_d, cost, lam))
    if min_cost:
        candidates.sort(key=lambda c: (c[4] if c[4] is not None else np.inf, -c[0]))
    else:
        candidates.sort(key=lambda c: -c[0])

    def evaluate(k, n_f, n_p, n_d, lam, cost):
        dep = Deployment(DeploymentName.prfaas_pd, float(table.thresholds_tokens[k]), n_f, n_p, n_d)
        idle = Deployment(DeploymentName.prfaas_pd, float(table.thresholds_tokens[k]), 1, 1, 1)
        ok = LatencyModel(inputs, idle, decode, support).meets(IDLE_RATE_RPS, slo, scv)
        good = goodput(LatencyModel(inputs, dep, decode, support), slo, float(lam[k]), scv) if ok else 0.0
        return SloPlan(dep, k, good, float(lam[k]), cost)

    best = None
    for top, n_f, n_p, n_d, cost, lam in candidates:
        if min_cost:
            if top < min_cost_target(target_rps) or (best is not None and (cost or 0.0) > (best.usd_per_hour or 0.0)):
                continue
        elif best is not None and top <= best.goodput_rps:
            break
        scored = [evaluate(int(k), n_f, n_p, n_d, lam, cost) for k in coarse if lam[k] > 0]
        if not scored:
            continue
        pick = max(scored, key=lambda s: s.goodput_rps)
        pos = int(np.searchsorted(coarse, pick.threshold_index))
        lo, hi = coarse[max(pos - 1, 0)], coarse[min(pos + 1, len(coarse) - 1)]
        fine = [evaluate(int(k), n_f, n_p, n_d, lam, cost) for k in np.unique(np.linspace(lo, hi, 24).round()) if lam[int(k)] > 0]
        pick = max([pick, *fine], key=lambda s: s.goodput_rps)
        if min_cost:
            if pick.goodput_rps >= min_cost_target(target_rps) and (best is None or (cost or 0.0) < (best.usd_per_hour or 0.0)):
                best = pick
        elif best is None or pick.goodput_rps > best.goodput_rps:
            best = pick
    return None if best is None or best.goodput_rps <= 0 else best
