"""Routing thresholds: static, or adapted to the link and the PrfaaS queue (paper section 3.4.3).

A request whose uncached input L exceeds the current threshold t is prefilled by PrfaaS
(the remote path), otherwise by PD-P (the local path).

``StaticPolicy`` keeps the deployment's t for the whole run.

``AdaptivePolicy`` is the paper's short-term, bandwidth-aware routing. Its thresholds form
a ladder above the plan's t0: with p0 = P(L > t0) the plan's offloaded share and Δ the step
share (``adaptive_step_share``, 5 points by default), rung k is the quantile
t_k = F^-1(1 - max(p0 - k Δ, 0)) of the input distribution, so each rung up offloads
about Δ fewer requests; the top rung (p = 0) keeps everything local. Every
``adaptive_interval_s`` a controller looks at the last interval:

- the link utilisation u = (bytes sent + growth of the backlog) / bytes the link could
  carry, the backlog being KV produced but not yet sent. Sent plus backlog growth is the
  KV produced in the interval, so u is the offered load: u > 1 means the backlog grows,
  while a backlog that drains at full link speed (sent = capacity, backlog shrinking)
  gives u < 1 and does not push t further up;
- the PrfaaS queue (requests waiting for a PrfaaS instance) and the PD-P queue.

It moves one rung up when u > ``adaptive_util_high``, or the PrfaaS queue exceeds
``adaptive_queue_high`` and is longer than the PD-P queue (so that moving work to PD-P
helps); it moves one rung down, never below t0, when u < ``adaptive_util_low``, the
PrfaaS queue is at most half of ``adaptive_queue_high`` and the backlog is below a tenth
of what the link carries in one interval. Otherwise it holds (hysteresis between the two).
The link has priority: the policy does not look at whether PD-P can absorb the requests
it keeps local (re-balancing PD-P and PD-D is the paper's long-term scheduling).
Over one interval the KV produced by a few concurrent prefills is noisy (in the case
study, 5-s offered egress swings between ~3 and ~12 Gbps at a mean of ~9.7), so with
this hysteresis the threshold settles where the mean u is well below the upper bound
(about 0.75 of a halved 15 Gbps link), not at it.
The threshold's history is recorded as (time_s, threshold_tokens) at each change.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator
from typing import Any, NamedTuple

import numpy as np
import simpy

from ..workload.distributions import LengthDistribution
from .config import SimConfig, adaptive_interval_for

_BACKLOG_SHARE = 0.1  # a backlog below this share of one interval's link capacity counts as drained


class Observation(NamedTuple):
    """What the controller sees at one instant (cumulative link counters in bytes)."""

    sent_bytes: float
    backlog_bytes: float
    prfaas_queue: int
    pdp_queue: int


class StaticPolicy:
    """A fixed threshold (inf: all local; 0: all remote)."""

    def __init__(self, threshold_tokens: float):
        self.threshold_tokens = threshold_tokens
        self.changes: list[tuple[float, float]] = [(0.0, threshold_tokens)]


class AdaptivePolicy:
    """A threshold that climbs a quantile ladder while the link or PrfaaS saturates (see the module docstring)."""

    def __init__(self, plan_threshold_tokens: float, dist: LengthDistribution, config: SimConfig):
        self.ladder_tokens = threshold_ladder(plan_threshold_tokens, dist, config.adaptive_step_share)
        self._rung = 0
        self._config = config
        self._interval_s = adaptive_interval_for(config)
        self.threshold_tokens = self.ladder_tokens[0]
        self.changes: list[tuple[float, float]] = [(0.0, self.threshold_tokens)]

    def run(self, env: simpy.Environment, observe: Callable[[], Observation],
            capacity_bytes_between: Callable[[float, float], float],
            finished: Callable[[], bool]) -> Generator[simpy.Event, Any, None]:
        """SimPy process: every ``adaptive_interval_s``, move at most one rung up or down."""
        cfg = self._config
        before, before_s = observe(), env.now
        while not finished():
            yield env.timeout(self._interval_s)
            now = observe()
            capacity_bytes = capacity_bytes_between(before_s, env.now)
            offered_bytes = now.sent_bytes - before.sent_bytes + now.backlog_bytes - before.backlog_bytes
            if capacity_bytes > 0:
                utilisation = offered_bytes / capacity_bytes
            else:
                utilisation = math.inf if offered_bytes > 0 else 0.0
            crowded = now.prfaas_queue > cfg.adaptive_queue_high and now.prfaas_queue > now.pdp_queue
            if (utilisation > cfg.adaptive_util_high or crowded) and self._rung + 1 < len(self.ladder_tokens):
                self._move(env.now, +1)
            elif (utilisation < cfg.adaptive_util_low and now.prfaas_queue <= cfg.adaptive_queue_high / 2
                  and now.backlog_bytes <= _BACKLOG_SHARE * capacity_bytes and self._rung > 0):
                self._move(env.now, -1)
            before, before_s = now, env.now

    def _move(self, now_s: float, step: int) -> None:
        self._rung += step
        self.threshold_tokens = self.ladder_tokens[self._rung]
        self.changes.append((now_s, self.threshold_tokens))


def threshold_ladder(plan_threshold_tokens: float, dist: LengthDistribution, step_share: float) -> list[float]:
    """Thresholds t0 < t1 < ... : t_k = F^-1(1 - max(p0 - k step_share, 0)), p0 = P(L > t0), in tokens."""
    p0 = float(dist.probs[dist.lengths_tokens > plan_threshold_tokens].sum())
    ladder = [plan_threshold_tokens]
    if p0 <= 0:
        return ladder
    shares = np.maximum(p0 - step_share * np.arange(1, math.ceil(p0 / step_share) + 1), 0.0)
    for t in dist.quantile(np.clip(1.0 - shares, 0.0, 1.0)):
        if t > ladder[-1]:
            ladder.append(float(t))
    return ladder
