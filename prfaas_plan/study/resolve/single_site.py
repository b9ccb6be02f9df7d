"""A one-site scenario, resolved: ``OneSite`` (``one_site``: before chips per instance are chosen, with its
what-ifs), ``PlanInputs`` (``build_inputs``, ``build_variants``), its ``robust:`` cases, day windows, and
the checks of a scenario file's references.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ...choices import Basis, Role
from ...errors import PlanInputError
from ...profiles.hardware import HardwareProfile
from ...profiles.model import ModelProfile
from ...profiles.registry import hardware_identity, resolve_hardware, resolve_model, same_hardware, same_model
from ...profiles.scenario import AUTO, ClusterSpec, CountRange, Scenario, WorkloadSpec, load_scenario
from ...ranges import MAX_CHIP_COMBINATIONS
from ...timing.memory import require_fit
from ..cache_memory import cache_memory_notes
from ..model import Decode, LatencySettings, Limits, Objective, OptimiserSettings, PlanInputs, Pool, Slo, Workload
from .links import link_of
from .pools import (
    _base,
    _budgets,
    _fits,
    _hardware,
    _model,
    _pool,
    _ref,
    chip_options,
    dropped_measurements,
    measured_on,
    moved_note,
)
from .workload import _decode, _decode_context, _workload, case_workload

if TYPE_CHECKING:  # compare's options and multi-site schemas: imported where used (start-up)
    from ...profiles.sites import SitesScenario
    from .options import CompareOption


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

    @property
    def measured_on(self) -> str:
        """The model the scenario's measurements were taken on (``measurements_model``)."""
        return self.scenario.measurements_model or self.scenario.model

    def with_model(self, ref: str) -> OneSite:
        """The scenario with the model ``ref`` (unchanged when it is the scenario's reference): the
        model, workload and decode context resolved on it; the scenario's calibration points and
        decode tokens/s, unless measured on ``ref``, dropped (noted)."""
        if ref == self.model_ref:
            return self
        base = _base(self.source)
        specs = [(str(role), pool.spec) for role, pool in self.pools.items()]
        model, notes = _model(ref, self.scenario.precision, specs, base, self.source)
        workload, workload_notes = _workload(self.scenario.workload, model, self.source)
        measured = same_model(self.measured_on, ref, base)
        said = [] if measured else dropped_measurements(self.measured_on, None, specs, self.scenario.decode, "the decode pool's")
        return self._said(
            *said,
            model_ref=ref,
            model=model,
            workload=workload,
            context=_decode_context(self.scenario.decode, model, workload, self.source),
            notes=tuple(notes + workload_notes),
            measured=measured,
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
        """The what-ifs of a ``compare`` option (``study.resolve.options``): the PrfaaS pool's
        hardware, the PD pool's, the decode-only pool (``NO_DECODE_POOL``: none), the model, the
        link; then the GPU budgets of hardware no pool uses left out."""
        from .options import NO_DECODE_POOL

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
        """``PlanInputs.identity`` before chips are chosen (each pool's hardware profile by name, as
        ``PlanInputs.identity``; chips when a pool gives one count), for an option that could not be
        planned; with ``option``, whose what-ifs did not resolve, its references in place of those it
        replaces."""
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
            "prfaas_hardware": self.pools[Role.prfaas].hardware.name,
            "prfaas_gpus_per_instance": chips[Role.prfaas],
            "pd_hardware": self.pools[Role.pd].hardware.name,
            "pd_gpus_per_instance": chips[Role.pd],
            "pd_decode_hardware": None if dec is None else dec.hardware.name,
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
    taken_on = measured_on(scenario, base, source)
    measured = same_model(taken_on, scenario.model, base)
    named = [(str(role), spec) for role, spec in specs.items()]
    drop = [] if measured else dropped_measurements(taken_on, scenario.model, named, scenario.decode, "the decode pool's")
    notes = notes + workload_notes + drop
    return OneSite(scenario, source, basis, scenario.model, model, workload, context, pools, tuple(notes), measured=measured)


def _written(base: OneSite, option: CompareOption) -> dict:
    """The identity fields that ``option`` replaces on ``base``, as it writes them."""
    from .options import NO_DECODE_POOL

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
    decoding pool (the scenario's measured rate only where it is of this model, as ``one_site``
    decides; its notes named for the case), and a check that every pool holds its longest request."""
    workload, _ = _workload(case_workload(scenario.workload, spec), inputs.model, source)
    context = _decode_context(scenario.decode, inputs.model, workload, source)
    longest = int(workload.full_input_dist.lengths_tokens[-1])
    needs: list[tuple[Pool, int, int | None]] = [(inputs.prfaas, longest, inputs.limits.prfaas_max)]
    needs.append((inputs.pd, longest if inputs.pd_decode is not None else max(context, longest), inputs.limits.pd_max))
    if inputs.pd_decode is not None:
        needs.append((inputs.pd_decode, max(context, longest), inputs.limits.decode_max))
    for pool, need, most in needs:
        if most:
            _fits(inputs.model, pool, need, source, where)
    written, base = (scenario.pd_decode or scenario.pd).hardware, _base(source)
    measured = same_model(scenario.measurements_model or scenario.model, inputs.model.name, base)
    decode, notes = _decode(
        scenario.decode, inputs.model, inputs.decode_pool, written, context, source, base=base, measured=measured
    )
    said = tuple(f"{where.removesuffix('.workload')}: {n}" for n in notes if n not in inputs.notes)
    return replace(inputs, workload=workload, decode=decode, notes=inputs.notes + said)


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
    from .options import NO_DECODE_POOL

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
