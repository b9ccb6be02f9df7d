"""A request trace as arrays: one row per request, in arrival order.

Every reader (``workload.traces``) returns a :class:`Trace`; rows are checked as they are
read, so that an error names its line (``where``), and sorted by arrival here when the file
is not (the coding-agent sessions interleave in time).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...choices import TraceFormat
from ...errors import PlanInputError
from ...ranges import TOKENS

TOKEN_DTYPE = np.int32  # token counts: at most 16M (ranges.TOKENS), 4 bytes a row


@dataclass(frozen=True, eq=False)
class Trace:
    """Requests of a trace file, in arrival order.

    ``arrival_s``: seconds from the first request (float64, non-decreasing, first 0);
    ``input_tokens`` (>= 1), ``output_tokens`` (>= 0: a failed request generated nothing) and
    ``cached_tokens`` (<= input; None where the format has no such field), int32. A Mooncake
    trace's prefix blocks: request i's block hashes are ``hash_ids[hash_offsets[i]:
    hash_offsets[i + 1]]``, one per ``block_tokens`` tokens of its input (512 there)."""

    source: str
    format: TraceFormat
    arrival_s: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    cached_tokens: np.ndarray | None = None
    hash_ids: np.ndarray | None = None
    hash_offsets: np.ndarray | None = None
    block_tokens: int | None = None

    def __len__(self) -> int:
        return int(self.arrival_s.size)

    @property
    def span_s(self) -> float:
        """Seconds from the first arrival to the last."""
        return float(self.arrival_s[-1] - self.arrival_s[0])

    def rate_rps(self) -> float:
        """Mean arrival rate, requests / span (req/s; ``arrival_rate_rps``)."""
        return arrival_rate_rps(self.arrival_s)

    def blocks_of(self, i: int) -> np.ndarray:
        """Block hashes of request ``i`` (Mooncake traces)."""
        if self.hash_ids is None or self.hash_offsets is None:
            raise PlanInputError(f"a {self.format} trace has no prefix-block hashes", source=self.source)
        return self.hash_ids[self.hash_offsets[i] : self.hash_offsets[i + 1]]

    def window(self, from_s: float | None = None, to_s: float | None = None) -> Trace:
        """The requests arriving in [from_s, to_s) seconds of trace time (None: open), arrival
        times kept (so a window's rate is its count over its own span)."""
        return self.take(self.window_rows(from_s, to_s))

    def window_rows(self, from_s: float | None = None, to_s: float | None = None) -> np.ndarray:
        """The indices (arrival order) of the requests arriving in [from_s, to_s) s (None: open)."""
        lo = 0 if from_s is None else int(np.searchsorted(self.arrival_s, from_s, side="left"))
        hi = len(self) if to_s is None else int(np.searchsorted(self.arrival_s, to_s, side="left"))
        return np.arange(lo, max(lo, hi))

    def take(self, rows: np.ndarray) -> Trace:
        """The trace of ``rows`` (indices, in the order given)."""
        hashes, offsets = None, None
        if self.hash_ids is not None and self.hash_offsets is not None:
            hashes, offsets = take_ragged(self.hash_ids, self.hash_offsets, rows)
        cached = None if self.cached_tokens is None else self.cached_tokens[rows]
        return Trace(
            self.source,
            self.format,
            self.arrival_s[rows],
            self.input_tokens[rows],
            self.output_tokens[rows],
            cached,
            hashes,
            offsets,
            self.block_tokens,
        )


def arrival_rate_rps(arrival_s: np.ndarray) -> float:
    """Requests / (last arrival - first) of sorted arrivals in s (req/s); inf where they all
    arrive at one instant (a single request, or a zero span): no rate can be measured."""
    span = float(arrival_s[-1] - arrival_s[0])
    return arrival_s.size / span if span > 0 else float("inf")


def take_ragged(flat: np.ndarray, offsets: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows ``rows`` of the ragged array (flat, offsets): row i is flat[offsets[i]:offsets[i+1]]."""
    starts, ends = offsets[:-1][rows], offsets[1:][rows]
    lengths = ends - starts
    new_offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    # index of each kept element: its row's start + its position inside the row
    inner = np.arange(int(new_offsets[-1]), dtype=np.int64) - np.repeat(new_offsets[:-1], lengths)
    return flat[np.repeat(starts, lengths) + inner], new_offsets


def bad_row(values: np.ndarray, *, low: float, high: float) -> int | None:
    """Index of the first value that is not a whole number in [low, high], or None."""
    ok = (values >= low) & (values <= high) & (values == np.floor(values))
    if ok.all():
        return None
    return int(np.argmin(ok))


def token_reason(name: str, value: float, low: float) -> str:
    """Why ``value`` of token field ``name`` is refused (see ``bad_row``)."""
    if not np.isfinite(value):
        return f"{name}: {value:g} is not a finite token count"
    if value != np.floor(value):
        return f"{name}: {value:g} is not a whole number of tokens"
    if value < low:
        return f"{name}: {value:g} is below {low:g}"
    return f"{name}: {value:g} is above the limit of {int(TOKENS.hi):,} tokens (16M)"


def check_tokens(columns: dict[str, tuple[np.ndarray, float]], where) -> None:
    """Each named token column (values, lowest allowed) holds whole numbers in [lowest, 16M];
    else raise naming the first bad row's line (``where(row)`` -> (source, field))."""
    for name, (values, low) in columns.items():
        row = bad_row(values, low=low, high=TOKENS.hi)
        if row is not None:
            source, field = where(row)
            raise PlanInputError(token_reason(name, float(values[row]), low), source=source, field=field)


def finish(
    source: str,
    fmt: TraceFormat,
    arrival_s: np.ndarray,
    input_tokens: np.ndarray,
    output_tokens: np.ndarray,
    cached_tokens: np.ndarray | None = None,
    hash_ids: np.ndarray | None = None,
    hash_offsets: np.ndarray | None = None,
    block_tokens: int | None = None,
) -> Trace:
    """The checked rows as a Trace: sorted by arrival (stable) when the file is not, and
    arrival measured from the first request."""
    if arrival_s.size == 0:
        raise PlanInputError("empty trace (no requests)", source=source)
    trace = Trace(
        source,
        fmt,
        np.asarray(arrival_s, dtype=np.float64),  # the reader's own array: made relative in place below
        input_tokens.astype(TOKEN_DTYPE, copy=False),
        output_tokens.astype(TOKEN_DTYPE, copy=False),
        None if cached_tokens is None else cached_tokens.astype(TOKEN_DTYPE, copy=False),
        hash_ids,
        hash_offsets,
        block_tokens,
    )
    if np.any(trace.arrival_s[1:] < trace.arrival_s[:-1]):
        trace = trace.take(np.argsort(trace.arrival_s, kind="stable"))
    np.subtract(trace.arrival_s, trace.arrival_s[0], out=trace.arrival_s)
    return trace
