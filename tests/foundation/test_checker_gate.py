"""Checkers gate: a solver decision that fails its check never goes downstream; --strict makes that exit 3."""

from __future__ import annotations

import json

import pytest

from solvermap.errors import InfeasibleError
from solvermap.formulations.decision import Solved
from solvermap.formulations.solver import SolverConfig, SolveResult, Status
from solvermap.hardware.targets import load_target
from solvermap.ir.workloads import build

from . import toy_family
from .test_cli import run_cli


@pytest.fixture()
def toy_target(tmp_path):
    path = tmp_path / "toy.yaml"
    path.write_text("name: toy\nfamily: toy\ncapacity: 10\n")
    return str(path)


@pytest.fixture()
def invalid_solver(monkeypatch):
    """The knapsack 'solver' takes every item: value 33, weight 22 > capacity 10 — better than any valid answer."""
    def solve(cls, problem, config, hint=None):
        everything = frozenset(range(len(problem.items.weights)))
        return Solved(SolveResult(Status.OPTIMAL, 33.0, 33.0, 0.0, backend="fake"), everything)

    monkeypatch.setattr(toy_family.Knapsack, "solve", classmethod(solve))


def _greedy_value() -> float:
    problem = toy_family.Problem(toy_family.toy_items(6), 10)
    return toy_family.objective(problem, toy_family.greedy(problem))


def test_invalid_solver_decision_is_replaced_by_the_best_baseline_downstream(monkeypatch, capsys, tmp_path, toy_target,
                                                                             invalid_solver):
    code, out, err = run_cli(monkeypatch, capsys, "map", "-w", "toy_items", "-t", toy_target, "--json", "-q",
                             "--out", str(tmp_path / "run"))
    assert code == 0, err
    payload = json.loads(out)
    record = payload["decisions"][0]
    assert record["solution_source"] == "fallback:greedy-ratio"
    assert record["check"]["ok"] is False and record["check"]["violations"][0]["rule"] == "capacity"
    assert record["check_used"]["ok"] is True
    assert payload["validation"]["value"] == _greedy_value()  # the pipeline's validation saw the baseline


def test_strict_turns_a_fallback_into_exit_code_3_after_writing_the_records(monkeypatch, capsys, tmp_path, toy_target,
                                                                           invalid_solver):
    run = tmp_path / "run"
    code, out, err = run_cli(monkeypatch, capsys, "solve", "select", "-w", "toy_items", "-t", toy_target, "--json", "-q",
                             "--strict", "--out", str(run))
    assert code == 3
    assert "--strict: select used greedy-ratio" in err and "capacity" in err
    assert json.loads(out)["solution_source"] == "fallback:greedy-ratio"
    assert json.loads((run / "records.json").read_text())["solution_source"] == "fallback:greedy-ratio"


def test_strict_without_a_fallback_exits_0(monkeypatch, capsys, tmp_path, toy_target):
    code, _, err = run_cli(monkeypatch, capsys, "solve", "select", "-w", "toy_items", "-t", toy_target, "-q",
                           "--strict", "--out", str(tmp_path / "run"))
    assert code == 0, err


def test_a_real_partition_that_fails_its_check_never_reaches_merge(monkeypatch):
    """Plasticine: the partition model forced to put every item in one bin (over capacity, but one bin beats
    every baseline); merge then packs the VBs of the best traversal partition."""
    from solvermap.formulations import partition
    from solvermap.formulations.problems.partition import PartitionDecision
    from solvermap.mappers.pipeline import Context
    from solvermap.mappers.plasticine import PIPELINE, decomposition, lowering

    real = partition.solve

    def one_bin(problem, config, hint=None, **options):
        if problem.name.startswith("merge"):
            return real(problem, config, hint, **options)
        decision = PartitionDecision({n: 0 for n in problem.item_names}, {0: problem.bin_types[0].name})
        return Solved(SolveResult(Status.OPTIMAL, 1.0, 1.0, 0.0, backend="fake"), decision)

    monkeypatch.setattr(partition, "solve", one_bin)
    workload, spec = build("dotproduct", "plasticine"), load_target("plasticine")
    ctx = Context(workload=workload, target=spec, solver=SolverConfig(time_limit_s=10))
    part, merge = PIPELINE.run(ctx, upto="merge").records
    assert part.solution_source == f"fallback:{part.baseline.name}" and not part.check.ok
    assert ctx.state["partition"] == part.baseline.decision
    graph, _ = decomposition.decompose(workload.ir, spec)
    expected = lowering.merge_problem(lowering.vb_graph(graph, spec, part.baseline.decision), spec)
    assert merge.check.ok and [i.name for i in ctx.state["merge.problem"].items] == [i.name for i in expected.items]


def test_no_valid_baseline_and_an_invalid_solver_answer_is_an_infeasible_error(monkeypatch):
    from solvermap.mappers.pipeline import Baseline, Context, Decision, DecisionOptions, run_decision

    decision = Decision("pick", "", "milp", toy_family.Problem, frozenset, DecisionOptions,
                        lambda p, c, h, o: Solved(SolveResult(Status.OPTIMAL, 33.0), frozenset(range(6))),
                        toy_family.objective, toy_family.check, ("tests.foundation.toy_family",), sense="max",
                        baselines=(Baseline("none-fit", lambda p: frozenset(range(6))),))
    ctx = Context(workload=build("toy_items", "toy"), target=load_target("plasticine"), solver=SolverConfig())
    with pytest.raises(InfeasibleError, match="pick: the solver's decision fails its check"):
        run_decision(ctx, decision, toy_family.Problem(toy_family.toy_items(6), 10))
