"""Decode: the step time (TPOT) at a batch, the memory-limited batch, and tokens/s of one instance.

On a layout (``timing.layout``) an instance of R replicas holds B running requests, B / R per
replica, spread over the ``dp_attention`` groups of each stage. A replica of ``pp`` stages
keeps ``pp`` micro-batches of B / (R pp) requests in flight, so that every stage is busy (with
fewer requests than stages, each request is a micro-batch of its own and stages idle):

    stage_s(b)   one micro-batch of b requests through one stage (``timing.cost.stage_cost`` of
                 ``accounting.work.decode_work``: weights once per step, each request's KV and
                 state at the context, collectives, kernel overheads, a hop); with multi-token
                 prediction each request runs ceil(mtp) query tokens (FLOPs x ceil(mtp), KV once)
    TPOT(B)      = pp x stage_s(max(B / (R pp), min(B / R, 1))) + decode_step_overhead_s
                 + the engine's step_overhead_s (added: the chip's figure stays the stack's base)
    tokens/s     = B x mtp_tokens_per_step / TPOT(B)                       (per instance)
    per user     = mtp_tokens_per_step / TPOT(B)

Memory: a chip holds its share of the weights and, for the requests of its attention group,
their KV at the context (``timing.cost.weights_per_chip``, ``kv_per_chip``), so
BS_max = R x dp_attention x floor((usable per chip - weights per chip) / KV per chip per request).
The batch is BS_max, at most ``max_batch`` (default: the engine profile's limit per attention group
x dp_attention x R, ``Engine.max_batch``; none for generic) and ``ranges.DECODE_BATCH``; a TPOT limit lowers it
to the largest B with TPOT(B) <= limit (TPOT never falls as B grows, so a bisection finds it).
Without a given layout, the fitting layout with the most tokens/s (within the TPOT limit) wins.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

import numpy as np

from ..accounting.work import decode_work, prefill_work
from ..choices import CurveSource, DecodeLimit
from ..errors import PlanInputError
from ..profiles.model import ModelProfile
from ..ranges import DECODE_BATCH, TPOT_MS
from . import shipped
from .cost import PassCost, kv_per_chip, stage_cost, weights_per_chip
from .instance import Instance
from .layout import Layout
from .memory import fitting_layouts, usable_per_chip
from .prefill import check_lengths, measured_for


def step_cost(
    model: ModelProfile, instance: Instance, layout: Layout, batch_sizes, context_tokens: float
) -> tuple[np.ndarray, PassCost]:
    """(TPOT in seconds, the time of one step split into parts) at each instance batch size."""
    b = np.atleast_1d(np.asarray(batch_sizes, dtype=float))
    per_replica = b / layout.replicas
    # pp micro-batches in flight; with fewer requests than stages each is its own micro-batch
    micro = np.maximum(np.maximum(per_replica / layout.pp, np.minimum(per_replica, 1.0)), 1e-9)
    stage = stage_cost(
        model,
        instance.hardware,
        layout,
        instance.engine,
        _step_work(model, micro, context_tokens, instance.engine.mtp_tokens_per_step),
    )
    parts = stage.scaled(layout.pp)
    # the chip's fixed cost per step, and the engine's own on top (its profile's step_overhead_s; generic 0)
    overhead = instance.hardware.efficiency.decode_step_overhead_s + instance.engine.step_overhead_s
    parts = PassCost(
        parts.compute_s, parts.memory_s, parts.communication_s, parts.overhead_s + overhead, parts.scale_up_bytes, parts.nic_bytes
    )
    return parts.total_s, parts


def _step_work(model: ModelProfile, micro: np.ndarray, context_tokens: float, mtp: float):
    """The work of one step for ``micro`` requests: with multi-token prediction each request runs
    q = ceil(mtp) query tokens (the fewest a step must verify to accept mtp on average), so the
    FLOPs, activations and collectives scale by q while each request's KV is still read once."""
    q = math.ceil(mtp - 1e-9)
    groups = decode_work(model, micro * q, context_tokens)
    if q == 1:
        return groups
    return [(count, replace(w, kv_bytes=w.kv_bytes / q)) for count, w in groups]


def decode_step_s(
    model: ModelProfile, instance: Instance, batch_sizes, context_tokens: float, layout: Layout | None = None
) -> np.ndarray:
    """TPOT (seconds per step) for each instance batch size, every request at ``context_tokens``,
    on ``layout`` (default: the instance's, or the best decode layout at the largest batch)."""
    layout = layout or decode_layout(model, instance, int(context_tokens))
    seconds, _ = step_cost(model, instance, layout, batch_sizes, context_tokens)
    return seconds


def memory_batch(model: ModelProfile, instance: Instance, layout: Layout, context_tokens: int) -> tuple[int, float, float]:
    """(BS_max from memory, weight bytes per chip, KV bytes per chip per request) on a layout."""
    groups = prefill_work(model, [float(context_tokens)])
    weights = weights_per_chip(model, layout, groups)
    kv = float(kv_per_chip(layout, groups, model)[0])
    per_group = int((usable_per_chip(instance) - weights) // kv) if kv > 0 else int(DECODE_BATCH.hi)
    return max(per_group, 0) * layout.dp_attention * layout.replicas, weights, kv


def _largest_within(fn, cap: int, limit: float) -> int:
    """Largest b in [1, cap] with fn(b) <= limit for a non-decreasing fn (0 if fn(1) > limit)."""
    if fn(1) > limit:
        return 0
    lo, hi = 1, cap
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fn(mid) <= limit:
            lo = mid
        else:
            hi = mid - 1
    return lo


@dataclass(frozen=True)
class DecodeCapacity:
    model: str
    instance: str
    context_tokens: int
    weight_bytes: float  # per chip
    kv_bytes_per_request: float  # per chip that holds the request
    usable_memory_bytes: float  # per chip
    bs_max_memory: int
    batch_size: int
    limited_by: DecodeLimit
    step_s: float
    tokens_per_s: float  # per instance, output tokens
    source: str  # 'roofline' or 'measured'
    layout: Layout
    cost: PassCost  # the step at the batch, split into parts
    mtp_tokens_per_step: float = 1.0
    hardware: str = ""  # the hardware profile's name (``instance`` is its label, e.g. 8xh200)
    gpus: int = 0  # chips per instance

    @property
    def tpot_ms(self) -> float:
        """Milliseconds per output token of one request (a step over the tokens it accepts)."""
        return self.step_s / self.mtp_tokens_per_step * 1e3

    @property
    def per_user_tokens_per_s(self) -> float:
        return self.mtp_tokens_per_step / self.step_s


def _at_layout(
    model: ModelProfile,
    instance: Instance,
    layout: Layout,
    context: int,
    tpot_ms: float | None,
    max_batch: int | None,
    reserve: int | None = None,
) -> tuple[int, int, DecodeLimit, float, float]:
    """(batch, BS_max, limit, weights per chip, KV per chip) of one layout; batch 0 when nothing fits.
    Memory holds each request's KV at ``reserve`` tokens (default: the context)."""
    bs_mem, weights, kv = memory_batch(model, instance, layout, reserve or context)
    if max_batch is None and instance.engine.max_batch is not None:  # the engine's limit, per scheduling rank
        max_batch = instance.engine.max_batch * layout.dp_attention * layout.replicas
    cap = min(bs_mem, int(DECODE_BATCH.hi) if max_batch is None else max_batch)
    limited_by = DecodeLimit.memory if cap == bs_mem else DecodeLimit.max_batch
    if cap < 1 or tpot_ms is None:
        return cap, bs_mem, limited_by, weights, kv
    mtp = instance.engine.mtp_tokens_per_step

    def tpot(b: int) -> float:
        return float(step_cost(model, instance, layout, [b], context)[0][0]) / mtp * 1e3

    best = _largest_within(tpot, cap, tpot_ms)
    return best, bs_mem, (limited_by if best == cap else DecodeLimit.tpot), weights, kv


def decode_layout(
    model: ModelProfile,
    instance: Instance,
    context_tokens: int,
    tpot_ms: float | None = None,
    max_batch: int | None = None,
    reserve_tokens: int | None = None,
) -> Layout:
    """The instance's layout, or the fitting layout with the most decode tokens/s (a shipped model
    on a shipped instance: read from ``timing.shipped``)."""
    if instance.layout is not None:
        return fitting_layouts(model, instance, reserve_tokens or context_tokens)[0]
    key = shipped.key_of(
        [
            shipped.profile_key(model),
            shipped.profile_key(instance.hardware),
            instance.gpus,
            repr(instance.engine),
            context_tokens,
            tpot_ms,
            max_batch,
            reserve_tokens,
        ]
    )
    known = shipped.lookup("decode_layouts", key)
    if known is not None:
        return Layout(**known)
    found = _search_decode_layout(model, instance, context_tokens, tpot_ms, max_batch, reserve_tokens)
    shipped.record("decode_layouts", key, asdict(found))
    return found


def _search_decode_layout(
    model: ModelProfile,
    instance: Instance,
    context_tokens: int,
    tpot_ms: float | None,
    max_batch: int | None,
    reserve_tokens: int | None,
) -> Layout:
    layouts = fitting_layouts(model, instance, reserve_tokens or context_tokens)
    if len(layouts) == 1:
        return layouts[0]
    best, best_rate = layouts[0], -1.0
    for layout in layouts:
        batch = _at_layout(model, instance, layout, context_tokens, tpot_ms, max_batch, reserve_tokens)[0]
        if batch < 1:
            continue
        rate = batch / float(step_cost(model, instance, layout, [batch], context_tokens)[0][0])
        if rate > best_rate:
            best, best_rate = layout, rate
    return best


def decode_capacity(
    model: ModelProfile,
    instance: Instance,
    context_tokens: int,
    tpot_ms: float | None = None,
    max_batch: int | None = None,
    source: str = CurveSource.auto,
    batch: int | None = None,
    reserve_tokens: int | None = None,
) -> DecodeCapacity:
    """Largest sustainable decode batch of one instance and its throughput (or, with ``batch``,
    the throughput at that many running requests, which must fit in memory). The batch is at
    most ``max_batch`` and never above ``ranges.DECODE_BATCH`` (100,000 running requests).
    Steps read each request's KV at ``context_tokens``; memory holds it at ``reserve_tokens``
    (default: the context; an engine that never evicts reserves the input plus the whole output)."""
    check_lengths(model, [reserve_tokens or context_tokens], field="context")
    if tpot_ms is not None:
        TPOT_MS.check(tpot_ms, "tpot_ms")
    for value, name in ((max_batch, "max_batch"), (batch, "concurrency")):
        if value is not None:
            DECODE_BATCH.check(value, name)
    layout = decode_layout(model, instance, context_tokens, tpot_ms, max_batch, reserve_tokens)
    best, bs_mem, limited_by, weights, kv = _at_layout(
        model, instance, layout, context_tokens, tpot_ms, max_batch, reserve_tokens
    )
    if bs_mem < 1:
        raise PlanInputError(
            f"{model.name} on {instance.label} as {layout.label} leaves no memory for the KV of one "
            f"request at {reserve_tokens or context_tokens:,} tokens",
            field="gpus",
        )
    if best < 1:  # the fastest a request can go on any layout that fits (the chosen one is a fallback here)
        fits = [layout] if instance.layout is not None else fitting_layouts(model, instance, reserve_tokens or context_tokens)
        one = min(float(step_cost(model, instance, each, [1], context_tokens)[0][0]) for each in fits) * 1e3
        raise PlanInputError(
            f"TPOT limit {tpot_ms:g} ms is unreachable on {instance.label}: a batch of 1 takes {one:.2f} ms per step",
            field="tpot_ms",
        )
    if batch is not None:
        if batch > bs_mem:
            raise PlanInputError(
                f"{batch:,} running requests at {reserve_tokens or context_tokens:,} tokens do not fit "
                f"{instance.label} "
                f"as {layout.label} (at most {bs_mem:,}; more chips per instance hold more: `gpus`)",
                field="concurrency",
            )
        best, limited_by = batch, DecodeLimit.max_batch
    seconds, parts = step_cost(model, instance, layout, [best], context_tokens)
    step = float(seconds[0])
    mtp = instance.engine.mtp_tokens_per_step
    if batch is not None and tpot_ms is not None and step / mtp * 1e3 > tpot_ms * (1 + 1e-9):
        raise PlanInputError(
            f"{batch:,} running requests take {step / mtp * 1e3:.2f} ms per output token on "
            f"{instance.label} as {layout.label}, above the TPOT limit of {tpot_ms:g} ms: give "
            "fewer, or leave the concurrency out to get the largest batch within the limit",
            field="concurrency",
        )
    tokens_per_s, used = best * mtp / step, "roofline"
    measured = measured_for(model, instance) if source != CurveSource.roofline else None
    if measured is not None and measured.decode_tokens_per_s is not None:
        tokens_per_s, used = measured.decode_tokens_per_s, "measured"
    elif source == CurveSource.measured:
        raise PlanInputError(f"model '{model.name}' has no measured decode throughput for {instance.label}", field="source")
    return DecodeCapacity(
        model=model.name,
        instance=instance.label,
        context_tokens=context_tokens,
        weight_bytes=weights,
        kv_bytes_per_request=kv,
        usable_memory_bytes=usable_per_chip(instance),
        bs_max_memory=bs_mem,
        batch_size=best,
        limited_by=limited_by,
        step_s=step,
        tokens_per_s=tokens_per_s,
        source=used,
        layout=layout,
        cost=parts,
        mtp_tokens_per_step=mtp,
        hardware=instance.hardware.name,
        gpus=instance.gpus,
    )
