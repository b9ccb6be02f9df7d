"""The shipped engine profiles (``<name>.yaml`` beside this module, ``profiles.engine``):
``engine_profile(name)`` loads one, once per process."""

from __future__ import annotations

import functools
from pathlib import Path

from ...choices import EngineName
from ...errors import PlanInputError
from ...profiles._base import validate_or_raise
from ...profiles.engine import EngineProfile, flat_values
from ...yamlio import load_yaml_file

FOLDER = Path(__file__).resolve().parent


@functools.cache
def engine_profile(name: EngineName | str) -> EngineProfile:
    """The shipped profile of engine ``name`` (a ``choices.EngineName`` value)."""
    try:
        engine = EngineName(name)
    except ValueError:
        raise PlanInputError(f"unknown engine {name!r} (use {', '.join(EngineName)})", field="engine") from None
    path = FOLDER / f"{engine}.yaml"
    profile = validate_or_raise(EngineProfile, load_yaml_file(path), str(path))
    if profile.name != engine:
        raise PlanInputError(f"names engine {profile.name}, not {engine}", source=str(path), field="name")
    check_sources(profile, None if engine == EngineName.generic else engine_profile(EngineName.generic), str(path))
    return profile


def unsourced(profile: EngineProfile, generic: EngineProfile | None) -> list[str]:
    """The dotted fields of ``profile`` that differ from ``generic`` and name no source in ``field_sources``."""
    if generic is None:
        return []
    base = flat_values(generic)
    return [k for k, v in flat_values(profile).items() if v != base[k] and not profile.field_sources.get(k, "").strip()]


def check_sources(profile: EngineProfile, generic: EngineProfile | None, source: str) -> None:
    """Every ``field_sources`` key names a field, and every value that differs from ``generic`` has a source."""
    fields = flat_values(profile)
    unknown = [k for k in profile.field_sources if k not in fields]
    if unknown:
        raise PlanInputError(
            f"names no field of the profile (use {', '.join(list(fields)[:3])}, ...)",
            source=source,
            field=f"field_sources.{unknown[0]}",
        )
    missing = unsourced(profile, generic)
    if missing:
        raise PlanInputError(
            "differs from generic and names no source: add field_sources entry (or 'assumption: ...')",
            source=source,
            field=missing[0],
        )
