"""Issue 16, item 7: bad input as everywhere else.

- an output (``-o``, ``--plot``) that is any file the command reads is refused (exit 2, one
  line) before anything is written, for every command, however the path is spelt;
- ``-o ''``, ``-o dir/``, an existing folder or a missing parent folder is an error;
- every field of a published-measurements CSV is checked (no traceback, no silent default);
- simulated-request counts have a limit per command whose worst case runs in about a minute.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml
from conftest import CASE_STUDY, DATA, REPO

SCENARIOS = REPO / "prfaas_plan" / "scenarios"


@pytest.fixture
def inputs(tmp_path, monkeypatch):
    """Input files of every kind in a fresh working directory (the test runs inside it)."""
    copies = {
        "s.yaml": CASE_STUDY,
        "fig.svg": CASE_STUDY,  # a scenario whose name ends like a figure: the only way `plot -o` can name it
        "m.yaml": REPO / "model_profiles" / "qwen3-8b.yaml",
        "m1t.yaml": REPO / "model_profiles" / "prfaas-1t-hybrid.yaml",
        "hw.yaml": REPO / "hardware_profiles" / "h100.yaml",
        "r.yaml": DATA / "robust_three_mixes.yaml",
        "d.yaml": DATA / "day_profile.yaml",
        "sites.yaml": SCENARIOS / "two-edges-day.yaml",
        "t.csv": DATA / "simulate" / "bandwidth_trace.csv",
        "p.csv": DATA / "table5_h200_prfaas_1t.csv",
        "config.json": DATA / "hf-configs" / "Qwen--Qwen3-8B.config.json",
        "lengths.txt": DATA / "workload" / "lengths.txt",
    }
    for name, source in copies.items():
        shutil.copyfile(source, tmp_path / name)
    doc = yaml.safe_load(CASE_STUDY.read_text())
    doc["model"] = "m1t.yaml"
    doc["workload"]["input"] = {"type": "trace", "path": "lengths.txt"}
    (tmp_path / "traced.yaml").write_text(yaml.safe_dump(doc))  # names two files the command line does not
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file() and not p.is_symlink()}


# (command line with OUT where the output goes, the input file that OUT names)
SAME_AS_INPUT = {
    "kv model": (["kv", "m.yaml", "-H", "h100", "-g", "1", "-o", "OUT"], "m.yaml"),
    "kv hardware": (["kv", "qwen3-8b", "-H", "hw.yaml", "-g", "1", "-o", "OUT"], "hw.yaml"),
    "decode": (["decode", "m.yaml", "-H", "h100", "-g", "1", "-o", "OUT"], "m.yaml"),
    "estimate": (["estimate", "qwen3-8b", "-H", "hw.yaml", "-o", "OUT"], "hw.yaml"),
    "models show": (["models", "show", "m.yaml", "-o", "OUT"], "m.yaml"),
    "hardware show": (["hardware", "show", "hw.yaml", "-o", "OUT"], "hw.yaml"),
    "plan": (["plan", "s.yaml", "-o", "OUT"], "s.yaml"),
    "compare scenario": (["compare", "s.yaml", "--prfaas", "h200,b200", "-o", "OUT"], "s.yaml"),
    "compare hardware": (["compare", "s.yaml", "--prfaas", "h200,hw.yaml", "-o", "OUT"], "hw.yaml"),
    "compare --plot": (["compare", "fig.svg", "--prfaas", "h200,b200", "--plot", "OUT"], "fig.svg"),
    "sweep": (["sweep", "s.yaml", "--over", "threshold", "-o", "OUT"], "s.yaml"),
    "robust": (["robust", "r.yaml", "-o", "OUT"], "r.yaml"),
    "schedule": (["schedule", "d.yaml", "-o", "OUT"], "d.yaml"),
    "sites": (["sites", "sites.yaml", "-o", "OUT"], "sites.yaml"),
    "route-table": (["route-table", "s.yaml", "-o", "OUT"], "s.yaml"),
    "plot": (["plot", "fig.svg", "-o", "OUT"], "fig.svg"),
    "simulate scenario": (["simulate", "s.yaml", "-n", "100", "-o", "OUT"], "s.yaml"),
    "simulate trace": (["simulate", "s.yaml", "-n", "100", "--bandwidth-trace", "t.csv", "-o", "OUT"], "t.csv"),
    "simulate --plot": (["simulate", "fig.svg", "-n", "100", "--plot", "OUT"], "fig.svg"),
    "validate-model": (["validate-model", "s.yaml", "-n", "100", "-o", "OUT"], "s.yaml"),
    "calibrate points": (["calibrate", "-m", "prfaas-1t-hybrid", "-H", "h200", "-p", "p.csv", "-o", "OUT"], "p.csv"),
    "calibrate hardware": (["calibrate", "-m", "prfaas-1t-hybrid", "-H", "hw.yaml", "-p", "p.csv", "-o", "OUT"], "hw.yaml"),
    "model import": (["model", "import", "config.json", "-o", "OUT"], "config.json"),
}


def _refused(res, option: str = "--output") -> None:
    lines = res.err.strip().splitlines()
    assert res.code == 2, res.err
    assert len(lines) == 1 and lines[0].startswith("prfaas-plan: error: "), res.err
    assert option in lines[0] and "Traceback" not in res.err
    assert res.out == ""


@pytest.mark.parametrize("case", SAME_AS_INPUT, ids=list(SAME_AS_INPUT))
def test_output_naming_an_input_is_refused_and_the_input_unchanged(run_cli, inputs, case):
    args, target = SAME_AS_INPUT[case]
    before = _snapshot(inputs)
    res = run_cli(*[target if a == "OUT" else a for a in args])
    _refused(res, "--plot" if "--plot" in args else "--output")
    assert "this command reads" in res.err and target in res.err
    assert _snapshot(inputs) == before  # the input's bytes, and no file written beside it (no temporary left)


@pytest.mark.parametrize("spelling", ["same", "dot", "absolute", "symlink", "hardlink", "dotdot"])
def test_every_spelling_of_the_input_path_is_the_same_file(run_cli, inputs, spelling):
    """route-table s.yaml -o s.yaml once turned the scenario into a CSV (issue 16)."""
    (inputs / "sub").mkdir()
    out = {
        "same": "s.yaml",
        "dot": "./s.yaml",
        "absolute": str(inputs / "s.yaml"),
        "symlink": "link.yaml",
        "hardlink": "hard.yaml",
        "dotdot": "sub/../s.yaml",
    }[spelling]
    if spelling == "symlink":
        os.symlink("s.yaml", "link.yaml")
    if spelling == "hardlink":
        os.link("s.yaml", "hard.yaml")
    before = (inputs / "s.yaml").read_bytes()
    res = run_cli("route-table", "s.yaml", "-o", out)
    _refused(res)
    assert "the scenario this command reads" in res.err
    assert (inputs / "s.yaml").read_bytes() == before
    if spelling == "symlink":
        assert os.path.islink("link.yaml")


@pytest.mark.parametrize("target", ["lengths.txt", "m1t.yaml"])
def test_a_file_the_scenario_names_is_an_input_too(run_cli, inputs, target):
    """Not on the command line: the trace and the model file a scenario names are refused when the
    outputs are written, which is before anything is."""
    before = _snapshot(inputs)
    res = run_cli("plan", "traced.yaml", "-o", target)
    _refused(res)
    assert "a file this command reads" in res.err
    assert _snapshot(inputs) == before


def test_the_shipped_profiles_a_list_reads_are_inputs(run_cli, tmp_path, monkeypatch):
    """`models list` and `hardware list` read every shipped profile: writing over one is refused
    (on a copy of the shipped folders, so that a failure cannot touch the repository), also when
    the profiles come from the cache of a run before (run first without -o)."""
    from prfaas_plan.profiles import registry

    for kind in ("model_profiles", "hardware_profiles"):
        shutil.copytree(REPO / kind, tmp_path / kind)
    monkeypatch.setattr(registry, "_shipped_dir", lambda kind: tmp_path / kind)
    registry.shipped_names.cache_clear()
    try:
        for args, target in (
            (["models", "list"], tmp_path / "model_profiles" / "qwen3-8b.yaml"),
            (["hardware", "list"], tmp_path / "hardware_profiles" / "h100.yaml"),
        ):
            before = target.read_bytes()
            assert run_cli(*args).code == 0  # loads and caches every profile
            res = run_cli(*args, "-o", target)
            _refused(res)
            assert "a file this command reads" in res.err
            assert target.read_bytes() == before
    finally:
        registry.shipped_names.cache_clear()


def test_a_file_read_in_another_command_is_not_an_input_of_this_one(run_cli, inputs):
    """The record of inputs is per command: after `plan s.yaml`, `models list -o s.yaml` may write."""
    assert run_cli("plan", "s.yaml", "-f", "json").code == 0
    res = run_cli("models", "list", "-f", "csv", "-o", "s.yaml")
    assert res.code == 0, res.err
    assert (inputs / "s.yaml").read_text().startswith(run_cli("models", "list", "-f", "csv").out[:20])


# Every command with an output option, with OUT where its output goes (no work is done: the
# output is refused first).
WITH_OUTPUT = {
    "kv": ["kv", "qwen3-8b", "-H", "h100", "-g", "1", "-o", "OUT"],
    "decode": ["decode", "qwen3-8b", "-H", "h100", "-g", "1", "-o", "OUT"],
    "estimate": ["estimate", "qwen3-8b", "-H", "h100", "-o", "OUT"],
    "models list": ["models", "list", "-o", "OUT"],
    "models show": ["models", "show", "qwen3-8b", "-o", "OUT"],
    "hardware list": ["hardware", "list", "-o", "OUT"],
    "hardware show": ["hardware", "show", "h100", "-o", "OUT"],
    "plan": ["plan", "-o", "OUT"],
    "compare": ["compare", "--prfaas", "h200,b200", "-o", "OUT"],
    "compare --plot": ["compare", "--prfaas", "h200,b200", "--plot", "OUT"],
    "sweep": ["sweep", "--over", "threshold", "-o", "OUT"],
    "robust": ["robust", "r.yaml", "-o", "OUT"],
    "schedule": ["schedule", "d.yaml", "-o", "OUT"],
    "sites": ["sites", "sites.yaml", "-o", "OUT"],
    "route-table": ["route-table", "-o", "OUT"],
    "plot": ["plot", "-o", "OUT"],
    "simulate": ["simulate", "-n", "100", "-o", "OUT"],
    "simulate --plot": ["simulate", "-n", "100", "--plot", "OUT"],
    "validate-model": ["validate-model", "-n", "100", "-o", "OUT"],
    "calibrate": ["calibrate", "-m", "prfaas-1t-hybrid", "-H", "h200", "-p", "p.csv", "-o", "OUT"],
    "model import": ["model", "import", "config.json", "-o", "OUT"],
}
BAD_OUTPUTS = {
    "empty": ("", "an empty file name"),
    "blank": ("  ", "an empty file name"),
    "trailing slash": ("newdir/", "names a folder"),
    "figure with a trailing slash": ("newdir.svg/", "names a folder"),
    "existing folder": ("sub", "is a folder"),
    "missing parent": ("nodir/out.svg", "output folder does not exist"),
}


@pytest.mark.parametrize("bad", BAD_OUTPUTS, ids=list(BAD_OUTPUTS))
@pytest.mark.parametrize("case", WITH_OUTPUT, ids=list(WITH_OUTPUT))
def test_an_output_that_names_no_file_is_an_error(run_cli, inputs, case, bad):
    value, reason = BAD_OUTPUTS[bad]
    args = WITH_OUTPUT[case]
    (inputs / "sub").mkdir()
    before = _snapshot(inputs)
    res = run_cli(*[value if a == "OUT" else a for a in args])
    _refused(res, "--plot" if "--plot" in args else "--output")
    assert reason in res.err
    assert _snapshot(inputs) == before and sorted(p.name for p in (inputs / "sub").iterdir()) == []
    assert not (inputs / "newdir").exists() and not (inputs / "newdir.svg").exists()


# --- published-measurement CSVs: every field checked, no traceback, no silent default ---------

PUBLISHED_CSV = DATA / "published_benchmarks.csv"


def _published_row(row_id: str) -> tuple[list[str], dict[str, str]]:
    import csv

    with open(PUBLISHED_CSV, newline="") as f:
        rows = list(csv.DictReader(f))
    return list(rows[0]), next(r for r in rows if r["id"] == row_id)


def _write_rows(path: Path, header: list[str], *rows: dict[str, str]) -> Path:
    import csv

    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=header)
        writer.writeheader()
        writer.writerows(rows)
    return path


def _published_main(path: Path, capsys) -> tuple[int, str, str]:
    """benchmarks/published.py run as its users run it (its main), on ``path``."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("published_bench", REPO / "benchmarks" / "published.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    code = module.main(["published.py", str(path)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# (row, column, value, what the one line says); B06 is an e2e_tps row, B14 an e2e_latency row,
# B03 a decode row with a per-GPU batch and a context
BAD_PUBLISHED = [
    ("B06", "measured", "0", "measured: must be in (0, 1,000,000,000]"),
    ("B06", "measured", "-1", "measured: must be in (0, 1,000,000,000]"),
    ("B06", "measured", "1e12", "measured: must be in (0, 1,000,000,000]"),
    ("B06", "measured", "nan", "malformed value in column measured"),
    ("B06", "measured", "inf", "malformed value in column measured"),
    ("B06", "measured", "", "measured: needs a value"),
    ("B06", "measured", "fast", "malformed value in column measured"),
    ("B01", "unit_gpus", "0", "unit_gpus: must be in [1, 65,536]"),
    ("B01", "unit_gpus", "-8", "unit_gpus: must be in [1, 65,536]"),
    ("B01", "unit_gpus", "2.5", "unit_gpus: must be a whole number"),
    ("B06", "gpus", "0", "gpus: must be in [1, 65,536]"),
    ("B06", "gpus", "", "gpus: needs a value"),
    ("B06", "input_len", "0", "input_len: must be in [1, 16,777,216]"),
    ("B06", "input_len", "1024.5", "input_len: must be a whole number"),
    ("B06", "output_len", "0", "output_len: must be in [1, 16,777,216]"),
    ("B06", "output_len", "0.4", "output_len: must be in [1, 16,777,216]"),
    ("B06", "output_len", "", "output_len: needs a value"),
    ("B14", "output_len", "", "output_len: needs a value"),
    ("B06", "requests", "0", "requests: must be in [1, 1,000,000]"),
    ("B06", "requests", "2.5", "requests: must be a whole number"),
    ("B03", "batch", "0", "batch: must be in [1, 100,000]"),
    ("B14", "batch", "", "batch: needs a value"),
    ("B03", "batch_scope", "per_node", "unknown batch_scope"),
    ("B03", "context", "0", "context: must be in [1, 16,777,216]"),
    ("B06", "kind", "e2e_tpx", "unknown kind"),
    ("B06", "dtype_override", "fp8", "dtype_override: expected part=dtype"),
    # a figure per more chips than the instance has; the profile cells under their own columns
    # (``hardware`` is free text); an id a row above has
    ("B01", "unit_gpus", "64", "unit_gpus: the figure is per at most the row's 32 GPUs, got 64"),
    ("B06", "tool_hw", "h201", "tool_hw: unknown hardware 'h201'"),
    ("B06", "model_ref", "llama-3.3-7b", "model_ref: unknown model 'llama-3.3-7b'"),
    ("B06", "id", "B01", "id: id 'B01' is line 2's too"),
]


@pytest.mark.parametrize(
    "row_id,column,value,needle", BAD_PUBLISHED, ids=[f"{r}-{c}-{v or 'blank'}" for r, c, v, _ in BAD_PUBLISHED]
)
def test_every_published_field_is_checked(tmp_path, capsys, row_id, column, value, needle):
    """Once 0 was a ZeroDivisionError, nan exited 0 with 'median |error| nan%', -1 a math-domain
    traceback, and a count of 0 silently became a default (B09's prediction doubled)."""
    header, row = _published_row(row_id)
    good = _published_row("B01")[1]
    path = _write_rows(tmp_path / "mine.csv", header, good, {**row, column: value})  # the bad row is line 3
    code, out, err = _published_main(path, capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"published.py: error: {path}: line 3") and needle in err


def test_published_blanks_take_only_their_documented_defaults(tmp_path):
    """A blank unit_gpus is the instance's chips, a blank input_len 512 tokens (MLPerf): the
    figures equal those of the row with the values written out."""
    from prfaas_plan import published

    header, b09 = _published_row("B09")  # Llama-3.3-70B on the 2 H200 it names (it fits: no fallback)
    _, b13 = _published_row("B13")  # MLPerf: input_len blank; its model is a config beside the CSV
    shutil.copytree(DATA / "hf-configs", tmp_path / "hf-configs")
    instance = {**b09, "unit": "output tokens/s per instance"}  # a per-GPU unit needs unit_gpus 1
    blank = _write_rows(tmp_path / "blank.csv", header, {**instance, "unit_gpus": ""}, b13)
    given = _write_rows(
        tmp_path / "given.csv", header, {**instance, "unit_gpus": b09["gpus"]}, {**b13, "input_len": str(published.DEFAULT_INPUT)}
    )
    per_gpu = _write_rows(tmp_path / "per_gpu.csv", header, {**b09, "unit_gpus": "1"})
    predicted = [p.predicted for p in published.predict_all(str(blank))]
    assert predicted == [p.predicted for p in published.predict_all(str(given))]
    assert predicted[0] == pytest.approx(2 * published.predict_all(str(per_gpu))[0].predicted)  # per instance


def test_a_published_row_with_extra_cells_is_one_line(tmp_path, capsys):
    header, row = _published_row("B01")
    path = tmp_path / "mine.csv"
    _write_rows(path, header, row)
    path.write_text(path.read_text() + ",".join(row[k] for k in header).replace("\r", "") + ",extra\n")
    code, out, err = _published_main(path, capsys)
    assert code == 2 and err.count("\n") == 1 and "line 3" in err and "more than the header's 24 columns" in err


@pytest.mark.parametrize(
    "old,new,needle",
    [
        (",unit_gpus,", ",unit_gpu,", "unknown column 'unit_gpu': did you mean 'unit_gpus'?"),
        (",gpus,unit_gpus,", ",gpus,gpus,", "column 'gpus' appears twice"),
    ],
)
def test_a_misspelt_or_repeated_published_column_is_refused(tmp_path, capsys, old, new, needle):
    """A misspelt optional column would have been absent, so every row took its default (unit_gpus:
    the median error went from 17.9% to 76.8%, exit 0); a repeated one took its last cell."""
    text = (DATA / "published_benchmarks.csv").read_text()
    path = tmp_path / "mine.csv"
    path.write_text(text.replace(old, new, 1))
    code, out, err = _published_main(path, capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith(f"published.py: error: {path}: header: {needle}")


@pytest.mark.parametrize(
    "change, needle",
    [
        ({"unit_gpus": ""}, "unit_gpus: the unit 'output tokens/s per GPU' is per GPU, but the figure is compared per 2 GPUs"),
        ({"unit": "s"}, "unit: an e2e_tps row is a rate, not a time: got unit 's'"),
    ],
    ids=["per-gpu-unit-per-instance", "time-unit-on-a-rate"],
)
def test_a_published_unit_that_disagrees_with_the_row_is_refused(tmp_path, capsys, change, needle):
    """A 'per GPU' figure compared per instance (a blank unit_gpus) was 2-8x off and printed as per
    GPU; a rate kind in seconds was printed as such: both are refused in one line naming the column."""
    header, b09 = _published_row("B09")
    path = _write_rows(tmp_path / "mine.csv", header, {**b09, **change})
    code, out, err = _published_main(path, capsys)
    assert code == 2 and err.count("\n") == 1 and needle in err, err


# --- simulated requests: at most REQUESTS.hi per command, over all its runs --------------------


def test_the_simulated_request_limit_counts_every_run():
    """n runs of k requests fit exactly when n x k <= the limit (hand count at the boundary)."""
    from prfaas_plan.errors import PlanInputError
    from prfaas_plan.ranges import REQUESTS, check_simulated_requests

    limit = int(REQUESTS.hi)
    assert limit == 500_000
    assert check_simulated_requests(limit, 1, "--requests") == limit
    assert check_simulated_requests(limit // 4, 4, "--requests", "4 loads") == 125_000
    for requests, runs in ((limit + 1, 1), (limit // 4 + 1, 4), (limit // 6 + 1, 6)):
        with pytest.raises(PlanInputError) as err:
            check_simulated_requests(requests, runs, "--simulate", f"{runs} runs")
        assert f"over the limit of {limit:,} per command" in str(err.value)
        assert (runs == 1) or f"give at most {limit // runs:,} per run" in str(err.value)
    with pytest.raises(PlanInputError, match=r"must be in \[1, 500,000\]"):
        check_simulated_requests(0, 4, "--requests")


@pytest.mark.parametrize(
    "args,needle",
    [
        (["simulate", "-n", "500001"], "--requests: 500,001 simulated requests, over the limit of 500,000"),
        (["simulate", "-n", "10000000"], "--requests: 10,000,000 simulated requests, over the limit"),
        (["validate-model", "-n", "125001"], "--requests: 4 loads x 125,001 = 500,004 simulated requests"),
        (["schedule", "d.yaml", "--simulate", "125001"], "--simulate: 2 windows x 2 plans x 125,001 = 500,004"),
        (["sites", "sites.yaml", "--simulate", "83334"], "--simulate: 3 windows x 2 PD sites x 83,334 = 500,004"),
    ],
)
def test_counts_beyond_the_simulation_limit_are_refused(run_cli, inputs, args, needle):
    """10,000,000 simulated requests take 76 s and 6.4 GB (the one event loop; 273 s and 5.3 GB with
    SimPy); refused before simulating (schedule and sites before planning their day)."""
    res = run_cli(*args)
    _refused(res, needle.split(":")[0])
    assert needle in res.err
    assert ("give at most" in res.err) == (args[0] != "simulate")  # several runs: how many per run fit


def test_the_help_gives_the_limit(run_cli):
    from prfaas_plan.ranges import REQUESTS

    for args in (["simulate", "--help"], ["validate-model", "--help"], ["schedule", "--help"], ["sites", "--help"]):
        assert f"{int(REQUESTS.hi):,}" in " ".join(run_cli(*args).out.split())


def test_the_published_script_says_how_to_call_it(capsys):
    """--help prints the script's usage (it was read as a file name, 'file not found', exit 2)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("published_bench", REPO / "benchmarks" / "published.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["published.py", "--help"]) == 0
    assert "python benchmarks/published.py my_measurements.csv" in capsys.readouterr().out


def test_the_mean_speed_ratio_counts_a_time_too_short_as_too_fast():
    """A TTFT predicted at half the measured and a rate predicted at twice it both say the model
    is 2x too fast: their geometric mean speed ratio is 2 (the plain ratios' would be 1)."""
    from prfaas_plan.published import Prediction, summary

    row = {"model": "m", "hardware": "h", "gpus": 1, "layout": "1 chip", "unit": ""}
    fast_time = Prediction("T", "ttft", predicted=0.5, measured=1.0, **row)
    fast_rate = Prediction("R", "e2e_tps", predicted=2.0, measured=1.0, **row)
    assert (fast_time.speed_ratio, fast_rate.speed_ratio) == (2.0, 2.0)
    assert summary([fast_time, fast_rate])["geomean_speed_ratio"] == pytest.approx(2.0)
