"""Cache-aware routing: prefix caches in both clusters (the paper's conclusion; issue 10).

A request has a full input of L tokens and cached prefix shares h in the PD cluster and g in
the PrfaaS cluster, independent of L and of each other, each from its own discrete
distribution (a cluster without a cache: h = 0). Per request, in tokens:

- **scarce** bandwidth (the link is the constraint): each cluster's own cache decides.
  Route on L (1 - h): offload iff it exceeds t. Locally PD computes L (1 - h); remotely
  PrfaaS computes L (1 - g) (from its own prefix) and ships the KV of the L (1 - h) tokens
  the PD cluster lacks. A local request sends nothing over the link.
- **plentiful** bandwidth (compute is the constraint): the best cache anywhere counts,
  l_prefix = L max(h, g). Route on L - l_prefix; the cluster that prefills computes
  L - l_prefix. An offloaded request ships the KV of the L (1 - h) tokens the PD cluster
  lacks (PrfaaS takes a longer PD prefix over the other direction, which the PrfaaS egress
  link does not carry); a local request whose PrfaaS prefix is longer receives the KV of the
  L (g - h) tokens in between over the link: cache moved across the link, counted as egress.

``routed_points`` gives, per (L, h, g) combination, the routing length, the tokens each
cluster computes and the tokens whose KV crosses the link either way; the throughput model
(``planner.throughput``) turns them into seconds and bytes with the pools' curves. Lengths
are rounded to whole tokens (at least 1 computed token).

A replayed trace (``workload.trace_caches``) gives (L, h, g) jointly, one class per request
(``RequestPrefixes``): then the classes are the requests, each of weight 1 / n, instead of
the product of independent distributions, and each class remembers its request
(``RoutedPoints.request_of``), so that a replay of that trace (``simulate.replay``) routes each
request, in arrival order, on its own class.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..choices import CacheRegime
from ..errors import PlanInputError
from ..ranges import MAX_SUPPORT_POINTS
from .distributions import LengthDistribution, _merged


@dataclass(frozen=True)
class HitDistribution:
    """Cached prefix shares (each in [0, 1)) and their probabilities (sum 1)."""

    shares: np.ndarray
    probs: np.ndarray

    @staticmethod
    def of(hit_fractions, probs) -> HitDistribution:
        shares = np.asarray(hit_fractions, dtype=float)
        weights = np.asarray(probs, dtype=float)
        return HitDistribution(shares, weights / weights.sum())

    @staticmethod
    def none() -> HitDistribution:
        return HitDistribution(np.zeros(1), np.ones(1))

    @property
    def mean_share(self) -> float:
        return float(self.shares @ self.probs)


@dataclass(frozen=True)
class RequestPrefixes:
    """Per request of a trace: input length and cached prefix in each cluster, in tokens."""

    input_tokens: np.ndarray
    pd_cached_tokens: np.ndarray
    prfaas_cached_tokens: np.ndarray
    summary: dict  # hit rates by cluster and kind, snapshot memory (``trace_caches.summary``)


@dataclass(frozen=True)
class ClusterCaches:
    full_input: LengthDistribution
    pd: HitDistribution
    prfaas: HitDistribution
    regime: CacheRegime  # auto: the planner chooses (planner.chips)
    requests: RequestPrefixes | None = None  # joint (L, h, g) per request: used in place of the product


@dataclass(frozen=True)
class RoutedPoints:
    """Per (L, h, g) combination (ascending routing length), in tokens; ``probs`` sum to 1."""

    regime: CacheRegime
    route_tokens: np.ndarray
    probs: np.ndarray
    prfaas_tokens: np.ndarray  # computed by PrfaaS when offloaded
    pd_tokens: np.ndarray  # computed by PD-P when local
    offload_kv_tokens: np.ndarray  # tokens whose KV PrfaaS ships for an offloaded request
    local_kv_tokens: np.ndarray  # tokens of cached KV PrfaaS ships for a local request (0: none)
    request_of: np.ndarray | None = None  # a trace's joint: the request (arrival order) each class is

    def routing_distribution(self) -> LengthDistribution:
        return _merged(self.route_tokens, self.probs)

    def classes_of(self, requests: np.ndarray) -> np.ndarray:
        """The class index of each of ``requests`` (indices in the trace's arrival order), for a
        replay that routes each request on its own cached prefixes; only a trace's joint has them."""
        if self.request_of is None:
            raise PlanInputError(
                "a replay routes each request on its own cached prefixes: give them with cluster_caches.from_trace",
                field="workload.cluster_caches",
            )
        rank = np.empty(self.request_of.size, dtype=np.int64)
        rank[self.request_of] = np.arange(self.request_of.size)
        return rank[requests]


def routed_points(caches: ClusterCaches, regime: CacheRegime) -> RoutedPoints:
    """The request classes of one regime (see the module docstring)."""
    if regime == CacheRegime.auto:
        raise PlanInputError("a regime must be chosen (scarce or plentiful)", field="workload.cluster_caches.regime")
    full = caches.full_input
    joint = caches.requests
    size = joint.input_tokens.size if joint else full.lengths_tokens.size * caches.pd.shares.size * caches.prfaas.shares.size
    if size > MAX_SUPPORT_POINTS:
        raise PlanInputError(
            f"{size:,} (length, PD hit, PrfaaS hit) combinations, more than {MAX_SUPPORT_POINTS:,}: "
            "use fewer hit fractions or a coarser workload",
            field="workload.cluster_caches",
        )
    if joint is not None:
        length = joint.input_tokens.astype(float)
        h, g = joint.pd_cached_tokens / length, joint.prfaas_cached_tokens / length
        prob = np.full(length.size, 1.0 / length.size)
    else:
        length = full.lengths_tokens[:, None, None]
        h = caches.pd.shares[None, :, None]
        g = caches.prfaas.shares[None, None, :]
        prob = full.probs[:, None, None] * caches.pd.probs[None, :, None] * caches.prfaas.probs[None, None, :]
    shape = np.broadcast_shapes(length.shape, h.shape, g.shape)
    pd_missing = np.broadcast_to(np.maximum(np.round(length * (1 - h)), 1.0), shape)
    if regime == CacheRegime.scarce:
        route = pd_missing
        prfaas = np.broadcast_to(np.maximum(np.round(length * (1 - g)), 1.0), shape)
        local_pd = pd_missing
        local_kv = np.zeros(shape)
    else:
        best = np.maximum(np.round(length * (1 - np.maximum(h, g))), 1.0)
        route = prfaas = local_pd = np.broadcast_to(best, shape)
        local_kv = np.broadcast_to(np.round(length * np.maximum(g - h, 0.0)), shape)
    arrays = [np.ravel(a).astype(float) for a in (route, np.broadcast_to(prob, shape), prfaas, local_pd, pd_missing, local_kv)]
    keep = arrays[1] > 0
    order = np.argsort(arrays[0][keep], kind="stable")
    route, prob, prfaas, local_pd, offload_kv, local_kv = (a[keep][order] for a in arrays)
    request_of = np.flatnonzero(keep)[order] if joint is not None else None
    return RoutedPoints(regime, route, prob / prob.sum(), prfaas, local_pd, offload_kv, local_kv, request_of)
