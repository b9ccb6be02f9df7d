"""Importing Hugging Face config.json files (copies in tests/data/hf-configs) as profiles.

Expected KV sizes and parameter counts are the facts in the reference MODELS.md
(bf16 KV, 2 B/element)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml
from conftest import DATA

from prfaas_plan import api
from prfaas_plan.accounting.kv import KvModel
from prfaas_plan.accounting.params import count_params
from prfaas_plan.api import import_model
from prfaas_plan.errors import PlanInputError
from prfaas_plan.profiles.hf_import import profile_from_hf_config
from prfaas_plan.profiles.model import ModelProfile, expand_layers, load_model_profile

CONFIGS = Path(__file__).parent / "data" / "hf-configs"
CONFIG_FILES = sorted(CONFIGS.glob("*.json"))


def _config(stem: str) -> dict:
    return json.loads((CONFIGS / f"{stem}.config.json").read_text(encoding="utf-8"))


def _profile(stem: str) -> ModelProfile:
    return import_model(str(CONFIGS / f"{stem}.config.json"))[1]


def test_configs_are_present():
    assert len(CONFIG_FILES) >= 13


@pytest.mark.parametrize("path", CONFIG_FILES, ids=lambda p: p.name.removesuffix(".config.json"))
def test_every_config_imports_and_round_trips_through_yaml(path: Path):
    data, profile = import_model(str(path))
    assert list(data)[:4] == ["name", "description", "sources", "assumptions"]
    assert data["sources"][0].startswith("imported from Hugging Face config.json (")
    assert any("KV cached in bf16" in a for a in data["assumptions"])
    config = json.loads(path.read_text(encoding="utf-8"))
    assert profile.max_context_tokens == config.get("text_config", config)["max_position_embeddings"]
    reloaded = load_model_profile(yaml.safe_load(yaml.safe_dump(data, sort_keys=False)))
    assert reloaded == profile
    # compact stack: never one pattern entry per layer for these models
    assert len(profile.layers.pattern) <= 11


@pytest.mark.parametrize(
    ("stem", "bytes_per_token"),
    [
        ("MiniMaxAI--MiniMax-M2.5", 253_952),
        ("Qwen--Qwen3-235B-A22B", 192_512),
        ("Qwen--Qwen3-8B", 147_456),
        ("Qwen--Qwen3-32B", 262_144),
        ("moonshotai--Kimi-K2-Instruct", 70_272),
        ("deepseek-ai--DeepSeek-V3", 70_272),
    ],
)
def test_kv_bytes_per_token_of_full_attention_models(stem: str, bytes_per_token: int):
    kv = KvModel.of(_profile(stem))
    assert kv.growing_bytes_per_token == bytes_per_token
    assert kv.windows == () and kv.fixed_bytes == 0
    assert kv.bytes_at([1000])[0] == 1000 * bytes_per_token


def test_qwen3_5_397b_kv_growing_and_fixed_state():
    profile = _profile("Qwen--Qwen3.5-397B-A17B")
    kv = KvModel.of(profile)
    state = 45 * 64 * 128 * 128 * 4  # 45 GDN layers, fp32 [value heads, key dim, value dim]
    conv = 45 * 12_288 * 3 * 2  # conv channels x (kernel - 1), bf16
    assert kv.growing_bytes_per_token == 30_720
    assert kv.fixed_bytes == state + conv
    assert kv.bytes_at([0, 10])[1] == 10 * 30_720 + state + conv
    full = [layer.index for layer in expand_layers(profile) if layer.mixer_name == "full"]
    assert full == list(range(3, 60, 4))
    assert profile.mixers["full"].output_gate


def test_mimo_v2_flash_kv_full_and_capped_swa():
    profile = _profile("XiaomiMiMo--MiMo-V2-Flash")
    kv = KvModel.of(profile)
    assert kv.growing_bytes_per_token == 23_040
    assert kv.windows == ((128, 199_680),)
    assert kv.bytes_at([100_000])[0] == 100_000 * 23_040 + 128 * 199_680
    layers = expand_layers(profile)
    assert [l.index for l in layers if l.mixer_name == "full"] == [0, 5, 11, 17, 23, 29, 35, 41, 47]
    assert [l.index for l in layers if l.ffn_name == "dense"] == [0]


@pytest.mark.parametrize(
    ("stem", "declared_b"),
    [
        ("deepseek-ai--DeepSeek-V3", 671),  # excluding the MTP module
        ("moonshotai--Kimi-K2-Instruct", 1030),
        ("Qwen--Qwen3-235B-A22B", 235),
    ],
)
def test_parameter_count_matches_declared_total(stem: str, declared_b: float):
    total = count_params(_profile(stem)).total
    assert total == pytest.approx(declared_b * 1e9, rel=0.03)


def test_layer_stack_is_compact_with_overrides():
    deepseek = profile_from_hf_config(_config("deepseek-ai--DeepSeek-V3"))
    assert deepseek["layers"] == {
        "count": 61,
        "pattern": ["mla"],
        "ffn": "moe",
        "overrides": [{"layers": "0-2", "ffn": "dense"}],
    }
    nemotron = _profile("nvidia--Nemotron-H-56B-Base-8K")
    layers = expand_layers(nemotron)
    pattern = _config("nvidia--Nemotron-H-56B-Base-8K")["hybrid_override_pattern"]
    by_char = {"M": ("mamba2", "none"), "*": ("full", "none"), "-": ("none", "dense")}
    assert [(l.mixer_name, l.ffn_name) for l in layers] == [by_char[c] for c in pattern]
    assert len(nemotron.layers.pattern) == 11 and len(nemotron.layers.overrides) == 1


def test_family_specific_blocks():
    nemotron = _profile("nvidia--Nemotron-H-56B-Base-8K")
    mamba = nemotron.mixers["mamba2"]
    assert (mamba.num_heads, mamba.key_heads, mamba.key_head_dim, mamba.value_head_dim) == (256, 8, 256, 64)
    assert mamba.conv_channels == 256 * 64 + 2 * 8 * 256 and mamba.output_gate
    assert nemotron.ffns["dense"].gated is False
    assert nemotron.dtypes.state == "fp32"

    gpt_oss = _profile("openai--gpt-oss-120b")
    assert (gpt_oss.dtypes.weights, gpt_oss.dtypes.experts) == ("bf16", "fp4")
    assert gpt_oss.layers.pattern == ["swa", "full"]
    assert gpt_oss.mixers["swa"].window_tokens == 128 and gpt_oss.ffns["moe"].top_k == 4

    v32 = _profile("deepseek-ai--DeepSeek-V3.2")
    assert (v32.mixers["sparse"].index_num_heads, v32.mixers["sparse"].index_topk_tokens) == (64, 2048)
    assert KvModel.of(v32).growing_bytes_per_token == 61 * (576 + 128) * 2

    minimax = _profile("MiniMaxAI--MiniMax-M2.5")
    assert minimax.dtypes.weights == "fp8" and minimax.ffns["moe"].shared_experts == 0

    qwen35 = _profile("Qwen--Qwen3.5-35B-A3B")
    assert qwen35.ffns["moe"].shared_experts == 1 and qwen35.dtypes.state == "fp32"

    llama = profile_from_hf_config(_config("meta-llama--Meta-Llama-3.1-70B"))
    assert llama["mixers"]["full"]["qk_head_dim"] == 8192 // 64
    assert any("head_dim" in a for a in llama["assumptions"])


def test_qwen3_moe_dense_layers_from_mlp_only_layers_and_sparse_step():
    config = _config("Qwen--Qwen3-235B-A22B")
    config.update(mlp_only_layers=[0, 1], decoder_sparse_step=2)
    profile = load_model_profile(profile_from_hf_config(config))
    dense = [l.index for l in expand_layers(profile) if l.ffn_name == "dense"]
    assert dense == [0, 1] + list(range(2, 94, 2))
    assert profile.ffns["dense"].intermediate_size == 12_288


def test_name_defaults_to_a_slug_and_can_be_given():
    config = _config("Qwen--Qwen3-8B")
    assert profile_from_hf_config(config)["name"] == "qwen3"
    assert profile_from_hf_config({**config, "_name_or_path": "Qwen/Qwen3-8B"})["name"] == "qwen3-8b"
    assert profile_from_hf_config(config, name="my-qwen")["name"] == "my-qwen"


def test_unknown_model_type_is_named():
    config = {**_config("Qwen--Qwen3-8B"), "model_type": "qwen9", "architectures": ["Qwen9ForCausalLM"]}
    with pytest.raises(PlanInputError) as info:
        profile_from_hf_config(config, source="cfg.json")
    assert info.value.field == "model_type" and "'qwen9'" in str(info.value)
    assert str(info.value).startswith("cfg.json: model_type:")


def test_model_type_contradicting_architecture_is_named():
    config = {**_config("Qwen--Qwen3-8B"), "architectures": ["Qwen3MoeForCausalLM"]}
    with pytest.raises(PlanInputError, match="Qwen3MoeForCausalLM"):
        profile_from_hf_config(config)


def test_missing_model_type_falls_back_to_architectures():
    config = _config("moonshotai--Kimi-K2-Instruct")
    del config["model_type"]
    assert profile_from_hf_config(config)["mixers"]["mla"]["num_heads"] == 64


def test_missing_required_key_is_named(tmp_path: Path):
    config = _config("Qwen--Qwen3-8B")
    del config["num_key_value_heads"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    with pytest.raises(PlanInputError) as info:
        import_model(str(path))
    err = info.value
    assert err.field == "num_key_value_heads"
    assert err.reason == "required by model_type 'qwen3' but missing"
    assert err.source == str(path)


@pytest.mark.parametrize(
    ("stem", "edit", "field", "needle"),
    [
        (
            "Qwen--Qwen3.5-397B-A17B",
            lambda c: c["text_config"].pop("linear_num_key_heads"),
            "text_config.linear_num_key_heads",
            "missing",
        ),
        (
            "nvidia--Nemotron-H-56B-Base-8K",
            lambda c: c.update(hybrid_override_pattern=c["hybrid_override_pattern"][:-1] + "E"),
            "hybrid_override_pattern",
            "'E'",
        ),
        ("XiaomiMiMo--MiMo-V2-Flash", lambda c: c.update(moe_layer_freq=[1] * 47), "moe_layer_freq", "47"),
        (
            "deepseek-ai--DeepSeek-V3",
            lambda c: c["quantization_config"].update(quant_method="awq"),
            "quantization_config.quant_method",
            "'awq'",
        ),
        ("Qwen--Qwen3-8B", lambda c: c.update(torch_dtype="float64"), "torch_dtype", "'float64'"),
        ("Qwen--Qwen3-8B", lambda c: c.update(num_attention_heads=30), "num_key_value_heads", "does not divide"),
        ("openai--gpt-oss-120b", lambda c: c.update(layer_types=["chunked_attention"] * 36), "layer_types", "chunked_attention"),
    ],
)
def test_not_understood_values_are_named(stem, edit, field, needle):
    config = copy.deepcopy(_config(stem))
    edit(config)
    with pytest.raises(PlanInputError) as info:
        profile_from_hf_config(config)
    assert info.value.field == field and needle in info.value.reason


def test_non_mapping_config_is_rejected():
    with pytest.raises(PlanInputError, match="JSON object"):
        profile_from_hf_config([])  # type: ignore[arg-type]


def test_imported_models_of_one_family_get_distinct_names(run_cli, tmp_path):
    """Two sizes of one family (no _name_or_path in the config) are named by their counted size."""
    names = []
    for config in ("Qwen--Qwen3-8B.config.json", "Qwen--Qwen3-32B.config.json"):
        out = tmp_path / f"{config}.yaml"
        res = run_cli("model", "import", DATA / "hf-configs" / config, "-o", out)
        assert res.code == 0, res.err
        names.append(yaml.safe_load(out.read_text())["name"])
    assert names[0] != names[1]
    assert names[0].startswith("qwen3-8") and names[1].startswith("qwen3-32")
    # a given name wins, and _name_or_path is used when the config has one
    data, profile = api.import_model(str(DATA / "hf-configs" / "Qwen--Qwen3-8B.config.json"), name="mine")
    assert profile.name == "mine"
    config = json.loads((DATA / "hf-configs" / "Qwen--Qwen3-8B.config.json").read_text())
    config["_name_or_path"] = "Qwen/Qwen3-8B"
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    assert api.import_model(str(path))[1].name == "qwen3-8b"
