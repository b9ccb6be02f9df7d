"""Discrete request-length distributions and their class statistics (paper section 3.4).

A distribution is a finite support of lengths in tokens with probabilities. The throughput
model splits requests at a threshold t: a request goes to PrfaaS (the long class) iff L > t,
so p = P(L > t), l_long = E[L | L > t] and l_short = E[L | L <= t]. ``ClassStats`` answers
these, and the class means of any per-length quantity, from cumulative sums in O(log n)
per threshold.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from ..choices import WorkloadType
from ..errors import PlanInputError, under
from ..ranges import MAX_SUPPORT_POINTS
from .cdf import cdf_buckets
from .trace import read_length_trace

_PROB_SUM_TOLERANCE = 1e-9


@dataclass(frozen=True, eq=False)
class LengthDistribution:
    """Discrete distribution of lengths in tokens: ascending support points and probabilities summing to 1."""

    lengths_tokens: np.ndarray  # float64, strictly ascending, > 0
    probs: np.ndarray  # float64, >= 0, sums to 1
    _cdf: np.ndarray = field(init=False, repr=False)  # P(L <= lengths_tokens[i]); last entry exactly 1

    def __post_init__(self) -> None:
        lengths = np.array(self.lengths_tokens, dtype=np.float64)
        probs = np.array(self.probs, dtype=np.float64)
        if lengths.ndim != 1 or lengths.size == 0 or probs.shape != lengths.shape:
            raise PlanInputError("lengths_tokens and probs must be non-empty 1-D arrays of equal length", field="probs")
        if not np.all(np.isfinite(lengths)) or lengths[0] <= 0 or np.any(np.diff(lengths) <= 0):
            raise PlanInputError("lengths_tokens must be finite, > 0 and strictly ascending", field="lengths_tokens")
        if not np.all(np.isfinite(probs)) or np.any(probs < 0) or abs(probs.sum() - 1.0) > _PROB_SUM_TOLERANCE:
            raise PlanInputError(f"probs must be >= 0 and sum to 1 (sum is {probs.sum():.12g})", field="probs")
        cumulative = np.cumsum(probs)
        cdf = cumulative / cumulative[-1]
        for name, array in (("lengths_tokens", lengths), ("probs", probs), ("_cdf", cdf)):
            array.setflags(write=False)
            object.__setattr__(self, name, array)

    def mean_tokens(self) -> float:
        """E[L] = sum_i p_i l_i, in tokens."""
        return float(self.lengths_tokens @ self.probs)

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """``size`` lengths in tokens drawn by inverse CDF: l_k with k = min{k: F(l_k) > u}, u ~ U[0, 1)."""
        return self.lengths_tokens[np.searchsorted(self._cdf, rng.random(size), side="right")]

    def quantile(self, q: ArrayLike) -> np.ndarray:
        """Smallest support point l with P(L <= l) >= q, in tokens, shaped like ``q`` (each q in [0, 1])."""
        q = np.asarray(q, dtype=np.float64)
        if not np.all((q >= 0.0) & (q <= 1.0)):
            raise PlanInputError("quantile levels must be in [0, 1]", field="q")
        return self.lengths_tokens[np.searchsorted(self._cdf, q, side="left")]


class ClassSplit(NamedTuple):
    """Class statistics at thresholds t, shaped like t (NumPy scalars for a scalar t); NaN where a class is empty.

    p = P(L > t); l_long = E[L | L > t] and l_short = E[L | L <= t], in tokens.
    """

    p: np.ndarray
    l_long: np.ndarray
    l_short: np.ndarray


@dataclass(frozen=True, eq=False)
class ClassStats:
    """Cumulative sums over a distribution's support giving class statistics in O(log n) per threshold.

    With k(t) = #{i: l_i <= t} (``searchsorted`` side='right'), the short class is i < k and
    the long class i >= k: p = P(L > t) = tail_probs[k] / tail_probs[0] (exactly 1 below the
    support and 0 at or above its top), E[L | L > t] = tail_tokens[k] / tail_probs[k] and
    E[L | L <= t] = head_tokens[k] / head_probs[k]. Head and tail sums are kept separately so
    that a small p is not lost to cancellation.
    """

    lengths_tokens: np.ndarray
    probs: np.ndarray
    head_probs: np.ndarray  # [k] = sum_{i<k} p_i, n + 1 entries
    tail_probs: np.ndarray  # [k] = sum_{i>=k} p_i
    head_tokens: np.ndarray  # [k] = sum_{i<k} p_i l_i
    tail_tokens: np.ndarray  # [k] = sum_{i>=k} p_i l_i

    def split(self, t_tokens: ArrayLike) -> ClassSplit:
        """p, l_long, l_short at thresholds ``t_tokens`` (a request is long iff L > t)."""
        k, p = self._classes(t_tokens)
        l_long, l_short = self._conditional_means(self.head_tokens, self.tail_tokens, k, p)
        # A class mean lies within its class's support; clipping removes last-bit rounding.
        n = self.lengths_tokens.size
        l_long = np.clip(l_long, self.lengths_tokens[np.minimum(k, n - 1)], self.lengths_tokens[-1])
        l_short = np.clip(l_short, self.lengths_tokens[0], self.lengths_tokens[np.maximum(k - 1, 0)])
        return ClassSplit(p, l_long, l_short)

    def class_means(self, values: ArrayLike, t_tokens: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """(E[v(L) | L > t], E[v(L) | L <= t]) for ``values`` v(l_i) given per support point.

        E[v | L > t] = sum_{i>=k} p_i v_i / sum_{i>=k} p_i (k as in ``split``); O(n) once, then
        O(log n) per threshold; NaN where a class is empty, exactly as in ``split``.
        """
        values = np.asarray(values, dtype=np.float64)
        if values.shape != self.lengths_tokens.shape:
            raise PlanInputError(
                f"values must have one entry per support point ({self.lengths_tokens.size}), got shape {values.shape}",
                field="values",
            )
        head, tail = _head_tail_sums(self.probs * values)
        return self._conditional_means(head, tail, *self._classes(t_tokens))

    def _classes(self, t_tokens: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """k(t) = #{i: l_i <= t} and p(t) = tail_probs[k] / tail_probs[0]."""
        t = np.asarray(t_tokens, dtype=np.float64)
        if np.any(np.isnan(t)):
            raise PlanInputError("thresholds must be numbers, got NaN", field="t_tokens")
        k = np.searchsorted(self.lengths_tokens, t, side="right")
        return k, self.tail_probs[k] / self.tail_probs[0]

    def _conditional_means(
        self, head: np.ndarray, tail: np.ndarray, k: np.ndarray, p: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """(tail[k] / tail_probs[k], head[k] / head_probs[k]); NaN where p == 0 (long) or p == 1 (short)."""
        long_mean = np.divide(tail[k], self.tail_probs[k], out=np.full(np.shape(k), np.nan), where=p > 0)
        short_mean = np.divide(head[k], self.head_probs[k], out=np.full(np.shape(k), np.nan), where=p < 1)
        return long_mean[()], short_mean[()]  # [()]: NumPy scalars for a scalar t


def class_stats_table(dist: LengthDistribution) -> ClassStats:
    """Precompute the head and tail cumulative sums of p_i and p_i l_i over ``dist``'s support."""
    head_probs, tail_probs = _head_tail_sums(dist.probs)
    head_tokens, tail_tokens = _head_tail_sums(dist.probs * dist.lengths_tokens)
    return ClassStats(dist.lengths_tokens, dist.probs, head_probs, tail_probs, head_tokens, tail_tokens)


def truncated_lognormal(mu: float, sigma: float, min_tokens: float, max_tokens: float, bins: int = 4096) -> LengthDistribution:
    """ln L ~ N(mu, sigma^2) truncated to [min_tokens, max_tokens], discretised into ``bins`` log-spaced bins.

    With z(x) = (ln x - mu) / sigma, bin (a, b) has probability
    P(a < L < b) / P(min < L < max), P(a < L < b) = Phi(z(b)) - Phi(z(a)), and its support point is
    the exact conditional mean E[L | a < L < b]
    = exp(mu + sigma^2/2) (Phi(z(b) - sigma) - Phi(z(a) - sigma)) / (Phi(z(b)) - Phi(z(a))),
    so the mean of the result is the exact truncated mean. Bins without mass are dropped.
    """
    mu = _finite(mu, "mu")
    sigma = _finite(sigma, "sigma")
    min_tokens = _finite(min_tokens, "min_tokens")
    max_tokens = _finite(max_tokens, "max_tokens")
    if sigma <= 0:
        raise PlanInputError("sigma must be > 0", field="sigma")
    if min_tokens < 1:
        raise PlanInputError(f"must be >= 1 token, got {min_tokens:g}", field="min_tokens")
    if min_tokens >= max_tokens:
        raise PlanInputError(f"must be below max_tokens ({max_tokens:g}), got {min_tokens:g}", field="min_tokens")
    bins = _positive_int(bins, "bins")
    edges_tokens = np.geomspace(min_tokens, max_tokens, bins + 1)
    z = (np.log(edges_tokens) - mu) / sigma
    mass = _normal_mass(z[:-1], z[1:])
    if not mass.sum() >= np.finfo(np.float64).tiny:
        raise PlanInputError(
            f"the window [{min_tokens:g}, {max_tokens:g}] holds no probability mass of lognormal(mu={mu:g}, sigma={sigma:g})",
            field="max_tokens",
        )
    shifted = _normal_mass(z[:-1] - sigma, z[1:] - sigma)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        means_tokens = np.exp(mu + sigma**2 / 2 + np.log(shifted) - np.log(mass))
    return _merged(np.clip(means_tokens, edges_tokens[:-1], edges_tokens[1:]), mass)


def empirical(lengths_tokens: ArrayLike) -> LengthDistribution:
    """The exact distribution of observed lengths: P(l) = count(l) / n."""
    values = np.asarray(lengths_tokens, dtype=np.float64).ravel()
    if values.size == 0:
        raise PlanInputError("no lengths given", field="lengths_tokens")
    if not np.all(np.isfinite(values)):
        raise PlanInputError("lengths must be finite numbers", field="lengths_tokens")
    if values.min() < 1:
        raise PlanInputError(f"lengths must be >= 1 token, found {values.min():g}", field="lengths_tokens")
    support, counts = np.unique(values, return_counts=True)
    if support.size > MAX_SUPPORT_POINTS:
        raise PlanInputError(
            f"{support.size:,} distinct lengths (at most {MAX_SUPPORT_POINTS:,}); round them to whole tokens",
            field="lengths_tokens",
        )
    return LengthDistribution(support, counts / values.size)


def histogram(edges_tokens: ArrayLike, counts: ArrayLike, points_per_bin: int = 16) -> LengthDistribution:
    """Bin i = [edges_i, edges_{i+1}) with mass counts_i / sum(counts), spread uniformly.

    Each bin's mass is split equally over ``points_per_bin`` sub-bin midpoints
    edges_i + (j + 1/2) (edges_{i+1} - edges_i) / points_per_bin; midpoints below 1 token become 1.
    """
    edges = np.asarray(edges_tokens, dtype=np.float64).ravel()
    weights = np.asarray(counts, dtype=np.float64).ravel()
    if edges.size < 2:
        raise PlanInputError("at least two edges are needed", field="edges_tokens")
    if not np.all(np.isfinite(edges)) or edges[0] < 0:
        raise PlanInputError("edges must be finite and >= 0", field="edges_tokens")
    if np.any(np.diff(edges) <= 0):
        raise PlanInputError("edges must be strictly increasing", field="edges_tokens")
    if weights.size != edges.size - 1:
        raise PlanInputError(f"{edges.size} edges need {edges.size - 1} counts, got {weights.size}", field="counts")
    if not np.all(np.isfinite(weights)) or np.any(weights < 0):
        raise PlanInputError("counts must be finite and >= 0", field="counts")
    if weights.sum() <= 0:
        raise PlanInputError("counts are all zero", field="counts")
    points_per_bin = _positive_int(points_per_bin, "points_per_bin")
    _check_support((edges.size - 1) * points_per_bin, "points_per_bin")
    offsets = (np.arange(points_per_bin) + 0.5) / points_per_bin
    points = edges[:-1, None] + np.diff(edges)[:, None] * offsets
    return _merged(np.maximum(points.ravel(), 1.0), np.repeat(weights / points_per_bin, points_per_bin))


def from_cdf(tokens: ArrayLike, fractions: ArrayLike, points_per_bin: int = 16, field: str = "points") -> LengthDistribution:
    """The distribution whose CDF is linear through (0, 0) and (tokens_i, fractions_i), with
    fractions_i = P(L <= tokens_i): the ``histogram`` of ``cdf.cdf_buckets`` (which checks the
    points; errors name ``{field}[i]``)."""
    edges, masses = cdf_buckets(tokens, fractions, field)
    return histogram(edges, masses, points_per_bin)


def mixture(components: Sequence[tuple[float, LengthDistribution]]) -> LengthDistribution:
    """P(l) = sum_c w_c P_c(l) / sum_c w_c; equal lengths of different components are merged."""
    if len(components) == 0:
        raise PlanInputError("at least one component is needed", field="components")
    weights = np.array([_finite(w, f"components[{i}].weight") for i, (w, _) in enumerate(components)])
    for i, w in enumerate(weights):
        if w < 0:
            raise PlanInputError(f"must be >= 0, got {w:g}", field=f"components[{i}].weight")
    if weights.sum() <= 0:
        raise PlanInputError("weights are all zero", field="components")
    weights = weights / weights.sum()
    _check_support(sum(dist.lengths_tokens.size for _, dist in components), "components")
    lengths = np.concatenate([dist.lengths_tokens for _, dist in components])
    probs = np.concatenate([w * dist.probs for w, (_, dist) in zip(weights, components)])
    return _merged(lengths, probs)


def fixed(tokens: float) -> LengthDistribution:
    """A point mass: every request has ``tokens`` tokens."""
    tokens = _finite(tokens, "tokens")
    if tokens < 1:
        raise PlanInputError(f"must be >= 1 token, got {tokens:g}", field="tokens")
    return LengthDistribution(np.array([tokens]), np.array([1.0]))


def with_prefix_cache(dist: LengthDistribution, hit_fractions: ArrayLike, probs: ArrayLike) -> LengthDistribution:
    """Uncached (incremental) length max(1, L (1 - h)) in tokens, h independent of L.

    h takes the values ``hit_fractions`` (each in [0, 1)) with probabilities ``probs`` (normalised);
    P(l) = sum over (i, j) with max(1, l_i (1 - h_j)) = l of p_i q_j.
    """
    hits = np.asarray(hit_fractions, dtype=np.float64).ravel()
    weights = np.asarray(probs, dtype=np.float64).ravel()
    if hits.size == 0 or hits.shape != weights.shape:
        raise PlanInputError("hit_fractions and probs must be non-empty and of equal length", field="probs")
    if not np.all((hits >= 0) & (hits < 1)):
        raise PlanInputError("hit fractions must be in [0, 1)", field="hit_fractions")
    if not np.all(np.isfinite(weights)) or np.any(weights < 0):
        raise PlanInputError("probs must be finite and >= 0", field="probs")
    if weights.sum() <= 0:
        raise PlanInputError("probs are all zero", field="probs")
    _check_support(dist.lengths_tokens.size * hits.size, "hit_fractions")
    lengths = np.maximum(np.outer(dist.lengths_tokens, 1.0 - hits), 1.0)
    return _merged(lengths.ravel(), np.outer(dist.probs, weights / weights.sum()).ravel())


def build_distribution(
    spec, source: str | None = None, field_prefix: str = "workload", role: str = "input"
) -> LengthDistribution:
    """The distribution a validated spec (``profiles.workload_spec.LengthSpec``) describes;
    ``role`` ('input' or 'output') is the length a request trace (a ``trace`` with ``format``) gives.

    A trace's ``path`` is relative to the folder of ``source`` (the scenario file). Errors name
    ``source`` and the field under ``field_prefix``. The support a spec asks for is checked
    before anything is built (``ranges.MAX_SUPPORT_POINTS``)."""
    kind = spec.type
    if _support_of(spec) > MAX_SUPPORT_POINTS:
        raise PlanInputError(
            f"would build {_support_of(spec):,} distinct lengths (at most {MAX_SUPPORT_POINTS:,}); use fewer bins or components",
            source=source,
            field=field_prefix,
        )

    def build(constructor: Callable[..., LengthDistribution], **kwargs: Any) -> LengthDistribution:
        with under(field_prefix, source):
            return constructor(**kwargs)

    if kind == WorkloadType.lognormal:
        return build(
            truncated_lognormal,
            mu=spec.mu,
            sigma=spec.sigma,
            min_tokens=spec.min_tokens,
            max_tokens=spec.max_tokens,
            bins=spec.bins,
        )
    if kind == WorkloadType.histogram:
        return build(histogram, edges_tokens=spec.edges_tokens, counts=spec.counts, points_per_bin=spec.points_per_bin)
    if kind == WorkloadType.fixed:
        return build(fixed, tokens=spec.tokens)
    if kind == WorkloadType.cdf:
        return _build_cdf(spec, source, field_prefix)
    if kind == WorkloadType.trace:
        trace_path = Path(spec.path)
        if source is not None and not trace_path.is_absolute():
            trace_path = Path(source).parent / trace_path
        if spec.format is not None:  # a request trace: its inputs, or its outputs (at least 1 token each)
            from .trace_cache import spec_trace

            trace = spec_trace(trace_path, spec.format)
            lengths = trace.output_tokens if role == "output" else trace.input_tokens
            return empirical(np.maximum(lengths, 1))
        lengths = read_length_trace(trace_path, spec.column)  # its errors name the trace file
        try:
            return empirical(lengths)
        except PlanInputError as exc:
            raise PlanInputError(exc.reason, source=str(trace_path), field=field_prefix) from None
    weighted = [
        (c.weight, build_distribution(c, source, f"{field_prefix}.components[{i}]", role)) for i, c in enumerate(spec.components)
    ]
    return build(mixture, components=weighted)


def declared_max_tokens(spec) -> float | None:
    """The longest length a spec declares (tokens): a lognormal's ``max_tokens``, a histogram's
    last edge, a fixed length, an inline CDF's last point, the largest of a mixture's; None where
    only the built support says (a trace, a CDF file). A binned support's top point is a bin's
    conditional mean, below the declared bound: a context check needs the bound."""
    kind = spec.type
    if kind == WorkloadType.lognormal:
        return float(spec.max_tokens)
    if kind == WorkloadType.histogram:
        return float(spec.edges_tokens[-1])
    if kind == WorkloadType.fixed:
        return float(spec.tokens)
    if kind == WorkloadType.cdf:
        return None if spec.points is None else float(max(point[0] for point in spec.points))
    if kind == WorkloadType.trace:
        return None
    tops = [t for t in (declared_max_tokens(c) for c in spec.components) if t is not None]
    return max(tops) if tops else None  # the known bounds (the caller also takes the support's top)


def _build_cdf(spec, source: str | None, field_prefix: str) -> LengthDistribution:
    """A ``cdf`` spec: its inline points, or those of its JSON file (relative to ``source``'s
    folder; errors in the file name the file and the point)."""
    from .cdf import read_cdf_file

    if spec.points is not None:
        points, where, field = spec.points, source, f"{field_prefix}.points"
    else:
        path = Path(spec.path)
        if source is not None and not path.is_absolute():
            path = Path(source).parent / path
        points, field = read_cdf_file(path)
        where = str(path)
    tokens, fractions = zip(*points)
    try:
        return from_cdf(tokens, fractions, spec.points_per_bin, field=field)
    except PlanInputError as exc:
        if exc.field == "points_per_bin":  # the support limit: a setting of the scenario, not of a point
            raise PlanInputError(exc.reason, source=source, field=f"{field_prefix}.points_per_bin") from None
        raise PlanInputError(exc.reason, source=where, field=exc.field) from None


def _support_of(spec) -> int:
    """Distinct lengths a spec builds at most (a trace: 0 here, bounded when read)."""
    kind = spec.type
    if kind == WorkloadType.lognormal:
        return spec.bins
    if kind == WorkloadType.histogram:
        return (len(spec.edges_tokens) - 1) * spec.points_per_bin
    if kind == WorkloadType.fixed:
        return 1
    if kind == WorkloadType.cdf:
        return 0 if spec.points is None else (len(spec.points) + 1) * spec.points_per_bin
    if kind == WorkloadType.trace:
        return 0
    return sum(_support_of(c) for c in spec.components)


def load_workload_spec(spec: Any, source: str | None, field_prefix: str = "workload") -> LengthDistribution:
    """Validate a mapping such as ``{type: lognormal, mu, sigma, min_tokens, max_tokens}`` and build
    the distribution (``build_distribution``); errors name ``source`` and the field path."""
    from pydantic import TypeAdapter, ValidationError

    from ..profiles._base import first_error
    from ..profiles.workload_spec import LengthSpec

    try:
        adapter: TypeAdapter[LengthSpec] = TypeAdapter(LengthSpec)
        validated = adapter.validate_python(spec)
    except ValidationError as exc:
        raise first_error(exc, source, field_prefix) from None
    return build_distribution(validated, source, field_prefix)


def _check_support(points: int, field: str) -> None:
    """Refuse a distribution of more than ``ranges.MAX_SUPPORT_POINTS`` lengths before building it."""
    if points > MAX_SUPPORT_POINTS:
        raise PlanInputError(f"would build {points:,} distinct lengths (at most {MAX_SUPPORT_POINTS:,})", field=field)


def _finite(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise PlanInputError(f"must be a number, got {value!r}", field=name)
    if not math.isfinite(value):
        raise PlanInputError(f"must be finite, got {value}", field=name)
    return float(value)


def _positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise PlanInputError(f"must be an integer >= 1, got {value!r}", field=name)
    return int(value)


def _normal_mass(z_a: np.ndarray, z_b: np.ndarray) -> np.ndarray:
    """Phi(z_b) - Phi(z_a), via the upper tail where z_a > 0 to keep tail masses accurate."""
    return np.where(z_a > 0, _ndtr(-z_a) - _ndtr(-z_b), _ndtr(z_b) - _ndtr(z_a))


_ERFC = np.frompyfunc(math.erfc, 1, 1)


def _ndtr(z: np.ndarray) -> np.ndarray:
    """Standard normal CDF, Phi(z) = erfc(-z / sqrt 2) / 2 (math.erfc: full relative accuracy
    in the tails; avoids importing scipy.special on the CLI's start-up path)."""
    return 0.5 * np.asarray(_ERFC(-np.asarray(z, dtype=float) / math.sqrt(2.0)), dtype=float)


def _merged(lengths_tokens: np.ndarray, weights: np.ndarray) -> LengthDistribution:
    """Distribution on ``lengths_tokens`` with probabilities proportional to ``weights`` (>= 0, sum > 0).

    Zero weights are dropped and equal lengths merged.
    """
    keep = weights > 0
    support, inverse = np.unique(lengths_tokens[keep], return_inverse=True)
    mass = np.bincount(inverse, weights=weights[keep], minlength=support.size)
    return LengthDistribution(support, mass / mass.sum())


def _head_tail_sums(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """head[k] = sum_{i<k} x_i and tail[k] = sum_{i>=k} x_i for k = 0..n."""
    head = np.concatenate(([0.0], np.cumsum(x)))
    tail = np.concatenate((np.cumsum(x[::-1])[::-1], [0.0]))
    return head, tail


def scaled(dist: LengthDistribution, factor: float, cap_tokens: float) -> LengthDistribution:
    """Every length x ``factor`` (at least 1 token, at most ``cap_tokens``), equal lengths merged."""
    return _merged(np.clip(dist.lengths_tokens * factor, 1.0, cap_tokens), np.asarray(dist.probs))
