"""Benchmarks: wall time of the main commands, as medians of repeated runs.

Run from the repository root after installing the package:

    python benchmarks/run.py            # writes benchmarks/RESULTS.md

Measured: `prfaas-plan plan` on the built-in case study, a 10,000-point bandwidth sweep,
`prfaas-plan --help`, simulating 100,000 requests of the case study (each as a whole
process, interpreter start included), and reading a 1,000,000-row length trace
in-process. Targets on a 2-core machine: plan < 1 s, sweep < 2 s, help < 0.3 s,
simulation < 20 s, trace < 2 s.
"""

from __future__ import annotations

import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPEATS = int(os.environ.get("BENCH_REPEATS", "7"))


def cli() -> list[str]:
    exe = shutil.which("prfaas-plan")
    return [exe] if exe else [sys.executable, "-m", "prfaas_plan"]


def time_process(args: list[str], repeats: int = REPEATS) -> list[float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return times


def time_call(fn, repeats: int = REPEATS) -> list[float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def main() -> int:
    import numpy as np

    from prfaas_plan.workload.distributions import empirical
    from prfaas_plan.workload.trace import read_length_trace

    work = Path(tempfile.mkdtemp(prefix="prfaas-bench-"))
    try:
        trace = work / "trace.txt"
        rng = np.random.default_rng(0)
        lengths = np.clip(np.exp(rng.normal(9.9, 1.0, 1_000_000)), 128, 131072).astype(np.int64)
        trace.write_text("length\n" + "\n".join(map(str, lengths)) + "\n")
        base = cli()
        results = [
            ("plan (case study)", "prfaas-plan plan -o FILE", 1.0,
             time_process(base + ["plan", "-o", str(work / "plan.txt")])),
            ("sweep, 10,000 points", "prfaas-plan sweep --over bandwidth --points 10000 -o FILE", 2.0,
             time_process(base + ["sweep", "--over", "bandwidth", "--from", "0.5", "--to", "100", "--points", "10000",
                                  "-o", str(work / "sweep.csv")])),
            ("--help", "prfaas-plan --help", 0.3, time_process(base + ["--help"])),
            ("simulate 100,000 requests", "prfaas-plan simulate -n 100000 -o FILE", 20.0,
             time_process(base + ["simulate", "-n", "100000", "-o", str(work / "sim.txt")], min(REPEATS, 3))),
            ("read 1M-row trace", "read_length_trace + empirical (in-process)", 2.0,
             time_call(lambda: empirical(read_length_trace(str(trace))))),
        ]
    finally:
        shutil.rmtree(work, ignore_errors=True)

    lines = [
        "# Benchmark results",
        "",
        f"Written by `python benchmarks/run.py` on {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC; "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}, {platform.machine()}; "
        f"median of {REPEATS} runs (whole processes include interpreter start).",
        "",
        "| what | command | median (s) | min (s) | target (s) | met |",
        "|---|---|---|---|---|---|",
    ]
    ok = True
    for name, command, target, times in results:
        med = statistics.median(times)
        ok &= med < target
        lines.append(f"| {name} | `{command}` | {med:.3f} | {min(times):.3f} | {target:g} | {'yes' if med < target else 'NO'} |")
    Path(os.environ.get("BENCH_RESULTS", HERE / "RESULTS.md")).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
