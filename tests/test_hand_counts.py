"""Hand counts of the accounting and timing formulas on tiny made-up profiles.

Every expected value here is counted by hand from the architecture (the arithmetic is written
out next to it), by a brute-force loop, or is a property; none is copied from the code's output.
The profiles are tiny (hidden 64, vocabulary 100, 2 layers, a few heads of 8 to 32 dims) so
each figure can be checked on paper, and the hardware is made up with round numbers.

Dimensions used throughout (bytes per element: bf16 2, fp8 1, int4/fp4 0.5, fp32 4):
- gqa:    4 query heads, 2 KV heads, qk 16, v 8
- swa:    4 query heads, 2 KV heads, qk = v = 16, window 8
- mla:    2 heads, kv_lora_rank 32, rope 16+8 (nope 16, rope 8), v 16, q_lora_rank 24
- sparse: the mla above + indexer of 2 heads x 16 dims, top-k 8 keys, indexer keys in fp8
- linear: kda, 2 value heads, 1 key head, d_k 8, d_v 16, conv 48 channels x kernel 4
- dense FFN 128 gated; MoE 8 experts, top-2, expert width 32, 1 shared expert of width 48
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from prfaas_plan.accounting.kv import KvModel
from prfaas_plan.accounting.params import count_params, weight_bytes
from prfaas_plan.accounting.work import Work, decode_work, prefill_work
from prfaas_plan.profiles.hardware import load_hardware_profile
from prfaas_plan.profiles.model import load_model_profile
from prfaas_plan.timing.decode import decode_capacity
from prfaas_plan.timing.instance import Instance
from prfaas_plan.views.timing import decode_view

H, VOCAB = 64, 100
BF16, FP8, INT4, FP32 = 2, 1, 0.5, 4  # bytes per element
REL = 1e-12

GQA = {"type": "gqa", "num_query_heads": 4, "num_kv_heads": 2, "qk_head_dim": 16, "v_head_dim": 8}
SWA = {"type": "swa", "num_query_heads": 4, "num_kv_heads": 2, "qk_head_dim": 16, "window_tokens": 8}
MLA = {"type": "mla", "num_heads": 2, "kv_lora_rank": 32, "qk_rope_head_dim": 8, "qk_nope_head_dim": 16,
       "v_head_dim": 16, "q_lora_rank": 24}
SPARSE = {**MLA, "type": "sparse", "index_num_heads": 2, "index_head_dim": 16, "index_topk_tokens": 8,
          "index_key_dtype": "fp8"}
LINEAR = {"type": "linear", "kind": "kda", "num_heads": 2, "num_key_heads": 1, "key_head_dim": 8, "value_head_dim": 16,
          "conv_channels": 48, "conv_kernel": 4}
DENSE = {"type": "dense", "intermediate_size": 128}
MOE = {"type": "moe", "num_experts": 8, "top_k": 2, "expert_intermediate_size": 32, "shared_experts": 1,
       "shared_intermediate_size": 48}

# KV / state bytes per layer, by hand (bf16 KV, fp32 state, bf16 activations).
GQA_KV_PER_TOKEN = 2 * (16 + 8) * BF16  # kv heads x (qk + v) = 96
SWA_KV_PER_TOKEN = 2 * (16 + 16) * BF16  # 128, for at most 8 tokens
MLA_KV_PER_TOKEN = (32 + 8) * BF16  # latent + rope key = 80
SPARSE_KV_PER_TOKEN = (32 + 8) * BF16 + 16 * FP8  # latent in bf16 + indexer key in fp8 = 96
LINEAR_STATE = 2 * 8 * 16 * FP32 + 48 * (4 - 1) * BF16  # heads x dk x dv in fp32 + conv state in bf16 = 1312

# Matrix parameters per layer, by hand (h = 64).
GQA_PARAMS = 64 * 4 * 16 + 64 * 2 * 16 + 64 * 2 * 8 + 4 * 8 * 64  # q + k + v + o = 9216
SWA_PARAMS = 64 * 4 * 16 + 64 * 2 * 16 + 64 * 2 * 16 + 4 * 16 * 64  # 12288
MLA_PARAMS = (64 * 24 + 24 * 2 * (16 + 8)  # q_a + q_b
              + 64 * (32 + 8)  # kv_a (latent + rope key)
              + 32 * 2 * (16 + 16)  # kv_b (nope keys + values)
              + 2 * 16 * 64)  # o  = 9344
SPARSE_PARAMS = MLA_PARAMS + 24 * 2 * 16 + 64 * 16 + 64 * 2  # + indexer wq_b, wk, head weights = 11264
LINEAR_PARAMS = 64 * 1 * 8 + 64 * 1 * 8 + 64 * 2 * 16 + 2 * 16 * 64  # q + k + v + o = 5120
DENSE_PARAMS = 3 * 64 * 128  # gated: gate, up, down = 24576
EXPERT_PARAMS = 3 * 64 * 32  # one routed expert = 6144
MOE_ALWAYS = 1 * 3 * 64 * 48 + 64 * 8  # shared expert + router = 9728
ACT_PER_TOKEN = 8 * 64 * BF16  # 8 hidden-sized activation tensors per layer and token = 1024


def model(mixer=None, ffn=None, *, layers=2, dtypes=None, **top):
    """A tiny model profile of ``layers`` identical layers (no FFN or no mixer when None)."""
    doc = {
        "name": "tiny", "hidden_size": H, "vocab_size": VOCAB, "max_context_tokens": 1 << 20,
        "mixers": {"m": mixer} if mixer else {}, "ffns": {"f": ffn} if ffn else {},
        "layers": {"count": layers, "pattern": [f"{'m' if mixer else 'none'}:{'f' if ffn else 'none'}"]},
    }
    if dtypes:
        doc["dtypes"] = dtypes
    doc.update(top)
    return load_model_profile(doc)


def hardware(**changes):
    """Made-up chip: bf16 100 TFLOPS, fp8 200, 80 GB at 2 TB/s, 100 GB/s scale-up."""
    doc = {
        "name": "toy", "peak_tflops": {"bf16": 100, "fp8": 200}, "memory_gb": 80, "memory_bandwidth_tb_per_s": 2,
        "scale_up_gb_per_s": 100,
        "efficiency": {"matmul": 0.5, "attention": 0.25, "memory": 0.8, "network": 0.5, "prefill_overhead_s": 0,
                       "decode_step_overhead_s": 0, "memory_usable_fraction": 0.9},
    }
    for key, value in changes.items():
        if key in doc["efficiency"]:
            doc["efficiency"][key] = value
        else:
            doc[key] = value
    return load_hardware_profile(doc)


def keys_attended(length, window=None):
    """Brute force: sum over query positions i = 1..l of the keys position i attends, min(i, window)."""
    return sum(i if window is None else min(i, window) for i in range(1, length + 1))


def distinct_experts_by_enumeration(num_experts, top_k, tokens):
    """Brute force: mean number of distinct experts over every way ``tokens`` tokens can each pick
    ``top_k`` of ``num_experts`` (uniform routing), carried as the probability of each set of touched experts."""
    choices = [frozenset(c) for c in itertools.combinations(range(num_experts), top_k)]
    sets = {frozenset(): 1.0}
    for _ in range(tokens):
        nxt: dict[frozenset, float] = {}
        for touched, p in sets.items():
            for pick in choices:
                key = touched | pick
                nxt[key] = nxt.get(key, 0.0) + p / len(choices)
        sets = nxt
    return sum(len(s) * p for s, p in sets.items())


def assert_work(work, **expected):
    """Each named field of ``work`` equals its hand-counted array."""
    for field, value in expected.items():
        got = np.asarray(getattr(work, field), dtype=float)
        want = np.broadcast_to(np.asarray(value, dtype=float), got.shape)
        assert got == pytest.approx(want, rel=REL), field


def single_group(groups):
    """The one layer group of a 2-layer single-kind model, checking the lm head group follows."""
    assert [count for count, _ in groups] == [2, 1]
    return groups[0][1]


# 1. S_kv(l) per request ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("mixer", "per_token"), [(GQA, GQA_KV_PER_TOKEN), (MLA, MLA_KV_PER_TOKEN),
                                                  (SPARSE, SPARSE_KV_PER_TOKEN)],
                         ids=["gqa", "mla", "sparse"])
def test_kv_bytes_growing_kinds(mixer, per_token):
    """gqa 2 x (16+8) x 2 B, mla (32+8) x 2 B, sparse (32+8) x 2 B + 16 x 1 B (fp8 indexer key) per token and
    layer, times 2 layers and l tokens."""
    lengths = [1, 7, 1000]
    got = KvModel.of(model(mixer)).bytes_at(lengths)
    assert list(got) == pytest.approx([2 * per_token * l for l in lengths], rel=REL)
    assert per_token == {"gqa": 96, "mla": 80, "sparse": 96}[mixer["type"]]


def test_kv_bytes_sparse_indexer_uses_its_own_dtype():
    """The sparse indexer key is stored in index_key_dtype: fp8 (1 B) vs bf16 (2 B) differs by 16 B per token and
    layer; without index_key_dtype it falls back to the KV dtype (bf16)."""
    fp8 = KvModel.of(model(SPARSE)).bytes_at(100)
    bf16 = KvModel.of(model({**SPARSE, "index_key_dtype": None})).bytes_at(100)
    assert float(fp8) == 2 * 100 * ((32 + 8) * 2 + 16 * 1)
    assert float(bf16) == 2 * 100 * ((32 + 8) * 2 + 16 * 2)


def test_kv_bytes_swa_below_and_above_window():
    """swa: 2 kv heads x (16+16) x 2 B = 128 B per token and layer for min(l, 8) tokens, 2 layers."""
    lengths = [1, 5, 8, 9, 100, 10_000]
    got = KvModel.of(model(SWA)).bytes_at(lengths)
    assert list(got) == pytest.approx([2 * 128 * min(l, 8) for l in lengths], rel=REL)
    assert float(got[-1]) == 2 * 128 * 8  # capped: 2,048 B whatever the length


def test_kv_bytes_linear_state_is_fixed():
    """linear: 2 heads x 8 x 16 state in fp32 (1,024 B) + 48 conv channels x (4-1) in bf16 activations (288 B),
    per layer, whatever the length; an explicit state_dtype bf16 halves only the state part."""
    lengths = [1, 64, 100_000]
    got = KvModel.of(model(LINEAR)).bytes_at(lengths)
    assert list(got) == [2 * (2 * 8 * 16 * 4 + 48 * 3 * 2)] * 3  # 2,624
    bf16_state = KvModel.of(model({**LINEAR, "state_dtype": "bf16"})).bytes_at(5)
    assert float(bf16_state) == 2 * (2 * 8 * 16 * 2 + 48 * 3 * 2)  # 1,600
    fp32_act = KvModel.of(model(LINEAR, dtypes={"activations": "fp32"})).bytes_at(5)
    assert float(fp32_act) == 2 * (2 * 8 * 16 * 4 + 48 * 3 * 4)  # conv state follows the activation dtype


def test_kv_bytes_hybrid_stack_sums_layers():
    """A 4-layer stack gqa, swa, mla, linear: S_kv(l) = (96 + 80) l + 128 min(l, 8) + 1,312."""
    doc = {
        "name": "hybrid", "hidden_size": H, "vocab_size": VOCAB, "max_context_tokens": 1 << 20,
        "mixers": {"g": GQA, "s": SWA, "a": MLA, "r": LINEAR},
        "layers": {"count": 4, "pattern": ["g", "s", "a", "r"]},
    }
    kv = KvModel.of(load_model_profile(doc))
    for l in (3, 8, 500):
        assert float(kv.bytes_at(l)) == (96 + 80) * l + 128 * min(l, 8) + 1312
    assert kv.growing_bytes_per_token == 96 + 80
    assert kv.window_cap_bytes == 128 * 8
    assert kv.fixed_bytes == 1312


# 2. Parameter counts and weight bytes -------------------------------------------------------------------------


@pytest.mark.parametrize(("mixer", "params"), [
    (GQA, 9216), ({**GQA, "output_gate": True}, 9216 + 64 * 4 * 8),
    (SWA, 12288), (MLA, 9344), ({**MLA, "q_lora_rank": None}, 9344 - (64 * 24 + 24 * 2 * 24) + 64 * 2 * 24),
    (SPARSE, 11264), ({**SPARSE, "q_lora_rank": None}, 9728 + 64 * 2 * 16 + 64 * 16 + 64 * 2),
    (LINEAR, 5120), ({**LINEAR, "output_gate": True}, 5120 + 64 * 2 * 16),
], ids=["gqa", "gqa-gate", "swa", "mla", "mla-no-qlora", "sparse", "sparse-no-qlora", "linear", "linear-gate"])
def test_mixer_params(mixer, params):
    """Matrix parameters of each mixer (projections written out at the top of the file) x 2 layers, plus the
    untied embeddings 2 x 100 x 64; total = active (no experts)."""
    assert (GQA_PARAMS, SWA_PARAMS, MLA_PARAMS, SPARSE_PARAMS, LINEAR_PARAMS) == (9216, 12288, 9344, 11264, 5120)
    counts = count_params(model(mixer))
    assert counts.embedding == 2 * 100 * 64
    assert counts.layers_total == 2 * params
    assert counts.layers_active == 2 * params
    assert counts.routed_expert_total == 0
    assert counts.total == 2 * 100 * 64 + 2 * params


@pytest.mark.parametrize(("ffn", "total", "active", "routed"), [
    (DENSE, 3 * 64 * 128, 3 * 64 * 128, 0),
    ({**DENSE, "gated": False}, 2 * 64 * 128, 2 * 64 * 128, 0),
    (MOE, 3 * 64 * 48 + 64 * 8 + 8 * 3 * 64 * 32, 3 * 64 * 48 + 64 * 8 + 2 * 3 * 64 * 32, 8 * 3 * 64 * 32),
    ({**MOE, "shared_experts": 2, "shared_intermediate_size": None},  # 2 shared experts of the expert width
     2 * 3 * 64 * 32 + 64 * 8 + 8 * 3 * 64 * 32, 2 * 3 * 64 * 32 + 64 * 8 + 2 * 3 * 64 * 32, 8 * 3 * 64 * 32),
    ({**MOE, "gated": False, "shared_experts": 0},
     64 * 8 + 8 * 2 * 64 * 32, 64 * 8 + 2 * 2 * 64 * 32, 8 * 2 * 64 * 32),
], ids=["dense", "dense-ungated", "moe", "moe-2-shared", "moe-ungated-no-shared"])
def test_ffn_params(ffn, total, active, routed):
    """FFN parameters of an FFN-only 2-layer stack: (3 if gated else 2) x h x width per FFN or expert, the router
    h x experts, shared experts always active, top-2 of 8 routed experts active; tied embeddings 100 x 64."""
    counts = count_params(model(None, ffn, tie_word_embeddings=True))
    assert counts.embedding == 100 * 64
    assert counts.layers_total == 2 * total
    assert counts.layers_active == 2 * active
    assert counts.routed_expert_total == 2 * routed
    assert counts.active == 100 * 64 + 2 * active


@pytest.mark.parametrize("expert_dtype", ["int4", "fp4"])
def test_weight_bytes_experts_in_another_dtype(expert_dtype):
    """gqa + moe, 2 layers, untied: routed experts 2 x 8 x 6,144 at 0.5 B, everything else (embeddings 12,800,
    attention 2 x 9,216, shared + router 2 x 9,728) at bf16 2 B."""
    routed = 2 * 8 * 6144
    rest = 2 * 100 * 64 + 2 * 9216 + 2 * 9728
    m = model(GQA, MOE, dtypes={"weights": "bf16", "experts": expert_dtype})
    assert weight_bytes(m) == routed * 0.5 + rest * 2  # 49,152 + 101,376 = 150,528
    assert weight_bytes(model(GQA, MOE)) == (routed + rest) * 2  # no experts dtype: all bf16


# 3. Prefill work -----------------------------------------------------------------------------------------------


def test_prefill_work_gqa_dense_and_lm_head():
    """gqa + dense FFN: matmul 2 l (9,216 + 24,576); causal attention 2 x 4 heads x (16+8) per (query, key) pair
    over l(l+1)/2 pairs; every weight once in bf16; KV written 96 l + 8 activations 1,024 l; two all-reduces of
    l x 64 bf16. The lm head: logits of the last token only."""
    lengths = [1, 7, 20]
    l = np.array(lengths, float)
    groups = prefill_work(model(GQA, DENSE), lengths)
    assert_work(single_group(groups),
                matmul_flops=2 * l * (9216 + 24576),
                expert_flops=0,
                attention_flops=[2 * 4 * (16 + 8) * keys_attended(n) for n in lengths],
                weight_bytes=(9216 + 24576) * 2,
                other_bytes=96 * l + 8 * l * 64 * 2,
                allreduce_bytes=2 * l * 64 * 2)
    assert_work(groups[-1][1], matmul_flops=2 * 1 * 64 * 100, expert_flops=0, attention_flops=0,
                weight_bytes=64 * 100 * 2, other_bytes=1 * 100 * 4, allreduce_bytes=0)
    assert [keys_attended(n) for n in lengths] == [n * (n + 1) // 2 for n in lengths]  # the closed form


def test_prefill_work_swa_windowed():
    """swa (no FFN), window 8: attention 2 x 4 x (16+16) x sum_i min(i, 8) (l = 20: 36 + 12 x 8 = 132 keys, not
    210); KV written 128 x min(l, 8), not 128 l; one all-reduce."""
    lengths = [5, 8, 20]
    l = np.array(lengths, float)
    work = single_group(prefill_work(model(SWA), lengths))
    assert keys_attended(20, 8) == 36 + 12 * 8
    assert_work(work,
                matmul_flops=2 * l * 12288,
                expert_flops=0,
                attention_flops=[2 * 4 * 32 * keys_attended(n, 8) for n in lengths],
                weight_bytes=12288 * 2,
                other_bytes=[128 * min(n, 8) + 1024 * n for n in lengths],
                allreduce_bytes=l * 64 * 2)


def test_prefill_work_mla():
    """mla: matmul 2 l 9,344; uncompressed attention 2 x 2 heads x (16 + 8 + 16) per causal pair; KV 80 l."""
    lengths = [1, 7, 20]
    l = np.array(lengths, float)
    work = single_group(prefill_work(model(MLA), lengths))
    assert_work(work,
                matmul_flops=2 * l * 9344,
                attention_flops=[2 * 2 * (16 + 8 + 16) * keys_attended(n) for n in lengths],
                weight_bytes=9344 * 2,
                other_bytes=80 * l + 1024 * l,
                allreduce_bytes=l * 64 * 2)


def test_prefill_work_sparse():
    """sparse: the indexer 2 x 2 heads x 16 over all l(l+1)/2 causal pairs + MLA 2 x 2 x 40 over sum_i min(i, 8)
    keys; KV 96 l (latent bf16 + fp8 indexer key)."""
    lengths = [5, 8, 20]
    l = np.array(lengths, float)
    work = single_group(prefill_work(model(SPARSE), lengths))
    assert_work(work,
                matmul_flops=2 * l * 11264,
                attention_flops=[2 * 2 * 16 * keys_attended(n) + 2 * 2 * 40 * keys_attended(n, 8) for n in lengths],
                weight_bytes=11264 * 2,
                other_bytes=96 * l + 1024 * l,
                allreduce_bytes=l * 64 * 2)


def test_prefill_work_linear():
    """linear (chunk C = 64 by default): l x 2 heads x (4 x 8 x 16 + 64 x (8 + 16)) + 2 l x 48 x 4 conv FLOPs;
    state written once, 1,312 B per layer; chunk_tokens 4 changes only the chunk term."""
    lengths = [1, 7, 20]
    l = np.array(lengths, float)
    work = single_group(prefill_work(model(LINEAR), lengths))
    assert_work(work,
                matmul_flops=2 * l * 5120,
                attention_flops=l * 2 * (4 * 8 * 16 + 64 * (8 + 16)) + 2 * l * 48 * 4,
                weight_bytes=5120 * 2,
                other_bytes=1312 + 1024 * l,
                allreduce_bytes=l * 64 * 2)
    chunk4 = single_group(prefill_work(model({**LINEAR, "chunk_tokens": 4}), lengths))
    assert_work(chunk4, attention_flops=l * 2 * (4 * 8 * 16 + 4 * (8 + 16)) + 2 * l * 48 * 4)


def test_expected_distinct_experts_by_enumeration():
    """E (1 - (1 - k/E)^n), the distinct experts n tokens touch, equals the mean over every routing of n tokens
    to 2 of 8 experts (28^n routings, n = 1..5)."""
    for n in (1, 2, 3, 4, 5):
        assert distinct_experts_by_enumeration(8, 2, n) == pytest.approx(8 * (1 - (1 - 2 / 8) ** n), rel=1e-12)


def test_prefill_work_moe():
    """gqa + moe (experts fp8, rest bf16): matmul 2 l (9,216 + 9,728 shared + router), routed-expert FLOPs
    2 l x 2 x 6,144 kept apart; weights: dense parts once at 2 B + 8 (1 - (3/4)^l) distinct experts x 6,144 at
    1 B (l = 1: exactly top-2 experts)."""
    lengths = [1, 3, 20]
    l = np.array(lengths, float)
    work = single_group(prefill_work(model(GQA, MOE, dtypes={"experts": "fp8"}), lengths))
    distinct = [distinct_experts_by_enumeration(8, 2, 1), distinct_experts_by_enumeration(8, 2, 3),
                8 * (1 - 0.75 ** 20)]
    assert distinct[0] == pytest.approx(2)
    assert_work(work,
                matmul_flops=2 * l * (9216 + 9728),
                expert_flops=2 * l * 2 * 6144,
                attention_flops=[2 * 4 * 24 * keys_attended(n) for n in lengths],
                weight_bytes=[(9216 + 9728) * 2 + d * 6144 * 1 for d in distinct],
                other_bytes=96 * l + 1024 * l,
                allreduce_bytes=2 * l * 64 * 2)


# 4. Decode work --------------------------------------------------------------------------------------------------

BATCHES = [1, 4]


def test_decode_work_gqa_reads_full_context():
    """gqa + dense at context 50: 2 x 4 x 24 FLOPs and 96 B of KV read per cached key and request, 1,024 B of
    activations per request, matmul 2 B (9,216 + 24,576), weights read once."""
    b = np.array(BATCHES, float)
    work = single_group(decode_work(model(GQA, DENSE), BATCHES, 50))
    assert_work(work,
                matmul_flops=2 * b * (9216 + 24576),
                expert_flops=0,
                attention_flops=2 * 4 * (16 + 8) * 50 * b,
                weight_bytes=(9216 + 24576) * 2,
                other_bytes=b * 96 * 50 + b * 1024,
                allreduce_bytes=2 * b * 64 * 2)


@pytest.mark.parametrize(("context", "keys"), [(5, 5), (8, 8), (100, 8)])
def test_decode_work_swa_reads_window(context, keys):
    """swa: a step reads min(context, 8) keys per request: 2 x 4 x 32 FLOPs and 128 B per key."""
    b = np.array(BATCHES, float)
    work = single_group(decode_work(model(SWA), BATCHES, context))
    assert_work(work, attention_flops=2 * 4 * 32 * keys * b, other_bytes=b * 128 * keys + b * 1024)


def test_decode_work_mla_absorbed():
    """mla at context 50: absorbed form 2 x 2 heads x (2 x 32 + 8) FLOPs and (32 + 8) x 2 B per cached key."""
    b = np.array(BATCHES, float)
    work = single_group(decode_work(model(MLA), BATCHES, 50))
    assert_work(work, matmul_flops=2 * b * 9344, attention_flops=2 * 2 * (2 * 32 + 8) * 50 * b,
                other_bytes=b * 80 * 50 + b * 1024)


@pytest.mark.parametrize(("context", "topk_keys"), [(5, 5), (100, 8)])
def test_decode_work_sparse_topk(context, topk_keys):
    """sparse: MLA (absorbed, 2 x 2 x 72 FLOPs, 80 B) over min(context, 8) latents + the indexer (2 x 2 x 16 FLOPs,
    16 B fp8 key) over every cached key."""
    b = np.array(BATCHES, float)
    work = single_group(decode_work(model(SPARSE), BATCHES, context))
    assert_work(work,
                attention_flops=b * (2 * 2 * 72 * topk_keys + 2 * 2 * 16 * context),
                other_bytes=b * (80 * topk_keys + 16 * context) + b * 1024)


@pytest.mark.parametrize("context", [5, 50_000])
def test_decode_work_linear_reads_and_writes_state(context):
    """linear: 4 x 2 heads x 8 x 16 + 2 x 48 x 4 FLOPs per request, and the 1,312 B state read and written
    (2 x 1,312 B per request) at any context."""
    b = np.array(BATCHES, float)
    work = single_group(decode_work(model(LINEAR), BATCHES, context))
    assert_work(work, attention_flops=b * (4 * 2 * 8 * 16 + 2 * 48 * 4), other_bytes=b * 2 * 1312 + b * 1024)


def test_decode_work_moe_distinct_experts_of_batch():
    """gqa + moe, experts int4: a step reads the 8 (1 - (3/4)^B) distinct experts the batch touches (B = 1: 2,
    B = 4: 5.46875, B = 16: 7.92), not top-2, at 0.5 B; the dense parts once at 2 B."""
    batches = [1, 4, 16]
    b = np.array(batches, float)
    work = single_group(decode_work(model(GQA, MOE, dtypes={"experts": "int4"}), batches, 10))
    distinct = np.array([2.0, 8 * (1 - 81 / 256), 8 * (1 - 0.75 ** 16)])
    assert distinct[1] == pytest.approx(distinct_experts_by_enumeration(8, 2, 4), rel=1e-12)
    assert_work(work,
                matmul_flops=2 * b * (9216 + 9728),
                expert_flops=2 * b * 2 * 6144,
                weight_bytes=(9216 + 9728) * 2 + distinct * 6144 * 0.5)


# 5. Layer roofline -----------------------------------------------------------------------------------------------


def work_of(matmul=0.0, expert=0.0, attention=0.0, weights=0.0, other=0.0, allreduce=0.0):
    """A one-element Work with the given FLOPs and bytes."""
    return Work(*(np.array([x], float) for x in (matmul, expert, attention, weights, other, allreduce)))


def test_layer_seconds_compute_bound():
    """1e12 matmul + 1e11 attention FLOPs, 1e9 B, 1e8 B all-reduced. N = 1: 1e12 / (100e12 x 0.5) + 1e11 /
    (100e12 x 0.25) = 0.024 s, no all-reduce; N = 4: 0.006 s + 2 x 3/4 x 1e8 / (100e9 x 0.5) = 0.003 s; fp8
    weights use the 200 TFLOPS peak: 1e12 / (200e12 x 0.5) + 0.004 = 0.014 s."""
    hw = hardware()
    work = work_of(matmul=1e12, attention=1e11, weights=1e9, allreduce=1e8)
    assert Instance(hw, 1).layer_seconds(work, "bf16")[0] == pytest.approx(0.02 + 0.004, rel=REL)
    assert Instance(hw, 4).layer_seconds(work, "bf16")[0] == pytest.approx((0.02 + 0.004) / 4 + 0.003, rel=REL)
    assert Instance(hw, 1).layer_seconds(work, "fp8")[0] == pytest.approx(0.01 + 0.004, rel=REL)
    assert Instance(hw, 4).layer_seconds(work, "fp8")[0] == pytest.approx((0.01 + 0.004) / 4 + 0.003, rel=REL)


def test_layer_seconds_memory_bound():
    """1e9 FLOPs against 8e9 + 8e9 B: memory 16e9 / (2e12 x 0.8) = 0.01 s at N = 1; N = 4: 0.0025 s + the
    all-reduce of 4e8 B, 2 x 3/4 x 4e8 / 5e10 = 0.012 s."""
    hw = hardware()
    work = work_of(matmul=1e9, weights=8e9, other=8e9, allreduce=4e8)
    assert Instance(hw, 1).layer_seconds(work, "bf16")[0] == pytest.approx(0.01, rel=REL)
    assert Instance(hw, 4).layer_seconds(work, "bf16")[0] == pytest.approx(0.0025 + 0.012, rel=REL)


def test_layer_seconds_expert_dtype_fallback():
    """Routed-expert FLOPs run at the experts' peak: fp4 falls back to the chip's fp8 (200 TFLOPS, no fp4 peak),
    weight-only int4 runs at bf16 (100 TFLOPS): 1e12 FLOPs take 0.01 s and 0.02 s at 0.5 efficiency."""
    hw = hardware()
    work = work_of(expert=1e12)
    assert Instance(hw, 1).layer_seconds(work, "bf16", "fp4")[0] == pytest.approx(1e12 / (200e12 * 0.5), rel=REL)
    assert Instance(hw, 1).layer_seconds(work, "bf16", "int4")[0] == pytest.approx(1e12 / (100e12 * 0.5), rel=REL)
    assert Instance(hw, 1).layer_seconds(work, "fp8")[0] == pytest.approx(1e12 / (200e12 * 0.5), rel=REL)


# 6. Decode capacity ----------------------------------------------------------------------------------------------

DECODE_CONTEXT = 1000
DECODE_OVERHEAD_S = 0.002


def decode_hardware():
    """A slow small chip so the tiny model is memory-bound: 0.01 GB at 0.001 TB/s, 2 ms per decode step."""
    return hardware(memory_gb=0.01, memory_bandwidth_tb_per_s=0.001, decode_step_overhead_s=DECODE_OVERHEAD_S)


def hand_decode_step_s(batch):
    """T_decode(B) of gqa + dense (2 layers, bf16) at context 1,000 on 2 decode_hardware chips, term by term."""
    n = 2
    mm_rate, att_rate = n * 100e12 * 0.5, n * 100e12 * 0.25
    mem_rate, net_rate, ring = n * 0.001e12 * 0.8, 100e9 * 0.5, 2 * (n - 1) / n
    compute = 2 * batch * (9216 + 24576) / mm_rate + 2 * 4 * 24 * DECODE_CONTEXT * batch / att_rate
    memory = ((9216 + 24576) * 2 + batch * 96 * DECODE_CONTEXT + batch * 8 * 64 * 2) / mem_rate
    comm = 2 * batch * 64 * 2 * ring / net_rate
    head = max(2 * batch * 64 * 100 / mm_rate, (64 * 100 * 2 + batch * 100 * 4) / mem_rate)
    return DECODE_OVERHEAD_S + 2 * (max(compute, memory) + comm) + head


def test_decode_capacity_memory_limit():
    """Usable 2 x 0.01e9 x 0.9 = 1.8e7 B; weights (2 x 100 x 64 + 2 x 33,792) x 2 B = 160,768 B; S_kv(1,000) =
    2 x 96 x 1,000 = 192,000 B; BS_max = floor((1.8e7 - 160,768) / 192,000) = 92; step and tokens/s at 92."""
    cap = decode_capacity(model(GQA, DENSE), Instance(decode_hardware(), 2), DECODE_CONTEXT)
    usable = 2 * 0.01 * 1e9 * 0.9
    weights = (2 * 100 * 64 + 2 * (9216 + 24576)) * 2
    kv = 2 * 96 * DECODE_CONTEXT
    assert cap.usable_memory_bytes == pytest.approx(usable, rel=REL)
    assert cap.weight_bytes == weights == 160_768
    assert cap.kv_bytes_per_request == kv
    assert cap.bs_max_memory == math.floor((usable - weights) / kv) == 92
    assert (cap.batch_size, cap.limited_by) == (92, "memory")
    assert cap.step_s == pytest.approx(hand_decode_step_s(92), rel=1e-9)
    assert cap.tokens_per_s == pytest.approx(92 / hand_decode_step_s(92), rel=1e-9)


def test_decode_capacity_tpot_limit():
    """A TPOT limit halfway between the hand-counted T_decode(40) and T_decode(41) (both memory-bound, about 7 ms)
    gives the largest batch with T <= TPOT, 40 (brute force over B = 1..92); max_batch 10 caps it at 10."""
    hand = [hand_decode_step_s(b) for b in range(1, 93)]
    tpot_ms = 1e3 * (hand[39] + hand[40]) / 2
    expected = max(b for b in range(1, 93) if hand[b - 1] * 1e3 <= tpot_ms)
    assert expected == 40
    m, inst = model(GQA, DENSE), Instance(decode_hardware(), 2)
    cap = decode_capacity(m, inst, DECODE_CONTEXT, tpot_ms=tpot_ms)
    assert (cap.batch_size, cap.limited_by, cap.bs_max_memory) == (40, "tpot", 92)
    assert cap.step_s == pytest.approx(hand_decode_step_s(40), rel=1e-9)
    capped = decode_capacity(m, inst, DECODE_CONTEXT, max_batch=10)
    assert (capped.batch_size, capped.limited_by) == (10, "max_batch")


# 7. Decode report units ------------------------------------------------------------------------------------------


def test_decode_view_units():
    """weight_gb is decimal GB and kv_per_request_mib binary MiB. Hidden 1,024, vocab 2^18 untied: embeddings
    2 x 2^28 params x 2 B = 2^30 B, + 2 gqa layers of 1,024 x (64 + 32 + 16 + 32) params x 2 B = 589,824 B, so
    1,074,331,648 B = 1.074 GB (1.001 GiB); S_kv(16,384) = 2 x 96 x 16,384 = 3,145,728 B = 3.0 MiB (3.146 MB)."""
    m = model(GQA, hidden_size=1024, vocab_size=1 << 18)
    weights = 2 * (1 << 18) * 1024 * 2 + 2 * 1024 * (4 * 16 + 2 * 16 + 2 * 8 + 4 * 8) * 2
    assert weights == 1_074_331_648
    cap = decode_capacity(m, Instance(hardware(), 1), 16_384, max_batch=4)
    row = decode_view(cap, None).rows[0]
    assert row["weight_gb"] == pytest.approx(weights / 1e9, abs=5e-4)
    assert row["weight_gb"] == pytest.approx(1.074, abs=1e-9)
    assert row["kv_per_request_mib"] == pytest.approx(2 * 96 * 16_384 / 2**20, abs=5e-4)
    assert row["kv_per_request_mib"] == pytest.approx(3.0, abs=1e-9)
