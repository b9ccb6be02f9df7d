"""Write the instance model's residuals on the published test sets as package data.

    python tools/residuals.py            # writes prfaas_plan/timing/residuals.csv
    python tools/residuals.py --check    # exit 1 when the shipped file differs from a fresh run
    python tools/residuals.py --report   # leave-one-out coverage and widths of both methods

Every row of tests/data/published_benchmarks.csv (set ``original``) and, when present,
tests/data/published_benchmarks_new.csv (set ``new``) is predicted with
``prfaas_plan.published.predict_all`` (the shipped defaults; nothing is fitted), and its ratio
predicted / measured is written with its figure group (``timing.uncertainty.KIND_FIGURES``), its
engine (``choices.EngineName``) and its hardware. ``timing.uncertainty`` reads only this file.
Rerun it whenever the model, the profiles or the published rows change.
"""

from __future__ import annotations

import csv
import io
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from prfaas_plan import published  # noqa: E402
from prfaas_plan.timing import uncertainty  # noqa: E402

SETS = (("original", ROOT / "tests/data/published_benchmarks.csv"), ("new", ROOT / "tests/data/published_benchmarks_new.csv"))
OUT = ROOT / "prfaas_plan/timing/residuals.csv"


def rows() -> list[dict]:
    out = []
    for name, path in SETS:
        if not path.exists():
            continue
        engines = {r["id"]: str(published.engine_name_of(r["engine"])) for r in published.read_rows(str(path))}
        for p in published.predict_all(str(path)):
            group, orientation = uncertainty.KIND_FIGURES[p.kind]
            out.append(
                {
                    "id": p.id,
                    "set": name,
                    "kind": p.kind,
                    "group": group,
                    "orientation": orientation,
                    "engine": engines[p.id],
                    "hardware": p.hardware,
                    "ratio_predicted_over_measured": f"{p.ratio:.6f}",
                }
            )
    return out


def text() -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=uncertainty.RESIDUAL_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows())
    return buf.getvalue()


def report() -> str:
    """Leave-one-out coverage and median width (high / low) of each method on the shipped file."""
    residuals = uncertainty.read_residuals(OUT.read_text(encoding="utf-8"))
    lines = [f"{len(residuals)} rows; level {uncertainty.LEVEL:g}; at least {uncertainty.MIN_ROWS} rows a cell"]
    for method in uncertainty.Method:
        loo = uncertainty.leave_one_out(residuals, method)
        lines.append(
            f"{method}: leave-one-out coverage {loo.coverage:.1%} "
            f"({sum(c for *_, c in loo.rows)}/{len(loo.rows)}), median width {loo.median_width:.2f}x"
        )
        for group in uncertainty.GROUPS:
            b = uncertainty.band(group, residuals=residuals, method=method)
            lines.append(f"  {group}: x{b.low:.3f} .. x{b.high:.3f} of the predicted speed ({b.pool}, {b.rows} rows)")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if "--report" in argv:
        print(report())
        return 0
    fresh = text()
    if "--check" in argv:
        same = OUT.exists() and OUT.read_text(encoding="utf-8") == fresh
        print("residuals.csv is current" if same else "residuals.csv differs from a fresh run: rerun tools/residuals.py")
        return 0 if same else 1
    OUT.write_text(fresh, encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)} ({fresh.count(chr(10)) - 1} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
