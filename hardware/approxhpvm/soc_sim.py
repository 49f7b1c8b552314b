"""Simulator of one knob configuration on the ApproxHPVM SoC: functional Monte Carlo, time and energy.

Functional (seed L1163)
    A layer on PROMISE runs on the PROMISE functional model (:mod:`.promise_sim`). FP16 ops run with
    inputs, parameters and outputs rounded to float16; the products accumulate in float32, as tensor
    cores do. FP32 is the golden float64 reference. Every Monte Carlo run draws new noise (a seeded
    ``numpy`` generator for each run). A run *meets* the loss limit when golden accuracy − run accuracy ≤ limit
    (assumption A12).

Timing and energy (seed L1183)
    The network's total is the sum over its execution units, following the seed's "sum the layers" rule.
    An execution unit is either a PROMISE task (a whole layer, L1136) or a GPU kernel (a fused group, or a
    single op). On top of that come the activation transfers between units
    (:func:`~.gpu_cost.transfer_parts`), which include the casts and pDMA quantization when precisions
    differ. Edges inside a unit cost nothing, because fusion turns them into variable assignments (L470).
    Without pDMA the GPU's quantization and patching kernels beside a PROMISE task run pipelined with it: the
    shorter of the two is hidden (L1273). ``CostReport.layer_totals`` attributes the transfers to layers (the
    seed's per-layer breakdown, Fig. 5.10).

:func:`op_errors` measures each op's relative L1 and L2 error under every knob, with golden inputs
(eq. 5.1–5.2). It is the hardware lookup table of L1123, measured on each op of the network rather than per
op type.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from solvermap.hardware.approxhpvm import KNOBS, PROMISE_KNOBS, knob_precision, swing_level
from solvermap.hardware.approxhpvm.gpu_cost import Cost, Transfer, gpu_op_cost, launch_cost, transfer_parts
from solvermap.hardware.approxhpvm.promise_sim import noisy_conv, noisy_dot, quantize, task_cost
from solvermap.ir.workloads.approxhpvm_tensor_ops import (
    CONV3,
    PATCH_LIMIT,
    TensorNetwork,
    apply_op,
    conv2d,
    patch_elements,
)


# ---------------------------------------------------------------------- functional


def _fp16(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float16).astype(np.float64)


def run_op(net: TensorNetwork, spec, op, inputs: list[np.ndarray], knob: str, rng: np.random.Generator,
           *, task_output: bool) -> np.ndarray:
    """One op under ``knob``; ``task_output`` marks the last op of a PROMISE task (8-bit write-back)."""
    if knob == "FP32":
        return apply_op(op, inputs, net.params)
    if knob == "FP16":
        params = {op.param: _fp16(net.params[op.param])} if op.param else {}
        return _fp16(apply_op(op, [_fp16(x) for x in inputs], params))
    p = spec.promise
    f = p.f(swing_level(knob))
    x = inputs[0]

    def promise_product(a: np.ndarray, w: np.ndarray) -> np.ndarray:
        return noisy_dot(a, w, f, rng, data_bits=p.data_bits, weight_bits=p.weight_bits)

    if op.op == "gemm":
        out = promise_product(x.reshape(len(x), -1), net.params[op.param])
    elif op.op == "conv":
        window = op.window or CONV3
        if patch_elements(x.shape, window) <= PATCH_LIMIT:
            out = conv2d(x, net.params[op.param], window, promise_product)
        else:  # the same model, the patch products a few images at a time
            out = noisy_conv(x, net.params[op.param], window, f, rng, data_bits=p.data_bits, weight_bits=p.weight_bits)
    else:  # bias add, pooling, activation: digital Class-4 ops (Table 4.3)
        out = apply_op(op, inputs, net.params)
    return quantize(out, p.data_bits) if task_output else out


def task_outputs(net: TensorNetwork) -> set[str]:
    """The last op of every layer (where a PROMISE task writes its 8-bit output)."""
    return {net.layer_ops(layer)[-1].name for layer in net.layers}


def knob_hook(net: TensorNetwork, spec, knobs: Mapping[str, str], rng: np.random.Generator):
    last = task_outputs(net)

    def hook(op, inputs, golden):
        knob = knobs.get(op.name, "FP32")
        if knob == "FP32":
            return golden()
        return run_op(net, spec, op, inputs, knob, rng, task_output=op.name in last and knob in PROMISE_KNOBS)

    return hook


@dataclass(frozen=True)
class MonteCarlo:
    accuracies: tuple[float, ...]
    golden_accuracy: float
    loss_limit: float
    seed: int

    @property
    def runs(self) -> int:
        return len(self.accuracies)

    @property
    def losses(self) -> np.ndarray:
        return self.golden_accuracy - np.asarray(self.accuracies)

    @property
    def passes(self) -> int:
        return int(np.sum(self.losses <= self.loss_limit + 1e-12))

    @property
    def pass_rate(self) -> float:
        return self.passes / self.runs

    def summary(self) -> dict:
        acc = np.asarray(self.accuracies)
        return {"runs": self.runs, "pass_rate": self.pass_rate, "accuracy_mean": float(acc.mean()),
                "accuracy_std": float(acc.std()), "golden_accuracy": self.golden_accuracy,
                "loss_mean": float(self.losses.mean()), "loss_limit": self.loss_limit, "seed": self.seed}


def monte_carlo(net: TensorNetwork, spec, knobs: Mapping[str, str], *, runs: int, loss_limit: float,
                seed: int = 0) -> MonteCarlo:
    """Accuracy of ``runs`` noisy executions of the knob configuration on the test set."""
    golden = net.golden()
    x = net.data.x_test
    first_noisy = next((i for i, op in enumerate(net.ops) if knobs.get(op.name, "FP32") != "FP32"), len(net.ops))
    start = {op.name: golden[op.name] for op in net.ops[:first_noisy]}
    accuracies = []
    for run in range(runs):
        rng = np.random.default_rng([seed, run, 7])
        accuracies.append(net.accuracy(net.forward(x, knob_hook(net, spec, knobs, rng), start=start)))
    return MonteCarlo(tuple(accuracies), net.golden_accuracy(), loss_limit, seed)


def relative_errors(approx: np.ndarray, golden: np.ndarray) -> tuple[float, float]:
    """(L1e, L2e) of eq. 5.1–5.2."""
    diff = approx - golden
    l1 = float(np.abs(diff).sum() / max(np.abs(golden).sum(), 1e-30))
    l2 = float(np.sqrt((diff * diff).sum()) / max(np.sqrt((golden * golden).sum()), 1e-30))
    return l1, l2


def promise_eligible(net: TensorNetwork, spec, layer: str) -> bool:
    """A layer matches f(X·W+B) / f(X⊛W+B) (L1133) and its dot products are ≥ min_dot_length (L1248)."""
    ops = net.layer_ops(layer)
    return bool(ops) and ops[0].is_dot and ops[0].dot_length >= spec.promise.min_dot_length


def op_errors(net: TensorNetwork, spec, *, runs: int = 2, seed: int = 0, samples: int = 400,
              ) -> dict[str, dict[str, tuple[float, float]]]:
    """Measured (L1e, L2e) of every op under every knob it may take, from golden inputs (L1119–1123)."""
    golden = net.forward(net.data.x_test[:samples], keep=True)
    last = task_outputs(net)
    table: dict[str, dict[str, tuple[float, float]]] = {}
    for op in net.ops:
        inputs = [golden[i] for i in op.inputs]
        row = {}
        for knob in KNOBS:
            if knob in PROMISE_KNOBS and not promise_eligible(net, spec, op.layer):
                continue
            errs = []
            for run in range(runs if knob in PROMISE_KNOBS else 1):
                rng = np.random.default_rng([seed, run, KNOBS.index(knob), 11])
                out = run_op(net, spec, op, inputs, knob, rng, task_output=op.name in last and knob in PROMISE_KNOBS)
                errs.append(relative_errors(out, golden[op.name]))
            row[knob] = (float(np.mean([e[0] for e in errs])), float(np.mean([e[1] for e in errs])))
        table[op.name] = row
    return table


# ---------------------------------------------------------------------- time and energy


@dataclass(frozen=True)
class Schedule:
    """Knob per op plus the execution units (PROMISE tasks and GPU kernels) they run in."""

    knobs: Mapping[str, str]
    units: tuple[tuple[str, ...], ...]

    def unit_of(self) -> dict[str, int]:
        return {op: i for i, unit in enumerate(self.units) for op in unit}


def schedule_units(net: TensorNetwork, knobs: Mapping[str, str], gpu_groups: Sequence[Sequence[str]] = ()) -> Schedule:
    """PROMISE layers become one task each (L1136); GPU ops run in their fused groups (else alone)."""
    units: list[tuple[str, ...]] = []
    placed: set[str] = set()
    for layer in net.layers:
        ops = [op.name for op in net.layer_ops(layer)]
        if all(knobs.get(o, "FP32") in PROMISE_KNOBS for o in ops):
            units.append(tuple(ops))
            placed.update(ops)
    for group in gpu_groups:
        rest = tuple(o for o in group if o not in placed)
        if rest:
            units.append(rest)
            placed.update(rest)
    for op in net.ops:
        if op.name not in placed:
            units.append((op.name,))
    return Schedule(dict(knobs), tuple(units))


@dataclass
class CostReport:
    """``by_layer``: each layer's execution units (GPU kernels, PROMISE task) alone; ``layer_totals``: the same
    plus the activation transfers attributed to the layers (a producer's write to it, a consumer's casts and
    read to the consumer, the network input's to the first layer and the output's to the last), minus the GPU
    time hidden under a PROMISE task without pDMA — the per-layer breakdown the seed reports (Fig. 5.10)."""

    total: Cost
    by_layer: dict[str, Cost] = field(default_factory=dict)
    transfers: Cost = Cost()
    launches: int = 0
    layer_totals: dict[str, Cost] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"time_s": self.total.time_s, "energy_j": self.total.energy_j, "launches": self.launches,
                "transfer_time_s": self.transfers.time_s, "transfer_energy_j": self.transfers.energy_j,
                "by_layer": {k: {"time_s": v.time_s, "energy_j": v.energy_j} for k, v in self.by_layer.items()},
                "layer_totals": {k: {"time_s": v.time_s, "energy_j": v.energy_j} for k, v in self.layer_totals.items()}}


def param_elements(net: TensorNetwork, op) -> float:
    return float(net.params[op.param].size) if op.param else 0.0


def layer_promise_cost(net: TensorNetwork, spec, layer: str, level: int) -> Cost:
    """Compute and weight load of a whole layer as one PROMISE task (activation I/O is on the edges)."""
    main = net.layer_ops(layer)[0]
    w = net.params[main.param]
    outputs = main.out_elements  # dot products per image (K·H·W for conv, M for gemm)
    tc = task_cost(spec, dot_length=main.dot_length, outputs_per_image=outputs, weight_cols=w.shape[1],
                   level=level, batch=spec.batch, in_bytes=0.0, out_bytes=0.0)
    return Cost(tc.time_s, tc.energy_j)


def op_gpu_cost(net: TensorNetwork, spec, op, knob: str) -> Cost:
    return gpu_op_cost(spec, op=op.op, flops_per_image=op.n_c, param_elements=param_elements(net, op),
                       precision=knob_precision(knob), batch=spec.batch, dot_length=op.dot_length)


def device(knob: str) -> str:
    return "promise" if knob in PROMISE_KNOBS else "gpu"


def patch_factor(net: TensorNetwork, op) -> float:
    """Patch-matrix elements per input element of a convolution (C·k² per output position: about k²/stride²);
    1 for a GEMM, whose patch matrix is its input."""
    if op is None or op.op != "conv":
        return 1.0
    c, h, w = net.op_input_shape(op)
    window = op.window
    per_position = c * window.kernel ** 2
    return window.out_size(h) * window.out_size(w) * per_position / (c * h * w)


def edge_transfer(net: TensorNetwork, spec, src_op, knob_src: str | None, knob_dst: str | None,
                  dst_op=None) -> Transfer:
    """Transfer of ``src_op``'s output (None = the network input) to ``dst_op`` with ``knob_dst`` (None = host)."""
    elements = float((src_op.out_elements if src_op is not None else int(np.prod(net.input_shape))) * spec.batch)
    src_fmt, src_dev = ("fp32", "host") if knob_src is None else (knob_precision(knob_src), device(knob_src))
    dst_fmt, dst_dev = ("fp32", "host") if knob_dst is None else (knob_precision(knob_dst), device(knob_dst))
    return transfer_parts(spec, elements=elements, src=src_fmt, dst=dst_fmt, src_device=src_dev, dst_device=dst_dev,
                          patch_factor=patch_factor(net, dst_op) if dst_dev == "promise" else 1.0)


def edge_cost(net: TensorNetwork, spec, src_op, knob_src: str | None, knob_dst: str | None, dst_op=None) -> Cost:
    """The whole cost of :func:`edge_transfer` (what the decision models see: no pipelining overlap)."""
    return edge_transfer(net, spec, src_op, knob_src, knob_dst, dst_op).total


def schedule_cost(net: TensorNetwork, spec, schedule: Schedule) -> CostReport:
    """Time and energy of a schedule (module docstring)."""
    knobs = schedule.knobs
    unit = schedule.unit_of()
    ops = {op.name: op for op in net.ops}
    by_layer: dict[str, Cost] = {layer: Cost() for layer in net.layers}
    promise_time: dict[int, float] = {}
    launches = 0
    for index, members in enumerate(schedule.units):
        first = ops[members[0]]
        knob = knobs.get(first.name, "FP32")
        if knob in PROMISE_KNOBS:
            task = layer_promise_cost(net, spec, first.layer, swing_level(knob))
            by_layer[first.layer] += task
            promise_time[index] = task.time_s
            continue
        launches += 1
        by_layer[first.layer] += launch_cost(spec)
        for name in members:
            by_layer[ops[name].layer] += op_gpu_cost(net, spec, ops[name], knobs.get(name, "FP32"))
    totals = dict(by_layer)
    transfers = Cost()
    overlap: dict[int, float] = {}

    def move(src_op, dst_op):
        nonlocal transfers
        knob_src = None if src_op is None else knobs.get(src_op.name, "FP32")
        knob_dst = None if dst_op is None else knobs.get(dst_op.name, "FP32")
        t = edge_transfer(net, spec, src_op, knob_src, knob_dst, dst_op)
        transfers += t.total
        totals[(src_op or dst_op).layer] += t.producer
        totals[(dst_op or src_op).layer] += t.consumer
        if t.overlappable:  # GPU quantization/patching beside the PROMISE task it feeds or drains
            side = src_op if src_op is not None and unit[src_op.name] in promise_time else dst_op
            overlap[unit[side.name]] = overlap.get(unit[side.name], 0.0) + t.overlappable

    for op in net.ops:
        for src in op.inputs:
            if src == "input":
                move(None, op)
            elif unit[src] != unit[op.name]:
                move(ops[src], op)
    move(net.ops[-1], None)
    total = transfers
    for cost in by_layer.values():
        total += cost
    for index, gpu_seconds in overlap.items():  # pipelined with PROMISE (L1273): the shorter side is hidden
        hidden = min(gpu_seconds, promise_time[index])
        total = Cost(total.time_s - hidden, total.energy_j)
        layer = ops[schedule.units[index][0]].layer
        totals[layer] = Cost(totals[layer].time_s - hidden, totals[layer].energy_j)
    return CostReport(total, by_layer, transfers, launches, totals)


def all_fp32(net: TensorNetwork) -> dict[str, str]:
    return {op.name: "FP32" for op in net.ops}
