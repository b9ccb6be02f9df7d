"""Reproducers from a fuzz of the previous version: each input below once hung, crashed, overflowed,
echoed megabytes, wrote a file it should not have, or was silently accepted.

Every reproducer must now be refused the same way (``assert_refused``): exit code 2, stdout empty,
stderr exactly one line ``prfaas-plan: error: ...`` under 300 characters that names the field or
option at fault (or the line of the file), no traceback, within 5 s (a SIGALRM watchdog, not a
measured duration), and an existing ``-o`` file left exactly as it was. The last test is the one
reproducer that is accepted: a declared parameter count that disagrees with the layer stack is one
warning line, not an error.
"""

from __future__ import annotations

import json
import os
import re
import signal
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
MODELS = REPO / "model_profiles"
HARDWARE = REPO / "hardware_profiles"
HF_CONFIGS = Path(__file__).parent / "data" / "hf-configs"
QWEN3_235B_CONFIG = HF_CONFIGS / "Qwen--Qwen3-235B-A22B.config.json"

TIME_LIMIT_S = 5
MAX_LINE_CHARS = 300
ERROR_PREFIX = "prfaas-plan: error: "
KNOWN_OUTPUT = "results of an earlier run\n"
RAW = "RAWVALUE"  # a plain YAML scalar, replaced by raw text after the scenario is dumped


class Hung(BaseException):
    """Raised by the watchdog; a BaseException so that the CLI's ``except Exception`` cannot catch it."""


def _on_alarm(signum, frame):
    raise Hung(f"the command did not finish within {TIME_LIMIT_S} s")


def run_with_watchdog(run_cli, args):
    """``run_cli(*args)``, failing the test if it has not returned after TIME_LIMIT_S (SIGALRM)."""
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, TIME_LIMIT_S)
    hung = None
    try:
        return run_cli(*args)
    except Hung as exc:
        hung = exc
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    pytest.fail(f"{hung}: prfaas-plan {' '.join(_short(a) for a in args)}")


def _short(arg, limit: int = 80) -> str:
    arg = str(arg)
    return arg if len(arg) <= limit else f"{arg[:40]}...({len(arg)} chars)"


def assert_refused(run_cli, args, where, output: Path | None = None, also: tuple[str, ...] = ()) -> str:
    """Run the CLI with ``args`` and check the reproducer's requirements; return the error line.

    ``where``: the field, option or line the message must name (a tuple: any one of them).
    ``output``: a file made by ``existing_output`` that must be unchanged afterwards.
    ``also``: words the message must contain besides (the reason, where one reason is required)."""
    res = run_with_watchdog(run_cli, args)
    shown = " ".join(_short(a) for a in args)
    assert res.code == 2, f"prfaas-plan {shown}: exit {res.code}\nstdout: {res.out[:500]}\nstderr: {res.err[:1000]}"
    assert "Traceback" not in res.err, res.err[:2000]
    assert res.out == "", f"stdout not empty: {res.out[:500]}"
    lines = res.err.splitlines()
    assert len(lines) == 1 and res.err.endswith("\n"), f"stderr is not one line: {res.err[:1000]!r}"
    line = lines[0]
    assert line.startswith(ERROR_PREFIX), line[:500]
    assert len(line) < MAX_LINE_CHARS, f"{len(line)} characters: {line[:500]}"
    alternatives = (where,) if isinstance(where, str) else tuple(where)
    assert any(_names(line, w) for w in alternatives), f"names none of {alternatives[:6]}: {line}"
    for word in also:
        assert word in line, f"does not say {word!r}: {line}"
    if output is not None:
        assert output.read_text() == KNOWN_OUTPUT, f"{output} was changed"
        assert sorted(p.name for p in output.parent.iterdir()) == [output.name], "a file was left beside the output"
    return line


def _names(line: str, where: str) -> bool:
    if where.startswith("line "):  # 'line 2' must not match 'line 21'
        return re.search(rf"\b{re.escape(where)}\b", line) is not None
    return where in line


def lines_of(text: str, marker: str) -> tuple[str, ...]:
    """'line N' for each line of ``text`` that contains ``marker``."""
    return tuple(f"line {n}" for n, line in enumerate(text.splitlines(), 1) if marker in line)


# ---------------------------------------------------------------------------------------
# Inputs


def scenario(case_study_file, folder: Path, raw: str | None = None, **changes) -> tuple[Path, str]:
    """The case study with ``changes`` (``case_study_file``'s ``a__b=value``); a change whose value
    is ``RAW`` gets ``raw`` as its literal YAML text."""
    path = case_study_file(folder, **changes)
    text = path.read_text()
    if raw is not None:
        assert text.count(RAW) == 1
        text = text.replace(RAW, raw)
        path.write_text(text)
    return path, text


def model_profile(folder: Path, edit: Callable[[dict], None], name: str = "model.yaml", base: str = "prfaas-1t-hybrid") -> Path:
    doc = yaml.safe_load((MODELS / f"{base}.yaml").read_text())
    edit(doc)
    path = folder / name
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def hardware_profile(folder: Path, edit: Callable[[dict], None], name: str, base: str = "h20") -> Path:
    doc = yaml.safe_load((HARDWARE / f"{base}.yaml").read_text())
    doc["name"] = name
    edit(doc)
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def hf_config(folder: Path, num_hidden_layers_text: str) -> Path:
    """The Qwen3-235B config.json with ``num_hidden_layers`` as the given literal JSON text."""
    text = QWEN3_235B_CONFIG.read_text()
    assert text.count('"num_hidden_layers": 94') == 1
    path = folder / "config.json"
    path.write_text(text.replace('"num_hidden_layers": 94', f'"num_hidden_layers": {num_hidden_layers_text}'))
    return path


def alias_bomb(levels: int, indent: str) -> list[str]:
    """YAML sequence items whose last one expands to 10**levels leaves."""
    items = [f"{indent}- &l0 [{', '.join(['1'] * 10)}]"]
    items += [f"{indent}- &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, levels)]
    return items


def mixture_bomb(levels: int) -> str:
    """A valid-looking workload: a mixture of mixtures ``levels`` deep whose components alias each
    other, 10**levels fixed-length leaves in all (the schema would validate every one of them)."""

    def component(k: int) -> str:
        if k == 0:
            return "&c0 {type: fixed, tokens: 1024, weight: 1}"
        return f"&c{k} {{type: mixture, weight: 1, components: [{component(k - 1)}, {', '.join([f'*c{k - 1}'] * 9)}]}}"

    return f"{{type: mixture, components: [{component(levels - 1)}, {', '.join([f'*c{levels - 1}'] * 9)}]}}"


def set_in(doc: dict, dotted: str, value) -> None:
    *parents, last = dotted.split(".")
    for key in parents:
        doc = doc[int(key)] if isinstance(doc, list) else doc[key]
    doc[last] = value


def _edit(dotted: str, value) -> Callable[[dict], None]:
    return lambda doc: set_in(doc, dotted, value)


# ---------------------------------------------------------------------------------------
# The reproducers: each builds its input under ``tmp`` and returns (args, where) or (args, where,
# also), as ``assert_refused`` takes them; ``out`` is an existing file with known content, checked
# unchanged afterwards; ``cs`` is conftest's ``case_study_file``.

REPRODUCERS: dict[str, Callable] = {}


def reproducer(name: str):
    def register(build):
        assert name not in REPRODUCERS
        REPRODUCERS[name] = build
        return build

    return register


# 1. A bad --plot path is refused before the simulation writes -o.
@reproducer("01-simulate-plot-missing-folder")
def _(tmp, out, cs):
    return ["simulate", "-n", "100", "-f", "json", "-o", out, "--plot", tmp / "nodir" / "ts.png"], "--plot"


# 2. Deep nesting.
@reproducer("02-scenario-yaml-1000-deep")
def _(tmp, out, cs):
    path, text = scenario(cs, tmp, raw="[" * 1000 + "]" * 1000, notes=[RAW])
    return ["plan", path, "-o", out], ("notes", *lines_of(text, "[[["))


@reproducer("02-model-yaml-1000-deep")
def _(tmp, out, cs):
    path = tmp / "deep-model.yaml"
    path.write_text("name: deep\nmixers: " + "[" * 1000 + "]" * 1000 + "\n")
    return ["kv", path, "-o", out], ("mixers", "line 2")


@reproducer("02-hf-config-json-100000-deep")
def _(tmp, out, cs):
    path = tmp / "config.json"  # no key to name: the document itself is at fault
    path.write_text("[" * 100_000 + "]" * 100_000)
    return ["model", "import", path, "-o", out], (f"{path}: nested", "line 1")


# 3. Integers beyond Python's 4,300-digit int/str limit.
@reproducer("03-scenario-int-5000-digits")
def _(tmp, out, cs):
    path, text = scenario(cs, tmp, raw="9" * 5000, pd__instances=RAW)
    return ["plan", path, "-o", out], ("pd.instances", *lines_of(text, "9999"))


@reproducer("03-hf-config-int-5000-digits")
def _(tmp, out, cs):
    return ["model", "import", hf_config(tmp, "9" * 5000), "-o", out], ("num_hidden_layers", "line 24")


@reproducer("03-option-points-5000-digits")
def _(tmp, out, cs):
    return ["sweep", "--over", "np", "--points", "9" * 5000, "-o", out], "--points"


# 4. A 400-digit token count.
@reproducer("04-kv-lengths-400-digits")
def _(tmp, out, cs):
    return ["kv", "qwen3-8b", "-H", "h100", "--gpus", "1", "--lengths", "9" * 400, "-o", out], "--lengths"


@reproducer("04-calibration-csv-length-400-digits")
def _(tmp, out, cs):
    points = tmp / "points.csv"
    points.write_text(f"length,prefill_s\n1024,0.44\n{'9' * 400},1.0\n32768,1.84\n")
    return (
        ["calibrate", "--model", "prfaas-1t-hybrid", "--hardware", "h200", "--gpus", "8", "--points", points, "-o", out],
        ("line 3", "length"),
    )


@reproducer("04-scenario-max-tokens-400-digits-K")
def _(tmp, out, cs):
    path, _ = scenario(cs, tmp, workload__input__max_tokens="9" * 400 + "K")
    return ["plan", path, "-o", out], "workload.input.max_tokens"


# 5. One CSV cell over the csv module's 128 KiB field limit.
@reproducer("05-calibration-csv-cell-over-128KiB")
def _(tmp, out, cs):
    points = tmp / "points.csv"
    points.write_text(f"length,prefill_s\n1024,0.44\n8192,{'7' * 200_000}\n32768,1.84\n")
    return (
        ["calibrate", "--model", "prfaas-1t-hybrid", "--hardware", "h200", "--gpus", "8", "--points", points, "-o", out],
        ("line 3", "prefill_s"),
    )


# 6. A bandwidth trace that is not UTF-8.
@reproducer("06-bandwidth-trace-not-utf8")
def _(tmp, out, cs):
    trace = tmp / "trace.csv"
    trace.write_bytes(b"time_s,gbps\n0,\xff\xfe\n")
    args = ["simulate", "--bandwidth-trace", trace, "-n", "50", "-f", "json", "-o", out]
    return args, ("--bandwidth-trace", "line 2", "byte 14")


# 7. Names over 255 characters (longer than a file name may be).
@reproducer("07-model-name-300-chars")
def _(tmp, out, cs):
    return ["kv", "m" * 300, "-o", out], "model"


@reproducer("07-output-name-300-chars")
def _(tmp, out, cs):
    return ["kv", "qwen3-8b", "-H", "h100", "--gpus", "1", "-o", tmp / ("o" * 300 + ".txt")], "--output"


@reproducer("07-scenario-hardware-name-300-chars")
def _(tmp, out, cs):
    path, _ = scenario(cs, tmp, prfaas__hardware="h" * 300)
    return ["plan", path, "-o", out], "prfaas.hardware"


# 8. Values that overflow or have the wrong shape.
@reproducer("08-model-measured-kv-mib-1e308")
def _(tmp, out, cs):
    return ["kv", model_profile(tmp, _edit("measured.0.prefill.0.kv_mib", 1e308)), "-o", out], "kv_mib"


@reproducer("08-histogram-counts-nested-list")
def _(tmp, out, cs):
    path, _ = scenario(cs, tmp, workload__input={"type": "histogram", "edges_tokens": [128, 8192, 131072], "counts": [3, [1]]})
    return ["plan", path, "-o", out], "workload.input.counts"


# 9. Absurd sizes.
@reproducer("09-sweep-instances-to-1e20")
def _(tmp, out, cs):
    return ["sweep", "--over", "instances", "--to", "99999999999999999999", "-o", out], "--to"


@reproducer("09-sweep-instances-to-1e309")
def _(tmp, out, cs):
    return ["sweep", "--over", "instances", "--to", "1e309", "-o", out], "--to"


@reproducer("09-sweep-instances-to-nan")
def _(tmp, out, cs):
    return ["sweep", "--over", "instances", "--to", "nan", "-o", out], "--to"


@reproducer("09-sweep-bandwidth-points-400-digits")
def _(tmp, out, cs):
    return ["sweep", "--over", "bandwidth", "--points", "9" * 400, "-o", out], "--points"


@reproducer("09-simulate-requests-400-digits")
def _(tmp, out, cs):
    return ["simulate", "-n", "9" * 400, "-f", "json", "-o", out], ("--requests", "-n")


@reproducer("09-scenario-pd-instances-1e9")
def _(tmp, out, cs):
    path, _ = scenario(cs, tmp, pd__instances=1_000_000_000)
    return ["plan", path, "-o", out], "pd.instances"


@reproducer("09-model-layers-count-0x7fffffff")
def _(tmp, out, cs):
    path = model_profile(tmp, _edit("layers.count", RAW))
    path.write_text(path.read_text().replace(RAW, "0x7fffffff"))
    return ["kv", path, "-o", out], "layers.count"


@reproducer("09-hf-config-layers-1e9")
def _(tmp, out, cs):
    return ["model", "import", hf_config(tmp, "1000000000"), "-o", out], "num_hidden_layers"


@reproducer("09-scenario-prfaas-instances-2pow64")
def _(tmp, out, cs):
    path, _ = scenario(cs, tmp, prfaas__instances=2**64)
    return ["plan", path, "-o", out], "prfaas.instances"


@reproducer("09-hardware-price-1e-12")
def _(tmp, out, cs):
    hardware = hardware_profile(tmp, _edit("price_usd_per_gpu_hour", 1.0e-12), "cheap")
    path, _ = scenario(cs, tmp, pd__hardware=str(hardware))
    return ["plan", path, "-o", out], "price_usd_per_gpu_hour"


# 10. Alias bombs: a few hundred bytes that expand to millions of values.
@reproducer("10-scenario-alias-bomb-1e7")
def _(tmp, out, cs):
    path, text = scenario(cs, tmp, raw="\n" + "\n".join(alias_bomb(7, "  ")), notes=RAW)
    return ["plan", path, "-o", out], lines_of(text, "*l"), ("alias",)


@reproducer("10-hardware-alias-bomb-1e6")
def _(tmp, out, cs):
    text = (HARDWARE / "h20.yaml").read_text() + "calibration:\n" + "\n".join(alias_bomb(6, "  ")) + "\n"
    path = tmp / "bomb-hw.yaml"
    path.write_text(text)
    assert len(text) < 6000  # the profile and a few hundred bytes of aliases
    return ["validate", path], lines_of(text, "*l"), ("alias",)


@reproducer("10-scenario-alias-bomb-mixture-1e6")
def _(tmp, out, cs):
    path, text = scenario(cs, tmp, raw=mixture_bomb(6), workload__input=RAW)
    assert len(text) < 2500
    return ["plan", path, "-o", out], lines_of(text, "*c"), ("alias",)


# 11. An error that would echo 100 KB of input.
@reproducer("11-scenario-100KB-string-for-number")
def _(tmp, out, cs):
    path, _ = scenario(cs, tmp, link__bandwidth_gbps="x" * 100_000)
    return ["plan", path, "-o", out], "link.bandwidth_gbps"


# 12. A named pipe as the input: reading it would block for ever.
@reproducer("12-validate-named-pipe")
def _(tmp, out, cs):
    os.mkfifo(tmp / "PIPE.yaml")
    return ["validate", tmp / "PIPE.yaml"], "PIPE.yaml"


@reproducer("12-plan-named-pipe")
def _(tmp, out, cs):
    os.mkfifo(tmp / "PIPE.yaml")
    return ["plan", tmp / "PIPE.yaml", "-o", out], "PIPE.yaml"


# 13. Silently accepted before.
@reproducer("13-model-hidden-size-true")
def _(tmp, out, cs):
    return ["kv", model_profile(tmp, _edit("hidden_size", True)), "-o", out], "hidden_size"


@reproducer("13-scenario-bandwidth-false")
def _(tmp, out, cs):
    path, _ = scenario(cs, tmp, link__bandwidth_gbps=False)
    return ["plan", path, "-o", out], "link.bandwidth_gbps"


@reproducer("13-scenario-duplicate-key")
def _(tmp, out, cs):
    path, text = scenario(cs, tmp, raw="10\n  rtt_ms: 20", link__rtt_ms=RAW)
    return ["plan", path, "-o", out], ("rtt_ms", *lines_of(text, "rtt_ms: 20"))


@reproducer("13-scenario-rtt-sexagesimal")
def _(tmp, out, cs):
    path, _ = scenario(cs, tmp, raw="12:30:00", link__rtt_ms=RAW)
    return ["plan", path, "-o", out], "link.rtt_ms"


@reproducer("13-scenario-context-100M")
def _(tmp, out, cs):
    path, _ = scenario(cs, tmp, decode__context_tokens=100_000_000)
    return ["plan", path, "-o", out], "decode.context_tokens"


@reproducer("13-scenario-context-8M-beyond-model")
def _(tmp, out, cs):
    path, _ = scenario(cs, tmp, decode__context_tokens=8_000_000)
    return ["plan", path, "-o", out], "decode.context_tokens"


@reproducer("13-decode-context-8M-beyond-model")
def _(tmp, out, cs):
    return ["decode", "prfaas-1t-hybrid", "-H", "h20", "--context", "8M", "-o", out], "--context"


@reproducer("13-model-intermediate-size-float")
def _(tmp, out, cs):
    return ["kv", model_profile(tmp, _edit("ffns.dense.intermediate_size", 1e18)), "-o", out], "intermediate_size"


@reproducer("13-hardware-peak-1e-9-tflops")
def _(tmp, out, cs):
    hardware = hardware_profile(tmp, _edit("peak_tflops.bf16", 1.0e-9), "slow-chip")
    return ["kv", "qwen3-8b", "-H", hardware, "--gpus", "1", "-o", out], "peak_tflops.bf16"


# 14. A plan of (almost) no capacity is an error, not a table of zeros.
def _crawling(h: dict) -> None:
    h["peak_tflops"] = {"bf16": 0.001, "fp8": 0.001}
    h["memory_bandwidth_tb_per_s"] = 0.001
    h["scale_up_gb_per_s"] = 0.001
    h["nic_gbps"] = 0.001


@reproducer("14-plan-zero-capacity")
def _(tmp, out, cs):
    prfaas = hardware_profile(tmp, _crawling, "crawl-prfaas", base="h200")
    pd = hardware_profile(tmp, _crawling, "crawl-pd", base="h20")
    path, _ = scenario(
        cs,
        tmp,
        prfaas__hardware=str(prfaas),
        pd__hardware=str(pd),
        pd__calibration_points=None,
        pd__calibration_note=None,
        decode__tokens_per_s_per_instance=None,
        decode__tokens_per_s_note=None,
        link__bandwidth_gbps=0.001,
    )
    # Lambda_max is about 1e-5 requests/s here, below ranges.MIN_CAPACITY_RPS (1e-3)
    return ["plan", path, "-o", out], ("pd.instances", "pd.hardware", "prfaas.hardware"), ("no plan", "can serve")


# ---------------------------------------------------------------------------------------


@pytest.fixture
def existing_output(tmp_path) -> Path:
    folder = tmp_path / "outputs"
    folder.mkdir()
    out = folder / "out.json"
    out.write_text(KNOWN_OUTPUT)
    return out


@pytest.mark.parametrize("name", list(REPRODUCERS))  # each takes well under a second
def test_reproducer_is_refused(name, tmp_path, run_cli, case_study_file, existing_output):
    args, where, *also = REPRODUCERS[name](tmp_path, existing_output, case_study_file)
    assert_refused(run_cli, args, where, output=existing_output, also=tuple(*also))


def test_params_mismatch_is_one_warning(tmp_path, run_cli):
    """15. A declared total_params_b 13% below the layer stack's 1,035B: accepted, with one warning line."""
    path = model_profile(tmp_path, _edit("total_params_b", 900))
    res = run_with_watchdog(run_cli, ["kv", path, "-f", "json"])
    assert res.code == 0, res.err
    assert "Traceback" not in res.err
    lines = res.err.splitlines()
    assert len(lines) == 1, res.err
    assert lines[0].startswith("prfaas-plan: warning: ") and "total_params_b" in lines[0], lines[0]
    assert len(lines[0]) < MAX_LINE_CHARS
    json.loads(res.out)
