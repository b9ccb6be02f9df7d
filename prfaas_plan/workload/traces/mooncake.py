"""The Mooncake traces (kvcache-ai/Mooncake, ``FAST25-release/traces/*.jsonl``, Apache-2.0;
Qin et al., FAST 2025): one JSON object a line, ``{"timestamp": 0, "input_length": 6758,
"output_length": 500, "hash_ids": [0, 1, ...]}``; ``timestamp`` the arrival in ms from the
trace's start, the lengths in tokens, ``hash_ids`` remapped hashes of the input's 512-token
blocks (equal ids: the same prefix block).

Fast path: each block of lines is scanned by regular expressions for the four fields (C
speed, no ``json.loads`` per line); a block in which some line is not one whole ``{...}``
object, lacks a field, or has a value that is not a number (or a hash list that does not parse
as whole numbers) is parsed line by line with ``json.loads`` to name the line.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np

from ...choices import TraceFormat
from ...errors import PlanInputError, shorten
from .blocks import blocks, checked_file, count_lines, numbered
from .json_value import load_json
from .record import TOKEN_DTYPE, Trace, check_tokens, finish

BLOCK_TOKENS = 512  # tokens per hash_ids entry (the trace's README)
FIELDS = ("timestamp", "input_length", "output_length")
_NUMBER = {name: re.compile(rb'"%s"\s*:\s*(-?[0-9][0-9.eE+-]*)\s*[,}]' % name.encode()) for name in FIELDS}
_HASHES = re.compile(rb'"hash_ids"\s*:\s*\[([0-9,\s]*)\]')
_LINE = re.compile(rb"^[ \t\r]*\S", re.M)
_WHOLE = re.compile(rb"^[ \t]*\{.*\}[ \t\r]*$", re.M)  # a line that opens and closes one object


def read(path: str | Path, hashes: bool = True) -> Trace:
    """Arrival ``timestamp`` / 1000 (s), input ``input_length``, output ``output_length`` and,
    with ``hashes``, the ``hash_ids`` (int64, ragged: ``Trace.hash_offsets``)."""
    source = checked_file(path)
    capacity = count_lines(path, source)
    # lengths stored as int32 once checked (whole numbers in [0, 16M]); timestamps float64
    columns = {name: np.empty(capacity, dtype=np.float64 if name == "timestamp" else TOKEN_DTYPE) for name in FIELDS}
    flat: list[np.ndarray] = []
    counts = np.zeros(capacity, dtype=np.int64) if hashes else None
    rows = 0
    for start, block in blocks(path, source):
        parsed = _fast(block, hashes) or _slow(block, start, source, hashes)
        values, ids, lengths = parsed
        n = values["timestamp"].size
        if n == 0:
            continue
        lines: list[int] = []

        def where(row: int, start=start, block=block, lines=lines) -> tuple[str, str]:
            if not lines:
                lines.extend(number for number, _ in numbered(start, block))
            return source, f"line {lines[row]}"

        check_tokens({"input_length": (values["input_length"], 1), "output_length": (values["output_length"], 0)}, where)
        stamps = values["timestamp"]
        if not (np.isfinite(stamps).all() and (stamps >= 0).all()):
            row = int(np.argmin(np.isfinite(stamps) & (stamps >= 0)))
            raise PlanInputError(f"timestamp: {stamps[row]:g} is not a time >= 0 ms", source=source, field=where(row)[1])
        for name in FIELDS:
            columns[name][rows : rows + n] = values[name]
        if counts is not None and lengths is not None and ids is not None:
            counts[rows : rows + n] = lengths
            flat.append(ids)
        rows += n
    offsets = None
    hash_ids = None
    if counts is not None:
        offsets = np.concatenate(([0], np.cumsum(counts[:rows]))).astype(np.int64)
        hash_ids = np.concatenate(flat) if flat else np.zeros(0, dtype=np.int64)
    return finish(
        source,
        TraceFormat.mooncake,
        np.divide(columns["timestamp"][:rows], 1000.0, out=columns["timestamp"][:rows]),
        columns["input_length"][:rows],
        columns["output_length"][:rows],
        hash_ids=hash_ids,
        hash_offsets=offsets,
        block_tokens=BLOCK_TOKENS if hashes else None,
    )


def _fast(block: bytes, hashes: bool):
    """(fields, flat hash ids, ids per row) of the block, or None where a line is not as expected."""
    lines = len(_LINE.findall(block))
    if len(_WHOLE.findall(block)) != lines:  # a line cut short (or not an object): the slow path names it
        return None
    values = {}
    for name, pattern in _NUMBER.items():
        found = pattern.findall(block)
        if len(found) != lines:
            return None
        try:
            values[name] = np.array(found, dtype=bytes).astype(np.float64) if found else np.zeros(0)
        except ValueError:
            return None
    if not hashes:
        return values, None, None
    lists = _HASHES.findall(block)
    if len(lists) != lines:
        return None
    lengths = np.fromiter((0 if not s.strip() else s.count(b",") + 1 for s in lists), dtype=np.int64, count=len(lists))
    text = b",".join(s for s in lists if s.strip())
    try:  # each entry a whole number (int() of bytes: digits, blanks around); "1 2" or ",," is refused
        ids = np.array(text.split(b","), dtype=np.int64) if text else np.zeros(0, dtype=np.int64)
    except (ValueError, OverflowError):
        return None
    if ids.size != lengths.sum():
        return None
    return values, ids, lengths


def _slow(block: bytes, start: int, source: str, hashes: bool):
    """The block with ``json.loads`` per line; raises naming the first line that is not a request."""
    values: dict[str, list[float]] = {name: [] for name in FIELDS}
    ids: list[int] = []
    lengths: list[int] = []
    for number, raw in numbered(start, block):
        where = f"line {number}"
        record = load_json(raw, source, where, "a JSON object")
        if not isinstance(record, dict):
            raise PlanInputError("not a JSON object", source=source, field=where)
        for name in FIELDS + (("hash_ids",) if hashes else ()):
            if name not in record:
                raise PlanInputError(f"no {name!r} field", source=source, field=where)
        for name in FIELDS:
            value = record[name]
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise PlanInputError(f"{name}: {shorten(repr(value), 40)} is not a number", source=source, field=where)
            try:
                values[name].append(float(value))
            except OverflowError:  # an integer beyond ~1e308: inf, refused by the checks as the fast path's is
                values[name].append(math.copysign(math.inf, value))
        if hashes:
            block_ids = record["hash_ids"]
            if not isinstance(block_ids, list) or not all(
                isinstance(h, int) and not isinstance(h, bool) and 0 <= h < 2**63 for h in block_ids
            ):
                raise PlanInputError(
                    f"hash_ids: {shorten(repr(block_ids), 40)} is not a list of block ids in [0, 2^63)",
                    source=source,
                    field=where,
                )
            ids.extend(block_ids)
            lengths.append(len(block_ids))
    arrays = {name: np.array(v, dtype=np.float64) for name, v in values.items()}
    return arrays, np.array(ids, dtype=np.int64), np.array(lengths, dtype=np.int64)
