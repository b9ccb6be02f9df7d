"""A small reader of Mooncake-style JSONL traces for the prefix-cache model (issue 19).

Each line is a JSON object with ``input_length`` (tokens, an integer >= 1) and ``hash_ids``
(a list of integer block ids, one per block; Mooncake's are 512-token blocks); other fields
(``timestamp``, ``output_length``) are not read here. Lines are taken in file order (the
trace's arrival order). A bad line is a one-line error naming the file, the line and the field.
This is the minimal input of ``workload.prefix_cache``; the trace readers of
``workload.traces`` give the same arrays.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..errors import PlanInputError
from ..ranges import TOKENS
from .prefix_cache import BlockRequests


def read_block_trace(path: Path | str, block_tokens: int) -> BlockRequests:
    """The requests of a Mooncake JSONL file (``path``), in file order; each must have
    ceil(input_length / ``block_tokens``) block ids."""
    path = Path(path)
    ids: list[int] = []
    counts: list[int] = []
    lengths: list[int] = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise PlanInputError(f"cannot read the trace ({exc.__class__.__name__})", source=str(path)) from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"line {number}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise PlanInputError(f"not JSON ({exc.msg})", source=str(path), field=where) from None
        if not isinstance(row, dict):
            raise PlanInputError("must be a JSON object", source=str(path), field=where)
        length, blocks = row.get("input_length"), row.get("hash_ids")
        if isinstance(length, bool) or not isinstance(length, int):
            raise PlanInputError(f"must be an integer, got {length!r:.40}", source=str(path), field=f"{where}: input_length")
        reason = TOKENS.problem(length)
        if reason:
            raise PlanInputError(reason, source=str(path), field=f"{where}: input_length")
        if not isinstance(blocks, list) or not all(type(b) is int and 0 <= b < 2**63 for b in blocks):
            raise PlanInputError("must be a list of block ids (integers >= 0)", source=str(path), field=f"{where}: hash_ids")
        need = -(-length // block_tokens)
        if len(blocks) != need:
            raise PlanInputError(
                f"{length} input tokens need ceil(L / {block_tokens}) = {need} block ids, got {len(blocks)}",
                source=str(path),
                field=f"{where}: hash_ids",
            )
        ids.extend(blocks)
        counts.append(len(blocks))
        lengths.append(length)
    if not lengths:
        raise PlanInputError("the trace has no requests", source=str(path))
    offsets = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)])
    return BlockRequests(np.asarray(ids, dtype=np.int64), offsets, np.asarray(lengths, dtype=np.int64))
