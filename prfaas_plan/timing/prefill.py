"""T_prefill(l), S_kv(l) and Phi_kv(l) of one instance.

Two sources:
- ``RooflinePrefill``: T_prefill(l) = overhead + sum over layers of the roofline time of
  the layer's prefill work (``accounting.work``); S_kv(l) exact from ``accounting.kv``.
- ``MeasuredPrefill``: a profile's measured points (length -> latency, and optionally KV
  bytes) interpolated with a monotone cubic (PCHIP, which keeps monotone data monotone)
  in log-log space (prefill curves are close to power laws l^a between points) and,
  outside the measured range, extrapolated with the roofline's shape:
  T(l) = T(l_edge) * T_roof(l) / T_roof(l_edge) (likewise for S_kv).
Phi_kv(l) = S_kv(l) / T_prefill(l)  (paper eq. 1), reported in decimal Gbps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ..accounting.kv import KvModel
from ..accounting.work import prefill_work
from ..choices import CurveSource
from ..errors import PlanInputError, warn
from ..pchip import pchip
from ..profiles.model import MeasuredProfile, ModelProfile
from ..profiles.registry import is_shipped_profile
from ..ranges import TOKENS
from ..units import bytes_per_s_to_gbps
from .instance import Instance


class PrefillCurve(Protocol):
    source: str

    def prefill_s(self, lengths_tokens) -> np.ndarray: ...

    def kv_bytes(self, lengths_tokens) -> np.ndarray: ...


@dataclass(frozen=True)
class RooflinePrefill:
    model: ModelProfile
    instance: Instance
    source: str = "roofline"

    def prefill_s(self, lengths_tokens) -> np.ndarray:
        groups = prefill_work(self.model, lengths_tokens)
        seconds = self.instance.pass_seconds(groups, self.model.dtypes.weights, self.model.dtypes.experts)
        return seconds + self.instance.hardware.efficiency.prefill_overhead_s

    def kv_bytes(self, lengths_tokens) -> np.ndarray:
        return KvModel.of(self.model).bytes_at(lengths_tokens)


@dataclass(frozen=True)
class MeasuredPrefill:
    measured: MeasuredProfile
    roofline: RooflinePrefill
    source: str = "measured"

    def _points(self):
        pts = sorted(self.measured.prefill, key=lambda p: p.length_tokens)
        return np.array([p.length_tokens for p in pts], float), pts

    def _interp(self, lengths, xs: np.ndarray, ys: np.ndarray, shape) -> np.ndarray:
        """Measured values ys at xs, carried to ``lengths`` along the roofline's shape.

        value(l) = shape(l) * r(l), where r = ys / shape(xs) is interpolated by a monotone
        cubic (PCHIP) in log l and held constant outside the points; should that product
        ever fall between two points (noisy data), the values themselves are interpolated
        by PCHIP in log-log space instead, which keeps them monotone.
        """
        l = np.atleast_1d(np.asarray(lengths, dtype=float))
        ratio = ys / shape(xs)
        if len(xs) == 1:
            out = shape(l) * ratio[0]
        else:
            log_x = np.log(xs)
            grid = np.exp(np.linspace(log_x[0], log_x[-1], 512))
            if np.all(np.diff(shape(grid) * pchip(log_x, ratio, np.log(grid))) >= 0):
                out = shape(l) * pchip(log_x, ratio, np.log(l))
            else:
                inside = np.clip(l, xs[0], xs[-1])
                out = np.exp(pchip(log_x, np.log(ys), np.log(inside))) * shape(l) / shape(inside)
        return out.reshape(np.shape(lengths)) if np.ndim(lengths) else out

    def prefill_s(self, lengths_tokens) -> np.ndarray:
        xs, pts = self._points()
        ys = np.array([p.prefill_s for p in pts])
        return self._interp(lengths_tokens, xs, ys, self.roofline.prefill_s)

    def kv_bytes(self, lengths_tokens) -> np.ndarray:
        xs, pts = self._points()
        if pts[0].kv is None:
            return self.roofline.kv_bytes(lengths_tokens)
        ys = np.array([p.kv for p in pts])
        return self._interp(lengths_tokens, xs, ys, self.roofline.kv_bytes)


def measured_for(model: ModelProfile, instance: Instance) -> MeasuredProfile | None:
    """The model's measurements on this instance: same hardware name and chip count, and the
    hardware profile is the shipped one of that name (a user's profile that reuses a shipped
    name with other figures gets the roofline, with a warning; a calibrated copy gets the
    roofline of its calibration, silently: it was asked for)."""
    measured = model.measured_for(instance.hardware.name, instance.gpus)
    if measured is None or instance.hardware.calibration is not None:
        return None
    if not is_shipped_profile(instance.hardware):
        warn(f"hardware '{instance.hardware.name}' differs from the shipped profile of that name, so "
             f"{model.name}'s measured points for {instance.label} are not used (roofline instead)")
        return None
    return measured


def prefill_curve(model: ModelProfile, instance: Instance, source: str = CurveSource.auto) -> PrefillCurve:
    """The prefill curve for a model on an instance.

    ``auto`` uses the model's measured points for this hardware and GPU count when it has
    them (``measured_for``), else the roofline; ``measured`` insists on measured points.
    """
    source = CurveSource(source)
    roofline = RooflinePrefill(model, instance)
    if source == CurveSource.roofline:
        return roofline
    measured = measured_for(model, instance)
    if measured is not None and measured.prefill:
        return MeasuredPrefill(measured, roofline)
    if source == CurveSource.measured:
        have = ", ".join(f"{m.gpus}x{m.hardware}" for m in model.measured if m.prefill) or "none"
        raise PlanInputError(
            f"model '{model.name}' has no measured prefill points for {instance.label} (has: {have})",
            field="source",
        )
    return roofline


@dataclass(frozen=True)
class KvRow:
    length_tokens: int
    kv_bytes: int
    prefill_s: float
    phi_kv_gbps: float


def check_lengths(model: ModelProfile, lengths_tokens: list[int], field: str = "lengths") -> None:
    """Every length is a token count in [1, 16M] and within the model's context."""
    for length in lengths_tokens:
        TOKENS.check(length, field)
        if length > model.max_context_tokens:
            raise PlanInputError(f"{length:,} tokens exceeds {model.name}'s context of {model.max_context_tokens:,} "
                                 "tokens", field=field)


@dataclass(frozen=True)
class KvReport:
    """S_kv, T_prefill and Phi_kv of a model on an instance at several lengths."""

    model: ModelProfile
    instance: Instance
    source: str  # 'roofline' or 'measured'
    kv_model: KvModel
    rows: list[KvRow]


def kv_table(curve: PrefillCurve, model: ModelProfile, lengths_tokens: list[int]) -> list[KvRow]:
    """S_kv, T_prefill and Phi_kv = S_kv / T_prefill (Gbps) at each length."""
    check_lengths(model, lengths_tokens)
    lengths = np.asarray(lengths_tokens, dtype=float)
    kv = curve.kv_bytes(lengths)
    t = curve.prefill_s(lengths)
    return [
        KvRow(int(l), int(round(k)), float(s), float(bytes_per_s_to_gbps(k / s)))
        for l, k, s in zip(lengths_tokens, kv, t)
    ]
