"""Find profiles by shipped name or by file path.

Shipped profiles are YAML files installed as the data packages
``prfaas_plan.model_profiles`` and ``prfaas_plan.hardware_profiles`` (the top-level
``model_profiles/`` and ``hardware_profiles/`` folders of the source tree), so a name
works from any working directory after ``pip install``. Anything that looks like a path
(an existing file, or a name ending in .yaml/.yml/.json) is read as the user's own file.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Callable, TypeVar

from ..errors import PlanInputError
from ..yamlio import load_yaml_file
from .hardware import HardwareProfile, load_hardware_profile
from .model import ModelProfile, load_model_profile
from .scenario import Scenario, load_scenario

T = TypeVar("T")
_SUFFIXES = (".yaml", ".yml", ".json")


def _shipped_dir(kind: str) -> Path:
    """Folder of shipped ``kind`` profiles ('model_profiles' or 'hardware_profiles').

    Installed, it sits inside the package; in a source checkout, at the repository root.
    """
    package_dir = Path(__file__).resolve().parents[1]
    installed = package_dir / kind
    return installed if installed.is_dir() else package_dir.parent / kind


@functools.cache
def shipped_names(kind: str) -> tuple[str, ...]:
    folder = _shipped_dir(kind)
    return tuple(sorted(p.stem for p in folder.glob("*.yaml")))


def looks_like_path(ref: str) -> bool:
    return ref.endswith(_SUFFIXES) or "/" in ref or Path(ref).is_file()


def _resolve(ref: str, kind: str, label: str, loader: Callable[[object, str], T]) -> T:
    if looks_like_path(ref):
        path = Path(ref)
    else:
        path = _shipped_dir(kind) / f"{ref}.yaml"
        if not path.is_file():
            names = ", ".join(shipped_names(kind))
            raise PlanInputError(f"unknown {label} '{ref}' (shipped: {names}; or give a YAML file path)")
    return _load_cached(str(path), loader)


def _load_cached(path: str, loader):
    """Load and validate once per file version (keyed on path, size and mtime)."""
    try:
        stat = Path(path).stat()
        version = (stat.st_size, stat.st_mtime_ns)
    except OSError:
        version = None  # let the loader report the missing file
    return _load_version(path, version, loader)


@functools.lru_cache(maxsize=64)
def _load_version(path: str, version, loader):
    return loader(load_yaml_file(path), path)


def resolve_model(ref: str) -> ModelProfile:
    """A shipped model name (``minimax-m2.5``) or a path to a model profile YAML."""
    return _resolve(ref, "model_profiles", "model", load_model_profile)


def resolve_hardware(ref: str) -> HardwareProfile:
    """A shipped hardware name (``h200``) or a path to a hardware profile YAML."""
    return _resolve(ref, "hardware_profiles", "hardware", load_hardware_profile)


def resolve_scenario_file(ref: str) -> tuple[Scenario, str]:
    """A shipped scenario name (``paper-case-study``) or a scenario YAML path -> (scenario, path)."""
    path = Path(ref) if looks_like_path(ref) else _shipped_dir("scenarios") / f"{ref}.yaml"
    if not looks_like_path(ref) and not path.is_file():
        names = ", ".join(shipped_names("scenarios"))
        raise PlanInputError(f"unknown scenario '{ref}' (shipped: {names}; or give a YAML file path)")
    return _load_cached(str(path), load_scenario), str(path)


def detect_profile_kind(data: object) -> str:
    """'model' or 'hardware' from the keys of a parsed profile mapping."""
    if not isinstance(data, dict):
        kind = "empty" if data is None else type(data).__name__
        raise PlanInputError(f"expected a mapping of fields at the top level, got {kind}")
    if isinstance(data, dict):
        if "prfaas" in data or "workload" in data:
            return "scenario"
        if "mixers" in data or "layers" in data:
            return "model"
        if "peak_tflops" in data or "efficiency" in data:
            return "hardware"
    raise PlanInputError("cannot tell whether this is a model, hardware or scenario file "
                         "(no 'layers', 'peak_tflops' or 'prfaas')")


def validate_file(path: str) -> tuple[str, ModelProfile | HardwareProfile | Scenario]:
    """Check a model, hardware or scenario file (a scenario's references and workload too)."""
    data = load_yaml_file(path)
    try:
        kind = detect_profile_kind(data)
    except PlanInputError as exc:
        raise exc.with_source(path) from None
    if kind == "scenario":
        from ..planner.inputs import build_inputs

        scenario = load_scenario(data, path)
        try:
            build_inputs(scenario, path)
        except PlanInputError as exc:
            raise exc.with_source(path) from None
        return kind, scenario
    loader = load_model_profile if kind == "model" else load_hardware_profile
    return kind, loader(data, path)
