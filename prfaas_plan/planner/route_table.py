"""The routing table a bandwidth-aware router loads (the paper's short-term scheduling,
PRFAAS.md section 3.4.3).

For each available (usable) link bandwidth B on a grid, the threshold t(B) a router should
use with the plan's instance counts: the t with the largest Lambda_max at B and, among ties,
the balance point of eq. 7 (the largest min(PrfaaS bound, PD-P bound)), the optimiser's own
rule, so that at the scenario's usable bandwidth the table gives the plan's t. As B falls the
link bound of every offloading threshold falls with it, so t(B) rises (fewer, longer
requests are offloaded) until nothing is; where nothing can be offloaded (B = 0, or no PrfaaS
instance) or nothing is served, everything stays local (p = 0), never t = 0 onto a dead link.
A router reads the row of the largest bandwidth at or below the one it measures and sends a
request to PrfaaS when its uncached input exceeds that row's threshold. Rows above the
scenario's usable bandwidth are marked ``beyond_link``: what the counts would do on a wider
link, not bandwidth the provisioned link gives.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..choices import Bound, CacheRegime
from ..errors import PlanInputError
from ..study.model import PlanInputs
from ..units import bytes_per_s_to_gbps, gbps_to_bytes_per_s
from .optimizer import Solution
from .throughput import TIE_REL, ThresholdTable, best_thresholds, bounds, threshold_table


@dataclass(frozen=True)
class RouteRow:
    usable_gbps: float  # available bandwidth for KV, decimal Gbps
    threshold_tokens: float  # offload a request whose uncached input exceeds this
    p: float  # share of requests offloaded
    lambda_max_rps: float  # sustainable rate with the plan's counts at this bandwidth
    egress_gbps: float  # KV egress at that rate
    binding: Bound
    planned: bool  # the scenario's own usable bandwidth
    cache_regime: str | None = None  # with cluster caches: the regime this row routes by
    beyond_link: bool = False  # above the scenario's usable bandwidth: a what-if, not a router's row


def default_grid(inputs: PlanInputs, points: int = 33) -> np.ndarray:
    """0, then ``points - 1`` bandwidths spaced geometrically from 1% to twice the usable bandwidth,
    and the usable bandwidth itself (decimal Gbps)."""
    usable = inputs.link.usable_gbps
    if usable <= 0:
        return np.array([0.0])
    return np.unique(np.concatenate(([0.0, usable], np.geomspace(usable / 100, 2 * usable, max(points - 1, 1)))))


def route_table(inputs: PlanInputs, table: ThresholdTable, sol: Solution, usable_gbps: np.ndarray) -> list[RouteRow]:
    """The routing table over ``usable_gbps`` (see the module docstring), ascending. With cluster
    caches whose regime the planner chooses (``regime: auto``), each bandwidth routes by the
    better of the scarce and plentiful rules (the plan's own regime wins ties), named per row."""
    grid = np.unique(np.asarray(usable_gbps, dtype=float))
    if grid.size == 0 or np.any(~np.isfinite(grid)) or np.any(grid < 0):
        raise PlanInputError("bandwidths must be finite and >= 0", field="usable_gbps")
    caches, routed = inputs.workload.caches, inputs.workload.routed
    if caches is None or caches.regime != CacheRegime.auto:
        return _rows(inputs, table, sol, grid, None if routed is None else str(routed.regime))
    assert routed is not None  # a workload with caches is routed when resolved (study.resolve, Workload.with_cache_regime)
    own = routed.regime
    per_regime = [_rows(inputs, table, sol, grid, str(own))]
    for regime in (CacheRegime.scarce, CacheRegime.plentiful):
        if regime != own:
            other = inputs.with_cache_regime(regime)
            per_regime.append(_rows(other, threshold_table(other, table.mode), sol, grid, str(regime)))
    return [
        max(options, key=lambda r: r.lambda_max_rps * (1 + TIE_REL * (r.cache_regime == own))) for options in zip(*per_regime)
    ]


def _rows(inputs: PlanInputs, table: ThresholdTable, sol: Solution, grid: np.ndarray, regime: str | None) -> list[RouteRow]:
    link = np.array([gbps_to_bytes_per_s(float(g)) for g in grid])
    pick, lam = best_thresholds(table, inputs, sol.n_prfaas, sol.n_p, sol.n_d, link)
    planned = inputs.link.usable_gbps
    return [
        RouteRow(
            float(g),
            float(table.thresholds_tokens[k]),
            float(table.p[k]),
            float(value),
            bytes_per_s_to_gbps(float(value) * float(table.link_work_bytes[k])),
            bounds(table, int(k), sol.n_prfaas, sol.n_p, sol.n_d, inputs, link_bytes_per_s=float(bps)).binding(),
            bool(np.isclose(g, planned, rtol=1e-12, atol=0)),
            regime,
            bool(g > planned * (1 + 1e-12)),
        )
        for g, k, value, bps in zip(grid, pick, lam, link)
    ]
