"""One window of a multi-site plan (``planner.sites``) as a ``Topology`` for the simulator
(``engine.run``), and what it measured per PD site.

Per PD site i, Poisson arrivals at ``load`` x the rate the plan serves there, with its counts and
threshold; a remote request goes to PrfaaS site j with probability proportional to the plan's
offload from i to j (``Link.weight``) and ships its KV over link (j, i), prefill times and KV sizes
from that pair's curves (the request model of ``engine.py``).

Measured per site: TTFT (mean, P90) after a warm-up tenth of its requests (in arrival order),
the mean egress on each of its links, and whether its queues stay bounded: the site's total
queue (PD-P, decode, and its requests waiting at PrfaaS sites) sampled every second while its
requests arrive, its mean over the last 20% of that time at most twice that over the first 20%
plus the site's instance count. Egress is the site's time-weighted mean over the window its
measured requests arrive in (from its first request after the warm-up to its last arrival; not
the drain after it, ``results.window_mean``), split over its links by the bytes each sent.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..study.model import decode_model
from .bandwidth import CapacitySchedule
from .config import SimConfig
from .engine import run
from .results import window_mean
from .topology import Link, PdSite, PrfaasSite, Topology

WARMUP_SHARE = 0.1  # of a site's requests (in arrival order) left out of its TTFT statistics


@dataclass(frozen=True)
class SiteSim:
    name: str
    rate_rps: float
    completed: int
    ttft_mean_s: float
    ttft_p90_s: float
    egress_gbps: dict  # PrfaaS site -> mean egress on the link, decimal Gbps
    first_queue: float
    last_queue: float
    stable: bool


def sites_topology(si, plan, window: int = 0, load: float = 0.8, requests: int = 4000) -> Topology:
    """Window ``window`` of ``plan`` (a ``planner.sites.SitesPlan`` of ``si``, its ``study.model.Study``)
    at ``load`` x each PD site's served rate, ``requests`` per PD site."""
    pd, links = [], []
    factories = [f.name for f in si.prfaas_sites]
    for site in plan.windows[window].pd:
        inputs = si.pair(site.name, factories[0])
        pd.append(
            PdSite(
                site.name,
                load * site.served_rps,
                requests,
                inputs.input_dist,
                inputs.workload,
                inputs.pd.curve,
                site.n_p,
                site.n_d,
                decode_model(inputs),
                site.threshold_tokens,
                separate_decode=inputs.pd_decode is not None,
                field_prefix=f"pd_sites.{site.name}.",
            )
        )
        for f in factories:
            if (f, site.name) in si.links:
                pair = si.pair(site.name, f)
                schedule = CapacitySchedule(pair.link.usable_bytes_per_s)
                weight = site.offload_rps.get(f, 0.0)
                links.append(
                    Link(f, site.name, schedule, pair.link.rtt_s, pair.prfaas.curve, weight, pair.link.transfer_bytes_per_s)
                )
    prfaas = tuple(PrfaasSite(f, plan.n_prfaas.get(f, 0)) for f in factories)
    return Topology(tuple(pd), prfaas, tuple(links))


def simulate_sites(si, plan, window: int = 0, load: float = 0.8, requests: int = 4000, seed: int = 0) -> list[SiteSim]:
    """Simulate ``requests`` requests per PD site of one window of ``plan`` (see the module docstring)."""
    topology = sites_topology(si, plan, window, load, requests)
    config = SimConfig(rate_rps=topology.pd[0].rate_rps, requests=requests, seed=seed)  # sampled every second
    log = run(topology, config)
    out = []
    for k, site in enumerate(topology.pd):
        per_request = log.per_request(k)
        ttft = per_request["ttft_s"][int(len(per_request["ttft_s"]) * WARMUP_SHARE) :]
        series = log.series[k]
        arrivals = series["time_s"] <= per_request["arrival_s"][-1]  # the site's arrivals, not the drain
        queue = (series["pdp_queue_requests"] + series["decode_queue_requests"] + series["remote_waiting_requests"])[arrivals]
        fifth = max(len(queue) // 5, 1)  # the first and last 20% of the samples
        first_queue, last_queue = float(queue[:fifth].mean()), float(queue[-fifth:].mean())
        arrival_s = per_request["arrival_s"]
        start_s = float(arrival_s[int(len(arrival_s) * WARMUP_SHARE)]) if len(arrival_s) > 1 else 0.0
        total_gbps = window_mean(series, "egress_gbps", start_s, float(arrival_s[-1])) or 0.0
        links = topology.links_of(site.name)
        sent = sum(log.link_sent_bytes[l] for l in links)
        egress = {topology.links[l].prfaas: total_gbps * log.link_sent_bytes[l] / sent if sent else 0.0 for l in links}
        out.append(
            SiteSim(
                site.name,
                site.rate_rps,
                len(log.completion_order(k)),
                float(ttft.mean()),
                float(np.quantile(ttft, 0.9)),
                egress,
                first_queue,
                last_queue,
                last_queue <= 2 * first_queue + site.n_p + site.n_d,
            )
        )
    return out
