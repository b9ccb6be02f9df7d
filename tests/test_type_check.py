"""mypy with the project's settings (``[tool.mypy]`` in pyproject.toml): every third-party import
resolves (stubs, or ``ignore_missing_imports`` for the modules without type information), and
the whole package type-checks clean (the README's test command runs ``python -m mypy`` too; this
test says so when the suite runs alone)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mypy")

REPO = Path(__file__).resolve().parents[1]
ERROR = re.compile(r"^(?P<path>[^:]+):\d+: error: .*\[(?P<code>[a-z-]+)\]$")


@pytest.mark.slow  # a cold mypy run of the package: about 20 s
def test_the_package_type_checks(tmp_path):
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache"), "--no-pretty"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode in (0, 1) and ("Success" in run.stdout or "Found" in run.stdout), run.stdout + run.stderr
    errors = [m for m in map(ERROR.match, run.stdout.splitlines()) if m]
    imports = [m.group(0) for m in errors if m.group("code") in ("import-untyped", "import-not-found")]
    assert not imports, "\n".join(imports)
    assert not errors and run.returncode == 0, run.stdout
