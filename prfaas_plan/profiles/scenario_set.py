"""A scenario set: the options ``prfaas-plan compare`` plans, each a variant of one scenario.

Each option replaces parts of the scenario: the PrfaaS pool's hardware, the PD (or PD-P)
pool's hardware, a decode-only pool's hardware (``none``: no separate pool), the model and
the link's bandwidth. A replaced pool keeps its instance range, chips per instance (use
``auto`` to size each hardware), cost and site, and drops what was measured on the old one
(calibration points, a fixed layout); a new model or decode hardware drops a measured decode
rate. GPU budgets for hardware an option does not use are left out. A decode-only pool that
the scenario lacks gets ``auto`` chips and the PD pool's instance range (at least one).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

from ..choices import ObjectiveKind
from ..errors import PlanInputError
from ..ranges import COMPARE_OPTIONS
from .registry import looks_like_path
from .scenario import AUTO, ClusterSpec, CountRange, Scenario

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
        parts = [f"{k}={v:g}" if isinstance(v, float) else f"{k}={Path(v).stem if looks_like_path(v) else v}"
                 for k, v in (("prfaas", self.prfaas), ("pd", self.pd), ("decode", self.pd_decode),
                              ("model", self.model), ("link", self.link_gbps)) if v is not None]
        return " ".join(parts) or "scenario as given"


@dataclass(frozen=True)
class ScenarioSet:
    """A scenario and the options to plan on it."""

    scenario: Scenario
    source: str | None
    options: tuple[CompareOption, ...]

    @property
    def name(self) -> str:
        return self.scenario.name

    @property
    def objective(self) -> ObjectiveKind:
        return self.scenario.objective.type

    def variant(self, option: CompareOption) -> tuple[Scenario, list[str]]:
        return option_scenario(self.scenario, option)


def scenario_set(scenario: Scenario, source: str | None, prfaas=None, pd=None, pd_decode=None, model=None,
                 link_gbps=None) -> ScenarioSet:
    """The scenario with every combination of the given lists as its options (``options_of``)."""
    return ScenarioSet(scenario, source, tuple(options_of(scenario, prfaas, pd, pd_decode, model, link_gbps)))


def options_of(scenario: Scenario, prfaas=None, pd=None, pd_decode=None, model=None, link_gbps=None
               ) -> list[CompareOption]:
    """Every combination of the given lists; a dimension the arguments leave out comes from the
    scenario's ``compare:`` section, else stays as the scenario has it."""
    spec = scenario.compare
    dims = []
    for given, name in ((prfaas, "prfaas"), (pd, "pd"), (pd_decode, "pd_decode"), (model, "model"),
                        (link_gbps, "link_gbps")):
        values = list(given) if given else list(getattr(spec, name)) if spec is not None else []
        dims.append(values or [None])
    combos = [CompareOption(*combo) for combo in itertools.product(*dims)]
    if len(combos) > COMPARE_OPTIONS.hi:
        raise PlanInputError(f"{len(combos)} combinations (at most {int(COMPARE_OPTIONS.hi)}); give fewer options",
                             field="compare")
    return combos


def option_scenario(scenario: Scenario, option: CompareOption) -> tuple[Scenario, list[str]]:
    """The scenario with the option's parts replaced (see the module docstring), and notes."""
    notes: list[str] = []
    update: dict = {}

    def swapped(spec: ClusterSpec, hardware: str) -> ClusterSpec:
        if hardware == spec.hardware:
            return spec
        if spec.calibration_points or spec.parallel is not None:
            notes.append(f"{hardware}: the scenario's calibration points and layout of {spec.hardware} are dropped")
        return spec.model_copy(update={"hardware": hardware, "calibration_points": [], "parallel": None,
                                       "calibration_fit": None})

    decode_changed = False
    if option.prfaas is not None:
        update["prfaas"] = swapped(scenario.prfaas, option.prfaas)
    if option.pd is not None:
        update["pd"] = swapped(scenario.pd, option.pd)
        decode_changed |= scenario.pd_decode is None and option.pd != scenario.pd.hardware
    if option.pd_decode == NO_DECODE_POOL:
        decode_changed |= scenario.pd_decode is not None
        update["pd_decode"] = None
    elif option.pd_decode is not None:
        if scenario.pd_decode is not None:
            update["pd_decode"] = swapped(scenario.pd_decode, option.pd_decode)
            decode_changed |= option.pd_decode != scenario.pd_decode.hardware
        else:
            lo, hi = scenario.pd.count_range
            update["pd_decode"] = ClusterSpec(hardware=option.pd_decode, gpus_per_instance=AUTO,
                                              instances=CountRange(min=max(1, lo), max=max(1, hi)))
            decode_changed = True
    if option.model is not None and option.model != scenario.model:
        update["model"] = option.model
        decode_changed = True
        for role in ("prfaas", "pd", "pd_decode"):
            spec = update.get(role, getattr(scenario, role))
            if spec is not None and spec.calibration_points:
                update[role] = spec.model_copy(update={"calibration_points": [], "calibration_fit": None})
                notes.append(f"{role}: calibration points measured on {scenario.model} are dropped")
    if decode_changed and scenario.decode.tokens_per_s_per_instance is not None:
        update["decode"] = scenario.decode.model_copy(update={"tokens_per_s_per_instance": None})
        notes.append("the scenario's measured decode tokens/s is dropped: the roofline of the new decode pool is used")
    if option.link_gbps is not None:
        update["link"] = scenario.link.model_copy(update={"bandwidth_gbps": option.link_gbps})
    out = scenario.model_copy(update=update)
    used = {spec.hardware for spec in (out.prfaas, out.pd, out.pd_decode) if spec is not None}
    if not any(looks_like_path(ref) for ref in used):  # shipped references are the profiles' names
        kept = {k: v for k, v in out.budgets.gpus.items() if k in used}
        if len(kept) < len(out.budgets.gpus):
            out = out.model_copy(update={"budgets": out.budgets.model_copy(update={"gpus": kept})})
    return out, notes
