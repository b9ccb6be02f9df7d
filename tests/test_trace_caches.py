"""Prefix caches replayed over the Mooncake slice, wired into the planner (issue 19)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml
from conftest import REPO

from prfaas_plan.accounting.kv import KvModel
from prfaas_plan.choices import CacheRegime, SnapshotPolicy
from prfaas_plan.planner.chips import choose
from prfaas_plan.planner.plan import plan
from prfaas_plan.profiles.registry import resolve_model
from prfaas_plan.profiles.scenario import load_scenario
from prfaas_plan.workload.block_trace import read_block_trace
from prfaas_plan.workload.cluster_cache import routed_points
from prfaas_plan.workload.prefix_cache import CacheConfig, CacheGeometry, replay
from prfaas_plan.workload.trace_caches import replay_clusters

DATA = REPO / "tests" / "data"
TRACE = DATA / "traces" / "mooncake-conversation-5min.jsonl"
SCENARIO = DATA / "trace_caches.yaml"


def _geometry(model: str) -> CacheGeometry:
    return CacheGeometry.of(KvModel.of(resolve_model(model)), 512)


def _doc() -> dict:
    return yaml.safe_load(SCENARIO.read_text())


def _inputs(doc: dict):
    return choose(load_scenario(doc), str(SCENARIO))


def test_reader_gives_the_files_requests_in_order():
    rows = [json.loads(line) for line in TRACE.read_text().splitlines()]
    req = read_block_trace(TRACE, 512)
    assert len(req) == len(rows) == 918
    assert req.input_tokens.tolist() == [r["input_length"] for r in rows]
    assert req.block_ids.tolist() == [i for r in rows for i in r["hash_ids"]]


@pytest.mark.parametrize("every", [1, 4, 16])
def test_hybrid_reuses_less_than_dense_on_the_same_blocks(every):
    """Same trace, same unlimited room for blocks: the hybrid model matches the same blocks, but
    reuses only up to its deepest kept snapshot short of the prompt's end, so less; every block a
    snapshot: less only where all blocks match (dense truncates to L - 1, hybrid stops a block short)."""
    req = read_block_trace(TRACE, 512)
    room = CacheConfig(1e18, snapshots=SnapshotPolicy.every_k_blocks, every_blocks=every)
    dense = replay(req, _geometry("kimi-k2"), room)
    hybrid = replay(req, _geometry("prfaas-1t-hybrid"), room)
    assert not dense.hybrid and hybrid.hybrid
    assert np.array_equal(hybrid.matched_blocks, dense.matched_blocks)  # the same blocks are found
    assert np.all(hybrid.cached_tokens <= dense.cached_tokens)
    # a brute force of the rule: per request, try each depth from the deepest down; the first matched one
    # that is a multiple of k and whose state holds fewer than L tokens
    by_hand = [
        next((d * 512 for d in range(m, 0, -1) if d % every == 0 and d * 512 < length), 0)
        for m, length in zip(dense.matched_blocks.tolist(), req.input_tokens.tolist())
    ]
    assert hybrid.cached_tokens.tolist() == by_hand
    whole = dense.matched_blocks == np.diff(req.offsets)  # every block matched
    assert np.any(whole)
    if every == 1:
        assert np.array_equal(hybrid.cached_tokens[~whole], dense.cached_tokens[~whole])
    assert np.all(hybrid.cached_tokens[whole] < dense.cached_tokens[whole])
    assert hybrid.snapshot_bytes_peak == pytest.approx(hybrid.snapshots_kept * _geometry("prfaas-1t-hybrid").state_fixed_bytes)


def test_hybrid_reuses_less_than_dense_in_the_same_memory():
    """The scenario's PD memory for both models: snapshots take room from blocks too."""
    req = read_block_trace(TRACE, 512)
    cap = CacheConfig.of_gib(64, snapshots=SnapshotPolicy.every_k_blocks, every_blocks=4)
    hybrid = _geometry("prfaas-1t-hybrid")
    dense = CacheGeometry(512, hybrid.block_bytes, 0.0)  # the hybrid's full-attention blocks, no state
    assert replay(req, hybrid, cap).token_hit_rate < replay(req, dense, cap).token_hit_rate


def test_plan_with_the_trace_cache_serves_more_than_without():
    """Λ_max of the plan with the replayed caches is above the plan of the same trace lengths with no
    cache (planned on its own, from a length file), and above the same counts with no cache."""
    inputs = _inputs(_doc())
    result = plan(inputs, with_marginals=False)
    lam = result.point.lambda_max
    assert lam > result.cache["lambda_without_caches_rps"] > 0
    trace = result.cache["trace"]
    assert trace["hybrid"] and 0 < trace["pd"]["token_hit_rate"] < trace["pd"]["block_hit_rate"]
    assert trace["pd"]["prefill_tokens_saved"] == int(inputs.workload.caches.requests.pd_cached_tokens.sum())


def test_plan_without_caches_of_the_same_lengths_is_lower(tmp_path):
    lengths = tmp_path / "lengths.txt"
    lengths.write_text("\n".join(str(r["input_length"]) for r in map(json.loads, TRACE.read_text().splitlines())))
    doc = _doc()
    doc["workload"] = {"input": {"type": "trace", "path": str(lengths)}, "output": doc["workload"]["output"]}
    bare = plan(choose(load_scenario(doc), str(SCENARIO)), with_marginals=False).point.lambda_max
    with_cache = plan(_inputs(_doc()), with_marginals=False).point.lambda_max
    assert with_cache > bare


def test_routing_classes_are_the_requests():
    """One class per request: in the scarce regime each routes on L - h_pd; in the plentiful regime on
    L - max(h_pd, h_prfaas), and a local request receives max(h_prfaas - h_pd, 0) tokens of KV."""
    req = read_block_trace(TRACE, 512)
    caches = replay_clusters(req, _geometry("kimi-k2"), CacheConfig.of_gib(16), CacheConfig.of_gib(64)).cluster_caches(
        CacheRegime.scarce
    )
    j = caches.requests
    L, h, g = j.input_tokens, j.pd_cached_tokens, j.prfaas_cached_tokens
    scarce = routed_points(caches, CacheRegime.scarce)
    assert scarce.probs.size == len(req) and np.allclose(scarce.probs, 1 / len(req))
    assert sorted(scarce.route_tokens.tolist()) == sorted((L - h).tolist())
    plenty = routed_points(caches, CacheRegime.plentiful)
    assert sorted(plenty.route_tokens.tolist()) == sorted((L - np.maximum(h, g)).tolist())
    assert plenty.local_kv_tokens.sum() == np.maximum(g - h, 0).sum() > 0


@pytest.mark.parametrize(
    ("line", "field", "reason"),
    [
        ("{not json", "line 2", "not a JSON object"),
        ('{"timestamp": 5, "input_length": "12", "output_length": 3, "hash_ids": [1]}', "line 2: input_length", "not a number"),
        (
            '{"timestamp": 5, "input_length": 1000, "output_length": 3, "hash_ids": [1, 2, 3]}',
            "line 2: hash_ids",
            "need ceil(L / 512) = 2 block ids, got 3",
        ),
        ('{"timestamp": 5, "input_length": 10, "output_length": 3, "hash_ids": [1.5]}', "line 2: hash_ids", "list of block ids"),
        ('{"timestamp": 5, "input_length": 0, "output_length": 3, "hash_ids": []}', "line 2: input_length", "below 1"),
    ],
)
def test_a_bad_trace_line_is_one_line_naming_file_line_and_field(tmp_path, run_cli, line, field, reason):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"timestamp": 0, "input_length": 10, "output_length": 3, "hash_ids": [1]}\n' + line + "\n")
    doc = _doc()
    doc["workload"]["cluster_caches"]["from_trace"]["path"] = str(bad)
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(doc))
    res = run_cli("plan", path)
    assert res.code == 2 and "Traceback" not in res.err
    assert f"bad.jsonl: {field}: " in res.err and reason in res.err and len(res.err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("edit", "expect"),
    [
        (lambda w: w["cluster_caches"]["from_trace"].update(block_tokens=0), "block_tokens"),
        (lambda w: w["cluster_caches"]["from_trace"]["snapshots"].update(policy="sometimes"), "policy"),
        (lambda w: w["cluster_caches"]["from_trace"].update(eviction="fifo"), "eviction"),
        (lambda w: w["cluster_caches"]["from_trace"]["pd"].update(hbm_gib=-1), "hbm_gib"),
        (lambda w: w["cluster_caches"]["from_trace"].update(pd=None, prfaas=None), "give the cache memory"),
        (lambda w: w.update(input={"type": "fixed", "tokens": 100}), "leave it out"),
        (lambda w: w["cluster_caches"].update(pd={"hit_fractions": [0], "probs": [1]}), "not both"),
    ],
)
def test_bad_cache_fields_are_refused(tmp_path, run_cli, edit, expect):
    doc = _doc()
    edit(doc["workload"])
    doc["workload"]["cluster_caches"]["from_trace"]["path"] = str(TRACE)
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(doc))
    res = run_cli("plan", path)
    assert res.code == 2 and "Traceback" not in res.err and expect in res.err


def test_the_docs_figures_of_the_slice_are_the_models():
    """docs/workloads.md quotes the slice's reuse with unlimited room: dense, hybrid every 4 blocks,
    hybrid at request ends."""
    req = read_block_trace(TRACE, 512)
    rates = [
        replay(req, _geometry(model), CacheConfig(1e18, snapshots=policy, every_blocks=4)).token_hit_rate
        for model, policy in (
            ("kimi-k2", SnapshotPolicy.every_k_blocks),
            ("prfaas-1t-hybrid", SnapshotPolicy.every_k_blocks),
            ("prfaas-1t-hybrid", SnapshotPolicy.request_end),
        )
    ]
    text = " ".join((REPO / "docs" / "workloads.md").read_text().split())
    dense, every4, ends = (f"{100 * r:.1f}%" for r in rates)
    assert f"reuses {dense} of the input tokens" in text
    assert f"reuses {every4} with a snapshot every 4 blocks and {ends} with snapshots at request ends" in text
    mib = _geometry("prfaas-1t-hybrid").snapshot_bytes(512) / 2**20
    assert f"state is {mib:.0f} MiB a snapshot" in text


def test_without_an_output_the_plan_takes_the_traces_outputs():
    """No ``workload.output``: the slice's own outputs (each at least 1 token), by count, and the decode
    context of its requests E[y (x + y/2)] / E[y]; a given output still wins."""
    rows = [json.loads(line) for line in TRACE.read_text().splitlines()]
    x = np.array([r["input_length"] for r in rows], dtype=float)
    y = np.maximum([r["output_length"] for r in rows], 1).astype(float)
    doc = _doc()
    del doc["workload"]["output"]
    inputs = _inputs(doc)
    assert inputs.workload.output_mean_tokens == pytest.approx(y.mean())
    assert round(y.mean()) == 353
    assert inputs.decode.context_tokens == min(round(np.sum(y * (x + y / 2)) / y.sum()), inputs.model.max_context_tokens)
    given = _inputs(_doc())
    assert given.workload.output_mean_tokens == 1024 and given.workload.decode_context_tokens is None


def _row(t: int, length: int, ids: list[int]) -> str:
    return json.dumps({"timestamp": t, "input_length": length, "output_length": 3, "hash_ids": ids})


@pytest.mark.parametrize(
    ("rows", "where"),
    [
        ([_row(0, 10, [1]), "", _row(5, 1000, [1, 2, 3])], "line 3"),  # blank lines are counted as lines
        ([_row(9, 10, [1]), _row(5, 1000, [1, 2, 3])], "request 0 in arrival order"),  # the reader re-sorted
    ],
)
def test_a_miscounted_request_names_its_line_with_the_models_message(tmp_path, rows, where):
    from prfaas_plan.errors import PlanInputError
    from prfaas_plan.workload.prefix_cache import BlockRequests

    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(rows) + "\n")
    with pytest.raises(PlanInputError) as got:
        read_block_trace(bad, 512)
    with pytest.raises(PlanInputError) as model:
        BlockRequests.of([[1, 2, 3]], [1000]).check(512)
    assert got.value.field == f"{where}: hash_ids" and got.value.source == str(bad)
    assert got.value.reason == model.value.reason
    assert got.value.reason.startswith("1000 input tokens need ceil(L / 512) = 2 block ids, got 3 (block_tokens must be")


def test_a_cache_beyond_the_pools_hbm_is_noted():
    """PD: 8 instances x 8 H20 x memory_gib of HBM in all; 256 GiB fits (no note), 100,000 GiB does not."""
    inputs = _inputs(_doc())
    total_gib = 8 * 8 * inputs.pd.instance.hardware.memory_gib
    assert not [n for n in inputs.notes if "hbm_gib" in n]
    doc = _doc()
    doc["workload"]["cluster_caches"]["from_trace"]["pd"]["hbm_gib"] = total_gib + 1
    doc["workload"]["cluster_caches"]["from_trace"]["prfaas"]["hbm_gib"] = 4 * 8 * 141  # H200: 141 GiB a chip
    (note,) = [n for n in _inputs(doc).notes if "hbm_gib" in n]
    assert note.startswith(f"cluster_caches.from_trace.pd.hbm_gib {total_gib + 1:g} GiB is more than the {total_gib:,.0f} GiB")
