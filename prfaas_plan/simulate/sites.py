"""A discrete-event simulation of a multi-site plan (``planner.sites``): several PD sites, each
with its own arrivals, PD-P and decode instances, sharing PrfaaS sites over links of their own.

Per PD site i, Poisson arrivals at ``load`` x the rate the plan serves there (one window of the
plan); an input length from the site's distribution; remote iff it exceeds the site's threshold.
A remote request goes to PrfaaS site j with probability proportional to the plan's offload
from i to j, waits for one of j's instances (a FIFO resource shared by every PD site), and
ships its KV over link (i, j) (``link.KvLink``: processor sharing, layer-wise pipelining); a
local one waits for the site's PD-P. Decode on the site's PD-D (``decode_pool.DecodePool``).
Prefill times and KV sizes come from each pair's curves, as in the one-site simulator
(``engine.py``), whose request model this follows.

Measured per site: TTFT (mean, P90) after a warm-up tenth of the completions, the mean egress
on each of its links, and whether its queues stay bounded: the site's total queue (PD-P,
decode, and its requests waiting at PrfaaS sites) sampled every second while its requests
arrive, its mean over the last 20% of that time at most twice that over the first 20% plus the
site's instance count. Egress is
the bytes a link sent until the site's last completion, over that time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import simpy

from ..planner.decode_model import decode_model
from .arrivals import arrival_times_s
from .bandwidth import CapacitySchedule
from .config import SimConfig
from .decode_pool import DecodePool
from .link import KvLink

SAMPLE_S = 1.0


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


def simulate_sites(si, plan, window: int = 0, load: float = 0.8, requests: int = 4000, seed: int = 0) -> list[SiteSim]:
    """Simulate ``requests`` requests per PD site of one window of ``plan`` (see the module docstring)."""
    env = simpy.Environment()
    rng = np.random.default_rng(seed)
    prfaas = {f: simpy.Resource(env, capacity=max(n, 1)) for f, n in plan.n_prfaas.items()}
    sites = plan.windows[window].pd
    factories = [f.name for f in si.prfaas_sites]
    state = []
    for k, site in enumerate(sites):
        inputs = si.pair(site.name, factories[0])
        rate = load * site.served_rps
        arrivals = arrival_times_s(SimConfig(rate_rps=rate, requests=requests, seed=seed + k), rng)
        lengths = inputs.input_dist.sample(rng, requests)
        weights = np.array([site.offload_rps.get(f, 0.0) for f in factories])
        choice = (
            rng.choice(len(factories), size=requests, p=weights / weights.sum())
            if weights.sum() > 0
            else np.zeros(requests, dtype=int)
        )
        links = {
            f: KvLink(env, CapacitySchedule(si.pair(site.name, f).link.usable_bytes_per_s))
            for f in factories
            if (f, site.name) in si.links
        }
        local = si.pair(site.name, factories[0]).pd.curve
        state.append(
            {
                "site": site,
                "rate": rate,
                "arrivals": arrivals,
                "lengths": lengths,
                "choice": choice,
                "links": links,
                "pdp": simpy.Resource(env, capacity=max(site.n_p, 1)),
                "decode": DecodePool(env, max(site.n_d, 1), decode_model(inputs)),
                "local_s": local.prefill_s(lengths),
                "local_hold_s": np.minimum(local.capacity_s(lengths), local.prefill_s(lengths)),
                "outputs": inputs.workload.output_dist.sample(rng, requests),
                "ttft": np.full(requests, np.nan),
                "waiting_remote": 0,
                "done": 0,
                "samples": [],
                "last_s": 0.0,
            }
        )
        remote = {}
        for f in links:
            curve = si.pair(site.name, f).prfaas.curve
            prefill = curve.prefill_s(lengths)
            remote[f] = (
                prefill,
                np.minimum(curve.capacity_s(lengths), prefill),
                curve.kv_bytes(lengths),
                si.pair(site.name, f).link.rtt_s,
            )
        state[-1]["remote"] = remote

    def request(s: dict, i: int):
        arrival = env.now
        if s["lengths"][i] > s["site"].threshold_tokens and s["links"]:
            f = factories[int(s["choice"][i])]
            prefill, hold, kv, rtt = s["remote"][f]
            prefill_s, hold_s = float(prefill[i]), float(hold[i])
            s["waiting_remote"] += 1
            slot = prfaas[f].request()
            yield slot
            s["waiting_remote"] -= 1
            sent = s["links"][f].start(float(kv[i]), prefill_s)
            yield env.timeout(hold_s)
            prfaas[f].release(slot)
            if prefill_s > hold_s:
                yield env.timeout(prefill_s - hold_s)
            yield sent
            if rtt:
                yield env.timeout(rtt)
        else:
            slot = s["pdp"].request()
            yield slot
            yield env.timeout(float(s["local_hold_s"][i]))
            s["pdp"].release(slot)
            extra = float(s["local_s"][i] - s["local_hold_s"][i])
            if extra > 0:
                yield env.timeout(extra)
        s["ttft"][i] = env.now - arrival
        yield from s["decode"].serve(float(s["outputs"][i]))
        s["done"] += 1
        s["last_s"] = env.now

    def arrivals(s: dict):
        for i, t in enumerate(s["arrivals"].tolist()):
            yield env.timeout(t - env.now)
            env.process(request(s, i))

    def sampler():
        while any(s["done"] < requests for s in state):
            for s in state:
                if env.now <= s["arrivals"][-1]:  # a site's series covers its arrivals (not the drain)
                    s["samples"].append(len(s["pdp"].queue) + s["decode"].queue_length + s["waiting_remote"])
            yield env.timeout(SAMPLE_S)

    for s in state:
        env.process(arrivals(s))
    env.process(sampler())
    env.run()
    out = []
    for s in state:
        site = s["site"]
        ttft = s["ttft"][~np.isnan(s["ttft"])]
        ttft = ttft[len(ttft) // 10 :]
        samples = np.asarray(s["samples"], dtype=float)
        fifth = max(len(samples) // 5, 1)
        first, last = float(samples[:fifth].mean()), float(samples[-fifth:].mean())
        duration = max(s["last_s"], 1e-9)
        egress = {f: link.totals().sent_bytes * 8 / 1e9 / duration for f, link in s["links"].items()}
        out.append(
            SiteSim(
                site.name,
                s["rate"],
                s["done"],
                float(ttft.mean()),
                float(np.quantile(ttft, 0.9)),
                egress,
                first,
                last,
                last <= 2 * first + site.n_p + site.n_d,
            )
        )
    return out
