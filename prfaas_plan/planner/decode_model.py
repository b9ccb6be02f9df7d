"""The decode side of a plan: batch size, step time T_step(b) and throughput of one PD-D instance.

The batch is the roofline's (``timing.decode.decode_capacity``: memory, the scenario's
TPOT limit, its ``max_batch``). Without a measured throughput, T_step(b) is the roofline
step time. With one (``decode.tokens_per_s_per_instance``), the roofline's step times
are rescaled by one factor so that the instance delivers exactly the measured tokens/s
at that batch: T_step(b) = k * T_roof(b), k = (BS / measured) / T_roof(BS).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..choices import CurveSource, DecodeSource
from ..study.model import PlanInputs
from ..timing.decode import decode_capacity, decode_step_s


@dataclass(frozen=True)
class DecodeModel:
    batch_size: int  # running requests per PD-D instance at full load
    step_s_by_batch: np.ndarray  # T_step(b) for b = 1..batch_size, seconds
    context_tokens: int

    @property
    def tokens_per_s(self) -> float:
        """Output tokens/s of one instance at the full batch."""
        return self.batch_size / float(self.step_s_by_batch[-1])

    def step_s(self, batch) -> np.ndarray:
        """T_step at (possibly fractional) batch sizes, linear between integers, >= 1 request."""
        b = np.clip(np.asarray(batch, dtype=float), 1.0, self.batch_size)
        return np.interp(b, np.arange(1, self.batch_size + 1), self.step_s_by_batch)

    def batch_at(self, tokens_per_s: float) -> float | None:
        """Mean batch b solving b = r * T_step(b) (Little's law) for an instance producing
        ``tokens_per_s``; None when r exceeds what the full batch delivers (saturated)."""
        if tokens_per_s <= 0:
            return 0.0
        b = np.arange(1, self.batch_size + 1, dtype=float)
        excess = b - tokens_per_s * self.step_s_by_batch  # increasing in b while below capacity
        if excess[-1] < 0:
            return None
        k = int(np.argmax(excess >= 0))
        if k == 0:
            return max(tokens_per_s * float(self.step_s_by_batch[0]), 0.0)
        lo, hi = excess[k - 1], excess[k]
        return float(b[k - 1] + (-lo) / (hi - lo))


def decode_model(inputs: PlanInputs) -> DecodeModel:
    dec = inputs.decode
    context = dec.context_tokens
    cap = dec.capacity or decode_capacity(
        inputs.model,
        inputs.decode_pool.instance,
        context,
        tpot_ms=dec.tpot_ms,
        max_batch=dec.max_batch,
        source=CurveSource.roofline,
    )
    sizes = np.arange(1, cap.batch_size + 1, dtype=float)
    steps = decode_step_s(inputs.model, inputs.decode_pool.instance, sizes, context, cap.layout)
    if dec.source != DecodeSource.roofline:
        steps = steps * (cap.batch_size / dec.tokens_per_s_per_instance) / steps[-1]
    return DecodeModel(cap.batch_size, steps, context)
