"""A pool's parts, resolved: its hardware (a name, or a path relative to the scenario file), the chips per
instance it offers, the model with a pool's precision applied, and a pool fitted to its hardware and model.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ...accounting.params import declared_params_mismatch
from ...choices import Basis, Dtype, Role
from ...errors import PlanInputError, shorten, warn
from ...profiles.cost_spec import CostSpec
from ...profiles.hardware import HardwareProfile
from ...profiles.model import ModelProfile
from ...profiles.registry import looks_like_path, resolve_hardware, resolve_model
from ...profiles.scenario import ClusterSpec, DecodeSpec, measured_instance_defaults
from ...profiles.serving import PrecisionSpec
from ...timing.calibrate import CalibrationPoint, far_fitted
from ...timing.cost import Engine
from ...timing.instance import Instance
from ...timing.layout import Layout, check_layout
from ...timing.memory import chips_needed, require_fit
from ...timing.prefill import prefill_curve
from ...yamlio import is_regular_file
from ..basis import calibrated, calibration_points, prefill_settings
from ..model import Pool, gpu_budgets
from ..prices import chip_cost


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
    # a pool moved to other hardware rents it at the profile's example price, which holds its power:
    # the site's $/kWh (what the spec's own chips were billed for power) is not added on top
    cost = (
        chip_cost(hardware, CostSpec(), spec.site.model_copy(update={"usd_per_kwh": None}))
        if moved
        else chip_cost(hardware, spec.cost, spec.site)
    )
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
        notes = [*notes, *far_fit_notes(where, written or spec.hardware, calibration.fitted, calibration.before)]
    instance = Instance(hardware, gpus, layout, engine)
    notes = [*notes, *_default_efficiency_notes(where, written or spec.hardware, hardware)]
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
    from ...timing.engines import engine_profile

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


def _budgets(gpus: dict[str, int], names: set[str], source: str | None) -> dict[str, int]:
    """The GPU budgets by resolved hardware name (``study.model.gpu_budgets``)."""
    try:
        return gpu_budgets(gpus, names)
    except PlanInputError as exc:
        raise exc.with_source(source) from None


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


def _default_efficiency_notes(where: str, ref: str, hardware: HardwareProfile) -> list[str]:
    """A note when a user's hardware file leaves efficiency fields at the schema's defaults with no
    source (``HardwareProfile.efficiency_defaults``): zero overheads, network 0.8 and nic 0.9 are
    assumptions that then time the pool unseen. Shipped profiles name theirs."""
    defaults = hardware.efficiency_defaults() if looks_like_path(ref) else {}
    if not defaults:
        return []
    return [
        f"{where}: {hardware.name} ({shorten(ref, 80)}) leaves efficiency "
        + ", ".join(f"{name} {value:g}" for name, value in defaults.items())
        + " at the schema's defaults, with no source: assumptions that time this pool (set them, or give efficiency_sources)"
    ]


def far_fit_notes(where: str, hardware: str, fitted: dict[str, float], before: dict[str, float]) -> list[str]:
    """A note for each fitted efficiency that the calibration moved beyond ``FAR_FIT_FACTOR`` either
    way from the profile's value (``timing.calibrate.far_fitted``)."""
    return [
        f"{where} on {hardware}: the calibration points put its {name} at {factor:.3g}x the profile's: "
        "are they of this hardware, chip count and layout? (calibration_hardware, calibration_gpus)"
        for name, factor in far_fitted(fitted, before)
    ]


def measured_on(spec, base: Path | None, source: str | None) -> str:
    """The model a scenario file's measurements were taken on: its ``measurements_model``, which
    must name a model (an error naming the field, not every measurement dropped for a typo), else
    its ``model``."""
    ref = spec.measurements_model
    if ref is None:
        return spec.model
    try:
        resolve_model(_ref(ref, base, source, "measurements_model"))
    except PlanInputError as exc:
        raise PlanInputError(exc.reason, source=source, field="measurements_model") from None
    return ref


def dropped_measurements(measured_on: str, plan_model: str | None, specs, decode: DecodeSpec, rooflines: str) -> list[str]:
    """What a plan of another model leaves out of a file whose measurements were taken on
    ``measured_on`` (``measurements_model``): each pool's calibration points (``specs``: (field
    path, ClusterSpec)) and the decode tokens/s, whose place ``rooflines`` roofline takes. The
    notes name ``plan_model`` unless None (a what-if's, which names it where it reports them)."""
    why = f"measured on {measured_on} dropped" + ("" if plan_model is None else f" (the plan is of {plan_model})")
    said = [f"{where}: calibration points {why}" for where, spec in specs if spec.calibration_points]
    if decode.tokens_per_s_per_instance is not None:
        said.append(f"the scenario's decode tokens/s {why}: {rooflines} roofline is used")
    return said


def _fitted(
    role: Role,
    spec: ClusterSpec,
    model: ModelProfile,
    on: tuple[str, HardwareProfile, bool],
    need_tokens: int,
    source: str | None,
    base: Path | None,
    where: str,
    measured: bool = True,
) -> Pool:
    """A pool of one chip count that holds the model and a ``need_tokens`` request, ``on`` (the
    hardware's reference and profile, and whether a what-if moved it there: ``_pool``);
    ``measured`` False, its calibration points are of another model (not used)."""
    written, hardware, moved = on
    gpus = chip_options(where, spec, model, hardware, need_tokens, source)[0]
    pool = _pool(
        role,
        spec,
        model,
        hardware,
        gpus,
        (gpus,),
        source,
        base=base,
        where=where,
        written=written,
        moved=moved,
        measured=measured,
    )
    if spec.count_range[1] > 0:
        try:
            require_fit(model, pool.instance, need_tokens)
        except PlanInputError as exc:
            raise PlanInputError(exc.reason, source=source, field=f"{where}.gpus_per_instance") from None
    return pool
