"""SplitwiseSim request traces (Mutinifni/splitwise-sim, ``generate_trace.py``, which writes
them): a CSV with the header ``request_id,request_type,application_id,arrival_timestamp,
batch_size,prompt_size,token_size``; ``arrival_timestamp`` in seconds, ``prompt_size`` and
``token_size`` the input and output tokens."""

from __future__ import annotations

from pathlib import Path

from ...choices import TraceFormat
from .csv_table import NUMBER, csv_trace
from .record import Trace

HEADER = ("request_id", "request_type", "application_id", "arrival_timestamp", "batch_size", "prompt_size", "token_size")


def read(path: str | Path) -> Trace:
    """Arrival ``arrival_timestamp`` (s), input ``prompt_size``, output ``token_size``."""
    return csv_trace(path, TraceFormat.splitwise, arrival=(HEADER[3], NUMBER), input=HEADER[5], output=HEADER[6])
