"""The published-measurement format says everything ``estimate`` can: layout columns, chunk and
MTP, concurrency, the kinds ttft / tpot / user_tps, a batch's end-to-end latency and rows at a
model's full context. The four real rows of ``published_benchmarks_new.csv`` that need them
(a PP4 chunked 128K prefill, a TTFT in ms, a static batch's latency, a batch at the full
context) are predicted here by hand from the lower-level pieces (``timing.cost.stage_cost``
per chunk or pass, ``timing.decode.step_cost`` per step) and must come out exactly."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest
from conftest import DATA

from prfaas_plan import api, published
from prfaas_plan.accounting.work import prefill_work
from prfaas_plan.choices import EngineName
from prfaas_plan.errors import PlanInputError
from prfaas_plan.timing.cost import stage_cost
from prfaas_plan.timing.decode import step_cost
from prfaas_plan.timing.layout import Layout
from prfaas_plan.timing.prefill import RooflinePrefill

NEW_CSV = DATA / "published_benchmarks_new.csv"
OLD_CSV = DATA / "published_benchmarks.csv"


def rows_of(path: Path) -> dict[str, dict[str, str]]:
    return {row["id"]: row for row in published.read_rows(str(path))}


@pytest.fixture(scope="module")
def new_rows():
    return rows_of(NEW_CSV)


def predict(row: dict[str, str]) -> published.Prediction:
    return published.predict_row(row, DATA)


def chunked_ttft_by_hand(model, inst, layout: Layout, prompt: int, chunk: int, sizes: list[int] | None = None) -> float:
    """One prompt in chunks of ``chunk`` tokens (or of ``sizes``), each attending to those before
    it, flowing through pp stages: the last chunk leaves the last stage after every chunk's stage
    time plus pp - 1 more stages of the longest (a proportionate flow shop), plus the fixed overheads."""
    eff = inst.hardware.efficiency
    if sizes is None:
        sizes = [min(chunk, prompt - i * chunk) for i in range(math.ceil(prompt / chunk))]
    times = [one_stage_s(model, inst, layout, tokens, sum(sizes[:i])) for i, tokens in enumerate(sizes)]
    return sum(times) + (layout.pp - 1) * max(times) + len(sizes) * eff.prefill_pass_overhead_s + eff.prefill_overhead_s


def one_stage_s(model, inst, layout: Layout, tokens: float, prefix: float) -> float:
    """One pipeline stage's time of a chunk of ``tokens`` after ``prefix`` tokens, the prompt alone."""
    work = prefill_work(model, np.array([float(tokens)]), float(prefix))
    return float(stage_cost(model, inst.hardware, layout, inst.engine, work, busy_groups=1, prefill=True).total_s[0])


def sglang_dynamic_chunks(model, inst, layout: Layout, prompt: int, initial: int, smooth: float) -> list[int]:
    """The chunk sizes SGLang's dynamic chunking picks (its profile_and_init_predictor and
    ChunkSizePredictor, written out again): a least-squares quadratic f(L) = a L^2 + b L + c through
    the time of one pass of L tokens at L = 1.25 C - i (1.25 C // 128), i = 1..127; each next chunk x
    solves f(L + x) - f(L) = f(initial) - f(0), is smoothed to initial + smooth (x - initial), kept >=
    initial // 4, aligned down to 64 and at most the initial chunk; the last one is what is left."""
    step = (1.25 * initial) // 128
    lengths = np.array([1.25 * initial - i * step for i in range(1, 128)])
    times = [one_stage_s(model, inst, layout, int(x), 0.0) for x in lengths]
    a, b, _ = np.linalg.lstsq(np.column_stack([lengths**2, lengths, np.ones(lengths.size)]), np.array(times), rcond=None)[0]
    assert a > 0  # else SGLang turns dynamic chunking off
    b = max(b, 0.0)
    target = a * initial**2 + b * initial
    sizes, done = [initial], initial
    while done < prompt:
        x = (-(2 * a * done + b) + math.sqrt((2 * a * done + b) ** 2 + 4 * a * target)) / (2 * a)
        size = min(max(max(int(initial + smooth * (x - initial)), initial // 4) // 64 * 64, 64), initial)
        sizes.append(min(size, prompt - done))
        done += sizes[-1]
    return sizes


# --- the four rows, by hand ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "row_id,model_ref,precision,tp,pp,chunk,smooth",
    [
        ("K01", "deepseek-v3", None, 8, 4, 12288, 0.65),  # DeepSeek-V3.1, PP4 TP8 on 32 H20, 128K
        ("K02", "qwen3-235b", {"weights": "fp8"}, 4, 8, 18432, 0.8),  # Qwen3-235B-FP8, PP8 TP4, 128K = its full context
    ],
)
def test_a_chunked_128k_prompt_on_a_pipeline_is_predicted_as_the_source_ran_it(
    new_rows, row_id, model_ref, precision, tp, pp, chunk, smooth
):
    """The source ran SGLang's dynamic chunking (the blog's commands: --chunked-prefill-size and
    SGLANG_DYNAMIC_CHUNKING_SMOOTH_FACTOR): the row's TTFT is the flow shop of the chunks that
    scheduler picks, worked out here again from its published rule, on the layout the source ran."""
    row = new_rows[row_id]
    assert float(row["dynamic_chunking"]) == smooth and int(row["chunk_tokens"]) == chunk
    model = api.precision_of(api.model_of(model_ref), precision)
    layout = Layout(tp=tp, pp=pp)
    inst = api.instance_of(
        model, "h20", tp * pp, layout.as_dict(), {"prefill_tokens_per_pass": chunk, "dynamic_chunking": smooth}
    )
    sizes = sglang_dynamic_chunks(model, inst, layout, 131072, chunk, smooth)
    assert sum(sizes) == 131072 and sizes[0] == chunk
    assert all(a >= b for a, b in zip(sizes[:-2], sizes[1:-1]))  # they shrink as the prefix grows
    assert all(s % 64 == 0 and s >= chunk // 4 for s in sizes[:-1]) and len(sizes) > math.ceil(131072 / chunk)
    expected = chunked_ttft_by_hand(model, inst, layout, 131072, chunk, sizes)
    p = predict(row)
    assert p.layout == layout.label and p.gpus == 32
    assert p.predicted == pytest.approx(expected, rel=1e-9)
    # equal chunks grow with their prefix, so their pipeline is bound by the last (longest) chunk
    # and its fill costs pp - 1 of it; the shrinking chunks take about the first one's time each
    fixed = chunked_ttft_by_hand(model, inst, layout, 131072, chunk)
    assert p.predicted < 0.85 * fixed
    stage = [one_stage_s(model, inst, layout, x, sum(sizes[:i])) for i, x in enumerate(sizes[:-1])]
    equal = [one_stage_s(model, inst, layout, chunk, i * chunk) for i in range(131072 // chunk)]
    assert max(stage) / min(stage) < max(equal) / min(equal)
    # the layout the source ran, not the one the search would pick for a lone prompt
    searched = api.estimate(
        model, "h20", 32, input_tokens=131072, output_tokens=1, concurrency=1, engine={"prefill_tokens_per_pass": chunk}
    )
    assert searched.first_token.layout != layout


def test_a_ttft_in_ms_is_one_prompt_on_the_idle_instance(new_rows):
    """K03: Llama-2-70B FP8 (FP8 KV) on 4 x H100, TP4, 2,048 tokens, batch 1: 109 ms."""
    row = new_rows["K03"]
    model = api.precision_of(api.model_of("llama-2-70b"), {"weights": "fp8", "kv": "fp8"})
    inst = api.instance_of(model, "h100", 4, {"tp": 4})
    expected_ms = chunked_ttft_by_hand(model, inst, Layout(tp=4), 2048, inst.engine.prefill_tokens_per_pass) * 1e3
    p = predict(row)
    assert p.unit == "ms" and p.predicted == pytest.approx(expected_ms, rel=1e-9)
    in_seconds = predict({**row, "unit": "s", "measured": "0.109"})
    assert in_seconds.predicted * 1e3 == pytest.approx(p.predicted, rel=1e-12)
    assert in_seconds.ratio == pytest.approx(p.ratio, rel=1e-12)


def batch_latency_by_hand(model, inst, layout: Layout, batch: int, i: int, o: int) -> tuple[float, float]:
    """(latency, one prompt's TTFT + (O - 1) TPOT) of a static batch whose pass holds all B prompts:
    one pass of B prompts, then O - 1 decode steps at batch B, context I + O // 2."""
    eff = inst.hardware.efficiency
    work = prefill_work(model, np.array([float(i)]))
    one_pass = stage_cost(model, inst.hardware, layout, inst.engine, work, requests=float(batch), busy_groups=1, prefill=True)
    prefill_s = float(one_pass.total_s[0]) * layout.pp + eff.prefill_pass_overhead_s + eff.prefill_overhead_s
    step = float(step_cost(model, inst, layout, [batch], i + o // 2)[0][0])
    lone = stage_cost(model, inst.hardware, layout, inst.engine, work, busy_groups=1, prefill=True)
    lone_s = float(lone.total_s[0]) * layout.pp + eff.prefill_pass_overhead_s + eff.prefill_overhead_s
    return prefill_s + (o - 1) * step, lone_s + (o - 1) * step


@pytest.mark.parametrize(
    "row_id,batch,i,o",
    [
        ("K04", 96, 2048, 128),  # prefill-heavy: 96 x 2,048 tokens in the context pass
        ("K05", 64, 2048, 2048),  # input + output = 4,096 = Llama-2-70B's full context
    ],
)
def test_a_static_batch_latency_is_its_whole_prefill_then_its_decode(new_rows, row_id, batch, i, o):
    row = new_rows[row_id]
    model = api.precision_of(api.model_of("llama-2-70b"), {"weights": "fp8", "kv": "fp8"})
    assert int(row["chunk_tokens"]) == batch * i and row["chunked_prefill"] == "false"
    inst = api.instance_of(model, "h100", 2, {"tp": 2}, {"prefill_tokens_per_pass": batch * i, "chunked_prefill": False})
    expected, one_prompt = batch_latency_by_hand(model, inst, Layout(tp=2), batch, i, o)
    p = predict(row)
    assert p.predicted == pytest.approx(expected, rel=1e-9)
    assert p.predicted > one_prompt  # not one prompt's prefill (what e2e_latency charged before)


def test_a_batch_prefill_with_a_small_budget_takes_several_passes():
    """B prompts, k = floor(P / I) a pass: ceil(B / k) passes, the last with the remainder; the
    mean first token averages the passes' ends over the prompts."""
    model = api.model_of("llama-3.1-8b")
    inst = api.instance_of(model, "h200", 1, {"tp": 1}, {"prefill_tokens_per_pass": 8192})
    eff = inst.hardware.efficiency
    roof = RooflinePrefill(model, inst, fit_tokens=2048)
    batch = roof.batch(2048, 10)  # 4 a pass: 4, 4, 2
    work = prefill_work(model, np.array([2048.0]))
    t = [
        float(
            stage_cost(model, inst.hardware, Layout(), inst.engine, work, requests=float(k), busy_groups=1, prefill=True).total_s[
                0
            ]
        )
        for k in (4, 4, 2)
    ]
    done = np.cumsum(t) + eff.prefill_pass_overhead_s * np.arange(1, 4) + eff.prefill_overhead_s
    assert batch.passes == 3 and batch.prompts_per_pass == 4
    assert batch.seconds == pytest.approx(done[-1], rel=1e-12)
    assert batch.mean_first_token_s == pytest.approx((4 * done[0] + 4 * done[1] + 2 * done[2]) / 10, rel=1e-12)
    assert batch.cost.total_s[0] == pytest.approx(batch.seconds, rel=1e-12)


def test_a_batch_spread_over_attention_groups_ends_each_prompt_once():
    """10 prompts over 8 attention groups (DP attention): the busiest group has 2, so one pass
    of 2 per group ends all 10 (not 16): every prompt's first token comes at that pass's end."""
    model = api.model_of("qwen3-235b")
    inst = api.instance_of(model, "h200", 8, {"ep": 8, "dp_attention": 8})
    batch = RooflinePrefill(model, inst, fit_tokens=1024).batch(1024, 10)
    eff = inst.hardware.efficiency
    work = prefill_work(model, np.array([1024.0]))
    one = stage_cost(
        model, inst.hardware, Layout(ep=8, dp_attention=8), inst.engine, work, requests=16.0, busy_groups=8, prefill=True
    )
    expected = float(one.total_s[0]) + eff.prefill_pass_overhead_s + eff.prefill_overhead_s
    assert batch.passes == 1 and batch.prompts_per_pass == 2
    assert batch.seconds == pytest.approx(expected, rel=1e-12)
    assert batch.mean_first_token_s == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    "model,hw,gpus,layout,engine,prompt",
    [
        ("llama-3.1-8b", "h200", 1, {"tp": 1}, None, 2048),
        ("llama-3.1-8b", "h200", 4, {"tp": 1, "pp": 4}, {"prefill_tokens_per_pass": 4096}, 30000),
        ("qwen3-235b", "h200", 8, {"ep": 8, "dp_attention": 8}, None, 1024),
    ],
)
def test_a_batch_of_one_is_the_lone_prompt(model, hw, gpus, layout, engine, prompt):
    m = api.model_of(model)
    inst = api.instance_of(m, hw, gpus, layout, engine)
    roof = RooflinePrefill(m, inst, fit_tokens=prompt)
    one = roof.batch(prompt, 1)
    ttft, parts = roof.single_prompt(np.array([float(prompt)]))
    assert one.seconds == pytest.approx(float(ttft[0]), rel=1e-12)
    assert one.mean_first_token_s == pytest.approx(one.seconds, rel=1e-12)
    assert one.cost.compute_s[0] == pytest.approx(float(parts.compute_s[0]), rel=1e-12)


def test_the_estimate_charges_a_batch_its_whole_prefill():
    est = api.estimate("llama-3.1-8b", "h200", 1, input_tokens=2048, output_tokens=256, concurrency=64, parallel={"tp": 1})
    assert est.e2e_latency_s == pytest.approx(est.batch_prefill_s + 255 * est.tpot_s, rel=1e-12)
    assert est.ttft_s < est.batch_ttft_s < est.batch_prefill_s
    lone = api.estimate("llama-3.1-8b", "h200", 1, input_tokens=2048, output_tokens=256, concurrency=1, parallel={"tp": 1})
    assert lone.batch_prefill_s == pytest.approx(lone.ttft_s, rel=1e-12)
    assert lone.e2e_latency_s == pytest.approx(lone.ttft_s + 255 * lone.tpot_s, rel=1e-12)


# --- a row at the model's full context ----------------------------------------------------------


def decode_row(**cells) -> dict[str, str]:
    row = dict.fromkeys(published.KNOWN_COLUMNS, "")
    row.update(
        {
            "id": "X1",
            "kind": "decode_tps",
            "model_ref": "llama-3.1-8b",
            "tool_hw": "h200",
            "gpus": "1",
            "tp": "1",
            "measured": "1",
            "unit": "output tokens/s",
            "concurrency": "1",
        }
    )
    row.update(cells)
    return row


@pytest.mark.parametrize("kind", ["decode_tps", "tpot", "user_tps"])
def test_a_decode_step_at_the_full_context_is_accepted_and_predicted_at_it(kind):
    """131,072 tokens of KV on Llama-3.1-8B (its context): the last step it can take. Before, the
    request was read as 131,072 + 1 tokens and refused."""
    context = api.model_of("llama-3.1-8b").max_context_tokens
    unit = "s" if kind == "tpot" else "tokens/s"
    p = predict(decode_row(kind=kind, context=str(context), unit=unit))
    model = api.model_of("llama-3.1-8b")
    step = float(step_cost(model, api.instance_of(model, "h200", 1, {"tp": 1}), Layout(), [1], context)[0][0])
    expected = {"decode_tps": 1 / step, "tpot": step, "user_tps": 1 / step}[kind]
    assert p.predicted == pytest.approx(expected, rel=1e-12)
    with pytest.raises(PlanInputError, match="exceeds"):
        predict(decode_row(kind=kind, context=str(context + 1), unit=unit))


def test_a_prefill_of_the_whole_context_is_accepted():
    """K02: a 131,072-token prompt on Qwen3-235B (context 131,072) and its one output token."""
    assert api.model_of("qwen3-235b").max_context_tokens == 131072
    est = api.estimate("qwen3-235b", "h200", 8, input_tokens=131072, output_tokens=1, concurrency=1)
    assert est.ttft_s > 0
    with pytest.raises(PlanInputError, match="exceeds"):
        api.estimate("qwen3-235b", "h200", 8, input_tokens=131072, output_tokens=2, concurrency=1)


# --- the new columns ------------------------------------------------------------------------------


def test_the_layout_columns_override_the_parallelism_text():
    row = decode_row(
        kind="tpot",
        unit="s",
        model_ref="llama-3.1-8b",
        gpus="8",
        tp="4",
        pp="2",
        parallelism="TP8",
        input_len="1024",
        output_len="128",
    )
    p = predict(row)
    assert p.layout == "tp4 pp2"
    est = api.estimate(
        "llama-3.1-8b", "h200", 8, input_tokens=1024, output_tokens=128, concurrency=1, parallel={"tp": 4, "pp": 2}
    )
    assert p.predicted == est.tpot_s
    assert predict({**row, "tp": "", "pp": ""}).layout == "tp8"


@pytest.mark.parametrize(
    "cells,needle",
    [
        ({"tp": "4"}, "gpus: the layout's tp x dp_attention x pp x replicas is 4 chips, not the row's 8"),
        ({"tp": "2", "dp_attention": "2", "ep": "3", "replicas": "2"}, "ep: ep 3 must divide tp x dp_attention (4)"),
        ({"pp": "0"}, "pp: must be in [1, 65,536]"),
        ({"replicas": "1.5"}, "replicas: must be a whole number"),
        ({"chunk_tokens": "0"}, "chunk_tokens: must be in [1, 1,048,576]"),
        ({"chunk_tokens": "2048.5"}, "chunk_tokens: must be a whole number"),
        ({"chunked_prefill": "yes"}, "chunked_prefill: must be true or false"),
        ({"mtp_tokens": "0.5"}, "mtp_tokens: must be in [1, 16]"),
        ({"mtp_tokens": "fast"}, "malformed value in column mtp_tokens"),
        ({"concurrency": "0"}, "concurrency: must be in [1, 100,000]"),
        ({"concurrency": "2.5"}, "concurrency: must be a whole number"),
        ({"kind": "ttft", "unit": "sec"}, "unit: a ttft row is in seconds: unit must be s or ms"),
        ({"kind": "tpot", "unit": "tokens/s"}, "unit: a tpot row is in seconds"),
        ({"kind": "e2e_latency", "unit": "s", "output_len": "128", "concurrency": "", "batch": ""}, "batch: needs a value"),
        ({"kind": "ttfb"}, "unknown kind 'ttfb' (one of prefill_tps, decode_tps, e2e_tps, e2e_latency, ttft, tpot"),
    ],
)
def test_every_new_field_is_checked_in_one_line_naming_line_and_column(tmp_path, cells, needle):
    good = decode_row(gpus="8", tp="8", context="2048")
    bad = {**good, "tp": "8", **cells}
    path = tmp_path / "mine.csv"
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(published.KNOWN_COLUMNS))
        writer.writeheader()
        writer.writerows([good, bad])  # the bad row is line 3
    with pytest.raises(PlanInputError) as info:
        published.predict_all(str(path))
    text = str(info.value)
    assert "\n" not in text and text.startswith(f"{path}: line 3") and needle in text, text


def test_a_misspelt_new_column_is_refused_with_a_hint(tmp_path):
    path = tmp_path / "mine.csv"
    path.write_text("id,kind,model_ref,tool_hw,gpus,measured,unit,chunk_token\n")
    with pytest.raises(PlanInputError, match="did you mean 'chunk_tokens'"):
        published.predict_all(str(path))


def test_chunk_mtp_and_chunked_prefill_reach_the_engine():
    row = decode_row(
        kind="tpot",
        unit="s",
        gpus="8",
        tp="8",
        input_len="20000",
        output_len="512",
        chunk_tokens="4096",
        chunked_prefill="true",
        mtp_tokens="2.5",
    )
    engine = {"prefill_tokens_per_pass": 4096, "chunked_prefill": True, "mtp_tokens_per_step": 2.5}
    est = api.estimate(
        "llama-3.1-8b", "h200", 8, input_tokens=20000, output_tokens=512, concurrency=1, parallel={"tp": 8}, engine=engine
    )
    assert predict(row).predicted == est.tpot_s
    ttft = {**row, "kind": "ttft"}
    assert predict(ttft).predicted == est.ttft_s
    assert predict({**ttft, "chunk_tokens": "8192"}).predicted != est.ttft_s  # the chunk is the row's
    # without chunked prefill a pass must hold the whole prompt: a one-line error naming the field
    with pytest.raises(PlanInputError, match="without chunked prefill"):
        predict({**ttft, "chunked_prefill": "false"})
    assert predict({**row, "kind": "user_tps", "unit": "tokens/s"}).predicted == pytest.approx(1 / est.tpot_s, rel=1e-12)


def test_concurrency_wins_over_batch_and_a_burst_ttft_is_the_mean_first_token():
    base = decode_row(kind="ttft", unit="s", gpus="1", input_len="2048", output_len="1", concurrency="")
    est = api.estimate("llama-3.1-8b", "h200", 1, input_tokens=2048, output_tokens=1, concurrency=16, parallel={"tp": 1})
    burst = predict({**base, "concurrency": "16", "batch": "4"})
    assert burst.predicted == est.batch_ttft_s  # concurrency, not batch
    assert predict({**base, "batch": "16"}).predicted == est.batch_ttft_s  # an old CSV's batch
    assert (
        predict({**base, "batch": "2", "batch_scope": "per_gpu", "gpus": "8", "tp": "8"}).predicted
        == api.estimate(
            "llama-3.1-8b", "h200", 8, input_tokens=2048, output_tokens=1, concurrency=16, parallel={"tp": 8}
        ).batch_ttft_s
    )
    lone = predict(base)  # blank: one request
    assert lone.predicted == est.ttft_s < burst.predicted


# --- the old CSV --------------------------------------------------------------------------------

# the 15 rows' predictions before the new columns and kinds (main at 0f07349, with B05, B14 and B15 moved by
# the per-chip efficiencies of GB200 and MI300X:
# ``published.predict_all('tests/data/published_benchmarks.csv')``); the format's growth must not move them
OLD_PREDICTIONS = {
    "B01": 47261.48984109141,
    "B02": 46751.3487743677,
    "B03": 18263.61860941016,
    "B04": 12632.075104235797,
    "B05": 21811.16630510597,
    "B06": 2993.469428474713,
    "B07": 1531.49457461959,
    "B08": 2999.84054703463,
    "B09": 2282.602387131009,
    "B10": 455.73978788928105,
    "B11": 1711.1872258006485,
    "B12": 10602.854319771572,
    "B13": 20915.833109170242,
    "B14": 13.475236356831147,
    "B15": 3.2541121543445,
}  # B14, B15 (8 x MI300X, TP8): its all-reduce figures now measured (tests/test_rocm_efficiencies.py)


def test_the_old_csv_predicts_as_before():
    # with the engine-neutral profile: the engines' own defaults move rows on purpose (tests/test_engines.py)
    predictions = {p.id: p.predicted for p in published.predict_all(str(OLD_CSV), engine=EngineName.generic)}
    assert predictions.keys() == OLD_PREDICTIONS.keys()
    for key, value in OLD_PREDICTIONS.items():
        assert predictions[key] == pytest.approx(value, rel=1e-12), key


def test_the_new_csv_has_every_known_column_and_is_predicted(new_rows):
    with open(NEW_CSV, newline="") as f:
        header = next(csv.reader(f))
    assert set(header) == set(published.KNOWN_COLUMNS)
    predictions = published.predict_all(str(NEW_CSV))
    assert [p.id for p in predictions] == list(new_rows)
    for p in predictions:
        assert np.isfinite(p.predicted) and p.predicted > 0, p
