"""Hardware profile schema: one accelerator chip, its datasheet peaks and efficiency factors.

An *instance* is ``gpus`` chips of one kind serving one model replica (tensor-parallel
inside the instance). Datasheet figures are dense (no 2:4 sparsity). Units are in the
field names: TFLOPS = 1e12 FLOP/s, GB = 1e9 B, TB/s = 1e12 B/s, GB/s = 1e9 B/s,
Gbps = 1e9 bit/s.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, NonNegativeFloat, PositiveFloat, model_validator

from ._base import StrictModel, validate_or_raise

ComputeDtype = Literal["bf16", "fp8", "fp4"]
COMPUTE_DTYPES: tuple[str, ...] = ("fp4", "fp8", "bf16")  # fastest first


class PeakTflops(StrictModel):
    """Dense peak tensor throughput per chip, TFLOPS, by input dtype."""

    bf16: PositiveFloat
    fp8: PositiveFloat | None = None
    fp4: PositiveFloat | None = None


class Efficiency(StrictModel):
    """Achievable fractions of peak and fixed overheads of a serving stack on this chip."""

    matmul: float = Field(gt=0, le=1)  # fraction of peak for linear layers (projections, FFN)
    attention: float = Field(gt=0, le=1)  # fraction of bf16 peak for attention/linear-attention cores
    memory: float = Field(gt=0, le=1)  # fraction of HBM/SRAM bandwidth reached
    network: float = Field(default=0.7, gt=0, le=1)  # fraction of scale-up bandwidth for all-reduce
    prefill_overhead_s: NonNegativeFloat = 0.0  # fixed per-request prefill cost (scheduling, launch, sampling)
    decode_step_overhead_s: NonNegativeFloat = 0.0  # fixed per decode step (launch, sync, sampling)
    memory_usable_fraction: float = Field(default=0.9, gt=0, le=1)  # of capacity for weights + KV


class HardwareProfile(StrictModel):
    name: str = Field(min_length=1)
    description: str = ""
    sources: list[str] = Field(default_factory=list)
    assumptions: list[str] = Field(default_factory=list)
    peak_tflops: PeakTflops
    memory_gb: PositiveFloat  # capacity per chip, decimal GB
    memory_bandwidth_tb_per_s: PositiveFloat  # per chip, decimal TB/s
    scale_up_gb_per_s: PositiveFloat  # per chip, one direction, decimal GB/s (NVLink, PCIe, ...)
    nic_gbps: PositiveFloat | None = None  # scale-out NIC per chip, decimal Gbps
    tdp_w: PositiveFloat | None = None
    price_usd_per_gpu_hour: PositiveFloat | None = None  # an editable example, not a quote
    price_note: str = ""
    efficiency: Efficiency
    calibration: dict | None = None  # written by `prfaas-plan calibrate`

    @model_validator(mode="after")
    def _ordered(self):
        p = self.peak_tflops
        if p.fp8 is not None and p.fp8 < p.bf16:
            raise ValueError("peak_tflops.fp8 is below peak_tflops.bf16")
        if p.fp4 is not None and p.fp4 < (p.fp8 or p.bf16):
            raise ValueError("peak_tflops.fp4 is below the fp8 (or bf16) peak")
        return self

    def peak_flops(self, dtype: str) -> float:
        """Dense peak FLOP/s of one chip for ``dtype``, falling back to the next wider dtype
        the chip supports (fp4 -> fp8 -> bf16): e.g. fp4 weights on an H200 run at fp8."""
        order = list(COMPUTE_DTYPES)
        start = order.index(dtype) if dtype in order else order.index("bf16")
        for candidate in order[start:]:
            value = getattr(self.peak_tflops, candidate)
            if value is not None:
                return value * 1e12
        raise AssertionError("bf16 peak is required")

    @property
    def memory_bytes(self) -> float:
        return self.memory_gb * 1e9

    @property
    def memory_bytes_per_s(self) -> float:
        return self.memory_bandwidth_tb_per_s * 1e12

    @property
    def scale_up_bytes_per_s(self) -> float:
        return self.scale_up_gb_per_s * 1e9


def load_hardware_profile(data: object, source: str | None = None) -> HardwareProfile:
    return validate_or_raise(HardwareProfile, data, source)
