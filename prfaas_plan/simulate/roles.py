"""Role rebalancing in the simulator: PD instances switch between PD-P and PD-D while the run
goes on (the paper's long-term scheduling, ``SimConfig.rebalance``).

The PD site's N_p + N_d instances are all present in both stages; an instance in the other
role holds its slots there with a *blocker*, which is granted a freed slot before any waiting
request (the event loop in ``engine.py`` keeps the slots). Every ``rebalance_interval_s`` a
controller looks at the queues:

- PD-P queue above ``rebalance_queue_high``, no decode queue, more than one decode instance,
  and decode still under 80% of its slots with one instance fewer (its running requests over
  the slots of N_d - 1 instances; a split whose decode cannot carry the traffic is not
  chosen): one decode instance (the least loaded) stops taking requests, drains (its running
  requests finish; checked every ``DRAIN_POLL_S``), is idle for ``conversion_s``, then joins PD-P;
- decode queue above the limit, PD-P queue at most half of it and more than one PD-P
  instance: one PD-P instance is taken at its next free moment, idle for ``conversion_s``,
  then decodes.

A direction must hold at two consecutive looks, one switch runs at a time, and the controller
then waits three intervals. Each switch is recorded as (time_s, N_p, N_d) when it completes.

The controller is a generator driven by the event loop: it yields a float to wait that many
seconds, or a command (``SHRINK_PDP``, ``GROW_PDP``, ``SHRINK_DECODE``, ``GROW_DECODE``) that the
loop carries out on the site's slots, resuming the controller when it is done (a shrink when its
blockers hold their slots; ``SHRINK_DECODE`` sends back the instance it stopped).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .config import SimConfig

DECODE_BUSY_SHARE = 0.8
COOLDOWN_INTERVALS = 3
DRAIN_POLL_S = 0.05  # how often a stopped decode instance is checked for running requests

SHRINK_PDP, GROW_PDP, SHRINK_DECODE, GROW_DECODE = "shrink_pdp", "grow_pdp", "shrink_decode", "grow_decode"


class SiteView(Protocol):
    """What the controller reads of a PD site (the event loop's state; read only)."""

    pdp_active: int  # PD-P instances now
    running: list[int]  # decode requests running per PD instance
    decoding: list[bool]  # which PD instances decode now
    batch: int  # decode slots per instance
    pdp_queue: deque  # requests waiting for PD-P
    decode_queue: deque  # requests waiting for a decode slot


def decode_active(site: SiteView) -> int:
    return sum(site.decoding)


def busy_share(site: SiteView) -> float:
    """Running decode requests over the decoding instances' slots."""
    active = decode_active(site)
    return sum(r for r, d in zip(site.running, site.decoding) if d) / (active * site.batch) if active else 1.0


def busy_share_without_one(site: SiteView) -> float:
    """The busy share the decoding instances would have with one instance fewer (the same
    running requests over one batch fewer of slots): what giving one to PD-P leaves."""
    active = decode_active(site)
    return busy_share(site) * active / (active - 1) if active > 1 else 1.0


def rebalance(
    site: SiteView, config: SimConfig, finished: Callable[[], bool], clock: Callable[[], float], changes: list
) -> Generator[Any, Any, None]:
    """The controller of the module docstring, every ``config.rebalance_interval_s``. A direction
    must hold at two consecutive looks (hysteresis against the queues' noise), and after a switch
    the controller waits ``COOLDOWN_INTERVALS`` intervals for the queues to show its effect."""
    interval_s, queue_high, conversion_s = config.rebalance_interval_s, config.rebalance_queue_high, config.conversion_s
    last = None
    while not finished():
        yield interval_s
        pdp_queue, decode_queue = len(site.pdp_queue), len(site.decode_queue)
        if (
            pdp_queue > queue_high
            and decode_queue == 0
            and decode_active(site) > 1
            and busy_share_without_one(site) < DECODE_BUSY_SHARE
        ):
            want = "to_prefill"
        elif decode_queue > queue_high and pdp_queue <= queue_high / 2 and site.pdp_active > 1:
            want = "to_decode"
        else:
            want = None
        if want is None or want != last:
            last = want
            continue
        last = None
        if want == "to_prefill":
            k = yield SHRINK_DECODE
            while site.running[k] > 0:
                yield DRAIN_POLL_S
        else:
            yield SHRINK_PDP
        if not (yield from _wait(conversion_s, interval_s, finished, clock)):
            return
        yield GROW_PDP if want == "to_prefill" else GROW_DECODE
        changes.append((clock(), site.pdp_active, decode_active(site)))
        yield from _wait(COOLDOWN_INTERVALS * interval_s, interval_s, finished, clock)


def _wait(seconds: float, step_s: float, finished: Callable[[], bool], clock: Callable[[], float]) -> Generator[float, Any, bool]:
    """Wait ``seconds`` in steps, stopping early when the run has finished (False then), so that a
    long conversion does not outlast the requests."""
    end = clock() + seconds
    while clock() < end:
        if finished():
            return False
        yield min(step_s, end - clock())
    return True
