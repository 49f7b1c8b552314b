"""Peers a user would run for a quantized convolution on a CPU: onnxruntime's two int8 convolutions.

Both run the same uint8 activations (NCHW, batch 1) and int8 weights as the tensorized kernel, on one
thread (``intra_op_num_threads = inter_op_num_threads = 1``, all graph optimisations on — what a user
gets by default):

* ``ConvInteger`` — uint8 × int8 → int32, zero points 0: the same output as our kernels, compared
  bit-exactly with the reference.
* ``QLinearConv`` — the quantized operator with requantized uint8 output. Scales 1 for activations
  and weights, output scale ``max|reference| / 127`` and zero point 128, so the output spans the uint8
  range. "Exact" means every output within one level of the exact int32 accumulator requantized in
  float64 (round half to even, clipped); the fraction of outputs further off and the largest error in
  levels say how far it is from that where it is not (issue #26: onnxruntime's AVX2 u8s8 path
  saturates pair sums in ``vpmaddubsw``; its VNNI paths do not).

Timing, per call: onnxruntime's own profiler gives the wall time of the convolution node and of the
whole ``Run`` (with the layout transposes onnxruntime inserts around an NHWC kernel); the thread CPU
time of the ``run`` call (:func:`time.thread_time`, onnxruntime runs a one-thread session in the
caller's thread) does not count the time the thread waits for a core on a loaded machine. Both bound
the convolution's time from above, so a round reports the lesser of the fastest profiled call and the
CPU time per call (``kernel``), and the fastest whole run (``run``); our kernels are timed by the
thread CPU clock inside C.
onnxruntime is optional (extra ``solvermap[peers]``): :func:`onnxruntime_unavailable` says why it
cannot run, and the validation reports that reason instead of a speedup.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
from dataclasses import dataclass, field

import numpy as np

OPS = ("ConvInteger", "QLinearConv")
SAMPLE_SECONDS = 2e-4  # a CPU-time sample runs at least this long (the thread clock's resolution is ~1 us)


def onnxruntime_unavailable() -> str | None:
    """None if onnxruntime can be imported, else why not (with how to install it)."""
    try:
        import onnxruntime  # noqa: F401
    except ImportError as exc:
        return f"onnxruntime is not installed ({exc.name or exc}); pip install 'solvermap[peers]'"
    return None


def onnxruntime_version() -> str | None:
    try:
        import onnxruntime
    except ImportError:
        return None
    return onnxruntime.__version__


def requantize(reference: np.ndarray, y_scale: float, zero_point: int = 128) -> np.ndarray:
    """The exact int32 accumulators as QLinearConv's uint8 output (scales 1 for inputs)."""
    return np.clip(np.rint(reference.astype(np.float64) / y_scale) + zero_point, 0, 255)


def output_scale(reference: np.ndarray) -> float:
    return max(1.0, float(np.abs(reference).max()) / 127.0)


@dataclass
class PeerResult:
    """One peer's exactness on the test data and its per-call times (seconds) per round."""

    name: str
    exact: bool
    wrong_fraction: float
    max_error: float
    kernel_rounds: list[float] = field(default_factory=list)
    run_rounds: list[float] = field(default_factory=list)

    @property
    def kernel_seconds(self) -> float:
        return statistics.median(self.kernel_rounds)

    @property
    def run_seconds(self) -> float:
        return statistics.median(self.run_rounds)


class OnnxRuntimeConv:
    """One single-node onnxruntime session (see module docstring); ``calls`` counts runs for the profiler."""

    def __init__(self, op: str, data_shape: tuple[int, ...], weight: np.ndarray, stride: int, y_scale: float = 1.0):
        import onnx
        import onnxruntime as ort
        from onnx import TensorProto, helper, numpy_helper

        if op not in OPS:
            raise ValueError(f"unknown onnxruntime peer {op!r}; known: {', '.join(OPS)}")
        self.op = op
        w = numpy_helper.from_array(np.ascontiguousarray(weight), "w")
        u8_zero = numpy_helper.from_array(np.array(0, np.uint8), "x_zero")
        s8_zero = numpy_helper.from_array(np.array(0, np.int8), "w_zero")
        if op == "ConvInteger":
            node = helper.make_node("ConvInteger", ["x", "w", "x_zero", "w_zero"], ["y"], strides=[stride, stride])
            inits, out_type = [w, u8_zero, s8_zero], TensorProto.INT32
        else:
            scales = [numpy_helper.from_array(np.array(v, np.float32), n)
                      for n, v in (("x_scale", 1.0), ("w_scale", 1.0), ("y_scale", y_scale))]
            y_zero = numpy_helper.from_array(np.array(128, np.uint8), "y_zero")
            node = helper.make_node("QLinearConv", ["x", "x_scale", "x_zero", "w", "w_scale", "w_zero", "y_scale",
                                                    "y_zero"], ["y"], strides=[stride, stride])
            inits, out_type = [w, u8_zero, s8_zero, y_zero, *scales], TensorProto.UINT8
        K, _, R, _ = weight.shape
        out_shape = (1, K) + tuple((n - R) // stride + 1 for n in data_shape[1:])
        graph = helper.make_graph([node], op, [helper.make_tensor_value_info("x", TensorProto.UINT8, (1, *data_shape))],
                                  [helper.make_tensor_value_info("y", out_type, out_shape)], inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        model.ir_version = 8
        onnx.checker.check_model(model)
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        options.enable_profiling = True
        self._profile_dir = tempfile.mkdtemp(prefix="solvermap-ort-")
        options.profile_file_prefix = os.path.join(self._profile_dir, "profile")
        self.session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        self.rounds: list[int] = []  # calls per timed round, in order
        self.cpu_rounds: list[float] = []  # per round, the least thread CPU seconds per call

    def run(self, data: np.ndarray) -> np.ndarray:
        return self.session.run(None, {"x": data[None]})[0][0]

    def timed_round(self, data: np.ndarray, min_seconds: float, min_reps: int) -> None:
        """Run ``min_reps`` samples and at least ``min_seconds`` of CPU time; the profiler records each call,
        the thread CPU time of each sample (several calls of about ``SAMPLE_SECONDS``) is kept."""
        feed = {"x": np.ascontiguousarray(data[None])}
        calls, samples = 0, []
        while len(samples) < min_reps or sum(t * n for t, n in samples) < min_seconds:
            inner = max(1, int(SAMPLE_SECONDS / samples[-1][0])) if samples else 1
            t0 = time.thread_time()
            for _ in range(inner):
                self.session.run(None, feed)
            samples.append((max(time.thread_time() - t0, 1e-9) / inner, inner))
            calls += inner
        self.rounds.append(calls)
        self.cpu_rounds.append(min(t for t, _ in samples))

    def profile(self, warmup_calls: int) -> tuple[list[float], list[float]]:
        """Per timed round, the kernel seconds (lesser of the fastest profiled node time and the CPU time per
        call) and the fastest whole run (ends this session's profiling)."""
        path = self.session.end_profiling()
        try:
            events = json.loads(open(path).read())
        finally:
            os.unlink(path)
            os.rmdir(self._profile_dir)
        runs = [e["dur"] * 1e-6 for e in events if e.get("cat") == "Session" and e.get("name") == "model_run"]
        node_events = [e for e in events if e.get("cat") == "Node" and e.get("args", {}).get("op_name") == self.op]
        # several nodes of the op per run cannot occur in a one-node model; per run, one kernel event
        kernels = [e["dur"] * 1e-6 for e in node_events if e["name"].endswith("_kernel_time")]
        runs, kernels = runs[warmup_calls:], kernels[warmup_calls:]
        kernel_rounds, run_rounds, k = [], [], 0
        for calls, cpu in zip(self.rounds, self.cpu_rounds):
            kernel_rounds.append(min(min(kernels[k:k + calls]), cpu))
            run_rounds.append(min(runs[k:k + calls]))
            k += calls
        return kernel_rounds, run_rounds


def check_output(op: str, output: np.ndarray, reference: np.ndarray, y_scale: float) -> tuple[bool, float, float]:
    """(exact, fraction of outputs wrong, largest error) of a peer's output (see module docstring)."""
    if op == "ConvInteger":
        diff = np.abs(output.astype(np.int64) - reference.astype(np.int64))
        return bool(not diff.any()), float((diff > 0).mean()), float(diff.max())
    diff = np.abs(output.astype(np.float64) - requantize(reference, y_scale))
    return bool((diff <= 1).all()), float((diff > 1).mean()), float(diff.max())


# ------------------------------------------------------------------ TVM

TVM_TUNING_REASON = (
    "TVM 0.27 ships no x86 int8 convolution schedule (topi.x86 went with Relay) and its MetaSchedule "
    "tuner produced no schedule on this install (apache-tvm-ffi 0.1.15: segfault in ToJSONGraph; 0.1.14: "
    "the local builder hangs), so TVM runs its default Relax build, untuned")


def tvm_unavailable() -> str | None:
    """None if TVM (Relax) can be imported, else why not."""
    os.environ.setdefault("TVM_NUM_THREADS", "1")  # before the runtime starts its thread pool
    try:
        import tvm
        from tvm import relax  # noqa: F401
    except ImportError as exc:
        return f"apache-tvm is not installed ({exc.name or exc}); pip install 'solvermap[tvm]'"
    except Exception as exc:  # noqa: BLE001 - a broken binary install is a reason, not a crash
        return f"apache-tvm does not load here: {type(exc).__name__}: {exc}"
    return None


def tvm_version() -> str | None:
    if tvm_unavailable():
        return None
    import tvm

    return tvm.__version__


class TvmConv:
    """The convolution as TVM users build it: a Relax function (casts to int32, ``conv2d`` with int32
    output) compiled by ``tvm.compile`` for this CPU (``llvm``, the host's ``mcpu``), one thread,
    timed by TVM's own ``time_evaluator`` (in C++, per call)."""

    def __init__(self, data_shape: tuple[int, ...], weight: np.ndarray, stride: int):
        import tvm
        from tvm import relax

        tensor_type = getattr(relax, "TensorStructInfo", None) or relax.TensorType
        builder = relax.BlockBuilder()
        x = relax.Var("x", tensor_type((1, *data_shape), "uint8"))
        w = relax.Var("w", tensor_type(tuple(weight.shape), "int8"))
        with builder.function("main", [x, w]):
            with builder.dataflow():
                xi = builder.emit(relax.op.astype(x, "int32"))
                wi = builder.emit(relax.op.astype(w, "int32"))
                y = builder.emit(relax.op.nn.conv2d(xi, wi, strides=(stride, stride), out_dtype="int32"))
                out = builder.emit_output(y)
            builder.emit_func_output(out)
        self.target = tvm.target.Target.from_device(tvm.cpu())
        executable = tvm.compile(builder.get(), target=self.target)
        self.device = tvm.cpu()
        self.vm = relax.VirtualMachine(executable, self.device)
        self.weight = tvm.runtime.tensor(np.ascontiguousarray(weight), self.device)
        self.rounds: list[float] = []

    def run(self, data: np.ndarray) -> np.ndarray:
        import tvm

        return self.vm["main"](tvm.runtime.tensor(np.ascontiguousarray(data[None]), self.device), self.weight).numpy()[0]

    def timed_round(self, data: np.ndarray, min_seconds: float, min_reps: int) -> None:
        """Per round, the lesser of TVM's fastest ``time_evaluator`` call (wall) and the thread CPU time per
        call of the VM function (both bound the kernel's time from above)."""
        import tvm

        x = tvm.runtime.tensor(np.ascontiguousarray(data[None]), self.device)
        evaluator = self.vm.time_evaluator("main", self.device, number=1, repeat=max(1, min_reps), min_repeat_ms=0)
        wall = list(evaluator(x, self.weight).results)
        function, cpu = self.vm["main"], []
        while len(cpu) < max(1, min_reps) or sum(cpu) < min_seconds:
            t0 = time.thread_time()
            function(x, self.weight)
            cpu.append(max(time.thread_time() - t0, 1e-9))
        self.rounds.append(min(min(wall), min(cpu)))
