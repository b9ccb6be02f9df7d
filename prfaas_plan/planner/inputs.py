"""Resolve a scenario into the numbers the throughput model needs.

Loads the model and both clusters' hardware (names, or paths relative to the scenario
file), calibrates a cluster's hardware on the scenario's model when it lists
``calibration_points``, builds the input-length distribution (with the prefix cache,
routing uses the uncached length), and fixes the decode rate of one PD-D instance.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..calibrate import CalibrationPoint, CalibrationResult, calibrate
from ..errors import PlanInputError
from ..profiles.hardware import HardwareProfile
from ..profiles.model import ModelProfile
from ..profiles.registry import looks_like_path, resolve_hardware, resolve_model, resolve_scenario_file
from ..profiles.scenario import ClusterSpec, Scenario
from ..timing.decode import DecodeCapacity, decode_capacity
from ..timing.instance import Instance
from ..timing.memory import require_fit
from ..timing.prefill import PrefillCurve, prefill_curve
from ..units import gbps_to_bytes_per_s
from ..workload.distributions import LengthDistribution, load_workload_spec, with_prefix_cache


@dataclass(frozen=True)
class Cluster:
    """One side of the deployment: an instance type, its prefill curve and count range."""

    role: str  # 'prfaas' or 'pd'
    instance: Instance
    curve: PrefillCurve
    count_min: int
    count_max: int
    calibration: CalibrationResult | None = None

    @property
    def hardware_name(self) -> str:
        return self.instance.hardware.name

    @property
    def gpus_per_instance(self) -> int:
        return self.instance.gpus

    @property
    def usd_per_hour_per_instance(self) -> float | None:
        price = self.instance.hardware.price_usd_per_gpu_hour
        return None if price is None else price * self.instance.gpus


@dataclass(frozen=True)
class PlanInputs:
    scenario: Scenario
    source: str | None  # scenario file
    model: ModelProfile
    prfaas: Cluster
    pd: Cluster
    link_bytes_per_s: float
    input_dist: LengthDistribution  # uncached input tokens per request
    output_dist: LengthDistribution  # output tokens per request
    output_mean_tokens: float
    decode_tokens_per_s_per_instance: float
    decode_source: str  # 'scenario' (measured/implied) or 'roofline'
    decode_capacity: DecodeCapacity | None
    decode_context_tokens: int  # context per decoding request: mean full input + half the mean output

    @property
    def decode_rps_per_instance(self) -> float:
        """Requests/s one PD-D instance completes: BS_max / (T_decode * L_out)."""
        return self.decode_tokens_per_s_per_instance / self.output_mean_tokens

    def with_link_gbps(self, gbps: float) -> "PlanInputs":
        from dataclasses import replace

        return replace(self, link_bytes_per_s=gbps_to_bytes_per_s(gbps))


def _ref(ref: str, base: Path | None) -> str:
    """A profile reference, with relative paths taken from the scenario file's folder."""
    if base is not None and looks_like_path(ref) and not Path(ref).is_absolute():
        candidate = base / ref
        if candidate.is_file():
            return str(candidate)
    return ref


def _cluster(role: str, spec: ClusterSpec, model: ModelProfile, base: Path | None, source: str | None) -> Cluster:
    try:
        hardware: HardwareProfile = resolve_hardware(_ref(spec.hardware, base))
    except PlanInputError as exc:
        raise PlanInputError(exc.reason, source=exc.source or source, field=exc.field or f"{role}.hardware") from None
    calibration = None
    if spec.calibration_points:
        points = [CalibrationPoint(p.length_tokens, p.prefill_s) for p in spec.calibration_points]
        calibration = calibrate(model, hardware, spec.gpus_per_instance, points, name=f"{hardware.name}")
        hardware = calibration.hardware
    instance = Instance(hardware, spec.gpus_per_instance)
    lo, hi = spec.count_range
    return Cluster(role, instance, prefill_curve(model, instance, spec.source), lo, hi, calibration)


def build_inputs(scenario: Scenario, source: str | None = None) -> PlanInputs:
    base = Path(source).resolve().parent if source else None
    try:
        model = resolve_model(_ref(scenario.model, base))
    except PlanInputError as exc:
        raise PlanInputError(exc.reason, source=exc.source or source, field=exc.field or "model") from None
    prfaas = _cluster("prfaas", scenario.prfaas, model, base, source)
    pd = _cluster("pd", scenario.pd, model, base, source)
    work = scenario.workload
    full_input = load_workload_spec(work.input, source, field_prefix="workload.input")
    dist = full_input
    if work.prefix_cache is not None:
        dist = with_prefix_cache(dist, work.prefix_cache.hit_fractions, work.prefix_cache.probs)
    longest = int(full_input.lengths_tokens[-1])
    if longest > model.max_context_tokens:
        raise PlanInputError(
            f"inputs reach {longest} tokens, beyond {model.name}'s context of "
            f"{model.max_context_tokens}", source=source, field="workload.input")
    output = load_workload_spec(work.output, source, field_prefix="workload.output")
    out_mean = output.mean_tokens()
    dec = scenario.decode
    # decode holds the whole context, cached prefix included
    context = dec.context_tokens or int(round(full_input.mean_tokens() + out_mean / 2))
    context = min(context, model.max_context_tokens)
    capacity = None
    _check_budgets(scenario, prfaas, pd, source)
    for cluster, need in ((prfaas, longest), (pd, max(context, longest))):
        if cluster.count_max > 0:
            try:
                require_fit(model, cluster.instance, need)
            except PlanInputError as exc:
                raise PlanInputError(exc.reason, source=source, field=f"{cluster.role}.gpus_per_instance") from None
    if dec.tokens_per_s_per_instance is not None:
        tokens_per_s, decode_source = dec.tokens_per_s_per_instance, "scenario"
    else:
        capacity = decode_capacity(model, pd.instance, context, tpot_ms=dec.tpot_ms, max_batch=dec.max_batch)
        tokens_per_s, decode_source = capacity.tokens_per_s, capacity.source
    return PlanInputs(
        scenario=scenario,
        source=source,
        model=model,
        prfaas=prfaas,
        pd=pd,
        link_bytes_per_s=gbps_to_bytes_per_s(scenario.link.usable_gbps),
        input_dist=dist,
        output_dist=output,
        output_mean_tokens=out_mean,
        decode_tokens_per_s_per_instance=tokens_per_s,
        decode_source=decode_source,
        decode_capacity=capacity,
        decode_context_tokens=context,
    )


def _check_budgets(scenario: Scenario, prfaas: Cluster, pd: Cluster, source: str | None) -> None:
    """Every GPU budget names a hardware the scenario uses and is not negative."""
    names = {prfaas.hardware_name, pd.hardware_name}
    for name, gpus in scenario.budgets.gpus.items():
        if name not in names:
            raise PlanInputError(f"budget for '{name}', which neither cluster uses (they use "
                                 f"{', '.join(sorted(names))})", source=source, field=f"budgets.gpus.{name}")
        if gpus < 0:
            raise PlanInputError(f"must be >= 0, got {gpus}", source=source, field=f"budgets.gpus.{name}")


def load_inputs(ref: str) -> PlanInputs:
    """A shipped scenario name or a scenario YAML path -> resolved planning inputs."""
    scenario, path = resolve_scenario_file(ref)
    return build_inputs(scenario, path)
