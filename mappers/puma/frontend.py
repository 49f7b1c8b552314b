"""ONNX converter (seed 003 Sec. III, L104–L110 ``prepare``): imported ONNX model → PUMA :class:`Network`.

Input is an :class:`~solvermap.ir.onnx_import.OnnxModel` (a ``.onnx`` file, a built-in workload), a
layer-shape file (:class:`~solvermap.ir.layer_shapes.LayerShapes`: each layer a conv read from its own
input) or a graph file that came from an ONNX import. A model without weight values (shape-only) still
lowers: its layers carry no weights and only the functional simulation needs them.

Shapes are per sample: a tensor's leading batch axis (size 1) is dropped; an operator that works along
the batch axis is refused. Lowering rules (operators are the importer's canonical names):

==========================================  =========================================================
Gemm / MatMul with a constant matrix        ``dense`` (a following Add of a constant vector becomes its
                                            bias; Gemm alpha, beta, transB; transA through a transpose)
Conv (groups, dilation, pads, auto_pad)     ``conv`` (a following constant Add becomes its bias)
LSTM (forward, one direction)               ``lstm`` (B = Wb + Rb)
MatMul / Gemm of two activations            ``matmul`` on the cores' digital units
Add/Sub/Mul/Div/Max/Min of two tensors      ``add`` (equal shapes) or ``binary``
the same with a constant                    ``affine`` (scale, shift), ``clip`` (scalar Max/Min), ``act``
                                            (Pow with a constant exponent, Div of a constant)
unary activations, Clip                     ``act`` (LUT), ``clip``
BatchNormalization                          ``affine`` (folded into a preceding conv by the optimiser)
LayerNormalization, InstanceNormalization   ``layernorm``
LRN, Softmax, LogSoftmax                    ``lrn``, ``softmax``
MaxPool / AveragePool / Global*Pool         pooling (ceil_mode through extra end padding)
ReduceMean/Sum/Max/Min                      ``reduce``
Flatten / Reshape / Squeeze / Unsqueeze     ``reshape``
Transpose, Concat, Pad (constant), Slice,   ``transpose``, ``concat``, ``pad``, ``slice`` (Split: one slice
Split, DepthToSpace, Resize (nearest, ×n)   per output), ``depth_to_space``, ``upsample``
Identity, Dropout, Cast, (De)QuantizeLinear aliases (PUMA's own fixed point replaces the model's)
==========================================  =========================================================

Anything else the importer accepts but PUMA cannot run (GRU, Gather with runtime indices, Expand or
Tile of an activation, ...) is an :class:`~solvermap.errors.InputError` naming the operator, the node and
the family; so is a model without any crossbar layer.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from solvermap.errors import InputError
from solvermap.hardware.puma.network import ACTIVATION_FUNCTIONS, Layer, Network
from solvermap.ir.graph import DataflowGraph, NodeKind

FAMILY = "puma"
ALIASES = {"Identity", "Dropout", "Cast", "QuantizeLinear", "DequantizeLinear"}
RESHAPES = {"Flatten", "Reshape", "Squeeze", "Unsqueeze"}
ACTIVATION_OPS = {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "Silu", "Gelu", "Erf", "Exp",
                  "Log", "Sqrt", "Reciprocal", "Neg", "Abs", "Floor", "Ceil", "Round", "Softplus", "Elu", "Selu",
                  "Celu", "Mish", "Softsign", "Sin", "Cos"}
BINARY_OPS = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div", "Max": "max", "Min": "min", "Sum": "add"}
# what the PUMA lowering runs (the README's operator table reads this)
SUPPORTED = (ALIASES | RESHAPES | ACTIVATION_OPS | set(BINARY_OPS) | {
    "Gemm", "MatMul", "Conv", "LSTM", "Clip", "PRelu", "Pow", "Mean", "BatchNormalization", "LayerNormalization",
    "InstanceNormalization", "LRN", "Softmax", "LogSoftmax", "MaxPool", "AveragePool", "GlobalAveragePool",
    "GlobalMaxPool", "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "Transpose", "Concat", "Pad", "Slice",
    "Split", "DepthToSpace", "Resize"})


def as_model(ir: Any):
    """The :class:`OnnxModel` behind a workload (a graph imported from ``.onnx`` is re-read from its file)."""
    from solvermap.ir.onnx_import import OnnxModel, import_model

    if isinstance(ir, OnnxModel):
        return ir
    if isinstance(ir, DataflowGraph):
        if ir.source.endswith(".onnx") and Path(ir.source).exists():
            return import_model(ir.source)
        return _graph_only(ir)
    raise InputError("", "workload", f"the PUMA mapper needs an ONNX model or a layer-shape file, got {type(ir).__name__}")


def _graph_only(graph: DataflowGraph):
    """An OnnxModel view of a graph saved from an ONNX import (JSON/DOT): shapes only, no weights."""
    from solvermap.ir.onnx_import import OnnxModel

    shapes: dict[str, tuple[int, ...]] = {}
    missing: list[str] = []
    for node in graph.nodes():
        if node.kind == NodeKind.IO:
            shapes[str(node.attrs.get("tensor", node.name))] = tuple(node.shape or ())
        elif node.kind == NodeKind.OP:
            if "outputs" not in node.attrs:
                raise InputError(graph.source or graph.name, f"node '{node.name}'",
                                 "the PUMA mapper needs a graph imported from ONNX (node without tensor names)")
            shapes[node.attrs["outputs"][0]] = tuple(node.shape or ())
            for tensor, shape in node.attrs.get("weight_shapes", {}).items():
                shapes[tensor] = tuple(shape)
                missing.append(tensor)
    return OnnxModel(graph.name, graph.source, graph, {}, shapes, {}, tuple(dict.fromkeys(missing)), "missing")


def lower(ir: Any) -> Network:
    """The PUMA network of a workload (see the module docstring)."""
    from solvermap.ir.layer_shapes import LayerShapes

    if isinstance(ir, LayerShapes):
        return lower_layer_shapes(ir)
    return _Lowering(as_model(ir)).run()


def lower_layer_shapes(shapes) -> Network:
    """Each layer of a layer-shape file as a conv (groups, strides, dilations; the input is the padded
    tensor the file describes) reading its own model input; the network output gathers nothing: every
    layer's output is a model output (``Network.outputs``)."""
    layers: list[Layer] = []
    inputs: dict[str, tuple[int, ...]] = {}
    for spec in shapes.layers:
        if spec.N != 1:
            raise InputError(shapes.source, f"layers.{spec.name}.N", f"PUMA maps one sample per inference (N = 1), got {spec.N}")
        source = f"input:{spec.name}"
        inputs[source] = (spec.C, spec.H, spec.W)
        attrs = {"in_channels": spec.C, "out_channels": spec.K, "kernel": (spec.S, spec.R),
                 "stride": (spec.Hstride, spec.Wstride), "dilation": (spec.Hdilation, spec.Wdilation), "pads": (0, 0, 0, 0),
                 "groups": spec.G, "has_bias": False, "unroll": "per_position"}
        layers.append(Layer(spec.name, "conv", (source,), (spec.K, spec.Q, spec.P), attrs=attrs))
    first = next(iter(inputs.values()))
    net = Network(shapes.name, first, layers, layers[-1].name,
                  [f"layer-shape file: {len(layers)} independent conv layers, one input each"])
    net.inputs = inputs
    net.outputs = tuple(layer.name for layer in layers)
    return net


class _Lowering:
    def __init__(self, model) -> None:
        self.model = model
        self.graph = model.graph
        self.source = model.source or model.name
        self.layers: list[Layer] = []
        self.by_name: dict[str, Layer] = {}
        self.producer: dict[str, str] = {}  # tensor → layer name ("input")
        self.sample: dict[str, tuple[int, ...]] = {}  # layer name → per-sample shape
        self.notes: list[str] = []
        self.readers: dict[str, int] = {}
        for node in self.graph.nodes(NodeKind.OP):
            for t in node.attrs.get("inputs", []):
                self.readers[t] = self.readers.get(t, 0) + 1
        self.input_shape: tuple[int, ...] | None = None

    # ------------------------------------------------------------------ helpers
    def fail(self, name: str, op: str, problem: str) -> None:
        raise InputError(self.source, f"node '{name}'", f"operator '{op}' {problem} (family puma)")

    def shape_of(self, tensor: str) -> tuple[int, ...]:
        return self.sample[self.producer[tensor]]

    def offset(self, tensor: str) -> int:
        """ONNX rank − per-sample rank of a tensor (1 when the batch axis was dropped)."""
        return len(self.model.shapes.get(tensor, ())) - len(self.shape_of(tensor))

    def out_sample(self, tensor: str, reference: str | None = None) -> tuple[int, ...]:
        """The per-sample shape of an output: its ONNX shape without the leading batch axis when the input
        (``reference``) had one."""
        shape = tuple(self.model.shapes[tensor])
        drop = 1 if shape and shape[0] == 1 and (reference is None or self.offset(reference) >= 1) else 0
        return shape[drop:]

    def axis(self, name: str, op: str, tensor: str, axis: int) -> int:
        rank = len(self.model.shapes[tensor])
        axis = axis % rank if rank else 0
        local = axis - self.offset(tensor)
        if local < 0:
            self.fail(name, op, "works along the batch axis, which PUMA does not see (one sample per inference)")
        return local

    def const(self, name: str, op: str, tensor: str, like: str) -> tuple[tuple[int, ...], np.ndarray | None]:
        """A constant input at the per-sample rank of tensor ``like``: its shape and value (None when missing)."""
        value = self.model.value(tensor)
        shape = tuple(self.model.shapes[tensor])
        rank = len(self.model.shapes[like])
        full = (1,) * (rank - len(shape)) + shape
        drop = self.offset(like)
        if any(d != 1 for d in full[:drop]):
            self.fail(name, op, "has a constant that varies along the batch axis")
        if value is None:
            return full[drop:], None
        return full[drop:], np.asarray(value, dtype=np.float64).reshape(full)[(0,) * drop]

    def add(self, layer: Layer, out: str) -> None:
        self.layers.append(layer)
        self.by_name[layer.name] = layer
        self.sample[layer.name] = tuple(layer.shape)
        self.producer[out] = layer.name

    def unary(self, name: str, kind: str, data: str, out: str, **attrs: Any) -> None:
        self.add(Layer(name, kind, (self.producer[data],), self.shape_of(data), attrs=attrs), out)

    # ------------------------------------------------------------------ the walk
    def run(self) -> Network:
        graph = self.graph
        for node in graph.nodes(NodeKind.IO):
            if node.op == "input":
                tensor = node.attrs["tensor"]
                if self.input_shape is not None:
                    raise InputError(self.source, "inputs", "the PUMA mapper supports one model input")
                onnx_shape = tuple(node.shape or ())
                feeds_lstm = any(graph.node(e.dst).op == "LSTM" for e in graph.out_edges(node.name))
                self.input_shape = (onnx_shape[0], onnx_shape[2]) if feeds_lstm else onnx_shape[1:]
                self.producer[tensor] = "input"
                self.sample["input"] = self.input_shape
        if self.input_shape is None:
            raise InputError(self.source, "inputs", "the model has no graph input")
        for node in self.model.op_nodes():
            self.node(node)
        outputs = [n for n in graph.nodes(NodeKind.IO) if n.op == "output"]
        if len(outputs) != 1:
            raise InputError(self.source, "outputs", f"the PUMA mapper supports one model output, found {len(outputs)}")
        if not any(layer.is_mvm for layer in self.layers):
            raise InputError(self.source, "model", "has no Conv, Gemm, MatMul or LSTM with a constant weight: nothing "
                                                   "to place on crossbars (family puma)")
        out = outputs[0].attrs["tensor"]
        if self.producer[out] == "input":
            raise InputError(self.source, "outputs", "the model output is its input (no layer to map)")
        return Network(graph.name, tuple(self.input_shape), self.layers, self.producer[out], self.notes)

    def node(self, node) -> None:
        name, op, a = node.name, node.op, node.attrs.get("onnx_attrs", {})
        ins = [t for t in node.attrs.get("inputs", [])]
        outs = node.attrs["outputs"]
        out = outs[0]
        model = self.model
        data = [t for t in ins if t and not model.is_constant(t)]
        consts = [t for t in ins if t and model.is_constant(t)]
        for t in data:
            if t not in self.producer:
                self.fail(name, op, "reads a tensor with no producer")
        for extra in outs[1:]:
            if extra and self.readers.get(extra) and op not in ("Split",):
                self.fail(name, op, f"output '{extra}' is used; only the first output is supported")
        if op in ALIASES:
            self.producer[out] = self.producer[data[0]]
        elif op in RESHAPES:
            self.reshape(name, op, data[0], out)
        elif op in ("Gemm", "MatMul"):
            self.matrix(name, op, a, ins, data, consts, out)
        elif op == "Conv":
            self.conv(name, op, a, ins, data, out)
        elif op == "LSTM":
            self.lstm(name, op, a, ins, data, out)
        elif op in BINARY_OPS or op in ("Pow", "Mean"):
            self.elementwise(name, op, ins, data, consts, out)
        elif op in ACTIVATION_OPS:
            fn = op.lower()
            attrs = {k: float(v) for k, v in a.items() if k in ("alpha", "beta", "gamma")}
            self.unary(name, "act", data[0], out, fn=fn, **attrs)
        elif op == "PRelu":
            slope = self.model.value(ins[1])
            if slope is None or np.unique(slope).size != 1:
                self.fail(name, op, "with a per-channel or missing slope has no lowering rule")
            self.unary(name, "act", data[0], out, fn="leakyrelu", alpha=float(np.asarray(slope).reshape(-1)[0]))
        elif op == "Clip":
            lo = self.scalar(ins, 1, a.get("min", -np.inf))
            hi = self.scalar(ins, 2, a.get("max", np.inf))
            self.unary(name, "clip", data[0], out, min=float(lo), max=float(hi))
        elif op == "BatchNormalization":
            values = [self.model.value(t) for t in ins[1:5]]
            if any(v is None for v in values):
                self.unary(name, "affine", data[0], out, scale=1.0, shift=0.0, batchnorm=True, missing_values=True)
            else:
                gamma, beta, mean, var = (np.asarray(v, dtype=np.float64) for v in values)
                scale = gamma / np.sqrt(var + float(a.get("epsilon", 1e-5)))
                self.unary(name, "affine", data[0], out, scale=scale, shift=beta - mean * scale, batchnorm=True)
        elif op in ("LayerNormalization", "InstanceNormalization"):
            self.layernorm(name, op, a, ins, data, out)
        elif op == "LRN":
            self.unary(name, "lrn", data[0], out, size=int(a["size"]), alpha=float(a.get("alpha", 1e-4)),
                       beta=float(a.get("beta", 0.75)), bias=float(a.get("bias", 1.0)))
        elif op in ("Softmax", "LogSoftmax"):
            rank = len(self.model.shapes[data[0]])
            axis = int(a.get("axis", -1 if self.model.opset >= 13 else 1)) % rank
            if self.model.opset < 13 and axis != rank - 1 and math.prod(self.model.shapes[data[0]][axis + 1:]) != 1:
                self.fail(name, op, f"before opset 13 with axis {axis} (a flattened softmax) has no lowering rule")
            self.unary(name, "softmax", data[0], out, axis=self.axis(name, op, data[0], axis), log=op == "LogSoftmax")
        elif op in ("MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"):
            self.pool(name, op, a, data[0], out)
        elif op in ("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin"):
            self.reduce(name, op, a, ins, data[0], out)
        elif op == "Transpose":
            rank = len(self.model.shapes[data[0]])
            perm = [int(p) for p in a.get("perm", list(range(rank))[::-1])]
            drop = self.offset(data[0])
            if perm[:drop] != list(range(drop)):
                self.fail(name, op, "moves the batch axis")
            local = [p - drop for p in perm[drop:]]
            shape = self.shape_of(data[0])
            self.add(Layer(name, "transpose", (self.producer[data[0]],), tuple(shape[p] for p in local),
                           attrs={"perm": local}), out)
        elif op == "Concat":
            if consts:
                self.fail(name, op, "with a constant input has no lowering rule")
            axis = self.axis(name, op, data[0], int(a.get("axis", 0)))
            self.add(Layer(name, "concat", tuple(self.producer[t] for t in data), self.out_sample(out, data[0]),
                           attrs={"axis": axis}), out)
        elif op == "Pad":
            self.pad(name, op, a, ins, data[0], out)
        elif op == "Slice":
            self.slice(name, op, ins, data[0], out)
        elif op == "Split":
            self.split(name, op, a, ins, data[0], outs)
        elif op == "DepthToSpace":
            self.unary_shape(name, "depth_to_space", data[0], out, block=int(a["blocksize"]), mode=str(a.get("mode", "DCR")))
        elif op == "Resize":
            self.resize(name, op, a, ins, data[0], out)
        else:
            self.fail(name, op, "is accepted by the ONNX importer but has no lowering rule")

    def unary_shape(self, name: str, kind: str, data: str, out: str, **attrs: Any) -> None:
        self.add(Layer(name, kind, (self.producer[data],), self.out_sample(out, data), attrs=attrs), out)

    def scalar(self, ins: list[str], index: int, default: float) -> float:
        if len(ins) > index and ins[index]:
            value = self.model.value(ins[index])
            return default if value is None else float(np.asarray(value).reshape(-1)[0])
        return default

    # ------------------------------------------------------------------ rules
    def reshape(self, name: str, op: str, data: str, out: str) -> None:
        target = self.out_sample(out, data)
        if math.prod(target) != math.prod(self.shape_of(data)):
            self.fail(name, op, "changes the per-sample element count (batch must stay the first axis)")
        if target == self.shape_of(data):
            self.producer[out] = self.producer[data]
            return
        self.add(Layer(name, "reshape", (self.producer[data],), target), out)

    def matrix(self, name: str, op: str, a: dict, ins: list[str], data: list[str], consts: list[str], out: str) -> None:
        model = self.model
        trans_a = int(a.get("transA", 0)) if op == "Gemm" else 0
        trans_b = int(a.get("transB", 0)) if op == "Gemm" else 0
        if not data or (ins[0] not in data):
            self.fail(name, op, "with a constant left operand has no lowering rule")
        x = ins[0]
        source = self.producer[x]
        if trans_a:
            shape = self.shape_of(x)
            if len(shape) != 2:
                self.fail(name, op, "with transA on a tensor that is not a matrix has no lowering rule")
            tname = f"{name}.transA"
            self.add(Layer(tname, "transpose", (source,), shape[::-1], attrs={"perm": [1, 0]}), f"{x}@T")
            source = tname
        in_shape = self.sample[source]
        if ins[1] in data:  # activation × activation: the digital units
            b = self.producer[ins[1]]
            if trans_b:
                shape = self.sample[b]
                tname = f"{name}.transB"
                perm = list(range(len(shape) - 2)) + [len(shape) - 1, len(shape) - 2]
                self.add(Layer(tname, "transpose", (b,), tuple(shape[p] for p in perm), attrs={"perm": perm}), f"{ins[1]}@T")
                b = tname
            self.add(Layer(name, "matmul", (source, b), self.out_sample(out, x)), out)
            if op == "Gemm" and len(ins) > 2 and ins[2]:
                self.fail(name, op, "of two activations with a bias has no lowering rule")
            return
        shape_w = tuple(model.shapes[ins[1]])
        if len(shape_w) != 2:
            self.fail(name, op, f"with a {len(shape_w)}-D constant operand has no lowering rule (crossbars hold matrices)")
        out_f, in_f = shape_w if trans_b else shape_w[::-1]
        if in_shape[-1] != in_f:
            self.fail(name, op, f"reads {in_shape[-1]} features where the weight has {in_f}")
        w = model.value(ins[1])
        if w is not None:
            w = np.asarray(w, dtype=np.float64)
            w = (w if trans_b else w.T) * float(a.get("alpha", 1.0))
        bias, has_bias = None, False
        if op == "Gemm" and len(ins) > 2 and ins[2]:
            has_bias = True
            c = model.value(ins[2])
            if c is not None:
                if np.asarray(c).size not in (1, out_f):
                    self.fail(name, op, "with a bias that is not a vector has no lowering rule")
                bias = np.broadcast_to(np.asarray(c, dtype=np.float64).reshape(-1) * float(a.get("beta", 1.0)), (out_f,)).copy()
        layer = Layer(name, "dense", (source,), tuple(in_shape[:-1]) + (out_f,), w, bias,
                      attrs={"in_features": in_f, "out_features": out_f, "has_bias": has_bias})
        self.add(layer, out)

    def conv(self, name: str, op: str, a: dict, ins: list[str], data: list[str], out: str) -> None:
        model = self.model
        oc, icg, kh, kw = (int(d) for d in model.shapes[ins[1]])
        in_shape = self.shape_of(data[0])
        if len(in_shape) != 3:
            self.fail(name, op, "is supported as a 2-D convolution only")
        ic, h, w_ = in_shape
        groups = int(a.get("group", 1))
        if groups < 1 or ic % groups or oc % groups or ic // groups != icg:
            self.fail(name, op, f"has inconsistent groups ({groups}) for {ic} input and {oc} output channels")
        stride = tuple(int(s) for s in a.get("strides", [1, 1]))
        dilation = tuple(int(d) for d in a.get("dilations", [1, 1]))
        out_shape = self.out_sample(out, data[0])
        ho, wo = out_shape[1], out_shape[2]
        auto = str(a.get("auto_pad", "NOTSET"))
        if auto in ("NOTSET", ""):
            pads = tuple(int(p) for p in a.get("pads", [0, 0, 0, 0]))
        elif auto == "VALID":
            pads = (0, 0, 0, 0)
        else:  # SAME_UPPER / SAME_LOWER: total padding so that out = ceil(in / stride)
            total = [max(0, (o - 1) * s + (k - 1) * d + 1 - i) for o, s, k, d, i in
                     zip((ho, wo), stride, (kh, kw), dilation, (h, w_))]
            first = [t // 2 if auto == "SAME_UPPER" else t - t // 2 for t in total]
            pads = (first[0], first[1], total[0] - first[0], total[1] - first[1])
        weight = model.value(ins[1])
        bias = model.value(ins[2]) if len(ins) > 2 and ins[2] else None
        attrs = {"in_channels": ic, "out_channels": oc, "kernel": (kh, kw), "stride": stride, "dilation": dilation,
                 "pads": pads, "groups": groups, "has_bias": len(ins) > 2 and bool(ins[2]), "unroll": "per_position"}
        self.add(Layer(name, "conv", (self.producer[data[0]],), (oc, ho, wo),
                       None if weight is None else np.asarray(weight, dtype=np.float64),
                       None if bias is None else np.asarray(bias, dtype=np.float64).reshape(-1), attrs=attrs), out)

    def lstm(self, name: str, op: str, a: dict, ins: list[str], data: list[str], out: str) -> None:
        if a.get("direction", "forward") != "forward" or len([t for t in ins if t]) > 4:
            self.fail(name, op, "is supported forward-only without sequence lengths or initial states")
        hidden = int(a["hidden_size"])
        in_shape = self.shape_of(data[0])
        source = self.producer[data[0]]
        if len(in_shape) == 3 and in_shape[1] == 1:  # (seq, batch 1, features): drop the batch axis
            in_shape = (in_shape[0], in_shape[2])
            self.add(Layer(f"{name}.input", "reshape", (source,), in_shape), f"{data[0]}#seq")
            source = f"{name}.input"
        elif len(in_shape) != 2:
            self.fail(name, op, f"reads a {len(in_shape)}-D tensor; (sequence, batch 1, features) expected")
        w, r = self.model.value(ins[1]), self.model.value(ins[2])
        b = self.model.value(ins[3]) if len(ins) > 3 and ins[3] else None
        bias = None if b is None else (np.asarray(b, dtype=np.float64)[0, :4 * hidden] + np.asarray(b, dtype=np.float64)[0, 4 * hidden:])
        has_bias = len(ins) > 3 and bool(ins[3])
        self.add(Layer(name, "lstm", (source,), (in_shape[0], hidden),
                       None if w is None else np.asarray(w, dtype=np.float64)[0], bias,
                       None if r is None else np.asarray(r, dtype=np.float64)[0],
                       attrs={"input_size": in_shape[1], "hidden": hidden, "has_bias": has_bias}), out)

    def elementwise(self, name: str, op: str, ins: list[str], data: list[str], consts: list[str], out: str) -> None:
        if op == "Mean" or (op == "Sum" and len(ins) != 2):
            if consts or len(data) < 2:
                self.fail(name, op, "with constants or a single input has no lowering rule")
            current = self.producer[data[0]]
            for k, t in enumerate(data[1:], start=1):
                last = k == len(data) - 1 and op == "Sum"
                layer = Layer(name if last else f"{name}.{k}", "add", (current, self.producer[t]), self.shape_of(data[0]))
                self.add(layer, out if last else f"{out}#{k}")
                current = layer.name
            if op == "Mean":
                self.add(Layer(name, "affine", (current,), self.shape_of(data[0]), attrs={"scale": 1.0 / len(data), "shift": 0.0}), out)
            return
        if len(data) == 2:
            if op == "Pow":
                self.fail(name, op, "of two activations has no lowering rule")
            kind = "add" if op in ("Add", "Sum") and self.shape_of(data[0]) == self.shape_of(data[1]) else "binary"
            attrs = {} if kind == "add" else {"op": BINARY_OPS[op]}
            self.add(Layer(name, kind, (self.producer[data[0]], self.producer[data[1]]), self.out_sample(out, data[0]),
                           attrs=attrs), out)
            return
        if len(data) != 1 or len(consts) != 1:
            self.fail(name, op, "with this input pattern has no lowering rule")
        x, c_name = data[0], consts[0]
        if self.out_sample(out, x) != self.shape_of(x):
            self.fail(name, op, "broadcasts an activation to a larger shape, which has no lowering rule")
        cshape, c = self.const(name, op, c_name, x)
        missing = c is None
        first = ins[0] == x
        prev = self.by_name.get(self.producer[x])
        if op == "Add" and prev is not None and prev.kind in ("dense", "conv") and not prev.attrs.get("has_bias") \
                and self.readers.get(x, 0) == 1:
            n = prev.out_features
            is_bias = (prev.kind == "dense" and math.prod(cshape) == n and cshape[-1:] == (n,)) or \
                      (prev.kind == "conv" and cshape == (n, 1, 1))
            if is_bias:
                prev.bias = None if missing else c.reshape(-1).copy()
                prev.attrs["has_bias"] = True
                self.producer[out] = prev.name
                self.notes.append(f"{name}: constant Add merged into {prev.name} as its bias")
                return
        if op in ("Max", "Min"):
            if missing or np.unique(c).size != 1:
                self.fail(name, op, "with a non-scalar constant has no lowering rule")
            bound = float(np.asarray(c).reshape(-1)[0])
            self.unary(name, "clip", x, out, min=bound if op == "Max" else -np.inf, max=bound if op == "Min" else np.inf)
            return
        if op == "Pow":
            if missing or np.unique(c).size != 1 or not first:
                self.fail(name, op, "with a non-scalar or leading constant has no lowering rule")
            self.unary(name, "act", x, out, fn="pow", exponent=float(np.asarray(c).reshape(-1)[0]))
            return
        if op == "Add":
            scale, shift = 1.0, c
        elif op == "Sub":
            scale, shift = (1.0, None if missing else -c) if first else (-1.0, c)
        elif op == "Mul":
            scale, shift = c, 0.0
        elif op == "Div" and first:
            scale, shift = (None if missing else 1.0 / c), 0.0
        else:  # c / x
            recip = f"{name}.reciprocal"
            self.add(Layer(recip, "act", (self.producer[x],), self.shape_of(x), attrs={"fn": "reciprocal"}), f"{out}#r")
            self.add(Layer(name, "affine", (recip,), self.shape_of(x),
                           attrs={"scale": c if not missing else 1.0, "shift": 0.0, "missing_values": missing}), out)
            return
        attrs = {"scale": 1.0 if scale is None else scale, "shift": 0.0 if shift is None else shift}
        if missing:
            attrs["missing_values"] = True
        self.unary(name, "affine", x, out, **attrs)

    def layernorm(self, name: str, op: str, a: dict, ins: list[str], data: list[str], out: str) -> None:
        x = data[0]
        shape = self.shape_of(x)
        if op == "InstanceNormalization":
            axis, params_shape = 1, (shape[0],) + (1,) * (len(shape) - 1)
        else:
            axis = self.axis(name, op, x, int(a.get("axis", -1)))
            params_shape = None
        gamma = self.model.value(ins[1]) if len(ins) > 1 and ins[1] else np.ones(1)
        beta = self.model.value(ins[2]) if len(ins) > 2 and ins[2] else np.zeros(1)
        missing = gamma is None or beta is None
        attrs: dict[str, Any] = {"axis": axis, "epsilon": float(a.get("epsilon", 1e-5))}
        if missing:
            attrs.update({"gamma": 1.0, "beta": 0.0, "missing_values": True})
        else:
            if params_shape is not None:
                gamma, beta = np.asarray(gamma).reshape(params_shape), np.asarray(beta).reshape(params_shape)
            else:
                gamma = np.asarray(gamma, dtype=np.float64).reshape((1,) * axis + tuple(shape[axis:]) if np.asarray(gamma).size > 1 else ())
                beta = np.asarray(beta, dtype=np.float64).reshape((1,) * axis + tuple(shape[axis:]) if np.asarray(beta).size > 1 else ())
            attrs.update({"gamma": np.asarray(gamma, dtype=np.float64), "beta": np.asarray(beta, dtype=np.float64)})
        self.unary(name, "layernorm", x, out, **attrs)

    def pool(self, name: str, op: str, a: dict, data: str, out: str) -> None:
        shape = self.shape_of(data)
        if len(shape) != 3:
            self.fail(name, op, "is supported on 2-D feature maps only")
        c, h, w_ = shape
        kind = "maxpool" if "Max" in op else "avgpool"
        if op.startswith("Global"):
            self.add(Layer(name, kind, (self.producer[data],), (c, 1, 1),
                           attrs={"kernel": (h, w_), "stride": (1, 1), "pads": (0, 0, 0, 0)}), out)
            return
        if any(int(d) != 1 for d in a.get("dilations", [1, 1])):
            self.fail(name, op, "with dilation has no lowering rule")
        kh, kw = (int(k) for k in a["kernel_shape"])
        stride = tuple(int(s) for s in a.get("strides", [1, 1]))
        out_shape = self.out_sample(out, data)
        ho, wo = out_shape[1], out_shape[2]
        auto = str(a.get("auto_pad", "NOTSET"))
        if auto in ("NOTSET", ""):
            pads = [int(p) for p in a.get("pads", [0, 0, 0, 0])]
        elif auto == "VALID":
            pads = [0, 0, 0, 0]
        else:
            total = [max(0, (o - 1) * s + k - i) for o, s, k, i in zip((ho, wo), stride, (kh, kw), (h, w_))]
            first = [t // 2 if auto == "SAME_UPPER" else t - t // 2 for t in total]
            pads = [first[0], first[1], total[0] - first[0], total[1] - first[1]]
        # ceil_mode (or SAME): extra end padding so that the windows cover the output
        pads[2] += max(0, (ho - 1) * stride[0] + kh - (h + pads[0] + pads[2]))
        pads[3] += max(0, (wo - 1) * stride[1] + kw - (w_ + pads[1] + pads[3]))
        if kind == "avgpool" and any(pads) and not int(a.get("count_include_pad", 0)):
            self.fail(name, op, "with padding that the average excludes (count_include_pad=0) has no lowering rule")
        self.add(Layer(name, kind, (self.producer[data],), (c, ho, wo),
                       attrs={"kernel": (kh, kw), "stride": stride, "pads": tuple(pads)}), out)

    def reduce(self, name: str, op: str, a: dict, ins: list[str], data: str, out: str) -> None:
        rank = len(self.model.shapes[data])
        if "axes" in a:
            axes = [int(x) for x in a["axes"]]
        elif len(ins) > 1 and ins[1]:
            value = self.model.value(ins[1])
            axes = [] if value is None else [int(x) for x in np.asarray(value).reshape(-1)]
        else:
            axes = []
        if not axes:
            axes = list(range(rank)) if not int(a.get("noop_with_empty_axes", 0)) else []
            axes = [x for x in axes if x >= self.offset(data)]
        local = [self.axis(name, op, data, x) for x in axes]
        shape = self.shape_of(data)
        keep = tuple(1 if k in local else d for k, d in enumerate(shape))
        out_shape = self.out_sample(out, data)
        if math.prod(out_shape) != math.prod(keep):
            self.fail(name, op, "has an output shape that does not match its axes")
        reduced = Layer(f"{name}" if out_shape == keep else f"{name}.reduce", "reduce", (self.producer[data],), keep,
                        attrs={"fn": op[len("Reduce"):].lower(), "axes": local})
        if out_shape == keep:
            self.add(reduced, out)
        else:
            self.add(reduced, f"{out}#keep")
            self.add(Layer(name, "reshape", (reduced.name,), out_shape), out)

    def pad(self, name: str, op: str, a: dict, ins: list[str], data: str, out: str) -> None:
        if str(a.get("mode", "constant")) != "constant":
            self.fail(name, op, f"with mode '{a.get('mode')}' has no lowering rule (constant padding only)")
        rank = len(self.model.shapes[data])
        if "pads" in a:
            pads = [int(p) for p in a["pads"]]
        else:
            value = self.model.value(ins[1]) if len(ins) > 1 and ins[1] else None
            if value is None:
                self.fail(name, op, "with non-constant pads has no lowering rule")
            pads = [int(p) for p in np.asarray(value).reshape(-1)]
        axes = list(range(rank))
        if len(ins) > 3 and ins[3]:
            value = self.model.value(ins[3])
            axes = [int(x) % rank for x in np.asarray(value).reshape(-1)]
        fill = self.scalar(ins, 2, float(a.get("value", 0.0)))
        drop = self.offset(data)
        local = [[0, 0] for _ in self.shape_of(data)]
        n = len(axes)
        for k, axis in enumerate(axes):
            before, after = pads[k], pads[k + n]
            if before < 0 or after < 0:
                self.fail(name, op, "with negative pads has no lowering rule")
            if axis < drop:
                if before or after:
                    self.fail(name, op, "pads the batch axis")
                continue
            local[axis - drop] = [before, after]
        self.add(Layer(name, "pad", (self.producer[data],), self.out_sample(out, data), attrs={"pads": local, "value": fill}), out)

    def slice(self, name: str, op: str, ins: list[str], data: str, out: str) -> None:
        values = [self.model.value(t) if len(ins) > k and ins[k] else None for k, t in enumerate(ins[:5] + [""] * (5 - len(ins[:5])))]
        starts, ends = values[1], values[2]
        if starts is None or ends is None:
            self.fail(name, op, "with non-constant bounds has no lowering rule")
        rank = len(self.model.shapes[data])
        axes = [int(x) % rank for x in np.asarray(values[3]).reshape(-1)] if values[3] is not None else list(range(len(starts)))
        steps = [int(x) for x in np.asarray(values[4]).reshape(-1)] if values[4] is not None else [1] * len(axes)
        shape = self.shape_of(data)
        slices = [[0, d, 1] for d in shape]
        drop = self.offset(data)
        for start, end, axis, step in zip(np.asarray(starts).reshape(-1), np.asarray(ends).reshape(-1), axes, steps):
            full = self.model.shapes[data][axis]
            lo, hi, st = slice(int(max(min(start, 2**62), -2**62)), int(max(min(end, 2**62), -2**62)), step).indices(full)
            if axis < drop:
                if (lo, hi, st) != (0, full, 1):
                    self.fail(name, op, "slices the batch axis")
                continue
            slices[axis - drop] = [lo, hi, st]
        self.add(Layer(name, "slice", (self.producer[data],), self.out_sample(out, data), attrs={"slices": slices}), out)

    def split(self, name: str, op: str, a: dict, ins: list[str], data: str, outs: list[str]) -> None:
        rank = len(self.model.shapes[data])
        axis = int(a.get("axis", 0)) % rank
        local = self.axis(name, op, data, axis)
        start = 0
        for k, out in enumerate(outs):
            if not out:
                continue
            size = self.model.shapes[out][axis]
            slices = [[0, d, 1] for d in self.shape_of(data)]
            slices[local] = [start, start + size, 1]
            self.add(Layer(f"{name}.{k}", "slice", (self.producer[data],), self.out_sample(out, data),
                           attrs={"slices": slices}), out)
            start += size

    def resize(self, name: str, op: str, a: dict, ins: list[str], data: str, out: str) -> None:
        if str(a.get("mode", "nearest")) != "nearest":
            self.fail(name, op, f"with mode '{a.get('mode')}' has no lowering rule (nearest only)")
        shape = self.shape_of(data)
        target = self.out_sample(out, data)
        if len(target) != len(shape) or any(t % s for t, s in zip(target, shape)):
            self.fail(name, op, "with a non-integer scale has no lowering rule")
        self.add(Layer(name, "upsample", (self.producer[data],), target,
                       attrs={"factors": [t // s for t, s in zip(target, shape)]}), out)


assert set(ACTIVATION_FUNCTIONS) >= {op.lower() for op in ACTIVATION_OPS}
