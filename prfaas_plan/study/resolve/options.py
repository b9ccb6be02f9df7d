"""A scenario set: the options ``prfaas-plan compare`` plans, each a variant of one scenario.

Each option names the parts of the scenario it replaces: the PrfaaS pool's hardware, the PD (or
PD-P) pool's hardware, a decode-only pool's hardware (``none``: no separate pool), the model and
the link's bandwidth. ``planner.compare`` plans each as typed what-ifs of the scenario resolved
once (``study.resolve.OneSite``; ``resolve_sites`` for a multi-site file): a replaced pool keeps
its instance range, chips per instance (use ``auto`` to size each hardware) and site, and drops
what belonged to the old hardware (a fixed layout, its cost: the new hardware is priced at its
profile's example rental). Measurements carry the hardware and chips they were measured on
(``calibration_hardware``, ``calibration_gpus``, ``decode.tokens_per_s_hardware``,
``decode.tokens_per_s_gpus``), so a pool on other hardware (compared as resolved profiles: 'H20'
is h20) never uses them (``study.resolve`` says so in a note); a new model drops them all (a
multi-site file: its decode tokens/s). GPU budgets for hardware an option does not use are left
out (noted). A decode-only pool that the scenario lacks gets ``auto`` chips and 1 to the PD
pool's maximum instances, beside 0 to that many PD-P instances.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

from ...choices import Basis, ObjectiveKind
from ...errors import PlanInputError
from ...profiles.registry import canonical_name, looks_like_path, same_hardware
from ...profiles.scenario import Scenario
from ...profiles.sites import SitesScenario
from ...ranges import COMPARE_OPTIONS

NO_DECODE_POOL = "none"


@dataclass(frozen=True)
class CompareOption:
    """What one option replaces (None: the scenario's own)."""

    prfaas: str | None = None
    pd: str | None = None
    pd_decode: str | None = None  # a hardware, or NO_DECODE_POOL
    model: str | None = None
    link_gbps: float | None = None

    @property
    def label(self) -> str:
        parts = [
            f"{k}={v:g}" if isinstance(v, float) else f"{k}={Path(v).stem if looks_like_path(v) else v}"
            for k, v in (
                ("prfaas", self.prfaas),
                ("pd", self.pd),
                ("decode", self.pd_decode),
                ("model", self.model),
                ("link", self.link_gbps),
            )
            if v is not None
        ]
        return " ".join(parts) or "scenario as given"


@dataclass(frozen=True)
class ScenarioSet:
    """A scenario (of one site or several), the options to plan on it and the basis every option is sized on."""

    scenario: Scenario | SitesScenario
    source: str | None
    options: tuple[CompareOption, ...]
    basis: Basis = Basis.model
    notes: tuple[str, ...] = ()  # what building the options said (a value given twice, planned once)

    @property
    def name(self) -> str:
        return self.scenario.name

    @property
    def objective(self) -> ObjectiveKind:
        return self.scenario.objective.type

    @property
    def multi_site(self) -> bool:
        return isinstance(self.scenario, SitesScenario)


def scenario_set(
    scenario: Scenario | SitesScenario,
    source: str | None,
    prfaas=None,
    pd=None,
    pd_decode=None,
    model=None,
    link_gbps=None,
    basis: Basis | str | None = None,
) -> ScenarioSet:
    """The scenario with every combination of the given lists as its options, on ``basis`` (default:
    the ``compare:`` section's, else ``model``); a dimension the arguments leave out comes from the
    scenario's ``compare:`` section, else stays as the scenario has it."""
    if basis is None:
        basis = scenario.compare.basis if scenario.compare is not None else Basis.model
    try:
        basis = Basis(basis)
    except ValueError:
        raise PlanInputError(f"unknown basis {str(basis)[:40]!r}; choose from {', '.join(Basis)}", field="basis") from None
    spec, dims, notes = scenario.compare, [], []
    folder = None if source is None else Path(source).parent
    for given, name in ((prfaas, "prfaas"), (pd, "pd"), (pd_decode, "pd_decode"), (model, "model"), (link_gbps, "link_gbps")):
        values = list(given) if given else list(getattr(spec, name)) if spec is not None else []
        if len(values) > COMPARE_OPTIONS.hi:  # before the pairwise search for repeats
            raise PlanInputError(f"{len(values):,} values (at most {int(COMPARE_OPTIONS.hi)} options in all)", field=name)
        first = _first_of_each(values, name, folder)
        if len(first) < len(values):
            dropped = [str(v) for i, v in enumerate(values) if i not in first]
            notes.append(f"{name}: {', '.join(dropped)} given again: each option planned once")
        dims.append([values[i] for i in first] or [None])
    combos = tuple(CompareOption(*combo) for combo in itertools.product(*dims))
    if len(combos) > COMPARE_OPTIONS.hi:
        raise PlanInputError(
            f"{len(combos)} combinations (at most {int(COMPARE_OPTIONS.hi)}); give fewer options", field="compare"
        )
    return ScenarioSet(scenario, source, combos, basis, tuple(notes))


def _first_of_each(values: list, name: str, folder: Path | None) -> list[int]:
    """The positions of ``values`` that repeat none before them: hardware the same profile
    (``registry.same_hardware``: 'H200' is h200), a shipped model's name in any case
    (``registry.canonical_name``), any other value equal."""

    def model_key(ref):
        return ref if not isinstance(ref, str) or looks_like_path(ref) else (canonical_name(ref, "model_profiles") or ref)

    kept: list[int] = []
    for i, value in enumerate(values):
        if name in ("prfaas", "pd", "pd_decode") and isinstance(value, str):
            repeat = any(isinstance(values[k], str) and same_hardware(value, values[k], folder) for k in kept)
        elif name == "model":
            repeat = any(model_key(value) == model_key(values[k]) for k in kept)
        else:
            repeat = any(value == values[k] for k in kept)
        if not repeat:
            kept.append(i)
    return kept
