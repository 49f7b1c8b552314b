"""Study: design-space search methods against the exhaustive Pareto front, with and without certified
pruning (issue 4 item 7, issue 29 item 4).

On a study whose space is small enough to enumerate (``study.yaml``: 96 designs; ``study_540.yaml``: 540),

1. every configuration is evaluated once through the target's real pipeline (``search.evaluate``:
   every decision solved and checked, the mapping simulated) — the exhaustive set and its front; its
   certified lower bounds (``search.bounds``, no solve) are computed beside it and checked against the
   evaluated values (``bound_violations`` in ``meta.json`` must be 0);
2. NSGA-II, TPE and random search (Optuna samplers as configured by ``search.samplers``), a grid in file
   order (SARA's nested-loop sweeps) and seeded shuffled grids each run until ``--budget`` *full
   evaluations*, for ``--seeds`` seeds, once without and once with pruning: with pruning a proposed design
   whose bounds the front so far dominates (``search.pruning.dominator``), or whose bounds prove it
   infeasible, is told to Optuna as PRUNED and costs no evaluation (at most ``--max-asks`` × the budget
   proposals per run);
3. after every full evaluation the hypervolume of the feasible evaluated designs so far is computed in
   the objective space normalised over the exhaustive set (reference point 1.1 per objective), as a
   fraction of the exhaustive front's hypervolume.

A trial's objectives are the exhaustive evaluation of its configuration: the inner solves are seeded and
deterministic (work limits), so evaluating a configuration again gives the same numbers; the methods are
compared at equal numbers of full evaluations without re-solving. Infeasible and unknown configurations
carry the same ``set_constraint`` values as in a live study. A configuration proposed twice is evaluated
(and counted) twice, as in a study.

Outputs in ``--out``: ``exhaustive.csv`` (every configuration, its outcome, values and bounds),
``exhaustive_front.csv``, ``hv_vs_evaluations.csv`` (mean / min / max hypervolume fraction per method,
pruning and number of full evaluations), ``evaluations_to_95.csv`` (per method, pruning and seed: full
evaluations and proposals until 95 % of the exhaustive hypervolume), ``summary.csv``, ``meta.json`` and
``hv_vs_evaluations.png``.

    .venv/bin/python studies/dse_methods/run.py [--study FILE] [--seeds 5] [--budget N] [--out DIR]
    .venv/bin/python studies/dse_methods/run.py --exhaustive results/exhaustive.csv   # samplers only
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
                     "outcome": result.outcome, "reason": result.reason, "seconds": result.seconds,
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
    """Objective values and constraints of a configuration, from the exhaustive table, and the hypervolume
    fraction of a set of normalised points (``norm``, ``total``: the exhaustive set's normaliser and volume)."""

    def __init__(self, table: pd.DataFrame, study, norm, total: float) -> None:
        self.labels = [o.label for o in study.objectives]
        self.rows = {row["key"]: row for row in table.to_dict("records")}
        self.norm, self.total = norm, total

    def __call__(self, config: dict) -> tuple[list[float], dict[str, float], bool]:
        row = self.rows[json.dumps(config, sort_keys=True)]
        return [float(row[label]) for label in self.labels], json.loads(row["constraints"]), bool(row["feasible"])

    def fraction(self, kept: list[np.ndarray]) -> float:
        from solvermap.search.pareto import hypervolume

        return hypervolume(np.array(kept), self.norm.ref) / self.total if kept else 0.0


def design_bounds_table(study, configs: list[dict]) -> pd.DataFrame:
    """Certified lower bounds of every configuration (no solve): ``bound.<objective>`` and ``bound_infeasible``."""
    from solvermap.search.bounds import design_bounds
    from solvermap.search.evaluate import Evaluator

    evaluator = Evaluator(study, None)
    rows = []
    for config in configs:
        bounds = design_bounds(evaluator, config)
        row = {"key": json.dumps(config, sort_keys=True), "bound_infeasible": bounds.infeasible if bounds else ""}
        for o, value in zip(study.objectives, bounds.objectives if bounds else [None] * len(study.objectives)):
            row[f"bound.{o.label}"] = value
        rows.append(row)
    return pd.DataFrame(rows)


class Bounds:
    """Minimisation-form bound vectors and infeasibility proofs of the configurations, by key."""

    def __init__(self, table: pd.DataFrame, labels: list[str], directions: list[str]) -> None:
        self.directions = directions
        self.rows = {}
        for row in table.to_dict("records"):
            values = [row[f"bound.{label}"] for label in labels]
            vector = [float(v) if v is not None and pd.notna(v) and d == "minimize" else -math.inf
                      for v, d in zip(values, self.directions)]
            proof = row.get("bound_infeasible")
            self.rows[row["key"]] = (vector, proof if isinstance(proof, str) and proof else "")

    def __call__(self, config: dict) -> tuple[list[float], str]:
        return self.rows[json.dumps(config, sort_keys=True)]


def run_method(study, method: str, seed: int, budget: int, lookup: Lookup, bounds: Bounds | None, max_asks: int,
               target: float) -> tuple[list[float], int, int, int]:
    """One run until ``budget`` full evaluations (or ``max_asks`` proposals, or the whole front found):
    the hypervolume fraction after each full evaluation, proposals, pruned proposals, distinct designs evaluated.

    ``method``: an Optuna sampler name (ask/tell over the lookup), or ``grid`` / ``grid-shuffled``."""
    import optuna
    from optuna.trial import TrialState

    from solvermap.search.pruning import dominator
    from solvermap.search.samplers import make_sampler
    from solvermap.search.space import enumerate_space, suggest
    from solvermap.search.worker import quiet_optuna

    quiet_optuna()
    directions = study.directions
    grid = None
    if method.startswith("grid"):
        grid = enumerate_space(study.space)
        if method == "grid-shuffled":
            random.Random(seed).shuffle(grid)
        optuna_study = None
    else:
        options = dict(study.sampler.options) if method == study.sampler.name else {}  # e.g. NSGA-II's population
        spec = study.model_copy(update={"sampler": study.sampler.model_copy(update={"name": method, "options": options}),
                                        "seed": seed})
        optuna_study = optuna.create_study(directions=directions, sampler=make_sampler(spec))
    curve: list[float] = []
    front: list[tuple[int, list[float]]] = []  # feasible evaluated designs, non-dominated
    kept: list[np.ndarray] = []
    asks = pruned = 0
    evaluated: set[str] = set()
    while len(curve) < budget and asks < max_asks:
        if grid is not None:
            if asks >= len(grid):
                break
            config, trial = grid[asks], None
        else:
            trial = optuna_study.ask()
            config = suggest(study.space, trial)
        asks += 1
        if bounds is not None:
            vector, proof = bounds(config)
            if proof or dominator(vector, front, directions) is not None:
                pruned += 1
                if trial is not None:
                    if proof:
                        trial.set_constraint("mapping", 1.0)
                    optuna_study.tell(trial, state=TrialState.PRUNED)
                continue
        values, constraints, feasible = lookup(config)
        if trial is not None:
            for key, value in constraints.items():
                trial.set_constraint(key, value)
            optuna_study.tell(trial, values)
        evaluated.add(json.dumps(config, sort_keys=True))
        if feasible:
            point = lookup.norm(to_min(values, directions))
            kept.append(point)
            front = _front(front, len(curve), values, directions)
        curve.append(lookup.fraction(kept))
        if curve[-1] >= 1.0 - 1e-12:
            break
    return curve, asks, pruned, len(evaluated)


def run_bounds_first(study, budget: int, lookup: Lookup, bounds: Bounds) -> tuple[list[float], int, int, int]:
    """Optimistic best-first search over the enumerated space (branch and bound on the certified bounds):
    evaluate next the design whose bound vector adds the most hypervolume to the front so far (in the space
    normalised over every design's bounds — known before any evaluation); a design whose bounds the front
    dominates, or that they prove infeasible, is pruned; when every remaining design is pruned the front is
    complete. Deterministic (ties: enumeration order). Returns what :func:`run_method` returns."""
    from solvermap.search.pareto import Normaliser, hypervolume
    from solvermap.search.pruning import dominator
    from solvermap.search.space import enumerate_space

    directions = study.directions
    configs = enumerate_space(study.space)
    vectors = {json.dumps(c, sort_keys=True): bounds(c) for c in configs}
    finite = np.array([v for v, proof in vectors.values() if not proof and all(math.isfinite(x) for x in v)])
    norm = Normaliser(finite.min(axis=0), finite.max(axis=0)) if len(finite) else lookup.norm
    remaining = [c for c in configs if not vectors[json.dumps(c, sort_keys=True)][1]]
    pruned = len(configs) - len(remaining)
    front: list[tuple[int, list[float]]] = []
    kept: list[np.ndarray] = []
    curve: list[float] = []
    while remaining and len(curve) < budget:
        base = hypervolume(np.array([norm(to_min(v, directions)) for _, v in front]), norm.ref) if front else 0.0
        best, gain, alive = None, -1.0, []
        for config in remaining:
            vector = vectors[json.dumps(config, sort_keys=True)][0]
            if dominator(vector, front, directions) is not None:
                pruned += 1
                continue
            alive.append(config)
            points = [norm(to_min(v, directions)) for _, v in front] + [norm(np.array(vector))]
            value = hypervolume(np.array(points), norm.ref) - base
            if value > gain + 1e-15:
                best, gain = config, value
        remaining = [c for c in alive if c is not best]
        if best is None:
            break
        values, _, feasible = lookup(best)
        if feasible:
            kept.append(lookup.norm(to_min(values, directions)))
            front = _front(front, len(curve), values, directions)
        curve.append(lookup.fraction(kept))
    return curve, len(curve) + pruned, pruned, len(curve)


def to_min(values: list[float], directions: list[str]) -> np.ndarray:
    from solvermap.search.pareto import to_minimisation

    return to_minimisation(np.array(values, dtype=float)[None, :], directions)[0]


def _front(front: list[tuple[int, list[float]]], number: int, values: list[float], directions: list[str]) -> list:
    from solvermap.search.pareto import pareto_mask, to_minimisation

    entries = front + [(number, list(values))]
    mask = pareto_mask(to_minimisation(np.array([v for _, v in entries], dtype=float), directions))
    return [e for e, keep in zip(entries, mask) if keep]


def evaluations_to_reach(curve: list[float], fraction: float = TARGET_FRACTION) -> int | None:
    for k, value in enumerate(curve, start=1):
        if value >= fraction - 1e-12:
            return k
    return None


METHOD_NAMES = {"nsga2": "NSGA-II", "tpe": "TPE", "random": "random", "grid": "grid (file order)",
                "grid-shuffled": "grid (shuffled)", "bounds-first": "bounds-first (B&B)"}


def main(argv: list[str] | None = None) -> int:
    from solvermap.search.pareto import normaliser, pareto_mask, to_minimisation
    from solvermap.search.space import enumerate_space
    from solvermap.search.study_file import load_study

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--study", default=str(HERE / "study.yaml"), help="study YAML with an enumerable space")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--budget", type=int, default=None, help="full evaluations per run (default: the space size)")
    parser.add_argument("--max-asks", type=float, default=4.0, help="proposals per run, as a multiple of the budget")
    parser.add_argument("--out", default=str(HERE / "results"))
    parser.add_argument("--workdir", default=None, help="trial folders and solve cache (default: a temp dir)")
    parser.add_argument("--exhaustive", default=None,
                        help="reuse an exhaustive.csv written by an earlier run of the same study (skips step 1)")
    parser.add_argument("--readme", default=str(HERE / "README.md"),
                        help="README whose table for this study (between its table markers) is rewritten; '' for none")
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
    configs = enumerate_space(study.space)
    table = table.drop(columns=[c for c in table.columns if c.startswith("bound")])
    bound_table = design_bounds_table(study, configs)
    table = table.merge(bound_table, on="key", how="left")
    labels, directions = [o.label for o in study.objectives], study.directions
    if "outcome" not in table.columns:  # an exhaustive table from before outcomes were recorded
        table["outcome"] = np.where(table["feasible"], "complete", "infeasible")
    table.drop(columns=["key"]).to_csv(out / "exhaustive.csv", index=False)
    feasible = table[table["feasible"]]
    if feasible.empty:
        print("no feasible configuration in the space", file=sys.stderr)
        return 1
    points = to_minimisation(feasible[labels].to_numpy(float), directions)
    norm = normaliser(points)
    total = front_hypervolume(points, norm)
    front_mask = pareto_mask(points)
    front = feasible[front_mask]
    front.drop(columns=["key"]).sort_values(labels).to_csv(out / "exhaustive_front.csv", index=False)
    violations = _bound_violations(table, labels)
    prunable = _prunable_against(table, front, labels, directions)
    size = len(table)
    budget = args.budget or size
    lookup = Lookup(table, study, norm, total)
    bounds = Bounds(table, labels, directions)

    curves: dict[tuple[str, bool], list[list[float]]] = {}
    reach_rows = []
    methods = [("nsga2", args.seeds), ("tpe", args.seeds), ("random", args.seeds), ("grid", 1),
               ("grid-shuffled", args.seeds)]
    for method, seeds in methods:
        for pruning in (False, True):
            for seed in range(seeds):
                curve, asks, pruned, distinct = run_method(study, method, seed, budget, lookup,
                                                           bounds if pruning else None,
                                                           int(args.max_asks * budget), TARGET_FRACTION)
                curves.setdefault((method, pruning), []).append(curve + [curve[-1]] * (budget - len(curve)) if curve else [0.0] * budget)
                reach = evaluations_to_reach(curve)
                reach_rows.append({"method": METHOD_NAMES[method], "pruning": pruning, "seed": seed,
                                   "evaluations_to_95": reach, "proposals": asks, "pruned": pruned,
                                   "evaluations": len(curve), "distinct_evaluated": distinct,
                                   "final_fraction": curve[-1] if curve else 0.0})
    curve, asks, pruned, distinct = run_bounds_first(study, budget, lookup, bounds)
    curves[("bounds-first", True)] = [curve + [curve[-1]] * (budget - len(curve)) if curve else [0.0] * budget]
    reach_rows.append({"method": METHOD_NAMES["bounds-first"], "pruning": True, "seed": 0,
                       "evaluations_to_95": evaluations_to_reach(curve), "proposals": asks, "pruned": pruned,
                       "evaluations": len(curve), "distinct_evaluated": distinct,
                       "final_fraction": curve[-1] if curve else 0.0})
    rows = []
    for (method, pruning), runs in curves.items():
        matrix = np.array(runs)
        for k in range(matrix.shape[1]):
            rows.append({"method": METHOD_NAMES[method], "pruning": pruning, "evaluations": k + 1,
                         "mean": matrix[:, k].mean(), "min": matrix[:, k].min(), "max": matrix[:, k].max()})
    pd.DataFrame(rows).to_csv(out / "hv_vs_evaluations.csv", index=False)
    reach = pd.DataFrame(reach_rows)
    reach.to_csv(out / "evaluations_to_95.csv", index=False)
    summary = []
    for (method, pruning), group in reach.groupby(["method", "pruning"], sort=False):
        hit = group["evaluations_to_95"].dropna()
        summary.append({"method": method, "pruning": pruning, "runs": len(group), "reached_95": len(hit),
                        "median_evaluations_to_95": float(hit.median()) if len(hit) else None,
                        "median_share_of_space": float(hit.median()) / size if len(hit) else None,
                        "mean_evaluations_to_95": float(hit.mean()) if len(hit) else None,
                        "worst_evaluations_to_95": int(hit.max()) if len(hit) == len(group) else None,
                        "median_pruned_proposals": float(group["pruned"].median()),
                        "mean_final_fraction": float(group["final_fraction"].mean())})
    summary_frame = pd.DataFrame(summary)
    summary_frame.to_csv(out / "summary.csv", index=False)
    counts = table["outcome"].value_counts().to_dict()
    meta = {"study": study.name, "space_size": size, "outcomes": {k: int(v) for k, v in counts.items()},
            "feasible": int(len(feasible)), "front_size": int(len(front)), "budget": budget, "seeds": args.seeds,
            "max_asks": int(args.max_asks * budget), "objectives": dict(zip(labels, directions)),
            "exhaustive_seconds": round(exhaustive_seconds, 1), "bound_violations": violations,
            "prunable_against_exhaustive_front": prunable}
    (out / "meta.json").write_text(json.dumps(meta, indent=2))
    _plot(rows, meta, out / "hv_vs_evaluations.png")
    if args.readme:
        write_readme_table(Path(args.readme), meta, summary_frame)
    print(json.dumps(meta))
    print(summary_frame.to_string(index=False))
    return 0


def readme_table(meta: dict, summary: pd.DataFrame) -> str:
    """The Markdown table of ``summary.csv``: full evaluations to 95 % per method, without and with pruning."""
    size = meta["space_size"]

    def number(value, digits=0):
        return "–" if value is None or pd.isna(value) else f"{value:.{digits}f}"

    lines = [f"{meta['study']}: {size} designs ({meta['feasible']} feasible, front of {meta['front_size']}), "
             f"{meta['seeds']} seeds, budget {meta['budget']} full evaluations; bounds below a value: "
             f"{meta['bound_violations']}; the exhaustive front would prune {meta['prunable_against_exhaustive_front']['designs']} "
             f"designs, {meta['prunable_against_exhaustive_front']['front_designs']} of them on the front.",
             "",
             "| method | pruning | runs | reached 95 % | median full evaluations to 95 % (share of space) | mean | worst "
             "| median pruned proposals | mean final fraction |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in summary.to_dict("records"):
        median = row["median_evaluations_to_95"]
        share = "–" if median is None or pd.isna(median) else f"{median:.1f} ({100 * median / size:.1f} %)"
        lines.append(f"| {row['method']} | {'yes' if row['pruning'] else 'no'} | {row['runs']} | {row['reached_95']} "
                     f"| {share} | {number(row['mean_evaluations_to_95'], 1)} | {number(row['worst_evaluations_to_95'])} "
                     f"| {number(row['median_pruned_proposals'])} | {row['mean_final_fraction']:.3f} |")
    return "\n".join(lines)


def write_readme_table(readme: Path, meta: dict, summary: pd.DataFrame) -> None:
    """Replace the text between ``<!-- table: STUDY -->`` and ``<!-- /table: STUDY -->`` in ``readme`` (appended
    at the end if the markers are missing)."""
    start, end = f"<!-- table: {meta['study']} -->", f"<!-- /table: {meta['study']} -->"
    text = readme.read_text() if readme.exists() else ""
    block = f"{start}\n{readme_table(meta, summary)}\n{end}"
    if start in text and end in text:
        text = text[:text.index(start)] + block + text[text.index(end) + len(end):]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    readme.write_text(text)


def _bound_violations(table: pd.DataFrame, labels: list[str]) -> int:
    """Evaluated values below their certified bound, over every configuration and objective (must be 0)."""
    count = 0
    for label in labels:
        value, bound = table[label].astype(float), table[f"bound.{label}"].astype(float)
        ok = np.isfinite(value) & bound.notna()
        count += int((value[ok] < bound[ok] * (1 - 1e-9) - 1e-12).sum())
    return count


def _prunable_against(table: pd.DataFrame, front: pd.DataFrame, labels: list[str], directions: list[str]) -> dict:
    """Designs the exhaustive front (or a proof) would prune, and whether any front design is among them."""
    from solvermap.search.pruning import dominator

    entries = [(i, [float(row[label]) for label in labels]) for i, row in enumerate(front.to_dict("records"))]
    bounds = Bounds(table, labels, directions)
    keys = set(front["key"])
    pruned, front_pruned = 0, 0
    for key in table["key"]:
        vector, proof = bounds.rows[key]
        if proof or dominator(vector, entries, directions) is not None:
            pruned += 1
            front_pruned += key in keys
    return {"designs": pruned, "front_designs": front_pruned}


def _plot(rows: list[dict], meta: dict, path: Path) -> None:
    """Mean hypervolume fraction against full evaluations, one panel without and one with pruning."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    frame = pd.DataFrame(rows)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), dpi=110, sharey=True)
    for ax, pruning in zip(axes, (False, True)):
        part = frame[frame["pruning"] == pruning]
        for k, (method, group) in enumerate(part.groupby("method", sort=False)):
            ax.plot(group["evaluations"], group["mean"], label=method, color=f"C{k}")
            ax.fill_between(group["evaluations"], group["min"], group["max"], color=f"C{k}", alpha=0.10)
        ax.axhline(TARGET_FRACTION, color="0.4", ls="--", lw=0.8)
        ax.axvline(0.1 * meta["space_size"], color="0.4", ls=":", lw=0.8)
        ax.set_xscale("log")
        ax.set_xlabel("full evaluations (log scale; dotted: 10 % of the space)")
        ax.set_title("with certified pruning" if pruning else "without pruning", fontsize=9)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("hypervolume / exhaustive front's")
    axes[0].set_ylim(0, 1.02)
    axes[1].legend(fontsize=8, loc="lower right")
    fig.suptitle(f"{meta['study']}: {meta['space_size']} designs, {meta['seeds']} seeds (mean; band: min–max)",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main())
