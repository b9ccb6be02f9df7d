"""CLI: the kv/decode/models/hardware/validate/import commands and their three formats."""

import csv
import io
import json
from pathlib import Path

import pytest
import yaml

from prfaas_plan.accounting.kv import KvModel
from prfaas_plan.profiles.registry import resolve_model, shipped_names

DATA = Path(__file__).parent / "data"


def test_kv_json_schema(run_cli):
    res = run_cli("kv", "minimax-m2.5", "--hardware", "h200", "--gpus", "8", "--lengths", "1K,8k,32768,128K", "-f", "json")
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    assert doc["model"] == "minimax-m2.5" and doc["hardware"] == "h200" and doc["gpus"] == 8
    assert [r["length_tokens"] for r in doc["rows"]] == [1024, 8192, 32768, 131072]
    for row in doc["rows"]:
        assert isinstance(row["length_tokens"], int) and isinstance(row["kv_bytes"], int)
        assert isinstance(row["prefill_s"], float) and isinstance(row["phi_kv_gbps"], float)
        assert row["kv_bytes"] == 253_952 * row["length_tokens"]
        # Phi_kv in decimal Gbps
        assert row["phi_kv_gbps"] == pytest.approx(row["kv_bytes"] * 8 / row["prefill_s"] / 1e9, rel=1e-5)


def test_kv_formats_carry_the_same_numbers(run_cli, tmp_path):
    args = ("kv", "prfaas-1t-hybrid", "-l", "1K,32K")
    doc = json.loads(run_cli(*args, "-f", "json").out)
    rows = list(csv.DictReader(io.StringIO(run_cli(*args, "-f", "csv").out)))
    table = run_cli(*args, "-f", "table").out
    assert len(rows) == len(doc["rows"]) == 2
    for jrow, crow in zip(doc["rows"], rows):
        for key, value in jrow.items():
            if isinstance(value, str):  # the identity: model, hardware, layout
                assert crow[key] == value
            else:
                assert float(crow[key]) == pytest.approx(value, rel=1e-12)
        assert f"{jrow['kv_bytes']:,}" in table
        assert f"{jrow['phi_kv_gbps']:,.2f}" in table
        assert f"{jrow['prefill_s']:,.3f}" in table
    out = tmp_path / "kv.csv"
    assert run_cli(*args, "-f", "csv", "-o", out).code == 0
    assert out.read_text() == run_cli(*args, "-f", "csv").out


def test_decode_command(run_cli):
    res = run_cli(
        "decode", "minimax-m2.5", "--hardware", "h200", "--gpus", "8", "--context", "32K", "--tpot-ms", "30", "-f", "json"
    )
    assert res.code == 0, res.err
    row = json.loads(res.out)["rows"][0]
    assert row["context_tokens"] == 32768 and row["step_ms"] <= 30 and row["batch_requests"] >= 1
    assert row["tokens_per_s"] == pytest.approx(row["batch_requests"] / row["step_ms"] * 1e3, rel=1e-3)


def test_models_and_hardware_listing(run_cli):
    names = {r["model"] for r in json.loads(run_cli("models", "list", "-f", "json").out)["rows"]}
    assert {
        "minimax-m2.5",
        "qwen3-235b",
        "qwen3.5-397b",
        "mimo-v2-flash",
        "kimi-linear-48b",
        "ring-2.5-1t",
        "kimi-k2",
        "deepseek-v3",
        "qwen3-8b",
        "qwen3-32b",
        "prfaas-1t-hybrid",
    } <= names
    hw = {r["hardware"] for r in json.loads(run_cli("hardware", "list", "-f", "json").out)["rows"]}
    assert {"h100", "h200", "h20", "b200", "gb200", "gb300", "b300", "rubin", "rubin-cpx", "groq-lpu", "mi300x", "mi355x"} <= hw
    show = json.loads(run_cli("models", "show", "mimo-v2-flash", "-f", "json").out)
    assert show["rows"][0]["kv_bytes_per_token"] == 23_040 and show["profile"]["name"] == "mimo-v2-flash"
    hw_show = run_cli("hardware", "show", "h200")
    assert hw_show.code == 0 and "calibrate" in hw_show.out and "example" in hw_show.out


def test_every_shipped_hardware_documents_its_efficiency():
    """Each efficiency and overhead default of each profile is named in its sources (a measurement)
    or its assumptions: one set per hardware, each with where it comes from."""
    from prfaas_plan.profiles.hardware import Efficiency
    from prfaas_plan.profiles.registry import resolve_hardware

    for name in shipped_names("hardware_profiles"):
        hw = resolve_hardware(name)
        text = " ".join(hw.sources + hw.assumptions + [f"{k}: {v}" for k, v in hw.efficiency_sources.items()])
        named = [f for f in Efficiency.model_fields if getattr(hw.efficiency, f) not in (None, {})]  # {}: none set
        missing = [f for f in named + ["scale_up_latency_us", "nic_latency_us"] if f not in text]
        assert not missing, (name, missing)


def test_validate_shipped_profiles(run_cli):
    root = Path(__file__).resolve().parents[1]
    for path in sorted((root / "model_profiles").glob("*.yaml")) + sorted((root / "hardware_profiles").glob("*.yaml")):
        res = run_cli("validate", path)
        assert res.code == 0 and "valid" in res.out, (path, res.err)


@pytest.mark.parametrize(
    "config,shipped",
    [
        ("MiniMaxAI--MiniMax-M2.5.config.json", "minimax-m2.5"),
        ("Qwen--Qwen3-235B-A22B.config.json", "qwen3-235b"),
        ("Qwen--Qwen3-8B.config.json", "qwen3-8b"),
        ("Qwen--Qwen3-32B.config.json", "qwen3-32b"),
        ("Qwen--Qwen3.5-397B-A17B.config.json", "qwen3.5-397b"),
        ("XiaomiMiMo--MiMo-V2-Flash.config.json", "mimo-v2-flash"),
        ("moonshotai--Kimi-K2-Instruct.config.json", "kimi-k2"),
        ("deepseek-ai--DeepSeek-V3.config.json", "deepseek-v3"),
    ],
)
def test_import_matches_shipped_kv(config, shipped, run_cli, tmp_path):
    out = tmp_path / "imported.yaml"
    res = run_cli("model", "import", DATA / "hf-configs" / config, "--name", "imported", "-o", out)
    assert res.code == 0, res.err
    imported = resolve_model(str(out))
    assert imported.name == "imported"
    a, b = KvModel.of(imported), KvModel.of(resolve_model(shipped))
    for length in (1, 128, 4096, 32768, 131072):
        assert a.bytes_at(length) == b.bytes_at(length), (config, length)
    # the imported profile works wherever a name does
    kv = run_cli("kv", out, "-l", "8K", "--gpus", "16", "-f", "json")
    assert kv.code == 0, kv.err


def test_import_to_stdout_is_valid_yaml(run_cli):
    res = run_cli("model", "import", DATA / "hf-configs" / "nvidia--Nemotron-H-56B-Base-8K.config.json")
    assert res.code == 0, res.err
    doc = yaml.safe_load(res.out)
    assert doc["layers"]["count"] == 118


def test_help_lists_commands(run_cli):
    res = run_cli("--help")
    assert res.code == 0
    for cmd in ("kv", "decode", "models", "hardware", "validate", "model", "calibrate"):
        assert cmd in res.out


def test_version(run_cli):
    from prfaas_plan import __version__

    res = run_cli("--version")
    assert res.code == 0 and res.out.strip() == f"prfaas-plan {__version__}"
