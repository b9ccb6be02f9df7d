"""The engine as a dimension: engine profiles (timing/engines/<name>.yaml), their defaults and kernel
multipliers, the FP8-checkpoint KV default, and the ways an engine is named (scenario, api, CLI, CSV).

The kernel multipliers are checked by hand on the synthetic one-layer passes of ``test_hand_counts``
(100 TFLOPS bf16 at matmul 0.5 and attention 0.25, 1.6e12 B/s of memory), so each number below is
a hand count, not a figure read back from the code."""

from __future__ import annotations

import pytest
import yaml
from test_hand_counts import ALPHA_NIC, NIC_BPS, REL, UP_BPS, cost, one_layer

from prfaas_plan import api
from prfaas_plan.choices import Dtype, EngineName
from prfaas_plan.errors import PlanInputError
from prfaas_plan.profiles.engine import EngineProfile, flat_values
from prfaas_plan.profiles.scenario import load_scenario
from prfaas_plan.profiles.serving import EngineSpec
from prfaas_plan.published import engine_name_of
from prfaas_plan.timing import engines
from prfaas_plan.timing.cost import Engine
from prfaas_plan.timing.decode import step_cost
from prfaas_plan.timing.estimate import estimate as run_estimate
from prfaas_plan.timing.instance import Instance
from prfaas_plan.timing.layout import Layout

# the serving defaults the planner used before engines existed (profiles/serving.py EngineSpec, as it was)
TODAY = dict(overlap=0.0, expert_imbalance=1.18, prefill_tokens_per_pass=8192, chunked_prefill=True, mtp_tokens_per_step=1.0)
HAND = dict(expert_imbalance=1.0)  # test_hand_counts' engine


# ---------------------------------------------------------------------------------------------
# generic is today's behaviour


def test_generic_profile_is_the_historical_defaults_with_every_multiplier_one():
    generic = engines.engine_profile(EngineName.generic)
    assert generic.defaults.model_dump(include=set(TODAY)) == TODAY
    assert generic.defaults.kv_dtype_fp8_checkpoint is None and generic.defaults.max_batch is None
    kernels = {k: v for k, v in flat_values(generic).items() if k.startswith("kernels.")}
    assert kernels == {k: (0.0 if k.endswith(("step_overhead_s", "linear_chunk_step_us")) else 1.0) for k in kernels}
    assert Engine() == Engine.of(None) == Engine.of(EngineSpec()) == Engine.of(EngineSpec(name="generic"))
    assert Engine.of(None) == Engine(**TODAY)


@pytest.mark.parametrize(
    ("model", "hardware", "gpus", "lengths"),
    [
        ("qwen3-8b", "h100", 1, (4096, 1024)),
        ("deepseek-v3", "h200", 8, (1024, 1024)),
    ],
)
def test_generic_estimate_equals_the_pre_engine_code_path(model, hardware, gpus, lengths):
    """api.estimate with no engine, with engine 'generic' and with today's values written out equals
    timing.estimate on an Instance whose Engine carries today's values and nothing else (the code path
    before engines: no kernel multipliers, no engine batch limit, no step overhead)."""
    m, hw = api.model_of(model), api.hardware_of(hardware)
    old = run_estimate(m, Instance(hw, gpus, None, Engine(**TODAY)), *lengths)
    for engine in (None, "generic", {"name": "generic", **TODAY}):
        new = api.estimate(model, hardware, gpus, input_tokens=lengths[0], output_tokens=lengths[1], engine=engine)
        assert new == old


# ---------------------------------------------------------------------------------------------
# each multiplier scales exactly the kernel it names


def test_attention_prefill_multiplier_doubles_the_attention_core_compute_only():
    """1e12 projection FLOPs (20 ms at 5e13) + 1e11 attention FLOPs (4 ms at 2.5e13): a GQA prefill multiplier
    0.5 makes the attention core 8 ms, 28 ms in all; a decode step, another kind's multiplier, and the memory,
    communication and overhead parts are untouched."""
    groups = one_layer(mixer_flops=1e12, attention_flops=1e11, mixer_type="gqa")
    half = Engine(attention=(("gqa", 0.5, 1.0),), **HAND)
    base, slow = cost(groups, prefill=True), cost(groups, engine=half, prefill=True)
    assert base.compute_s[0] == pytest.approx(0.024, rel=REL)
    assert slow.compute_s[0] == pytest.approx(0.020 + 0.008, rel=REL)
    for part in ("memory_s", "communication_s", "overhead_s"):
        assert getattr(slow, part)[0] == getattr(base, part)[0]
    assert cost(groups, engine=half, prefill=False).compute_s[0] == pytest.approx(0.024, rel=REL)
    other_kind = Engine(attention=(("mla", 0.5, 0.5),), **HAND)
    assert cost(groups, engine=other_kind, prefill=True).compute_s[0] == pytest.approx(0.024, rel=REL)


def test_attention_decode_multiplier_halves_the_kv_read_rate():
    """4e9 B of KV read at 1.6e12 B/s is 2.5 ms; a decode multiplier 0.5 makes it 5 ms in a decode step, and
    leaves a prefill pass (its own multiplier 1) at 2.5 ms."""
    groups = one_layer(kv_bytes=4e9, mixer_type="gqa")
    half = Engine(attention=(("gqa", 1.0, 0.5),), **HAND)
    assert cost(groups).memory_s[0] == pytest.approx(0.0025, rel=REL)
    assert cost(groups, engine=half).memory_s[0] == pytest.approx(0.005, rel=REL)
    assert cost(groups, engine=half, prefill=True).memory_s[0] == pytest.approx(0.0025, rel=REL)


def test_dense_and_grouped_gemm_multipliers_each_scale_their_own_matrices():
    """Projections 1e12 FLOPs (20 ms), attention 1e11 (4 ms), routed experts 2e12 (40 ms at 5e13, 1e6 tokens):
    dense_gemm 0.5 doubles the projections only (40 + 4 + 40 ms), grouped_gemm 0.5 the experts only
    (20 + 4 + 80 ms)."""
    groups = one_layer(
        mixer_flops=1e12, attention_flops=1e11, expert_flops=2e12, num_experts=8, top_k=2, tokens=1e6, mixer_type="gqa"
    )
    assert cost(groups).compute_s[0] == pytest.approx(0.064, rel=REL)
    assert cost(groups, engine=Engine(dense_gemm=0.5, **HAND)).compute_s[0] == pytest.approx(0.084, rel=REL)
    assert cost(groups, engine=Engine(grouped_gemm=0.5, **HAND)).compute_s[0] == pytest.approx(0.104, rel=REL)
    both = Engine(dense_gemm=0.5, grouped_gemm=0.5, **HAND)
    assert cost(groups, engine=both).compute_s[0] == pytest.approx(0.124, rel=REL)


def test_all_to_all_multiplier_scales_the_dispatch_and_combine_time_not_their_bytes():
    """The EP 4 dispatch/combine of test_hand_counts (9,600 B fp8 out, 19,200 B bf16 back, a third of each in
    the domain): at an all-to-all rate multiplier 0.5 each takes twice as long; the bytes stay."""
    groups = one_layer(tokens=400.0, num_experts=8, top_k=2, expert_flops=1e9, has_mixer=False)
    layout = Layout(dp_attention=4, ep=4)
    step = lambda sent: 2 * ALPHA_NIC + max(sent / 3 / UP_BPS, sent * 2 / 3 / NIC_BPS)  # noqa: E731
    base = cost(groups, layout, dtypes={"experts": "fp8"})
    slow = cost(groups, layout, dtypes={"experts": "fp8"}, engine=Engine(all_to_all=0.5, **HAND))
    assert slow.communication_s[0] == pytest.approx(2 * (step(9600) + step(19200)), rel=REL)
    assert slow.nic_bytes[0] == base.nic_bytes[0] and slow.scale_up_bytes[0] == base.scale_up_bytes[0]


def test_engine_step_overhead_is_added_to_each_decode_step():
    """An engine step overhead of 3 ms adds 3 ms to TPOT on top of the chip's decode_step_overhead_s (added,
    not replacing it), in the overhead part, at every batch."""
    model, hw = api.model_of("qwen3-8b"), api.hardware_of("h100")
    layout = Layout()
    base_s, base = step_cost(model, Instance(hw, 1, layout, Engine()), layout, [1, 64], 4096)
    more_s, more = step_cost(model, Instance(hw, 1, layout, Engine(step_overhead_s=0.003)), layout, [1, 64], 4096)
    assert list(more_s - base_s) == pytest.approx([0.003, 0.003], rel=1e-9)
    assert list(more.overhead_s - base.overhead_s) == pytest.approx([0.003, 0.003], rel=1e-9)
    assert hw.efficiency.decode_step_overhead_s > 0  # the chip's own stays in both


def test_engine_batch_limit_applies_per_attention_group_and_a_given_one_wins():
    """vLLM's max_num_seqs (1024) caps a small model's decode batch, per engine core: two replicas hold 2 x 1024;
    a given max_batch replaces it; generic has no limit (memory decides, far above 1024 here)."""
    one = api.decode("qwen3-8b", "h200", 1, 256, engine="vllm")
    assert (one.batch_size, str(one.limited_by)) == (1024, "max_batch")
    assert api.decode("qwen3-8b", "h200", 2, 256, parallel={"replicas": 2}, engine="vllm").batch_size == 2048
    assert api.decode("qwen3-8b", "h200", 1, 256, engine="vllm", max_batch=300).batch_size == 300
    assert api.decode("qwen3-8b", "h200", 1, 256).batch_size > 1024


def test_an_engine_default_setting_reaches_the_instance_and_a_given_one_wins():
    """TensorRT-LLM admits whole prompts only (enable_chunked_prefill False) within 8,192 tokens a pass: a
    16K prompt is refused naming the budget; giving chunked prefill back accepts it."""
    with pytest.raises(PlanInputError) as info:
        api.estimate("qwen3-8b", "h100", 1, input_tokens=16384, output_tokens=16, engine="trtllm")
    assert info.value.field == "prefill_tokens_per_pass"
    est = api.estimate(
        "qwen3-8b", "h100", 1, input_tokens=16384, output_tokens=16, engine={"name": "trtllm", "chunked_prefill": True}
    )
    assert est.ttft_s > 0
    assert Engine.of(EngineSpec(name="trtllm")).chunked_prefill is False
    assert Engine.of(EngineSpec(name="trtllm", overlap=0.5)).overlap == 0.5


# ---------------------------------------------------------------------------------------------
# the KV dtype an engine picks for an FP8 checkpoint


def test_fp8_checkpoint_kv_default_applies_only_when_no_kv_dtype_is_given():
    """TensorRT-LLM's KV follows a re-quantised checkpoint's declared KV quantisation (ModelOpt FP8/NVFP4):
    weights or experts quantised by the overrides get its FP8 KV; a natively FP8 release (DeepSeek-V3, which
    declares none) and a given KV dtype keep theirs."""
    fp8_model, bf16_model = api.model_of("deepseek-v3"), api.model_of("llama-3.1-8b")
    assert fp8_model.dtypes.weights == Dtype.fp8 and fp8_model.dtypes.kv == Dtype.bf16
    assert api.precision_of(fp8_model, None, "trtllm").dtypes.kv == Dtype.bf16  # native FP8: no KV declared
    assert api.precision_of(fp8_model, {"experts": "fp4"}, "trtllm").dtypes.kv == Dtype.fp8  # an NVFP4 release
    assert api.precision_of(bf16_model, {"weights": "fp8", "kv": "bf16"}, "trtllm").dtypes.kv == Dtype.bf16  # given
    assert api.precision_of(bf16_model, {"weights": "fp8"}, None).dtypes.kv == Dtype.bf16  # generic: the model's
    assert api.precision_of(bf16_model, {"weights": "fp8"}, "sglang").dtypes.kv == Dtype.bf16  # auto: model dtype
    assert api.precision_of(bf16_model, None, "trtllm").dtypes.kv == Dtype.bf16  # not a quantised checkpoint
    assert api.precision_of(bf16_model, {"weights": "fp8"}, "trtllm").dtypes.kv == Dtype.fp8  # served as one


def test_fp8_kv_default_halves_the_kv_an_estimate_holds():
    """Llama-3.1-8B with FP8 weights: TensorRT-LLM's FP8 KV holds half the bytes per request of generic's BF16
    (its chunked-prefill setting aside, both at one 1K prompt)."""
    kw = dict(input_tokens=1024, output_tokens=128, precision={"weights": "fp8"})
    generic = api.estimate("llama-3.1-8b", "h200", 1, **kw).decode_capacity
    trt = api.estimate("llama-3.1-8b", "h200", 1, engine="trtllm", **kw).decode_capacity
    assert trt.kv_bytes_per_request == pytest.approx(generic.kv_bytes_per_request / 2, rel=1e-12)


def scenario_with(tmp_path, **pools) -> dict:
    from conftest import case_study_doc

    doc = case_study_doc()
    for role, engine in pools.items():
        doc[role]["engine"] = engine
    return doc


def precision_and_pools(doc: dict) -> tuple:
    """A scenario's precision and its pools, as the resolver reads them."""
    scenario = load_scenario(doc)
    return scenario.precision, [("prfaas", scenario.prfaas), ("pd", scenario.pd)]


def test_scenario_pools_engine_sets_the_fp8_checkpoint_kv(tmp_path):
    from prfaas_plan.study.resolve import _precision_applied

    doc = scenario_with(tmp_path, prfaas="trtllm", pd={"name": "trtllm"})
    doc["precision"] = {"weights": "fp8"}
    model = api.model_of(doc["model"])
    assert _precision_applied(*precision_and_pools(doc), model, None).dtypes.kv == Dtype.fp8
    doc["precision"] = {"weights": "fp8", "kv": "bf16"}
    assert _precision_applied(*precision_and_pools(doc), model, None).dtypes.kv == Dtype.bf16
    doc["precision"] = None
    del doc["precision"]
    assert _precision_applied(*precision_and_pools(doc), model, None).dtypes == model.dtypes  # bf16 weights: untouched


# ---------------------------------------------------------------------------------------------
# naming an engine: bare string, mapping, bad names


def test_bare_string_and_mapping_forms_load_alike(tmp_path):
    assert (
        EngineSpec.model_validate("sglang") == EngineSpec.model_validate({"name": "sglang"}) == EngineSpec(name=EngineName.sglang)
    )
    bare, mapping = scenario_with(tmp_path, pd="vllm"), scenario_with(tmp_path, pd={"name": "vllm"})
    assert load_scenario(bare).pd.engine == load_scenario(mapping).pd.engine == EngineSpec(name="vllm")
    assert load_scenario(scenario_with(tmp_path)).pd.engine == EngineSpec()  # a file without engine: generic
    text = yaml.safe_dump(bare)
    assert "engine: vllm" in text and load_scenario(yaml.safe_load(text)).pd.engine.name == EngineName.vllm
    assert Engine.of(api.engine_spec_of("vllm")) == Engine.of(api.engine_spec_of({"name": "vllm"}))


def test_a_bad_engine_name_is_a_one_line_error_naming_the_field(tmp_path, run_cli):
    with pytest.raises(PlanInputError) as info:
        api.estimate("qwen3-8b", "h100", 1, engine="sglan")
    assert info.value.field == "engine" and "sglang" in info.value.one_line()
    with pytest.raises(PlanInputError) as info:
        api.engine_spec_of({"name": "tensorrt"})
    assert info.value.field == "engine" and "\n" not in info.value.one_line()
    with pytest.raises(PlanInputError) as info:
        load_scenario(scenario_with(tmp_path, pd="tgi"))
    assert info.value.field == "pd.engine.name"
    result = run_cli("estimate", "qwen3-8b", "--engine", "tgi")
    assert result.code == 2 and "--engine" in result.err and len(result.err.strip().splitlines()) == 1


# ---------------------------------------------------------------------------------------------
# every figure names its source


def test_every_value_that_differs_from_generic_names_its_source():
    generic = engines.engine_profile(EngineName.generic)
    for name in EngineName:
        profile = engines.engine_profile(name)
        assert profile.name == name
        assert engines.unsourced(profile, generic) == [], name
        fields = flat_values(profile)
        assert set(profile.field_sources) <= set(fields), name
        assert all(text.strip() for text in profile.field_sources.values()), name
    assert engines.unsourced(engines.engine_profile(EngineName.trtllm), generic) == []
    assert "defaults.chunked_prefill" in engines.engine_profile(EngineName.trtllm).field_sources


def test_a_profile_with_an_unsourced_change_is_refused():
    generic = engines.engine_profile(EngineName.generic)
    data = generic.model_dump(mode="json")
    data.update(name="vllm")
    data["kernels"]["dense_gemm"] = 0.9
    changed = EngineProfile.model_validate(data)
    assert engines.unsourced(changed, generic) == ["kernels.dense_gemm"]
    with pytest.raises(PlanInputError) as info:
        engines.check_sources(changed, generic, "vllm.yaml")
    assert info.value.field == "kernels.dense_gemm"
    data["field_sources"] = {"kernels.dense_gemm": "assumption: a test"}
    engines.check_sources(EngineProfile.model_validate(data), generic, "vllm.yaml")
    data["field_sources"] = {"kernels.dense_gem": "typo"}
    with pytest.raises(PlanInputError):
        engines.check_sources(EngineProfile.model_validate(data), generic, "vllm.yaml")


def test_profiles_ship_as_package_data():
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    setup = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "prfaas_plan.timing.engines" in setup["packages"]
    assert setup["package-data"]["prfaas_plan.timing.engines"] == ["*.yaml"]
    assert sorted(p.stem for p in engines.FOLDER.glob("*.yaml")) == sorted(str(n) for n in EngineName)


# ---------------------------------------------------------------------------------------------
# the published CSV's engine column


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("SGLang (PD disagg; DeepEP; DeepGEMM; TBO; EPLB)", "sglang"),
        ("SGLang v0.4.10.post1 (ROCm 6.3; aiter attention)", "sglang"),
        ("TensorRT-LLM (trtllm-bench PyTorch backend)", "trtllm"),
        ("TRT-LLM 0.19", "trtllm"),
        ("trtllm-serve", "trtllm"),
        ("vLLM (benchmark_latency.py)", "vllm"),
        ("NVIDIA MLPerf harness", "generic"),
        ("", "generic"),
    ],
)
def test_engine_name_of_recognises_the_engine_by_keyword(text, name):
    assert engine_name_of(text) == EngineName(name)


def test_pools_whose_engines_keep_an_fp8_checkpoints_kv_differently_need_precision_kv(tmp_path, monkeypatch):
    """No two shipped profiles disagree (only trtllm picks one), so a profile that picks bf16 stands in."""
    from prfaas_plan.study import resolve

    real = engines.engine_profile

    def patched(name):
        profile = real(name)
        if name == EngineName.sglang:
            return profile.model_copy(
                update={"defaults": profile.defaults.model_copy(update={"kv_dtype_fp8_checkpoint": Dtype.bf16})}
            )
        return profile

    monkeypatch.setattr(engines, "engine_profile", patched)
    doc = scenario_with(tmp_path, prfaas="trtllm", pd="sglang")
    doc["precision"] = {"weights": "fp8"}
    model = api.model_of(doc["model"])
    with pytest.raises(PlanInputError) as info:
        resolve._precision_applied(*precision_and_pools(doc), model, "s.yaml")
    assert info.value.field == "precision.kv" and "prfaas fp8" in info.value.reason
    doc["precision"] = {"weights": "fp8", "kv": "fp8"}
    assert resolve._precision_applied(*precision_and_pools(doc), model, "s.yaml").dtypes.kv == Dtype.fp8


def test_a_published_row_with_an_engine_override_is_timed_with_that_profile():
    """B12 (trtllm-bench, FP8 weights): timed as TensorRT-LLM its KV is FP8; the generic override gives the
    same figure as the TensorRT-LLM row with its KV written as bf16 (trtllm-bench's own limits set the batch,
    the budget and chunking either way, so the KV dtype is the one difference)."""
    from pathlib import Path

    from prfaas_plan import published

    folder = Path(__file__).resolve().parent / "data"
    row = next(r for r in published.read_rows(str(folder / "published_benchmarks.csv")) if r["id"] == "B12")
    as_named = published.predict_row(row, folder)
    as_generic = published.predict_row(row, folder, EngineName.generic)
    bf16_kv = published.predict_row({**row, "dtype_override": "weights=fp8;kv=bf16"}, folder)
    assert as_generic.predicted == pytest.approx(bf16_kv.predicted, rel=1e-12)
    assert as_named.predicted > 1.2 * as_generic.predicted


def test_estimate_says_which_engine_timed_it(run_cli):
    named = run_cli("estimate", "qwen3-8b", "-H", "h100", "--engine", "vllm", "-f", "json")
    assert named.code == 0 and "timing/engines/vllm.yaml" in named.out
    assert "timing/engines/" not in run_cli("estimate", "qwen3-8b", "-H", "h100", "-f", "json").out
    assert api.estimate("qwen3-8b", "h100", 1, engine="trtllm").engine == "trtllm"
