"""Periodic samples of the simulated system, one row every ``sample_interval_s``.

Rows are taken every interval until every request has completed. The interval starts at
``SimConfig.sample_interval_for()`` (the configured interval, longer for very long runs) and
doubles after every MAX_ROWS_PER_INTERVAL rows, so a run that lasts far longer than its
arrivals (a saturated or cut-off link) costs a bounded number of samples; ``time_s`` gives
each row's time. Queues are instantaneous (requests waiting, not in service). egress_gbps and
offered_egress_gbps are the bytes sent and the KV bytes produced over the interval
ending at time_s, divided by the interval; link_capacity_gbps is the link's mean usable
capacity over the same interval (so egress_gbps <= link_capacity_gbps in every row).
link_backlog_bytes is KV produced but not yet sent at time_s; threshold_tokens is the
routing threshold in force at time_s.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

import simpy

from ..units import bytes_per_s_to_gbps
from .bandwidth import CapacitySchedule
from .link import KvLink

# one set of names for the JSON series and the CSV columns (queues count waiting requests)
COLUMNS = (
    "time_s",
    "prfaas_queue_requests",
    "pdp_queue_requests",
    "decode_queue_requests",
    "link_backlog_bytes",
    "egress_gbps",
    "offered_egress_gbps",
    "link_capacity_gbps",
    "threshold_tokens",
)


MAX_ROWS_PER_INTERVAL = 20_000


class Sampler:
    def __init__(self, interval_s: float):
        self.interval_s = interval_s
        self.rows: list[tuple[float, ...]] = []

    def run(
        self,
        env: simpy.Environment,
        link: KvLink,
        schedule: CapacitySchedule,
        queues: Callable[[], tuple[int, int, int]],
        threshold_tokens: Callable[[], float],
        finished: Callable[[], bool],
    ) -> Generator[simpy.Event, Any, None]:
        """SimPy process appending one row (ordered as ``COLUMNS``) per interval."""
        before = link.totals()
        before_s = env.now
        while not finished():
            yield env.timeout(self.interval_s)
            now = link.totals()
            span_s = env.now - before_s
            self.rows.append(
                (
                    env.now,
                    *queues(),
                    now.backlog_bytes,
                    bytes_per_s_to_gbps((now.sent_bytes - before.sent_bytes) / span_s),
                    bytes_per_s_to_gbps((now.produced_bytes - before.produced_bytes) / span_s),
                    bytes_per_s_to_gbps(schedule.bytes_between(before_s, env.now) / span_s),
                    threshold_tokens(),
                )
            )
            before, before_s = now, env.now
            if len(self.rows) % MAX_ROWS_PER_INTERVAL == 0:
                self.interval_s *= 2
