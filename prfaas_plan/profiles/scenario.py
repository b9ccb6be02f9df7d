"""Scenario schema: a model, the PrfaaS and PD clusters, the link, the workload, decode
settings, budgets and the objective. Units are in the field names.

Instance counts are either a fixed integer or ``{min, max}`` to optimise over. A
cluster's ``calibration_points`` (length -> measured or implied prefill seconds) fit its
hardware's efficiency factors on the scenario's model before planning (see
``prfaas_plan.calibrate``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt, StrictInt, model_validator

from ._base import StrictModel, validate_or_raise


class CountRange(StrictModel):
    min: StrictInt = Field(ge=0)
    max: StrictInt = Field(ge=0)

    @model_validator(mode="after")
    def _ordered(self):
        if self.min > self.max:
            raise ValueError(f"min ({self.min}) is above max ({self.max})")
        return self


class CalibrationPointSpec(StrictModel):
    length_tokens: PositiveInt
    prefill_s: PositiveFloat


class ClusterSpec(StrictModel):
    hardware: str = Field(min_length=1)  # shipped name or YAML path (relative to the scenario file)
    gpus_per_instance: PositiveInt = 8
    instances: StrictInt | CountRange = Field(union_mode="left_to_right")
    source: Literal["auto", "roofline", "measured"] = "auto"  # prefill curve source
    calibration_points: list[CalibrationPointSpec] = Field(default_factory=list)
    calibration_note: str = ""

    @model_validator(mode="after")
    def _non_negative(self):
        if isinstance(self.instances, int) and self.instances < 0:
            raise ValueError("instances must be >= 0")
        return self

    @property
    def count_range(self) -> tuple[int, int]:
        if isinstance(self.instances, int):
            return self.instances, self.instances
        return self.instances.min, self.instances.max


class LinkSpec(StrictModel):
    bandwidth_gbps: NonNegativeFloat  # decimal Gbps, PrfaaS egress to the PD cluster (0: no link)
    usable_fraction: float = Field(default=1.0, gt=0, le=1)  # share of the link KV transfers may use
    rtt_ms: NonNegativeFloat = 0.0

    @property
    def usable_gbps(self) -> float:
        return self.bandwidth_gbps * self.usable_fraction


class PrefixCacheSpec(StrictModel):
    hit_fractions: list[float] = Field(min_length=1)  # cached share of the input, each in [0, 1)
    probs: list[float] = Field(min_length=1)


class WorkloadSpec(StrictModel):
    input: dict[str, Any]  # length distribution (see prfaas_plan.workload.distributions.load_workload_spec)
    output: dict[str, Any] = Field(default_factory=lambda: {"type": "fixed", "tokens": 1024})
    prefix_cache: PrefixCacheSpec | None = None


class DecodeSpec(StrictModel):
    context_tokens: PositiveInt | None = None  # default: mean input + half the mean output
    tpot_ms: PositiveFloat | None = None
    max_batch: PositiveInt | None = None
    tokens_per_s_per_instance: PositiveFloat | None = None  # measured: overrides the roofline
    tokens_per_s_note: str = ""


class BudgetSpec(StrictModel):
    gpus: dict[str, NonNegativeInt] = Field(default_factory=dict)  # hardware name -> most GPUs
    usd_per_hour: PositiveFloat | None = None


class ObjectiveSpec(StrictModel):
    type: Literal["max_throughput", "min_cost"] = "max_throughput"
    target_rate_rps: PositiveFloat | None = None  # required by min_cost

    @model_validator(mode="after")
    def _target(self):
        if self.type == "min_cost" and self.target_rate_rps is None:
            raise ValueError("min_cost needs target_rate_rps")
        return self


class SloSpec(StrictModel):
    """Latency targets; any may be omitted. TTFT percentiles are over all requests."""

    ttft_p90_s: PositiveFloat | None = None
    ttft_p99_s: PositiveFloat | None = None
    tpot_ms: PositiveFloat | None = None

    @model_validator(mode="after")
    def _some(self):
        if self.ttft_p90_s is None and self.ttft_p99_s is None and self.tpot_ms is None:
            raise ValueError("give at least one of ttft_p90_s, ttft_p99_s, tpot_ms")
        return self


class LatencySpec(StrictModel):
    operating_load: float = Field(default=0.8, gt=0, lt=1)  # reported rate = load x Lambda_max (without an SLO)
    arrival_cv: float = Field(default=1.0, gt=0)  # coefficient of variation of inter-arrival times (1: Poisson)


class OptimiserSpec(StrictModel):
    method: Literal["milp", "enumerate", "auto"] = "milp"  # see prfaas_plan.planner.optimizer
    coarse_thresholds: int = Field(default=48, ge=4, le=2048)  # MILP candidates (quantiles of L)


class Scenario(StrictModel):
    name: str = Field(min_length=1)
    description: str = ""
    notes: list[str] = Field(default_factory=list)
    model: str = Field(min_length=1)  # shipped name or YAML path
    prfaas: ClusterSpec
    pd: ClusterSpec
    link: LinkSpec
    workload: WorkloadSpec
    decode: DecodeSpec = Field(default_factory=DecodeSpec)
    budgets: BudgetSpec = Field(default_factory=BudgetSpec)
    objective: ObjectiveSpec = Field(default_factory=ObjectiveSpec)
    slo: SloSpec | None = None
    latency: LatencySpec = Field(default_factory=LatencySpec)
    optimiser: OptimiserSpec = Field(default_factory=OptimiserSpec)


def load_scenario(data: object, source: str | None = None) -> Scenario:
    return validate_or_raise(Scenario, data, source)
