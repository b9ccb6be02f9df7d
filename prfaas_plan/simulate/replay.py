"""Replaying a request trace in the simulator: its arrivals and each request's own (input,
output) in order, instead of drawn ones (``api.simulate(replay=True)``).

The requests arriving in [from_s, to_s) of trace time (seconds from the trace's first
request; None: open) are replayed at arrival (t - t_0) / speedup, t_0 the first of them, so
the replayed rate is speedup x (requests / span) and a window's requests are those the file
has there, by count. A request routes on its uncached input, max(1, input - cached) (cached
where the format gives it), and decodes max(1, output) tokens (a request yields at least its
first token), as the planner's joint (``workload.joint``) counts them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import PlanInputError
from ..ranges import SPEEDUP, TRACE_SECONDS
from ..workload.traces import Trace


@dataclass(frozen=True, eq=False)
class Replay:
    """Requests to replay in arrival order: arrival_s (s from the run's start), input_tokens
    (uncached, what routing and prefill see) and output_tokens, float64 arrays."""

    arrival_s: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray

    def __len__(self) -> int:
        return int(self.arrival_s.size)

    @property
    def rate_rps(self) -> float:
        """Requests / span of the replayed arrivals (req/s); a window of one instant counts as 1 s."""
        span = float(self.arrival_s[-1] - self.arrival_s[0])
        return len(self) / span if span > 0 else float(len(self))


def replay_of(trace: Trace, speedup: float = 1.0, from_s: float | None = None, to_s: float | None = None) -> Replay:
    """The requests of ``trace`` in [from_s, to_s), their arrivals divided by ``speedup``."""
    SPEEDUP.check(speedup, "speedup")
    for value, name in ((from_s, "from_s"), (to_s, "to_s")):
        if value is not None:
            TRACE_SECONDS.check(value, name)
    if from_s is not None and to_s is not None and to_s <= from_s:
        raise PlanInputError(f"must be above `from_s` ({from_s:g} s), got {to_s:g}", field="to_s")
    part = trace.window(from_s, to_s)
    if len(part) == 0:
        raise PlanInputError(
            f"no request of the trace arrives in [{from_s or 0:g}, {'end' if to_s is None else f'{to_s:g}'}) s "
            f"(it spans {trace.span_s:g} s)",
            source=trace.source,
            field="from_s",
        )
    cached = 0 if part.cached_tokens is None else part.cached_tokens.astype(np.float64)
    return Replay(
        (part.arrival_s - part.arrival_s[0]) / speedup,
        np.maximum(part.input_tokens.astype(np.float64) - cached, 1.0),
        np.maximum(part.output_tokens.astype(np.float64), 1.0),
    )
