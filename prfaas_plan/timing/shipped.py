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

from ..profiles._base import profile_json

FILE = "shipped.json"
VERSION = 1
_RECORDED: dict[str, dict[str, Any]] | None = None  # while ``recording``: section -> key -> value


KEY_DIGITS = 12  # significant digits of a float in a key


def key_of(inputs: Any) -> str:
    """SHA-256 of the JSON of ``inputs`` (lists, mappings, strings and numbers: profiles as
    ``profile_key``), each float at ``KEY_DIGITS`` significant digits: a fitted profile's last
    bits differ between builds of numpy and scipy, and the results kept here (layouts, fits to
    points) do not turn on them."""
    return hashlib.sha256(json.dumps(_canonical(inputs), sort_keys=True, default=repr).encode()).hexdigest()


def profile_key(profile: Any) -> Any:
    """A profile as ``key_of`` reads it: its JSON, parsed (so that its floats are rounded too),
    without the date of a calibrated profile's fit (``calibration.date``), which changes no result:
    with it, a key made one day missed the next."""
    data = json.loads(profile_json(profile))
    if isinstance(data.get("calibration"), dict):
        data["calibration"] = {k: v for k, v in data["calibration"].items() if k != "date"}
    return data


def _canonical(x: Any) -> Any:
    if isinstance(x, float):
        return float(f"{x:.{KEY_DIGITS}g}")
    if isinstance(x, dict):
        return {str(k): _canonical(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_canonical(v) for v in x]
    return x


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
