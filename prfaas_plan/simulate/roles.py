"""Role rebalancing in the simulator: PD instances switch between PD-P and PD-D while the run
goes on (the paper's long-term scheduling, ``SimConfig.rebalance``).

The PD cluster's N_p + N_d instances are all present in both stages; an instance in the
other role holds its slots there with a *blocker* (a request of higher priority in a
``simpy.PriorityResource``: granted before waiting requests). Every ``rebalance_interval_s``
a controller looks at the queues:

- PD-P queue above ``rebalance_queue_high``, no decode queue, more than one decode instance,
  and decode still under 80% of its slots with one instance fewer (its running requests over
  the slots of N_d - 1 instances; a split whose decode cannot carry the traffic is not
  chosen): one decode instance stops taking requests, drains (its running requests finish),
  is idle for ``conversion_s``, then joins PD-P;
- decode queue above the limit, PD-P queue at most half of it and more than one PD-P
  instance: one PD-P instance is taken at its next free moment, idle for ``conversion_s``,
  then decodes.

A direction must hold at two consecutive looks, one switch runs at a time, and the controller
then waits three intervals. Each switch is recorded as (time_s, N_p, N_d) when it completes.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

import simpy

from ..planner.decode_model import DecodeModel

BLOCK = -1  # priority of a blocker (lower runs first)
DECODE_BUSY_SHARE = 0.8
COOLDOWN_INTERVALS = 3


class RolePool:
    """The PD-P stage as a PriorityResource of N_p + N_d slots, those of decoding instances blocked."""

    def __init__(self, env: simpy.Environment, n_p: int, n_d: int):
        self.env = env
        self.slots = simpy.PriorityResource(env, capacity=max(n_p + n_d, 1))
        self.blockers = [self.slots.request(priority=BLOCK) for _ in range(n_d)]
        self.pending = 0  # blockers asked for, not granted yet
        self.active = n_p

    @property
    def queue_length(self) -> int:
        return len(self.slots.queue) - self.pending

    def request(self):
        return self.slots.request(priority=0)

    def release(self, request) -> None:
        self.slots.release(request)

    def grow(self) -> None:
        """One more PD-P instance (a decoding one converted)."""
        self.slots.release(self.blockers.pop())
        self.active += 1

    def shrink(self) -> Generator[simpy.Event, Any, None]:
        """Take one PD-P instance at its next free moment."""
        blocker = self.slots.request(priority=BLOCK)
        self.pending += 1
        yield blocker
        self.pending -= 1
        self.blockers.append(blocker)
        self.active -= 1


class RoleDecodePool:
    """The PD-D stage: N_p + N_d instances of ``batch_size`` slots, only the decoding ones joined."""

    def __init__(self, env: simpy.Environment, n_p: int, n_d: int, decode: DecodeModel):
        self.env = env
        self.batch = decode.batch_size
        total = max(n_p + n_d, 1)
        self.slots = simpy.PriorityResource(env, capacity=total * self.batch)
        self.running = [0] * total
        self.decoding = [k < n_d for k in range(total)]
        self.blockers: dict[int, list] = {
            k: [self.slots.request(priority=BLOCK) for _ in range(self.batch)] for k in range(n_d, total)
        }
        self.pending = 0
        self._step_s = [float(s) for s in decode.step_s_by_batch]

    @property
    def queue_length(self) -> int:
        return len(self.slots.queue) - self.pending

    @property
    def active(self) -> int:
        return sum(self.decoding)

    def busy_share(self) -> float:
        active = self.active
        return sum(r for r, d in zip(self.running, self.decoding) if d) / (active * self.batch) if active else 1.0

    def busy_share_without_one(self) -> float:
        """The busy share the decoding instances would have with one instance fewer (the same
        running requests over one batch fewer of slots): what giving one to PD-P leaves."""
        active = self.active
        return self.busy_share() * active / (active - 1) if active > 1 else 1.0

    def serve(self, output_tokens: float) -> Generator[simpy.Event, Any, float]:
        request = self.slots.request(priority=0)
        yield request
        choices = [k for k, d in enumerate(self.decoding) if d and self.running[k] < self.batch]
        instance = min(choices or [k for k, d in enumerate(self.decoding) if d], key=self.running.__getitem__)
        self.running[instance] += 1
        tpot_s = self._step_s[min(self.running[instance], self.batch) - 1]
        yield self.env.timeout(output_tokens * tpot_s)
        self.running[instance] -= 1
        self.slots.release(request)
        return tpot_s

    def shrink(self) -> Generator[simpy.Event, Any, None]:
        """Stop one decoding instance (the least loaded), take its slots and wait until it is empty."""
        k = min((k for k, d in enumerate(self.decoding) if d), key=self.running.__getitem__)
        self.decoding[k] = False
        taken = [self.slots.request(priority=BLOCK) for _ in range(self.batch)]  # all queued at once
        self.pending += sum(not blocker.triggered for blocker in taken)
        for blocker in taken:
            if not blocker.triggered:
                yield blocker
                self.pending -= 1
        while self.running[k] > 0:
            yield self.env.timeout(0.05)
        self.blockers[k] = taken

    def grow(self) -> None:
        """One more decoding instance (a PD-P one converted)."""
        k = next(iter(self.blockers))
        for blocker in self.blockers.pop(k):
            self.slots.release(blocker)
        self.decoding[k] = True


def rebalance(
    env: simpy.Environment,
    pdp: RolePool,
    decode: RoleDecodePool,
    interval_s: float,
    queue_high: int,
    conversion_s: float,
    finished: Callable[[], bool],
    changes: list,
) -> Generator[simpy.Event, Any, None]:
    """SimPy process: the controller of the module docstring. A direction must hold at two
    consecutive looks (hysteresis against the queues' noise), and after a switch the controller
    waits ``COOLDOWN_INTERVALS`` intervals for the queues to show its effect."""
    last = None
    while not finished():
        yield env.timeout(interval_s)
        if (
            pdp.queue_length > queue_high
            and decode.queue_length == 0
            and decode.active > 1
            and decode.busy_share_without_one() < DECODE_BUSY_SHARE
        ):
            want = "to_prefill"
        elif decode.queue_length > queue_high and pdp.queue_length <= queue_high / 2 and pdp.active > 1:
            want = "to_decode"
        else:
            want = None
        if want is None or want != last:
            last = want
            continue
        last = None
        if want == "to_prefill":
            yield from decode.shrink()
            if not (yield from _wait(env, conversion_s, interval_s, finished)):
                return
            pdp.grow()
        else:
            yield from pdp.shrink()
            if not (yield from _wait(env, conversion_s, interval_s, finished)):
                return
            decode.grow()
        changes.append((env.now, pdp.active, decode.active))
        yield from _wait(env, COOLDOWN_INTERVALS * interval_s, interval_s, finished)


def _wait(
    env: simpy.Environment, seconds: float, step_s: float, finished: Callable[[], bool]
) -> Generator[simpy.Event, Any, bool]:
    """Wait ``seconds`` in steps, stopping early when the run has finished (False then), so that a
    long conversion does not outlast the requests."""
    end = env.now + seconds
    while env.now < end:
        if finished():
            return False
        yield env.timeout(min(step_s, end - env.now))
    return True
