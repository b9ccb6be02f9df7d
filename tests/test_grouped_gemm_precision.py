"""Routed experts at low precision: the grouped FP4 GEMM fraction each Blackwell profile carries, and
the trtllm-bench limits of a checkpoint whose quantization the tool does not tune (gpt-oss MXFP4).

Independent values: the FlashInfer trtllm-gen NVFP4 MoE kernel's latency and TFLOPS (FlashInfer pull
request 5301, B300), read back from the profile's own source text; a hand count of that kernel's FLOPs
(DeepSeek-V3's experts, 32 of 256 local, top-8) and of the model's shape term for its two GEMMs; the
TensorRT-LLM ``get_settings`` rule max(max_num_tokens, max_isl + max_batch_size) over TorchLlmArgs'
defaults (2048 requests, 8192 tokens); the admission rule of an offline run counted by hand.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from prfaas_plan import api, published
from prfaas_plan.accounting.work import prefill_work
from prfaas_plan.choices import ComputeDtype
from prfaas_plan.profiles.registry import resolve_hardware
from prfaas_plan.timing.cost import Engine, grouped_matmul_rate, matmul_rate, stage_cost
from prfaas_plan.timing.layout import Layout
from prfaas_plan.timing.offline import batch_per_iteration

DATA = Path(__file__).resolve().parent / "data"
GPT_OSS = DATA / "hf-configs" / "openai--gpt-oss-120b.config.json"
# DeepSeek-V3's routed experts (its config): hidden 7168, expert intermediate 2048, 256 experts, top-8
H, I_EXPERT, EXPERTS, TOP_K = 7168, 2048, 256, 8
K0, M0 = 717.0, 100.0  # the shape term's constants (schema defaults, DeepGEMM fits; every Blackwell profile)
BLACKWELL = ("b200", "gb200", "b300", "gb300")


def _kernel_lines(hw) -> dict[int, tuple[float | None, float]]:
    """{tokens: (ms or None, TFLOPS)} of the kernel table the profile's grouped_matmul_fp4 source quotes."""
    text = hw.efficiency_sources["grouped_matmul_fp4"]
    lines = {
        int(t): (float(ms), float(tf))
        for ms, t, tf in re.findall(r"takes (\d+\.\d+) ms at (\d+) tokens, (\d+\.\d+) TFLOPS", text)
    }
    lines.update({int(t): (None, float(tf)) for t, tf in re.findall(r"the (\d+)-token line, (\d+\.\d+) TFLOPS", text)})
    return lines


def _shape_by_hand(rows: float) -> float:
    """The model's shape factor for a gated expert (gate+up: 2/3 of the FLOPs at K = hidden; down: 1/3
    at K = intermediate) at ``rows`` tokens per expert, counted from the formula in cost._shape's doc."""
    depth = 2 / 3 * (1 + K0 / H) + 1 / 3 * (1 + K0 / I_EXPERT)
    return depth * (rows + M0) / rows


def _fraction_from(tflops: float, tokens: int, peak_tflops: float) -> float:
    rows = tokens * TOP_K / EXPERTS  # per expert on average (uniform routing): 32 local experts take 1/8 of 8 x T
    return tflops * _shape_by_hand(rows) / peak_tflops


def test_b300_grouped_fp4_fraction_is_the_fused_moe_kernel_rate_after_the_shape_term():
    """B300's grouped_matmul_fp4 is its source's 16,384-token line: the kernel's latency is its FLOPs
    (hand count: 16,384 tokens x 8 x 32/256 local x (2 x 7168 x 4096 + 2 x 2048 x 7168)) at the quoted
    TFLOPS, and 2,317.9 TFLOPS x the shape factor at 512 rows per expert over the 15,000 TFLOPS fp4 peak
    is the profile's figure."""
    hw = resolve_hardware("b300")
    source = hw.efficiency_sources["grouped_matmul_fp4"]
    assert not source.startswith(("assumption", "fallback")) and "flashinfer" in source and "B300" in source
    ms, tflops = _kernel_lines(hw)[16384]
    flops = 16384 * TOP_K * (32 / EXPERTS) * (2 * H * 2 * I_EXPERT + 2 * I_EXPERT * H)
    assert flops / (ms * 1e-3) / 1e12 == pytest.approx(tflops, rel=1e-5)
    assert hw.efficiency.grouped_matmul_fp4 == pytest.approx(_fraction_from(tflops, 16384, hw.peak_tflops.fp4), abs=5e-5)
    assert hw.efficiency.grouped_matmul_fp4 < 0.5 * hw.efficiency.matmul_fraction(ComputeDtype.fp4)


def test_the_shape_terms_row_scaling_carries_the_kernels_from_256_to_512_rows_per_expert():
    """Read at 256 rows per expert (the 8,192-token line) the same kernel implies a fraction within 7%
    of the 512-row one: the model's (M + m0) / M term, fitted on Hopper, carries most of the kernel's
    gain from 256 to 512 rows on Blackwell (a property, not the value)."""
    hw = resolve_hardware("b300")
    lines = _kernel_lines(hw)
    at_512 = _fraction_from(lines[16384][1], 16384, hw.peak_tflops.fp4)
    at_256 = _fraction_from(lines[8192][1], 8192, hw.peak_tflops.fp4)
    assert at_256 == pytest.approx(at_512, rel=0.07)
    assert lines[16384][1] / lines[8192][1] > 1.15  # the kernel itself does gain with rows


@pytest.mark.parametrize("name", BLACKWELL)
def test_every_blackwell_profile_names_the_grouped_fp4_figure_it_uses(name):
    """Each of the four takes B300's measured figure (GB300 scaled to its lower dense fraction, as its source
    says), the other three as a stated assumption quoting it."""
    hw, b300 = resolve_hardware(name), resolve_hardware("b300")
    expected = b300.efficiency.grouped_matmul_fp4
    if name == "gb300":  # B300's grouped-over-dense ratio x GB300's dense FP4 fraction in use (matmul_fp8)
        expected = round(expected / b300.efficiency.matmul_fp8 * hw.efficiency.matmul_fp8, 4)
    assert hw.efficiency.grouped_matmul_fp4 == pytest.approx(expected, abs=1e-4)
    source = hw.efficiency_sources["grouped_matmul_fp4"]
    assert source.startswith("assumption: B300") == (name != "b300")
    assert _kernel_lines(hw) == _kernel_lines(b300)


def test_grouped_fraction_applies_to_fp4_experts_only():
    """On B200 FP4 experts run at 9,000 TFLOPS x 0.2186; dense FP4 GEMMs keep matmul_fp4 (its fallback
    matmul_fp8, 0.763); FP8 experts keep the dense FP8 fraction; a chip without an fp4 peak runs FP4
    experts at fp8 with its dense fp8 fraction (H200)."""
    b200 = resolve_hardware("b200")
    assert grouped_matmul_rate(b200, ComputeDtype.fp4) == pytest.approx(9000e12 * 0.2186, rel=1e-9)
    assert matmul_rate(b200, ComputeDtype.fp4) == pytest.approx(9000e12 * 0.763, rel=1e-9)
    assert grouped_matmul_rate(b200, ComputeDtype.fp8) == matmul_rate(b200, ComputeDtype.fp8)
    h200 = resolve_hardware("h200")
    assert grouped_matmul_rate(h200, ComputeDtype.fp4) == matmul_rate(h200, ComputeDtype.fp8)


def test_an_fp4_expert_gemms_time_at_the_new_fraction_by_hand():
    """One DeepSeek-V3 MoE layer, 16,384-token prefill pass on 8 B200s (tp 8), experts in FP4: its
    compute is longer than at the dense fraction by exactly the routed experts' FLOPs (hand count:
    T x 8 x 3 x 2 x 7168 x 2048, / 8 chips) x the shape factor at T x 8 / 256 rows per expert x
    (1 / (9,000 TFLOPS x 0.2186) - 1 / (9,000 TFLOPS x 0.763)); nothing else moves."""
    tokens = 16384
    model = api.precision_of(api.model_of("deepseek-v3"), {"experts": "fp4"})
    moe = [(1, w) for _, w in prefill_work(model, [tokens]) if w.num_experts][:1]
    b200 = resolve_hardware("b200")
    dense = b200.model_copy(update={"efficiency": b200.efficiency.model_copy(update={"grouped_matmul_fp4": None})})
    layout = Layout(tp=8)
    new, old = (stage_cost(model, hw, layout, Engine(), moe, prefill=True) for hw in (b200, dense))
    flops_per_chip = tokens * TOP_K * 3 * 2 * H * I_EXPERT / 8
    by_hand = flops_per_chip * _shape_by_hand(tokens * TOP_K / EXPERTS) * (1 / (9000e12 * 0.2186) - 1 / (9000e12 * 0.763))
    assert new.compute_s[0] - old.compute_s[0] == pytest.approx(by_hand, rel=1e-6)
    experts_s = flops_per_chip * _shape_by_hand(tokens * TOP_K / EXPERTS) / (9000e12 * 0.2186)
    assert 0.4 * new.compute_s[0] < experts_s < new.compute_s[0]  # the experts are the layer's largest kernel
    for part in ("memory_s", "communication_s", "overhead_s"):
        assert getattr(new, part)[0] == getattr(old, part)[0]


# ---------------------------------------------------------------------------------------------
# trtllm-bench's limits for a quantization it does not tune (the gpt-oss 8K/1K row ran one request at a time)


def test_gpt_oss_mxfp4_takes_the_llm_api_defaults_raised_to_hold_a_prompt_and_the_batch():
    """OpenAI's MXFP4 checkpoint is not in trtllm-bench's tuned set: 2048 requests and 8192 tokens, raised
    without chunked prefill to the longest prompt + 2048 (8192 + 2048 = 10,240 at 8K input; 1K input
    keeps 8192 > 1024 + 2048). An NVFP4-expert DeepSeek (FP8 checkpoint, experts overridden) stays tuned."""
    _, gpt_oss = api.import_model(str(GPT_OSS))
    assert not published.trtllm_tuned(gpt_oss)
    assert published.trtllm_tuned(api.precision_of(api.model_of("deepseek-v3"), {"experts": "fp4"}))
    hw = api.hardware_of("gb200")
    for input_tokens, budget in ((8192, 8192 + 2048), (1024, 8192)):
        assert published.trtllm_bench_limits(gpt_oss, hw, 1, input_tokens, 1024, tuned=False) == (2048, budget)


def test_the_gpt_oss_8k_row_is_read_with_the_tools_own_limits():
    """The GB200 TP1 8192/1024 gpt-oss row (N12) runs at a 10,240-token budget and 2048 requests, not the
    engine's 8192-token default that an 8192-token prompt fills alone."""
    rows = {r["id"]: r for r in published.read_rows(str(DATA / "published_benchmarks_new.csv"))}
    row = rows["N12"]
    fields = published.read_fields(row)
    checkpoint, precision = published.model_of_row(row, DATA)
    args = published._estimate_args(row, fields, checkpoint, precision, published.engine_name_of(row["engine"]))
    assert args["engine"]["prefill_tokens_per_pass"] == 8192 + 2048 and args["max_batch"] == 2048
    assert args["engine"]["chunked_prefill"] is False


def test_a_whole_prompt_joins_a_running_batch_only_when_the_budget_holds_it_and_the_decodes():
    """Six 8192-token prompts, 4 output tokens (3 decode steps each), no chunking. At a budget of 8192 a
    prompt is admitted only into an empty pass: the batch never passes 1 and the run takes 6 x 4 = 24
    iterations. At 10,240 one prompt joins per iteration while the decodes fit beside it (10,240 - 8192 =
    2048 >= running): batches 0, 1, 2, 3, 3, 3, 3, 2, 1 (9 iterations) by hand."""
    alone = batch_per_iteration(6, 100, 8192, 4, 8192, False)
    assert alone.max() == 1 and alone.size == 24
    joined = batch_per_iteration(6, 100, 8192, 4, 8192 + 2048, False)
    assert joined.tolist() == [0, 1, 2, 3, 3, 3, 3, 2, 1]


def test_an_nvfp4_checkpoint_is_sized_at_half_a_byte_per_parameter_as_the_tool_sizes_it():
    """DeepSeek-R1 NVFP4 (FP4 experts, FP8 KV) on 4 x B200 DEP4 at 1024/1024: the tool counts all 671e9
    parameters at NVFP4's 0.5 B (its BYTES_PER_ELEM), not at the FP8 of the non-expert layers. By hand:
    0.9 x (4 x 180 GiB - 671e9 x 0.5 B) / (2 x 61 layers x 128 heads x 56 x 1 B x 2048 tokens) = 219.9
    requests -> 224 (rounded up to 32 below 256); tokens 224 x 2 = 448 -> the 2,048 floor."""
    model = api.precision_of(api.model_of("deepseek-v3"), {"experts": "fp4", "kv": "fp8"})
    assert published.trtllm_tuned(model)
    requests = 0.9 * (4 * 180 * 2**30 - 671e9 * 0.5) / (2 * 61 * 128 * 56 * 1 * 2048)
    assert requests == pytest.approx(219.9, abs=0.05)
    assert published.trtllm_bench_limits(model, api.hardware_of("b200"), 4, 1024, 1024) == (224, 2048)


def test_calibrating_matmul_keeps_the_grouped_fp4_to_bf16_ratio():
    """Fitting ``matmul`` on B300 (a dense bf16 model's prefill, made at half B300's matmul fraction)
    scales grouped_matmul_fp4 by the same factor: 0.2186 x 0.393 / 0.786."""
    from conftest import calibrated_on_truth

    result = calibrated_on_truth(resolve_hardware("b300"), {"matmul": 0.393}, ["matmul"])
    assert result.fitted["matmul"] == pytest.approx(0.393, rel=1e-3)
    assert result.hardware.efficiency.grouped_matmul_fp4 == pytest.approx(0.2186 * 0.393 / 0.786, rel=1e-3)


def test_no_chip_without_a_measurement_gets_a_faster_grouped_fp4_share_than_the_measured_one():
    """A chip with an FP4 peak but no grouped FP4 measurement takes B300's measured grouped-over-dense
    ratio (a stated assumption), never its dense fraction: otherwise an unmeasured chip's MoE would
    look 3x faster than a measured one in a compare."""
    from prfaas_plan.choices import ComputeDtype
    from prfaas_plan.profiles.registry import resolve_hardware, shipped_names

    b300 = resolve_hardware("b300").efficiency
    measured = b300.grouped_matmul_fraction(ComputeDtype.fp4) / b300.matmul_fraction(ComputeDtype.fp4)
    assert measured == pytest.approx(0.2186 / 0.745)
    for name in shipped_names("hardware_profiles"):
        hw = resolve_hardware(name)
        if hw.peak_tflops.fp4 is None:
            continue
        e = hw.efficiency
        ratio = e.grouped_matmul_fraction(ComputeDtype.fp4) / e.matmul_fraction(ComputeDtype.fp4)
        assert ratio <= measured * 1.001, (name, ratio)
        if "assumption" in hw.efficiency_source("grouped_matmul_fp4") and name not in ("b200", "gb200"):
            assert ratio == pytest.approx(measured, rel=1e-3), name  # the B300 ratio, as its source says
