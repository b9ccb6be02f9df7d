"""Named columns of a CSV trace with a header line, read a block at a time.

The fast path is NumPy's C reader (``np.loadtxt``) over a whole block of lines; a block it
cannot take is read again line by line (the ``csv`` module) to name the first bad line,
its column and the reason. Date-time columns (``2023-11-16 18:15:46.6805900``, ISO 8601,
optionally ``Z`` or a ``+HH:MM`` offset; checked by ``timestamps``) become seconds since the
first row's time.
Memory: the columns' final arrays (sized from the file's line count) and one block.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import PlanInputError, shorten
from .blocks import blocks, checked_file, count_lines, first_line, numbered
from .timestamps import utc_ns

NUMBER = "number"
DATETIME = "datetime"


def header_names(path: str | Path, source: str) -> tuple[int, list[str]]:
    """(line number, column names) of the header, the first non-blank line."""
    number, header = first_line(path, source)
    text = header.decode("utf-8", errors="replace")
    return number, [name.strip().strip('"').strip() for name in next(csv.reader([text]))]


def read_columns(
    path: str | Path,
    source: str,
    wanted: dict[str, str],
    check: Callable[[dict[str, np.ndarray], Callable[[int], tuple[str, str]]], None] | None = None,
    dtypes: Mapping[str, Any] | None = None,
) -> dict[str, np.ndarray]:
    """The ``wanted`` columns (header name -> NUMBER or DATETIME) as arrays (float64, or the
    column's ``dtypes`` entry once ``check`` has passed its values), one entry per data row.
    ``check(block_columns, where)`` sees each block's rows as read and may raise;
    ``where(row)`` gives (source, 'line N') of a row of that block."""
    header_line, names = header_names(path, source)
    missing = [name for name in wanted if name not in names]
    if missing:
        raise PlanInputError(
            f"column {missing[0]!r} not found (the columns: {shorten(', '.join(names), 120)})", source=source, field="header"
        )
    index = {name: names.index(name) for name in wanted}
    capacity = max(count_lines(path, source) - header_line, 0)
    out: dict[str, np.ndarray] = {name: np.empty(capacity, dtype=(dtypes or {}).get(name, np.float64)) for name in wanted}
    rows = 0
    origin: list[np.datetime64] = []  # the first date-time read: the origin of every later one
    for start, block in blocks(path, source):
        if start + block.count(b"\n") <= header_line:
            continue
        if start <= header_line:  # the block holding the header: drop the lines up to it
            cut = 0
            for _ in range(header_line - start + 1):
                cut = block.index(b"\n", cut) + 1
            block, start = block[cut:], header_line + 1
        columns = _fast(block, index, wanted, len(names), origin)
        if columns is None:
            columns = _slow(block, start, index, wanted, len(names), origin, source)
        n = len(next(iter(columns.values())))
        if check is not None and n:
            lines = None

            def where(row: int, start=start, block=block) -> tuple[str, str]:
                nonlocal lines
                if lines is None:
                    lines = [number for number, _ in numbered(start, block)]
                return source, f"line {lines[row]}"

            check(columns, where)
        for name in wanted:
            out[name][rows : rows + n] = columns[name]
        rows += n
    if rows == 0:
        raise PlanInputError("empty trace (a header and no rows)", source=source)
    return {name: values[:rows] for name, values in out.items()}


def _fast(block: bytes, index: dict[str, int], wanted: dict[str, str], width: int, origin: list) -> dict[str, np.ndarray] | None:
    """The block's columns by ``np.loadtxt``, or None if any line is not as expected."""
    if b'"' not in block:  # without quoting every row must have exactly width - 1 commas
        lines = sum(1 for _ in re.finditer(rb"^[ \t\r]*\S", block, re.M))
        if block.count(b",") != lines * (width - 1):
            return None
    text = block.decode("utf-8", errors="strict") if block.isascii() else None
    if text is None:
        try:
            text = block.decode("utf-8")
        except UnicodeDecodeError:
            return None
    out: dict[str, np.ndarray] = {}
    try:
        numbers = [name for name in wanted if wanted[name] == NUMBER]
        if numbers:
            table = np.loadtxt(
                io.StringIO(text),
                delimiter=",",
                usecols=[index[n] for n in numbers],
                dtype=np.float64,
                ndmin=2,
                comments=None,
                quotechar='"',
            )
            for k, name in enumerate(numbers):
                out[name] = table[:, k]
        for name in (n for n in wanted if wanted[n] == DATETIME):
            cells = np.loadtxt(
                io.StringIO(text), delimiter=",", usecols=index[name], dtype="U40", ndmin=1, comments=None, quotechar='"'
            )
            if cells.size and int(np.char.str_len(cells).max()) >= 40:  # maybe cut at 40: the slow path reads it whole
                return None
            out[name] = _seconds(cells, origin)
    except ValueError:
        return None
    return out


def _slow(
    block: bytes, start: int, index: dict[str, int], wanted: dict[str, str], width: int, origin: list, source: str
) -> dict[str, np.ndarray]:
    """The block line by line; raises naming the first line that cannot be read."""
    values: dict[str, list[float]] = {name: [] for name in wanted}
    for number, raw in numbered(start, block):
        where = f"line {number}"
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise PlanInputError("not UTF-8 text", source=source, field=where) from None
        cells = next(csv.reader([text]))
        if len(cells) != width:
            raise PlanInputError(f"expected {width} columns, found {len(cells)}", source=source, field=where)
        for name, kind in wanted.items():
            cell = cells[index[name]].strip()
            shown = shorten(cell, 40)
            if kind == NUMBER:
                try:
                    values[name].append(float(cell))
                except ValueError:
                    raise PlanInputError(f"{name}: '{shown}' is not a number", source=source, field=where) from None
            else:
                try:
                    values[name].append(float(_seconds(np.array([cell]), origin)[0]))
                except ValueError as exc:
                    raise PlanInputError(
                        f"{name}: '{shown}' is not a date and time ({shorten(str(exc), 80)})", source=source, field=where
                    ) from None
    return {name: np.array(v, dtype=np.float64) for name, v in values.items()}


def _seconds(cells: np.ndarray, origin: list) -> np.ndarray:
    """Date-time strings (``timestamps.utc_ns``: each row's own ``Z`` / ``+HH:MM`` offset applied)
    as seconds since ``origin[0]`` (UTC ns, set from the first one seen)."""
    ns = utc_ns(cells)
    if not origin and ns.size:
        origin.append(int(ns[0]))
    return (ns - origin[0]).astype(np.float64) / 1e9


def csv_trace(path: str | Path, fmt, *, arrival: tuple[str, str], input: str, output: str, scale_s: float = 1.0):
    """A CSV format's Trace: ``arrival`` = (column, NUMBER in units of ``scale_s`` seconds, or
    DATETIME), ``input`` and ``output`` the token columns (input >= 1, output >= 0)."""
    from .record import TOKEN_DTYPE, check_tokens, finish

    source = checked_file(path)
    time_column, kind = arrival

    def check(columns, where):
        check_tokens({input: (columns[input], 1), output: (columns[output], 0)}, where)
        times = columns[time_column]
        if not np.isfinite(times).all():
            row = int(np.argmin(np.isfinite(times)))
            raise PlanInputError(f"{time_column}: {times[row]:g} is not a finite time", source=where(row)[0], field=where(row)[1])

    tokens = {input: TOKEN_DTYPE, output: TOKEN_DTYPE}  # checked whole numbers in [0, 16M]
    columns = read_columns(path, source, {time_column: kind, input: NUMBER, output: NUMBER}, check, tokens)
    arrival_s = columns[time_column]
    if scale_s != 1.0:
        arrival_s *= scale_s
    return finish(source, fmt, arrival_s, columns[input], columns[output])
