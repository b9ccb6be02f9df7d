"""Fast reading of request-length traces (one length in tokens per row).

Two layouts are accepted:
- one number per line, optionally below one header line that is not a number;
- a CSV file with a header line; ``column`` names the column holding the lengths.
Blank lines, CRLF line ends and a UTF-8 byte-order mark are accepted; line numbers in errors
count from 1 and include the header.

The fast path is NumPy's C reader (``np.loadtxt``), which streams the file in chunks: about
2 s and 110 MB of memory for 10 million rows. Anything it cannot take (a bad value, a short
row) or a value that is not a finite length >= 1 sends the file to the line-by-line reader,
which streams it again and names the first offending line. Only regular files of at most
``ranges.MAX_TRACE_BYTES`` are read.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ..errors import PlanInputError, shorten
from ..ranges import MAX_TRACE_BYTES, TOKENS
from ..yamlio import read_input_bytes

_SHOWN_CHARS = 40  # longest offending text quoted in an error message
_BOM = b"\xef\xbb\xbf"


def read_length_trace(path: str | Path, column: str | None = None) -> np.ndarray:
    """Read request lengths in tokens (float64, each finite and in [1, 16M]) from ``path``."""
    source = str(path)
    read_input_bytes(path, MAX_TRACE_BYTES, source=source, limit_read=0)  # a regular file within the limit
    first, header = _first_line(path, source)
    if column is None and b"," not in header:
        skip = first if _is_number(header) else first + 1
        return _read(path, source, skip, n_columns=1, index=0)
    if header.lstrip().startswith((b"{", b"[")):
        raise PlanInputError(
            "a JSON trace, not a CSV of lengths: give the trace's format (mooncake, coding_agent or distserve; or auto)",
            source=source,
        )
    names = [cell.strip().decode("utf-8", errors="replace") for cell in header.split(b",")]
    if column is None:
        raise PlanInputError(
            f"the CSV has several columns; name one with column (available columns: {shorten(', '.join(names), 120)})",
            source=source,
        )
    if column not in names:
        raise PlanInputError(
            f"column {column[:40]!r} not found (available columns: {shorten(', '.join(names), 120)})",
            source=source,
            field="column",
        )
    return _read(path, source, first + 1, n_columns=len(names), index=names.index(column))


def _first_line(path, source: str) -> tuple[int, bytes]:
    """(0-based index, content) of the first non-blank line."""
    for number, line in enumerate(_lines(path, source)):
        if line.strip():
            return number, line.strip()
    raise PlanInputError("empty trace (no rows)", source=source)


def _lines(path, source: str):
    """The file's lines as bytes, without line ends or the byte-order mark, streamed."""
    try:
        with open(path, "rb") as handle:
            for number, line in enumerate(handle):
                if number == 0:
                    line = line.removeprefix(_BOM)
                yield line.rstrip(b"\r\n")
    except OSError as exc:
        raise PlanInputError(f"cannot read file ({exc.strerror or exc.__class__.__name__})", source=source) from None


def _is_number(cell: bytes) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _read(path, source: str, skip: int, *, n_columns: int, index: int) -> np.ndarray:
    """Column ``index`` of the rows after the first ``skip`` lines: fast path, else the line reader
    (started near the bad row the fast path reports)."""
    import re
    import warnings

    hint = 0  # data rows (blank lines not counted) known to be good
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "empty input file": handled below
            values = np.loadtxt(
                path,
                dtype=np.float64,
                delimiter="," if n_columns > 1 else None,
                skiprows=skip,
                usecols=index if n_columns > 1 else None,
                comments=None,
                ndmin=1,
                encoding="utf-8-sig",
            )
    except (ValueError, UnicodeDecodeError, IndexError) as exc:
        values = None
        match = re.search(r"at row (\d+)", str(exc))
        hint = int(match.group(1)) if match else 0
    if values is not None:
        valid = _valid(values)
        if values.size and valid.all() and (n_columns == 1 or _widths_ok(path, skip, n_columns)):
            return values
        hint = int(np.argmin(valid)) if values.size and not valid.all() else 0
    return _parse_lines(path, source, skip, n_columns=n_columns, index=index, good_rows=hint)


def _valid(values: np.ndarray) -> np.ndarray:
    return np.isfinite(values) & (values >= TOKENS.lo) & (values <= TOKENS.hi)


def _widths_ok(path, skip: int, n_columns: int) -> bool:
    """loadtxt with ``usecols`` accepts longer rows; the CSV must have exactly n_columns per row."""
    with open(path, "rb") as handle:
        for number, line in enumerate(handle):
            if number >= skip and line.strip() and line.count(b",") != n_columns - 1:
                return False
    return True


def _parse_lines(path, source: str, skip: int, *, n_columns: int, index: int, good_rows: int = 0) -> np.ndarray:
    """Line-by-line reader: skips blank lines, raises naming the first bad line (1-based). It runs
    only when the fast path failed; the first ``good_rows`` data rows, which the fast path read,
    are only counted, and the rest cost one float() per line, so that an error near the end of
    a large file is found in seconds. Should nothing be wrong after all, it reads everything."""
    from array import array

    values = array("d")
    lo, hi = TOKENS.lo, TOKENS.hi
    seen = 0
    for number, line in enumerate(_lines(path, source), start=1):
        if number <= skip:
            continue
        if seen < good_rows:
            seen += bool(line.strip())
            continue
        try:
            value = float(line.split(b",")[index] if n_columns > 1 else line)
            if lo <= value <= hi and (n_columns == 1 or line.count(b",") == n_columns - 1):
                values.append(value)
                continue
        except (ValueError, IndexError):
            pass
        if line.strip():
            _explain(line, number, n_columns=n_columns, index=index, source=source)
    if good_rows:  # nothing wrong found past the hint: read the whole file line by line
        return _parse_lines(path, source, skip, n_columns=n_columns, index=index)
    if not values:
        raise PlanInputError("empty trace (no rows)", source=source)
    return np.frombuffer(values, dtype=np.float64).copy()


def _explain(line: bytes, number: int, *, n_columns: int, index: int, source: str) -> None:
    """Raise the error for a line the reader could not take."""
    where = f"line {number}"
    cells = line.split(b",") if n_columns > 1 else [line]
    if len(cells) != n_columns:
        raise PlanInputError(f"expected {n_columns} columns, found {len(cells)}", source=source, field=where)
    text = cells[index].strip().decode("utf-8", errors="replace")
    shown = shorten(text, _SHOWN_CHARS)
    try:
        value = float(text)
    except ValueError:
        raise PlanInputError(f"'{shown}' is not a number", source=source, field=where) from None
    if not math.isfinite(value):
        raise PlanInputError(f"'{shown}' is not a finite length", source=source, field=where)
    if value < TOKENS.lo:
        raise PlanInputError(f"length {shown} is below 1 token", source=source, field=where)
    raise PlanInputError(f"length {shown} is above the limit of {int(TOKENS.hi):,} tokens (16M)", source=source, field=where)
