"""Generated C: AVX-512 VNNI kernels, the untensorized nest and the naive nest, compiled with gcc at
run time, are bit-exact against the NumPy reference (reduced sizes; timing belongs to the study)."""

from __future__ import annotations

import numpy as np
import pytest

from solvermap.errors import BackendUnavailable
from solvermap.formulations import tensorize as model
from solvermap.formulations.problems.tensorize import mapping_from_pairs
from solvermap.formulations.solver import SolverConfig
from solvermap.hardware.cpu import codegen, toolchain
from solvermap.hardware.cpu.instructions import VNNI_VPDPBUSD, X86Intrinsic, make_descriptor
from solvermap.hardware.cpu.nest import Schedule
from solvermap.ir.loopnest import NUMPY_DTYPES, Program, Tensor, evaluate, statement
from solvermap.ir.workloads.cpu_conv import conv2d_inputs, conv2d_reference
from solvermap.mappers.cpu.baselines import unit_schedule
from solvermap.mappers.cpu.inspector import inspect
from solvermap.mappers.cpu.rewriter import rewrite

from .conftest import TABLE_I_NAMES, needs_vnni, problem_for, reduced_params

FLAGS = ["-O3", "-march=native", "-fwrapv"]


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


@needs_vnni
def test_every_table1_layer_compiles_bit_exact_tensorized_and_untensorized():
    nests, kernels = [], []
    for k, name in enumerate(TABLE_I_NAMES):
        problem = problem_for(name, reduced_params(name))
        decision = model.solve(problem, SolverConfig(time_limit_s=10)).decision
        nest = rewrite(problem, decision, VNNI_VPDPBUSD)
        schedule = unit_schedule(nest)
        kernels += [codegen.tensorized_kernel(nest, schedule, f"t{k}"), codegen.untensorized_kernel(nest, schedule, f"u{k}")]
        nests.append(nest)
    kernels.append(codegen.naive_kernel(nests[0].original, "naive0"))
    lib = toolchain.compile_library(codegen.translation_unit(kernels), flags=FLAGS, name="test-table1")
    for k, nest in enumerate(nests):
        inputs = conv2d_inputs(nest.original, k)
        ref = _reference(nest.original, inputs)
        assert np.array_equal(_run(lib, f"t{k}", nest, inputs), ref), TABLE_I_NAMES[k]
        assert np.array_equal(_run(lib, f"u{k}", nest, inputs), ref), TABLE_I_NAMES[k]
    inputs = conv2d_inputs(nests[0].original, 0)
    assert np.array_equal(_run(lib, "naive0", nests[0], inputs, packed=False), _reference(nests[0].original, inputs))
    assert lib.disassembly_contains("vpdpbusd", "t0") in (True, None)


@needs_vnni
def test_gather_broadcast_and_lanewise_operands_compile_bit_exact():
    problem = problem_for("conv_table1_1", {"C": 6, "K": 20, "IHW": 11})
    cases = [mapping_from_pairs(problem, {"i": i, "j": j}) for i, j in (("x", "c"), ("x", "s"), ("y", "r"), ("k", "s"))]
    # out[m] += A[m] * B[m, c]: A varies with i only, so each 32-bit group repeats one byte (lanewise)
    stmt = statement("s", [("m", 0, 32), ("c", 0, 8, "reduction")], "out[m]", "int32(A[m]) * int32(B[m, c])",
                     dtype="int32", accumulate=True)
    program = Program("p", {"A": Tensor("A", (32,), "uint8", "input"), "B": Tensor("B", (32, 8), "int8", "input"),
                            "out": Tensor("out", (32,), "int32", "output")}, [stmt]).validate()
    lanewise_problem = inspect(program, VNNI_VPDPBUSD).problem
    nests = [rewrite(problem, d, VNNI_VPDPBUSD) for d in cases]
    nests.append(rewrite(lanewise_problem, model.solve(lanewise_problem, SolverConfig()).decision, VNNI_VPDPBUSD))
    assert {n.operands["a"].action for n in nests} == {"gather", "broadcast", "lanewise"}
    kernels = [codegen.tensorized_kernel(n, unit_schedule(n, 3000, 4), f"g{k}") for k, n in enumerate(nests)]
    lib = toolchain.compile_library(codegen.translation_unit(kernels), flags=FLAGS, name="test-actions")
    for k, nest in enumerate(nests):
        inputs = _random_inputs(nest.original, k)
        assert np.array_equal(_run(lib, f"g{k}", nest, inputs), _reference(nest.original, inputs))


@needs_vnni
def test_every_schedule_shape_compiles_bit_exact():
    problem = problem_for("conv_table1_15", reduced_params("conv_table1_15"))
    nest = rewrite(problem, mapping_from_pairs(problem, {"i": "k", "j": "c"}), VNNI_VPDPBUSD)
    dp = tuple(l.var for l in nest.dp_loops)  # k_o (2), y (5), x (5)
    schedules = [Schedule(dp, (0, 2), (2, 5)), Schedule(dp, (1, 5), (1, 5)), Schedule(dp, (2, 5), (2, 1)),
                 Schedule(("x", "y", "k_o"), (0, 5), (1, 5)), Schedule(dp, (1, 5), (1, 1))]
    kernels = [codegen.tensorized_kernel(nest, s, f"s{k}") for k, s in enumerate(schedules)]
    lib = toolchain.compile_library(codegen.translation_unit(kernels), flags=FLAGS, name="test-schedules")
    inputs = conv2d_inputs(nest.original, 1)
    ref = _reference(nest.original, inputs)
    for k in range(len(schedules)):
        assert np.array_equal(_run(lib, f"s{k}", nest, inputs), ref), schedules[k]


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
    lib = toolchain.compile_library(codegen.translation_unit(kernels), flags=FLAGS, name="test-extension")
    for k, nest in enumerate(nests):
        inputs = _random_inputs(nest.original, k)
        assert np.array_equal(_run(lib, f"x{k}", nest, inputs), _reference(nest.original, inputs))
    assert lib.disassembly_contains("vpdpwssd", "x1") in (True, None)


def test_missing_compiler_is_a_clear_error():
    with pytest.raises(BackendUnavailable, match="no C compiler"):
        toolchain.require_compiler("gcc-999")


def test_missing_cpu_feature_is_a_clear_error():
    with pytest.raises(BackendUnavailable, match="lacks"):
        toolchain.require_cpu(["no_such_cpu_feature"], "x86-vnni")


def test_compile_error_names_the_first_error_line():
    from solvermap.errors import InputError

    with pytest.raises(InputError, match="gcc failed"):
        toolchain.compile_library("this is not C;", flags=["-O0"], name="test-broken")


@needs_vnni
def test_parallel_fused_loop_compiles_with_openmp_and_stays_bit_exact():
    problem = problem_for("conv_table1_5", reduced_params("conv_table1_5"))
    nest = rewrite(problem, mapping_from_pairs(problem, {"i": "k", "j": "c"}), VNNI_VPDPBUSD)
    source = codegen.translation_unit([codegen.tensorized_kernel(nest, unit_schedule(nest), "par", parallel=True)],
                                      parallel=True)
    assert "#pragma omp parallel for" in source
    lib = toolchain.compile_library(source, flags=FLAGS, openmp=True, name="test-openmp")
    import ctypes

    lib.function("sm_set_threads")(ctypes.c_int(2))
    inputs = conv2d_inputs(nest.original, 2)
    assert np.array_equal(_run(lib, "par", nest, inputs), _reference(nest.original, inputs))
