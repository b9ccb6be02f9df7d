"""A discrete-event simulation (SimPy) of one PrfaaS-PD deployment serving a request stream.

Model, per request (every time in seconds):
1. Arrival at the times of ``arrivals.py``. Its uncached input length L is drawn from
   ``inputs.workload.input_dist`` and its output length from ``inputs.workload.output_dist``. Arrival times,
   input lengths and output lengths come from three independent streams spawned from
   ``np.random.SeedSequence(seed)``, so the same seed gives identical results and two
   arrival processes with the same seed see the same requests (common random numbers).
2. Routing: remote (PrfaaS) iff L > the policy's threshold at arrival (``policies.py``).
3. Prefill: a FIFO ``simpy.Resource`` of N_prfaas (remote) or N_p (local) instances; a
   request holds an instance for its capacity seconds (``curve.capacity_s``: T_prefill(L) for
   a per-request curve, its share of a batched pass for a saturated one) and its prefill
   ends T_prefill(L) after it started (``inputs.prfaas.curve`` / ``inputs.pd.curve``),
   precomputed for every request.
   With cluster caches (``workload.cluster_cache``) a request is one (L, h, g) class: it routes on
   the class's routing length, PrfaaS and PD-P compute their own tokens, and a local request in
   the plentiful regime receives its cached prefix's KV over the link during its prefill.
4. Remote only: the KV transfer of S_kv(L) bytes starts with the prefill and is
   pipelined layer by layer over the shared link (``link.py``). TTFT = arrival -> last
   byte sent, plus one RTT (``inputs.link.rtt_s``), after which decode starts.
   The PrfaaS instance is free again when its prefill ends. Local: TTFT = arrival ->
   prefill end.
5. Decode on N_d instances (``decode_pool.py``): TPOT = T_step(b), b the occupancy of
   the least-loaded instance it joins; it holds its slot for output_tokens * TPOT.
A sampler (``timeseries.py``) and, for the adaptive policy, a controller run alongside;
the run ends when every request has completed.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import replace
from typing import Any

import numpy as np
import simpy

from ..choices import RoutingPolicy
from ..errors import PlanInputError
from ..planner.decode_model import DecodeModel
from ..planner.deployment import Deployment
from ..study.model import PlanInputs
from .arrivals import arrival_times_s
from .bandwidth import CapacitySchedule
from .config import SimConfig, sample_interval_for
from .decode_pool import DecodePool
from .link import KvLink
from .policies import AdaptivePolicy, Observation, StaticPolicy
from .results import SimResult, summarise
from .roles import RoleDecodePool, RolePool, rebalance
from .timeseries import Sampler

ProgressCallback = Callable[[int, int], None]


def simulate(
    inputs: PlanInputs, deployment: Deployment, decode: DecodeModel, config: SimConfig, progress: ProgressCallback | None = None
) -> SimResult:
    """Simulate ``config.requests`` requests through ``deployment``; ``progress(done, total)`` is
    called about every 1% of arrivals (and once at the end)."""
    schedule = CapacitySchedule(
        inputs.link.usable_bytes_per_s, config.bandwidth_trace, config.drop_at_s, config.drop_for_s, config.drop_to_fraction
    )
    _check(inputs, deployment, config, schedule)
    return _Run(inputs, deployment, decode, config, schedule, progress).result()


def _check(inputs: PlanInputs, deployment: Deployment, config: SimConfig, schedule: CapacitySchedule) -> None:
    """Reject deployments that would leave requests with nowhere to go."""
    if deployment.n_d < 1:
        raise PlanInputError(f"needs at least one decode instance, got {deployment.n_d}", field="n_d")
    if config.rebalance and inputs.pd_decode is not None:
        raise PlanInputError(
            "role switches need one PD pool that both prefills and decodes; this scenario "
            "decodes on a pool of its own (pd_decode)",
            field="rebalance",
        )
    dist = inputs.input_dist
    long = dist.lengths_tokens > deployment.threshold_tokens
    offloaded = float(dist.probs[long].sum())
    any_remote, any_local = bool(np.any(dist.probs[long] > 0)), bool(np.any(dist.probs[~long] > 0))
    adapts = config.policy == RoutingPolicy.adaptive and any_remote
    if any_remote and deployment.n_prfaas < 1:
        raise PlanInputError(
            f"threshold {deployment.threshold_tokens:g} tokens sends {offloaded:.1%} of requests "
            "to PrfaaS, which has no instance",
            field="n_prfaas",
        )
    if (any_local or adapts) and deployment.n_p < 1:
        why = (
            "the adaptive policy may keep any request local"
            if adapts
            else (f"threshold {deployment.threshold_tokens:g} tokens keeps {1 - offloaded:.1%} of requests local")
        )
        raise PlanInputError(f"{why}, but PD-P has no instance", field="n_p")
    if any_remote and schedule.final_bytes_per_s <= 0:
        raise PlanInputError(
            "the link ends at 0 Gbps, so remote KV transfers could never finish",
            field="bandwidth_trace" if config.bandwidth_trace else "link.bandwidth_gbps",
        )


class _Run:
    """One simulation: the SimPy environment, its stages and the per-request records."""

    def __init__(
        self,
        inputs: PlanInputs,
        deployment: Deployment,
        decode: DecodeModel,
        config: SimConfig,
        schedule: CapacitySchedule,
        progress: ProgressCallback | None,
    ):
        self.config, self.deployment, self.progress = config, deployment, progress
        n = config.requests
        arrival_rng, input_rng, output_rng = (np.random.default_rng(s) for s in np.random.SeedSequence(config.seed).spawn(3))
        self.arrival_s = arrival_times_s(config, arrival_rng)
        self.output_tokens = inputs.workload.output_dist.sample(output_rng, n)
        routed = inputs.workload.routed
        self.cached_kv_bytes = np.zeros(n)
        if routed is None:
            self.input_tokens = inputs.input_dist.sample(input_rng, n)
            # Curves evaluated once on the distribution's support, then gathered per request.
            support = inputs.input_dist.lengths_tokens
            at = np.searchsorted(support, self.input_tokens)
            remote_tokens = local_tokens = support
            kv_tokens = support
        else:
            # Cache-aware routing (workload.cluster_cache): a request is one (L, h, g) class; it routes
            # on the class's routing length, each cluster computes its own tokens, and a local request
            # may receive cached KV over the link.
            at = np.searchsorted(np.cumsum(routed.probs), input_rng.random(n), side="right").clip(0, routed.probs.size - 1)
            self.input_tokens = routed.route_tokens[at]
            remote_tokens, local_tokens, kv_tokens = routed.prfaas_tokens, routed.pd_tokens, routed.offload_kv_tokens
            moved = routed.local_kv_tokens[at] > 0
            if moved.any():
                self.cached_kv_bytes[moved] = inputs.prfaas.curve.kv_bytes(routed.local_kv_tokens[at][moved])
            remote_tokens, local_tokens, kv_tokens = remote_tokens[at], local_tokens[at], kv_tokens[at]
            at = slice(None)
        self.kv_bytes = inputs.prfaas.curve.kv_bytes(kv_tokens)[at]
        self.remote_prefill_s = inputs.prfaas.curve.prefill_s(remote_tokens)[at]
        self.local_prefill_s = inputs.pd.curve.prefill_s(local_tokens)[at]
        # An instance is held for a request's share of a pass (its capacity seconds, at most the
        # latency); the prompt's first token comes at its full prefill latency.
        remote_hold_s = np.minimum(inputs.prfaas.curve.capacity_s(remote_tokens)[at], self.remote_prefill_s)
        local_hold_s = np.minimum(inputs.pd.curve.capacity_s(local_tokens)[at], self.local_prefill_s)
        self.rtt_s = inputs.link.rtt_s
        # Plain lists for the per-event code (numpy scalars are slower in scalar arithmetic).
        self._hot = (
            self.input_tokens.tolist(),
            self.output_tokens.tolist(),
            self.kv_bytes.tolist(),
            self.remote_prefill_s.tolist(),
            self.local_prefill_s.tolist(),
            remote_hold_s.tolist(),
            local_hold_s.tolist(),
        )

        self.env = env = simpy.Environment()
        self.schedule = schedule
        self.link = KvLink(env, schedule)
        # A path without instances gets no requests (``_check``); SimPy needs a capacity >= 1.
        self.prfaas = simpy.Resource(env, capacity=max(deployment.n_prfaas, 1))
        self.role_changes: list[tuple[float, int, int]] = []
        if config.rebalance:
            self.pdp = RolePool(env, deployment.n_p, deployment.n_d)
            self.decode = RoleDecodePool(env, deployment.n_p, deployment.n_d, decode)
        else:
            self.pdp = simpy.Resource(env, capacity=max(deployment.n_p, 1))
            self.decode = DecodePool(env, deployment.n_d, decode)
        if config.policy == RoutingPolicy.adaptive:
            self.policy: StaticPolicy | AdaptivePolicy = AdaptivePolicy(deployment.threshold_tokens, inputs.input_dist, config)
        else:
            self.policy = StaticPolicy(deployment.threshold_tokens)
        self.sampler = Sampler(sample_interval_for(config))

        # Prefill work waiting for an instance (the hold seconds of the queued requests), for the
        # adaptive policy: divided by the instances it is the wait a new request can expect.
        self.prfaas_waiting_s = self.pdp_waiting_s = 0.0
        self.remote = [False] * n
        self.ttft_s = [0.0] * n
        self.tpot_s = [0.0] * n
        self.done_s = [0.0] * n
        self.completion_order: list[int] = []

    def finished(self) -> bool:
        return len(self.completion_order) >= self.config.requests

    def observe(self) -> Observation:
        totals = self.link.totals()
        n_p = self.pdp.active if isinstance(self.pdp, RolePool) else self.deployment.n_p
        return Observation(
            totals.sent_bytes,
            totals.backlog_bytes,
            self.schedule.at(self.env.now),
            _per_instance(self.prfaas_waiting_s, self.deployment.n_prfaas),
            _per_instance(self.pdp_waiting_s, n_p),
        )

    def _pdp_queue(self) -> int:
        return self.pdp.queue_length if isinstance(self.pdp, RolePool) else len(self.pdp.queue)

    def queues(self) -> tuple[int, int, int]:
        return len(self.prfaas.queue), self._pdp_queue(), self.decode.queue_length

    def result(self) -> SimResult:
        env = self.env
        env.process(self._arrivals())
        env.process(
            self.sampler.run(env, self.link, self.schedule, self.queues, lambda: self.policy.threshold_tokens, self.finished)
        )
        if isinstance(self.policy, AdaptivePolicy):
            env.process(self.policy.run(env, self.observe, self.schedule.bytes_between, self.finished))
        if self.config.rebalance:
            cfg = self.config
            env.process(
                rebalance(
                    env,
                    self.pdp,
                    self.decode,
                    cfg.rebalance_interval_s,
                    cfg.rebalance_queue_high,
                    cfg.conversion_s,
                    self.finished,
                    self.role_changes,
                )
            )
        env.run()
        remote = np.array(self.remote, dtype=bool)
        per_request = {
            "arrival_s": self.arrival_s,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "remote": remote,
            "kv_bytes": np.where(remote, self.kv_bytes, 0.0),
            "ttft_s": np.array(self.ttft_s),
            "tpot_s": np.array(self.tpot_s),
            "done_s": np.array(self.done_s),
        }
        result = summarise(
            self.config,
            self.deployment,
            per_request,
            np.array(self.completion_order, dtype=np.int64),
            self.sampler.rows,
            self.policy.changes,
            self.link.totals().sent_bytes,
        )
        return replace(result, role_changes=tuple(self.role_changes))

    def _arrivals(self) -> Generator[simpy.Event, Any, None]:
        env, n, progress = self.env, self.config.requests, self.progress
        every = -(-n // 100)  # ceil(n / 100): at most 100 calls, plus one at the end
        request = self._request
        for i, time_s in enumerate(self.arrival_s.tolist()):
            yield env.timeout(time_s - env.now)
            env.process(request(i))
            if progress is not None and (i + 1) % every == 0:
                progress(i + 1, n)
        if progress is not None and n % every:
            progress(n, n)

    def _request(self, i: int) -> Generator[simpy.Event, Any, None]:
        """Request i from arrival to the end of its decode (the model in the module docstring)."""
        env = self.env
        arrival_s = env.now
        input_tokens, output_tokens, kv_bytes, remote_prefill_s, local_prefill_s, remote_hold_s, local_hold_s = self._hot
        if input_tokens[i] > self.policy.threshold_tokens:
            self.remote[i] = True
            prefill_s, hold_s = remote_prefill_s[i], remote_hold_s[i]
            slot = self.prfaas.request()
            queued = not slot.triggered
            if queued:
                self.prfaas_waiting_s += hold_s
            yield slot
            if queued:
                self.prfaas_waiting_s = max(self.prfaas_waiting_s - hold_s, 0.0)
            sent = self.link.start(kv_bytes[i], prefill_s)
            yield env.timeout(hold_s)
            self.prfaas.release(slot)
            if prefill_s > hold_s:
                yield env.timeout(prefill_s - hold_s)
            yield sent
            if self.rtt_s:
                yield env.timeout(self.rtt_s)
        else:
            slot = self.pdp.request()
            queued = not slot.triggered
            if queued:
                self.pdp_waiting_s += local_hold_s[i]
            yield slot
            if queued:
                self.pdp_waiting_s = max(self.pdp_waiting_s - local_hold_s[i], 0.0)
            cached = self.cached_kv_bytes[i]
            moved = self.link.start(cached, local_prefill_s[i]) if cached > 0 else None
            yield env.timeout(local_hold_s[i])
            self.pdp.release(slot)
            if local_prefill_s[i] > local_hold_s[i]:
                yield env.timeout(local_prefill_s[i] - local_hold_s[i])
            if moved is not None:  # the cached prefix PrfaaS sends, overlapped with the local prefill
                yield moved
        self.ttft_s[i] = env.now - arrival_s
        self.tpot_s[i] = yield from self.decode.serve(output_tokens[i])
        self.done_s[i] = env.now
        self.completion_order.append(i)


def _per_instance(work_s: float, instances: int) -> float:
    """Queued work spread over the instances (s): the wait a request joining the queue can expect."""
    return work_s / instances if instances > 0 else (0.0 if work_s <= 0 else float("inf"))
