"""Predict the published measurements of real deployments and print predicted, measured and the
ratio per row, the same ratio with the engine-neutral ``generic`` profile beside it, and the
median and worst error of each set and of all rows together (docs/validation.md: "Published measurements").

    python benchmarks/published.py                       # both shipped sets (tests/data)
    python benchmarks/published.py my_measurements.csv   # your own rows, the same columns

Every row is predicted with ``prfaas-plan estimate`` from the shipped profiles and defaults
(``prfaas_plan.published`` says how each kind of row is read), timed with the engine its
``engine`` cell names; nothing is fitted to a row.
"""

from __future__ import annotations

import sys
from pathlib import Path

from prfaas_plan import published
from prfaas_plan.choices import EngineName
from prfaas_plan.errors import PlanInputError

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
DEFAULT_CSVS = (DATA / "published_benchmarks.csv", DATA / "published_benchmarks_new.csv")


def _line(s: dict[str, float], worst: published.Prediction) -> str:
    return (
        f"median |error| {100 * s['median_error']:.1f}%, worst {s['worst_factor']:.2f}x ({worst.id}), "
        f"geometric mean speed ratio {s['geomean_speed_ratio']:.2f}"
    )


def _worst(rows: list[published.Prediction]) -> published.Prediction:
    return max(rows, key=lambda p: max(p.ratio, 1 / p.ratio))


def main(argv: list[str]) -> int:
    if any(a in ("-h", "--help") for a in argv[1:]):
        print(__doc__.strip())
        return 0
    paths = [Path(a) for a in argv[1:]] or list(DEFAULT_CSVS)
    try:
        sets = [
            (path.name, published.predict_all(str(path)), published.predict_all(str(path), EngineName.generic)) for path in paths
        ]
    except PlanInputError as exc:
        print(f"published.py: error: {exc}", file=sys.stderr)
        return 2
    header = (
        f"{'id':<4} {'kind':<12} {'model':<28} {'hardware':<8} {'GPUs':>5} {'layout':<16} "
        f"{'predicted':>11} {'measured':>11} {'ratio':>6} {'generic':>7}  unit"
    )
    print(header)
    print("-" * len(header))
    for _, rows, generic in sets:
        for p, g in zip(rows, generic):
            print(
                f"{p.id:<4} {p.kind:<12} {p.model[:28]:<28} {p.hardware:<8} {p.gpus:>5} {p.layout[:16]:<16} "
                f"{p.predicted:>11,.2f} {p.measured:>11,.2f} {p.ratio:>6.2f} {g.ratio:>7.2f}  {p.unit}"
                + (f"  ({p.note})" if p.note else "")
            )
    every = [(name, rows, generic) for name, rows, generic in sets]
    if len(sets) > 1:
        every.append(("all", [p for _, r, _ in sets for p in r], [g for _, _, g in sets for g in g]))
    print()
    for name, rows, generic in every:
        print(f"{name}: {len(rows)} rows: {_line(published.summary(rows), _worst(rows))}")
        print(f"{'':>{len(name)}}  engine generic: {_line(published.summary(generic), _worst(generic))}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
