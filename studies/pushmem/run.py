"""Study: seed 001 Tables VI and VII — sequential vs optimised completion cycles and SRAM words per app.

For every app at its default size (64x64 stencils) the whole pushmem pipeline runs (solver per decision,
seed baselines beside it), the cycle simulator validates bit-exactly, and the sequential schedule of
001:L372 (each kernel to completion, loops not pipelined) is measured on the same program. Sequential
SRAM words are the storage-minimised words under that schedule (every intermediate buffer holds the
whole tensor, as Table VII's sequential column). Writes results/tables.csv and results/tables.png.

    .venv/bin/python studies/pushmem/run.py [--apps gaussian harris ...] [--backend highs]
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import numpy as np

from solvermap.formulations.solver import SolverConfig
from solvermap.hardware.targets import load_target
from solvermap.ir.workloads import build
from solvermap.mappers.pipeline import Context
from solvermap.mappers.pushmem import PIPELINE
from solvermap.mappers.pushmem.buffers import extract_buffers
from solvermap.mappers.pushmem.storage import max_live

SEED = {  # Table VI (001:L376-L383) and Table VII (001:L385-L392)
    "gaussian": (27159, 4102, 11784, 128), "harris": (92227, 4120, 41080, 640), "upsample": (53247, 16387, 20480, 67),
    "unsharp": (49279, 4119, 23584, 834), "camera": (92013, 4122, 37972, 518), "resnet": (44876, 15614, 14048, 14048),
    "mobilenet": (22463, 1026, 9136, 1240),
}
OUT = Path(__file__).parent / "results"


def sequential_words(ctx) -> int:
    """Peak live values per buffer under the sequential schedule, summed (Table VII sequential column)."""
    program = ctx.workload.ir
    seq = ctx.state["sequential_schedule"]
    total = 0
    for ub in extract_buffers(program, seq, ctx.state["latency"]):
        last = np.full(int(np.prod(ub.shape)), -1, dtype=np.int64)
        for p in ub.reads:
            np.maximum.at(last, p.elements, p.times)
        el = ub.write.elements
        total += max_live(ub.write.times, np.maximum(last[el], ub.write.times + 1))
    return int(total)


def run(apps: list[str], backend: str) -> list[dict]:
    rows = []
    for app in apps:
        ctx = Context(workload=build(app, "pushmem"), target=load_target("pushmem-cgra"),
                      solver=SolverConfig(backend=backend, time_limit_s=60))
        result = PIPELINE.run(ctx)
        v = result.validation
        s_seq, s_opt, w_seq, w_opt = SEED[app]
        row = {
            "app": app, "pipeline": ctx.state["schedule.problem"].pipeline,
            "seq_cycles": v["sequential_cycles"], "opt_cycles": v["cycles"], "scheduled_cycles": v["predicted_cycles"],
            "speedup": round(v["sequential_cycles"] / v["cycles"], 2),
            "seed_seq_cycles": s_seq, "seed_opt_cycles": s_opt, "seed_speedup": round(s_seq / s_opt, 2),
            "seq_words": sequential_words(ctx), "opt_words": v["sram_words"], "sim_peak_words": v["simulated_peak_sram_words"],
            "seed_seq_words": w_seq, "seed_opt_words": w_opt,
            "bit_exact": v["bit_exact"], "port_conflicts": v["port_conflicts"], "shift_registers": v["shift_registers"],
            "sr_stages": v["sr_stages"], "memories": v["memories"], "banks": v["banks"], "tiles": v["tiles_used"],
            "energy_nj": round(v["energy_j"] * 1e9, 3), "area_mm2": round(v["area_mm2"], 4),
            "solver_sources": ";".join(f"{r.decision}:{r.solution_source}" for r in result.records),
        }
        row["word_reduction"] = round(row["seq_words"] / max(1, row["opt_words"]), 2)
        row["seed_word_reduction"] = round(w_seq / w_opt, 2)
        rows.append(row)
        print({k: row[k] for k in ("app", "seq_cycles", "opt_cycles", "seed_opt_cycles", "seq_words", "opt_words",
                                   "seed_opt_words", "bit_exact", "port_conflicts")}, flush=True)
    return rows


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    apps = [r["app"] for r in rows]
    x = np.arange(len(apps))
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    for ax, (ours_s, ours_o, seed_s, seed_o, title) in zip(axes, [
        ("seq_cycles", "opt_cycles", "seed_seq_cycles", "seed_opt_cycles", "completion cycles (Table VI)"),
        ("seq_words", "opt_words", "seed_seq_words", "seed_opt_words", "SRAM words (Table VII)")]):
        w = 0.2
        ax.bar(x - 1.5 * w, [r[ours_s] for r in rows], w, label="ours sequential")
        ax.bar(x - 0.5 * w, [r[seed_s] for r in rows], w, label="seed sequential")
        ax.bar(x + 0.5 * w, [r[ours_o] for r in rows], w, label="ours optimised")
        ax.bar(x + 1.5 * w, [r[seed_o] for r in rows], w, label="seed optimised")
        ax.set_yscale("log")
        ax.set_xticks(x, apps, rotation=30)
        ax.set_title(title)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--apps", nargs="*", default=list(SEED))
    parser.add_argument("--backend", default="highs")
    args = parser.parse_args()
    rows = run(args.apps, args.backend)
    OUT.mkdir(parents=True, exist_ok=True)
    with open(OUT / "tables.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    plot(rows, OUT / "tables.png")
    print(f"wrote {OUT / 'tables.csv'} and {OUT / 'tables.png'}")


if __name__ == "__main__":
    main()
