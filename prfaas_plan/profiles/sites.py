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

import difflib
from typing import Annotated

from pydantic import Field, model_validator

from ..choices import CacheRegime
from ..ranges import RATE_RPS
from ._base import Name, Within, validate_or_raise
from .scenario import MAX_SITES, ClusterSpec, DeploymentSpec, LinkSpec, WorkloadSpec


class PrfaasSiteSpec(ClusterSpec):
    name: Name


class PdSiteSpec(ClusterSpec):
    name: Name
    rate_rps: Annotated[float, Within(RATE_RPS)]  # the site's users' demand
    workload: WorkloadSpec | None = None  # default: the scenario's

    @model_validator(mode="before")
    @classmethod
    def _no_decode_pool(cls, data):
        """A decode-only pool is a one-site scenario's (``pd_decode``): say so, rather than that the
        field is unknown."""
        if isinstance(data, dict) and "pd_decode" in data:
            raise ValueError("pd_decode: a one-site field; a PD site of a multi-site file has no decode-only pool")
        return data


class SiteLinkSpec(LinkSpec):
    prfaas: Name  # a PrfaaS site's name
    pd: Name  # a PD site's name


ONE_SITE_FIELDS = ("prfaas", "pd", "pd_decode", "link", "slo", "latency")  # ``Scenario``'s own


class SitesScenario(DeploymentSpec):
    """Several sites: PrfaaS sites, PD sites (each with its users' demand) and the links between them;
    the model, workload (each PD site's default), decode settings, budgets, objective, compare
    options, robust cases and day are the common ones (``profiles.scenario.DeploymentSpec``)."""

    prfaas_sites: Annotated[list[PrfaasSiteSpec], Field(min_length=1, max_length=MAX_SITES)]
    pd_sites: Annotated[list[PdSiteSpec], Field(min_length=1, max_length=MAX_SITES)]
    links: Annotated[list[SiteLinkSpec], Field(max_length=MAX_SITES * MAX_SITES)] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _no_one_site_fields(cls, data):
        """A one-site field in a multi-site file: say so, rather than that it is unknown."""
        for field in ONE_SITE_FIELDS:
            if isinstance(data, dict) and field in data:
                raise ValueError(f"{field}: a one-site field; a multi-site file gives prfaas_sites, pd_sites and links")
        return data

    @model_validator(mode="after")
    def _names(self):
        if self.compare is not None and self.compare.pd_decode:
            raise ValueError("compare.pd_decode: a multi-site file has no decode-only pools")
        if self.objective.target_rate_rps is not None:
            raise ValueError("objective.target_rate_rps: several sites' targets are their rate_rps")
        for k, window in enumerate(self.day.windows if self.day else ()):
            for field, given in (("rate_rps", window.rate_rps is not None), ("input_scale", window.input_scale != 1.0)):
                if given:
                    raise ValueError(f"day.windows[{k}].{field}: is for one site; give rates per PD site")
        for k, case in enumerate(self.robust.cases if self.robust else ()):
            for field, instead in (("link_gbps", "links"), ("target_rate_rps", "rates")):
                if getattr(case, field) is not None:
                    raise ValueError(f"robust.cases[{k}].{field}: is for one site; several sites give {instead}")
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
            _known(link.prfaas, prfaas, "PrfaaS", f"links[{k}].prfaas")
            _known(link.pd, pd, "PD", f"links[{k}].pd")
            if (link.prfaas, link.pd) in pairs:
                raise ValueError(f"links[{k}]: a second link from {link.prfaas} to {link.pd}")
            pairs.add((link.prfaas, link.pd))
        for k, case in enumerate(self.robust.cases if self.robust else ()):
            for site in case.rates:
                _known(site, pd, "PD", f"robust.cases[{k}].rates")
            for j, link in enumerate(case.links):
                _known(link.prfaas, prfaas, "PrfaaS", f"robust.cases[{k}].links[{j}].prfaas")
                _known(link.pd, pd, "PD", f"robust.cases[{k}].links[{j}].pd")
                if (link.prfaas, link.pd) not in pairs:
                    raise ValueError(f"robust.cases[{k}].links[{j}]: no link from {link.prfaas} to {link.pd} in links")
        for k, window in enumerate(self.day.windows if self.day else ()):
            for site in window.rates:
                _known(site, pd, "PD", f"day.windows[{k}].rates")
        return self


def load_sites_scenario(data: object, source: str | None = None) -> SitesScenario:
    return validate_or_raise(SitesScenario, data, source)


def _known(name: str, names: set[str], kind: str, where: str) -> None:
    """``name`` is one of the file's ``kind`` sites (else a one-line error, with the closest name)."""
    if name in names:
        return
    close = difflib.get_close_matches(name, sorted(names), n=1)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    raise ValueError(f"{where}: unknown {kind} site '{name}' (sites: {', '.join(sorted(names))}){hint}")
