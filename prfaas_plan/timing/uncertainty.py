"""An empirical interval on the instance model's figures, from its residuals on published
measurements of real deployments (``timing/residuals.csv``, written by ``tools/residuals.py``
from the published test sets; the library reads only that shipped file).

Each residual row is one published figure: its figure group (``prefill``: prefill tokens/s and
TTFT; ``decode``: decode tokens/s, TPOT and tokens/s per user; ``e2e``: end-to-end tokens/s and
latency), the engine (``choices.EngineName``) and r = predicted / measured. Figures are put on one
orientation, a speed, so that a rate and a time of one group pool together:

    x = ln(measured speed / predicted speed) = -ln r   for a rate (tokens/s)
                                             = +ln r   for a time (TTFT, TPOT, latency)

The interval on x for a (group, engine) cell is taken from the n rows of the cell when it has at
least ``MIN_ROWS``, else from the rows of the group (every engine), else from every row; the
engine ``generic`` (none named) always takes the group's pool (an unnamed engine may be any of
them). Two methods, each at the two-sided level c = ``LEVEL``:

- ``order_statistic`` (the default): the distribution-free prediction interval of n exchangeable
  values, [x_(k), x_(n+1-k)] (1-based order statistics) with k = floor((n + 1)(1 - c) / 2); a new
  value falls in it with probability (n + 1 - 2k) / (n + 1) >= c; needs k >= 1, i.e.
  n >= 2 / (1 - c) - 1 (9 rows at c = 0.8), which is ``MIN_ROWS``;
- ``t_band``: mean +- t_{(1+c)/2, n-1} s sqrt(1 + 1/n) (s the sample standard deviation), the
  prediction interval of a normal sample.

The band on the figure is [exp(min(x_lo, 0)), exp(max(x_hi, 0))] times the predicted speed (a
time: divided by the factors): it always holds the model's own figure, which is not corrected by
the residuals (that would fit the model to its test set). Leave-one-out (``leave_one_out``):
each row's interval is computed from the other rows only, and the coverage is the share of rows
inside their own interval.

This is an empirical interval from public measurements, not a guarantee: the published rows are
few, of a few engines and chips, and a deployment unlike all of them may fall outside it.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from importlib import resources

from ..choices import EngineName

LEVEL = 0.8  # two-sided level c of the interval


class Method(StrEnum):
    order_statistic = "order_statistic"
    t_band = "t_band"


METHOD = Method.order_statistic
MIN_ROWS = math.ceil(2 / (1 - LEVEL) - 1 - 1e-9)  # the fewest rows for a finite order-statistic interval (9)

# figure group and orientation of each published kind ('rate': more is faster; 'time': less is)
KIND_FIGURES = {
    "prefill_tps": ("prefill", "rate"),
    "ttft": ("prefill", "time"),
    "decode_tps": ("decode", "rate"),
    "tpot": ("decode", "time"),
    "user_tps": ("decode", "rate"),
    "e2e_tps": ("e2e", "rate"),
    "e2e_latency": ("e2e", "time"),
}
GROUPS = ("prefill", "decode", "e2e")
RESIDUAL_COLUMNS = ("id", "set", "kind", "group", "orientation", "engine", "hardware", "ratio_predicted_over_measured")


@dataclass(frozen=True)
class Residual:
    id: str
    set: str  # the published file it comes from
    kind: str
    group: str
    orientation: str  # 'rate' or 'time'
    engine: str
    hardware: str
    ratio: float  # predicted / measured

    @property
    def x(self) -> float:
        """ln(measured speed / predicted speed) (see the module doc)."""
        return -math.log(self.ratio) if self.orientation == "rate" else math.log(self.ratio)


@dataclass(frozen=True)
class Band:
    """Factors on the predicted speed: the measured speed lies in [low, high] x predicted
    (low <= 1 <= high); ``pool`` names the rows it came from, ``rows`` how many."""

    low: float
    high: float
    pool: str
    rows: int
    method: str = METHOD

    @property
    def width(self) -> float:
        """high / low (x)."""
        return self.high / self.low

    def rate(self, value: float) -> tuple[float, float]:
        """(low, high) of a rate predicted at ``value``."""
        return value * self.low, value * self.high

    def time(self, value: float) -> tuple[float, float]:
        """(low, high) of a time predicted at ``value`` (a faster deployment takes less)."""
        return value / self.high, value / self.low

    def covers(self, residual: Residual) -> bool:
        return math.log(self.low) - 1e-12 <= residual.x <= math.log(self.high) + 1e-12


EXACT = Band(1.0, 1.0, "none: taken as given", 0, "none")


def read_residuals(text: str | None = None) -> tuple[Residual, ...]:
    """The residual rows of ``text`` (CSV of ``RESIDUAL_COLUMNS``), by default the shipped file."""
    if text is None:
        return shipped()
    return tuple(
        Residual(
            r["id"],
            r["set"],
            r["kind"],
            r["group"],
            r["orientation"],
            r["engine"],
            r["hardware"],
            float(r["ratio_predicted_over_measured"]),
        )
        for r in csv.DictReader(io.StringIO(text))
    )


@lru_cache(maxsize=1)
def shipped() -> tuple[Residual, ...]:
    """The shipped residuals (``timing/residuals.csv``)."""
    return read_residuals(resources.files(__package__).joinpath("residuals.csv").read_text(encoding="utf-8"))


def interval(xs: list[float], method: str = METHOD, level: float = LEVEL) -> tuple[float, float]:
    """(x_lo, x_hi) of the values ``xs`` by ``method`` (module doc); a ValueError when too few."""
    n = len(xs)
    if Method(method) == Method.order_statistic:
        k = math.floor((n + 1) * (1 - level) / 2 + 1e-9)
        if k < 1:
            raise ValueError(f"{n} rows are too few for an order-statistic interval at {level:g}")
        ordered = sorted(xs)
        return ordered[k - 1], ordered[n - k]
    if n < 3:
        raise ValueError(f"{n} rows are too few for a t band")
    mean = sum(xs) / n
    s = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    from scipy import stats  # here: scipy.stats imports its optimiser and interpolation (CLI start-up)

    half = float(stats.t.ppf((1 + level) / 2, n - 1)) * s * math.sqrt(1 + 1 / n)
    return mean - half, mean + half


def band(
    group: str,
    engine: str = EngineName.generic,
    residuals: tuple[Residual, ...] | None = None,
    method: str = METHOD,
    min_rows: int = MIN_ROWS,
    exclude: str | None = None,
) -> Band:
    """The band of a figure group on an engine (module doc: the cell, else the group, else every
    row); ``exclude`` leaves one row out (by id and set, 'set/id')."""
    rows = [r for r in (read_residuals() if residuals is None else residuals) if f"{r.set}/{r.id}" != exclude]
    pools = (
        [(f"{group}/{engine}", [r for r in rows if r.group == group and r.engine == engine])]
        if engine != EngineName.generic
        else []
    )
    pools += [(group, [r for r in rows if r.group == group]), ("all", rows)]
    for name, chosen in pools:
        if len(chosen) >= min_rows:
            lo, hi = interval([r.x for r in chosen], method)
            return Band(math.exp(min(lo, 0.0)), math.exp(max(hi, 0.0)), name, len(chosen), str(method))
    raise ValueError(f"{len(rows)} residual rows are too few for an interval (at least {min_rows})")


@dataclass(frozen=True)
class LeaveOneOut:
    rows: tuple[tuple[Residual, Band, bool], ...]  # each row, its interval without it, whether it is inside

    @property
    def coverage(self) -> float:
        return sum(inside for _, _, inside in self.rows) / len(self.rows)

    @property
    def median_width(self) -> float:
        widths = sorted(b.width for _, b, _ in self.rows)
        n = len(widths)
        return widths[n // 2] if n % 2 else math.sqrt(widths[n // 2 - 1] * widths[n // 2])


def leave_one_out(residuals: tuple[Residual, ...] | None = None, method: str = METHOD, min_rows: int = MIN_ROWS) -> LeaveOneOut:
    """Each row against the band of its group and engine computed without it."""
    rows = read_residuals() if residuals is None else residuals
    out = []
    for r in rows:
        b = band(r.group, r.engine, rows, method, min_rows, exclude=f"{r.set}/{r.id}")
        out.append((r, b, b.covers(r)))
    return LeaveOneOut(tuple(out))
