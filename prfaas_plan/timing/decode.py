"""Decode: step time T_decode(BS, context), BS_max, and tokens/s of one instance.

T_decode(BS, C) = decode_step_overhead + sum over layers of the roofline time of one step
(``accounting.work.decode_work``): bytes read per step (active weights, with MoE counting
the expected distinct experts a batch touches; each request's KV at context C and its
recurrent state, read and written) over bandwidth, against the compute term.
BS_max = floor((usable memory - weight bytes) / S_kv(C)), usable = N x capacity x
memory_usable_fraction; a TPOT limit lowers it to the largest BS with T_decode <= TPOT.
Throughput = BS / T_decode(BS) output tokens/s per instance.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..accounting.kv import KvModel
from ..accounting.params import weight_bytes
from ..accounting.work import decode_work
from ..choices import CurveSource, DecodeLimit
from ..errors import PlanInputError
from ..profiles.model import ModelProfile
from ..ranges import DECODE_BATCH, TPOT_MS
from .instance import Instance
from .memory import require_fit, usable_memory_bytes
from .prefill import check_lengths, measured_for


def decode_step_s(model: ModelProfile, instance: Instance, batch_sizes, context_tokens: float) -> np.ndarray:
    """Seconds of one decode step for each batch size, every request at ``context_tokens``."""
    groups = decode_work(model, batch_sizes, context_tokens)
    seconds = instance.pass_seconds(groups, model.dtypes.weights, model.dtypes.experts)
    return seconds + instance.hardware.efficiency.decode_step_overhead_s


@dataclass(frozen=True)
class DecodeCapacity:
    model: str
    instance: str
    context_tokens: int
    weight_bytes: float
    kv_bytes_per_request: float
    usable_memory_bytes: float
    bs_max_memory: int
    batch_size: int
    limited_by: DecodeLimit
    step_s: float
    tokens_per_s: float  # per instance, output tokens
    source: str  # 'roofline' or 'measured'

    @property
    def tpot_ms(self) -> float:
        return self.step_s * 1e3


def decode_capacity(
    model: ModelProfile,
    instance: Instance,
    context_tokens: int,
    tpot_ms: float | None = None,
    max_batch: int | None = None,
    source: str = CurveSource.auto,
) -> DecodeCapacity:
    """Largest sustainable decode batch of one instance and its throughput. The batch is at
    most ``max_batch`` and never above ``ranges.DECODE_BATCH`` (100,000 running requests)."""
    check_lengths(model, [context_tokens], field="context")
    if tpot_ms is not None:
        TPOT_MS.check(tpot_ms, "tpot_ms")
    if max_batch is not None:
        DECODE_BATCH.check(max_batch, "max_batch")
    require_fit(model, instance, context_tokens)
    w_bytes = weight_bytes(model)
    kv_req = float(KvModel.of(model).bytes_at(context_tokens))
    usable = usable_memory_bytes(instance)
    bs_mem = int((usable - w_bytes) // kv_req)
    cap = min(bs_mem, int(DECODE_BATCH.hi) if max_batch is None else max_batch)
    sizes = np.arange(1, cap + 1, dtype=float)
    steps = decode_step_s(model, instance, sizes, context_tokens)
    limited_by = DecodeLimit.memory if cap == bs_mem else DecodeLimit.max_batch
    best = cap
    if tpot_ms is not None and steps[-1] * 1e3 > tpot_ms:
        ok = np.nonzero(steps * 1e3 <= tpot_ms)[0]
        if ok.size == 0:
            raise PlanInputError(
                f"TPOT limit {tpot_ms:g} ms is unreachable on {instance.label}: a batch of 1 takes "
                f"{steps[0] * 1e3:.2f} ms per step",
                field="tpot_ms",
            )
        best, limited_by = int(ok[-1]) + 1, DecodeLimit.tpot
    step = float(steps[best - 1])
    tokens_per_s, used = best / step, "roofline"
    measured = measured_for(model, instance) if source != CurveSource.roofline else None
    if measured is not None and measured.decode_tokens_per_s is not None:
        tokens_per_s, used = measured.decode_tokens_per_s, "measured"
    elif source == CurveSource.measured:
        raise PlanInputError(f"model '{model.name}' has no measured decode throughput for {instance.label}",
                             field="source")
    return DecodeCapacity(
        model=model.name,
        instance=instance.label,
        context_tokens=context_tokens,
        weight_bytes=w_bytes,
        kv_bytes_per_request=kv_req,
        usable_memory_bytes=usable,
        bs_max_memory=bs_mem,
        batch_size=best,
        limited_by=limited_by,
        step_s=step,
        tokens_per_s=tokens_per_s,
        source=used,
    )
