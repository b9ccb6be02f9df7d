"""A serving benchmark under load (``timing.serving``): C requests in flight, a new one admitted
as one ends, each step the running decodes plus the newcomers' prompt chunks within the token
budget. The steady state is counted by hand on a tiny model (the fixed point, the mixed steps
term by term, TTFT and TPOT), checked against properties (one request in flight is the idle
instance; without prompts to mix in the load is the decode step at C), and the published
format's ``load`` column is checked: its default, its errors, and that the static rows
(K01-K05, ``e2e_latency``) keep their figures."""

from __future__ import annotations

import csv

import numpy as np
import pytest
from conftest import DATA
from test_hand_counts import DENSE, GQA, hardware, model

from prfaas_plan import api, published
from prfaas_plan.errors import PlanInputError
from prfaas_plan.timing.cost import Engine
from prfaas_plan.timing.decode import step_cost
from prfaas_plan.timing.instance import Instance
from prfaas_plan.timing.layout import Layout
from prfaas_plan.timing.serving import load_figures, mixed_step_cost

REL = 1e-9
# the toy chip (test_hand_counts.hardware) slowed so that a chunk's matrices are compute-bound and a
# decode step's memory-bound: bf16 0.01 TFLOPS (matmul x 0.5, attention x 0.25), 0.001 TB/s x 0.8
MM, ATT, BW = 0.01e12 * 0.5, 0.01e12 * 0.25, 0.001e12 * 0.8
DECODE_OVERHEAD_S, PASS_OVERHEAD_S, REQUEST_OVERHEAD_S = 0.001, 0.003, 0.01
CONTEXT = 200  # I + O // 2 of the run below: 150 + 100 // 2


def toy_instance(budget: int = 64) -> Instance:
    hw = hardware(
        peak_tflops={"bf16": 0.01},
        memory_bandwidth_tb_per_s=0.001,
        decode_step_overhead_s=DECODE_OVERHEAD_S,
        prefill_overhead_s=REQUEST_OVERHEAD_S,
    )
    hw = hw.model_copy(update={"efficiency": hw.efficiency.model_copy(update={"prefill_pass_overhead_s": PASS_OVERHEAD_S})})
    return Instance(hw, 1, Layout(), Engine(prefill_tokens_per_pass=budget, chunked_prefill=True))


def hand_step_s(decodes: float, chunk: float = 0.0, prefix: float = 0.0, prompts: float = 0.0) -> float:
    """One step of gqa + dense (2 layers, bf16) on one chip, term by term: ``decodes`` requests at
    the context (each reads 96 B of KV per token, 2 x 4 heads x (16 + 8) FLOPs per key) and
    ``prompts`` chunks of ``chunk`` tokens after ``prefix`` (c p + c (c + 1) / 2 keys; 96 B of KV
    written a token); every kernel a roofline of its own, the weights read once; the output head
    for the decodes and one logit row a prompt; the step's fixed cost (a prompt in it: the larger
    of the decode step's and the prefill pass's)."""
    tokens = decodes + prompts * chunk
    keys = decodes * CONTEXT + prompts * (chunk * prefix + chunk * (chunk + 1) / 2)
    proj = max(2 * tokens * 9216 / MM, 9216 * 2 / BW)
    attention = max(2 * 4 * 24 * keys / ATT, (96 * CONTEXT * decodes + 96 * prompts * chunk) / BW)
    ffn = max(2 * tokens * 24576 / MM, 24576 * 2 / BW)
    activations = tokens * 8 * 64 * 2 / BW
    rows = decodes + prompts
    head = max(2 * rows * 64 * 100 / MM, 64 * 100 * 2 / BW) + rows * 100 * 4 / BW
    fixed = max(DECODE_OVERHEAD_S, PASS_OVERHEAD_S) if prompts else DECODE_OVERHEAD_S
    return 2 * (proj + attention + ffn + activations) + head + fixed


def test_the_mixed_step_is_counted_by_hand():
    """Decodes alone, a chunk alone and the two in one step, each as ``hand_step_s``; a step of
    decodes alone is ``decode.step_cost``'s."""
    inst = toy_instance()
    for decodes, chunk, prefix, prompts in (
        (3.0, 61.0, 0.0, 1.0),
        (3.0, 28.0, 122.0, 1.0),
        (0.0, 64.0, 64.0, 1.0),
        (5.0, 20.0, 0.0, 2.5),
    ):
        got, _ = mixed_step_cost(model(GQA, DENSE), inst, Layout(), decodes, CONTEXT, [chunk], [prefix], prompts)
        assert float(got[0]) == pytest.approx(hand_step_s(decodes, chunk, prefix, prompts), rel=REL)
    alone = float(step_cost(model(GQA, DENSE), inst, Layout(), [3.0], CONTEXT)[0][0])
    assert alone == pytest.approx(hand_step_s(3.0), rel=REL)
    # the chunk's matrices are compute-bound, the decode step's memory-bound: mixing is not a sum
    assert hand_step_s(3.0, 61.0, 0.0, 1.0) < hand_step_s(3.0) + hand_step_s(0.0, 61.0, 0.0, 1.0)


def test_the_steady_state_of_a_closed_loop_is_counted_by_hand():
    """C = 4 in flight, I = 150, O = 101 (w = 100 decode steps), budget P = 64, q = 1.
    Fixed point d = c w / (w + n), n = ceil(I / (P - d (c - 1) / c)): from d = 4, n = ceil(150 / 61) = 3,
    d = 400 / 103; then d_pre = 300 / 103, r = 64 - 300 / 103 = 61.09, n = 3 again: settled.
    The newcomer's chunks: r, r, 150 - 2 r after 0, r, 2 r tokens, beside d_pre decodes (TTFT: their
    steps + the request's 10 ms, no wait since (c - d) w / d = 3 = n). A decoding request sees
    d_dec = 1 + 300 / 103 decodes; the others' newcomers, lambda (c - 1) / c = (4 / 103) x 3 / 4 a step,
    3 chunk steps each: f = 9 / 103 of its steps mixed. TPOT = f mean(t_mix) + (1 - f) t_dec."""
    inst = toy_instance()
    got = load_figures(model(GQA, DENSE), inst, Layout(), 150, 101, 4, 1000, CONTEXT)
    d = 400 / 103
    d_pre, d_dec = 300 / 103, 1 + 300 / 103
    room = 64 - d_pre
    chunks, prefixes = [room, room, 150 - 2 * room], [0.0, room, 2 * room]
    assert got.decodes == pytest.approx(d, rel=REL) and got.prefill_steps == 3
    assert got.mixed_fraction == pytest.approx(9 / 103, rel=REL) and not got.prefill_bound
    ttft = sum(hand_step_s(d_pre, c, p, 1.0) for c, p in zip(chunks, prefixes)) + REQUEST_OVERHEAD_S
    assert got.ttft_s == pytest.approx(ttft, rel=REL)
    mixed = np.mean([hand_step_s(d_dec, c, p, 1.0) for c, p in zip(chunks, prefixes)])
    tpot = 9 / 103 * mixed + (1 - 9 / 103) * hand_step_s(d_dec)
    assert got.tpot_s == pytest.approx(tpot, rel=REL)
    assert got.itl_median_s == pytest.approx(hand_step_s(d_dec), rel=REL)  # f < 1/2: the decode step
    assert got.prompt_tokens_per_step == pytest.approx(d / 100 * 150, rel=REL)


def test_a_prefill_bound_load_queues_its_newcomers():
    """C = 8, I = 150, O = 11 (w = 10), P = 64: the prompts' tokens a step, d I / w, fill the budget
    beside the decodes at d_full = 64 / (1 + 150 / 10) = 4 < c w / (w + n) = 80 / 13, so d = 4;
    d_pre = 3.5, r = 60.5, n = 3; lambda = 0.4 a step, f = min(1, 0.4 x 7 / 8 x 3) = 1: every
    step mixed, at d_dec = 4.5. A newcomer waits (c - d) w / d - n = 7 steps, then its 3 chunks."""
    got = load_figures(model(GQA, DENSE), toy_instance(), Layout(), 150, 11, 8, 1000, CONTEXT)
    room = 64 - 3.5
    chunks, prefixes = [room, room, 150 - 2 * room], [0.0, room, 2 * room]
    assert got.decodes == pytest.approx(4.0, rel=REL) and got.prefill_bound and got.mixed_fraction == 1.0
    step = np.mean([hand_step_s(4.5, c, p, 1.0) for c, p in zip(chunks, prefixes)])
    assert got.tpot_s == pytest.approx(step, rel=REL)
    own = sum(hand_step_s(3.5, c, p, 1.0) for c, p in zip(chunks, prefixes))
    assert got.ttft_s == pytest.approx(7 * step + own + REQUEST_OVERHEAD_S, rel=REL)


def test_memory_caps_the_decodes_and_the_rest_wait():
    """At most 2 decode (the cap): d = 2, d_pre = 2 x 3 / 4 = 1.5; the 2 not decoding wait (4 - 2) x 100 / 2 - n
    steps, n = ceil(150 / 62.5) = 3."""
    got = load_figures(model(GQA, DENSE), toy_instance(), Layout(), 150, 101, 4, 2, CONTEXT)
    assert got.decodes == pytest.approx(2.0, rel=REL) and got.prefill_bound
    room = 64 - 1.5
    own = sum(hand_step_s(1.5, c, p, 1.0) for c, p in zip([room, room, 150 - 2 * room], [0.0, room, 2 * room]))
    assert got.ttft_s == pytest.approx((2 * 100 / 2 - 3) * got.step_s + own + REQUEST_OVERHEAD_S, rel=REL)


@pytest.mark.parametrize(
    "model_ref, hw, gpus, parallel, engine",
    [
        ("llama-3.1-8b", "h100", 1, {"tp": 1}, "vllm"),
        ("llama-3.3-70b", "h200", 8, {"tp": 8}, "sglang"),
    ],
)
def test_one_request_in_flight_is_the_idle_instance(model_ref, hw, gpus, parallel, engine):
    """C = 1: no other request decodes beside the newcomer's prompt and none brings prompts into its
    decode steps, so TPOT at load is today's TPOT at batch 1 and TTFT at load the idle TTFT."""
    est = api.estimate(
        model_ref, hw, gpus, input_tokens=20000, output_tokens=2000, concurrency=1, parallel=parallel, engine=engine
    )
    assert est.load.mixed_fraction == 0.0
    assert est.tpot_at_load_s == est.tpot_s
    assert est.ttft_at_load_s == pytest.approx(est.ttft_s, rel=1e-9)


def test_without_prompts_to_mix_in_the_load_is_the_decode_step_at_its_concurrency():
    """O so long that a prompt comes once in 10^4 steps: TPOT at load tends to today's TPOT at C
    (the decodes d = c w / (w + n) -> c, the mixed share -> 0), and it is never below it."""
    est = api.estimate(
        "llama-3.1-8b", "h100", 1, input_tokens=1024, output_tokens=30_000, concurrency=4, parallel={"tp": 1}, engine="vllm"
    )
    assert est.load.mixed_fraction < 1e-3
    assert est.tpot_at_load_s == pytest.approx(est.tpot_s, rel=1e-3)
    assert est.tpot_at_load_s >= est.tpot_s * (1 - 1e-9)


def test_a_static_batch_is_not_a_load():
    """8 prompts started together wait for each other's prefill (batch TTFT), where a newcomer under
    load runs its chunks beside the decodes; the e2e latency stays the static batch's."""
    est = api.estimate(
        "llama-3.1-8b", "h100", 1, input_tokens=20000, output_tokens=2000, concurrency=8, parallel={"tp": 1}, engine="vllm"
    )
    assert est.ttft_at_load_s < est.batch_ttft_s
    assert est.ttft_at_load_s > est.ttft_s  # the decodes beside its chunks cost something
    assert est.e2e_latency_s == pytest.approx(est.batch_prefill_s + 1999 * est.tpot_s, rel=1e-12)
    low, high = est.range_of("ttft_at_load_s")
    assert low < est.ttft_at_load_s < high


# --- the published format's load column ------------------------------------------------------------------------


def row(**cells) -> dict[str, str]:
    base = {c: "" for c in published.KNOWN_COLUMNS}
    base.update(
        id="X1",
        kind="ttft",
        model_ref="llama-3.1-8b",
        tool_hw="h100",
        gpus="1",
        tp="1",
        engine="vLLM (vllm bench serve)",
        input_len="20000",
        output_len="2000",
        concurrency="8",
        measured="1",
        unit="ms",
    )
    base.update(cells)
    return base


def test_the_load_column_chooses_the_figure():
    est = api.estimate(
        "llama-3.1-8b", "h100", 1, input_tokens=20000, output_tokens=2000, concurrency=8, parallel={"tp": 1}, engine="vllm"
    )
    predict = lambda **c: published.predict_row(row(**c), DATA).predicted  # noqa: E731
    assert predict(requests="150") == pytest.approx(est.ttft_at_load_s * 1e3, rel=1e-12)  # blank + requests: closed
    assert predict() == pytest.approx(est.batch_ttft_s * 1e3, rel=1e-12)  # blank, no requests: static
    assert predict(requests="150", load="static") == pytest.approx(est.batch_ttft_s * 1e3, rel=1e-12)
    assert predict(load="open") == pytest.approx(est.ttft_at_load_s * 1e3, rel=1e-12)
    assert predict(kind="tpot", load="closed") == pytest.approx(est.tpot_at_load_s * 1e3, rel=1e-12)
    assert predict(kind="tpot") == pytest.approx(est.tpot_s * 1e3, rel=1e-12)
    assert predict(kind="user_tps", unit="tokens/s", load="closed") == pytest.approx(1 / est.tpot_at_load_s, rel=1e-12)


@pytest.mark.parametrize(
    "cells, needle",
    [
        ({"load": "poisson"}, "load: unknown load 'poisson' (one of static, closed, open)"),
        ({"kind": "e2e_latency", "unit": "s", "load": "closed"}, "load: an e2e_latency row is not timed under a load"),
        ({"kind": "e2e_tps", "unit": "tokens/s", "load": "open"}, "load: an e2e_tps row is not timed under a load"),
    ],
)
def test_a_bad_load_is_one_line_naming_line_and_column(tmp_path, cells, needle):
    path = tmp_path / "mine.csv"
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(published.KNOWN_COLUMNS))
        writer.writeheader()
        writer.writerows([row(), row(**cells)])
    with pytest.raises(PlanInputError) as info:
        published.predict_all(str(path))
    text = str(info.value)
    assert "\n" not in text and text.startswith(f"{path}: line 3") and needle in text, text


def test_the_static_rows_keep_their_figures():
    """K01-K05 (a lone 128K prompt, a lone TTFT, static batches) give no requests: static, predicted
    from the idle instance's and the static batch's figures as before."""
    rows = {r["id"]: r for r in published.read_rows(str(DATA / "published_benchmarks_new.csv"))}
    for key in ("K01", "K02", "K03", "K04", "K05"):
        assert published.read_fields(rows[key]).load == "static", key
    k03 = published.predict_row(rows["K03"], DATA)
    est = api.estimate(
        "llama-2-70b",
        "h100",
        4,
        input_tokens=2048,
        output_tokens=1,
        concurrency=1,
        parallel={"tp": 4},
        precision={"weights": "fp8", "kv": "fp8"},
        engine="trtllm",
    )
    assert k03.predicted == pytest.approx(est.ttft_s * 1e3, rel=1e-12)


def test_the_estimate_report_carries_the_load_figures_with_their_range():
    from prfaas_plan.views.estimate import estimate_view

    est = api.estimate(
        "llama-3.1-8b", "h100", 1, input_tokens=20000, output_tokens=2000, concurrency=8, parallel={"tp": 1}, engine="vllm"
    )
    out = estimate_view(est).rows[0]
    assert out["ttft_at_load_s"] == round(est.ttft_at_load_s, 6)
    assert out["tpot_at_load_ms"] == round(est.tpot_at_load_s * 1e3, 4)
    assert out["ttft_at_load_low_s"] < out["ttft_at_load_s"] < out["ttft_at_load_high_s"]
    assert out["ttft_s"] == round(est.ttft_s, 6)  # the idle instance's TTFT stays as it was


def test_the_decodes_take_their_share_of_the_budget():
    """I = 128 = 2 P: alone it would take 2 chunks, but beside d_pre = 300 / 103 decodes (one token each)
    r = 64 - 300 / 103 = 61.09 is left, so 3 chunks: n = 3 and d = 4 x 100 / 103, not 4 x 100 / 102."""
    got = load_figures(model(GQA, DENSE), toy_instance(), Layout(), 128, 101, 4, 1000, CONTEXT)
    assert got.prefill_steps == 3
    assert got.decodes == pytest.approx(400 / 103, rel=REL)


def test_requests_beyond_memory_wait_for_a_place_under_load():
    """A closed load of more requests than memory holds: the memory-limited batch decodes and the rest
    wait, so TTFT at load grows with the requests in flight while TPOT at load stays that of the full
    batch; a published ttft row under such a load is predicted, not refused."""
    from prfaas_plan import api

    kw = dict(input_tokens=8192, output_tokens=1024)
    full = api.estimate("llama-3.1-8b", "h100", 1, **kw)
    more = api.estimate("llama-3.1-8b", "h100", 1, load_concurrency=4 * full.concurrency, **kw)
    assert more.load.concurrency == 4 * full.concurrency and more.concurrency == full.concurrency
    assert more.ttft_at_load_s > 2 * full.ttft_at_load_s
    assert more.tpot_at_load_s == pytest.approx(full.tpot_at_load_s, rel=0.05)


def test_a_closed_load_ttft_row_beyond_memory_is_predicted(tmp_path):
    from prfaas_plan import published

    path = tmp_path / "mine.csv"
    path.write_text(
        "id,kind,model_ref,tool_hw,gpus,input_len,output_len,concurrency,requests,load,measured,unit\n"
        "M1,ttft,llama-3.1-8b,h100,1,8192,1024,500,2000,closed,1.0,s\n"
    )
    (p,) = published.predict_all(str(path))
    assert p.predicted > 0 and "do not fit" in p.note
