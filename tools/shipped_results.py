"""Write the results that are pure functions of shipped data as package data (``timing.shipped``).

    python tools/shipped_results.py            # writes prfaas_plan/timing/shipped.json
    python tools/shipped_results.py --check    # exit 1 when the shipped file differs from a fresh run

Every shipped one-site scenario is planned as ``plan`` plans it (``api.plan``), and every shipped
scenario checked as ``validate`` checks it (``api.validate_file``: every case and window, and the
multi-site ones), with nothing read from the file (``timing.shipped.recording``; the results this
process kept set aside); what they compute is written: the exact calibration fits
(``timing.calibrate``) and the prefill and decode layout searches (``timing.prefill``,
``timing.decode``), each keyed by everything it reads. Inputs that differ in anything miss and are
computed, so a user's profile or points are never given a shipped answer. Rerun it whenever the
cost model, the profiles or the shipped scenarios change (tests/test_startup.py fails until then).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from prfaas_plan import api  # noqa: E402
from prfaas_plan.profiles.registry import scenario_path, shipped_names  # noqa: E402
from prfaas_plan.study import basis  # noqa: E402
from prfaas_plan.timing import prefill, shipped  # noqa: E402

OUT = ROOT / "prfaas_plan" / "timing" / shipped.FILE


def text() -> str:
    """``shipped.json`` as a fresh run of every shipped scenario writes it (the calibrations and
    layouts this process kept, ``study.basis.calibrated`` and ``timing.prefill``, set aside meanwhile)."""
    kept = [(memo, dict(memo)) for memo in (basis._CALIBRATIONS, prefill._LAYOUTS)]
    for memo, _ in kept:
        memo.clear()
    try:
        with shipped.recording() as results:
            for name in shipped_names("scenarios"):
                if not api.is_sites_file(name):
                    api.plan(name)
                api.validate_file(scenario_path(name))
    finally:
        for memo, values in kept:
            memo.clear()
            memo.update(values)
    return shipped.text(results)


def main() -> int:
    fresh = text()
    if "--check" in sys.argv[1:]:
        same = OUT.is_file() and OUT.read_text(encoding="utf-8") == fresh
        print(f"{OUT.relative_to(ROOT)} is {'up to date' if same else 'stale: run python tools/shipped_results.py'}")
        return 0 if same else 1
    OUT.write_text(fresh, encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
