"""Shared fixtures: run the CLI in-process the way the console script does."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
REPO = Path(__file__).resolve().parents[1]


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
