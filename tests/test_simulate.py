"""The discrete-event simulator (prfaas_plan.simulate) on the paper's case study.

Deployment: t = 19,349 tokens, 4 / 3 / 5 instances, whose exact-mode capacity is
Lambda_max = 3.236 req/s (PrfaaS and PD-P bounds 3.234 and 3.248 req/s). Every run is seeded.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from prfaas_plan.errors import PlanInputError
from prfaas_plan.planner.deployment import Deployment
from prfaas_plan.planner.throughput import bounds, threshold_table
from prfaas_plan.simulate import SimConfig, read_bandwidth_trace, simulate
from prfaas_plan.simulate.bandwidth import CapacitySchedule
from prfaas_plan.simulate.link import KvLink
from prfaas_plan.simulate.policies import threshold_ladder
from prfaas_plan.simulate.timeseries import COLUMNS
from prfaas_plan.study.model import decode_model

DATA = Path(__file__).parent / "data" / "simulate"
PLAN = Deployment("prfaas_pd", 19349.0, 4, 3, 5)  # the deployment simulated (the case study's plan)


@pytest.fixture(scope="module")
def case(case_inputs):
    return case_inputs, decode_model(case_inputs)


@pytest.fixture(scope="module")
def lam(case_inputs):
    """Lambda_max of PLAN by the throughput model (the bound the simulator must reach)."""
    table = threshold_table(case_inputs, "exact", [PLAN.threshold_tokens])
    return float(bounds(table, 0, PLAN.n_prfaas, PLAN.n_p, PLAN.n_d, case_inputs).lambda_max)


@pytest.fixture(scope="module")
def below(case, lam):
    inputs, dec = case
    return simulate(inputs, PLAN, dec, SimConfig(rate_rps=0.8 * lam, requests=6000, seed=1))


@pytest.fixture(scope="module")
def drop_runs(case, lam):
    """A 15 Gbps link (the plan needs ~9.7 Gbps at this load) halved for 400 s, static and adaptive."""
    inputs, dec = case
    tight = inputs.with_link_gbps(15)
    runs = {}
    for policy in ("static", "adaptive"):
        config = SimConfig(
            rate_rps=0.8 * lam, requests=3000, seed=3, policy=policy, drop_at_s=300.0, drop_for_s=400.0, drop_to_fraction=0.5
        )
        runs[policy] = simulate(tight, PLAN, dec, config)
    return runs


def _window(result, start_s, end_s):
    time_s = result.timeseries["time_s"]
    return (time_s > start_s) & (time_s <= end_s)


# --- capacity ---------------------------------------------------------------------------------


def test_below_capacity_throughput_matches_offered_and_queues_stay_bounded(below, lam):
    assert below.completed == 6000
    assert below.achieved_rps == pytest.approx(below.offered_rps, rel=0.05)
    assert below.offered_rps == pytest.approx(0.8 * lam, rel=0.05)
    assert below.stable is True
    growth = below.queue_growth
    assert growth["last_max"] < 50 and abs(growth["slope_per_s"]) < 0.01
    # about half the requests are offloaded (p = 0.497 at this threshold)
    assert below.remote_requests / below.completed == pytest.approx(0.497, abs=0.03)


def test_above_capacity_queues_grow_and_throughput_saturates_at_lambda_max(case, lam):
    inputs, dec = case
    result = simulate(inputs, PLAN, dec, SimConfig(rate_rps=1.1 * lam, requests=6000, seed=1))
    assert result.stable is False
    assert result.queue_growth["last_mean"] > 5 * result.queue_growth["first_mean"]
    assert result.achieved_rps < 0.93 * result.offered_rps
    # what it does serve is the planner's Lambda_max (both prefill paths saturated)
    assert result.achieved_rps == pytest.approx(lam, rel=0.04)


def test_egress_matches_the_planned_offload(case, below):
    inputs, _ = case
    dist = inputs.input_dist
    long = dist.lengths_tokens > PLAN.threshold_tokens
    kv_long_bytes = (dist.probs[long] @ inputs.prfaas.curve.kv_bytes(dist.lengths_tokens[long])) / dist.probs[long].sum()
    assert below.egress["sent_bytes"] / below.remote_requests == pytest.approx(kv_long_bytes, rel=0.03)
    # the planner: 12.15 Gbps at Lambda_max, so ~9.7 Gbps at 0.8 x Lambda_max
    assert below.egress["mean_gbps"] == pytest.approx(0.8 * 12.148, rel=0.1)
    assert below.egress["max_link_backlog_bytes"] < 1.0  # a 100 Gbps link never falls behind


def test_egress_mean_is_time_weighted_over_the_measurement_window():
    """Row i holds over (time_s[i-1], time_s[i]] (the first from 0); the window [1.5, 6] s overlaps
    the rows by 0, 0.5, 2 and 2 s: (20 x 0.5 + 30 x 2 + 40 x 2) / 4.5 Gbps by hand."""
    from prfaas_plan.simulate.results import window_mean

    series = {"time_s": np.array([1.0, 2.0, 4.0, 8.0]), "egress_gbps": np.array([10.0, 20.0, 30.0, 40.0])}
    assert window_mean(series, "egress_gbps", 1.5, 6.0) == pytest.approx(150.0 / 4.5, rel=1e-12)
    assert window_mean(series, "egress_gbps", 0.0, 8.0) == pytest.approx((10 + 20 + 60 + 160) / 8.0, rel=1e-12)
    assert window_mean({"time_s": np.array([]), "egress_gbps": np.array([])}, "egress_gbps", 0.0, 1.0) is None


def test_a_saturated_links_mean_egress_is_its_usable_rate(case, lam):
    """A 5 Gbps link under a plan that needs ~9.7 Gbps: from the end of the warm-up to the last
    arrival the backlog never empties, so the link sends at its usable rate all through the
    window the rates are measured in; the drain after the last arrival (the backlog sent, then
    the last decodes with the link idle) is not in the mean."""
    inputs, dec = case
    thin = inputs.with_link_gbps(5)
    result = simulate(thin, PLAN, dec, SimConfig(rate_rps=0.8 * lam, requests=2000, seed=2))
    series = result.timeseries
    start_s, end_s = result.window_s
    inside = (series["time_s"] > start_s) & (series["time_s"] <= end_s)
    assert series["link_backlog_bytes"][inside].min() > 0  # saturated all through the window
    assert result.egress["mean_gbps"] == pytest.approx(thin.link.usable_gbps, rel=0.005)
    assert result.egress["mean_gbps"] <= thin.link.usable_gbps * (1 + 1e-9)


# --- reproducibility --------------------------------------------------------------------------


def test_same_seed_same_result_different_seed_different(case):
    inputs, dec = case
    config = SimConfig(rate_rps=2.5, requests=1500, seed=7, policy="adaptive")
    first, again = (simulate(inputs, PLAN, dec, config) for _ in range(2))
    assert first.to_json_dict() == again.to_json_dict()
    for name, values in first.per_request.items():
        np.testing.assert_array_equal(values, again.per_request[name])
    other = simulate(inputs, PLAN, dec, SimConfig(rate_rps=2.5, requests=1500, seed=8, policy="adaptive"))
    assert other.ttft["overall"]["mean_s"] != first.ttft["overall"]["mean_s"]
    assert not np.array_equal(other.per_request["input_tokens"], first.per_request["input_tokens"])


# --- routing extremes -------------------------------------------------------------------------


def test_all_local_sends_nothing_over_the_link(case):
    inputs, dec = case
    result = simulate(inputs, Deployment("homogeneous", math.inf, 0, 9, 3), dec, SimConfig(rate_rps=1.5, requests=2000, seed=2))
    assert result.remote_requests == 0
    assert result.ttft["remote"] == {"count": 0, "mean_s": None, "p50_s": None, "p90_s": None, "p99_s": None}
    assert result.tpot["remote"]["count"] == 0 and result.tpot["remote"]["mean_ms"] is None
    assert result.ttft["local"]["count"] == result.ttft["overall"]["count"] > 0
    assert result.egress["sent_bytes"] == 0.0
    assert np.all(result.timeseries["egress_gbps"] == 0.0)


def test_all_remote_keeps_nothing_local(case):
    inputs, dec = case
    result = simulate(inputs, Deployment("naive", 0.0, 4, 0, 8), dec, SimConfig(rate_rps=1.5, requests=2000, seed=2))
    assert result.remote_requests == result.completed == 2000
    assert result.ttft["local"]["count"] == 0 and result.ttft["local"]["p90_s"] is None
    assert np.all(result.timeseries["pdp_queue_requests"] == 0)


# --- the link ---------------------------------------------------------------------------------


def _transfers(capacity_bytes_per_s, jobs):
    """Run KvLink alone: jobs = [(start_s, size_bytes, prefill_s)]; returns completion times and bytes sent.
    The link is passive state: start a job at its time, otherwise update the link at its next event."""
    link = KvLink(CapacitySchedule(capacity_bytes_per_s))
    done_s = [None] * len(jobs)
    waiting = sorted(range(len(jobs)), key=lambda k: jobs[k][0])
    now_s = 0.0
    while waiting or link.active:
        next_start_s = jobs[waiting[0]][0] if waiting else math.inf
        now_s = min(next_start_s, link.next_s)
        if waiting and next_start_s <= link.next_s:
            k = waiting.pop(0)
            finished = link.start(now_s, jobs[k][1], jobs[k][2], k)
        else:
            finished = link.update(now_s)
        for k in finished:
            done_s[k] = now_s
    return done_s, link.totals(now_s)[0]  # sent


def test_link_pipelining_and_fair_sharing():
    # an ample link: the last byte goes when the prefill ends (layer-wise pipelining)
    assert _transfers(100.0, [(0.0, 10.0, 5.0)])[0] == [pytest.approx(5.0)]
    # a link slower than production: S / c
    assert _transfers(1.0, [(0.0, 10.0, 5.0)])[0] == [pytest.approx(10.0)]
    # two equal transfers split the link equally
    assert _transfers(4.0, [(0.0, 10.0, 1.0), (0.0, 10.0, 1.0)])[0] == [pytest.approx(5.0)] * 2
    # A (produced at 1 B/s for 10 s) shares 1.5 B/s with B (produced at once): 0.75 each until B's
    # 4 B are sent at 16/3 s; A, 4/3 B behind, then catches up at 1.5 B/s by t = 8 and is
    # capped by its production until its prefill ends at 10 s.
    done_s, sent = _transfers(1.5, [(0.0, 10.0, 10.0), (0.0, 4.0, 1e-3)])
    assert done_s == [pytest.approx(10.0), pytest.approx(16 / 3)]
    assert sent == pytest.approx(14.0)


def test_link_conserves_bytes_and_never_exceeds_capacity(drop_runs):
    for result in drop_runs.values():
        per_request = result.per_request
        assert result.egress["sent_bytes"] == pytest.approx(per_request["kv_bytes"][per_request["remote"]].sum(), rel=1e-9)
        series = result.timeseries
        assert np.all(series["egress_gbps"] <= series["link_capacity_gbps"] * (1 + 1e-9))
        assert np.all(series["link_backlog_bytes"] >= 0)
        # a 10 ms RTT: no remote TTFT is below it
        ttft = per_request["ttft_s"][per_request["remote"]]
        assert ttft.min() > 0.01


def test_link_drop_static_backlog_grows_adaptive_raises_threshold(drop_runs):
    static, adaptive = drop_runs["static"], drop_runs["adaptive"]
    during, before = (300.0, 700.0), (0.0, 300.0)
    s_backlog = static.timeseries["link_backlog_bytes"]
    # static: offered egress (~9.7 Gbps) exceeds the halved link (7.5 Gbps): the backlog keeps growing
    assert s_backlog[_window(static, *during)].max() > 50e9
    assert s_backlog[_window(static, 600, 700)].mean() > s_backlog[_window(static, 300, 400)].mean()
    assert np.all(static.timeseries["threshold_tokens"] == PLAN.threshold_tokens)
    # adaptive: during the drop no threshold serves this rate (link and PD-P together fall short), so
    # the policy shares the excess between them: a smaller backlog and a better overall P90 than
    # static, without moving so much onto PD-P that its queue dominates (issue 16)
    a = adaptive.timeseries
    assert adaptive.egress["max_link_backlog_bytes"] < 0.8 * static.egress["max_link_backlog_bytes"]
    assert adaptive.ttft["overall"]["p90_s"] < static.ttft["overall"]["p90_s"]
    assert adaptive.ttft["local"]["p90_s"] < adaptive.ttft["remote"]["p90_s"]
    assert a["threshold_tokens"][_window(adaptive, *during)].max() > 1.5 * PLAN.threshold_tokens
    assert np.median(a["threshold_tokens"][_window(adaptive, *before)]) == PLAN.threshold_tokens
    # ... and it never goes below the plan, and comes back to it once the link is restored
    assert a["threshold_tokens"].min() == PLAN.threshold_tokens
    assert a["threshold_tokens"][-1] == PLAN.threshold_tokens
    assert adaptive.threshold_changes[0] == (0.0, PLAN.threshold_tokens)


def test_threshold_ladder_steps_offload_down_by_five_points(case):
    inputs, _ = case
    dist = inputs.input_dist
    ladder = threshold_ladder(PLAN.threshold_tokens, dist, 0.05)
    assert ladder[0] == PLAN.threshold_tokens and np.all(np.diff(ladder) > 0)
    shares = [float(dist.probs[dist.lengths_tokens > t].sum()) for t in ladder]
    assert np.allclose(np.diff(shares), -0.05, atol=0.01)
    assert shares[-1] == 0.0
    assert threshold_ladder(math.inf, dist, 0.05) == [math.inf]


def test_bandwidth_trace_sets_the_capacity(case):
    inputs, dec = case
    trace = read_bandwidth_trace(str(DATA / "bandwidth_trace.csv"))
    result = simulate(inputs, PLAN, dec, SimConfig(rate_rps=2.5, requests=1500, seed=4, bandwidth_trace=trace))
    series = result.timeseries
    capacity = series["link_capacity_gbps"]
    assert np.allclose(capacity[_window(result, 201, 400)], 10.0)
    assert np.allclose(capacity[_window(result, 0, 200)], 100.0)
    assert np.allclose(capacity[_window(result, 401, 600)], 100.0)
    assert series["egress_gbps"][_window(result, 201, 400)].max() <= 10.0 * (1 + 1e-9)


# --- arrivals ---------------------------------------------------------------------------------


def test_bursty_arrivals_raise_mean_ttft(case, below, lam):
    inputs, dec = case
    bursty = simulate(inputs, PLAN, dec, SimConfig(rate_rps=0.8 * lam, requests=6000, seed=1, arrivals="gamma", cv=3.0))
    assert bursty.offered_rps == pytest.approx(0.8 * lam, rel=0.1)
    assert bursty.ttft["overall"]["mean_s"] > 1.5 * below.ttft["overall"]["mean_s"]
    # common random numbers: the same requests, only their timing differs
    np.testing.assert_array_equal(bursty.per_request["input_tokens"], below.per_request["input_tokens"])


@pytest.mark.parametrize("arrivals, cv_range", [("poisson", (0.95, 1.05)), ("gamma", (2.8, 3.2)), ("onoff", (1.5, 20.0))])
def test_arrival_processes_keep_the_mean_rate(arrivals, cv_range):
    from prfaas_plan.simulate.arrivals import arrival_times_s

    config = SimConfig(rate_rps=2.0, requests=200_000, arrivals=arrivals, cv=3.0, on_s=20.0, off_s=40.0, burst_factor=2.5)
    times_s = arrival_times_s(config, np.random.default_rng(11))
    gaps_s = np.diff(times_s)
    assert times_s.size == 200_000 and np.all(gaps_s >= 0)
    assert times_s.size / times_s[-1] == pytest.approx(2.0, rel=0.03)
    assert cv_range[0] < gaps_s.std() / gaps_s.mean() < cv_range[1]


# --- output and progress ----------------------------------------------------------------------


def test_json_and_rows(below):
    payload = below.to_json_dict()
    text = json.dumps(payload, allow_nan=False)
    assert json.loads(text)["completed"] == 6000
    assert set(payload["ttft"]) == {"local", "remote", "overall"}
    assert set(payload["timeseries"]) == set(COLUMNS)
    assert "timeseries" not in below.to_json_dict(timeseries=False)
    rows = below.timeseries_rows()
    assert len(rows) == below.timeseries["time_s"].size and set(rows[0]) == set(COLUMNS)
    assert rows[0]["time_s"] == pytest.approx(1.0)
    assert rows[-1]["time_s"] >= below.duration_s


def test_all_local_json_has_no_infinity(case):
    inputs, dec = case
    result = simulate(inputs, Deployment("homogeneous", math.inf, 0, 9, 3), dec, SimConfig(rate_rps=1.0, requests=200))
    payload = result.to_json_dict()
    json.dumps(payload, allow_nan=False)
    assert payload["deployment"]["threshold_tokens"] is None


def test_progress_callback(case):
    inputs, dec = case
    calls = []
    simulate(inputs, PLAN, dec, SimConfig(rate_rps=2.0, requests=1050), progress=lambda d, t: calls.append((d, t)))
    done = [d for d, _ in calls]
    assert 90 <= len(calls) <= 101 and done == sorted(done) and calls[-1] == (1050, 1050)


def test_importing_the_package_loads_neither_numpy_nor_simpy():
    code = "import sys, prfaas_plan.simulate; print('numpy' in sys.modules, 'simpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


# --- bad input --------------------------------------------------------------------------------


def test_read_bandwidth_trace_good_file():
    assert read_bandwidth_trace(str(DATA / "bandwidth_trace.csv")) == ((0.0, 100.0), (200.0, 10.0), (400.0, 100.0))


@pytest.mark.parametrize(
    "text, line, words",
    [
        ("time_s,gbps\n0,100\n10,abc\n", "line 3", "not a number"),
        ("time_s,gbps\n0,100\n10,-5\n", "line 3", "gbps must be in [0"),
        ("time_s,gbps\n0,100\n10,50\n10,20\n", "line 4", "must increase"),
        ("time_s,gbps\n", None, "no rows"),
        ("", None, "no rows"),
        ("t,bw\n0,1\n", "line 1", "header"),
        ("time_s,gbps\n0,1,2\n", "line 2", "2 values"),
        ("time_s,gbps\n0,nan\n", "line 2", "gbps must be a number"),
    ],
)
def test_read_bandwidth_trace_bad_files(tmp_path, text, line, words):
    path = tmp_path / "trace.csv"
    path.write_text(text)
    with pytest.raises(PlanInputError) as info:
        read_bandwidth_trace(str(path))
    assert info.value.source == str(path) and info.value.field == line
    assert words in info.value.reason and "\n" not in str(info.value)


def test_read_bandwidth_trace_missing_file(tmp_path):
    with pytest.raises(PlanInputError) as info:
        read_bandwidth_trace(str(tmp_path / "absent.csv"))
    assert info.value.source == str(tmp_path / "absent.csv")


@pytest.mark.parametrize(
    "overrides, field",
    [
        ({"rate_rps": 0.0}, "rate_rps"),
        ({"rate_rps": -1.0}, "rate_rps"),
        ({"rate_rps": math.nan}, "rate_rps"),
        ({"requests": 0}, "requests"),
        ({"requests": 2.5}, "requests"),
        ({"cv": 0.0}, "cv"),
        ({"arrivals": "uniform"}, "arrivals"),
        ({"policy": "greedy"}, "policy"),
        ({"arrivals": "onoff", "burst_factor": 3.0}, "burst_factor"),
        ({"bandwidth_trace": ()}, "bandwidth_trace"),
        ({"bandwidth_trace": ((0.0, 10.0), (0.0, 5.0))}, "bandwidth_trace[1]"),
        ({"bandwidth_trace": ((0.0, -1.0),)}, "bandwidth_trace[0]"),
        ({"drop_to_fraction": 1.5}, "drop_to_fraction"),
        ({"drop_at_s": -1.0}, "drop_at_s"),
        ({"sample_interval_s": 0.0}, "sample_interval_s"),
        ({"warmup_fraction": 1.0}, "warmup_fraction"),
        ({"adaptive_util_low": 0.95}, "adaptive_util_low"),
        ({"seed": -1}, "seed"),
    ],
)
def test_bad_config_values(overrides, field):
    with pytest.raises(PlanInputError) as info:
        SimConfig(**{"rate_rps": 1.0, "requests": 10, **overrides})
    assert info.value.field == field and "\n" not in str(info.value)


@pytest.mark.parametrize(
    "deployment, config, field",
    [
        (Deployment("no-prfaas", 19349.0, 0, 3, 5), {}, "n_prfaas"),
        (Deployment("no-pdp", 19349.0, 4, 0, 5), {}, "n_p"),
        (Deployment("naive", 0.0, 4, 0, 8), {"policy": "adaptive"}, "n_p"),
        (Deployment("no-decode", 19349.0, 4, 3, 0), {}, "n_d"),
        (PLAN, {"bandwidth_trace": ((0.0, 100.0), (50.0, 0.0))}, "bandwidth_trace"),
    ],
)
def test_deployments_that_strand_requests_are_rejected(case, deployment, config, field):
    inputs, dec = case
    with pytest.raises(PlanInputError) as info:
        simulate(inputs, deployment, dec, SimConfig(rate_rps=1.0, requests=10, **config))
    assert info.value.field == field
