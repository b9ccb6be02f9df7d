"""Routing thresholds: static, or adapted to the link and both prefill queues (paper section 3.4.3).

A request whose uncached input L exceeds the current threshold t is prefilled by PrfaaS
(the remote path), otherwise by PD-P (the local path).

``StaticPolicy`` keeps the deployment's t for the whole run.

``AdaptivePolicy`` is the paper's short-term, bandwidth-aware routing. Its thresholds form
a ladder above the plan's t0: with p0 = P(L > t0) the plan's offloaded share and Δ the step
share (``adaptive_step_share``, 5 points by default), rung k is the quantile
t_k = F^-1(1 - max(p0 - k Δ, 0)) of the input distribution, so each rung up offloads
about Δ fewer requests; the top rung (p = 0) keeps everything local. Every
``adaptive_interval_s`` a controller reads four signals, the paper's egress utilisation and
queue depths, each in the unit that says how long a request will wait:

- u, the link's offered utilisation over the last interval: (bytes sent + growth of the
  backlog) / bytes the link could carry, the backlog being KV produced but not yet sent.
  Sent plus backlog growth is the KV produced, so u > 1 means the backlog grows, while a
  backlog that drains at full link speed gives u < 1;
- W_link, the link backlog in seconds of link time: backlog bytes / the capacity now;
- W_prfaas and W_pdp, each path's queue in seconds of prefill work per instance: the
  instance-hold seconds of the requests waiting for an instance / the instances (N_prfaas;
  the PD-P instances now, which role switches change). It is the wait a request joining
  that queue can expect. The remote path's wait is W_r = W_prfaas + W_link.

With ``adaptive_wait_low_s`` (1 s: PD-P has headroom) and ``adaptive_wait_high_s`` (5 s, one
controller interval: a queue that does not drain before the next look is backed up):

- up one rung when the remote path saturates (u > ``adaptive_util_high`` or W_prfaas >
  wait_high) and PD-P has headroom (W_pdp <= wait_low);
- back to t0 at once when PD-P backs up (W_pdp > wait_high) and the remote path has more
  room (W_pdp > W_r): the extra local work is what backs it up, and a PD-P queue drains
  slowly (in the case study a 20K-token prompt holds an H20 instance 3.3 s, and its KV
  takes 0.56 s of a 7.5 Gbps link);
- down one rung, never below t0, when the remote path is relaxed (u < ``adaptive_util_low``
  and W_r <= wait_low) and PD-P is not backed up;
- otherwise hold (the hysteresis between the bounds). When both paths are backed up no
  threshold helps (re-balancing PD-P and PD-D is the paper's long-term scheduling).

A backlog that is large but draining (u low) does not raise t: the requests it holds are
already sent remote, and a raise would only load PD-P before the next burst. Over one
interval the KV produced by a few concurrent prefills is noisy (in the case study, 5-s
offered egress swings between ~3 and ~12 Gbps at a mean of ~9.7).
The threshold's history is recorded as (time_s, threshold_tokens) at each change.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator
from typing import Any, NamedTuple

import numpy as np

from ..workload.distributions import LengthDistribution
from .config import SimConfig


class Observation(NamedTuple):
    """What the controller sees at one instant."""

    sent_bytes: float  # cumulative egress since the start
    backlog_bytes: float  # KV produced but not yet sent
    capacity_bytes_per_s: float  # the link's usable capacity now
    prfaas_wait_s: float  # PrfaaS prefill work queued (hold seconds) / N_prfaas
    pdp_wait_s: float  # PD-P prefill work queued (hold seconds) / the PD-P instances now


class StaticPolicy:
    """A fixed threshold (inf: all local; 0: all remote)."""

    def __init__(self, threshold_tokens: float):
        self.threshold_tokens = threshold_tokens
        self.changes: list[tuple[float, float]] = [(0.0, threshold_tokens)]


class AdaptivePolicy:
    """A threshold that climbs a quantile ladder while the remote path saturates and PD-P has
    headroom (see the module docstring)."""

    def __init__(self, plan_threshold_tokens: float, dist: LengthDistribution, config: SimConfig, interval_s: float):
        self.ladder_tokens = threshold_ladder(plan_threshold_tokens, dist, config.adaptive_step_share)
        self._rung = 0
        self._config = config
        self._interval_s = interval_s  # adaptive_interval_s, or longer for a long run (engine.horizon_s)
        self.threshold_tokens = self.ladder_tokens[0]
        self.changes: list[tuple[float, float]] = [(0.0, self.threshold_tokens)]

    def run(
        self,
        observe: Callable[[], Observation],
        capacity_bytes_between: Callable[[float, float], float],
        finished: Callable[[], bool],
        clock: Callable[[], float],
    ) -> Generator[float, Any, None]:
        """The controller, a generator the event loop (``engine.py``) drives: it yields the seconds
        to wait (``adaptive_interval_s``) and at each look moves at most one rung up or down."""
        before, before_s = observe(), clock()
        while not finished():
            yield self._interval_s
            now, now_s = observe(), clock()
            capacity_bytes = capacity_bytes_between(before_s, now_s)
            offered_bytes = now.sent_bytes - before.sent_bytes + now.backlog_bytes - before.backlog_bytes
            step = self.decide(
                ratio(offered_bytes, capacity_bytes),
                ratio(now.backlog_bytes, now.capacity_bytes_per_s),
                now.prfaas_wait_s,
                now.pdp_wait_s,
            )
            if step:
                self._rung += step
                self.threshold_tokens = self.ladder_tokens[self._rung]
                self.changes.append((now_s, self.threshold_tokens))
            before, before_s = now, now_s

    def decide(self, utilisation: float, backlog_s: float, prfaas_wait_s: float, pdp_wait_s: float) -> int:
        """Rungs to move (+1 up, -1 down, -rung back to t0, 0 hold) from one interval's signals:
        the link's offered utilisation, its backlog (s of link time), the PrfaaS and PD-P queues
        (s of prefill work per instance); the rules of the module docstring."""
        cfg = self._config
        remote_wait_s = prfaas_wait_s + backlog_s
        if (
            (utilisation > cfg.adaptive_util_high or prfaas_wait_s > cfg.adaptive_wait_high_s)
            and pdp_wait_s <= cfg.adaptive_wait_low_s
            and self._rung + 1 < len(self.ladder_tokens)
        ):
            return +1
        if self._rung > 0 and pdp_wait_s > cfg.adaptive_wait_high_s and pdp_wait_s > remote_wait_s:
            return -self._rung
        if (
            self._rung > 0
            and utilisation < cfg.adaptive_util_low
            and remote_wait_s <= cfg.adaptive_wait_low_s
            and pdp_wait_s <= cfg.adaptive_wait_high_s
        ):
            return -1
        return 0


def ratio(amount: float, per: float) -> float:
    """amount / per, with x / 0 = inf for x > 0 and 0 / 0 = 0."""
    if per > 0:
        return amount / per
    return math.inf if amount > 0 else 0.0


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
