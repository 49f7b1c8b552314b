"""Instruction descriptors are tiny tensor programs; the conv workloads match Table I and the reference."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

from solvermap.errors import InputError
from solvermap.hardware.cpu import X86_TARGETS, best_x86_target
from solvermap.hardware.cpu.toolchain import cpu_flags
from solvermap.hardware.cpu.emulator import execute_instruction
from solvermap.hardware.cpu.instructions import (
    ARM_SDOT,
    AVX2_VPMADDUBSW,
    AVX2_VPMADDWD,
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


def test_seven_bit_descriptor_saturates_pair_sums_like_vpmaddubsw():
    rng = np.random.default_rng(2)
    a = rng.integers(0, 256, (50, 32)).astype(np.uint8)
    b = rng.integers(-128, 128, (50, 32)).astype(np.int8)
    products = a.astype(np.int64) * b
    pairs = np.clip(products.reshape(50, 16, 2).sum(-1), -32768, 32767)  # vpmaddubsw
    want = pairs.reshape(50, 8, 2).sum(-1)  # vpmaddwd by ones
    got = execute_instruction(AVX2_VPMADDUBSW, {"a": a, "b": b}, 50)
    assert np.array_equal(got, want) and not np.array_equal(got, products.reshape(50, 8, 4).sum(-1))
    seven = a // 2  # below 128: no pair sum reaches 2 * 127 * 128 = 32,512
    assert np.array_equal(execute_instruction(AVX2_VPMADDUBSW, {"a": seven, "b": b}, 50),
                          (seven.astype(np.int64) * b).reshape(50, 8, 4).sum(-1))


def test_exact_avx2_descriptor_is_a_dot_product_of_pairs():
    rng = np.random.default_rng(3)
    a = rng.integers(0, 256, (20, 16)).astype(np.uint8)
    b = rng.integers(-128, 128, (20, 16)).astype(np.int8)
    got = execute_instruction(AVX2_VPMADDWD, {"a": a, "b": b}, 20)
    assert np.array_equal(got, (a.astype(np.int64) * b).reshape(20, 8, 2).sum(-1))


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
    for name in ("x86-vnni", "x86-avxvnni", "x86-avx2", "x86-avx2-u7", "arm-dot", "tensorcore"):
        spec = load_target(name)
        assert spec.family == "cpu" and spec.instruction in DESCRIPTORS and spec.assumptions


def test_targets_command_says_which_targets_this_cpu_runs():
    proc = subprocess.run([sys.executable, "-m", "solvermap.cli", "targets", "--json"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    rows = {row["name"]: row for row in json.loads(proc.stdout)}
    for name in ("x86-vnni", "x86-avxvnni", "x86-avx2", "x86-avx2-u7"):
        needed = set(load_target(name).toolchain.required_cpu_flags)
        assert rows[name]["runs_here"] == (needed <= cpu_flags() and shutil.which("gcc") is not None), name
    assert rows["arm-dot"]["runs_here"] is False and "descriptor only" in rows["arm-dot"]["why_not"]
    assert rows["puma"]["runs_here"] is None  # a simulated target: not applicable


def test_a_target_needing_a_flag_this_cpu_lacks_names_the_flag():
    spec = load_target("x86-avx2", {"toolchain.required_cpu_flags": ["avx2", "no_such_flag"]})
    assert spec.runs_here() == (False, "this CPU lacks no_such_flag")


def test_the_best_x86_target_is_the_first_this_cpu_runs():
    best = best_x86_target()
    runs = [name for name in X86_TARGETS if load_target(name).runs_here()[0]]
    assert best == (runs[0] if runs else None)


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
