"""plan's start-up: schemas built when first used, a prefill layout searched once per process for
the same inputs, the shipped scenarios' exact calibration fits and layout searches read from
package data that a fresh run reproduces (``timing.shipped``), and plan's ratio to its import
floor recorded in benchmarks/RESULTS.md (``benchmarks/startup.py``)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]


def test_schemas_are_built_when_first_used():
    """Importing the schemas builds no validator; validating one builds it (and bad input is
    still refused with the field named)."""
    code = (
        "from prfaas_plan.profiles._base import StrictModel\n"
        "import prfaas_plan.profiles.scenario, prfaas_plan.profiles.hardware, prfaas_plan.profiles.model\n"
        "def subs(c):\n"
        "    for s in c.__subclasses__():\n"
        "        yield s; yield from subs(s)\n"
        "print(sum(c.__pydantic_complete__ for c in subs(StrictModel)), len(list(subs(StrictModel))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True).stdout
    built, classes = map(int, out.split())
    assert built == 0 and classes > 40
    from prfaas_plan.errors import PlanInputError
    from prfaas_plan.profiles.hardware import load_hardware_profile

    data = yaml.safe_load((REPO / "hardware_profiles" / "h200.yaml").read_text())
    with pytest.raises(PlanInputError) as err:
        load_hardware_profile({**data, "memory_gib": "lots"}, "hw.yaml")
    assert err.value.one_line().startswith("hw.yaml: memory_gib: ")


def test_a_layout_is_searched_once_for_the_same_inputs():
    """Resolving the case study again (as the plan report's case-study check does) finds the
    layouts of the first resolution without searching; other hardware is searched afresh."""
    from prfaas_plan.planner.chips import load_inputs
    from prfaas_plan.timing import prefill

    first = load_inputs("paper-case-study")
    layouts = [getattr(pool.curve, "roofline", pool.curve).layout for pool in (first.prfaas, first.pd)]
    searched = []
    original = prefill.RooflinePrefill._search_layout
    try:
        prefill.RooflinePrefill._search_layout = lambda self: searched.append(self) or original(self)
        again = load_inputs("paper-case-study")
        for pool, layout in zip((again.prfaas, again.pd), layouts):
            curve = getattr(pool.curve, "roofline", pool.curve)
            assert curve.layout == layout
        assert searched == []
        curve = getattr(first.prfaas.curve, "roofline", first.prfaas.curve)
        hardware = curve.instance.hardware
        other = hardware.model_copy(update={"memory_bandwidth_tb_per_s": hardware.memory_bandwidth_tb_per_s / 2})
        fresh = replace(curve, instance=replace(curve.instance, hardware=other))
        assert fresh.layout is not None and searched == [fresh]
    finally:
        prefill.RooflinePrefill._search_layout = original


def test_shipped_results_are_what_a_fresh_run_computes():
    """prfaas_plan/timing/shipped.json is exactly what planning and validating every shipped
    scenario afresh writes (tools/shipped_results.py): it cannot go stale when the cost model, a
    profile or a scenario changes."""
    sys.path.insert(0, str(REPO / "tools"))
    try:
        import shipped_results
    finally:
        sys.path.remove(str(REPO / "tools"))
    text = shipped_results.OUT.read_text(encoding="utf-8")
    assert text == shipped_results.text()
    sections = json.loads(text)["results"]
    assert {"fits", "prefill_layouts", "decode_layouts"} <= set(sections)  # the case study needs all three


def test_a_shipped_fit_is_read_and_other_inputs_are_solved(monkeypatch):
    """The case study's calibration reads its shipped fit (no layout search, no solve) and gives
    the same result as solving it afresh; other points are solved."""
    from prfaas_plan.planner.chips import load_inputs
    from prfaas_plan.study import basis
    from prfaas_plan.timing import calibrate as cal
    from prfaas_plan.timing import prefill, shipped

    original, asked = cal.calibrate_sets, []
    monkeypatch.setattr(basis, "_CALIBRATIONS", {})
    monkeypatch.setattr(cal, "calibrate_sets", lambda *args: asked.append(args) or original(*args))
    load_inputs("paper-case-study")
    assert len(asked) == 1  # the PD pool's H20 points
    sets, hardware, name, fit = asked[0]

    solved, searched = [], []
    solve, search = cal._Fit.solve, prefill.RooflinePrefill._search_layout
    monkeypatch.setattr(cal._Fit, "solve", lambda self, chosen=None: solved.append(chosen) or solve(self, chosen))

    def search_free(curve):  # a search among layouts: the instance fixes none
        if curve.instance.layout is None:
            searched.append(curve)
        return search(curve)

    monkeypatch.setattr(prefill.RooflinePrefill, "_search_layout", search_free)
    monkeypatch.setattr(prefill, "_LAYOUTS", {})
    read = original(sets, hardware, name, fit)
    assert solved == [] and searched == []
    with shipped.recording() as results:
        fresh = original(sets, hardware, name, fit)
    assert solved == [None] and len(searched) == 1 and len(results["fits"]) == 1
    assert read == fresh
    moved = [replace(s, points=[replace(p, prefill_s=p.prefill_s * 1.01) for p in s.points]) for s in sets]
    original(moved, hardware, name, fit)
    assert solved == [None, None]


def test_shipped_layouts_are_read_and_other_instances_searched(monkeypatch):
    """The case study's prefill and decode layout searches are read, not searched; the same model
    on a changed chip (a user's profile) is searched, prefill and decode."""
    from prfaas_plan.planner.chips import load_inputs
    from prfaas_plan.planner.throughput import threshold_table
    from prfaas_plan.study import basis
    from prfaas_plan.study.model import decode_model
    from prfaas_plan.timing import decode, prefill

    searched = []
    search, search_decode = prefill.RooflinePrefill._search_layout, decode._search_decode_layout

    def search_free(curve):  # a search among layouts: the instance fixes none
        if curve.instance.layout is None:
            searched.append("prefill")
        return search(curve)

    monkeypatch.setattr(basis, "_CALIBRATIONS", {})
    monkeypatch.setattr(prefill, "_LAYOUTS", {})
    monkeypatch.setattr(prefill.RooflinePrefill, "_search_layout", search_free)
    monkeypatch.setattr(decode, "_search_decode_layout", lambda *a: searched.append("decode") or search_decode(*a))
    inputs = load_inputs("paper-case-study")
    threshold_table(inputs), decode_model(inputs)  # every pool's layouts
    assert searched == []
    curve = getattr(inputs.prfaas.curve, "roofline", inputs.prfaas.curve)
    hardware = curve.instance.hardware
    other = hardware.model_copy(update={"name": "slow", "memory_bandwidth_tb_per_s": hardware.memory_bandwidth_tb_per_s / 2})
    moved = replace(curve, instance=replace(curve.instance, hardware=other))
    assert moved.layout is not None and searched == ["prefill"]
    decode.decode_capacity(curve.model, moved.instance, 4096)
    assert searched == ["prefill", "decode"]


def test_results_record_plans_ratio_to_its_import_floor():
    """benchmarks/RESULTS.md holds a start-up section from benchmarks/startup.py with plan's and
    the floor's times and their ratios."""
    text = (REPO / "benchmarks" / "RESULTS.md").read_text()
    sections = text.split("## plan's start-up against its import floor")
    assert len(sections) >= 2, "no start-up section"
    last = sections[-1]
    plan = re.search(r"^\| plan \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|$", last, re.M)
    floor = re.search(r"^\| import floor \| ([\d.]+) \| 1\.00 \| ([\d.]+) \| 1\.00 \|$", last, re.M)
    assert plan and floor
    wall, ratio = float(plan.group(1)), float(plan.group(2))
    assert abs(wall / float(floor.group(1)) - ratio) < 0.01


@pytest.mark.slow
def test_startup_benchmark_runs(tmp_path):
    """The script runs end to end (one run each) and writes its section where it is told."""
    results = tmp_path / "r.md"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "startup.py"), "--runs", "1", "--append", "--results", str(results)],
        env=env,
        cwd=REPO,
        check=True,
        capture_output=True,
        timeout=300,
    )
    text = results.read_text()
    assert "## plan's start-up against its import floor" in text
    assert re.search(r"^\| plan \| [\d.]+ \| [\d.]+ \| [\d.]+ \| [\d.]+ \|$", text, re.M)
    assert "numpy" in text and "pydantic" in text


def test_a_shipped_key_does_not_change_with_the_day_of_a_fit():
    """The case study's calibrated PD hardware records the date of its fit; the key a shipped result
    is kept under leaves it out (a key made one day once missed the next, and the shipped file
    failed its check), and reads floats at 12 significant digits (a fit's last bits vary by build)."""
    from prfaas_plan.planner.chips import load_inputs
    from prfaas_plan.timing import shipped

    hardware = load_inputs("paper-case-study").pd.instance.hardware
    assert hardware.calibration is not None and hardware.calibration.date
    other_day = hardware.model_copy(update={"calibration": hardware.calibration.model_copy(update={"date": "2031-06-30"})})
    assert shipped.key_of([shipped.profile_key(other_day)]) == shipped.key_of([shipped.profile_key(hardware)])
    assert shipped.key_of([0.1 + 0.2]) == shipped.key_of([0.3]) and shipped.key_of([0.3]) != shipped.key_of([0.3001])
