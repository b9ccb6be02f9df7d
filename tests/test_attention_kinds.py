"""Attention kernels per kind (gqa, swa, mla, sparse, linear): the chip's calibrated per-kind factor
(``efficiency.attention_kind``) scales only the layers of its kind, a joint calibration over models of
several kinds fits each kind's factor, and its leave-one-model-out error is what a hand re-fit gives."""

from __future__ import annotations

import json

import numpy as np
import pytest

from prfaas_plan import api
from prfaas_plan.accounting.work import Work, prefill_work
from prfaas_plan.choices import MixerType
from prfaas_plan.errors import PlanInputError
from prfaas_plan.profiles.hardware import load_hardware_profile
from prfaas_plan.profiles.model import load_model_profile
from prfaas_plan.profiles.registry import resolve_hardware
from prfaas_plan.timing.calibrate import CalibrationPoint, CalibrationSet, calibrate_sets, hardware_to_yaml_dict
from prfaas_plan.timing.cost import Engine, stage_cost
from prfaas_plan.timing.instance import Instance
from prfaas_plan.timing.layout import Layout
from prfaas_plan.timing.prefill import RooflinePrefill
from prfaas_plan.yamlio import dump_yaml

REL = 1e-12
ATTENTION_RATE = 0.25 * 100e12  # the toy chip's attention fraction x its bf16 peak, FLOP/s


def toy_hardware(**efficiency):
    """bf16 100 TFLOPS, 2 TB/s; attention 0.25, memory 0.8; no shape term, kernel or pass cost."""
    eff = {
        "matmul": 0.5,
        "attention": 0.25,
        "memory": 0.8,
        "prefill_overhead_s": 0,
        "matmul_k0": 0.0,
        "matmul_m0": 0.0,
        "kernel_overhead_us": 0.0,
        "prefill_pass_overhead_s": 0.0,
        **efficiency,
    }
    return load_hardware_profile(
        {
            "name": "toy",
            "peak_tflops": {"bf16": 100},
            "memory_gib": 80,
            "memory_bandwidth_tb_per_s": 2,
            "scale_up_gb_per_s": 100,
            "efficiency": eff,
        }
    )


def attention_layer(kind: str, flops: float) -> Work:
    """One layer of ``kind`` whose only work is ``flops`` attention-core FLOPs (1,000 tokens, no KV)."""
    one = np.array([1000.0])
    zero = np.zeros(1)
    return Work(
        tokens=one,
        hidden=64,
        act_bytes=2.0,
        mixer_flops=zero,
        mixer_weight_bytes=0.0,
        attention_flops=np.array([flops]),
        kv_bytes=zero,
        dense_flops=zero,
        dense_weight_bytes=0.0,
        expert_flops=zero,
        per_expert_bytes=0.0,
        num_experts=0,
        top_k=0,
        activation_bytes=zero,
        has_mixer=True,
        has_ffn=False,
        kv_ways=4,
        mixer_type=kind,
    )


def head() -> Work:
    zero = np.zeros(1)
    return Work(
        tokens=np.array([1000.0]),
        hidden=64,
        act_bytes=2.0,
        mixer_flops=zero,
        mixer_weight_bytes=0.0,
        attention_flops=zero,
        kv_bytes=zero,
        dense_flops=zero,
        dense_weight_bytes=0.0,
        expert_flops=zero,
        per_expert_bytes=0.0,
        num_experts=0,
        top_k=0,
        activation_bytes=zero,
        has_mixer=False,
        has_ffn=False,
    )


TWO_KINDS = [(1, attention_layer("gqa", 1e11)), (1, attention_layer("linear", 2e11)), (1, head())]


@pytest.mark.parametrize(
    ("kinds", "want_s"),
    [
        ({}, 1e11 / ATTENTION_RATE + 2e11 / ATTENTION_RATE),  # 4 ms + 8 ms
        ({"linear": 0.5}, 1e11 / ATTENTION_RATE + 2e11 / (0.5 * ATTENTION_RATE)),  # 4 ms + 16 ms
        ({"gqa": 2.0}, 1e11 / (2.0 * ATTENTION_RATE) + 2e11 / ATTENTION_RATE),  # 2 ms + 8 ms
        ({"mla": 0.1}, 1e11 / ATTENTION_RATE + 2e11 / ATTENTION_RATE),  # no mla layer: unchanged
    ],
)
def test_kind_factor_scales_only_its_kinds_layers_in_prefill(kinds, want_s):
    """A gqa layer of 1e11 and a linear layer of 2e11 attention FLOPs at 25 TFLOPS: each kind's layers run at
    the attention rate x its own factor; a decode step keeps the chip's rate (the factor is fitted on prefill)."""
    hw = toy_hardware(attention_kind=kinds)
    m = api.model_of("llama-3.1-8b")  # only its dtypes matter here (bf16 attention)
    prefill = stage_cost(m, hw, Layout(), Engine(), TWO_KINDS, prefill=True)
    assert prefill.compute_s[0] == pytest.approx(want_s, rel=REL)
    decode = stage_cost(m, hw, Layout(), Engine(), TWO_KINDS, prefill=False)
    assert decode.compute_s[0] == pytest.approx(3e11 / ATTENTION_RATE, rel=REL)


def test_kind_factor_multiplies_the_engines():
    """Beside an engine's own multiplier for the kind: 2e11 / (25 TFLOPS x 0.5 x 0.8) = 20 ms for the linear layer."""
    hw = toy_hardware(attention_kind={"linear": 0.5})
    engine = Engine(attention=(("linear", 0.8, 1.0),))
    got = stage_cost(api.model_of("llama-3.1-8b"), hw, Layout(), engine, TWO_KINDS, prefill=True)
    assert got.compute_s[0] == pytest.approx(1e11 / ATTENTION_RATE + 2e11 / (0.4 * ATTENTION_RATE), rel=REL)


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
GQA = {"type": "gqa", "num_query_heads": 4, "num_kv_heads": 2, "qk_head_dim": 16, "v_head_dim": 8}


def tiny_hybrid():
    """One gqa and one kda layer (chunk 64 tokens), no FFN."""
    return load_model_profile(
        {
            "name": "tiny",
            "hidden_size": 64,
            "vocab_size": 100,
            "max_context_tokens": 1 << 20,
            "mixers": {"g": GQA, "k": LINEAR},
            "ffns": {},
            "layers": {"count": 2, "pattern": ["g:none", "k:none"]},
        }
    )


def test_kind_factor_on_a_tiny_model_of_two_kinds_by_hand():
    """A 2-layer model, one gqa and one kda layer (no FFN), a 1,000-token prompt. The linear core: l x 2 heads x
    (4 x 8 x 16 + 64 x (8 + 16)) + 2 l x 48 x 4 = 4,480 l FLOPs, compute-bound (its 1,312 B state is nothing);
    at a factor 0.5 on linear it takes 4,480,000 / 12.5 TFLOPS instead of / 25 TFLOPS, everything else the same."""
    m = tiny_hybrid()
    groups = prefill_work(m, np.array([1000.0]))
    base = stage_cost(m, toy_hardware(), Layout(), Engine(), groups, prefill=True)
    slow = stage_cost(m, toy_hardware(attention_kind={"linear": 0.5}), Layout(), Engine(), groups, prefill=True)
    linear_flops = 1000 * (2 * (4 * 8 * 16 + 64 * (8 + 16)) + 2 * 48 * 4)
    assert linear_flops == 4480 * 1000
    assert slow.total_s[0] - base.total_s[0] == pytest.approx(linear_flops / ATTENTION_RATE, rel=1e-9)
    gqa_slow = stage_cost(m, toy_hardware(attention_kind={"gqa": 0.5}), Layout(), Engine(), groups, prefill=True)
    gqa_flops = 2 * 4 * (16 + 8) * (1000 * 1001 / 2)  # 2 nq (d_qk + d_v) over the causal keys
    assert gqa_slow.total_s[0] - base.total_s[0] == pytest.approx(gqa_flops / ATTENTION_RATE, rel=1e-9)


def h200_plain():
    """h200 with one attention fraction for every dtype and no per-request overhead (points are generated from it)."""
    hw = api.hardware_of("h200")
    eff = hw.efficiency.model_copy(update={"matmul_fp8": None, "attention_fp8": None, "prefill_overhead_s": 0.0})
    return hw.model_copy(update={"efficiency": eff})


def synthetic_sets(truth: dict, models, lengths=(8192, 32768, 131072)):
    """Prefill latencies the roofline gives with the ``truth`` efficiencies, on the layout the base profile picks."""
    hw = h200_plain()
    kinds = {MixerType(k): v for k, v in truth.get("attention_kind", {}).items()}  # the field's keys are enums
    truth = {**truth, "attention_kind": kinds} if kinds else truth
    true_hw = hw.model_copy(update={"efficiency": hw.efficiency.model_copy(update=truth)})
    sets = []
    for name, gpus in models:
        m = api.model_of(name)
        layout = RooflinePrefill(m, Instance(hw, gpus), capacity="per_request").layout
        times = RooflinePrefill(m, Instance(true_hw, gpus, layout)).prefill_s(np.array(lengths, dtype=float))
        sets.append(CalibrationSet(m, gpus, [CalibrationPoint(n, float(t)) for n, t in zip(lengths, times)]))
    return hw, sets


FOUR_KINDS = [("llama-3.1-8b", 1), ("qwen3.5-397b", 8), ("kimi-k2", 16), ("mimo-v2-flash", 8)]  # gqa, +linear, mla, +swa


def test_joint_fit_recovers_each_kinds_factor():
    """Points generated with attention 0.45 and factors linear 0.4, mla 1.1, swa 0.6 over four models (gqa only,
    gqa + Gated DeltaNet, MLA, gqa + SWA) are fitted back to those values; the calibrated profile carries them
    with a 'calibrated:' source and loads back as a normal hardware profile."""
    # mla 1.1: below 1 / the memory fraction, so that no kernel of the truth is capped at the chip's peak
    truth = {"attention": 0.45, "attention_kind": {"linear": 0.4, "mla": 1.1, "swa": 0.6}}
    hw, sets = synthetic_sets(truth, FOUR_KINDS)
    result = calibrate_sets(sets, hw, fit=["attention", "attention_linear", "attention_mla", "attention_swa"])
    assert result.fitted["attention"] == pytest.approx(0.45, rel=1e-4)
    for kind, value in truth["attention_kind"].items():
        assert result.fitted[f"attention_{kind}"] == pytest.approx(value, rel=1e-4)
        assert result.hardware.efficiency.attention_kind[kind] == pytest.approx(value, rel=1e-4)
    assert result.before["attention_linear"] == 1.0
    assert result.hardware.efficiency_sources["attention_kind"].startswith("calibrated: ")
    assert "kimi-k2" in result.hardware.efficiency_sources["attention_kind"]
    again = load_hardware_profile(json.loads(json.dumps(hardware_to_yaml_dict(result.hardware))))
    assert again.efficiency.attention_kind == result.hardware.efficiency.attention_kind
    # every model's kinds are shared with another except kimi-k2's mla: left out, it is predicted at mla 1
    assert set(result.leave_one_model_out) == {name for name, _ in FOUR_KINDS}
    assert result.leave_one_model_out["llama-3.1-8b"] < 1e-3  # attention is fitted on the others' gqa layers


def test_leave_one_model_out_by_hand_one_fraction():
    """Fit attention alone to one point of each of two gqa models generated at 0.3 (llama-3.1-8b) and 0.5
    (qwen3-8b). Leaving llama out fits qwen's point exactly (0.5), so llama's error is T_llama(0.5) / T_llama(0.3)
    - 1; and the other way round."""
    hw = h200_plain()
    models = {"llama-3.1-8b": 0.3, "qwen3-8b": 0.5}
    sets, times = [], {}
    for name, attention in models.items():
        m = api.model_of(name)
        layout = RooflinePrefill(m, Instance(hw, 1), capacity="per_request").layout

        def at(value, m=m, layout=layout):
            profile = hw.model_copy(update={"efficiency": hw.efficiency.model_copy(update={"attention": value})})
            return float(RooflinePrefill(m, Instance(profile, 1, layout)).prefill_s(np.array([65536.0]))[0])

        times[name] = at
        sets.append(CalibrationSet(m, 1, [CalibrationPoint(65536, at(attention))]))
    result = calibrate_sets(sets, hw, fit=["attention"])
    llama, qwen = times["llama-3.1-8b"], times["qwen3-8b"]
    assert result.leave_one_model_out["llama-3.1-8b"] == pytest.approx(abs(llama(0.5) / llama(0.3) - 1), rel=1e-6)
    assert result.leave_one_model_out["qwen3-8b"] == pytest.approx(abs(qwen(0.3) / qwen(0.5) - 1), rel=1e-6)
    assert result.leave_one_model_out["llama-3.1-8b"] > 0.05  # the case is not trivial


def test_leave_one_model_out_holds_a_kind_only_the_left_out_model_has():
    """Fit attention and attention_linear on llama-3.1-8b (gqa) and qwen3.5-397b (gqa + Gated DeltaNet), points made
    at attention 0.4 and linear 0.3. Left out, qwen3.5 is predicted with attention fitted on llama alone (0.4)
    and its linear factor held at the base's 1: the error is max |T(0.4, no factor) / T(0.4, 0.3) - 1|."""
    truth = {"attention": 0.4, "attention_kind": {"linear": 0.3}}
    hw, sets = synthetic_sets(truth, [("llama-3.1-8b", 1), ("qwen3.5-397b", 8)])
    result = calibrate_sets(sets, hw, fit=["attention", "attention_linear"])
    qwen = sets[1]
    lengths = np.array([p.length_tokens for p in qwen.points], dtype=float)
    measured = np.array([p.prefill_s for p in qwen.points])
    held = hw.model_copy(update={"efficiency": hw.efficiency.model_copy(update={"attention": 0.4})})
    layout = RooflinePrefill(qwen.model, Instance(hw, 8), capacity="per_request").layout
    predicted = RooflinePrefill(qwen.model, Instance(held, 8, layout)).prefill_s(lengths)
    want = float(np.max(np.abs(predicted / measured - 1)))
    assert want > 0.005  # the held factor is seen (Gated DeltaNet cores are about 1% of qwen3.5's prefill)
    assert result.leave_one_model_out["qwen3.5-397b"] == pytest.approx(want, rel=1e-4)
    assert result.fitted["attention_linear"] == pytest.approx(0.3, rel=1e-4)


def test_a_kind_no_model_has_is_refused():
    hw, sets = synthetic_sets({"attention": 0.4}, [("llama-3.1-8b", 1)])
    with pytest.raises(PlanInputError, match="attention_mla cannot be fitted: no layer of llama-3.1-8b is of kind mla"):
        calibrate_sets(sets, hw, fit=["attention", "attention_mla"])


def test_cli_fit_takes_a_kind(tmp_path, run_cli):
    """`calibrate --fit attention,attention_linear` over two models writes the factor and its source into the
    profile, and that profile slows only the linear layers: a pure-gqa model predicts as before."""
    truth = {"attention": 0.4, "attention_kind": {"linear": 0.3}}
    hw, sets = synthetic_sets(truth, [("llama-3.1-8b", 1), ("qwen3.5-397b", 8)])
    points = tmp_path / "points.csv"
    points.write_text(
        "length,prefill_s,model,gpus\n"
        + "".join(f"{p.length_tokens},{p.prefill_s!r},{s.model.name},{s.gpus}\n" for s in sets for p in s.points)
    )
    base, out = tmp_path / "h200-plain.yaml", tmp_path / "h200-kinds.yaml"
    base.write_text(dump_yaml(hardware_to_yaml_dict(hw.model_copy(update={"name": "h200-plain"}))))
    res = run_cli(
        "calibrate", "--hardware", base, "--points", points, "--fit", "attention,attention_linear", "-o", out, "-f", "json"
    )
    assert res.code == 0, res.err
    calibrated = resolve_hardware(str(out))
    assert calibrated.efficiency.attention_kind["linear"] == pytest.approx(0.3, rel=1e-3)
    assert calibrated.efficiency_sources["attention_kind"].startswith("calibrated: attention_linear fitted to 6 ")
    bad = run_cli("calibrate", "--hardware", base, "--points", points, "--fit", "attention_sparse")
    assert bad.code == 2 and "no layer of" in bad.err and "Traceback" not in bad.err


def test_linear_prefill_takes_at_least_its_chunk_steps_by_hand():
    """1,000 tokens in 64-token chunks: ceil(1000 / 64) = 16 steps one after another. At 1 ms a step the kda core
    takes 16 ms instead of 4,480,000 / 25 TFLOPS = 0.18 us; four prompts side by side still 16 ms (their chunks
    run in parallel); the gqa layer and a decode step do not change."""
    m = tiny_hybrid()
    hw = toy_hardware()
    groups = prefill_work(m, np.array([1000.0]))
    assert [w.sequential_steps[0] for _, w in groups[:-1]] == [0.0, 16.0]
    floor = Engine(linear_chunk_step_s=1e-3)
    base = stage_cost(m, hw, Layout(), Engine(), groups, prefill=True)
    got = stage_cost(m, hw, Layout(), floor, groups, prefill=True)
    linear_s = 4480 * 1000 / ATTENTION_RATE
    assert got.compute_s[0] - base.compute_s[0] == pytest.approx(16e-3 - linear_s, rel=1e-9)
    four = stage_cost(m, hw, Layout(), floor, groups, requests=4.0, prefill=True)
    four_base = stage_cost(m, hw, Layout(), Engine(), groups, requests=4.0, prefill=True)
    assert four.compute_s[0] - four_base.compute_s[0] == pytest.approx(16e-3 - 4 * linear_s, rel=1e-9)
    from prfaas_plan.accounting.work import decode_work

    steps = decode_work(m, np.array([8.0]), 1000.0)
    assert stage_cost(m, hw, Layout(), floor, steps).total_s[0] == stage_cost(m, hw, Layout(), Engine(), steps).total_s[0]


@pytest.mark.parametrize("name", ["sglang", "vllm"])
def test_sourced_chunk_step_is_read_from_its_source_text(name):
    """The engines that run FLA's Triton chunked kernels carry the per-chunk step their source measures: the text
    gives the two lengths' times and the slope between them, and the value is that slope (64-token chunks)."""
    import re

    from prfaas_plan.timing.engines import engine_profile

    profile = engine_profile(name)
    text = profile.field_sources["kernels.linear_chunk_step_us"]
    assert "FLA" in text and "H100" in text
    short = float(re.search(r"1x8192 ([\d.]+) ms", text).group(1))
    long = float(re.search(r"1x65536 ([\d.]+) ms", text).group(1))
    a, b, c, d, slope = re.search(r"\(([\d.]+) - ([\d.]+)\) ms / \((\d+) - (\d+)\) chunks = ([\d.]+) us", text).groups()
    assert (float(a), float(b), int(c), int(d)) == (long, short, 65536 // 64, 8192 // 64)
    assert float(slope) == round((long - short) / (65536 // 64 - 8192 // 64) * 1e3, 2)
    assert profile.kernels.linear_chunk_step_us == float(slope)
    assert engine_profile("generic").kernels.linear_chunk_step_us == 0.0  # generic: today's behaviour


def test_a_mixed_serving_step_keeps_the_prompts_chunk_floor():
    """A step of running decodes plus one prompt's chunk (``timing.serving``) still pays the chunked
    linear-attention floor of the prompt: with the floor at 1 ms a step, 1,000 tokens' 16 chunks
    take at least 16 ms in the kda layer, beside 3 decodes as alone."""
    from prfaas_plan.timing.instance import Instance
    from prfaas_plan.timing.serving import mixed_step_cost

    m, hw = tiny_hybrid(), toy_hardware()
    floor = Instance(hw, 1, Layout(), Engine(linear_chunk_step_s=1e-3, prefill_tokens_per_pass=4096))
    plain = Instance(hw, 1, Layout(), Engine(prefill_tokens_per_pass=4096))
    with_floor, _ = mixed_step_cost(m, floor, Layout(), 3.0, 1000.0, [1000.0], [0.0])
    without, _ = mixed_step_cost(m, plain, Layout(), 3.0, 1000.0, [1000.0], [0.0])
    assert float(with_floor[0]) - float(without[0]) >= 16e-3 - 4480 * 1000 / ATTENTION_RATE - 1e-9


def test_a_kernel_multiplier_never_takes_attention_past_the_chips_peak():
    """A per-kind factor of 20 on a chip whose attention runs at 0.25 of peak: the core runs at the
    peak (1 / 0.25 = 4x faster), not 20x, in FLOPs and in bandwidth."""
    from prfaas_plan.accounting.work import decode_work

    m, hw = tiny_hybrid(), toy_hardware()
    fast = Engine(attention=(("gqa", 20.0, 20.0), ("linear", 20.0, 20.0)))
    groups = prefill_work(m, np.array([1000.0]))
    base = stage_cost(m, hw, Layout(), Engine(), groups[:1], prefill=True)
    capped = stage_cost(m, hw, Layout(), fast, groups[:1], prefill=True)
    frac = hw.efficiency.attention
    attn_s = groups[0][1].attention_flops[0] / (hw.peak_flops("bf16") * frac)
    assert base.compute_s[0] - capped.compute_s[0] == pytest.approx(attn_s * (1 - frac), rel=1e-9)
    steps = decode_work(m, np.array([8.0]), 1000.0)
    assert stage_cost(m, hw, Layout(), fast, steps[:1]).memory_s[0] >= steps[0][1].kv_bytes[0] / hw.memory_bytes_per_s - 1e-15
