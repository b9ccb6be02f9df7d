"""Request traces in the public formats, one module per format behind ``read_trace``.

Each reader returns a :class:`Trace` (arrival, input, output and, where the format has them,
cached tokens and prefix-block hashes, in arrival order); its errors name the file, the line
and the field. ``detect_format`` tells the format from the file's first line (a JSON object's
keys, a JSON array, or a CSV header), and an explicit format overrides it.
"""

from __future__ import annotations

from pathlib import Path

from ...choices import TraceFormat
from ...errors import PlanInputError, shorten
from . import azure, burstgpt, coding_agent, distserve, mooncake, splitwise
from .blocks import checked_file, first_line
from .record import Trace

READERS = {
    TraceFormat.mooncake: mooncake.read,
    TraceFormat.azure: azure.read,
    TraceFormat.burstgpt: burstgpt.read,
    TraceFormat.splitwise: splitwise.read,
    TraceFormat.distserve: distserve.read,
    TraceFormat.coding_agent: coding_agent.read,
}
_HEADERS = {  # the columns a CSV header must hold to be the format's
    TraceFormat.azure: set(azure.HEADER),
    TraceFormat.burstgpt: {"Timestamp", "Request tokens", "Response tokens"},
    TraceFormat.splitwise: {"arrival_timestamp", "prompt_size", "token_size"},
}


def detect_format(path: str | Path) -> TraceFormat:
    """The format of the trace at ``path``, from its first non-blank line."""
    source = checked_file(path)
    number, line = first_line(path, source)
    if line.startswith(b"["):
        return TraceFormat.distserve
    if line.startswith(b"{"):
        if b'"input_length"' in line and b'"timestamp"' in line:
            return TraceFormat.mooncake
        if b'"turns"' in line:
            return TraceFormat.coding_agent
        raise PlanInputError(
            "a JSON line that is neither a Mooncake request (timestamp, input_length) nor a coding-agent session (turns); "
            "give the trace's format",
            source=source,
            field=f"line {number}",
        )
    names = {name.strip().strip('"') for name in line.decode("utf-8", errors="replace").split(",")}
    for fmt, needed in _HEADERS.items():
        if needed <= names:
            return fmt
    raise PlanInputError(
        f"cannot tell the trace's format from its first line ({shorten(line.decode('utf-8', 'replace'), 60)!r}); "
        f"give one of: {', '.join(f for f in TraceFormat if f != TraceFormat.auto)}",
        source=source,
        field=f"line {number}",
    )


def read_trace(path: str | Path, format: TraceFormat | str = TraceFormat.auto) -> Trace:
    """The trace at ``path`` in ``format`` (``auto``: ``detect_format``)."""
    fmt = TraceFormat(format)
    if fmt == TraceFormat.auto:
        fmt = detect_format(path)
    return READERS[fmt](path)


__all__ = ["READERS", "Trace", "TraceFormat", "detect_format", "read_trace"]
