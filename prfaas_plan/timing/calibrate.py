"""Calibration: fit a hardware profile's efficiency factors to measured prefill latencies, on
one model or several models jointly, and say how well the fit transfers.

Model: the TTFT of one prompt on an idle instance, ``timing.prefill.RooflinePrefill.prefill_s``,
on the layout the base profile chooses for each model (held fixed while fitting). Parameters
(``choices.FitParam``): the matmul, attention and memory fractions (``compute`` scales matmul
and attention together; the per-dtype fractions ``matmul_fp8``, ``matmul_fp4``, ``grouped_matmul_fp4`` and
``attention_fp8`` a profile sets keep their measured ratio to ``matmul`` / ``attention``:
fitting ``attention`` fits the bf16 fraction and scales the fp8 one by the same factor), the per-request
``prefill_overhead_s``, and per attention kind ``attention_<kind>`` (gqa, swa, mla, sparse, linear): a
multiplier m_k on the attention-core rates of that kind's layers in prefill, stored in the profile's
``efficiency.attention_kind`` (so a joint fit over models of several kinds gives each kind's kernels
their own efficiency beside the shared fractions); default matmul, attention and prefill_overhead_s.
Fit: nonlinear least squares on relative (log) residuals log T_pred - log T_meas over every point
of every model, fractions in (0.001, 1] and kind multipliers in [0.05, 20] (both fitted in log
space), the overhead in [0, the smallest measured latency]; several starting points, the
best kept (one fraction on one point, or with the overhead on two, is solved exactly by
bisection). Fewer points than parameters is an error (such a fit is not determined).

Uncertainty: one standard error per parameter from the Jacobian at the fit,
cov = s^2 (J^T J)^-1 with s^2 = sum of squared residuals / (points - parameters); none when
the points only just determine the parameters. Transfer: with two or more models, each model
is left out in turn, the rest fitted, and the left-out model's points predicted
(leave-one-model-out error: the largest |predicted / measured - 1| of its points); a kind
multiplier whose kind only the left-out model has is not determined by the rest, so it is held
at the base profile's value (1 unless set) for that prediction: the error says how a model of a
kind never fitted is predicted.
The fitted profile is a normal hardware profile.

Shipped fits: an exact fit (bisection) of inputs the shipped scenarios calibrate on is kept
(``timing.shipped``, keyed by ``fit_key``: everything the fit reads); the same inputs read its
layouts and solution instead of searching and solving again; any other inputs are solved.
"""

from __future__ import annotations

import csv
import io
import itertools
import math
from dataclasses import asdict, dataclass, field
from datetime import date
from types import SimpleNamespace
from typing import Any

import numpy as np

from ..choices import FitParam, MixerType, PrefillCapacity
from ..errors import PlanInputError, shorten
from ..profiles.hardware import CalibrationRecord, HardwareProfile
from ..profiles.model import ModelProfile, expand_layers
from ..ranges import CALIBRATION_POINTS, CHIPS_PER_INSTANCE, KERNEL_MULTIPLIER, MAX_CSV_BYTES, PREFILL_SECONDS
from ..units import parse_tokens
from ..yamlio import read_input_text
from . import shipped
from .cost import Engine
from .instance import Instance
from .layout import Layout
from .prefill import RooflinePrefill, check_lengths

FIT_DEFAULT = (FitParam.matmul, FitParam.attention, FitParam.prefill_overhead_s)
EFFICIENCIES = (FitParam.matmul, FitParam.attention, FitParam.memory)
MAX_FIT_ERROR = 0.25  # a worse fit means the points do not describe this model on this instance
MIN_EFFICIENCY = 1e-3
EXACT_COST = 1e-12  # half the sum of squared log residuals of an exact fit


@dataclass(frozen=True)
class CalibrationPoint:
    length_tokens: int
    prefill_s: float
    kv_bytes: float | None = None
    where: str | None = None  # e.g. 'line 3' of the file it was read from, for error messages
    model: str | None = None  # a joint fit's CSV names each point's model
    gpus: int | None = None  # and may name its chip count


def read_points_csv(path: str) -> list[CalibrationPoint]:
    """Read ``length,prefill_s[,kv_bytes][,model][,gpus]`` rows (a header row is required; lengths
    may be 32K). ``model`` and ``gpus`` columns make a joint fit over several models or sizes."""
    text = read_input_text(path, MAX_CSV_BYTES)
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        rows = list(reader)
    except csv.Error as exc:
        raise PlanInputError(f"malformed CSV ({shorten(str(exc), 80)})", source=path, field=f"line {reader.line_num}") from None
    rows = [r for r in rows if any(cell.strip() for cell in r)]
    if len(rows) - 1 > CALIBRATION_POINTS.hi:
        raise PlanInputError(f"{len(rows) - 1:,} points; at most {int(CALIBRATION_POINTS.hi):,}", source=path)
    if not rows:
        raise PlanInputError("empty file (expected a header 'length,prefill_s[,kv_bytes]')", source=path)
    header = [c.strip().lower() for c in rows[0]]
    if "length" not in header or "prefill_s" not in header:
        raise PlanInputError(
            f"header must name 'length' and 'prefill_s', got {shorten(','.join(rows[0]), 60)!r}", source=path, field="line 1"
        )
    li, ti = header.index("length"), header.index("prefill_s")
    ki = header.index("kv_bytes") if "kv_bytes" in header else None
    mi = header.index("model") if "model" in header else None
    gi = header.index("gpus") if "gpus" in header else None
    points = []
    for n, row in enumerate(rows[1:], start=2):
        where = f"line {n}"
        try:
            length = parse_tokens(row[li].strip(), field="length")
            seconds = float(row[ti])
            kv_cell = row[ki] if ki is not None else ""
            kv = float(kv_cell) if kv_cell.strip() else None
            model = row[mi].strip() or None if mi is not None else None
            gpus = _gpus(row[gi].strip()) if gi is not None and row[gi].strip() else None
        except IndexError:
            raise PlanInputError("too few columns", source=path, field=where) from None
        except ValueError:
            raise PlanInputError("not a number", source=path, field=where) from None
        except PlanInputError as exc:
            raise PlanInputError(exc.reason, source=path, field=f"{where}: {exc.field}") from None
        PREFILL_SECONDS.check(seconds, f"{where}: prefill_s", path)
        if kv is not None and not (math.isfinite(kv) and 0 < kv <= 1e13):
            raise PlanInputError(
                f"kv_bytes must be a number of bytes in (0, 1e13], got {shorten(kv_cell, 30)}", source=path, field=where
            )
        points.append(CalibrationPoint(length, seconds, kv, where, model, gpus))
    if not points:
        raise PlanInputError("no data rows", source=path)
    seen: dict[tuple, str | None] = {}
    for p in points:
        key = (p.model, p.gpus, p.length_tokens)
        if key in seen:
            whose = " for one model" if mi is not None else ""
            raise PlanInputError(
                f"length {p.length_tokens:,} appears twice{whose} (first on {seen[key]})", source=path, field=p.where
            )
        seen[key] = p.where
    return sorted(points, key=lambda p: (p.model or "", p.gpus or 0, p.length_tokens))


def _gpus(text: str) -> int:
    """A chip count from the CSV (the caller names the file and line)."""
    if not text.isdigit():
        raise PlanInputError(f"must be a whole number, got {shorten(text, 20)}", field="gpus")
    CHIPS_PER_INSTANCE.check(int(text), "gpus")
    return int(text)


@dataclass(frozen=True)
class CalibrationSet:
    """The points of one model on one instance size (a joint fit has several)."""

    model: ModelProfile
    gpus: int
    points: list[CalibrationPoint]
    layout: Layout | None = None
    engine: Engine = field(default_factory=Engine)


@dataclass(frozen=True)
class PointFit:
    length_tokens: int
    measured_s: float
    predicted_s: float
    measured_kv_bytes: float | None
    model_kv_bytes: float
    model: str = ""
    gpus: int = 0

    @property
    def error(self) -> float:
        """Relative error of the fitted latency, (predicted - measured) / measured."""
        return self.predicted_s / self.measured_s - 1.0


# A calibration that moves an efficiency factor more than this far either way from the profile's
# is more likely fitted to points of another chip, chip count or layout (or in another unit) than
# to this one's own kernels: the published measurements put the uncalibrated instance model
# within about 2x (docs/validation.md).
FAR_FIT_FACTOR = 2.0


def far_fitted(fitted: dict[str, float], before: dict[str, float]) -> list[tuple[str, float]]:
    """(parameter, fitted / profile value) of each fitted efficiency (not a time in seconds) that
    moved beyond ``FAR_FIT_FACTOR`` either way from the profile's value."""
    out = []
    for name, value in fitted.items():
        was = before.get(name)
        if not name.endswith("_s") and was and was > 0 and not 1 / FAR_FIT_FACTOR <= value / was <= FAR_FIT_FACTOR:
            out.append((name, value / was))
    return out


@dataclass(frozen=True)
class CalibrationResult:
    model: str  # the model, or the models joined by '+'
    instance: str
    fitted: dict[str, float]  # parameter -> value
    before: dict[str, float]
    points: list[PointFit]
    hardware: HardwareProfile  # the calibrated profile
    uncertainty: dict[str, float | None] = field(default_factory=dict)  # one standard error; None: not determined
    leave_one_model_out: dict[str, float | None] = field(default_factory=dict)  # model -> max |error| when left out

    @property
    def max_abs_error(self) -> float:
        return max(abs(p.error) for p in self.points)

    @property
    def rms_error(self) -> float:
        return float(np.sqrt(np.mean([p.error**2 for p in self.points])))


def _with_efficiency(hardware: HardwareProfile, values: dict[str, float], name: str | None = None) -> HardwareProfile:
    """``hardware`` with the fitted values: fields by name, ``attention_<kind>`` into ``attention_kind``."""
    kinds = {kind: v for k, v in values.items() if _is_kind(k) and (kind := FitParam(k).attention_kind) is not None}
    fields: dict[str, Any] = {k: v for k, v in values.items() if not _is_kind(k)}
    if kinds:
        fields["attention_kind"] = {**hardware.efficiency.attention_kind, **{MixerType(k): v for k, v in kinds.items()}}
    eff = hardware.efficiency.model_copy(update=fields)
    update: dict[str, Any] = {"efficiency": eff}
    if name:
        update["name"] = name
    return hardware.model_copy(update=update)


def _fitted_sources(hardware: HardwareProfile, values: dict[str, float], points: int, models: list[str]) -> dict[str, str]:
    """The base profile's ``efficiency_sources``, each fitted field's entry saying that it was fitted
    (to how many points of which models) and what it was before, from where."""
    out = dict(hardware.efficiency_sources)
    kinds = [k for k in values if _is_kind(k)]
    if kinds:
        was = hardware.efficiency.attention_kind
        out["attention_kind"] = shorten(
            f"calibrated: {', '.join(kinds)} fitted to {points} measured prefill latencies of {', '.join(models)} "
            f"(was {dict((str(k), v) for k, v in was.items()) or 'unset: 1 for every kind'}: "
            f"{hardware.efficiency_source('attention_kind')})",
            2000,
        )
    for name in values:
        if name in type(hardware.efficiency).model_fields:
            was = getattr(hardware.efficiency, name)
            out[name] = shorten(
                f"calibrated: fitted to {points} measured prefill latencies of {', '.join(models)} "
                f"(was {was if was is not None else 'unset'}: {hardware.efficiency_source(name)})",
                2000,
            )
    return out


def model_kinds(model: ModelProfile) -> set[str]:
    """The attention kinds (``MixerType`` values) of a model's layers."""
    return {str(layer.mixer.type) for layer in expand_layers(model) if layer.mixer is not None}


def _is_kind(name: str) -> bool:
    return name in FitParam.__members__ and FitParam(name).attention_kind is not None


def check_fit(params, points: int) -> tuple[FitParam, ...]:
    """The parameters to fit (default ``FIT_DEFAULT``); an error when they cannot be determined."""
    try:
        fit = tuple(dict.fromkeys(FitParam(p) for p in (params or FIT_DEFAULT)))
    except ValueError as exc:
        raise PlanInputError(f"{exc}; choose from {', '.join(FitParam)}", field="fit") from None
    if FitParam.compute in fit and (FitParam.matmul in fit or FitParam.attention in fit):
        raise PlanInputError("compute scales matmul and attention together: fit compute, or matmul and attention", field="fit")
    if points < len(fit):
        raise PlanInputError(
            f"{points} point{'s' if points != 1 else ''} cannot determine {len(fit)} parameters "
            f"({', '.join(fit)}): give at least {len(fit)} points, or fit fewer parameters "
            f"(e.g. {'compute' if points == 1 else 'compute,prefill_overhead_s'})",
            field="points",
        )
    return fit


# fitting the bf16 fraction (``matmul``, ``attention``) scales the per-dtype fractions a profile sets
# by the same factor: the kernels of each dtype keep the ratio their sources measured
_KEEPS_RATIO = {"matmul_fp8": "matmul", "matmul_fp4": "matmul", "grouped_matmul_fp4": "matmul", "attention_fp8": "attention"}


class _Fit:
    """Predictions of every point for a parameter vector x (fractions in log space)."""

    def __init__(
        self,
        sets: list[CalibrationSet],
        hardware: HardwareProfile,
        fit: tuple[FitParam, ...],
        layouts: list[Layout] | None = None,
    ):
        self.sets, self.hardware, self.fit = sets, hardware, fit
        eff = hardware.efficiency
        # latencies are measured on the layout with the lowest TTFT, unless the set names one
        # (``layouts``: those a shipped fit found)
        self.layouts = layouts or [
            s.layout
            or RooflinePrefill(s.model, Instance(hardware, s.gpus, None, s.engine), capacity=PrefillCapacity.per_request).layout
            for s in sets
        ]
        self.measured = np.array([p.prefill_s for s in sets for p in s.points])
        top = max(getattr(eff, f) or 0.0 for f in ("matmul", "attention", *_KEEPS_RATIO))
        lower, upper = [], []
        for p in fit:
            if p == FitParam.prefill_overhead_s:
                lower.append(0.0)
                upper.append(float(self.measured.min()))
            elif p == FitParam.compute:
                lower.append(math.log(MIN_EFFICIENCY / min(eff.matmul, eff.attention)))
                upper.append(math.log(1.0 / top))
            elif p.attention_kind:  # at most what takes the kernel to the chip's peak FLOP/s or bandwidth
                lower.append(math.log(KERNEL_MULTIPLIER.lo))
                upper.append(math.log(min(KERNEL_MULTIPLIER.hi, 1.0 / max(eff.attention, eff.memory))))
            else:
                lower.append(math.log(MIN_EFFICIENCY))
                upper.append(0.0)
        self.lower, self.upper = np.array(lower), np.array(upper)
        # a kind multiplier's value where its kind has no point to fit it: the base profile's (log)
        self.base = np.array([math.log(eff.attention_kind.get(p.attention_kind, 1.0)) if p.attention_kind else 0.0 for p in fit])

    def active(self, chosen: list[int]) -> list[int]:
        """Indices of the parameters the sets ``chosen`` determine: all but the kind multipliers of a
        kind none of their models has."""
        kinds = set().union(*(model_kinds(self.sets[k].model) for k in chosen))
        return [i for i, p in enumerate(self.fit) if not p.attention_kind or p.attention_kind in kinds]

    def values(self, x: np.ndarray) -> dict[str, float]:
        eff, out = self.hardware.efficiency, {}
        for p, v in zip(self.fit, x):
            if p == FitParam.prefill_overhead_s:
                out[p.value] = float(v)
            elif p == FitParam.compute:
                out["matmul"], out["attention"] = eff.matmul * math.exp(v), eff.attention * math.exp(v)
            else:
                out[p.value] = math.exp(v)
        for name, base in _KEEPS_RATIO.items():  # a per-dtype fraction keeps its measured ratio to bf16
            if base in out and getattr(eff, name) is not None:
                out[name] = min(1.0, getattr(eff, name) * out[base] / getattr(eff, base))
        return out

    def reported(self, x: np.ndarray) -> dict[str, float]:
        """The fitted parameters in their own units (compute: the factor on both fractions)."""
        return {p.value: (float(v) if p == FitParam.prefill_overhead_s else math.exp(v)) for p, v in zip(self.fit, x)}

    def predict(self, x: np.ndarray, sets: list[int] | None = None) -> np.ndarray:
        hw = _with_efficiency(self.hardware, self.values(x))
        out = []
        for k in range(len(self.sets)) if sets is None else sets:
            s = self.sets[k]
            curve = RooflinePrefill(s.model, Instance(hw, s.gpus, self.layouts[k], s.engine))
            out.append(curve.prefill_s(np.array([p.length_tokens for p in s.points], dtype=float)))
        return np.concatenate(out)

    def solve(self, sets: list[int] | None = None):
        """The exact solution by bisection when one fraction (and the overhead) meet as many
        points; else scipy least_squares from several starting points, the best result."""
        chosen = list(range(len(self.sets))) if sets is None else sets
        measured = np.concatenate([[p.prefill_s for p in self.sets[k].points] for k in chosen])
        active = self.active(chosen)
        if len(active) == len(self.fit):
            exact = self._exact(chosen, measured)
            if exact is not None:
                return exact
        from scipy.optimize import least_squares

        upper = self.upper.copy()
        for i, p in enumerate(self.fit):
            if p == FitParam.prefill_overhead_s:
                upper[i] = float(measured.min())
        lower, upper = self.lower[active], upper[active]

        def full(xa):
            x = self.base.copy()
            x[active] = xa
            return x

        def residuals(xa):
            return np.log(self.predict(full(xa), chosen)) - np.log(measured)

        best = None
        for eff0, over0 in itertools.product((0.05, 0.2, 0.6), (0.0, 0.5)):
            x0 = []
            for i in active:
                p = self.fit[i]
                if p == FitParam.prefill_overhead_s:
                    x0.append(over0 * float(measured.min()))
                elif p == FitParam.compute:
                    x0.append(math.log(eff0 / self.hardware.efficiency.matmul))
                elif p.attention_kind:  # a multiplier on the fractions: start around the base's 1
                    x0.append(self.base[i] + math.log(eff0 / 0.2))
                else:
                    x0.append(math.log(eff0))
            start = np.clip(x0, lower, upper - 1e-9 * (np.abs(upper) + 1e-9))
            res = least_squares(residuals, start, bounds=(lower, upper), x_scale="jac", diff_step=1e-4)
            if best is None or res.cost < best.cost:
                best = res
            if best.cost < EXACT_COST:  # the points are reproduced: no start can do better
                break
        assert best is not None  # six starts
        best.x = full(best.x)  # the held multipliers at their base value
        return best

    def _exact(self, chosen: list[int], measured: np.ndarray):
        """One fraction for one point, or one fraction and the overhead for two: the overhead
        adds the same to every TTFT, so the fraction alone sets the gap between two points
        (bisection, the gap falling as the fraction rises), then the overhead closes the rest."""
        fractions = [i for i, p in enumerate(self.fit) if p != FitParam.prefill_overhead_s]
        if len(fractions) != 1 or len(measured) != len(self.fit) or len(measured) > 2:
            return None
        i = fractions[0]

        def at(v: float) -> np.ndarray:
            x = np.zeros(len(self.fit))
            x[i] = v
            return self.predict(x, chosen)

        if len(measured) == 1:
            v = _bisect(lambda v: float(at(v)[0]) - measured[0], self.lower[i], self.upper[i])
            x = None if v is None else np.array([v])
        else:
            v = _bisect(lambda v: float(np.diff(at(v))[0]) - float(np.diff(measured)[0]), self.lower[i], self.upper[i])
            overhead = None if v is None else float(measured[0] - at(v)[0])
            x = None
            if overhead is not None and 0.0 <= overhead <= measured.min():
                x = np.zeros(2)
                x[i], x[1 - i] = v, overhead
        return None if x is None else SimpleNamespace(x=x, cost=0.0, jac=None)


def fit_key(sets: list[CalibrationSet], hardware: HardwareProfile, params: tuple[FitParam, ...]) -> str:
    """A fit's inputs by content (``shipped.key_of``): the hardware and each set's model (their
    profiles' JSON), chips, points (tokens, seconds), layout and engine, and the parameters fitted."""
    return shipped.key_of(
        [
            shipped.profile_key(hardware),
            [str(p) for p in params],
            [
                [
                    shipped.profile_key(s.model),
                    s.gpus,
                    [[p.length_tokens, p.prefill_s] for p in s.points],
                    repr(s.layout),
                    repr(s.engine),
                ]
                for s in sets
            ],
        ]
    )


def _bisect(fn, lo: float, hi: float, iterations: int = 200, xtol: float = 1e-12) -> float | None:
    """Root of a monotone ``fn`` on [lo, hi] (here log fractions) to within ``xtol`` (relative);
    None without a sign change. The Illinois variant of false position keeps the bracket, as
    bisection does, and halves the stale end's value; after three steps in a row that do not
    halve the bracket a bisection step follows, so it is never much slower than bisection, and
    on smooth functions takes about a dozen evaluations rather than sixty."""
    f_lo, f_hi = fn(lo), fn(hi)
    if f_lo == 0:
        return lo
    if f_hi == 0:
        return hi
    if f_lo * f_hi > 0:
        return None
    side, slow, width = 0, 0, hi - lo
    for _ in range(iterations):
        if hi - lo <= xtol * max(1.0, abs(lo), abs(hi)):
            break
        x = (lo + hi) / 2 if slow >= 3 else (lo * f_hi - hi * f_lo) / (f_hi - f_lo)
        if not lo < x < hi:
            x = (lo + hi) / 2
        fx = fn(x)
        if fx == 0:
            return x
        if (fx > 0) == (f_lo > 0):
            lo, f_lo = x, fx
            if side == -1:
                f_hi /= 2
            side = -1
        else:
            hi, f_hi = x, fx
            if side == 1:
                f_lo /= 2
            side = 1
        # three steps in a row that do not halve the bracket: the next one bisects
        slow = 0 if (hi - lo) <= width / 2 or slow >= 3 else slow + 1
        width = hi - lo
    return (lo + hi) / 2


def _uncertainty(fit: _Fit, res, points: int) -> dict[str, float | None]:
    """One standard error per parameter (in its own units) from the Jacobian at the fit."""
    dof = points - len(fit.fit)
    if dof <= 0:
        return {p.value: None for p in fit.fit}
    jac = np.asarray(res.jac, dtype=float)
    s2 = float(2 * res.cost) / dof
    jtj = jac.T @ jac
    if np.linalg.matrix_rank(jtj) < len(fit.fit):
        cov = np.full((len(fit.fit),) * 2, np.inf)
    else:
        cov = s2 * np.linalg.inv(jtj)
    out: dict[str, float | None] = {}
    for i, p in enumerate(fit.fit):
        sd = math.sqrt(cov[i, i]) if cov[i, i] >= 0 else math.inf
        value = fit.reported(res.x)[p.value]
        sd = sd if p == FitParam.prefill_overhead_s else value * sd  # d exp(x) = exp(x) dx
        out[p.value] = sd if math.isfinite(sd) else None
    return out


def calibrate(
    model: ModelProfile,
    hardware: HardwareProfile,
    gpus: int,
    points: list[CalibrationPoint],
    name: str | None = None,
    fit=None,
    layout: Layout | None = None,
    engine: Engine | None = None,
) -> CalibrationResult:
    """Fit ``fit`` (default matmul, attention, prefill_overhead_s) to one model's points."""
    return calibrate_sets([CalibrationSet(model, gpus, points, layout, engine or Engine())], hardware, name, fit)


def calibrate_sets(sets: list[CalibrationSet], hardware: HardwareProfile, name: str | None = None, fit=None) -> CalibrationResult:
    """Fit one set of parameters to the points of several models (see the module doc)."""
    for s in sets:
        for point in s.points:
            try:
                check_lengths(s.model, [point.length_tokens], field=point.where or "length")
            except PlanInputError as exc:
                raise PlanInputError(exc.reason, field=exc.field) from None
    n = sum(len(s.points) for s in sets)
    params = check_fit(fit, n)
    kinds = set().union(*(model_kinds(s.model) for s in sets))
    for p in params:
        if p.attention_kind and p.attention_kind not in kinds:
            raise PlanInputError(
                f"{p} cannot be fitted: no layer of {', '.join(sorted({s.model.name for s in sets}))} "
                f"is of kind {p.attention_kind} (kinds: {', '.join(sorted(kinds))})",
                field="fit",
            )
    key = fit_key(sets, hardware, params)
    known = shipped.lookup("fits", key)
    if known is None:
        problem = _Fit(sets, hardware, params)
        res = problem.solve()
        if res.jac is None:  # an exact fit (``_Fit._exact``)
            shipped.record(
                "fits", key, {"layouts": [asdict(layout) for layout in problem.layouts], "x": [float(v) for v in res.x]}
            )
    else:
        problem = _Fit(sets, hardware, params, [Layout(**layout) for layout in known["layouts"]])
        res = SimpleNamespace(x=np.array(known["x"], dtype=float), cost=0.0, jac=None)
    fitted_values = problem.values(res.x)
    calibrated = _with_efficiency(hardware, fitted_values, name or f"{hardware.name}-calibrated")
    predicted = problem.predict(res.x)
    point_fits, k = [], 0
    for s in sets:
        kv = RooflinePrefill(s.model, Instance(calibrated, s.gpus)).kv_bytes(
            np.array([p.length_tokens for p in s.points], dtype=float)
        )
        for point, model_kv in zip(s.points, kv):
            point_fits.append(
                PointFit(
                    point.length_tokens,
                    point.prefill_s,
                    float(predicted[k]),
                    point.kv_bytes,
                    float(model_kv),
                    s.model.name,
                    s.gpus,
                )
            )
            k += 1
    models = list(dict.fromkeys(s.model.name for s in sets))
    uncertainty = _uncertainty(problem, res, n)
    loo = _leave_one_model_out(problem, sets, models)
    reported = problem.reported(res.x)
    before = {
        p.value: (
            1.0
            if p == FitParam.compute
            else hardware.efficiency.attention_kind.get(p.attention_kind, 1.0)
            if p.attention_kind
            else float(getattr(hardware.efficiency, p.value))
        )
        for p in params
    }
    record = CalibrationRecord.model_validate(
        {
            "fitted_on_model": "+".join(models)[:128],
            "gpus": sets[0].gpus,
            "base_profile": hardware.name,
            "date": date.today().isoformat(),
            "fitted": {k: round(v, 6) for k, v in fitted_values.items()},
            "uncertainty": {k: round(v, 6) for k, v in uncertainty.items() if v is not None},
            "points": [
                {
                    "length_tokens": f.length_tokens,
                    "measured_s": f.measured_s,
                    "predicted_s": round(f.predicted_s, 6),
                    **({"model": f.model} if len(models) > 1 else {}),
                }
                for f in point_fits
            ],
            "max_abs_error": round(max(abs(f.error) for f in point_fits), 6),
            "models": models if len(models) > 1 else [],
        }
    )
    calibrated = calibrated.model_copy(
        update={"calibration": record, "efficiency_sources": _fitted_sources(hardware, fitted_values, n, models)}
    )
    worst = max(point_fits, key=lambda f: abs(f.error))
    if abs(worst.error) > MAX_FIT_ERROR:
        raise PlanInputError(
            f"the roofline of {worst.model} on {worst.gpus} x {hardware.name} cannot reproduce these points: "
            f"{100 * worst.error:+.0f}% at {worst.length_tokens} tokens even with the best fit "
            f"({', '.join(f'{k} {v:.3g}' for k, v in reported.items())}); check the model, `gpus` and that "
            "prefill_s is in seconds",
            field="points",
        )
    sizes = sorted({s.gpus for s in sets})
    instance = f"{'/'.join(map(str, sizes))}x{hardware.name}"
    return CalibrationResult("+".join(models), instance, reported, before, point_fits, calibrated, uncertainty, loo)


def _leave_one_model_out(problem: _Fit, sets: list[CalibrationSet], models: list[str]) -> dict[str, float | None]:
    """Per model: the largest |predicted / measured - 1| of its points when fitted without it
    (None when the other models' points cannot determine the parameters)."""
    if len(models) < 2:
        return {}
    out: dict[str, float | None] = {}
    for model in models:
        rest = [k for k, s in enumerate(sets) if s.model.name != model]
        held = [k for k, s in enumerate(sets) if s.model.name == model]
        if sum(len(sets[k].points) for k in rest) < len(problem.active(rest)):
            out[model] = None
            continue
        res = problem.solve(rest)
        predicted = problem.predict(res.x, held)
        measured = np.concatenate([[p.prefill_s for p in sets[k].points] for k in held])
        out[model] = float(np.max(np.abs(predicted / measured - 1.0)))
    return out


def hardware_to_yaml_dict(hardware: HardwareProfile) -> dict:
    """A hardware profile as a plain mapping that loads back to the same profile."""
    return hardware.model_dump(mode="json", exclude_none=True)
