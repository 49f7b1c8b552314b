"""Validation of a tensorize decision: rewrite, tune, check bit-exactly, and time on this machine.

``validate`` is the tensorize step's simulator (here: the machine itself), called by ``run_decision``
with the chosen mapping:

1. rewrite the nest (``rewriter.rewrite``) and check the rewrite (``hardware/checks/tensorize``);
2. bit-exact checks against the NumPy int8 → int32 reference (``conv2d_reference``, itself tested
   against the golden executor): the rewritten nest run by the golden executor and the instruction
   emulator (when small enough), then every compiled kernel's output;
3. tune the schedule (``tuner.tune``): candidates compiled and timed (or modelled);
4. time the tuned tensorized kernel, the same nest untensorized, the naive nest and NumPy in
   interleaved rounds with one thread each (BLAS limited by threadpoolctl); each reported time is the
   median over rounds of the per-round median (whole-run medians), with the load average before and
   after, since the machine is shared.

Returns the metrics (``latency_s`` and ``predicted_latency_s`` / ``measured_latency_s`` with their
relative difference per DEVELOPERS.md) plus ``bit_exact`` and ``speedup_vs_untensorized``.
"""

from __future__ import annotations

import ctypes
import os
import statistics
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from solvermap.errors import InputError
from solvermap.formulations.problems.tensorize import (
    TensorizeMapping,
    TensorizeProblem,
    extra_macs,
    padded_macs,
    useful_macs,
)
from solvermap.hardware.checks.tensorize import check_rewrite
from solvermap.hardware.cpu import CpuTarget, codegen, toolchain
from solvermap.hardware.cpu.emulator import emulate
from solvermap.hardware.cpu.instructions import InstructionDescriptor
from solvermap.hardware.cpu.latency_model import estimate
from solvermap.hardware.cpu.nest import RewrittenNest, Schedule
from solvermap.ir.loopnest import NUMPY_DTYPES, Program, evaluate
from solvermap.ir.workloads.cpu_conv import conv2d_inputs, conv2d_reference
from solvermap.mappers.cpu.rewriter import rewrite
from solvermap.mappers.cpu.tuner import tune

EXTRA_FLAGS = ["-fwrapv"]  # int32 wraps like the hardware: every kernel has defined, bit-exact semantics


@dataclass(frozen=True)
class ValidationOptions:
    tuner: str = "optuna"
    trials: int = 12
    unit_pairs: int = 8
    measure: str = "time"  # time | model
    rounds: int = 5
    min_seconds: float = 0.05
    min_reps: int = 3
    emulate_max_calls: int = 20000
    evaluate_max_points: int = 4_000_000
    reorder: bool = True
    seed: int = 0
    execute: str = "auto"  # auto (from the target) | compile | emulate
    compare: bool = True  # also time the untensorized nest, the naive nest and NumPy


def reference(program: Program, inputs: dict[str, np.ndarray]) -> np.ndarray:
    """The NumPy reference output (fast im2col GEMM for convolutions, the golden executor otherwise)."""
    conv = program.attrs.get("conv2d")
    out = program.statements[0].write.tensor
    if conv is not None:
        return conv2d_reference(inputs["data"], inputs["weight"], conv["stride"])
    if "conv" in program.attrs:  # a layer of a model or layer-shape file (groups, strides, dilation, batch)
        from solvermap.ir.layer_shapes import conv_reference

        return conv_reference(inputs["data"], inputs["weight"], program.attrs["conv"])
    return evaluate(program, inputs)[out]


def _numpy_time(program: Program, inputs: dict[str, np.ndarray], min_seconds: float, min_reps: int) -> float:
    from threadpoolctl import threadpool_limits

    times = []
    with threadpool_limits(limits=1):
        start = time.perf_counter()
        while len(times) < min_reps or time.perf_counter() - start < min_seconds:
            t0 = time.perf_counter()
            reference(program, inputs)
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


class Bench:
    """Compiles kernels for one nest and times them on packed inputs."""

    def __init__(self, nest: RewrittenNest, target: CpuTarget, inputs: dict[str, np.ndarray]) -> None:
        toolchain.require_compiler(target.toolchain.cc)
        toolchain.require_cpu(target.toolchain.required_cpu_flags, target.name)
        self.nest, self.target, self.inputs = nest, target, inputs
        self.packed = nest.pack_inputs(inputs)
        self.parallel = target.tuning.threads > 1
        self.flags = list(target.toolchain.flags) + EXTRA_FLAGS
        self.compile_seconds = 0.0

    def _args(self, packed: bool) -> list[np.ndarray]:
        args = []
        layouts = self.nest.layouts()
        for t in self.nest.original.tensors.values():
            if t.role == "input":
                args.append(self.packed[t.name] if packed else np.ascontiguousarray(self.inputs[t.name]))
            else:
                shape = layouts[t.name].shape if packed else t.shape
                args.append(np.zeros(shape, dtype=NUMPY_DTYPES[t.dtype]))
        return args

    def library(self, kernels: list[str]):
        lib = toolchain.compile_library(codegen.translation_unit(kernels, parallel=self.parallel),
                                        cc=self.target.toolchain.cc, flags=self.flags, openmp=self.parallel)
        self.compile_seconds += lib.compile_seconds
        if self.parallel:
            lib.function("sm_set_threads")(ctypes.c_int(self.target.tuning.threads))
        return lib

    def run(self, lib, name: str, *, packed: bool, min_seconds: float, min_reps: int) -> tuple[float, np.ndarray]:
        args = self._args(packed)
        times = toolchain.time_kernel(lib.function(name + "_bench"), args, min_seconds=min_seconds, min_reps=min_reps)
        out = args[-1]
        if packed:
            out = self.nest.accumulator.layout.unpack(out)
        return statistics.median(times), out


def validate(problem: TensorizeProblem, decision: TensorizeMapping, instruction: InstructionDescriptor,
             target: CpuTarget, options: ValidationOptions) -> dict[str, Any]:
    load_before = os.getloadavg()
    nest = rewrite(problem, decision, instruction)
    rewrite_report = check_rewrite(problem, decision, nest)
    program = problem.program
    inputs = conv2d_inputs(program, options.seed)
    ref = reference(program, inputs)
    out_layout = nest.accumulator.layout
    checks: dict[str, bool] = {}
    points = nest.calls * instruction.macs
    if points <= options.evaluate_max_points:
        env = evaluate(nest.program, nest.pack_inputs(inputs))
        checks["rewritten_program"] = bool(np.array_equal(out_layout.unpack(env[out_layout.tensor]), ref))
    if nest.calls <= options.emulate_max_calls:
        checks["instruction_emulator"] = bool(np.array_equal(out_layout.unpack(emulate(nest, nest.pack_inputs(inputs))), ref))
    execute = options.execute if options.execute != "auto" else ("emulate" if target.codegen == "emulate" else "compile")
    metrics: dict[str, Any] = {
        "useful_macs": useful_macs(problem), "padded_macs": padded_macs(problem, decision),
        "extra_macs": extra_macs(problem, decision),
        "padding_overhead": extra_macs(problem, decision) / useful_macs(problem),
        "instructions": nest.calls,
        "operand_preparation": {p.operand: {"tensor": p.tensor, "action": p.action, "layout": p.layout.name(),
                                            "lane_strides": dict(p.lane_strides)} for p in nest.operands.values()},
        "rewrite_check": rewrite_report.to_json(),
    }
    if execute == "emulate":
        if "instruction_emulator" not in checks:  # the emulator is this mode's execution: always run it
            checks["instruction_emulator"] = bool(np.array_equal(
                out_layout.unpack(emulate(nest, nest.pack_inputs(inputs))), ref))
        result = tune(nest, target, lambda s: estimate(nest, s, target.core).seconds, tuner=options.tuner,
                      trials=options.trials, pairs=options.unit_pairs, seed=options.seed, reorder=options.reorder)
        metrics.update({"bit_exact": all(checks.values()) and rewrite_report.ok, "bit_exact_checks": checks,
                        "execution": "emulated (no code generation for this target)",
                        "predicted_latency_s": result.best_seconds, "latency_s": None,
                        "speedup_vs_untensorized": None, "tuning": result.summary(),
                        "schedule": result.best.to_json()})
        return metrics
    bench = Bench(nest, target, inputs)
    # tuning
    def measure(schedule: Schedule) -> float:
        if options.measure == "model":
            return estimate(nest, schedule, target.core).seconds
        lib = bench.library([codegen.tensorized_kernel(nest, schedule, "k_tuned", parallel=bench.parallel)])
        seconds, out = bench.run(lib, "k_tuned", packed=True, min_seconds=options.min_seconds, min_reps=options.min_reps)
        if not np.array_equal(out, ref):
            raise InputError(problem.workload, "schedule", f"tuned kernel {schedule} is not bit-exact (generator bug)")
        return seconds

    result = tune(nest, target, measure, tuner=options.tuner, trials=options.trials, pairs=options.unit_pairs,
                  seed=options.seed, reorder=options.reorder)
    best, default = result.best, result.default
    kernels = [codegen.tensorized_kernel(nest, best, "k_tensorized", parallel=bench.parallel),
               codegen.tensorized_kernel(nest, default, "k_default", parallel=bench.parallel)]
    timed = [("tensorized", "k_tensorized", True), ("default", "k_default", True)]
    if options.compare:
        kernels += [codegen.untensorized_kernel(nest, best, "k_untensorized", parallel=bench.parallel),
                    codegen.naive_kernel(program, "k_naive")]
        timed += [("untensorized", "k_untensorized", True), ("naive", "k_naive", False)]
    lib = bench.library(kernels)
    rounds: dict[str, list[float]] = {key: [] for key, _, _ in timed}
    if options.compare:
        rounds["numpy"] = []
    for _ in range(options.rounds):
        for key, name, packed in timed:
            seconds, out = bench.run(lib, name, packed=packed, min_seconds=options.min_seconds, min_reps=options.min_reps)
            rounds[key].append(seconds)
            checks[f"compiled_{key}"] = checks.get(f"compiled_{key}", True) and bool(np.array_equal(out, ref))
        if options.compare:
            rounds["numpy"].append(_numpy_time(program, inputs, options.min_seconds, 1))
    med = {k: statistics.median(v) for k, v in rounds.items()}
    for key in ("untensorized", "naive", "numpy"):
        med.setdefault(key, float("nan"))
    predicted = estimate(nest, best, target.core)
    metrics.update({
        "bit_exact": all(checks.values()) and rewrite_report.ok,
        "bit_exact_checks": checks,
        "speedup_vs_untensorized": med["untensorized"] / med["tensorized"],
        "speedup_vs_numpy": med["numpy"] / med["tensorized"],
        "speedup_vs_naive": med["naive"] / med["tensorized"],
        "tuned_vs_default": med["default"] / med["tensorized"],
        "latency_s": med["tensorized"],
        "measured_latency_s": med["tensorized"],
        "predicted_latency_s": predicted.seconds,
        "latency_rel_diff": (predicted.seconds - med["tensorized"]) / med["tensorized"],
        "predicted_bound": predicted.bound,
        "default_latency_s": med["default"],
        "untensorized_latency_s": med["untensorized"],
        "naive_latency_s": med["naive"],
        "numpy_latency_s": med["numpy"],
        "round_medians_s": rounds,
        "schedule": best.to_json(),
        "unroll": predicted.unroll,
        "tuning": result.summary(),
        "tuning_trials": [t.to_json() for t in result.trials],
        "untensorized_uses_instruction": (lib.disassembly_contains(_mnemonic(instruction), "k_untensorized")
                                          if options.compare else None),
        "timing": {"rounds": options.rounds, "min_seconds": options.min_seconds, "threads": target.tuning.threads,
                   "statistic": "median over rounds of per-round medians",
                   "load_average_before": list(load_before), "load_average_after": list(os.getloadavg()),
                   "compiler": toolchain.compiler_version(target.toolchain.cc),
                   "flags": bench.flags, "compile_seconds": bench.compile_seconds},
    })
    return metrics


def _mnemonic(instruction: InstructionDescriptor) -> str:
    """The assembly mnemonic of an x86 intrinsic call (``_mm512_dpbusd_epi32`` → ``vpdpbusd``)."""
    call = instruction.x86.call if instruction.x86 else instruction.name
    core = call.split("_")[2] if call.count("_") >= 3 else call
    return "vp" + core
