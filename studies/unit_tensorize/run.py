"""UNIT tensorize study (seed 002, Table I ablation + ResNet-18 conv layers), on this machine.

For every layer (full size), on the x86 target this CPU's flags pick (``--target``; ``solvermap
targets``): the feasible loop mappings (CP-SAT enumeration), the solver's mapping and UNIT's greedy
innermost mapping with their objectives, the padding overhead (extra MACs), the tuned schedule
against UNIT's default pair (3000, 8), and the measured latency of the compiled kernel against the
same nest untensorized (tuned for itself), the naive nest, NumPy (im2col + float64 BLAS GEMM, exact)
and onnxruntime's ConvInteger / QLinearConv. Every compiled kernel's output is compared bit-exactly
with the NumPy reference; the CPU model is recorded. The peers benchmark with every target, TVM and
the GMAC/s table of the README is ``bench/tensorize_peers.py``.
Tuning profiles every pair of UNIT's enumeration (so the pair that first reaches the best is known:
the seed reports > 50 % of kernels optimal at the first pair and > 95 % within 8, 002:L310) plus
Optuna samples pre-filtered by the latency model.

Timing: one thread per kernel, medians over ``--rounds`` interleaved rounds of per-round medians; the
load average is recorded before and after each layer (the machine is shared). Where the solver and the
greedy mapping differ, the greedy mapping is also tuned and timed.

    .venv/bin/python -m studies.unit_tensorize.run                 # all 27 layers (≈ 15-25 min)
    .venv/bin/python -m studies.unit_tensorize.run --layers conv_table1_3 resnet18_conv1 --rounds 3

Writes ``results/layers.csv``, ``results/tuning_trials.csv``, ``results/summary.json`` and
``results/speedups.png``, ``results/tuning.png``, ``results/latency_model.png``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import pandas as pd

from solvermap.formulations import tensorize as model
from solvermap.formulations.problems.tensorize import objective
from solvermap.formulations.solver import SolverConfig
from solvermap.hardware.cpu import best_x86_target, toolchain
from solvermap.hardware.cpu.instructions import descriptor
from solvermap.hardware.targets import load_target
from solvermap.ir.workloads import build
from solvermap.ir.workloads.cpu_conv import RESNET18, TABLE_I
from solvermap.mappers import pipeline_for
from solvermap.mappers.cpu.execution import ValidationOptions, validate
from solvermap.mappers.pipeline import Context

RESULTS = Path(__file__).parent / "results"
LAYERS = [f"conv_table1_{i}" for i in range(1, len(TABLE_I) + 1)] + [f"resnet18_conv{i}" for i in range(1, len(RESNET18) + 1)]


def run_layer(name: str, args) -> tuple[dict, list[dict]]:
    target = load_target(args.target)
    options = {"tuner": "optuna", "trials": args.trials, "unit_pairs": args.pairs, "rounds": args.rounds,
               "min_seconds": args.min_seconds, "emulate_max_calls": args.emulate_max_calls}
    workload = build(name, "cpu")
    ctx = Context(workload=workload, target=target, solver=SolverConfig(time_limit_s=30, seed=args.seed),
                  options={"tensorize": options}, seed=args.seed)
    start = time.perf_counter()
    result = pipeline_for("cpu").run(ctx, upto="tensorize")
    record = result.records[-1]
    v = record.validation
    problem = ctx.state["tensorize.problem"]
    greedy = record.baseline.decision if record.baseline else None
    solver_map = record.solution["loop_map"]
    conv = workload.ir.attrs["conv2d"]
    row = {
        "layer": name, **{k: conv[k] for k in ("C", "K", "IHW", "R", "stride", "OHW")},
        "useful_macs": v["useful_macs"], "feasible_mappings": record.details["feasible_mappings"],
        "solver_mapping": " ".join(f"{b}<-{a}" for b, a in solver_map.items()),
        "solver_objective": record.solver.objective, "solver_status": str(record.solver.status),
        "greedy_mapping": " ".join(f"{b}<-{a}" for b, a in greedy.loop_map) if greedy else None,
        "greedy_objective": record.baseline.objective if record.baseline else None,
        "solution_source": record.solution_source,
        "padded_macs": v["padded_macs"], "extra_macs": v["extra_macs"], "padding_overhead": v["padding_overhead"],
        "operand_actions": " ".join(f"{k}:{o['action']}" for k, o in sorted(v["operand_preparation"].items())),
        "bit_exact": v["bit_exact"], "bit_exact_checks": " ".join(sorted(k for k, ok in v["bit_exact_checks"].items() if ok)),
        "default_schedule": json.dumps(v["tuning"]["default_schedule"]),
        "tuned_schedule": json.dumps(v["schedule"]),
        "unroll": v["unroll"],
        "tensorized_s": v["latency_s"], "default_s": v["default_latency_s"], "untensorized_s": v["untensorized_latency_s"],
        "naive_s": v["naive_latency_s"], "numpy_s": v["numpy_latency_s"],
        "speedup_vs_untensorized": v["speedup_vs_untensorized"], "speedup_vs_numpy": v["speedup_vs_numpy"],
        "speedup_vs_naive": v["speedup_vs_naive"], "tuned_vs_default": v["tuned_vs_default"],
        "predicted_s": v["predicted_latency_s"], "latency_rel_diff": v["latency_rel_diff"],
        "predicted_bound": v["predicted_bound"],
        "unit_pair_reaching_best": v["tuning"]["unit_pair_reaching_best"],
        "schedules_measured": v["tuning"]["schedules_measured"], "optuna_pruned": v["tuning"]["pruned"],
        "untensorized_uses_instruction": v["untensorized_uses_instruction"],
        "gmacs": v["gmacs"], "full_range_exact": v["full_range"]["exact"],
        "speedup_vs_onnxruntime": v["speedup_vs_onnxruntime"],
        "speedup_vs_onnxruntime_qlinearconv": v["speedup_vs_onnxruntime_qlinearconv"],
        "target": args.target, "cpu_model": toolchain.cpu_model(),
        "load_before": v["timing"]["load_average_before"][0], "load_after": v["timing"]["load_average_after"][0],
    }
    if greedy is not None and greedy.loop_map != tuple(solver_map.items()):
        gv = validate(problem, greedy, descriptor(target.instruction), target,
                      ValidationOptions(tuner="optuna", trials=args.trials, unit_pairs=args.pairs, rounds=args.rounds,
                                        min_seconds=args.min_seconds, emulate_max_calls=0, seed=args.seed))
        row.update({"greedy_s": gv["latency_s"], "greedy_bit_exact": gv["bit_exact"],
                    "solver_vs_greedy": gv["latency_s"] / v["latency_s"]})
    row["seconds"] = time.perf_counter() - start
    trials = [{"layer": name, **{k: (json.dumps(t[k]) if isinstance(t[k], (dict, list)) else t[k])
                                 for k in ("index", "source", "params", "schedule", "predicted_s", "measured_s")}}
              for t in v["tuning_trials"]]
    return row, trials


SWEEP_LAYERS = ["conv_table1_1", "conv_table1_3", "conv_table1_5", "resnet18_conv1"]


def mapping_sweep(name: str, args) -> list[dict]:
    """Every feasible mapping of one layer, tuned by UNIT's default pair and timed: does the model's
    objective rank mappings as the machine does?"""
    target = load_target(args.target)
    workload = build(name, "cpu")
    from solvermap.mappers.cpu.inspector import inspect

    problem = inspect(workload.ir, descriptor(target.instruction), workload=name).problem
    rows = []
    for rank, mapping in enumerate(model.enumerate_mappings(problem), start=1):
        v = validate(problem, mapping, descriptor(target.instruction), target,
                     ValidationOptions(tuner="unit-default", rounds=3, min_seconds=args.min_seconds, compare=False,
                                       emulate_max_calls=0, evaluate_max_points=0, seed=args.seed))
        rows.append({"layer": name, "model_rank": rank, "objective": objective(problem, mapping),
                     "mapping": " ".join(f"{b}<-{a}" for b, a in mapping.loop_map),
                     "padding_overhead": v["padding_overhead"],
                     "operand_actions": " ".join(f"{k}:{o['action']}" for k, o in sorted(v["operand_preparation"].items())),
                     "measured_s": v["latency_s"], "predicted_s": v["predicted_latency_s"], "bit_exact": v["bit_exact"]})
        print(f"  {name} mapping {rank}: {rows[-1]['mapping']} objective {rows[-1]['objective']:.0f} "
              f"measured {v['latency_s'] * 1e3:.3f} ms bit_exact={v['bit_exact']}", flush=True)
    return rows


def plots(df: pd.DataFrame, trials: pd.DataFrame, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(13, 4.5))
    x = np.arange(len(df))
    for k, (col, label) in enumerate((("speedup_vs_untensorized", "vs same nest untensorized"),
                                      ("speedup_vs_numpy", "vs NumPy (im2col + BLAS)"),
                                      ("speedup_vs_naive", "vs naive nest"))):
        ax.bar(x + (k - 1) * 0.27, df[col], width=0.27, label=label)
    ax.set_yscale("log")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(x, [n.replace("conv_table1_", "T").replace("resnet18_conv", "R") for n in df["layer"]], rotation=0)
    ax.set_ylabel(f"speedup of the {df['target'].iloc[0]} kernel (log)")
    ax.set_title("UNIT tensorization on this CPU (1 thread, median of interleaved rounds; T = Table I, R = ResNet-18)")
    ax.legend(loc="lower center", ncol=3, framealpha=0.9)
    fig.tight_layout()
    fig.savefig(out / "speedups.png", dpi=120)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 4))
    ranks = df["unit_pair_reaching_best"].dropna().astype(int)
    if len(ranks):
        xs = sorted(set(ranks) | {1, 8})
        ax.step(xs, [float((ranks <= r).mean()) for r in xs], where="post", label="this machine")
    ax.axhline(0.5, color="grey", linestyle=":", label="seed: >50% at pair 1")
    ax.axhline(0.95, color="grey", linestyle="--", label="seed: >95% within 8 pairs")
    ax.set_xlabel("UNIT tuning pairs profiled")
    ax.set_ylabel("fraction of layers at their best pair")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "tuning.png", dpi=120)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(5, 5))
    measured = trials.dropna(subset=["measured_s"])
    ax.loglog(measured["predicted_s"], measured["measured_s"], ".", alpha=0.5)
    lo = min(measured["predicted_s"].min(), measured["measured_s"].min())
    hi = max(measured["predicted_s"].max(), measured["measured_s"].max())
    ax.plot([lo, hi], [lo, hi], "k-", linewidth=0.8)
    ax.set_xlabel("latency model (s)")
    ax.set_ylabel("measured (s)")
    ax.set_title("latency model vs measurement, all tuning trials")
    fig.tight_layout()
    fig.savefig(out / "latency_model.png", dpi=120)
    plt.close(fig)


def summarise(df: pd.DataFrame) -> dict:
    table = df[df["layer"].str.startswith("conv_table1_")]
    ranks = df["unit_pair_reaching_best"].dropna()
    return {
        "layers": len(df), "all_bit_exact": bool(df["bit_exact"].all()),
        "table1_min_speedup_vs_untensorized": float(table["speedup_vs_untensorized"].min()),
        "table1_median_speedup_vs_untensorized": float(table["speedup_vs_untensorized"].median()),
        "table1_all_faster_than_untensorized": bool((table["speedup_vs_untensorized"] > 1).all()),
        "median_speedup_vs_numpy": float(df["speedup_vs_numpy"].median()),
        "median_tuned_vs_default": float(df["tuned_vs_default"].median()),
        "fraction_best_at_first_unit_pair": float((ranks <= 1).mean()) if len(ranks) else None,
        "fraction_best_within_8_unit_pairs": float((ranks <= 8).mean()) if len(ranks) else None,
        "median_latency_model_rel_diff": float(df["latency_rel_diff"].median()),
        "layers_where_solver_mapping_differs_from_greedy": df.loc[df["solution_source"].notna() & (
            df["solver_mapping"] != df["greedy_mapping"].fillna("")), "layer"].tolist(),
        "load_average_range": [float(df[["load_before", "load_after"]].min().min()),
                               float(df[["load_before", "load_after"]].max().max())],
        "threads": 1,
        "target": str(df["target"].iloc[0]), "cpu_model": toolchain.cpu_model(),
        "cpu_isa": sorted(f for f in toolchain.cpu_flags() if f.startswith(("avx", "fma", "amx"))),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", nargs="*", default=LAYERS)
    parser.add_argument("--target", default=best_x86_target() or "x86-avx2",
                        help="default: the fastest x86 target this CPU runs")
    parser.add_argument("--trials", type=int, default=16)
    parser.add_argument("--pairs", type=int, default=36, help="UNIT pairs profiled (36 = the whole 6 x 6 grid)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--min-seconds", type=float, default=0.05)
    parser.add_argument("--emulate-max-calls", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sweep", nargs="*", default=SWEEP_LAYERS, help="layers whose every mapping is timed")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows, trial_rows = [], []
    for name in args.layers:
        row, trials = run_layer(name, args)
        rows.append(row)
        trial_rows += trials
        print(f"{name}: x{row['speedup_vs_untensorized']:.1f} vs untensorized, x{row['speedup_vs_numpy']:.1f} vs NumPy, "
              f"bit_exact={row['bit_exact']}, pair={row['unit_pair_reaching_best']}, load {row['load_before']:.1f}"
              f"-{row['load_after']:.1f}, {row['seconds']:.0f}s", flush=True)
    sweep = [r for name in args.sweep for r in mapping_sweep(name, args)]
    df, trials = pd.DataFrame(rows), pd.DataFrame(trial_rows)
    df.to_csv(out / "layers.csv", index=False)
    trials.to_csv(out / "tuning_trials.csv", index=False)
    summary = summarise(df)
    if sweep:
        sw = pd.DataFrame(sweep)
        sw.to_csv(out / "mappings.csv", index=False)
        summary["mapping_sweep"] = {
            layer: {"mappings": int(len(g)), "model_best_is_measured_best": bool(g["measured_s"].idxmin() == g["model_rank"].idxmin()),
                    "spearman_objective_vs_measured": float(g["objective"].rank().corr(g["measured_s"].rank())),
                    "measured_best_mapping": g.loc[g["measured_s"].idxmin(), "mapping"],
                    "all_bit_exact": bool(g["bit_exact"].all())}
            for layer, g in sw.groupby("layer")}
    summary["uptime_load_at_end"] = list(os.getloadavg())
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    plots(df, trials, out)
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
