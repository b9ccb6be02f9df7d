"""The link's usable bandwidth over time: a piecewise-constant step function.

A bandwidth trace is a CSV file with the header ``time_s,gbps`` and one step per row:
from ``time_s`` on (seconds since the start of the run) the usable bandwidth is ``gbps``
(decimal Gbps) until the next row's time. Before the first row the scenario's usable
bandwidth applies. A drop window multiplies whatever applies by a fraction. Pure Python
(no numpy), so that reading a trace is cheap.
"""

from __future__ import annotations

import bisect
import math

from ..errors import PlanInputError, shorten
from ..ranges import BANDWIDTH_STEPS, LINK_GBPS, MAX_CSV_BYTES, SIM_SECONDS
from ..units import gbps_to_bytes_per_s
from ..yamlio import read_input_text

TRACE_HEADER = ("time_s", "gbps")


def read_bandwidth_trace(path: str) -> tuple[tuple[float, float], ...]:
    """Read a ``time_s,gbps`` CSV into ((time_s, usable_gbps), ...) steps.

    Blank lines and lines starting with ``#`` are skipped. A missing file, a wrong header,
    a non-numeric, non-finite or negative value, a time that does not increase, or no rows
    raise ``PlanInputError`` naming the file and the line.
    """
    lines = enumerate(read_input_text(path, MAX_CSV_BYTES).splitlines(), start=1)
    texts = [(number, text) for number, line in lines if (text := line.strip()) and not text.startswith("#")]
    if texts and tuple(cell.strip().lower() for cell in texts[0][1].split(",")) != TRACE_HEADER:
        number, text = texts[0]
        raise PlanInputError(f"expected the header 'time_s,gbps', got {shorten(text, 40)!r}", source=path, field=f"line {number}")
    steps: list[tuple[float, float]] = []
    for number, text in texts[1:]:
        at = f"line {number}"
        cells = [cell.strip() for cell in text.split(",")]
        if len(cells) != 2:
            raise PlanInputError(f"expected 2 values (time_s,gbps), got {len(cells)}", source=path, field=at)
        try:
            row = (float(cells[0]), float(cells[1]))
        except ValueError:
            raise PlanInputError(f"not a number in {shorten(text, 40)!r}", source=path, field=at) from None
        _check_step(row, steps[-1][0] if steps else None, source=path, field=at)
        steps.append(row)
        if len(steps) > BANDWIDTH_STEPS.hi:
            raise PlanInputError(f"more than {int(BANDWIDTH_STEPS.hi):,} steps", source=path, field=at)
    if not steps:
        raise PlanInputError("no rows (expected the header 'time_s,gbps' and one row per step)", source=path)
    return tuple(steps)


def check_trace(steps, field: str) -> tuple[tuple[float, float], ...]:
    """Validate in-memory steps ((time_s, gbps), ...) as ``read_bandwidth_trace`` does; return them as tuples."""
    try:
        rows = [(float(time_s), float(gbps)) for time_s, gbps in steps]
    except (TypeError, ValueError, OverflowError):
        raise PlanInputError("must be (time_s, gbps) pairs of numbers", field=field) from None
    if not rows:
        raise PlanInputError("has no steps", field=field)
    if len(rows) > BANDWIDTH_STEPS.hi:
        raise PlanInputError(f"{len(rows):,} steps; at most {int(BANDWIDTH_STEPS.hi):,}", field=field)
    for i, row in enumerate(rows):
        _check_step(row, rows[i - 1][0] if i else None, source=None, field=f"{field}[{i}]")
    return tuple(rows)


def _check_step(row: tuple[float, float], previous_time_s: float | None, *, source: str | None, field: str) -> None:
    for name, bound, value in (("time_s", SIM_SECONDS, row[0]), ("gbps", LINK_GBPS, row[1])):
        reason = bound.problem(value)
        if reason is not None:
            raise PlanInputError(f"{name} {reason}", source=source, field=field)
    time_s = row[0]
    if previous_time_s is not None and time_s <= previous_time_s:
        raise PlanInputError(f"time_s must increase, got {time_s:g} after {previous_time_s:g}", source=source, field=field)


class CapacitySchedule:
    """Usable link capacity c(t) in bytes/s, piecewise constant: c(t) = rates[k] on [starts[k], starts[k+1])."""

    def __init__(
        self,
        base_bytes_per_s: float,
        trace: tuple[tuple[float, float], ...] | None = None,
        drop_at_s: float | None = None,
        drop_for_s: float = 0.0,
        drop_to_fraction: float = 1.0,
    ):
        steps = [(time_s, gbps_to_bytes_per_s(gbps)) for time_s, gbps in (trace or ())]
        trace_starts = [time_s for time_s, _ in steps]
        drop_end_s = math.inf if drop_at_s is None else drop_at_s + drop_for_s  # inf: read only with a drop
        breaks = sorted({0.0, *trace_starts, *(() if drop_at_s is None else (drop_at_s, drop_end_s))})
        self.starts_s: list[float] = []
        self.rates_bytes_per_s: list[float] = []
        for time_s in breaks:  # the rate from each break on; a step only where it changes
            k = bisect.bisect_right(trace_starts, time_s)
            rate = steps[k - 1][1] if k else base_bytes_per_s
            if drop_at_s is not None and drop_at_s <= time_s < drop_end_s:
                rate *= drop_to_fraction
            if not self.rates_bytes_per_s or rate != self.rates_bytes_per_s[-1]:
                self.starts_s.append(time_s)
                self.rates_bytes_per_s.append(rate)

    @property
    def final_bytes_per_s(self) -> float:
        """The capacity after the last step, which lasts for ever."""
        return self.rates_bytes_per_s[-1]

    def at(self, time_s: float) -> float:
        """c(time_s) in bytes/s."""
        return self.rates_bytes_per_s[bisect.bisect_right(self.starts_s, time_s) - 1]

    def next_change_s(self, time_s: float) -> float:
        """The first step time after ``time_s`` (inf when c is constant from there on)."""
        k = bisect.bisect_right(self.starts_s, time_s)
        return self.starts_s[k] if k < len(self.starts_s) else math.inf

    def bytes_between(self, start_s: float, end_s: float) -> float:
        """Integral of c over [start_s, end_s]: the bytes the link could carry in that window."""
        total, time_s = 0.0, start_s
        while time_s < end_s:
            step_end_s = min(self.next_change_s(time_s), end_s)
            total += self.at(time_s) * (step_end_s - time_s)
            time_s = step_end_s
        return total
