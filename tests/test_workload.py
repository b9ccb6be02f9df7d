"""Request-length distributions, class statistics, traces and workload specs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prfaas_plan.errors import PlanInputError
from prfaas_plan.workload import (
    LengthDistribution,
    class_stats_table,
    empirical,
    fixed,
    histogram,
    load_workload_spec,
    mixture,
    read_length_trace,
    truncated_lognormal,
    with_prefix_cache,
)

WORKLOAD_DATA = Path(__file__).parent / "data" / "workload"

# The paper's case-study workload (section 4): ln L ~ N(9.90, 1.00^2) on [128, 128K].
CASE_MU, CASE_SIGMA, CASE_MIN_TOKENS, CASE_MAX_TOKENS = 9.90, 1.00, 128, 131072
CASE_T_TOKENS = 19_400

# Properties run on fixed examples so the suite is deterministic.
PROPERTY = settings(derandomize=True, deadline=None, max_examples=60)


@pytest.fixture(scope="module")
def case_study() -> LengthDistribution:
    return truncated_lognormal(CASE_MU, CASE_SIGMA, CASE_MIN_TOKENS, CASE_MAX_TOKENS)


def exact_case_study_stats(t_tokens: float) -> tuple[float, float, float, float]:
    """(mean, p, l_long, l_short) of the truncated log-normal by numerical integration."""
    from scipy import integrate, stats

    def pdf(length: float) -> float:
        return stats.lognorm.pdf(length, CASE_SIGMA, scale=np.exp(CASE_MU))

    def integral(f, a: float, b: float) -> float:
        return integrate.quad(f, a, b, limit=200)[0]

    total = integral(pdf, CASE_MIN_TOKENS, CASE_MAX_TOKENS)
    long_mass = integral(pdf, t_tokens, CASE_MAX_TOKENS)
    long_tokens = integral(lambda x: x * pdf(x), t_tokens, CASE_MAX_TOKENS)
    short_tokens = integral(lambda x: x * pdf(x), CASE_MIN_TOKENS, t_tokens)
    mean = (long_tokens + short_tokens) / total
    return mean, long_mass / total, long_tokens / long_mass, short_tokens / (total - long_mass)


# --- the paper's case study -------------------------------------------------------------


def test_case_study_matches_the_paper_derivation(case_study):
    split = class_stats_table(case_study).split(CASE_T_TOKENS)
    assert case_study.mean_tokens() == pytest.approx(27_486, abs=30)
    assert split.p == pytest.approx(0.4957, abs=0.001)
    assert split.l_long == pytest.approx(45_046, abs=60)
    assert split.l_short == pytest.approx(10_224, abs=30)


def test_case_study_matches_exact_integration(case_study):
    mean, p, l_long, l_short = exact_case_study_stats(CASE_T_TOKENS)
    split = class_stats_table(case_study).split(CASE_T_TOKENS)
    assert case_study.mean_tokens() == pytest.approx(mean, rel=1e-9)  # bin points are exact conditional means
    assert split.p == pytest.approx(p, abs=2e-4)
    assert split.l_long == pytest.approx(l_long, rel=1e-4)
    assert split.l_short == pytest.approx(l_short, rel=1e-4)


def test_lognormal_support_and_probabilities(case_study):
    lengths, probs = case_study.lengths_tokens, case_study.probs
    assert lengths.size == 4096
    assert lengths[0] >= CASE_MIN_TOKENS and lengths[-1] <= CASE_MAX_TOKENS
    assert np.all(np.diff(lengths) > 0) and np.all(probs > 0)
    assert probs.sum() == pytest.approx(1.0, abs=1e-12)
    assert not lengths.flags.writeable and not probs.flags.writeable
    from scipy.stats import norm

    z_min, z_max = (np.log([CASE_MIN_TOKENS, CASE_MAX_TOKENS]) - CASE_MU) / CASE_SIGMA
    median_z = norm.ppf((norm.cdf(z_min) + norm.cdf(z_max)) / 2)
    assert float(case_study.quantile(0.5)) == pytest.approx(np.exp(CASE_MU + CASE_SIGMA * median_z), rel=0.002)


def test_lognormal_far_tail_window_keeps_its_mass():
    # The whole window lies 8 sigma above the median: masses come from the upper tail.
    dist = truncated_lognormal(0.0, 1.0, np.exp(8.0), np.exp(9.0), bins=64)
    assert dist.lengths_tokens.size == 64
    assert np.exp(8.0) < dist.mean_tokens() < np.exp(8.5)


# --- hand-checked constructors ------------------------------------------------------------


def test_empirical_by_hand():
    dist = empirical([200, 100, 1000, 200, 400])
    assert dist.lengths_tokens.tolist() == [100, 200, 400, 1000]
    assert dist.probs.tolist() == pytest.approx([0.2, 0.4, 0.2, 0.2])
    assert dist.mean_tokens() == pytest.approx(380)
    split = class_stats_table(dist).split(np.array([200, 99, 1000]))
    assert split.p.tolist() == pytest.approx([0.4, 1.0, 0.0])
    assert split.l_long[:2].tolist() == pytest.approx([700, 380])
    assert split.l_short[[0, 2]].tolist() == pytest.approx([500 / 3, 380])
    assert np.isnan(split.l_long[2]) and np.isnan(split.l_short[1])
    assert dist.quantile([0.0, 0.2, 0.5, 0.61, 1.0]).tolist() == [100, 100, 200, 400, 1000]


def test_histogram_by_hand():
    dist = histogram([0, 100, 300], [1, 3], points_per_bin=2)
    assert dist.lengths_tokens.tolist() == [25, 75, 150, 250]
    assert dist.probs.tolist() == pytest.approx([0.125, 0.125, 0.375, 0.375])
    fine = histogram([0, 100, 300], [1, 3])  # 16 points per bin: same bin means
    assert fine.lengths_tokens.size == 32
    assert fine.mean_tokens() == pytest.approx(0.25 * 50 + 0.75 * 200)
    split = class_stats_table(fine).split(100)
    assert (split.p, split.l_long, split.l_short) == pytest.approx((0.75, 200, 50))


def test_histogram_points_below_one_token_become_one():
    dist = histogram([0, 1], [5])
    assert dist.lengths_tokens.tolist() == [1.0] and dist.probs.tolist() == [1.0]


def test_mixture_by_hand():
    dist = mixture([(1.0, fixed(100)), (3.0, empirical([100, 300]))])
    assert dist.lengths_tokens.tolist() == [100, 300]
    assert dist.probs.tolist() == pytest.approx([0.25 + 0.375, 0.375])
    assert mixture([(0.0, fixed(5)), (2.0, fixed(7))]).lengths_tokens.tolist() == [7]


def test_fixed_is_a_point_mass():
    dist = fixed(4096)
    assert dist.mean_tokens() == 4096 and dist.probs.tolist() == [1.0]
    split = class_stats_table(dist).split([4095, 4096])
    assert split.p.tolist() == [1.0, 0.0]


def test_prefix_cache_half_hit_halves_every_length(case_study):
    cached = with_prefix_cache(case_study, [0.5], [1.0])
    np.testing.assert_allclose(cached.lengths_tokens, case_study.lengths_tokens / 2)
    np.testing.assert_allclose(cached.probs, case_study.probs)
    assert cached.mean_tokens() == pytest.approx(case_study.mean_tokens() / 2)


def test_prefix_cache_by_hand():
    dist = with_prefix_cache(fixed(1000), [0.0, 0.5], [1, 3])
    assert dist.lengths_tokens.tolist() == [500, 1000]
    assert dist.probs.tolist() == pytest.approx([0.75, 0.25])
    merged = with_prefix_cache(empirical([1, 2]), [0.5, 0.9], [1, 1])  # 0.5, 0.2, 1.0, 0.1 tokens -> 1
    assert merged.lengths_tokens.tolist() == [1.0] and merged.probs.tolist() == pytest.approx([1.0])


def test_class_means_reproduce_class_lengths_and_constants(case_study):
    stats = class_stats_table(case_study)
    t_tokens = np.array([0, 128, 1000, CASE_T_TOKENS, 60_000, 131_072, 1e6])
    split = stats.split(t_tokens)
    long_tokens, short_tokens = stats.class_means(case_study.lengths_tokens, t_tokens)
    np.testing.assert_allclose(long_tokens, split.l_long, rtol=1e-12)
    np.testing.assert_allclose(short_tokens, split.l_short, rtol=1e-12)
    long_c, short_c = stats.class_means(np.full(case_study.lengths_tokens.size, 2.5), t_tokens)
    has_long, has_short = split.p > 0, split.p < 1
    np.testing.assert_allclose(long_c[has_long], 2.5)
    np.testing.assert_allclose(short_c[has_short], 2.5)
    assert np.all(np.isnan(long_c[~has_long])) and np.all(np.isnan(short_c[~has_short]))


def test_class_means_of_a_convex_quantity_exceed_it_at_the_mean(case_study):
    # The paper evaluates T_prefill at the class mean; for a convex T, E[T(L)] > T(E[L]).
    stats = class_stats_table(case_study)
    long_sq, short_sq = stats.class_means(case_study.lengths_tokens**2, CASE_T_TOKENS)
    split = stats.split(CASE_T_TOKENS)
    assert long_sq > split.l_long**2 and short_sq > split.l_short**2


@pytest.mark.parametrize(
    "build, field, words",
    [
        (lambda: truncated_lognormal(9.9, 0.0, 128, 1024), "sigma", "sigma must be > 0"),
        (lambda: truncated_lognormal(9.9, -1.0, 128, 1024), "sigma", "sigma must be > 0"),
        (lambda: truncated_lognormal(9.9, 1.0, 1024, 128), "min_tokens", "below max_tokens"),
        (lambda: truncated_lognormal(9.9, 1.0, 0.5, 128), "min_tokens", ">= 1"),
        (lambda: truncated_lognormal(float("nan"), 1.0, 1, 128), "mu", "finite"),
        (lambda: truncated_lognormal(9.9, 1.0, 1, float("inf")), "max_tokens", "finite"),
        (lambda: truncated_lognormal(0.0, 0.01, 1e6, 2e6), "max_tokens", "no probability mass"),
        (lambda: truncated_lognormal(9.9, 1.0, 1, 128, bins=0), "bins", "integer >= 1"),
        (lambda: empirical([]), "lengths_tokens", "no lengths"),
        (lambda: empirical([5, float("nan")]), "lengths_tokens", "finite"),
        (lambda: empirical([5, 0.5]), "lengths_tokens", ">= 1"),
        (lambda: histogram([0, 10, 10], [1, 1]), "edges_tokens", "strictly increasing"),
        (lambda: histogram([0, 10, 20], [1]), "counts", "need 2 counts"),
        (lambda: histogram([0, 10], [-1]), "counts", ">= 0"),
        (lambda: histogram([0, 10], [0]), "counts", "all zero"),
        (lambda: mixture([]), "components", "at least one"),
        (lambda: mixture([(-1.0, fixed(5)), (2.0, fixed(6))]), "components[0].weight", ">= 0"),
        (lambda: mixture([(0.0, fixed(5))]), "components", "all zero"),
        (lambda: fixed(0), "tokens", ">= 1"),
        (lambda: with_prefix_cache(fixed(10), [1.0], [1]), "hit_fractions", "[0, 1)"),
        (lambda: with_prefix_cache(fixed(10), [0.5], [0]), "probs", "all zero"),
        (lambda: with_prefix_cache(fixed(10), [0.5, 0.2], [1]), "probs", "equal length"),
        (lambda: LengthDistribution(np.array([2.0, 1.0]), np.array([0.5, 0.5])), "lengths_tokens", "ascending"),
        (lambda: LengthDistribution(np.array([1.0, 2.0]), np.array([0.5, 0.6])), "probs", "sum to 1"),
        (lambda: fixed(10).quantile(1.5), "q", "[0, 1]"),
        (lambda: class_stats_table(fixed(10)).class_means([1.0, 2.0], 5), "values", "one entry per"),
    ],
)
def test_constructor_errors_name_the_field(build, field, words):
    with pytest.raises(PlanInputError) as info:
        build()
    assert info.value.field == field
    assert words in info.value.reason
    assert "\n" not in str(info.value)


# --- properties ---------------------------------------------------------------------------

lengths_lists = st.lists(st.integers(min_value=1, max_value=10**6), min_size=1, max_size=60)


def lognormal_window(mu: float, sigma: float, z_lo: float, width: float) -> LengthDistribution:
    """ln L ~ N(mu, sigma^2) on exp(mu + [z_lo, z_lo + width] sigma); z_lo raised to keep >= 1 token."""
    z_lo = max(z_lo, -mu / sigma)
    return truncated_lognormal(mu, sigma, np.exp(mu + z_lo * sigma), np.exp(mu + (z_lo + width) * sigma), bins=257)


# Windows from deep in the lower tail to 6 sigma above the median, 0.05 to 10 sigma wide.
lognormals = st.builds(lognormal_window, st.floats(3.0, 12.0), st.floats(0.2, 2.5), st.floats(-8.0, 6.0), st.floats(0.05, 10.0))
distributions = st.one_of(lengths_lists.map(empirical), lognormals)
thresholds = st.lists(st.floats(min_value=0.0, max_value=2e7), min_size=1, max_size=30)


@PROPERTY
@given(distributions, thresholds)
def test_p_is_non_increasing_in_t(dist, t_list):
    p = class_stats_table(dist).split(np.sort(t_list)).p
    assert np.all(np.diff(p) <= 0)
    assert np.all((p >= 0) & (p <= 1))


@PROPERTY
@given(distributions, thresholds)
def test_class_means_straddle_the_threshold(dist, t_list):
    t_tokens = np.array(t_list)
    split = class_stats_table(dist).split(t_tokens)
    both = (split.p > 0) & (split.p < 1)
    assert np.all(split.l_short[both] <= t_tokens[both])
    assert np.all(t_tokens[both] < split.l_long[both])
    assert np.all(np.isnan(split.l_long[split.p == 0])) and np.all(np.isnan(split.l_short[split.p == 1]))


@PROPERTY
@given(distributions, thresholds)
def test_class_split_recombines_to_the_mean(dist, t_list):
    split = class_stats_table(dist).split(np.array(t_list))
    long_part = np.where(split.p > 0, split.p * split.l_long, 0.0)
    short_part = np.where(split.p < 1, (1 - split.p) * split.l_short, 0.0)
    np.testing.assert_allclose(long_part + short_part, dist.mean_tokens(), rtol=1e-9)


@PROPERTY
@given(lengths_lists, st.integers(min_value=0, max_value=2**32 - 1))
def test_sample_frequencies_approach_probabilities(lengths, seed):
    dist = empirical(lengths)
    draws = dist.sample(np.random.default_rng(seed), 20_000)
    frequencies = np.searchsorted(dist.lengths_tokens, draws, side="left")
    counts = np.bincount(frequencies, minlength=dist.lengths_tokens.size) / draws.size
    assert np.isin(draws, dist.lengths_tokens).all()
    np.testing.assert_allclose(counts, dist.probs, atol=0.025)


@PROPERTY
@given(distributions)
def test_quantile_inverts_the_cdf(dist):
    cdf_below = np.cumsum(dist.probs) - dist.probs
    visible = dist.probs > 1e-9  # points whose probability is not lost in the CDF's rounding
    levels = cdf_below[visible] + dist.probs[visible] / 2
    np.testing.assert_array_equal(dist.quantile(levels), dist.lengths_tokens[visible])


# --- traces -------------------------------------------------------------------------------


def test_trace_one_per_line_with_and_without_header(tmp_path):
    assert read_length_trace(WORKLOAD_DATA / "lengths.txt").tolist() == [1024, 2048, 2048, 32768]
    plain = tmp_path / "plain.txt"
    plain.write_text("5\n6.5\r\n1e3\n\n7\n\n")  # CRLF, blank lines and a trailing blank line
    assert read_length_trace(plain).tolist() == [5, 6.5, 1000, 7]


def test_trace_csv_named_column():
    path = WORKLOAD_DATA / "requests.csv"
    assert read_length_trace(path, "input_tokens").tolist() == [1000, 3000, 1000, 5000]
    assert read_length_trace(path, "output_tokens").tolist() == [10, 20, 30, 40]


def test_trace_roundtrip_of_100k_rows(tmp_path):
    rng = np.random.default_rng(7)
    lengths = np.concatenate((np.round(np.exp(rng.normal(9.9, 1.0, 50_000))) + 1, rng.uniform(1, 1e5, 50_000)))
    one = tmp_path / "one.txt"
    one.write_text("tokens\n" + "\n".join(map(repr, lengths.tolist())) + "\n")
    np.testing.assert_array_equal(read_length_trace(one), lengths)
    two = tmp_path / "two.csv"
    two.write_text("id,tokens\n" + "".join(f"req{i},{x!r}\n" for i, x in enumerate(lengths.tolist())))
    np.testing.assert_array_equal(read_length_trace(two, "tokens"), lengths)


@pytest.mark.parametrize(
    "text, column, words",
    [
        ("", None, "empty trace"),
        ("\n\n", None, "empty trace"),
        ("tokens\n", None, "empty trace"),
        ("a,b\n", "a", "empty trace"),
        ("tokens\n5\n6\nabc\n", None, "line 4: 'abc' is not a number"),
        ("5\n6\n7 8\n", None, "line 3: '7 8' is not a number"),
        ("5\n0\n", None, "line 2: length 0 is below 1 token"),
        ("5\n-3\n", None, "line 2: length -3 is below 1 token"),
        ("5\ninf\n", None, "line 2: 'inf' is not a finite length"),
        ("id,tokens\nr1,5\nr2,x\n", "tokens", "line 3: 'x' is not a number"),
        ("id,tokens\nr1,5\nr2\n", "tokens", "line 3: expected 2 columns, found 1"),
        ("id,tokens\n1,5\n", "length", "column 'length' not found (available columns: id, tokens)"),
        ("id,tokens\n1,5\n", None, "available columns: id, tokens"),
    ],
)
def test_trace_errors(tmp_path, text, column, words):
    path = tmp_path / "trace.csv"
    path.write_text(text)
    with pytest.raises(PlanInputError) as info:
        read_length_trace(path, column)
    assert words in str(info.value)
    assert info.value.source == str(path)


def test_trace_file_not_found(tmp_path):
    with pytest.raises(PlanInputError, match="file not found"):
        read_length_trace(tmp_path / "missing.txt")


def test_importing_workload_does_not_import_scipy():
    code = "import sys, prfaas_plan.workload; print('scipy' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


# --- workload specs -----------------------------------------------------------------------


def test_spec_lognormal_equals_the_constructor(case_study):
    spec = {"type": "lognormal", "mu": 9.9, "sigma": 1.0, "min_tokens": 128, "max_tokens": "128K"}
    dist = load_workload_spec(spec, None)
    np.testing.assert_array_equal(dist.lengths_tokens, case_study.lengths_tokens)
    assert load_workload_spec({**spec, "bins": 16}, None).lengths_tokens.size == 16


def test_spec_trace_relative_to_the_yaml_folder():
    source = str(WORKLOAD_DATA / "scenario.yaml")  # need not exist: only its folder is used
    dist = load_workload_spec({"type": "trace", "path": "requests.csv", "column": "input_tokens"}, source)
    assert dist.lengths_tokens.tolist() == [1000, 3000, 5000]
    assert dist.probs.tolist() == pytest.approx([0.5, 0.25, 0.25])
    one_column = load_workload_spec({"type": "trace", "path": str(WORKLOAD_DATA / "lengths.txt")}, None)
    assert one_column.mean_tokens() == pytest.approx((1024 + 2048 * 2 + 32768) / 4)


def test_spec_histogram_fixed_and_mixture():
    hist = load_workload_spec({"type": "histogram", "edges_tokens": [0, 100, 300], "counts": [1, 3], "points_per_bin": 2}, None)
    assert hist.lengths_tokens.tolist() == [25, 75, 150, 250]
    assert load_workload_spec({"type": "fixed", "tokens": "32K"}, None).lengths_tokens.tolist() == [32768]
    mixed = load_workload_spec(
        {
            "type": "mixture",
            "components": [
                {"weight": 1, "type": "fixed", "tokens": 100},
                {"weight": 3, "type": "histogram", "edges_tokens": [200, 400], "counts": [1]},
            ],
        },
        None,
    )
    assert mixed.mean_tokens() == pytest.approx(0.25 * 100 + 0.75 * 300)


@pytest.mark.parametrize(
    "spec, field, words",
    [
        ({"type": "lognormal", "mu": 9.9, "sigma": 0, "min_tokens": 128, "max_tokens": 1024}, "sigma", "must be in (0, 10]"),
        ({"type": "lognormal", "mu": 9.9, "sigma": 1, "min_tokens": "8K", "max_tokens": "4K"}, "max_tokens", "above min_tokens"),
        ({"type": "lognormal", "mu": 9.9, "min_tokens": 128, "max_tokens": 1024}, "sigma", "missing"),
        ({"type": "lognormal", "mu": "x", "sigma": 1, "min_tokens": 1, "max_tokens": 9}, "mu", "must be a number"),
        ({"type": "lognormal", "mu": 9, "sigma": 1, "min_tokens": "lots", "max_tokens": 9}, "min_tokens", "count"),
        ({"type": "fixed", "tokens": 9, "sigmaa": 1}, "sigmaa", "unknown field"),
        ({"type": "gamma", "shape": 2}, "type", "unknown type 'gamma'"),
        ({"type": ["fixed"], "tokens": 2}, "type", "unknown type"),
        ({"mu": 9.9}, "type", "needs a type"),
        ({"type": "histogram", "edges_tokens": [0, 5, 5], "counts": [1, 1]}, "edges_tokens", "strictly increasing"),
        ({"type": "fixed", "tokens": True}, "tokens", "must be a number of tokens"),
        ({"type": "mixture", "components": []}, "components", "at least 1 item"),
        ({"type": "mixture", "components": [{"type": "fixed", "tokens": 5}]}, "components", "components[0] needs a weight"),
        (
            {"type": "mixture", "components": [{"weight": 1, "type": "fixed", "tokens": 0}]},
            "components[0].tokens",
            "must be in [1,",
        ),
        (
            {"type": "mixture", "components": [{"weight": -1, "type": "fixed", "tokens": 5}]},
            "components[0].weight",
            "must be in [0,",
        ),
        ({"type": "trace"}, "path", "missing"),
    ],
)
def test_spec_errors_name_the_field(spec, field, words):
    with pytest.raises(PlanInputError) as info:
        load_workload_spec(spec, "scenario.yaml", field_prefix="workload.input")
    assert info.value.field == f"workload.input.{field}"
    assert info.value.source == "scenario.yaml"
    assert words in info.value.reason


def test_spec_trace_errors_name_the_trace_file():
    with pytest.raises(PlanInputError) as info:
        load_workload_spec({"type": "trace", "path": "nowhere.txt"}, str(WORKLOAD_DATA / "scenario.yaml"))
    assert info.value.source == str(WORKLOAD_DATA / "nowhere.txt")
    assert "file not found" in info.value.reason
