"""Decode: BS_max from memory, TPOT limit, step time, tokens/s, and does-not-fit errors."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prfaas_plan import api
from prfaas_plan.errors import PlanInputError
from prfaas_plan.profiles.model import MeasuredProfile
from prfaas_plan.timing.decode import decode_layout, decode_step_s
from prfaas_plan.timing.instance import Instance


def test_bs_max_by_hand_qwen3_8b_on_one_h100():
    d = api.decode("qwen3-8b", "h100", gpus=1, context_tokens=4096)
    weights = 8.2e9 * 2  # declared 8.2B params in bf16
    usable = 80 * 2**30 * 0.9  # 80 GiB x memory_usable_fraction
    per_request = 147_456 * 4096  # KV bytes at the context
    assert d.weight_bytes == pytest.approx(weights)
    assert d.bs_max_memory == math.floor((usable - weights) / per_request) == 100
    assert d.batch_size == 100 and d.limited_by == "memory"
    assert d.tokens_per_s == pytest.approx(100 / d.step_s)


def test_step_time_by_hand_memory_bound_batch_of_one():
    """Batch 1 of a dense model is bandwidth-bound: weights + KV over bandwidth, plus the step overhead and
    the kernels' fixed cost (36 layers x (5 attention + 4 FFN kernels) + 3 for the output head)."""
    m, hw = api.model_of("qwen3-8b"), api.hardware_of("h100")
    step = decode_step_s(m, Instance(hw, 1), [1], 4096)[0]
    read = 8.2e9 * 2  # approximately all weights (architecture count 8.19B)
    bandwidth = 3.35e12 * hw.efficiency.memory
    kernels = 36 * (5 + 4) + 3
    lower = read / bandwidth + hw.efficiency.decode_step_overhead_s + kernels * hw.efficiency.kernel_overhead_us * 1e-6
    assert lower * 0.97 < step < lower * 1.10


def test_tpot_limit_lowers_batch():
    free = api.decode("mimo-v2-flash", "h200", 8, 32768)
    limited = api.decode("mimo-v2-flash", "h200", 8, 32768, tpot_ms=30)
    assert limited.limited_by == "tpot" and limited.batch_size < free.batch_size
    assert limited.step_s * 1e3 <= 30
    # one more request would break the limit
    m, inst = api.model_of("mimo-v2-flash"), Instance(api.hardware_of("h200"), 8)
    assert decode_step_s(m, inst, [limited.batch_size + 1], 32768)[0] * 1e3 > 30


def test_unreachable_tpot_is_an_error():
    with pytest.raises(PlanInputError, match="unreachable"):
        api.decode("minimax-m2.5", "h20", 8, 32768, tpot_ms=0.5)


def test_max_batch_cap():
    d = api.decode("mimo-v2-flash", "h200", 8, 32768, max_batch=64)
    assert d.batch_size == 64 and d.limited_by == "max_batch"


@pytest.mark.parametrize(
    "model,hardware,gpus,context,needs",
    [
        # 1.04 TB fp8 on 96 GiB chips (92.8 GB usable each): 11.2 chips on average; 12 stages of 61
        # layers hold it, the fullest chip included
        ("kimi-k2", "h20", 8, 32768, 12),
        ("prfaas-1t-hybrid", "groq-lpu", 64, 8192, None),  # 500 GB on 230 MB chips
    ],
)
def test_weights_that_do_not_fit_say_how_many_chips(model, hardware, gpus, context, needs):
    with pytest.raises(PlanInputError) as err:
        api.decode(model, hardware, gpus, context)
    msg = str(err.value)
    assert "does not fit" in msg and "needs at least" in msg
    count = int(msg.split("needs at least ")[1].split()[0])
    if needs is not None:
        assert count == needs
    else:
        assert count > 2000  # hundreds of MB per chip: thousands of LPUs
    # and with that many chips it fits
    assert api.decode(model, hardware, count, context).batch_size >= 1


def test_measured_decode_overrides_roofline():
    m = api.model_of("qwen3-8b")
    measured = MeasuredProfile(hardware="h100", gpus=1, source="test", decode_tokens_per_s=1234.0)
    m2 = m.model_copy(update={"measured": [measured]})
    d = api.decode(m2, "h100", 1, 4096)
    assert d.source == "measured" and d.tokens_per_s == 1234.0
    assert api.decode(m2, "h100", 1, 4096, source="roofline").source == "roofline"


def test_context_beyond_model_is_an_error():
    with pytest.raises(PlanInputError, match="exceeds"):
        api.decode("qwen3-8b", "h100", 1, 10**7)


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(["minimax-m2.5", "prfaas-1t-hybrid", "mimo-v2-flash"]),
    st.integers(1, 512),
    st.integers(1, 512),
    st.integers(1024, 131072),
)
def test_step_time_monotone_in_batch_and_context(model, a, b, context):
    m, inst = api.model_of(model), Instance(api.hardware_of("b300"), 8)
    lo, hi = sorted((a, b))
    layout = decode_layout(m, inst, context + 1024)  # on one layout (each context may choose its own)
    t = decode_step_s(m, inst, [lo, hi], context, layout)
    assert t[0] <= t[1]
    assert decode_step_s(m, inst, [lo], context, layout)[0] <= decode_step_s(m, inst, [lo], context + 1024, layout)[0]


@settings(max_examples=25, deadline=None)
@given(st.floats(1.1, 5.0))
def test_more_bandwidth_more_tokens(factor):
    hw = api.hardware_of("h20")
    fast = hw.model_copy(update={"memory_bandwidth_tb_per_s": hw.memory_bandwidth_tb_per_s * factor})
    slow_d = api.decode("prfaas-1t-hybrid", hw, 8, 32768)
    fast_d = api.decode("prfaas-1t-hybrid", fast, 8, 32768)
    assert fast_d.tokens_per_s >= slow_d.tokens_per_s


def test_bigger_batch_more_throughput_until_memory():
    m, inst = api.model_of("minimax-m2.5"), Instance(api.hardware_of("h200"), 8)
    sizes = np.array([1, 8, 32, 64])
    t = decode_step_s(m, inst, sizes, 8192)
    assert np.all(np.diff(sizes / t) > 0)
