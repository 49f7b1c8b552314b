"""The independent checker: valid decisions pass; each broken rule is reported by name (mutation tests);
on random mappings it agrees with the model's feasible set (property test)."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from solvermap.formulations import tensorize as model
from solvermap.formulations.problems.tensorize import mapping_from_pairs
from solvermap.hardware.checks.tensorize import check, check_rewrite
from solvermap.hardware.cpu.instructions import TENSORCORE_WMMA, VNNI_VPDPBUSD
from solvermap.hardware.cpu.nest import OuterLoop
from solvermap.ir.loopnest import Program, Tensor, statement
from solvermap.mappers.cpu.inspector import inspect
from solvermap.mappers.cpu.rewriter import rewrite

from .conftest import problem_for


def _conv():
    problem = problem_for("conv_table1_3", {"C": 8, "K": 32})
    return problem, mapping_from_pairs(problem, {"i": "k", "j": "c"})


def _matmul_tc():
    stmt = statement("mm", [("m", 0, 16), ("n", 0, 32), ("k", 0, 16, "reduction")], "C[m, n]",
                     "float32(A[m, k]) * float32(B[k, n])", dtype="float32", accumulate=True)
    program = Program("mm", {"A": Tensor("A", (16, 16), "float16", "input"), "B": Tensor("B", (16, 32), "float16", "input"),
                             "C": Tensor("C", (16, 32), "float32", "output")}, [stmt]).validate()
    problem = inspect(program, TENSORCORE_WMMA).problem
    return problem, mapping_from_pairs(problem, {"i": "m", "n": "n", "k": "k"})


def _rules(problem, decision) -> set[str]:
    return check(problem, decision).rules()


def test_valid_decisions_pass():
    for problem, decision in (_conv(), _matmul_tc()):
        assert check(problem, decision).ok


def test_wrong_instruction_is_reported():
    problem, d = _conv()
    assert "instruction" in _rules(problem, dataclasses.replace(d, instruction="arm_sdot"))


def test_swapped_binding_breaks_isomorphism():
    problem, d = _conv()
    swapped = tuple((r, {"data": "weight", "weight": "data"}.get(t, t)) for r, t in d.binding)
    assert "binding-isomorphic" in _rules(problem, dataclasses.replace(d, binding=swapped))


def test_missing_or_misbound_register_is_reported():
    problem, d = _conv()
    assert "binding-one-source" in _rules(problem, dataclasses.replace(d, binding=tuple(p for p in d.binding if p[0] != "b")))
    wrong_acc = tuple((r, "data" if r == "c" else t) for r, t in d.binding)
    assert "binding-one-source" in _rules(problem, dataclasses.replace(d, binding=wrong_acc))
    twice = d.binding + (("a", "weight"),)
    assert "binding-one-source" in _rules(problem, dataclasses.replace(d, binding=twice))


def test_non_accumulating_statement_breaks_the_reduction_rule():
    problem, d = _conv()
    assigning = dataclasses.replace(problem, statement=dataclasses.replace(problem.statement, accumulate=False))
    assert "reduction" in _rules(assigning, d)


def test_uncovered_unknown_and_doubly_mapped_loops_are_reported():
    problem, d = _conv()
    assert "loop-cover" in _rules(problem, dataclasses.replace(d, loop_map=(("i", "k"),)))
    assert "loop-unknown" in _rules(problem, dataclasses.replace(d, loop_map=(("i", "k"), ("j", "zz"))))
    assert "loop-injective" in _rules(problem, dataclasses.replace(d, loop_map=(("i", "k"), ("j", "k"))))


def test_mismatched_annotation_is_reported():
    problem, d = _conv()
    assert "annotation" in _rules(problem, dataclasses.replace(d, loop_map=(("i", "k"), ("j", "x")), padded=(("k", 32), ("x", 8))))


def test_access_outside_the_register_lanes_breaks_the_subset_rule():
    problem, _ = _matmul_tc()
    swapped = mapping_from_pairs(problem, {"i": "n", "n": "m", "k": "k"})
    assert list(model.brute_force(problem))  # the problem is feasible ...
    assert "access-subset" in _rules(problem, swapped)  # ... but not under this mapping


def test_two_lanes_writing_one_element_are_reported():
    problem, d = _matmul_tc()
    collapsed = dataclasses.replace(problem.statement, write=dataclasses.replace(
        problem.statement.write, coeffs=((1, 1, 0), (0, 0, 0))))
    assert "accumulator-lanes" in _rules(dataclasses.replace(problem, statement=collapsed), d)


def test_wrong_padded_extent_is_reported():
    problem, d = _conv()
    assert "padded-extent" in _rules(problem, dataclasses.replace(d, padded=(("k", 48), ("c", 8))))
    assert "padded-extent" in _rules(problem, dataclasses.replace(d, padded=d.padded + (("x", 16),)))


def test_padding_when_disabled_breaks_divisibility():
    problem = problem_for("resnet18_conv1", {"K": 16, "IHW": 15})
    padded = mapping_from_pairs(problem, {"i": "k", "j": "c"})
    strict = dataclasses.replace(problem, allow_padding=False)
    assert "divisibility" in _rules(strict, padded)
    assert check(problem, padded).ok


def test_padding_a_loop_no_source_isolates_is_reported():
    stmt = statement("s", [("k", 0, 16), ("c", 0, 5, "reduction")], "out[k]", "int32(A[k + c]) * int32(B[c])",
                     dtype="int32", accumulate=True)
    program = Program("p", {"A": Tensor("A", (20,), "uint8", "input"), "B": Tensor("B", (20,), "int8", "input"),
                            "out": Tensor("out", (16,), "int32", "output")}, [stmt]).validate()
    problem = inspect(program, VNNI_VPDPBUSD).problem
    decision = mapping_from_pairs(problem, {"i": "k", "j": "c"})
    assert check(problem, decision).ok
    unsafe = statement("s", [("k", 0, 16), ("c", 0, 5, "reduction")], "out[k]", "int32(A[k + c]) * int32(B[k + c])",
                       dtype="int32", accumulate=True)
    assert "padding-safety" in _rules(dataclasses.replace(problem, statement=unsafe), decision)


def test_rewrite_mutations_are_reported():
    problem, d = _conv()
    nest = rewrite(problem, d, VNNI_VPDPBUSD)
    assert check_rewrite(problem, d, nest).ok
    bad_tile = dataclasses.replace(nest, outer=tuple(OuterLoop(l.var, l.extent + 1, l.kind, l.source)
                                                     if l.source == "k" else l for l in nest.outer))
    assert {"rewrite-tiles", "rewrite-coverage"} <= check_rewrite(problem, d, bad_tile).rules()
    stmt = nest.program.statements[0]
    swapped = dataclasses.replace(stmt, loops=stmt.loops[:-2] + (stmt.loops[-1], stmt.loops[-2]))
    program = Program(nest.program.name, nest.program.tensors, [swapped])
    assert "rewrite-innermost" in check_rewrite(problem, d, dataclasses.replace(nest, program=program)).rules()
    acc = nest.accumulator
    shifted = dict(nest.operands)
    shifted[acc.operand] = dataclasses.replace(acc, base_const=acc.layout.size)
    assert "rewrite-operand-bounds" in check_rewrite(problem, d, dataclasses.replace(nest, operands=shifted)).rules()


NAMES = ["k", "y", "x", "c", "r", "s"]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(NAMES), st.sampled_from(NAMES))
def test_checker_accepts_exactly_the_feasible_mappings(i_loop, j_loop):
    problem = problem_for("conv_table1_1", {"C": 6, "K": 24, "IHW": 9})
    feasible = {d.loop_map for d in model.brute_force(problem)}
    decision = mapping_from_pairs(problem, {"i": i_loop, "j": j_loop})
    assert check(problem, decision).ok == (decision.loop_map in feasible)
