"""Study: seed 001 Tables VI and VII at documented sizes, and completion cycles against image size.

Tables (``results/tables.csv``, ``tables.md``, ``tables.png``): every app at its default size (the sources
are in ``ir/workloads/pushmem_*.py``) is mapped twice by the whole pushmem pipeline — with the optimising
schedule, and with the seed's sequential schedule (001:L372: each kernel to completion, no loop
pipelined) imposed in place of the schedule decision, on an array with as many MEM tiles as it needs
(``seq_tiles``; harris needs more than the preset's 64) — and each mapped design is run by the cycle
simulator. Both cycle columns are simulated cycles; both word columns are the SRAM words the mapped design
allocates. ``seq_live_words`` is the seed's sequential measure (001:L374: buffers that hold each
producer's whole output), the peak number of live values per buffer under the sequential schedule, summed.

Sweep (``results/sweep.csv``, ``sweep.png``): the optimised design at every size of ``SIZES``, simulated;
the sequential column there is the sequential schedule's completion (its whole-image buffers stop fitting
the 64 MEM tiles above 64x64). Bandwidth (``results/bandwidth.csv``, right panel of ``sweep.png``): one
resnet mapping simulated at falling DRAM bandwidths, where late tiles stall the whole array (001:L301)
and the simulated cycles leave the schedule's completion. ``results/summary.json`` holds the machine (CPU model and flags), the
versions and every figure the READMEs quote.

    nice .venv/bin/python studies/pushmem/run.py [--apps gaussian ...] [--backend highs] [--no-sweep]
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import os
import time
from pathlib import Path

import numpy as np

from solvermap.formulations.solver import SolverConfig
from solvermap.hardware.cpu.toolchain import cpu_flags
from solvermap.hardware.pushmem.simulator import simulate
from solvermap.hardware.targets import load_target
from solvermap.ir.loopnest import random_inputs
from solvermap.ir.workloads import build, info
from solvermap.mappers.pipeline import Context
from solvermap.mappers.pushmem import PIPELINE, mapping_of
from solvermap.mappers.pushmem.buffers import extract_buffers
from solvermap.mappers.pushmem.configure import configure
from solvermap.mappers.pushmem.storage import max_live
from solvermap.runs import environment

SEED = {  # Table VI (001:L376-L383) and Table VII (001:L385-L392): seq cycles, opt cycles, seq words, opt words
    "gaussian": (27159, 4102, 11784, 128), "harris": (92227, 4120, 41080, 640), "upsample": (53247, 16387, 20480, 67),
    "unsharp": (49279, 4119, 23584, 834), "camera": (92013, 4122, 37972, 518), "resnet": (44876, 15614, 14048, 14048),
    "mobilenet": (22463, 1026, 9136, 1240),
}
SIZES = {"gaussian": (32, 64, 128, 256), "harris": (32, 64, 128, 256), "upsample": (32, 64, 128, 256),
         "unsharp": (32, 64, 128, 256), "camera": (32, 64, 128, 256), "resnet": (16, 32, 64), "mobilenet": (32, 64, 128)}
DRAM_RATES = (4.0, 0.2, 0.1, 0.05, 0.025)  # words per cycle; 4 is the preset (assumption A10)
OUT = Path(__file__).parent / "results"
TARGET = "pushmem-cgra"
UNBOUNDED_TILES = 100_000


def _context(app: str, params: dict, backend: str, **target) -> Context:
    return Context(workload=build(app, "pushmem", params), target=load_target(TARGET).model_copy(update=target),
                   solver=SolverConfig(backend=backend, time_limit_s=60))


def optimised(app: str, params: dict, backend: str) -> tuple[Context, dict]:
    ctx = _context(app, params, backend)
    result = PIPELINE.run(ctx)
    return ctx, result.validation


def sequential(app: str, params: dict, backend: str) -> tuple[Context, dict]:
    """The pipeline with the sequential baseline schedule in place of the schedule decision, on an array with
    as many MEM tiles as its whole-image buffers need (``seq_tiles`` reports how many)."""
    ctx = _context(app, params, backend, mem_tiles=UNBOUNDED_TILES)
    for step in PIPELINE.steps:
        step.run(ctx)
        if step.name == "schedule":
            ctx.state["schedule"] = ctx.state["sequential_schedule"]
    return ctx, PIPELINE.validate(ctx)


def sequential_live_words(ctx) -> int:
    """Peak live values per buffer under the sequential schedule, summed (Table VII sequential measure)."""
    program = ctx.workload.ir
    total = 0
    for ub in extract_buffers(program, ctx.state["sequential_schedule"], ctx.state["latency"]):
        last = np.full(int(np.prod(ub.shape)), -1, dtype=np.int64)
        for p in ub.reads:
            np.maximum.at(last, p.elements, p.times)
        el = ub.write.elements
        total += max_live(ub.write.times, np.maximum(last[el], ub.write.times + 1))
    return int(total)


def _check(v: dict) -> str:
    return "ok" if v["bit_exact"] and not v["hazards"] else f"bit_exact={v['bit_exact']} hazards={v['hazards']}"


def tables(apps: list[str], backend: str) -> list[dict]:
    rows = []
    for app in apps:
        params = dict(info(app, "pushmem").params)
        start = time.perf_counter()
        ctx, v = optimised(app, params, backend)
        _, s = sequential(app, params, backend)
        s_seq, s_opt, w_seq, w_opt = SEED[app]
        row = {
            "app": app, "params": json.dumps(params, sort_keys=True), "pipeline": ctx.state["schedule.problem"].pipeline,
            "seq_cycles": s["simulated_cycles"], "opt_cycles": v["simulated_cycles"],
            "seq_scheduled": s["predicted_cycles"], "opt_scheduled": v["predicted_cycles"],
            "stall_cycles": v["stall_cycles"] + s["stall_cycles"],
            "speedup": round(s["simulated_cycles"] / v["simulated_cycles"], 2),
            "seed_seq_cycles": s_seq, "seed_opt_cycles": s_opt, "seed_speedup": round(s_seq / s_opt, 2),
            "opt_vs_seed": round(v["simulated_cycles"] / s_opt, 3), "seq_vs_seed": round(s["simulated_cycles"] / s_seq, 3),
            "seq_live_words": sequential_live_words(ctx), "seq_words": s["sram_words"], "opt_words": v["sram_words"],
            "opt_live_words": v["simulated_peak_sram_words"], "seed_seq_words": w_seq, "seed_opt_words": w_opt,
            "opt_check": _check(v), "seq_check": _check(s),
            "shift_registers": v["shift_registers"], "sr_stages": v["sr_stages"], "memories": v["memories"],
            "banks": v["banks"], "tiles": v["tiles_used"], "seq_tiles": s["tiles_used"],
            "energy_nj": round(v["energy_j"] * 1e9, 3), "area_mm2": round(v["area_mm2"], 4),
            "solver_sources": ";".join(f"{r.decision}:{r.solution_source}" for r in ctx.records),
            "seconds": round(time.perf_counter() - start, 1),
        }
        row["word_reduction"] = round(row["seq_live_words"] / max(1, row["opt_words"]), 2)
        row["seed_word_reduction"] = round(w_seq / w_opt, 2)
        rows.append(row)
        print({k: row[k] for k in ("app", "seq_cycles", "opt_cycles", "seed_opt_cycles", "seq_live_words", "opt_words",
                                   "opt_check", "seq_check", "seconds")}, flush=True)
    return rows


def sweep(apps: list[str], backend: str) -> list[dict]:
    rows = []
    for app in apps:
        defaults = dict(info(app, "pushmem").params)
        for size in SIZES[app]:
            params = {**defaults, "size": size}
            start = time.perf_counter()
            ctx, v = optimised(app, params, backend)
            rows.append({
                "app": app, "size": size, "default": size == defaults["size"], "pixels": size * size,
                "opt_cycles": v["simulated_cycles"], "opt_scheduled": v["predicted_cycles"], "stall_cycles": v["stall_cycles"],
                "seq_cycles_schedule": v["sequential_cycles"], "opt_words": v["sram_words"], "check": _check(v),
                "seed_opt_cycles": SEED[app][1], "seconds": round(time.perf_counter() - start, 1),
            })
            print({k: rows[-1][k] for k in ("app", "size", "opt_cycles", "seq_cycles_schedule", "check", "seconds")}, flush=True)
    return rows


def bandwidth(backend: str) -> list[dict]:
    """resnet at its default size, one mapping simulated at falling DRAM → global-buffer bandwidths: below the
    rate the coarse pipeline consumes input tiles, the whole array stalls at each late tile (001:L301)."""
    app = "resnet"
    params = dict(info(app, "pushmem").params)
    ctx, v = optimised(app, params, backend)
    mapping = mapping_of(ctx)
    inputs = random_inputs(mapping.program, ctx.seed)
    program = mapping.program
    tile_words = int(np.prod(program.tensor("input").shape[1:]))
    rows = []
    for rate in DRAM_RATES:
        spec = mapping.spec.model_copy(update={"dram_words_per_cycle": rate})
        sim = simulate(configure(dataclasses.replace(mapping, spec=spec)), inputs)
        rows.append({"app": app, "params": json.dumps(params, sort_keys=True), "dram_words_per_cycle": rate,
                     "tile_words": tile_words, "ii": mapping.schedule.ii, "scheduled_cycles": mapping.schedule.completion,
                     "simulated_cycles": sim.cycles, "stall_cycles": sim.stall_cycles,
                     "check": "ok" if sim.bit_exact and not any(sim.hazards.values()) else "hazards"})
        print(rows[-1], flush=True)
    return rows


def slopes(rows: list[dict]) -> dict[str, dict]:
    """Least-squares cycles = a·pixels + b per app, and the image edge at which it meets the seed's cycles."""
    out = {}
    for app in dict.fromkeys(r["app"] for r in rows):
        sub = [r for r in rows if r["app"] == app]
        x = np.array([r["pixels"] for r in sub], float)
        y = np.array([r["opt_cycles"] for r in sub], float)
        a, b = np.polyfit(x, y, 1)
        seed_pixels = (SEED[app][1] - b) / a
        out[app] = {"cycles_per_pixel": round(float(a), 4), "intercept": round(float(b), 1),
                    "seed_opt_cycles_at_edge": round(float(np.sqrt(seed_pixels)), 1) if seed_pixels > 0 else None,
                    "max_rel_residual": round(float(np.max(np.abs(a * x + b - y) / y)), 4)}
    return out


def machine() -> dict:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu_model": model, "cpu_flags": " ".join(sorted(cpu_flags())), "cpus": os.cpu_count(),
            "load_average": list(os.getloadavg()), **environment()}


def _write_csv(rows: list[dict], path: Path) -> None:
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def markdown(rows: list[dict]) -> str:
    lines = ["| app | size | seq cycles (ours / seed) | opt cycles (ours / seed) | opt ÷ seed | seq live words (ours / seed) "
             "| opt words (ours / seed) |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        size = json.loads(r["params"])
        lines.append(f"| {r['app']} | {', '.join(f'{k}={v}' for k, v in size.items())} | {r['seq_cycles']} / {r['seed_seq_cycles']} "
                     f"| {r['opt_cycles']} / {r['seed_opt_cycles']} | {r['opt_vs_seed']:.2f} "
                     f"| {r['seq_live_words']} / {r['seed_seq_words']} | {r['opt_words']} / {r['seed_opt_words']} |")
    return "\n".join(lines) + "\n"


def plot_tables(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    apps = [r["app"] for r in rows]
    x = np.arange(len(apps))
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    for ax, (ours_s, ours_o, seed_s, seed_o, title) in zip(axes, [
        ("seq_cycles", "opt_cycles", "seed_seq_cycles", "seed_opt_cycles", "simulated cycles (Table VI)"),
        ("seq_live_words", "opt_words", "seed_seq_words", "seed_opt_words", "SRAM words (Table VII)")]):
        w = 0.2
        ax.bar(x - 1.5 * w, [r[ours_s] for r in rows], w, label="ours sequential")
        ax.bar(x - 0.5 * w, [r[seed_s] for r in rows], w, label="seed sequential")
        ax.bar(x + 0.5 * w, [r[ours_o] for r in rows], w, label="ours optimised")
        ax.bar(x + 1.5 * w, [r[seed_o] for r in rows], w, label="seed optimised")
        ax.set_yscale("log")
        ax.set_xticks(x, apps, rotation=30)
        ax.set_title(title)
    axes[0].legend(fontsize=8)
    fig.suptitle("documented sizes: stencils 64x64, resnet 32x32x16→16, mobilenet 64x64x8→16", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def plot_sweep(rows: list[dict], brows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(13, 5), gridspec_kw={"width_ratios": [3, 2]})
    for i, app in enumerate(dict.fromkeys(r["app"] for r in rows)):
        sub = [r for r in rows if r["app"] == app]
        color = f"C{i}"
        ax.plot([r["pixels"] for r in sub], [r["opt_cycles"] for r in sub], "o-", color=color, label=app)
        ax.axhline(SEED[app][1], color=color, ls=":", lw=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("image pixels (H×W of the input map)")
    ax.set_ylabel("simulated cycles, optimised schedule")
    ax.set_title("cycles against image size (dotted: the seed's Table VI optimised cycles, size not stated)", fontsize=9)
    ax.legend(fontsize=8)
    if brows:
        rates = [r["dram_words_per_cycle"] for r in brows]
        bx.plot(rates, [r["simulated_cycles"] for r in brows], "o-", label="simulated")
        bx.plot(rates, [r["scheduled_cycles"] for r in brows], "k--", label="schedule's completion")
        bx.set_xscale("log")
        bx.set_yscale("log")
        bx.set_xlabel("DRAM → global buffer words per cycle")
        bx.set_ylabel("cycles")
        bx.set_title(f"resnet {json.loads(brows[0]['params'])}: stalls on late tiles", fontsize=9)
        bx.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--apps", nargs="*", default=list(SEED))
    parser.add_argument("--backend", default="highs")
    parser.add_argument("--no-sweep", action="store_true")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    summary = {"command": "nice .venv/bin/python studies/pushmem/run.py", "backend": args.backend, "target": TARGET,
               "machine": machine()}
    start = time.perf_counter()
    rows = tables(args.apps, args.backend)
    _write_csv(rows, OUT / "tables.csv")
    (OUT / "tables.md").write_text(markdown(rows))
    plot_tables(rows, OUT / "tables.png")
    summary["tables"] = {r["app"]: {k: r[k] for k in ("params", "seq_cycles", "opt_cycles", "seed_seq_cycles", "seed_opt_cycles",
                                                       "opt_vs_seed", "seq_vs_seed", "speedup", "seed_speedup", "seq_live_words",
                                                       "seq_words", "opt_words", "seed_seq_words", "seed_opt_words",
                                                       "stall_cycles", "opt_check", "seq_check")} for r in rows}
    if not args.no_sweep:
        srows = sweep(args.apps, args.backend)
        brows = bandwidth(args.backend) if "resnet" in args.apps else []
        _write_csv(srows, OUT / "sweep.csv")
        if brows:
            _write_csv(brows, OUT / "bandwidth.csv")
        plot_sweep(srows, brows, OUT / "sweep.png")
        summary["sweep"] = slopes(srows)
        summary["sweep_checks"] = sorted({r["check"] for r in srows})
        summary["bandwidth"] = [{k: r[k] for k in ("dram_words_per_cycle", "scheduled_cycles", "simulated_cycles",
                                                   "stall_cycles", "check")} for r in brows]
    summary["seconds"] = round(time.perf_counter() - start, 1)
    summary["load_average_end"] = list(os.getloadavg())
    (OUT / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(f"wrote {OUT}/tables.csv, tables.md, tables.png, sweep.csv, sweep.png, summary.json")


if __name__ == "__main__":
    main()
