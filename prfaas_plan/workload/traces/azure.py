"""The Azure LLM inference traces 2023 and 2024 (Azure/AzurePublicDataset,
``AzureLLMInferenceDataset2023.md`` and ``AzureLLMInferenceDataset2024.md``, CC-BY): a CSV
with the header ``TIMESTAMP,ContextTokens,GeneratedTokens``; ``TIMESTAMP`` the invocation
time (``2023-11-16 18:15:46.6805900``), the others token counts."""

from __future__ import annotations

from pathlib import Path

from ...choices import TraceFormat
from .csv_table import DATETIME, csv_trace
from .record import Trace

HEADER = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")


def read(path: str | Path) -> Trace:
    """Arrival from ``TIMESTAMP``, input ``ContextTokens``, output ``GeneratedTokens``."""
    return csv_trace(path, TraceFormat.azure, arrival=(HEADER[0], DATETIME), input=HEADER[1], output=HEADER[2])
