"""DistServe's replayed workloads (LLMServe/DistServe, ``simdistserve/benchmarks/alignment/
00-prepare_trace_workload.py`` writes them, ``data-ground-truth/*-workload/*.exp``): one JSON
array of ``{"prompt_len": 55, "output_len": 4, "start_time": 0.0}``, ``start_time`` in
seconds from the first request. The file is one JSON value, so an error names the request
by its index (``[12].prompt_len``) and the line it starts on."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...choices import TraceFormat
from ...errors import PlanInputError, shorten
from ...ranges import MAX_TRACE_BYTES
from ...yamlio import read_input_bytes
from .json_value import load_json
from .record import Trace, check_tokens, finish

FIELDS = ("start_time", "prompt_len", "output_len")


def read(path: str | Path) -> Trace:
    """Arrival ``start_time`` (s), input ``prompt_len``, output ``output_len``."""
    source = str(path)
    data = read_input_bytes(path, MAX_TRACE_BYTES, source=source)
    records = load_json(data, source, None, "JSON")
    if not isinstance(records, list):
        raise PlanInputError("expected a JSON array of requests", source=source)
    values = np.empty((len(records), 3), dtype=np.float64)
    for i, record in enumerate(records):
        if not isinstance(record, dict):
            raise PlanInputError("not a JSON object", source=source, field=f"[{i}]")
        for k, name in enumerate(FIELDS):
            value = record.get(name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                what = "missing" if name not in record else f"{shorten(repr(value), 40)} is not a number"
                raise PlanInputError(f"{name}: {what}", source=source, field=f"[{i}]")
            try:
                values[i, k] = value
            except OverflowError:
                raise PlanInputError(f"{name}: {shorten(repr(value), 40)} is too large", source=source, field=f"[{i}]") from None

    def where(row: int) -> tuple[str, str]:
        return source, f"[{row}]"

    check_tokens({"prompt_len": (values[:, 1], 1), "output_len": (values[:, 2], 0)}, where)
    if not np.isfinite(values[:, 0]).all():
        raise PlanInputError(
            "start_time: not a finite time", source=source, field=f"[{int(np.argmin(np.isfinite(values[:, 0])))}]"
        )
    return finish(source, TraceFormat.distserve, values[:, 0].copy(), values[:, 1], values[:, 2])
