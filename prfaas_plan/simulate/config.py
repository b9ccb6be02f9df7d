"""What to simulate: the arrival process, the routing policy, the link's bandwidth over time.

``SimConfig`` is validated on construction; a bad value raises ``PlanInputError`` whose
field is the name of the ``SimConfig`` field (``rate_rps``, ``cv``, ...; the CLI names its
options, ``cli.OPTION_NAMES``).
This module imports nothing heavy (no numpy).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..choices import ArrivalProcess, RoutingPolicy, choice_of
from ..errors import PlanInputError, show
from ..ranges import ARRIVAL_CV, RATE_RPS, REQUESTS, SEED, SIM_SECONDS
from .bandwidth import check_trace

if TYPE_CHECKING:
    from .replay import Replay


@dataclass(frozen=True)
class SimConfig:
    """One simulation run. Times in seconds, rates in requests/s, bandwidths in decimal Gbps.

    Arrivals (``arrivals``): ``poisson`` (exponential inter-arrival times, mean 1 / rate_rps);
    ``gamma`` (gamma inter-arrival times with mean 1 / rate_rps and coefficient of variation
    ``cv``); ``onoff`` (a Markov-modulated Poisson process: rate_rps * burst_factor during
    'on' periods, a lower rate during 'off' periods chosen so that the long-run mean is
    rate_rps; exponential on/off durations with means on_s and off_s).

    Routing (``policy``): ``static`` keeps the deployment's threshold; ``adaptive`` raises it
    when the link or the PrfaaS queue saturates and lowers it back (``policies.py``).

    The link's usable bandwidth is the scenario's, replaced from each ``bandwidth_trace``
    step (time_s, usable_gbps) on, and multiplied by ``drop_to_fraction`` during
    [drop_at_s, drop_at_s + drop_for_s).

    The first ``warmup_fraction`` of completed requests (in completion order) is left out
    of the latency statistics and of the throughput window.
    """

    rate_rps: float
    requests: int
    seed: int = 0
    arrivals: ArrivalProcess = ArrivalProcess.poisson
    cv: float = 1.0
    burst_factor: float = 2.0
    on_s: float = 30.0
    off_s: float = 30.0
    policy: RoutingPolicy = RoutingPolicy.static
    bandwidth_trace: tuple[tuple[float, float], ...] | None = None
    drop_at_s: float | None = None
    drop_for_s: float = 0.0
    drop_to_fraction: float = 0.5
    sample_interval_s: float = 1.0
    warmup_fraction: float = 0.1
    adaptive_util_high: float = 0.9
    adaptive_util_low: float = 0.6
    adaptive_wait_high_s: float = 5.0  # a queue (seconds of work per instance) above this is backed up
    adaptive_wait_low_s: float = 1.0  # ... at or below this has headroom
    adaptive_interval_s: float = 5.0
    adaptive_step_share: float = 0.05  # offloaded share of requests removed per raise (0.05 = 5 points)
    rebalance: bool = False  # PD instances switch between PD-P and PD-D during the run (``roles.py``)
    conversion_s: float = 300.0  # one switching instance is idle this long
    rebalance_interval_s: float = 30.0
    rebalance_queue_high: int = 8  # requests waiting before a switch is considered
    replay: Replay | None = None  # a ``simulate.replay.Replay``: its arrivals and lengths, not drawn ones

    def __post_init__(self) -> None:
        RATE_RPS.check(self.rate_rps, "rate_rps")
        _integer(self.requests, "requests", minimum=1)
        REQUESTS.check(self.requests, "requests")
        _integer(self.seed, "seed", minimum=0)
        SEED.check(self.seed, "seed")
        object.__setattr__(self, "arrivals", choice_of(ArrivalProcess, self.arrivals, "arrivals"))
        ARRIVAL_CV.check(self.cv, "cv")
        _finite(self.on_s, "on_s", positive=True)
        _finite(self.off_s, "off_s", positive=True)
        _finite(self.burst_factor, "burst_factor", positive=True)
        if self.arrivals == ArrivalProcess.onoff:
            most = (self.on_s + self.off_s) / self.on_s  # the off rate would be negative above this
            if not 1.0 <= self.burst_factor <= most:
                raise PlanInputError(
                    f"must be in [1, (on_s + off_s) / on_s = {most:g}] so that the off-period rate is >= 0, "
                    f"got {self.burst_factor:g}",
                    field="burst_factor",
                )
        object.__setattr__(self, "policy", choice_of(RoutingPolicy, self.policy, "policy"))
        if self.bandwidth_trace is not None:
            object.__setattr__(self, "bandwidth_trace", check_trace(self.bandwidth_trace, "bandwidth_trace"))
        if self.drop_at_s is not None:
            SIM_SECONDS.check(self.drop_at_s, "drop_at_s")
        SIM_SECONDS.check(self.drop_for_s, "drop_for_s")
        _finite(self.drop_to_fraction, "drop_to_fraction", high=1)
        _finite(self.sample_interval_s, "sample_interval_s", positive=True)
        _finite(self.warmup_fraction, "warmup_fraction", high=1, closed=False)
        _finite(self.adaptive_util_low, "adaptive_util_low", positive=True)
        _finite(self.adaptive_util_high, "adaptive_util_high", positive=True)
        _below(self.adaptive_util_low, "adaptive_util_low", self.adaptive_util_high, "adaptive_util_high")
        _finite(self.adaptive_wait_low_s, "adaptive_wait_low_s")
        _finite(self.adaptive_wait_high_s, "adaptive_wait_high_s", positive=True)
        _below(self.adaptive_wait_low_s, "adaptive_wait_low_s", self.adaptive_wait_high_s, "adaptive_wait_high_s")
        _finite(self.adaptive_interval_s, "adaptive_interval_s", positive=True)
        _finite(self.adaptive_step_share, "adaptive_step_share", positive=True, high=1)
        _finite(self.conversion_s, "conversion_s")
        _finite(self.rebalance_interval_s, "rebalance_interval_s", positive=True)
        _integer(self.rebalance_queue_high, "rebalance_queue_high", minimum=0)


SAMPLES_PER_RUN = 20_000  # periodic samples and controller ticks a run aims at, at most


def _finite(value: object, field: str, *, positive: bool = False, high: float = math.inf, closed: bool = True) -> None:
    """A finite number >= 0 (> 0 if ``positive``), at most ``high`` (below it unless ``closed``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or math.isnan(value):
        raise PlanInputError(f"must be a number, got {show(value)}", field=field)
    number = float(value)
    if not (math.isfinite(number) and (number > 0 if positive else number >= 0)):
        raise PlanInputError(f"must be a finite number {'>' if positive else '>='} 0, got {number:g}", field=field)
    if number > high or (number == high and not closed):
        interval = f"{'(' if positive else '['}0, {high:g}{']' if closed else ')'}"
        raise PlanInputError(f"must be in {interval}, got {number:g}", field=field)


def _below(low: float, low_field: str, high: float, high_field: str) -> None:
    """A hysteresis band: the lower bound must be below the upper one."""
    if low >= high:
        raise PlanInputError(f"must be below `{high_field}` ({high:g}), got {low:g}", field=low_field)


def _integer(value: object, field: str, *, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise PlanInputError(f"must be an integer, got {show(value)}", field=field)
    if value < minimum:
        raise PlanInputError(f"must be >= {minimum}, got {value}", field=field)
