"""Write the exact calibration fits of the shipped scenarios as package data.

    python tools/fits.py            # writes prfaas_plan/timing/fits.json
    python tools/fits.py --check    # exit 1 when the shipped file differs from a fresh run

Every shipped scenario is resolved as ``plan`` resolves it (``planner.chips.load_inputs``, one-site
scenarios) and as ``validate`` checks it (``api.validate_file``: every case and window, and the
multi-site ones), with every fit solved afresh (``timing.calibrate.recording_fits``); the exact
fits among them are written, keyed by their inputs (``timing.calibrate.fit_key``). A fit reads
its layouts and solution from the file only when its inputs are the same, so a user's profile
or points are solved as before. Rerun it whenever the cost model, the profiles or the shipped
scenarios change (tests/test_startup.py fails until then).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from prfaas_plan import api  # noqa: E402
from prfaas_plan.planner.chips import load_inputs  # noqa: E402
from prfaas_plan.profiles.registry import scenario_path, shipped_names  # noqa: E402
from prfaas_plan.study import basis  # noqa: E402
from prfaas_plan.timing import calibrate  # noqa: E402

OUT = ROOT / "prfaas_plan" / "timing" / calibrate.FITS_FILE


def text() -> str:
    """``fits.json`` as a fresh run of every shipped scenario writes it (the calibrations this
    process kept, ``study.basis.calibrated``, set aside meanwhile)."""
    kept = dict(basis._CALIBRATIONS)
    basis._CALIBRATIONS.clear()
    try:
        with calibrate.recording_fits() as fits:
            for name in shipped_names("scenarios"):
                if not api.is_sites_file(name):
                    load_inputs(name)
                api.validate_file(scenario_path(name))
    finally:
        basis._CALIBRATIONS.clear()
        basis._CALIBRATIONS.update(kept)
    return calibrate.fits_text(fits)


def main() -> int:
    fresh = text()
    if "--check" in sys.argv[1:]:
        same = OUT.read_text(encoding="utf-8") == fresh
        print(f"{OUT.relative_to(ROOT)} is {'up to date' if same else 'stale: run python tools/fits.py'}")
        return 0 if same else 1
    OUT.write_text(fresh, encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)} ({fresh.count(chr(34) + 'x' + chr(34))} fits)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
