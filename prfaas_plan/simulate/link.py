"""The PrfaaS -> PD link: a fluid, max-min fair model of KV transfers with layer-wise pipelining.

Model. A remote request's transfer of S bytes (S = S_kv(L)) starts when its prefill starts
(at time a) and its KV is produced at the constant rate g = S / T_prefill(L) until the
prefill ends (at a + T_prefill): produced(t) = min(g (t - a), S). A transfer never sends
bytes that are not produced yet, so while it prefills its rate is capped at g whenever it
has caught up (sent = produced); once behind (sent < produced), or once the prefill has
ended, only the link limits it. The usable capacity c(t) (``CapacitySchedule``) is shared
max-min fairly (water-filling): transfers whose cap is below the equal share get their
cap, the rest split what is left equally (processor sharing when none is capped). Rates
are constant between events, so sent bytes are integrated exactly.

Events at which the rates are recomputed: a transfer starts (an interrupt from the
request's process), a transfer completes, a prefill ends, a transfer that was behind
catches up with its production, the capacity steps. A SimPy process owns the rates: it
computes the time to the next of these events and waits with ``env.timeout``, or, with
nothing in flight, on an event that only an interrupt ends.

Bookkeeping for the time series and the adaptive policy: cumulative bytes sent (egress),
cumulative bytes produced (the offered egress), and the backlog (produced but not yet
sent), all readable at any time without changing the state.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from typing import Any, NamedTuple

import simpy

from .bandwidth import CapacitySchedule

_RELATIVE_TOLERANCE = 1e-9  # bytes within this share of S count as sent / caught up (float rounding)


class _Transfer:
    __slots__ = ("size_bytes", "sent_bytes", "produce_bytes_per_s", "start_s", "prefill_end_s", "rate_bytes_per_s", "done")

    def __init__(self, size_bytes: float, prefill_s: float, start_s: float, done: simpy.Event):
        self.size_bytes = size_bytes
        self.sent_bytes = 0.0
        self.produce_bytes_per_s = size_bytes / prefill_s
        self.start_s = start_s
        self.prefill_end_s = start_s + prefill_s
        self.rate_bytes_per_s = 0.0
        self.done = done

    def produced_bytes(self, now_s: float) -> float:
        if now_s >= self.prefill_end_s:
            return self.size_bytes
        return self.produce_bytes_per_s * (now_s - self.start_s)


class LinkTotals(NamedTuple):
    """Cumulative link counters at one instant, in bytes since the start of the run."""

    sent_bytes: float  # egress
    produced_bytes: float  # offered egress: KV produced by PrfaaS prefills so far
    backlog_bytes: float  # produced but not yet sent (transfers in flight)


class KvLink:
    """Max-min fair KV transfers over a link of capacity ``schedule`` (bytes/s)."""

    def __init__(self, env: simpy.Environment, schedule: CapacitySchedule):
        self._env = env
        self._schedule = schedule
        self._active: list[_Transfer] = []
        self._last_s = 0.0  # time up to which sent_bytes are integrated
        self._sent_bytes = 0.0  # all transfers, up to _last_s
        self._started_bytes = 0.0  # sum of S over every transfer started
        self._wake_pending = False
        self._process = env.process(self._run())

    @property
    def active_transfers(self) -> int:
        return len(self._active)

    def start(self, size_bytes: float, prefill_s: float) -> simpy.Event:
        """Start a transfer of ``size_bytes`` whose prefill starts now and lasts ``prefill_s``.

        Returns the event that succeeds when the last byte has been sent.
        """
        done = self._env.event()
        self._active.append(_Transfer(size_bytes, prefill_s, self._env.now, done))
        self._started_bytes += size_bytes
        if not self._wake_pending:
            self._wake_pending = True
            self._process.interrupt()
        return done

    def totals(self) -> LinkTotals:
        """Bytes sent, produced and in backlog up to now (reads only)."""
        now_s = self._env.now
        elapsed_s = now_s - self._last_s
        sent = self._sent_bytes
        unproduced = backlog = 0.0
        for tr in self._active:
            moved = tr.rate_bytes_per_s * elapsed_s
            sent += moved
            produced = tr.produced_bytes(now_s)
            unproduced += tr.size_bytes - produced
            backlog += max(produced - tr.sent_bytes - moved, 0.0)
        return LinkTotals(sent, self._started_bytes - unproduced, backlog)

    def _run(self) -> Generator[simpy.Event, Any, None]:
        env = self._env
        while True:
            self._advance(env.now)
            delay_s = self._reallocate(env.now)
            try:
                yield env.event() if math.isinf(delay_s) else env.timeout(delay_s)
            except simpy.Interrupt:
                self._wake_pending = False

    def _advance(self, now_s: float) -> None:
        """Integrate the constant rates since the last event; complete the transfers that are done."""
        elapsed_s = now_s - self._last_s
        self._last_s = now_s
        finished = False
        for tr in self._active:
            if elapsed_s > 0:
                moved = tr.rate_bytes_per_s * elapsed_s
                tr.sent_bytes += moved
                self._sent_bytes += moved
            if tr.size_bytes - tr.sent_bytes <= _RELATIVE_TOLERANCE * tr.size_bytes:
                self._sent_bytes += tr.size_bytes - tr.sent_bytes  # drop the rounding residue
                tr.sent_bytes = tr.size_bytes
                tr.done.succeed()
                finished = True
        if finished:
            self._active = [tr for tr in self._active if tr.sent_bytes < tr.size_bytes]

    def _reallocate(self, now_s: float) -> float:
        """Water-fill the capacity over the active transfers; return the time to the next link event (s)."""
        capacity = self._schedule.at(now_s)
        limits = []
        for tr in self._active:
            limit = math.inf
            if now_s < tr.prefill_end_s:
                behind = tr.produced_bytes(now_s) - tr.sent_bytes
                if behind <= _RELATIVE_TOLERANCE * tr.size_bytes:
                    limit = tr.produce_bytes_per_s
            limits.append((limit, tr))
        limits.sort(key=lambda item: item[0])
        left, remaining = len(limits), capacity
        for limit, tr in limits:
            share = remaining / left
            tr.rate_bytes_per_s = limit if limit < share else share
            remaining -= tr.rate_bytes_per_s
            left -= 1
        next_s = self._schedule.next_change_s(now_s) - now_s
        for tr in self._active:
            rate = tr.rate_bytes_per_s
            if rate > 0:
                next_s = min(next_s, (tr.size_bytes - tr.sent_bytes) / rate)
            if now_s < tr.prefill_end_s:
                next_s = min(next_s, tr.prefill_end_s - now_s)
                behind = tr.produced_bytes(now_s) - tr.sent_bytes
                if behind > _RELATIVE_TOLERANCE * tr.size_bytes and rate > tr.produce_bytes_per_s:
                    next_s = min(next_s, behind / (rate - tr.produce_bytes_per_s))
        # Late in a long run a step can fall below the clock's resolution; never schedule one
        # that would not advance the clock (it would repeat forever).
        return max(next_s, 4 * math.ulp(now_s))
