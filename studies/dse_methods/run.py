"""Study: design-space search methods against the exhaustive Pareto front (issue 4, item 7).

On a study whose space is small enough to enumerate (default: ``study.yaml`` beside this file),

1. every configuration is evaluated once through the target's real pipeline (``search.evaluate``:
   every decision solved and checked, the mapping simulated) — the exhaustive set and its front;
2. NSGA-II, TPE and random search (Optuna samplers as configured by ``search.samplers``) each run
   ``--budget`` trials, for ``--seeds`` seeds; a grid sweeps the space in file order, as SARA's own
   DSE scripts do (nested loops over the parameters), and a seeded shuffled grid for reference;
3. after every trial the hypervolume of the feasible trials so far is computed in the objective
   space normalised over the exhaustive set (reference point 1.1 per objective), and reported as a
   fraction of the exhaustive front's hypervolume.

A trial's objectives are the exhaustive evaluation of its configuration: the inner solves are exact
(optimal, deterministic seeds), so evaluating a configuration again gives the same numbers; the
samplers are thus compared at equal trial budgets without re-solving. Infeasible configurations
carry the same ``set_constraint`` values as in a live study, so constrained samplers see them.

Outputs in ``results/``: ``exhaustive.csv`` (every configuration), ``exhaustive_front.csv``,
``hv_vs_trials.csv`` (mean / min / max hypervolume fraction per method and trial count),
``trials_to_95.csv`` (per method and seed: trials needed to reach 95 % of the exhaustive
hypervolume), ``summary.csv`` and ``hv_vs_trials.png``.

    .venv/bin/python studies/dse_methods/run.py [--study FILE] [--seeds 5] [--budget 60] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).parent
METHODS = ("nsga2", "tpe", "random")
TARGET_FRACTION = 0.95


def evaluate_all(study, workdir: Path, progress: bool = True) -> pd.DataFrame:
    """Evaluate every configuration of the space once; one row per configuration."""
    from rich.progress import track

    from solvermap.search.evaluate import Evaluator
    from solvermap.search.space import enumerate_space

    evaluator = Evaluator(study, workdir)
    configs = enumerate_space(study.space)
    rows = []
    iterator = track(configs, description="exhaustive", disable=not progress, transient=True) if progress else configs
    for number, config in enumerate(iterator):
        result = evaluator.evaluate(config, number=number)
        rows.append({"key": json.dumps(config, sort_keys=True), **config, "feasible": result.feasible,
                     "reason": result.reason, "seconds": result.seconds,
                     **{o.label: v for o, v in zip(study.objectives, result.values)},
                     "constraints": json.dumps(result.constraints)})
    return pd.DataFrame(rows)


def _reload(path: str, study) -> pd.DataFrame:
    """An exhaustive table written by an earlier run, with its configuration keys rebuilt."""
    table = pd.read_csv(path)
    table["key"] = [json.dumps({name: _typed(param, row[name]) for name, param in study.space.items()
                                if name in row and pd.notna(row[name])}, sort_keys=True)
                    for row in table.to_dict("records")]
    for o in study.objectives:
        fill = math.inf if o.direction == "minimize" else -math.inf
        table[o.label] = table[o.label].fillna(fill)
    return table


def _typed(param, value):
    """A value read back from CSV, as the sampler would give it (int, float or the matching choice)."""
    from solvermap.search.study_file import CategoricalParam, IntParam

    if isinstance(param, IntParam):
        return int(value)
    if isinstance(param, CategoricalParam):
        return next(c for c in param.choices if str(c) == str(value) or (not isinstance(c, str) and c == value))
    return float(value)


def front_hypervolume(points: np.ndarray, norm) -> float:
    from solvermap.search.pareto import hypervolume

    return hypervolume(norm(points), norm.ref) if len(points) else 0.0


class Lookup:
    """Objective values and constraints of a configuration, from the exhaustive table."""

    def __init__(self, table: pd.DataFrame, study) -> None:
        self.labels = [o.label for o in study.objectives]
        self.rows = {row["key"]: row for row in table.to_dict("records")}

    def __call__(self, config: dict) -> tuple[list[float], dict[str, float], bool]:
        row = self.rows[json.dumps(config, sort_keys=True)]
        return [float(row[label]) for label in self.labels], json.loads(row["constraints"]), bool(row["feasible"])


def hv_curve(points: list[np.ndarray], feasible: list[bool], norm, total: float) -> list[float]:
    """Hypervolume fraction of the exhaustive front after each trial."""
    from solvermap.search.pareto import hypervolume

    out, kept, current = [], [], 0.0
    for point, ok in zip(points, feasible):
        if ok:
            kept.append(norm(point))
            current = hypervolume(np.array(kept), norm.ref) / total
        out.append(current)
    return out


def run_sampler(study, method: str, seed: int, budget: int, lookup: Lookup, directions: list[str]) -> list[tuple]:
    """Ask/tell loop of one Optuna sampler over the lookup; returns (config, values, feasible) per trial."""
    import optuna

    from solvermap.search.samplers import make_sampler
    from solvermap.search.space import suggest
    from solvermap.search.worker import quiet_optuna

    quiet_optuna()
    options = dict(study.sampler.options) if method == study.sampler.name else {}  # e.g. NSGA-II's population
    spec = study.model_copy(update={"sampler": study.sampler.model_copy(update={"name": method, "options": options}),
                                    "seed": seed})
    optuna_study = optuna.create_study(directions=directions, sampler=make_sampler(spec))
    trials = []
    for _ in range(budget):
        trial = optuna_study.ask()
        config = suggest(study.space, trial)
        values, constraints, feasible = lookup(config)
        for key, value in constraints.items():
            trial.set_constraint(key, value)
        optuna_study.tell(trial, values)
        trials.append((config, values, feasible))
    return trials


def trials_to_reach(curve: list[float], fraction: float = TARGET_FRACTION) -> int | None:
    for k, value in enumerate(curve, start=1):
        if value >= fraction - 1e-12:
            return k
    return None


def main(argv: list[str] | None = None) -> int:
    from solvermap.search.pareto import normaliser, pareto_mask, to_minimisation
    from solvermap.search.space import enumerate_space
    from solvermap.search.study_file import load_study

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--study", default=str(HERE / "study.yaml"), help="study YAML with an enumerable space")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--budget", type=int, default=None, help="trials per method (default: the space size)")
    parser.add_argument("--out", default=str(HERE / "results"))
    parser.add_argument("--workdir", default=None, help="trial folders and solve cache (default: a temp dir)")
    parser.add_argument("--exhaustive", default=None,
                        help="reuse an exhaustive.csv written by an earlier run of the same study (skips step 1)")
    args = parser.parse_args(argv)

    study = load_study(args.study)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    import tempfile

    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="dse_methods-"))
    start = time.perf_counter()
    if args.exhaustive:
        table = _reload(args.exhaustive, study)
        exhaustive_seconds = float(table["seconds"].sum())
    else:
        table = evaluate_all(study, workdir)
        exhaustive_seconds = time.perf_counter() - start
    labels, directions = [o.label for o in study.objectives], study.directions
    table.drop(columns=["key"]).to_csv(out / "exhaustive.csv", index=False)
    feasible = table[table["feasible"]]
    if feasible.empty:
        print("no feasible configuration in the space", file=sys.stderr)
        return 1
    points = to_minimisation(feasible[labels].to_numpy(float), directions)
    norm = normaliser(points)
    total = front_hypervolume(points, norm)
    front = feasible[pareto_mask(points)]
    front.drop(columns=["key"]).sort_values(labels).to_csv(out / "exhaustive_front.csv", index=False)
    size = len(table)
    budget = args.budget or size
    lookup = Lookup(table, study)

    curves: dict[str, list[list[float]]] = {}
    reach_rows = []

    def record(method: str, seed: int, trials: list[tuple]) -> None:
        pts = [to_minimisation(np.array(v, dtype=float)[None, :], directions)[0] for _, v, _ in trials]
        curve = hv_curve(pts, [ok for _, _, ok in trials], norm, total)
        curves.setdefault(method, []).append(curve)
        distinct = len({json.dumps(c, sort_keys=True) for c, _, _ in trials})
        reach_rows.append({"method": method, "seed": seed, "trials_to_95": trials_to_reach(curve),
                           "final_fraction": curve[-1], "distinct_configs": distinct})

    for method in METHODS:
        for seed in range(args.seeds):
            record(method, seed, run_sampler(study, method, seed, budget, lookup, directions))
    configs = enumerate_space(study.space)
    record("grid (file order)", 0, [(c, *lookup(c)[0::2]) for c in configs[:budget]])
    for seed in range(args.seeds):
        shuffled = list(configs)
        random.Random(seed).shuffle(shuffled)
        record("grid (shuffled)", seed, [(c, *lookup(c)[0::2]) for c in shuffled[:budget]])

    rows = []
    for method, runs in curves.items():
        matrix = np.array(runs)
        for k in range(matrix.shape[1]):
            rows.append({"method": method, "trials": k + 1, "mean": matrix[:, k].mean(), "min": matrix[:, k].min(),
                         "max": matrix[:, k].max()})
    pd.DataFrame(rows).to_csv(out / "hv_vs_trials.csv", index=False)
    reach = pd.DataFrame(reach_rows)
    reach.to_csv(out / "trials_to_95.csv", index=False)
    summary = []
    for method, group in reach.groupby("method", sort=False):
        hit = group["trials_to_95"].dropna()
        summary.append({"method": method, "runs": len(group), "reached_95": len(hit),
                        "median_trials_to_95": float(hit.median()) if len(hit) else None,
                        "mean_trials_to_95": float(hit.mean()) if len(hit) else None,
                        "worst_trials_to_95": int(hit.max()) if len(hit) == len(group) else None,
                        "mean_final_fraction": float(group["final_fraction"].mean())})
    summary_frame = pd.DataFrame(summary)
    summary_frame.to_csv(out / "summary.csv", index=False)
    meta = {"study": study.name, "space_size": size, "feasible": int(len(feasible)), "front_size": int(len(front)),
            "budget": budget, "seeds": args.seeds, "objectives": dict(zip(labels, directions)),
            "exhaustive_seconds": round(exhaustive_seconds, 1)}
    (out / "meta.json").write_text(json.dumps(meta, indent=2))
    _plot(rows, meta, out / "hv_vs_trials.png")
    print(json.dumps(meta))
    print(summary_frame.to_string(index=False))
    return 0


def _plot(rows: list[dict], meta: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    frame = pd.DataFrame(rows)
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=110)
    for k, (method, group) in enumerate(frame.groupby("method", sort=False)):
        ax.plot(group["trials"], group["mean"], label=method, color=f"C{k}")
        ax.fill_between(group["trials"], group["min"], group["max"], color=f"C{k}", alpha=0.12)
    ax.axhline(TARGET_FRACTION, color="0.4", ls="--", lw=0.8)
    ax.set_xlabel("trials")
    ax.set_ylabel("hypervolume / exhaustive front's")
    ax.set_ylim(0, 1.02)
    ax.set_title(f"{meta['study']}: {meta['space_size']} configurations, {meta['seeds']} seeds (band: min–max)",
                 fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main())
