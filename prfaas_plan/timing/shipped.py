"""Results that are pure functions of shipped data, kept as package data (``shipped.json``).

An exact calibration fit of a shipped scenario's points (``timing.calibrate``) and the layout
search of a shipped model on a shipped (or shipped-calibrated) instance (``timing.prefill``,
``timing.decode``) give the same answer on every run; the answer is kept here, keyed by the
SHA-256 of everything the computation reads (``key_of``), and read instead of computed when the
inputs are the same. Any other inputs (a user's profile, points or engine) miss and are computed.
``tools/shipped_results.py`` writes the file from a fresh run of every shipped scenario
(``recording``: nothing is read meanwhile, everything computed is recorded), and a test asserts
the shipped file equal to a fresh run, so it cannot go stale when the cost model, a profile or a
scenario changes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from importlib import resources
from typing import Any

FILE = "shipped.json"
VERSION = 1
_RECORDED: dict[str, dict[str, Any]] | None = None  # while ``recording``: section -> key -> value


def key_of(inputs: Any) -> str:
    """SHA-256 of the JSON of ``inputs`` (lists, strings and numbers: profiles as their JSON)."""
    return hashlib.sha256(json.dumps(inputs, default=repr).encode()).hexdigest()


@lru_cache(maxsize=1)
def _shipped() -> dict[str, dict[str, Any]]:
    data = json.loads(resources.files(__package__).joinpath(FILE).read_text(encoding="utf-8"))
    return data["results"] if data.get("version") == VERSION else {}


def lookup(section: str, key: str) -> Any:
    """The shipped result of ``section`` for ``key``; None when there is none (or while recording)."""
    if _RECORDED is not None:
        return None
    return _shipped().get(section, {}).get(key)


def record(section: str, key: str, value: Any) -> None:
    """Keep a computed result while ``recording`` (nothing otherwise)."""
    if _RECORDED is not None:
        _RECORDED.setdefault(section, {})[key] = value


@contextmanager
def recording() -> Iterator[dict[str, dict[str, Any]]]:
    """Within it nothing shipped is read and every result computed is recorded in the mapping it
    yields (section -> key -> value): what ``shipped.json`` holds."""
    global _RECORDED
    saved, _RECORDED = _RECORDED, {}
    try:
        yield _RECORDED
    finally:
        _RECORDED = saved


def text(results: dict[str, dict[str, Any]]) -> str:
    """The text of ``shipped.json`` for the recorded ``results``."""
    ordered = {section: dict(sorted(values.items())) for section, values in sorted(results.items())}
    return json.dumps({"version": VERSION, "results": ordered}, indent=1) + "\n"
