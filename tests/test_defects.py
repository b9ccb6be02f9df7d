"""Smaller defects a user hit, each pinned: plots in K = 1,024 tokens, distinct names for imported
models, a user's profile that reuses a shipped name, --version, tables that are not cut when
piped, rounded sweep tables, the simulator's progress label, and a what-if on the link."""

from __future__ import annotations

import json
import re
import shutil

import numpy as np
import pytest
import yaml
from conftest import DATA, REPO

from prfaas_plan import api
from prfaas_plan.planner.chips import load_inputs
from prfaas_plan.planner.plan import plan
from prfaas_plan.units import TOKENS_PER_K


def test_figure5_threshold_axis_is_in_k_of_1024():
    """The threshold axis is t / 1024 and says so; the optimum is marked at t / 1024."""
    from prfaas_plan.plot import figure5

    data = api.figure5_data("paper-case-study")
    fig = figure5(data)
    right = fig.axes[1]
    assert "1,024" in right.get_xlabel()
    line = right.get_lines()[0]
    thresholds = data.table.thresholds_tokens
    shown = thresholds[thresholds <= max(60 * 1024, 2 * data.solution.threshold_tokens)]
    np.testing.assert_allclose(line.get_xdata(), shown / 1024)
    star = [ln for ln in right.get_lines() if ln.get_marker() == "*"][0]
    assert star.get_xdata()[0] == pytest.approx(data.solution.threshold_tokens / 1024)
    assert f"{data.solution.threshold_tokens / 1024:.1f}K" in star.get_label()


@pytest.mark.slow
def test_timeseries_threshold_axis_is_in_k_of_1024():
    from prfaas_plan.plot import timeseries_figure

    run = api.simulate("paper-case-study", load=0.5, requests=200, seed=1)
    fig = timeseries_figure(run.result)
    axis = fig.axes[2]
    assert "1,024" in axis.get_ylabel()
    np.testing.assert_allclose(axis.get_lines()[0].get_ydata(), run.result.timeseries["threshold_tokens"] / TOKENS_PER_K)


def test_imported_models_of_one_family_get_distinct_names(run_cli, tmp_path):
    """Two sizes of one family (no _name_or_path in the config) are named by their counted size."""
    names = []
    for config in ("Qwen--Qwen3-8B.config.json", "Qwen--Qwen3-32B.config.json"):
        out = tmp_path / f"{config}.yaml"
        res = run_cli("model", "import", DATA / "hf-configs" / config, "-o", out)
        assert res.code == 0, res.err
        names.append(yaml.safe_load(out.read_text())["name"])
    assert names[0] != names[1]
    assert names[0].startswith("qwen3-8") and names[1].startswith("qwen3-32")
    # a given name wins, and _name_or_path is used when the config has one
    data, profile = api.import_model(str(DATA / "hf-configs" / "Qwen--Qwen3-8B.config.json"), name="mine")
    assert profile.name == "mine"
    config = json.loads((DATA / "hf-configs" / "Qwen--Qwen3-8B.config.json").read_text())
    config["_name_or_path"] = "Qwen/Qwen3-8B"
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    assert api.import_model(str(path))[1].name == "qwen3-8b"


def test_user_profile_with_a_shipped_name_uses_its_own_figures(run_cli, tmp_path):
    """A file named h200 with other efficiencies gets the roofline with ITS efficiencies, not the
    shipped h200's measured points for prfaas-1t-hybrid, and a warning says so."""
    doc = yaml.safe_load((REPO / "hardware_profiles" / "h200.yaml").read_text())
    doc["efficiency"]["matmul"] = 0.1
    mine = tmp_path / "h200.yaml"
    mine.write_text(yaml.safe_dump(doc))
    shipped = json.loads(run_cli("kv", "prfaas-1t-hybrid", "-H", "h200", "-f", "json").out)
    res = run_cli("kv", "prfaas-1t-hybrid", "-H", mine, "-f", "json")
    assert res.code == 0 and "warning" in res.err and "differs from the shipped profile" in res.err
    own = json.loads(res.out)
    assert shipped["source"] == "measured" and own["source"] == "roofline"
    assert own["rows"][2]["prefill_s"] > 1.5 * shipped["rows"][2]["prefill_s"]  # a third of the matmul efficiency
    # an identical copy of the shipped profile under another path still counts as the shipped one
    same = tmp_path / "copy.yaml"
    shutil.copy(REPO / "hardware_profiles" / "h200.yaml", same)
    assert json.loads(run_cli("kv", "prfaas-1t-hybrid", "-H", same, "-f", "json").out)["source"] == "measured"


def test_version(run_cli):
    from prfaas_plan import __version__

    res = run_cli("--version")
    assert res.code == 0 and res.out.strip() == f"prfaas-plan {__version__}"


def test_piped_tables_are_not_cut(run_cli):
    """Piped output (not a terminal) is rendered at full width: no '...' in a name, every column."""
    out = run_cli("hardware", "list").out
    for name in ("groq-lpu", "rubin-cpx", "mi355x"):
        assert re.search(rf"^\s+{re.escape(name)}\s", out, re.M), name
    assert "…" not in out and "$/GPU-h (example)" in out
    assert "…" not in run_cli("plan").out


def test_sweep_table_rounds_its_numbers(run_cli):
    """The sweep's table shows rounded figures; its CSV keeps the values."""
    table = run_cli("sweep", "--over", "bandwidth", "--points", "3", "-f", "table").out
    assert not re.search(r"\.\d{6,}", table), table  # at most 4 significant digits
    assert re.search(r"19,\d{3}", table)  # thresholds as token counts with separators
    csv_out = run_cli("sweep", "--over", "bandwidth", "--points", "3", "-f", "csv").out
    assert csv_out.splitlines()[0].endswith(",link_gbps,usable_gbps,threshold_tokens,p,lambda_max_rps,egress_gbps")


def test_simulate_progress_says_what_it_does(run_cli, monkeypatch):
    labels = []

    class Recorder:
        def __init__(self, label, minimum=1000):
            labels.append(label)

        def __enter__(self):
            return lambda done, total: None

        def __exit__(self, *exc):
            return False

    import prfaas_plan.cli as cli

    monkeypatch.setattr(cli, "_progress", Recorder)
    assert run_cli("simulate", "-n", "50", "--load", "0.5", "-f", "json").code == 0
    assert labels == ["simulating requests"]


def test_link_what_if_reports_against_the_new_link():
    """with_link_gbps(15) replaces the whole link: utilisation and the report use 15 Gbps."""
    from prfaas_plan.views.plan import plan_view

    result = plan(load_inputs("paper-case-study").with_link_gbps(15), with_marginals=False)
    egress = result.point.stages.egress_gbps
    assert result.point.link_utilisation == pytest.approx(egress / 15, rel=1e-9)
    assert 0.5 < result.point.link_utilisation < 1.0
    details = {row["item"]: row["value"] for row in plan_view(result).sections[0].rows}
    assert f"{100 * egress / 15:.1f}% of the usable 15 Gbps" in details["egress"]
