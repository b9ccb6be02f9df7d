"""An instance: ``gpus`` chips of one hardware profile serving one model replica."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..accounting.work import Work
from ..errors import PlanInputError
from ..profiles.hardware import HardwareProfile

# Weight dtype -> tensor-core input dtype used for the matmuls (weight-only int4 runs in bf16).
MATMUL_DTYPE = {"fp32": "bf16", "bf16": "bf16", "fp16": "bf16", "fp8": "fp8", "int8": "fp8", "fp4": "fp4", "int4": "bf16"}


@dataclass(frozen=True)
class Instance:
    hardware: HardwareProfile
    gpus: int = 8

    def __post_init__(self):
        if self.gpus < 1:
            raise PlanInputError(f"gpus must be at least 1, got {self.gpus}", field="gpus")

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
        compute = compute + work.attention_flops / (n * hw.peak_flops("bf16") * eff.attention)
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
