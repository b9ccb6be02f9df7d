"""Set-up: the README's two commands, CI running exactly the test command, and a fresh venv."""

import os
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    """The commands of the README's first bash block."""
    text = (REPO / "README.md").read_text()
    block = re.search(r"```bash\n(.*?)```", text, re.S).group(1)
    return [line.strip() for line in block.splitlines() if line.strip()]


def test_readme_opens_with_two_commands():
    install_run, tests = readme_commands()
    assert "pip install" in install_run and "prfaas-plan plan" in install_run
    assert "pip install" in tests and "pytest" in tests and "ruff check" in tests and "python -m mypy" in tests


def test_ci_runs_exactly_the_readme_test_command():
    ci = (REPO / ".ci" / "run").read_text()
    assert readme_commands()[1] in ci.splitlines()


def test_every_package_is_installed():
    """pyproject lists every package folder (a missing one installs a package that cannot import)."""
    import tomllib

    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    folders = {".".join(p.parent.relative_to(REPO).parts) for p in (REPO / "prfaas_plan").rglob("__init__.py")}
    assert folders <= listed, sorted(folders - listed)


def test_shipped_profiles_found_from_any_directory(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = subprocess.run(
        [sys.executable, "-m", "prfaas_plan", "kv", "qwen3-8b", "--hardware", "h100", "-f", "csv"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.splitlines()[0].startswith("model,hardware,gpus_per_instance,layout,length_tokens,kv_bytes")


@pytest.mark.slow
@pytest.mark.skipif(
    bool(os.environ.get("PRFAAS_PLAN_SKIP_VENV_TEST") or os.environ.get("PRFAAS_PLAN_IN_VENV_TEST")),
    reason="skipped on request, or already inside the fresh-venv test",
)
def test_fresh_venv_follows_readme(tmp_path):
    """Copy the tracked tree, make a fresh venv, and run the README's two commands there."""
    src = tmp_path / "src"
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    for name in files:
        if (REPO / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, src / name)
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{env_dir / 'bin'}{os.pathsep}{env['PATH']}"
    env["PRFAAS_PLAN_IN_VENV_TEST"] = "1"
    for command in readme_commands():
        run = subprocess.run(["bash", "-c", command], cwd=src, env=env, capture_output=True, text=True, timeout=900)
        assert run.returncode == 0, f"{command}\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
        if "pytest" not in command:
            assert "PrfaaS-PD" in run.stdout and "Jensen gap" in run.stdout


@pytest.mark.slow
def test_docs_scenario_example_plans(tmp_path):
    """The scenario YAML shown in docs/yaml-reference.md validates and plans."""
    import yaml

    from prfaas_plan.planner.plan import plan
    from prfaas_plan.profiles.scenario import load_scenario
    from prfaas_plan.study.resolve import build_inputs

    text = (REPO / "docs" / "yaml-reference.md").read_text()
    block = text.split("## Scenario YAML", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    scenario = load_scenario(yaml.safe_load(block), "docs/yaml-reference.md")
    result = plan(build_inputs(scenario), "exact", with_marginals=False)
    assert result.point.lambda_max > 0 and result.point.n_prfaas <= 8
    assert result.point.gpus.get("h200", 0) <= 64 and (result.point.usd_per_hour or 0) <= 600
