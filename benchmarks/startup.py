"""Start-up of `prfaas-plan plan` against its import floor (issue 18: at most 1.5x).

The import floor is the time a process takes to import the third-party modules that `plan`
itself ends up loading (numpy, pydantic, yaml, typer and whatever they pull in; found by a
probe run that lists ``sys.modules`` after `plan`), without prfaas_plan: no planner can start
faster than the libraries it stands on. The ratio is plan's wall time over the floor's.

    python benchmarks/startup.py                 # 21 alternating runs of each, medians
    python benchmarks/startup.py --runs 31 --before /tmp/pre18   # also an earlier checkout
    python benchmarks/startup.py --phases 15     # also CPU per phase of plan (least of 15 runs)
    python benchmarks/startup.py --append        # append the section to benchmarks/RESULTS.md

Every command runs as a whole process (interpreter start included) from a neutral folder with
the checkout first on ``PYTHONPATH``, byte-compiled (``PYTHONDONTWRITEBYTECODE`` unset) after
one untimed warm-up run each; the builds and the floor run in turn, run by run, so that all see
the same machine load. CPU time (user + system of the process) is recorded beside the wall
time: on a shared machine it moves less with the other load. ``--before`` names the root of another checkout (e.g. made with
``git archive <commit> | tar -x -C /tmp/pre18``) whose `plan` is timed alongside.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PROBE = """
import sys
from prfaas_plan.cli import main
sys.argv = ["prfaas-plan", "plan", "-o", sys.argv[1]]
try:
    main()
except SystemExit:
    pass
std = set(sys.stdlib_module_names)
names = sorted(m for m in list(sys.modules) if m.split(".")[0] not in std and m.split(".")[0] != "prfaas_plan"
               and not m.startswith("_") and m != "__main__")
print(" ".join(names))
"""
PHASES = """
import sys, time
marks = [time.process_time()]
for name in sys.argv[1:]:
    try:
        __import__(name)
    except Exception:
        pass
marks.append(time.process_time())
import prfaas_plan.cli
import prfaas_plan.api as api
marks.append(time.process_time())
import prfaas_plan.planner.plan
from prfaas_plan.views.plan import plan_view
marks.append(time.process_time())
inputs = api.inputs("paper-case-study")
marks.append(time.process_time())
result = api.plan(inputs)
marks.append(time.process_time())
plan_view(result)
marks.append(time.process_time())
print(" ".join(f"{b - a:.6f}" for a, b in zip(marks, marks[1:])))
"""
BREAKDOWN = """
import functools, importlib, sys, time
import prfaas_plan.cli, prfaas_plan.api as api
import prfaas_plan.planner.plan, prfaas_plan.planner.chips, prfaas_plan.planner.paper
from prfaas_plan.views.plan import plan_view
import pydantic._internal._model_construction as construction
import dataclasses
spent = {}

def timed(fn, key):
    @functools.wraps(fn)
    def run(*args, **kwargs):
        start = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[key] = spent.get(key, 0.0) + time.process_time() - start
    return run

for target in sys.argv[1:]:
    module, _, name = target.partition(":")
    owner = importlib.import_module(module)
    *path, last = name.split(".")
    for part in path:
        owner = getattr(owner, part)
    original = getattr(owner, last)
    setattr(owner, last, timed(original, target))
    if not path:  # the modules that imported the function by name
        for other in list(sys.modules.values()):
            if getattr(other, "__name__", "").startswith("prfaas_plan") and getattr(other, last, None) is original:
                setattr(other, last, getattr(owner, last))
plan_view(api.plan(api.inputs("paper-case-study")))
print(" ".join(f"{spent.get(t, 0.0):.6f}" for t in sys.argv[1:]))
"""
# what a case-study plan spends its CPU on once its modules are imported (nested calls overlap)
BREAKDOWN_TARGETS = (
    "prfaas_plan.profiles.registry:resolve_scenario_file",
    "pydantic._internal._model_construction:complete_model_class",
    "prfaas_plan.study.basis:calibrated",
    "prfaas_plan.timing.prefill:RooflinePrefill._search_layout",
    "prfaas_plan.study.model:decode_model",
    "prfaas_plan.planner.throughput:threshold_table",
    "prfaas_plan.planner.optimizer:optimise",
    "prfaas_plan.planner.paper:is_case_study",
)
PHASE_NAMES = ("third-party imports", "cli + api imports", "planner + view imports", "resolve the scenario", "plan", "report")
FLOOR = """
import importlib, sys
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except Exception:
        pass
"""


def env_for(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(root)
    return env


def timed(args: list[str], env: dict[str, str], cwd: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system) of one run of ``args``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=cwd, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def floor_modules(root: Path, out: str, cwd: str) -> list[str]:
    """The third-party modules `plan` of the checkout at ``root`` imports."""
    run = subprocess.run(
        [sys.executable, "-c", PROBE, out], check=True, capture_output=True, text=True, cwd=cwd, env=env_for(root)
    )
    return run.stdout.split()


def phase_cpu(root: Path, modules: list[str], cwd: str) -> list[float]:
    """CPU seconds of each of ``PHASE_NAMES`` in one process running the checkout at ``root``."""
    run = subprocess.run(
        [sys.executable, "-c", PHASES, *modules], check=True, capture_output=True, text=True, cwd=cwd, env=env_for(root)
    )
    return [float(x) for x in run.stdout.split()]


def breakdown_cpu(root: Path, cwd: str) -> list[float]:
    """CPU seconds in each of ``BREAKDOWN_TARGETS`` of one in-process case-study plan."""
    run = subprocess.run(
        [sys.executable, "-c", BREAKDOWN, *BREAKDOWN_TARGETS],
        check=True,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env_for(root),
    )
    return [float(x) for x in run.stdout.split()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--before", type=Path, help="root of an earlier checkout, timed alongside")
    parser.add_argument(
        "--phases", type=int, default=0, metavar="N", help="also: CPU per phase of plan, least of N in-process runs"
    )
    parser.add_argument("--append", action="store_true", help="append the section to benchmarks/RESULTS.md")
    parser.add_argument("--results", type=Path, default=REPO / "benchmarks" / "RESULTS.md", help="the file --append writes to")
    args = parser.parse_args()

    cwd = tempfile.mkdtemp(prefix="prfaas-startup-")
    out = str(Path(cwd) / "plan.txt")
    modules = floor_modules(REPO, out, cwd)
    tops = sorted({m.split(".")[0] for m in modules})
    commands = {"plan": ([sys.executable, "-m", "prfaas_plan", "plan", "-o", out], env_for(REPO))}
    if args.before:
        commands["plan (before)"] = ([sys.executable, "-m", "prfaas_plan", "plan", "-o", out], env_for(args.before.resolve()))
    commands["import floor"] = ([sys.executable, "-c", FLOOR, *modules], env_for(Path(cwd)))
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for cmd, env in commands.values():
        timed(cmd, env, cwd)  # warm-up: byte code and file caches
    for _ in range(args.runs):
        for name, (cmd, env) in commands.items():
            samples[name].append(timed(cmd, env, cwd))
    medians = {
        name: (statistics.median(w for w, _ in values), statistics.median(c for _, c in values))
        for name, values in samples.items()
    }
    floor_wall, floor_cpu = medians["import floor"]

    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "",
        f"## plan's start-up against its import floor ({when})",
        "",
        f"`python benchmarks/startup.py {' '.join(sys.argv[1:])}`: "
        f"medians of {args.runs} alternating runs, whole processes from a neutral folder, byte-compiled; "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}. The floor imports the {len(modules)} "
        f"third-party modules that `plan` loads (packages: {', '.join(tops)}).",
        "",
        "| what | wall (s) | wall x floor | CPU (s) | CPU x floor |",
        "|---|---|---|---|---|",
    ]
    for name, (wall, cpu) in medians.items():
        lines.append(f"| {name} | {wall:.3f} | {wall / floor_wall:.2f} | {cpu:.3f} | {cpu / floor_cpu:.2f} |")
    if args.phases:
        roots = {"plan": REPO, **({"plan (before)": args.before.resolve()} if args.before else {})}
        phase_runs: dict[str, list[list[float]]] = {name: [] for name in roots}
        for _ in range(args.phases):  # the builds in turn, as above
            for name, root in roots.items():
                phase_runs[name].append(phase_cpu(root, modules, cwd))
        least = {name: [min(v) for v in zip(*values)] for name, values in phase_runs.items()}
        lines += [
            "",
            f"CPU seconds per phase of the case-study plan in one process, the least of {args.phases} runs "
            "(`--phases`; the imports of the floor first, then prfaas_plan's):",
            "",
            "| phase | " + " | ".join(least) + " |",
            "|---|" + "---|" * len(least),
        ]
        for k, phase in enumerate(PHASE_NAMES):
            lines.append(f"| {phase} | " + " | ".join(f"{values[k]:.3f}" for values in least.values()) + " |")
        lines.append(
            "| prfaas_plan's own (all but the first) | " + " | ".join(f"{sum(v[1:]):.3f}" for v in least.values()) + " |"
        )
    if args.phases:
        runs = [breakdown_cpu(REPO, cwd) for _ in range(args.phases)]
        lines += [
            "",
            f"CPU seconds of the functions the case-study plan spends its time in after its imports, the least of "
            f"{args.phases} runs (`--phases`; a function's time includes the calls it makes, which may be listed too; "
            "complete_model_class: pydantic building a schema's validator on first use):",
            "",
            "| function | CPU (s) |",
            "|---|---|",
            *(f"| `{t}` | {min(v):.3f} |" for t, v in zip(BREAKDOWN_TARGETS, zip(*runs))),
        ]
    shutil.rmtree(cwd, ignore_errors=True)
    text = "\n".join(lines) + "\n"
    print(text)
    if args.append:
        with open(args.results, "a") as handle:
            handle.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
