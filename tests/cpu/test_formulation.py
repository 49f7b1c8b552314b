"""The loop-mapping model: every backend reaches the optimum known by enumeration; CP-SAT enumerates
exactly the feasible mappings; infeasibility names the constraint groups."""

from __future__ import annotations

import pytest

from solvermap.formulations import tensorize as model
from solvermap.formulations.problems.tensorize import objective
from solvermap.formulations.solver import SolverConfig, Status
from solvermap.hardware.cpu.instructions import ARM_SDOT, TENSORCORE_WMMA, VNNI_VPDPBUSD
from solvermap.ir.loopnest import Program, Tensor, statement
from solvermap.mappers.cpu.inspector import inspect
from tests.backends import PYOMO, milp_backends

from .conftest import problem_for, reduced_params


def _tc_problem():
    stmt = statement("mm", [("m", 0, 20), ("n", 0, 32), ("k", 0, 24, "reduction")], "C[m, n]",
                     "float32(A[m, k]) * float32(B[k, n])", dtype="float32", accumulate=True)
    program = Program("mm", {"A": Tensor("A", (20, 24), "float16", "input"), "B": Tensor("B", (24, 32), "float16", "input"),
                             "C": Tensor("C", (20, 32), "float32", "output")}, [stmt]).validate()
    return inspect(program, TENSORCORE_WMMA).problem


def _instances():
    return [
        problem_for("conv_table1_1", reduced_params("conv_table1_1")),
        problem_for("conv_table1_3"),
        problem_for("resnet18_conv1", {"K": 16, "IHW": 15}),
        problem_for("conv2d", {"C": 6, "K": 20, "IHW": 9, "data_dtype": "int8"}, instruction=ARM_SDOT),
        _tc_problem(),
    ]


def _brute_optimum(problem):
    return min(objective(problem, d) for d in model.brute_force(problem))


@pytest.mark.parametrize("backend", milp_backends("cpsat", "highs", "scip", "cbc", *PYOMO))
def test_every_milp_backend_reaches_the_enumerated_optimum(backend):
    for problem in _instances():
        solved = model.solve(problem, SolverConfig(backend=backend, time_limit_s=20))
        assert solved.result.status == Status.OPTIMAL, (backend, problem.workload)
        assert solved.result.objective == pytest.approx(_brute_optimum(problem))
        assert objective(problem, solved.decision) == pytest.approx(solved.result.objective)


def test_native_cpsat_model_agrees_with_the_milp():
    for problem in _instances():
        native = model.solve_native(problem, SolverConfig(time_limit_s=20))
        assert native.result.status == Status.OPTIMAL
        assert native.result.objective == pytest.approx(_brute_optimum(problem))


def test_cpsat_enumerates_exactly_the_feasible_mappings():
    for problem in _instances():
        enumerated = {d.loop_map for d in model.enumerate_mappings(problem, SolverConfig(time_limit_s=20))}
        assert enumerated == {d.loop_map for d in model.brute_force(problem)}


def test_conv_has_nine_feasible_vnni_mappings_best_is_k_and_c():
    problem = problem_for("conv_table1_3")
    mappings = model.enumerate_mappings(problem)
    assert len(mappings) == 9  # i ∈ {k, y, x} × j ∈ {c, r, s}
    assert dict(mappings[0].loop_map) == {"i": "k", "j": "c"}


def test_padding_cost_picks_the_cheapest_padded_reduction_loop():
    problem = problem_for("resnet18_conv1")  # C=3 → 4 costs 33 %, S=7 → 8 costs 14 %
    solved = model.solve(problem, SolverConfig(time_limit_s=20))
    assert dict(solved.decision.loop_map)["j"] in ("s", "r")
    assert dict(solved.decision.padded)[dict(solved.decision.loop_map)["j"]] == 8


def test_infeasible_model_names_the_conflicting_groups():
    problem = problem_for("resnet18_conv1", {"K": 16, "IHW": 15})
    strict = type(problem)(**{**problem.__dict__, "allow_padding": False})
    solved = model.solve(strict, SolverConfig(time_limit_s=20))
    assert solved.result.status == Status.INFEASIBLE
    assert "divisibility" in solved.explanation and "cover" in solved.explanation
    assert model.diagnose(strict).startswith("indivisible-extent")


def test_warm_start_hint_is_accepted():
    problem = problem_for("conv_table1_3")
    hint = model.enumerate_mappings(problem)[-1]
    solved = model.solve(problem, SolverConfig(time_limit_s=20), hint)
    assert solved.result.objective == pytest.approx(_brute_optimum(problem))


def _sliding(b_index: str) -> Program:
    stmt = statement("s", [("k", 0, 16), ("c", 0, 5, "reduction")], "out[k]", f"int32(A[k + c]) * int32({b_index})",
                     dtype="int32", accumulate=True)
    return Program("p", {"A": Tensor("A", (20,), "uint8", "input"), "B": Tensor("B", (20,), "int8", "input"),
                         "out": Tensor("out", (16,), "int32", "output")}, [stmt]).validate()


def test_padding_a_reduction_loop_needs_a_source_that_isolates_it():
    safe = inspect(_sliding("B[c]"), VNNI_VPDPBUSD)  # padded c reads B's zero padding
    assert safe.applicable
    assert dict(model.solve(safe.problem, SolverConfig(time_limit_s=20)).decision.padded) == {"k": 16, "c": 8}
    unsafe = inspect(_sliding("B[k + c]"), VNNI_VPDPBUSD)  # padded c would read real A and B elements
    assert unsafe.rule == "indivisible-extent" and "would touch real data" in unsafe.reason
