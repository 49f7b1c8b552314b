"""Benchmark: K local workers of one ``solvermap batch`` sharing one PostgreSQL database (issue #27).

For K in ``--workers`` (default 1, 4, 16), interleaved over ``--repeats`` rounds, a throw-away
PostgreSQL server (tests/search/postgres_server.py) runs a batch of ``--trials`` fast toy trials
(tests/search/toy_family.py: one small CP-SAT packing solve each, no cache, random sampler, so that the
storage and not the search dominates) and tests/search/storage_load.py measures throughput, storage
round trips by kind, slot-lock waiting, the most connections open at once, failed transactions and
lost or duplicated trials. It also measures the statements of one heartbeat.

    nice .venv/bin/python bench/batch_storage_bench.py [--workers 1,4,16] [--trials 200] [--repeats 3]

Writes under ``bench/results/``: ``batch_storage_runs.csv`` (every run, with the load average before
and after), ``batch_storage.csv`` (the median run per K), ``batch_storage.png`` and
``batch_storage_plan.json`` — the per-trial figures of the largest K and what they mean for 10,000
trials on 100 nodes under the stated assumptions (README, "Batch runs on a cluster"). Throughput on a
shared 2-core machine depends on its load; the round trips per trial do not.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import pandas as pd  # noqa: E402

import tests.search.toy_family  # noqa: E402,F401 - the toy target family the workers run
from tests.search.postgres_server import PostgresServer  # noqa: E402
from tests.search.storage_load import heartbeat_round_trips, measure  # noqa: E402

OUT = REPO / "bench" / "results"

# the plan's assumptions (README): a real trial maps every workload through a pipeline
PLAN = {"trials": 10_000, "nodes": 100, "trial_seconds": 60.0, "heartbeat_s": 30, "grace_s": 120}


def plan(row: pd.Series, beat: float) -> dict:
    """What the measured per-trial storage cost means for PLAN, with one worker per node and with one per core."""
    out = {"measured": {"workers": int(row["workers"]), "round_trips_per_trial": float(row["round_trips_per_trial"]),
                        "commits_per_trial": round(float(row["xact_commit"]) / float(row["finished"]), 1),
                        "round_trips_per_heartbeat": round(beat, 1),
                        "connections_per_worker": round(float(row["max_connections"]) / float(row["workers"]), 2),
                        "slot_lock_acquisitions_per_s_at_saturation": round(float(row["rt_lock"]) / float(row["busy_span_s"]), 1)},
           "assumptions": PLAN, "scenarios": {}}
    for label, per_node in (("one worker per node", 1), ("32 workers per node", 32)):
        workers = PLAN["nodes"] * per_node
        trials_per_s = workers / PLAN["trial_seconds"]
        beats_per_s = workers / PLAN["heartbeat_s"]
        out["scenarios"][label] = {
            "workers": workers,
            "hours": round(PLAN["trials"] / trials_per_s / 3600, 2),
            "trials_per_s": round(trials_per_s, 2),
            "round_trips_per_s": round(trials_per_s * float(row["round_trips_per_trial"]) + beats_per_s * beat),
            "commits_per_s": round(trials_per_s * float(row["xact_commit"]) / float(row["finished"]) + beats_per_s),
            "connections": round(workers * float(row["max_connections"]) / float(row["workers"])),
            "total_round_trips_millions": round(PLAN["trials"] * float(row["round_trips_per_trial"]) / 1e6, 2),
        }
    return out


def figure(summary: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.4))
    left.plot(summary["workers"], summary["trials_per_s_busy"], "o-", label="busy span")
    left.plot(summary["workers"], summary["trials_per_s"], "s--", label="wall clock (with start-up)")
    left.set_xlabel("workers")
    left.set_ylabel("finished trials / s")
    left.set_xscale("log", base=2)
    left.legend()
    right.bar(summary["workers"].astype(str), summary["round_trips_per_trial"])
    right.set_xlabel("workers")
    right.set_ylabel("storage round trips / trial")
    fig.suptitle(f"one PostgreSQL, toy trials, {os.cpu_count()} CPUs")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="1,4,16")
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    counts = [int(k) for k in args.workers.split(",")]
    OUT.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="batch-storage-bench-"))
    server = PostgresServer(root / "pg")
    server.start()
    rows = []
    try:
        beat = heartbeat_round_trips(server)
        for repeat in range(args.repeats):
            for workers in counts:
                load_before = os.getloadavg()[0]
                row = measure(server, root / f"r{repeat}-k{workers}", workers=workers, n_trials=args.trials)
                row.update(repeat=repeat, load_before=round(load_before, 2), load_after=round(os.getloadavg()[0], 2),
                           cpus=os.cpu_count(), machine=platform.processor() or platform.machine(),
                           date=time.strftime("%Y-%m-%d %H:%M"))
                rows.append(row)
                print(json.dumps(row), flush=True)
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
    runs = pd.DataFrame(rows)
    runs.to_csv(OUT / "batch_storage_runs.csv", index=False)
    # the median run of each K by busy-span throughput (a real run, not a mix of runs)
    summary = (runs.sort_values("trials_per_s_busy").groupby("workers", as_index=False)
               .apply(lambda g: g.iloc[len(g) // 2]).reset_index(drop=True))
    summary.to_csv(OUT / "batch_storage.csv", index=False)
    figure(summary, OUT / "batch_storage.png")
    largest = summary.loc[summary["workers"].idxmax()]
    (OUT / "batch_storage_plan.json").write_text(json.dumps(plan(largest, beat), indent=2) + "\n")
    print(summary[["workers", "finished", "lost", "duplicated", "trials_per_s", "trials_per_s_busy",
                   "round_trips_per_trial", "failed_transactions", "max_connections", "lock_wait_s"]].to_string(index=False))


if __name__ == "__main__":
    main()
