"""Multi-site scenario schema: several PD sites (each with its users' rate, workload and
hardware) sharing one or more PrfaaS sites over links of their own (``planner.sites``).

```yaml
name: two-edges
model: prfaas-1t-hybrid
prfaas_sites:
  - {name: factory, hardware: h200, gpus_per_instance: 8, instances: {min: 0, max: 8},
     site: {usd_per_kwh: 0.04}}
pd_sites:
  - {name: east, hardware: h20, gpus_per_instance: 8, instances: 8, rate_rps: 1.5}
  - {name: west, hardware: h20, gpus_per_instance: 8, instances: 8, rate_rps: 1.0,
     workload: {input: {...}}}
links:
  - {prfaas: factory, pd: east, bandwidth_gbps: 10, rtt_ms: 20}
  - {prfaas: factory, pd: west, bandwidth_gbps: 100, rtt_ms: 60}
workload: {input: {...}, output: {...}}   # the default of every PD site
```

A PD site's ``rate_rps`` is its users' demand: ``max_throughput`` maximises the scale s by
which every site's demand can grow together (s >= 1: all served); ``min_cost`` is the
cheapest plan with s >= 1 (``objective: {type: min_cost}``; the sites' rates are the targets).
Chips per instance are counts, and a cache regime is chosen (not ``auto``), per site. Links
are between a PrfaaS site and a PD site (a missing pair has
no link); each has its bandwidth, usable fraction, RTT and price.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, Strict, model_validator

from ..choices import CacheRegime, ObjectiveKind, RobustObjective
from ..ranges import CONVERSION_S, DAY_WINDOWS, INSTANCES, LINK_GBPS, RATE_RPS, WINDOW_HOURS
from ._base import Float, Int, List, Name, StrictModel, Text, validate_or_raise
from .scenario import BudgetSpec, ClusterSpec, CompareSpec, DecodeSpec, LinkSpec, WorkloadSpec
from .serving import PrecisionSpec

MAX_SITES = 16


class PrfaasSiteSpec(ClusterSpec):
    name: Name


class PdSiteSpec(ClusterSpec):
    name: Name
    rate_rps: Float(RATE_RPS)  # the site's users' demand
    workload: WorkloadSpec | None = None  # default: the scenario's


class SiteLinkSpec(LinkSpec):
    prfaas: Name  # a PrfaaS site's name
    pd: Name  # a PD site's name


class SitesWindowSpec(StrictModel):
    """One window of a multi-site day: its length and each PD site's rate (sites left out keep their
    rate_rps)."""

    name: Name | None = None
    hours: Float(WINDOW_HOURS)
    rates: Annotated[dict[Name, Float(RATE_RPS)], Field(max_length=MAX_SITES)] = Field(default_factory=dict)


class SitesDaySpec(StrictModel):
    windows: Annotated[list[SitesWindowSpec], Field(min_length=1, max_length=int(DAY_WINDOWS.hi))]
    conversion_s: Float(CONVERSION_S) = 300.0  # an instance switching between PD-P and PD-D is idle this long
    max_switches_per_window: Int(INSTANCES) | None = None  # per site, between consecutive windows


class SitesObjectiveSpec(StrictModel):
    """max_throughput: the largest common demand scale; min_cost: the cheapest plan serving every
    site's rate_rps (the sites' rates are the targets)."""

    type: ObjectiveKind = ObjectiveKind.max_throughput


class CaseLinkSpec(StrictModel):
    """A link's bandwidth in one case of a robust plan."""

    prfaas: Name
    pd: Name
    bandwidth_gbps: Float(LINK_GBPS)


class SitesCaseSpec(StrictModel):
    """One case of a robust multi-site plan: what it changes (the rest is kept)."""

    name: Name
    weight: Annotated[float, Strict(), Field(ge=0, le=1)] = 0.0  # of ``weighted``; the weights sum to 1
    rates: Annotated[dict[Name, Float(RATE_RPS)], Field(max_length=MAX_SITES)] = Field(default_factory=dict)
    workload: WorkloadSpec | None = None  # replaces the workload of every PD site
    links: Annotated[list[CaseLinkSpec], Field(max_length=MAX_SITES * MAX_SITES)] = Field(default_factory=list)


class SitesRobustSpec(StrictModel):
    """Several cases served by one set of instance counts (each case with its own thresholds, splits
    and offloads): ``worst_case`` maximises the smallest demand scale, ``weighted`` the weighted
    mean, ``min_cost`` serves every case's rates at the lowest $/hour."""

    objective: RobustObjective = RobustObjective.worst_case
    cases: Annotated[list[SitesCaseSpec], Field(min_length=2, max_length=16)]

    @model_validator(mode="after")
    def _consistent(self):
        names = [c.name for c in self.cases]
        if len(set(names)) < len(names):
            raise ValueError("case names must differ")
        total = sum(c.weight for c in self.cases)
        if self.objective == RobustObjective.weighted and abs(total - 1.0) > 1e-6:
            raise ValueError(f"the cases' weights sum to {total:g}, not 1")
        return self


class SitesScenario(StrictModel):
    name: Name
    description: Text = ""
    notes: List(Text) = Field(default_factory=list)
    model: Annotated[str, Field(min_length=1, max_length=4096)]
    precision: PrecisionSpec | None = None
    prfaas_sites: Annotated[list[PrfaasSiteSpec], Field(min_length=1, max_length=MAX_SITES)]
    pd_sites: Annotated[list[PdSiteSpec], Field(min_length=1, max_length=MAX_SITES)]
    links: Annotated[list[SiteLinkSpec], Field(max_length=MAX_SITES * MAX_SITES)] = Field(default_factory=list)
    workload: WorkloadSpec
    decode: DecodeSpec = Field(default_factory=DecodeSpec)
    budgets: BudgetSpec = Field(default_factory=BudgetSpec)
    objective: SitesObjectiveSpec = Field(default_factory=SitesObjectiveSpec)
    day: SitesDaySpec | None = None  # windows of the day: the counts are shared, the splits and thresholds not
    robust: SitesRobustSpec | None = None  # cases of `prfaas-plan robust`: the counts are shared
    compare: CompareSpec | None = None  # options of `prfaas-plan compare` (every PrfaaS site, every PD site, every link)

    @model_validator(mode="after")
    def _names(self):
        if self.compare is not None and self.compare.pd_decode:
            raise ValueError("compare.pd_decode: a multi-site file has no decode-only pools")
        for kind, sites in (("prfaas_sites", self.prfaas_sites), ("pd_sites", self.pd_sites)):
            names = [s.name for s in sites]
            if len(set(names)) < len(names):
                raise ValueError(f"{kind}: site names must differ")
        for kind, sites in (("prfaas_sites", self.prfaas_sites), ("pd_sites", self.pd_sites)):
            for k, site in enumerate(sites):
                if not isinstance(site.gpus_per_instance, int):
                    raise ValueError(f"{kind}[{k}].gpus_per_instance: give a count (lists and auto are for one-site scenarios)")
        for k, site in enumerate(self.pd_sites):
            caches = (site.workload or self.workload).cluster_caches
            if caches is not None and caches.regime == CacheRegime.auto:
                raise ValueError(
                    f"pd_sites[{k}]: cluster_caches.regime auto is for one-site scenarios; choose scarce or plentiful"
                )
        prfaas, pd = {s.name for s in self.prfaas_sites}, {s.name for s in self.pd_sites}
        pairs = set()
        for k, link in enumerate(self.links):
            if link.prfaas not in prfaas:
                raise ValueError(f"links[{k}].prfaas: unknown PrfaaS site '{link.prfaas}' (sites: {', '.join(sorted(prfaas))})")
            if link.pd not in pd:
                raise ValueError(f"links[{k}].pd: unknown PD site '{link.pd}' (sites: {', '.join(sorted(pd))})")
            if (link.prfaas, link.pd) in pairs:
                raise ValueError(f"links[{k}]: a second link from {link.prfaas} to {link.pd}")
            pairs.add((link.prfaas, link.pd))
        for k, case in enumerate(self.robust.cases if self.robust else ()):
            for site in case.rates:
                if site not in pd:
                    raise ValueError(f"robust.cases[{k}].rates: unknown PD site '{site}' (sites: {', '.join(sorted(pd))})")
            for j, link in enumerate(case.links):
                if (link.prfaas, link.pd) not in pairs:
                    raise ValueError(f"robust.cases[{k}].links[{j}]: no link from {link.prfaas} to {link.pd}")
        for k, window in enumerate(self.day.windows if self.day else ()):
            for site in window.rates:
                if site not in pd:
                    raise ValueError(f"day.windows[{k}].rates: unknown PD site '{site}' (sites: {', '.join(sorted(pd))})")
        return self


def load_sites_scenario(data: object, source: str | None = None) -> SitesScenario:
    return validate_or_raise(SitesScenario, data, source)
