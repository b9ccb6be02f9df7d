"""Monotone piecewise-cubic Hermite interpolation (PCHIP, Fritsch-Carlson / Fritsch-Butland).

The same interpolant as ``scipy.interpolate.PchipInterpolator`` (derivatives: weighted
harmonic means of neighbouring secants, zero at local extrema; one-sided three-point
ends), written out because importing ``scipy.interpolate`` costs about 0.25 s, a quarter
of the CLI's planning budget. ``tests/test_pchip.py`` checks it against scipy.
Monotone data gives a monotone interpolant.
"""

from __future__ import annotations

import numpy as np


def _edge(h0: float, h1: float, m0: float, m1: float) -> float:
    d = ((2 * h0 + h1) * m0 - h0 * m1) / (h0 + h1)
    if np.sign(d) != np.sign(m0):
        return 0.0
    if np.sign(m0) != np.sign(m1) and abs(d) > 3 * abs(m0):
        return 3 * m0
    return d


def pchip_slopes(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Derivatives at the knots (x strictly increasing, at least two points)."""
    h = np.diff(x)
    m = np.diff(y) / h
    if len(x) == 2:
        return np.array([m[0], m[0]])
    d = np.empty_like(y, dtype=float)
    w1 = 2 * h[1:] + h[:-1]
    w2 = h[1:] + 2 * h[:-1]
    flat = (np.sign(m[1:]) != np.sign(m[:-1])) | (m[1:] == 0) | (m[:-1] == 0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        harmonic = (w1 / m[:-1] + w2 / m[1:]) / (w1 + w2)
        d[1:-1] = np.where(flat, 0.0, 1.0 / harmonic)
    d[0] = _edge(h[0], h[1], m[0], m[1])
    d[-1] = _edge(h[-1], h[-2], m[-1], m[-2])
    return d


def pchip(x, y, at) -> np.ndarray:
    """Evaluate the PCHIP interpolant through (x, y) at ``at`` (clipped to [x0, xn])."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    at = np.clip(np.asarray(at, dtype=float), x[0], x[-1])
    d = pchip_slopes(x, y)
    k = np.clip(np.searchsorted(x, at, side="right") - 1, 0, len(x) - 2)
    h = x[k + 1] - x[k]
    s = (at - x[k]) / h
    h00 = (1 + 2 * s) * (1 - s) ** 2
    h10 = s * (1 - s) ** 2
    h01 = s**2 * (3 - 2 * s)
    h11 = s**2 * (s - 1)
    return h00 * y[k] + h10 * h * d[k] + h01 * y[k + 1] + h11 * h * d[k + 1]
