"""The shipped engine profiles (``<name>.yaml`` beside this module, ``profiles.engine``):
``engine_profile(name)`` loads one, once per process."""

from __future__ import annotations

import functools
from pathlib import Path

from ...choices import EngineName
from ...errors import PlanInputError
from ...profiles._base import validate_or_raise
from ...profiles.engine import EngineProfile
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
    return profile
