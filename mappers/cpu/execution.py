"""Validation of a tensorize decision: rewrite, tune, check bit-exactly, and time on this machine.

``validate`` is the tensorize step's simulator (here: the machine itself), called by ``run_decision``
with the chosen mapping:

1. rewrite the nest (``rewriter.rewrite``) and check the rewrite (``hardware/checks/tensorize``);
2. bit-exact checks against the NumPy int8 → int32 reference (``conv2d_reference``, itself tested
   against the golden executor): the rewritten nest run by the golden executor and the instruction
   emulator (when small enough), then every compiled kernel's output. The data cover the full range
   of the operand types, except for an instruction that is exact only on a narrower range (the 7-bit
   ``vpmaddubsw`` mode: activations 0..127, its ``exact_ranges``): its checks use that range, and the
   compiled kernel is also run on full-range data, where ``full_range`` reports how many outputs are
   wrong and by how much;
3. tune the schedule (``tuner.tune``): candidates compiled and timed (or modelled). The untensorized
   nest is tuned for itself by the same tuner (its own schedule, its own timings);
4. time, in interleaved rounds on one thread: the tuned tensorized kernel, UNIT's default schedule,
   the untensorized nest under its own best schedule, the naive nest, NumPy (BLAS limited by
   threadpoolctl) and onnxruntime's ``ConvInteger`` and ``QLinearConv`` (``peers.py``, when
   installed; their exactness checked on the same full-range data). Each reported time is the median
   over rounds of the per-round fastest call, by the thread's CPU clock (on a shared machine the time
   a thread waits for a core is the load's, not the kernel's; onnxruntime and TVM as in ``peers.py``);
   the median over rounds keeps one lucky call from deciding. The load average is recorded.

Returns the metrics (``latency_s`` and ``predicted_latency_s`` / ``measured_latency_s`` with their
relative difference per DEVELOPERS.md) plus ``bit_exact``, ``speedup_vs_untensorized`` and
``speedup_vs_onnxruntime`` (against ``ConvInteger``, the operator with our output; None with
``onnxruntime.reason`` when onnxruntime is not installed).
"""

from __future__ import annotations

import ctypes
import os
import statistics
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from solvermap.errors import BackendUnavailable, InputError
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
from solvermap.mappers.cpu import peers
from solvermap.mappers.cpu.rewriter import rewrite
from solvermap.mappers.cpu.tuner import tune

EXTRA_FLAGS = ["-fwrapv"]  # int32 wraps like the hardware: every kernel has defined, bit-exact semantics


@dataclass(frozen=True)
class ValidationOptions:
    tuner: str = "optuna"
    trials: int = 12
    unit_pairs: int = 8
    tiles: int = 8  # register tiles measured (model-ranked)
    measure: str = "time"  # time | model
    rounds: int = 5
    min_seconds: float = 0.05
    min_reps: int = 3
    emulate_max_calls: int = 20000
    evaluate_max_points: int = 4_000_000
    reorder: bool = True
    seed: int = 0
    execute: str = "auto"  # auto (from the target) | compile | emulate
    compare: bool = True  # also time the untensorized nest, the naive nest, NumPy and onnxruntime
    tune_untensorized: bool = True  # tune the untensorized nest for itself (else: the tensorized schedule)


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


def input_ranges(nest: RewrittenNest) -> dict[str, tuple[int, int]]:
    """Program tensor → value range the instruction is exact on (empty: the full range of the types)."""
    return {nest.operands[operand].tensor: (lo, hi) for operand, lo, hi in nest.instruction.exact_ranges}


def error_summary(output: np.ndarray, ref: np.ndarray) -> dict[str, Any]:
    diff = np.abs(output.astype(np.int64) - ref.astype(np.int64))
    return {"exact": bool(not diff.any()), "wrong_fraction": float((diff > 0).mean()), "max_error": int(diff.max())}


def _numpy_time(program: Program, inputs: dict[str, np.ndarray], min_seconds: float, min_reps: int) -> float:
    from threadpoolctl import threadpool_limits

    times = []
    with threadpool_limits(limits=1):
        while len(times) < min_reps or sum(times) < min_seconds:
            t0 = time.thread_time()
            reference(program, inputs)
            times.append(time.thread_time() - t0)
    return min(times)


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

    def _args(self, packed: bool, inputs: dict[str, np.ndarray] | None = None) -> list[np.ndarray]:
        raw = self.inputs if inputs is None else inputs
        packed_inputs = self.packed if inputs is None else self.nest.pack_inputs(inputs)
        args = []
        layouts = self.nest.layouts()
        for t in self.nest.original.tensors.values():
            if t.role == "input":
                args.append(packed_inputs[t.name] if packed else np.ascontiguousarray(raw[t.name]))
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

    def run(self, lib, name: str, *, packed: bool, min_seconds: float, min_reps: int,
            inputs: dict[str, np.ndarray] | None = None) -> tuple[float, np.ndarray]:
        args = self._args(packed, inputs)
        times = toolchain.time_kernel(lib.function(name + "_bench"), args, min_seconds=min_seconds, min_reps=min_reps)
        out = args[-1]
        if packed:
            out = self.nest.accumulator.layout.unpack(out)
        return min(times), out


def tune_kernel(bench: Bench, problem: TensorizeProblem, nest: RewrittenNest, target: CpuTarget, options: ValidationOptions,
                ref: np.ndarray, generate, what: str):
    """Tune one kernel family (tensorized or untensorized) by timing it (or by the latency model); the
    candidates known up front are compiled together, in one library."""
    prepared: dict[Schedule, tuple[Any, str]] = {}

    def prepare(schedules: list[Schedule]) -> None:
        if options.measure == "model" or not schedules:
            return
        names = [f"k_cand{k}" for k in range(len(schedules))]
        lib = bench.library([generate(nest, s, n, parallel=bench.parallel) for s, n in zip(schedules, names)])
        prepared.update({s: (lib, n) for s, n in zip(schedules, names)})

    def measure(schedule: Schedule) -> float:
        if options.measure == "model":
            return estimate(nest, schedule, target.core).seconds
        if schedule in prepared:
            lib, name = prepared[schedule]
        else:
            lib, name = bench.library([generate(nest, schedule, "k_tuned", parallel=bench.parallel)]), "k_tuned"
        seconds, out = bench.run(lib, name, packed=True, min_seconds=options.min_seconds, min_reps=options.min_reps)
        if not np.array_equal(out, ref):
            raise InputError(problem.workload, "schedule", f"{what} kernel {schedule} is not bit-exact (generator bug)")
        return seconds

    return tune(nest, target, measure, tuner=options.tuner, trials=options.trials, pairs=options.unit_pairs,
                seed=options.seed, reorder=options.reorder, tiles=options.tiles, prepare=prepare)


@dataclass
class ChannelsLast:
    """The untensorized convolution in the form the compiler vectorises (``codegen.channels_last_kernel``),
    tuned over its output-channel unroll and loop order by timing."""

    program: Program
    lib: Any
    name: str
    params: dict
    tuning: list[dict]

    def run(self, inputs: dict[str, np.ndarray], *, min_seconds: float, min_reps: int) -> tuple[float, np.ndarray]:
        packed = codegen.pack_channels_last(inputs)
        out = np.zeros(self.program.tensor("out").shape, dtype=np.int32)
        times = toolchain.time_kernel(self.lib.function(self.name + "_bench"), [packed["data"], packed["weight"], out],
                                      min_seconds=min_seconds, min_reps=min_reps)
        return min(times), out


def tune_channels_last(bench: Bench, program: Program, inputs: dict[str, np.ndarray], ref: np.ndarray,
                       options: ValidationOptions) -> ChannelsLast | None:
    """Every (unroll ∈ divisors of K up to 8, loop order) of the channels-last kernel, compiled in one
    library and timed; the fastest, or None for a program that is not a 2-D convolution."""
    conv = program.attrs.get("conv2d")
    if conv is None or set(program.tensors) != {"data", "weight", "out"}:
        return None
    space = [{"unroll": u, "spatial_outer": o} for u in (1, 2, 4, 8) if conv["K"] % u == 0 for o in (False, True)]
    kernels = [codegen.channels_last_kernel(program, f"k_cl{k}", **p) for k, p in enumerate(space)]
    lib = bench.library(kernels)
    trials = []
    for k, params in enumerate(space):
        candidate = ChannelsLast(program, lib, f"k_cl{k}", params, [])
        seconds, out = candidate.run(inputs, min_seconds=options.min_seconds, min_reps=options.min_reps)
        if not np.array_equal(out, ref):
            raise InputError(program.name, "channels-last kernel", f"{params} is not bit-exact (generator bug)")
        trials.append({**params, "measured_s": seconds})
    best = min(range(len(space)), key=lambda k: trials[k]["measured_s"])
    return ChannelsLast(program, lib, f"k_cl{best}", space[best], trials)


def measure_peak(instruction: InstructionDescriptor, target: CpuTarget, *, repeats: int = 30,
                 iterations: int = 200_000) -> dict[str, float]:
    """The instruction's throughput on this core (``codegen.peak_kernel`` with 8 to 24 independent chains,
    best of ``repeats`` short runs each): MACs and instructions per second."""
    toolchain.require_cpu(target.toolchain.required_cpu_flags, target.name)
    counts = [c for c in (8, 12, 16, 24) if c <= target.core.vector_registers - 4] or [4]
    lib = toolchain.compile_library(codegen.translation_unit([codegen.peak_kernel(instruction, f"sm_peak{c}", c)
                                                              for c in counts]),
                                    cc=target.toolchain.cc, flags=list(target.toolchain.flags) + EXTRA_FLAGS,
                                    name="peak")
    best = {}
    for chains in counts:  # independent chains must cover latency x throughput: the best count wins
        run = lib.function(f"sm_peak{chains}")
        run.restype = ctypes.c_double
        best[chains] = chains * iterations / min(run(ctypes.c_long(iterations)) for _ in range(repeats))
    chains = max(best, key=best.get)
    return {"gmacs": instruction.macs * best[chains] / 1e9, "ginstructions": best[chains] / 1e9, "chains": chains}


def _disassembly_checks(lib, instruction: InstructionDescriptor, untensorized: tuple[Any, str] | None) -> dict[str, Any]:
    """Whether the tensorized kernel (and the untensorized one: did gcc find the instruction by itself?)
    contain the instruction's mnemonics; None with the reason when objdump is missing."""
    mnemonics = list(instruction.x86.mnemonics) if instruction.x86 else []
    try:
        out = {"kernel_uses_instruction": all(lib.disassembly_contains(m, "k_tensorized") for m in mnemonics),
               "untensorized_uses_instruction": (all(untensorized[0].disassembly_contains(m, untensorized[1])
                                                     for m in mnemonics) if untensorized else None)}
    except BackendUnavailable as exc:
        return {"kernel_uses_instruction": None, "untensorized_uses_instruction": None, "disassembly": str(exc)}
    out["disassembly"] = f"objdump: {', '.join(mnemonics)}"
    return out


def _onnxruntime_peers(program: Program, inputs: dict[str, np.ndarray], ref: np.ndarray) -> dict[str, Any]:
    """onnxruntime sessions for the layer and their exactness on ``inputs`` (empty without onnxruntime)."""
    conv = program.attrs.get("conv2d")
    if conv is None or peers.onnxruntime_unavailable():
        return {}
    y_scale = peers.output_scale(ref)
    sessions = {}
    for op in peers.OPS:
        session = peers.OnnxRuntimeConv(op, inputs["data"].shape, inputs["weight"], conv["stride"], y_scale)
        exact, wrong, max_error = peers.check_output(op, session.run(inputs["data"]), ref, y_scale)
        sessions[op] = (session, peers.PeerResult(op, exact, wrong, max_error))
    return sessions


def validate(problem: TensorizeProblem, decision: TensorizeMapping, instruction: InstructionDescriptor,
             target: CpuTarget, options: ValidationOptions) -> dict[str, Any]:
    load_before = os.getloadavg()
    nest = rewrite(problem, decision, instruction)
    rewrite_report = check_rewrite(problem, decision, nest)
    program = problem.program
    ranges = input_ranges(nest)
    inputs = conv2d_inputs(program, options.seed, ranges)
    full_inputs = conv2d_inputs(program, options.seed) if ranges else inputs
    ref = reference(program, inputs)
    full_ref = reference(program, full_inputs) if ranges else ref
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
                                            "storage": p.layout.dtype, "lane_strides": dict(p.lane_strides)}
                                for p in nest.operands.values()},
        "rewrite_check": rewrite_report.to_json(),
        "input_ranges": {name: list(r) for name, r in ranges.items()} or "full range of the operand types",
        "exact_on_full_range_by_design": instruction.exact_on_full_range,
    }
    if execute == "emulate":
        if "instruction_emulator" not in checks:  # the emulator is this mode's execution: always run it
            checks["instruction_emulator"] = bool(np.array_equal(
                out_layout.unpack(emulate(nest, nest.pack_inputs(inputs))), ref))
        if ranges and nest.calls <= options.emulate_max_calls:
            metrics["full_range"] = error_summary(out_layout.unpack(emulate(nest, nest.pack_inputs(full_inputs))),
                                                  full_ref)
        result = tune(nest, target, lambda s: estimate(nest, s, target.core).seconds, tuner=options.tuner,
                      trials=options.trials, pairs=options.unit_pairs, seed=options.seed, reorder=options.reorder,
                      tiles=options.tiles)
        metrics.update({"bit_exact": all(checks.values()) and rewrite_report.ok, "bit_exact_checks": checks,
                        "execution": "emulated (no code generation for this target)",
                        "predicted_latency_s": result.best_seconds, "latency_s": None,
                        "speedup_vs_untensorized": None, "speedup_vs_onnxruntime": None,
                        "tuning": result.summary(), "schedule": result.best.to_json()})
        return metrics
    bench = Bench(nest, target, inputs)
    result = tune_kernel(bench, problem, nest, target, options, ref, codegen.tensorized_kernel, "tuned")
    best, default = result.best, result.default
    untensorized = best
    untensorized_tuning = None
    channels_last = None
    if options.compare and options.tune_untensorized:
        untensorized_tuning = tune_kernel(bench, problem, nest, target, options, ref, codegen.untensorized_kernel,
                                          "untensorized")
        untensorized = untensorized_tuning.best
        channels_last = tune_channels_last(bench, program, inputs, ref, options)
        if channels_last is not None and min(t["measured_s"] for t in channels_last.tuning) >= untensorized_tuning.best_seconds:
            channels_last = None  # the scalar form of the rewritten nest was faster
    kernels = [codegen.tensorized_kernel(nest, best, "k_tensorized", parallel=bench.parallel),
               codegen.tensorized_kernel(nest, default, "k_default", parallel=bench.parallel)]
    timed = [("tensorized", "k_tensorized", True), ("default", "k_default", True)]
    if options.compare:
        kernels += [codegen.untensorized_kernel(nest, untensorized, "k_untensorized", parallel=bench.parallel),
                    codegen.naive_kernel(program, "k_naive")]
        timed += [("naive", "k_naive", False)] + ([] if channels_last else [("untensorized", "k_untensorized", True)])
    lib = bench.library(kernels)
    _, full_out = bench.run(lib, "k_tensorized", packed=True, min_seconds=0.0, min_reps=1, inputs=full_inputs)
    metrics["full_range"] = error_summary(full_out, full_ref)
    ort = _onnxruntime_peers(program, full_inputs, full_ref) if options.compare else {}
    rounds: dict[str, list[float]] = {key: [] for key, _, _ in timed}
    if options.compare:
        rounds["numpy"] = []
    for _ in range(options.rounds):
        for key, name, packed in timed:
            seconds, out = bench.run(lib, name, packed=packed, min_seconds=options.min_seconds, min_reps=options.min_reps)
            rounds[key].append(seconds)
            checks[f"compiled_{key}"] = checks.get(f"compiled_{key}", True) and bool(np.array_equal(out, ref))
        if channels_last is not None:
            seconds, out = channels_last.run(inputs, min_seconds=options.min_seconds, min_reps=options.min_reps)
            rounds.setdefault("untensorized", []).append(seconds)
            checks["compiled_untensorized"] = checks.get("compiled_untensorized", True) and bool(np.array_equal(out, ref))
        if options.compare:
            rounds["numpy"].append(_numpy_time(program, inputs, options.min_seconds, 1))
        for session, _ in ort.values():
            session.timed_round(full_inputs["data"], options.min_seconds, options.min_reps)
    for session, peer in ort.values():
        peer.kernel_rounds, peer.run_rounds = session.profile(warmup_calls=1)
    med = {k: statistics.median(v) for k, v in rounds.items()}
    for key in ("untensorized", "naive", "numpy"):
        med.setdefault(key, float("nan"))
    predicted = estimate(nest, best, target.core)
    macs = useful_macs(problem)
    onnxruntime: dict[str, Any] = {"version": peers.onnxruntime_version(), "threads": 1,
                                   "timing": "onnxruntime profiler: convolution node (kernel) and whole run"}
    if not options.compare:
        onnxruntime["reason"] = "comparison switched off (compare=False)"
    elif program.attrs.get("conv2d") is None:
        onnxruntime["reason"] = "not a 2-D convolution"
    elif peers.onnxruntime_unavailable():
        onnxruntime["reason"] = peers.onnxruntime_unavailable()
    for op, (_, peer) in ort.items():
        onnxruntime[op] = {"exact_on_full_range": peer.exact, "wrong_fraction": peer.wrong_fraction,
                           "max_error": peer.max_error, "kernel_latency_s": peer.kernel_seconds,
                           "run_latency_s": peer.run_seconds, "kernel_gmacs": macs / peer.kernel_seconds / 1e9,
                           "speedup": peer.kernel_seconds / med["tensorized"],
                           "kernel_round_seconds": peer.kernel_rounds}
    metrics.update({
        "bit_exact": all(checks.values()) and rewrite_report.ok,
        "bit_exact_checks": checks,
        "speedup_vs_untensorized": med["untensorized"] / med["tensorized"],
        "speedup_vs_onnxruntime": onnxruntime["ConvInteger"]["speedup"] if "ConvInteger" in onnxruntime else None,
        "speedup_vs_onnxruntime_qlinearconv": (onnxruntime["QLinearConv"]["speedup"]
                                               if "QLinearConv" in onnxruntime else None),
        "onnxruntime": onnxruntime,
        "speedup_vs_numpy": med["numpy"] / med["tensorized"],
        "speedup_vs_naive": med["naive"] / med["tensorized"],
        "tuned_vs_default": med["default"] / med["tensorized"],
        "gmacs": macs / med["tensorized"] / 1e9,
        "latency_s": med["tensorized"],
        "measured_latency_s": med["tensorized"],
        "predicted_latency_s": predicted.seconds,
        "latency_rel_diff": (predicted.seconds - med["tensorized"]) / med["tensorized"],
        "predicted_bound": predicted.bound,
        "default_latency_s": med["default"],
        "untensorized_latency_s": med["untensorized"],
        "untensorized_form": ("channels-last dot product (gcc vectorises the channel loop)" if channels_last else
                              "rewritten nest with the instruction as scalar C loops"),
        "untensorized_schedule": channels_last.params if channels_last else untensorized.to_json(),
        "untensorized_tuning": ({"channels_last": channels_last.tuning if channels_last else None,
                                 "rewritten_nest": untensorized_tuning.summary()} if untensorized_tuning
                                else "tensorized schedule"),
        "naive_latency_s": med["naive"],
        "numpy_latency_s": med["numpy"],
        "round_seconds": rounds,
        "schedule": best.to_json(),
        "unroll": predicted.unroll,
        "tuning": result.summary(),
        "tuning_trials": [t.to_json() for t in result.trials],
        **_disassembly_checks(lib, instruction, None if not options.compare else (
            (channels_last.lib, channels_last.name) if channels_last else (lib, "k_untensorized"))),
        "timing": {"rounds": options.rounds, "min_seconds": options.min_seconds, "threads": target.tuning.threads,
                   "statistic": "median over interleaved rounds of the per-round fastest call (thread CPU time)",
                   "load_average_before": list(load_before), "load_average_after": list(os.getloadavg()),
                   "compiler": toolchain.compiler_version(target.toolchain.cc), "cpu": toolchain.cpu_model(),
                   "flags": bench.flags, "compile_seconds": bench.compile_seconds},
    })
    return metrics
