"""The prefix blocks of a Mooncake trace, as the prefix-cache model takes them (issue 19).

The file is read by the Mooncake reader of ``workload.traces`` (its errors name the file, the
line and the field); each request must then have ceil(input_length / ``block_tokens``) block
ids (Mooncake's blocks are 512 tokens: kvcache-ai/Mooncake ``FAST25-release/README.md``).
Requests are in arrival order, the order the caches see them.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..choices import TraceFormat
from ..errors import PlanInputError
from .prefix_cache import BlockRequests


def read_block_trace(path: Path | str, block_tokens: int) -> BlockRequests:
    """The requests of a Mooncake JSONL file (``path``) with their block ids, in arrival order."""
    from .traces import read_trace

    trace = read_trace(path, TraceFormat.mooncake)
    assert trace.hash_ids is not None and trace.hash_offsets is not None  # the Mooncake reader keeps them
    lengths = trace.input_tokens.astype(np.int64)
    if np.any(np.diff(trace.hash_offsets) != -(-lengths // block_tokens)):
        _first_miscounted(Path(path), trace.source, block_tokens)
    return BlockRequests(trace.hash_ids.astype(np.int64, copy=False), trace.hash_offsets, lengths)


def _first_miscounted(path: Path, source: str, block_tokens: int) -> None:
    """Raise naming the first line (in file order) whose block ids do not cover its input."""
    with path.open("rb") as lines:
        for number, raw in enumerate(lines, start=1):
            if raw.strip():
                row = json.loads(raw)
                length, count = row["input_length"], len(row["hash_ids"])
                need = -(-length // block_tokens)
                if count != need:
                    raise PlanInputError(
                        f"{length} input tokens need ceil(L / {block_tokens}) = {need} block ids, got {count}",
                        source=source,
                        field=f"line {number}: hash_ids",
                    )
