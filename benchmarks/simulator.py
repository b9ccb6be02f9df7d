"""The simulator's marginal cost per request: wall(50K) - wall(10K) over 40K requests.

Runs ``python -m prfaas_plan simulate -n N -o FILE`` on the case study (whole processes,
interpreter start included, so that the difference cancels the fixed cost of starting and
planning) for N = 10,000 and 50,000, alternating, ``--repeats`` times each, and prints the
median walls and (median(50K) - median(10K)) / 40,000 in microseconds per request. With
``--in-process`` it also times ``prfaas_plan.simulate.simulate`` alone (no start-up, no plan)
at each size (CPU, the least of the repeats; ``--only-in-process`` skips the processes).
``--tree DIR`` runs another checkout (e.g. the main one, for a before figure).

    python benchmarks/simulator.py --repeats 5
    python benchmarks/simulator.py --tree /work/main --repeats 5
    python benchmarks/simulator.py --only-in-process --repeats 7
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _wall_cpu_s(tree: Path, requests: int, out: Path) -> tuple[float, float]:
    """(wall, CPU = user + system) seconds of one whole process."""
    command = [sys.executable, "-m", "prfaas_plan", "simulate", "-n", str(requests), "-o", str(out)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, cwd=tree, check=True, capture_output=True)
    wall_s = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall_s, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _in_process_s(requests: int) -> float:
    """CPU seconds of ``simulate()`` alone (no start-up, no plan) on the case study's plan at 0.8 x Λ_max."""
    from prfaas_plan import api
    from prfaas_plan.planner.deployment import Deployment
    from prfaas_plan.simulate import SimConfig, simulate
    from prfaas_plan.study.model import decode_model

    inputs = api.inputs("paper-case-study")
    plan = Deployment("prfaas_pd", 19349.0, 4, 3, 5)
    decode = decode_model(inputs)
    start = time.process_time()
    simulate(inputs, plan, decode, SimConfig(rate_rps=0.8 * 3.2369, requests=requests))
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=REPO, help="checkout to run (default: this one)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--requests", type=int, nargs="*", default=[10_000, 50_000], help="sizes (default 10000 50000)")
    parser.add_argument("--in-process", action="store_true", help="also time simulate() alone, in this process")
    parser.add_argument("--only-in-process", action="store_true", help="time simulate() alone only")
    args = parser.parse_args()
    sizes = sorted(args.requests)
    walls: dict[int, list[float]] = {n: [] for n in sizes}
    cpus: dict[int, list[float]] = {n: [] for n in sizes}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(0 if args.only_in_process else args.repeats):
            for n in sizes:
                wall_s, cpu_s = _wall_cpu_s(args.tree, n, Path(tmp) / "sim.txt")
                walls[n].append(wall_s)
                cpus[n].append(cpu_s)
    print(f"tree {args.tree}; {args.repeats} repeats; medians of whole `python -m prfaas_plan simulate -n N -o FILE`")
    for n in sizes if not args.only_in_process else ():
        runs = ", ".join(f"{w:.3f}" for w in walls[n])
        print(
            f"  {n:>10,} requests: wall {statistics.median(walls[n]):.3f} s, "
            f"CPU {statistics.median(cpus[n]):.3f} s  (walls {runs})"
        )
    if len(sizes) >= 2 and not args.only_in_process:
        lo, hi = sizes[0], sizes[-1]
        for name, values in (("wall", walls), ("CPU", cpus)):
            marginal_us = (statistics.median(values[hi]) - statistics.median(values[lo])) / (hi - lo) * 1e6
            print(f"  marginal cost ({name}): {marginal_us:.2f} us per request ({lo:,} -> {hi:,})")
    if args.in_process or args.only_in_process:
        sys.path.insert(0, str(args.tree))
        best = {n: min(_in_process_s(n) for _ in range(args.repeats)) for n in sizes}
        for n in sizes:
            print(f"  simulate() alone, {n:>10,} requests: CPU {best[n]:.3f} s (min of {args.repeats})")
        if len(sizes) >= 2:
            lo, hi = sizes[0], sizes[-1]
            print(f"  marginal cost (simulate() alone, CPU): {(best[hi] - best[lo]) / (hi - lo) * 1e6:.2f} us per request")


if __name__ == "__main__":
    main()
