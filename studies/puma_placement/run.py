"""PUMA placement study: solver vs the public PUMA compiler's baselines, and a replication sweep.

For every workload (mlp_l4, mlp_l5, lstm_lm, lenet, vgg on the ``puma`` preset, no layer replication):
the four baselines (row-major, col-major, random, KaHIP min-cut; identity placement) and the solver
(:mod:`solvermap.mappers.puma.hierarchical_placement`: layer-order portfolio, exact tile grouping and
positions on small instances, the row-band start on large ones (``band_start``, ``band_heights``; the
LNS's start ``lns_start``), multi-start LNS over the shared placement model, core stage, stage D's
selection by simulation among placements with no more bytes; CP-SAT, warm-started from the best
baseline) are scored on hop-weighted bytes (partial sums along the public
compiler's reduction chains, one send per destination tile), bytes per level (store / load / send),
max link load, and simulated latency, throughput and energy. Every decision passes its checker. The
solver's bound is certified for every placement on at most the compiler's number of tiles: the exact
stage-A bound on small instances, else the message + router-crossing relaxations of
:mod:`solvermap.mappers.puma.placement_bounds` (its parts are in the CSV). The replication sweep
solves the replication MILP for growing MVMU budgets (lenet, vgg) and simulates the row-major placement
of each result (throughput vs crossbars used).

    .venv/bin/python -m solvermap.studies.puma_placement.run [--time-limit 60] [--large-time-limit 600] [--out DIR]

(The committed results: ``--time-limit 240 --large-time-limit 300``. Functional simulation and the digits
accuracy are in :mod:`.functional`.)

``--large-time-limit`` applies to instances with more blocks than the exact stages take (mlp_l5,
lstm_lm). Writes placement.csv (every method), placement_summary.csv (one row per workload: solver ÷
best baseline and ÷ each baseline, status, gap, certified bound, latency/throughput/energy change, and
simulated latency and throughput ÷ each baseline − 1; the model-vs-simulator errors: hop-weighted bytes
predicted vs simulated, and the load model's interval — the busiest resource's busy time per inference,
what a max-link-load or core-balance term models — vs the simulated interval; stage D's throughput and
latency change over the search's own placement),
replication.csv, placement_ratios.png and replication.png. The time limits are deterministic work
budgets (CP-SAT deterministic seconds, split between stages by work spent; the certified bound's column
generation spends work too: HiGHS nodes and simplex iterations, CP-SAT deterministic time), so placements,
bounds and statuses repeat exactly; the ``seconds`` columns are wall-clock on a shared 2-core machine and
noisy.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd

from solvermap.formulations import replication
from solvermap.formulations.problems.replication import crossbars_used, interval
from solvermap.formulations.solver import SolverConfig
from solvermap.hardware.targets import load_target
from solvermap.ir.workloads import build
from solvermap.mappers.puma import placement_metrics, replication_problem
from solvermap.mappers.puma import application_optimizer as ao
from solvermap.mappers.puma import hierarchical_placement
from solvermap.mappers.puma.baselines import BASELINES
from solvermap.mappers.puma.crossbar_partition import partition
from solvermap.mappers.puma.frontend import lower
from solvermap.hardware.checks.puma_placement import check
from solvermap.hardware.puma.placement_problem import make_problem, objective

WORKLOADS = ["mlp_l4", "mlp_l5", "lstm_lm", "lenet", "vgg"]
HERE = Path(__file__).parent


def prepare(name: str, spec, seed: int = 0):
    net = ao.fold_bias(ao.set_unroll(ao.fold_batchnorm(lower(build(name, "puma").ir)), "per_position"), spec.crossbar.rows)
    rng = np.random.default_rng(seed)
    return ao.quantize(net, 2.0 ** (spec.data.int_bits - 1), rng.random((4,) + tuple(net.input_shape)))


def placement_rows(name: str, spec, time_limit: float, variant: str) -> tuple[list[dict], dict]:
    net = prepare(name, spec)
    part = partition(net, spec.crossbar.rows, spec.crossbar.cols, spec.data.bits / 8)
    problem = make_problem(part, spec, variant=variant)
    rows, decisions = [], {}
    for label, fn in BASELINES.items():
        start = time.perf_counter()
        decisions[label] = fn(problem)
        rows.append({"workload": name, "method": label, "seconds": time.perf_counter() - start})
        assert check(problem, decisions[label]).ok, label
    best = min(BASELINES, key=lambda k: objective(problem, decisions[k]))
    start = time.perf_counter()
    solved = hierarchical_placement.solve(problem, SolverConfig(backend="cpsat", time_limit_s=time_limit), decisions[best])
    report = check(problem, solved.decision)
    assert report.ok, report.violations
    decisions["solver"] = solved.decision
    certified = solved.details.get("certified_bound") or {}
    lns = solved.details.get("lns") or {}
    selection = solved.details.get("simulated_selection") or {}
    rows.append({"workload": name, "method": "solver", "seconds": time.perf_counter() - start, "bound": solved.result.bound,
                 "gap": solved.result.gap, "status": str(solved.result.status), "warm_start": best, "check_ok": report.ok,
                 "bound_messages": certified.get("messages"), "bound_crossings": certified.get("crossings"),
                 "bound_stage_a": solved.details.get("stage_a_bound"),
                 "portfolio_start": (solved.details.get("portfolio") or {}).get("hop_bytes", [None])[0],
                 "band_start": (solved.details.get("band_start") or {}).get("hop_bytes"),
                 "band_heights": "/".join(map(str, (solved.details.get("band_start") or {}).get("heights", []))) or None,
                 "lns_start": lns.get("start_hop_bytes"),
                 "lns_rounds": lns.get("rounds"), "lns_improvements": lns.get("improvements"),
                 "search_interval_s": selection.get("given_interval_s"), "search_latency_s": selection.get("given_latency_s"),
                 "selection_start": selection.get("start"), "selection_simulations": selection.get("simulations"),
                 "selection_moves": selection.get("moves")})
    best_value = objective(problem, decisions[best])
    for row in rows:
        decision = decisions[row["method"]]
        metrics = placement_metrics(problem, decision)
        row.update({"blocks": len(part.blocks), "hop_weighted_bytes": objective(problem, decision),
                    "ratio_to_best_baseline": objective(problem, decision) / best_value})
        row.update({k: v for k, v in metrics.items() if not isinstance(v, dict)})
    base = next(r for r in rows if r["method"] == best)
    ours = rows[-1]
    summary = {"workload": name, "blocks": len(part.blocks), "tiles": problem.min_tiles(), "best_baseline": best,
               "best_baseline_bytes": best_value, "solver_bytes": ours["hop_weighted_bytes"],
               "ratio": ours["ratio_to_best_baseline"], "status": ours["status"], "gap": ours["gap"], "bound": ours["bound"],
               "bound_messages": ours["bound_messages"], "bound_crossings": ours["bound_crossings"],
               "bound_over_best_baseline": ours["bound"] / best_value,
               "latency_change": ours["latency_s"] / base["latency_s"] - 1,
               "throughput_change": ours["throughput"] / base["throughput"] - 1,
               "energy_change": ours["energy_j"] / base["energy_j"] - 1,
               "send_bytes_change": ours["send_bytes"] / base["send_bytes"] - 1,
               "solver_seconds": ours["seconds"], "time_limit": time_limit}
    for label in BASELINES:  # solver ÷ each baseline (< 1: the solver moves fewer hop-weighted bytes)
        summary[f"ratio_vs_{label}"] = ours["hop_weighted_bytes"] / objective(problem, decisions[label])
    for label in BASELINES:  # simulated: < 0 latency and > 0 throughput are the solver's gains over that baseline
        other = next(r for r in rows if r["method"] == label)
        summary[f"latency_vs_{label}"] = ours["latency_s"] / other["latency_s"] - 1
        summary[f"throughput_vs_{label}"] = ours["throughput"] / other["throughput"] - 1
    selected = ours["search_interval_s"] is not None  # stage D ran: its gain over the search's own placement
    summary.update({"hop_bytes_model_error": ours["hop_weighted_bytes_rel_diff"],
                    "interval_load_model_error": ours["load_model_rel_error"], "busiest_resource": ours["busiest_resource"],
                    "selection_throughput_change": ours["search_interval_s"] / ours["interval_s"] - 1 if selected else None,
                    "selection_latency_change": ours["latency_s"] / ours["search_latency_s"] - 1 if selected else None})
    return rows, summary


def replication_rows(name: str, spec, time_limit: float) -> list[dict]:
    net = prepare(name, spec)
    base = replication_problem(net, spec, spare=0.0)
    out = []
    for factor in (1.0, 1.5, 2.0, 3.0, 4.0, 6.0):
        problem = replication_problem(net, spec, budget=int(math.floor(base.budget * factor)))
        solved = replication.solve(problem, SolverConfig(backend="highs", time_limit_s=time_limit))
        for layer in net.mvm_layers():
            layer.attrs["replicas"] = solved.decision.degrees[layer.name]
        part = partition(net, spec.crossbar.rows, spec.crossbar.cols, spec.data.bits / 8)
        placement_problem = make_problem(part, spec)
        decision = BASELINES["row_major"](placement_problem)
        if decision is None:
            continue
        metrics = placement_metrics(placement_problem, decision)
        out.append({"workload": name, "budget_factor": factor, "budget_mvmus": problem.budget,
                    "mvmus_used": crossbars_used(problem, solved.decision), "interval_mvm_steps": interval(problem, solved.decision),
                    "degrees": " ".join(f"{k}={v}" for k, v in solved.decision.degrees.items()),
                    "throughput": metrics["throughput"], "latency_s": metrics["latency_s"], "energy_j": metrics["energy_j"],
                    "tiles_used": metrics["tiles_used"]})
    for layer in net.mvm_layers():
        layer.attrs["replicas"] = 1
    return out


def plot(placement: pd.DataFrame, repl: pd.DataFrame, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    methods = ["row_major", "col_major", "random", "min_cut", "solver"]
    width = 0.16
    workloads = list(dict.fromkeys(placement["workload"]))
    for k, method in enumerate(methods):
        values = [placement[(placement.workload == w) & (placement.method == method)]["ratio_to_best_baseline"].iloc[0] for w in workloads]
        ax.bar(np.arange(len(workloads)) + (k - 2) * width, values, width, label=method)
    solver = placement[placement.method == "solver"].set_index("workload")
    bounds = [solver.loc[w, "bound"] / (solver.loc[w, "hop_weighted_bytes"] / solver.loc[w, "ratio_to_best_baseline"]) for w in workloads]
    ax.scatter(np.arange(len(workloads)) + 2 * width, bounds, marker="_", s=300, color="k", zorder=3,
               label="certified lower bound")
    ax.set_xticks(np.arange(len(workloads)), workloads)
    ax.set_ylabel("hop-weighted bytes / best baseline")
    ax.set_yscale("log")
    ax.axhline(1.0, color="k", lw=0.5)
    ax.legend(fontsize=8)
    ax.set_title("PUMA tile placement: solver vs PUMA compiler baselines")
    fig.tight_layout()
    fig.savefig(out / "placement_ratios.png", dpi=120)
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, group in repl.groupby("workload"):
        ax.plot(group["mvmus_used"], group["throughput"], marker="o", label=name)
    ax.set_xlabel("MVMUs used (replicated layers)")
    ax.set_ylabel("simulated throughput (inferences/s)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.legend()
    ax.set_title("Replication sweep (replication MILP, row-major placement)")
    fig.tight_layout()
    fig.savefig(out / "replication.png", dpi=120)


def _write_merged(new: pd.DataFrame, path: Path) -> None:
    """Write ``new`` to ``path``, keeping the rows of workloads not re-run (a ``--workloads`` subset), in
    :data:`WORKLOADS` order."""
    if path.exists():
        old = pd.read_csv(path)
        new = pd.concat([old[~old.workload.isin(set(new.workload))], new], ignore_index=True)
    rank = {name: i for i, name in enumerate(WORKLOADS)}
    new = new.sort_values("workload", key=lambda col: col.map(lambda w: rank.get(w, len(rank))), kind="stable")
    new.to_csv(path, index=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--large-time-limit", type=float, default=600.0)
    parser.add_argument("--variant", default="hierarchical")
    parser.add_argument("--workloads", nargs="*", default=WORKLOADS)
    parser.add_argument("--skip-replication", action="store_true")
    parser.add_argument("--out", default=str(HERE / "results"))
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    spec = load_target("puma")
    rows, summaries = [], []
    for name in args.workloads:
        blocks = len(partition(prepare(name, spec), spec.crossbar.rows, spec.crossbar.cols, spec.data.bits / 8).blocks)
        limit = args.large_time_limit if blocks > hierarchical_placement.EXACT_STAGES_MAX_BLOCKS else args.time_limit
        new_rows, summary = placement_rows(name, spec, limit, args.variant)
        rows += new_rows
        summaries.append(summary)
        _write_merged(pd.DataFrame(rows), out / "placement.csv")
        _write_merged(pd.DataFrame(summaries), out / "placement_summary.csv")
        print(f"{name}: done", flush=True)
    placement = pd.read_csv(out / "placement.csv")
    if args.skip_replication and (out / "replication.csv").exists():
        replication_df = pd.read_csv(out / "replication.csv")
    else:
        repl = []
        for name in ("lenet", "vgg"):
            repl += replication_rows(name, spec, 30.0)
        replication_df = pd.DataFrame(repl)
        replication_df.to_csv(out / "replication.csv", index=False)
    plot(placement, replication_df, out)
    print(pd.DataFrame(summaries).to_string(index=False))
    print(replication_df.to_string(index=False))


if __name__ == "__main__":
    main()
