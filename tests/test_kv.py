"""S_kv(l) exact against hand computation (MODELS.md / PRFAAS.md), per attention kind."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from prfaas_plan.accounting.kv import KvModel
from prfaas_plan.profiles.registry import resolve_model

MIB = 2**20


def kv(name: str) -> KvModel:
    return KvModel.of(resolve_model(name))


def test_minimax_gqa_exact():
    k = kv("minimax-m2.5")
    assert k.growing_bytes_per_token == 62 * 2 * 8 * 128 * 2 == 253_952
    assert k.fixed_bytes == 0 and k.windows == ()
    assert k.bytes_at(32768) == 253_952 * 32_768


def test_qwen3_235b_gqa_exact():
    assert kv("qwen3-235b").growing_bytes_per_token == 94 * 2 * 4 * 128 * 2 == 192_512


def test_dense_qwen3_exact():
    assert kv("qwen3-8b").growing_bytes_per_token == 36 * 2 * 8 * 128 * 2 == 147_456
    assert kv("qwen3-32b").growing_bytes_per_token == 64 * 2 * 8 * 128 * 2 == 262_144


def test_qwen35_hybrid_gdn_exact():
    k = kv("qwen3.5-397b")
    assert k.growing_bytes_per_token == 15 * 2 * 2 * 256 * 2 == 30_720
    state = 45 * 64 * 128 * 128 * 4  # fp32 recurrent state of 45 Gated DeltaNet layers
    conv = 45 * 12_288 * (4 - 1) * 2  # bf16 conv state: 12,288 channels x (kernel - 1)
    assert k.fixed_bytes == state + conv
    assert k.bytes_at(1000) == 30_720 * 1000 + state + conv


def test_mimo_swa_window_capped():
    k = kv("mimo-v2-flash")
    assert k.growing_bytes_per_token == 9 * 4 * (192 + 128) * 2 == 23_040
    assert k.windows == ((128, 39 * 8 * 320 * 2),)  # 199,680 B/token on SWA layers
    assert k.window_cap_bytes == 199_680 * 128  # about 25.6 MB
    assert k.bytes_at(100) == 23_040 * 100 + 199_680 * 100  # below the window: every token kept
    assert k.bytes_at(32768) == 23_040 * 32768 + 199_680 * 128  # above it: capped
    b = k.breakdown(32768)
    assert (b.growing_bytes, b.window_bytes, b.fixed_bytes) == (23_040 * 32768, 199_680 * 128, 0)


def test_kimi_k2_mla_exact():
    k = kv("kimi-k2")
    assert k.growing_bytes_per_token == 61 * (512 + 64) * 2 == 70_272
    assert kv("deepseek-v3").growing_bytes_per_token == 70_272


def test_kimi_linear_fixed_state():
    k = kv("kimi-linear-48b")
    assert k.growing_bytes_per_token == 7 * (512 + 64) * 2 == 8_064
    state = 20 * 32 * 128 * 128 * 4
    conv = 20 * 12_288 * 3 * 2
    assert k.fixed_bytes == state + conv
    # the fixed part does not grow with length
    assert k.bytes_at(2) - k.bytes_at(1) == 8_064


def test_ring_and_case_study_model():
    assert kv("ring-2.5-1t").growing_bytes_per_token == 10 * 576 * 2 == 11_520
    k = kv("prfaas-1t-hybrid")
    assert k.growing_bytes_per_token == 15 * 576 * 2 == 17_280  # about 17.3 KB/token (MODELS.md)
    assert k.fixed_bytes / MIB == pytest.approx(46 * (64 * 128 * 128 * 4 + 24_576 * 3 * 2) / MIB)


@given(
    st.sampled_from(["minimax-m2.5", "mimo-v2-flash", "qwen3.5-397b", "kimi-k2"]),
    st.integers(1, 200_000),
    st.integers(1, 200_000),
)
def test_kv_monotone_and_affine_bounds(name, a, b):
    k = kv(name)
    lo, hi = sorted((a, b))
    assert k.bytes_at(lo) <= k.bytes_at(hi)
    # never below the growing part alone, never above growing + uncapped windows + fixed
    assert (
        k.growing_bytes_per_token * hi
        <= k.bytes_at(hi)
        <= (k.growing_bytes_per_token * hi + sum(bpt * hi for _, bpt in k.windows) + k.fixed_bytes)
    )


@pytest.mark.parametrize("name", ["minimax-m2.5", "mimo-v2-flash", "kimi-k2", "qwen3.5-397b"])
def test_fp8_kv_halves_the_cached_kv_exactly(name):
    """The KV dtype sizes every cached key and value: fp8 (1 B) is exactly half of bf16 (2 B) for the
    growing and window-bounded parts; recurrent state keeps its own dtype (fp32)."""
    bf16 = resolve_model(name)
    fp8 = bf16.model_copy(update={"dtypes": bf16.dtypes.model_copy(update={"kv": "fp8"})})
    a, b = KvModel.of(bf16), KvModel.of(fp8)
    assert b.growing_bytes_per_token == a.growing_bytes_per_token / 2
    assert b.window_cap_bytes == a.window_cap_bytes / 2
    assert b.fixed_bytes == a.fixed_bytes
    for length in (1, 4096, 131072):
        assert b.bytes_at(length) - b.fixed_bytes == (a.bytes_at(length) - a.fixed_bytes) / 2
