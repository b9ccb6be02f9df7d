"""simulate --replay with cluster_caches.from_trace: each replayed request routes on its own
cached prefixes from the caches' replay (issue 19, item 2)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml
from conftest import REPO

from prfaas_plan import api
from prfaas_plan.choices import CacheRegime

DATA = REPO / "tests" / "data"
TRACE = DATA / "traces" / "mooncake-conversation-5min.jsonl"
SCENARIO = DATA / "trace_caches.yaml"
ROWS = [json.loads(line) for line in TRACE.read_text().splitlines()]


def _scenario(tmp_path, regime: str) -> str:
    """The scenario in ``regime``, its PD cache small and its PrfaaS cache large (so that PrfaaS
    holds a longer prefix for some requests)."""
    doc = yaml.safe_load(SCENARIO.read_text())
    doc["workload"]["cluster_caches"]["regime"] = regime
    spec = doc["workload"]["cluster_caches"]["from_trace"]
    spec.update(path=str(TRACE), pd={"hbm_gib": 16}, prfaas={"hbm_gib": 512, "dram_gib": 1024})
    path = tmp_path / f"{regime}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


@pytest.fixture(scope="module")
def scarce():
    return api.simulate(str(SCENARIO), replay=True)


def test_the_replay_is_the_files_requests_by_count(scarce):
    got = scarce.result.per_request
    stamps_s = np.array([r["timestamp"] for r in ROWS]) / 1000
    assert got["arrival_s"].size == len(ROWS) == 918
    assert got["arrival_s"].tolist() == pytest.approx((stamps_s - stamps_s[0]).tolist(), abs=1e-9)
    assert got["output_tokens"].tolist() == [max(r["output_length"], 1) for r in ROWS]  # the trace's, not the scenario's 1024
    assert got["output_tokens"].mean() == pytest.approx(np.mean([max(r["output_length"], 1) for r in ROWS]), rel=1e-12)
    replay = scarce.result.config.replay
    assert replay.to_json_dict()["mean_input_tokens"] == pytest.approx(np.mean([r["input_length"] for r in ROWS]), rel=1e-12)
    assert replay.to_json_dict()["mean_output_tokens"] == pytest.approx(got["output_tokens"].mean(), rel=1e-12)


def test_scarce_each_request_routes_on_its_input_less_its_pd_prefix(scarce):
    """Scarce bandwidth: each cluster's own cache; the router sees L - (PD's cached prefix)."""
    caches = scarce.plan.inputs.workload.caches.requests
    pd, prfaas = caches.pd_cached_tokens, caches.prfaas_cached_tokens
    route = scarce.result.per_request["input_tokens"]
    lengths = np.array([r["input_length"] for r in ROWS])
    assert route.tolist() == np.maximum(lengths - pd, 1).tolist()
    # by hand: the first request with a PD prefix, and one whose PrfaaS prefix differs from its PD one
    i = int(np.flatnonzero(pd > 0)[0])
    assert route[i] == ROWS[i]["input_length"] - int(pd[i]) < ROWS[i]["input_length"]
    k = int(np.flatnonzero(prfaas != pd)[0])
    assert route[k] == ROWS[k]["input_length"] - int(pd[k]) != ROWS[k]["input_length"] - int(prfaas[k])
    assert route[0] == ROWS[0]["input_length"]  # the first request finds nothing cached


def test_the_offloaded_share_is_the_share_above_the_threshold(scarce):
    t = scarce.deployment.threshold_tokens
    route = scarce.result.per_request["input_tokens"]
    above = int(np.count_nonzero(route > t))
    assert 0 < above < route.size
    assert int(np.count_nonzero(scarce.result.per_request["remote"])) == above
    assert scarce.result.remote_requests == above


def test_plentiful_routes_on_the_best_prefix_anywhere(tmp_path):
    run = api.simulate(_scenario(tmp_path, "plentiful"), replay=True)
    assert run.plan.inputs.workload.routed.regime == CacheRegime.plentiful
    caches = run.plan.inputs.workload.caches.requests
    best = np.maximum(caches.pd_cached_tokens, caches.prfaas_cached_tokens)
    lengths = np.array([r["input_length"] for r in ROWS])
    route = run.result.per_request["input_tokens"]
    assert route.tolist() == np.maximum(lengths - best, 1).tolist()
    assert np.any(caches.prfaas_cached_tokens > caches.pd_cached_tokens)  # the rule matters here
    remote = run.result.per_request["remote"]
    assert int(np.count_nonzero(remote)) == int(np.count_nonzero(route > run.deployment.threshold_tokens))


def test_a_window_replays_its_own_requests_prefixes():
    run = api.simulate(str(SCENARIO), replay=True, from_s=60.0, to_s=120.0)
    rows = [k for k, r in enumerate(ROWS) if 60_000 <= r["timestamp"] - ROWS[0]["timestamp"] < 120_000]
    pd = run.plan.inputs.workload.caches.requests.pd_cached_tokens
    expect = [max(ROWS[k]["input_length"] - int(pd[k]), 1) for k in rows]
    assert run.result.per_request["input_tokens"].tolist() == expect
