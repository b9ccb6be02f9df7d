"""Typed library API: every CLI command goes through it, and a notebook can call it.

>>> from prfaas_plan import api
>>> rows = api.kv_rows("minimax-m2.5", "h200", gpus=8, lengths_tokens=[32768])
>>> round(rows[0].phi_kv_gbps)  # doctest: +SKIP
71

Model and hardware arguments accept a shipped name, a YAML path, or a loaded profile;
scenario arguments a shipped name or a YAML path. Every number is checked against its sane
range (``prfaas_plan.ranges``); bad input raises :class:`prfaas_plan.errors.PlanInputError`
naming the file and the field. Nothing here writes files or prints.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from contextlib import contextmanager
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

from .choices import (
    ArrivalProcess,
    Basis,
    CurveSource,
    DeploymentName,
    ObjectiveKind,
    PlanMode,
    PrefillCapacity,
    ProfileKind,
    SweepOver,
    choice_of,
)
from .errors import PlanInputError, warn
from .profiles.hardware import HardwareProfile
from .profiles.model import ModelProfile
from .profiles.registry import looks_like_path, resolve_hardware, resolve_model, shipped_names
from .ranges import (
    CHIPS_PER_INSTANCE,
    INSTANCES,
    LINK_GBPS,
    LOAD,
    MIN_CAPACITY_RPS,
    POINTS,
    RATE_POINTS,
    RATE_RPS,
    REQUESTS,
    check_simulated_requests,
)
from .timing.decode import DecodeCapacity, decode_capacity
from .timing.instance import Instance
from .timing.memory import require_fit
from .timing.prefill import KvReport, KvRow, MeasuredPrefill, RooflinePrefill, check_lengths, kv_table, prefill_curve

if TYPE_CHECKING:  # the results' types, imported where they are built (the CLI starts fast)
    from .planner.deployment import Deployment
    from .planner.latency import LatencyResult
    from .planner.optimizer import Solution
    from .planner.plan import OperatingPoint, PlanResult
    from .planner.route_table import RouteRow
    from .planner.throughput import ThresholdTable
    from .simulate.results import SimResult
    from .study.model import PlanInputs

DEFAULT_LENGTHS_TOKENS = (1024, 8192, 32768, 131072)


# ---------------------------------------------------------------------------------------
# Profiles


def model_of(ref: str | ModelProfile) -> ModelProfile:
    """A model profile from a shipped name, a YAML path or a profile (warns when its declared
    parameter count disagrees with its layer stack by more than 5%)."""
    from .accounting.params import declared_params_mismatch

    model = ref if isinstance(ref, ModelProfile) else resolve_model(ref)
    mismatch = declared_params_mismatch(model)
    if mismatch:
        warn(mismatch)
    return model


def hardware_of(ref: str | HardwareProfile) -> HardwareProfile:
    """A hardware profile from a shipped name, a YAML path or a profile; an unknown name is an
    error about the ``hardware`` parameter (a file's error names the file)."""
    if isinstance(ref, HardwareProfile):
        return ref
    try:
        return resolve_hardware(ref)
    except PlanInputError as exc:
        raise (exc if exc.source or exc.field else PlanInputError(exc.reason, field="hardware")) from None


def models() -> list[ModelProfile]:
    """Every shipped model profile."""
    return [resolve_model(name) for name in shipped_names("model_profiles")]


def hardware_profiles() -> list[HardwareProfile]:
    """Every shipped hardware profile."""
    return [resolve_hardware(name) for name in shipped_names("hardware_profiles")]


def validate_file(path: str):
    """Check a model, hardware or scenario file (a scenario's references and workload too);
    returns (kind, profile)."""
    from .profiles.hardware import load_hardware_profile
    from .profiles.model import load_model_profile
    from .profiles.registry import detect_profile_kind
    from .study.resolve import validate_scenario
    from .yamlio import load_yaml_file

    data = load_yaml_file(path)
    try:
        kind = detect_profile_kind(data)
    except PlanInputError as exc:
        raise exc.with_source(path) from None
    if kind == ProfileKind.scenario:
        scenario = validate_scenario(data, path)
        _validate_sections(scenario, path)
        return kind, scenario
    if kind == ProfileKind.sites:
        from .profiles.sites import load_sites_scenario
        from .study.resolve import resolve_sites

        spec = load_sites_scenario(data, path)
        resolve_sites(spec, path)
        return kind, spec
    if kind == ProfileKind.model:
        return kind, model_of(load_model_profile(data, path))
    return kind, load_hardware_profile(data, path)


def _validate_sections(scenario, path: str) -> None:
    """Resolve what ``robust`` and ``schedule`` would (every case, every window), so that
    ``validate`` refuses what they would refuse."""
    try:
        if scenario.robust is not None:
            from .planner.robust import robust_inputs

            robust_inputs(scenario, path)
        if scenario.day is not None:
            from .planner.chips import choose
            from .planner.schedule import windows_of
            from .study.resolve import day_windows

            resolved = choose(scenario, path)
            windows_of(resolved, day_windows(scenario)[0])
    except PlanInputError as exc:
        raise exc.with_source(path) from None


def import_model(config_path: str, name: str | None = None) -> tuple[dict, ModelProfile]:
    """A model profile (mapping and validated profile) from a Hugging Face config.json.

    Without ``name``, the name says the model (``profiles.hf_import.imported_name``): from
    ``_name_or_path`` or the file's Hugging Face name, else the model_type, with the size the
    layer stack counts where the name says none (``kimi-k2-1t``), so two models differ."""
    from .accounting.params import count_params
    from .profiles.hf_import import imported_name, profile_from_hf_config
    from .profiles.model import load_model_profile
    from .yamlio import load_json_file

    source = str(config_path)
    config = load_json_file(config_path)
    data = profile_from_hf_config(config, name=name, source=source)
    profile = load_model_profile(data, source=source)
    if name is None:
        sized = imported_name(config, source, count_params(profile).total)
        if sized != profile.name:
            data = {**data, "name": sized}
            profile = load_model_profile(data, source=source)
    return data, profile


def profile_yaml(hardware: HardwareProfile, header: str = "") -> str:
    """A hardware profile as YAML text that loads back to the same profile."""
    from .timing.calibrate import hardware_to_yaml_dict
    from .yamlio import dump_yaml

    return header + dump_yaml(hardware_to_yaml_dict(hardware))


def calibrate(model, hardware, gpus: int | None, points, name: str | None = None, fit=None):
    """Fit a hardware profile's efficiencies to measured prefill latencies (``points``: a CSV
    path with ``length,prefill_s[,kv_bytes][,model][,gpus]`` or a list of
    ``timing.calibrate.CalibrationPoint``). Points that name a model or chip count are fitted
    jointly, one set per (model, gpus); ``model`` and ``gpus`` are the defaults for points
    that name none. ``fit``: the ``choices.FitParam`` names to fit (default matmul, attention,
    prefill_overhead_s). Returns a ``timing.calibrate.CalibrationResult``."""
    from .timing.calibrate import CalibrationSet, calibrate_sets, check_fit, read_points_csv

    if gpus is not None:
        CHIPS_PER_INSTANCE.check(gpus, "gpus")
    pts = read_points_csv(points) if isinstance(points, str) else list(points)
    try:
        check_fit(fit, len(pts))
        default = model_of(model) if model is not None else None
        named: dict[str, ModelProfile] = {}
        groups: dict[tuple[str, int], tuple[ModelProfile, list]] = {}
        for p in pts:
            where = p.where or "a point"
            if p.model and p.model not in named:
                named[p.model] = model_of(p.model)
            profile = named[p.model] if p.model else default
            if profile is None:
                raise PlanInputError(f"{where} names no model: give `model` or a 'model' column", field="model")
            size = p.gpus or gpus
            if size is None:
                raise PlanInputError(f"{where} names no chip count: give `gpus` or a 'gpus' column", field="gpus")
            groups.setdefault((profile.name, size), (profile, []))[1].append(p)
        sets = [CalibrationSet(profile, size, members) for (_, size), (profile, members) in groups.items()]
        return calibrate_sets(sets, hardware_of(hardware), name=name, fit=fit)
    except PlanInputError as exc:  # the points' file, unless the error is about a parameter
        parameter = exc.source is None and exc.field in ("fit", "points", "model", "gpus", "hardware")
        raise (exc.with_source(points) if isinstance(points, str) and not parameter else exc) from None


# ---------------------------------------------------------------------------------------
# One instance


def kv_rows(model, hardware, gpus: int = 8, lengths_tokens=None, source: str = CurveSource.auto, **serving) -> list[KvRow]:
    """S_kv, T_prefill and Phi_kv per length (see ``timing.prefill``)."""
    return kv_report(model, hardware, gpus, lengths_tokens, source, **serving).rows


def kv_report(
    model,
    hardware,
    gpus: int = 8,
    lengths_tokens=None,
    source: str = CurveSource.auto,
    *,
    parallel=None,
    precision=None,
    engine=None,
) -> KvReport:
    """S_kv, T_prefill and Phi_kv of a model on ``gpus`` chips at each length (default: 1K, 8K,
    32K and 128K tokens, those within the model's context, then the context itself where it is
    shorter than 128K). T_prefill is one request's, on the
    layout with the lowest TTFT unless ``parallel`` gives one (the paper's Phi_kv = S_kv / T_prefill)."""
    CHIPS_PER_INSTANCE.check(gpus, "gpus")
    m = precision_of(model_of(model), precision, engine)
    if lengths_tokens is None:
        top = min(m.max_context_tokens, max(DEFAULT_LENGTHS_TOKENS))
        lengths = [n for n in DEFAULT_LENGTHS_TOKENS if n < top] + [top]
    else:
        lengths = list(lengths_tokens)
        check_lengths(m, lengths, field="lengths_tokens")
    inst = instance_of(m, hardware, gpus, parallel, engine)
    require_fit(m, inst, max(lengths))
    curve = prefill_curve(m, inst, choice_of(CurveSource, source, "source"), PrefillCapacity.per_request)
    from .accounting.kv import KvModel

    assert isinstance(curve, (RooflinePrefill, MeasuredPrefill))  # the curves prefill_curve builds
    layout = (curve.roofline if isinstance(curve, MeasuredPrefill) else curve).layout
    return KvReport(m, inst, curve.source, KvModel.of(m), kv_table(curve, m, lengths), layout, curve.kv_source)


def decode(
    model,
    hardware,
    gpus: int = 8,
    context_tokens: int = 32768,
    tpot_ms: float | None = None,
    max_batch: int | None = None,
    source: str = CurveSource.auto,
    *,
    parallel=None,
    precision=None,
    engine=None,
    concurrency: int | None = None,
) -> DecodeCapacity:
    """Decode batch, step time and tokens/s of one instance (see ``timing.decode``)."""
    CHIPS_PER_INSTANCE.check(gpus, "gpus")
    m = precision_of(model_of(model), precision, engine)
    check_lengths(m, [context_tokens], field="context_tokens")
    inst = instance_of(m, hardware, gpus, parallel, engine)
    return decode_capacity(
        m,
        inst,
        context_tokens,
        tpot_ms=tpot_ms,
        max_batch=max_batch,
        source=choice_of(CurveSource, source, "source"),
        batch=concurrency,
    )


def instance_of(
    model: ModelProfile, hardware, gpus: int | None = None, parallel=None, engine=None, context_tokens: int = 1
) -> Instance:
    """An instance of ``gpus`` chips (None: the fewest that hold the model and one request at the
    context) with a layout (``tp=8`` or ``{ep: 32, dp_attention: 32}``; None: searched per job) and
    engine settings (``engine_spec_of``)."""
    from .timing.cost import Engine
    from .timing.layout import check_layout, parse_layout
    from .timing.memory import chips_needed

    hw = hardware_of(hardware)
    spec = engine_spec_of(engine)
    layout = None if parallel is None else parse_layout(parallel)
    if gpus is None:
        if layout is not None:
            gpus = layout.chips
        else:
            gpus, _ = chips_needed(model, Instance(hw, 1), context_tokens)
            if not gpus:
                raise PlanInputError(f"no layout of {hw.name} chips holds {model.name}", field="gpus")
    CHIPS_PER_INSTANCE.check(gpus, "gpus")
    if layout is not None:
        check_layout(model, layout, gpus)
    return Instance(hw, gpus, layout, Engine.of(spec))


def layout_of(text: str, field: str = "parallel"):
    """A layout (``timing.layout.Layout``) from its text (``tp=8,ep=8``), as a scenario's
    ``parallel``; an error names ``field``."""
    from .timing.layout import parse_layout

    return parse_layout(text, field=field)


def engine_spec_of(engine=None):
    """A ``profiles.serving.EngineSpec`` from itself, a mapping (``{"name": "sglang", "overlap": 0.5}``),
    an engine's name (``"sglang"``, ``choices.EngineName``) or None (generic, its defaults)."""
    from .profiles._base import validate_or_raise
    from .profiles.serving import EngineSpec

    if engine is None or isinstance(engine, EngineSpec):
        return engine
    try:
        return validate_or_raise(EngineSpec, {"name": engine} if isinstance(engine, str) else engine, None)
    except PlanInputError as exc:
        if exc.field != "name":
            raise
        raise PlanInputError(exc.reason, field="engine") from None


def precision_of(model: ModelProfile, precision=None, engine=None) -> ModelProfile:
    """The model with dtype overrides (a ``profiles.serving.PrecisionSpec`` or a mapping such as
    ``{"kv": "fp8"}``); with no KV dtype given, an FP8 checkpoint's KV is in the dtype ``engine``
    (``engine_spec_of``) picks for it (its profile's ``kv_dtype_fp8_checkpoint``; generic: the model's)."""
    from .profiles._base import validate_or_raise
    from .profiles.serving import PrecisionSpec
    from .timing.engines import engine_profile

    spec = engine_spec_of(engine)
    kv = None if spec is None else engine_profile(spec.name).defaults.kv_dtype_fp8_checkpoint
    if precision is None and kv is None:
        return model
    if precision is None:
        precision = PrecisionSpec()
    spec = precision if isinstance(precision, PrecisionSpec) else validate_or_raise(PrecisionSpec, precision, None)
    return spec.applied(model, kv)


def estimate(
    model,
    hardware,
    gpus: int | None = None,
    *,
    input_tokens: int = 1024,
    output_tokens: int = 1024,
    concurrency: int | None = None,
    parallel=None,
    precision=None,
    engine=None,
    tpot_ms: float | None = None,
    max_batch: int | None = None,
    requests: int | None = None,
    load_concurrency: int | None = None,
):
    """What a benchmark would publish for one instance (``timing.estimate``): TTFT, TPOT,
    prefill, decode and end-to-end tokens/s (``requests``: over an offline run of that many,
    ``timing.offline``), and the time budget of a prefill pass and a decode step
    (``load_concurrency``: a serving load's requests in flight beyond what memory holds, which
    wait for a place). Returns a ``timing.estimate.Estimate``."""
    from .timing.estimate import estimate as run

    m = precision_of(model_of(model), precision, engine)
    check_lengths(m, [input_tokens], field="input")
    inst = instance_of(m, hardware, gpus, parallel, engine, input_tokens + output_tokens)
    return run(m, inst, input_tokens, output_tokens, concurrency, tpot_ms, max_batch, requests, load_concurrency)


# ---------------------------------------------------------------------------------------
# Plans


@contextmanager
def scenario_errors(scenario: str, parameters: Collection[str] = ()):
    """Attach the scenario's file to planning errors that name no file, except those about one of
    ``parameters`` (the calling function's own: a value the caller gave, not a field of the file,
    which the caller names in its own words: the CLI by its option)."""
    try:
        yield
    except PlanInputError as exc:
        if exc.field is not None and exc.source is None and re.split(r"[./\[]", exc.field)[0] in parameters:
            raise
        raise exc.with_source(scenario) if looks_like_path(scenario) else exc from None


def inputs(scenario: str):
    """The resolved planning inputs of a scenario (``study.model.PlanInputs``)."""
    from .planner.chips import load_inputs

    with scenario_errors(scenario):
        return load_inputs(scenario)


def plan(scenario, mode: str = PlanMode.exact, with_marginals: bool = True):
    """Optimise a scenario (shipped name, YAML path or ``PlanInputs``); errors name the
    scenario file. Returns a :class:`prfaas_plan.planner.plan.PlanResult`."""
    from .planner.plan import plan as run_plan

    mode = choice_of(PlanMode, mode, "mode")
    resolved = scenario if not isinstance(scenario, str) else inputs(scenario)
    with scenario_errors(scenario if isinstance(scenario, str) else resolved.source or ""):
        return run_plan(resolved, mode, with_marginals=with_marginals)


def _count(value: float, field: str) -> int:
    """An instance count given as a number: whole, within ``INSTANCES``."""
    INSTANCES.check(value, field)
    if value != int(value):
        raise PlanInputError(f"an instance count is a whole number, got {value:g}", field=field)
    return int(value)


# what each sweep takes of its range parameters (the others are refused, not ignored)
SWEEP_PARAMETERS: dict[SweepOver, set[str]] = {
    SweepOver.bandwidth: {"start", "stop", "points"},
    SweepOver.instances: {"start", "stop", "points"},
    SweepOver.threshold: {"points"},
    SweepOver.np: set(),
    SweepOver.rate: {"points"},
}


def sweep(
    scenario: str,
    over: str,
    mode: str = PlanMode.exact,
    start: float | None = None,
    stop: float | None = None,
    points: int | None = None,
    progress=None,
) -> list[dict]:
    """Curves around the scenario's plan (see ``planner.sweep``); rows of dicts with units in the keys."""
    import numpy as np

    from .planner import sweep as sw
    from .planner.optimizer import optimise
    from .planner.throughput import threshold_table

    over, mode = choice_of(SweepOver, over, "over"), choice_of(PlanMode, mode, "mode")
    given = {"start": start, "stop": stop, "points": points}
    for name, value in given.items():  # in this order: the first refused one is named
        if name not in SWEEP_PARAMETERS[over] and value is not None:
            takes = ", ".join(f"`{p}`" for p in sorted(SWEEP_PARAMETERS[over])) or "none of `start`, `stop`, `points`"
            raise PlanInputError(f"a sweep over {over} takes {takes}", field=name)
    if points is not None:
        POINTS.check(points, "points")
    progress = progress or (lambda done, total: None)
    resolved = inputs(scenario)
    with scenario_errors(scenario, ("start", "stop", "points")):
        if over == SweepOver.rate:
            if points is not None:
                RATE_POINTS.check(points, "points")
            return sw.sweep_rate(plan(resolved, mode, with_marginals=False), points or 40, progress)
        table = threshold_table(resolved, mode)
        if over == SweepOver.instances:
            # default: twice the PrfaaS range's top, within the instances a pool may have
            default = min(max(resolved.limits.prfaas_max, 1) * 2, INSTANCES.hi)
            upto = _count(stop, "stop") if stop is not None else default
            first = 0 if start is None else _count(start, "start")
            if first > upto:
                raise PlanInputError(f"need `start` <= `stop`, got {first:g} and {upto:g}", field="start/stop")
            return sw.sweep_instances(resolved, table, int(upto), points, progress, first=int(first))
        sol = optimise(resolved, table, objective=ObjectiveKind.max_throughput)
        if over == SweepOver.threshold:
            return sw.sweep_threshold(resolved, table, sol, points)
        if over == SweepOver.np:
            return sw.sweep_np(resolved, table, sol)
        last = stop if stop is not None else resolved.link.usable_gbps
        LINK_GBPS.check(last, "stop")
        start = (1.0 if last >= 1.0 else last / 100) if start is None else LINK_GBPS.check(start, "start")
        if last < start:
            raise PlanInputError(f"need `start` <= `stop`, got {start:g} and {last:g}", field="start/stop")
        # one row a bandwidth: --from = --to (or --to 0) is a single point, not 200 copies of it
        return sw.sweep_bandwidth(resolved, table, sol, np.unique(np.linspace(start, last, points or 200)), progress)


def compare(
    scenario: str,
    *,
    prfaas=None,
    pd=None,
    pd_decode=None,
    model=None,
    link_gbps=None,
    mode: str = PlanMode.exact,
    jobs: int = 1,
    progress=None,
    basis: str | None = None,
    ray_address: str | None = None,
    executor=None,
):
    """Plan every combination of options under one scenario (``planner.compare``): lists of
    hardware for the PrfaaS, PD (or PD-P) and decode-only pools (``"none"``: no decode-only
    pool), of models and of link bandwidths (decimal Gbps); a list left out comes from the
    scenario's ``compare:`` section. Paths given here are taken from the working directory.
    ``basis`` (``choices.Basis``; default: the ``compare:`` section's, else ``model``) sizes every
    option alike (``study.basis``). Where the options are planned (``planner.executor``):
    ``jobs`` local processes, or the Ray cluster at ``ray_address`` (``"local"``, ``"auto"``,
    ``HOST:PORT`` or ``ray://HOST:PORT``; the optional ``[ray]`` extra; ``jobs`` then stays 1), or
    any ``planner.executor.Executor`` given as ``executor``; the rows are the same on each.
    ``progress(done, total)`` is called as options finish. Returns a
    ``planner.compare.Comparison``, ranked."""
    from pathlib import Path

    from .planner.compare import compare as run
    from .planner.executor import executor_for
    from .profiles.registry import resolve_scenario_file
    from .ranges import JOBS
    from .study.resolve import check_references
    from .study.resolve.options import CompareOption, scenario_set

    JOBS.check(jobs, "jobs")
    executor = executor or executor_for(jobs, ray_address)  # before reading the scenario: a missing Ray fails first
    basis = None if basis is None else choice_of(Basis, basis, "basis")
    for value in link_gbps or ():
        LINK_GBPS.check(value, "link_gbps")

    def absolute(refs):
        return None if not refs else [str(Path(r).resolve()) if looks_like_path(r) else r for r in refs]

    for refs, field, resolve in (
        (prfaas, "prfaas", hardware_of),
        (pd, "pd", hardware_of),
        (pd_decode, "pd_decode", hardware_of),
        (model, "model", model_of),
    ):
        for ref in refs or ():
            if field == "pd_decode" and ref == "none":
                continue
            try:
                resolve(ref)
            except PlanInputError as exc:  # a fault in a profile's file names its field there; else the parameter
                if exc.source is not None and exc.field is not None and looks_like_path(ref):
                    raise
                raise PlanInputError(exc.reason, source=exc.source, field=field, argument=True) from None
    with scenario_errors(scenario, ("basis", "mode")):
        if is_sites_file(scenario):
            path, spec = _sites_spec(scenario)
            if basis not in (None, Basis.as_given):
                raise PlanInputError("a multi-site file is planned as given (its measured curves and rates)", field="basis")
            basis = Basis.as_given
        else:
            spec, path = resolve_scenario_file(scenario)
        scenarios = scenario_set(
            spec,
            path,
            absolute(prfaas),
            absolute(pd),
            absolute(pd_decode),
            absolute(model),
            list(link_gbps) if link_gbps else None,
            basis,
        )
        if scenarios.multi_site and any(o.pd_decode is not None for o in scenarios.options):
            raise PlanInputError("a multi-site file has no decode-only pools", field="pd_decode", argument=True)
        if scenarios.options == (CompareOption(),):
            raise PlanInputError(
                "no options to compare: give `prfaas`, `pd`, `pd_decode`, `model` or `link_gbps`, "
                "or a compare: section in the scenario",
                field="compare",
                argument=True,  # about the call's parameters: the CLI names its options
            )
        check_references(spec, path, scenarios.options)
        return run(scenarios, choice_of(PlanMode, mode, "mode"), progress=progress, executor=executor)


def robust(scenario: str):
    """One set of instance counts for the cases of the scenario's ``robust:`` section
    (``planner.robust``). Returns a ``planner.robust.RobustPlan``."""
    from .planner.robust import robust_inputs, robust_plan
    from .profiles.registry import resolve_scenario_file

    with scenario_errors(scenario):
        spec, path = resolve_scenario_file(scenario)
    with scenario_errors(path):  # a shipped name's errors name its file too
        objective, cases = robust_inputs(spec, path)
        return robust_plan(cases, objective)


def is_sites_file(scenario: str) -> bool:
    """Whether a scenario reference (shipped name or path) is a multi-site file."""
    from .profiles.registry import detect_profile_kind, scenario_path
    from .yamlio import load_yaml_file

    with scenario_errors(scenario):
        data = load_yaml_file(scenario_path(scenario))
        return isinstance(data, dict) and detect_profile_kind(data) == ProfileKind.sites


def robust_sites(path: str):
    """One set of instance counts for the cases of a multi-site file's ``robust:`` section
    (``planner.sites.plan_robust_sites``). Returns (``planner.sites.RobustSitesPlan``, the study)."""
    from .planner.sites import plan_robust_sites
    from .study.resolve import resolve_sites

    path, spec = _sites_spec(path)
    if spec.robust is None:
        raise PlanInputError(
            "section missing: the cases to plan for (the built-in two-edges-robust has one)", source=path, field="robust"
        )
    try:
        study = resolve_sites(spec, path)
        return plan_robust_sites(study), study
    except PlanInputError as exc:
        raise exc.with_source(path) from None


def schedule(scenario: str):
    """The counts to buy for the scenario's ``day:`` and, per window, the PD-P / PD-D split and threshold
    (``planner.schedule``). Returns (``planner.schedule.DayPlan``, the windows)."""
    from .planner.schedule import choose_day
    from .profiles.registry import resolve_scenario_file
    from .study.resolve import build_variants, day_windows

    with scenario_errors(scenario):
        spec, path = resolve_scenario_file(scenario)
    with scenario_errors(path):  # a shipped name's errors name its file too
        specs, conversion_s, max_switches = day_windows(spec)
        return choose_day(build_variants(spec, path), specs, conversion_s, max_switches)


def simulate_day(scenario: str, requests: int = 4000, seed: int = 0):
    """Each window of the scenario's day simulated (discrete-event) twice at its rate: with the schedule's split and
    threshold, and with the best static plan's; each from empty queues (``planner.schedule``). Returns
    (day plan, [(window, schedule's SimResult, static's SimResult)])."""
    from .choices import DeploymentName
    from .planner.deployment import Deployment
    from .profiles.registry import resolve_scenario_file
    from .simulate import SimConfig
    from .simulate import simulate as run_sim
    from .study.model import decode_model

    REQUESTS.check(requests, "requests")
    with scenario_errors(scenario):
        spec, _ = resolve_scenario_file(scenario)
    if spec.day is not None:  # checked before the day is planned (without one, schedule() says so)
        n = len(spec.day.windows)
        check_simulated_requests(requests, 2 * n, "requests", f"{n} windows x 2 plans")
    day, windows = schedule(scenario)
    runs = []
    with scenario_errors(scenario, ("seed", "requests")):
        s_f, s_pd, _ = day.static_counts
        for window, plan_w, static_w in zip(windows, day.windows, day.static_windows):
            decode = decode_model(window.inputs)
            config = SimConfig(rate_rps=window.rate_rps, requests=requests, seed=seed)
            results = []
            for n_f, w in ((day.n_prfaas, plan_w), (s_f, static_w)):
                dep = Deployment(DeploymentName.prfaas_pd, w.threshold_tokens, n_f, w.n_p, w.n_d)
                results.append(run_sim(window.inputs, dep, decode, config))
            runs.append((window, *results))
    return day, runs


def study(path: str):
    """A multi-site scenario file resolved into a ``study.model.Study`` (sites, pools, links,
    windows and robust cases in SI units), planning nothing: the what-ifs (``Study.with_link``,
    ``window``, ``case``, ``with_limits``) and ``planner.sites.plan_sites`` take it."""
    from .study.resolve import resolve_sites

    path, spec = _sites_spec(path)
    try:
        return resolve_sites(spec, path)
    except PlanInputError as exc:
        raise exc.with_source(path) from None


def sites(path: str):
    """Plan a multi-site scenario file (``profiles.sites``, ``planner.sites``). Returns
    (``planner.sites.SitesPlan``, ``study.model.Study``)."""
    return _plan_sites(*_sites_spec(path))


def _sites_spec(path: str):
    """(the file, its ``profiles.sites.SitesScenario``)."""
    from .profiles.registry import scenario_path
    from .profiles.sites import load_sites_scenario
    from .yamlio import load_yaml_file

    path = scenario_path(path)
    data = load_yaml_file(path)
    if isinstance(data, dict) and "pd_sites" not in data and "prfaas_sites" not in data and "prfaas" in data:
        raise PlanInputError("a one-site scenario (prfaas, pd), not a multi-site one", source=path, form=ProfileKind.scenario)
    return path, load_sites_scenario(data, path)


def _plan_sites(path: str, spec):
    from .planner.sites import plan_sites
    from .study.resolve import resolve_sites

    try:
        study = resolve_sites(spec, path)
        return plan_sites(study), study
    except PlanInputError as exc:
        raise exc.with_source(path) from None


def simulate_sites(path: str, requests: int = 4000, load: float = 0.8, seed: int = 0):
    """Plan a multi-site scenario and simulate every window of the plan at ``load`` x the rate it
    serves per site (``simulate.sites``). Returns (plan, inputs, [[SiteSim per PD site] per window])."""
    from .simulate.sites import simulate_sites as run

    REQUESTS.check(requests, "requests")
    LOAD.check(load, "load")
    path, spec = _sites_spec(path)
    n_windows, n_sites = len(spec.day.windows) if spec.day else 1, len(spec.pd_sites)
    check_simulated_requests(requests, n_windows * n_sites, "requests", f"{n_windows} windows x {n_sites} PD sites")
    plan_, si = _plan_sites(path, spec)
    return plan_, si, [run(si, plan_, w, load, requests, seed) for w in range(len(plan_.windows))]


@dataclass(frozen=True)
class RouteTable:
    """A plan's routing table: the counts it is for and one row per available bandwidth."""

    inputs: PlanInputs
    point: OperatingPoint  # of the plan
    rows: list[RouteRow]  # ascending in bandwidth


def route_table(
    scenario: str, mode: str = PlanMode.exact, start: float | None = None, stop: float | None = None, points: int | None = None
) -> RouteTable:
    """The threshold a router should use at each available bandwidth, for the instance counts the
    scenario's plan buys (``planner.route_table``). Default grid: 0, and 32 bandwidths from 1% to
    twice the usable bandwidth, and the usable bandwidth; with ``start``/``stop`` (decimal Gbps),
    ``points`` evenly spaced ones (default 50) and the usable bandwidth when it lies between."""
    import numpy as np

    from .planner import route_table as rt
    from .planner.optimizer import Solution
    from .planner.throughput import threshold_table

    mode = choice_of(PlanMode, mode, "mode")
    if points is not None:
        POINTS.check(points, "points")
    result = plan(scenario, mode, with_marginals=False)
    resolved = result.inputs
    with scenario_errors(scenario, ("start", "stop", "points")):
        usable = resolved.link.usable_gbps
        if start is None and stop is None:
            grid = rt.default_grid(resolved, points or 33)
        else:
            first = LINK_GBPS.check(start, "start") if start is not None else 0.0
            last = LINK_GBPS.check(stop, "stop") if stop is not None else 2 * usable
            if last < first:
                raise PlanInputError(f"need `start` <= `stop`, got {first:g} and {last:g}", field="start/stop")
            grid = np.linspace(first, last, points or 50)
            if first <= usable <= last:
                grid = np.append(grid, usable)
        pt = result.point
        table = threshold_table(resolved, mode)
        k = int(np.searchsorted(table.thresholds_tokens, pt.threshold_tokens))
        sol = Solution(k, pt.threshold_tokens, pt.n_prfaas, pt.n_p, pt.n_d, pt.lambda_max, pt.usd_per_hour)
        return RouteTable(resolved, pt, rt.route_table(resolved, table, sol, grid))


@dataclass(frozen=True)
class Figure5Data:
    """What the paper's figure 5 shows for a scenario: its inputs, threshold table and plan."""

    inputs: PlanInputs
    table: ThresholdTable
    solution: Solution


def figure5_data(scenario: str, mode: str = PlanMode.exact) -> Figure5Data:
    """The data of figure 5 (``prfaas_plan.plot.figure5`` draws it)."""
    from .planner.optimizer import optimise
    from .planner.throughput import threshold_table

    mode = choice_of(PlanMode, mode, "mode")
    resolved = inputs(scenario)
    with scenario_errors(scenario):
        table = threshold_table(resolved, mode)
        return Figure5Data(resolved, table, optimise(resolved, table, objective=ObjectiveKind.max_throughput))


# ---------------------------------------------------------------------------------------
# Simulation

DEFAULT_SIM_REQUESTS = 20_000
VALIDATION_LOADS = (0.5, 0.8, 0.95, 1.1)


def read_bandwidth_trace(path: str):
    """A ``time_s,gbps`` CSV as ((time_s, usable_gbps), ...) steps (``simulate.bandwidth``)."""
    from .simulate import read_bandwidth_trace as read

    return read(path)


@dataclass
class SimulationRun:
    """A simulation of one deployment of a scenario's plan, with the closed form beside it."""

    plan: PlanResult
    deployment: Deployment
    lambda_max: float
    result: SimResult
    closed_form: LatencyResult  # at the same rate


def simulate(
    scenario: str,
    *,
    rate_rps: float | None = None,
    load: float | None = None,
    requests: int | None = None,
    deployment: str = DeploymentName.prfaas_pd,
    mode: str = PlanMode.exact,
    progress=None,
    planned=None,
    replay: bool = False,
    speedup: float = 1.0,
    from_s: float | None = None,
    to_s: float | None = None,
    **config,
) -> SimulationRun:
    """Simulate a scenario's planned deployment (or a baseline) with the discrete-event simulator (``simulate.engine``).

    Give ``rate_rps`` or ``load`` (a fraction of the deployment's closed-form Lambda_max;
    default 0.8). At or above Lambda_max the number of requests must be given: an overloaded
    queue grows without bound. ``planned`` reuses a plan already made for the scenario. Other
    keywords go to :class:`prfaas_plan.simulate.SimConfig`. ``replay`` replays the scenario's request
    trace (``workload.input`` a trace with a format, or ``cluster_caches.from_trace``'s) instead: its
    arrivals in [``from_s``, ``to_s``) of trace time, ``speedup`` times as fast, and each request's own
    lengths (with the caches, its own cached prefixes: ``simulate.replay``); the rate and the request
    count are then the trace's."""
    from .planner.deployment import deployments_of
    from .planner.latency import LatencyModel
    from .simulate import SimConfig
    from .simulate import simulate as run_sim
    from .study.model import decode_model

    if requests is not None:  # before planning
        check_simulated_requests(requests, 1, "requests")
    result = planned or plan(scenario, mode, with_marginals=False)
    own = (
        "rate_rps",
        "load",
        "requests",
        "deployment",
        "replay",
        "speedup",
        "from_s",
        "to_s",
        *(f.name for f in fields(SimConfig)),
    )
    with scenario_errors(scenario, own):
        deps = deployments_of(result)
        name = choice_of(DeploymentName, deployment, "deployment")
        if name not in deps:
            raise PlanInputError(f"deployment {name} is not part of this plan (it has {', '.join(deps)})", field="deployment")
        dep = deps[name]
        lam = result.point.lambda_max if name == DeploymentName.prfaas_pd else result.baselines[name].lambda_max
        if not replay and (speedup != 1.0 or from_s is not None or to_s is not None):
            raise PlanInputError(
                "`speedup`, `from_s` and `to_s` shape a replay; give `replay` too", field="replay", argument=True
            )
        if replay:
            _no_drawn_arrivals(config)
            config["replay"] = _replay(result.inputs, rate_rps, load, requests, speedup, from_s, to_s)
            rate_rps, load, requests = config["replay"].rate_rps, None, len(config["replay"])
        rate = _sim_rate(rate_rps, load, lam, name)
        if requests is None:
            if rate >= lam:
                raise PlanInputError(
                    f"rate {rate:.3g} req/s is at or above Lambda_max {lam:.3g}: the queues grow without bound, "
                    "so give `requests` explicitly",
                    field="requests",
                )
            requests = DEFAULT_SIM_REQUESTS
        sim_config = SimConfig(rate_rps=rate, requests=requests, **config)
        inputs_ = result.inputs
        decode = decode_model(inputs_)
        sim = run_sim(inputs_, dep, decode, sim_config, progress)
        scv = sim_config.cv**2 if sim_config.arrivals == ArrivalProcess.gamma else 1.0
        closed = LatencyModel(inputs_, dep, decode).at(rate, scv)
        return SimulationRun(result, dep, lam, sim, closed)


def _no_drawn_arrivals(config: dict) -> None:
    """A replay's arrivals are the trace's: refuse settings of a drawn arrival process that differ
    from ``SimConfig``'s defaults (they would change only the closed form beside the replay)."""
    from dataclasses import fields

    from .simulate import SimConfig

    defaults = {f.name: f.default for f in fields(SimConfig)}
    for name in ("arrivals", "cv", "burst_factor", "on_s", "off_s"):
        if name in config and config[name] != defaults[name]:
            raise PlanInputError(f"a replay takes its arrivals from the trace; do not give `{name}`", field=name, argument=True)


def _replay(inputs, rate_rps, load, requests, speedup, from_s, to_s):
    """The scenario's trace as a ``simulate.replay.Replay`` (errors name the option's field)."""
    from .simulate.replay import replay_of

    given = [name for name, value in (("rate_rps", rate_rps), ("load", load), ("requests", requests)) if value is not None]
    if given:
        raise PlanInputError(
            f"a replay takes its rate and requests from the trace; do not give `{given[0]}`", field=given[0], argument=True
        )
    trace = inputs.workload.trace
    if trace is None:
        raise PlanInputError(
            "replay needs the scenario's workload.input to be a request trace with a format (and no prefix_cache "
            "or cluster_caches), or cluster_caches.from_trace",
            field="replay",
            argument=True,
        )
    try:
        return replay_of(trace, speedup, from_s, to_s)
    except PlanInputError as exc:  # a value of an option, not of the scenario file
        raise PlanInputError(exc.reason, field=exc.field, argument=True) from None


def _sim_rate(rate_rps: float | None, load: float | None, lambda_max: float, deployment: str) -> float:
    """The arrival rate: ``rate_rps``, else ``load`` (default 0.8) x the deployment's Lambda_max,
    which must be a capacity (a share of none is no rate)."""
    if rate_rps is not None and load is not None:
        raise PlanInputError("give `rate_rps` or `load`, not both", field="rate_rps")
    if rate_rps is not None:
        return RATE_RPS.check(rate_rps, "rate_rps")
    load = 0.8 if load is None else LOAD.check(load, "load")
    if lambda_max < MIN_CAPACITY_RPS:
        raise PlanInputError(
            f"{deployment} serves {lambda_max:.3g} req/s on this scenario (`plan` says why): no share of that "
            "capacity is a rate to simulate",
            field="deployment",
        )
    return load * lambda_max


def validate_model(
    scenario: str,
    *,
    requests: int = DEFAULT_SIM_REQUESTS,
    loads=VALIDATION_LOADS,
    mode: str = PlanMode.exact,
    progress=None,
    **config,
) -> list[SimulationRun]:
    """Simulate the plan at fractions of its closed-form Lambda_max (default 50%, 80%, 95%
    and 110%) so that the closed forms can be read beside the simulation. Plans once."""
    check_simulated_requests(requests, len(loads), "requests", f"{len(loads)} loads")
    planned = plan(scenario, mode, with_marginals=False)
    runs = []
    for k, load in enumerate(loads):
        runs.append(simulate(scenario, load=load, requests=requests, mode=mode, planned=planned, **config))
        if progress is not None:
            progress(k + 1, len(loads))
    return runs
