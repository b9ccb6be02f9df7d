"""Closed-form latency (Erlang C + Allen-Cunneen, pipelined transfer), SLO planning, rate sweep."""

import json
import math
import re

import numpy as np
import pytest
import yaml
from conftest import case_study_doc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prfaas_plan.planner.chips import load_inputs
from prfaas_plan.planner.deployment import Deployment
from prfaas_plan.planner.latency import LatencyModel, _queue, erlang_c
from prfaas_plan.planner.slo import goodput, slo_optimise
from prfaas_plan.planner.throughput import bounds, threshold_table
from prfaas_plan.profiles.scenario import SloSpec
from prfaas_plan.study.model import decode_model

FIXTURE = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def case():
    inputs = load_inputs("paper-case-study")
    return inputs, decode_model(inputs), Deployment("prfaas_pd", 19349.0, 4, 3, 5)


def test_erlang_c_by_hand():
    assert erlang_c(1, 0.7) == pytest.approx(0.7)  # M/M/1: P(wait) = rho
    assert erlang_c(2, 1.0) == pytest.approx(1 / 3)  # (1/2 * 2) / (1 + 1 + 1)
    assert erlang_c(3, 0.0) == 0.0 and erlang_c(3, 3.0) == 1.0


def test_queue_matches_mm1_and_md1():
    lam, m = 0.5, 1.0  # rho 0.5
    point_mass = np.array([m])  # scv 0: M/D/1
    util, c, wait, _ = _queue(lam, 1, point_mass, np.array([1.0]), arrival_scv=1.0)
    assert util == 0.5 and c == pytest.approx(0.5)
    assert wait == pytest.approx(0.5 * m / (2 * (1 - 0.5)))  # Pollaczek-Khinchine for M/D/1
    # service 0 or 2 with equal odds: mean 1, variance 1 (scv 1), as M/M/1: rho / (mu - lambda)
    util, c, wait, _ = _queue(lam, 1, np.array([0.0, 2.0]), np.array([0.5, 0.5]), arrival_scv=1.0)
    assert wait == pytest.approx(0.5 / (1 - 0.5))


def test_low_load_ttft_is_the_service_time(case):
    inputs, dec, dep = case
    lat = LatencyModel(inputs, dep, dec).at(1e-6)
    assert lat.local.mean_wait_s == pytest.approx(0, abs=1e-6)
    assert lat.overall_mean_s == pytest.approx((1 - lat.p) * lat.local.mean_service_s + lat.p * lat.remote.mean_service_s)
    assert lat.overall_p99_s >= lat.overall_p90_s >= 0


def test_overload_is_unstable(case):
    inputs, dec, dep = case
    assert not LatencyModel(inputs, dep, dec).at(3.3).stable  # above Lambda_max = 3.236
    assert LatencyModel(inputs, dep, dec).at(3.0).stable


@FIXTURE
@given(st.floats(0.05, 3.0), st.floats(0.05, 3.0))
def test_latency_grows_with_rate(case, a, b):
    inputs, dec, dep = case
    model = LatencyModel(inputs, dep, dec)
    lo, hi = model.at(min(a, b)), model.at(max(a, b))
    assert lo.overall_mean_s <= hi.overall_mean_s + 1e-12
    assert lo.overall_p90_s <= hi.overall_p90_s + 1e-9
    assert lo.tpot_ms <= hi.tpot_ms + 1e-9


def test_burstier_arrivals_wait_longer(case):
    inputs, dec, dep = case
    model = LatencyModel(inputs, dep, dec)
    assert model.at(2.5, arrival_scv=4.0).overall_mean_s > model.at(2.5, arrival_scv=1.0).overall_mean_s


def test_thin_link_adds_transfer_time(case):
    inputs, dec, dep = case
    wide = LatencyModel(inputs, dep, dec).at(1.5)
    thin = LatencyModel(inputs.with_link_gbps(13), dep, dec).at(1.5)
    assert thin.remote.mean_s > wide.remote.mean_s and thin.local.mean_s == pytest.approx(wide.local.mean_s)
    assert thin.link_utilisation > wide.link_utilisation


def test_goodput_is_the_largest_rate_meeting_the_slo(case):
    inputs, dec, dep = case
    model = LatencyModel(inputs, dep, dec)
    slo = SloSpec(ttft_p90_s=5.0, tpot_ms=60)
    good = goodput(model, slo, 3.236)
    assert 0 < good < 3.236
    assert model.meets(good, slo) and not model.meets(good * 1.02, slo)
    lat = model.at(good)
    assert lat.overall_p90_s <= 5.0 + 1e-6 and lat.tpot_ms <= 60


def test_a_tpot_only_slo_caps_goodput_at_the_operating_load(case):
    """A TPOT target alone does not bound the queues (at Λ_max they never settle): the goodput is
    operating_load x Λ_max, where TTFT is finite, unless TPOT itself is missed below it; there the
    bisection finds the rate at which TPOT reaches the target."""
    inputs, dec, dep = case
    model = LatencyModel(inputs, dep, dec)
    load = inputs.latency.operating_load
    loose = goodput(model, SloSpec(tpot_ms=1e4), 3.236)
    assert loose == pytest.approx(load * 3.236, rel=1e-12)
    assert math.isfinite(model.at(loose).overall_p90_s)
    at_one = model.at(1.0).tpot_ms
    assert at_one < model.at(load * 3.236).tpot_ms  # TPOT rises with the rate (a larger batch)
    assert goodput(model, SloSpec(tpot_ms=at_one), 3.236) == pytest.approx(1.0, rel=1e-6)


def test_a_tpot_only_slo_plan_operates_below_lambda_max_and_an_unmet_one_names_tpot(tmp_path, run_cli):
    """plan with slo: {tpot_ms} operates at operating_load x Λ_max (finite TTFT, the note says why);
    a TPOT no idle deployment reaches is refused with the best TPOT, not blamed on prefill."""
    doc = case_study_doc()
    doc["slo"] = {"tpot_ms": 90}
    path = tmp_path / "tpot.yaml"
    path.write_text(yaml.safe_dump(doc))
    out = json.loads(run_cli("plan", path, "-f", "json").out)
    lam, lat = out["prfaas_pd"]["lambda_max_rps"], out["latency"]
    assert lat["goodput_rps"] == pytest.approx(0.8 * lam, rel=1e-6)  # lam as the JSON rounds it
    assert lat["operating"]["rate_rps"] == pytest.approx(0.8 * lam, rel=1e-4) and lat["operating"]["ttft_p90_s"] < 60
    assert any(n.startswith("slo: no TTFT target") for n in out["notes"])
    # min_cost: the cheapest plan whose capped goodput (0.8 x its Λ_max) reaches the target, and the note
    doc["objective"] = {"type": "min_cost", "target_rate_rps": 2.5}
    path.write_text(yaml.safe_dump(doc))
    cheap = json.loads(run_cli("plan", path, "-f", "json").out)
    assert 2.5 <= cheap["latency"]["goodput_rps"] <= 0.8 * cheap["prfaas_pd"]["lambda_max_rps"] * (1 + 1e-6)
    assert any(n.startswith("slo: no TTFT target") for n in cheap["notes"])
    doc["objective"]["target_rate_rps"] = 2.8  # above 0.8 x the most these fixed counts give (3.237)
    path.write_text(yaml.safe_dump(doc))
    assert "the most any serves is 2.59 req/s" in run_cli("plan", path).err
    doc["objective"] = {"type": "max_throughput"}
    doc["slo"] = {"tpot_ms": 25}
    path.write_text(yaml.safe_dump(doc))
    res = run_cli("plan", path)
    assert res.code == 2 and re.search(r"the best TPOT is [\d.]+ ms against tpot_ms 25$", res.err.strip()), res.err


def test_a_ttft_target_that_never_binds_says_the_goodput_is_the_capacity(tmp_path, run_cli):
    """ttft_p90_s 10 on the case study holds up to Λ_max (decode-bound): the goodput is Λ_max and
    the notes say that no target bounds the queue there; a target that binds (4 s) says nothing."""
    doc = case_study_doc()
    doc["slo"] = {"ttft_p90_s": 10}
    path = tmp_path / "loose.yaml"
    path.write_text(yaml.safe_dump(doc))
    out = json.loads(run_cli("plan", path, "-f", "json").out)
    assert out["latency"]["goodput_rps"] == pytest.approx(out["prfaas_pd"]["lambda_max_rps"], rel=1e-6)
    assert any(n.startswith("slo: the targets hold up to Λ_max") for n in out["notes"])
    doc["slo"] = {"ttft_p90_s": 4}
    path.write_text(yaml.safe_dump(doc))
    assert not any("hold up to Λ_max" in n for n in json.loads(run_cli("plan", path, "-f", "json").out)["notes"])


@pytest.mark.slow
def test_slo_plan_beats_the_throughput_plan_under_the_slo(case):
    inputs, dec, dep = case
    table = threshold_table(inputs, "exact")
    slo = SloSpec(ttft_p90_s=4.0)
    best = slo_optimise(inputs, table, dec, slo)
    idx = int(np.argmin(np.abs(table.thresholds_tokens - dep.threshold_tokens)))
    lam = float(bounds(table, idx, 4, 3, 5, inputs).lambda_max)
    plain = goodput(LatencyModel(inputs, dep, dec), slo, lam)
    assert best.goodput_rps >= plain * (1 - 1e-6)
    assert LatencyModel(inputs, best.deployment, dec).at(best.goodput_rps).overall_p90_s <= 4.0 + 1e-6


@pytest.mark.slow
def test_plan_with_slo_reports_goodput(tmp_path, run_cli):
    import json
    from pathlib import Path

    import yaml

    doc = yaml.safe_load((Path(__file__).resolve().parents[1] / "prfaas_plan/scenarios/paper-case-study.yaml").read_text())
    doc["slo"] = {"ttft_p90_s": 4.0, "tpot_ms": 60}
    path = tmp_path / "slo.yaml"
    path.write_text(yaml.safe_dump(doc))
    res = run_cli("plan", path, "-f", "json")
    assert res.code == 0, res.err
    lat = json.loads(res.out)["latency"]
    assert lat["goodput_rps"] > 0 and lat["operating"]["ttft_p90_s"] <= 4.0 + 1e-3
    assert lat["operating"]["tpot_ms"] <= 60
    doc["slo"] = {"ttft_p90_s": 0.5}
    path.write_text(yaml.safe_dump(doc))
    res = run_cli("plan", path)
    assert res.code == 2 and "slo" in res.err and "meets it" in res.err


def test_case_study_latency_comparison(run_cli):
    """At one common rate the report gives mean and P90 TTFT of the three deployments and
    compares the PrfaaS-PD reduction with the paper's (mean -50%, P90 -64%)."""
    import json

    doc = json.loads(run_cli("plan", "-f", "json").out)["latency"]
    at = doc["at_common_rate"]
    for name in ("prfaas_pd", "homogeneous", "naive_heterogeneous"):
        assert at[name]["ttft_mean_s"] > 0 and at[name]["ttft_p90_s"] >= at[name]["ttft_mean_s"]
        assert at[name]["rate_rps"] == doc["common_rate_rps"]
    red = doc["ttft_reduction_vs_homogeneous"]
    assert doc["paper_ttft_reduction_vs_homogeneous"] == {"mean": 0.5, "p90": 0.64}
    # the model reproduces the direction and rough size of the paper's reduction
    assert 0.3 < red["mean"] < 0.75 and 0.4 < red["p90"] < 0.85
    table = run_cli("plan").out
    assert "paper's case study: mean -50%, P90 -64%" in table


def test_sweep_rate(run_cli):
    import csv
    import io

    rows = list(csv.DictReader(io.StringIO(run_cli("sweep", "--over", "rate", "--points", "12").out)))
    names = {r["deployment"] for r in rows}
    assert {"prfaas_pd", "homogeneous", "naive_heterogeneous"} <= names
    pd_rows = [r for r in rows if r["deployment"] == "prfaas_pd" and r["ttft_mean_s"]]
    means = [float(r["ttft_mean_s"]) for r in pd_rows]
    assert len(pd_rows) >= 8 and means == sorted(means)


@FIXTURE
@given(
    st.lists(st.tuples(st.floats(0.01, 1.0), st.floats(0.0, 50.0)), min_size=1, max_size=40),
    st.floats(0.0, 1.0),
    st.sampled_from([0.0, 0.05, 1.0, 30.0, float("inf")]),
    st.floats(0.0, 120.0),
)
def test_the_one_pass_cdf_an_slo_check_reads_is_the_mixtures(parts, wait_probability, theta_s, x):
    """``cdf_at`` (what ``LatencyModel.meets`` reads at an SLO's limit, one vectorised pass) is the
    sorted, log-space ``_Mixture.cdf`` (what the quantiles bisect on) at every point."""
    from prfaas_plan.planner.latency import _Mixture, cdf_at

    weights = np.array([w for w, _ in parts])
    weights /= weights.sum()
    service_s = np.array([s for _, s in parts])
    expected = _Mixture(weights, service_s, wait_probability, theta_s).cdf(x)
    assert cdf_at(weights, service_s, wait_probability, theta_s, x) == pytest.approx(expected, rel=1e-9, abs=1e-12)


def test_the_queue_from_moments_is_the_queue_from_the_distribution():
    """The moments a LatencyModel keeps per path give the same queue as the service distribution."""
    from prfaas_plan.planner.latency import _moments, _queue_of

    service, weights = np.array([0.5, 1.0, 4.0]), np.array([0.2, 0.5, 0.3])
    assert _queue_of(1.1, 3, *_moments(service, weights), 1.4) == pytest.approx(_queue(1.1, 3, service, weights, 1.4))


@pytest.mark.slow
def test_the_slo_plan_is_within_1pct_of_every_count_and_threshold_by_brute_force(case):
    """The case study with 3 or 4 PrfaaS instances and a TTFT P90 of 4 s: the SLO optimiser (coarse
    thresholds, refined around the best, counts pruned by what they could reach) is within 1% of the
    best goodput over every count and every 128th threshold, each by bisection, and meets the SLO there."""
    from prfaas_plan.planner.optimizer import count_combinations

    inputs, dec, _ = case
    inputs = inputs.with_limits(prfaas_min=3, prfaas_max=4)
    table = threshold_table(inputs)
    slo = SloSpec(ttft_p90_s=4.0)
    best = slo_optimise(inputs, table, dec, slo)
    everything = np.arange(len(table))
    oracle = 0.0
    for n_f, n_p, n_d, _ in count_combinations(inputs, inputs.limits):
        lam = bounds(table, everything, n_f, n_p, n_d, inputs).lambda_max
        for k in everything[::128]:
            dep = Deployment("prfaas_pd", float(table.thresholds_tokens[k]), n_f, n_p, n_d)
            oracle = max(oracle, goodput(LatencyModel(inputs, dep, dec), slo, float(lam[k])))
    assert oracle > 0 and best.goodput_rps >= 0.99 * oracle, (best.goodput_rps, oracle)
    assert LatencyModel(inputs, best.deployment, dec).meets(best.goodput_rps, slo)


@pytest.mark.parametrize(
    ("slo", "objective", "target"),
    [
        (SloSpec(ttft_p90_s=4.0), "max_throughput", None),
        (SloSpec(ttft_p90_s=4.0, tpot_ms=60), "min_cost", 1.5),
        (SloSpec(ttft_p90_s=4.0), "min_cost", 2.0),  # the 3-instance counts fall short: a 4-instance plan
    ],
)
def test_the_pruned_slo_search_finds_what_bisecting_every_threshold_finds(case, slo, objective, target):
    """Bisecting only the thresholds that could beat the best so far gives the plan bisecting every
    one gives (tests/oracles/slo.py): the same counts, threshold and goodput, exactly."""
    from oracles.slo import unpruned_slo_optimise

    inputs, dec, _ = case
    inputs = inputs.with_limits(prfaas_min=3, prfaas_max=4)
    table = threshold_table(inputs)
    expected = unpruned_slo_optimise(inputs, table, dec, slo, objective == "min_cost", target)
    assert expected is not None
    got = slo_optimise(inputs, table, dec, slo, objective=objective, target_rps=target)
    assert (got.deployment, got.threshold_index, got.goodput_rps, got.usd_per_hour) == (
        expected.deployment,
        expected.threshold_index,
        expected.goodput_rps,
        expected.usd_per_hour,
    )


def test_the_common_rate_note_names_its_deployments_and_an_overloaded_equal_cost_row(tmp_path, run_cli):
    """The common rate is 0.8 x the lowest Λ_max of PrfaaS-PD, homogeneous and naive (not of the
    equal-cost baseline): where the equal-cost baseline cannot carry it (a cheaper PrfaaS pool buys
    fewer PD instances), the note says so."""
    doc = case_study_doc()
    doc["prfaas"]["cost"] = {"purchase_usd_per_gpu": 30000}
    doc["prfaas"]["site"] = {"usd_per_kwh": 0.12}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc))
    out = " ".join(run_cli("plan", path).out.split())
    assert "x the lowest Λ_max of PrfaaS-PD, homogeneous and naive" in out
    lat = json.loads(run_cli("plan", path, "-f", "json").out)["latency"]["at_common_rate"]["homogeneous_equal_cost"]
    overloaded = lat["ttft_mean_s"] is None
    assert overloaded == ("homog. equal-$ cannot carry that rate" in out)
