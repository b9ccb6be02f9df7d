"""Both clusters' prefix caches replayed over one trace: the joint (L, h, g) per request (issue 19).

Each cluster's cache (``workload.prefix_cache.replay``) sees every request of the trace in
arrival order: the PD cluster holds the KV of every request it decodes, offloaded or not; for
PrfaaS, which prefills only the offloaded requests, this is an upper bound (which requests it
sees depends on the threshold the plan chooses). A cluster without a cache has h = 0. The
result is one class per request (``cluster_cache.RequestPrefixes``), which the planner routes
under either rule (``cluster_cache.routed_points``: scarce, each cluster's own cache;
plentiful, the best cache anywhere, cached KV moved across the link and counted as egress),
and which a request-level router can read (``pd_cached_tokens``, ``prfaas_cached_tokens``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..accounting.kv import KvModel
from ..choices import CacheRegime
from ..units import BYTES_PER_GIB
from .block_trace import block_requests
from .cluster_cache import ClusterCaches, HitDistribution, RequestPrefixes
from .distributions import empirical
from .prefix_cache import BlockRequests, CacheConfig, CacheGeometry, CacheReplay, replay

if TYPE_CHECKING:
    from .traces import Trace


@dataclass(frozen=True)
class TraceCaches:
    """The replays of the PD and PrfaaS caches (None: that cluster has no cache)."""

    requests: BlockRequests
    geometry: CacheGeometry
    pd: CacheReplay | None
    prfaas: CacheReplay | None

    def cached_tokens(self, cluster: str) -> np.ndarray:
        """Per request, the cluster's reusable prefix in tokens (0 without a cache)."""
        rep = getattr(self, cluster)
        return np.zeros(len(self.requests), dtype=np.int64) if rep is None else rep.cached_tokens

    def prefixes(self) -> RequestPrefixes:
        return RequestPrefixes(self.requests.input_tokens, self.cached_tokens("pd"), self.cached_tokens("prfaas"), summary(self))

    def cluster_caches(self, regime: CacheRegime) -> ClusterCaches:
        """The planner's caches: one class per request, each of weight 1 / n."""
        lengths = self.requests.input_tokens
        ones = np.ones(lengths.size)
        pd, prfaas = (HitDistribution.of(self.cached_tokens(c) / lengths, ones) for c in ("pd", "prfaas"))
        return ClusterCaches(empirical(lengths), pd, prfaas, regime, self.prefixes())


def replay_clusters(
    requests: BlockRequests, geometry: CacheGeometry, pd: CacheConfig | None, prfaas: CacheConfig | None
) -> TraceCaches:
    """Replay the trace through each cluster's cache."""
    return TraceCaches(
        requests,
        geometry,
        None if pd is None else replay(requests, geometry, pd),
        None if prfaas is None else replay(requests, geometry, prfaas),
    )


def summary(caches: TraceCaches) -> dict:
    """Per cluster with a cache: hit rates by kind and the memory its snapshots took.

    ``token_hit_rate``: prefill tokens saved / input tokens; ``block_hit_rate``: full-attention
    blocks found / blocks looked up; ``usable_block_share``: matched blocks that a kept snapshot
    makes reusable (1 for a dense model); ``snapshot_hit_rate``: requests resuming from a snapshot
    / requests with a matched block (hybrid); memory in GiB (2^30 bytes)."""
    out: dict = {"block_tokens": caches.geometry.block_tokens, "hybrid": caches.geometry.hybrid}
    for name in ("pd", "prfaas"):
        rep: CacheReplay | None = getattr(caches, name)
        if rep is None:
            continue
        with_match = int(np.count_nonzero(rep.matched_blocks))
        out[name] = {
            "requests": int(rep.input_tokens.size),
            "token_hit_rate": rep.token_hit_rate,
            "block_hit_rate": rep.block_hit_rate,
            "usable_block_share": rep.usable_block_share,
            "snapshot_hit_rate": (rep.snapshot_hits / with_match if with_match else 0.0) if rep.hybrid else None,
            "prefill_tokens_saved": int(rep.cached_tokens.sum()),
            "dram_hit_tokens": int(rep.dram_hit_tokens.sum()),
            "snapshots_kept": rep.snapshots_kept,
            "snapshot_gib_peak": rep.snapshot_bytes_peak / BYTES_PER_GIB,
            "evicted_gib": rep.evicted_bytes / BYTES_PER_GIB,
        }
    return out


def caches_from_trace(spec, trace: Trace, kv: KvModel, regime: CacheRegime) -> ClusterCaches:
    """The cluster caches of a validated ``cluster_caches.from_trace`` spec
    (``profiles.scenario.TraceCacheSpec``) over its Mooncake ``trace`` (read by
    ``workload.trace_cache.spec_trace`` at ``trace_path(spec.path, scenario file)``) for a model
    whose KV is ``kv``."""
    requests = block_requests(trace, spec.block_tokens)
    geometry = CacheGeometry.of(kv, spec.block_tokens)
    policy = {"snapshots": spec.snapshots.policy, "every_blocks": spec.snapshots.every_blocks, "eviction": spec.eviction}
    configs = (None if c is None else CacheConfig.of_gib(c.hbm_gib, c.dram_gib, **policy) for c in (spec.pd, spec.prfaas))
    return replay_clusters(requests, geometry, *configs).cluster_caches(regime)
