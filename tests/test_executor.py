"""Where compare's options are planned (``planner.executor``): in process, in local processes or
on a Ray cluster, always returned in option order, so that the rows are the same on each; Ray is
optional and imported only when asked for."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from prfaas_plan import api
from prfaas_plan.errors import PlanInputError
from prfaas_plan.planner.executor import InProcess, LocalProcesses, RayExecutor, executor_for

REPO = Path(__file__).resolve().parents[1]
CASE_STUDY = REPO / "prfaas_plan" / "scenarios" / "paper-case-study.yaml"
NO_RAY = (  # run the CLI where Ray cannot be imported, as without the [ray] extra
    "import sys\nsys.modules['ray'] = None\nfrom prfaas_plan.cli import main\nsys.argv = ['prfaas-plan', *sys.argv[1:]]\nmain()\n"
)


def _slow_square(x: int, delay_s: float) -> int:
    time.sleep(delay_s)
    return x * x


def _cli(*args: str, code: str | None = None, timeout: int = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    command = [sys.executable, "-c", code, *args] if code else [sys.executable, "-m", "prfaas_plan", *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=REPO, env=env, timeout=timeout)


def _options_file(tmp_path: Path) -> Path:
    """The case study with a compare: section of four options (2 PrfaaS x 2 PD hardware)."""
    doc = yaml.safe_load(CASE_STUDY.read_text())
    doc["compare"] = {"prfaas": ["h200", "b200"], "pd": ["h20", "h200"]}
    path = tmp_path / "options.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_local_processes_return_results_in_task_order():
    """The first task finishes last; the results still come back in task order, and progress
    counts every task once."""
    tasks = [(k, 0.3 if k == 0 else 0.0) for k in range(5)]
    seen = []
    out = LocalProcesses(2).map(_slow_square, tasks, lambda done, total: seen.append((done, total)))
    assert out == [0, 1, 4, 9, 16]
    assert seen == [(k, 5) for k in range(1, 6)]
    assert InProcess().map(_slow_square, [(3, 0.0)]) == [9]


def test_executor_for_chooses_and_checks():
    assert isinstance(executor_for(1), InProcess)
    assert executor_for(3) == LocalProcesses(3)
    with pytest.raises(PlanInputError) as err:
        executor_for(0)
    assert err.value.field == "jobs"
    with pytest.raises(PlanInputError) as err:
        executor_for(4, "local")
    assert err.value.field == "jobs" and "not both" in err.value.reason


def test_compare_rows_do_not_depend_on_the_executor():
    """In process and in two processes: the same ranked rows."""
    one = api.compare("paper-case-study", prfaas=["h200", "b200"], executor=InProcess())
    two = api.compare("paper-case-study", prfaas=["h200", "b200"], executor=LocalProcesses(2))
    assert [r.option for r in one.results] == [r.option for r in two.results]
    assert [r.lambda_max_rps for r in one.results] == [r.lambda_max_rps for r in two.results]


def test_ray_without_the_extra_is_one_line_naming_it():
    res = _cli("compare", "--prfaas", "h200,b200", "--ray", "local", code=NO_RAY)
    assert res.returncode == 2, res.stderr
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr
    assert res.stderr.startswith("prfaas-plan: error: --ray: Ray is not installed")
    assert "pip install 'prfaas-plan[ray]'" in res.stderr


def test_ray_executor_names_its_field(monkeypatch):
    """The library speaks of its field (``ray_address``), not of the CLI's option."""
    from prfaas_plan.planner import executor

    with pytest.raises(PlanInputError) as err:
        RayExecutor("")
    assert err.value.field == "ray_address"
    monkeypatch.setattr(executor, "ray_available", lambda: False)
    with pytest.raises(PlanInputError) as err:
        RayExecutor("local")
    assert err.value.field == "ray_address" and executor.RAY_EXTRA in err.value.reason


def test_ray_and_jobs_together_are_an_error():
    res = _cli("compare", "--prfaas", "h200,b200", "--ray", "local", "--jobs", "2")
    assert res.returncode == 2 and res.stderr.count("\n") == 1
    assert "--jobs or --ray, not both" in res.stderr


def test_compare_without_ray_does_not_import_it(tmp_path):
    code = (
        "import sys; from prfaas_plan.cli import main\n"
        f"sys.argv = ['p', 'compare', '--prfaas', 'h200', '--jobs', '1', '-o', {str(tmp_path / 'c.txt')!r}]\n"
        "try:\n main()\nexcept SystemExit: pass\n"
        "print('ray' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO).stdout
    assert out.strip().splitlines()[-1] == "False"


@pytest.mark.slow
def test_compare_on_a_local_ray_cluster_gives_the_rows_of_two_processes(tmp_path):
    """`compare --ray local` (a Ray cluster started for the run, its workers in other processes)
    and `compare --jobs 2` write the same rows (JSON: every field of every option) for an
    options file."""
    pytest.importorskip("ray")
    path = str(_options_file(tmp_path))
    on_ray_file = tmp_path / "ray.json"
    local = _cli("compare", path, "--jobs", "2", "-f", "json")
    assert local.returncode == 0, local.stderr
    on_ray = _cli("compare", path, "--ray", "local", "-f", "json", "-o", str(on_ray_file), timeout=300)
    assert on_ray.returncode == 0, on_ray.stderr
    rows = json.loads(local.stdout)
    assert json.loads(on_ray_file.read_text()) == rows
    assert len(rows["options"]) == 4


@pytest.mark.slow
def test_api_compare_on_a_connected_ray_cluster(tmp_path):
    """A process already connected to Ray (ray.init, two CPUs) plans there, reports progress as
    options finish and keeps its connection; the results are those planned in process."""
    ray = pytest.importorskip("ray")
    path = str(_options_file(tmp_path))
    ray.init(num_cpus=2, include_dashboard=False, runtime_env={"env_vars": {"PYTHONPATH": str(REPO)}})
    try:
        seen = []
        on_ray = api.compare(path, ray_address="auto", progress=lambda done, total: seen.append((done, total)))
        assert ray.is_initialized()
    finally:
        ray.shutdown()
    here = api.compare(path, executor=InProcess())
    assert [r.option for r in on_ray.results] == [r.option for r in here.results]
    assert [(r.lambda_max_rps, r.usd_per_hour) for r in on_ray.results] == [
        (r.lambda_max_rps, r.usd_per_hour) for r in here.results
    ]
    assert seen[-1] == (4, 4) and [d for d, _ in seen] == sorted({d for d, _ in seen})
