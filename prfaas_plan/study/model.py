"""The resolved deployment: every quantity in SI units, every profile loaded, every choice of
the file made. ``study.resolve`` builds it (the only reader of scenario fields); the planner,
the latency model, the simulator and the reports read it.

``PlanInputs`` is one PD site served by one PrfaaS site over one link in one window: the view
the throughput model, the one-site optimiser and the reports take. ``Study`` holds the sites,
pools, links and windows of a deployment (``Study.pair`` gives each PD x PrfaaS pair's
``PlanInputs``; a one-site scenario is the 1x1 study). ``DecodeModel`` (``decode_model``) is
the decode side of a ``PlanInputs``: the batch and the step time T_step(b) of one PD-D instance.

Every what-if replaces a whole part (``with_link_gbps``, ``with_limits``, ``with_decode``),
so a derived figure can never be left behind by a changed input. What-ifs that need the pools
resolved again (another hardware, another model) are ``study.resolve``'s: ``OneSite`` for one
site, ``resolve_sites``' replacements for several.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from ..choices import CacheRegime, CurveSource, DecodeSource, ObjectiveKind, OptimiserMethod, RobustObjective, Role
from ..errors import PlanInputError
from ..profiles.model import ModelProfile
from ..profiles.registry import canonical_name
from ..ranges import DECODE_TOKENS_PER_S, GPU_BUDGET, INSTANCES, LINK_GBPS, USD_PER_HOUR_BUDGET
from ..timing.calibrate import CalibrationResult
from ..timing.decode import DecodeCapacity, decode_capacity, decode_step_s
from ..timing.instance import Instance
from ..timing.prefill import PrefillCurve
from ..timing.transport import Transport, connections_to_fill
from ..units import bytes_per_s_to_gbps, gbps_to_bytes_per_s
from ..workload.cluster_cache import ClusterCaches, RoutedPoints, routed_points
from ..workload.distributions import LengthDistribution, class_stats_table, scaled
from .prices import ChipCost, LinkCost


@dataclass(frozen=True)
class Link:
    """The PrfaaS -> PD link. Bandwidths in bytes/s (decimal: 1 Gbps = 1.25e8 B/s)."""

    bandwidth_bytes_per_s: float  # the link's raw rate
    usable_fraction: float  # share of it that KV transfers may use
    rtt_s: float
    cost: LinkCost = LinkCost()
    transport: Transport | None = None  # its TCP transport (None: the usable fraction alone bounds it)

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

    @property
    def connection_bytes_per_s(self) -> float:
        """One TCP connection's rate (``timing.transport``); inf without a transport model."""
        return math.inf if self.transport is None else self.transport.connection_bytes_per_s(self.rtt_s)

    @property
    def transfer_bytes_per_s(self) -> float:
        """One transfer's rate over its connections (``timing.transport``); inf without a transport model."""
        return math.inf if self.transport is None else self.transport.transfer_bytes_per_s(self.rtt_s)

    def carried_bytes_per_s(self, transfers, usable_bytes_per_s=None):
        """The KV bytes/s the link carries with ``transfers`` in flight (a count or an array; the
        planner's rule: one per PrfaaS instance): min(usable, transfers x one transfer's rate).
        ``usable_bytes_per_s`` replaces the usable bandwidth (bandwidth sweeps). Without a
        transport model, the usable bandwidth as given."""
        usable = self.usable_bytes_per_s if usable_bytes_per_s is None else usable_bytes_per_s
        if self.transport is None:
            return usable
        return np.minimum(usable, np.asarray(transfers, dtype=float) * self.transfer_bytes_per_s)

    def share_bytes_per_s(self, transfers: int) -> float:
        """One transfer's share of the usable bandwidth with ``transfers`` in flight: usable / transfers."""
        return self.usable_bytes_per_s / transfers if transfers > 0 else self.usable_bytes_per_s

    def connections_to_fill(self, transfers: int) -> int | None:
        """Connections a transfer needs to reach its share with ``transfers`` in flight (None
        without a transport model)."""
        if self.transport is None:
            return None
        return connections_to_fill(self.share_bytes_per_s(transfers), self.connection_bytes_per_s)

    def transport_binds(self, transfers: int) -> bool:
        """Whether the transport, not the bandwidth, bounds what the link carries with
        ``transfers`` in flight (the link is then full in name only)."""
        return bool(self.carried_bytes_per_s(transfers) < self.usable_bytes_per_s)

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
    notes: tuple[str, ...] = ()  # measurements of other hardware left out (``study.basis``)

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
    # a request trace's joint (``workload.joint``): E[output | input = l_i] per input_dist support
    # point, and the decode context E[y (x + y/2)] / E[y] in tokens; None for independent marginals
    output_by_input: np.ndarray | None = None
    decode_context_tokens: float | None = None
    trace: object | None = None  # the ``workload.traces.Trace`` the joint or caches are of (``simulate.replay`` replays it)

    def with_cache_regime(self, regime: CacheRegime) -> Workload:
        """The same workload routed under ``regime`` (scarce or plentiful)."""
        if self.caches is None:
            raise PlanInputError("the scenario has no cluster_caches", field="workload.cluster_caches")
        routed = routed_points(self.caches, regime)
        return replace(self, routed=routed, input_dist=routed.routing_distribution())

    @property
    def output_mean_tokens(self) -> float:
        return self.output_dist.mean_tokens()

    def output_class_means(self, t_tokens) -> tuple[np.ndarray, np.ndarray] | None:
        """(E[output | L > t], E[output | L <= t]) in tokens, the decode tokens of a request of
        each class at threshold t, from a trace's joint (None without one); NaN for an empty class."""
        if self.output_by_input is None:
            return None
        return class_stats_table(self.input_dist).class_means(self.output_by_input, t_tokens)


@dataclass(frozen=True)
class Decode:
    """What one PD-D instance sustains."""

    context_tokens: int  # context per decoding request: mean full input + half the mean output, or given
    tpot_ms: float | None  # the scenario's TPOT limit on the batch
    max_batch: int | None
    tokens_per_s_per_instance: float
    source: DecodeSource  # the scenario's figure, the roofline, or the model profile's measurement
    capacity: DecodeCapacity | None  # the roofline's batch (None when the scenario gives tokens/s)
    batch: int | None = None  # a scenario's rate: the batch it holds at, within the TPOT limit (``held_to_tpot``)


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

    def with_input_scale(self, scale: float, field: str = "input_scale") -> PlanInputs:
        """The same scenario with every input length x ``scale`` (capped at the model's context), as a
        window of a day shifts them; a roofline decode rate follows the new context (a rate the
        scenario gives is kept). Cluster caches do not combine with it yet (an error naming ``field``)."""
        if scale == 1.0:
            return self
        if self.workload.caches is not None:
            raise PlanInputError("a day profile with input_scale does not combine with cluster_caches yet", field=field)
        cap = float(self.model.max_context_tokens)
        w = self.workload
        workload = Workload(scaled(w.input_dist, scale, cap), scaled(w.full_input_dist, scale, cap), w.output_dist)
        decode = self.decode
        if decode.batch is None and decode.capacity is not None:  # not a rate the scenario gives
            context = int(min(round(workload.full_input_dist.mean_tokens() + workload.output_mean_tokens / 2), cap))
            capacity = decode_capacity(
                self.model, self.decode_pool.instance, context, tpot_ms=decode.tpot_ms, max_batch=decode.max_batch
            )
            decode = Decode(
                context, decode.tpot_ms, decode.max_batch, capacity.tokens_per_s, DecodeSource(capacity.source), capacity
            )
        return replace(self, workload=workload, decode=decode)

    def with_decode_tokens_per_s(self, tokens_per_s: float) -> PlanInputs:
        """The same scenario with a given decode throughput per PD-D instance, held to the TPOT
        limit as a file's would be (``held_to_tpot``)."""
        DECODE_TOKENS_PER_S.check(tokens_per_s, "decode.tokens_per_s_per_instance")
        dec = self.decode
        k, per_token, _ = measured_rate_scale(
            self.model, self.decode_pool.instance, dec.context_tokens, tokens_per_s, dec.max_batch
        )
        batch, held = held_to_tpot(k, per_token, tokens_per_s, dec.tpot_ms)
        given = replace(dec, tokens_per_s_per_instance=held, source=DecodeSource.scenario, capacity=None, batch=batch)
        return replace(self, decode=given)


# ---------------------------------------------------------------------------------------
# A deployment of several sites


@dataclass(frozen=True)
class PrfaasSite:
    """A PrfaaS site: one pool of identical instances, N_j of them within ``instances``."""

    name: str
    pool: Pool
    instances: tuple[int, int]  # (min, max)


@dataclass(frozen=True)
class PdSite:
    """A PD site: its users' demand, their workload, its PD pool (its PD-P pool beside a
    decode-only pool) and what one decoding instance sustains."""

    name: str
    pool: Pool
    decode_pool: Pool | None  # a decode-only pool; None: the PD pool decodes too
    workload: Workload
    decode: Decode
    instances: tuple[int, int]  # N_p + N_d (min, max); with a decode-only pool, N_p
    decode_instances: tuple[int, int] | None  # N_d of the decode-only pool
    demand_rps: float  # the users' rate, req/s (the demand a plan's scale multiplies)

    @property
    def decode_rps_per_instance(self) -> float:
        """Requests/s one decoding instance completes: tokens/s / mean output tokens."""
        return self.decode.tokens_per_s_per_instance / self.workload.output_mean_tokens

    @property
    def decoder(self) -> Pool:
        return self.decode_pool or self.pool


@dataclass(frozen=True)
class Window:
    """A window of the day: its length and each PD site's demand in it (req/s)."""

    name: str
    hours: float
    rates_rps: dict[str, float]


@dataclass(frozen=True)
class Case:
    """A case of a robust plan: the PD sites (their demand, workload and decode rate) as the case has
    them and the links whose bandwidth it changes; the pools, counts and other links are the study's
    (so a what-if on the study reaches every case)."""

    name: str
    weight: float
    pd_sites: tuple[PdSite, ...]
    link_gbps: dict[tuple[str, str], float]  # (PrfaaS site, PD site) -> the case's raw bandwidth (others: the study's)


@dataclass(frozen=True)
class Study:
    """One deployment: PrfaaS sites and PD sites, the links between them (a missing pair has
    none), the windows of a day (one steady window without one), budgets and the objective.
    Instance counts are shared by every window; thresholds, PD-P / PD-D splits and offloads are
    per window. A role switch idles the instance ``conversion_s``."""

    name: str
    source: str | None
    model: ModelProfile
    prfaas_sites: tuple[PrfaasSite, ...]
    pd_sites: tuple[PdSite, ...]
    links: dict[tuple[str, str], Link]  # (PrfaaS site, PD site) -> link
    windows: tuple[Window, ...]
    gpu_budget: dict[str, int] = field(default_factory=dict)  # hardware name -> most chips
    usd_per_hour: float | None = None  # provisioned $/hour, committed links included
    objective: ObjectiveKind = ObjectiveKind.max_throughput
    conversion_s: float = 0.0
    max_switches: int | None = None  # per PD site, between consecutive windows
    optimiser: OptimiserSettings = OptimiserSettings()
    notes: tuple[str, ...] = ()
    cases: tuple[Case, ...] = ()  # of a robust plan (none: the study as given)
    robust: RobustObjective | None = None  # what a robust plan optimises over the cases
    day: bool = False  # the windows are a day section's (else the one steady window)

    # What-ifs: each replaces a whole part of the resolved study, so nothing derived is left behind.

    def under(self, case: Case) -> Study:
        """The study as ``case`` has it: its sites (their demand, workload and decode rate) on the
        study's instance ranges (so a purchase fixed by ``with_counts`` holds in every case), its
        links, and each window's demand of a site x the case's rate / the site's own (a case scales
        a site's demand; a day shapes it); no cases."""
        ratio = {s.name: c.demand_rps / s.demand_rps for s, c in zip(self.pd_sites, case.pd_sites)}
        windows = tuple(replace(w, rates_rps={k: v * ratio[k] for k, v in w.rates_rps.items()}) for w in self.windows)
        links = {k: v.with_bandwidth_gbps(case.link_gbps[k]) if k in case.link_gbps else v for k, v in self.links.items()}
        sites = tuple(
            replace(c, instances=s.instances, decode_instances=s.decode_instances) for s, c in zip(self.pd_sites, case.pd_sites)
        )
        return replace(self, pd_sites=sites, links=links, windows=windows, cases=(), robust=None)

    def case(self, name: str) -> Study:
        """The study under its robust case ``name``."""
        found = next((c for c in self.cases if c.name == name), None)
        if found is None:
            raise PlanInputError(
                f"no case '{name}' (cases: {', '.join(c.name for c in self.cases) or 'none'})", field="robust.cases"
            )
        return self.under(found)

    def window(self, name: str) -> Study:
        """The study in its window ``name`` alone (no role switches: there is no window before it)."""
        found = next((w for w in self.windows if w.name == name), None)
        if found is None:
            raise PlanInputError(f"no window '{name}' (windows: {', '.join(w.name for w in self.windows)})", field="day.windows")
        return replace(self, windows=(found,))

    def with_link(self, prfaas: str, pd: str, gbps: float) -> Study:
        """The study with the link from ``prfaas`` to ``pd`` at ``gbps`` raw (its usable fraction,
        RTT and prices kept; a pair without a link gets one)."""
        LINK_GBPS.check(gbps, f"links.{prfaas}-{pd}.bandwidth_gbps")
        self.site(pd), self.prfaas_site(prfaas)  # both exist
        link = self.links.get((prfaas, pd)) or Link(0.0, 1.0, 0.0)
        return replace(self, links={**self.links, (prfaas, pd): link.with_bandwidth_gbps(gbps)})

    def with_links_gbps(self, gbps: float) -> Study:
        """The study with every link at ``gbps`` raw (each link's usable fraction, RTT and prices kept)."""
        LINK_GBPS.check(gbps, "links.bandwidth_gbps")
        return replace(self, links={k: link.with_bandwidth_gbps(gbps) for k, link in self.links.items()})

    def with_counts(self, n_prfaas: dict[str, int], n_pd: dict[str, int], n_decode: dict[str, int]) -> Study:
        """The study with every count fixed (a plan's purchase: N_j, N_i and N_d of decode-only pools)."""
        return replace(
            self,
            prfaas_sites=tuple(replace(f, instances=(n_prfaas[f.name],) * 2) for f in self.prfaas_sites),
            pd_sites=tuple(
                replace(
                    s,
                    instances=(n_pd[s.name],) * 2,
                    decode_instances=None if s.decode_pool is None else (n_decode[s.name],) * 2,
                )
                for s in self.pd_sites
            ),
        )

    def with_limits(self, usd_per_hour: float | None = None, gpu_budget: dict[str, int] | None = None) -> Study:
        """The study under other budgets (None: the study's own), checked as the file's are."""
        if usd_per_hour is not None:
            USD_PER_HOUR_BUDGET.check(usd_per_hour, "budgets.usd_per_hour")
        names = {pool.hardware_name for pool in self.pools}
        return replace(
            self,
            usd_per_hour=self.usd_per_hour if usd_per_hour is None else usd_per_hour,
            gpu_budget=self.gpu_budget if gpu_budget is None else gpu_budgets(gpu_budget, names),
        )

    def identity(self) -> dict:
        """``PlanInputs.identity`` of a multi-site plan (the columns of a one-site one): each
        hardware, chip count and link as one value, or per site where they differ (``joined``)."""
        prfaas = {f.name: f.pool for f in self.prfaas_sites}
        pd = {s.name: s.pool for s in self.pd_sites}
        return {
            "scenario": self.name,
            "model": self.model.name,
            "prfaas_hardware": joined({k: p.hardware_name for k, p in prfaas.items()}),
            "prfaas_gpus_per_instance": joined({k: p.gpus_per_instance for k, p in prfaas.items()}),
            "pd_hardware": joined({k: p.hardware_name for k, p in pd.items()}),
            "pd_gpus_per_instance": joined({k: p.gpus_per_instance for k, p in pd.items()}),
            "pd_decode_hardware": None,
            "pd_decode_gpus_per_instance": None,
            "link_gbps": joined({f"{f}-{d}": round(link.bandwidth_gbps, 6) for (f, d), link in self.links.items()}),
        }

    def site(self, name: str) -> PdSite:
        found = next((s for s in self.pd_sites if s.name == name), None)
        if found is None:
            raise PlanInputError(f"no PD site '{name}' (sites: {', '.join(s.name for s in self.pd_sites)})", field="pd_sites")
        return found

    def prfaas_site(self, name: str) -> PrfaasSite:
        found = next((s for s in self.prfaas_sites if s.name == name), None)
        if found is None:
            raise PlanInputError(
                f"no PrfaaS site '{name}' (sites: {', '.join(s.name for s in self.prfaas_sites)})", field="prfaas_sites"
            )
        return found

    def link(self, prfaas: str, pd: str) -> Link | None:
        return self.links.get((prfaas, pd))

    @property
    def pools(self) -> tuple[Pool, ...]:
        """Every pool, PrfaaS sites first, each once."""
        pd = tuple(p for s in self.pd_sites for p in (s.pool, s.decode_pool) if p is not None)
        return tuple(s.pool for s in self.prfaas_sites) + pd

    def pair(self, pd: str, prfaas: str) -> PlanInputs:
        """PD site ``pd`` served by PrfaaS site ``prfaas`` alone, over their link (0 Gbps where
        there is none): the one-site view the throughput model takes (no budgets; max throughput)."""
        site, factory = self.site(pd), self.prfaas_site(prfaas)
        link = self.link(prfaas, pd) or Link(0.0, 1.0, 0.0)
        d_lo, d_hi = site.decode_instances or (None, None)
        limits = Limits(*factory.instances, *site.instances, {}, None, d_lo, d_hi)
        return PlanInputs(
            name=f"{self.name}:{pd}",
            source=self.source,
            model=self.model,
            prfaas=factory.pool,
            pd=site.pool,
            link=link,
            workload=site.workload,
            decode=site.decode,
            limits=limits,
            optimiser=self.optimiser,
            notes=self.notes,
            pd_decode=site.decode_pool,
        )


def joined(values: dict) -> object:
    """One value when every site has it, else 'site=value' for each."""
    distinct = set(values.values())
    return next(iter(distinct)) if len(distinct) == 1 else "; ".join(f"{k}={v}" for k, v in values.items())


def gpu_budgets(gpus: dict[str, int], names: set[str]) -> dict[str, int]:
    """GPU budgets by resolved hardware name ('H200' is h200); every one names a hardware of
    ``names`` (the pools'), once, and is a sane count."""
    budgets: dict[str, int] = {}
    for name, chips in gpus.items():
        key = name if name in names else canonical_name(name, "hardware_profiles") or name
        if key not in names:
            raise PlanInputError(
                f"budget for '{name}', which no pool uses (they use {', '.join(sorted(names))})", field=f"budgets.gpus.{name}"
            )
        if key in budgets:
            raise PlanInputError(f"a second budget for '{key}'", field=f"budgets.gpus.{name}")
        if isinstance(chips, bool) or not isinstance(chips, int):
            raise PlanInputError(f"must be a count of chips, got {chips!r:.40}", field=f"budgets.gpus.{name}")
        GPU_BUDGET.check(chips, f"budgets.gpus.{name}")
        budgets[key] = chips
    return budgets


@dataclass(frozen=True)
class DecodeModel:
    """The decode side of a plan: batch size, step time T_step(b) and throughput of one PD-D instance.

    The batch is the roofline's (``timing.decode.decode_capacity``: memory, the scenario's
    TPOT limit, its ``max_batch``), or for a rate the scenario gives the batch it holds at
    within the TPOT limit (``held_to_tpot``). Without a measured throughput, T_step(b) is the
    roofline step time. With one (``decode.tokens_per_s_per_instance``), the roofline's step
    times are rescaled by one factor so that the instance delivers exactly the measured
    tokens/s at that batch: T_step(b) = k * T_roof(b), k = (BS / measured) / T_roof(BS).
    """

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


def measured_rate_scale(model: ModelProfile, instance, context_tokens: int, tokens_per_s: float, max_batch: int | None):
    """A measured decode rate (output tokens/s of one instance) on the roofline's curve of time
    per output token (a step over the tokens it accepts, ``mtp_tokens_per_step``): it belongs to
    the batch the limits other than TPOT give (``max_batch``, memory: B_m), and the roofline's
    times rescaled through it, T(b) = k T_roof(b) with k = (B_m / rate) / T_roof(B_m), give the
    time at other batches. Returns (k, T_roof(b) for b = 1..B_m in seconds per output token,
    the roofline's capacity at B_m)."""
    cap = decode_capacity(model, instance, context_tokens, max_batch=max_batch, source=CurveSource.roofline)
    sizes = np.arange(1, cap.batch_size + 1, dtype=float)
    per_token = decode_step_s(model, instance, sizes, context_tokens, cap.layout) / instance.engine.mtp_tokens_per_step
    return (cap.batch_size / tokens_per_s) / float(per_token[-1]), per_token, cap


def held_to_tpot(k: float, steps: np.ndarray, tokens_per_s: float, tpot_ms: float | None) -> tuple[int, float]:
    """(batch, tokens/s) of a measured rate held to a TPOT limit (``measured_rate_scale``'s k and
    T_roof): the largest batch whose time per output token k T_roof(b) meets the limit, and the
    rate there, b / (k T_roof(b)); the measured point itself when it meets the limit or there is none."""
    if tpot_ms is None or k * float(steps[-1]) * 1e3 <= tpot_ms * (1 + 1e-9):
        return len(steps), tokens_per_s
    within = np.flatnonzero(k * steps * 1e3 <= tpot_ms * (1 + 1e-9))  # steps rise with the batch: a prefix
    if within.size == 0:
        raise PlanInputError(
            f"the scenario's {tokens_per_s:,.0f} tokens/s per instance, on the roofline's curve through it, "
            f"take {k * float(steps[0]) * 1e3:.2f} ms per output token with one running request, "
            f"above the limit of {tpot_ms:g} ms",
            field="decode.tpot_ms",
        )
    batch = int(within[-1]) + 1
    return batch, batch / (k * float(steps[batch - 1]))


def decode_model(inputs: PlanInputs) -> DecodeModel:
    """The decode side of ``inputs``: its batch (a scenario's rate: the batch it holds at,
    ``decode.batch``; else ``decode.capacity``, else the roofline's) and T_step(b) for b =
    1..batch, rescaled to a measured tokens/s where one is given."""
    dec = inputs.decode
    context = dec.context_tokens
    pool = inputs.decode_pool.instance
    if dec.batch is not None:  # held to the TPOT limit already (``held_to_tpot``)
        cap = decode_capacity(inputs.model, pool, context, max_batch=dec.batch, source=CurveSource.roofline)
    else:
        cap = dec.capacity or decode_capacity(
            inputs.model, pool, context, tpot_ms=dec.tpot_ms, max_batch=dec.max_batch, source=CurveSource.roofline
        )
    sizes = np.arange(1, cap.batch_size + 1, dtype=float)
    steps = decode_step_s(inputs.model, inputs.decode_pool.instance, sizes, context, cap.layout)
    if dec.source != DecodeSource.roofline:
        steps = steps * (cap.batch_size / dec.tokens_per_s_per_instance) / steps[-1]
    return DecodeModel(cap.batch_size, steps, context)
