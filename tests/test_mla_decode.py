"""Multi-head latent attention in decode: the absorbed step's FLOPs and bytes, and where it binds.

Hand counts (accounting/mixers/mla.py), per cached key and request of one layer:

- absorbed decode: the query's no-RoPE part is multiplied into the latent (W_UK absorbed) and the
  output leaves the latent space through W_UV, so every head scores the r-wide latent plus the
  RoPE key and sums r-wide values: 2 x heads x ((r + rope) + r) FLOPs; the cache holds r + rope
  elements. DeepSeek-V3 (128 heads, r = 512, rope 64): 2 x 128 x (576 + 512) = 278,528 FLOPs
  and 576 elements (FlashMLA's own count: 2 x h_q x (d + dv) with d = 576, dv = 512);
- prefill (not absorbed: keys and values up-projected per token): 2 x heads x (nope + rope + v)
  per causal (query, key) pair, 2 x 128 x (128 + 64 + 128) = 81,920 for DeepSeek-V3;
- the latent is one per token, so tensor parallelism splits the FLOPs over the heads but every
  chip of the group reads the whole latent: with attention DP (all heads on a chip) the core's
  arithmetic intensity is 2 heads (2r + rope) / ((r + rope) x KV bytes), 242 FLOP/B for
  DeepSeek-V3 in BF16, above the H200's ridge at its attention fraction (compute-bound), and
  at TP8 one eighth of that (memory-bound).

Each time below is the difference between the step at the context and at context 0, which leaves
the attention core alone (the projections, activations and collectives do not depend on the context).
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from prfaas_plan import api, published
from prfaas_plan.accounting.work import decode_work, prefill_work
from prfaas_plan.profiles.hardware import load_hardware_profile
from prfaas_plan.profiles.model import load_model_profile
from prfaas_plan.timing.cost import Engine, stage_cost
from prfaas_plan.timing.layout import Layout
from prfaas_plan.units import dtype_bytes

DATA = Path(__file__).parent / "data"
REL = 1e-9
H = 64
# a tiny MLA of 32 heads (enough for the absorbed core to be compute-bound on one toy chip)
HEADS, RANK, ROPE, NOPE, V = 32, 32, 8, 16, 16
TINY_MLA = {
    "type": "mla",
    "num_heads": HEADS,
    "kv_lora_rank": RANK,
    "qk_rope_head_dim": ROPE,
    "qk_nope_head_dim": NOPE,
    "v_head_dim": V,
    "q_lora_rank": 24,
}
DECODE_FLOPS_PER_KEY = 2 * 32 * ((32 + 8) + 32)  # 4,608
LATENT_BYTES_PER_KEY = (32 + 8) * 2  # bf16: 80
PREFILL_FLOPS_PER_PAIR = 2 * 32 * (16 + 8 + 16)  # 2,560
# the toy chip: 100 TFLOPS bf16, attention fraction 0.25; 2 TB/s at 0.8
ATTENTION_FLOPS_PER_S, BYTES_PER_S = 100e12 * 0.25, 2e12 * 0.8


def tiny_model(kv: str = "bf16"):
    return load_model_profile(
        {
            "name": "tiny-mla",
            "hidden_size": H,
            "vocab_size": 100,
            "max_context_tokens": 1 << 20,
            "mixers": {"m": TINY_MLA},
            "ffns": {},
            "layers": {"count": 2, "pattern": ["m:none"]},
            "dtypes": {"kv": kv},
        }
    )


def toy_chip():
    return load_hardware_profile(
        {
            "name": "toy",
            "peak_tflops": {"bf16": 100, "fp8": 200},
            "memory_gib": 80,
            "memory_bandwidth_tb_per_s": 2,
            "scale_up_gb_per_s": 100,
            "nic_gbps": 400,
            "scale_up_domain_chips": 8,
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
    )


def attention_core_s(model, hw, layout, batch, context):
    """(compute, memory) seconds the attention core adds to one decode step: the step at ``context``
    less the step at context 0."""

    def parts(ctx):
        c = stage_cost(model, hw, layout, Engine(), decode_work(model, [batch], ctx))
        return float(c.compute_s[0]), float(c.memory_s[0])

    (c1, m1), (c0, m0) = parts(context), parts(0.0)
    return c1 - c0, m1 - m0


def test_tiny_decode_step_flops_and_bytes_by_hand():
    """At batch 3 and context 1,000: 3 x 1,000 x 4,608 FLOPs and 3 x 1,000 x 80 B per layer, each layer."""
    groups = decode_work(tiny_model(), [3.0], 1000.0)
    assert [count for count, _ in groups] == [2, 1]
    work = groups[0][1]
    assert float(work.attention_flops[0]) == pytest.approx(3 * 1000 * DECODE_FLOPS_PER_KEY, rel=REL)
    assert float(work.kv_bytes[0]) == pytest.approx(3 * 1000 * LATENT_BYTES_PER_KEY, rel=REL)
    assert work.kv_ways == 1  # one latent per token: tensor parallelism does not split it


def test_tiny_prefill_is_not_absorbed():
    """A 10-token prompt: 55 causal pairs x 2,560 FLOPs (uncompressed keys and values), and its latent, 10 x 80 B,
    written; the absorbed form would charge 4,608 per pair."""
    work = prefill_work(tiny_model(), [10.0])[0][1]
    assert float(work.attention_flops[0]) == pytest.approx(55 * PREFILL_FLOPS_PER_PAIR, rel=REL)
    assert float(work.kv_bytes[0]) == pytest.approx(10 * LATENT_BYTES_PER_KEY, rel=REL)


def test_absorbed_projections_cost_what_the_up_projection_costs():
    """Absorbing W_UK into the query and W_UV into the output moves the kv_b matrix (r x heads x (nope + v)) from the
    keys to the query: a decode token still pays 2 x its parameters once, as a prefill token does."""
    m = tiny_model()
    step = decode_work(m, [1.0], 500.0)[0][1]
    token = prefill_work(m, [1.0])[0][1]
    kv_b = RANK * HEADS * (NOPE + V)
    assert float(step.mixer_flops[0]) == pytest.approx(float(token.mixer_flops[0]), rel=REL)
    assert float(step.mixer_flops[0]) >= 2 * kv_b  # kv_b is among the projections a decode token runs


def test_tiny_core_compute_bound_with_all_heads_memory_bound_split_by_heads():
    """Batch 8 at context 100,000 (per layer 3.6864e12 FLOPs, 6.4e10 B; 2 layers): all 32 heads on one chip (and on
    each chip of 4 attention-DP groups of 2 requests) run 57.6 FLOP/B, above the toy ridge of 2.5e13 / 1.6e12 = 15.6:
    compute-bound, 2 x 3.6864e12 / 2.5e13 s. TP4 gives each chip 8 heads (a quarter of the FLOPs) but the whole
    latent: 14.4 FLOP/B, memory-bound, 2 x 6.4e10 / 1.6e12 s."""
    m, hw, batch, ctx = tiny_model(), toy_chip(), 8.0, 100_000.0
    flops, nbytes = batch * ctx * DECODE_FLOPS_PER_KEY, batch * ctx * LATENT_BYTES_PER_KEY
    compute, memory = attention_core_s(m, hw, Layout(), batch, ctx)
    assert (compute, memory) == pytest.approx((2 * flops / ATTENTION_FLOPS_PER_S, 0.0), rel=1e-6, abs=1e-12)
    compute, memory = attention_core_s(m, hw, Layout(dp_attention=4), batch, ctx)
    assert (compute, memory) == pytest.approx((2 * flops / 4 / ATTENTION_FLOPS_PER_S, 0.0), rel=1e-6, abs=1e-12)
    compute, memory = attention_core_s(m, hw, Layout(tp=4), batch, ctx)
    assert (compute, memory) == pytest.approx((0.0, 2 * nbytes / BYTES_PER_S), rel=1e-6, abs=1e-12)


def test_deepseek_v3_counts_match_flashmla_formula():
    """The shipped DeepSeek-V3 profile: 2 x 128 x (576 + 512) decode FLOPs and 576 cached elements per key
    (BF16: 1,152 B), 2 x 128 x (192 + 128) prefill FLOPs per causal pair."""
    m = api.model_of("deepseek-v3")
    dense = decode_work(m, [1.0], 1.0)[0][1]  # the first layer group (its three dense-FFN layers)
    assert float(dense.attention_flops[0]) == 2 * 128 * (576 + 512) == 278_528
    assert float(dense.kv_bytes[0]) == 576 * dtype_bytes(m.dtypes.kv) == 1152
    pair = prefill_work(m, [1.0])[0][1]  # one token: one causal pair
    assert float(pair.attention_flops[0]) == 2 * 128 * (192 + 128) == 81_920


@pytest.mark.parametrize("kv", ["bf16", "fp8"])
def test_deepseek_v3_on_h200_binds_by_layout(kv):
    """DeepSeek-V3 on the shipped H200 profile, 1,024 requests at 2,048 tokens over 8 chips: with attention DP (128
    requests and all 128 heads per chip) the core is compute-bound in either KV dtype, 61 layers x 128 x 2,048 x
    278,528 FLOPs at 989 TFLOPS x the attention fraction, so FP8 KV does not shorten it; at TP8 (16 heads per chip,
    the whole latent of all 1,024 requests on each) it is memory-bound, 61 x 1,024 x 2,048 x 576 x KV bytes at
    4.8 TB/s x the memory fraction."""
    m = api.precision_of(api.model_of("deepseek-v3"), {"kv": kv})
    hw = api.hardware_of("h200")
    batch, ctx, layers = 1024.0, 2048.0, 61
    rate = hw.peak_flops("bf16") * hw.efficiency.attention
    bw = hw.memory_bytes_per_s * hw.efficiency.memory
    compute, memory = attention_core_s(m, hw, Layout(dp_attention=8, ep=8), batch, ctx)
    assert memory == pytest.approx(0.0, abs=1e-12)
    assert compute == pytest.approx(layers * batch / 8 * ctx * 278_528 / rate, rel=1e-6)
    compute, memory = attention_core_s(m, hw, Layout(tp=8, ep=8), batch, ctx)
    assert compute == pytest.approx(0.0, abs=1e-12)
    assert memory == pytest.approx(layers * batch * ctx * 576 * dtype_bytes(m.dtypes.kv) / bw, rel=1e-6)


KV_TEXT = re.compile(r"\b(NVFP4|FP4|FP8|BF16|FP16)(?: \([A-Z0-9]+\))? KV\b")


@pytest.mark.parametrize("csv_name", ["published_benchmarks.csv", "published_benchmarks_new.csv"])
def test_published_rows_serve_the_kv_dtype_their_source_states(csv_name):
    """Every row whose precision text names its KV dtype ('FP8 weights / BF16 KV', 'BF16 (FP16) KV') is timed with a
    KV cache of that many bytes per element, after its engine's own choice for an FP8 checkpoint (TensorRT-LLM keeps
    BF16 KV for a checkpoint that declares no KV quantization: its row must say kv=bf16)."""
    path = DATA / csv_name
    checked = 0
    with path.open(newline="") as fh:
        for row in csv.DictReader(fh):
            found = KV_TEXT.search(row["precision"])
            if not found:
                continue
            want = {"BF16": 2, "FP16": 2, "FP8": 1, "FP4": 0.5, "NVFP4": 0.5}[found.group(1)]
            checkpoint, precision = published.model_of_row(row, DATA)
            served = api.precision_of(checkpoint, precision, {"name": published.engine_name_of(row["engine"])})
            assert dtype_bytes(served.dtypes.kv) == want, (row["id"], row["precision"], served.dtypes.kv)
            checked += 1
    assert checked >= 5
