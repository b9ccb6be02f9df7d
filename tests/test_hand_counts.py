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
from prfaas_plan.timing import collectives
from prfaas_plan.timing.cost import Engine, stage_cost
from prfaas_plan.timing.decode import decode_capacity
from prfaas_plan.timing.instance import Instance
from prfaas_plan.timing.layout import Layout
from prfaas_plan.views.timing import decode_view

H, VOCAB = 64, 100
BF16, FP8, INT4, FP32 = 2, 1, 0.5, 4  # bytes per element
REL = 1e-12

GQA = {"type": "gqa", "num_query_heads": 4, "num_kv_heads": 2, "qk_head_dim": 16, "v_head_dim": 8}
SWA = {"type": "swa", "num_query_heads": 4, "num_kv_heads": 2, "qk_head_dim": 16, "window_tokens": 8}
MLA = {
    "type": "mla",
    "num_heads": 2,
    "kv_lora_rank": 32,
    "qk_rope_head_dim": 8,
    "qk_nope_head_dim": 16,
    "v_head_dim": 16,
    "q_lora_rank": 24,
}
SPARSE = {**MLA, "type": "sparse", "index_num_heads": 2, "index_head_dim": 16, "index_topk_tokens": 8, "index_key_dtype": "fp8"}
LINEAR = {
    "type": "linear",
    "kind": "kda",
    "num_heads": 2,
    "num_key_heads": 1,
    "key_head_dim": 8,
    "value_head_dim": 16,
    "conv_channels": 48,
    "conv_kernel": 4,
}
DENSE = {"type": "dense", "intermediate_size": 128}
MOE = {
    "type": "moe",
    "num_experts": 8,
    "top_k": 2,
    "expert_intermediate_size": 32,
    "shared_experts": 1,
    "shared_intermediate_size": 48,
}

# KV / state bytes per layer, by hand (bf16 KV, fp32 state, bf16 activations).
GQA_KV_PER_TOKEN = 2 * (16 + 8) * BF16  # kv heads x (qk + v) = 96
SWA_KV_PER_TOKEN = 2 * (16 + 16) * BF16  # 128, for at most 8 tokens
MLA_KV_PER_TOKEN = (32 + 8) * BF16  # latent + rope key = 80
SPARSE_KV_PER_TOKEN = (32 + 8) * BF16 + 16 * FP8  # latent in bf16 + indexer key in fp8 = 96
LINEAR_STATE = 2 * 8 * 16 * FP32 + 48 * (4 - 1) * BF16  # heads x dk x dv in fp32 + conv state in bf16 = 1312

# Matrix parameters per layer, by hand (h = 64).
GQA_PARAMS = 64 * 4 * 16 + 64 * 2 * 16 + 64 * 2 * 8 + 4 * 8 * 64  # q + k + v + o = 9216
SWA_PARAMS = 64 * 4 * 16 + 64 * 2 * 16 + 64 * 2 * 16 + 4 * 16 * 64  # 12288
MLA_PARAMS = (
    64 * 24
    + 24 * 2 * (16 + 8)  # q_a + q_b
    + 64 * (32 + 8)  # kv_a (latent + rope key)
    + 32 * 2 * (16 + 16)  # kv_b (nope keys + values)
    + 2 * 16 * 64
)  # o  = 9344
SPARSE_PARAMS = MLA_PARAMS + 24 * 2 * 16 + 64 * 16 + 64 * 2  # + indexer wq_b, wk, head weights = 11264
LINEAR_PARAMS = 64 * 1 * 8 + 64 * 1 * 8 + 64 * 2 * 16 + 2 * 16 * 64  # q + k + v + o = 5120
DENSE_PARAMS = 3 * 64 * 128  # gated: gate, up, down = 24576
EXPERT_PARAMS = 3 * 64 * 32  # one routed expert = 6144
MOE_ALWAYS = 1 * 3 * 64 * 48 + 64 * 8  # shared expert + router = 9728
ACT_PER_TOKEN = 8 * 64 * BF16  # 8 hidden-sized activation tensors per layer and token = 1024


def model(mixer=None, ffn=None, *, layers=2, dtypes=None, **top):
    """A tiny model profile of ``layers`` identical layers (no FFN or no mixer when None)."""
    doc = {
        "name": "tiny",
        "hidden_size": H,
        "vocab_size": VOCAB,
        "max_context_tokens": 1 << 20,
        "mixers": {"m": mixer} if mixer else {},
        "ffns": {"f": ffn} if ffn else {},
        "layers": {"count": layers, "pattern": [f"{'m' if mixer else 'none'}:{'f' if ffn else 'none'}"]},
    }
    if dtypes:
        doc["dtypes"] = dtypes
    doc.update(top)
    return load_model_profile(doc)


def hardware(**changes):
    """Made-up chip: bf16 100 TFLOPS, fp8 200, 80 GB at 2 TB/s, 100 GB/s scale-up (the schema's 2 us per latency
    step); no GEMM shape term and no kernel cost unless a test sets them."""
    doc = {
        "name": "toy",
        "peak_tflops": {"bf16": 100, "fp8": 200},
        "memory_gib": 80,
        "memory_bandwidth_tb_per_s": 2,
        "scale_up_gb_per_s": 100,
        "efficiency": {
            "matmul": 0.5,
            "attention": 0.25,
            "memory": 0.8,
            "network": 0.5,
            "nic": 0.9,
            "prefill_overhead_s": 0,
            "decode_step_overhead_s": 0,
            "memory_usable_fraction": 0.9,
            "matmul_k0": 0.0,
            "matmul_m0": 0.0,
            "kernel_overhead_us": 0.0,
        },
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


@pytest.mark.parametrize(
    ("mixer", "per_token"),
    [(GQA, GQA_KV_PER_TOKEN), (MLA, MLA_KV_PER_TOKEN), (SPARSE, SPARSE_KV_PER_TOKEN)],
    ids=["gqa", "mla", "sparse"],
)
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
        "name": "hybrid",
        "hidden_size": H,
        "vocab_size": VOCAB,
        "max_context_tokens": 1 << 20,
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


@pytest.mark.parametrize(
    ("mixer", "params"),
    [
        (GQA, 9216),
        ({**GQA, "output_gate": True}, 9216 + 64 * 4 * 8),
        (SWA, 12288),
        (MLA, 9344),
        ({**MLA, "q_lora_rank": None}, 9344 - (64 * 24 + 24 * 2 * 24) + 64 * 2 * 24),
        (SPARSE, 11264),
        ({**SPARSE, "q_lora_rank": None}, 9728 + 64 * 2 * 16 + 64 * 16 + 64 * 2),
        (LINEAR, 5120),
        ({**LINEAR, "output_gate": True}, 5120 + 64 * 2 * 16),
    ],
    ids=["gqa", "gqa-gate", "swa", "mla", "mla-no-qlora", "sparse", "sparse-no-qlora", "linear", "linear-gate"],
)
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


@pytest.mark.parametrize(
    ("ffn", "total", "active", "routed"),
    [
        (DENSE, 3 * 64 * 128, 3 * 64 * 128, 0),
        ({**DENSE, "gated": False}, 2 * 64 * 128, 2 * 64 * 128, 0),
        (MOE, 3 * 64 * 48 + 64 * 8 + 8 * 3 * 64 * 32, 3 * 64 * 48 + 64 * 8 + 2 * 3 * 64 * 32, 8 * 3 * 64 * 32),
        (
            {**MOE, "shared_experts": 2, "shared_intermediate_size": None},  # 2 shared experts of the expert width
            2 * 3 * 64 * 32 + 64 * 8 + 8 * 3 * 64 * 32,
            2 * 3 * 64 * 32 + 64 * 8 + 2 * 3 * 64 * 32,
            8 * 3 * 64 * 32,
        ),
        ({**MOE, "gated": False, "shared_experts": 0}, 64 * 8 + 8 * 2 * 64 * 32, 64 * 8 + 2 * 2 * 64 * 32, 8 * 2 * 64 * 32),
    ],
    ids=["dense", "dense-ungated", "moe", "moe-2-shared", "moe-ungated-no-shared"],
)
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
    assert_work(
        single_group(groups),
        matmul_flops=2 * l * (9216 + 24576),
        expert_flops=0,
        attention_flops=[2 * 4 * (16 + 8) * keys_attended(n) for n in lengths],
        weight_bytes=(9216 + 24576) * 2,
        other_bytes=96 * l + 8 * l * 64 * 2,
        allreduce_bytes=2 * l * 64 * 2,
    )
    assert_work(
        groups[-1][1],
        matmul_flops=2 * 1 * 64 * 100,
        expert_flops=0,
        attention_flops=0,
        weight_bytes=64 * 100 * 2,
        other_bytes=1 * 100 * 4,
        allreduce_bytes=0,
    )
    assert [keys_attended(n) for n in lengths] == [n * (n + 1) // 2 for n in lengths]  # the closed form


def test_prefill_work_swa_windowed():
    """swa (no FFN), window 8: attention 2 x 4 x (16+16) x sum_i min(i, 8) (l = 20: 36 + 12 x 8 = 132 keys, not
    210); KV written 128 x min(l, 8), not 128 l; one all-reduce."""
    lengths = [5, 8, 20]
    l = np.array(lengths, float)
    work = single_group(prefill_work(model(SWA), lengths))
    assert keys_attended(20, 8) == 36 + 12 * 8
    assert_work(
        work,
        matmul_flops=2 * l * 12288,
        expert_flops=0,
        attention_flops=[2 * 4 * 32 * keys_attended(n, 8) for n in lengths],
        weight_bytes=12288 * 2,
        other_bytes=[128 * min(n, 8) + 1024 * n for n in lengths],
        allreduce_bytes=l * 64 * 2,
    )


def test_prefill_work_mla():
    """mla: matmul 2 l 9,344; uncompressed attention 2 x 2 heads x (16 + 8 + 16) per causal pair; KV 80 l."""
    lengths = [1, 7, 20]
    l = np.array(lengths, float)
    work = single_group(prefill_work(model(MLA), lengths))
    assert_work(
        work,
        matmul_flops=2 * l * 9344,
        attention_flops=[2 * 2 * (16 + 8 + 16) * keys_attended(n) for n in lengths],
        weight_bytes=9344 * 2,
        other_bytes=80 * l + 1024 * l,
        allreduce_bytes=l * 64 * 2,
    )


def test_prefill_work_sparse():
    """sparse: the indexer 2 x 2 heads x 16 over all l(l+1)/2 causal pairs + MLA in its absorbed (MQA) form,
    2 x 2 heads x (2 x 32 + 8), over sum_i min(i, 8) keys; KV 96 l (latent bf16 + fp8 indexer key)."""
    lengths = [5, 8, 20]
    l = np.array(lengths, float)
    work = single_group(prefill_work(model(SPARSE), lengths))
    assert_work(
        work,
        matmul_flops=2 * l * 11264,
        attention_flops=[2 * 2 * 16 * keys_attended(n) + 2 * 2 * (2 * 32 + 8) * keys_attended(n, 8) for n in lengths],
        weight_bytes=11264 * 2,
        other_bytes=96 * l + 1024 * l,
        allreduce_bytes=l * 64 * 2,
    )


def test_prefill_work_linear():
    """linear (chunk C = 64 by default): l x 2 heads x (4 x 8 x 16 + 64 x (8 + 16)) + 2 l x 48 x 4 conv FLOPs;
    state written once, 1,312 B per layer; chunk_tokens 4 changes only the chunk term."""
    lengths = [1, 7, 20]
    l = np.array(lengths, float)
    work = single_group(prefill_work(model(LINEAR), lengths))
    assert_work(
        work,
        matmul_flops=2 * l * 5120,
        attention_flops=l * 2 * (4 * 8 * 16 + 64 * (8 + 16)) + 2 * l * 48 * 4,
        weight_bytes=5120 * 2,
        other_bytes=1312 + 1024 * l,
        allreduce_bytes=l * 64 * 2,
    )
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
    distinct = [distinct_experts_by_enumeration(8, 2, 1), distinct_experts_by_enumeration(8, 2, 3), 8 * (1 - 0.75**20)]
    assert distinct[0] == pytest.approx(2)
    assert_work(
        work,
        matmul_flops=2 * l * (9216 + 9728),
        expert_flops=2 * l * 2 * 6144,
        attention_flops=[2 * 4 * 24 * keys_attended(n) for n in lengths],
        weight_bytes=[(9216 + 9728) * 2 + d * 6144 * 1 for d in distinct],
        other_bytes=96 * l + 1024 * l,
        allreduce_bytes=2 * l * 64 * 2,
    )


# 4. Decode work --------------------------------------------------------------------------------------------------

BATCHES = [1, 4]


def test_decode_work_gqa_reads_full_context():
    """gqa + dense at context 50: 2 x 4 x 24 FLOPs and 96 B of KV read per cached key and request, 1,024 B of
    activations per request, matmul 2 B (9,216 + 24,576), weights read once."""
    b = np.array(BATCHES, float)
    work = single_group(decode_work(model(GQA, DENSE), BATCHES, 50))
    assert_work(
        work,
        matmul_flops=2 * b * (9216 + 24576),
        expert_flops=0,
        attention_flops=2 * 4 * (16 + 8) * 50 * b,
        weight_bytes=(9216 + 24576) * 2,
        other_bytes=b * 96 * 50 + b * 1024,
        allreduce_bytes=2 * b * 64 * 2,
    )


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
    assert_work(
        work, matmul_flops=2 * b * 9344, attention_flops=2 * 2 * (2 * 32 + 8) * 50 * b, other_bytes=b * 80 * 50 + b * 1024
    )


@pytest.mark.parametrize(("context", "topk_keys"), [(5, 5), (100, 8)])
def test_decode_work_sparse_topk(context, topk_keys):
    """sparse: MLA (absorbed, 2 x 2 x 72 FLOPs, 80 B) over min(context, 8) latents + the indexer (2 x 2 x 16 FLOPs,
    16 B fp8 key) over every cached key."""
    b = np.array(BATCHES, float)
    work = single_group(decode_work(model(SPARSE), BATCHES, context))
    assert_work(
        work,
        attention_flops=b * (2 * 2 * 72 * topk_keys + 2 * 2 * 16 * context),
        other_bytes=b * (80 * topk_keys + 16 * context) + b * 1024,
    )


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
    distinct = np.array([2.0, 8 * (1 - 81 / 256), 8 * (1 - 0.75**16)])
    assert distinct[1] == pytest.approx(distinct_experts_by_enumeration(8, 2, 4), rel=1e-12)
    assert_work(
        work,
        matmul_flops=2 * b * (9216 + 9728),
        expert_flops=2 * b * 2 * 6144,
        weight_bytes=(9216 + 9728) * 2 + distinct * 6144 * 0.5,
    )


# 5. Collectives and the cost of a pass --------------------------------------------------------------------------
# The toy chip: bf16 100 TFLOPS, fp8 200, 2 TB/s at 0.8, scale-up 100 GB/s at 0.5 with 1 us per latency step, a
# NIC of 400 Gbps (50 GB/s) at 0.5 with 5 us per step, 2 chips per scale-up domain; no shape term, no kernel cost.

ALPHA_UP, ALPHA_NIC = 1e-6, 5e-6
UP_BPS, NIC_BPS = 100e9 * 0.5, 50e9 * 0.5


def net_hardware(**changes):
    return hardware(scale_up_latency_us=1.0, nic_latency_us=5.0, nic_gbps=400, scale_up_domain_chips=2, nic=0.5, **changes)


def test_all_reduce_and_all_gather_by_hand():
    """All-reduce of 1 MB over 2 chips (one domain): 2 x 1 step x 1 us + 2 x 1/2 x 1e6 / 5e10 = 22 us; over 4
    chips (two domains, so the NIC): 2 x 2 x 5 us + 2 x 3/4 x 1e6 / 2.5e10 = 80 us. All-gather over 4: 2 x 5 us
    + 3/4 x 1e6 / 2.5e10 = 40 us. One chip: nothing."""
    hw = net_hardware()
    assert collectives.all_reduce_s(hw, 2, 1e6) == pytest.approx(2 * ALPHA_UP + 1e6 / UP_BPS, rel=REL)
    assert collectives.all_reduce_s(hw, 4, 1e6) == pytest.approx(4 * ALPHA_NIC + 1.5e6 / NIC_BPS, rel=REL)
    assert collectives.all_gather_s(hw, 4, 1e6) == pytest.approx(2 * ALPHA_NIC + 0.75e6 / NIC_BPS, rel=REL)
    assert collectives.all_reduce_s(hw, 1, 1e6) == 0


@pytest.mark.parametrize("dedupe", [False, True])
def test_all_to_all_splits_domains_and_dedupes_per_domain(dedupe):
    """4 ranks, 2 per domain, each sends 3 MB (top-2 copies) spread evenly over the 3 others: 1 MB stays in the
    domain (NVLink), 2 MB cross the NIC; time = 2 steps x 5 us + max(1e6 / 5e10, 2e6 / 2.5e10) = 90 us. With
    per-domain dedupe (2 domains, k = 2) a token crosses once per remote domain it reaches: 2 x (1 - 1/4) x 1/2 =
    0.75 crossings against k x 1/2 = 1 copy, so 1.5 MB cross: 10 us + 60 us."""
    hw = net_hardware()
    t, intra, inter = collectives.all_to_all_s(hw, 4, 3e6, top_k=2, dedupe=dedupe)
    nic_bytes = 2e6 * (0.75 if dedupe else 1.0)
    assert intra == pytest.approx(1e6, rel=REL) and inter == pytest.approx(nic_bytes, rel=REL)
    assert t == pytest.approx(2 * ALPHA_NIC + max(1e6 / UP_BPS, nic_bytes / NIC_BPS), rel=REL)


def one_layer(**fields) -> list:
    """Groups for stage_cost: one layer of the given Work fields (one-element arrays) and an empty output head."""
    base = dict(
        tokens=1000.0,
        hidden=64,
        act_bytes=2.0,
        mixer_flops=0.0,
        mixer_weight_bytes=0.0,
        attention_flops=0.0,
        kv_bytes=0.0,
        dense_flops=0.0,
        dense_weight_bytes=0.0,
        expert_flops=0.0,
        per_expert_bytes=0.0,
        num_experts=0,
        top_k=0,
        activation_bytes=0.0,
        has_mixer=True,
        has_ffn=True,
        kv_ways=4,
    )
    base.update(fields)
    arrays = {k: np.array([v], float) if k in ARRAY_FIELDS else v for k, v in base.items()}
    head = {k: (np.zeros(1) if k in ARRAY_FIELDS else v) for k, v in base.items()}
    head.update(
        has_mixer=False,
        has_ffn=False,
        num_experts=0,
        top_k=0,
        mixer_weight_bytes=0.0,
        kernels=0,
        dense_weight_bytes=0.0,
        per_expert_bytes=0.0,
        tokens=np.array([base["tokens"]], float),
    )
    return [(1, Work(**arrays)), (1, Work(**head))]


ARRAY_FIELDS = {"tokens", "mixer_flops", "attention_flops", "kv_bytes", "dense_flops", "expert_flops", "activation_bytes"}


def cost(groups, layout=Layout(), dtypes=None, engine=Engine(expert_imbalance=1.0), hw=None, **kw):
    m = model(GQA, DENSE, dtypes=dtypes)
    return stage_cost(m, hw or net_hardware(), layout, engine, groups, **kw)


def test_pass_compute_bound_on_one_chip_and_tensor_parallel():
    """1e12 projection FLOPs + 1e11 attention FLOPs (bf16): 1e12 / 5e13 + 1e11 / 2.5e13 = 24 ms on one chip. On tp
    2 (one domain) each chip does half, 12 ms, and all-reduces the 1,000 x 64 x 2 B = 128,000 B activations
    twice (after attention and after the FFN): 2 x (2 x 1 us + 128,000 / 5e10) = 9.12 us. fp8 weights run the
    projections at 200 TFLOPS: 1e12 / 1e14 + 4 ms = 14 ms."""
    groups = one_layer(mixer_flops=1e12, attention_flops=1e11)
    c1 = cost(groups)
    assert c1.compute_s[0] == pytest.approx(0.024, rel=REL) and c1.communication_s[0] == 0
    c2 = cost(groups, Layout(tp=2))
    assert c2.compute_s[0] == pytest.approx(0.012, rel=REL)
    assert c2.communication_s[0] == pytest.approx(2 * (2 * ALPHA_UP + 128_000 / UP_BPS), rel=REL)
    assert c2.scale_up_bytes[0] == pytest.approx(2 * 128_000, rel=REL) and c2.nic_bytes[0] == 0
    assert cost(groups, dtypes={"weights": "fp8"}).compute_s[0] == pytest.approx(0.014, rel=REL)
    assert c1.binding() == "compute"


def test_pass_memory_bound_and_kv_split_by_heads():
    """1e9 FLOPs against 8e9 B of weights: 8e9 / 1.6e12 = 5 ms of memory on one chip, 2.5 ms per chip on tp 2. A
    layer with 4 KV heads and 4e9 B of KV: 2.5 ms on one chip; tp 2 splits it (2 ways), tp 2 with a 1-way KV
    (MLA's latent) does not."""
    c = cost(one_layer(mixer_flops=1e9, mixer_weight_bytes=8e9))
    assert c.memory_s[0] == pytest.approx(0.005, rel=REL) and c.compute_s[0] == 0 and c.binding() == "memory"
    assert cost(one_layer(mixer_flops=1e9, mixer_weight_bytes=8e9), Layout(tp=2)).memory_s[0] == pytest.approx(0.0025, rel=REL)
    kv = one_layer(kv_bytes=4e9)
    assert cost(kv).memory_s[0] == pytest.approx(0.0025, rel=REL)
    assert cost(kv, Layout(tp=2)).memory_s[0] == pytest.approx(0.00125, rel=REL)
    assert cost(one_layer(kv_bytes=4e9, kv_ways=1), Layout(tp=2)).memory_s[0] == pytest.approx(0.0025, rel=REL)


@pytest.mark.parametrize(("experts", "peak"), [("fp4", 200e12), ("int4", 100e12), ("fp8", 200e12)])
def test_routed_experts_run_at_their_dtypes_peak(experts, peak):
    """1e12 routed-expert FLOPs at 0.5 efficiency: fp4 falls back to the chip's fp8 (200 TFLOPS, no fp4 peak),
    weight-only int4 runs at bf16 (100 TFLOPS)."""
    groups = one_layer(expert_flops=1e12, num_experts=8, top_k=2, tokens=1e6)
    assert cost(groups, dtypes={"experts": experts}).compute_s[0] == pytest.approx(1e12 / (peak * 0.5), rel=REL)


def test_expert_parallel_dispatch_and_combine_by_hand():
    """ep 4 over 4 chips (dp_attention 4), 400 tokens in the stage, top-2 of 8 experts, h = 64, fp8 experts:
    each chip dispatches 100 x 2 x 64 x 3/4 = 9,600 B in fp8 and combines 19,200 B in bf16; a third of each
    stays in its 2-chip domain. Dispatch: 2 x 5 us + max(3,200 / 5e10, 6,400 / 2.5e10); combine the same at
    twice the bytes. An imbalance of 1.5 multiplies the bytes of the busiest rank and its expert FLOPs."""
    groups = one_layer(tokens=400.0, num_experts=8, top_k=2, expert_flops=1e9, has_mixer=False)
    layout = Layout(dp_attention=4, ep=4)
    c = cost(groups, layout, dtypes={"experts": "fp8"})
    step = lambda sent: 2 * ALPHA_NIC + max(sent / 3 / UP_BPS, sent * 2 / 3 / NIC_BPS)  # noqa: E731
    assert c.communication_s[0] == pytest.approx(step(9600) + step(19200), rel=REL)
    assert c.nic_bytes[0] == pytest.approx((9600 + 19200) * 2 / 3, rel=REL)
    skewed = cost(groups, layout, dtypes={"experts": "fp8"}, engine=Engine(expert_imbalance=1.5))
    assert skewed.communication_s[0] == pytest.approx(step(1.5 * 9600) + step(1.5 * 19200), rel=REL)
    assert skewed.compute_s[0] == pytest.approx(1.5 * c.compute_s[0], rel=REL)


def test_overlap_hides_the_smaller_of_communication_and_kernels():
    """Overlap f hides f x min(communication, kernels): tp 2 with 1e12 FLOPs (10 ms per chip) and the all-reduce
    above; with f = 1 the communication is gone, with f = 0.5 half of it is left."""
    groups = one_layer(mixer_flops=1e12)
    comm = cost(groups, Layout(tp=2)).communication_s[0]
    assert cost(groups, Layout(tp=2), engine=Engine(overlap=1.0)).communication_s[0] == pytest.approx(0, abs=1e-15)
    assert cost(groups, Layout(tp=2), engine=Engine(overlap=0.5)).communication_s[0] == pytest.approx(comm / 2)


def test_gemm_shape_term_by_hand():
    """k0 = 100, m0 = 50: a projection of 2 matrices, 3,000 params at K = 100 and 1,000 at K = 400, costs
    (3,000 x 2 + 1,000 x 1.25) / 4,000 = 1.8125 times its FLOPs at the matmul fraction; with 50 rows per matrix
    twice that again, (50 + 50) / 50."""
    hw = net_hardware(matmul_k0=100.0, matmul_m0=50.0)
    base = one_layer(mixer_flops=1e12, mixer_gemms=((3000, 100), (1000, 400)), tokens=50.0)
    assert cost(base, hw=hw).compute_s[0] == pytest.approx(0.02 * 1.8125 * 2, rel=REL)


def test_kernel_overhead_and_pipeline_hop():
    """12 kernels at 4 us each cost 48 us per layer. A 2-stage pipeline holds half the layer on each stage and
    hops once: 1 us + 1,000 x 64 x 2 B / 5e10."""
    hw = net_hardware(kernel_overhead_us=4.0)
    groups = one_layer(kernels=12)
    assert cost(groups, hw=hw).overhead_s[0] == pytest.approx(48e-6, rel=REL)
    two = cost(groups, Layout(pp=2), hw=hw)
    assert two.overhead_s[0] == pytest.approx(24e-6, rel=REL)
    assert two.communication_s[0] == pytest.approx(ALPHA_UP + 128_000 / UP_BPS, rel=REL)


# 6. Decode capacity ----------------------------------------------------------------------------------------------

DECODE_CONTEXT = 1000
DECODE_OVERHEAD_S = 0.002


def decode_hardware():
    """A slow small chip so the tiny model is memory-bound: 0.01 GB at 0.001 TB/s, 2 ms per decode step."""
    return hardware(memory_gib=0.01, memory_bandwidth_tb_per_s=0.001, decode_step_overhead_s=DECODE_OVERHEAD_S)


def hand_decode_step_s(batch):
    """T_decode(B) of gqa + dense (2 layers, bf16) at context 1,000 on 2 decode_hardware chips as tp 2, per chip,
    term by term: projections and FFN split in two, each KV head on one chip, the activations split, an
    all-reduce of B x 64 x 2 B after attention and after the FFN (2 x 1 step x 2 us + its bytes at 50 GB/s);
    the output head (its weights split, the fp32 logits of the batch) on top."""
    mm_rate, att_rate, mem_rate = 100e12 * 0.5, 100e12 * 0.25, 0.001e12 * 0.8
    proj = max(2 * batch * 9216 / 2 / mm_rate, 9216 * 2 / 2 / mem_rate)
    attention = max(2 * 4 * 24 * DECODE_CONTEXT * batch / 2 / att_rate, batch * 96 * DECODE_CONTEXT / 2 / mem_rate)
    ffn = max(2 * batch * 24576 / 2 / mm_rate, 24576 * 2 / 2 / mem_rate)
    activations = batch * 8 * 64 * 2 / 2 / mem_rate
    allreduce = 2 * (2 * 2e-6 + batch * 64 * 2 / (100e9 * 0.5))
    head = max(2 * batch * 64 * 100 / 2 / mm_rate, 64 * 100 * 2 / 2 / mem_rate) + batch * 100 * 4 / 2 / mem_rate
    return DECODE_OVERHEAD_S + 2 * (proj + attention + ffn + activations + allreduce) + head


TP2 = Layout(tp=2)


def test_decode_capacity_memory_limit():
    """Per chip of tp 2: usable 0.01 GiB x 0.9 = 9,663,676 B; weights half of (2 x 100 x 64 + 2 x 33,792) x 2 B =
    80,384 B; one request's KV at 1,000 tokens half of 2 x 96 x 1,000 = 96,000 B;
    BS_max = floor((9,663,676 - 80,384) / 96,000) = 99; step and tokens/s at 99."""
    cap = decode_capacity(model(GQA, DENSE), Instance(decode_hardware(), 2, TP2), DECODE_CONTEXT)
    usable = 0.01 * 2**30 * 0.9
    weights = (2 * 100 * 64 + 2 * (9216 + 24576)) * 2 / 2
    kv = 2 * 96 * DECODE_CONTEXT / 2
    assert cap.usable_memory_bytes == pytest.approx(usable, rel=REL)
    assert cap.weight_bytes == pytest.approx(weights, rel=REL) and weights == 80_384
    assert cap.kv_bytes_per_request == pytest.approx(kv, rel=REL)
    assert cap.bs_max_memory == math.floor((usable - weights) / kv) == 99
    assert (cap.batch_size, cap.limited_by) == (99, "memory")
    assert cap.step_s == pytest.approx(hand_decode_step_s(99), rel=1e-9)
    assert cap.tokens_per_s == pytest.approx(99 / hand_decode_step_s(99), rel=1e-9)


def test_decode_capacity_tpot_limit():
    """A TPOT limit halfway between the hand-counted T_decode(40) and T_decode(41) gives the largest batch with
    T <= TPOT, 40 (brute force over B = 1..99); max_batch 10 caps it at 10."""
    hand = [hand_decode_step_s(b) for b in range(1, 100)]
    tpot_ms = 1e3 * (hand[39] + hand[40]) / 2
    expected = max(b for b in range(1, 100) if hand[b - 1] * 1e3 <= tpot_ms)
    assert expected == 40
    m, inst = model(GQA, DENSE), Instance(decode_hardware(), 2, TP2)
    cap = decode_capacity(m, inst, DECODE_CONTEXT, tpot_ms=tpot_ms)
    assert (cap.batch_size, cap.limited_by, cap.bs_max_memory) == (40, "tpot", 99)
    assert cap.step_s == pytest.approx(hand_decode_step_s(40), rel=1e-9)
    capped = decode_capacity(m, inst, DECODE_CONTEXT, max_batch=10)
    assert (capped.batch_size, capped.limited_by) == (10, "max_batch")


def test_pipeline_decode_pays_every_stage_and_keeps_micro_batches():
    """pp 2: TPOT = 2 stages x the stage time of a micro-batch of B / 2 requests (each stage holds one layer);
    with one request the micro-batch is that request, and half the stages idle."""
    m = model(GQA, DENSE)
    inst = Instance(decode_hardware(), 2, Layout(pp=2))
    from prfaas_plan.timing.decode import step_cost

    for batch, micro in ((8, 4.0), (1, 1.0)):
        stage = stage_cost(m, inst.hardware, Layout(pp=2), inst.engine, decode_work(m, [micro], DECODE_CONTEXT))
        tpot, _ = step_cost(m, inst, Layout(pp=2), [batch], DECODE_CONTEXT)
        assert tpot[0] == pytest.approx(2 * stage.total_s[0] + DECODE_OVERHEAD_S, rel=1e-12)


# 7. Decode report units ------------------------------------------------------------------------------------------


def test_decode_view_units():
    """weight_gb_per_chip is decimal GB and kv_per_request_mib_per_chip binary MiB. Hidden 1,024, vocab 2^18
    untied: embeddings 2 x 2^28 params x 2 B = 2^30 B, + 2 gqa layers of 1,024 x (64 + 32 + 16 + 32) params x 2 B =
    589,824 B, so 1,074,331,648 B = 1.074 GB (1.001 GiB) on one chip; S_kv(16,384) = 2 x 96 x 16,384 = 3,145,728 B
    = 3.0 MiB (3.146 MB)."""
    m = model(GQA, hidden_size=1024, vocab_size=1 << 18)
    weights = 2 * (1 << 18) * 1024 * 2 + 2 * 1024 * (4 * 16 + 2 * 16 + 2 * 8 + 4 * 8) * 2
    assert weights == 1_074_331_648
    cap = decode_capacity(m, Instance(hardware(), 1), 16_384, max_batch=4)
    row = decode_view(cap, None).rows[0]
    assert row["weight_gb_per_chip"] == pytest.approx(weights / 1e9, abs=5e-4)
    assert row["weight_gb_per_chip"] == pytest.approx(1.074, abs=1e-9)
    assert row["kv_per_request_mib_per_chip"] == pytest.approx(2 * 96 * 16_384 / 2**20, abs=5e-4)
    assert row["kv_per_request_mib_per_chip"] == pytest.approx(3.0, abs=1e-9)
