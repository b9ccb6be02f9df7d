"""Predict the published measurements of real deployments and print predicted, measured and the
ratio per row, with the median and worst error (README: "Published measurements").

    python benchmarks/published.py                       # tests/data/published_benchmarks.csv
    python benchmarks/published.py my_measurements.csv   # the same columns

Every row is predicted with ``prfaas-plan estimate`` from the shipped profiles and defaults
(``prfaas_plan.published`` says how each kind of row is read); nothing is fitted to a row.
"""

from __future__ import annotations

import sys
from pathlib import Path

from prfaas_plan import published
from prfaas_plan.errors import PlanInputError

DEFAULT_CSV = Path(__file__).resolve().parents[1] / "tests" / "data" / "published_benchmarks.csv"


def main(argv: list[str]) -> int:
    path = argv[1] if len(argv) > 1 else str(DEFAULT_CSV)
    try:
        rows = published.predict_all(path)
    except PlanInputError as exc:
        print(f"published.py: error: {exc}", file=sys.stderr)
        return 2
    header = f"{'id':<4} {'kind':<12} {'model':<28} {'hardware':<8} {'GPUs':>5} {'layout':<16} " \
             f"{'predicted':>11} {'measured':>11} {'ratio':>6}  unit"
    print(header)
    print("-" * len(header))
    for p in rows:
        print(f"{p.id:<4} {p.kind:<12} {p.model[:28]:<28} {p.hardware:<8} {p.gpus:>5} {p.layout[:16]:<16} "
              f"{p.predicted:>11,.2f} {p.measured:>11,.2f} {p.ratio:>6.2f}  {p.unit}" + (f"  ({p.note})" if p.note else ""))
    s = published.summary(rows)
    worst = max(rows, key=lambda p: max(p.ratio, 1 / p.ratio))
    print(f"\n{int(s['rows'])} rows: median |error| {100 * s['median_error']:.1f}%, worst {s['worst_factor']:.2f}x "
          f"({worst.id}), geometric mean ratio {s['geomean_ratio']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
