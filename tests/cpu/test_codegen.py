"""Generated C on every x86 target this CPU runs (AVX-512 VNNI, AVX-VNNI, AVX2 exact, AVX2 7-bit): the
tensorized kernel, the untensorized nest and the naive nest, compiled at run time, are bit-exact
against the NumPy reference (reduced sizes, each library compiled once per session; timing belongs to
the study and the benchmark). A target the CPU lacks is skipped with the missing flags."""

from __future__ import annotations

import ctypes
import functools

import numpy as np
import pytest

from solvermap.errors import BackendUnavailable, InputError
from solvermap.formulations import tensorize as model
from solvermap.formulations.problems.tensorize import mapping_from_pairs
from solvermap.formulations.solver import SolverConfig
from solvermap.hardware.cpu import codegen, toolchain
from solvermap.hardware.cpu.emulator import emulate
from solvermap.hardware.cpu.instructions import (
    AVX2_VPMADDUBSW,
    AVX2_VPMADDWD,
    VNNI_VPDPBUSD,
    X86Intrinsic,
    descriptor,
    make_descriptor,
)
from solvermap.hardware.cpu.nest import Schedule
from solvermap.hardware.targets import load_target
from solvermap.ir.loopnest import NUMPY_DTYPES, Program, Tensor, evaluate, statement
from solvermap.ir.workloads.cpu_conv import conv2d_inputs, conv2d_reference
from solvermap.mappers.cpu.baselines import unit_schedule
from solvermap.mappers.cpu.execution import EXTRA_FLAGS, input_ranges
from solvermap.mappers.cpu.inspector import inspect
from solvermap.mappers.cpu.rewriter import rewrite

from .conftest import TABLE_I_NAMES, needs_objdump, needs_target, needs_vnni, problem_for, reduced_params, x86_target_params


def _reference(program, inputs):
    conv = program.attrs.get("conv2d")
    if conv:
        return conv2d_reference(inputs["data"], inputs["weight"], conv["stride"])
    return evaluate(program, inputs)[program.statements[0].write.tensor]


def _args(nest, inputs, packed):
    args = []
    for t in nest.original.tensors.values():
        if t.role == "input":
            args.append(nest.pack_inputs(inputs)[t.name] if packed else np.ascontiguousarray(inputs[t.name]))
        else:
            shape = nest.layouts()[t.name].shape if packed else t.shape
            args.append(np.zeros(shape, dtype=NUMPY_DTYPES[t.dtype]))
    return args


def _run(lib, name, nest, inputs, packed=True):
    args = _args(nest, inputs, packed)
    toolchain.time_kernel(lib.function(name + "_bench"), args, min_seconds=1e-6, min_reps=1)
    return nest.accumulator.layout.unpack(args[-1]) if packed else args[-1]


def _random_inputs(program, seed=0):
    rng = np.random.default_rng(seed)
    out = {}
    for t in program.inputs:
        info = np.iinfo(NUMPY_DTYPES[t.dtype])
        out[t.name] = rng.integers(max(info.min, -300), min(info.max, 300) + 1, size=t.shape).astype(t.dtype)
    return out


def _flags(target: str) -> list[str]:
    return list(load_target(target).toolchain.flags) + EXTRA_FLAGS


@functools.lru_cache(maxsize=None)
def _table1_library(target: str):
    """Tensorized (UNIT's default schedule) and untensorized kernels of the 16 reduced Table I layers."""
    instruction = descriptor(load_target(target).instruction)
    nests, kernels = [], []
    for k, name in enumerate(TABLE_I_NAMES):
        problem = problem_for(name, reduced_params(name), instruction=instruction)
        nest = rewrite(problem, model.solve(problem, SolverConfig(time_limit_s=10)).decision, instruction)
        schedule = unit_schedule(nest)
        kernels += [codegen.tensorized_kernel(nest, schedule, f"t{k}"), codegen.untensorized_kernel(nest, schedule, f"u{k}")]
        nests.append(nest)
    lib = toolchain.compile_library(codegen.translation_unit(kernels), flags=_flags(target), name=f"test-{target}")
    return lib, nests


@pytest.mark.parametrize("target", x86_target_params())
def test_every_table1_layer_compiles_bit_exact_tensorized_and_untensorized(target):
    lib, nests = _table1_library(target)
    for k, nest in enumerate(nests):
        inputs = conv2d_inputs(nest.original, k, input_ranges(nest))
        ref = _reference(nest.original, inputs)
        assert np.array_equal(_run(lib, f"t{k}", nest, inputs), ref), TABLE_I_NAMES[k]
        assert np.array_equal(_run(lib, f"u{k}", nest, inputs), ref), TABLE_I_NAMES[k]


@needs_target("x86-avx2-u7")
def test_seven_bit_mode_is_exact_below_128_and_saturates_like_its_emulator_on_full_range():
    lib, nests = _table1_library("x86-avx2-u7")
    nest = nests[4]  # conv_table1_5 reduced: 3x3, 8 channels
    assert input_ranges(nest) == {"data": (0, 127)}
    seven = conv2d_inputs(nest.original, 0, input_ranges(nest))
    assert np.array_equal(_run(lib, "t4", nest, seven), _reference(nest.original, seven))
    rng = np.random.default_rng(0)  # activations near 255 make pair sums exceed int16
    full = {"data": rng.integers(200, 256, nest.original.tensor("data").shape).astype(np.uint8),
            "weight": rng.choice(np.array([-128, 127], dtype=np.int8), nest.original.tensor("weight").shape)}
    compiled = _run(lib, "t4", nest, full)
    assert not np.array_equal(compiled, _reference(nest.original, full))
    assert np.array_equal(compiled, nest.accumulator.layout.unpack(emulate(nest, nest.pack_inputs(full))))
    assert np.array_equal(_run(lib, "u4", nest, full), _reference(nest.original, full))  # the plain C nest is exact


def test_naive_kernel_is_bit_exact():
    program = problem_for("conv_table1_1", reduced_params("conv_table1_1")).program
    lib = toolchain.compile_library(codegen.translation_unit([codegen.naive_kernel(program, "naive")]),
                                    flags=["-O2", "-fwrapv"], name="test-naive")
    inputs = conv2d_inputs(program, 0)
    out = np.zeros(program.tensor("out").shape, dtype=np.int32)
    toolchain.time_kernel(lib.function("naive_bench"), [inputs["data"], inputs["weight"], out], min_seconds=1e-6,
                          min_reps=1)
    assert np.array_equal(out, _reference(program, inputs))


@needs_objdump
@pytest.mark.parametrize("target", x86_target_params())
def test_tensorized_kernels_contain_their_instructions(target):
    lib, _ = _table1_library(target)
    for mnemonic in descriptor(load_target(target).instruction).x86.mnemonics:
        assert lib.disassembly_contains(mnemonic, "t0"), mnemonic


@needs_objdump
@pytest.mark.parametrize("target", [p for p in x86_target_params() if p.values[0] != "x86-vnni"])
def test_avx2_class_targets_use_no_avx512_register(target):
    lib, _ = _table1_library(target)
    assert "zmm" not in lib.disassembly("t0") and "%ymm" in lib.disassembly("t0")


def test_missing_objdump_is_an_error_not_a_pass(monkeypatch):
    lib = toolchain.Library(path=None, source=None, handle=None, compile_seconds=0.0)
    monkeypatch.setattr(toolchain.shutil, "which", lambda name: None)
    with pytest.raises(BackendUnavailable, match="objdump"):
        lib.disassembly_contains("vpdpbusd")


@pytest.mark.parametrize("target", [p for p in x86_target_params() if p.values[0] in ("x86-vnni", "x86-avx2")])
def test_gather_broadcast_and_lanewise_operands_compile_bit_exact(target):
    instruction = descriptor(load_target(target).instruction)
    problem = problem_for("conv_table1_1", {"C": 6, "K": 20, "IHW": 11}, instruction=instruction)
    cases = [mapping_from_pairs(problem, {"i": i, "j": j}) for i, j in (("x", "c"), ("x", "s"), ("y", "r"), ("k", "s"))]
    # out[m] += A[m] * B[m, c]: A varies with i only, so each 32-bit group repeats one element (lanewise)
    stmt = statement("s", [("m", 0, 32), ("c", 0, 8, "reduction")], "out[m]", "int32(A[m]) * int32(B[m, c])",
                     dtype="int32", accumulate=True)
    program = Program("p", {"A": Tensor("A", (32,), "uint8", "input"), "B": Tensor("B", (32, 8), "int8", "input"),
                            "out": Tensor("out", (32,), "int32", "output")}, [stmt]).validate()
    lanewise_problem = inspect(program, instruction).problem
    nests = [rewrite(problem, d, instruction) for d in cases]
    nests.append(rewrite(lanewise_problem, model.solve(lanewise_problem, SolverConfig()).decision, instruction))
    assert {n.operands["a"].action for n in nests} >= {"gather", "broadcast", "lanewise"}
    kernels = [codegen.tensorized_kernel(n, unit_schedule(n, 3000, 4), f"g{k}") for k, n in enumerate(nests)]
    lib = toolchain.compile_library(codegen.translation_unit(kernels), flags=_flags(target), name=f"test-actions-{target}")
    for k, nest in enumerate(nests):
        inputs = _random_inputs(nest.original, k)
        assert np.array_equal(_run(lib, f"g{k}", nest, inputs), _reference(nest.original, inputs))


def _schedule_shapes(dp):
    """UNIT breakpoints, a partial last block (tail), 2-D register tiles and reduction blocks."""
    return [Schedule(dp, (0, 2), (2, 5)), Schedule(dp, (1, 5), (1, 5)), Schedule(dp, (2, 5), (2, 1)),
            Schedule(("x", "y", "k_o"), (0, 5), (1, 5)), Schedule(dp, (1, 5), (1, 1)),
            Schedule(dp, (1, 5), (2, 3)),  # x (5) by 3: one full block and a tail of 2
            Schedule(("y", "k_o", "x"), (1, 2), (2, 4), (("k_o", 2),)),  # 2 x 4 tile with a tail of 1
            Schedule(("y", "k_o", "x"), (1, 2), (2, 2), (("k_o", 2),), 3),  # and reduction blocks of 3
            Schedule(dp, (1, 5), (1, 5), (), 1)]


@pytest.mark.parametrize("target", [p for p in x86_target_params() if p.values[0] in ("x86-vnni", "x86-avx2")])
def test_every_schedule_shape_compiles_bit_exact(target):
    instruction = descriptor(load_target(target).instruction)
    lanes = instruction.extent("i")
    problem = problem_for("conv_table1_15", {"C": 24, "K": 2 * lanes, "IHW": 9}, instruction=instruction)
    nest = rewrite(problem, mapping_from_pairs(problem, {"i": "k", "j": "c"}), instruction)
    dp = tuple(l.var for l in nest.dp_loops)  # k_o (2), y (5), x (5)
    schedules = _schedule_shapes(dp)
    kernels = [codegen.tensorized_kernel(nest, s, f"s{k}") for k, s in enumerate(schedules)]
    kernels += [codegen.untensorized_kernel(nest, s, f"u{k}") for k, s in enumerate(schedules)]
    lib = toolchain.compile_library(codegen.translation_unit(kernels), flags=_flags(target), name=f"test-schedules-{target}")
    inputs = conv2d_inputs(nest.original, 1)
    ref = _reference(nest.original, inputs)
    for k, schedule in enumerate(schedules):
        assert np.array_equal(_run(lib, f"s{k}", nest, inputs), ref), schedule
        assert np.array_equal(_run(lib, f"u{k}", nest, inputs), ref), schedule


@needs_vnni
def test_new_x86_instructions_need_only_a_descriptor():
    ymm = make_descriptor(
        "vnni_vpdpbusd_ymm", "x86-avx512-vnni-vl",
        [Tensor("a", (32,), "uint8", "input"), Tensor("b", (32,), "int8", "input"), Tensor("c", (8,), "int32", "output")],
        [("i", 0, 8, "data_parallel"), ("j", 0, 4, "reduction")],
        "c[i]", "int32(a[4*i + j]) * int32(b[4*i + j])", "int32",
        x86=X86Intrinsic("_mm256_dpbusd_epi32", "__m256i", "_mm256", 256))
    wssd = make_descriptor(
        "vnni_vpdpwssd", "x86-avx512-vnni",
        [Tensor("a", (32,), "int16", "input"), Tensor("b", (32,), "int16", "input"), Tensor("c", (16,), "int32", "output")],
        [("i", 0, 16, "data_parallel"), ("j", 0, 2, "reduction")],
        "c[i]", "int32(a[2*i + j]) * int32(b[2*i + j])", "int32",
        x86=X86Intrinsic("_mm512_dpwssd_epi32"))
    u8 = problem_for("conv_table1_2", reduced_params("conv_table1_2"), instruction=ymm)
    s16 = problem_for("conv2d", {"C": 6, "K": 20, "IHW": 7, "data_dtype": "int16", "weight_dtype": "int16"},
                      instruction=wssd)
    nests = [rewrite(p, model.solve(p, SolverConfig()).decision, d) for p, d in ((u8, ymm), (s16, wssd))]
    kernels = [codegen.tensorized_kernel(n, unit_schedule(n), f"x{k}") for k, n in enumerate(nests)]
    lib = toolchain.compile_library(codegen.translation_unit(kernels), flags=_flags("x86-vnni"), name="test-extension")
    for k, nest in enumerate(nests):
        inputs = _random_inputs(nest.original, k)
        assert np.array_equal(_run(lib, f"x{k}", nest, inputs), _reference(nest.original, inputs))


def test_widened_operands_are_stored_as_int16_when_packed():
    problem = problem_for("conv_table1_5", reduced_params("conv_table1_5"), instruction=AVX2_VPMADDWD)
    nest = rewrite(problem, mapping_from_pairs(problem, {"i": "k", "j": "c"}), AVX2_VPMADDWD)
    assert {p.operand: p.layout.dtype for p in nest.operands.values()} == {"a": "int16", "b": "int16", "c": "int32"}
    assert nest.operands["a"].action == "broadcast" and nest.operands["a"].group == 2
    packed = nest.pack_inputs(conv2d_inputs(problem.program, 0))
    assert packed["data"].dtype == np.int16 and packed["data"].max() > 127  # zero-extended, not wrapped
    assert packed["weight"].dtype == np.int16 and packed["weight"].min() < 0  # sign-extended


def test_seven_bit_instruction_declares_its_exact_range_and_saturation():
    assert AVX2_VPMADDUBSW.exact_ranges == (("a", 0, 127),) and not AVX2_VPMADDUBSW.exact_on_full_range
    assert AVX2_VPMADDWD.exact_on_full_range and VNNI_VPDPBUSD.exact_on_full_range


def test_missing_compiler_is_a_clear_error():
    with pytest.raises(BackendUnavailable, match="no C compiler"):
        toolchain.require_compiler("gcc-999")


def test_missing_cpu_feature_is_a_clear_error():
    with pytest.raises(BackendUnavailable, match="lacks"):
        toolchain.require_cpu(["no_such_cpu_feature"], "x86-vnni")


def test_compile_error_names_the_first_error_line():
    with pytest.raises(InputError, match="gcc failed"):
        toolchain.compile_library("this is not C;", flags=["-O0"], name="test-broken")


@needs_vnni
def test_parallel_fused_loop_compiles_with_openmp_and_stays_bit_exact():
    problem = problem_for("conv_table1_5", reduced_params("conv_table1_5"))
    nest = rewrite(problem, mapping_from_pairs(problem, {"i": "k", "j": "c"}), VNNI_VPDPBUSD)
    source = codegen.translation_unit([codegen.tensorized_kernel(nest, unit_schedule(nest), "par", parallel=True)],
                                      parallel=True)
    assert "#pragma omp parallel for" in source
    lib = toolchain.compile_library(source, flags=_flags("x86-vnni"), openmp=True, name="test-openmp")
    lib.function("sm_set_threads")(ctypes.c_int(2))
    inputs = conv2d_inputs(nest.original, 2)
    assert np.array_equal(_run(lib, "par", nest, inputs), _reference(nest.original, inputs))


@pytest.mark.parametrize("name", ["conv_table1_1", "conv_table1_15"])
def test_channels_last_untensorized_kernel_is_bit_exact_for_every_unroll_and_order(name):
    program = problem_for(name, {"C": 12, "K": 8, "IHW": 9}).program
    space = [(u, o) for u in (1, 2, 4, 8) for o in (False, True)]
    kernels = [codegen.channels_last_kernel(program, f"cl{k}", u, o) for k, (u, o) in enumerate(space)]
    lib = toolchain.compile_library(codegen.translation_unit(kernels), flags=["-O3", "-fwrapv"], name="test-channels-last")
    inputs = conv2d_inputs(program, 3)
    packed = codegen.pack_channels_last(inputs)
    for k, params in enumerate(space):
        out = np.zeros(program.tensor("out").shape, dtype=np.int32)
        toolchain.time_kernel(lib.function(f"cl{k}_bench"), [packed["data"], packed["weight"], out], min_seconds=1e-6,
                              min_reps=1)
        assert np.array_equal(out, _reference(program, inputs)), params


def test_channels_last_unroll_must_divide_the_output_channels():
    program = problem_for("conv_table1_5", {"C": 4, "K": 12, "IHW": 5}).program
    with pytest.raises(InputError, match="does not divide"):
        codegen.channels_last_kernel(program, "cl", 8)
