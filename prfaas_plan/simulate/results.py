"""What a simulation run recorded (``EventLog``, any topology) and what a one-site run measured
(``SimResult``): throughput, TTFT and TPOT per path, egress, queue growth.

Measurement window. Let k = floor(warmup_fraction * completed). The window runs from the
k-th completion (t_w; 0 when k = 0) to the last arrival (t_a), so that neither the
warm-up nor the drain after the arrivals stop counts; if t_a <= t_w (a heavily
overloaded short run) it is [0, t_a]. offered_rps and achieved_rps are the arrivals and
the completions inside the window divided by its length. Latency statistics cover the
requests that completed after the first k.

Paths: 'remote' (prefilled by PrfaaS; TTFT = arrival -> last KV byte received + one RTT),
'local' (prefilled by PD-P; TTFT = arrival -> prefill end), 'overall' (both). TTFT
statistics in seconds, TPOT in milliseconds; percentiles interpolate linearly; a path
with no request reports count 0 and None for every statistic.

Queue growth. The total queue at a sample is the requests waiting for PrfaaS, PD-P and
decode plus the link backlog in request equivalents (backlog bytes / mean S_kv of the
remote requests). Over the arrival window [0, t_a], its mean and max in the first and
last 20% are compared: ``stable`` is mean_last <= 2 * mean_first + N_prfaas + N_p + N_d
(a queue that keeps growing fails this by a wide margin; the slack of one request per
instance absorbs noise at low load). None when either part has no sample.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..planner.deployment import Deployment
from .config import SimConfig
from .timeseries import COLUMNS

_EDGE_SHARE = 0.2  # first / last share of the arrival window compared for queue growth


@dataclass(frozen=True)
class EventLog:
    """What a run recorded. Per request (all PD sites, site k's requests at ``offsets[k]`` ..
    ``offsets[k + 1]``, in its arrival order): the arrays of ``per_request``; the global completion
    order; per PD site its sampled series (``timeseries.SITE_COLUMNS``), threshold changes (time_s,
    tokens) and role changes (time_s, N_p, N_d); per link the bytes it sent."""

    offsets: tuple[int, ...]
    arrays: dict[str, np.ndarray]
    order: np.ndarray  # request indices in completion order
    series: list[dict[str, np.ndarray]]  # per PD site, timeseries.SITE_COLUMNS -> one value per sample
    threshold_changes: list[list[tuple[float, float]]]
    role_changes: list[list[tuple[float, int, int]]]
    link_sent_bytes: list[float]

    def per_request(self, site: int) -> dict[str, np.ndarray]:
        """Site ``site``'s requests: arrival_s, input_tokens, output_tokens, remote, kv_bytes (of
        the remote ones; 0 for local), ttft_s, tpot_s, done_s and link (index into the topology's
        links; -1 local)."""
        lo, hi = self.offsets[site], self.offsets[site + 1]
        return {name: values[lo:hi] for name, values in self.arrays.items()}

    def completion_order(self, site: int) -> np.ndarray:
        """Site ``site``'s request indices (from 0) in completion order."""
        lo, hi = self.offsets[site], self.offsets[site + 1]
        order = self.order
        return order[(order >= lo) & (order < hi)] - lo


@dataclass(frozen=True)
class SimResult:
    config: SimConfig
    deployment: Deployment
    offered_rps: float  # arrivals per second in the measurement window
    achieved_rps: float  # completions per second in the measurement window
    completed: int
    remote_requests: int
    duration_s: float  # last completion
    window_s: tuple[float, float]  # the measurement window (start, end)
    ttft: dict[str, dict[str, float | int | None]]  # path -> {count, mean_s, p50_s, p90_s, p99_s}
    tpot: dict[str, dict[str, float | int | None]]  # path -> {count, mean_ms, p90_ms, p99_ms}
    egress: dict[str, float | None]  # (offered) egress Gbps: mean over window_s, max over the run; max backlog bytes, bytes sent
    queue_growth: dict[str, Any]  # first/last mean and max total queue, slope, stable
    threshold_changes: tuple[tuple[float, float], ...]  # (time_s, threshold_tokens) at each change
    timeseries: dict[str, np.ndarray] = field(repr=False)  # COLUMNS -> one value per sample
    per_request: dict[str, np.ndarray] = field(repr=False)  # arrival_s, input_tokens, ..., by request index
    role_changes: tuple[tuple[float, int, int], ...] = ()  # (time_s, N_p, N_d) after each role switch

    @property
    def stable(self) -> bool | None:
        return self.queue_growth["stable"]

    def timeseries_rows(self) -> list[dict[str, float]]:
        """One dict per sample (keys ``timeseries.COLUMNS``), for CSV output."""
        columns = [self.timeseries[name].tolist() for name in COLUMNS]
        return [dict(zip(COLUMNS, values)) for values in zip(*columns)]

    def to_json_dict(self, timeseries: bool = True) -> dict[str, Any]:
        """A JSON-ready dict (non-finite numbers become None); the time series as column lists if asked."""
        out = {
            "config": {k: getattr(self.config, k) for k in self.config.__dataclass_fields__},
            "deployment": {k: getattr(self.deployment, k) for k in self.deployment.__dataclass_fields__},
            "rate_rps": self.config.rate_rps,
            "offered_rps": self.offered_rps,
            "achieved_rps": self.achieved_rps,
            "requests": self.config.requests,
            "completed": self.completed,
            "remote_requests": self.remote_requests,
            "duration_s": self.duration_s,
            "window_s": list(self.window_s),
            "ttft": self.ttft,
            "tpot": self.tpot,
            "egress": self.egress,
            "queue_growth": self.queue_growth,
            "threshold_changes": [list(change) for change in self.threshold_changes],
            "role_changes": [list(change) for change in self.role_changes],
        }
        if timeseries:
            out["timeseries"] = {name: self.timeseries[name].tolist() for name in COLUMNS}
        return _json_safe(out)


def summarise(config: SimConfig, deployment: Deployment, log: EventLog) -> SimResult:
    """The result of a one-site run (the topology's PD site 0): from its per-request records,
    completion order, sampled series (``timeseries.COLUMNS``) and the link's count of bytes sent."""
    per_request = log.per_request(0)
    completion_order = log.completion_order(0)
    done_s = per_request["done_s"]
    arrival_s = per_request["arrival_s"]
    completed = int(completion_order.size)
    skip = math.floor(config.warmup_fraction * completed)
    last_arrival_s = float(arrival_s[-1])
    start_s = float(done_s[completion_order[skip - 1]]) if skip else 0.0
    if last_arrival_s <= start_s:
        start_s = 0.0
    span_s = last_arrival_s - start_s
    offered = np.count_nonzero((arrival_s > start_s) & (arrival_s <= last_arrival_s)) / span_s
    achieved = np.count_nonzero((done_s > start_s) & (done_s <= last_arrival_s)) / span_s

    measured = completion_order[skip:]
    remote = per_request["remote"]
    masks = {"local": ~remote[measured], "remote": remote[measured], "overall": np.ones(measured.size, bool)}
    ttft = {path: _stats(per_request["ttft_s"][measured][mask], (50, 90, 99), "s") for path, mask in masks.items()}
    tpot = {path: _stats(per_request["tpot_s"][measured][mask], (90, 99), "ms", 1e3) for path, mask in masks.items()}

    series = {name: np.asarray(log.series[0][name], dtype=float) for name in COLUMNS}
    remote_kv = per_request["kv_bytes"][remote]
    egress = {
        "mean_gbps": window_mean(series, "egress_gbps", start_s, last_arrival_s),
        "max_gbps": _max(series["egress_gbps"]),
        "mean_offered_gbps": window_mean(series, "offered_egress_gbps", start_s, last_arrival_s),
        "max_offered_gbps": _max(series["offered_egress_gbps"]),
        "max_link_backlog_bytes": _max(series["link_backlog_bytes"]),
        "sent_bytes": log.link_sent_bytes[0],
    }
    mean_kv = float(remote_kv.mean()) if remote_kv.size else 1.0
    slack = deployment.n_prfaas + deployment.n_p + deployment.n_d
    growth = _queue_growth(series, last_arrival_s, mean_kv, slack)
    return SimResult(
        config,
        deployment,
        float(offered),
        float(achieved),
        completed,
        int(remote.sum()),
        float(done_s.max()),
        (start_s, last_arrival_s),
        ttft,
        tpot,
        egress,
        growth,
        tuple(log.threshold_changes[0]),
        series,
        per_request,
        tuple(log.role_changes[0]),
    )


def _stats(values_s: np.ndarray, percentiles: tuple[int, ...], unit: str, scale: float = 1.0) -> dict[str, float | int | None]:
    """count, mean and the percentiles of ``values_s`` x ``scale`` (keys suffixed ``_{unit}``; None when empty)."""
    keys = [f"mean_{unit}", *(f"p{q}_{unit}" for q in percentiles)]
    if values_s.size == 0:
        return {"count": 0, **dict.fromkeys(keys)}
    values = [values_s.mean() * scale, *np.percentile(values_s * scale, percentiles)]
    return {"count": int(values_s.size), **{key: float(v) for key, v in zip(keys, values)}}


def _queue_growth(series: dict[str, np.ndarray], last_arrival_s: float, mean_kv_bytes: float, slack: int) -> dict[str, Any]:
    time_s = series["time_s"]
    total = (
        series["prfaas_queue_requests"]
        + series["pdp_queue_requests"]
        + series["decode_queue_requests"]
        + series["link_backlog_bytes"] / mean_kv_bytes
    )
    first = total[time_s <= _EDGE_SHARE * last_arrival_s]
    last = total[(time_s >= (1 - _EDGE_SHARE) * last_arrival_s) & (time_s <= last_arrival_s)]
    window = time_s <= last_arrival_s
    slope = float(np.polyfit(time_s[window], total[window], 1)[0]) if np.count_nonzero(window) >= 2 else None
    if first.size == 0 or last.size == 0:
        return {"first_mean": None, "first_max": None, "last_mean": None, "last_max": None, "slope_per_s": slope, "stable": None}
    return {
        "first_mean": float(first.mean()),
        "first_max": float(first.max()),
        "last_mean": float(last.mean()),
        "last_max": float(last.max()),
        "slope_per_s": slope,
        "stable": bool(last.mean() <= 2 * first.mean() + slack),
    }


def window_mean(series: dict[str, np.ndarray], column: str, start_s: float, end_s: float) -> float | None:
    """Time-weighted mean of a per-interval column over [start_s, end_s], the window the rates are
    measured in (not the drain after the last arrival). Row i holds over (time_s[i-1], time_s[i]]
    (the first reading is at 0), and the intervals grow in long runs (``timeseries``), so each row
    weighs its overlap with the window: for egress, the bytes sent in the window over its span."""
    end = series["time_s"]
    if end.size == 0:
        return None
    start = np.concatenate(([0.0], end[:-1]))
    overlap_s = np.clip(np.minimum(end, end_s) - np.maximum(start, start_s), 0.0, None)
    total_s = float(overlap_s.sum())
    return float(series[column] @ overlap_s / total_s) if total_s > 0 else None


def _max(values: np.ndarray) -> float | None:
    return float(values.max()) if values.size else None


def _json_safe(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    if hasattr(value, "to_json_dict"):  # a replay (``simulate.replay.Replay``): what was replayed, not its arrays
        return _json_safe(value.to_json_dict())
    return value
