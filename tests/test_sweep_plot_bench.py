"""Sweeps, the figure-5 plot, and the benchmark script."""

import csv
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def rows(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


def test_sweep_bandwidth_is_a_router_table(run_cli):
    res = run_cli("sweep", "--over", "bandwidth", "--from", "1", "--to", "40", "--points", "40")
    assert res.code == 0, res.err
    table = rows(res.out)
    assert len(table) == 40
    lam = [float(r["lambda_max_rps"]) for r in table]
    t = [float(r["threshold_tokens"]) for r in table]
    assert lam == sorted(lam)  # more bandwidth never hurts
    assert t == sorted(t, reverse=True)  # and lets the router lower its threshold
    for r in table:
        assert float(r["egress_gbps"]) <= float(r["usable_gbps"]) * (1 + 1e-6)
    assert t[-1] == pytest.approx(19_349, rel=0.05)  # past ~13 Gbps the compute-balanced t


def test_a_bandwidth_sweep_below_1_gbps_starts_below_its_end(run_cli):
    """--to below the default first bandwidth (1 Gbps): the sweep starts at a hundredth of --to,
    so its points differ (it once started at --to itself and printed one bandwidth three times)."""
    res = run_cli("sweep", "--over", "bandwidth", "--to", "0.5", "--points", "3")
    assert res.code == 0, res.err
    assert [float(r["usable_gbps"]) for r in rows(res.out)] == pytest.approx([0.005, 0.2525, 0.5])


@pytest.mark.parametrize("args", [("--to", "0"), ("--from", "5", "--to", "5")])
def test_a_bandwidth_sweep_of_one_bandwidth_is_one_row(run_cli, args):
    """--to 0 (the default start, a hundredth of it, is 0 too) or --from = --to: one bandwidth,
    one row, not 200 copies of it."""
    res = run_cli("sweep", "--over", "bandwidth", *args)
    assert res.code == 0, res.err
    assert [float(r["usable_gbps"]) for r in rows(res.out)] == [float(args[-1])]


def test_sweep_threshold_and_np(run_cli, case_plan):
    thr = rows(run_cli("sweep", "--over", "threshold").out)
    best = max(float(r["lambda_max_rps"]) for r in thr)
    assert best == pytest.approx(case_plan.point.lambda_max, rel=1e-6)  # the plan's optimum is on the curve
    coarse = rows(run_cli("sweep", "--over", "threshold", "--points", "50").out)
    assert len(coarse) == 50 and max(float(r["lambda_max_rps"]) for r in coarse) <= best
    npr = rows(run_cli("sweep", "--over", "np").out)
    assert [int(r["n_p"]) + int(r["n_d"]) for r in npr] == [8] * 9
    assert max(float(r["lambda_max_rps"]) for r in npr) == pytest.approx(best, rel=1e-3)


def test_sweep_instances(run_cli):
    table = rows(run_cli("sweep", "--over", "instances", "--to", "6").out)
    lam = [float(r["lambda_max_rps"]) for r in table]
    assert lam == sorted(lam) and int(table[0]["n_prfaas"]) == 0 and float(table[0]["p"]) == 0


def test_an_instances_sweep_without_to_stays_within_the_pool_range(run_cli, tmp_path):
    """Without --to the sweep goes to twice the PrfaaS range's top, at most the 10,000 instances a
    pool may have: a range up to 6,000 sweeps to 10,000 (it once refused its own default as
    `--to: must be in [0, 10,000]`, an option the user never gave)."""
    import yaml

    doc = yaml.safe_load((REPO / "prfaas_plan" / "scenarios" / "paper-case-study.yaml").read_text())
    doc["prfaas"]["instances"] = {"min": 0, "max": 6000}
    path = tmp_path / "big-factory.yaml"
    path.write_text(yaml.safe_dump(doc))
    res = run_cli("sweep", str(path), "--over", "instances", "--points", "3")
    assert res.code == 0, res.err
    assert [int(r["n_prfaas"]) for r in rows(res.out)] == [0, 5000, 10000]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("threshold", "--from", "100"), "--from: a sweep over threshold takes --points"),
        (("threshold", "--to", "200"), "--to: a sweep over threshold takes --points"),
        (("rate", "--from", "1"), "--from: a sweep over rate takes --points"),
        (("np", "--points", "3"), "--points: a sweep over np takes none of --from, --to, --points"),
        (("instances", "--from", "5", "--to", "4"), "--from/--to: need --from <= --to, got 5 and 4"),
    ],
)
def test_a_range_option_a_sweep_does_not_use_is_refused(run_cli, args, expected):
    """An option the sweep would ignore is an error naming it (it once gave the unchanged curve)."""
    res = run_cli("sweep", "--over", *args)
    assert res.code == 2 and res.err.strip() == f"prfaas-plan: error: {expected}", res.err


def test_an_instances_sweep_starts_at_from(run_cli):
    """--from 2 --to 4: the counts 2, 3 and 4, each at its optimum (the case study's 4: 3.237 req/s)."""
    table = rows(run_cli("sweep", "--over", "instances", "--from", "2", "--to", "4").out)
    assert [int(r["n_prfaas"]) for r in table] == [2, 3, 4]
    assert float(table[-1]["lambda_max_rps"]) == pytest.approx(3.237, abs=5e-4)


def test_bad_sweep_arguments(run_cli):
    res = run_cli("sweep", "--over", "bandwidth", "--from", "10", "--to", "1")
    assert res.code == 2 and "--from" in res.err
    res = run_cli("sweep", "--over", "bandwidth", "--points", "1")
    assert res.code == 2 and "--points" in res.err


@pytest.mark.parametrize("suffix,magic", [(".png", b"\x89PNG"), (".svg", b"<?xml")])
def test_plot_writes_figure(tmp_path, run_cli, suffix, magic):
    out = tmp_path / f"fig5{suffix}"
    res = run_cli("plot", "paper-case-study", "-o", out)
    assert res.code == 0, res.err
    assert out.read_bytes().startswith(magic) and out.stat().st_size > 10_000


def test_plot_rejects_unknown_format(tmp_path, run_cli):
    res = run_cli("plot", "-o", tmp_path / "fig.bmp")
    assert res.code == 2 and "unsupported plot format" in res.err and not (tmp_path / "fig.bmp").exists()


def test_matplotlib_not_imported_by_plan(tmp_path):
    heavy = "('matplotlib','simpy','scipy.optimize','scipy.interpolate','ray')"
    code = (
        f"import sys; from prfaas_plan.cli import main; sys.argv=['p','plan','-o','{tmp_path / 'plan.txt'}']\n"
        f"try:\n main()\nexcept SystemExit: pass\nprint(sorted(m for m in {heavy} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO).stdout
    assert out.strip().splitlines()[-1] == "[]"


def test_help_imports_nothing_heavy():
    heavy = "('numpy','scipy','pulp','pydantic','matplotlib','ray')"
    code = (
        "import sys; from prfaas_plan.cli import main; sys.argv=['p','--help']\n"
        f"try:\n main()\nexcept SystemExit: pass\nprint(sorted(m for m in {heavy} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO).stdout
    assert out.strip().splitlines()[-1] == "[]"


def test_docs_link_the_benchmark_results():
    assert "](../benchmarks/RESULTS.md)" in (REPO / "docs" / "development.md").read_text()


@pytest.mark.slow
def test_benchmark_script_runs(tmp_path):
    """The script runs end to end (small traces, one repeat) and writes a row per benchmark (11)."""
    env = dict(os.environ, BENCH_REPEATS="1", BENCH_SCALE="100", BENCH_RESULTS=str(tmp_path / "r.md"), PYTHONPATH=str(REPO))
    subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "run.py")], env=env, cwd=REPO, check=False, capture_output=True, timeout=300
    )
    text = (tmp_path / "r.md").read_text()
    assert len(re.findall(r"^\| .* \| (yes|NO) \|$", text, re.M)) == 11


def test_instances_sweep_keeps_the_budgets(run_cli, tmp_path, case_study_file):
    """Each row of the instances sweep is the plan for that PrfaaS count under the same budgets."""
    path = case_study_file(tmp_path, budgets={"gpus": {"h20": 48}}, pd__instances={"min": 1, "max": 8})
    plan_doc = json.loads(run_cli("plan", path, "-f", "json").out)["prfaas_pd"]
    rows_ = rows(run_cli("sweep", path, "--over", "instances", "--to", "6").out)
    row = next(r for r in rows_ if int(r["n_prfaas"]) == plan_doc["n_prfaas"])
    assert int(row["n_p"]) + int(row["n_d"]) <= 6  # 48 H20 chips = 6 PD instances
    assert float(row["lambda_max_rps"]) == pytest.approx(plan_doc["lambda_max_rps"], rel=1e-6)
