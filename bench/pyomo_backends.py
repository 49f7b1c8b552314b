"""Benchmark: a whole decision through Pyomo against the same backend called natively.

Runs ``solvermap solve DECISION --workload W --target T --solver B --json`` as a subprocess for each
backend, interleaved over ``--repeats`` rounds (so that machine load hits every backend alike), and records
the decision's status, objective, bound, the summed build and solve seconds the facade reports, the wall
clock of the whole command and the 1-minute load average before each run. The default is the acceptance
case of issue #21: partition of kmeans on plasticine, native ``highs`` against ``pyomo-highs`` (both must
end at 40, optimal; the partition strategy runs one model per cluster and many solves, so the Pyomo
translation is paid many times).

    nice .venv/bin/python bench/pyomo_backends.py [--backends highs,pyomo-highs] [--repeats 2]
        [--decision partition --workload kmeans --target plasticine]

Writes ``bench/results/pyomo_backends.csv`` (one row per run) and prints the median wall clock per backend
and its ratio to the first backend's.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

OUT = Path(__file__).resolve().parent / "results" / "pyomo_backends.csv"
SOLVERMAP = Path(sys.executable).with_name("solvermap")


def cpu_flags() -> str:
    try:
        flags = next(line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("flags"))
    except (OSError, StopIteration):
        return "?"
    return " ".join(flag for flag in ("avx2", "avx512f") if f" {flag}" in flags)


def run(decision: str, workload: str, target: str, backend: str) -> dict:
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        done = subprocess.run([str(SOLVERMAP), "solve", decision, "--workload", workload, "--target", target,
                               "--solver", backend, "--json", "-q", "--out", str(Path(out) / "run")],
                              capture_output=True, text=True)
        wall = time.perf_counter() - start
    row = {"decision": decision, "workload": workload, "target": target, "backend": backend,
           "wall_seconds": round(wall, 2), "load_1min": round(load, 2), "exit_code": done.returncode}
    if done.returncode != 0:
        return {**row, "message": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""}
    solver = json.loads(done.stdout)["solver"]
    return {**row, **{key: solver[key] for key in ("status", "objective", "bound", "gap", "build_seconds",
                                                    "solve_seconds", "solver_version", "message")}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="highs,pyomo-highs")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--decision", default="partition")
    parser.add_argument("--workload", default="kmeans")
    parser.add_argument("--target", default="plasticine")
    args = parser.parse_args()
    backends = args.backends.split(",")
    rows = []
    for round_ in range(args.repeats):
        for backend in backends:
            row = run(args.decision, args.workload, args.target, backend)
            rows.append({"round": round_, **row, "machine": f"{platform.machine()} {os.cpu_count()} cores",
                         "cpu_flags": cpu_flags()})
            print(f"{backend}: {row.get('status')} {row.get('objective')} in {row['wall_seconds']} s "
                  f"(load {row['load_1min']})", flush=True)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(OUT, index=False)
    medians = {b: statistics.median(r["wall_seconds"] for r in rows if r["backend"] == b) for b in backends}
    for backend, median in medians.items():
        print(f"{backend}: median {median:.1f} s, {median / medians[backends[0]]:.2f}x {backends[0]}")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
