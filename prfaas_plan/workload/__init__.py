"""Request-length workloads: discrete length distributions, their class statistics, traces."""

from .distributions import (
    ClassSplit,
    ClassStats,
    LengthDistribution,
    class_stats_table,
    empirical,
    fixed,
    from_cdf,
    histogram,
    load_workload_spec,
    mixture,
    truncated_lognormal,
    with_prefix_cache,
)
from .trace import read_length_trace

__all__ = [
    "ClassSplit",
    "ClassStats",
    "LengthDistribution",
    "class_stats_table",
    "empirical",
    "fixed",
    "from_cdf",
    "histogram",
    "load_workload_spec",
    "mixture",
    "read_length_trace",
    "truncated_lognormal",
    "with_prefix_cache",
]
