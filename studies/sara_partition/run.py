"""SARA partitioning study (seed 004 §4.3–4.4): the 13 Table 3.1 apps at three parallelization factors.

For every app and factor the whole Plasticine pipeline runs (decompose → partition → merge → simulate):

* partitioning: PBs and retiming VBs of each traversal heuristic (DFS/BFS × forward/backward, L648), of
  the solver (shared partition model, CP-SAT, 1 thread, warm-started from the best heuristic), the
  certified lower bound, status, gap and solve time;
* merging: PBs after merging (solver and traversal merger), PBs without merging, PCU/PMU/DAG use and
  utilisation;
* simulation: cycles and throughput of the merged mapping, the analytical prediction and their gap.

    .venv/bin/python -m solvermap.studies.sara_partition.run [--time-limit 30] [--apps a,b] [--pars 2,4] [--out DIR]

Writes ``study.csv`` and ``study.png`` (results/ by default). Times are wall-clock on a shared 2-core
machine (several engineers' jobs run at once): they are noisy, the statuses are what the limit allowed.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd

from solvermap.formulations.problems.partition import objective
from solvermap.formulations.solver import SolverConfig
from solvermap.hardware.targets import load_target
from solvermap.ir.workloads import build, info
from solvermap.ir.workloads.plasticine_apps import APPS
from solvermap.mappers.pipeline import Context
from solvermap.errors import InfeasibleError
from solvermap.mappers.plasticine import PIPELINE, merge_step

HERE = Path(__file__).parent
# three parallelization factors per app (the workload's default among them)
FACTORS = {
    "dotproduct": (2, 4, 8), "outerproduct": (2, 4, 8), "blackscholes": (1, 2, 4), "tpchq6": (1, 2, 4),
    "lattice": (1, 2, 3), "gda": (1, 2, 4), "gemm": (2, 4, 8), "kmeans": (1, 2, 4), "logreg": (2, 4, 8),
    "sgd": (1, 2, 4), "lstm": (1, 2, 4), "gru": (1, 2, 4), "lenet": (1, 2, 4),
}


def is_default(app: str, par: int) -> bool:
    return par == info(app, "plasticine").params["par"]


def run_one(app: str, par: int, time_limit: float, target: str = "plasticine") -> dict:
    spec = load_target(target)
    workload = build(app, "plasticine", {"par": par})
    ctx = Context(workload=workload, target=spec, solver=SolverConfig(time_limit_s=time_limit, threads=1))
    start = time.perf_counter()
    part = PIPELINE.run(ctx, upto="partition").records[-1]
    problem = ctx.state["partition.problem"]
    row = {"app": app, "par": par, "default": is_default(app, par), "time_limit": time_limit,
           "items": part.details.get("items"),
           "actors": part.details.get("actors"),
           "memories_rewritten": len(part.details.get("shards", []))}
    for b in part.baselines:
        d = b.decision
        row[f"{b.name}_pbs"] = len(d.bins) if d is not None else None
        row[f"{b.name}_retiming"] = d.retiming_bins if d is not None else None
        row[f"{b.name}_objective"] = b.objective
    row.update({
        "best_heuristic": part.baseline.name if part.baseline else None,
        "best_heuristic_objective": part.baseline.objective if part.baseline else None,
        "solver_status": str(part.solver.status),
        "solver_objective": objective(problem, ctx.state["partition"]),
        "solver_pbs": len(ctx.state["partition"].bins),
        "solver_retiming": ctx.state["partition"].retiming_bins,
        "lower_bound": part.solver.bound,
        "combinatorial_bound": part.details["lower_bound"]["bins"],
        "gap": part.solver.gap,
        "solve_seconds": part.solver.solve_seconds,
        "solution_source": part.solution_source,
        "partition_check_ok": part.check.ok,
        "partition_throughput": part.validation.get("throughput"),
    })
    try:
        merge = merge_step(ctx)
        result_validation = PIPELINE.validate(ctx)
    except InfeasibleError as exc:
        row["merge_error"] = str(exc)
        row["pipeline_seconds"] = time.perf_counter() - start
        return row
    row.update({
        "merge_check_ok": merge.check.ok,
        "merge_status": str(merge.solver.status),
        "merged_pbs": merge.solver.objective if merge.solution_source == "solver" else merge.baseline.objective,
        "merge_bound": merge.solver.bound,
        "merge_seconds": merge.solver.solve_seconds,
    })
    for b in merge.baselines:
        row[f"merge_{b.name}_pbs"] = b.objective
    wall = time.perf_counter() - start
    v = result_validation
    for key in ("pbs_used", "pcus_used", "pmus_used", "dags_used", "pcu_utilization", "pmu_utilization", "area_mm2",
                "cycles", "throughput", "predicted_cycles", "cycles_rel_diff", "deadlock"):
        row[key] = v.get(key)
    row["pipeline_seconds"] = wall
    return row


def figure(df: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    d = df[df["default"]].set_index("app").reindex([a for a in APPS if a in set(df["app"])])
    x = np.arange(len(d))
    fig, axes = plt.subplots(3, 1, figsize=(12, 10), sharex=True)
    w = 0.27
    axes[0].bar(x - w, d["best_heuristic_objective"], w, label="best traversal heuristic")
    axes[0].bar(x, d["solver_objective"], w, label="solver")
    axes[0].bar(x + w, d["lower_bound"], w, label="certified lower bound")
    axes[0].set_ylabel("partitions + retiming VBs")
    axes[0].set_title("PB partitioning at the default factor (objective = PBs + retiming PBs)")
    axes[0].legend()
    colors = ["tab:green" if s == "optimal" else "tab:orange" for s in d["solver_status"]]
    axes[1].bar(x, d["solve_seconds"], color=colors)
    axes[1].set_yscale("log")
    axes[1].set_ylabel("solve seconds (green = proven optimal)")
    axes[2].bar(x - w, d.get("merge_unmerged_pbs", d["pbs_used"]), w, label="no merging")
    axes[2].bar(x, d.get("merge_traversal-bfs_pbs", d["pbs_used"]), w, label="traversal merger")
    axes[2].bar(x + w, d["pbs_used"], w, label="solver merge")
    axes[2].set_ylabel("physical blocks")
    axes[2].legend()
    axes[2].set_xticks(x)
    axes[2].set_xticklabels(d.index, rotation=30)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--time-limit", type=float, default=30.0, help="seconds per solve (partition, merge)")
    parser.add_argument("--apps", default=",".join(APPS))
    parser.add_argument("--default-only", action="store_true", help="only the default factor of each app")
    parser.add_argument("--pars", default=None,
                        help="only these parallelization factors (comma-separated) of each app's three")
    parser.add_argument("--out", default=str(HERE / "results"))
    parser.add_argument("--update", action="store_true",
                        help="replace only these apps' rows in OUT/study.csv (the others are kept) and redraw")
    args = parser.parse_args()
    unknown = [a for a in args.apps.split(",") if a not in APPS]
    if unknown:
        print(f"{Path(__file__).name}: --apps: unknown app(s) {', '.join(unknown)}; choose from {', '.join(APPS)}",
              file=sys.stderr)
        sys.exit(2)
    try:
        pars = None if args.pars is None else {int(p) for p in args.pars.split(",")}
    except ValueError:
        print(f"{Path(__file__).name}: --pars: expected comma-separated integers, got {args.pars!r}", file=sys.stderr)
        sys.exit(2)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    kept = None
    if args.update and (out / "study.csv").exists():
        kept = pd.read_csv(out / "study.csv")
        if "time_limit" not in kept:  # rows written before the column: all run with the 30-unit default
            kept.insert(3, "time_limit", 30.0)
        rerun = kept["app"].isin(args.apps.split(","))
        if pars is not None:
            rerun &= kept["par"].isin(pars)
        kept = kept[~rerun]
    for app in args.apps.split(","):
        factors = [p for p in FACTORS[app] if is_default(app, p)] if args.default_only else FACTORS[app]
        factors = [p for p in factors if pars is None or p in pars]
        for par in factors:
            try:
                row = run_one(app, par, args.time_limit)
            except Exception as exc:  # noqa: BLE001 - a failing configuration is a study result
                row = {"app": app, "par": par, "default": is_default(app, par), "error": f"{type(exc).__name__}: {exc}"}
            rows.append(row)
            print({k: row.get(k) for k in ("app", "par", "best_heuristic_objective", "solver_objective", "lower_bound",
                                            "solver_status", "solve_seconds", "pbs_used", "cycles", "error")}, flush=True)
            if kept is None:
                pd.DataFrame(rows).to_csv(out / "study.csv", index=False)
    df = pd.DataFrame(rows)
    if kept is not None:  # the study's app order
        df = pd.concat([kept, df], ignore_index=True)
        df = df.iloc[sorted(range(len(df)), key=lambda k: (APPS.index(df["app"].iloc[k]), df["par"].iloc[k]))]
    df.to_csv(out / "study.csv", index=False)
    if "solver_objective" in df:
        figure(df.dropna(subset=["solver_objective"]), out / "study.png")


if __name__ == "__main__":
    main()
