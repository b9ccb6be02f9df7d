"""Calibration: fit a hardware profile's efficiency factors to measured prefill latencies.

Model: the roofline T_prefill(l; eff_matmul, eff_attention, overhead) of
``timing.prefill.RooflinePrefill``. Fit: nonlinear least squares on relative
(log) residuals, log T_pred(l_i) - log T_meas(l_i), with efficiencies bounded to
(0.001, 1] and the overhead to [0, max measured latency]; several starting points,
best kept. With fewer than three points, fewer parameters are fitted (two points:
one shared efficiency and the overhead; one point: the shared efficiency only).
The fitted profile is a normal hardware profile: calibrate a serving stack once on one
model, then predict other models on it.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from datetime import date

import numpy as np

from ..errors import PlanInputError, shorten
from ..profiles.hardware import CalibrationRecord, HardwareProfile
from ..profiles.model import ModelProfile
from ..ranges import CALIBRATION_POINTS, MAX_CSV_BYTES, PREFILL_SECONDS
from ..units import parse_tokens
from ..yamlio import read_input_text
from .instance import Instance
from .prefill import RooflinePrefill, check_lengths

FIT_PARAMS = ("matmul", "attention", "prefill_overhead_s")
MAX_FIT_ERROR = 0.25  # a worse fit means the points do not describe this model on this instance


@dataclass(frozen=True)
class CalibrationPoint:
    length_tokens: int
    prefill_s: float
    kv_bytes: float | None = None
    where: str | None = None  # e.g. 'line 3' of the file it was read from, for error messages


def read_points_csv(path: str) -> list[CalibrationPoint]:
    """Read ``length,prefill_s[,kv_bytes]`` rows (a header row is required; lengths may be 32K)."""
    text = read_input_text(path, MAX_CSV_BYTES)
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        rows = list(reader)
    except csv.Error as exc:
        raise PlanInputError(f"malformed CSV ({shorten(str(exc), 80)})", source=path,
                             field=f"line {reader.line_num}") from None
    rows = [r for r in rows if any(cell.strip() for cell in r)]
    if len(rows) - 1 > CALIBRATION_POINTS.hi:
        raise PlanInputError(f"{len(rows) - 1:,} points; at most {int(CALIBRATION_POINTS.hi):,}", source=path)
    if not rows:
        raise PlanInputError("empty file (expected a header 'length,prefill_s[,kv_bytes]')", source=path)
    header = [c.strip().lower() for c in rows[0]]
    if "length" not in header or "prefill_s" not in header:
        raise PlanInputError(f"header must name 'length' and 'prefill_s', got {shorten(','.join(rows[0]), 60)!r}",
                             source=path, field="line 1")
    li, ti = header.index("length"), header.index("prefill_s")
    ki = header.index("kv_bytes") if "kv_bytes" in header else None
    points = []
    for n, row in enumerate(rows[1:], start=2):
        where = f"line {n}"
        try:
            length = parse_tokens(row[li].strip(), field="length")
            seconds = float(row[ti])
            kv = float(row[ki]) if ki is not None and row[ki].strip() else None
        except IndexError:
            raise PlanInputError("too few columns", source=path, field=where) from None
        except ValueError:
            raise PlanInputError("not a number", source=path, field=where) from None
        except PlanInputError as exc:
            raise PlanInputError(exc.reason, source=path, field=f"{where}: {exc.field}") from None
        PREFILL_SECONDS.check(seconds, f"{where}: prefill_s", path)
        if kv is not None and not (math.isfinite(kv) and 0 < kv <= 1e13):
            raise PlanInputError(f"kv_bytes must be a number of bytes in (0, 1e13], got {shorten(row[ki], 30)}",
                                 source=path, field=where)
        points.append(CalibrationPoint(length, seconds, kv, where))
    if not points:
        raise PlanInputError("no data rows", source=path)
    if len({p.length_tokens for p in points}) != len(points):
        raise PlanInputError("a length appears twice", source=path)
    return sorted(points, key=lambda p: p.length_tokens)


@dataclass(frozen=True)
class PointFit:
    length_tokens: int
    measured_s: float
    predicted_s: float
    measured_kv_bytes: float | None
    model_kv_bytes: float

    @property
    def error(self) -> float:
        """Relative error of the fitted latency, (predicted - measured) / measured."""
        return self.predicted_s / self.measured_s - 1.0


@dataclass(frozen=True)
class CalibrationResult:
    model: str
    instance: str
    fitted: dict[str, float]  # parameter -> value
    before: dict[str, float]
    points: list[PointFit]
    hardware: HardwareProfile  # the calibrated profile

    @property
    def max_abs_error(self) -> float:
        return max(abs(p.error) for p in self.points)

    @property
    def rms_error(self) -> float:
        return float(np.sqrt(np.mean([p.error**2 for p in self.points])))


def _with_efficiency(hardware: HardwareProfile, values: dict[str, float], name: str | None = None) -> HardwareProfile:
    eff = hardware.efficiency.model_copy(update=values)
    update = {"efficiency": eff}
    if name:
        update["name"] = name
    return hardware.model_copy(update=update)


def _bisect(fn, lo: float, hi: float, iterations: int = 50) -> float | None:
    """Root of a monotone ``fn`` on [lo, hi] by bisection in log space; None without a sign change."""
    f_lo, f_hi = fn(lo), fn(hi)
    if f_lo == 0:
        return lo
    if f_lo * f_hi > 0:
        return None
    for _ in range(iterations):
        mid = math.sqrt(lo * hi)
        f_mid = fn(mid)
        if (f_mid > 0) == (f_lo > 0):
            lo, f_lo = mid, f_mid
        else:
            hi = mid
    return math.sqrt(lo * hi)


def _exact_fit(predict, lengths: np.ndarray, measured: np.ndarray) -> list[float] | None:
    """One or two points: the shared efficiency (and overhead) that reproduce them exactly."""
    if len(lengths) == 1:
        eff = _bisect(lambda e: float(predict(np.array([e]))[0]) - measured[0], 1e-3, 1.0)
        return None if eff is None else [eff]
    gap = measured[1] - measured[0]

    def diff(e: float) -> float:
        t = predict(np.array([e, 0.0]))
        return float(t[1] - t[0]) - gap

    eff = _bisect(diff, 1e-3, 1.0)
    if eff is None:
        return None
    overhead = float(measured[0] - predict(np.array([eff, 0.0]))[0])
    return [eff, overhead] if 0.0 <= overhead <= measured.min() else None


def calibrate(
    model: ModelProfile,
    hardware: HardwareProfile,
    gpus: int,
    points: list[CalibrationPoint],
    name: str | None = None,
) -> CalibrationResult:
    """Fit efficiency factors and prefill overhead to measured points (see module doc)."""
    for point in points:
        try:
            check_lengths(model, [point.length_tokens], field=point.where or "length")
        except PlanInputError as exc:
            raise PlanInputError(exc.reason, field=exc.field) from None
    lengths = np.array([p.length_tokens for p in points], dtype=float)
    measured = np.array([p.prefill_s for p in points])
    n = len(points)
    # Which parameters to fit; tied ones share the matmul efficiency.
    free = list(FIT_PARAMS) if n >= 3 else (["matmul", "prefill_overhead_s"] if n == 2 else ["matmul"])

    def values_of(x: np.ndarray) -> dict[str, float]:
        vals = dict(zip(free, x))
        if "attention" not in vals:
            vals["attention"] = vals["matmul"]
        return {k: float(v) for k, v in vals.items()}

    def predict(x: np.ndarray) -> np.ndarray:
        inst = Instance(_with_efficiency(hardware, values_of(x)), gpus)
        return RooflinePrefill(model, inst).prefill_s(lengths)

    def residuals(x: np.ndarray) -> np.ndarray:
        return np.log(predict(x)) - np.log(measured)

    x = _exact_fit(predict, lengths, measured) if n < 3 else None
    if x is None:
        x = _least_squares(residuals, free, measured)
    x = np.asarray(x, dtype=float)
    fitted = values_of(x)
    calibrated = _with_efficiency(hardware, fitted, name or f"{hardware.name}-calibrated")
    predicted = predict(x)
    model_kv = RooflinePrefill(model, Instance(calibrated, gpus)).kv_bytes(lengths)
    point_fits = [
        PointFit(p.length_tokens, p.prefill_s, float(t), p.kv_bytes, float(k))
        for p, t, k in zip(points, predicted, model_kv)
    ]
    before = {k: float(getattr(hardware.efficiency, k)) for k in FIT_PARAMS}
    record = CalibrationRecord.model_validate({
        "fitted_on_model": model.name,
        "gpus": gpus,
        "base_profile": hardware.name,
        "date": date.today().isoformat(),
        "fitted": {k: round(v, 6) for k, v in fitted.items()},
        "points": [
            {"length_tokens": f.length_tokens, "measured_s": f.measured_s, "predicted_s": round(f.predicted_s, 6)}
            for f in point_fits
        ],
        "max_abs_error": round(max(abs(f.error) for f in point_fits), 6),
    })
    calibrated = calibrated.model_copy(update={"calibration": record})
    worst = max(point_fits, key=lambda f: abs(f.error))
    if abs(worst.error) > MAX_FIT_ERROR:
        raise PlanInputError(
            f"the roofline of {model.name} on {gpus} x {hardware.name} cannot reproduce these points: "
            f"{100 * worst.error:+.0f}% at {worst.length_tokens} tokens even with the best efficiencies "
            f"({', '.join(f'{k} {v:.3g}' for k, v in fitted.items())}); check the model, --gpus and that "
            "prefill_s is in seconds", field="--points")
    return CalibrationResult(model.name, f"{gpus}x{hardware.name}", fitted, before, point_fits, calibrated)


def _least_squares(residuals, free: list[str], measured: np.ndarray) -> np.ndarray:
    from scipy.optimize import least_squares

    lower = [1e-3 if p != "prefill_overhead_s" else 0.0 for p in free]
    upper = [1.0 if p != "prefill_overhead_s" else float(measured.min()) for p in free]
    best = None
    for eff0 in (0.05, 0.2, 0.6):
        for over0 in (0.0, 0.5):
            x0 = [eff0 if p != "prefill_overhead_s" else over0 * float(measured.min()) for p in free]
            x0 = np.clip(x0, lower, np.array(upper) - 1e-9 * (np.array(upper) > 0))
            res = least_squares(residuals, x0, bounds=(lower, upper), x_scale="jac", diff_step=1e-4)
            if best is None or res.cost < best.cost:
                best = res
    return best.x


def hardware_to_yaml_dict(hardware: HardwareProfile) -> dict:
    """A hardware profile as a plain mapping that loads back to the same profile."""
    return hardware.model_dump(mode="json", exclude_none=True)
