"""The prefix blocks of a Mooncake trace, as the prefix-cache model takes them (issue 19).

The file is read by the Mooncake reader of ``workload.traces`` (its errors name the file, the
line and the field); each request must then have ceil(input_length / ``block_tokens``) block
ids (Mooncake's blocks are 512 tokens: kvcache-ai/Mooncake ``FAST25-release/README.md``), the
check of ``BlockRequests.check``, its error naming the request's line. Requests are in arrival
order, the order the caches see them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..choices import TraceFormat
from ..errors import PlanInputError
from .prefix_cache import BlockRequests

if TYPE_CHECKING:
    from .traces import Trace


def read_block_trace(path: Path | str, block_tokens: int) -> BlockRequests:
    """The requests of a Mooncake JSONL file (``path``) with their block ids, in arrival order."""
    from .traces import read_trace

    return block_requests(read_trace(path, TraceFormat.mooncake), block_tokens)


def block_requests(trace: Trace, block_tokens: int) -> BlockRequests:
    """A Mooncake ``trace``'s requests with their block ids; raises naming the line of the first
    request whose ids do not cover its input."""
    assert trace.hash_ids is not None and trace.hash_offsets is not None  # the Mooncake reader keeps them
    requests = BlockRequests(trace.hash_ids.astype(np.int64, copy=False), trace.hash_offsets, trace.input_tokens.astype(np.int64))
    i = requests.first_miscounted(block_tokens)
    if i is not None:
        raise PlanInputError(requests.miscount(i, block_tokens), source=trace.source, field=f"{_line_of(trace, i)}: hash_ids")
    return requests


def _line_of(trace: Trace, i: int) -> str:
    """Where request ``i`` (arrival order) is in ``trace``'s file: its non-blank line's number when
    the file is in arrival order (the reader kept its rows' order), else its arrival rank."""
    from .traces.blocks import blocks
    from .traces.mooncake import _LINE, _NUMBER

    stamps: list[bytes] = []
    line = None
    seen = 0
    for start, block in blocks(trace.source, trace.source):
        stamps += _NUMBER["timestamp"].findall(block)
        if line is None:
            starts = [m.start() for m in _LINE.finditer(block)]
            if i < seen + len(starts):
                line = start + block.count(b"\n", 0, starts[i - seen])
            seen += len(starts)
    ms = np.array(stamps, dtype=np.float64)
    in_order = line is not None and ms.size == len(trace) and not np.any(ms[1:] < ms[:-1])
    return f"line {line}" if in_order else f"request {i} in arrival order"
