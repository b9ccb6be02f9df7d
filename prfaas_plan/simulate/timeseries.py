"""Periodic samples of the simulated system, one row every ``sample_interval_s``.

Rows are taken every interval until every request has completed. The interval starts at
``sample_interval_s`` (longer for very long runs: ``engine.horizon_s``) and
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
# a PD site's row also counts its requests waiting at PrfaaS sites (for a site sharing them)
SITE_COLUMNS = (*COLUMNS, "remote_waiting_requests")


MAX_ROWS_PER_INTERVAL = 20_000
