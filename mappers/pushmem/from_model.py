"""Models and layer-shape files on the push-memory CGRA: conv and pooling layers as loop-nest programs.

Every 2-D Conv (and every Gemm/MatMul, as a 1 × 1 conv) of an ONNX model or a layer-shape file becomes a
DNN program in the style of the ``resnet`` workload (seed 001 Table III): a coarse tile loop ``t`` over
bands of output rows (the largest divisor of the output height that is ≤ :data:`TILES`), the input band
with its halo loaded channels-last (``in_buf[t, y, x, c]``), the weights loaded per tile, the conv with the
channel reduction innermost and not unrolled (so the scheduler builds the double-buffered coarse pipeline,
001:L222–L226; the filter taps are unrolled in the expression; a depthwise layer, one channel per group,
loads its band channel-major and reduces over the filter rows instead), and the requantised output
``out = conv >> 4``. Groups add a group loop; strides and dilations are affine accesses. Every MaxPool /
AveragePool of a model becomes a stencil program (taps unrolled: max, or a sum shifted by log2 of a
power-of-two window). Data are int16 (the ``resnet`` workload's type); weights are deterministic program
inputs of the cycle simulator, so shape-only models map too.

A layer whose output rows are one word wide (P = 1: a matrix-vector product, e.g. a classifier's FC layer at
batch 1) is refused up front: the wide-fetch model has no schedule for it. Each distinct layer runs the whole push-memory pipeline (schedule … wide fetch, then the cycle simulation)
under its own name ``<model>:<layer>``; its records carry ``details.layer``/``details.layers``. A layer above
:data:`MAX_LAYER_MACS` (the cycle simulator visits every operation), or an operator without a rule, is a row
of the per-layer table that says why it was not mapped; so is a layer one of whose decisions is infeasible
(e.g. the wide-fetch model finds no shift schedule for a depthwise band). The end-to-end validation is the table and the
model's totals (layers run one after another: cycles and energy add up).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from solvermap.errors import InfeasibleError, InputError
from solvermap.ir.layer_shapes import ConvShape, LayerShapes, from_model
from solvermap.ir.loopnest import Program, Tensor, statement
from solvermap.ir.onnx_import import OnnxModel
from solvermap.mappers.pipeline import Context, Pipeline, PipelineResult

DT = "int16"
TILES = 4
MAX_LAYER_MACS = 1_000_000  # per layer: the cycle simulator and the schedule ILP visit every operation
SUPPORTED = ("Conv", "Gemm", "MatMul", "MaxPool", "AveragePool")


def is_model(ir: Any) -> bool:
    return isinstance(ir, (OnnxModel, LayerShapes))


@dataclass
class LayerProgram:
    names: list[str]
    kind: str  # conv | pool
    dims: dict[str, Any]
    macs: int
    program: Program | None = None
    refusal: str = ""


def _tiles(rows: int) -> int:
    return max(d for d in range(1, min(TILES, rows) + 1) if rows % d == 0)


def conv_program(shape: ConvShape, name: str) -> Program:
    """The DNN program of one conv layer (module docstring)."""
    s = shape
    if s.N != 1:
        raise InputError(name, "N", "the push-memory programs take one sample (N = 1)")
    tiles = _tiles(s.Q)
    rows = s.Q // tiles
    band = (rows - 1) * s.Hstride + (s.S - 1) * s.Hdilation + 1
    cg, kg = s.C // s.G, s.K // s.G
    grouped = s.G > 1
    k = f"{kg}*g + k" if grouped else "k"
    c = f"{cg}*g + c" if grouped else "c"
    outer = [("t", 0, tiles)] + ([("g", 0, s.G)] if grouped else []) + [("k", 0, kg if grouped else s.K)]
    if cg == 1:  # depthwise: channel-major bands; the filter rows are the (not unrolled) reduction
        layout = (tiles, s.C, band, s.W)
        load = statement("load_input", [("t", 0, tiles), ("c", 0, s.C), ("y", 0, band), ("x", 0, s.W)],
                         "in_buf[t, c, y, x]", "input[t, c, y, x]", dtype=DT)
        row_taps = " + ".join(f"w_buf[t, {k}, ry, {rx}] * in_buf[t, {k}, {s.Hstride}*y + {s.Hdilation}*ry, "
                              f"{s.Wstride}*x + {rx * s.Wdilation}]" for rx in range(s.R))
        conv = statement("conv", outer + [("y", 0, rows), ("x", 0, s.P), ("ry", 0, s.S, "reduction")],
                         f"conv[t, {k}, y, x]", f"({row_taps})", dtype=DT, accumulate=True)
    else:  # channels-last bands: a wide fetch reads consecutive channels
        layout = (tiles, band, s.W, s.C)
        load = statement("load_input", [("t", 0, tiles), ("y", 0, band), ("x", 0, s.W), ("c", 0, s.C)],
                         "in_buf[t, y, x, c]", "input[t, y, x, c]", dtype=DT)
        taps = " + ".join(f"w_buf[t, {k}, {ry}, {rx}, c] * in_buf[t, {s.Hstride}*y + {ry * s.Hdilation}, "
                          f"{s.Wstride}*x + {rx * s.Wdilation}, {c}]" for ry in range(s.S) for rx in range(s.R))
        conv = statement("conv", outer + [("y", 0, rows), ("x", 0, s.P), ("c", 0, cg, "reduction")],
                         f"conv[t, {k}, y, x]", f"({taps})", dtype=DT, accumulate=True)
    taps_shape = (s.S, s.R) if cg == 1 else (s.S, s.R, cg)
    tensors = {
        "input": Tensor("input", layout, DT, "input"),
        "weights": Tensor("weights", (s.K,) + taps_shape, DT, "input"),
        "in_buf": Tensor("in_buf", layout, DT),
        "w_buf": Tensor("w_buf", (tiles, s.K) + taps_shape, DT),
        "conv": Tensor("conv", (tiles, s.K, rows, s.P), DT),
        "output": Tensor("output", (tiles, s.K, rows, s.P), DT, "output"),
    }
    stmts = [
        load,
        statement("load_weights", [("t", 0, tiles), ("k", 0, s.K), ("ry", 0, s.S), ("rx", 0, s.R)], "w_buf[t, k, ry, rx]",
                  "weights[k, ry, rx]", dtype=DT) if cg == 1 else
        statement("load_weights", [("t", 0, tiles), ("k", 0, s.K), ("ry", 0, s.S), ("rx", 0, s.R), ("c", 0, cg)],
                  "w_buf[t, k, ry, rx, c]", "weights[k, ry, rx, c]", dtype=DT),
        conv,
        statement("hw_output", [("t", 0, tiles), ("k", 0, s.K), ("y", 0, rows), ("x", 0, s.P)], "output[t, k, y, x]",
                  "conv[t, k, y, x] >> 4", dtype=DT),
    ]
    return Program(name, tensors, stmts, attrs={"coarse_loops": 1, "layer": s.describe()}).validate()


def pool_program(name: str, kind: str, channels: int, height: int, width: int, kernel: tuple[int, int],
                 stride: tuple[int, int], out_hw: tuple[int, int]) -> Program:
    """A stencil program of one pooling layer over the unpadded input (module docstring)."""
    (kh, kw), (sh, sw), (ho, wo) = kernel, stride, out_hw
    taps = [f"in_buf[c, {sh}*y + {ry}, {sw}*x + {rx}]" for ry in range(kh) for rx in range(kw)]
    if kind == "max":
        expr = taps[0]
        for tap in taps[1:]:
            expr = f"max({expr}, {tap})"
    else:
        window = kh * kw
        if window & (window - 1):
            raise InputError(name, "kernel_shape", f"an average over {window} elements is not a power-of-two shift")
        expr = f"({' + '.join(taps)}) >> {int(math.log2(window))}"
    tensors = {"input": Tensor("input", (channels, height, width), DT, "input"),
               "in_buf": Tensor("in_buf", (channels, height, width), DT),
               "output": Tensor("output", (channels, ho, wo), DT, "output")}
    stmts = [statement("hw_input", [("c", 0, channels), ("y", 0, height), ("x", 0, width)], "in_buf[c, y, x]",
                       "input[c, y, x]", dtype=DT),
             statement("pool", [("c", 0, channels), ("y", 0, ho), ("x", 0, wo)], "output[c, y, x]", expr, dtype=DT)]
    return Program(name, tensors, stmts, attrs={"image": height}).validate()


def layer_programs(model_name: str, ir: Any) -> list[LayerProgram]:
    """The distinct conv layers (then the distinct pooling layers) of a model, as programs or refusals."""
    shapes = ir if isinstance(ir, LayerShapes) else from_model(ir)
    out: list[LayerProgram] = []
    for shape, names in shapes.distinct():
        entry = LayerProgram(list(names), "conv", shape.describe(), shape.macs)
        if shape.N != 1:
            entry.refusal = f"batch N = {shape.N} (a product of two activations); the programs take one sample"
        elif shape.P == 1:
            entry.refusal = "output rows of width P = 1 (a matrix-vector product): no wide-fetch schedule exists for rows of one word"
        elif shape.macs > MAX_LAYER_MACS:
            entry.refusal = f"{shape.macs} MACs exceed the push-memory limit of {MAX_LAYER_MACS} per layer"
        else:
            entry.program = conv_program(shape, f"{model_name}:{names[0]}")
        out.append(entry)
    if isinstance(ir, OnnxModel):
        pools: dict[tuple, LayerProgram] = {}
        for node in ir.op_nodes():
            if node.op not in ("MaxPool", "AveragePool"):
                continue
            a = node.attrs.get("onnx_attrs", {})
            x = ir.shapes[node.attrs["inputs"][0]]
            y = ir.shapes[node.attrs["outputs"][0]]
            kernel = tuple(int(k) for k in a.get("kernel_shape", [1, 1]))
            stride = tuple(int(s) for s in a.get("strides", [1, 1]))
            key = (node.op, tuple(x), tuple(y), kernel, stride)
            if key in pools:
                pools[key].names.append(node.name)
                continue
            dims = {"C": x[1], "H": x[2], "W": x[3], "kernel": list(kernel), "stride": list(stride)}
            entry = LayerProgram([node.name], "pool", dims, int(math.prod(y)) * kernel[0] * kernel[1])
            if any(int(p) for p in a.get("pads", [0, 0, 0, 0])) or int(a.get("ceil_mode", 0)):
                entry.refusal = "padded or ceil-mode pooling has no program rule"
            elif entry.macs > MAX_LAYER_MACS:
                entry.refusal = f"{entry.macs} operations exceed the push-memory limit of {MAX_LAYER_MACS} per layer"
            else:
                try:
                    entry.program = pool_program(f"{ir.name}:{node.name}", "max" if node.op == "MaxPool" else "avg",
                                                 x[1], x[2], x[3], kernel, stride, (y[2], y[3]))
                except InputError as exc:
                    entry.refusal = exc.problem
            pools[key] = entry
        out += list(pools.values())
    return out


@dataclass(frozen=True)
class LayerwisePipeline(Pipeline):
    """The push-memory pipeline, run once per layer program when the workload is a model."""

    def run(self, ctx: Context, upto: str | None = None) -> PipelineResult:
        if not is_model(ctx.workload.ir):
            return super().run(ctx, upto)
        from solvermap.ir.workloads import Workload

        ctx._typed.update(self.check_options(ctx.options))
        entries = layer_programs(ctx.workload.name, ctx.workload.ir)
        if not any(e.program is not None for e in entries):
            first = entries[0].refusal if entries else "no Conv, Gemm, MatMul or pooling layer"
            raise InputError(ctx.workload.name, "model", f"no layer maps on the push-memory CGRA (family pushmem): {first}")
        rows: list[dict[str, Any]] = []
        totals = {"cycles": 0, "energy_j": 0.0}
        exact = True
        for entry in entries:
            if entry.program is None:
                rows += [{"layer": n, "kind": entry.kind, **entry.dims, "macs": entry.macs, "status": f"not mapped: {entry.refusal}"}
                         for n in entry.names]
                continue
            ctx.say(f"layer '{entry.names[0]}' ({entry.kind}, {entry.macs} MACs)")
            child = Context(workload=Workload(entry.program.name, ctx.workload.family, dict(ctx.workload.params),
                                              entry.program, f"layer of {ctx.workload.name}"),
                            target=ctx.target, solver=ctx.solver, options=ctx.options, seed=ctx.seed,
                            progress=ctx.progress, solve_cache=ctx.solve_cache)
            try:
                result = super().run(child, upto)
            except InfeasibleError as exc:  # this layer has no mapping: a row of the table, not the model's end
                rows += [{"layer": n, "kind": entry.kind, **entry.dims, "macs": entry.macs, "status": f"not mapped: {exc}"}
                         for n in entry.names]
                continue
            for record in result.records:
                record.details["layer"] = entry.names[0]
                record.details["layers"] = list(entry.names)
            ctx.records.extend(result.records)
            v = result.validation
            for n in entry.names:
                rows.append({"layer": n, "kind": entry.kind, **entry.dims, "macs": entry.macs, "status": "mapped",
                             **{key: v.get(key) for key in ("cycles", "sequential_cycles", "bit_exact", "energy_j",
                                                            "tiles_used", "sram_words")}})
                if upto is None:
                    totals["cycles"] += int(v.get("cycles", 0))
                    totals["energy_j"] += float(v.get("energy_j", 0.0))
                    exact = exact and bool(v.get("bit_exact"))
        if not ctx.records:
            raise InfeasibleError(f"no layer of {ctx.workload.name} maps on the push-memory CGRA (family pushmem): "
                                  f"{rows[0]['status']}")
        validation: dict[str, Any] = {"layers": rows, "layers_total": len(rows),
                                      "layers_mapped": sum(1 for r in rows if r["status"] == "mapped")}
        if upto is None:
            validation.update({"cycles": totals["cycles"], "energy_j": totals["energy_j"], "bit_exact": exact,
                               "tiles_used": max((r.get("tiles_used") or 0) for r in rows)})
        return PipelineResult(ctx.records, validation if upto is None else (ctx.records[-1].validation if ctx.records else {}))
