"""Scenario schema: a model, the PrfaaS and PD clusters, the link, the workload, decode
settings, budgets and the objective. Units are in the field names.

Instance counts are either a fixed integer or ``{min, max}`` to optimise over. A
cluster's ``calibration_points`` (length -> measured or implied prefill seconds) fit its
hardware's efficiency factors on the scenario's model before planning (see
``prfaas_plan.calibrate``).
"""

from typing import Annotated, Literal

from pydantic import Field, Strict, model_validator

from ..choices import (
    Basis,
    CacheRegime,
    CongestionControl,
    CurveSource,
    Eviction,
    FitParam,
    ObjectiveKind,
    OptimiserMethod,
    PrefillCapacity,
    RobustObjective,
    SnapshotPolicy,
    WorkloadType,
)
from ..ranges import (
    ARRIVAL_CV,
    BLOCK_TOKENS,
    CACHE_GIB,
    CALIBRATION_POINTS,
    COARSE_THRESHOLDS,
    CONNECTIONS,
    CONVERSION_S,
    DAY_WINDOWS,
    DECODE_BATCH,
    DECODE_TOKENS_PER_S,
    GPU_BUDGET,
    GPU_BUDGET_ENTRIES,
    INPUT_SCALE,
    INSTANCES,
    LINK_GBPS,
    LOSS_RATE,
    MSS_BYTES,
    OPERATING_LOAD,
    RATE_RPS,
    RTT_MS,
    SLO_SECONDS,
    SNAPSHOT_EVERY_BLOCKS,
    TPOT_MS,
    USD_PER_GB,
    USD_PER_GBPS_MONTH,
    USD_PER_HOUR_BUDGET,
    WINDOW_BYTES,
    WINDOW_HOURS,
)
from ._base import Chips, Fraction, Items, Name, PathText, StrictModel, Text, Tokens, Weight, Within, refuse, validate_or_raise
from .cost_spec import CostSpec, SiteSpec
from .model import PrefillPoint
from .serving import EngineSpec, LayoutSpec, PrecisionSpec
from .workload_spec import FixedSpec, LengthSpec

_INSTANCES = Annotated[int, Within(INSTANCES)]
_HIT_FRACTION = Annotated[float, Strict(), Field(ge=0, lt=1)]


class CountRange(StrictModel):
    min: _INSTANCES
    max: _INSTANCES

    _ordered = refuse(lambda s: s.min > s.max, lambda s: f"min ({s.min}) is above max ({s.max})")


DEFAULT_GPUS_PER_INSTANCE = 8


def measured_instance_defaults(measured: dict, pool: object, hardware_key: str, gpus_key: str) -> dict:
    """The defaults of a measurement's instance (``measured``'s ``hardware_key`` and ``gpus_key``
    where it leaves them out): the ``pool`` mapping's hardware as written, and its chips per
    instance when it gives one count (8 when it gives none, the field's default)."""
    out: dict = {}
    if not isinstance(pool, dict):
        return out
    if measured.get(hardware_key) is None and isinstance(pool.get("hardware"), str):
        out[hardware_key] = pool["hardware"]
    chips = pool.get("gpus_per_instance", DEFAULT_GPUS_PER_INSTANCE)
    if measured.get(gpus_key) is None and type(chips) is int:
        out[gpus_key] = chips
    return out


AUTO = "auto"


class ClusterSpec(StrictModel):
    """One pool of identical instances. ``gpus_per_instance``: a count, a list to choose from,
    or ``auto`` (the fewest chips whose memory holds the model and the longest request, and
    its multiples up to ``max_gpus_per_instance``, default twice that count); the planner
    chooses among several."""

    hardware: PathText  # shipped name or YAML path (relative to the scenario file)
    gpus_per_instance: Chips | Annotated[list[Chips], Field(min_length=1, max_length=16)] | Literal["auto"] = Field(
        DEFAULT_GPUS_PER_INSTANCE, union_mode="left_to_right"
    )
    max_gpus_per_instance: Chips | None = None  # the cap of `auto`
    instances: _INSTANCES | CountRange = Field(union_mode="left_to_right")
    cost: CostSpec = Field(default_factory=CostSpec)  # rental (default: the profile's example price) or purchase
    site: SiteSpec = Field(default_factory=SiteSpec)  # electricity price, PUE, idle draw
    source: CurveSource = CurveSource.auto  # prefill curve source
    parallel: LayoutSpec | None = None  # the instance's layout (default: the best that fits, per job)
    engine: EngineSpec = Field(default_factory=EngineSpec)
    prefill_capacity: PrefillCapacity | None = None  # default: saturated for the roofline, else per request
    calibration_points: Annotated[list[PrefillPoint], Field(max_length=int(CALIBRATION_POINTS.hi))] = Field(default_factory=list)
    calibration_fit: Annotated[list[FitParam], Items()] | None = None  # default: matmul, attention, prefill_overhead_s
    calibration_note: Text = ""
    # the hardware and the chips per instance the calibration points were measured on (default:
    # this pool's, as written; the chips when it gives one count); a pool on other hardware or
    # another chip count does not use them (``study.basis``)
    calibration_hardware: PathText | None = None
    calibration_gpus: Chips | None = None

    @model_validator(mode="before")
    @classmethod
    def _measured_on(cls, data):
        """Calibration points belong to the hardware and chips the file gives the pool."""
        if isinstance(data, dict) and data.get("calibration_points"):
            data = {**data, **measured_instance_defaults(data, data, "calibration_hardware", "calibration_gpus")}
        return data

    _cap = refuse(
        lambda s: s.max_gpus_per_instance is not None and s.gpus_per_instance != AUTO,
        "max_gpus_per_instance is the cap of gpus_per_instance: auto",
        (
            lambda s: s.calibration_points and s.calibration_gpus is None,
            lambda s: (
                "calibration_gpus: give the chips per instance the calibration points were measured on "
                f"(gpus_per_instance is {s.gpus_per_instance!r:.40}, not one count)"
            ),
        ),
    )

    @property
    def count_range(self) -> tuple[int, int]:
        if isinstance(self.instances, int):
            return self.instances, self.instances
        return self.instances.min, self.instances.max


_TRANSPORT_FIELDS = ("loss_rate", "mss_bytes", "window_bytes", "connections_per_transfer")


class LinkSpec(StrictModel):
    """The PrfaaS -> PD link. With ``congestion_control`` the TCP transport bounds it too
    (``timing.transport``): each transfer's rate follows from the loss rate, MSS, window and
    connections per transfer (defaults: 1,460-byte MSS, 4 MiB window, one connection)."""

    bandwidth_gbps: Annotated[float, Within(LINK_GBPS)]  # decimal Gbps, PrfaaS egress to the PD cluster (0: no link)
    usable_fraction: Fraction = 1.0  # share of the link KV transfers may use
    rtt_ms: Annotated[float, Within(RTT_MS)] = 0.0
    usd_per_gbps_month: Annotated[float, Within(USD_PER_GBPS_MONTH)] = 0.0  # committed price on the raw bandwidth
    usd_per_gb_egress: Annotated[float, Within(USD_PER_GB)] = 0.0  # metered price per decimal GB of KV shipped
    cost_note: Text = ""
    congestion_control: CongestionControl | None = None  # None: no transport model (the usable fraction alone)
    loss_rate: Annotated[float, Within(LOSS_RATE)] | None = None  # packets lost per packet sent
    mss_bytes: Annotated[int, Within(MSS_BYTES)] | None = None  # default 1,460 (1,500-byte MTU)
    window_bytes: Annotated[int, Within(WINDOW_BYTES)] | None = None  # per connection; default 4 MiB (Linux tcp_wmem max)
    connections_per_transfer: Annotated[int, Within(CONNECTIONS)] | None = None  # default 1
    transport_note: Text = ""  # where the loss rate and the other transport figures come from

    _transport = refuse(
        lambda s: s.congestion_control is None and any(getattr(s, f) is not None for f in _TRANSPORT_FIELDS),
        lambda s: (
            f"{next(f for f in _TRANSPORT_FIELDS if getattr(s, f) is not None)} is a transport field: "
            "give congestion_control (loss_based or bbr) with it"
        ),
        (
            lambda s: s.congestion_control is not None and s.loss_rate is None,
            "congestion_control needs loss_rate (the measured packet loss rate; 0 for none)",
        ),
        (
            lambda s: s.congestion_control is not None and s.rtt_ms <= 0,
            "congestion_control needs rtt_ms above 0 (a TCP connection's rate is a window per round trip)",
        ),
    )


class PrefixCacheSpec(StrictModel):
    hit_fractions: Annotated[list[_HIT_FRACTION], Items(min_length=1)]  # cached share of the input
    probs: Annotated[list[Weight], Items(min_length=1)]

    _paired = refuse(
        lambda s: len(s.hit_fractions) != len(s.probs),
        lambda s: f"{len(s.hit_fractions)} hit_fractions need as many probs, got {len(s.probs)}",
        (lambda s: sum(s.probs) <= 0, "probs are all zero"),
    )


class CacheMemorySpec(StrictModel):
    """The memory one cluster sets aside for its prefix cache, in GiB (2^30 bytes), all instances together."""

    hbm_gib: Annotated[float, Within(CACHE_GIB)]
    dram_gib: Annotated[float, Within(CACHE_GIB)] = 0.0  # host DRAM, a second tier


class SnapshotSpec(StrictModel):
    """Where a hybrid model keeps state snapshots (``workload.prefix_cache``)."""

    policy: SnapshotPolicy = SnapshotPolicy.every_k_blocks
    every_blocks: Annotated[int, Within(SNAPSHOT_EVERY_BLOCKS)] = 1


class TraceCacheSpec(StrictModel):
    """Prefix caches replayed over a Mooncake-style JSONL trace (``workload.trace_caches``); its
    input lengths are the workload's input. A cluster left out has no cache."""

    path: PathText  # relative to the scenario file
    block_tokens: Annotated[int, Within(BLOCK_TOKENS)] = 512  # Mooncake's hash_ids: 512-token blocks
    eviction: Eviction = Eviction.lru
    snapshots: SnapshotSpec = Field(default_factory=SnapshotSpec)
    pd: CacheMemorySpec | None = None
    prfaas: CacheMemorySpec | None = None

    _some = refuse(lambda s: s.pd is None and s.prfaas is None, "give the cache memory of pd, of prfaas, or of both")


class ClusterCachesSpec(StrictModel):
    """Prefix caches per cluster (cache-aware routing, ``workload.cluster_cache``): hit
    distributions (``pd``, ``prfaas``; a cluster left out has none) or a trace replayed
    through a cache model (``from_trace``)."""

    pd: PrefixCacheSpec | None = None
    prfaas: PrefixCacheSpec | None = None
    from_trace: TraceCacheSpec | None = None
    regime: CacheRegime = CacheRegime.auto

    _some = refuse(
        lambda s: s.pd is None and s.prfaas is None and s.from_trace is None,
        "give the prefix cache of pd, of prfaas, or of both (or from_trace)",
        (
            lambda s: s.from_trace is not None and (s.pd is not None or s.prfaas is not None),
            "give hit distributions (pd, prfaas) or from_trace, not both",
        ),
    )


def _input_weight(s) -> bool:
    return s.input is not None and s.input.weight is not None


class WorkloadSpec(StrictModel):
    input: LengthSpec | None = None  # input length distribution (prfaas_plan.workload builds it); required but with from_trace
    output: LengthSpec = Field(default_factory=lambda: FixedSpec(type=WorkloadType.fixed, tokens=1024))
    prefix_cache: PrefixCacheSpec | None = None  # one cache for both clusters
    cluster_caches: ClusterCachesSpec | None = None  # a cache per cluster, cache-aware routing

    _no_top_level_weight = refuse(
        lambda s: (s.input is None) == (s.cluster_caches is None or s.cluster_caches.from_trace is None),
        lambda s: (
            "input: required (or cluster_caches.from_trace)"
            if s.input is None
            else "input: leave it out, cluster_caches.from_trace gives the input lengths"
        ),
        (
            lambda s: _input_weight(s) or s.output.weight is not None,
            lambda s: f"{'input' if _input_weight(s) else 'output'}: weight is only for a mixture's components",
        ),
        (
            lambda s: s.prefix_cache is not None and s.cluster_caches is not None,
            "give prefix_cache (one cache for both clusters) or cluster_caches, not both",
        ),
    )


class DecodeSpec(StrictModel):
    context_tokens: Tokens | None = None  # default: mean input + half the mean output
    tpot_ms: Annotated[float, Within(TPOT_MS)] | None = None
    max_batch: Annotated[int, Within(DECODE_BATCH)] | None = None
    tokens_per_s_per_instance: Annotated[float, Within(DECODE_TOKENS_PER_S)] | None = None  # measured: overrides the roofline
    tokens_per_s_note: Text = ""
    # the hardware and the chips per instance the rate was measured on (default: the decoding
    # pool's, as written: pd_decode's, else pd's; the chips when it gives one count); a decoding
    # pool on other hardware or another chip count does not use it (``study.basis``)
    tokens_per_s_hardware: PathText | None = None
    tokens_per_s_gpus: Chips | None = None


_GPU_BUDGETS = Annotated[dict[Name, Annotated[int, Within(GPU_BUDGET)]], Field(max_length=int(GPU_BUDGET_ENTRIES.hi))]


class BudgetSpec(StrictModel):
    gpus: _GPU_BUDGETS = Field(default_factory=dict)
    usd_per_hour: Annotated[float, Within(USD_PER_HOUR_BUDGET)] | None = None


class ObjectiveSpec(StrictModel):
    """max_throughput, or min_cost: the cheapest plan serving a target (one site: ``target_rate_rps``,
    required; several sites: every PD site's ``rate_rps``, so no target is given)."""

    type: ObjectiveKind = ObjectiveKind.max_throughput
    target_rate_rps: Annotated[float, Within(RATE_RPS)] | None = None


class SloSpec(StrictModel):
    """Latency targets; any may be omitted. TTFT percentiles are over all requests."""

    ttft_p90_s: Annotated[float, Within(SLO_SECONDS)] | None = None
    ttft_p99_s: Annotated[float, Within(SLO_SECONDS)] | None = None
    tpot_ms: Annotated[float, Within(TPOT_MS)] | None = None

    _some = refuse(
        lambda s: s.ttft_p90_s is None and s.ttft_p99_s is None and s.tpot_ms is None,
        "give at least one of ttft_p90_s, ttft_p99_s, tpot_ms",
    )


class LatencySpec(StrictModel):
    operating_load: Annotated[float, Within(OPERATING_LOAD)] = 0.8  # reported rate = load x Lambda_max
    arrival_cv: Annotated[float, Within(ARRIVAL_CV)] = 1.0  # coefficient of variation of inter-arrival times (1: Poisson)


class OptimiserSpec(StrictModel):
    method: OptimiserMethod = OptimiserMethod.auto  # see prfaas_plan.planner.optimizer
    coarse_thresholds: Annotated[int, Within(COARSE_THRESHOLDS)] = 48  # MILP candidates (quantiles of L)


class CompareSpec(StrictModel):
    """Options that ``prfaas-plan compare`` plans in every combination (each list replaces one
    part of the scenario; an empty list keeps the scenario's own). ``pd_decode: [none]`` plans
    without a separate decode pool."""

    prfaas: Annotated[list[PathText], Items()] = Field(default_factory=list)  # hardware of the PrfaaS pool
    pd: Annotated[list[PathText], Items()] = Field(default_factory=list)  # hardware of the PD (or PD-P) pool
    pd_decode: Annotated[list[PathText], Items()] = Field(default_factory=list)  # hardware of a decode-only pool, or "none"
    model: Annotated[list[PathText], Items()] = Field(default_factory=list)
    link_gbps: Annotated[list[Annotated[float, Within(LINK_GBPS)]], Items()] = Field(default_factory=list)
    basis: Basis = Basis.model  # what every option is sized on (``choices.Basis``)


class CaseLinkSpec(StrictModel):
    """A link's bandwidth in one case of a robust multi-site plan."""

    prfaas: Name
    pd: Name
    bandwidth_gbps: Annotated[float, Within(LINK_GBPS)]


MAX_SITES = 16
_RATES = Annotated[dict[Name, Annotated[float, Within(RATE_RPS)]], Field(max_length=MAX_SITES)]  # per site


class RobustCaseSpec(StrictModel):
    """One case of a robust plan: what it changes of the scenario (the rest is kept). One site:
    ``workload``, ``link_gbps``, ``target_rate_rps``; several sites: ``workload`` (of every PD
    site), ``rates`` (per PD site), ``links`` (per link)."""

    name: Name
    weight: Annotated[float, Strict(), Field(ge=0, le=1)] = 0.0  # of ``weighted``; the weights sum to 1
    workload: WorkloadSpec | None = None  # what it changes of the scenario's workload (the rest is the file's)
    link_gbps: Annotated[float, Within(LINK_GBPS)] | None = None  # replaces the link's bandwidth (one site)
    target_rate_rps: Annotated[float, Within(RATE_RPS)] | None = None  # of ``min_cost`` (default: the objective's; one site)
    rates: _RATES = Field(default_factory=dict)
    links: Annotated[list[CaseLinkSpec], Field(max_length=MAX_SITES * MAX_SITES)] = Field(default_factory=list)


class RobustSpec(StrictModel):
    """Several workload mixes, rates or bandwidths served by one set of instance counts (each case
    with its own threshold and PD split)."""

    objective: RobustObjective = RobustObjective.worst_case
    cases: Annotated[list[RobustCaseSpec], Field(min_length=2, max_length=16)]

    @model_validator(mode="after")
    def _consistent(self):
        names = [c.name for c in self.cases]
        if len(set(names)) < len(names):
            raise ValueError("case names must differ")
        # the weights: needed by ``weighted``; under the other objectives optional, and when given they
        # make the report's weighted figure and break ties, so they sum to 1 under every objective
        total = sum(c.weight for c in self.cases)
        if self.weighted and abs(total - 1.0) > 1e-6:
            missing = [c.name for c in self.cases if "weight" not in c.model_fields_set]
            without = f" ({', '.join(missing)} give{'s' if len(missing) == 1 else ''} none)" if missing else ""
            raise ValueError(f"the cases' weights sum to {total:g}, not 1{without}")
        return self

    @property
    def weighted(self) -> bool:
        """Whether the cases carry weights (the ``weighted`` objective, or any case gives one)."""
        return self.objective == RobustObjective.weighted or any("weight" in c.model_fields_set for c in self.cases)


class WindowSpec(StrictModel):
    """One window of a day: its length, its arrival rate (one site: ``rate_rps``, required; several
    sites: ``rates`` per PD site, sites left out keeping their ``rate_rps``) and how its input
    lengths shift (one site)."""

    name: Name | None = None
    hours: Annotated[float, Within(WINDOW_HOURS)]
    rate_rps: Annotated[float, Within(RATE_RPS)] | None = None
    rates: _RATES = Field(default_factory=dict)
    input_scale: Annotated[float, Within(INPUT_SCALE)] = 1.0  # every input length x this factor (capped at the model's context)


class DaySpec(StrictModel):
    """Traffic that changes through the day: the counts are bought once, the PD-P / PD-D split and
    the threshold are chosen per window (``planner.schedule``; several sites: ``planner.sites``)."""

    windows: Annotated[list[WindowSpec], Field(min_length=1, max_length=int(DAY_WINDOWS.hi))]
    conversion_s: Annotated[float, Within(CONVERSION_S)] = 300.0  # one instance switching between PD-P and PD-D is idle this long
    max_switches_per_window: _INSTANCES | None = None  # role switches between consecutive windows (None: any)


class DeploymentSpec(StrictModel):
    """What every scenario file gives, of one site (``Scenario``) or of several (``profiles.sites``):
    the model, the workload, decode settings, budgets, the objective, compare options, robust
    cases and the windows of a day."""

    name: Name
    description: Text = ""
    notes: Annotated[list[Text], Items()] = Field(default_factory=list)
    model: PathText  # shipped name or YAML path
    # the model the file's measurements (every pool's calibration_points, decode's
    # tokens_per_s_per_instance) were taken on (default: ``model``); a plan of another model does
    # not use them (``study.resolve``)
    measurements_model: PathText | None = None
    precision: PrecisionSpec | None = None  # dtype overrides of the model (weights, experts, kv, attention)
    workload: WorkloadSpec
    decode: DecodeSpec = Field(default_factory=DecodeSpec)
    budgets: BudgetSpec = Field(default_factory=BudgetSpec)
    objective: ObjectiveSpec = Field(default_factory=ObjectiveSpec)
    compare: CompareSpec | None = None  # options of `prfaas-plan compare`
    robust: RobustSpec | None = None  # cases of `prfaas-plan robust`
    day: DaySpec | None = None  # windows of `prfaas-plan schedule` (several sites: of `prfaas-plan sites`)
    optimiser: OptimiserSpec = Field(default_factory=OptimiserSpec)  # several sites: coarse_thresholds per site


class Scenario(DeploymentSpec):
    """One site: a PrfaaS pool, a PD pool (and a decode-only pool) and the link between them."""

    prfaas: ClusterSpec
    pd: ClusterSpec  # the local PD cluster; with pd_decode, its prefill (PD-P) pool only
    pd_decode: ClusterSpec | None = None  # a decode-only pool of the local cluster (e.g. LPUs beside H200 PD-P)
    link: LinkSpec
    slo: SloSpec | None = None
    latency: LatencySpec = Field(default_factory=LatencySpec)

    @model_validator(mode="before")
    @classmethod
    def _decode_measured_on(cls, data):
        """A measured decode rate belongs to the hardware the file gives the decoding pool."""
        if not isinstance(data, dict) or not isinstance(data.get("decode"), dict):
            return data
        decode = data["decode"]
        pool = data.get("pd_decode") or data.get("pd")
        if decode.get("tokens_per_s_per_instance") is not None:
            defaults = measured_instance_defaults(decode, pool, "tokens_per_s_hardware", "tokens_per_s_gpus")
            data = {**data, "decode": {**decode, **defaults}}
        return data

    @model_validator(mode="after")
    def _one_site_fields(self):
        """The fields of the one-site form: a min_cost target, a rate per window, no per-site rates."""
        if self.objective.type == ObjectiveKind.min_cost and self.objective.target_rate_rps is None and self.day is None:
            raise ValueError("objective: min_cost needs target_rate_rps (or a day: whose windows' rates are its targets)")
        for k, window in enumerate(self.day.windows if self.day else ()):
            if window.rates:
                raise ValueError(f"day.windows[{k}].rates: per-site rates are for several sites; give rate_rps")
            if window.rate_rps is None:
                raise ValueError(f"day.windows[{k}].rate_rps: required field is missing")
        for k, case in enumerate(self.robust.cases if self.robust else ()):
            for field, instead in (("rates", "target_rate_rps"), ("links", "link_gbps")):
                if getattr(case, field):
                    raise ValueError(f"robust.cases[{k}].{field}: is for several sites; one site gives {instead}")
        return self

    @model_validator(mode="after")
    def _decode_pool(self):
        if self.pd_decode is not None and self.pd_decode.count_range[1] == 0:
            raise ValueError("pd_decode has no instances: give it some, or leave pd_decode out")
        dec, pool = self.decode, self.pd_decode or self.pd
        if dec.tokens_per_s_per_instance is not None and dec.tokens_per_s_gpus is None:
            role = "pd_decode" if self.pd_decode is not None else "pd"
            raise ValueError(
                f"decode.tokens_per_s_gpus: give the chips per instance the rate was measured on "
                f"({role}.gpus_per_instance is {pool.gpus_per_instance!r:.40}, not one count)"
            )
        return self


def load_scenario(data: object, source: str | None = None) -> Scenario:
    return validate_or_raise(Scenario, data, source)
