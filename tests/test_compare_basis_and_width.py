"""Issue 16, item 3 (like compared with like) and the 80-column tables of plan and compare.

Expectations are written by hand from what each hardware has been measured on: the model
profile of prfaas-1t-hybrid has Table 5 points for 8 x H200 only; the case-study scenario's
calibration points and its 800 tokens/s decode rate were measured (implied) on 8 x H20.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
import yaml
from conftest import REPO, case_study_doc, table_parts

from prfaas_plan import api
from prfaas_plan.profiles.registry import resolve_scenario_file
from prfaas_plan.report import CONTINUED, to_csv, to_table
from prfaas_plan.study.basis import SOURCE_KEYS
from prfaas_plan.views.compare import compare_view
from prfaas_plan.views.plan import plan_view

PRFAAS = ("h200", "b200", "rubin-cpx")
PD = ("h20", "h200")
TABLE5_LENGTHS = [1024, 8192, 32768, 131072]  # the model profile's 8 x H200 points
H20_LENGTHS = [10224, 27486]  # the scenario's H20 calibration points


@pytest.fixture(scope="module")
def comparisons():
    """H200/B200/Rubin CPX x H20/H200 on the case study, on each basis (about 5 s)."""
    return {
        basis: api.compare("paper-case-study", prfaas=list(PRFAAS), pd=list(PD), basis=basis) for basis in ("model", "as-given")
    }


@pytest.fixture(scope="module")
def two_options():
    return api.compare("paper-case-study", prfaas=["h200", "b200"], basis="as-given")


def _rows(comparison) -> list[dict]:
    return list(csv.DictReader(io.StringIO(to_csv(compare_view(comparison)))))


def _expected(basis: str, prfaas: str, pd: str) -> dict:
    """Each pool's source, by hand: measured points (or a measured rate) are used only on the
    hardware they were measured on."""
    if basis == "model":  # the instance model, calibrated where the hardware has measurements, batched
        return {
            "prfaas_prefill_source": "calibrated" if prfaas == "h200" else "roofline",
            "prfaas_prefill_capacity": "saturated",
            "pd_prefill_source": "calibrated",  # H20: the scenario's points; H200: Table 5
            "pd_prefill_capacity": "saturated",
            "decode_source": "calibrated" if pd == "h20" else "roofline",
        }
    return {
        "prfaas_prefill_source": "measured" if prfaas == "h200" else "roofline",
        "prfaas_prefill_capacity": "per_request" if prfaas == "h200" else "saturated",
        "pd_prefill_source": "calibrated" if pd == "h20" else "measured",
        "pd_prefill_capacity": "per_request",
        "decode_source": "scenario" if pd == "h20" else "roofline",
    }


@pytest.mark.slow
@pytest.mark.parametrize("basis", ["model", "as-given"])
def test_every_compare_row_names_its_basis_and_each_pools_source(comparisons, basis):
    rows = _rows(comparisons[basis])
    assert sorted((r["prfaas_hardware"], r["pd_hardware"]) for r in rows) == sorted((f, d) for f in PRFAAS for d in PD)
    for r in rows:
        assert r["status"] == "ok" and r["basis"] == basis
        assert all(r[k] for k in SOURCE_KEYS if k != "decode_layout"), r
        expected = _expected(basis, r["prfaas_hardware"], r["pd_hardware"])
        assert {k: r[k] for k in expected} == expected, r["option"]
    doc = compare_view(comparisons[basis]).json_doc
    assert doc["basis"] == basis and all(o["basis"] == basis for o in doc["options"])


@pytest.mark.slow
def test_options_whose_pools_stand_on_different_sources_are_flagged(comparisons):
    """On the model basis the H200 pools are calibrated on measurements (Table 5's points, the
    scenario's H20 decode rate on H20) and the B200 and Rubin CPX PrfaaS pools, and the H200 decode,
    are the roofline alone: one note per role whose options differ so, naming each side's options
    (ranks); PD prefill is calibrated in every option (H20 and H200 both have points): no note."""
    report = compare_view(comparisons["model"])
    rows = report.json_doc["options"]

    def ranks(key: str, source: str) -> str:
        found = [str(r["rank"]) for r in rows if r[key] == source]
        return f"option{'s' if len(found) > 1 else ''} {', '.join(found)}"

    said = [n for n in report.notes if "not on one basis" in n]
    assert [n.split(" is not")[0] for n in said] == ["PrfaaS prefill", "decode"]
    for note, key in zip(said, ("prfaas_prefill_source", "decode_source")):
        assert ranks(key, "roofline") + " on the roofline alone, " + ranks(key, "calibrated") + " calibrated" in note


@pytest.mark.parametrize("pd", PD)
def test_no_option_uses_a_curve_measured_on_other_hardware(pd):
    """The pools of each option, resolved as compare resolves them: a calibration was fitted on
    the points of the pool's own hardware, and the H20 decode rate only decodes on H20."""
    from prfaas_plan.planner.chips import choose_among
    from prfaas_plan.study.resolve import one_site
    from prfaas_plan.study.resolve.options import CompareOption
    from prfaas_plan.timing.prefill import MeasuredPrefill

    scenario, path = resolve_scenario_file("paper-case-study")
    for basis in ("model", "as-given"):
        variant = one_site(scenario, path, basis).with_option(CompareOption(prfaas="h200", pd=pd))
        inputs = choose_among(variant.variants(), path)
        pool = inputs.pd
        if pool.calibration is not None:
            lengths = [p.length_tokens for p in pool.calibration.points]
            assert lengths == (H20_LENGTHS if pd == "h20" else TABLE5_LENGTHS), (basis, pd)
        if isinstance(pool.curve, MeasuredPrefill):
            assert basis == "as-given" and pool.curve.measured.hardware == pd
        rate = inputs.decode.tokens_per_s_per_instance
        assert (rate == 800) == (pd == "h20"), (basis, pd, rate)
        if pd != "h20":
            assert any("measured on h20 are not used" in n for n in inputs.notes)
            assert any("800 tokens/s measured on h20 is not used" in n for n in inputs.notes)


def test_basis_model_calibrates_the_h200_pool_on_table5():
    """Basis model: the H200 PrfaaS pool is its roofline fitted to Table 5 (the fit reproduces
    every point within 1%), counted in batched passes: fewer instance-seconds per request than
    the one-prompt latency the points measure."""
    import numpy as np

    from prfaas_plan.planner.chips import choose

    scenario, path = resolve_scenario_file("paper-case-study")
    inputs = choose(scenario, path, "model")
    cal = inputs.prfaas.calibration
    assert [p.length_tokens for p in cal.points] == TABLE5_LENGTHS and cal.max_abs_error < 0.01
    lengths = np.array([1024.0, 32768.0])
    assert np.all(inputs.prfaas.curve.capacity_s(lengths) < inputs.prfaas.curve.prefill_s(lengths))
    assert inputs.decode.tokens_per_s_per_instance == 800 and inputs.decode.source == "calibrated"


def test_plan_keeps_the_case_study_figures_and_says_its_sources(run_cli):
    """plan uses the scenario as given: t = 19,349, 4/3/5, Lambda_max 3.237 (exact); the
    docs/planning.md's paper-mode row (t = 19,219, 3.29 req/s, 1.56x); its sources in CSV and JSON."""
    exact = api.plan("paper-case-study", with_marginals=False)
    pt = exact.point
    assert (round(pt.threshold_tokens), pt.n_prfaas, pt.n_p, pt.n_d) == (19349, 4, 3, 5)
    assert round(pt.lambda_max, 3) == 3.237
    paper = api.plan("paper-case-study", mode="paper", with_marginals=False)
    assert round(paper.point.threshold_tokens) == 19219 and round(paper.point.lambda_max, 2) == 3.29
    assert (paper.point.n_prfaas, paper.point.n_p, paper.point.n_d) == (4, 3, 5)
    assert round(paper.ratio("prfaas_pd"), 2) == 1.56
    rows = list(csv.DictReader(io.StringIO(run_cli("plan", "-f", "csv").out)))
    expected = {"basis": "as-given", **_expected("as-given", "h200", "h20")}
    for r in rows:
        assert {k: r[k] for k in expected} == expected


def test_swapping_the_hardware_in_a_file_drops_its_measurements_with_a_note(tmp_path, run_cli):
    """The shipped case study with the PD pool moved to H200 by hand: the H20 points and rate stay
    in the file but are not used; the plan equals the same file without them."""
    doc = case_study_doc()
    doc["pd"]["hardware"] = "h200"
    moved = tmp_path / "moved.yaml"
    moved.write_text(yaml.safe_dump(doc))
    for key in ("calibration_points", "calibration_fit", "calibration_note", "calibration_hardware"):
        doc["pd"].pop(key)
    for key in ("tokens_per_s_per_instance", "tokens_per_s_hardware", "tokens_per_s_note"):
        doc["decode"].pop(key)
    bare = tmp_path / "bare.yaml"
    bare.write_text(yaml.safe_dump(doc))
    a, b = api.plan(str(moved), with_marginals=False), api.plan(str(bare), with_marginals=False)
    assert a.point.lambda_max == b.point.lambda_max and a.inputs.decode.source == "roofline"
    assert any("calibration points measured on h20 are not used" in n for n in a.notes)
    out = run_cli("plan", str(moved)).out
    assert "800 tokens/s measured on h20 is not used" in out


def test_points_without_a_named_hardware_belong_to_the_pool_as_written(tmp_path):
    doc = case_study_doc()
    doc["pd"].pop("calibration_hardware")
    doc["decode"].pop("tokens_per_s_hardware")
    scenario = resolve_scenario_file(_write(tmp_path, doc))[0]
    assert scenario.pd.calibration_hardware == "h20" and scenario.decode.tokens_per_s_hardware == "h20"


def _write(tmp_path, doc) -> str:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def test_basis_from_the_compare_section_and_the_option(tmp_path, run_cli):
    doc = case_study_doc()
    doc["compare"] = {"prfaas": ["b200"], "basis": "as-given"}
    path = _write(tmp_path, doc)
    rows = list(csv.DictReader(io.StringIO(run_cli("compare", path, "-f", "csv", "-j", "1").out)))
    assert [r["basis"] for r in rows] == ["as-given"]
    rows = list(csv.DictReader(io.StringIO(run_cli("compare", path, "-f", "csv", "-j", "1", "--basis", "model").out)))
    assert [r["basis"] for r in rows] == ["model"]
    doc["compare"].pop("basis")  # the default: the instance model
    rows = list(csv.DictReader(io.StringIO(run_cli("compare", _write(tmp_path, doc), "-f", "csv", "-j", "1").out)))
    assert [(r["basis"], r["prfaas_prefill_capacity"]) for r in rows] == [("model", "saturated")]
    assert api.compare("paper-case-study", prfaas=["b200"]).basis == "model"  # no compare: section
    path = _write(tmp_path, {**doc, "compare": {**doc["compare"], "basis": "as-given"}})
    res = run_cli("compare", path, "--basis", "measured")
    assert res.code == 2 and "--basis" in res.err and len(res.err.strip().splitlines()) == 1
    doc["compare"]["basis"] = "modelled"
    res = run_cli("validate", _write(tmp_path, doc))
    assert res.code == 2 and "compare.basis" in res.err and len(res.err.strip().splitlines()) == 1


# --------------------------------------------------------------------------------------------
# 80 columns

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _value(text: str):
    """A CSV cell as the row value it was written from."""
    if text == "":
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return {"True": True, "False": False}.get(text, text)


def _tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """(header cells, row cells) of every table part; cells are separated by two or more spaces."""
    return [(header, [re.split(r"\s{2,}", row.strip()) for row in body]) for header, body in table_parts(text)]


def _check_fits(report, text: str, width: int) -> None:
    """Every line within ``width``; every column of every table shown, each cell whole in its
    row; the value of every CSV column that a table shows is that cell, formatted; the items of
    a text table (the operating point) wrapped, never cut."""
    assert max(len(ln.rstrip()) for ln in text.splitlines()) <= width
    assert "…" not in text
    parts = _tables(text)
    csv_rows = list(csv.DictReader(io.StringIO(to_csv(report))))
    for table in [report, *report.sections]:
        if [c.key for c in table.columns] == ["item", "value"]:
            flat = " ".join(text.split())
            for row in table.rows:
                assert " ".join(row["value"].split()) in flat or all(w in text for w in row["value"].split())
            continue
        shown = [
            p
            for p in parts
            if len(p[1]) == len(table.rows)
            and set(p[0]) <= {c.header for c in table.columns}
            and p[0][0] == table.columns[0].header
        ]
        headers = {h for p in shown for h in p[0]}
        assert headers == {c.header for c in table.columns}, (table.title, headers)
        by_header = {c.header: c for c in table.columns}
        for part_headers, cells in shown:
            for i, (row, line) in enumerate(zip(table.rows, cells)):
                assert len(line) == len(part_headers), line
                for header, cell in zip(part_headers, line):
                    col = by_header[header]
                    assert cell == col.fmt(row[col.key]), (table.title, header, cell)
                    if table is report and col.key in csv_rows[i]:
                        assert cell == col.fmt(_value(csv_rows[i][col.key])), (header, cell)


@pytest.mark.parametrize("color", [True, False])
def test_compare_and_plan_fit_80_columns_with_every_number_whole(two_options, color):
    plan = api.plan("paper-case-study")
    for report in (compare_view(two_options), plan_view(plan)):
        text = ANSI.sub("", to_table(report, width=80, color=color))
        _check_fits(report, text, 80)
        assert CONTINUED in text  # too wide for one part at 80 columns
    assert "vs homog" in ANSI.sub("", to_table(plan_view(plan), width=80, color=color))


def test_wide_terminals_keep_one_table(two_options):
    """At 200 columns (and in a pipe, which renders at full width) the plan and compare tables are
    one table each, as before."""
    plan = api.plan("paper-case-study", with_marginals=False)
    for report in (compare_view(two_options), plan_view(plan)):
        for text in (ANSI.sub("", to_table(report, width=200, color=True)), to_table(report, width=400)):
            assert CONTINUED not in text
            header = next(h for h, _ in _tables(text))
            assert header == [c.header for c in report.columns]


def test_compare_plans_a_same_named_hardware_copy_at_its_own_price(tmp_path):
    """A copy of h200 that keeps ``name: h200`` at a contract price is its own option: compare
    prices it at the copy's rate, not the shipped profile's (a buyer's contract price was dropped)."""
    from prfaas_plan import api
    from prfaas_plan.profiles.registry import same_hardware

    shipped = (Path(__file__).resolve().parents[1] / "hardware_profiles" / "h200.yaml").read_text()
    assert "price_usd_per_gpu_hour: 4.0" in shipped
    copy = tmp_path / "my_h200_contract.yaml"
    copy.write_text(shipped.replace("price_usd_per_gpu_hour: 4.0", "price_usd_per_gpu_hour: 2.5"))
    assert not same_hardware(str(copy), "h200") and same_hardware("H200", "h200")
    result = api.compare("paper-case-study", prfaas=[str(copy), "h200"], pd=["h20"], basis="as-given")
    by_file = {r.option.prfaas: r for r in result.results}
    mine, theirs = by_file[str(copy)], by_file["h200"]
    assert (mine.n_prfaas, mine.n_p, mine.n_d) == (theirs.n_prfaas, theirs.n_p, theirs.n_d)  # the same speed figures
    assert mine.n_prfaas > 0
    # the same counts; only the PrfaaS chips' rate differs: N_prfaas x 8 chips x ($4.00 - $2.50)
    assert theirs.usd_per_hour - mine.usd_per_hour == pytest.approx(mine.n_prfaas * 8 * (4.0 - 2.5))


def test_a_fault_inside_a_compared_hardware_file_names_its_field(run_cli, tmp_path):
    """compare --prfaas h200,bad.yaml with efficiency.matmul 1.6 in the file: the one-line error
    names the file and the field inside it, as plan does, not the option; an unknown shipped
    name or a missing file still names the option."""
    bad = tmp_path / "bad.yaml"
    text = (REPO / "hardware_profiles" / "h200.yaml").read_text()
    bad.write_text(text.replace("matmul: ", "matmul: 1.6 #", 1))
    res = run_cli("compare", "--prfaas", f"h200,{bad}", "--jobs", "1")
    assert res.code == 2 and "efficiency.matmul: must be in (0, 1], got 1.6" in res.err and "--prfaas" not in res.err
    assert res.err.count("\n") <= 1
    res = run_cli("compare", "--prfaas", "h200,nosuch", "--jobs", "1")
    assert res.code == 2 and "--prfaas: unknown hardware 'nosuch'" in res.err
    res = run_cli("compare", "--prfaas", f"h200,{tmp_path / 'missing.yaml'}", "--jobs", "1")
    assert res.code == 2 and "--prfaas: file not found" in res.err


def test_a_failed_options_identity_names_its_hardware_as_a_planned_one_does(run_cli, tmp_path):
    """A hardware file compared on a PD pool it cannot serve (groq-lpu for 128K prompts fails) and on
    one it can: both CSV rows name the file's profile (h200-contract), not its absolute path."""
    copy = tmp_path / "h200c.yaml"
    copy.write_text((REPO / "hardware_profiles" / "h200.yaml").read_text().replace("name: h200\n", "name: h200-contract\n"))
    res = run_cli("compare", "--prfaas", str(copy), "--pd", "h20,groq-lpu", "--jobs", "1", "-f", "csv")
    assert res.code == 0, res.err
    rows = list(csv.DictReader(io.StringIO(res.out)))
    assert {r["status"] == "ok" for r in rows} == {True, False}
    assert [r["prfaas_hardware"] for r in rows] == ["h200-contract", "h200-contract"]


def test_an_option_given_twice_is_planned_once_and_said(run_cli):
    """--prfaas h200,h200,H200,b200 --link 100,100: two options (h200 and b200, each once, on one
    link), not four starred twins; a note names what repeated."""
    res = run_cli("compare", "--prfaas", "h200,h200,H200,b200", "--link", "100,100", "--jobs", "1", "-f", "json")
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    assert [r["prfaas_hardware"] for r in doc["options"]] in (["h200", "b200"], ["b200", "h200"])
    notes = doc["notes"]
    assert "prfaas: h200, H200 given again: each option planned once" in notes
    assert "link_gbps: 100.0 given again: each option planned once" in notes
    res = run_cli("compare", "--model", "qwen3-8b,QWEN3-8B", "--pd", "h20", "--jobs", "1", "-f", "json")
    doc = json.loads(res.out)
    assert len(doc["options"]) == 1 and doc["notes"] == ["model: QWEN3-8B given again: each option planned once"]


def test_a_list_past_the_option_limit_is_refused_before_repeats_are_searched(run_cli):
    """5,000 values in one list: a one-line error naming the option, at once (the search for
    repeats compares values pairwise, so it must not run on an unbounded list)."""
    res = run_cli("compare", "--prfaas", ",".join(["h200"] * 5000), "--jobs", "1")
    assert res.code == 2 and "--prfaas: 5,000 values (at most 512 options in all)" in res.err
    assert res.err.count("\n") <= 1
