"""The simulator: one discrete-event core that runs any window of a deployment (``Topology``):
N PD sites, PrfaaS sites shared by them, one link model per (PrfaaS, PD) link, role switches
and the short-term routing policy. A one-site deployment is its 1 x 1 case (``simulate``).

Model, per request (every time in seconds):
1. Arrival at the times of ``arrivals.py``, per PD site at its rate. Its uncached input length
   L is drawn from the site's ``input_dist`` and its output length from its workload's
   ``output_dist``. Site k draws from four independent streams, children 4k .. 4k+3 of
   ``np.random.SeedSequence(seed)`` (arrival times, input lengths, output lengths, the PrfaaS
   site), all drawn up front with numpy, so the same seed gives identical results and two
   arrival processes with the same seed see the same requests (common random numbers).
2. Routing: remote iff L > the site's threshold at arrival (``policies.py``) and the site has a
   link; a remote request goes over link l with probability ``Link.weight`` (the plan's offload).
3. Prefill: a FIFO queue of the PrfaaS site's instances (remote; shared by every PD site it
   serves) or of the site's N_p PD-P instances (local); a request holds an instance for its
   capacity seconds (``curve.capacity_s``: T_prefill(L) for a per-request curve, its share of a
   batched pass for a saturated one) and its prefill ends T_prefill(L) after it started,
   precomputed for every request.
   With cluster caches (``workload.cluster_cache``) a request is one (L, h, g) class: it routes on
   the class's routing length, PrfaaS and PD-P compute their own tokens, and a local request in
   the plentiful regime receives its cached prefix's KV over the link during its prefill.
4. Remote only: the KV transfer of S_kv(L) bytes starts with the prefill and is pipelined
   layer by layer over the link (``link.py``). TTFT = arrival -> last byte sent (and prefill
   ended), plus one RTT, after which decode starts. The PrfaaS instance is free again when its
   hold ends. Local: TTFT = arrival -> prefill end (and any cached KV received).
5. Decode on the site's N_d instances of ``batch_size`` slots, fed by one FIFO queue: a request
   joins the least-loaded instance (fewest running; the first of those); if it then runs b
   requests, TPOT = T_step(b) (``DecodeModel.step_s``) and it holds its slot for
   output_tokens * T_step(b). The batch is frozen at the request's start (later arrivals and
   departures on the instance do not change its TPOT).
A sampler (``timeseries.py``), and per site the adaptive controller (``policies.py``) and the
role-switch controller (``roles.py``) run alongside, as generators the loop resumes at their
times; the run ends when every request has completed.

The loop (``_Loop.run``) keeps its events in one heap of (time_s, sequence, kind, index) tuples
(the sequence breaks ties first in, first out), the per-request state in preallocated lists and
the queues as deques: no object per event.
"""

from __future__ import annotations

import functools
import heapq
import itertools
import math
from collections import deque
from collections.abc import Callable, Generator
from dataclasses import replace

import numpy as np

from ..choices import RoutingPolicy
from ..errors import PlanInputError
from ..planner.deployment import Deployment
from ..study.model import DecodeModel, PlanInputs
from ..units import bytes_per_s_to_gbps
from .arrivals import arrival_times_s
from .bandwidth import CapacitySchedule
from .config import SAMPLES_PER_RUN, SimConfig
from .link import KvLink
from .policies import AdaptivePolicy, Observation, StaticPolicy, ratio
from .results import EventLog, SimResult, summarise
from .roles import GROW_DECODE, GROW_PDP, SHRINK_DECODE, SHRINK_PDP, rebalance
from .timeseries import MAX_ROWS_PER_INTERVAL
from .topology import Link, PdSite, PrfaasSite, Topology

ProgressCallback = Callable[[int, int], None]

STREAMS_PER_SITE = 4  # arrival times, input lengths, output lengths, PrfaaS site


# ---------------------------------------------------------------------------------------
# The one-site simulation: the 1 x 1 topology


def simulate(
    inputs: PlanInputs, deployment: Deployment, decode: DecodeModel, config: SimConfig, progress: ProgressCallback | None = None
) -> SimResult:
    """Simulate ``config.requests`` requests through ``deployment``; ``progress(done, total)`` is
    called about every 1% of arrivals (and once at the end)."""
    return summarise(config, deployment, run(one_site_topology(inputs, deployment, decode, config), config, progress))


def one_site_topology(inputs: PlanInputs, deployment: Deployment, decode: DecodeModel, config: SimConfig) -> Topology:
    """One PD site (PD-P, decode), one PrfaaS site and the link between them, as ``inputs`` resolves
    them, with the deployment's counts and threshold; the link's capacity follows the config's
    bandwidth trace and drop."""
    # both pools prefill (only a decode-only pool has no curve: study.resolve)
    local_curve, remote_curve = inputs.pd.curve, inputs.prfaas.curve
    assert local_curve is not None and remote_curve is not None
    schedule = CapacitySchedule(
        inputs.link.usable_bytes_per_s, config.bandwidth_trace, config.drop_at_s, config.drop_for_s, config.drop_to_fraction
    )
    site = PdSite(
        "pd",
        config.rate_rps,
        config.requests,
        inputs.input_dist,
        inputs.workload,
        local_curve,
        deployment.n_p,
        deployment.n_d,
        decode,
        deployment.threshold_tokens,
        separate_decode=inputs.pd_decode is not None,
    )
    link = Link(
        "prfaas",
        "pd",
        schedule,
        rtt_s=inputs.link.rtt_s,
        curve=remote_curve,
        transfer_bytes_per_s=inputs.link.transfer_bytes_per_s,
    )
    return Topology((site,), (PrfaasSite("prfaas", deployment.n_prfaas),), (link,))


# ---------------------------------------------------------------------------------------
# Any topology


def run(topology: Topology, config: SimConfig, progress: ProgressCallback | None = None) -> EventLog:
    """Simulate every PD site's ``requests`` through ``topology`` under ``config`` (its arrival
    process, policy, role switches, seed and sampling; the rates and request counts are the
    sites')."""
    _check(topology, config)
    return _Loop(topology, config, _draw(topology, config)).run(progress)


def horizon_s(topology: Topology, config: SimConfig) -> float:
    """How long the arrivals (the longest site's) and any scheduled link change last (s). The
    sampler and the adaptive controller look every ``sample_interval_s`` / ``adaptive_interval_s``,
    or every horizon / ``SAMPLES_PER_RUN`` if that is longer, so a long run takes about that many looks."""
    ends = [site.requests / site.rate_rps for site in topology.pd]
    if config.drop_at_s is not None:
        ends.append(config.drop_at_s + config.drop_for_s)
    if config.bandwidth_trace:
        ends.append(config.bandwidth_trace[-1][0])
    return max(ends)


def _check(topology: Topology, config: SimConfig) -> None:
    """Reject topologies that would leave requests with nowhere to go."""
    pools = {pool.name: pool for pool in topology.prfaas}
    for site in topology.pd:
        at = site.field_prefix
        if site.n_d < 1:
            raise PlanInputError(f"needs at least one decode instance, got {site.n_d}", field=f"{at}n_d")
        if config.rebalance and site.separate_decode:
            raise PlanInputError(
                "role switches need one PD pool that both prefills and decodes; this scenario "
                "decodes on a pool of its own (pd_decode)",
                field="rebalance",
            )
        links = [topology.links[k] for k in topology.links_of(site.name)]
        used = [link for link in links if link.weight > 0] or links[:1]
        dist = site.input_dist
        long = dist.lengths_tokens > site.threshold_tokens
        offloaded = float(dist.probs[long].sum()) if links else 0.0
        any_remote = bool(links) and bool(np.any(dist.probs[long] > 0))
        any_local = not links or bool(np.any(dist.probs[~long] > 0))
        adapts = config.policy == RoutingPolicy.adaptive and any_remote
        for link in used if any_remote else ():
            if pools[link.prfaas].instances < 1:
                raise PlanInputError(
                    f"threshold {site.threshold_tokens:g} tokens sends {offloaded:.1%} of requests "
                    "to PrfaaS, which has no instance",
                    field=f"{at}n_prfaas",
                )
            if link.schedule.final_bytes_per_s <= 0:
                raise PlanInputError(
                    "the link ends at 0 Gbps, so remote KV transfers could never finish",
                    field="bandwidth_trace" if config.bandwidth_trace else f"{at}link.bandwidth_gbps",
                )
        if (any_local or adapts) and site.n_p < 1:
            why = (
                "the adaptive policy may keep any request local"
                if adapts
                else (f"threshold {site.threshold_tokens:g} tokens keeps {1 - offloaded:.1%} of requests local")
            )
            raise PlanInputError(f"{why}, but PD-P has no instance", field=f"{at}n_p")


def _draw(topology: Topology, config: SimConfig) -> dict[str, np.ndarray]:
    """Every request's arrival, lengths and service times, drawn up front (the streams of the
    module docstring) and concatenated over the PD sites in site order."""
    seeds = np.random.SeedSequence(config.seed).spawn(STREAMS_PER_SITE * len(topology.pd))
    parts = [_draw_site(topology, site, config, seeds[4 * k : 4 * k + 4]) for k, site in enumerate(topology.pd)]
    return {name: np.concatenate([part[name] for part in parts]) for name in parts[0]}


def _draw_site(topology: Topology, site: PdSite, config: SimConfig, seeds: list) -> dict[str, np.ndarray]:
    arrival_rng, input_rng, output_rng, choice_rng = (np.random.default_rng(s) for s in seeds)
    n = site.requests
    workload = site.workload
    replay = config.replay  # a trace replayed (simulate.replay): its arrivals and (input, output) in order
    if replay is None:
        arrival_s = arrival_times_s(replace(config, rate_rps=site.rate_rps, requests=n), arrival_rng)
        output_tokens = workload.output_dist.sample(output_rng, n)
    else:
        arrival_s, output_tokens = replay.arrival_s, replay.output_tokens
    links = topology.links_of(site.name)
    # the link (so the PrfaaS site) each request would be sent over if it is remote
    weights = np.array([topology.links[k].weight for k in links], dtype=float)
    if len(links) > 1 and weights.sum() > 0:
        chosen = choice_rng.choice(len(links), size=n, p=weights / weights.sum())
    else:
        chosen = np.zeros(n, dtype=np.int64)
    link_of = np.asarray(links, dtype=np.int64)[chosen] if links else np.full(n, -1, dtype=np.int64)
    routed = workload.routed
    cached_kv_bytes = np.zeros(n)
    curves = [topology.links[k].curve for k in links]
    if routed is None:
        input_tokens = site.input_dist.sample(input_rng, n) if replay is None else replay.input_tokens
        # Curves evaluated once on the distribution's support (a replay's own lengths), then gathered per request.
        support = site.input_dist.lengths_tokens if replay is None else np.unique(input_tokens)
        at: np.ndarray | slice = np.searchsorted(support, input_tokens)
        remote_tokens = local_tokens = kv_tokens = support
    else:
        # Cache-aware routing (workload.cluster_cache): a request is one (L, h, g) class; it routes
        # on the class's routing length, each cluster computes its own tokens, and a local request
        # may receive cached KV over the link. A replay's request is its own class (simulate.replay).
        if replay is None:
            at = np.searchsorted(np.cumsum(routed.probs), input_rng.random(n), side="right").clip(0, routed.probs.size - 1)
        else:
            at = routed.classes_of(replay.rows if replay.rows is not None else np.arange(n))
        input_tokens = routed.route_tokens[at]
        moved = routed.local_kv_tokens[at] > 0
        if moved.any() and curves:
            cached_kv_bytes[moved] = curves[0].kv_bytes(routed.local_kv_tokens[at][moved])
        remote_tokens, local_tokens, kv_tokens = routed.prfaas_tokens[at], routed.pd_tokens[at], routed.offload_kv_tokens[at]
        at = slice(None)
    kv_bytes, remote_prefill_s, remote_hold_s = np.zeros(n), np.zeros(n), np.zeros(n)
    for j, curve in enumerate(curves):
        mine = chosen == j
        kv_bytes[mine] = curve.kv_bytes(kv_tokens)[at][mine]
        remote_prefill_s[mine] = prefill_s = curve.prefill_s(remote_tokens)[at][mine]
        # An instance is held for a request's share of a pass (its capacity seconds, at most the
        # latency); the prompt's first token comes at its full prefill latency.
        remote_hold_s[mine] = np.minimum(curve.capacity_s(remote_tokens)[at][mine], prefill_s)
    local_prefill_s = site.local_curve.prefill_s(local_tokens)[at]
    local_hold_s = np.minimum(site.local_curve.capacity_s(local_tokens)[at], local_prefill_s)
    return {
        "arrival_s": arrival_s,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "kv_bytes": kv_bytes,
        "remote_prefill_s": remote_prefill_s,
        "remote_hold_s": remote_hold_s,
        "local_prefill_s": local_prefill_s,
        "local_hold_s": local_hold_s,
        "cached_kv_bytes": cached_kv_bytes,
        "link_of": link_of,
    }


# event kinds (in the heap)
_EVENT_KINDS = _ARRIVE, _HOLD_END_REMOTE, _HOLD_END_LOCAL, _LINK, _READY, _DECODE_END, _SAMPLE, _CONTROL = range(8)
# what an event sets going at its instant (the loop's list of follow-ups): the next queued local
# request of site k starts, request i's KV has been sent, request i joins decode, the next queued
# decode request of site k starts
_FOLLOW_UP_KINDS = _NEXT_LOCAL, _SENT, _JOIN_DECODE, _NEXT_DECODE = range(4)


class _SiteState:
    """A PD site's slots and queues, for the controllers to read (``roles.SiteView``)."""

    __slots__ = ("pdp_queue", "decode_queue", "pdp_active", "running", "decoding", "batch")

    def __init__(self, pdp_queue: deque, decode_queue: deque, pdp_active: int, running: list, decoding: list, batch: int):
        self.pdp_queue, self.decode_queue = pdp_queue, decode_queue
        self.pdp_active, self.running, self.decoding, self.batch = pdp_active, running, decoding, batch


class _Loop:
    """One run of the event loop over a topology (the model in the module docstring)."""

    def __init__(self, topology: Topology, config: SimConfig, drawn: dict[str, np.ndarray]):
        self.topology, self.config, self.drawn = topology, config, drawn
        self.now_s = 0.0
        self.completion: list[int] = []  # request indices in completion order
        self.total = int(drawn["arrival_s"].size)
        self.heap: list[tuple] = []
        self.seq = itertools.count()
        sites = topology.pd
        self.site_links = [topology.links_of(site.name) for site in sites]
        pool_index = {pool.name: j for j, pool in enumerate(topology.prfaas)}
        self.link_pool = [pool_index[link.prfaas] for link in topology.links]
        self.links = [KvLink(link.schedule, link.transfer_bytes_per_s) for link in topology.links]
        self.instances = [pool.instances for pool in topology.prfaas]
        self.site_pools = [sorted({self.link_pool[l] for l in ls}) for ls in self.site_links]
        # PrfaaS pools: free instances, FIFO queue, queued work (instance-hold seconds)
        self.pf_free = list(self.instances)
        self.pf_queue: list[deque[int]] = [deque() for _ in topology.prfaas]
        self.pf_wait_s = [0.0] * len(topology.prfaas)
        # PD sites: PD-P and decode slots; with role switches every PD instance has slots in both
        # stages, those of an instance in the other role held by blockers (not free, not queued).
        self.pdp_free = [site.n_p for site in sites]
        self.pdp_queue: list[deque[int]] = [deque() for _ in sites]
        self.pdp_wait_s = [0.0] * len(sites)
        self.pdp_pending = [0] * len(sites)  # a PD-P blocker waiting for a slot
        self.batch = [site.decode.batch_size for site in sites]
        total_pd = [site.n_p + site.n_d if config.rebalance else site.n_d for site in sites]
        self.running = [[0] * n for n in total_pd]
        self.decoding = [[k < site.n_d for k in range(n)] for site, n in zip(sites, total_pd)]
        self.blocked = [list(range(site.n_d, n)) for site, n in zip(sites, total_pd)]  # in the order they grow back
        self.dec_free = [site.n_d * b for site, b in zip(sites, self.batch)]
        self.dec_queue: list[deque[int]] = [deque() for _ in sites]
        self.step_s = [[float(s) for s in site.decode.step_s_by_batch] for site in sites]
        self.states = [
            _SiteState(self.pdp_queue[k], self.dec_queue[k], site.n_p, self.running[k], self.decoding[k], self.batch[k])
            for k, site in enumerate(sites)
        ]
        self.waiting_remote = [0] * len(sites)  # the site's requests queued at PrfaaS
        least_s = horizon_s(topology, config) / SAMPLES_PER_RUN  # the shortest interval between looks
        if config.policy == RoutingPolicy.adaptive:
            every_s = max(config.adaptive_interval_s, least_s)
            self.policies: list[StaticPolicy | AdaptivePolicy] = [
                AdaptivePolicy(site.threshold_tokens, site.input_dist, config, every_s) for site in sites
            ]
        else:
            self.policies = [StaticPolicy(site.threshold_tokens) for site in sites]
        self.role_changes: list[list[tuple[float, int, int]]] = [[] for _ in sites]
        self.sample_every_s = max(config.sample_interval_s, least_s)
        self.raw: list[list[float]] = [[] for _ in sites]  # per site, the sampler's readings (flat)
        self.controllers: list[tuple[Generator, int]] = []  # (generator, its site), resumed by _CONTROL events
        self.parked: dict[int, int] = {}  # site -> its role-switch controller, waiting for a PD-P slot

    # --- reads for the controllers and the sampler (rare: every interval) ---------------------

    def clock(self) -> float:
        return self.now_s

    def finished(self) -> bool:
        return len(self.completion) >= self.total

    def _link_totals(self, k: int, now_s: float) -> tuple[float, ...]:
        """Bytes sent, produced and in backlog over site k's links."""
        totals = [self.links[l].totals(now_s) for l in self.site_links[k]] or [(0.0, 0.0, 0.0)]
        return tuple(map(sum, zip(*totals)))

    def _sample(self, now_s: float) -> None:
        """A reading per PD site at ``now_s``: the queues and threshold now and the link totals (the
        rows of ``timeseries.SITE_COLUMNS`` are made from consecutive readings at the end). Each
        site's readings are one flat list, 9 values a reading."""
        for k, raw in enumerate(self.raw):
            sent, produced, backlog = self._link_totals(k, now_s)
            raw += (
                now_s,
                sum(map(len, self.site_pf_queues[k])),
                len(self.pdp_queue[k]),
                len(self.dec_queue[k]),
                backlog,
                sent,
                produced,
                self.policies[k].threshold_tokens,
                self.waiting_remote[k],
            )
        rows = len(self.raw[0]) // 9 - 1  # the first reading (at 0) starts the first interval
        if rows and rows % MAX_ROWS_PER_INTERVAL == 0:
            self.sample_every_s *= 2

    def _series(self, k: int) -> dict[str, np.ndarray]:
        """Site k's sampled rows as columns (``timeseries.SITE_COLUMNS``): egress, offered egress
        and mean capacity over each interval from consecutive readings."""
        raw = np.array(self.raw[k], dtype=float).reshape(-1, 9)  # one reading a row
        time_s = raw[:, 0]
        start_s, end_s = time_s[:-1], time_s[1:]
        span_s = end_s - start_s
        capacity_bytes = np.array([self._capacity_between(k, a, b) for a, b in zip(start_s.tolist(), end_s.tolist())])
        values = raw[1:]
        return {
            "time_s": end_s,
            "prfaas_queue_requests": values[:, 1],
            "pdp_queue_requests": values[:, 2],
            "decode_queue_requests": values[:, 3],
            "link_backlog_bytes": values[:, 4],
            # arrays: bytes_per_s_to_gbps is elementwise (asarray returns them as they are)
            "egress_gbps": np.asarray(bytes_per_s_to_gbps(np.diff(raw[:, 5]) / span_s)),
            "offered_egress_gbps": np.asarray(bytes_per_s_to_gbps(np.diff(raw[:, 6]) / span_s)),
            "link_capacity_gbps": np.asarray(bytes_per_s_to_gbps(capacity_bytes / span_s)),
            "threshold_tokens": values[:, 7],
            "remote_waiting_requests": values[:, 8],
        }

    def _capacity_between(self, k: int, start_s: float, end_s: float) -> float:
        return sum(self.links[l].schedule.bytes_between(start_s, end_s) for l in self.site_links[k])

    def _observe(self, k: int) -> Observation:
        now_s = self.now_s
        sent, _, backlog = self._link_totals(k, now_s)
        pools = self.site_pools[k]
        return Observation(
            sent,
            backlog,
            sum(self.links[l].schedule.at(now_s) for l in self.site_links[k]),
            ratio(sum(self.pf_wait_s[j] for j in pools), sum(self.instances[j] for j in pools)),
            ratio(self.pdp_wait_s[k], self.states[k].pdp_active),
        )

    # --- controllers ---------------------------------------------------------------------------

    def _add_controller(self, generator, site: int) -> None:
        self.controllers.append((generator, site))
        self._drive(len(self.controllers) - 1, None)

    def _drive(self, c: int, value) -> None:
        """Resume controller ``c`` with ``value`` until it waits: a delay (an event is scheduled) or
        a blocker that has no slot yet (it is parked until one is freed)."""
        generator, k = self.controllers[c]
        while True:
            try:
                command = generator.send(value)
            except StopIteration:
                return
            if isinstance(command, float | int):
                heapq.heappush(self.heap, (self.now_s + command, next(self.seq), _CONTROL, c))
                return
            value = self._command(k, command)
            if value is None:
                self.parked[k] = c
                return

    def _command(self, k: int, command: str):
        """Carry out a role-switch command on site k's slots; None when it must wait for a slot."""
        state = self.states[k]
        if command == SHRINK_PDP:
            if self.pdp_free[k] > 0:
                self.pdp_free[k] -= 1
                state.pdp_active -= 1
                return True
            self.pdp_pending[k] = 1
            return None
        if command == GROW_PDP:
            state.pdp_active += 1  # the slot it brings: the queue's next request, or free
            if self.pdp_queue[k]:
                self._follow_ups.append((_NEXT_LOCAL, k))
            else:
                self.pdp_free[k] += 1
            return True
        decoding, running = self.decoding[k], self.running[k]
        if command == SHRINK_DECODE:
            i = min((i for i, d in enumerate(decoding) if d), key=running.__getitem__)
            decoding[i] = False
            self.blocked[k].append(i)
            # Its slots, free now: the controller stops one only while the rest stay under
            # roles.DECODE_BUSY_SHARE of theirs, so more than one instance's slots are free.
            assert self.dec_free[k] >= self.batch[k]
            self.dec_free[k] -= self.batch[k]
            return i
        if command == GROW_DECODE:
            decoding[self.blocked[k].pop(0)] = True
            queued = min(len(self.dec_queue[k]), self.batch[k])  # its slots: the queue's next requests, the rest free
            self._follow_ups.extend([(_NEXT_DECODE, k)] * queued)
            self.dec_free[k] += self.batch[k] - queued
            return True
        raise ValueError(f"unknown controller command {command!r}")

    # --- the loop -------------------------------------------------------------------------------

    def run(self, progress: ProgressCallback | None) -> EventLog:
        """Run until every request has completed."""
        config, drawn, topology = self.config, self.drawn, self.topology
        n = self.total
        sites = topology.pd
        heap = self.heap
        tick = self.seq.__next__  # the next sequence number (ties: first in, first out)
        # the kinds as locals (the loop reads them at every event)
        ARRIVE, HOLD_END_REMOTE, HOLD_END_LOCAL, LINK, READY, DECODE_END, SAMPLE, _ = _EVENT_KINDS
        NEXT_LOCAL, SENT, JOIN_DECODE, _ = _FOLLOW_UP_KINDS
        push, pop = heapq.heappush, heapq.heappop
        # per request (plain lists: numpy scalars are slow in scalar arithmetic)
        arrival_list = drawn["arrival_s"].tolist()
        input_tokens = drawn["input_tokens"].tolist()
        output_tokens = drawn["output_tokens"].tolist()
        kv_bytes = drawn["kv_bytes"].tolist()
        remote_prefill_s = drawn["remote_prefill_s"].tolist()
        remote_hold_s = drawn["remote_hold_s"].tolist()
        local_prefill_s = drawn["local_prefill_s"].tolist()
        local_hold_s = drawn["local_hold_s"].tolist()
        link_of = drawn["link_of"].tolist()
        cached_kv_bytes = drawn["cached_kv_bytes"]
        cached_kv = cached_kv_bytes.tolist() if cached_kv_bytes.any() else [0.0] * n  # one shared 0.0 without caches
        offsets = [0, *itertools.accumulate(site.requests for site in sites)]
        site_of = np.repeat(np.arange(len(sites)), [site.requests for site in sites]).tolist()
        order = np.argsort(drawn["arrival_s"], kind="stable").tolist()  # all sites' requests by arrival
        self.remote = remote = [False] * n
        arrived_s = arrival_list  # overwritten at each arrival with the clock (as SimPy reads it)
        prefill_end_s = [0.0] * n
        ttft_s = [0.0] * n
        tpot_s = [0.0] * n
        done_s = [0.0] * n
        instance_of = [0] * n
        waits_for = [0] * n  # a local request's conditions still open (prefill end, cached KV received)
        completion = self.completion
        inf = math.inf
        links = self.links
        link_at = [math.inf] * len(links)  # the time of each link's latest scheduled event
        link_pool = self.link_pool
        rtt_s = [link.rtt_s for link in topology.links]
        pf_free, pf_queue, pf_wait_s = self.pf_free, self.pf_queue, self.pf_wait_s
        pdp_free, pdp_queue, pdp_wait_s, pdp_pending = self.pdp_free, self.pdp_queue, self.pdp_wait_s, self.pdp_pending
        dec_free, dec_queue = self.dec_free, self.dec_queue
        running, decoding, batch, step_s = self.running, self.decoding, self.batch, self.step_s
        waiting_remote = self.waiting_remote
        policies = self.policies
        plain_decode = not config.rebalance
        self._follow_ups: list[tuple[int, int]] = []
        follow_ups = self._follow_ups
        every = -(-n // 100)  # ceil(n / 100): at most 100 calls, plus one at the end
        report_at = every if progress is not None else -1  # the arrival count of the next progress call

        # controllers and the sampler
        self.site_pf_queues = [[self.pf_queue[j] for j in pools] for pools in self.site_pools]
        self._sample(0.0)
        if n:
            push(heap, (self.sample_every_s, tick(), SAMPLE, 0))
        for k, policy in enumerate(policies):
            if isinstance(policy, AdaptivePolicy):
                observe, capacity_between = functools.partial(self._observe, k), functools.partial(self._capacity_between, k)
                self._add_controller(policy.run(observe, capacity_between, self.finished, self.clock), k)
        for k, state in enumerate(self.states if config.rebalance else ()):
            self._add_controller(rebalance(state, config, self.finished, self.clock, self.role_changes[k]), k)

        now = 0.0
        # Three sources of events, the loop takes the earliest head: the next arrival (arrivals are
        # drawn ahead, so they need no heap), decode ends (far ahead: a heap of their own, so that
        # the main heap of near events stays shallow), and the main heap; on a tie the heaps go
        # first, and between them the sequence.
        next_arrival_s = arrival_list[order[0]] if n else inf
        arrivals = 0  # arrivals so far
        ends: list[tuple] = []
        next_end_s = inf  # the time at the head of ends

        def decode(i: int, k: int, now: float) -> None:
            """Request ``i`` joins site ``k``'s decode now: on the least loaded decode instance if a
            slot is free, at the step time of that instance's batch (its end pushed; once per
            request), else at the back of the site's decode queue."""
            nonlocal next_end_s
            if dec_free[k] <= 0:
                dec_queue[k].append(i)
                return
            dec_free[k] -= 1
            run_k = running[k]
            instance = run_k.index(min(run_k)) if plain_decode else _least_loaded(run_k, decoding[k], batch[k])
            run_k[instance] += 1
            instance_of[i] = instance
            b = run_k[instance]
            tpot = step_s[k][(b if b < batch[k] else batch[k]) - 1]
            tpot_s[i] = tpot
            end_s = now + output_tokens[i] * tpot
            push(ends, (end_s, tick(), DECODE_END, i))
            if end_s < next_end_s:
                next_end_s = end_s

        def start_remote(i: int, now: float) -> None:
            """Request ``i``'s PrfaaS prefill starts now (an instance held for its hold seconds), and
            its KV transfer with it."""
            hold, prefill = remote_hold_s[i], remote_prefill_s[i]
            push(heap, (now + hold, tick(), HOLD_END_REMOTE, i))
            prefill_end_s[i] = (now + hold) + (prefill - hold) if prefill > hold else now + hold
            send(link_of[i], now, kv_bytes[i], prefill, i)

        def start_local(i: int, now: float) -> None:
            """Request ``i``'s PD-P prefill starts now (its slot taken), and with a cached prefix that
            prefix's KV over its link (``link_of``), both awaited before its first token."""
            push(heap, (now + local_hold_s[i], tick(), HOLD_END_LOCAL, i))
            waits_for[i] = 1
            if cached_kv[i] > 0:
                waits_for[i] = 2
                send(link_of[i], now, cached_kv[i], local_prefill_s[i], i)

        def send(l: int, now: float, size_bytes: float, prefill_s: float, i: int) -> None:
            """Request ``i``'s KV (``size_bytes``, produced over ``prefill_s``) starts over link ``l`` now."""
            for f in links[l].start(now, size_bytes, prefill_s, i):
                follow_ups.append((SENT, f))
            schedule_link(l)

        def schedule_link(l: int) -> None:
            """Link ``l``'s next event, pushed if the link has a new time."""
            next_s = links[l].next_s
            if next_s != link_at[l] and next_s < inf:
                link_at[l] = next_s
                push(heap, (next_s, tick(), LINK, l))

        while True:
            head_s = heap[0][0] if heap else inf
            if next_arrival_s < head_s and next_arrival_s < next_end_s:
                now, kind, x = next_arrival_s, ARRIVE, arrivals
            elif next_end_s < head_s or (next_end_s == head_s and next_end_s < inf and ends[0] < heap[0]):
                now, _, kind, x = pop(ends)
                next_end_s = ends[0][0] if ends else inf
            elif heap:
                now, _, kind, x = pop(heap)
            else:
                break
            if kind == ARRIVE:
                i = order[x]
                arrived_s[i] = now
                x = arrivals = x + 1
                # the next arrival, as a timeout from now (SimPy's clock arithmetic)
                next_arrival_s = now + (arrival_list[order[x]] - now) if x < n else inf
                if x == report_at:
                    assert progress is not None  # report_at is -1 without one
                    progress(x, n)
                    report_at += every
                k = site_of[i]
                l = link_of[i]
                if l >= 0 and input_tokens[i] > policies[k].threshold_tokens:
                    remote[i] = True
                    j = link_pool[l]
                    if pf_free[j] > 0:
                        pf_free[j] -= 1
                        start_remote(i, now)
                    else:
                        pf_queue[j].append(i)
                        pf_wait_s[j] += remote_hold_s[i]
                        waiting_remote[k] += 1
                elif pdp_free[k] > 0:
                    pdp_free[k] -= 1
                    start_local(i, now)
                else:
                    pdp_queue[k].append(i)
                    pdp_wait_s[k] += local_hold_s[i]
            elif kind == DECODE_END:
                k = site_of[x]
                running[k][instance_of[x]] -= 1
                done_s[x] = now
                completion.append(x)
                dec_free[k] += 1
                if dec_queue[k]:  # the next queued request decodes
                    decode(dec_queue[k].popleft(), k, now)
            elif kind == READY:  # first token (if the local request's cached KV is in): join decode
                if not remote[x]:
                    waits_for[x] -= 1
                    if waits_for[x]:
                        continue
                ttft_s[x] = now - arrived_s[x]
                decode(x, site_of[x], now)
            elif kind == LINK:
                link = links[x]
                if now != link.next_s:
                    continue  # stale: the link was updated since this was scheduled
                for i in link.update(now):  # request i's KV has been sent
                    if remote[i] and rtt_s[x]:  # decode starts an RTT after the last byte and the prefill
                        pe = prefill_end_s[i]
                        push(heap, ((now if now > pe else pe) + rtt_s[x], tick(), READY, i))
                    else:
                        follow_ups.append((SENT, i))
                schedule_link(x)
            elif kind == HOLD_END_REMOTE:
                j = link_pool[link_of[x]]
                queue = pf_queue[j]
                if queue:  # the next queued remote request starts its prefill and its transfer
                    i = queue.popleft()
                    pf_wait_s[j] = max(pf_wait_s[j] - remote_hold_s[i], 0.0)
                    waiting_remote[site_of[i]] -= 1
                    start_remote(i, now)
                else:
                    pf_free[j] += 1
            elif kind == HOLD_END_LOCAL:
                # the request's prefill: ended now, or later
                prefill, hold = local_prefill_s[x], local_hold_s[x]
                if prefill > hold:
                    push(heap, (now + (prefill - hold), tick(), READY, x))
                else:
                    waits_for[x] -= 1
                    if waits_for[x] == 0:  # first token: join decode
                        ttft_s[x] = now - arrived_s[x]
                        decode(x, site_of[x], now)
                # its PD-P slot
                k = site_of[x]
                if pdp_pending[k]:  # a PD-P instance switching to decode takes the slot
                    pdp_pending[k] = 0
                    self.states[k].pdp_active -= 1
                    self.now_s = now
                    self._drive(self.parked.pop(k), True)  # the controller that waited for it
                elif pdp_queue[k]:
                    follow_ups.append((NEXT_LOCAL, k))
                else:
                    pdp_free[k] += 1
            elif kind == SAMPLE:
                self._sample(now)
                if len(completion) < n:
                    push(heap, (now + self.sample_every_s, tick(), SAMPLE, 0))
            else:  # CONTROL
                self.now_s = now
                self._drive(x, None)

            # What the event set going at this instant, in order (the less common paths).
            if follow_ups:
                for what, i in follow_ups:  # (a list's iterator also yields what the loop appends)
                    if what == NEXT_LOCAL:  # site i's next queued local request starts
                        k = i
                        i = pdp_queue[k].popleft()
                        pdp_wait_s[k] = max(pdp_wait_s[k] - local_hold_s[i], 0.0)
                        start_local(i, now)
                    elif what == SENT:  # the last KV byte of request i has been sent
                        if remote[i]:
                            ready = now if now > prefill_end_s[i] else prefill_end_s[i]
                            rtt = rtt_s[link_of[i]]
                            if rtt or ready > now:
                                push(heap, (ready + rtt, tick(), READY, i))
                            else:
                                follow_ups.append((JOIN_DECODE, i))
                        else:
                            waits_for[i] -= 1
                            if waits_for[i] == 0:
                                follow_ups.append((JOIN_DECODE, i))
                    elif what == JOIN_DECODE:  # first token: join the site's decode
                        ttft_s[i] = now - arrived_s[i]
                        decode(i, site_of[i], now)
                    else:  # NEXT_DECODE: site i's next queued request decodes (in the slot kept for it)
                        dec_free[i] += 1
                        decode(dec_queue[i].popleft(), i, now)
                follow_ups.clear()
        if progress is not None and n % every:
            progress(n, n)
        self.now_s = now

        remote_array = np.array(remote, dtype=bool)
        arrays = {
            "arrival_s": drawn["arrival_s"],
            "input_tokens": drawn["input_tokens"],
            "output_tokens": drawn["output_tokens"],
            "remote": remote_array,
            "kv_bytes": np.where(remote_array, drawn["kv_bytes"], 0.0),
            "ttft_s": np.array(ttft_s),
            "tpot_s": np.array(tpot_s),
            "done_s": np.array(done_s),
            "link": np.where(remote_array, drawn["link_of"], -1),
        }
        return EventLog(
            tuple(offsets),
            arrays,
            np.array(completion, dtype=np.int64),
            [self._series(k) for k in range(len(sites))],
            [policy.changes for policy in policies],
            self.role_changes,
            [link.totals(now)[0] for link in links],
        )


def _least_loaded(running: list[int], decoding: list[bool], batch: int) -> int:
    """The decoding instance with the fewest running requests among those with a free slot (any
    decoding one if none has), the first of equals."""
    return min((k for k, on in enumerate(decoding) if on), key=lambda k: (running[k] >= batch, running[k]))


__all__ = ["EventLog", "one_site_topology", "run", "simulate"]
