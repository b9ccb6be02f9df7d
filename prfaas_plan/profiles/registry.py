"""Find profiles by shipped name or by file path.

Shipped profiles are YAML files installed as the data packages
``prfaas_plan.model_profiles`` and ``prfaas_plan.hardware_profiles`` (the top-level
``model_profiles/`` and ``hardware_profiles/`` folders of the source tree), so a name
works from any working directory after ``pip install``. Anything that looks like a path
(an existing file, or a name ending in .yaml/.yml/.json) is read as the user's own file.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

from ..choices import ProfileKind
from ..errors import PlanInputError, show
from ..yamlio import file_status, is_regular_file, load_yaml_file, note_input
from ._base import derived, require_mapping
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
    return ref.endswith(_SUFFIXES) or "/" in ref or is_regular_file(ref)


def _key(ref: str) -> str:
    """How names are compared: case-insensitive, '_' the same as '-' ('Kimi_K2' -> 'kimi-k2')."""
    return ref.strip().lower().replace("_", "-")


def canonical_name(ref: str, kind: str) -> str | None:
    """The shipped ``kind`` name that ``ref`` means (exact, else the one name equal to it
    case-insensitively with '_' and '-' the same), or None (no such name, or two)."""
    names = shipped_names(kind)
    if ref in names:
        return ref
    matches = [name for name in names if _key(name) == _key(ref)]
    return matches[0] if len(matches) == 1 else None


def _identity(ref: str, kind: str, base: Path | None) -> str:
    if not looks_like_path(ref):
        return canonical_name(ref, kind) or ref
    path = Path(ref) if base is None or Path(ref).is_absolute() else base / ref
    try:
        return (resolve_hardware if kind == "hardware_profiles" else resolve_model)(str(path)).name
    except PlanInputError:
        return ref


def hardware_identity(ref: str, base: Path | None = None) -> str:
    """The hardware a reference means, to tell whether two references name the same chip: a
    shipped name as ``canonical_name`` gives it ('H20' is h20), a profile file (a relative path
    taken from ``base``, the scenario's folder) by the name inside it; a reference that resolves
    to nothing is itself (the error is reported where the profile is loaded)."""
    return _identity(ref, "hardware_profiles", base)


def same_hardware(a: str, b: str, base: Path | None = None) -> bool:
    """Whether two hardware references name the same hardware profile: whether a what-if onto
    ``a`` leaves a pool on ``b`` as it is (its price and layout too). The same name
    (``hardware_identity``: 'H20' is h20) is the same profile unless one is a file whose content
    differs: a copy of h200 that keeps ``name: h200`` at a contract price is another option."""
    if a == b:
        return True
    if hardware_identity(a, base) != hardware_identity(b, base):
        return False
    if not (looks_like_path(a) or looks_like_path(b)):
        return True
    try:
        return _hardware_at(a, base) == _hardware_at(b, base)
    except PlanInputError:
        return True  # the error is reported where the profile is loaded


def _hardware_at(ref: str, base: Path | None) -> HardwareProfile:
    """The hardware profile of ``ref``, a relative file taken from ``base``."""
    if looks_like_path(ref) and base is not None and not Path(ref).is_absolute():
        ref = str(base / ref)
    return resolve_hardware(ref)


def _speed_identity(ref: str, base: Path | None) -> str:
    """``hardware_identity``, but a profile file with a shipped chip's speed figures (a copy at
    another price or under another name, ``shipped_twin``) is that chip."""
    name = hardware_identity(ref, base)
    if not looks_like_path(ref):
        return name
    try:
        hardware = _hardware_at(ref, base)
    except PlanInputError:
        return name
    return shipped_twin(hardware, (hardware.name, *shipped_names("hardware_profiles"))) or name


def measured_on_same_chip(measured_on: str, written: str, base: Path | None = None) -> bool:
    """Whether a measurement taken on ``measured_on`` belongs to a pool on ``written``: the same
    hardware (``same_hardware``), or profiles with the same speed figures (a copy that changes
    only its name, price, power or words is the chip it copies)."""
    return same_hardware(measured_on, written, base) or _speed_identity(measured_on, base) == _speed_identity(written, base)


def same_model(a: str, b: str, base: Path | None = None) -> bool:
    """Whether two model references name the same model (as ``hardware_identity`` does for chips):
    the test of whether a scenario's measurements, taken on ``a``, belong to a plan of ``b``."""
    return a == b or _identity(a, "model_profiles", base) == _identity(b, "model_profiles", base)


def unknown_name_reason(ref: str, label: str, names: tuple[str, ...], hint: str) -> str:
    """'unknown hardware 'rubin-cxp'; did you mean 'rubin-cpx'? (shipped: ...; HINT)': up to
    three close names (difflib, on the compared form of ``_key``), then every name."""
    keys = {_key(name): name for name in names}
    close = [keys[k] for k in difflib.get_close_matches(_key(ref), list(keys), n=3, cutoff=0.6)]
    guess = f"; did you mean {' or '.join(show(name) for name in close)}?" if close else ""
    return f"unknown {label} {show(ref)}{guess} (shipped: {', '.join(names)}; {hint})"


def _shipped_path(ref: str, kind: str, label: str) -> Path:
    """The file of a reference: the path itself, or the shipped profile of that name (see
    ``canonical_name``); an unknown name suggests the closest shipped ones."""
    if looks_like_path(ref):
        return Path(ref)
    name = canonical_name(ref, kind)
    path = _shipped_dir(kind) / f"{name}.yaml" if name is not None else None
    if path is None or not is_regular_file(path):
        raise PlanInputError(unknown_name_reason(ref, label, shipped_names(kind), "or give a YAML file path"))
    return path


def _load_cached(path: str, loader: Callable[[object, str], T]) -> T:
    """Load and validate once per file version (keyed on path, size and mtime); a cached file
    is still recorded as an input of the running command (``yamlio.note_input``)."""
    st = file_status(path)
    note_input(path, st)
    version = None if st is None else (st.st_size, st.st_mtime_ns)  # None: the loader reports it
    return _load_version(path, version, loader)


@functools.lru_cache(maxsize=64)
def _load_version(path: str, version, loader):
    return loader(load_yaml_file(path), path)


# The fields of a hardware profile that price or describe the chip without changing how fast it
# runs: a copy that changes only these times as the profile it copies, measured points and all.
_NOT_SPEED = frozenset(
    {"name", "description", "sources", "assumptions", "tdp_w", "price_usd_per_gpu_hour", "price_note", "efficiency_sources"}
)


def speed_figures(profile: HardwareProfile) -> str:
    """The figures that time a chip (peaks, memory, links, efficiencies, calibration) as one text:
    two profiles that differ only in name, price, power or words have the same."""
    return derived(profile, "speed-figures", lambda p: p.model_dump_json(exclude=set(_NOT_SPEED)))


def shipped_twin(profile: HardwareProfile, names: Iterable[str]) -> str | None:
    """The first of the shipped hardware ``names`` whose speed figures (peaks, memory, links,
    efficiencies, calibration) ``profile`` has exactly, or None: a user's copy that changes only
    its name, price, power or words is that hardware, for its measured points."""
    shipped = shipped_names("hardware_profiles")
    return next((n for n in names if n in shipped and speed_figures(resolve_hardware(n)) == speed_figures(profile)), None)


def resolve_model(ref: str) -> ModelProfile:
    """A shipped model name (``minimax-m2.5``) or a path to a model profile YAML."""
    return _load_cached(str(_shipped_path(ref, "model_profiles", "model")), load_model_profile)


def resolve_hardware(ref: str) -> HardwareProfile:
    """A shipped hardware name (``h200``) or a path to a hardware profile YAML."""
    return _load_cached(str(_shipped_path(ref, "hardware_profiles", "hardware")), load_hardware_profile)


def resolve_scenario_file(ref: str) -> tuple[Scenario, str]:
    """A shipped scenario name (``paper-case-study``) or a scenario YAML path -> (scenario, path)."""
    path = scenario_path(ref)
    return _load_cached(path, _one_site_scenario), path


def scenario_path(ref: str) -> str:
    """The file of a shipped scenario name or a path (multi-site scenarios are shipped there too)."""
    return str(_shipped_path(ref, "scenarios", "scenario"))


def _one_site_scenario(data: object, source: str) -> Scenario:
    if isinstance(data, dict) and ("pd_sites" in data or "prfaas_sites" in data):
        raise PlanInputError(
            "a multi-site scenario (pd_sites, prfaas_sites), not a one-site one", source=source, form=ProfileKind.sites
        )
    return load_scenario(data, source)


def detect_profile_kind(data: object) -> ProfileKind:
    """Model, hardware or scenario, from the keys of a parsed profile mapping."""
    data = require_mapping(data)
    if "pd_sites" in data or "prfaas_sites" in data:
        return ProfileKind.sites
    if "prfaas" in data or "workload" in data:
        return ProfileKind.scenario
    if "mixers" in data or "layers" in data:
        return ProfileKind.model
    if "peak_tflops" in data or "efficiency" in data:
        return ProfileKind.hardware
    raise PlanInputError(
        "cannot tell whether this is a model, hardware or scenario file (no 'layers', 'peak_tflops' or 'prfaas')"
    )
