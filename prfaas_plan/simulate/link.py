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

Events at which the rates are recomputed: a transfer starts, a transfer completes, a prefill
ends, a transfer that was behind catches up with its production, the capacity steps. The link
is passive state: the simulator's event loop (``engine.py``) calls ``update(now_s)`` at each of
them, which integrates the rates since the last call, completes the transfers that are done
and sets ``next_s``, the time of the link's next event (inf when nothing can change).

With a transport model (``timing.transport``) no transfer runs faster than one transfer's rate
r_t = connections x one TCP connection's rate, the planner's figure: its cap is min(g, r_t) while
it prefills and has caught up, else r_t. The planner counts at most one transfer in flight per
PrfaaS instance; here an instance's next prefill may start while its last transfer drains, so
more may be in flight and the link carries at least the planner's N_prfaas x r_t.

Bookkeeping for the time series and the adaptive policy: cumulative bytes sent (egress),
cumulative bytes produced (the offered egress), and the backlog (produced but not yet
sent), all readable at any time without changing the state.
"""

from __future__ import annotations

import math

from .bandwidth import CapacitySchedule

_RELATIVE_TOLERANCE = 1e-9  # bytes within this share of S count as sent / caught up (float rounding)

# A transfer is a list (mutable, no per-attribute lookup): its fields by index.
_SIZE, _SENT, _PRODUCE, _START, _END, _RATE, _KEY = range(7)


class KvLink:
    """Max-min fair KV transfers over a link of capacity ``schedule`` (bytes/s)."""

    __slots__ = (
        "schedule",
        "fixed_bytes_per_s",
        "transfer_bytes_per_s",
        "active",
        "last_s",
        "sent_bytes",
        "started_bytes",
        "next_s",
    )

    def __init__(self, schedule: CapacitySchedule, transfer_bytes_per_s: float = math.inf):
        self.schedule = schedule
        self.transfer_bytes_per_s = transfer_bytes_per_s  # one transfer's most (inf: only the link limits it)
        # the capacity when it never steps (the common case, read at every update)
        self.fixed_bytes_per_s = schedule.rates_bytes_per_s[0] if len(schedule.starts_s) == 1 else None
        self.active: list[list] = []  # transfers in flight: [size, sent, produce rate, start, prefill end, rate, key]
        self.last_s = 0.0  # time up to which sent bytes are integrated
        self.sent_bytes = 0.0  # all transfers, up to last_s
        self.started_bytes = 0.0  # sum of S over every transfer started
        self.next_s = math.inf  # the link's next event

    def start(self, now_s: float, size_bytes: float, prefill_s: float, key: int) -> list[int]:
        """A transfer of ``size_bytes`` whose prefill starts now and lasts ``prefill_s``, then
        ``update``: the keys of the transfers this instant completes (``key`` among them when its
        last byte has been sent)."""
        self.active.append([size_bytes, 0.0, size_bytes / prefill_s, now_s, now_s + prefill_s, 0.0, key])
        self.started_bytes += size_bytes
        return self.update(now_s)

    def totals(self, now_s: float) -> tuple[float, float, float]:
        """Cumulative bytes since the start of the run, up to ``now_s`` (reads only): sent (egress),
        produced (the offered egress: KV produced by PrfaaS prefills so far) and the backlog
        (produced but not yet sent: transfers in flight)."""
        elapsed_s = now_s - self.last_s
        sent = self.sent_bytes
        unproduced = backlog = 0.0
        for tr in self.active:
            moved = tr[_RATE] * elapsed_s
            sent += moved
            produced = tr[_SIZE] if now_s >= tr[_END] else tr[_PRODUCE] * (now_s - tr[_START])
            unproduced += tr[_SIZE] - produced
            backlog += max(produced - tr[_SENT] - moved, 0.0)
        return sent, self.started_bytes - unproduced, backlog

    def update(self, now_s: float) -> list[int]:
        """Integrate the rates since the last update, complete the transfers that are done (their
        keys are returned, in start order), water-fill the capacity over the rest and set ``next_s``."""
        elapsed_s = now_s - self.last_s
        self.last_s = now_s
        done: list[int] = []
        sent_bytes = self.sent_bytes
        tolerance = _RELATIVE_TOLERANCE
        # One pass: integrate each transfer, complete it or find its cap (its production rate while
        # it prefills and has caught up, if one transfer's rate allows it; else that rate, inf without
        # a transport model) and, if capped at its production, its next event at that rate.
        limits = []
        capped_bytes_per_s = 0.0
        soonest_s = math.inf
        most = self.transfer_bytes_per_s
        for tr in self.active:
            if elapsed_s > 0:
                moved = tr[_RATE] * elapsed_s
                tr[_SENT] += moved
                sent_bytes += moved
            size, sent = tr[_SIZE], tr[_SENT]
            if size - sent <= tolerance * size:
                sent_bytes += size - sent  # drop the rounding residue
                tr[_SENT] = size
                done.append(tr[_KEY])
                continue
            end_s = tr[_END]
            if now_s < end_s:
                produce = tr[_PRODUCE]
                if produce <= most and produce * (now_s - tr[_START]) - sent <= tolerance * size:
                    tr[_RATE] = produce  # its rate if the caps fit (else the water-filling resets it)
                    limits.append(produce)
                    capped_bytes_per_s += produce
                    wait_s = (size - sent) / produce  # its last byte, or its prefill's end
                    if wait_s < soonest_s:
                        soonest_s = wait_s
                    if end_s - now_s < soonest_s:
                        soonest_s = end_s - now_s
                    continue
            limits.append(most)  # inf without a transport model: then the water-filling sets every rate
            capped_bytes_per_s = math.inf
        self.sent_bytes = sent_bytes
        active = self.active
        if done:
            active = self.active = [tr for tr in active if tr[_SENT] < tr[_SIZE]]
        if not active:  # with nothing in flight no event (not even a capacity step) changes the state
            self.next_s = math.inf
            return done
        capacity = self.fixed_bytes_per_s if self.fixed_bytes_per_s is not None else self.schedule.at(now_s)
        if capped_bytes_per_s < capacity * (1 - tolerance):
            # Every transfer is capped and the caps fit with room to spare: each has its cap (set
            # above; what the water-filling gives, without sorting), none falls behind.
            if self.fixed_bytes_per_s is None:
                step_s = self.schedule.next_change_s(now_s) - now_s
                next_s = soonest_s if soonest_s < step_s else step_s
            else:
                next_s = soonest_s
        else:
            next_s = self._water_fill(now_s, active, limits, capacity)
        # Late in a long run a step can fall below the clock's resolution; never schedule one
        # that would not advance the clock (it would repeat forever).
        least_s = 4 * math.ulp(now_s)
        self.next_s = now_s + (next_s if next_s > least_s else least_s)
        return done

    def _water_fill(self, now_s: float, active: list[list], limits: list[float], capacity: float) -> float:
        """Share ``capacity`` max-min fairly under the caps ``limits``; return the time to the next
        link event (s): a transfer completing, a prefill ending, a transfer catching up, a step."""
        order = sorted(range(len(active)), key=limits.__getitem__)
        left, remaining = len(order), capacity
        for k in order:
            tr, limit = active[k], limits[k]
            share = remaining / left
            tr[_RATE] = limit if limit < share else share
            remaining -= tr[_RATE]
            left -= 1
        next_s = self.schedule.next_change_s(now_s) - now_s
        for tr in active:
            rate = tr[_RATE]
            if rate > 0:
                next_s = min(next_s, (tr[_SIZE] - tr[_SENT]) / rate)
            if now_s < tr[_END]:
                next_s = min(next_s, tr[_END] - now_s)
                behind = tr[_PRODUCE] * (now_s - tr[_START]) - tr[_SENT]
                if behind > _RELATIVE_TOLERANCE * tr[_SIZE] and rate > tr[_PRODUCE]:
                    next_s = min(next_s, behind / (rate - tr[_PRODUCE]))
        return next_s
