"""Which measurements size each pool, on which basis (``choices.Basis``), and how a report names
each pool's source.

A measurement belongs to the instance it was measured on, hardware and chips: a scenario's
``calibration_points`` to the pool's ``calibration_hardware`` and ``calibration_gpus``
(default: the pool's hardware and chips as the file gives them) and its
``decode.tokens_per_s_per_instance`` to ``decode.tokens_per_s_hardware`` and
``decode.tokens_per_s_gpus`` (default: the decoding pool's); a model profile's measured points
to their hardware and chip count (``timing.prefill.measured_for``). Hardware references are
compared as the profiles they resolve to (``profiles.registry.measured_on_same_chip``: 'H20' is h20,
and so is a copy of its profile at another price).
A pool on other hardware or another chip count does not use them, and its notes say why.

Basis ``as-given`` (what ``plan`` does): measured prefill points as a curve (PCHIP), a pool's
calibration points fitted into its roofline (capacity per request, as measured latencies
count), measured decode rates as given. Basis ``model`` (``compare``'s default): every pool
on the instance model, the roofline, calibrated on the measured points its own hardware has
(the scenario's, else the model profile's for that hardware and chip count), its capacity
batched (saturated) unless the pool sets ``prefill_capacity``; a measured decode rate calibrates
the roofline's step times (one factor, ``study.model.decode_model``).
"""

from __future__ import annotations

from pathlib import Path

from ..choices import Basis, CurveSource, DecodeSource, FitParam, PrefillCapacity, PrefillSource
from ..profiles._base import profile_json
from ..profiles.model import ModelProfile
from ..profiles.registry import measured_on_same_chip
from ..timing.calibrate import CalibrationPoint, CalibrationResult, calibrate
from ..timing.instance import Instance
from ..timing.prefill import measured_for

# parameters a calibration on n measured points fits: no more than the points determine
_FIT_BY_POINTS = {1: (FitParam.compute,), 2: (FitParam.compute, FitParam.prefill_overhead_s)}


def measured_here(
    what: str, pool: str, written: str, gpus: int, measured_on: str | None, measured_gpus: int | None, base: Path | None = None
) -> str | None:
    """None when a measurement (``what``) taken on ``measured_gpus`` x ``measured_on`` (None:
    the pool's own) belongs to ``pool`` on ``gpus`` x ``written`` (the same hardware,
    ``measured_on_same_chip``, and chip count); else the note that says why it is not used."""
    if measured_on is not None and not measured_on_same_chip(measured_on, written, base):
        return f"{pool} on {written}: {what} measured on {measured_on}"
    if measured_gpus is not None and measured_gpus != gpus:
        return f"{pool} on {gpus} x {written}: {what} measured per {measured_gpus}-chip instance"
    return None


def calibration_points(
    role: str,
    written: str,
    given: list[CalibrationPoint],
    fit,
    measured_on: str | None,
    curve: CurveSource,
    model: ModelProfile,
    hardware,
    gpus: int,
    basis: Basis,
    prefills: bool,
    measured_gpus: int | None = None,
    base: Path | None = None,
) -> tuple[list[CalibrationPoint], tuple | None, list[str]]:
    """(points to calibrate a pool's hardware on, the parameters to fit (None: the default),
    notes). ``given``: the scenario's points for the pool, whose hardware it names ``written``,
    measured on ``measured_gpus`` x ``measured_on`` (None: the pool's); used when measured on
    this instance (``measured_here``). On basis ``model`` and without them, the model profile's
    measured prefill points for this hardware and chip count (not when the pool's curve is the
    bare roofline)."""
    notes: list[str] = []
    if given:
        elsewhere = measured_here("the calibration points", role, written, gpus, measured_on, measured_gpus, base)
        if elsewhere is None:
            return list(given), fit, notes
        notes.append(f"{elsewhere} are not used")
    if basis != Basis.model or not prefills or curve == CurveSource.roofline:
        return [], None, notes
    measured = measured_for(model, Instance(hardware, gpus))
    if measured is None or not measured.prefill:
        return [], None, notes
    points = [CalibrationPoint(p.length_tokens, p.prefill_s) for p in measured.prefill]
    return points, _FIT_BY_POINTS.get(len(points)), notes


_CALIBRATIONS: dict[tuple, CalibrationResult] = {}
CALIBRATIONS_KEPT = 32


def calibrated(
    model: ModelProfile, hardware, gpus: int, points: list[CalibrationPoint], fit, layout, engine
) -> CalibrationResult:
    """``timing.calibrate.calibrate``, once per process for the same inputs: a comparison fits the
    same measured points (a model profile's, for every option on that hardware) again and again."""
    key = (
        profile_json(model),
        profile_json(hardware),
        gpus,
        tuple((p.length_tokens, p.prefill_s) for p in points),
        None if fit is None else tuple(fit),
        repr(layout),
        repr(engine),
    )
    if key not in _CALIBRATIONS:
        if len(_CALIBRATIONS) >= CALIBRATIONS_KEPT:
            _CALIBRATIONS.pop(next(iter(_CALIBRATIONS)))
        _CALIBRATIONS[key] = calibrate(model, hardware, gpus, points, name=hardware.name, fit=fit, layout=layout, engine=engine)
    return _CALIBRATIONS[key]


def prefill_settings(
    curve: CurveSource, capacity: PrefillCapacity | None, calibrated: bool, basis: Basis
) -> tuple[CurveSource, PrefillCapacity | None]:
    """(curve source, capacity) of a pool's prefill, from the pool's own (``capacity`` None: not
    fixed): on basis ``model`` the roofline, batched unless the pool fixes its capacity; as
    given, the pool's own source, and per request for a calibrated roofline (it was fitted to
    latencies, as measured points are)."""
    if basis == Basis.model:
        return CurveSource.roofline, capacity or PrefillCapacity.saturated
    return curve, capacity or (PrefillCapacity.per_request if calibrated else None)


def measured_decode_rate(
    rate: float | None,
    measured_on: str | None,
    decoder_hardware: str,
    gpus: int,
    measured_gpus: int | None = None,
    base: Path | None = None,
) -> tuple[float | None, list[str]]:
    """(the scenario's decode tokens/s per instance ``rate`` when measured on the decoding pool's
    instance, ``gpus`` x ``decoder_hardware`` (``measured_here``; None: on it), notes)."""
    if rate is None:
        return None, []
    elsewhere = measured_here(
        f"the scenario's {rate:,.0f} tokens/s", "decode", decoder_hardware, gpus, measured_on, measured_gpus, base
    )
    if elsewhere is not None:
        return None, [f"{elsewhere} is not used: its roofline is"]
    return rate, []


def decode_source(given: bool, modelled: str, basis: Basis) -> DecodeSource:
    """Where the decode rate of a modelled pool comes from (``modelled``: roofline, or the model
    profile's measurement): on basis ``model`` a measurement (``given``: the scenario's)
    calibrates the roofline's step times."""
    if basis == Basis.model and (given or modelled == DecodeSource.measured):
        return DecodeSource.calibrated
    return DecodeSource(modelled)


def prefill_source(pool) -> dict[str, str]:
    """Which prefill curve sized a pool: source (measured, calibrated or roofline), capacity
    (per_request or saturated) and layout (a measured curve's shape comes from the roofline's)."""
    curve = pool.curve
    roofline = getattr(curve, "roofline", curve)
    if curve is not roofline:
        source, layout = PrefillSource.measured, f"shape {roofline.layout.label}"
    else:
        source = PrefillSource.calibrated if pool.calibration is not None else PrefillSource.roofline
        layout = roofline.layout.label
    return {"source": str(source), "capacity": str(curve.capacity), "layout": layout}


SOURCE_KEYS = (
    "basis",
    "prfaas_prefill_source",
    "prfaas_prefill_capacity",
    "prfaas_layout",
    "pd_prefill_source",
    "pd_prefill_capacity",
    "pd_layout",
    "decode_source",
    "decode_layout",
)


def sources(inputs, basis: Basis) -> dict[str, str | None]:
    """The basis and each pool's source as flat fields (``SOURCE_KEYS``): the PrfaaS and PD (or
    PD-P) prefill curves, and the decode rate of the decoding pool with its layout (None when
    the rate is given, not modelled)."""
    out: dict[str, str | None] = {"basis": str(basis)}
    for pool in (inputs.prfaas, inputs.pd):
        found = prefill_source(pool)
        out.update(
            {
                f"{pool.role}_prefill_source": found["source"],
                f"{pool.role}_prefill_capacity": found["capacity"],
                f"{pool.role}_layout": found["layout"],
            }
        )
    cap = inputs.decode.capacity
    out["decode_source"] = str(inputs.decode.source)
    out["decode_layout"] = None if cap is None or cap.layout is None else cap.layout.label
    return out
