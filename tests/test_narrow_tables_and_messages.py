"""Tables at 80 columns say which row is which; headers carry units; errors name the file; one
label set for the stages.

Every command's report is the one the CLI builds (``cli._emit`` is replaced to catch it), rendered
as a terminal of 80 columns renders it: plain text and rich colour (ANSI stripped). The columns
that name a row are written here by hand for each table.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import re
import sys
from pathlib import Path

import pytest
import yaml
from conftest import DATA, REPO, case_study_doc, table_parts

from prfaas_plan.report import CONTINUED, to_csv, to_table

WIDTH = 80
ANSI = re.compile(r"\x1b\[[0-9;]*m")
CALIBRATE = (
    "calibrate",
    "--model",
    "prfaas-1t-hybrid",
    "--hardware",
    "h200",
    "--gpus",
    "8",
    "--points",
    str(DATA / "table5_h200_prfaas_1t.csv"),
)

# command -> (its arguments, the name columns of each table: the report's, then each section's)
COMMANDS = {
    "kv": (("kv", "prfaas-1t-hybrid", "-H", "h200", "-g", "8"), [["length (tokens)"]]),
    "decode": (("decode", "prfaas-1t-hybrid", "-H", "h20", "-g", "8"), [["context (tokens)"]]),
    "estimate": (("estimate", "kimi-k2", "-H", "h200"), [["input", "output"], ["figure"], ["pass"]]),
    "models list": (("models", "list"), [["model"]]),
    "models show": (("models", "show", "kimi-k2"), [["model"]]),
    "hardware list": (("hardware", "list"), [["hardware"]]),
    "hardware show": (("hardware", "show", "h200"), [["hardware"]]),
    "calibrate": (CALIBRATE, [["length (tokens)"]]),
    "plan": (("plan",), [["deployment"], ["item"], ["PrfaaS / PD / decode"], ["deployment"]]),
    "compare": (
        ("compare", "paper-case-study", "--prfaas", "h200,b200", "-j", "1"),
        [["#", "PrfaaS / PD / decode"], ["#", "PrfaaS / PD / decode"]],
    ),
    "sweep threshold": (("sweep", "--over", "threshold", "--points", "5", "-f", "table"), [["threshold_tokens"]]),
    "sweep np": (("sweep", "--over", "np", "-f", "table"), [["n_p", "n_d"]]),
    "sweep bandwidth": (("sweep", "--over", "bandwidth", "--points", "4", "-f", "table"), [["usable_gbps"]]),
    "sweep instances": (("sweep", "--over", "instances", "-f", "table"), [["n_prfaas"]]),
    "sweep rate": (("sweep", "--over", "rate", "--points", "4", "-f", "table"), [["deployment", "rate_rps"]]),
    "robust": (("robust", "robust-three-mixes"), [["case"]]),
    "schedule": (("schedule", "day-rebalance"), [["window"]]),
    "sites": (("sites", "two-edges-day"), [["window", "site"]]),
    "route-table": (("route-table", "--points", "4"), [["usable Gbps"]]),
    "simulate": (("simulate", "-n", "300"), [["path"]]),
    "validate-model": (("validate-model", "-n", "300"), [["load"]]),
}
# tables the trial found split at 80 columns without their name (each must split, or the test is idle)
SPLIT = {
    "robust",
    "schedule",
    "sites",
    "route-table",
    "hardware list",
    "models list",
    "validate-model",
    "sweep threshold",
    "estimate",
    "decode",
    "calibrate",
    "compare",
    "plan",
    "simulate",
}


class _Reports(dict):
    """Each command's report as the CLI builds it, built when first asked for (each under a
    second; all of them about 5 s)."""

    def __missing__(self, name: str):
        from prfaas_plan import cli

        got = []
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(cli, "_emit", lambda report, *a, **k: got.append(report))
            mp.setattr(sys, "argv", ["prfaas-plan", *COMMANDS[name][0]])
            try:
                cli.main()
            except SystemExit as exc:
                assert not exc.code, (name, exc.code)
        assert len(got) == 1, name
        self[name] = got[0]
        return got[0]


@pytest.fixture(scope="module")
def reports():
    return _Reports()


def _alone(report):
    """A table without its sections (each section is rendered on its own)."""
    return dataclasses.replace(report, sections=[])


_parts = table_parts


@pytest.mark.parametrize("color", [False, True])
@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_part_of_every_table_starts_with_the_rows_name(reports, name, color):
    """At 80 columns every line fits, nothing is cropped, and each part of each table begins with
    the row's name columns, whose cells run through the rows in order in every part."""
    report = reports[name]
    tables = [report, *report.sections]
    expected = COMMANDS[name][1]
    assert len(tables) == len(expected), name
    whole = ANSI.sub("", to_table(report, width=WIDTH, color=color))
    assert max(len(line) for line in whole.splitlines()) <= WIDTH, name
    assert "…" not in whole
    if name in SPLIT:
        assert CONTINUED in whole, name
    for table, names in zip(tables, expected):
        assert [c.header for c in table.columns if c.keep] == names, (name, table.title)
        text = ANSI.sub("", to_table(_alone(table), width=WIDTH, color=color))
        parts = _parts(text)
        assert parts, (name, table.title)
        if [c.key for c in table.columns] == ["item", "value"]:
            continue  # a list of items: its text wraps, every item once (test_compare_basis_and_width)
        assert sum(len(h) for h, _ in parts) - len(names) * (len(parts) - 1) == len(table.columns), table.title
        first = next(c for c in table.columns if c.keep)
        labels = [first.fmt(row[first.key]) for row in table.rows]
        for headers, body in parts:
            assert headers[: len(names)] == names, (name, table.title, headers)
            starts = [line.strip() for line in body]
            found, k = [], 0  # each row's name, in order, at the start of a line (wrapped lines between)
            for line in starts:
                if k < len(labels) and line.startswith(labels[k]):
                    found.append(labels[k])
                    k += 1
            assert found == labels, (name, table.title, headers)


def test_wide_terminals_and_pipes_keep_one_table(reports):
    """The keep columns change nothing where the table fits: at 400 columns (a pipe) each table is
    one part, its columns in the view's order."""
    for name in COMMANDS:
        report = reports[name]
        for table in [report, *report.sections]:
            text = to_table(_alone(table), width=400)
            assert CONTINUED not in text, name
            if table.columns[0].key != "item":
                assert _parts(text)[0][0] == [c.header for c in table.columns], name


# --------------------------------------------------------------------------------------------
# Headers with units; the docs' examples are the commands' output


def _unit_ok(key: str, header: str) -> bool:
    """A rate says req/s, a bandwidth Gbps, a time s (or ms): the unit of the key is in the header."""
    if key.endswith("_rps"):
        return header.endswith("req/s")
    if key.endswith("_gbps"):
        return "Gbps" in header
    if key.endswith("_ms"):
        return "ms" in header.split()
    if key.endswith("_s"):
        return header.endswith(" s") or header.endswith("(s)")
    return True


@pytest.mark.parametrize("name", ["schedule", "validate-model", "robust", "route-table", "sites", "simulate"])
def test_every_rate_time_and_bandwidth_header_names_its_unit(reports, name):
    report = reports[name]
    bad = [(c.key, c.header) for c in report.columns if not _unit_ok(c.key, c.header)]
    assert not bad, bad


def test_schedule_names_the_static_capacity_with_its_unit(reports):
    headers = {c.key: c.header for c in reports["schedule"].columns}
    assert headers["static_capacity_rps"] == "static capacity req/s"
    assert headers["capacity_rps"] == "capacity req/s" and headers["hours"] == "hours"


def test_each_difference_of_validate_model_names_the_pair_it_compares(reports):
    """The Δ columns are told apart by name, not position: the three overall ones, 'Δ X', follow
    'closed X ...' and 'sim X ...'; the per-path ones name their path and figure, whose closed and
    simulated values are in the CSV beside their difference."""
    report = reports["validate-model"]
    headers = [c.header for c in report.columns]
    deltas = [i for i, h in enumerate(headers) if h.startswith("Δ")]
    assert len(deltas) == 6 and len({headers[i] for i in deltas}) == 6
    overall = [i for i in deltas if not headers[i].startswith(("Δ local", "Δ remote"))]
    assert len(overall) == 3
    for i in overall:
        what = headers[i].removeprefix("Δ ")
        assert headers[i - 2].startswith(f"closed {what} ") and headers[i - 1].startswith(f"sim {what} "), headers
    csv_header = next(csv.reader(io.StringIO(to_csv(report))))
    assert {"throughput_diff_fraction", "ttft_mean_diff_fraction", "ttft_p90_diff_fraction", "rate_rps"} <= set(csv_header)
    for path, stat in (("local", "mean"), ("remote", "mean"), ("remote", "p90")):
        assert {f"{path}_closed_ttft_{stat}_s", f"{path}_sim_ttft_{stat}_s", f"{path}_ttft_{stat}_diff_fraction"} <= set(
            csv_header
        )


def _docs_block(page: str, after: str) -> list[str]:
    """The lines of the first code block of docs/``page`` after the text ``after``."""
    text = (REPO / "docs" / page).read_text()
    start = text.index("```\n", text.index(after)) + 4
    return text[start : text.index("```", start)].splitlines()


def _header_in(lines: list[str]) -> list[str]:
    rule = next(i for i, line in enumerate(lines) if line.strip() and set(line.strip()) == {"─"})
    return re.split(r"\s{2,}", lines[rule - 1].strip())


def test_docs_schedule_and_validate_examples_have_the_outputs_columns(reports):
    """The docs' examples show every column the commands print (schedule with --simulate adds
    its two simulated columns)."""
    from prfaas_plan import api
    from prfaas_plan.views.plan import schedule_view

    day, _ = api.schedule("day-rebalance")
    simulated = schedule_view(day, api.inputs("day-rebalance"), [(True, True)] * len(day.windows))
    assert _header_in(_docs_block("sites-and-days.md", "prfaas-plan schedule day-rebalance\n--simulate 4000")) == [
        c.header for c in simulated.columns
    ]
    assert _header_in(_docs_block("simulation.md", "validate-model -n 10000`):")) == [
        c.header for c in reports["validate-model"].columns
    ]


# --------------------------------------------------------------------------------------------
# One label set for the stages: the table's (CSV and JSON keep the enum values)

STAGE_LABELS = {"prfaas_compute": "PrfaaS", "link": "link", "pd_prefill": "PD-P", "pd_decode": "PD-D"}


def test_plan_text_names_the_binding_stage_as_its_table_does(reports):
    """The case study is bound by PD-P (Θ_pdp, docs/planning.md); the operating point says so in the table's
    words, and the enum values appear only in CSV and JSON."""
    report = reports["plan"]
    doc = report.json_doc
    assert doc["prfaas_pd"]["binding"] == "pd_prefill"
    text = to_table(report, width=400)
    point = {row["item"]: row["value"] for row in report.sections[0].rows}
    tight = ", ".join(STAGE_LABELS[t] for t in doc["prfaas_pd"]["tight"])
    assert point["Λ_max"].endswith(f"bound by PD-P; tight: {tight}")
    assert "PD-P 24 h20" in point["power"] and "PD-D 40 h20" in point["power"]  # 3 x 8 and 5 x 8 chips
    for enum in ("prfaas_compute", "pd_prefill", "pd_decode"):
        assert enum not in text, enum
    rows = list(csv.DictReader(io.StringIO(to_csv(report))))
    assert rows[0]["binding"] == "pd_prefill"


def test_route_table_prints_labels_and_writes_enum_values(reports):
    report = reports["route-table"]
    text = to_table(report, width=400)
    bindings = [row["binding"] for row in report.rows]
    assert bindings and set(bindings) <= set(STAGE_LABELS)
    table = _parts(text)[0]
    column = table[0].index("bound by")
    cells = [re.split(r"\s{2,}", line.strip())[column] for line in table[1]]
    assert cells == [STAGE_LABELS[b] for b in bindings]
    assert [r["binding"] for r in csv.DictReader(io.StringIO(to_csv(report)))] == bindings


# --------------------------------------------------------------------------------------------
# Errors: one line, the file, the field, the reason, exit 2


@pytest.mark.parametrize("command, field", [("robust", "robust"), ("schedule", "day")])
def test_a_missing_section_names_the_file_the_field_and_the_reason(run_cli, tmp_path, command, field):
    from prfaas_plan.profiles.registry import scenario_path

    shipped = scenario_path("paper-case-study")
    own = tmp_path / "mine.yaml"
    own.write_text(yaml.safe_dump(case_study_doc()))
    for ref, named in (("paper-case-study", shipped), (str(own), str(own))):
        res = run_cli(command, ref)
        assert res.code == 2 and "Traceback" not in res.err
        lines = res.err.strip().splitlines()
        assert len(lines) == 1, res.err
        assert lines[0] == f"prfaas-plan: error: {named}: {field}: " + lines[0].split(f"{field}: ", 2)[-1], lines[0]
        assert "section missing" in lines[0] and Path(named).name in lines[0]


@pytest.mark.parametrize(
    "chips, field, reason",
    [
        ([8, 0], "prfaas.gpus_per_instance[1]", "must be in [1, 65,536] chips, got 0"),
        ([8, "a"], "prfaas.gpus_per_instance[1]", "must be an integer (got 'a')"),
        ([], "prfaas.gpus_per_instance", "must have at least 1 item(s)"),
        (0, "prfaas.gpus_per_instance", "must be in [1, 65,536] chips, got 0"),
        ("eight", "prfaas.gpus_per_instance", "must be an integer (got 'eight')"),
    ],
)
def test_chips_per_instance_errors_name_the_item_at_fault(run_cli, tmp_path, chips, field, reason):
    """A list of chip counts is allowed: the error is about its bad item, not 'must be an integer'."""
    doc = case_study_doc()
    doc["prfaas"]["gpus_per_instance"] = chips
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc))
    res = run_cli("plan", str(path))
    assert res.code == 2
    assert res.err.strip() == f"prfaas-plan: error: {path}: {field}: {reason}"


def test_money_and_shares_print_their_sign_once():
    """A negative amount is '-$70.71', not '$-70.71'; a reduction that rounds to nothing is '0%',
    never '-0%' (or '+0%')."""
    from prfaas_plan.views.plan import _reduction_pct, _usd

    assert (_usd(-70.7143), _usd(1234.5), _usd(-0.001), _usd(None)) == ("-$70.71", "$1,234.50", "$0.00", "-")
    shares = [_reduction_pct(r) for r in (0.5, 0.0, 0.001, -0.2, None, float("nan"))]
    assert shares == ["-50%", "0%", "0%", "+20%", "n/a", "n/a"]


def test_a_signed_figure_that_rounds_to_zero_has_no_sign():
    """A change of -0.004% is printed '0.0%', never '-0.0%' or '+0.0%'; a dollar difference of
    -$0.001 is '$0.00' without a minus; a calibration error of -0.004% is '0.00' in its table and
    0.0 (not -0.0) where its JSON rounds it away; real signs stay."""
    from prfaas_plan.report import fixed, signed, unsigned_zero
    from prfaas_plan.views.plan import _reduction_pct, _usd

    assert [signed(v, 1) for v in (-0.0001, -0.04, 0.0, -0.0, 0.04)] == ["0.0"] * 5
    assert [signed(v, 1) for v in (-0.06, 0.06, -12.34, 3.0)] == ["-0.1", "+0.1", "-12.3", "+3.0"]
    assert signed(-0.00004, 4) == "0.0000" and signed(-0.00006, 4) == "-0.0001"
    assert _reduction_pct(0.0043) == "0%" and _reduction_pct(0.1) == "-10%" and _reduction_pct(-0.2) == "+20%"
    assert _usd(-0.001) == "$0.00" and _usd(-0.006) == "-$0.01"
    assert [fixed(v, 2) for v in (-0.004, -0.0, 0.004, -0.006, -1234.5)] == ["0.00", "0.00", "0.00", "-0.01", "-1,234.50"]
    assert str(unsigned_zero(round(-0.0004, 3))) == "0.0" and unsigned_zero(-2.5) == -2.5


def test_no_view_formats_a_signed_figure_itself():
    """Every signed figure in a report goes through ``report.signed``, so no '-0.0' can come back
    through an f-string's '+' format."""
    import ast

    views = sorted((REPO / "prfaas_plan" / "views").glob("*.py"))
    found = []
    for path in views:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FormattedValue) and node.format_spec is not None:
                spec = "".join(v.value for v in node.format_spec.values if isinstance(v, ast.Constant))
                if spec.startswith("+"):
                    found.append(f"{path.name}:{node.lineno}")
    assert views and not found, found
