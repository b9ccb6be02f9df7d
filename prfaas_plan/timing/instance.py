"""An instance: ``gpus`` chips of one hardware profile serving one model replica."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..accounting.work import Work
from ..choices import ComputeDtype, Dtype
from ..profiles.hardware import HardwareProfile
from ..ranges import CHIPS_PER_INSTANCE

# Weight dtype -> tensor-core input dtype used for the matmuls (weight-only int4 runs in bf16).
MATMUL_DTYPE: dict[Dtype, ComputeDtype] = {
    Dtype.fp32: ComputeDtype.bf16, Dtype.bf16: ComputeDtype.bf16, Dtype.fp16: ComputeDtype.bf16,
    Dtype.fp8: ComputeDtype.fp8, Dtype.int8: ComputeDtype.fp8, Dtype.fp4: ComputeDtype.fp4, Dtype.int4: ComputeDtype.bf16,
}


@dataclass(frozen=True)
class Instance:
    hardware: HardwareProfile
    gpus: int = 8

    def __post_init__(self):
        CHIPS_PER_INSTANCE.check(self.gpus, "gpus")

    @property
    def memory_bytes(self) -> float:
        return self.gpus * self.hardware.memory_bytes

    def layer_seconds(self, work: Work, weight_dtype: str, expert_dtype: str | None = None) -> np.ndarray:
        """Roofline time of one layer's work on this instance, seconds.

        max(compute, memory) + all-reduce, where
        compute = matmul FLOPs / (N * peak[weight dtype] * eff.matmul)
                + routed-expert FLOPs / (N * peak[expert dtype] * eff.matmul)
                + attention FLOPs / (N * peak[bf16] * eff.attention),
        memory  = bytes / (N * bandwidth * eff.memory),
        all-reduce (ring) = payload * 2 (N-1)/N / (scale-up bandwidth per chip * eff.network),
        not overlapped with compute (conservative).
        """
        hw, eff, n = self.hardware, self.hardware.efficiency, self.gpus
        compute = work.matmul_flops / (n * hw.peak_flops(MATMUL_DTYPE[weight_dtype]) * eff.matmul)
        expert_peak = hw.peak_flops(MATMUL_DTYPE[expert_dtype or weight_dtype])
        compute = compute + work.expert_flops / (n * expert_peak * eff.matmul)
        compute = compute + work.attention_flops / (n * hw.peak_flops(ComputeDtype.bf16) * eff.attention)
        memory = (work.weight_bytes + work.other_bytes) / (n * hw.memory_bytes_per_s * eff.memory)
        comm = work.allreduce_bytes * (2 * (n - 1) / n) / (hw.scale_up_bytes_per_s * eff.network)
        return np.maximum(compute, memory) + comm

    def pass_seconds(self, groups: list[tuple[int, Work]], weight_dtype: str,
                     expert_dtype: str | None = None) -> np.ndarray:
        """Sum of layer roofline times over all layer groups (no fixed overhead)."""
        total = None
        for count, work in groups:
            t = count * self.layer_seconds(work, weight_dtype, expert_dtype)
            total = t if total is None else total + t
        return total

    @property
    def label(self) -> str:
        return f"{self.gpus}x{self.hardware.name}"
