"""Per-chip efficiencies from each chip's own sources: per-dtype attention and matmul fractions,
their visible fallback, and an ``efficiency_sources`` entry for every efficiency a profile sets.

Independent values: the LMSYS FP8 FMHA kernel times (205 ms on GB300, 277 ms on GB200 for one
128K-token DeepSeek layer), read back from the profiles' own source text, and a hand count of the
attention FLOPs of a 128K DeepSeek-V3 prefill; AMD's MI300X FP8 MAF (1273 TFLOPs), parsed from the
source text, over the profile's fp8 peak.
"""

from __future__ import annotations

import re

import pytest
from conftest import calibrated_on_truth

from prfaas_plan import api
from prfaas_plan.choices import ComputeDtype
from prfaas_plan.profiles.hardware import FALLBACK, FIELD_DTYPE, load_hardware_profile
from prfaas_plan.profiles.registry import resolve_hardware, shipped_names
from prfaas_plan.timing.cost import attention_rate, matmul_rate
from prfaas_plan.views.profiles import hardware_show_view

PROMPT_TOKENS = 131072  # 128K
FP8_ATTENTION = {"attention": "fp8"}


def _kernel_s(hw) -> float:
    """The FP8 FMHA kernel time the profile's attention_fp8 source states (LMSYS table), in s."""
    return float(re.search(r"takes (\d+) ms", hw.efficiency_sources["attention_fp8"]).group(1)) / 1e3


def _ttft_s(hw, **precision) -> float:
    est = api.estimate(
        "deepseek-v3", hw, 4, input_tokens=PROMPT_TOKENS, output_tokens=1, precision=precision or None, parallel={"tp": 4}
    )
    return est.ttft_s


def test_gb300_fp8_attention_rate_over_gb200_is_the_measured_kernel_speedup():
    """The two chips' fp8 attention rates stand in the ratio of the measured kernel times
    (277 / 205 = 1.35): their fp8 peaks are equal, so the fractions carry the measurement."""
    gb300, gb200 = resolve_hardware("gb300"), resolve_hardware("gb200")
    assert gb300.peak_tflops.fp8 == gb200.peak_tflops.fp8
    ratio = attention_rate(gb300, ComputeDtype.fp8) / attention_rate(gb200, ComputeDtype.fp8)
    assert ratio == pytest.approx(_kernel_s(gb200) / _kernel_s(gb300), rel=1e-3)
    # and each fraction is the layer's FLOPs (hand count) over the kernel time, over the peak
    layer_flops = 128 * 2 * (192 + 128) * PROMPT_TOKENS * (PROMPT_TOKENS + 1) / 2
    for hw in (gb300, gb200):
        assert hw.efficiency.attention_fp8 == pytest.approx(layer_flops / _kernel_s(hw) / (hw.peak_tflops.fp8 * 1e12), rel=1e-3)


def test_gb300_prefills_128k_with_fp8_attention_faster_than_gb200_because_of_its_attention():
    """GB300 is faster than GB200 on a 128K FP8-attention prefill, and the attention fractions
    account for the gain: GB200 given GB300's attention_fp8 gains exactly the attention FLOPs
    (61 MLA layers, hand count, split over tp = 4) x (1 / rate_gb200 - 1 / rate_gb300)."""
    gb300, gb200 = resolve_hardware("gb300"), resolve_hardware("gb200")
    t300, t200 = _ttft_s(gb300, **FP8_ATTENTION), _ttft_s(gb200, **FP8_ATTENTION)
    assert t300 < t200
    lifted = gb200.model_copy(
        update={"efficiency": gb200.efficiency.model_copy(update={"attention_fp8": gb300.efficiency.attention_fp8})}
    )
    t_lifted = _ttft_s(lifted, **FP8_ATTENTION)
    flops_per_chip = 61 * 128 * 2 * (192 + 128) * PROMPT_TOKENS * (PROMPT_TOKENS + 1) / 2 / 4
    by_hand = flops_per_chip * (1 / attention_rate(gb200, ComputeDtype.fp8) - 1 / attention_rate(gb300, ComputeDtype.fp8))
    assert t200 - t_lifted == pytest.approx(by_hand, rel=1e-6)
    assert t200 - t_lifted > 0.5 * (t200 - t300)  # most of GB300's gain is its attention kernel
    # with bf16 attention (equal bf16 fractions on the two chips) the gap is smaller
    assert t200 / t300 > _ttft_s(gb200) / _ttft_s(gb300)


def test_mi300x_fp8_matmul_uses_its_own_fp8_measurement():
    """MI300X's FP8 GEMMs run at AMD's measured FP8 MAF, not its BF16 fraction on the FP8 peak."""
    hw = resolve_hardware("mi300x")
    source = hw.efficiency_sources["matmul_fp8"]
    assert "FP8" in source and not source.startswith(("assumption", "fallback"))
    measured_tflops = float(re.search(r"MAF FP8 (\d+(?:\.\d+)?) TFLOPs", source).group(1))
    assert hw.efficiency.field_in_use("matmul_fp8") == "matmul_fp8"
    assert hw.efficiency.matmul_fp8 == pytest.approx(measured_tflops / hw.peak_tflops.fp8, abs=1e-4)
    assert matmul_rate(hw, ComputeDtype.fp8) == pytest.approx(measured_tflops * 1e12, rel=1e-4)
    assert hw.efficiency.matmul_fp8 != hw.efficiency.matmul


def test_fp4_matmul_uses_its_own_figure_else_the_fp8_fraction():
    """GB200's FP4 GEMMs run at Azure's measured cuBLASLt FP4 rate (parsed from its source); B200
    (no FP4 measurement) runs FP4 at its fp8 fraction of the fp4 peak; H200 (no fp4 peak) at fp8."""
    gb200 = resolve_hardware("gb200")
    measured = float(
        re.search(r"([\d,.]+) TFLOPS at m = n = k", gb200.efficiency_sources["matmul_fp4"]).group(1).replace(",", "")
    )
    assert matmul_rate(gb200, ComputeDtype.fp4) == pytest.approx(measured * 1e12, rel=1e-4)
    b200 = resolve_hardware("b200")
    assert b200.efficiency_sources["matmul_fp4"].startswith("fallback: matmul_fp8")
    assert matmul_rate(b200, ComputeDtype.fp4) == pytest.approx(b200.peak_tflops.fp4 * 1e12 * b200.efficiency.matmul_fp8)
    h200 = resolve_hardware("h200")
    assert matmul_rate(h200, ComputeDtype.fp4) == matmul_rate(h200, ComputeDtype.fp8)


@pytest.mark.parametrize("name", shipped_names("hardware_profiles"))
def test_every_efficiency_a_shipped_profile_sets_names_its_source(name):
    """Each efficiency field the profile sets, and each per-dtype fraction of a dtype the chip
    has, has an entry: a source (a location and the figure the profile uses), an assumption, or
    the fallback it takes (naming the field it falls back to, and only when it has no figure)."""
    hw = resolve_hardware(name)
    fields = hw.efficiency_fields()
    assert set(hw.efficiency.model_fields_set) <= set(fields)
    assert {f for f in FIELD_DTYPE if getattr(hw.peak_tflops, FIELD_DTYPE[f]) is not None} <= set(fields)
    missing = [f for f in fields if f not in hw.efficiency_sources]
    assert not missing, missing
    for f in fields:
        text = hw.efficiency_sources[f]
        if text.startswith("fallback:"):
            assert getattr(hw.efficiency, f) is None, (f, "has its own figure but says fallback")
            assert text.startswith(f"fallback: {hw.efficiency.field_in_use(f)} "), (f, text)
        elif not text.startswith(("assumption:", "calibrated:")):
            assert "/" in text, (f, "a source names where it is")
            value = getattr(hw.efficiency, f)
            assert f"{value:g}" in text.replace(",", ""), (f, value, "the figure the profile uses is in its source")
        assert getattr(hw.efficiency, f) is not None or f in FALLBACK, f


def test_gb300_is_listed_everywhere_the_shipped_hardware_is():
    assert "gb300" in shipped_names("hardware_profiles")
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "docs" / "yaml-reference.md").read_text()
    shipped = readme[readme.index("Shipped: `h100`") :].split("\n\n")[0]  # the paragraph listing them
    assert all(f"`{name}`" in shipped for name in shipped_names("hardware_profiles"))


PROFILE_WITHOUT_FP8 = {
    "name": "no-fp8-figures",
    "peak_tflops": {"bf16": 1000, "fp8": 2000},
    "memory_gib": 80,
    "memory_bandwidth_tb_per_s": 3.0,
    "scale_up_gb_per_s": 400,
    "efficiency": {"matmul": 0.8, "attention": 0.6, "memory": 0.85},
}


def test_fp8_attention_falls_back_to_the_bf16_fraction_visibly():
    """Without attention_fp8 an fp8 attention core runs at the bf16 fraction of the fp8 peak;
    the fallback is stated by the profile and shown by `hardware show`."""
    hw = load_hardware_profile(PROFILE_WITHOUT_FP8)
    assert hw.efficiency.attention_fraction(ComputeDtype.fp8) == hw.efficiency.attention
    assert attention_rate(hw, ComputeDtype.fp8) == pytest.approx(2000e12 * 0.6)
    assert matmul_rate(hw, ComputeDtype.fp8) == pytest.approx(2000e12 * 0.8)
    assert hw.efficiency_source("attention_fp8") == "fallback: attention (no source for this chip)"
    notes = hardware_show_view(hw).notes
    assert "efficiency attention_fp8 0.6: fallback: attention (no source for this chip)" in notes
    # given its own figure, the fp8 rate follows it and the bf16 rate does not move
    own = load_hardware_profile(
        {**PROFILE_WITHOUT_FP8, "efficiency": {**PROFILE_WITHOUT_FP8["efficiency"], "attention_fp8": 0.45}}
    )
    assert attention_rate(own, ComputeDtype.fp8) == pytest.approx(2000e12 * 0.45)
    assert attention_rate(own, ComputeDtype.bf16) == attention_rate(hw, ComputeDtype.bf16) == pytest.approx(1000e12 * 0.6)


def test_a_shipped_fallback_takes_the_bf16_fraction():
    """rubin has no fp8 attention source: its fp8 attention rate is its bf16 fraction on the fp8 peak."""
    hw = resolve_hardware("rubin")
    assert hw.efficiency.attention_fp8 is None
    assert attention_rate(hw, ComputeDtype.fp8) == pytest.approx(hw.peak_tflops.fp8 * 1e12 * hw.efficiency.attention)


def test_efficiency_sources_must_name_efficiency_fields():
    from prfaas_plan.errors import PlanInputError

    with pytest.raises(PlanInputError, match="efficiency_sources names attn_fp8, not an efficiency field"):
        load_hardware_profile({**PROFILE_WITHOUT_FP8, "efficiency_sources": {"attn_fp8": "a typo"}})


def test_calibrating_attention_keeps_the_measured_fp8_to_bf16_ratio():
    """Fitting ``attention`` fits the bf16 fraction and scales attention_fp8 by the same factor;
    the fitted fields' sources say they were calibrated."""
    base = load_hardware_profile(
        {**PROFILE_WITHOUT_FP8, "efficiency": {**PROFILE_WITHOUT_FP8["efficiency"], "attention_fp8": 0.3}}
    )
    result = calibrated_on_truth(base, {"attention": 0.3}, ["attention"])
    assert result.fitted["attention"] == pytest.approx(0.3, rel=1e-3)
    assert result.hardware.efficiency.attention_fp8 == pytest.approx(0.3 * 0.3 / 0.6, rel=1e-3)
    assert result.hardware.efficiency_sources["attention"].startswith("calibrated: fitted to 2 measured")
