"""A scenario's measurements belong to the instance they were measured on: the same hardware
(compared as the profile a reference resolves to: 'H20', a copy of the h20 profile in a file
and 'h20' are one chip) and the same chips per instance (a per-instance decode rate and
instance latencies of 8 x H20 say nothing about 16 x H20).

Expected values are independent of the code under test: the case study's pinned Lambda_max
(3.237 req/s, tests/test_planner.py) for the same instance spelled differently, and for an
instance the measurements do not belong to, the plan of the same file with the measurements
deleted by hand.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from conftest import case_study_doc

from prfaas_plan import api
from prfaas_plan.profiles.registry import hardware_identity, resolve_scenario_file, same_hardware
from prfaas_plan.profiles.scenario import load_scenario
from prfaas_plan.study.resolve import build_variants, one_site
from prfaas_plan.study.resolve.options import CompareOption

REPO = Path(__file__).resolve().parents[1]
CASE_STUDY_LAMBDA_RPS = 3.237  # tests/test_planner.py: t = 19,349, 4/3/5 (exact mode)
MEASURED = {
    "pd": ("calibration_points", "calibration_fit", "calibration_note", "calibration_hardware", "calibration_gpus"),
    "decode": ("tokens_per_s_per_instance", "tokens_per_s_hardware", "tokens_per_s_note", "tokens_per_s_gpus"),
}


def _write(folder: Path, doc: dict, name: str = "s.yaml") -> str:
    path = folder / name
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def _bare(doc: dict) -> dict:
    """The same scenario without the H20 measurements (what a pool they do not belong to gets)."""
    doc = yaml.safe_load(yaml.safe_dump(doc))
    for part, keys in MEASURED.items():
        for key in keys:
            doc[part].pop(key, None)
    return doc


def _h20_copy(folder: Path) -> str:
    """The shipped h20 profile as a user's file: a path, whose profile is named h20."""
    target = folder / "my-h20.yaml"
    shutil.copy(REPO / "hardware_profiles" / "h20.yaml", target)
    return target.name  # relative: taken from the scenario's folder


# --------------------------------------------------------------------------------------------
# The same hardware, spelled differently


def test_hardware_identity_is_the_resolved_profile(tmp_path):
    copy = _h20_copy(tmp_path)
    assert hardware_identity("H20") == "h20" and hardware_identity("h20") == "h20"
    assert hardware_identity(copy, tmp_path) == "h20"  # a file: the name inside it
    assert same_hardware("H20", "h20") and same_hardware(copy, "H20", tmp_path)
    assert not same_hardware("h20", "h200") and not same_hardware("H200", "h20")
    assert not same_hardware("rubin-cxp", "rubin-cpx")  # an unknown name is only itself


def test_compare_case_variants_of_a_name_give_one_answer():
    """`compare --pd H20,h20 --basis as-given`: one option, the scenario as given (the H20 points
    and 800 tokens/s were measured on that hardware), Lambda_max as pinned, no note of measurements
    dropped; h20 repeats H20, which the comparison says and plans once."""
    res = api.compare("paper-case-study", pd=["H20", "h20"], basis="as-given")
    assert len(res.results) == 1 and res.notes == ("pd: h20 given again: each option planned once",)
    for row in res.results:
        assert round(row.lambda_max_rps, 3) == CASE_STUDY_LAMBDA_RPS, row.notes
        assert (row.sources["pd_prefill_source"], row.sources["decode_source"]) == ("calibrated", "scenario")
        assert not any("not used" in n for n in row.notes), row.notes


@pytest.mark.parametrize("pd, measured_on", [("H20", "h20"), ("h20", "H20"), ("COPY", "h20"), ("h20", "COPY")])
def test_plan_uses_measurements_of_the_same_hardware_however_named(tmp_path, pd, measured_on):
    """The pool's hardware and the hardware the measurements name, as a name in any case or as
    a file of the h20 profile (relative to the scenario): the case study's figures."""
    copy = _h20_copy(tmp_path)
    doc = case_study_doc()
    doc["pd"]["hardware"] = copy if pd == "COPY" else pd
    doc["pd"]["calibration_hardware"] = copy if measured_on == "COPY" else measured_on
    doc["decode"]["tokens_per_s_hardware"] = copy if measured_on == "COPY" else measured_on
    result = api.plan(_write(tmp_path, doc), with_marginals=False)
    assert round(result.point.lambda_max, 3) == CASE_STUDY_LAMBDA_RPS
    assert result.inputs.decode.tokens_per_s_per_instance == 800
    assert not any("not used" in n for n in result.notes), result.notes


def test_a_compare_option_naming_the_pools_own_hardware_keeps_its_price_and_layout():
    """`--pd H20` on an h20 pool replaces nothing: its cost and layout stay, no note."""
    scenario, path = resolve_scenario_file("paper-case-study")
    doc = case_study_doc()
    doc["pd"]["cost"] = {"usd_per_gpu_hour": 1.5}
    scenario = load_scenario(doc, path)
    base = one_site(scenario, path)
    variant = base.with_option(CompareOption(pd="H20"))
    assert variant.pools == base.pools and variant.said == ()
    moved = base.with_option(CompareOption(pd="h200"))  # other hardware: its price dropped
    pool, kept = moved.variants()[0].pd, base.variants()[0].pd
    assert kept.cost.capital_usd_per_hour == 1.5 and pool.hardware_name == "h200" and pool.cost != kept.cost
    assert any("cost" in n for n in moved.said)


def test_gpu_budgets_follow_the_hardware_a_file_pool_resolves_to(tmp_path):
    """A pool given as a file of the h20 profile uses the 'h20' budget; a budget for hardware no
    pool of the option uses (h200, after moving PrfaaS to B200) is left out with a note."""
    copy = _h20_copy(tmp_path)
    doc = case_study_doc()
    doc["pd"]["hardware"] = copy
    doc["budgets"] = {"gpus": {"H20": 64, "h200": 32}}
    path = _write(tmp_path, doc)
    variant = one_site(*resolve_scenario_file(path)).with_option(CompareOption(prfaas="b200"))
    assert variant.variants()[0].limits.gpu_budget == {"h20": 64}
    notes = variant.said
    assert notes and "h200" in notes[-1] and "H20" not in notes[-1]


# --------------------------------------------------------------------------------------------
# The same hardware, another chip count


@pytest.fixture(scope="module")
def sixteen_or_eight(tmp_path_factory):
    """The case study with 16 or 8 H20 chips per PD instance and 0-24 instances; the same file
    without the measurements (taken on 8 x H20)."""
    folder = tmp_path_factory.mktemp("chips")
    doc = case_study_doc()
    doc["pd"]["gpus_per_instance"] = [16, 8]
    doc["pd"]["instances"] = {"min": 0, "max": 24}
    return doc, _write(folder, doc), _write(folder, _bare(doc), "bare.yaml")


def _by_chips(path: str, basis: str = "as-given") -> dict:
    scenario, path = resolve_scenario_file(path)
    return {v.pd.gpus_per_instance: v for v in build_variants(scenario, path, basis=basis)}


@pytest.mark.parametrize("basis", ["as-given", "model"])
def test_measurements_of_8_chips_size_only_the_8_chip_instance(sixteen_or_eight, basis):
    """8 x H20 uses the points and the rate; 16 x H20 is sized exactly as without them, with a
    note that names the instance size as the reason."""
    _, path, bare = sixteen_or_eight
    measured, none = _by_chips(path, basis), _by_chips(bare, basis)
    eight, sixteen = measured[8], measured[16]
    assert eight.pd.calibration is not None and [p.length_tokens for p in eight.pd.calibration.points] == [10224, 27486]
    assert eight.decode.tokens_per_s_per_instance == 800
    assert eight.decode.source == ("scenario" if basis == "as-given" else "calibrated")
    assert sixteen.pd.calibration is None and sixteen.decode.source == "roofline"
    assert sixteen.decode.tokens_per_s_per_instance == none[16].decode.tokens_per_s_per_instance != 800
    assert sixteen.pd.curve.prefill_s(27486.0) == none[16].pd.curve.prefill_s(27486.0)
    assert any("16 x h20" in n and "calibration points" in n and "8-chip instance" in n for n in sixteen.notes)
    assert any("16 x h20" in n and "800 tokens/s" in n and "8-chip instance" in n for n in sixteen.notes)
    assert not any("not used" in n for n in eight.notes)


def test_measurements_named_for_16_chips_size_only_the_16_chip_instance(sixteen_or_eight, tmp_path):
    doc, _, _ = sixteen_or_eight
    doc = yaml.safe_load(yaml.safe_dump(doc))
    doc["pd"]["calibration_gpus"] = 16
    doc["decode"]["tokens_per_s_gpus"] = 16
    variants = _by_chips(_write(tmp_path, doc))
    assert variants[16].pd.calibration is not None and variants[16].decode.tokens_per_s_per_instance == 800
    assert variants[8].pd.calibration is None and variants[8].decode.source == "roofline"


def test_the_chips_default_to_the_pools_single_count(tmp_path):
    """Left out, the chips are the pool's as written: its one count, or the field's default 8."""
    doc = case_study_doc()
    doc["pd"].pop("calibration_gpus")
    doc["decode"].pop("tokens_per_s_gpus")
    doc["pd"]["gpus_per_instance"] = 16
    scenario = resolve_scenario_file(_write(tmp_path, doc))[0]
    assert scenario.pd.calibration_gpus == 16 and scenario.decode.tokens_per_s_gpus == 16
    doc["pd"].pop("gpus_per_instance")
    doc["pd_decode"] = {"hardware": "h20", "gpus_per_instance": 4, "instances": 2}
    scenario = resolve_scenario_file(_write(tmp_path, doc))[0]
    assert scenario.pd.calibration_gpus == 8 and scenario.decode.tokens_per_s_gpus == 4  # the decoding pool's


@pytest.mark.parametrize("part, field", [("pd", "calibration_gpus"), ("decode", "tokens_per_s_gpus")])
@pytest.mark.parametrize("chips", [[16, 8], "auto"])
def test_a_pool_of_several_chip_counts_must_say_which_one_was_measured(tmp_path, run_cli, part, field, chips):
    """With a list or `auto`, the chips of a measurement are not known: a one-line error, exit 2."""
    doc = case_study_doc()
    doc["pd"]["gpus_per_instance"] = chips
    doc[part].pop(field)
    res = run_cli("validate", _write(tmp_path, doc))
    assert res.code == 2 and field in res.err and len(res.err.strip().splitlines()) == 1
    assert "measured on" in res.err and "not one count" in res.err  # the reason, not a type error


def test_user_profile_with_a_shipped_name_uses_its_own_figures(run_cli, tmp_path):
    """A file named h200 with other efficiencies gets the roofline with ITS efficiencies, not the
    shipped h200's measured points for prfaas-1t-hybrid, and a warning says so."""
    doc = yaml.safe_load((REPO / "hardware_profiles" / "h200.yaml").read_text())
    doc["efficiency"]["matmul"] = 0.1
    mine = tmp_path / "h200.yaml"
    mine.write_text(yaml.safe_dump(doc))
    shipped = json.loads(run_cli("kv", "prfaas-1t-hybrid", "-H", "h200", "-f", "json").out)
    res = run_cli("kv", "prfaas-1t-hybrid", "-H", mine, "-f", "json")
    assert res.code == 0 and "warning" in res.err and "differs in its speed figures from the shipped profile" in res.err
    own = json.loads(res.out)
    assert shipped["source"] == "measured" and own["source"] == "roofline"
    assert own["rows"][2]["prefill_s"] > 1.5 * shipped["rows"][2]["prefill_s"]  # a third of the matmul efficiency
    # an identical copy of the shipped profile under another path still counts as the shipped one
    same = tmp_path / "copy.yaml"
    shutil.copy(REPO / "hardware_profiles" / "h200.yaml", same)
    assert json.loads(run_cli("kv", "prfaas-1t-hybrid", "-H", same, "-f", "json").out)["source"] == "measured"


@pytest.mark.parametrize(
    "edit",
    [
        {"price_usd_per_gpu_hour": 2.0},
        {"name": "h200-cheap", "price_usd_per_gpu_hour": 2.0, "price_note": "our contract"},
        {"tdp_w": 650, "description": "our H200s"},
    ],
    ids=["price", "renamed-and-priced", "power-and-words"],
)
def test_a_copy_that_changes_only_price_power_or_words_keeps_the_measured_points(run_cli, tmp_path, edit):
    """A price, a name, a power figure or words do not change how fast a chip runs: the copy's
    prefill times are the shipped h200's measured ones, with no warning; the plan prices it at
    the copy's price."""
    doc = yaml.safe_load((REPO / "hardware_profiles" / "h200.yaml").read_text())
    doc.update(edit)
    mine = tmp_path / "mine.yaml"
    mine.write_text(yaml.safe_dump(doc))
    shipped = json.loads(run_cli("kv", "prfaas-1t-hybrid", "-H", "h200", "-f", "json").out)
    res = run_cli("kv", "prfaas-1t-hybrid", "-H", mine, "-f", "json")
    assert res.code == 0 and "warning" not in res.err, res.err
    own = json.loads(res.out)
    times = lambda rows: [(r["length_tokens"], r["layout"], r["kv_bytes"], r["prefill_s"]) for r in rows]  # noqa: E731
    assert own["source"] == "measured" and times(own["rows"]) == times(shipped["rows"])
    if "price_usd_per_gpu_hour" in edit:  # the PrfaaS pool on the copy: the model profile's points, its price
        plan_doc = case_study_doc()
        plan_doc["prfaas"]["hardware"] = str(mine)
        out = json.loads(run_cli("plan", _write(tmp_path, plan_doc), "-f", "json").out)
        base = json.loads(run_cli("plan", "-f", "json").out)
        assert out["prfaas_pd"]["lambda_max_rps"] == base["prfaas_pd"]["lambda_max_rps"]
        assert out["prfaas_pd"]["usd_per_hour"] == pytest.approx(base["prfaas_pd"]["usd_per_hour"] - 4 * 8 * 2.0)


@pytest.mark.parametrize("name", ["h20", "my-h20"])
def test_a_pd_pool_on_a_priced_copy_keeps_the_scenarios_own_measurements(run_cli, tmp_path, name):
    """The case study's PD pool on an h20 copy at $1.50 (renamed or not): the scenario's calibration
    points and decode rate, measured on h20, still apply (same_hardware takes the copy for the chip
    it copies), so Λ_max is the case study's and only the PD pool's price moves."""
    doc = yaml.safe_load((REPO / "hardware_profiles" / "h20.yaml").read_text())
    was = doc["price_usd_per_gpu_hour"]
    doc.update(name=name, price_usd_per_gpu_hour=1.5)
    (tmp_path / "my-h20.yaml").write_text(yaml.safe_dump(doc))
    plan_doc = case_study_doc()
    plan_doc["pd"]["hardware"] = "my-h20.yaml"
    out = json.loads(run_cli("plan", _write(tmp_path, plan_doc), "-f", "json").out)
    base = json.loads(run_cli("plan", "-f", "json").out)
    assert not [n for n in out["notes"] if "not used" in n], out["notes"]
    assert out["prfaas_pd"]["lambda_max_rps"] == base["prfaas_pd"]["lambda_max_rps"]
    assert out["prfaas_pd"]["usd_per_hour"] == pytest.approx(base["prfaas_pd"]["usd_per_hour"] - 8 * 8 * (was - 1.5))


# --------------------------------------------------------------------------------------------
# Measurements belong to the model they were taken on (measurements_model)


def test_a_scenario_edited_to_another_model_drops_the_measurements_as_compare_does(tmp_path, run_cli):
    """The shipped case study says its points and decode rate are of prfaas-1t-hybrid: a copy
    whose `model:` is qwen3-235b plans on the roofline, says so, and gives compare --model's answer;
    one that keeps measurements_model and plans prfaas-1t-hybrid again (compare --model) uses them."""
    doc = yaml.safe_load((REPO / "prfaas_plan" / "scenarios" / "paper-case-study.yaml").read_text())
    assert doc["measurements_model"] == doc["model"] == "prfaas-1t-hybrid"
    doc["model"] = "qwen3-235b"
    path = _write(tmp_path, doc)
    out = json.loads(run_cli("plan", path, "-f", "json").out)
    assert "pd: calibration points measured on prfaas-1t-hybrid dropped (the plan is of qwen3-235b)" in out["notes"]
    assert any(n.startswith("the scenario's decode tokens/s measured on prfaas-1t-hybrid dropped") for n in out["notes"])
    what_if = json.loads(run_cli("compare", "--model", "qwen3-235b", "--basis", "as-given", "-f", "json").out)["options"][0]
    assert out["prfaas_pd"]["lambda_max_rps"] == pytest.approx(what_if["lambda_max_rps"], rel=1e-6)
    assert out["prfaas_pd"]["lambda_max_rps"] != pytest.approx(CASE_STUDY_LAMBDA_RPS, rel=1e-2)
    back = json.loads(run_cli("compare", path, "--model", "prfaas-1t-hybrid", "--basis", "as-given", "-f", "json").out)
    assert back["options"][0]["lambda_max_rps"] == pytest.approx(CASE_STUDY_LAMBDA_RPS, abs=5e-4)


def test_a_sites_file_of_another_model_drops_its_sites_calibration_points(tmp_path):
    """A multi-site file whose measurements are of another model plans every site on the roofline:
    a site's calibration points are dropped as the decode rate is (both noted)."""
    doc = yaml.safe_load((REPO / "prfaas_plan" / "scenarios" / "two-edges-day.yaml").read_text())
    case = case_study_doc()
    doc["pd_sites"][0].update({k: case["pd"][k] for k in MEASURED["pd"] if k in case["pd"]})
    doc["decode"].update({k: case["decode"][k] for k in MEASURED["decode"] if k in case["decode"]})
    mine = api.study(_write(tmp_path, doc, "sites.yaml"))
    doc["measurements_model"] = "qwen3-235b"
    other = api.study(_write(tmp_path, doc, "sites-other.yaml"))
    assert mine.pd_sites[0].pool.calibration is not None and other.pd_sites[0].pool.calibration is None
    assert "pd_sites.us-east: calibration points measured on qwen3-235b dropped (the plan is of prfaas-1t-hybrid)" in other.notes
    assert any(n.startswith("the scenario's decode tokens/s measured on qwen3-235b dropped") for n in other.notes)


@pytest.mark.parametrize("path", sorted((REPO / "prfaas_plan" / "scenarios").glob("*.yaml")), ids=lambda p: p.stem)
def test_every_shipped_measurement_names_the_model_hardware_and_chips_it_was_taken_on(path):
    """A user edits the shipped files: every measurement in them says what it was taken on, so that
    an edited model or hardware drops it (with a note) instead of fitting another chip to it."""
    doc = yaml.safe_load(path.read_text())
    pools = [doc[k] for k in ("prfaas", "pd", "pd_decode") if isinstance(doc.get(k), dict)]
    pools += doc.get("prfaas_sites", []) + doc.get("pd_sites", [])
    measured = [p for p in pools if p.get("calibration_points")]
    decode = doc.get("decode", {})
    for pool in measured:
        assert pool.get("calibration_hardware") and pool.get("calibration_gpus"), pool
    if decode.get("tokens_per_s_per_instance") is not None:
        assert decode.get("tokens_per_s_hardware") and decode.get("tokens_per_s_gpus"), decode
    if measured or decode.get("tokens_per_s_per_instance") is not None:
        assert doc.get("measurements_model") == doc["model"]


def test_a_calibration_far_from_the_profile_says_the_points_may_be_of_another_chip(tmp_path, run_cli):
    """H20 points fitted onto an H100 pool (a copy whose measurements name no hardware) put its
    compute at 0.16x the profile's: the plan says the points may be another chip's; the case
    study's own fit (1.08x) says nothing; a time in seconds is never such a factor."""
    from prfaas_plan.study.resolve.pools import far_fit_notes
    from prfaas_plan.timing.calibrate import FAR_FIT_FACTOR

    doc = case_study_doc()
    for key in ("calibration_hardware", "calibration_gpus"):
        doc["pd"].pop(key)
    doc["pd"]["hardware"] = "h100"
    notes = json.loads(run_cli("plan", _write(tmp_path, doc), "-f", "json").out)["notes"]
    (note,) = [n for n in notes if "the calibration points put its" in n]
    assert note.startswith("pd on h100: the calibration points put its compute at 0.16") and "calibration_hardware" in note
    assert not [n for n in json.loads(run_cli("plan", "-f", "json").out)["notes"] if "the calibration points put" in n]
    at_edge = {"compute": FAR_FIT_FACTOR, "matmul": 0.8 / FAR_FIT_FACTOR}
    assert far_fit_notes("pd", "h20", at_edge, {"compute": 1, "matmul": 0.8}) == []
    assert len(far_fit_notes("pd", "h20", {"compute": 2.01, "matmul": 0.39}, {"compute": 1, "matmul": 0.8})) == 2
    assert far_fit_notes("pd", "h20", {"prefill_overhead_s": 0.9}, {"prefill_overhead_s": 0.02}) == []


def test_a_measurements_model_that_names_no_model_is_refused(run_cli, tmp_path):
    """A typo in measurements_model would drop every measurement: validate and plan refuse it in
    one line naming the field, on one site and on several."""
    doc = case_study_doc()
    doc["measurements_model"] = "prfaas-1t-hybird"
    for command in ("validate", "plan"):
        res = run_cli(command, _write(tmp_path, doc))
        assert res.code == 2 and "measurements_model: unknown model 'prfaas-1t-hybird'" in res.err, res.err
    sites = yaml.safe_load((REPO / "prfaas_plan" / "scenarios" / "two-edges-day.yaml").read_text())
    sites["measurements_model"] = "prfaas-1t-hybird"
    res = run_cli("sites", _write(tmp_path, sites, "sites.yaml"))
    assert res.code == 2 and "measurements_model: unknown model" in res.err, res.err


def test_robust_cases_of_another_model_keep_the_measured_rate_dropped(tmp_path):
    """robust-three-mixes edited to deepseek-v3: the decode rate measured on prfaas-1t-hybrid is
    dropped for the file's mix and for each case with its own workload alike (the roofline's)."""
    from prfaas_plan.choices import DecodeSource
    from prfaas_plan.planner.robust import robust_inputs
    from prfaas_plan.profiles.registry import resolve_scenario_file

    doc = yaml.safe_load((REPO / "prfaas_plan" / "scenarios" / "robust-three-mixes.yaml").read_text())
    doc["model"] = "deepseek-v3"
    spec, path = resolve_scenario_file(_write(tmp_path, doc))
    _, cases = robust_inputs(spec, path)
    assert [c.inputs.decode.source for c in cases] == [DecodeSource.roofline] * 3
    assert all(c.inputs.decode.tokens_per_s_per_instance != 800 for c in cases)


def test_calibrate_says_when_its_fit_is_far_from_the_profile(run_cli, tmp_path):
    """Points about 100x slower than llama-3.3-70b's roofline on 4 x H100 fit, to 1.2%, at a
    matmul of 0.4% of the profile's: calibrate says the points may be another chip's or in another
    unit (its scenario counterpart is far_fit_notes); the shipped case study's points say nothing."""
    points = tmp_path / "slow.csv"
    points.write_text("length,prefill_s\n2K,25\n4K,50\n8K,100\n16K,200\n")
    args = ("calibrate", "--model", "llama-3.3-70b", "--hardware", "h100", "--gpus", "4", "--points", points)
    out = run_cli(*args, "-f", "json")
    assert out.code == 0, out.err
    notes = json.loads(out.out)["notes"]
    far = [n for n in notes if n.startswith("the fit puts ")]
    assert far and far[0].startswith("the fit puts matmul at 0.00") and "beyond 2x either way" in far[0]
    fine = tmp_path / "fine.csv"  # the roofline's own times, scaled by 1.5: within 2x
    roof = json.loads(
        run_cli("kv", "llama-3.3-70b", "-H", "h100", "-g", "4", "-l", "2K,8K,16K", "--source", "roofline", "-f", "json").out
    )
    fine.write_text("length,prefill_s\n" + "".join(f"{r['length_tokens']},{1.5 * r['prefill_s']}\n" for r in roof["rows"]))
    notes = json.loads(run_cli(*args[:-1], fine, "-f", "json").out)["notes"]
    assert not [n for n in notes if n.startswith("the fit puts ")], notes
