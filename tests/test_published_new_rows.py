"""The second published test set (tests/data/published_benchmarks_new.csv, sources in
tests/data/PUBLISHED_NEW.md): every row says where it comes from and what was inferred, names a
model and a chip the tool can load, states a layout that fits its chips, and the set as a whole
covers several engines, chips and row kinds. These are checks of the data as transcribed; the
predictions of these rows are the instance model's test, not this file's."""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path

import pytest

from prfaas_plan.profiles.registry import shipped_names

DATA = Path(__file__).parent / "data"
NEW_CSV = DATA / "published_benchmarks_new.csv"
OLD_CSV = DATA / "published_benchmarks.csv"
LAYOUT_COLUMNS = (
    "tp",
    "pp",
    "ep",
    "dp_attention",
    "replicas",
    "chunk_tokens",
    "chunked_prefill",
    "mtp_tokens",
    "dynamic_chunking",
    "concurrency",
    "load",
    "max_batch",
)
KINDS = {"prefill_tps", "decode_tps", "e2e_tps", "e2e_latency", "ttft", "tpot", "user_tps"}
TIME_UNITS = {"ttft": {"s", "ms"}, "tpot": {"s", "ms"}, "e2e_latency": {"s"}}
PENDING_HARDWARE: set[str] = set()  # every chip the rows name is shipped now


def engine_name(text: str) -> str:
    """The EngineName a row's free-text engine stands for (the published format's keyword rule)."""
    upper = text.upper()
    if "SGLANG" in upper:
        return "sglang"
    if "TENSORRT-LLM" in upper or "TRT-LLM" in upper or "TRTLLM" in upper:
        return "trtllm"
    if "VLLM" in upper:
        return "vllm"
    return "generic"


@pytest.fixture(scope="module")
def rows() -> list[dict[str, str]]:
    with open(NEW_CSV, newline="") as f:
        return list(csv.DictReader(f))


def _int(text: str) -> int | None:
    return int(text) if text else None


def test_columns_are_the_published_ones_plus_the_layout_columns():
    with open(OLD_CSV, newline="") as f:
        old = next(csv.reader(f))
    with open(NEW_CSV, newline="") as f:
        new = next(csv.reader(f))
    assert new == old + list(LAYOUT_COLUMNS)


def test_ids_are_unique_and_numbered(rows):
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids))
    assert all(re.fullmatch(r"[NK]\d{2}", i) for i in ids), ids
    for prefix in "NK":  # N: rows of new sources; K: the row kinds the format added, each hand-checked
        own = [i for i in ids if i[0] == prefix]
        assert own == [f"{prefix}{k:02d}" for k in range(1, len(own) + 1)]


def test_at_least_25_rows(rows):
    assert len(rows) >= 25


def test_every_row_has_a_source_notes_and_a_positive_measurement(rows):
    for r in rows:
        assert r["source"].strip(), r["id"]
        assert len(r["notes"].strip()) >= 20, r["id"]
        assert r["trust"] in {"high", "medium"}, r["id"]
        value = float(r["measured"])
        assert math.isfinite(value) and value > 0, r["id"]


def test_sources_are_pinned(rows):
    """A repository source names its commit (owner/name@40-hex path); none is an unpinned URL alone."""
    for r in rows:
        assert re.match(r"^[\w.-]+/[\w.-]+@[0-9a-f]{40} \S+", r["source"]), (r["id"], r["source"][:80])


def test_kinds_and_units_agree(rows):
    for r in rows:
        assert r["kind"] in KINDS, r["id"]
        if r["kind"] in TIME_UNITS:
            assert r["unit"] in TIME_UNITS[r["kind"]], (r["id"], r["unit"])
        else:
            assert "tokens/s" in r["unit"], (r["id"], r["unit"])
        if r["kind"] in {"e2e_tps", "e2e_latency", "tpot", "user_tps"}:
            assert float(r["output_len"]) >= 1, r["id"]
        if r["kind"] == "e2e_latency":
            assert _int(r["batch"]) and r["batch_scope"] == "total", r["id"]
        if r["kind"] == "decode_tps":
            assert _int(r["context"]), r["id"]


def test_model_refs_and_hardware_resolve(rows):
    models = set(shipped_names("model_profiles"))
    hardware = set(shipped_names("hardware_profiles")) | PENDING_HARDWARE
    for r in rows:
        ref = r["model_ref"]
        if ref.endswith(".json"):
            assert (DATA / ref).is_file(), (r["id"], ref)
        else:
            assert ref in models, (r["id"], ref)
        assert r["tool_hw"] in hardware, (r["id"], r["tool_hw"])


def test_layouts_fit_their_chips(rows):
    """tp x pp x replicas is the deployment's chips where replicas are stated; an EP or attention-DP
    group, and a TP group, never spans more chips than the row has; flags are true/false."""
    for r in rows:
        gpus = int(r["gpus"])
        tp, pp, ep, dp, replicas = (_int(r[c]) for c in ("tp", "pp", "ep", "dp_attention", "replicas"))
        if replicas:
            assert (tp or 1) * (pp or 1) * replicas == gpus, r["id"]
        for group in (tp, ep, dp):
            assert group is None or 1 <= group <= gpus, r["id"]
        if tp and pp:
            assert tp * pp <= gpus, r["id"]
        assert r["chunked_prefill"] in {"", "true", "false"}, r["id"]
        if r["mtp_tokens"]:
            assert 1.0 < float(r["mtp_tokens"]) <= 8, r["id"]
        if r["concurrency"] and r["batch"] and r["batch_scope"] == "per_gpu":
            assert int(r["batch"]) * gpus == int(r["concurrency"]), r["id"]


def test_the_set_covers_engines_chips_and_kinds(rows):
    engines = {engine_name(r["engine"]) for r in rows}
    assert {"sglang", "trtllm", "vllm"} <= engines
    assert len({r["tool_hw"] for r in rows}) >= 4
    assert len({r["kind"] for r in rows}) >= 5
    vendors = {"amd" if r["tool_hw"].startswith("mi") else "nvidia" for r in rows}
    assert vendors == {"amd", "nvidia"}


def test_offline_output_lengths_follow_the_mlperf_logs(rows):
    """An MLPerf row's mean output length is the log's tokens/s over its samples/s, both quoted in
    the notes (checked here by recomputing it from the quoted figures)."""
    checked = 0
    for r in rows:
        if "mlperf" not in r["source"].lower():
            continue
        match = re.search(r"([\d.]+) tokens/s and ([\d.]+) samples/s", r["notes"]) or re.search(
            r"mean output_len ([\d.]+)/([\d.]+)", r["notes"]
        )
        assert match, r["id"]
        tokens, samples = (float(g) for g in match.groups())
        assert float(r["output_len"]) == pytest.approx(tokens / samples, abs=0.06), r["id"]
        checked += 1
    assert checked >= 4
