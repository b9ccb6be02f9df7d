"""What the simulator runs: one window of a deployment as a plain, typed topology.

A ``Topology`` is PD sites, PrfaaS sites (pools of prefill instances shared by every PD site
linked to them) and one link per (PrfaaS site, PD site) pair. Callers build it from what they
planned (``engine.one_site_topology`` for a one-site plan, ``sites.sites_topology`` for one window
of a multi-site plan); the event loop (``engine.run``) reads nothing else. A one-site deployment
is the 1 x 1 case: one PD site, one PrfaaS site, one link.

Units: rates in requests/s, times in seconds, bandwidths in bytes/s (the link's
``CapacitySchedule``), lengths in tokens.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..study.model import DecodeModel, Workload
    from ..timing.prefill import PrefillCurve
    from ..workload.distributions import LengthDistribution
    from .bandwidth import CapacitySchedule


@dataclass(frozen=True)
class PrfaasSite:
    """A PrfaaS site: ``instances`` prefill instances, one FIFO queue for every PD site it serves."""

    name: str
    instances: int


@dataclass(frozen=True)
class Link:
    """The link from PrfaaS site ``prfaas`` to PD site ``pd`` and what a request sent over it costs.

    ``curve`` is the PrfaaS site's prefill curve for the PD site's model (prefill seconds,
    instance-hold seconds and KV bytes by length); ``weight`` the share of the PD site's remote
    requests sent over this link (the plan's offload, normalised over the site's links)."""

    prfaas: str
    pd: str
    schedule: CapacitySchedule  # usable capacity over time, bytes/s
    rtt_s: float
    curve: PrefillCurve
    weight: float = 1.0
    transfer_bytes_per_s: float = math.inf  # one transfer's most (``study.model.Link``; inf without a transport model)


@dataclass(frozen=True)
class PdSite:
    """A PD site: its arrivals, workload, PD-P and decode instances and routing threshold.

    ``workload`` is the scenario's ``Workload`` (its ``output_dist``, and ``routed`` with cluster
    caches); ``input_dist`` the uncached input lengths a request routes on. ``separate_decode``:
    decode runs on a pool of its own (``pd_decode``), so PD instances cannot switch roles.
    ``field_prefix`` goes before the field an error names (``""`` for a one-site plan)."""

    name: str
    rate_rps: float
    requests: int
    input_dist: LengthDistribution
    workload: Workload
    local_curve: PrefillCurve  # PD-P's prefill curve
    n_p: int
    n_d: int
    decode: DecodeModel
    threshold_tokens: float  # remote iff the uncached input exceeds it (and the site has a link)
    separate_decode: bool = False
    field_prefix: str = ""


@dataclass(frozen=True)
class Topology:
    pd: tuple[PdSite, ...]
    prfaas: tuple[PrfaasSite, ...]
    links: tuple[Link, ...]

    def links_of(self, pd: str) -> list[int]:
        """Indices (into ``links``) of the links into PD site ``pd``."""
        return [k for k, link in enumerate(self.links) if link.pd == pd]
