"""Hardware profile schema: one accelerator chip, its datasheet peaks and efficiency factors.

An *instance* is ``gpus`` chips of one kind serving one model replica (tensor-parallel
inside the instance). Datasheet figures are dense (no 2:4 sparsity). Units are in the
field names: TFLOPS = 1e12 FLOP/s, GB = 1e9 B, TB/s = 1e12 B/s, GB/s = 1e9 B/s,
Gbps = 1e9 bit/s.
"""

from typing import Annotated

from pydantic import Field, model_validator

from ..choices import ComputeDtype, MixerType
from ..ranges import (
    CHIPS_PER_INSTANCE,
    COLLECTIVE_LATENCY_US,
    DECODE_STEP_OVERHEAD_S,
    GEMM_SHAPE,
    KERNEL_MULTIPLIER,
    KERNEL_OVERHEAD_US,
    MACHINE_BALANCE,
    MEMORY_GIB,
    MEMORY_TB_PER_S,
    NIC_GBPS,
    PEAK_STEP_MAX,
    PREFILL_OVERHEAD_S,
    PRICE_USD_PER_GPU_HOUR,
    SCALE_UP_GB_PER_S,
    TDP_W,
    TFLOPS,
)
from ._base import Fraction, Items, Name, StrictModel, Text, Within, validate_or_raise

COMPUTE_DTYPES: tuple[ComputeDtype, ...] = (ComputeDtype.fp4, ComputeDtype.fp8, ComputeDtype.bf16)  # fastest first
_COMPUTE_INDEX: dict[str, int] = {c: i for i, c in enumerate(COMPUTE_DTYPES)}
_TFLOPS = Annotated[float, Within(TFLOPS)]


class PeakTflops(StrictModel):
    """Dense peak tensor throughput per chip, TFLOPS, by input dtype."""

    bf16: _TFLOPS
    fp8: _TFLOPS | None = None
    fp4: _TFLOPS | None = None


class Efficiency(StrictModel):
    """Achievable fractions of peak, and fixed costs, of a serving stack on this chip."""

    matmul: Fraction  # fraction of the bf16 matmul peak large GEMMs reach
    matmul_fp8: Fraction | None = None  # fraction of the fp8 peak; default: matmul
    matmul_fp4: Fraction | None = None  # fraction of the fp4 peak; default: matmul_fp8, else matmul
    # fraction of the fp4 peak grouped (MoE expert) FP4 GEMMs reach, their whole fused MoE kernel (routing,
    # activation quantisation, both GEMMs, finalize) over the experts' GEMM FLOPs, after the shape term
    # (``timing.cost._shape``); default: matmul_fp4
    grouped_matmul_fp4: Fraction | None = None
    matmul_k0: Annotated[float, Within(GEMM_SHAPE)] = 717.0  # reduction depth (elements) a GEMM's per-tile fixed cost equals
    matmul_m0: Annotated[float, Within(GEMM_SHAPE)] = 100.0  # rows a GEMM's fixed cost equals (few tokens per matrix)
    attention: Fraction  # fraction of the bf16 peak bf16 attention kernels reach
    attention_fp8: Fraction | None = None  # fraction of the fp8 peak fp8 attention kernels reach; default: attention
    memory: Fraction  # fraction of HBM/SRAM bandwidth memory-bound kernels reach
    network: Fraction = 0.8  # fraction of scale-up bandwidth a collective reaches
    nic: Fraction = 0.9  # fraction of the scale-out NIC bandwidth a collective reaches
    # per GPU kernel of a pass: launch gap and minimum duration
    kernel_overhead_us: Annotated[float, Within(KERNEL_OVERHEAD_US)] = 0.0
    prefill_pass_overhead_s: Annotated[float, Within(PREFILL_OVERHEAD_S)] = 0.0  # per prefill pass (scheduling, sampling)
    prefill_overhead_s: Annotated[float, Within(PREFILL_OVERHEAD_S)] = 0.0  # per request, latency only (queueing in the engine,
    #   tokenisation, the first token's return): added to TTFT, not to a saturated pool's throughput
    decode_step_overhead_s: Annotated[float, Within(DECODE_STEP_OVERHEAD_S)] = 0.0  # fixed per decode step (scheduling, sampling)
    memory_usable_fraction: Fraction = 0.9  # of capacity for weights + KV
    # per attention kind (choices.MixerType): a multiplier on the attention core's rates (FLOPs and KV bytes) of
    # that kind's layers in a prefill pass, beside the engine's; written by a per-kind calibration
    # (``timing.calibrate``, fitted on prefill latencies, so decode steps keep the chip's rate); a kind not
    # listed: 1
    attention_kind: dict[MixerType, Annotated[float, Within(KERNEL_MULTIPLIER)]] = Field(default_factory=dict, max_length=8)

    def attention_kind_rate(self, mixer_type: str, prefill: bool) -> float:
        """The multiplier ``attention_kind`` gives the attention core of ``mixer_type`` (1 in decode or unlisted)."""
        return self.attention_kind.get(mixer_type, 1.0) if prefill else 1.0  # type: ignore[call-overload]  # a MixerType is its value

    def matmul_fraction(self, dtype: str) -> float:
        """Fraction of ``dtype``'s peak large GEMMs reach: ``matmul`` (bf16), ``matmul_fp8`` (fp8),
        ``matmul_fp4`` (fp4); a dtype without its own figure takes the next wider one's (``FALLBACK``)."""
        return getattr(self, self.field_in_use(_MATMUL_FIELD.get(dtype, "matmul")))

    def grouped_matmul_fraction(self, dtype: str) -> float:
        """Fraction of ``dtype``'s peak the routed experts' grouped GEMMs reach: ``grouped_matmul_fp4``
        for fp4 (falling back to ``matmul_fp4``), else the dense ``matmul_fraction`` (no grouped
        FP8 or BF16 figure is measured apart from the dense one on any shipped chip)."""
        if dtype == ComputeDtype.fp4:
            return getattr(self, self.field_in_use("grouped_matmul_fp4"))
        return self.matmul_fraction(dtype)

    def attention_fraction(self, dtype: str) -> float:
        """Fraction of ``dtype``'s peak attention cores reach: ``attention_fp8`` for fp8 (and fp4:
        no FP4 attention kernel is measured in any source), else ``attention`` (bf16)."""
        return getattr(self, self.field_in_use(_ATTENTION_FIELD.get(dtype, "attention")))

    def field_in_use(self, name: str) -> str:
        """The field whose value stands for ``name``: itself when set, else its fallback's."""
        while getattr(self, name) is None:
            name = FALLBACK[name]
        return name


_MATMUL_FIELD: dict[str, str] = {ComputeDtype.bf16: "matmul", ComputeDtype.fp8: "matmul_fp8", ComputeDtype.fp4: "matmul_fp4"}
_ATTENTION_FIELD: dict[str, str] = {
    ComputeDtype.bf16: "attention",
    ComputeDtype.fp8: "attention_fp8",
    ComputeDtype.fp4: "attention_fp8",
}
FALLBACK: dict[str, str] = {
    "matmul_fp8": "matmul",
    "matmul_fp4": "matmul_fp8",
    "grouped_matmul_fp4": "matmul_fp4",
    "attention_fp8": "attention",
}
"""Per-dtype fractions and the field each falls back to when a profile has no figure of its own."""
# efficiency defaults with a measurement behind them (the other defaults are assumptions)
SOURCED_DEFAULTS: dict[str, str] = {
    "matmul_k0": "fitted to DeepGEMM's FP8 GEMM tables on H800 (deepseek-ai/DeepGEMM README, 2025)",
    "matmul_m0": "fitted to DeepGEMM's masked grouped GEMM tables on H800 (deepseek-ai/DeepGEMM README, 2025)",
}
FIELD_DTYPE: dict[str, ComputeDtype] = {field: ComputeDtype(field.rsplit("_", 1)[1]) for field in FALLBACK}
"""The dtype of each per-dtype fraction (its name's suffix): it matters only on a chip with a peak for that dtype."""

_SOURCE = Annotated[str, Field(min_length=1, max_length=2000)]
_KEY = Annotated[str, Field(max_length=64)]


class HardwareProfile(StrictModel):
    name: Name
    description: Text = ""
    sources: Annotated[list[Text], Items()] = Field(default_factory=list)
    assumptions: Annotated[list[Text], Items()] = Field(default_factory=list)
    peak_tflops: PeakTflops
    memory_gib: Annotated[float, Within(MEMORY_GIB)]  # capacity per chip, binary GiB (HBM, GDDR and SRAM come in binary sizes)
    memory_bandwidth_tb_per_s: Annotated[float, Within(MEMORY_TB_PER_S)]  # per chip, decimal TB/s
    scale_up_gb_per_s: Annotated[float, Within(SCALE_UP_GB_PER_S)]  # per chip, one direction, decimal GB/s (NVLink, PCIe, ...)
    scale_up_domain_chips: Annotated[int, Within(CHIPS_PER_INSTANCE)] = 8  # chips on one scale-up fabric (NVL72: 72)
    scale_up_latency_us: Annotated[float, Within(COLLECTIVE_LATENCY_US)] = 2.0  # one step of a collective on the scale-up fabric
    nic_gbps: Annotated[float, Within(NIC_GBPS)] | None = None  # scale-out NIC per chip, decimal Gbps
    nic_latency_us: Annotated[float, Within(COLLECTIVE_LATENCY_US)] = 5.0  # latency of one step of a collective across domains
    tdp_w: Annotated[float, Within(TDP_W)] | None = None
    price_usd_per_gpu_hour: Annotated[float, Within(PRICE_USD_PER_GPU_HOUR)] | None = None  # an editable example, not a quote
    price_note: Text = ""
    efficiency: Efficiency
    # where each efficiency figure comes from: field -> "repo@commit path (table): figure / peak = fraction",
    # "assumption: ..." or "fallback: <field> (no source for this chip)"; see ``efficiency_source``
    efficiency_sources: dict[_KEY, _SOURCE] = Field(default_factory=dict, max_length=32)
    calibration: "CalibrationRecord | None" = None  # written by `prfaas-plan calibrate`

    @model_validator(mode="before")
    @classmethod
    def _renamed(cls, data):
        if isinstance(data, dict) and "memory_gb" in data:
            raise ValueError(
                "memory_gb is now memory_gib: capacities are binary (an '80 GB' H100 holds 80 GiB, "
                "which the chip reports as 79.6 GiB); give the datasheet figure as memory_gib"
            )
        return data

    @model_validator(mode="after")
    def _ordered(self):
        unknown = sorted(set(self.efficiency_sources) - set(Efficiency.model_fields))
        if unknown:
            raise ValueError(
                f"efficiency_sources names {', '.join(unknown)}, not an efficiency field "
                f"(fields: {', '.join(Efficiency.model_fields)})"
            )
        p = self.peak_tflops
        if p.fp8 is not None and p.fp8 < p.bf16:
            raise ValueError("peak_tflops.fp8 is below peak_tflops.bf16")
        if p.fp4 is not None and p.fp4 < (p.fp8 or p.bf16):
            raise ValueError("peak_tflops.fp4 is below the fp8 (or bf16) peak")
        for narrow, wide in (("fp8", "bf16"), ("fp4", "fp8" if p.fp8 is not None else "bf16")):
            ratio = (getattr(p, narrow) or 0.0) / getattr(p, wide)
            if ratio > PEAK_STEP_MAX:
                raise ValueError(
                    f"peak_tflops.{narrow} is {ratio:,.4g}x peak_tflops.{wide}, more than {PEAK_STEP_MAX:g}x: "
                    "is one of them in PFLOPS or GFLOPS? (both are dense TFLOPS)"
                )
        balance = p.bf16 / self.memory_bandwidth_tb_per_s  # TFLOPS over TB/s: FLOP per byte
        if MACHINE_BALANCE.problem(balance) is not None:
            raise ValueError(
                f"peak_tflops.bf16 {p.bf16:g} TFLOPS over memory_bandwidth_tb_per_s {self.memory_bandwidth_tb_per_s:g} "
                f"is {balance:,.4g} FLOP per byte, outside {MACHINE_BALANCE.lo:g} to {MACHINE_BALANCE.hi:g} "
                "(real chips: 2.4 to 2,500): is one of them in another unit (GB/s, PFLOPS)?"
            )
        return self

    def running_dtype(self, dtype: str) -> ComputeDtype:
        """The dtype the chip computes ``dtype`` in: itself, or the next wider one it has a peak
        for (fp4 -> fp8 -> bf16): e.g. fp4 weights on an H200 run at fp8."""
        start = _COMPUTE_INDEX.get(dtype, _COMPUTE_INDEX[ComputeDtype.bf16])
        return next(c for c in COMPUTE_DTYPES[start:] if getattr(self.peak_tflops, c) is not None)

    def peak_flops(self, dtype: str) -> float:
        """Dense peak FLOP/s of one chip for ``dtype`` (at ``running_dtype``)."""
        return getattr(self.peak_tflops, self.running_dtype(dtype)) * 1e12

    def efficiency_fields(self) -> list[str]:
        """The efficiency fields this profile answers for: those it sets, and each per-dtype
        fraction of a dtype the chip has a peak for (set, or taking its fallback)."""
        e = self.efficiency
        return [
            f
            for f in Efficiency.model_fields
            if f in e.model_fields_set
            or f in self.efficiency_sources
            or (f in FIELD_DTYPE and getattr(self.peak_tflops, FIELD_DTYPE[f]) is not None)
        ]

    def efficiency_source(self, field: str) -> str:
        """Where ``efficiency.<field>`` comes from: the profile's ``efficiency_sources`` entry; for a
        per-dtype fraction the profile leaves unset and does not explain, the fallback it takes."""
        if field in self.efficiency_sources:
            return self.efficiency_sources[field]
        if field in FALLBACK and getattr(self.efficiency, field) is None:
            return f"fallback: {self.efficiency.field_in_use(field)} (no source for this chip)"
        if field in self.efficiency.model_fields_set:
            return "set in the profile without a source (efficiency_sources has no entry)"
        if field in SOURCED_DEFAULTS:
            return f"the schema's default, {SOURCED_DEFAULTS[field]}"
        return "the schema's default: not set in the profile, no source"

    def link_defaults(self) -> dict[str, float]:
        """The chip's link figures left at the schema's defaults (the scale-up domain, and the
        scale-up and NIC latencies per step): assumptions too where a profile does not set them."""
        return {
            f: getattr(self, f)
            for f in ("scale_up_domain_chips", "scale_up_latency_us", "nic_latency_us")
            if f not in self.model_fields_set
        }

    def efficiency_defaults(self) -> dict[str, float]:
        """The efficiency fields the profile neither sets nor explains, at the schema's defaults
        (per-dtype fractions, which fall back to another field, per-kind multipliers, and the GEMM
        shape terms, whose defaults are sourced (``SOURCED_DEFAULTS``), aside): assumptions a
        user's profile takes silently unless it is told."""
        e, answered = self.efficiency, set(self.efficiency_fields())
        return {
            f: getattr(e, f)
            for f in Efficiency.model_fields
            if f not in answered and f not in FALLBACK and f not in SOURCED_DEFAULTS and f != "attention_kind"
        }

    @property
    def memory_bytes(self) -> float:
        return self.memory_gib * 2**30

    @property
    def memory_bytes_per_s(self) -> float:
        return self.memory_bandwidth_tb_per_s * 1e12


class CalibrationPointRecord(StrictModel):
    length_tokens: int
    measured_s: float
    predicted_s: float
    model: Name | None = None  # of a joint fit


class CalibrationRecord(StrictModel):
    """What `prfaas-plan calibrate` fitted, kept in the profile it writes (informational)."""

    fitted_on_model: Name
    gpus: int
    base_profile: Name
    date: _KEY
    fitted: dict[_KEY, float] = Field(max_length=16)
    uncertainty: dict[_KEY, float] = Field(default_factory=dict, max_length=16)
    points: Annotated[list[CalibrationPointRecord], Items()] = Field(default_factory=list)
    max_abs_error: float
    models: Annotated[list[Name], Items()] = Field(default_factory=list)  # of a joint fit


def load_hardware_profile(data: object, source: str | None = None) -> HardwareProfile:
    return validate_or_raise(HardwareProfile, data, source)
