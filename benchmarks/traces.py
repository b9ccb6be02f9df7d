"""Reading a 10,000,000-row request trace: peak memory and wall time (issue 19: under 0.5 GB).

Writes a synthetic trace of ``--rows`` requests to a temporary file in the Azure 2023 format
(``TIMESTAMP,ContextTokens,GeneratedTokens``) and in the Mooncake format (JSON lines; ``hash_ids``
of one block a request, so that 10M rows stay under the 1 GiB file limit), then reads each in
a fresh process with ``workload.traces`` and reports the child's peak resident memory (``VmHWM``
of ``/proc/self/status``: the child's own high-water mark; ``ru_maxrss`` would carry the
parent's over fork and exec) and its wall time, the interpreter and NumPy import included. The
Mooncake row is read without the block hashes (``hashes=False``, the lengths and arrivals a
plan uses); with them, add 8 bytes per block id.

    python benchmarks/traces.py                  # 10M rows of each format
    python benchmarks/traces.py --rows 1000000 --formats azure
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
CHUNK = 1_000_000
READ = """
import sys, time
start = time.perf_counter()
from prfaas_plan.workload.traces import azure, mooncake
fmt, path = sys.argv[1], sys.argv[2]
trace = azure.read(path) if fmt == "azure" else mooncake.read(path, hashes=False)
wall = time.perf_counter() - start
peak = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(len(trace), float(trace.input_tokens.mean()), wall, peak)
"""


def write_azure(path: Path, rows: int, rng: np.random.Generator) -> None:
    origin = np.datetime64("2023-11-16T18:15:46.0000000", "ns")
    with open(path, "w") as handle:
        handle.write("TIMESTAMP,ContextTokens,GeneratedTokens\n")
        at = origin
        for start in range(0, rows, CHUNK):
            n = min(CHUNK, rows - start)
            stamps = at + np.cumsum(rng.integers(0, 20_000_000, n)).astype("timedelta64[ns]")
            at = stamps[-1]
            text = np.datetime_as_string(stamps, unit="us")
            inputs = rng.integers(1, 32_768, n)
            outputs = rng.integers(0, 2_048, n)
            handle.write("".join(f"{t.replace('T', ' ')},{i},{o}\n" for t, i, o in zip(text, inputs, outputs)))


def write_mooncake(path: Path, rows: int, rng: np.random.Generator) -> None:
    with open(path, "w") as handle:
        at = 0
        for start in range(0, rows, CHUNK):
            n = min(CHUNK, rows - start)
            stamps = at + np.cumsum(rng.integers(0, 20, n))
            at = int(stamps[-1])
            inputs = rng.integers(1, 32_768, n)
            outputs = rng.integers(1, 2_048, n)
            ids = start + np.arange(n)
            handle.write(
                "".join(
                    f'{{"timestamp": {t}, "input_length": {i}, "output_length": {o}, "hash_ids": [{h}]}}\n'
                    for t, i, o, h in zip(stamps, inputs, outputs, ids)
                )
            )


def measure(fmt: str, path: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", READ, fmt, str(path)], capture_output=True, text=True, env=env)
    if done.returncode:
        raise SystemExit(f"reading the {fmt} trace failed:\n{done.stderr}")
    out = done.stdout
    rows, mean_input, wall, rss_kib = out.split()
    return {
        "format": fmt,
        "rows": int(rows),
        "mean_input": float(mean_input),
        "wall_s": float(wall),
        "peak_mib": int(rss_kib) / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--formats", nargs="+", default=["azure", "mooncake"], choices=["azure", "mooncake"])
    args = parser.parse_args()
    rng = np.random.default_rng(19)
    with tempfile.TemporaryDirectory() as folder:
        for fmt, writer, name in (("azure", write_azure, "trace.csv"), ("mooncake", write_mooncake, "trace.jsonl")):
            if fmt not in args.formats:
                continue
            path = Path(folder) / name
            start = time.perf_counter()
            writer(path, args.rows, rng)
            written = time.perf_counter() - start
            result = measure(fmt, path)
            size_mib = path.stat().st_size / 2**20
            print(
                f"{fmt:9s} {result['rows']:>11,} rows  {size_mib:7.0f} MiB file  read {result['wall_s']:6.1f} s  "
                f"peak RSS {result['peak_mib']:6.0f} MiB  (written in {written:.0f} s)"
            )
            path.unlink()


if __name__ == "__main__":
    main()
