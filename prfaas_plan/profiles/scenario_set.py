"""A scenario set: the options ``prfaas-plan compare`` plans, each a variant of one scenario.

Each option replaces parts of the scenario: the PrfaaS pool's hardware, the PD (or PD-P)
pool's hardware, a decode-only pool's hardware (``none``: no separate pool), the model and
the link's bandwidth. A replaced pool keeps its instance range, chips per instance (use
``auto`` to size each hardware) and site, and drops what belonged to the old hardware (a
fixed layout, its cost: the new hardware is priced at its profile's example rental).
Measurements carry the hardware and chips they were measured on (``calibration_hardware``,
``calibration_gpus``, ``decode.tokens_per_s_hardware``, ``decode.tokens_per_s_gpus``), so a
pool on other hardware (compared as resolved profiles: 'H20' is h20) never uses them
(``study.resolve`` says so in a note); a new model drops them all. GPU budgets for
hardware an option does not use are left out (noted). A decode-only pool that the scenario
lacks gets ``auto`` chips and 1 to the PD pool's maximum instances, beside 0 to that many
PD-P instances.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

from ..choices import Basis, ObjectiveKind
from ..errors import PlanInputError
from ..ranges import COMPARE_OPTIONS
from .cost_spec import CostSpec
from .registry import hardware_identity, looks_like_path, resolve_hardware, same_hardware
from .scenario import AUTO, ClusterSpec, CountRange, Scenario
from .sites import SitesScenario

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

    @property
    def name(self) -> str:
        return self.scenario.name

    @property
    def objective(self) -> ObjectiveKind:
        return self.scenario.objective.type

    @property
    def multi_site(self) -> bool:
        return isinstance(self.scenario, SitesScenario)

    def variant(self, option: CompareOption) -> tuple[Scenario | SitesScenario, list[str]]:
        if isinstance(self.scenario, SitesScenario):
            return sites_option(self.scenario, option, self.source)
        return option_scenario(self.scenario, option, self.source)


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
    """The scenario with every combination of the given lists as its options (``options_of``), on
    ``basis`` (default: the ``compare:`` section's, else ``model``)."""
    if basis is None:
        basis = scenario.compare.basis if scenario.compare is not None else Basis.model
    try:
        basis = Basis(basis)
    except ValueError:
        raise PlanInputError(f"unknown basis {str(basis)[:40]!r}; choose from {', '.join(Basis)}", field="basis") from None
    return ScenarioSet(scenario, source, tuple(options_of(scenario, prfaas, pd, pd_decode, model, link_gbps)), basis)


def options_of(
    scenario: Scenario | SitesScenario, prfaas=None, pd=None, pd_decode=None, model=None, link_gbps=None
) -> list[CompareOption]:
    """Every combination of the given lists; a dimension the arguments leave out comes from the
    scenario's ``compare:`` section, else stays as the scenario has it."""
    spec = scenario.compare
    dims = []
    for given, name in ((prfaas, "prfaas"), (pd, "pd"), (pd_decode, "pd_decode"), (model, "model"), (link_gbps, "link_gbps")):
        values = list(given) if given else list(getattr(spec, name)) if spec is not None else []
        dims.append(values or [None])
    combos = [CompareOption(*combo) for combo in itertools.product(*dims)]
    if len(combos) > COMPARE_OPTIONS.hi:
        raise PlanInputError(
            f"{len(combos)} combinations (at most {int(COMPARE_OPTIONS.hi)}); give fewer options", field="compare"
        )
    return combos


def _new_price(hardware: str) -> str:
    """What a pool moved onto ``hardware`` is priced at, for the note that its old cost was dropped:
    the profile's example rental, or that it has none."""
    try:
        price = resolve_hardware(hardware).price_usd_per_gpu_hour
    except PlanInputError:  # reported when the option is planned
        return " (priced at its profile's example rental, if it has one)"
    if price is None:
        return f", and {hardware} has no price (no price_usd_per_gpu_hour in its profile)"
    return f" (priced at its profile's example rental, ${price:,.2f} per GPU-hour)"


def option_scenario(scenario: Scenario, option: CompareOption, source: str | None = None) -> tuple[Scenario, list[str]]:
    """The scenario with the option's parts replaced (see the module docstring), and notes.
    Hardware is compared as the profiles the references resolve to (``same_hardware``; a
    relative path from the folder of ``source``, the scenario file): 'H20' on an h20 pool
    changes nothing."""
    notes: list[str] = []
    update: dict = {}
    base = Path(source).resolve().parent if source else None

    def swapped(role: str, spec: ClusterSpec, hardware: str) -> ClusterSpec:
        return _swapped(role, spec, hardware, base, notes)

    if option.prfaas is not None:
        update["prfaas"] = swapped("prfaas", scenario.prfaas, option.prfaas)
    if option.pd is not None:
        update["pd"] = swapped("pd", scenario.pd, option.pd)
    if option.pd_decode == NO_DECODE_POOL:
        update["pd_decode"] = None
    elif option.pd_decode is not None:
        if scenario.pd_decode is not None:
            update["pd_decode"] = swapped("pd_decode", scenario.pd_decode, option.pd_decode)
        else:
            lo, hi = scenario.pd.count_range
            update["pd_decode"] = ClusterSpec(
                hardware=option.pd_decode, gpus_per_instance=AUTO, instances=CountRange(min=1, max=max(1, hi))
            )
            pd = update.get("pd", scenario.pd)
            update["pd"] = pd.model_copy(update={"instances": CountRange(min=0, max=hi)})
            notes.append(
                f"a decode-only pool of {option.pd_decode} (auto chips, 1 to {max(1, hi)} instances) beside "
                f"0 to {hi} PD-P instances"
            )
    if option.model is not None and option.model != scenario.model:
        update["model"] = option.model
        for role in ("prfaas", "pd", "pd_decode"):
            spec = update.get(role, getattr(scenario, role))
            if spec is not None and spec.calibration_points:
                update[role] = spec.model_copy(update={"calibration_points": [], "calibration_fit": None})
                notes.append(f"{role}: calibration points measured on {scenario.model} dropped")
        if scenario.decode.tokens_per_s_per_instance is not None:
            update["decode"] = scenario.decode.model_copy(update={"tokens_per_s_per_instance": None})
            notes.append(
                f"the scenario's decode tokens/s measured on {scenario.model} dropped: the decode pool's roofline is used"
            )
    if option.link_gbps is not None:
        update["link"] = scenario.link.model_copy(update={"bandwidth_gbps": option.link_gbps})
    out = scenario.model_copy(update=update)
    used = {hardware_identity(spec.hardware, base) for spec in (out.prfaas, out.pd, out.pd_decode) if spec is not None}
    kept = {k: v for k, v in out.budgets.gpus.items() if hardware_identity(k) in used}  # 'H200' is h200
    if len(kept) < len(out.budgets.gpus):
        notes.append(
            f"GPU budgets of hardware this option does not use ignored: {', '.join(sorted(set(out.budgets.gpus) - set(kept)))}"
        )
        out = out.model_copy(update={"budgets": out.budgets.model_copy(update={"gpus": kept})})
    return out, notes


def sites_option(spec: SitesScenario, option: CompareOption, source: str | None = None) -> tuple[SitesScenario, list[str]]:
    """A multi-site file with the option's parts replaced: the hardware of every PrfaaS site
    (``prfaas``) or every PD site (``pd``), the model, the bandwidth of every link; each replaced
    pool as ``option_scenario`` replaces one (its layout and cost dropped, counts kept)."""
    if option.pd_decode is not None:
        raise PlanInputError("a multi-site file has no decode-only pools", field="compare.pd_decode")
    notes: list[str] = []
    update: dict = {}
    base = Path(source).resolve().parent if source else None
    for kind, hardware in (("prfaas_sites", option.prfaas), ("pd_sites", option.pd)):
        if hardware is not None:
            update[kind] = [_swapped(f"{kind}.{site.name}", site, hardware, base, notes) for site in getattr(spec, kind)]
    if option.model is not None and option.model != spec.model:
        update["model"] = option.model
        if spec.decode.tokens_per_s_per_instance is not None:
            update["decode"] = spec.decode.model_copy(update={"tokens_per_s_per_instance": None})
            notes.append(f"the decode tokens/s measured on {spec.model} dropped: each site's roofline is used")
    if option.link_gbps is not None:
        update["links"] = [link.model_copy(update={"bandwidth_gbps": option.link_gbps}) for link in spec.links]
    return spec.model_copy(update=update), notes


def _swapped(where: str, spec: ClusterSpec, hardware: str, base: Path | None, notes: list[str]) -> ClusterSpec:
    """``spec`` on ``hardware`` (unchanged when it is the same profile): its layout and cost, which
    belonged to the old hardware, dropped (noted); calibration points stay with the instance they
    were measured on."""
    if same_hardware(hardware, spec.hardware, base):
        return spec
    dropped = [what for what, present in (("layout", spec.parallel is not None), ("cost", spec.cost != CostSpec())) if present]
    if dropped:
        notes.append(
            f"{where} on {hardware}: the {', '.join(dropped)} of {spec.hardware} dropped"
            + (_new_price(hardware) if "cost" in dropped else "")
        )
    return spec.model_copy(update={"hardware": hardware, "parallel": None, "cost": CostSpec()})


def describe(scenario: Scenario) -> dict:
    """The identity of a scenario as written (references, not resolved profiles): for options
    that could not be planned."""
    dec = scenario.pd_decode

    def chips(spec):  # a fixed count as written; None for auto
        return spec.gpus_per_instance if spec is not None and isinstance(spec.gpus_per_instance, int) else None

    return {
        "scenario": scenario.name,
        "model": scenario.model,
        "prfaas_hardware": scenario.prfaas.hardware,
        "prfaas_gpus_per_instance": chips(scenario.prfaas),
        "pd_hardware": scenario.pd.hardware,
        "pd_gpus_per_instance": chips(scenario.pd),
        "pd_decode_hardware": None if dec is None else dec.hardware,
        "pd_decode_gpus_per_instance": chips(dec),
        "link_gbps": float(scenario.link.bandwidth_gbps),
    }


def references(scenario: Scenario | SitesScenario, options: tuple[CompareOption, ...] = ()) -> list[tuple[str, str, str]]:
    """(field, reference, kind) of every hardware and model an option set names ('hardware' or
    'model'), from ``options`` and the scenario's ``compare:`` section; each once."""
    spec = scenario.compare
    out: list[tuple[str, str, str]] = []
    for name, kind in (("prfaas", "hardware"), ("pd", "hardware"), ("pd_decode", "hardware"), ("model", "model")):
        refs = [getattr(o, name) for o in options] + (list(getattr(spec, name)) if spec is not None else [])
        for ref in dict.fromkeys(r for r in refs if r is not None and r != NO_DECODE_POOL):
            out.append((f"compare.{name}", ref, kind))
    return out
