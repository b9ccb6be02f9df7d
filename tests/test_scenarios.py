"""Scenario files: degenerate and bad scenarios through the CLI (exit 2, one line, nothing written)."""

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def scenario(case_study_file):
    return case_study_file


def assert_fails(res, *needles):
    assert res.code == 2, (res.out, res.err)
    assert "Traceback" not in res.err and res.out == ""
    line = res.err.strip()
    assert "\n" not in line
    for needle in needles:
        assert needle in line, (needle, line)


def test_no_link_degrades_to_local_only(tmp_path, run_cli, scenario):
    path = scenario(tmp_path, link__bandwidth_gbps=0)
    res = run_cli("plan", path, "-f", "json")
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    assert doc["prfaas_pd"]["p"] == 0 and doc["prfaas_pd"]["egress_gbps"] == 0
    assert any("local-only" in note for note in doc["notes"])
    # it then matches the homogeneous split of the local instances it has
    assert doc["prfaas_pd"]["n_p"] + doc["prfaas_pd"]["n_d"] == 8
    table = run_cli("plan", path)
    assert "local-only" in table.out


def test_thin_link_offloads_less(tmp_path, run_cli, scenario):
    wide = json.loads(run_cli("plan", scenario(tmp_path, link__bandwidth_gbps=100), "-f", "json").out)
    thin = json.loads(run_cli("plan", scenario(tmp_path, link__bandwidth_gbps=3), "-f", "json").out)
    assert thin["prfaas_pd"]["p"] < wide["prfaas_pd"]["p"]
    assert thin["prfaas_pd"]["egress_gbps"] <= 3 + 1e-6
    assert "link" in thin["prfaas_pd"]["tight"]


@pytest.mark.parametrize(
    "changes,needles",
    [
        ({"pd__instances": 0}, ["pd.instances", "zero decode capacity"]),
        ({"decode__tokens_per_s_per_instance": 0}, ["decode.tokens_per_s_per_instance", "must be in [0.001,"]),
        (
            {"workload__input": {"type": "lognormal", "mu": 9.9, "sigma": 0, "min_tokens": 128, "max_tokens": 131072}},
            ["workload.input.sigma", "must be in (0, 10]"],
        ),
        (
            {"workload__input": {"type": "lognormal", "mu": 9.9, "sigma": -1, "min_tokens": 128, "max_tokens": 131072}},
            ["workload.input.sigma"],
        ),
        (
            {"workload__input": {"type": "lognormal", "mu": 9.9, "sigma": 1, "min_tokens": 4096, "max_tokens": 4096}},
            ["workload.input", "min"],
        ),
        ({"link__usable_fraction": 0}, ["link.usable_fraction", "must be in (0, 1]"]),
        ({"link__usable_fraction": 1.5}, ["link.usable_fraction", "must be in (0, 1], got 1.5"]),
        ({"link__bandwidth_gbps": -1}, ["link.bandwidth_gbps"]),
        ({"budgets": {"gpus": {"h20": 32}}}, ["budgets.gpus.h20", "need 64 h20 chips, more than the budget of 32"]),
        ({"budgets": {"usd_per_hour": 10}}, ["budgets.usd_per_hour", "more than the budget of $10.00/hour"]),
        ({"objective": {"type": "min_cost", "target_rate_rps": 1000}}, ["objective.target_rate_rps", "1000"]),
        ({"objective": {"type": "min_cost"}}, ["objective", "target_rate_rps"]),
        ({"prfaas__instances": {"min": 5, "max": 2}}, ["prfaas.instances", "above max"]),
        ({"prfaas__hardware": "h999"}, ["unknown hardware 'h999'"]),
        ({"model": "nope"}, ["unknown model 'nope'"]),
        ({"link": None}, ["link", "required"]),
        ({"workload__input": {"type": "zipf"}}, ["workload.input", "zipf"]),
    ],
)
def test_bad_scenarios(tmp_path, run_cli, changes, needles, scenario):
    path = scenario(tmp_path, **changes)
    out = tmp_path / "plan.json"
    out.write_text("keep me\n")
    res = run_cli("plan", path, "-f", "json", "-o", out)
    assert_fails(res, str(path), *needles) if "unknown" not in needles[0] else assert_fails(res, *needles)
    assert out.read_text() == "keep me\n"


@pytest.mark.parametrize(
    "content,needles",
    [
        ("", ["empty"]),
        ("length\n", ["empty"]),
        ("1000\n2000\nabc\n", ["line 3", "abc"]),
        ("1000\n-5\n", ["line 2"]),
    ],
)
def test_bad_traces(tmp_path, run_cli, content, needles, scenario):
    trace = tmp_path / "trace.txt"
    trace.write_text(content)
    path = scenario(tmp_path, workload__input={"type": "trace", "path": "trace.txt"})
    res = run_cli("plan", path)
    assert_fails(res, "trace.txt", *needles)


def test_trace_workload_plans(tmp_path, run_cli, scenario):
    import numpy as np

    rng = np.random.default_rng(7)
    draws = np.exp(rng.normal(9.9, 1.0, 40_000))
    lengths = draws[(draws >= 128) & (draws <= 131072)][:20_000].astype(int)  # truncation, as the scenario
    (tmp_path / "trace.txt").write_text("\n".join(map(str, lengths)) + "\n")
    res = run_cli(
        "plan", scenario(tmp_path, workload__input={"type": "trace", "path": "trace.txt"}), "--mode", "paper", "-f", "json"
    )
    assert res.code == 0, res.err
    doc = json.loads(res.out)["prfaas_pd"]
    # a sampled trace of the same distribution lands near the analytic plan
    assert (doc["n_prfaas"], doc["n_p"], doc["n_d"]) == (4, 3, 5)
    assert doc["lambda_max_rps"] == pytest.approx(3.24, rel=0.05)


def test_validate_scenario_files(tmp_path, run_cli, scenario):
    good = scenario(tmp_path)
    res = run_cli("validate", good)
    assert res.code == 0 and "valid scenario" in res.out
    assert_fails(run_cli("validate", scenario(tmp_path, prfaas__hardware="h999")), "h999")
    assert_fails(run_cli("validate", scenario(tmp_path, link__usable_fraction=2)), "link.usable_fraction")
