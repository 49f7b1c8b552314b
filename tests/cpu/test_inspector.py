"""The inspector: Algorithm 1 binding, and each not-applicable case carries its rule and reason."""

from __future__ import annotations

import pytest

from solvermap.errors import InputError
from solvermap.hardware.cpu.instructions import ARM_SDOT, TENSORCORE_WMMA, VNNI_VPDPBUSD
from solvermap.ir.loopnest import Program, Tensor, statement
from solvermap.ir.workloads import build
from solvermap.mappers.cpu.inspector import inspect


def _program(expr: str, loops, write: str, tensors, accumulate=True, dtype="int32") -> Program:
    stmt = statement("s", loops, write, expr, dtype=dtype, accumulate=accumulate)
    return Program("p", {t.name: t for t in tensors}, [stmt]).validate()


def _matmul(a_dtype="uint8", b_dtype="int8", M=16, N=32, K=8, expr="int32(A[m, k]) * int32(B[n, k])", accumulate=True):
    return _program(expr, [("m", 0, M), ("n", 0, N), ("k", 0, K, "reduction")], "C[m, n]",
                    [Tensor("A", (M, K), a_dtype, "input"), Tensor("B", (N, K), b_dtype, "input"),
                     Tensor("C", (M, N), "int32", "output")], accumulate=accumulate)


def test_algorithm1_binds_each_register_to_one_array():
    verdict = inspect(build("conv_table1_3", "cpu").ir, VNNI_VPDPBUSD)
    assert verdict.applicable
    assert verdict.binding == {"a": "data", "b": "weight", "c": "out"}
    assert {(p.instr_operand, p.program_tensor) for p in verdict.problem.operands} == {
        ("a", "data"), ("b", "weight"), ("c", "out")}


def test_dtype_mismatch_is_rejected_with_its_reason():
    verdict = inspect(build("conv2d", "cpu", {"data_dtype": "int8"}).ir, VNNI_VPDPBUSD)
    assert not verdict.applicable and verdict.rule == "dtype-mismatch"
    assert "uint8" in verdict.reason and "int8" in verdict.reason


def test_the_same_int8_program_is_applicable_to_arm_sdot():
    assert inspect(build("conv2d", "cpu", {"data_dtype": "int8"}).ir, ARM_SDOT).applicable
    assert inspect(build("conv2d", "cpu").ir, ARM_SDOT).rule == "dtype-mismatch"


def test_tensor_core_rejects_an_int8_convolution_by_dtype():
    assert inspect(build("conv2d", "cpu").ir, TENSORCORE_WMMA).rule == "dtype-mismatch"


def test_assignment_without_reduction_is_wrong_reduction_structure():
    verdict = inspect(_matmul(accumulate=False), VNNI_VPDPBUSD)
    assert verdict.rule == "reduction-structure" and "assigns" in verdict.reason


def test_missing_reduction_loop_is_wrong_reduction_structure():
    program = _program("int32(A[m, n]) * int32(B[m, n])", [("m", 0, 16), ("n", 0, 8)], "C[m, n]",
                       [Tensor("A", (16, 8), "uint8", "input"), Tensor("B", (16, 8), "int8", "input"),
                        Tensor("C", (16, 8), "int32", "output")])
    verdict = inspect(program, VNNI_VPDPBUSD)
    assert verdict.rule == "reduction-structure" and "reduction loop" in verdict.reason


def test_reduction_loop_indexing_the_output_is_wrong_reduction_structure():
    program = _program("int32(A[m, k]) * int32(B[m, k])", [("m", 0, 16), ("k", 0, 8, "reduction")], "C[m, k]",
                       [Tensor("A", (16, 8), "uint8", "input"), Tensor("B", (16, 8), "int8", "input"),
                        Tensor("C", (16, 8), "int32", "output")])
    assert inspect(program, VNNI_VPDPBUSD).rule == "reduction-structure"


def test_max_reduction_is_a_compute_mismatch():
    program = _matmul(expr="max(int32(A[m, k]), int32(B[n, k]))")
    verdict = inspect(program, VNNI_VPDPBUSD)
    assert verdict.rule == "compute-mismatch" and "max" in verdict.reason


def test_one_register_cannot_hold_two_arrays():
    program = _program("int32(A[m, k]) * int32(A[n, k])", [("m", 0, 16), ("n", 0, 16), ("k", 0, 8, "reduction")],
                       "C[m, n]", [Tensor("A", (16, 8), "int8", "input"), Tensor("C", (16, 16), "int32", "output")])
    assert inspect(program, ARM_SDOT).applicable  # a and b may both read A
    sdot_same = _program("int32(A[m, k]) * int32(B[m, k])", [("m", 0, 16), ("k", 0, 8, "reduction")], "C[m]",
                         [Tensor("A", (16, 8), "int8", "input"), Tensor("B", (16, 8), "int8", "input"),
                          Tensor("C", (16,), "int32", "output")])
    assert inspect(sdot_same, ARM_SDOT).applicable


def test_indivisible_extent_without_padding_is_rejected():
    program = build("resnet18_conv1", "cpu").ir  # C = 3, R = S = 7: no reduction loop divisible by 4
    verdict = inspect(program, VNNI_VPDPBUSD, allow_padding=False)
    assert verdict.rule == "indivisible-extent"
    assert "padding is disabled" in verdict.reason and "c extent 3" in verdict.reason
    assert inspect(program, VNNI_VPDPBUSD, allow_padding=True).applicable


def test_no_access_mapping_when_every_lane_needs_several_addresses():
    # A[m, n + k] is indexed by both data-parallel loops, but the Tensor Core's A register only by i:
    # whichever of m, n feeds lane n of C also moves A's address (S'(u) ⊄ S(v)).
    program = _program("float32(A[m, n + k]) * float32(B[k, n])",
                       [("m", 0, 16), ("n", 0, 16), ("k", 0, 16, "reduction")], "C[m, n]",
                       [Tensor("A", (16, 31), "float16", "input"), Tensor("B", (16, 16), "float16", "input"),
                        Tensor("C", (16, 16), "float32", "output")], dtype="float32")
    verdict = inspect(program, TENSORCORE_WMMA)
    assert verdict.rule == "no-access-mapping" and "S'(u)" in verdict.reason


def test_accumulator_lanes_must_write_distinct_elements():
    program = _program("float32(A[m, k]) * float32(B[k, n])", [("m", 0, 16), ("n", 0, 16), ("k", 0, 16, "reduction")],
                       "C[m + n, 0]", [Tensor("A", (16, 16), "float16", "input"),
                                       Tensor("B", (16, 16), "float16", "input"),
                                       Tensor("C", (31, 1), "float32", "output")], dtype="float32")
    verdict = inspect(program, TENSORCORE_WMMA)
    assert verdict.rule == "no-access-mapping" and "share a dim" in verdict.reason


def test_broadcast_operand_is_applicable():
    program = _program("int32(A[k]) * int32(B[k])", [("m", 0, 16), ("k", 0, 8, "reduction")], "C[m]",
                       [Tensor("A", (8,), "uint8", "input"), Tensor("B", (8,), "int8", "input"),
                        Tensor("C", (16,), "int32", "output")])
    assert inspect(program, VNNI_VPDPBUSD).applicable  # m → i: both sources broadcast along i


def test_commutative_extension_is_off_by_default():
    program = _matmul(expr="int32(B[n, k]) * int32(A[m, k])")
    assert inspect(program, VNNI_VPDPBUSD).rule == "dtype-mismatch"
    verdict = inspect(program, VNNI_VPDPBUSD, commutative=True)
    assert verdict.applicable and verdict.binding["a"] == "A"


def test_not_applicable_raises_a_one_line_input_error():
    verdict = inspect(build("conv2d", "cpu", {"data_dtype": "int8"}).ir, VNNI_VPDPBUSD)
    with pytest.raises(InputError, match=r"not applicable \(dtype-mismatch\)"):
        verdict.raise_if_not("workload conv2d")
