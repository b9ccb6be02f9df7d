"""simulate and validate-model commands: closed form vs simulation, outputs, bad input."""

import csv
import io
import json
import math
import re

import pytest
import yaml
from conftest import DATA

from prfaas_plan import api


@pytest.fixture(scope="module")
def validation():
    return api.validate_model("paper-case-study", requests=8000, loads=(0.5, 0.8, 1.1))


@pytest.mark.slow
def test_closed_form_mean_ttft_within_15pct_up_to_load_08(validation):
    for run in validation[:2]:
        sim = run.result.ttft["overall"]["mean_s"]
        assert run.closed_form.overall_mean_s == pytest.approx(sim, rel=0.15)
        # and the simulator sustains the offered rate
        assert run.result.achieved_rps == pytest.approx(run.result.offered_rps, rel=0.05)
        assert run.result.stable


@pytest.mark.slow
def test_capacity_matches_closed_form_lambda(validation):
    over = validation[2]
    assert not over.result.stable
    assert over.result.achieved_rps == pytest.approx(over.lambda_max, rel=0.05)


@pytest.mark.slow
def test_validate_model_report(run_cli):
    res = run_cli("validate-model", "-n", "3000", "-f", "json")
    assert res.code == 0, res.err
    rows = json.loads(res.out)["rows"]
    assert [r["load"] for r in rows] == pytest.approx([0.5, 0.8, 0.95, 1.1], abs=1e-3)
    assert rows[-1]["closed_ttft_mean_s"] is None and rows[-1]["sim_ttft_mean_s"] > rows[0]["sim_ttft_mean_s"]
    # burstier arrivals: the report shows how far the closed form is off
    bursty = json.loads(run_cli("validate-model", "-n", "3000", "--arrivals", "gamma", "--cv", "3", "-f", "json").out)
    assert bursty["rows"][1]["sim_ttft_mean_s"] > rows[1]["sim_ttft_mean_s"]
    assert "ttft_mean_diff_fraction" in bursty["rows"][1]


def test_simulate_outputs(tmp_path, run_cli):
    res = run_cli("simulate", "--rate", "2.0", "-n", "2000", "--seed", "3", "-f", "json")
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    assert doc["rate_rps"] == 2.0 and doc["requests"] == 2000 and doc["config"]["seed"] == 3
    assert doc["ttft"]["overall"]["count"] > 0 and "closed_form" in doc
    again = json.loads(run_cli("simulate", "--rate", "2.0", "-n", "2000", "--seed", "3", "-f", "json").out)
    assert again["ttft"] == doc["ttft"]  # seeded runs are reproducible
    series = list(csv.DictReader(io.StringIO(run_cli("simulate", "-n", "1500", "-f", "csv").out)))
    assert {"time_s", "prfaas_queue_requests", "egress_gbps", "link_capacity_gbps", "threshold_tokens"} <= set(series[0])
    figure = tmp_path / "ts.png"
    res = run_cli("simulate", "-n", "1500", "--plot", figure, "-o", tmp_path / "sim.txt")
    assert res.code == 0 and figure.read_bytes().startswith(b"\x89PNG")
    table = run_cli("simulate", "-n", "1500", "--deployment", "homogeneous").out
    assert "homogeneous" in table and "remote" in table


@pytest.mark.parametrize(
    "args,needles",
    [
        (["--rate", "0"], ["--rate", "must be in (0"]),
        (["--rate", "-2"], ["--rate"]),
        (["--load", "1.0"], ["--requests", "without bound"]),
        (["--load", "1.3"], ["--requests"]),
        (["--arrivals", "gamma", "--cv", "0"], ["--cv"]),
        (["--arrivals", "gamma", "--cv", "-1"], ["--cv"]),
        (["--rate", "1", "--load", "0.5"], ["not both"]),
        (["--deployment", "magic"], ["--deployment", "'magic' is not one of"]),
        (["--plot", "ts.bmp"], ["--plot", "unsupported"]),
    ],
)
def test_bad_simulation_input(tmp_path, run_cli, args, needles):
    out = tmp_path / "sim.json"
    out.write_text("keep\n")
    res = run_cli(
        "simulate",
        *args,
        "-n" if "--load" not in args else "--seed",
        "500" if "--load" not in args else "0",
        "-f",
        "json",
        "-o",
        out,
    )
    assert res.code == 2, (res.out, res.err)
    assert "Traceback" not in res.err and len(res.err.strip().splitlines()) == 1
    for needle in needles:
        assert needle in res.err
    assert out.read_text() == "keep\n"


@pytest.mark.parametrize(
    "content,needle",
    [
        ("time_s,gbps\n0,100\n10,abc\n", "line 3"),
        ("time_s,gbps\n0,100\n5,-1\n", "line 3"),
        ("time_s,gbps\n10,100\n5,50\n", "line 3"),
        ("", "no rows"),
    ],
)
def test_bad_bandwidth_trace(tmp_path, run_cli, content, needle):
    trace = tmp_path / "bw.csv"
    trace.write_text(content)
    out = tmp_path / "sim.json"
    res = run_cli("simulate", "-n", "500", "--bandwidth-trace", trace, "-f", "json", "-o", out)
    assert res.code == 2 and str(trace) in res.err and needle in res.err, res.err
    assert not out.exists()


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


def test_a_deployment_without_capacity_is_not_blamed_on_a_rate_never_given(run_cli, tmp_path):
    """A 0 Gbps link: the naive deployment (every long prompt remote) serves nothing, so the default
    load (0.8 of its Lambda_max) is no rate; the error names the deployment, not --rate."""
    from conftest import case_study_doc

    doc = case_study_doc()
    doc["link"]["bandwidth_gbps"] = 0
    path = tmp_path / "no-link.yaml"
    path.write_text(yaml.safe_dump(doc))
    res = run_cli("simulate", str(path), "-n", "500", "--deployment", "naive_heterogeneous")
    assert res.code == 2 and res.err.strip() == (
        "prfaas-plan: error: --deployment: naive_heterogeneous serves 0 req/s on this scenario "
        "(`plan` says why): no share of that capacity is a rate to simulate"
    ), res.err


def test_an_overloaded_links_closed_form_egress_is_the_link(run_cli, tmp_path):
    """At 1.5 x a 5 Gbps plan's capacity the KV offered is more than the link: the closed form's
    egress is the usable link (what it can carry, as the simulator measures), with the offered load
    beside it; below capacity it is the offered load alone."""
    from conftest import case_study_doc

    doc = case_study_doc()
    doc["link"]["bandwidth_gbps"] = 5
    path = tmp_path / "thin.yaml"
    path.write_text(yaml.safe_dump(doc))
    over = run_cli("simulate", str(path), "-n", "2000", "--load", "1.5").out
    found = re.search(r"egress mean ([\d.]+) Gbps \(closed form ([\d.]+), the usable link: ([\d.]+) offered\)", over)
    assert found, over
    sim, closed, offered = map(float, found.groups())
    assert closed == 5.0 and offered > closed and sim == pytest.approx(closed, rel=0.02)
    under = run_cli("simulate", str(path), "-n", "2000", "--load", "0.5").out
    assert re.search(r"egress mean [\d.]+ Gbps \(closed form [\d.]+\), max", under), under


def test_the_closed_form_follows_a_busy_links_spread_of_shares():
    """On a link-bound plan whose transfers last about as long as their prefills (S/B ~ T), the
    remote TTFT at 0.8 load is set by the share of the link each transfer finds: the simulator's
    (exact max-min fair sharing) mean and P90 are 4.89 / 8.42 s. The closed form's bins of the
    processor-sharing queue length give 4.37 / 7.16 s; one even share B (1 - rho) for every transfer
    gave 3.42 / 4.42 s, hiding most transfers behind their prefill (a P90 47% low)."""
    scenario = str(DATA / "busy_link.yaml")
    planned = api.plan(scenario, with_marginals=False)
    run = api.simulate(scenario, load=0.8, requests=40000, planned=planned)
    assert run.closed_form.link_utilisation == pytest.approx(0.8, rel=0.02)  # the link binds the plan
    sim, closed = run.result.ttft["remote"], run.closed_form.remote
    assert closed.mean_s == pytest.approx(sim["mean_s"], rel=0.15)
    assert closed.p90_s == pytest.approx(sim["p90_s"], rel=0.20)
    assert closed.p99_s == pytest.approx(sim["p99_s"], rel=0.20)


def test_validate_model_rows_carry_each_paths_closed_and_simulated_ttft(run_cli):
    """Per path, the row's closed and simulated TTFT are the run's (the closed form's path, the
    simulator's ttft[path]) and its difference is (closed - simulated) / simulated; a load at or
    above Λ_max leaves the closed figures out."""
    res = run_cli("validate-model", "-n", "3000", "-f", "json")
    rows = json.loads(res.out)["rows"]
    runs = api.validate_model("paper-case-study", requests=3000)
    for row, run in zip(rows, runs):
        for path in ("local", "remote"):
            closed, sim = getattr(run.closed_form, path), run.result.ttft[path]
            if not math.isfinite(closed.mean_s):
                assert row[f"{path}_closed_ttft_mean_s"] is None and row[f"{path}_ttft_mean_diff_fraction"] is None
                continue
            assert row[f"{path}_closed_ttft_mean_s"] == pytest.approx(closed.mean_s, abs=1e-4)
            assert row[f"{path}_sim_ttft_p90_s"] == pytest.approx(sim["p90_s"], abs=1e-4)
            diff = (closed.mean_s - sim["mean_s"]) / sim["mean_s"]
            assert row[f"{path}_ttft_mean_diff_fraction"] == pytest.approx(diff, abs=1e-4)
