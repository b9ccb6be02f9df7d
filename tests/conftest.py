"""Shared fixtures: the CLI run in-process as the console script runs it, and the case study
resolved and planned once per test session."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
REPO = Path(__file__).resolve().parents[1]
CASE_STUDY = REPO / "prfaas_plan" / "scenarios" / "paper-case-study.yaml"


def pytest_collection_modifyitems(config, items):
    """Inside the fresh-venv test (``test_setup.test_fresh_venv_follows_readme``) the README's test
    command checks that a clean install runs the suite; the slow tier has just run outside on the
    same tree, so there it is skipped, which keeps CI (both runs) under ten minutes."""
    import os

    if not os.environ.get("PRFAAS_PLAN_IN_VENV_TEST"):
        return
    skip = pytest.mark.skip(reason="slow tier: run by the outer suite, not again inside the fresh-venv test")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@dataclass
class CliResult:
    code: int
    out: str
    err: str


@pytest.fixture
def run_cli(capsys, monkeypatch):
    """Call ``prfaas_plan.cli.main`` with argv; return exit code, stdout and stderr."""
    from prfaas_plan.cli import main

    def run(*args: str) -> CliResult:
        monkeypatch.setattr(sys, "argv", ["prfaas-plan", *map(str, args)])
        code = 0
        try:
            main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run


def case_study_doc() -> dict:
    import yaml

    return yaml.safe_load(CASE_STUDY.read_text())


def write_case_study(folder: Path, **changes) -> Path:
    """The built-in case-study scenario with changes (``a__b=value`` sets doc[a][b];
    None deletes the key), written to ``folder/scenario.yaml``."""
    import yaml

    doc = case_study_doc()
    for path, value in changes.items():
        *parents, last = path.split("__")
        node = doc
        for key in parents:
            node = node[key]
        if value is None:
            del node[last]
        else:
            node[last] = value
    out = folder / "scenario.yaml"
    out.write_text(yaml.safe_dump(doc))
    return out


@pytest.fixture
def case_study_file():
    """Write the case-study scenario with changes: ``case_study_file(tmp_path, link__rtt_ms=5)``."""
    return write_case_study


@pytest.fixture(scope="session")
def case_inputs():
    """The case study resolved once (``PlanInputs``; frozen, so tests cannot change it)."""
    from prfaas_plan.planner.chips import load_inputs

    return load_inputs("paper-case-study")


@pytest.fixture(scope="session")
def case_plan(case_inputs):
    """The case study planned once in exact mode, with marginal values."""
    from prfaas_plan.planner.plan import plan

    return plan(case_inputs, "exact")


@pytest.fixture(scope="session")
def case_plan_paper(case_inputs):
    """The case study planned once in paper mode, with marginal values."""
    from prfaas_plan.planner.plan import plan

    return plan(case_inputs, "paper")


def table_parts(text: str) -> list[tuple[list[str], list[str]]]:
    """(header cells, body lines) of every table part of rendered text: the line above a rule of
    '─', the lines below it up to a blank line; header cells are separated by two or more spaces."""
    import re

    lines = text.splitlines()
    out = []
    for i, line in enumerate(lines):
        if line.strip() and set(line.strip()) == {"─"}:
            body = []
            for row in lines[i + 1 :]:
                if not row.strip():
                    break
                body.append(row)
            out.append((re.split(r"\s{2,}", lines[i - 1].strip()), body))
    return out


def calibrated_on_truth(base, truth_efficiency: dict, fit: list[str], model: str = "qwen3-8b", lengths=(8192, 32768)):
    """``calibrate`` of ``base`` (1 chip) on the prefill latencies the roofline gives with
    ``truth_efficiency`` (on the layout the base picks), fitting ``fit``: a synthetic truth to recover."""
    from prfaas_plan import api
    from prfaas_plan.timing.calibrate import CalibrationPoint, calibrate
    from prfaas_plan.timing.instance import Instance
    from prfaas_plan.timing.prefill import RooflinePrefill

    truth = base.model_copy(update={"efficiency": base.efficiency.model_copy(update=truth_efficiency)})
    m = api.model_of(model)
    layout = RooflinePrefill(m, Instance(base, 1), capacity="per_request").layout
    times = RooflinePrefill(m, Instance(truth, 1, layout)).prefill_s(list(lengths))
    return calibrate(m, base, 1, [CalibrationPoint(n, float(t)) for n, t in zip(lengths, times)], fit=fit)
