"""A scenario's request trace, read once: its path is relative to the scenario file, and the
input and output (and a study's cases) of one scenario share one read while the file is unchanged."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from .traces import Trace, read_trace


def trace_path(path: str, source: str | None) -> Path:
    """A trace's ``path`` relative to the folder of ``source`` (the scenario file)."""
    p = Path(path)
    return Path(source).parent / p if source is not None and not p.is_absolute() else p


def spec_trace(path: Path, fmt) -> Trace:
    """The trace at ``path``, read once while the file is unchanged (input and output of one
    scenario, and a study's cases, read it once)."""
    stat = path.stat() if path.is_file() else None
    return _read(str(path), str(fmt), None if stat is None else (stat.st_mtime_ns, stat.st_size))


@lru_cache(maxsize=2)
def _read(path: str, fmt: str, _stamp) -> Trace:
    return read_trace(path, fmt)
