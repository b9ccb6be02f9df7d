"""BurstGPT (HPMLL/BurstGPT, README "Schema"; Wang et al., arXiv:2401.17644): a CSV with the
header ``Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type``; ``Timestamp``
in seconds from 0:00:00 of the first day. Failed requests have 0 response tokens (the
``BurstGPT_*.csv`` files; ``BurstGPT_without_fails_*.csv`` leave them out): they are kept,
with an output of 0."""

from __future__ import annotations

from pathlib import Path

from ...choices import TraceFormat
from .csv_table import NUMBER, csv_trace
from .record import Trace

HEADER = ("Timestamp", "Model", "Request tokens", "Response tokens", "Total tokens", "Log Type")


def read(path: str | Path) -> Trace:
    """Arrival ``Timestamp`` (s), input ``Request tokens``, output ``Response tokens``."""
    return csv_trace(path, TraceFormat.burstgpt, arrival=(HEADER[0], NUMBER), input=HEADER[2], output=HEADER[3])
