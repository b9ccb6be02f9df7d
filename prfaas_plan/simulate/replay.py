"""Replaying a request trace in the simulator: its arrivals and each request's own (input,
output) in order, instead of drawn ones (``api.simulate(replay=True)``).

The requests arriving in [from_s, to_s) of trace time (seconds from the trace's first
request; None: open) are replayed at arrival (t - t_0) / speedup, t_0 the first of them, so
the replayed rate is speedup x (requests / span) and a window's requests are those the file
has there, by count. A window needs at least 2 requests over a span > 0 to have a rate (one
instant has none): fewer is refused. A request routes on its uncached input, max(1, input - cached) (cached
where the format gives it), and decodes max(1, output) tokens (a request yields at least its
first token), as the planner's joint (``workload.joint``) counts them. With
``cluster_caches.from_trace`` the request instead routes on its own class of the caches' replay
(``workload.cluster_cache.RoutedPoints.classes_of`` of its ``rows``): its uncached length and
the KV it ships, in the regime the plan chose, as the planner's routed points count them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import PlanInputError
from ..ranges import SPEEDUP, TRACE_SECONDS
from ..workload.traces import Trace
from ..workload.traces.record import arrival_rate_rps


@dataclass(frozen=True, eq=False)
class Replay:
    """Requests to replay in arrival order: arrival_s (s from the run's start), input_tokens
    (uncached, what routing and prefill see) and output_tokens, float64 arrays; where they come
    from, for the report: the trace's ``source``, the ``speedup`` and the window [from_s, to_s)
    of trace time asked (None: open); ``rows``, each request's index in the trace (arrival
    order), by which a replay with per-request cached prefixes finds its class."""

    arrival_s: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    source: str = ""
    speedup: float = 1.0
    from_s: float | None = None
    to_s: float | None = None
    rows: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.arrival_s.size)

    @property
    def rate_rps(self) -> float:
        """Requests / span of the replayed arrivals (req/s; ``record.arrival_rate_rps``, finite:
        ``replay_of`` refuses a window of one instant)."""
        return arrival_rate_rps(self.arrival_s)

    def to_json_dict(self) -> dict:
        """What was replayed (not the arrays): the trace, speedup, window, requests, their span
        (s of replayed time), rate and mean lengths (tokens)."""
        return {
            "source": self.source,
            "speedup": self.speedup,
            "from_s": self.from_s,
            "to_s": self.to_s,
            "requests": len(self),
            "span_s": float(self.arrival_s[-1] - self.arrival_s[0]),
            "rate_rps": self.rate_rps,
            "mean_input_tokens": float(np.mean(self.input_tokens)),
            "mean_output_tokens": float(np.mean(self.output_tokens)),
        }

    def window_text(self) -> str:
        """The window asked, as ``[from, to) s`` of trace time."""
        return window_text(self.from_s, self.to_s)


def window_text(from_s: float | None, to_s: float | None) -> str:
    """A window of trace time as ``[from, to) s`` (an open end: 0 or ``end``)."""
    return f"[{from_s or 0:g}, {'end' if to_s is None else f'{to_s:g}'}) s"


def replay_of(trace: Trace, speedup: float = 1.0, from_s: float | None = None, to_s: float | None = None) -> Replay:
    """The requests of ``trace`` in [from_s, to_s), their arrivals divided by ``speedup``."""
    SPEEDUP.check(speedup, "speedup")
    for value, name in ((from_s, "from_s"), (to_s, "to_s")):
        if value is not None:
            TRACE_SECONDS.check(value, name)
    if from_s is not None and to_s is not None and to_s <= from_s:
        raise PlanInputError(f"must be above `from_s` ({from_s:g} s), got {to_s:g}", field="to_s")
    rows = trace.window_rows(from_s, to_s)
    part = trace.take(rows)
    window = window_text(from_s, to_s)
    if len(part) == 0:
        raise PlanInputError(
            f"no request of the trace arrives in {window} (it spans {trace.span_s:g} s)",
            source=trace.source,
            field="from_s" if from_s is not None and from_s > 0 else "to_s",  # the end that left nothing
        )
    if len(part) < 2 or part.span_s == 0:
        raise PlanInputError(
            f"{len(part)} request(s) of the trace arrive in {window}, all at one instant: a replay needs at least 2 "
            "over a span > 0 to have a rate (widen the window)",
            source=trace.source,
            field="to_s" if to_s is not None else ("from_s" if from_s is not None else "replay"),
        )
    cached = 0 if part.cached_tokens is None else part.cached_tokens.astype(np.float64)
    return Replay(
        (part.arrival_s - part.arrival_s[0]) / speedup,
        np.maximum(part.input_tokens.astype(np.float64) - cached, 1.0),
        np.maximum(part.output_tokens.astype(np.float64), 1.0),
        trace.source,
        speedup,
        from_s,
        to_s,
        rows,
    )
