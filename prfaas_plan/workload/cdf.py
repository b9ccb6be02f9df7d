"""A length distribution given as a cumulative distribution function (``{type: cdf}``), the
form public workload summaries come in: points ``[tokens, F]`` with F = P(L <= tokens).

Meaning: the CDF is piecewise linear through (0, 0) and the points, so the requests between
two points are spread uniformly over that interval, and a first point with F > 0 spreads its
share uniformly over (0, tokens]. That is exactly the histogram with edges
[0, t_1, ..., t_n] and counts [F_1, F_2 - F_1, ..., F_n - F_(n-1)] (``cdf_buckets``), which is
how ``distributions.from_cdf`` builds it: each interval becomes ``points_per_bin`` equal point masses at its sub-bin
midpoints (midpoints below 1 token become 1), so the mean is the exact mean of the linear CDF,
sum_i (F_i - F_(i-1)) (t_(i-1) + t_i) / 2, and a quantile is within one sub-bin of the linear
interpolation.

Checked: tokens strictly increasing, each in [1, 16M]; F non-decreasing, each in [0, 1]; the
last F equal to 1 within ``F_TOLERANCE`` (the masses are then divided by it, so they sum to 1); at
most ``ranges.LIST_ITEMS`` points. A file is JSON (``[[tokens, F], ...]`` or
``{"cdf": [[tokens, F], ...]}``) read with ``yamlio``'s size, depth and value limits.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..errors import PlanInputError, show
from ..ranges import LIST_ITEMS, TOKENS

F_TOLERANCE = 1e-6  # |F(last) - 1| accepted (float rounding of a published 1.0), then normalised away


def cdf_buckets(tokens: ArrayLike, fractions: ArrayLike, field: str = "points") -> tuple[np.ndarray, np.ndarray]:
    """The histogram (edges [0, t_1, ..., t_n] in tokens, masses [F_1, F_2 - F_1, ...]) of the CDF
    linear through (0, 0) and (tokens_i, fractions_i), fractions_i = P(L <= tokens_i).

    Errors name ``{field}[i]``, the first offending point (``distributions.from_cdf`` builds it)."""
    t = np.asarray(tokens, dtype=np.float64).ravel()
    f = np.asarray(fractions, dtype=np.float64).ravel()
    if t.size == 0 or t.shape != f.shape:
        raise PlanInputError("needs at least one [tokens, F] point (tokens and F of equal length)", field=field)
    if t.size > LIST_ITEMS.hi:
        raise PlanInputError(f"{t.size:,} points (at most {int(LIST_ITEMS.hi):,})", field=field)
    for i in range(t.size):
        reason = TOKENS.problem(float(t[i])) or _fraction_problem(f[i])
        if reason is None and i > 0 and not t[i] > t[i - 1]:
            reason = f"tokens {t[i]:g} must be above the previous point's {t[i - 1]:g} (tokens strictly increasing)"
        if reason is None and i > 0 and f[i] < f[i - 1]:
            reason = f"F {f[i]:g} is below the previous point's {f[i - 1]:g} (a CDF never decreases)"
        if reason is not None:
            raise PlanInputError(reason, field=f"{field}[{i}]")
    if abs(f[-1] - 1.0) > F_TOLERANCE:
        raise PlanInputError(
            f"the last point must have F = 1 (every request at most its length), got {f[-1]:g}; "
            "add the point of the longest length",
            field=f"{field}[{t.size - 1}]",
        )
    return np.concatenate(([0.0], t)), np.diff(np.concatenate(([0.0], f)))  # sum F_n: ``histogram`` normalises


def _fraction_problem(value: float) -> str | None:
    if not np.isfinite(value) or not 0.0 <= value <= 1.0:
        return f"F must be a fraction in [0, 1], got {value:g}"
    return None


def read_cdf_file(path: str | Path) -> tuple[list[tuple[float, float]], str]:
    """The points of a JSON CDF file and the field they are under ('cdf' for ``{"cdf": [...]}``,
    '' for a bare list); errors name the file and the point."""
    from pydantic import TypeAdapter, ValidationError

    from ..profiles._base import first_error
    from ..profiles.workload_spec import CdfPoints
    from ..yamlio import load_json_file

    source = str(path)
    data: Any = load_json_file(path)
    field = ""
    if isinstance(data, dict):
        extra = sorted(set(data) - {"cdf"})
        if extra:
            raise PlanInputError(
                "unknown field (a CDF file is [[tokens, F], ...] or {\"cdf\": [...]})", source=source, field=str(extra[0])[:40]
            )
        if "cdf" not in data:
            raise PlanInputError("required field is missing", source=source, field="cdf")
        data, field = data["cdf"], "cdf"
    elif not isinstance(data, list):
        raise PlanInputError(f"expected [[tokens, F], ...] or {{\"cdf\": [...]}}, got {show(data)}", source=source)
    try:
        points = TypeAdapter(CdfPoints).validate_python(data)
    except ValidationError as exc:
        err = first_error(exc, source)
        raise PlanInputError(err.reason, source=source, field=field + (err.field or "")) from None
    return points, field
