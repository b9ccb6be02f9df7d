"""The one resolved, unit-converted view of a scenario that the planner, the latency model,
the simulator and the reports read.

``build_inputs`` is the only place that reads a :class:`profiles.scenario.Scenario`'s fields
(``tests/test_layers.py`` checks it). It loads the model and both pools' hardware (names, or
paths relative to the scenario file), calibrates a pool's hardware on the scenario's model
when it lists ``calibration_points``, builds the length distributions (with a prefix cache,
routing uses the uncached length), fixes the decode rate of one PD-D instance, and converts
every quantity to SI: bytes/s for the link, seconds for the RTT, the squared coefficient of
variation for arrivals.

Every what-if replaces a whole part (``with_link_gbps``, ``with_limits``, ``with_decode``),
so a derived figure can never be left behind by a changed input.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..accounting.params import declared_params_mismatch
from ..choices import Basis, CacheRegime, DecodeSource, Dtype, ObjectiveKind, OptimiserMethod, Role
from ..errors import PlanInputError, shorten, warn
from ..profiles.hardware import HardwareProfile
from ..profiles.model import ModelProfile
from ..profiles.registry import canonical_name, looks_like_path, resolve_hardware, resolve_model
from ..profiles.scenario import ClusterSpec, Scenario, load_scenario
from ..profiles.serving import PrecisionSpec
from ..profiles.workload_spec import mixture_weight_notes
from ..ranges import DECODE_TOKENS_PER_S, INSTANCES, LINK_GBPS, MAX_CHIP_COMBINATIONS
from ..timing.calibrate import CalibrationPoint, CalibrationResult
from ..timing.cost import Engine
from ..timing.decode import DecodeCapacity, decode_capacity
from ..timing.instance import Instance
from ..timing.layout import check_layout, parse_layout
from ..timing.memory import chips_needed, require_fit
from ..timing.prefill import PrefillCurve, prefill_curve
from ..units import bytes_per_s_to_gbps, gbps_to_bytes_per_s
from ..workload.cluster_cache import ClusterCaches, HitDistribution, RoutedPoints, routed_points
from ..workload.distributions import LengthDistribution, build_distribution, with_prefix_cache
from ..yamlio import is_regular_file
from .basis import calibrated, calibration_points, decode_source, measured_decode_rate, prefill_settings
from .cost import ChipCost, LinkCost, chip_cost


@dataclass(frozen=True)
class Link:
    """The PrfaaS -> PD link. Bandwidths in bytes/s (decimal: 1 Gbps = 1.25e8 B/s)."""

    bandwidth_bytes_per_s: float  # the link's raw rate
    usable_fraction: float  # share of it that KV transfers may use
    rtt_s: float
    cost: LinkCost = LinkCost()

    @property
    def fixed_usd_per_hour(self) -> float:
        """The committed price of the raw bandwidth, per hour."""
        return self.cost.fixed_usd_per_hour(self.bandwidth_gbps)

    @property
    def usable_bytes_per_s(self) -> float:
        """B_out of the throughput model: raw bandwidth x usable fraction."""
        return self.bandwidth_bytes_per_s * self.usable_fraction

    @property
    def bandwidth_gbps(self) -> float:
        return bytes_per_s_to_gbps(self.bandwidth_bytes_per_s)

    @property
    def usable_gbps(self) -> float:
        return bytes_per_s_to_gbps(self.usable_bytes_per_s)

    def utilisation(self, egress_bytes_per_s: float) -> float:
        """Link utilisation, defined once for the whole package: egress / usable bandwidth
        (0 with no egress; inf with egress and no usable bandwidth)."""
        if egress_bytes_per_s <= 0:
            return 0.0
        usable = self.usable_bytes_per_s
        return egress_bytes_per_s / usable if usable > 0 else math.inf

    def with_bandwidth_gbps(self, gbps: float) -> Link:
        """The same link with a raw bandwidth of ``gbps`` (the usable fraction kept)."""
        return replace(self, bandwidth_bytes_per_s=gbps_to_bytes_per_s(gbps))

    def with_usable_gbps(self, gbps: float) -> Link:
        """The same link with ``gbps`` usable (raw = usable / usable fraction)."""
        return replace(self, bandwidth_bytes_per_s=gbps_to_bytes_per_s(gbps) / self.usable_fraction)


@dataclass(frozen=True)
class Pool:
    """One pool of identical instances: the PrfaaS cluster, the local PD cluster (its PD-P
    pool when decode has its own), or a decode-only pool (``curve`` None: it never prefills)."""

    role: Role
    instance: Instance
    curve: PrefillCurve | None
    calibration: CalibrationResult | None = None
    cost: ChipCost = ChipCost(None, "rental", None, 0.0, 1.0, 0.0)
    chip_options: tuple[int, ...] = ()  # the chips per instance it was chosen from (empty: fixed)
    notes: tuple[str, ...] = ()  # measurements of other hardware left out (``planner.basis``)

    @property
    def hardware_name(self) -> str:
        return self.instance.hardware.name

    @property
    def gpus_per_instance(self) -> int:
        return self.instance.gpus

    @property
    def usd_per_hour_per_instance(self) -> float | None:
        """Provisioned $/hour of one instance: capital (or rental) + power at full load."""
        price = self.cost.provisioned_usd_per_hour
        return None if price is None else price * self.instance.gpus


@dataclass(frozen=True)
class Workload:
    """Length distributions in tokens: uncached input (routing and prefill), full input
    (decode context), output."""

    input_dist: LengthDistribution
    full_input_dist: LengthDistribution
    output_dist: LengthDistribution
    caches: ClusterCaches | None = None  # prefix caches per cluster (cache-aware routing)
    routed: RoutedPoints | None = None  # the request classes of the caches' regime; input_dist routes on them

    def with_cache_regime(self, regime: CacheRegime) -> Workload:
        """The same workload routed under ``regime`` (scarce or plentiful)."""
        routed = routed_points(self.caches, regime)
        return replace(self, routed=routed, input_dist=routed.routing_distribution())

    @property
    def output_mean_tokens(self) -> float:
        return self.output_dist.mean_tokens()


@dataclass(frozen=True)
class Decode:
    """What one PD-D instance sustains."""

    context_tokens: int  # context per decoding request: mean full input + half the mean output, or given
    tpot_ms: float | None  # the scenario's TPOT limit on the batch
    max_batch: int | None
    tokens_per_s_per_instance: float
    source: DecodeSource  # the scenario's figure, the roofline, or the model profile's measurement
    capacity: DecodeCapacity | None  # the roofline's batch (None when the scenario gives tokens/s)


@dataclass(frozen=True)
class Limits:
    """Integer decision ranges (instances) and budgets."""

    prfaas_min: int
    prfaas_max: int
    pd_min: int  # N_p + N_d; with a decode-only pool, N_p
    pd_max: int
    gpu_budget: dict[str, int] = field(default_factory=dict)  # hardware name -> most chips
    usd_per_hour: float | None = None  # provisioned $/hour, the committed link included
    decode_min: int | None = None  # N_d of a decode-only pool (None: decode shares the PD pool)
    decode_max: int | None = None

    @property
    def separate_decode(self) -> bool:
        return self.decode_max is not None


@dataclass(frozen=True)
class Objective:
    kind: ObjectiveKind = ObjectiveKind.max_throughput
    target_rate_rps: float | None = None


@dataclass(frozen=True)
class Slo:
    """Latency targets (None: no limit). TTFT percentiles are over all requests."""

    ttft_p90_s: float | None = None
    ttft_p99_s: float | None = None
    tpot_ms: float | None = None


@dataclass(frozen=True)
class LatencySettings:
    operating_load: float = 0.8  # the reported operating rate = load x Lambda_max (without an SLO)
    arrival_scv: float = 1.0  # squared coefficient of variation of inter-arrival times (1: Poisson)


@dataclass(frozen=True)
class OptimiserSettings:
    method: OptimiserMethod = OptimiserMethod.auto
    coarse_thresholds: int = 48


@dataclass(frozen=True)
class PlanInputs:
    name: str  # the scenario's name
    source: str | None  # the scenario file
    model: ModelProfile
    prfaas: Pool
    pd: Pool
    link: Link
    workload: Workload
    decode: Decode
    limits: Limits
    objective: Objective = Objective()
    slo: Slo | None = None
    latency: LatencySettings = LatencySettings()
    optimiser: OptimiserSettings = OptimiserSettings()
    notes: tuple[str, ...] = ()
    pd_decode: Pool | None = None  # a decode-only pool; None: the PD pool decodes too

    def identity(self) -> dict:
        """What a plan of these inputs is: the scenario, the model, each pool's hardware and chips
        per instance, and the link (decimal Gbps). Every CSV row of ``plan`` and ``compare`` starts
        with it."""
        dec = self.pd_decode
        return {
            "scenario": self.name,
            "model": self.model.name,
            "prfaas_hardware": self.prfaas.hardware_name,
            "prfaas_gpus_per_instance": self.prfaas.gpus_per_instance,
            "pd_hardware": self.pd.hardware_name,
            "pd_gpus_per_instance": self.pd.gpus_per_instance,
            "pd_decode_hardware": None if dec is None else dec.hardware_name,
            "pd_decode_gpus_per_instance": None if dec is None else dec.gpus_per_instance,
            "link_gbps": round(self.link.bandwidth_gbps, 6),
        }

    @property
    def decode_pool(self) -> Pool:
        """The pool whose instances decode (N_d of them)."""
        return self.pd_decode or self.pd

    @property
    def pools(self) -> tuple[Pool, ...]:
        return (self.prfaas, self.pd) + ((self.pd_decode,) if self.pd_decode is not None else ())

    @property
    def input_dist(self) -> LengthDistribution:
        """Uncached input tokens per request (what routing and prefill see)."""
        return self.workload.input_dist

    @property
    def output_mean_tokens(self) -> float:
        return self.workload.output_mean_tokens

    @property
    def decode_rps_per_instance(self) -> float:
        """Requests/s one PD-D instance completes: BS_max / (T_decode * L_out)."""
        return self.decode.tokens_per_s_per_instance / self.output_mean_tokens

    # What-ifs: each replaces a whole part, and checks its number as the YAML field is checked.

    def with_link_gbps(self, gbps: float) -> PlanInputs:
        """The same scenario on a link of ``gbps`` raw bandwidth (usable fraction kept)."""
        return replace(self, link=self.link.with_bandwidth_gbps(LINK_GBPS.check(gbps, "link.bandwidth_gbps")))

    def with_usable_link_gbps(self, gbps: float) -> PlanInputs:
        """The same scenario with ``gbps`` of usable bandwidth."""
        return replace(self, link=self.link.with_usable_gbps(LINK_GBPS.check(gbps, "link.usable_gbps")))

    def with_limits(self, **changes) -> PlanInputs:
        """The same scenario with some decision ranges or budgets changed (``prfaas_max=6``)."""
        for name, value in changes.items():
            if name in ("prfaas_min", "prfaas_max", "pd_min", "pd_max", "decode_min", "decode_max"):
                if isinstance(value, bool) or not isinstance(value, int):
                    raise PlanInputError(f"must be an integer, got {value!r:.40}", field=name)
                INSTANCES.check(value, name)
        limits = replace(self.limits, **changes)
        for role, lo, hi in (
            ("prfaas", limits.prfaas_min, limits.prfaas_max),
            ("pd", limits.pd_min, limits.pd_max),
            ("pd_decode", limits.decode_min or 0, limits.decode_max or 0),
        ):
            if lo > hi:
                raise PlanInputError(f"min ({lo}) is above max ({hi})", field=f"{role}.instances")
        return replace(self, limits=limits)

    def with_cache_regime(self, regime: CacheRegime) -> PlanInputs:
        """The same scenario routed under a cache regime (``workload.cluster_cache``)."""
        if self.workload.caches is None:
            raise PlanInputError("the scenario has no cluster_caches", field="workload.cluster_caches")
        return replace(self, workload=self.workload.with_cache_regime(regime))

    def with_decode_tokens_per_s(self, tokens_per_s: float) -> PlanInputs:
        """The same scenario with a given decode throughput per PD-D instance."""
        DECODE_TOKENS_PER_S.check(tokens_per_s, "decode.tokens_per_s_per_instance")
        return replace(self, decode=replace(self.decode, tokens_per_s_per_instance=tokens_per_s, source=DecodeSource.scenario))


# ---------------------------------------------------------------------------------------
# Resolving a scenario


def _ref(ref: str, base: Path | None, source: str | None, field: str) -> str:
    """A profile reference: a shipped name, or a path relative to the scenario file's folder."""
    if base is None or not looks_like_path(ref) or Path(ref).is_absolute():
        return ref
    candidate = base / ref
    if not is_regular_file(candidate):
        raise PlanInputError(
            f"file not found: {shorten(ref, 60)} (relative paths are taken from the scenario's folder)",
            source=source,
            field=field,
        )
    return str(candidate)


def _hardware(role: Role, spec: ClusterSpec, base: Path | None, source: str | None) -> HardwareProfile:
    try:
        return resolve_hardware(_ref(spec.hardware, base, source, f"{role}.hardware"))
    except PlanInputError as exc:
        raise PlanInputError(exc.reason, source=exc.source or source, field=exc.field or f"{role}.hardware") from None


def chip_options(
    role: Role, spec: ClusterSpec, model: ModelProfile, hardware: HardwareProfile, need_tokens: int, source: str | None
) -> tuple[int, ...]:
    """The chips per instance a pool may have: the given count, the given list, or for ``auto`` the
    fewest chips whose memory holds the model and one request of ``need_tokens`` in some layout
    (``timing.memory.chips_needed``: SRAM for an LPU, HBM for a GPU) and its multiples up to
    ``max_gpus_per_instance`` (default: twice that count)."""
    given = spec.gpus_per_instance
    if isinstance(given, int):
        return (given,)
    if isinstance(given, list):
        return tuple(sorted(set(given)))
    least, _ = chips_needed(model, Instance(hardware, 1), need_tokens)
    if not least:
        raise PlanInputError(
            f"no layout of {hardware.name} chips holds {model.name} and a {need_tokens:,}-token request",
            source=source,
            field=f"{role}.gpus_per_instance",
        )
    cap = spec.max_gpus_per_instance or 2 * least
    if cap < least:
        raise PlanInputError(
            f"max_gpus_per_instance {cap} is below the {least} chips {model.name} needs on {hardware.name}",
            source=source,
            field=f"{role}.max_gpus_per_instance",
        )
    return tuple(range(least, cap + 1, least))


def _pool(
    role: Role,
    spec: ClusterSpec,
    model: ModelProfile,
    hardware: HardwareProfile,
    gpus: int,
    options: tuple[int, ...],
    source: str | None,
    prefills: bool = True,
    basis: Basis = Basis.as_given,
    base: Path | None = None,
) -> Pool:
    """One pool on ``basis`` (``planner.basis``: which measured points calibrate it, which curve
    and capacity size it); ``base``: the scenario's folder (relative profile paths)."""
    layout = None if spec.parallel is None else parse_layout(spec.parallel)
    engine = Engine.of(spec.engine)
    if layout is not None:
        try:
            check_layout(model, layout, gpus, field="parallel")
        except PlanInputError as exc:
            raise PlanInputError(exc.reason, source=source, field=f"{role}.parallel") from None
    cost = chip_cost(hardware, spec.cost, spec.site)
    calibration = None
    given = [CalibrationPoint(p.length_tokens, p.prefill_s) for p in spec.calibration_points]
    points, fit, notes = calibration_points(
        role,
        spec.hardware,
        given,
        spec.calibration_fit,
        spec.calibration_hardware,
        spec.source,
        model,
        hardware,
        gpus,
        basis,
        prefills,
        spec.calibration_gpus,
        base,
    )
    if points:
        try:
            calibration = calibrated(model, hardware, gpus, points, fit, layout, engine)
        except PlanInputError as exc:
            field = "calibration_fit" if exc.field == "fit" else "calibration_points"
            raise PlanInputError(exc.reason, source=source, field=f"{role}.{field}") from None
        hardware = calibration.hardware
    instance = Instance(hardware, gpus, layout, engine)
    options = options if len(options) > 1 else ()
    if not prefills:
        return Pool(role, instance, None, calibration, cost, options, tuple(notes))
    curve_source, capacity = prefill_settings(spec.source, spec.prefill_capacity, calibration is not None, basis)
    try:
        curve = prefill_curve(model, instance, curve_source, capacity)
    except PlanInputError as exc:
        raise PlanInputError(exc.reason, source=source, field=f"{role}.{exc.field or 'gpus_per_instance'}") from None
    return Pool(role, instance, curve, calibration, cost, options, tuple(notes))


def _precision_applied(scenario: Scenario, model: ModelProfile, source: str | None) -> ModelProfile:
    """The model at the scenario's ``precision``; with no KV dtype given, an FP8 checkpoint's KV in
    the dtype its pools' engines pick for it (``profiles.engine``: ``kv_dtype_fp8_checkpoint``; one
    KV cache moves from PrfaaS to PD, so engines that pick different ones need ``precision.kv``)."""
    from ..timing.engines import engine_profile

    pools = [("prfaas", scenario.prfaas), ("pd", scenario.pd), ("pd_decode", scenario.pd_decode)]
    picks = {role: engine_profile(spec.engine.name).defaults.kv_dtype_fp8_checkpoint for role, spec in pools if spec is not None}
    chosen = {kv for kv in picks.values() if kv is not None}
    precision = scenario.precision or PrecisionSpec()
    if len(chosen) > 1 and precision.kv is None and (precision.weights or model.dtypes.weights) == Dtype.fp8:
        said = ", ".join(f"{role} {kv or 'the model profile'}" for role, kv in picks.items())
        raise PlanInputError(
            f"the pools' engines keep an FP8 checkpoint's KV in different dtypes ({said}); give precision.kv",
            source=source,
            field="precision.kv",
        )
    return precision.applied(model, next(iter(chosen), None))


def build_inputs(scenario: Scenario, source: str | None = None, basis: Basis = Basis.as_given) -> PlanInputs:
    """Resolve a validated scenario (see the module docstring), each pool at its fewest chips
    per instance; errors name ``source``. ``planner.chips`` chooses among several."""
    return build_variants(scenario, source, first_only=True, basis=basis)[0]


def build_variants(
    scenario: Scenario, source: str | None = None, first_only: bool = False, basis: Basis = Basis.as_given
) -> list[PlanInputs]:
    """The resolved inputs of every combination of the pools' chips per instance (one when each
    pool has one count, or with ``first_only``), each pool on ``basis`` (``planner.basis``).
    Combinations whose pools do not hold the model are left out; if none does, the first one's
    error is raised."""
    base = Path(source).resolve().parent if source else None
    try:
        model = resolve_model(_ref(scenario.model, base, source, "model"))
    except PlanInputError as exc:
        raise PlanInputError(exc.reason, source=exc.source or source, field=exc.field or "model") from None
    model = _precision_applied(scenario, model, source)
    notes = []
    mismatch = declared_params_mismatch(model)
    if mismatch:
        warn(mismatch)
        notes.append(mismatch)
    workload = _workload(scenario, source)
    for name in ("input", "output"):  # relative mixture weights: say what they were read as
        notes.extend(mixture_weight_notes(getattr(scenario.workload, name), f"workload.{name}"))
    longest = int(workload.full_input_dist.lengths_tokens[-1])
    if longest > model.max_context_tokens:
        raise PlanInputError(
            f"inputs reach {longest} tokens, beyond {model.name}'s context of {model.max_context_tokens}",
            source=source,
            field="workload.input",
        )
    context = _decode_context(scenario, model, workload, source)
    separate = scenario.pd_decode is not None
    specs = {Role.prfaas: (scenario.prfaas, longest), Role.pd: (scenario.pd, longest if separate else max(context, longest))}
    if separate:
        specs[Role.pd_decode] = (scenario.pd_decode, max(context, longest))
    hardware = {role: _hardware(role, spec, base, source) for role, (spec, _) in specs.items()}
    options = {role: chip_options(role, spec, model, hardware[role], need, source) for role, (spec, need) in specs.items()}
    roles = list(specs)
    count = math.prod(len(options[r]) for r in roles)
    if count > MAX_CHIP_COMBINATIONS:
        raise PlanInputError(
            f"{count} combinations of chips per instance (at most {MAX_CHIP_COMBINATIONS}): shorten the "
            "lists or lower max_gpus_per_instance",
            source=source,
            field="gpus_per_instance",
        )
    combos = [tuple(options[r][0] for r in roles)] if first_only else list(itertools.product(*(options[r] for r in roles)))
    pools: dict[tuple[Role, int], Pool | PlanInputError] = {}
    decodes: dict[int, tuple[Decode, list[str]]] = {}

    def pool_of(role: Role, gpus: int) -> Pool:
        key = (role, gpus)
        if key not in pools:
            spec, need = specs[role]
            try:
                pool = _pool(role, spec, model, hardware[role], gpus, options[role], source, role != Role.pd_decode, basis, base)
                if spec.count_range[1] > 0:
                    try:
                        require_fit(model, pool.instance, need)
                    except PlanInputError as exc:
                        raise PlanInputError(exc.reason, source=source, field=f"{role}.gpus_per_instance") from None
                pools[key] = pool
            except PlanInputError as exc:
                pools[key] = exc
        if isinstance(pools[key], PlanInputError):
            raise pools[key]
        return pools[key]

    out: list[PlanInputs] = []
    first_error: PlanInputError | None = None
    skipped: dict[str, None] = {}
    for combo in combos:
        try:
            chosen = {role: pool_of(role, gpus) for role, gpus in zip(roles, combo)}
        except PlanInputError as exc:
            first_error = first_error or exc
            skipped[f"{exc.field}: {exc.reason}"] = None
            continue
        decoder = chosen.get(Role.pd_decode, chosen[Role.pd])
        if decoder.gpus_per_instance not in decodes:
            written = (scenario.pd_decode or scenario.pd).hardware
            decodes[decoder.gpus_per_instance] = _decode(scenario, model, decoder, written, context, source, basis, base)
        decode, decode_notes = decodes[decoder.gpus_per_instance]
        pool_notes = [n for pool in chosen.values() for n in pool.notes]
        out.append(_assemble(scenario, source, model, chosen, workload, decode, notes + pool_notes + decode_notes))
    if not out:
        raise first_error
    if skipped:
        left_out = tuple(f"chips per instance left out, {reason}" for reason in skipped)
        out = [replace(inputs, notes=inputs.notes + left_out) for inputs in out]
    return out


def _assemble(
    scenario: Scenario,
    source: str | None,
    model: ModelProfile,
    chosen: dict,
    workload: Workload,
    decode: Decode,
    notes: list[str],
) -> PlanInputs:
    link = scenario.link
    slo = scenario.slo
    prfaas, pd, pd_decode = chosen[Role.prfaas], chosen[Role.pd], chosen.get(Role.pd_decode)
    return PlanInputs(
        name=scenario.name,
        source=source,
        model=model,
        prfaas=prfaas,
        pd=pd,
        link=Link(
            gbps_to_bytes_per_s(link.bandwidth_gbps),
            link.usable_fraction,
            link.rtt_ms / 1000.0,
            LinkCost(link.usd_per_gbps_month, link.usd_per_gb_egress),
        ),
        workload=workload,
        decode=decode,
        limits=_limits(scenario, [p for p in (prfaas, pd, pd_decode) if p is not None], source),
        objective=Objective(scenario.objective.type, scenario.objective.target_rate_rps),
        slo=None if slo is None else Slo(slo.ttft_p90_s, slo.ttft_p99_s, slo.tpot_ms),
        latency=LatencySettings(scenario.latency.operating_load, scenario.latency.arrival_cv**2),
        optimiser=OptimiserSettings(scenario.optimiser.method, scenario.optimiser.coarse_thresholds),
        notes=tuple(notes),
        pd_decode=pd_decode,
    )


def _workload(scenario: Scenario, source: str | None) -> Workload:
    spec = scenario.workload
    full_input = build_distribution(spec.input, source, "workload.input")
    uncached = full_input
    if spec.prefix_cache is not None:
        try:
            uncached = with_prefix_cache(full_input, spec.prefix_cache.hit_fractions, spec.prefix_cache.probs)
        except PlanInputError as exc:
            raise exc.with_field("workload.prefix_cache").with_source(source) from None
    output = build_distribution(spec.output, source, "workload.output")
    if spec.cluster_caches is None:
        return Workload(uncached, full_input, output)
    cc = spec.cluster_caches
    caches = ClusterCaches(
        full_input,
        *(HitDistribution.none() if c is None else HitDistribution.of(c.hit_fractions, c.probs) for c in (cc.pd, cc.prfaas)),
        cc.regime,
    )
    try:
        workload = Workload(uncached, full_input, output, caches)
        return workload.with_cache_regime(CacheRegime.scarce if cc.regime == CacheRegime.auto else cc.regime)
    except PlanInputError as exc:
        raise exc.with_field(exc.field or "workload.cluster_caches").with_source(source) from None


def _decode_context(scenario: Scenario, model: ModelProfile, workload: Workload, source: str | None) -> int:
    """Context per decoding request: given, or the mean full input + half the mean output
    (decode holds the whole context, cached prefix included), within the model's context."""
    given = scenario.decode.context_tokens
    if given is not None and given > model.max_context_tokens:
        raise PlanInputError(
            f"{given} tokens exceeds {model.name}'s context of {model.max_context_tokens}",
            source=source,
            field="decode.context_tokens",
        )
    default = int(round(workload.full_input_dist.mean_tokens() + workload.output_mean_tokens / 2))
    return given or min(default, model.max_context_tokens)


def _decode(
    scenario: Scenario,
    model: ModelProfile,
    pd: Pool,
    written: str,
    context: int,
    source: str | None,
    basis: Basis = Basis.as_given,
    base: Path | None = None,
) -> tuple[Decode, list[str]]:
    """What one instance of the decoding pool (``pd``: the PD pool, or the decode-only pool, whose
    hardware the scenario names ``written``) sustains, on ``basis`` (``planner.basis``); notes."""
    dec = scenario.decode
    rate, notes = measured_decode_rate(
        dec.tokens_per_s_per_instance, dec.tokens_per_s_hardware, written, pd.gpus_per_instance, dec.tokens_per_s_gpus, base
    )
    if rate is not None and basis == Basis.as_given:
        return Decode(context, dec.tpot_ms, dec.max_batch, rate, DecodeSource.scenario, None), notes
    try:
        capacity = decode_capacity(model, pd.instance, context, tpot_ms=dec.tpot_ms, max_batch=dec.max_batch)
    except PlanInputError as exc:
        raise PlanInputError(exc.reason, source=source, field=f"decode.{exc.field}" if exc.field else "decode") from None
    used = decode_source(rate is not None, capacity.source, basis)
    return Decode(context, dec.tpot_ms, dec.max_batch, capacity.tokens_per_s if rate is None else rate, used, capacity), notes


def _limits(scenario: Scenario, pools: list[Pool], source: str | None) -> Limits:
    """Instance ranges and budgets; every GPU budget names a hardware the scenario uses."""
    names = {pool.hardware_name for pool in pools}
    budgets: dict[str, int] = {}
    for name, chips in scenario.budgets.gpus.items():
        key = name if name in names else canonical_name(name, "hardware_profiles") or name  # 'H200' is h200
        if key not in names:
            raise PlanInputError(
                f"budget for '{name}', which no pool uses (they use {', '.join(sorted(names))})",
                source=source,
                field=f"budgets.gpus.{name}",
            )
        if key in budgets:
            raise PlanInputError(f"a second budget for '{key}'", source=source, field=f"budgets.gpus.{name}")
        budgets[key] = chips
    (f_lo, f_hi), (pd_lo, pd_hi) = scenario.prfaas.count_range, scenario.pd.count_range
    d_lo, d_hi = scenario.pd_decode.count_range if scenario.pd_decode is not None else (None, None)
    return Limits(f_lo, f_hi, pd_lo, pd_hi, budgets, scenario.budgets.usd_per_hour, d_lo, d_hi)


def validate_scenario(data: object, source: str) -> Scenario:
    """Check a parsed scenario file completely (schema, references, workload, fit)."""
    scenario = load_scenario(data, source)
    try:
        build_variants(scenario, source)
        check_references(scenario, source)
    except PlanInputError as exc:
        raise exc.with_source(source) from None
    return scenario


def check_references(scenario: Scenario, source: str | None, options=()) -> None:
    """Every hardware and model that the ``compare:`` section or ``options`` name resolves
    (a path relative to the scenario's folder); an error names the first that does not."""
    from ..profiles.scenario_set import references

    base = Path(source).resolve().parent if source else None
    for field_, ref, kind in references(scenario, tuple(options)):
        resolver = resolve_hardware if kind == "hardware" else resolve_model
        try:
            resolver(_ref(ref, base, source, field_))
        except PlanInputError as exc:
            raise PlanInputError(exc.reason, source=source, field=field_) from None
