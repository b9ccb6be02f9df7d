"""A prefix cache of blocks and state snapshots, replayed over requests in arrival order (issue 19).

Input (``BlockRequests``): per request, in arrival order, its input length L (tokens) and its
prefix block ids, one per ``block_tokens`` block (the last may be partial: ceil(L / B) ids),
as in Mooncake's ``hash_ids``. A block's identity is its whole prefix (the chain of ids up to
it), so equal ids at the same position after equal prefixes are the same KV.

Memory (``CacheGeometry``, from ``accounting.kv``): a block holds the full-attention KV of B
tokens, ``block_bytes`` = growing bytes per token x B (GQA, MLA, sparse layers). Linear-attention
and SWA layers hold a request-level state instead; a **snapshot** of it at prefix length l
costs fixed bytes + sum over SWA groups of bytes per token x min(l, window) and is what makes
that prefix resumable. A model without such layers is *dense*.

Rule (per request, before it is inserted):
- matched blocks m: the longest run of the request's blocks, from the first, that are cached;
- dense model: reusable blocks r = m;
- hybrid model: r = the deepest d <= m whose snapshot is cached and holds at most L - 1 tokens
  (d B <= L - 1; 0 if none): the longest cached prefix that ends at a kept snapshot short of the
  prompt's end. A linear-attention or SWA state cannot be wound back, so a snapshot at L (an
  exact repeat, or the end of the prompt's last block) is of no use: one token must still be
  computed for its logits;
- cached prefix = min(r B, L - 1) tokens (at least one token is computed: its logits start decode;
  a dense model's KV blocks are truncated to L - 1, a hybrid's r B is already below L).

After the lookup the request's blocks are cached and its snapshots are kept at the policy's
positions (``SnapshotPolicy``: every k blocks, at the request's end, or both) beyond r (its
prefill computes the state from r on; one before r it never computed). Eviction is LRU
(``Eviction.lru``) over blocks and snapshots together, by bytes: an entry used by a request
is touched from the request's end back to its start (a snapshot just before its block), so a
block is always more recent than the blocks and snapshots after it and a prefix is evicted from
its tail. Two tiers: HBM, and optionally host DRAM; an entry evicted from HBM moves to DRAM
(evicted from there, it is gone) and a hit in DRAM moves it back (``dram_hit_tokens``: the
cached prefix read from DRAM, whose transfer time is not modelled). One request is looked up
and inserted before the next (no overlap of requests in flight).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..accounting.kv import KvModel
from ..choices import Eviction, SnapshotPolicy
from ..errors import PlanInputError
from ..units import BYTES_PER_GIB


@dataclass(frozen=True)
class BlockRequests:
    """Requests in arrival order: block ids as one flat int64 array with offsets (request i owns
    ``block_ids[offsets[i]:offsets[i + 1]]``) and input lengths in tokens."""

    block_ids: np.ndarray
    offsets: np.ndarray
    input_tokens: np.ndarray

    @staticmethod
    def of(blocks: Sequence[Sequence[int]], input_tokens: Sequence[int]) -> BlockRequests:
        if len(blocks) != len(input_tokens):
            raise PlanInputError(f"{len(blocks)} block lists need as many input lengths, got {len(input_tokens)}")
        counts = np.array([len(b) for b in blocks], dtype=np.int64)
        flat = np.fromiter((i for b in blocks for i in b), dtype=np.int64, count=int(counts.sum()))
        return BlockRequests(flat, np.concatenate([[0], np.cumsum(counts)]), np.asarray(input_tokens, dtype=np.int64))

    def __len__(self) -> int:
        return int(self.input_tokens.size)

    def first_miscounted(self, block_tokens: int) -> int | None:
        """Index (arrival order) of the first request without ceil(L / B) >= 1 block ids; None: all have."""
        counts = np.diff(self.offsets)
        bad = np.flatnonzero((counts != -(-self.input_tokens // block_tokens)) | (self.input_tokens < 1))
        return int(bad[0]) if bad.size else None

    def miscount(self, i: int, block_tokens: int) -> str:
        """Why request ``i`` fails ``first_miscounted``."""
        count, length = int(self.offsets[i + 1] - self.offsets[i]), int(self.input_tokens[i])
        need = -(-length // block_tokens)
        return (
            f"{length} input tokens need ceil(L / {block_tokens}) = {need} block ids, got {count} "
            f"(block_tokens must be the trace's block size: 512 for Mooncake's)"
        )

    def check(self, block_tokens: int) -> None:
        """Each request has ceil(L / B) >= 1 block ids (``field``: the request's index)."""
        i = self.first_miscounted(block_tokens)
        if i is not None:
            raise PlanInputError(self.miscount(i, block_tokens), field=f"request {i}")


@dataclass(frozen=True)
class CacheGeometry:
    """Bytes of one block (full-attention KV of ``block_tokens`` tokens) and of a state snapshot."""

    block_tokens: int
    block_bytes: float
    state_fixed_bytes: float  # linear-attention states (conv + recurrent), per snapshot
    windows: tuple[tuple[int, float], ...] = ()  # (window tokens, bytes per token) per SWA group

    @staticmethod
    def of(kv: KvModel, block_tokens: int) -> CacheGeometry:
        return CacheGeometry(block_tokens, kv.growing_bytes_per_token * block_tokens, kv.fixed_bytes, kv.windows)

    @property
    def hybrid(self) -> bool:
        """Whether some layer keeps a request-level state (linear attention or SWA)."""
        return self.state_fixed_bytes > 0 or bool(self.windows)

    def snapshot_bytes(self, prefix_tokens: int) -> float:
        """Bytes of the state at ``prefix_tokens``: fixed + sum_w bytes per token x min(l, w)."""
        return self.state_fixed_bytes + sum(b * min(prefix_tokens, w) for w, b in self.windows)


@dataclass(frozen=True)
class CacheConfig:
    """One cluster's cache: its memory (bytes) per tier, its snapshot policy and eviction."""

    hbm_bytes: float
    dram_bytes: float = 0.0
    snapshots: SnapshotPolicy = SnapshotPolicy.every_k_blocks
    every_blocks: int = 1  # k of ``every_k_blocks`` (and of ``both``)
    eviction: Eviction = Eviction.lru

    @staticmethod
    def of_gib(hbm_gib: float, dram_gib: float = 0.0, **kw) -> CacheConfig:
        return CacheConfig(hbm_gib * BYTES_PER_GIB, dram_gib * BYTES_PER_GIB, **kw)

    def keeps(self, depth: int, n_blocks: int) -> bool:
        """Whether the policy keeps a snapshot at the end of block ``depth`` (1-based) of n."""
        at_k = self.snapshots != SnapshotPolicy.request_end and depth % self.every_blocks == 0
        at_end = self.snapshots != SnapshotPolicy.every_k_blocks and depth == n_blocks
        return at_k or at_end


@dataclass(frozen=True)
class CacheReplay:
    """Per request (arrays in arrival order) and in total, what a replay found."""

    input_tokens: np.ndarray
    blocks: np.ndarray  # block ids of each request
    matched_blocks: np.ndarray  # cached full-attention blocks from the start (any kind of model)
    reusable_blocks: np.ndarray  # of them, those up to the deepest kept snapshot (dense: all)
    cached_tokens: np.ndarray  # the reusable prefix, min(r B, L - 1)
    dram_hit_tokens: np.ndarray  # of the cached prefix, tokens whose blocks were in host DRAM
    snapshot_hits: int  # requests that resumed from a snapshot (hybrid)
    snapshots_kept: int  # snapshots added over the replay (one rewritten in place not counted again)
    snapshot_bytes_peak: float  # the most memory snapshots held at once (both tiers)
    snapshot_bytes_end: float
    evicted_bytes: float  # bytes dropped from the last tier
    hybrid: bool

    @property
    def cached_share(self) -> np.ndarray:
        """Cached prefix over input, per request (each in [0, 1))."""
        return self.cached_tokens / self.input_tokens

    @property
    def token_hit_rate(self) -> float:
        """Prefill tokens saved over input tokens."""
        return float(self.cached_tokens.sum() / self.input_tokens.sum())

    @property
    def block_hit_rate(self) -> float:
        """Full-attention blocks found cached over blocks looked up."""
        return float(self.matched_blocks.sum() / self.blocks.sum())

    @property
    def usable_block_share(self) -> float:
        """Matched blocks that the cached state snapshots make reusable (dense: 1)."""
        matched = self.matched_blocks.sum()
        return float(self.reusable_blocks.sum() / matched) if matched else 1.0


def replay(requests: BlockRequests, geometry: CacheGeometry, config: CacheConfig) -> CacheReplay:
    """Replay ``requests`` in order through one cluster's cache (rule: the module docstring)."""
    if config.eviction != Eviction.lru:
        raise PlanInputError(f"eviction {config.eviction} is not modelled (lru is)", field="eviction")
    requests.check(geometry.block_tokens)
    n = len(requests)
    B = geometry.block_tokens
    hybrid = geometry.hybrid
    tiers = (_Tier(config.hbm_bytes), _Tier(config.dram_bytes))
    chain: dict[tuple[int, int], int] = {}
    matched = np.zeros(n, dtype=np.int64)
    reusable = np.zeros(n, dtype=np.int64)
    dram_blocks = np.zeros(n, dtype=np.int64)
    state = {"snap_bytes": 0.0, "peak": 0.0, "evicted": 0.0, "kept": 0}
    snapshot_hits = 0
    ids_all = requests.block_ids.tolist()
    offsets = requests.offsets.tolist()
    lengths = requests.input_tokens.tolist()
    for r in range(n):
        ids = ids_all[offsets[r] : offsets[r + 1]]
        nodes = []
        parent = -1
        for b in ids:
            node = chain.setdefault((parent, b), len(chain))
            nodes.append(node)
            parent = node
        length = lengths[r]
        m = deep = in_dram = dram_at_deep = 0
        for d, node in enumerate(nodes, start=1):
            tier = _where(tiers, 2 * node)
            if tier < 0:
                break
            m = d
            in_dram += tier
            if hybrid and d * B < length and _where(tiers, 2 * node + 1) >= 0:  # a state short of L
                deep, dram_at_deep = d, in_dram
        if not hybrid:
            deep, dram_at_deep = m, in_dram
        elif deep:
            snapshot_hits += 1
        matched[r], reusable[r] = m, deep
        dram_blocks[r] = dram_at_deep
        for d in range(len(nodes), 0, -1):
            node = nodes[d - 1]
            if hybrid and (d == deep or (d > deep and config.keeps(d, len(nodes)))):
                if d > deep and _where(tiers, 2 * node + 1) < 0:  # a new snapshot (one at L is rewritten)
                    state["kept"] += 1
                _touch(tiers, 2 * node + 1, geometry.snapshot_bytes(min(d * B, length)), state)
            _touch(tiers, 2 * node, geometry.block_bytes, state)
        _fit(tiers, state)
    cached = np.minimum(reusable * B, requests.input_tokens - 1)
    dram_tokens = np.minimum(dram_blocks * B, cached)
    return CacheReplay(
        requests.input_tokens,
        np.diff(requests.offsets),
        matched,
        reusable,
        cached,
        dram_tokens,
        snapshot_hits,
        int(state["kept"]),
        float(state["peak"]),
        float(state["snap_bytes"]),
        float(state["evicted"]),
        hybrid,
    )


class _Tier:
    """One memory tier: entries (key -> bytes) in LRU order (first: least recent)."""

    __slots__ = ("capacity", "entries", "used")

    def __init__(self, capacity_bytes: float) -> None:
        self.capacity = capacity_bytes
        self.entries: OrderedDict[int, float] = OrderedDict()
        self.used = 0.0


def _where(tiers: tuple[_Tier, _Tier], key: int) -> int:
    """0: in HBM, 1: in DRAM, -1: not cached."""
    if key in tiers[0].entries:
        return 0
    return 1 if key in tiers[1].entries else -1


def _touch(tiers: tuple[_Tier, _Tier], key: int, size: float, state: dict) -> None:
    """Make ``key`` (odd: a snapshot) the most recent HBM entry."""
    hbm, dram = tiers
    old = hbm.entries.get(key)
    if old is not None:
        hbm.entries.move_to_end(key)
        hbm.used -= old
    else:
        old = dram.entries.pop(key, None)
        if old is not None:
            dram.used -= old
    hbm.entries[key] = size
    hbm.used += size
    if key & 1:
        state["snap_bytes"] += size - (old or 0.0)


def _fit(tiers: tuple[_Tier, _Tier], state: dict) -> None:
    """Demote HBM's least recent entries to DRAM, then drop DRAM's, until each tier fits."""
    hbm, dram = tiers
    while hbm.used > hbm.capacity and hbm.entries:
        k, b = hbm.entries.popitem(last=False)
        hbm.used -= b
        dram.entries[k] = b
        dram.used += b
    while dram.used > dram.capacity and dram.entries:
        k, b = dram.entries.popitem(last=False)
        dram.used -= b
        state["evicted"] += b
        if k & 1:
            state["snap_bytes"] -= b
    state["peak"] = max(state["peak"], state["snap_bytes"])
