"""The library speaks in its own field names; only ``cli.py`` knows the command-line options.

Every module under ``prfaas_plan/`` but ``cli.py`` is read as source: no string constant (an
f-string's literal parts included) holds an option string (``--`` and a letter at the start
of a word, or one of the short options the CLI defines). Docstrings are left out: they are
documentation, not text the library produces, and cite other tools' options (vLLM's
``--max-concurrency``). ``cli.OPTION_NAMES``, the one map from field to option, names only
options its commands have, and an error shows the field through the API and the option
through the CLI.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import prfaas_plan
from prfaas_plan import api, cli
from prfaas_plan.errors import PlanInputError

PACKAGE = Path(prfaas_plan.__file__).parent
LONG_OPTION = re.compile(r"(?<![\w-])--[A-Za-z]")


def _cli_options() -> dict[str, set[str]]:
    """Each command's option strings (long and short), from the typer app itself."""
    import typer.main

    group = typer.main.get_command(cli.app)
    options: dict[str, set[str]] = {}

    def visit(command, name: str) -> None:
        subcommands = getattr(command, "commands", None)
        if subcommands:
            for sub_name, sub in subcommands.items():
                visit(sub, f"{name} {sub_name}".strip())
            return
        options[name] = {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)}

    visit(group, "")
    return options


def _short_options() -> set[str]:
    return {opt for opts in _cli_options().values() for opt in opts if re.fullmatch(r"-[A-Za-z]", opt)}


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings (a module's, class's or function's first statement)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                found.add(id(first.value))
    return found


def option_strings(source: str, filename: str, short_options: set[str]) -> list[str]:
    """'file:line: text' for each string constant of ``source`` (f-string parts too, docstrings
    not) that holds a long option or one of ``short_options`` as a word of its own."""
    short = re.compile(rf"(?<![\w-])(?:{'|'.join(map(re.escape, sorted(short_options)))})(?![\w-])") if short_options else None
    tree = ast.parse(source, filename)
    skip = _docstrings(tree)
    hits = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) or id(node) in skip:
            continue
        if LONG_OPTION.search(node.value) or (short is not None and short.search(node.value)):
            hits.append(f"{filename}:{node.lineno}: {node.value!r}")
    return hits


def test_no_module_below_the_cli_holds_an_option_string():
    short = _short_options()
    assert {"-o", "-f", "-H", "-g", "-n"} <= short  # the scan knows the CLI's short options
    modules = sorted(p for p in PACKAGE.rglob("*.py") if p != PACKAGE / "cli.py")
    assert len(modules) > 80  # the whole package, not an empty glob
    hits = [hit for p in modules for hit in option_strings(p.read_text(), str(p.relative_to(PACKAGE.parent)), short)]
    assert not hits, "option strings below cli.py (name the field; cli.OPTION_NAMES maps it):\n" + "\n".join(hits)


def test_the_scan_finds_an_option_in_a_string_an_f_string_and_a_default_but_not_in_a_docstring():
    source = '''
def f(field: str = "--parallel"):
    """Say --rate in a docstring: documentation, not a message."""
    raise ValueError(f"give --rate or {field}, not both")

X = "models--org--name"  # a folder name, not an option
Y = "write it with -o"
Z = "a -1 offset, x-o and -oo are no options"
'''
    hits = option_strings(source, "m.py", {"-o"})
    assert sorted(int(h.split(":")[1]) for h in hits) == [2, 4, 7], hits


def test_the_option_table_names_only_options_its_commands_have():
    options = _cli_options()
    for command, names in cli.OPTION_NAMES.items():
        assert command in options, f"OPTION_NAMES names no command {command!r}"
        for field, option in names.items():
            for part in re.split(r"/| \+ ", option):
                assert part in options[command], f"{command}: {field} -> {option}: {part} is no option of {command}"


def test_simulation_fields_are_options_or_api_only():
    """Each SimConfig field the CLI exposes is in the simulate table; the others are settings of the
    API only (the adaptive controller's and role switcher's tuning, the sampler's interval)."""
    from dataclasses import fields

    from prfaas_plan.simulate import SimConfig

    exposed = set(cli.OPTION_NAMES["simulate"])
    api_only = {f.name for f in fields(SimConfig)} - exposed
    assert api_only == {
        "sample_interval_s",
        "adaptive_util_high",
        "adaptive_util_low",
        "adaptive_wait_high_s",
        "adaptive_wait_low_s",
        "adaptive_interval_s",
        "adaptive_step_share",
        "rebalance_interval_s",
        "rebalance_queue_high",
    }


def test_an_api_error_names_the_parameter_and_the_cli_names_its_option(run_cli):
    with pytest.raises(PlanInputError) as info:
        api.compare("paper-case-study", prfaas=["h200"], jobs=100)
    assert info.value.field == "jobs" and "--" not in info.value.one_line()
    res = run_cli("compare", "--prfaas", "h200", "--jobs", "100")
    assert res.code == 2 and res.err.startswith("prfaas-plan: error: --jobs: must be in [1, 64]"), res.err


def test_a_reason_names_other_parameters_in_backticks_and_the_cli_names_their_options(run_cli):
    with pytest.raises(PlanInputError) as info:
        api.simulate("paper-case-study", rate_rps=1.0, load=0.5)
    assert (info.value.field, info.value.reason) == ("rate_rps", "give `rate_rps` or `load`, not both")
    res = run_cli("simulate", "--rate", "1", "--load", "0.5")
    assert res.code == 2 and res.err.strip() == "prfaas-plan: error: --rate: give --rate or --load, not both"


@pytest.mark.parametrize(
    "args, expected",
    [
        (("sweep", "{s}", "--over", "bandwidth", "--from", "-5"), "--from: must be in [0, 1,000,000] Gbps, got -5"),
        (
            ("sweep", "{s}", "--over", "bandwidth", "--from", "50", "--to", "10"),
            "--from/--to: need --from <= --to, got 50 and 10",
        ),
        (("sweep", "{s}", "--over", "instances", "--to", "-3"), "--to: must be in [0, 10,000] instances, got -3"),
        (("route-table", "{s}", "--from", "-5"), "--from: must be in [0, 1,000,000] Gbps, got -5"),
        (("simulate", "{s}", "--rate", "1", "--load", "0.5"), "--rate: give --rate or --load, not both"),
        (("simulate", "{s}", "--rate", "1", "--drop-at", "-5"), "--drop-at: must be in [0, 10,000,000] s, got -5"),
    ],
)
def test_an_options_error_names_the_option_when_the_scenario_is_a_file(tmp_path, run_cli, args, expected):
    """A value given on the command line is the option's, not a field of the scenario file: the
    error names the option and not the file, whether the scenario is a shipped name or a path."""
    path = tmp_path / "mine.yaml"
    path.write_text((PACKAGE / "scenarios" / "paper-case-study.yaml").read_text())
    res = run_cli(*(a.format(s=path) for a in args))
    assert res.code == 2 and res.err.strip() == f"prfaas-plan: error: {expected}", res.err
    # a field of the file still names the file
    path.write_text(path.read_text().replace("bandwidth_gbps: 100", "bandwidth_gbps: -100"))
    res = run_cli(*(a.format(s=path) for a in args))
    assert res.code == 2 and f"{path}: link.bandwidth_gbps:" in res.err, res.err


def test_simulation_settings_name_their_sim_config_fields(run_cli):
    from prfaas_plan.simulate import SimConfig

    for changes, field, option in (
        ({"warmup_fraction": 1.0}, "warmup_fraction", "--warmup"),
        ({"drop_to_fraction": 2.0}, "drop_to_fraction", "--drop-to"),
        ({"arrivals": "onoff", "burst_factor": 3.0, "on_s": 10.0, "off_s": 10.0}, "burst_factor", "--burst-factor"),
    ):
        with pytest.raises(PlanInputError) as info:
            SimConfig(rate_rps=1.0, requests=10, **changes)
        assert info.value.field == field and cli.OPTION_NAMES["simulate"][field] == option
    res = run_cli("simulate", "-n", "100", "--arrivals", "onoff", "--on-s", "10", "--off-s", "10", "--burst-factor", "3")
    assert res.code == 2 and "error: --burst-factor: must be in [1, (on_s + off_s) / on_s = 2]" in res.err, res.err
    res = run_cli("simulate", "-n", "100", "--warmup", "1")
    assert res.code == 2 and "error: --warmup: must be in [0, 1)" in res.err, res.err


def test_only_errors_about_a_parameter_are_renamed():
    names = {"pd_decode": "--decode", "load": "--load"}
    # a spec field of the scenario file keeps its name, even where a parameter has the same one
    in_file = PlanInputError("instances must be >= 1", source="s.yaml", field="pd_decode")
    assert in_file.renamed(names) is in_file
    # a parameter's value, or a file a parameter names (compare's --decode profile), is renamed
    given = PlanInputError("required field is missing", source="hw.yaml", field="pd_decode", argument=True)
    assert given.renamed(names).one_line() == "hw.yaml: --decode: required field is missing"
    plain = PlanInputError("give `pd_decode` or `load`, see `prfaas-plan plan`", field="load")
    assert plain.renamed(names).one_line() == "--load: give --decode or --load, see `prfaas-plan plan`"
    # an item or a part of a parameter is named under the parameter's option
    names["bandwidth_trace"] = "--bandwidth-trace"
    item = PlanInputError("time_s must increase", field="bandwidth_trace[1]")
    assert item.renamed(names).field == "--bandwidth-trace[1]"
    assert PlanInputError("x", field="loads").renamed(names).field == "loads"  # a longer name is another field
    # the source and the argument flag survive with_source
    assert given.with_source("other.yaml").renamed(names).field == "--decode"


def test_shipped_profiles_name_none_of_the_clis_options():
    """The profiles' notes and sources (data the reports print) name the spec's fields; other tools'
    options they cite (SGLang's ``--kv-cache-dtype``) are no options of this CLI. A comment line
    (a scenario's ``# Run: prfaas-plan schedule ...``) is documentation, not data."""
    ours = {opt for opts in _cli_options().values() for opt in opts if opt.startswith("--")}
    pattern = re.compile(rf"(?<![\w-])(?:{'|'.join(map(re.escape, sorted(ours)))})(?![\w-])")
    root = PACKAGE.parent
    files = sorted(
        [*PACKAGE.rglob("*.yaml"), *(root / "model_profiles").glob("*.yaml"), *(root / "hardware_profiles").glob("*.yaml")]
    )
    assert len(files) > 30
    hits = [
        f"{p.relative_to(PACKAGE.parent)}:{n}: {line.strip()}"
        for p in files
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if pattern.search(line) and not line.lstrip().startswith("#")  # a comment may show how to run the file
    ]
    assert not hits, "\n".join(hits)


def test_a_scenario_pools_calibration_fit_error_names_that_field(tmp_path, run_cli):
    """calibrate's own error on its ``fit`` is the pool's ``calibration_fit`` in a scenario (it once
    read ``calibration_points``: the pool looked for the option's name, which the library no longer has)."""
    from conftest import write_case_study

    path = write_case_study(tmp_path, pd__calibration_fit=["compute", "matmul"])
    with pytest.raises(PlanInputError) as info:
        api.plan(str(path))
    assert (info.value.source, info.value.field) == (str(path), "pd.calibration_fit")
    res = run_cli("plan", path)
    assert res.code == 2 and f"{path}: pd.calibration_fit: compute scales matmul and attention" in res.err, res.err


@pytest.mark.parametrize("command", ["kv", "decode", "estimate", "calibrate"])
def test_an_unknown_hardware_name_is_the_hardware_options_error(run_cli, command, tmp_path):
    """A name that is no shipped profile (and no file) is a bad value of --hardware; a missing file
    named as the hardware is that file's error."""
    points = tmp_path / "points.csv"
    points.write_text("length,prefill_s\n8192,0.5\n16384,1.1\n32768,2.4\n")
    model = ("-m", "deepseek-v3", "--points", str(points)) if command == "calibrate" else ("deepseek-v3",)
    res = run_cli(command, *model, "-H", "nope")
    assert res.code == 2 and res.err.startswith("prfaas-plan: error: --hardware: unknown hardware 'nope'"), res.err
    res = run_cli(command, *model, "-H", "missing/h.yaml")
    assert res.code == 2 and res.err.startswith("prfaas-plan: error: missing/h.yaml: file not found"), res.err


def test_a_concurrency_that_does_not_fit_points_at_more_chips(run_cli):
    """The fewest chips that hold the model hold 11 requests at 33K tokens: 32 do not fit, and the
    error says what would (--gpus)."""
    res = run_cli("estimate", "qwen3-235b", "-H", "mi300x", "-C", "32", "-i", "32K")
    assert res.code == 2 and res.err.strip() == (
        "prfaas-plan: error: --concurrency: 32 running requests at 33,792 tokens do not fit 3xmi300x as pp3 "
        "(at most 11; more chips per instance hold more: --gpus)"
    ), res.err


def test_a_multi_site_file_given_to_a_one_site_command_names_the_command_for_it(run_cli):
    """plan points at sites (or robust, compare); simulate at sites --simulate, which simulates
    every site of every window."""
    path = str(PACKAGE / "scenarios" / "two-edges-day.yaml")
    plan_err = run_cli("plan", path).err.strip().splitlines()[-1]
    sim_err = run_cli("simulate", path, "-n", "100").err.strip().splitlines()[-1]
    assert plan_err.endswith("not a one-site one: plan it with `prfaas-plan sites FILE` (or robust, compare)"), plan_err
    assert sim_err.endswith("not a one-site one: simulate it with `prfaas-plan sites FILE --simulate N`"), sim_err


def test_a_bad_basis_for_a_sites_file_names_the_basis_option(run_cli):
    """compare on a multi-site file plans it as given: another --basis is the option's error, not
    the file's."""
    path = str(PACKAGE / "scenarios" / "two-edges-day.yaml")
    res = run_cli("compare", path, "--basis", "model")
    assert res.code == 2 and res.err.startswith("prfaas-plan: error: --basis: a multi-site file is planned as given"), res.err


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda path: api.plan(path, mode="nope"), "mode"),
        (lambda path: api.figure5_data(path, mode="nope"), "mode"),
        (lambda path: api.simulate_day(path, requests=100, seed=-1), "seed"),
    ],
)
def test_a_library_parameters_error_does_not_name_the_scenario_file(call, field):
    """A notebook's bad argument to plan, figure5_data or simulate_day is that argument's error,
    not a field of the scenario file it planned."""
    path = str(PACKAGE / "scenarios" / "day-rebalance.yaml")
    with pytest.raises(PlanInputError) as err:
        call(path)
    assert err.value.field == field and err.value.source is None, err.value.one_line()
