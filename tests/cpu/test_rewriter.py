"""The rewriter: tiled, reordered, padded and packed nests are bit-exact against the NumPy reference,
run by the golden executor and instruction by instruction through the descriptor (emulator)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solvermap.formulations import tensorize as model
from solvermap.formulations.problems.tensorize import mapping_from_pairs, padded_macs
from solvermap.formulations.solver import SolverConfig
from solvermap.hardware.cpu.emulator import emulate
from solvermap.hardware.cpu.instructions import ARM_SDOT, TENSORCORE_WMMA, VNNI_VPDPBUSD
from solvermap.ir.loopnest import Program, Tensor, evaluate, random_inputs, statement
from solvermap.ir.workloads.cpu_conv import conv2d_inputs, conv2d_reference
from solvermap.mappers.cpu.inspector import inspect
from solvermap.mappers.cpu.rewriter import rewrite

from .conftest import TABLE_I_NAMES, problem_for, reduced_params


def _outputs(problem, decision, instruction=VNNI_VPDPBUSD, seed=0):
    nest = rewrite(problem, decision, instruction)
    inputs = conv2d_inputs(problem.program, seed)
    ref = conv2d_reference(inputs["data"], inputs["weight"], problem.program.attrs["conv2d"]["stride"])
    packed = nest.pack_inputs(inputs)
    layout = nest.accumulator.layout
    by_program = layout.unpack(evaluate(nest.program, packed)[layout.tensor])
    by_instruction = layout.unpack(emulate(nest, packed))
    return ref, by_program, by_instruction, nest


@pytest.mark.parametrize("name", TABLE_I_NAMES)
def test_rewritten_table1_layer_is_bit_exact(name):
    problem = problem_for(name, reduced_params(name))
    decision = model.solve(problem, SolverConfig(time_limit_s=10)).decision
    ref, by_program, by_instruction, _ = _outputs(problem, decision)
    assert np.array_equal(by_program, ref) and np.array_equal(by_instruction, ref)


def test_every_feasible_mapping_of_a_strided_layer_is_bit_exact():
    problem = problem_for("conv_table1_1", {"C": 6, "K": 20, "IHW": 9})  # stride 2, C and K need padding
    mappings = model.enumerate_mappings(problem)
    assert len(mappings) == 9
    for decision in mappings:
        ref, by_program, by_instruction, _ = _outputs(problem, decision)
        assert np.array_equal(by_program, ref) and np.array_equal(by_instruction, ref), decision.loop_map


def test_padded_first_resnet_layer_is_bit_exact():
    problem = problem_for("resnet18_conv1", {"K": 16, "IHW": 15})
    for j in ("c", "s"):
        ref, by_program, by_instruction, nest = _outputs(problem, mapping_from_pairs(problem, {"i": "k", "j": j}))
        assert np.array_equal(by_instruction, ref) and np.array_equal(by_program, ref)


def test_operand_preparation_of_the_vnni_convolution():
    problem = problem_for("conv_table1_3", {"C": 8, "K": 32})
    nest = rewrite(problem, mapping_from_pairs(problem, {"i": "k", "j": "c"}), VNNI_VPDPBUSD)
    ops = nest.operands
    # Fig. 5c: c → 16-lane vector, a vectorised along c by 4 and broadcast along k, b contiguous (k, c)
    assert (ops["c"].action, ops["a"].action, ops["b"].action) == ("contiguous", "broadcast", "contiguous")
    assert dict(ops["a"].lane_strides) == {"i": 0, "j": 1}
    assert dict(ops["b"].lane_strides) == {"i": 4, "j": 1}
    assert ops["b"].layout.shape[-2:] == (16, 4)  # KCRS[16]k[4]c
    assert ops["a"].layout.shape[-1] == 4  # NCHW[4]c


def test_strided_output_width_mapping_gathers_the_data():
    problem = problem_for("conv_table1_1", reduced_params("conv_table1_1"))  # stride 2
    nest = rewrite(problem, mapping_from_pairs(problem, {"i": "x", "j": "c"}), VNNI_VPDPBUSD)
    assert nest.operands["a"].action == "gather" and nest.operands["b"].action == "broadcast"
    assert dict(nest.operands["a"].lane_strides)["i"] == 8  # stride 2 × 4 packed channels


def test_arm_sdot_rewrite_is_bit_exact():
    problem = problem_for("conv2d", {"C": 6, "K": 10, "IHW": 7, "data_dtype": "int8"}, instruction=ARM_SDOT)
    decision = model.solve(problem, SolverConfig(time_limit_s=10)).decision
    ref, by_program, by_instruction, nest = _outputs(problem, decision, ARM_SDOT)
    assert np.array_equal(by_instruction, ref) and np.array_equal(by_program, ref)
    assert nest.calls * ARM_SDOT.macs == padded_macs(problem, decision)  # K 10 → 12, C 6 → 8


def test_tensor_core_rewrite_matches_within_fp32_rounding():
    stmt = statement("mm", [("m", 0, 20), ("n", 0, 24), ("k", 0, 40, "reduction")], "C[m, n]",
                     "float32(A[m, k]) * float32(B[k, n])", dtype="float32", accumulate=True)
    program = Program("mm", {"A": Tensor("A", (20, 40), "float16", "input"), "B": Tensor("B", (40, 24), "float16", "input"),
                             "C": Tensor("C", (20, 24), "float32", "output")}, [stmt]).validate()
    problem = inspect(program, TENSORCORE_WMMA).problem
    decision = model.solve(problem, SolverConfig(time_limit_s=10)).decision
    nest = rewrite(problem, decision, TENSORCORE_WMMA)
    inputs = random_inputs(program, 3)
    ref = evaluate(program, inputs)["C"]
    packed = nest.pack_inputs(inputs)
    got = nest.accumulator.layout.unpack(emulate(nest, packed))
    assert np.allclose(got, ref, rtol=1e-5, atol=1e-4)
    assert nest.calls == 2 * 2 * 3  # m 20→32, n 24→32, k 40→48


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 9), st.integers(1, 20), st.integers(1, 3), st.integers(1, 2), st.integers(0, 3))
def test_pack_then_unpack_is_the_identity(C, K, R, stride, extra):
    IHW = R + stride * extra
    problem = problem_for("conv2d", {"C": C, "K": K, "IHW": IHW, "R": R, "stride": stride})
    inputs = conv2d_inputs(problem.program, 7)
    for decision in model.enumerate_mappings(problem)[:3]:
        nest = rewrite(problem, decision, VNNI_VPDPBUSD)
        for name, array in inputs.items():
            layout = nest.layouts()[name]
            assert np.array_equal(layout.unpack(layout.pack(array)), array)
