"""The hand-written PCHIP equals scipy's PchipInterpolator (kept out of the CLI's start-up)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.interpolate import PchipInterpolator

from prfaas_plan.pchip import pchip


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=2, max_size=12),
    st.lists(st.floats(0.01, 10), min_size=12, max_size=12),
)
def test_matches_scipy(ys, gaps):
    x = np.cumsum(gaps[: len(ys)])
    y = np.array(ys)
    at = np.linspace(x[0], x[-1], 97)
    assert np.allclose(pchip(x, y, at), PchipInterpolator(x, y)(at), rtol=1e-9, atol=1e-9 * (1 + np.abs(y).max()))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.0, 100.0), min_size=3, max_size=10))
def test_monotone_data_gives_monotone_curve(steps):
    x = np.arange(len(steps), dtype=float)
    y = np.cumsum(steps)
    values = pchip(x, y, np.linspace(0, len(steps) - 1, 500))
    assert np.all(np.diff(values) >= -1e-9 * (1 + abs(y[-1])))


def test_two_points_is_linear_and_clipped():
    assert np.allclose(pchip([0, 2], [1, 5], [-1, 0, 1, 2, 3]), [1, 1, 3, 5, 5])
