"""Issue 16, item 8 (a part): a cdf length distribution, forgiving and suggesting names,
NO_COLOR, the day and robust examples shipped by name, and imported names that say the model."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import CASE_STUDY, DATA, REPO

from prfaas_plan.errors import PlanInputError, shorten
from prfaas_plan.workload import from_cdf, histogram, load_workload_spec

# ---------------------------------------------------------------------------------------
# 1. cdf length distributions

# F = P(L <= tokens), linear between points and from (0, 0): 25% in (0, 1K], 50% in (1K, 2K],
# 25% in (2K, 4K], each spread uniformly.
POINTS = [[1024, 0.25], ["2K", 0.75], [4096, 1.0]]


def test_cdf_mean_by_hand():
    # E[L] = sum of mass x interval midpoint = 0.25 x 512 + 0.5 x 1536 + 0.25 x 3072 = 1664
    for per_bin in (1, 4, 16):
        dist = load_workload_spec({"type": "cdf", "points": POINTS, "points_per_bin": per_bin}, None)
        assert dist.mean_tokens() == pytest.approx(1664.0, rel=1e-12)


def test_cdf_quantiles_by_hand():
    """Linear interpolation of the CDF, to within one sub-bin (interval width / points_per_bin)."""
    per_bin = 512
    dist = load_workload_spec({"type": "cdf", "points": POINTS, "points_per_bin": per_bin}, None)
    # q = 0.1 in (0, 1K]: 0.1 / 0.25 x 1024 = 409.6; q = 0.5 in (1K, 2K]: 1024 + 0.25 / 0.5 x 1024
    # = 1536; q = 0.9 in (2K, 4K]: 2048 + 0.15 / 0.25 x 2048 = 3276.8
    for q, exact, width in ((0.1, 409.6, 1024), (0.5, 1536.0, 1024), (0.9, 3276.8, 2048)):
        assert abs(float(dist.quantile(q)) - exact) <= width / per_bin
    # and with 4 points per bin, by hand: (1K, 2K] holds 1152, 1408, 1664, 1920 at 0.125 each, so
    # P(L <= 1408) = 0.5 and the 0.55 quantile is 1664
    coarse = load_workload_spec({"type": "cdf", "points": POINTS, "points_per_bin": 4}, None)
    assert float(coarse.quantile(0.55)) == 1664.0
    assert float(coarse.quantile(0.45)) == 1408.0


def test_cdf_is_the_histogram_of_the_same_buckets():
    dist = from_cdf([1024, 2048, 4096], [0.25, 0.75, 1.0], points_per_bin=8)
    same = histogram([0, 1024, 2048, 4096], [25, 50, 25], points_per_bin=8)
    np.testing.assert_allclose(dist.lengths_tokens, same.lengths_tokens)
    np.testing.assert_allclose(dist.probs, same.probs, rtol=1e-12)
    # a first point with F = 0 is the histogram starting at that edge
    dist = from_cdf([128, 1024, 131072], [0.0, 0.5, 1.0])
    same = histogram([128, 1024, 131072], [1, 1])
    np.testing.assert_allclose(dist.lengths_tokens, same.lengths_tokens)
    np.testing.assert_allclose(dist.probs, same.probs, rtol=1e-12)


def test_cdf_last_fraction_within_tolerance_is_normalised():
    dist = from_cdf([1024, 2048], [0.5, 1 - 5e-7])
    assert dist.probs.sum() == pytest.approx(1.0, abs=1e-12)
    assert dist.mean_tokens() == pytest.approx(0.5 / (1 - 5e-7) * 512 + (0.5 - 5e-7) / (1 - 5e-7) * 1536, rel=1e-12)
    with pytest.raises(PlanInputError, match="F = 1"):
        from_cdf([1024, 2048], [0.5, 1 - 2e-6])


@pytest.mark.parametrize("form", ["list", "mapping"])
def test_cdf_file_equals_inline(tmp_path, form):
    pairs = [[1024, 0.25], [2048, 0.75], [4096, 1.0]]
    (tmp_path / "lengths.json").write_text(json.dumps(pairs if form == "list" else {"cdf": pairs}))
    scenario = str(tmp_path / "s.yaml")  # the file is relative to the scenario's folder
    from_file = load_workload_spec({"type": "cdf", "path": "lengths.json"}, scenario)
    inline = load_workload_spec({"type": "cdf", "points": pairs}, None)
    np.testing.assert_array_equal(from_file.lengths_tokens, inline.lengths_tokens)
    np.testing.assert_array_equal(from_file.probs, inline.probs)


@pytest.mark.parametrize(
    ("points", "field", "reason"),
    [
        ([[1024, 0.5], [1024, 1.0]], "points[1]", "strictly increasing"),
        ([[1024, 0.5], [2048, 0.4], [4096, 1.0]], "points[1]", "never decreases"),
        ([[1024, 0.5], [2048, 0.9]], "points[1]", "F = 1"),
        ([[0, 0.5], [10, 1.0]], "points[0][0]", ">= 1"),
        ([[10, 1.5]], "points[0][1]", "[0, 1]"),
        ([[10, -0.1], [20, 1]], "points[0][1]", "[0, 1]"),
        ([[10, True]], "points[0][1]", "not true"),
        ([[10, 0.5, 3]], "points[0]", "a point is [tokens, F]"),
        ([], "points", "at least 1"),
        ([[i + 1, 1.0] for i in range(10_001)], "points", "at most 10000"),
    ],
)
def test_bad_cdf_points_are_one_line_errors(points, field, reason):
    with pytest.raises(PlanInputError) as info:
        load_workload_spec({"type": "cdf", "points": points}, "s.yaml", "workload.input")
    line = info.value.one_line()
    assert line.startswith(f"s.yaml: workload.input.{field}: ") and reason in line and "\n" not in line


@pytest.mark.parametrize(
    ("content", "field", "reason"),
    [
        ({"cdf": [[1024, 0.5], [512, 1.0]]}, "cdf[1]", "strictly increasing"),
        ([[1024, 0.5], [2048, "x"]], "[1][1]", "must be a number"),
        ({"cdf": [[1024, 0.5]], "note": "x"}, "note", "unknown field"),
        ({}, "cdf", "missing"),
        ({"points": [[1024, 1]]}, "points", "unknown field"),
        (3, None, "expected [[tokens, F], ...]"),
    ],
)
def test_bad_cdf_file_names_the_file_and_point(run_cli, tmp_path, content, field, reason):
    (tmp_path / "lengths.json").write_text(json.dumps(content))
    doc = yaml.safe_load(CASE_STUDY.read_text())
    doc["workload"]["input"] = {"type": "cdf", "path": "lengths.json"}
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump(doc))
    res = run_cli("plan", scenario)
    assert res.code == 2 and res.out == "" and len(res.err.splitlines()) == 1
    where = f"{tmp_path / 'lengths.json'}: " + (f"{field}: " if field else "")
    assert res.err.startswith(f"prfaas-plan: error: {where}") and reason in res.err


def test_cdf_json_limits_of_yamlio(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 70 + "]" * 70)
    with pytest.raises(PlanInputError, match="nested more than"):
        load_workload_spec({"type": "cdf", "path": str(deep)}, None)
    with pytest.raises(PlanInputError, match="give points .* or path .*; both given"):
        load_workload_spec({"type": "cdf", "path": str(deep), "points": [[1, 1]]}, None)


def test_plan_runs_on_a_cdf_workload(run_cli, tmp_path):
    """The case study with its input as a CDF (and a cdf component of a mixture) plans."""
    doc = yaml.safe_load(CASE_STUDY.read_text())
    doc["workload"]["input"] = {"type": "cdf", "points": [[1024, 0.2], [8192, 0.6], [32768, 0.9], [131072, 1.0]]}
    doc["workload"]["output"] = {
        "type": "mixture",
        "components": [
            {"weight": 1, "type": "cdf", "points": [[256, 0.5], [2048, 1]]},
            {"weight": 1, "type": "fixed", "tokens": 1024},
        ],
    }
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump(doc))
    res = run_cli("plan", scenario, "-f", "json")
    assert res.code == 0, res.err
    plan = json.loads(res.out)["prfaas_pd"]
    # p = P(L > t) = 1 - F(t) of the linear CDF, to within one sub-bin's mass (at most 0.4 / 16)
    t = plan["threshold_tokens"]
    tokens, fractions = [0, 1024, 8192, 32768, 131072], [0, 0.2, 0.6, 0.9, 1.0]
    assert plan["p"] == pytest.approx(1 - np.interp(t, tokens, fractions), abs=0.4 / 16)


# ---------------------------------------------------------------------------------------
# 2. names: case and '_' forgiven when unambiguous; "did you mean" otherwise


def test_names_case_and_underscore_insensitive():
    from prfaas_plan.profiles.registry import canonical_name, resolve_hardware, resolve_model

    assert resolve_hardware("H200").name == "h200" and resolve_model("kimi_k2").name == "kimi-k2"
    assert resolve_model("Kimi_K2") == resolve_model("kimi-k2")
    assert canonical_name("RUBIN_CPX", "hardware_profiles") == "rubin-cpx"
    assert canonical_name("rubin-cxp", "hardware_profiles") is None


def test_a_typo_suggests_the_name(run_cli):
    res = run_cli("kv", "kimi-k2", "--hardware", "rubin-cxp")
    assert res.code == 2 and "unknown hardware 'rubin-cxp'; did you mean 'rubin-cpx'" in res.err
    res = run_cli("kv", "kimi-k3", "--hardware", "h200")
    assert res.code == 2 and "did you mean 'kimi-k2'" in res.err
    res = run_cli("schedule", "day-rebalanse")
    assert res.code == 2 and "did you mean 'day-rebalance'" in res.err


def test_a_long_list_of_names_is_not_cut_mid_name(run_cli, tmp_path):
    """In a scenario at a long path the list is shortened, but every name shown is whole."""
    from prfaas_plan.profiles.registry import shipped_names

    doc = yaml.safe_load(CASE_STUDY.read_text())
    doc["model"] = "kimi-k3"
    folder = tmp_path / ("a-long-folder-name-" * 4)
    folder.mkdir()
    scenario = folder / "scenario.yaml"
    scenario.write_text(yaml.safe_dump(doc))
    res = run_cli("plan", scenario)
    assert res.code == 2 and "did you mean 'kimi-k2'" in res.err and "..." in res.err
    listed = res.err.split("(shipped: ", 1)[1].split(";", 1)[0]
    shown = [part.strip() for chunk in listed.split("...") for part in chunk.split(",") if part.strip()]
    assert shown and set(shown) <= set(shipped_names("model_profiles"))


def test_shorten_cuts_between_words():
    text = ", ".join(f"name-{i:02d}" for i in range(40))
    out = shorten(text, 100)
    assert len(out) <= 100 and "..." in out
    assert all(part.strip() in text.split(", ") for chunk in out.split("...") for part in chunk.split(",") if part.strip())
    assert shorten("x" * 50, 20) == "x" * 12 + "..." + "x" * 5  # no space: cut as before


def test_budget_names_are_forgiven_too(run_cli, tmp_path):
    doc = yaml.safe_load(CASE_STUDY.read_text())
    doc["prfaas"]["hardware"] = "H200"
    for chips, fits in ((32, True), (24, False)):  # 4 PrfaaS instances of 8 H200 need 32
        doc["budgets"] = {"gpus": {"H200": chips}}
        scenario = tmp_path / "s.yaml"
        scenario.write_text(yaml.safe_dump(doc))
        res = run_cli("plan", scenario, "-f", "json")
        if fits:
            assert res.code == 0, res.err
            assert json.loads(res.out)["prfaas_pd"]["gpus"]["h200"] == 32
        else:  # the budget is the h200's, and binds
            assert res.code == 2 and "budgets" in res.err and "no pool uses" not in res.err


# ---------------------------------------------------------------------------------------
# 3. NO_COLOR


def test_no_color_table_has_no_ansi_codes(monkeypatch):
    from prfaas_plan.report import Column, Report, render

    report = Report("a title", [Column("x", "x", lambda v: f"{v:g}")], [{"x": 1.5}], meta={"model": "m"}, notes=["a note"])
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert "\x1b[" in render(report, "table", width=80, color=True)  # a terminal gets styles
    monkeypatch.setenv("NO_COLOR", "1")
    text = render(report, "table", width=80, color=True)
    assert "\x1b" not in text and "a title" in text and "1.5" in text
    monkeypatch.setenv("NO_COLOR", "")  # set but empty: colour stays (no-color.org)
    assert "\x1b[" in render(report, "table", width=80, color=True)


def test_no_color_progress_is_plain(monkeypatch, capsys):
    from rich.console import Console

    from prfaas_plan.cli import _progress

    monkeypatch.setattr(Console, "is_terminal", property(lambda self: True))
    monkeypatch.setenv("NO_COLOR", "1")
    with _progress("simulating", minimum=1) as update:
        update(1, 10)
        update(10, 10)
    err = capsys.readouterr().err
    assert "simulating: 10 / 10" in err and "\x1b" not in err


@pytest.mark.slow  # two CLI processes, about 2 s each here
@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_no_color_in_a_terminal(tmp_path):
    """The CLI on a real (pseudo-)terminal: styled without NO_COLOR, not one ANSI code with it."""
    import pty
    import subprocess

    def run(no_color: str) -> bytes:
        master, slave = pty.openpty()
        env = {**os.environ, "NO_COLOR": no_color}
        proc = subprocess.Popen(
            [sys.executable, "-m", "prfaas_plan", "hardware", "list"], stdin=slave, stdout=slave, stderr=slave, env=env, cwd=REPO
        )
        os.close(slave)
        out = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        proc.wait(timeout=60)
        os.close(master)
        assert proc.returncode == 0, out
        return out

    assert b"\x1b[" in run("")
    plain = run("1")
    assert b"\x1b" not in plain and b"Hardware profiles" in plain


# ---------------------------------------------------------------------------------------
# 4. the schedule and robust examples, shipped by name

SHIPPED = {
    "day-rebalance": ("schedule", DATA / "day_profile.yaml"),
    "robust-three-mixes": ("robust", DATA / "robust_three_mixes.yaml"),
}


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_example_is_the_tested_one(name):
    """The docs run the shipped file; the tests pin the copy in tests/data: the same scenario."""
    from prfaas_plan.profiles.registry import scenario_path

    path = Path(scenario_path(name))
    assert path.parent == REPO / "prfaas_plan" / "scenarios"
    command, copy = SHIPPED[name]
    header = " ".join(path.read_text().split("\nname:", 1)[0].replace("#", " ").split())
    assert "assumptions" in header and f"Run: prfaas-plan {command} {name}" in header
    shipped, tested = yaml.safe_load(path.read_text()), yaml.safe_load(copy.read_text())
    for doc in (shipped, tested):
        doc.pop("name"), doc.pop("description", None)
    assert shipped == tested


def test_schedule_and_robust_run_by_name(run_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # as after a pip install: no tests/ folder at hand
    res = run_cli("schedule", "day-rebalance", "-f", "json")
    assert res.code == 0, res.err
    # docs/sites-and-days.md's tables: the day's split 3 / 5, the evening's 5 / 3; the robust cases 0/5, 0/5, 1/4
    assert [(r["window"], r["n_p"], r["n_d"]) for r in json.loads(res.out)["rows"]] == [("day", 3, 5), ("evening", 5, 3)]
    res = run_cli("robust", "robust-three-mixes", "-f", "json")
    assert res.code == 0, res.err
    assert [(r["case"], r["n_p"], r["n_d"]) for r in json.loads(res.out)["rows"]] == [
        ("mixed", 0, 5),
        ("short", 0, 5),
        ("long", 1, 4),
    ]


def test_docs_examples_use_names():
    readme = (REPO / "docs" / "sites-and-days.md").read_text()
    assert "tests/data/day_profile.yaml" not in readme and "tests/data/robust_three_mixes.yaml" not in readme
    assert "schedule day-rebalance" in readme and "robust robust-three-mixes" in readme


# ---------------------------------------------------------------------------------------
# 5. imported models get names that say the model

CONFIGS = DATA / "hf-configs"


def test_spoken_sizes():
    from prfaas_plan.profiles.hf_import import spoken_size

    assert [spoken_size(x) for x in (8.03e9, 8.19e9, 70.55e9, 405.85e9, 1.026e12, 1.54e9, 0.49e9, 1.6e12)] == [
        "8b",
        "8.2b",
        "70b",
        "405b",
        "1t",
        "1.5b",
        "0.5b",
        "1.6t",
    ]


def test_imported_names_say_the_model():
    from prfaas_plan.api import import_model

    names = {path.name: import_model(str(path))[1].name for path in sorted(CONFIGS.glob("*.json"))}
    assert len(set(names.values())) == len(names)  # distinct models, distinct names
    assert names["meta-llama--Llama-3.3-70B-Instruct.config.json"] == "llama-3.3-70b-instruct"
    assert names["meta-llama--Meta-Llama-3.1-70B.config.json"] == "meta-llama-3.1-70b"
    assert names["moonshotai--Kimi-K2-Instruct.config.json"] == "kimi-k2-instruct-1t"  # 1.03e12 counted
    assert names["Qwen--Qwen3-8B.config.json"] == "qwen3-8b"  # the size in the name is not repeated
    # _name_or_path, first word only (the reconstructed 405B's carries a note)
    assert names["meta-llama--Llama-3.1-405B-Instruct.RECONSTRUCTED.config.json"] == "llama-3.1-405b-instruct"
    assert all("e+" not in name and len(name) <= 64 for name in names.values())


def test_a_bare_config_json_is_named_by_model_type_and_size(tmp_path):
    from prfaas_plan.api import import_model

    folder = tmp_path / "downloads"  # a folder that does not name the model is not used
    folder.mkdir()
    shutil.copy(CONFIGS / "moonshotai--Kimi-K2-Instruct.config.json", folder / "config.json")
    assert import_model(str(folder / "config.json"))[1].name == "kimi-k2-1t"
    cache = tmp_path / "models--meta-llama--Llama-3.3-70B-Instruct" / "snapshots" / "0123abc"
    cache.mkdir(parents=True)
    shutil.copy(CONFIGS / "meta-llama--Llama-3.3-70B-Instruct.config.json", cache / "config.json")
    assert import_model(str(cache / "config.json"))[1].name == "llama-3.3-70b-instruct"


def test_docs_list_every_shipped_model_and_hardware():
    """docs/yaml-reference.md's "Shipped:" lines name every profile the package ships (and no other)."""
    import re

    from conftest import REPO

    from prfaas_plan.profiles.registry import shipped_names

    text = (REPO / "docs" / "yaml-reference.md").read_text()
    for kind in ("model_profiles", "hardware_profiles"):
        names = set(shipped_names(kind))
        listed = next(
            set(re.findall(r"`([a-z0-9.\-]+)`", block))
            for block in re.findall(r"Shipped: (.*?)\.\s", text, re.S)
            if set(re.findall(r"`([a-z0-9.\-]+)`", block)) & names
        )
        assert listed - {"prfaas-plan"} == names, (kind, sorted(names ^ listed))
