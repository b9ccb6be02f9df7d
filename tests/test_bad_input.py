"""Bad input: one-line error naming file/field/reason, exit code 2, no traceback, nothing written."""

from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
MINIMAX = yaml.safe_load((REPO / "model_profiles" / "minimax-m2.5.yaml").read_text())
DEEPSEEK = yaml.safe_load((REPO / "model_profiles" / "deepseek-v3.yaml").read_text())
H200 = yaml.safe_load((REPO / "hardware_profiles" / "h200.yaml").read_text())


def edited(base: dict, path: str, value=None, delete: bool = False) -> dict:
    doc = yaml.safe_load(yaml.safe_dump(base))
    *parents, last = path.split(".")
    node = doc
    for key in parents:
        node = node[key]
    if delete:
        del node[last]
    else:
        node[last] = value
    return doc


def misspelt(base: dict, path: str, typo: str) -> dict:
    """``base`` with the field at ``path`` written as ``typo`` (same value)."""
    doc = edited(base, path, delete=True)
    *parents, last = path.split(".")
    node, value = doc, base
    for key in parents:
        node, value = node[key], value[key]
    node[typo] = value[last]
    return doc


MODEL_CASES = {
    "missing-field": (edited(MINIMAX, "hidden_size", delete=True), ["hidden_size", "required"]),
    # a required field with a typo: the typo is named, with the field it stands for
    "misspelt-required-field": (
        misspelt(MINIMAX, "hidden_size", "hiden_size"),
        ["hiden_size: unknown field (did you mean hidden_size?)"],
    ),
    "misspelt-nested-field": (
        misspelt(MINIMAX, "mixers.full.num_kv_heads", "num_kv_head"),
        ["mixers.full.num_kv_head: unknown field (did you mean num_kv_heads?)"],
    ),
    # "did you mean" only for a mutual best match: qk_nop_head_dim stands for qk_nope_head_dim, not
    # for the missing qk_rope_head_dim it is also close to
    "misspelt-beside-a-missing-field": (
        edited(misspelt(DEEPSEEK, "mixers.mla.qk_nope_head_dim", "qk_nop_head_dim"), "mixers.mla.qk_rope_head_dim", delete=True),
        ["qk_rope_head_dim: required field is missing"],
    ),
    "mistyped-field": (edited(MINIMAX, "mixers.full.num_kv_head", 8), ["num_kv_head", "unknown field"]),
    "zero-size": (edited(MINIMAX, "mixers.full.num_kv_heads", 0), ["num_kv_heads", "must be in [1, 65,536] heads, got 0"]),
    "negative-size": (edited(MINIMAX, "hidden_size", -3072), ["hidden_size", "must be in [1, 1,048,576], got -3072"]),
    "nan": (edited(MINIMAX, "total_params_b", float("nan")), ["total_params_b", "finite"]),
    "string-for-int": (edited(MINIMAX, "layers.count", "many"), ["layers.count", "integer"]),
    "unknown-attention-kind": (edited(MINIMAX, "mixers.full.type", "flash"), ["mixers.full", "flash"]),
    "unknown-mixer-reference": (edited(MINIMAX, "layers.pattern", ["full", "fulll"]), ["unknown mixer 'fulll'"]),
    "bad-override-index": (edited(MINIMAX, "layers.overrides", [{"layers": [99], "ffn": "moe"}]), ["outside 0..61"]),
    "top-level-list": ([1, 2, 3], ["mapping"]),
}


def assert_clean_failure(res, *needles):
    assert res.code == 2, (res.code, res.out, res.err)
    assert "Traceback" not in res.err and res.out == ""
    lines = res.err.strip().splitlines()
    assert len(lines) == 1, res.err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


@pytest.fixture
def existing_output(tmp_path):
    out = tmp_path / "result.json"
    out.write_text("previous results\n")
    return out


@pytest.mark.parametrize("case", sorted(MODEL_CASES))
def test_bad_model_profile(case, tmp_path, run_cli, existing_output):
    doc, needles = MODEL_CASES[case]
    path = tmp_path / f"{case}.yaml"
    path.write_text(yaml.safe_dump(doc))
    res = run_cli("kv", path, "-f", "json", "-o", existing_output)
    assert_clean_failure(res, str(path), *needles)
    assert existing_output.read_text() == "previous results\n"
    assert_clean_failure(run_cli("validate", path), str(path), *needles)


@pytest.mark.parametrize(
    "field,value,needle",
    [
        ("memory_gib", -1, "must be in [0.001, 1,000,000] GiB"),
        ("efficiency.matmul", 1.5, "must be in (0, 1]"),
        ("efficiency.prefill_overhead_s", -0.1, "must be in [0, 60] s"),
        ("peak_tflops.bf16", float("nan"), "finite"),
        ("peak_tflops.fp9", 100, "unknown field"),
    ],
)
def test_bad_hardware_profile(field, value, needle, tmp_path, run_cli, existing_output):
    path = tmp_path / "hw.yaml"
    path.write_text(yaml.safe_dump(edited(H200, field, value)))
    res = run_cli("kv", "minimax-m2.5", "--hardware", path, "-o", existing_output)
    assert_clean_failure(res, str(path), field, needle)
    assert existing_output.read_text() == "previous results\n"


def test_malformed_yaml(tmp_path, run_cli, existing_output):
    path = tmp_path / "broken.yaml"
    path.write_text("name: x\nmixers: {full: [\n")
    res = run_cli("kv", path, "-o", existing_output)
    assert_clean_failure(res, str(path), "malformed YAML", "line")
    assert existing_output.read_text() == "previous results\n"


def test_yaml_is_loaded_safely(tmp_path, run_cli):
    path = tmp_path / "evil.yaml"
    path.write_text("!!python/object/apply:os.system ['echo pwned']\n")
    assert_clean_failure(run_cli("validate", path), str(path), "malformed YAML")


@pytest.mark.parametrize(
    "args,needles",
    [
        (["kv", "no-such-model"], ["unknown model 'no-such-model'", "minimax-m2.5"]),
        (["kv", "minimax-m2.5", "--hardware", "h999"], ["unknown hardware 'h999'", "h200"]),
        (["kv", "minimax-m2.5", "-l", "0"], ["--lengths", "below 1"]),
        (["kv", "minimax-m2.5", "-l", "-5"], ["--lengths"]),
        (["kv", "minimax-m2.5", "-l", "256K"], ["exceeds", "196,608"]),
        (["kv", "minimax-m2.5", "-l", "32Q"], ["not a token count"]),
        (["kv", "minimax-m2.5", "--gpus", "0"], ["--gpus", "must be in [1, 65,536]"]),
        (["kv", "missing-file.yaml"], ["missing-file.yaml", "file not found"]),
        (["decode", "kimi-k2", "--hardware", "h20"], ["does not fit", "needs at least 12"]),
        (["decode", "minimax-m2.5", "--tpot-ms", "-1"], ["--tpot-ms", "must be in [0.01"]),
        (["decode", "minimax-m2.5", "--context", "0"], ["--context", "below 1"]),
        (["calibrate", "--model", "minimax-m2.5", "--hardware", "h200", "--points", "nope.csv"], ["nope.csv", "not found"]),
    ],
)
def test_bad_arguments(args, needles, run_cli, existing_output):
    res = run_cli(*args, "-o", existing_output) if args[0] in ("kv", "decode") else run_cli(*args)
    assert_clean_failure(res, *needles)
    assert existing_output.read_text() == "previous results\n"


def test_bad_hf_config(tmp_path, run_cli):
    cfg = tmp_path / "config.json"
    cfg.write_text('{"model_type": "qwen3", "hidden_size": 4096}')
    out = tmp_path / "out.yaml"
    res = run_cli("model", "import", cfg, "-o", out)
    assert_clean_failure(res, str(cfg))
    assert not out.exists()
    cfg.write_text("{not json")
    assert_clean_failure(run_cli("model", "import", cfg), str(cfg), "malformed JSON")
