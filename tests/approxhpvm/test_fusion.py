"""Fusion MILP: backends agree with enumeration; the checker catches every broken rule."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from solvermap.formulations import fusion
from solvermap.formulations.problems.fusion import GPU, PROMISE, FusionDecision, FusionEdge, FusionOp, FusionProblem, objective
from solvermap.hardware.checks.fusion import check
from solvermap.mappers.approxhpvm.baselines import gpu_unfused, seed_promise_patterns
from solvermap.mappers.approxhpvm.problems import fusion_problem

from .conftest import MILP_BACKENDS, config


def _partitions(items):
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for part in _partitions(rest):
        yield [[first]] + part
        for i in range(len(part)):
            yield part[:i] + [[first] + part[i]] + part[i + 1:]


def enumerate_optimum(problem: FusionProblem) -> float:
    best = float("inf")
    per_layer = []
    for layer in problem.parents:
        names = [op.name for op in problem.members(layer)]
        options = [({layer: GPU}, [tuple(g) for g in p]) for p in _partitions(names)]
        if problem.promise_eligible.get(layer):
            options.append(({layer: PROMISE}, [tuple(names)]))
        per_layer.append(options)
    order = {op.name: i for i, op in enumerate(problem.ops)}
    for combo in itertools.product(*per_layer):
        device, groups = {}, []
        for d, g in combo:
            device.update(d)
            groups += [tuple(sorted(x, key=order.get)) for x in g]
        decision = FusionDecision(device, tuple(groups))
        if check(problem, decision).ok:
            best = min(best, objective(problem, decision))
    return best


def synthetic() -> FusionProblem:
    """Two layers: 'a' (4 ops, one all-to-all edge, one op with another replication grid), 'b' (3 ops)."""
    ops = (FusionOp("a1", "A", "gemm"), FusionOp("a2", "A", "add"), FusionOp("a3", "A", "tanh"),
           FusionOp("a4", "A", "pool", (2,)), FusionOp("b1", "B", "gemm"), FusionOp("b2", "B", "add"),
           FusionOp("b3", "B", "tanh"))
    edges = (FusionEdge("a1", "a2"), FusionEdge("a2", "a3", "all_to_all"), FusionEdge("a1", "a3"), FusionEdge("a3", "a4"),
             FusionEdge("a4", "b1"), FusionEdge("b1", "b2"), FusionEdge("b2", "b3"))
    cross = {("a4", "b1"): {(GPU, GPU): 3.0, (GPU, PROMISE): 2.0, (PROMISE, GPU): 2.5, (PROMISE, PROMISE): 1.0}}
    transfer = {(e.src, e.dst): 2.0 + i for i, e in enumerate(edges) if (e.src, e.dst) not in cross}
    return FusionProblem(ops, edges, {"A": False, "B": True}, {o.name: 1.0 for o in ops}, {"B": 4.5}, 1.5,
                         transfer, cross, {"a1": {GPU: 1.0, PROMISE: 2.0}, "b3": {GPU: 0.5, PROMISE: 1.5}},
                         max_group_ops=2)


@pytest.mark.parametrize("backend", MILP_BACKENDS)
def test_fusion_milp_reaches_the_enumerated_optimum(backend):
    problem = synthetic()
    solved = fusion.solve(problem, config(backend))
    assert check(problem, solved.decision).ok
    assert solved.result.objective == pytest.approx(enumerate_optimum(problem), rel=1e-6)


@pytest.fixture(scope="module")
def lenet_fusion(lenet, spec):
    """LeNet's fusion problem and its enumerated optimum, enumerated once for all backends."""
    problem = fusion_problem(lenet, spec)
    return problem, enumerate_optimum(problem)


@pytest.mark.parametrize("backend", MILP_BACKENDS)
def test_fusion_on_lenet_agrees_across_backends_and_beats_seed_rules(lenet_fusion, backend):
    problem, optimum = lenet_fusion
    solved = fusion.solve(problem, config(backend))
    assert check(problem, solved.decision).ok
    assert solved.result.objective == pytest.approx(optimum, rel=1e-6)
    assert solved.result.objective <= objective(problem, seed_promise_patterns(problem)) + 1e-12
    assert solved.decision.device["conv1"] == GPU  # 9-element dot products cannot run on PROMISE (L1248)


def _valid():
    problem = synthetic()
    return problem, fusion.solve(problem, config()).decision


def test_checker_flags_partition():
    problem, d = _valid()
    assert "partition" in check(problem, replace(d, groups=d.groups[1:])).rules()


def test_checker_flags_same_parent():
    problem, _ = _valid()
    d = FusionDecision({"A": GPU, "B": GPU}, (("a1",), ("a2",), ("a3",), ("a4", "b1"), ("b2",), ("b3",)))
    assert "same-parent" in check(problem, d).rules()


def test_checker_flags_same_dimensions():
    problem, _ = _valid()
    d = FusionDecision({"A": GPU, "B": GPU}, (("a1",), ("a2",), ("a3", "a4"), ("b1",), ("b2",), ("b3",)))
    assert "same-dimensions" in check(problem, d).rules()


def test_checker_flags_one_to_one():
    problem, _ = _valid()
    d = FusionDecision({"A": GPU, "B": GPU}, (("a1",), ("a2", "a3"), ("a4",), ("b1",), ("b2",), ("b3",)))
    assert "one-to-one" in check(problem, d).rules()


def test_checker_flags_convexity():
    problem, _ = _valid()
    d = FusionDecision({"A": GPU, "B": GPU}, (("a1", "a3"), ("a2",), ("a4",), ("b1",), ("b2",), ("b3",)))
    assert "convexity" in check(problem, d).rules()


def test_checker_flags_promise_pattern_and_eligibility():
    problem, _ = _valid()
    d = FusionDecision({"A": PROMISE, "B": PROMISE}, (("a1",), ("a2",), ("a3",), ("a4",), ("b1", "b2"), ("b3",)))
    rules = check(problem, d).rules()
    assert {"promise-pattern", "promise-eligibility"} <= rules


def test_checker_flags_gpu_capacity():
    problem, _ = _valid()
    d = FusionDecision({"A": GPU, "B": GPU}, (("a1",), ("a2",), ("a3",), ("a4",), ("b1", "b2", "b3")))
    assert "gpu-capacity" in check(problem, d).rules()


def test_seed_baselines_pass_the_checker(lenet_fusion):
    problem, _ = lenet_fusion
    assert check(problem, seed_promise_patterns(problem)).ok and check(problem, gpu_unfused(problem)).ok
