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


# --------------------------------------------------------------------------------------------
# A scenario's measured decode rate under its TPOT limit and its batch


def _case_study_with(tmp_path, **decode):
    import yaml
    from conftest import case_study_doc

    from prfaas_plan.planner.chips import load_inputs

    doc = case_study_doc()
    doc["decode"].update(decode)
    path = tmp_path / "decode.yaml"
    path.write_text(yaml.safe_dump(doc))
    return load_inputs(str(path))


def test_a_measured_rate_is_held_to_the_tpot_limit_on_the_roofline_curve_through_it(tmp_path):
    """800 tokens/s at 64 running requests (an 80 ms step) under tpot_ms 60: the roofline's step
    curve scaled through the measured point, k T_roof(b), meets 60 ms up to the batch a brute-force
    scan finds; the plan's decode rate is that batch over its step, and its steps meet the limit."""
    from prfaas_plan.study.model import decode_model
    from prfaas_plan.timing.decode import decode_capacity

    inputs = _case_study_with(tmp_path, tpot_ms=60)
    pool = inputs.decode_pool.instance
    context = inputs.decode.context_tokens
    full = decode_capacity(inputs.model, pool, context, max_batch=64, source="roofline")
    roof = decode_step_s(inputs.model, pool, np.arange(1, 65, dtype=float), context, full.layout)
    k = (64 / 800) / roof[-1]
    batch = max(b for b in range(1, 65) if k * roof[b - 1] <= 0.060)
    assert inputs.decode.batch == batch < 64
    assert inputs.decode.tokens_per_s_per_instance == pytest.approx(batch / (k * roof[batch - 1]), rel=1e-12)
    model = decode_model(inputs)
    assert model.batch_size == batch and model.tokens_per_s == pytest.approx(inputs.decode.tokens_per_s_per_instance)
    assert float(model.step_s(batch)) * 1e3 <= 60 + 1e-9
    assert any("held to tpot_ms 60" in n for n in inputs.notes)
    loose = _case_study_with(tmp_path, tpot_ms=100)  # 80 ms already meets it: the measured point as given
    assert loose.decode.batch == 64 and loose.decode.tokens_per_s_per_instance == 800


def test_a_tpot_limit_the_measured_curve_misses_at_one_request_is_refused(tmp_path):
    with pytest.raises(PlanInputError) as err:
        _case_study_with(tmp_path, tpot_ms=20)
    assert err.value.field == "decode.tpot_ms" and "with one running request, above the limit of 20 ms" in err.value.reason


def test_a_measured_rate_far_faster_than_the_roofline_at_its_batch_is_noted(tmp_path):
    """800 tokens/s at max_batch 1 is a 1.25 ms step on 8 x H20, where reading the weights alone
    takes longer: the plan says the rate is probably of another batch; at 64 (80 ms) it says nothing."""
    (note,) = [n for n in _case_study_with(tmp_path, max_batch=1).notes if "faster than the roofline" in n]
    assert note.startswith("decode on 8 x h20: the scenario's 800 tokens/s at 1 running request is 1.25 ms per output token")
    assert not [n for n in _case_study_with(tmp_path).notes if "faster than the roofline" in n]


@pytest.mark.parametrize("mtp", [1.0, 3.0])
def test_a_measured_rate_equal_to_the_roofline_scales_it_by_one_with_or_without_mtp(mtp):
    """With multi-token prediction a step yields mtp tokens a request: the roofline's own rate at
    its batch, given as the measured one, is the curve itself (k = 1), so nothing is noted as too
    fast; held to a TPOT between the times of two batches, the batch is the last that meets it."""
    from prfaas_plan.study.model import held_to_tpot, measured_rate_scale
    from prfaas_plan.timing.cost import Engine
    from prfaas_plan.timing.decode import decode_capacity

    model, pool = api.model_of("prfaas-1t-hybrid"), Instance(api.hardware_of("h20"), 8, engine=Engine(mtp_tokens_per_step=mtp))
    roof = decode_capacity(model, pool, 28000, max_batch=64, source="roofline")
    k, per_token, cap = measured_rate_scale(model, pool, 28000, roof.tokens_per_s, 64)
    assert k == pytest.approx(1.0, rel=1e-9) and cap.batch_size == 64
    assert per_token[-1] == pytest.approx(roof.tpot_ms / 1e3, rel=1e-9)  # time per output token, not per step
    limit_ms = 1e3 * float(per_token[40] + per_token[41]) / 2  # between batches 41 and 42
    assert held_to_tpot(k, per_token, roof.tokens_per_s, limit_ms)[0] == 41


def test_a_measured_point_within_the_limit_is_kept_whatever_the_roofline_says(tmp_path):
    """800 tokens/s at max_batch 1 is 1.25 ms a token, within tpot_ms 5 though the roofline's own
    step is 12 ms: the plan decodes at that batch and rate (the roofline's TPOT check is not
    applied again); 6,400 tokens/s at 64 (10 ms) under tpot_ms 30 stays at 64."""
    from prfaas_plan.study.model import decode_model

    one = _case_study_with(tmp_path, max_batch=1, tpot_ms=5)
    assert (one.decode.batch, one.decode.tokens_per_s_per_instance) == (1, 800)
    model = decode_model(one)
    assert model.batch_size == 1 and float(model.step_s(1)) == pytest.approx(1 / 800, rel=1e-12)
    fast = _case_study_with(tmp_path, tokens_per_s_per_instance=6400, tpot_ms=30)
    assert decode_model(fast).batch_size == 64 and decode_model(fast).tokens_per_s == pytest.approx(6400)


def test_the_model_basis_holds_a_measured_rate_to_the_tpot_limit_as_plan_does(tmp_path):
    """compare's default basis calibrates the roofline on the measured rate: held to tpot_ms 60 as
    plan's is (32 running requests), its steps within the limit."""
    import yaml
    from conftest import case_study_doc

    from prfaas_plan.choices import Basis, DecodeSource
    from prfaas_plan.profiles.scenario import load_scenario
    from prfaas_plan.study.model import decode_model
    from prfaas_plan.study.resolve import build_inputs

    doc = case_study_doc()
    doc["decode"]["tpot_ms"] = 60
    path = tmp_path / "d.yaml"
    path.write_text(yaml.safe_dump(doc))
    as_given = build_inputs(load_scenario(doc, str(path)), str(path))
    modelled = build_inputs(load_scenario(doc, str(path)), str(path), basis=Basis.model)
    assert modelled.decode.source == DecodeSource.calibrated and modelled.decode.batch == as_given.decode.batch == 32
    model = decode_model(modelled)
    assert float(model.step_s(model.batch_size)) * 1e3 <= 60 + 1e-9


def test_an_unreachable_tpot_limit_quotes_the_fastest_layout_at_one_request():
    """qwen3-32b on 2 x H100 at 2K: the error's batch-1 step is the fastest over every fitting
    layout (it quoted a fallback layout's 16.42 ms), and a limit just above it is met."""
    from prfaas_plan.timing.decode import decode_capacity, step_cost
    from prfaas_plan.timing.memory import fitting_layouts

    model, pool = api.model_of("qwen3-32b"), Instance(api.hardware_of("h100"), 2)
    fastest = min(float(step_cost(model, pool, lay, [1], 2048)[0][0]) for lay in fitting_layouts(model, pool, 2048)) * 1e3
    with pytest.raises(PlanInputError) as err:
        decode_capacity(model, pool, 2048, tpot_ms=fastest * 0.99)
    assert f"a batch of 1 takes {fastest:.2f} ms per step" in err.value.reason
    assert decode_capacity(model, pool, 2048, tpot_ms=fastest * 1.01).batch_size >= 1
