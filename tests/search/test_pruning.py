"""Certified pruning and trial outcomes: bounds never exceed evaluated values, pruning never removes a front
design, a dominated design is told PRUNED without being evaluated, and a study's table keeps complete,
pruned, infeasible and unknown trials apart."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import optuna
import pandas as pd
import pytest

from solvermap.formulations.decision import Solved
from solvermap.formulations.solver import SolveResult, Status
from solvermap.mappers.pipeline import Baseline, LowerBounds
from solvermap.search.pareto import pareto_mask, to_minimisation
from solvermap.search.pruning import dominator, front_points
from tests.search import toy_family
from tests.search.conftest import write_study

REPO = Path(__file__).resolve().parents[2]
METHODS = REPO / "studies" / "dse_methods"


@pytest.fixture(scope="module")
def space96():
    """The shipped exhaustive evaluation of the 96-design space, with every design's bounds computed now."""
    import sys

    sys.path.insert(0, str(METHODS))
    import run  # studies/dse_methods/run.py

    from solvermap.search.space import enumerate_space
    from solvermap.search.study_file import load_study

    study = load_study(METHODS / "study.yaml")
    table = run._reload(str(METHODS / "results" / "exhaustive.csv"), study)
    table = table.drop(columns=[c for c in table.columns if c.startswith("bound")])
    table = table.merge(run.design_bounds_table(study, enumerate_space(study.space)), on="key")
    return study, table, run


def test_bounds_never_exceed_the_evaluated_values_on_the_96_design_space(space96):
    study, table, _ = space96
    for o in study.objectives:
        value, bound = table[o.label].astype(float), table[f"bound.{o.label}"].astype(float)
        assert bound.notna().all(), o.label
        finite = np.isfinite(value)
        assert finite.sum() == 84
        assert (bound[finite] <= value[finite] * (1 + 1e-12)).all(), o.label


def test_pruning_against_the_exhaustive_front_removes_no_front_design_and_saves_23_of_96(space96):
    study, table, _ = space96
    labels, directions = [o.label for o in study.objectives], study.directions
    feasible = table[table["feasible"]]
    mask = pareto_mask(to_minimisation(feasible[labels].to_numpy(float), directions))
    front = [(i, [float(row[label]) for label in labels]) for i, row in enumerate(feasible[mask].to_dict("records"))]
    on_front = set(feasible[mask]["key"])
    pruned = [row["key"] for row in table.to_dict("records")
              if dominator([float(row[f"bound.{label}"]) for label in labels], front, directions) is not None]
    assert not on_front & set(pruned)
    assert len(pruned) == 23  # the share of full evaluations pruning can save on this space: 23 of 96


def test_bounds_first_search_reaches_95_percent_of_the_front_within_10_percent_of_the_designs(space96):
    study, table, run = space96
    labels, directions = [o.label for o in study.objectives], study.directions
    feasible = table[table["feasible"]]
    points = to_minimisation(feasible[labels].to_numpy(float), directions)
    from solvermap.search.pareto import normaliser

    norm = normaliser(points)
    lookup = run.Lookup(table, study, norm, run.front_hypervolume(points, norm))
    curve, _, pruned, _ = run.run_bounds_first(study, 96, lookup, run.Bounds(table, labels, directions))
    reached = run.evaluations_to_reach(curve)
    assert reached is not None and reached <= 9  # ≤ 10 % of 96 designs fully evaluated
    assert curve[-1] == pytest.approx(1.0) and pruned >= 23


def test_a_design_is_dominated_only_strictly():
    directions = ["minimize", "minimize"]
    front = [(0, [10.0, 5.0])]
    assert dominator([10.0, 6.0], front, directions) == (0, [10.0, 5.0])
    assert dominator([10.0, 5.0], front, directions) is None  # a tie could be a front design itself
    assert dominator([9.0, 100.0], front, directions) is None
    assert dominator([-math.inf, 100.0], front, directions) is None  # no bound on an objective: never pruned


# ------------------------------------------------------------------------- a study with every outcome


def _toy_bounds(ctx):
    """Certified for the toy: the makespan is at least the longest task and the mean PE load; area is exact."""
    spec, tasks = ctx.target, ctx.workload.ir
    durations = [math.ceil(o / spec.lanes) for o in tasks.ops]
    cycles = max(max(durations), sum(durations) / spec.pes)
    area = spec.pes * (0.02 * spec.lanes * spec.stages + 0.1) + (0.05 * spec.vcs if spec.network == "dynamic" else 0.02)
    return LowerBounds({"cycles": float(cycles), "area_mm2": area}, exact=frozenset({"area_mm2"}))


@pytest.fixture()
def toy_with_every_outcome(monkeypatch):
    """Toy family with bounds; on 3 PEs the pack solve stops without an answer and LPT gives none (unknown);
    2 lanes hold no task of width > 4 (infeasible)."""
    from solvermap import mappers

    monkeypatch.setitem(mappers._REGISTERED, "toyarray", dataclasses.replace(toy_family.PIPELINE, bounds=_toy_bounds))
    real_solve, real_lpt = toy_family.Pack.solve.__func__, toy_family.lpt

    def solve(cls, problem, config, hint=None):
        if problem.pes == 3:
            return Solved(SolveResult(Status.TIMEOUT_NO_SOLUTION, backend="fake"), None)
        return real_solve(cls, problem, config, hint)

    monkeypatch.setattr(toy_family.Pack, "solve", classmethod(solve))
    lpt = Baseline("lpt", lambda p: None if p.pes == 3 else real_lpt(p))
    monkeypatch.setattr(toy_family, "PACK", dataclasses.replace(toy_family.PACK, baselines=(lpt,)))


def test_trials_table_has_complete_pruned_infeasible_and_unknown_trials(tmp_path, toy_with_every_outcome):
    from solvermap.search.explore import explore

    path = write_study(tmp_path / "toy.yaml", sampler={"name": "grid"}, budget={"n_trials": 36},
                       unknown={"retries": 1, "budget_factor": 2})
    sdir, results, _ = explore(path, out=tmp_path / "run", progress=False, allow_imports=True, workers=1)
    trials = pd.read_csv(sdir.path / "tables" / "trials.csv")
    assert {"complete", "pruned", "infeasible", "unknown"} <= set(trials["state"])
    unknown = trials[trials["state"] == "unknown"]
    assert (unknown["target.pes"] == 3).all() and unknown["reason"].str.contains("no solution within the budget").all()
    assert unknown["reason"].str.contains(r"1 retry").all()
    pruned = trials[trials["state"] == "pruned"]
    assert pruned["dominated_by"].notna().all() and pruned["bound.cycles"].notna().all()
    assert pruned["run_dir"].isna().all()  # never mapped
    assert results.counts["pruned"] == len(pruned) and results.counts["unknown"] == len(unknown)
    assert trials["bound_violations"].isna().all()  # written empty: no value below its bound
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(sdir.path / "study.journal")))
    states = {t.number: t.state for t in optuna.load_study(study_name="toy", storage=storage).get_trials()}
    assert all(states[n] == optuna.trial.TrialState.PRUNED for n in pruned["number"])


def test_a_pruned_design_is_dominated_by_a_front_trial_evaluated_before_it(tmp_path, toy_with_every_outcome):
    from solvermap.search.explore import explore

    path = write_study(tmp_path / "toy.yaml", sampler={"name": "grid"}, budget={"n_trials": 36})
    sdir, _, _ = explore(path, out=tmp_path / "run", progress=False, allow_imports=True, workers=1)
    trials = pd.read_csv(sdir.path / "tables" / "trials.csv").set_index("number")
    for number, row in trials[trials["state"] == "pruned"].iterrows():
        if pd.isna(row["dominated_by"]):
            continue
        by = trials.loc[int(row["dominated_by"])]
        assert by["state"] == "complete" and int(row["dominated_by"]) < number
        assert by["cycles"] <= row["bound.cycles"] and by["area_mm2"] <= row["bound.area_mm2"]


def test_front_points_are_the_feasible_complete_trials_on_the_front():
    study = optuna.create_study(directions=["minimize", "minimize"])
    for values, feasible in (([1, 5], True), ([2, 2], True), ([3, 3], True), ([0, 0], False)):
        trial = study.ask()
        trial.set_user_attr("result", {"feasible": feasible})
        study.tell(trial, values)
    assert [n for n, _ in front_points(study, ["minimize", "minimize"])] == [0, 1]


def test_explore_with_two_workers_shares_the_trials_between_both_processes(tmp_path):
    """How many trials each process gets depends on the machine's load; together they run each once."""
    from solvermap.search.explore import explore

    path = write_study(tmp_path / "toy.yaml", budget={"n_trials": 10},
                       workloads=[{"name": "tasks", "params": {"n": 6, "hold_s": 1.0}}])
    sdir, results, report = explore(path, out=tmp_path / "run", progress=False, allow_imports=True, workers=2)
    helper = json.loads((sdir.path / "workers" / "worker-1.json").read_text())
    assert results.counts["finished"] == 10
    assert report.completed + helper["completed"] == 10
