"""Instruction descriptors are tiny tensor programs; the conv workloads match Table I and the reference."""

from __future__ import annotations

import numpy as np
import pytest

from solvermap.errors import InputError
from solvermap.hardware.cpu.instructions import (
    ARM_SDOT,
    DESCRIPTORS,
    TENSORCORE_WMMA,
    VNNI_VPDPBUSD,
    descriptor,
    make_descriptor,
)
from solvermap.hardware.targets import load_target
from solvermap.ir.loopnest import Tensor, evaluate
from solvermap.ir.workloads import build
from solvermap.ir.workloads.cpu_conv import RESNET18, TABLE_I, TABLE_I_OHW, conv2d_inputs, conv2d_reference

from .conftest import TABLE_I_NAMES, reduced_params


def test_vnni_descriptor_is_vpdpbusd_semantics():
    rng = np.random.default_rng(1)
    a = rng.integers(0, 256, 64).astype(np.uint8)
    b = rng.integers(-128, 128, 64).astype(np.int8)
    got = evaluate(VNNI_VPDPBUSD.program, {"a": a, "b": b})["c"]
    want = (a.astype(np.int32) * b.astype(np.int32)).reshape(16, 4).sum(axis=1)
    assert np.array_equal(got, want)


def test_descriptor_shapes_and_annotations_follow_the_seed():
    assert [(l.var, l.extent, l.kind) for l in VNNI_VPDPBUSD.statement.loops] == [
        ("i", 16, "data_parallel"), ("j", 4, "reduction")]
    assert [VNNI_VPDPBUSD.program.tensor(t).dtype for t in ("a", "b", "c")] == ["uint8", "int8", "int32"]
    assert [ARM_SDOT.program.tensor(t).dtype for t in ("a", "b", "c")] == ["int8", "int8", "int32"]
    assert ARM_SDOT.macs == 16 and VNNI_VPDPBUSD.macs == 64
    assert TENSORCORE_WMMA.macs == 16 ** 3 and TENSORCORE_WMMA.statement.accumulate
    assert VNNI_VPDPBUSD.lane_strides("a") == {"i": 4, "j": 1}


def test_descriptor_must_accumulate():
    with pytest.raises(InputError, match="accumulates"):
        from solvermap.hardware.cpu.instructions import InstructionDescriptor
        from solvermap.ir.loopnest import Program, statement

        stmt = statement("x", [("i", 0, 4)], "c[i]", "a[i]", dtype="int32")
        InstructionDescriptor("x", Program("x", {"a": Tensor("a", (4,), "int32", "input"),
                                                 "c": Tensor("c", (4,), "int32", "output")}, [stmt]), "none").validate()


def test_unknown_instruction_is_an_input_error():
    with pytest.raises(InputError, match="unknown instruction"):
        descriptor("vnni_nope")
    assert set(DESCRIPTORS) >= {"vnni_vpdpbusd", "arm_sdot", "tensorcore_wmma_16x16x16"}


def test_presets_load_with_their_instruction():
    for name in ("x86-vnni", "arm-dot", "tensorcore"):
        spec = load_target(name)
        assert spec.family == "cpu" and spec.instruction in DESCRIPTORS and spec.assumptions


def test_table_i_layers_have_the_seed_output_sizes():
    for name, row, ohw in zip(TABLE_I_NAMES, TABLE_I, TABLE_I_OHW):
        program = build(name, "cpu").ir
        C, IHW, K, R, stride = row
        assert program.tensor("out").shape == (K, ohw, ohw)
        assert program.tensor("data").shape == (C, IHW, IHW)


def test_resnet18_layers_are_registered():
    for k in range(1, len(RESNET18) + 1):
        assert build(f"resnet18_conv{k}", "cpu").ir.attrs["conv2d"]["OHW"] in (112, 56, 28, 14, 7)


def test_fast_reference_equals_golden_executor_on_reduced_layers():
    for name in ("conv_table1_1", "conv_table1_3", "conv_table1_15"):
        program = build(name, "cpu", reduced_params(name)).ir
        inputs = conv2d_inputs(program)
        golden = evaluate(program, inputs)["out"]
        assert np.array_equal(conv2d_reference(inputs["data"], inputs["weight"], program.attrs["conv2d"]["stride"]), golden)


def test_bad_workload_parameter_names_the_field():
    with pytest.raises(InputError, match="workload.C"):
        build("conv2d", "cpu", {"C": 0})


def test_a_new_instruction_is_a_descriptor_only():
    ymm = make_descriptor(
        "vnni_vpdpbusd_ymm", "x86-avx512-vnni-vl",
        [Tensor("a", (32,), "uint8", "input"), Tensor("b", (32,), "int8", "input"), Tensor("c", (8,), "int32", "output")],
        [("i", 0, 8, "data_parallel"), ("j", 0, 4, "reduction")],
        "c[i]", "int32(a[4*i + j]) * int32(b[4*i + j])", "int32")
    assert ymm.macs == 32 and ymm.sources == ["a", "b"] and ymm.accumulator == "c"
