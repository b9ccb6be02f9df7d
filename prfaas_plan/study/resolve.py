"""Resolve a scenario file into the planner's view: the only reader of scenario fields
(``tests/test_layers.py`` checks it). Resolution is pure: it loads the model and every pool's
hardware (names, or paths relative to the scenario file), calibrates a pool's hardware on the
model when it lists ``calibration_points``, builds the length distributions (with a prefix
cache, routing uses the uncached length), fixes the decode rate of one decoding instance, and
converts every quantity to SI: bytes/s for links, seconds for RTTs, the squared coefficient of
variation for arrivals. It plans nothing: choosing chips per instance and the cache regime are
planning steps (``planner.chips``).

A one-site scenario resolves to a ``OneSite`` (``one_site``: the model, workload and hardware,
before chips per instance are chosen) and to ``PlanInputs`` (``build_inputs``, ``build_variants``:
one per combination of the pools' chips per instance); a multi-site file to a ``Study``
(``resolve_sites``), every pool, workload and link resolved once. What-ifs that resolve a part
again (a pool on other hardware, another model: ``OneSite.with_hardware``, ``with_model``;
``resolve_sites``' replacements) run the same functions on the new profile; the file is never
copied. ``compare`` plans its options so (``resolved_base``, ``OneSite.with_option``,
``sites_option``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..accounting.kv import KvModel
from ..accounting.params import declared_params_mismatch
from ..choices import Basis, CacheRegime, DecodeSource, Dtype, Role, TraceFormat
from ..errors import PlanInputError, shorten, warn
from ..profiles.cost_spec import CostSpec
from ..profiles.hardware import HardwareProfile
from ..profiles.model import ModelProfile
from ..profiles.registry import hardware_identity, looks_like_path, resolve_hardware, resolve_model, same_hardware
from ..profiles.scenario import (
    AUTO,
    ClusterCachesSpec,
    ClusterSpec,
    CountRange,
    DecodeSpec,
    LinkSpec,
    Scenario,
    WorkloadSpec,
    load_scenario,
    measured_instance_defaults,
)
from ..profiles.serving import PrecisionSpec
from ..profiles.workload_spec import TraceSpec, mixture_weight_notes
from ..ranges import MAX_CHIP_COMBINATIONS
from ..timing.calibrate import CalibrationPoint
from ..timing.cost import Engine
from ..timing.decode import decode_capacity
from ..timing.instance import Instance
from ..timing.layout import Layout, check_layout
from ..timing.memory import chips_needed, require_fit
from ..timing.prefill import prefill_curve
from ..timing.transport import Transport
from ..units import gbps_to_bytes_per_s
from ..workload.cluster_cache import ClusterCaches, HitDistribution
from ..workload.distributions import build_distribution, with_prefix_cache
from ..yamlio import is_regular_file
from .basis import calibrated, calibration_points, decode_source, measured_decode_rate, prefill_settings
from .cache_memory import cache_memory_notes
from .model import (
    Case,
    Decode,
    LatencySettings,
    Limits,
    Link,
    Objective,
    OptimiserSettings,
    PdSite,
    PlanInputs,
    Pool,
    PrfaasSite,
    Slo,
    Study,
    Window,
    Workload,
    gpu_budgets,
    joined,
)
from .prices import LinkCost, chip_cost

if TYPE_CHECKING:  # compare's options and multi-site schemas: imported where used (start-up)
    from ..profiles.scenario_set import CompareOption, ScenarioSet
    from ..profiles.sites import SitesScenario


def _ref(ref: str, base: Path | None, source: str | None, field: str) -> str:
    """A profile reference: a shipped name, or a path relative to the scenario file's folder."""
    if base is None or not looks_like_path(ref) or Path(ref).is_absolute():
        return ref
    candidate = base / ref
    if not is_regular_file(candidate):
        raise PlanInputError(
            f"file not found: {shorten(ref, 60)} (relative paths are taken from the scenario's folder)",
            source=source,
            field=field,
        )
    return str(candidate)


def _hardware(role: str, ref: str, base: Path | None, source: str | None) -> HardwareProfile:
    """A pool's hardware profile (``ref``: a name or a path); errors name ``role`` (a ``Role``, or a site's field path)."""
    try:
        return resolve_hardware(_ref(ref, base, source, f"{role}.hardware"))
    except PlanInputError as exc:
        raise PlanInputError(exc.reason, source=exc.source or source, field=exc.field or f"{role}.hardware") from None


def chip_options(
    role: str, spec: ClusterSpec, model: ModelProfile, hardware: HardwareProfile, need_tokens: int, source: str | None
) -> tuple[int, ...]:
    """The chips per instance a pool may have: the given count, the given list, or for ``auto`` the
    fewest chips whose memory holds the model and one request of ``need_tokens`` in some layout
    (``timing.memory.chips_needed``: SRAM for an LPU, HBM for a GPU) and its multiples up to
    ``max_gpus_per_instance`` (default: twice that count). Errors name ``role`` (a ``Role``, or a
    site's field path)."""
    given = spec.gpus_per_instance
    if isinstance(given, int):
        return (given,)
    if isinstance(given, list):
        return tuple(sorted(set(given)))
    least, _ = chips_needed(model, Instance(hardware, 1), need_tokens)
    if not least:
        raise PlanInputError(
            f"no layout of {hardware.name} chips holds {model.name} and a {need_tokens:,}-token request",
            source=source,
            field=f"{role}.gpus_per_instance",
        )
    cap = spec.max_gpus_per_instance or 2 * least
    if cap < least:
        raise PlanInputError(
            f"max_gpus_per_instance {cap} is below the {least} chips {model.name} needs on {hardware.name}",
            source=source,
            field=f"{role}.max_gpus_per_instance",
        )
    return tuple(range(least, cap + 1, least))


def _pool(
    role: Role,
    spec: ClusterSpec,
    model: ModelProfile,
    hardware: HardwareProfile,
    gpus: int,
    options: tuple[int, ...],
    source: str | None,
    prefills: bool = True,
    basis: Basis = Basis.as_given,
    base: Path | None = None,
    where: str | None = None,
    written: str | None = None,
    moved: bool = False,
    measured: bool = True,
) -> Pool:
    """One pool on ``basis`` (``study.basis``: which measured points calibrate it, which curve
    and capacity size it); ``base``: the scenario's folder (relative profile paths); ``where``:
    the pool's field path in the file (default: its role). What-ifs (``WrittenPool``): ``written``, the
    reference to ``hardware`` (default: the spec's); ``moved``, the pool is on other hardware than
    the spec's, whose layout and cost do not apply (the new hardware at its profile's example
    rental); ``measured`` False, the spec's calibration points are of another model (not used)."""
    where = where or str(role)
    # a LayoutSpec, checked by the schema, as parse_layout reads one
    layout = None if spec.parallel is None or moved else Layout(**spec.parallel.model_dump())
    engine = Engine.of(spec.engine)
    if layout is not None:
        try:
            check_layout(model, layout, gpus, field="parallel")
        except PlanInputError as exc:
            raise PlanInputError(exc.reason, source=source, field=f"{where}.parallel") from None
    cost = chip_cost(hardware, CostSpec() if moved else spec.cost, spec.site)
    calibration = None
    given = [CalibrationPoint(p.length_tokens, p.prefill_s) for p in spec.calibration_points] if measured else []
    points, fit, notes = calibration_points(
        role,
        written or spec.hardware,
        given,
        spec.calibration_fit if measured else None,
        spec.calibration_hardware,
        spec.source,
        model,
        hardware,
        gpus,
        basis,
        prefills,
        spec.calibration_gpus,
        base,
    )
    if points:
        try:
            calibration = calibrated(model, hardware, gpus, points, fit, layout, engine)
        except PlanInputError as exc:
            field = "calibration_fit" if exc.field == "fit" else "calibration_points"
            raise PlanInputError(exc.reason, source=source, field=f"{where}.{field}") from None
        hardware = calibration.hardware
    instance = Instance(hardware, gpus, layout, engine)
    options = options if len(options) > 1 else ()
    if not prefills:
        return Pool(role, instance, None, calibration, cost, options, tuple(notes))
    curve_source, capacity = prefill_settings(spec.source, spec.prefill_capacity, calibration is not None, basis)
    try:
        curve = prefill_curve(model, instance, curve_source, capacity)
    except PlanInputError as exc:
        raise PlanInputError(exc.reason, source=source, field=f"{where}.{exc.field or 'gpus_per_instance'}") from None
    return Pool(role, instance, curve, calibration, cost, options, tuple(notes))


def _precision_applied(
    precision: PrecisionSpec | None, pools: Sequence[tuple[str, ClusterSpec]], model: ModelProfile, source: str | None
) -> ModelProfile:
    """The model at the file's ``precision``; with no KV dtype given, an FP8 checkpoint's KV in
    the dtype its pools' engines pick for it (``profiles.engine``: ``kv_dtype_fp8_checkpoint``; one
    KV cache moves from PrfaaS to PD, so engines that pick different ones need ``precision.kv``).
    ``pools``: (field path, spec) of every pool."""
    from ..timing.engines import engine_profile

    picks = {role: engine_profile(spec.engine.name).defaults.kv_dtype_fp8_checkpoint for role, spec in pools}
    chosen = {kv for kv in picks.values() if kv is not None}
    precision = precision or PrecisionSpec()
    if len(chosen) > 1 and precision.kv is None and (precision.weights or model.dtypes.weights) == Dtype.fp8:
        said = ", ".join(f"{role} {kv or 'the model profile'}" for role, kv in picks.items())
        raise PlanInputError(
            f"the pools' engines keep an FP8 checkpoint's KV in different dtypes ({said}); give precision.kv",
            source=source,
            field="precision.kv",
        )
    return precision.applied(model, next(iter(chosen), None))


def build_inputs(scenario: Scenario, source: str | None = None, basis: Basis = Basis.as_given) -> PlanInputs:
    """Resolve a validated scenario (see the module docstring), each pool at its fewest chips
    per instance; errors name ``source``. ``planner.chips`` chooses among several."""
    return build_variants(scenario, source, first_only=True, basis=basis)[0]


def build_variants(
    scenario: Scenario, source: str | None = None, first_only: bool = False, basis: Basis = Basis.as_given
) -> list[PlanInputs]:
    """The resolved inputs of every combination of the pools' chips per instance (``OneSite.variants``)."""
    return one_site(scenario, source, basis).variants(first_only)


@dataclass(frozen=True)
class WrittenPool:
    """A pool of a one-site scenario before its chips per instance are chosen: its spec as written
    (a decode-only pool a what-if adds: the defaults, ``auto`` chips), its hardware and the
    reference to it, and its instance range. ``moved``: a what-if put it on other hardware than
    the spec names (the reference is the what-if's), so the spec's layout and cost, which belonged
    to the old hardware, do not apply; its measurements keep the hardware they name."""

    spec: ClusterSpec
    hardware: HardwareProfile
    written: str
    instances: tuple[int, int]
    moved: bool = False


@dataclass(frozen=True)
class OneSite:
    """A one-site scenario resolved up to its pools' chips per instance: the model, the workload,
    the decode context and each pool's hardware, resolved once (``one_site``). ``variants`` resolves
    the pools of every chip combination. Each what-if replaces one typed part (a pool's hardware,
    the decode-only pool, the model, the link, the budgets) and resolves what follows from it with
    the functions above; the scenario as written is never copied. ``said``: what the what-ifs
    replaced or dropped, in words."""

    scenario: Scenario
    source: str | None
    basis: Basis
    model_ref: str
    model: ModelProfile
    workload: Workload
    context: int  # tokens per decoding request
    pools: dict[Role, WrittenPool]
    notes: tuple[str, ...] = ()  # of the model and the workload
    measured: bool = True  # False: the scenario's measurements are of another model (not used)
    link_gbps: float | None = None  # None: the scenario's
    gpu_budget: dict[str, int] | None = None  # None: the scenario's
    said: tuple[str, ...] = ()

    def _said(self, *notes: str, **changes) -> OneSite:
        return replace(self, said=self.said + notes, **changes)

    def with_hardware(self, role: Role, ref: str) -> OneSite:
        """The pool ``role`` on the hardware ``ref`` (a shipped name or a profile file; unchanged when
        it names the pool's own hardware, ``same_hardware``: 'H20' on an h20 pool): its chips per
        instance, instance range and site kept, its layout and cost dropped (noted, with what the new
        hardware is priced at)."""
        pool, base = self.pools[role], _base(self.source)
        if same_hardware(ref, pool.written, base):
            return self
        hardware = _hardware(role, ref, base, self.source)
        note = moved_note(str(role), pool.spec, ref, hardware)
        moved = WrittenPool(pool.spec, hardware, ref, pool.instances, moved=True)
        return self._said(*([note] if note else []), pools={**self.pools, role: moved})

    def without_decode_pool(self) -> OneSite:
        """No decode-only pool: the PD pool decodes too (its range kept)."""
        return replace(self, pools={r: p for r, p in self.pools.items() if r != Role.pd_decode})

    def with_decode_pool(self, ref: str) -> OneSite:
        """A decode-only pool on ``ref``: the scenario's moved onto it (``with_hardware``), else a new
        one (``auto`` chips, 1 to the PD pool's maximum instances) beside 0 to that many PD-P instances."""
        if Role.pd_decode in self.pools:
            return self.with_hardware(Role.pd_decode, ref)
        pd, hi = self.pools[Role.pd], max(1, self.pools[Role.pd].instances[1])
        spec = ClusterSpec(hardware=ref, gpus_per_instance=AUTO, instances=CountRange(min=1, max=hi))
        decode = WrittenPool(spec, _hardware(Role.pd_decode, ref, _base(self.source), self.source), ref, (1, hi))
        return self._said(
            f"a decode-only pool of {ref} (auto chips, 1 to {hi} instances) beside 0 to {pd.instances[1]} PD-P instances",
            pools={**self.pools, Role.pd: replace(pd, instances=(0, pd.instances[1])), Role.pd_decode: decode},
        )

    def with_model(self, ref: str) -> OneSite:
        """The scenario with the model ``ref`` (unchanged when it is the scenario's reference): the
        model, workload and decode context resolved on it; the scenario's calibration points and
        decode tokens/s, measured on its own model, dropped (noted)."""
        if ref == self.scenario.model:
            return self
        base, written = _base(self.source), self.scenario.model
        specs = [(str(role), pool.spec) for role, pool in self.pools.items()]
        model, notes = _model(ref, self.scenario.precision, specs, base, self.source)
        workload, workload_notes = _workload(self.scenario.workload, model, self.source)
        said = [f"{role}: calibration points measured on {written} dropped" for role, spec in specs if spec.calibration_points]
        if self.scenario.decode.tokens_per_s_per_instance is not None:
            said.append(f"the scenario's decode tokens/s measured on {written} dropped: the decode pool's roofline is used")
        return self._said(
            *said,
            model_ref=ref,
            model=model,
            workload=workload,
            context=_decode_context(self.scenario.decode, model, workload, self.source),
            notes=tuple(notes + workload_notes),
            measured=False,
        )

    def with_link_gbps(self, gbps: float) -> OneSite:
        """The scenario on a link of ``gbps`` raw bandwidth (its usable fraction, RTT and prices kept)."""
        return replace(self, link_gbps=float(gbps))

    def without_unused_budgets(self) -> OneSite:
        """The GPU budgets of hardware no pool uses left out (noted; 'H200' is h200)."""
        base, budgets = _base(self.source), self.scenario.budgets.gpus if self.gpu_budget is None else self.gpu_budget
        used = {hardware_identity(pool.written, base) for pool in self.pools.values()}
        kept = {k: v for k, v in budgets.items() if hardware_identity(k) in used}
        if len(kept) == len(budgets):
            return self
        dropped = ", ".join(sorted(set(budgets) - set(kept)))
        return self._said(f"GPU budgets of hardware this option does not use ignored: {dropped}", gpu_budget=kept)

    def with_option(self, option: CompareOption) -> OneSite:
        """The what-ifs of a ``compare`` option (``profiles.scenario_set``): the PrfaaS pool's
        hardware, the PD pool's, the decode-only pool (``NO_DECODE_POOL``: none), the model, the
        link; then the GPU budgets of hardware no pool uses left out."""
        from ..profiles.scenario_set import NO_DECODE_POOL

        study = self
        for role, ref in ((Role.prfaas, option.prfaas), (Role.pd, option.pd)):
            study = study if ref is None else study.with_hardware(role, ref)
        if option.pd_decode == NO_DECODE_POOL:
            study = study.without_decode_pool()
        elif option.pd_decode is not None:
            study = study.with_decode_pool(option.pd_decode)
        study = study if option.model is None else study.with_model(option.model)
        study = study if option.link_gbps is None else study.with_link_gbps(option.link_gbps)
        return study.without_unused_budgets()

    def identity(self, option: CompareOption | None = None) -> dict:
        """``PlanInputs.identity`` as written (the references; chips when a pool gives one count), for
        an option that could not be resolved; with ``option``, whose what-ifs did not resolve, its
        references in place of those it replaces."""
        if option is not None:
            return {**self.identity(), **_written(self, option)}
        chips = {
            role: p.spec.gpus_per_instance if isinstance(p.spec.gpus_per_instance, int) else None
            for role, p in self.pools.items()
        }
        dec = self.pools.get(Role.pd_decode)
        return {
            "scenario": self.scenario.name,
            "model": self.model_ref,
            "prfaas_hardware": self.pools[Role.prfaas].written,
            "prfaas_gpus_per_instance": chips[Role.prfaas],
            "pd_hardware": self.pools[Role.pd].written,
            "pd_gpus_per_instance": chips[Role.pd],
            "pd_decode_hardware": None if dec is None else dec.written,
            "pd_decode_gpus_per_instance": chips.get(Role.pd_decode),
            "link_gbps": float(self.scenario.link.bandwidth_gbps if self.link_gbps is None else self.link_gbps),
        }

    def variants(self, first_only: bool = False) -> list[PlanInputs]:
        """The resolved inputs of every combination of the pools' chips per instance (one when each
        pool has one count, or with ``first_only``), each pool on the basis (``study.basis``).
        Combinations whose pools do not hold the model are left out; if none does, the first one's
        error is raised."""
        model, source, basis, base, context = self.model, self.source, self.basis, _base(self.source), self.context
        longest = int(self.workload.full_input_dist.lengths_tokens[-1])
        separate = Role.pd_decode in self.pools
        need = {
            Role.prfaas: longest,
            Role.pd: longest if separate else max(context, longest),
            Role.pd_decode: max(context, longest),
        }
        roles = list(self.pools)
        options = {r: chip_options(r, self.pools[r].spec, model, self.pools[r].hardware, need[r], source) for r in roles}
        count = math.prod(len(options[r]) for r in roles)
        if count > MAX_CHIP_COMBINATIONS:
            raise PlanInputError(
                f"{count} combinations of chips per instance (at most {MAX_CHIP_COMBINATIONS}): shorten the "
                "lists or lower max_gpus_per_instance",
                source=source,
                field="gpus_per_instance",
            )
        combos = [tuple(options[r][0] for r in roles)] if first_only else list(itertools.product(*(options[r] for r in roles)))
        pools: dict[tuple[Role, int], Pool | PlanInputError] = {}
        decodes: dict[int, tuple[Decode, list[str]]] = {}

        def pool_of(role: Role, gpus: int) -> Pool:
            key = (role, gpus)
            if key not in pools:
                p = self.pools[role]
                try:
                    pool = _pool(
                        role, p.spec, model, p.hardware, gpus, options[role], source, role != Role.pd_decode, basis, base,
                        written=p.written, moved=p.moved, measured=self.measured,
                    )  # fmt: skip
                    if p.instances[1] > 0:
                        try:
                            require_fit(model, pool.instance, need[role])
                        except PlanInputError as exc:
                            raise PlanInputError(exc.reason, source=source, field=f"{role}.gpus_per_instance") from None
                    pools[key] = pool
                except PlanInputError as exc:
                    pools[key] = exc
            got = pools[key]
            if isinstance(got, PlanInputError):
                raise got
            return got

        out: list[PlanInputs] = []
        first_error: PlanInputError | None = None
        skipped: dict[str, None] = {}
        written = self.pools.get(Role.pd_decode, self.pools[Role.pd]).written
        decode_spec = self.scenario.decode
        for combo in combos:
            try:
                chosen = {role: pool_of(role, gpus) for role, gpus in zip(roles, combo)}
            except PlanInputError as exc:
                first_error = first_error or exc
                skipped[f"{exc.field}: {exc.reason}"] = None
                continue
            decoder = chosen.get(Role.pd_decode, chosen[Role.pd])
            if decoder.gpus_per_instance not in decodes:
                decodes[decoder.gpus_per_instance] = _decode(
                    decode_spec, model, decoder, written, context, source, basis, base, measured=self.measured
                )
            decode, decode_notes = decodes[decoder.gpus_per_instance]
            pool_notes = [n for pool in chosen.values() for n in pool.notes]
            out.append(self._assemble(chosen, decode, list(self.notes) + pool_notes + decode_notes))
        if not out:
            assert first_error is not None  # combos is never empty (each pool has a chip count), so one failed
            raise first_error
        if skipped:
            left_out = tuple(f"chips per instance left out, {reason}" for reason in skipped)
            out = [replace(inputs, notes=inputs.notes + left_out) for inputs in out]
        return out

    def _assemble(self, chosen: dict[Role, Pool], decode: Decode, notes: list[str]) -> PlanInputs:
        scenario, source = self.scenario, self.source
        slo = scenario.slo
        link = link_of(scenario.link)
        gpus = scenario.budgets.gpus if self.gpu_budget is None else self.gpu_budget
        (f_lo, f_hi), (pd_lo, pd_hi) = self.pools[Role.prfaas].instances, self.pools[Role.pd].instances
        d_lo, d_hi = self.pools[Role.pd_decode].instances if Role.pd_decode in self.pools else (None, None)
        budgets = _budgets(gpus, {pool.hardware_name for pool in chosen.values()}, source)
        inputs = PlanInputs(
            name=scenario.name,
            source=source,
            model=self.model,
            prfaas=chosen[Role.prfaas],
            pd=chosen[Role.pd],
            link=link if self.link_gbps is None else link.with_bandwidth_gbps(self.link_gbps),
            workload=self.workload,
            decode=decode,
            limits=Limits(f_lo, f_hi, pd_lo, pd_hi, budgets, scenario.budgets.usd_per_hour, d_lo, d_hi),
            objective=Objective(scenario.objective.type, scenario.objective.target_rate_rps),
            slo=None if slo is None else Slo(slo.ttft_p90_s, slo.ttft_p99_s, slo.tpot_ms),
            latency=LatencySettings(scenario.latency.operating_load, scenario.latency.arrival_cv**2),
            optimiser=OptimiserSettings(scenario.optimiser.method, scenario.optimiser.coarse_thresholds),
            notes=tuple(notes),
            pd_decode=chosen.get(Role.pd_decode),
        )
        return replace(inputs, notes=inputs.notes + cache_memory_notes(scenario.workload, inputs))


def one_site(scenario: Scenario, source: str | None = None, basis: Basis = Basis.as_given) -> OneSite:
    """A one-site scenario resolved up to its chips per instance (``OneSite``); errors name ``source``."""
    base = _base(source)
    written = {Role.prfaas: scenario.prfaas, Role.pd: scenario.pd, Role.pd_decode: scenario.pd_decode}
    specs = {role: spec for role, spec in written.items() if spec is not None}
    model, notes = _model(scenario.model, scenario.precision, [(str(r), s) for r, s in specs.items()], base, source)
    workload, workload_notes = _workload(scenario.workload, model, source)
    context = _decode_context(scenario.decode, model, workload, source)
    pools = {
        role: WrittenPool(spec, _hardware(role, spec.hardware, base, source), spec.hardware, spec.count_range)
        for role, spec in specs.items()
    }
    return OneSite(scenario, source, basis, scenario.model, model, workload, context, pools, tuple(notes + workload_notes))


def _written(base: OneSite, option: CompareOption) -> dict:
    """The identity fields that ``option`` replaces on ``base``, as it writes them."""
    from ..profiles.scenario_set import NO_DECODE_POOL

    out: dict = {} if option.model is None else {"model": option.model}
    if option.link_gbps is not None:
        out["link_gbps"] = float(option.link_gbps)
    folder, new_decode = _base(base.source), Role.pd_decode not in base.pools or option.pd_decode == NO_DECODE_POOL
    if option.pd_decode is not None and new_decode:  # auto chips, or none
        out |= {"pd_decode_hardware": None if option.pd_decode == NO_DECODE_POOL else option.pd_decode}
        out |= {"pd_decode_gpus_per_instance": None}
    for role, ref in ((Role.prfaas, option.prfaas), (Role.pd, option.pd), (Role.pd_decode, option.pd_decode)):
        if ref is not None and role in base.pools and not same_hardware(ref, base.pools[role].written, folder):
            out[f"{role}_hardware"] = None if ref == NO_DECODE_POOL else ref
    return out


def moved_note(where: str, spec: ClusterSpec, ref: str, hardware: HardwareProfile) -> str | None:
    """The note of a pool (``spec``, at ``where``) moved onto ``hardware`` (``ref``): its layout and
    cost, which belonged to the old hardware, dropped, and what the new hardware is priced at (its
    profile's example rental, or that it has none); None when it had neither."""
    dropped = [what for what, present in (("layout", spec.parallel is not None), ("cost", spec.cost != CostSpec())) if present]
    if not dropped:
        return None
    price = hardware.price_usd_per_gpu_hour
    priced = (
        ""
        if "cost" not in dropped
        else f", and {ref} has no price (no price_usd_per_gpu_hour in its profile)"
        if price is None
        else f" (priced at its profile's example rental, ${price:,.2f} per GPU-hour)"
    )
    return f"{where} on {ref}: the {', '.join(dropped)} of {spec.hardware} dropped{priced}"


def _base(source: str | None) -> Path | None:
    """The folder relative profile paths are taken from: the scenario file's."""
    return Path(source).resolve().parent if source else None


def _model(
    ref: str, precision: PrecisionSpec | None, pools: Sequence[tuple[str, ClusterSpec]], base: Path | None, source: str | None
) -> tuple[ModelProfile, list[str]]:
    """The model at the file's precision, and the note of a declared parameter count that the
    profile's layers do not add up to (warned too)."""
    try:
        model = resolve_model(_ref(ref, base, source, "model"))
    except PlanInputError as exc:
        raise PlanInputError(exc.reason, source=exc.source or source, field=exc.field or "model") from None
    model = _precision_applied(precision, pools, model, source)
    mismatch = declared_params_mismatch(model)
    if mismatch:
        warn(mismatch)
    return model, [mismatch] if mismatch else []


def link_of(spec: LinkSpec) -> Link:
    """A link in SI units: decimal Gbps -> bytes/s, ms -> s; its TCP transport where the file
    gives ``congestion_control`` (``timing.transport``'s defaults for the fields it leaves out)."""
    return Link(
        gbps_to_bytes_per_s(spec.bandwidth_gbps),
        spec.usable_fraction,
        spec.rtt_ms / 1000.0,
        LinkCost(spec.usd_per_gbps_month, spec.usd_per_gb_egress),
        _transport(spec),
    )


def _transport(spec: LinkSpec) -> Transport | None:
    if spec.congestion_control is None:
        return None
    assert spec.loss_rate is not None  # LinkSpec refuses congestion_control without it
    given = {
        name: value
        for name in ("mss_bytes", "window_bytes", "connections_per_transfer")
        if (value := getattr(spec, name)) is not None
    }
    return Transport(spec.congestion_control, spec.loss_rate, **given)


def _workload(spec: WorkloadSpec, model: ModelProfile, source: str | None) -> tuple[Workload, list[str]]:
    """The length distributions (and caches) of a workload spec, within the model's context, and
    the notes of mixture weights read as relative."""
    given = [name for name in ("input", "output") if getattr(spec, name) is not None]
    notes = [n for name in given for n in mixture_weight_notes(getattr(spec, name), f"workload.{name}")]
    workload = _distributions(spec, source, model)
    longest = int(workload.full_input_dist.lengths_tokens[-1])
    if longest > model.max_context_tokens:
        raise PlanInputError(
            f"inputs reach {longest:,} tokens, beyond {model.name}'s context of {model.max_context_tokens:,}",
            source=source,
            field="workload.input",
        )
    return workload, notes


def _distributions(spec: WorkloadSpec, source: str | None, model: ModelProfile) -> Workload:
    cc = spec.cluster_caches
    if cc is not None and cc.from_trace is not None:
        return _trace_caches(spec, cc, source, model)
    assert spec.input is not None  # the schema requires it without from_trace
    joint = _trace_joint(spec, source)
    if joint is not None:
        return joint
    full_input = build_distribution(spec.input, source, "workload.input")
    uncached = full_input
    if spec.prefix_cache is not None:
        try:
            uncached = with_prefix_cache(full_input, spec.prefix_cache.hit_fractions, spec.prefix_cache.probs)
        except PlanInputError as exc:
            raise exc.with_field("workload.prefix_cache").with_source(source) from None
    output = build_distribution(_output_spec(spec), source, "workload.output", role="output")
    if spec.cluster_caches is None:
        return Workload(uncached, full_input, output)
    cc = spec.cluster_caches
    pd_hits, prfaas_hits = (
        HitDistribution.none() if c is None else HitDistribution.of(c.hit_fractions, c.probs) for c in (cc.pd, cc.prfaas)
    )
    caches = ClusterCaches(full_input, pd_hits, prfaas_hits, cc.regime)
    try:
        workload = Workload(uncached, full_input, output, caches)
        return workload.with_cache_regime(CacheRegime.scarce if cc.regime == CacheRegime.auto else cc.regime)
    except PlanInputError as exc:
        raise exc.with_field(exc.field or "workload.cluster_caches").with_source(source) from None


def _output_spec(spec: WorkloadSpec):
    """``workload.output``; where it is not given and the input is a request trace, that trace's outputs."""
    given = "output" in spec.model_fields_set
    if given or not isinstance(spec.input, TraceSpec) or spec.input.format is None:
        return spec.output
    return spec.input


def _trace_joint(spec: WorkloadSpec, source: str | None) -> Workload | None:
    """The workload of a request trace used jointly (``workload.joint``): the input is a trace with
    a format, the output that same trace (or not given), and no prefix-cache distribution is given
    (a trace's own cached prefix, where it has one, sets the routing length). None otherwise."""
    inp = spec.input
    if not isinstance(inp, TraceSpec) or inp.format is None or spec.prefix_cache is not None or spec.cluster_caches is not None:
        return None
    if _output_spec(spec) is not inp and (
        spec.output.type,
        getattr(spec.output, "path", None),
        getattr(spec.output, "format", None),
    ) != (
        inp.type,
        inp.path,
        inp.format,
    ):
        return None
    from ..workload.joint import joint_lengths
    from ..workload.trace_cache import spec_trace, trace_path

    path = trace_path(inp.path, source)
    if not path.is_file():  # named from the scenario, as every other missing file is
        raise PlanInputError(f"no trace file {shorten(str(path), 80)}", source=source, field="workload.input.path")
    trace = spec_trace(path, inp.format)  # its errors name the trace file and line
    j = joint_lengths(trace)
    return Workload(
        j.input_dist,
        j.full_input_dist,
        j.output_dist,
        output_by_input=j.output_by_input,
        decode_context_tokens=j.decode_context_tokens,
        trace=trace,
    )


def _trace_caches(spec: WorkloadSpec, cc: ClusterCachesSpec, source: str | None, model: ModelProfile) -> Workload:
    """The workload of ``cluster_caches.from_trace``: the trace's input lengths, each request's
    cached prefix in each cluster (``workload.trace_caches``); without ``workload.output``, the
    trace's own outputs and the decode context of its requests (``workload.joint``)."""
    from ..workload.joint import joint_lengths
    from ..workload.trace_cache import spec_trace, trace_path
    from ..workload.trace_caches import caches_from_trace

    given = "output" in spec.model_fields_set
    output = build_distribution(spec.output, source, "workload.output") if given else None
    try:
        assert cc.from_trace is not None  # the caller's condition
        trace = spec_trace(trace_path(cc.from_trace.path, source), TraceFormat.mooncake)
        caches = caches_from_trace(cc.from_trace, trace, KvModel.of(model), cc.regime)
        joint = None if given else joint_lengths(trace)  # the output jointly: its decode context
        output = output if joint is None else joint.output_dist
        assert output is not None
        context = None if joint is None else joint.decode_context_tokens
        workload = Workload(caches.full_input, caches.full_input, output, caches, decode_context_tokens=context, trace=trace)
        return workload.with_cache_regime(CacheRegime.scarce if cc.regime == CacheRegime.auto else cc.regime)
    except PlanInputError as exc:  # a trace's error names its line; the model's, the cache spec
        raise (exc if exc.field else exc.with_field("workload.cluster_caches.from_trace")).with_source(source) from None


def _decode_context(dec: DecodeSpec, model: ModelProfile, workload: Workload, source: str | None) -> int:
    """Context per decoding request: given, or the mean full input + half the mean output
    (decode holds the whole context, cached prefix included), within the model's context."""
    given = dec.context_tokens
    if given is not None and given > model.max_context_tokens:
        raise PlanInputError(
            f"{given} tokens exceeds {model.name}'s context of {model.max_context_tokens}",
            source=source,
            field="decode.context_tokens",
        )
    joint = workload.decode_context_tokens  # a trace's output-weighted context (workload.joint)
    default = int(round(workload.full_input_dist.mean_tokens() + workload.output_mean_tokens / 2 if joint is None else joint))
    return given or min(default, model.max_context_tokens)


def _decode(
    dec: DecodeSpec,
    model: ModelProfile,
    pd: Pool,
    written: str,
    context: int,
    source: str | None,
    basis: Basis = Basis.as_given,
    base: Path | None = None,
    measured: bool = True,
) -> tuple[Decode, list[str]]:
    """What one instance of the decoding pool (``pd``: the PD pool, or the decode-only pool, whose
    hardware the scenario names ``written``) sustains, on ``basis`` (``study.basis``); notes.
    ``measured`` False: the scenario's tokens/s are of another model (a what-if's) and not used."""
    rate, notes = measured_decode_rate(
        dec.tokens_per_s_per_instance if measured else None,
        dec.tokens_per_s_hardware,
        written,
        pd.gpus_per_instance,
        dec.tokens_per_s_gpus,
        base,
    )
    if rate is not None and basis == Basis.as_given:
        return Decode(context, dec.tpot_ms, dec.max_batch, rate, DecodeSource.scenario, None), notes
    try:
        capacity = decode_capacity(model, pd.instance, context, tpot_ms=dec.tpot_ms, max_batch=dec.max_batch)
    except PlanInputError as exc:
        raise PlanInputError(exc.reason, source=source, field=f"decode.{exc.field}" if exc.field else "decode") from None
    used = decode_source(rate is not None, capacity.source, basis)
    return Decode(context, dec.tpot_ms, dec.max_batch, capacity.tokens_per_s if rate is None else rate, used, capacity), notes


def _budgets(gpus: dict[str, int], names: set[str], source: str | None) -> dict[str, int]:
    """The GPU budgets by resolved hardware name (``study.model.gpu_budgets``)."""
    try:
        return gpu_budgets(gpus, names)
    except PlanInputError as exc:
        raise exc.with_source(source) from None


def one_site_cases(scenario: Scenario, inputs: PlanInputs, source: str | None = None) -> list[tuple]:
    """(name, weight, inputs, target rate) of each case of a one-site ``robust:`` section: the
    resolved ``inputs`` with the case's workload (its decode context and rate too; every pool must
    hold its longest request) and link bandwidth, and the target rate of ``min_cost`` (the case's,
    else the objective's). What-ifs of the resolved inputs, not copies of the file."""
    spec = scenario.robust
    if spec is None:
        raise PlanInputError(
            "section missing: the cases to plan for (the built-in scenario robust-three-mixes has one)", field="robust"
        )
    out = []
    for k, case in enumerate(spec.cases):
        variant = inputs
        if case.workload is not None:
            variant = _case_workload(scenario, inputs, case.workload, source, f"robust.cases[{k}].workload")
        if case.link_gbps is not None:
            variant = variant.with_link_gbps(case.link_gbps)
        target = case.target_rate_rps if case.target_rate_rps is not None else scenario.objective.target_rate_rps
        out.append((case.name, case.weight, variant, target))
    return out


def _case_workload(scenario: Scenario, inputs: PlanInputs, spec: WorkloadSpec, source: str | None, where: str) -> PlanInputs:
    """``inputs`` under another workload: its distributions, the decode context and rate of the
    decoding pool, and a check that every pool holds its longest request."""
    workload, _ = _workload(spec, inputs.model, source)
    context = _decode_context(scenario.decode, inputs.model, workload, source)
    longest = int(workload.full_input_dist.lengths_tokens[-1])
    needs: list[tuple[Pool, int, int | None]] = [(inputs.prfaas, longest, inputs.limits.prfaas_max)]
    needs.append((inputs.pd, longest if inputs.pd_decode is not None else max(context, longest), inputs.limits.pd_max))
    if inputs.pd_decode is not None:
        needs.append((inputs.pd_decode, max(context, longest), inputs.limits.decode_max))
    for pool, need, most in needs:
        if most:
            _fits(inputs.model, pool, need, source, where)
    written = (scenario.pd_decode or scenario.pd).hardware
    decode, _ = _decode(scenario.decode, inputs.model, inputs.decode_pool, written, context, source, base=_base(source))
    return replace(inputs, workload=workload, decode=decode)


def day_windows(scenario: Scenario) -> tuple[list[tuple[str, float, float, float]], float, int | None]:
    """((name, hours, rate, input scale) per window, conversion seconds, switch limit) of a one-site ``day:``."""
    day = scenario.day
    if day is None:
        raise PlanInputError(
            "section missing: the windows of traffic to schedule (the built-in scenario day-rebalance has one)", field="day"
        )
    windows = []
    for k, w in enumerate(day.windows):
        assert w.rate_rps is not None  # a one-site window's rate is required (Scenario's validator)
        windows.append((w.name or f"w{k}", w.hours, w.rate_rps, w.input_scale))
    return windows, day.conversion_s, day.max_switches_per_window


def validate_scenario(data: object, source: str) -> Scenario:
    """Check a parsed scenario file completely (schema, references, workload, fit)."""
    scenario = load_scenario(data, source)
    try:
        build_variants(scenario, source)
        check_references(scenario, source)
    except PlanInputError as exc:
        raise exc.with_source(source) from None
    return scenario


def check_references(scenario: Scenario | SitesScenario, source: str | None, options=()) -> None:
    """Every hardware and model that the ``compare:`` section or ``options`` name resolves
    (a path relative to the scenario's folder), each once; an error names the first that does not."""
    from ..profiles.scenario_set import NO_DECODE_POOL

    base, spec = _base(source), scenario.compare
    for name, resolver in (
        ("prfaas", resolve_hardware),
        ("pd", resolve_hardware),
        ("pd_decode", resolve_hardware),
        ("model", resolve_model),
    ):
        refs = [getattr(o, name) for o in options] + (list(getattr(spec, name)) if spec is not None else [])
        for ref in dict.fromkeys(r for r in refs if r is not None and r != NO_DECODE_POOL):
            try:
                resolver(_ref(ref, base, source, f"compare.{name}"))
            except PlanInputError as exc:
                raise PlanInputError(exc.reason, source=source, field=f"compare.{name}") from None


# ---------------------------------------------------------------------------------------
# A multi-site file


def resolve_sites(
    spec: SitesScenario,
    source: str | None = None,
    hardware: dict[str, str] | None = None,
    model_ref: str | None = None,
    said: list[str] | None = None,
) -> Study:
    """A multi-site file as a ``Study``: each PrfaaS site's pool, each PD site's pool, workload
    and decode rate, and each link, resolved once; the windows of its day (one steady window
    without one). Errors name the site (``pd_sites.<name>.<field>``).

    What-ifs, resolved as the file's own parts are: ``hardware`` moves every site of a kind
    (``prfaas_sites``, ``pd_sites``) onto a hardware reference (``OneSite.with_hardware``: its
    layout and cost dropped, its counts kept); ``model_ref`` another model, whose decode rate is
    each site's roofline (the file's tokens/s were measured on its own). ``said`` collects what
    they replaced or dropped, in words."""
    base, hardware, said = _base(source), hardware or {}, [] if said is None else said
    refs: dict[str, tuple[str, HardwareProfile, bool]] = {}  # field path -> (reference, profile, moved)
    for kind in ("prfaas_sites", "pd_sites"):
        for site in getattr(spec, kind):
            where, ref = f"{kind}.{site.name}", hardware.get(kind)
            if ref is None or same_hardware(ref, site.hardware, base):
                refs[where] = (site.hardware, _hardware(where, site.hardware, base, source), False)
                continue
            refs[where] = (ref, _hardware(where, ref, base, source), True)
            note = moved_note(where, site, ref, refs[where][1])
            said.extend([note] if note else [])
    measured = model_ref is None or model_ref == spec.model
    if not measured and spec.decode.tokens_per_s_per_instance is not None:
        said.append(f"the decode tokens/s measured on {spec.model} dropped: each site's roofline is used")
    pool_specs = [(f"prfaas_sites.{s.name}", s) for s in spec.prfaas_sites] + [(f"pd_sites.{s.name}", s) for s in spec.pd_sites]
    model, notes = _model(model_ref or spec.model, spec.precision, pool_specs, base, source)
    workloads = {}
    for site in spec.pd_sites:
        workloads[site.name], workload_notes = _workload(site.workload or spec.workload, model, source)
        notes += workload_notes
    longest = max(int(w.full_input_dist.lengths_tokens[-1]) for w in workloads.values())
    prfaas_sites = []
    for factory in spec.prfaas_sites:
        where = f"prfaas_sites.{factory.name}"
        pool = _fitted(Role.prfaas, factory, model, refs[where], longest, source, base, where)
        notes += pool.notes
        prfaas_sites.append(PrfaasSite(factory.name, pool, factory.count_range))
    pd_sites = []
    for site in spec.pd_sites:
        where, workload = f"pd_sites.{site.name}", workloads[site.name]
        context = _decode_context(spec.decode, model, workload, source)
        need = max(context, int(workload.full_input_dist.lengths_tokens[-1]))
        pool = _fitted(Role.pd, site, model, refs[where], need, source, base, where)
        written = refs[where][0]
        decode, decode_notes = _decode(
            _measured_on(spec.decode, written, site.gpus_per_instance),
            model,
            pool,
            written,
            context,
            source,
            base=base,
            measured=measured,
        )
        notes += [*pool.notes, *decode_notes]
        pd_sites.append(PdSite(site.name, pool, None, workload, decode, site.count_range, None, site.rate_rps))
    links = {(lk.prfaas, lk.pd): link_of(lk) for lk in spec.links}
    used = {s.pool.hardware_name for s in prfaas_sites} | {s.pool.hardware_name for s in pd_sites}
    budgets = _budgets(spec.budgets.gpus, used, source)  # 'H200' is h200, as for one site
    cases = (
        tuple(_case(spec, k, model, pd_sites, prfaas_sites, source, base, refs, measured) for k in range(len(spec.robust.cases)))
        if spec.robust
        else ()
    )
    base_rates = {s.name: s.rate_rps for s in spec.pd_sites}
    day = spec.day
    windows = (
        (Window("steady", 24.0, base_rates),)
        if day is None
        else tuple(Window(w.name or f"w{k}", w.hours, {**base_rates, **w.rates}) for k, w in enumerate(day.windows))
    )
    return Study(
        name=spec.name,
        source=source,
        model=model,
        prfaas_sites=tuple(prfaas_sites),
        pd_sites=tuple(pd_sites),
        links=links,
        windows=windows,
        gpu_budget=budgets,
        usd_per_hour=spec.budgets.usd_per_hour,
        objective=spec.objective.type,
        conversion_s=0.0 if day is None else day.conversion_s,
        max_switches=None if day is None else day.max_switches_per_window,
        optimiser=OptimiserSettings(spec.optimiser.method, spec.optimiser.coarse_thresholds),
        notes=tuple(dict.fromkeys(notes)),
        cases=cases,
        robust=spec.robust.objective if spec.robust else None,
    )


def _case(
    spec: SitesScenario,
    k: int,
    model: ModelProfile,
    sites: list[PdSite],
    factories: list[PrfaasSite],
    source,
    base,
    refs: dict[str, tuple[str, HardwareProfile, bool]],
    measured: bool,
) -> Case:
    """Robust case ``k`` of a multi-site file: each PD site at the case's rate, under its workload
    (a new workload: its decode context and rate too, and every pool must still hold its longest
    request), and the bandwidths of the links it changes. ``refs``, ``measured``: the what-ifs of
    ``resolve_sites``."""
    assert spec.robust is not None  # resolve_sites makes cases only of a file with a robust: section
    case, where = spec.robust.cases[k], f"robust.cases[{k}].workload"
    out = []
    workload = None if case.workload is None else _workload(case.workload, model, source)[0]
    for site in sites:
        demand = case.rates.get(site.name, site.demand_rps)
        if workload is None:
            out.append(replace(site, demand_rps=demand))
            continue
        context = _decode_context(spec.decode, model, workload, source)
        _fits(model, site.pool, max(context, int(workload.full_input_dist.lengths_tokens[-1])), source, where)
        chips = next(s for s in spec.pd_sites if s.name == site.name).gpus_per_instance
        written = refs[f"pd_sites.{site.name}"][0]
        decode, _ = _decode(
            _measured_on(spec.decode, written, chips), model, site.pool, written, context, source, base=base, measured=measured
        )
        out.append(replace(site, workload=workload, decode=decode, demand_rps=demand))
    if workload is not None:
        for factory in factories:
            if factory.instances[1] > 0:
                _fits(model, factory.pool, int(workload.full_input_dist.lengths_tokens[-1]), source, where)
    return Case(case.name, case.weight, tuple(out), {(lk.prfaas, lk.pd): lk.bandwidth_gbps for lk in case.links})


def _fits(model: ModelProfile, pool: Pool, need_tokens: int, source: str | None, field: str) -> None:
    """``pool``'s instance holds the model and one request of ``need_tokens`` (else an error naming ``field``)."""
    try:
        require_fit(model, pool.instance, need_tokens)
    except PlanInputError as exc:
        raise PlanInputError(f"{pool.hardware_name}: {exc.reason}", source=source, field=field) from None


def _measured_on(decode: DecodeSpec, hardware: str, gpus_per_instance) -> DecodeSpec:
    """A measured decode rate belongs, unless the file says otherwise, to the site's instance
    (``gpus_per_instance`` x ``hardware``, as written)."""
    if decode.tokens_per_s_per_instance is None:
        return decode
    written = {"hardware": hardware, "gpus_per_instance": gpus_per_instance}
    return decode.model_copy(
        update=measured_instance_defaults(decode.model_dump(), written, "tokens_per_s_hardware", "tokens_per_s_gpus")
    )


def _fitted(
    role: Role,
    spec: ClusterSpec,
    model: ModelProfile,
    on: tuple[str, HardwareProfile, bool],
    need_tokens: int,
    source: str | None,
    base: Path | None,
    where: str,
) -> Pool:
    """A pool of one chip count that holds the model and a ``need_tokens`` request, ``on`` (the
    hardware's reference and profile, and whether a what-if moved it there: ``_pool``)."""
    written, hardware, moved = on
    gpus = chip_options(where, spec, model, hardware, need_tokens, source)[0]
    pool = _pool(role, spec, model, hardware, gpus, (gpus,), source, base=base, where=where, written=written, moved=moved)
    if spec.count_range[1] > 0:
        try:
            require_fit(model, pool.instance, need_tokens)
        except PlanInputError as exc:
            raise PlanInputError(exc.reason, source=source, field=f"{where}.gpus_per_instance") from None
    return pool


# ---------------------------------------------------------------------------------------
# A scenario set (``prfaas-plan compare``): the scenario resolved once, each option its what-ifs


def resolved_base(scenarios: ScenarioSet) -> OneSite | Study | None:
    """The set's scenario resolved as written, once for every option: a ``OneSite``, or a
    multi-site file's ``Study`` (None when it does not resolve: each option then resolves its own
    what-ifs, and says why it cannot)."""
    from ..profiles.sites import SitesScenario  # where used: plan does not load the multi-site schema

    spec = scenarios.scenario
    if not isinstance(spec, SitesScenario):
        return one_site(spec, scenarios.source, scenarios.basis)
    try:
        return resolve_sites(spec, scenarios.source)
    except PlanInputError:
        return None


def sites_option(scenarios: ScenarioSet, option: CompareOption, base: Study | None = None) -> tuple[Study, list[str]]:
    """A multi-site file with an option's what-ifs, and what they replaced in words: the hardware of
    every PrfaaS site (``prfaas``) or every PD site (``pd``) and the model resolved as the file's own
    (``resolve_sites``; ``base``, the file resolved as written, when the option replaces neither),
    every link at the option's bandwidth (``Study.with_links_gbps``)."""
    from ..profiles.sites import SitesScenario

    spec = scenarios.scenario
    assert isinstance(spec, SitesScenario)  # a one-site scenario's options are OneSite.with_option
    if option.pd_decode is not None:
        raise PlanInputError("a multi-site file has no decode-only pools", field="compare.pd_decode")
    said: list[str] = []
    hardware = {kind: ref for kind, ref in (("prfaas_sites", option.prfaas), ("pd_sites", option.pd)) if ref is not None}
    study = base if base is not None and not hardware and option.model is None else None
    study = study or resolve_sites(spec, scenarios.source, hardware, option.model, said)
    return (study if option.link_gbps is None else study.with_links_gbps(option.link_gbps)), said


def sites_as_written(scenarios: ScenarioSet, option: CompareOption) -> dict:
    """The identity of a multi-site file's option as written (``sites_identity``'s columns), the
    option's references in place of those it replaces: for options that could not be planned."""
    from ..profiles.sites import SitesScenario

    spec, folder = scenarios.scenario, _base(scenarios.source)
    assert isinstance(spec, SitesScenario)

    def hardware(site: ClusterSpec, ref: str | None) -> str:
        return ref if ref is not None and not same_hardware(ref, site.hardware, folder) else site.hardware

    gbps = {
        f"{lk.prfaas}-{lk.pd}": float(lk.bandwidth_gbps if option.link_gbps is None else option.link_gbps) for lk in spec.links
    }
    return {
        "scenario": spec.name,
        "model": option.model or spec.model,
        "prfaas_hardware": joined({s.name: hardware(s, option.prfaas) for s in spec.prfaas_sites}),
        "prfaas_gpus_per_instance": joined({s.name: s.gpus_per_instance for s in spec.prfaas_sites}),
        "pd_hardware": joined({s.name: hardware(s, option.pd) for s in spec.pd_sites}),
        "pd_gpus_per_instance": joined({s.name: s.gpus_per_instance for s in spec.pd_sites}),
        "pd_decode_hardware": None,
        "pd_decode_gpus_per_instance": None,
        "link_gbps": joined(gbps),
    }
