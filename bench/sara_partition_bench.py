"""Benchmark of the PB-partitioning model (seed 004 Table 4.2): our formulation vs the literal one.

1. ``optimum``: for each of the 13 apps at its default factor, time to a proven optimum of our
   formulation and of the literal Table 4.2 variant — same problem, same backend (CP-SAT), one thread,
   the same warm start (the best traversal heuristic), the same per-VB decomposition.
2. ``scaling``: our formulation on graphs of 50 to 5,000 operations in one VB — generated layered
   random DAGs and app-derived graphs (copies of the Black-Scholes body in one actor) — solve time, gap
   to the certified lower bound, heuristic vs solver objective.
3. ``backends`` (not in ``all``): phase B of the retiming problems on every backend with both retiming
   searches (the capped slot models, or the delay relaxation with the layered column model and the
   neighbourhood search), one thread, the default wall-clock backstop — for the apps given by ``--apps``
   (default blackscholes: at the default factor the only app whose SCIP solve reaches phase B).
4. ``agreement`` (not in ``all``): CP-SAT and SCIP on the apps whose proofs take too long for the test
   suite (default blackscholes, kmeans and lattice; the apps that solve in seconds are checked in
   ``tests/plasticine/test_app_backends.py``): both from the best heuristic's warm start, the default partition strategy,
   one thread, the deterministic budget ``--time-limit`` (30 by default); the CSV says whether both are
   proven optimal with the same objective.

    nice .venv/bin/python bench/sara_partition_bench.py [--time-limit 60] [--part optimum|scaling|all|figure|backends|agreement]
        [--apps a,b] [--sizes 50,100] [--update]   # --update: replace only the re-run rows

Writes ``bench_optimum.csv``, ``bench_scaling.csv``, ``bench_backends.csv``, ``bench_agreement.csv`` and ``bench.png`` under
``studies/sara_partition/results/``. Wall-clock times on a shared 2-core machine are noisy; every solve has
a time limit and an unfinished one is reported with its status, bound and gap.
"""

from __future__ import annotations

import argparse
import sys
import random
import time
from pathlib import Path

import pandas as pd

from solvermap.formulations import partition as model
from solvermap.formulations.problems.partition import Item, Link, PartitionProblem, objective
from solvermap.formulations.solver import SolverConfig
from solvermap.hardware.checks.partition import check
from solvermap.hardware.targets import load_target
from solvermap.ir.workloads import build
from solvermap.ir.workloads.plasticine_apps import APPS
from solvermap.mappers.plasticine import decomposition, lowering, traversal

OUT = Path(__file__).resolve().parent.parent / "studies" / "sara_partition" / "results"


def app_problem(app: str, par: int | None = None, target: str = "plasticine") -> PartitionProblem:
    spec = load_target(target)
    graph, _ = decomposition.decompose(build(app, "plasticine", {"par": par} if par else None).ir, spec)
    return lowering.partition_problem(graph, spec)


def best_heuristic(problem: PartitionProblem):
    best = None
    for name, fn in traversal.partition_baselines(problem).items():
        d = fn(problem)
        if d is not None and check(problem, d).ok and (best is None or objective(problem, d) < best[1]):
            best = (name, objective(problem, d), d)
    return best


def solve_row(problem: PartitionProblem, variant: str, time_limit: float, hint, backend: str = "cpsat",
              retiming_search: str = "auto") -> dict:
    start = time.perf_counter()
    solved = model.solve(problem, SolverConfig(backend=backend, threads=1, time_limit_s=time_limit), hint,
                         variant=variant, retiming_search=retiming_search)
    wall = time.perf_counter() - start
    r = solved.result
    ok = solved.decision is not None and check(problem, solved.decision).ok
    final = r.objective if r.objective is not None else objective(problem, hint)  # the warm start otherwise
    bound = r.bound if r.bound is not None else model.lower_bound(problem).cost
    return {"variant": variant, "status": str(r.status), "objective": r.objective, "bound": r.bound, "gap": r.gap,
            "final_objective": final, "final_gap": (final - bound) / max(1.0, final),
            "solve_seconds": r.solve_seconds, "wall_seconds": wall, "check_ok": ok, "method": r.message,
            "proven_seconds": r.solve_seconds if str(r.status) == "optimal" else None}


EXTRA = [("dotproduct", 16)]  # the 16-wide dot-product tree (partitioning only)


def optimum(time_limit: float, apps: list[str]) -> pd.DataFrame:
    rows = []
    for app, par in [(a, None) for a in apps] + EXTRA:
        problem = app_problem(app, par)
        if par is not None:
            app = f"{app}-par{par}"
        name, value, hint = best_heuristic(problem)
        for variant in ("ours", "table42"):
            row = {"app": app, "items": len(problem.items), "actors": len(problem.clusters()),
                   "heuristic": name, "heuristic_objective": value, **solve_row(problem, variant, time_limit, hint)}
            rows.append(row)
            print({k: row[k] for k in ("app", "variant", "status", "objective", "bound", "solve_seconds")}, flush=True)
    return pd.DataFrame(rows)


def backends(time_limit: float, apps: list[str]) -> pd.DataFrame:
    from solvermap.formulations.solver import available_backends

    rows = []
    for app in apps:
        problem = app_problem(app)
        name, value, hint = best_heuristic(problem)
        for backend in [b for b in ("cpsat", "highs", "scip") if b in available_backends("milp")]:
            for search in ("slots", "columns"):
                row = {"app": app, "backend": backend, "retiming_search": search, "heuristic_objective": value,
                       **solve_row(problem, "ours", time_limit, hint, backend, search)}
                rows.append(row)
                print({k: row[k] for k in ("app", "backend", "retiming_search", "status", "objective", "bound",
                                           "wall_seconds")}, flush=True)
    return pd.DataFrame(rows)


AGREEMENT_APPS = ("blackscholes", "kmeans", "lattice")  # CP-SAT vs SCIP agreement that takes too long for the suite


def agreement(time_limit: float, apps: list[str]) -> pd.DataFrame:
    """CP-SAT and SCIP on each app from the same warm start; ``agree``: both optimal, same objective."""
    rows = []
    for app in apps:
        problem = app_problem(app)
        name, value, hint = best_heuristic(problem)
        pair = []
        for backend in ("cpsat", "scip"):
            start = time.perf_counter()
            solved = model.solve(problem, SolverConfig(backend=backend, threads=1, time_limit_s=time_limit), hint)
            r = solved.result
            pair.append({"app": app, "backend": backend, "heuristic": name, "heuristic_objective": value,
                         "status": str(r.status), "objective": r.objective, "bound": r.bound, "work": r.work,
                         "backstop_fired": r.backstop_fired, "solve_seconds": r.solve_seconds,
                         "wall_seconds": time.perf_counter() - start,
                         "check_ok": solved.decision is not None and check(problem, solved.decision).ok})
            print({k: pair[-1][k] for k in ("app", "backend", "status", "objective", "bound", "wall_seconds")}, flush=True)
        agree = all(p["status"] == "optimal" for p in pair) and pair[0]["objective"] == pair[1]["objective"]
        rows += [{**p, "agree": agree} for p in pair]
    return pd.DataFrame(rows)


def layered_dag(n: int, seed: int) -> PartitionProblem:
    """A random layered DAG of n vector/scalar operations in one VB (fan-in ≤ 2, some broadcasts)."""
    rng = random.Random(seed)
    spec = load_target("plasticine")
    names = [f"n{k}" for k in range(n)]
    width = max(2, int(n ** 0.5))
    items = tuple(Item(name, {"stages": rng.choice([1, 1, 1, 2])}, cluster="vb") for name in names)
    links = []
    for k in range(n):
        layer = k // width
        if layer == 0:
            links.append(Link(f"in{k % 6}", names[k], kind="vector"))
            continue
        lo = max(0, (layer - 2) * width)
        preds = rng.sample(range(lo, layer * width), min(2, layer * width - lo))
        for p in preds[: rng.choice([1, 2, 2])]:
            kind = "vector" if p % 3 else "scalar"
            links.append(Link(names[p], names[k], src_port=kind, kind=kind))
    sinks = set(names) - {l.src for l in links}
    for s in sorted(sinks):
        links.append(Link(s, "out", src_port="res", kind="scalar"))
    return lowering.PartitionProblem(items, (lowering.pcu_type(spec),), tuple(links), acyclic=True,
                                     retiming=model_retiming(spec), name=f"layered{n}")


def model_retiming(spec):
    from solvermap.formulations.problems.partition import Retiming

    return Retiming(spec.hop_latency, spec.pcu.buffer_depth)


def app_derived(n: int) -> PartitionProblem:
    """Copies of the Black-Scholes pricing body in one actor, about n operations."""
    base = app_problem("blackscholes", 1)
    copies = max(1, round(n / len(base.items)))
    items, links = [], []
    for c in range(copies):
        items += [Item(f"{i.name}#{c}", dict(i.demand), cluster="price") for i in base.items]
        inside = {i.name for i in base.items}
        for l in base.links:
            links.append(Link(f"{l.src}#{c}" if l.src in inside else f"{l.src}#{c}",
                              f"{l.dst}#{c}" if l.dst in inside else f"{l.dst}#{c}",
                              l.src_port, l.kind, l.forward, l.order_only, l.traffic))
    return PartitionProblem(tuple(items), base.bin_types, tuple(links), acyclic=True, retiming=base.retiming,
                            weights=base.weights, name=f"blackscholes-x{copies}")


def scaling(time_limit: float, sizes: list[int], out: Path | None = None) -> pd.DataFrame:
    rows = []
    seen = set()
    for n in sizes:
        for family, make in (("layered", lambda n: layered_dag(n, seed=n)), ("app-derived", app_derived)):
            problem = make(n)
            if (family, len(problem.items)) in seen:  # e.g. 50 and 100 both round to one Black-Scholes copy
                continue
            seen.add((family, len(problem.items)))
            start = time.perf_counter()
            found = best_heuristic(problem)
            heuristic_seconds = time.perf_counter() - start
            name, value, hint = found
            row = {"family": family, "nodes": len(problem.items), "heuristic": name, "heuristic_objective": value,
                   "heuristic_seconds": heuristic_seconds,
                   "certified_bound": model.lower_bound(problem).bins,
                   **solve_row(problem, "ours", time_limit, hint)}
            rows.append(row)
            print({k: row[k] for k in ("family", "nodes", "heuristic_objective", "objective", "bound", "status",
                                        "solve_seconds")}, flush=True)
            if out is not None:  # written after every row: a long run can be stopped
                pd.DataFrame(rows).to_csv(out / "bench_scaling.csv", index=False)
    return pd.DataFrame(rows)


def figure(opt: pd.DataFrame | None, scale: pd.DataFrame | None, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(15, 4.5))
    if opt is not None and len(opt):
        order = [a for a in APPS if a in set(opt["app"])] + sorted(set(opt["app"]) - set(APPS))
        pivot = opt.pivot(index="app", columns="variant", values="solve_seconds").reindex(order)
        status = opt.pivot(index="app", columns="variant", values="status").reindex(pivot.index)
        x = range(len(pivot))
        for k, variant in enumerate(("ours", "table42")):
            if variant not in pivot:
                continue
            bars = axes[0].bar([i + (k - 0.5) * 0.4 for i in x], pivot[variant], 0.4, label=variant)
            for bar, st in zip(bars, status[variant]):
                if st != "optimal":
                    bar.set_hatch("//")
        axes[0].set_yscale("log")
        axes[0].set_xticks(list(x))
        axes[0].set_xticklabels(pivot.index, rotation=40)
        axes[0].set_ylabel("seconds (hatched = not proven at the limit)")
        axes[0].set_title("time to proven optimum, CP-SAT 1 thread")
        axes[0].legend()
    if scale is not None and len(scale):
        for family, d in scale.groupby("family"):
            axes[1].plot(d["nodes"], d["solve_seconds"], "o-", label=f"{family}: solve s")
            axes[1].plot(d["nodes"], d["final_gap"] * 100, "x--", label=f"{family}: gap to bound %")
            saved = 100 * (1 - d["final_objective"] / d["heuristic_objective"])
            axes[1].plot(d["nodes"], saved, "s:", label=f"{family}: fewer PBs than the heuristic %")
        axes[1].set_xscale("log")
        axes[1].set_yscale("symlog")
        axes[1].set_xlabel("operations in one VB")
        axes[1].set_ylim(bottom=0)
        axes[1].set_title("scaling of our formulation (60 s budget)")
        axes[1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _merge(path: Path, new: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """The CSV at ``path`` with its rows that ``new`` re-ran (same ``keys``) replaced in place, new ones
    appended; just ``new`` when there is no CSV yet."""
    if not path.exists():
        return new
    old = pd.read_csv(path)
    fresh = {tuple(r[k] for k in keys): r for _, r in new.iterrows()}
    rows = [fresh.pop(tuple(r[k] for k in keys), r) for _, r in old.iterrows()]
    return pd.DataFrame(rows + list(fresh.values())).reindex(columns=list(dict.fromkeys([*old.columns, *new.columns])))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--time-limit", type=float, default=None, help="work budget per solve (default 60; agreement 30)")
    parser.add_argument("--part", choices=("optimum", "scaling", "all", "figure", "backends", "agreement"), default="all",
                        help="figure: redraw bench.png from the CSVs in --out")
    parser.add_argument("--apps", default=None, help="default: all 13 apps (backends: blackscholes; agreement: "
                        "blackscholes,kmeans,lattice)")
    parser.add_argument("--sizes", default="50,100,200,500,1000,2000,5000")
    parser.add_argument("--out", default=str(OUT))
    parser.add_argument("--update", action="store_true",
                        help="replace only the re-run rows (apps, or family × size) in --out's CSVs, keep the others")
    args = parser.parse_args()
    if args.time_limit is None:
        args.time_limit = 30.0 if args.part == "agreement" else 60.0
    if args.apps is None:
        args.apps = {"backends": "blackscholes", "agreement": ",".join(AGREEMENT_APPS)}.get(args.part, ",".join(APPS))
    unknown = [a for a in args.apps.split(",") if a not in APPS]
    if unknown:
        print(f"{Path(__file__).name}: --apps: unknown app(s) {', '.join(unknown)}; choose from {', '.join(APPS)}",
              file=sys.stderr)
        sys.exit(2)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.part == "agreement":
        table = agreement(args.time_limit, args.apps.split(","))
        if args.update:
            table = _merge(out / "bench_agreement.csv", table, ["app", "backend"])
        table.to_csv(out / "bench_agreement.csv", index=False)
        return
    if args.part == "backends":
        table = backends(args.time_limit, args.apps.split(","))
        if args.update:
            table = _merge(out / "bench_backends.csv", table, ["app", "backend", "retiming_search"])
        table.to_csv(out / "bench_backends.csv", index=False)
        return
    opt = scale = None
    if args.part in ("optimum", "all"):
        opt = optimum(args.time_limit, args.apps.split(","))
        if args.update:
            opt = _merge(out / "bench_optimum.csv", opt, ["app", "variant"])
        opt.to_csv(out / "bench_optimum.csv", index=False)
    elif (out / "bench_optimum.csv").exists():
        opt = pd.read_csv(out / "bench_optimum.csv")
    if args.part in ("scaling", "all"):
        scale = scaling(args.time_limit, [int(s) for s in args.sizes.split(",")], out)
        if args.update:
            scale = _merge(out / "bench_scaling.csv", scale, ["family", "nodes"])
        scale.to_csv(out / "bench_scaling.csv", index=False)
    elif (out / "bench_scaling.csv").exists():
        scale = pd.read_csv(out / "bench_scaling.csv")
    figure(opt, scale, out / "bench.png")


if __name__ == "__main__":
    main()
