"""ONNX converter (seed 003 Sec. III, L104–L110 ``prepare``): imported ONNX graph → PUMA :class:`Network`.

Input is the foundation importer's :class:`~solvermap.ir.graph.DataflowGraph` (operators outside the
importer's set already fail there with a one-line error naming operator and node) plus the weights:
from an :class:`~solvermap.ir.workloads.puma_models.OnnxWorkload`'s model, or re-read from the ``.onnx``
file the graph came from. A graph without weights (e.g. JSON) still lowers; only the functional
simulation needs weights.

Lowering rules: Gemm / MatMul with a constant matrix → ``dense`` (a following Add of a constant vector
becomes its bias); Conv (group 1, dilation 1) → ``conv``; LSTM (forward, one direction) → ``lstm``
(B = Wb + Rb); Relu / Sigmoid / Tanh → ``act``; MaxPool / AveragePool / GlobalAveragePool → pooling;
BatchNormalization → ``affine`` (folded into a preceding conv by the optimiser); Clip → ``clip``;
Flatten / Reshape → ``reshape``; Identity / Dropout / Squeeze / Unsqueeze → aliases; Add of two tensors
→ ``add``. Anything else the importer accepts but PUMA cannot run (e.g. Softmax, GRU) is an
:class:`~solvermap.errors.InputError` naming the operator and the node.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from solvermap.errors import InputError
from solvermap.hardware.puma.network import Layer, Network
from solvermap.ir.graph import DataflowGraph, NodeKind

ALIASES = {"Identity", "Dropout", "Squeeze", "Unsqueeze"}
ACT = {"Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh"}


def graph_and_weights(ir: Any) -> tuple[DataflowGraph, dict[str, np.ndarray] | None]:
    """The graph and its initializer values (None when the source carries no weights)."""
    from onnx import numpy_helper

    if isinstance(ir, DataflowGraph):
        graph, model = ir, None
        if graph.source.endswith(".onnx") and Path(graph.source).exists():
            import onnx

            model = onnx.load(graph.source)
    elif hasattr(ir, "graph") and hasattr(ir, "model"):
        graph, model = ir.graph, ir.model
    else:
        raise InputError("", "workload", f"the PUMA mapper needs an ONNX-derived graph, got {type(ir).__name__}")
    weights = None if model is None else {t.name: numpy_helper.to_array(t).astype(np.float64) if numpy_helper.to_array(t).dtype.kind == "f"
                                          else numpy_helper.to_array(t) for t in model.graph.initializer}
    return graph, weights


def lower(ir: Any) -> Network:
    graph, weights = graph_and_weights(ir)
    source = graph.source or graph.name
    producer: dict[str, str] = {}  # tensor → layer name
    layers: list[Layer] = []
    by_name: dict[str, Layer] = {}
    shapes: dict[str, tuple[int, ...]] = {}
    input_shape: tuple[int, ...] | None = None
    consumers: dict[str, list[str]] = {}
    for node in graph.nodes(NodeKind.OP):
        for t in node.attrs.get("inputs", []):
            consumers.setdefault(t, []).append(node.op)
    notes: list[str] = []

    def shape_of(tensor: str) -> tuple[int, ...]:
        return shapes[producer[tensor]] if producer[tensor] != "input" else input_shape

    def add(layer: Layer, out_tensor: str) -> None:
        layers.append(layer)
        by_name[layer.name] = layer
        shapes[layer.name] = layer.shape
        producer[out_tensor] = layer.name

    for name in graph.topological_order():
        node = graph.node(name)
        if node.kind == NodeKind.IO and node.op == "input":
            tensor = node.attrs["tensor"]
            onnx_shape = tuple(node.shape or ())
            feeds_lstm = "LSTM" in consumers.get(tensor, [])
            input_shape = (onnx_shape[0], onnx_shape[2]) if feeds_lstm else onnx_shape[1:]
            producer[tensor] = "input"
            continue
        if node.kind != NodeKind.OP:
            continue
        op = node.op
        ins = [t for t in node.attrs.get("inputs", []) if t]
        out = node.attrs["outputs"][0]
        attrs = node.attrs.get("onnx_attrs", {})
        wshapes = node.attrs.get("weight_shapes", {})
        data = [t for t in ins if t not in wshapes]
        consts = [t for t in ins if t in wshapes]

        def value(t: str) -> np.ndarray | None:
            return None if weights is None else weights[t]

        def fail(problem: str) -> None:
            raise InputError(source, f"node '{name}'", f"operator '{op}' {problem}")

        if any(t not in producer for t in data):
            fail("reads a tensor with no producer")
        if op in ("Gemm", "MatMul"):
            if op == "Gemm" and attrs.get("transA", 0):
                fail("with transA=1 is not supported by the PUMA lowering")
            wname = consts[0] if consts else fail("needs a constant weight matrix for a crossbar")
            shape_w = tuple(wshapes[wname])
            trans_b = attrs.get("transB", 0) if op == "Gemm" else 0
            out_f, in_f = (shape_w if trans_b else shape_w[::-1])
            w = value(wname)
            if w is not None:
                w = w if trans_b else w.T
                w = w * float(attrs.get("alpha", 1.0))
            bias = None
            if op == "Gemm" and len(consts) > 1:
                bias = value(consts[1])
                bias = None if bias is None else np.broadcast_to(bias * float(attrs.get("beta", 1.0)), (out_f,)).copy()
            in_shape = shape_of(data[0])
            layer = Layer(name, "dense", (producer[data[0]],), tuple(in_shape[:-1]) + (out_f,), w, bias,
                          attrs={"in_features": in_f, "out_features": out_f, "has_bias": len(consts) > 1})
            add(layer, out)
        elif op == "Add" and len(data) == 1 and consts:
            prev = by_name.get(producer[data[0]])
            c = value(consts[0])
            if prev is not None and prev.kind == "dense" and not prev.attrs.get("has_bias") and len(consumers.get(data[0], [])) == 1:
                prev.bias = None if c is None else np.broadcast_to(c, (prev.out_features,)).astype(np.float64).copy()
                prev.attrs["has_bias"] = True
                producer[out] = prev.name
                notes.append(f"{name}: constant Add merged into {prev.name} as its bias")
            else:
                add(Layer(name, "affine", (producer[data[0]],), shape_of(data[0]),
                          attrs={"scale": 1.0, "shift": c if c is not None else 0.0}), out)
        elif op == "Add":
            if len(data) != 2:
                fail("with this input pattern is not supported by the PUMA lowering")
            add(Layer(name, "add", (producer[data[0]], producer[data[1]]), shape_of(data[0])), out)
        elif op == "Conv":
            if attrs.get("group", 1) != 1 or any(d != 1 for d in attrs.get("dilations", [1, 1])):
                fail("with groups or dilation is not supported by the PUMA lowering")
            if attrs.get("auto_pad", "NOTSET") not in ("NOTSET", ""):
                fail("with auto_pad is not supported by the PUMA lowering")
            oc, ic, kh, kw = wshapes[consts[0]]
            pads = list(attrs.get("pads", [0, 0, 0, 0]))
            attrs_l = {"in_channels": ic, "out_channels": oc, "kernel": (kh, kw), "stride": tuple(attrs.get("strides", [1, 1])),
                       "pads": (pads[0], pads[1], pads[2], pads[3]), "has_bias": len(consts) > 1, "unroll": "per_position"}
            in_shape = shape_of(data[0])
            ho = (in_shape[1] + pads[0] + pads[2] - kh) // attrs_l["stride"][0] + 1
            wo = (in_shape[2] + pads[1] + pads[3] - kw) // attrs_l["stride"][1] + 1
            bias = value(consts[1]) if len(consts) > 1 else None
            add(Layer(name, "conv", (producer[data[0]],), (oc, ho, wo), value(consts[0]), bias, attrs=attrs_l), out)
        elif op == "LSTM":
            if attrs.get("direction", "forward") != "forward" or len(ins) > 4:
                fail("is supported forward-only without sequence lengths or initial states")
            hidden = int(attrs["hidden_size"])
            in_shape = shape_of(data[0])
            w, r = value(ins[1]), value(ins[2])
            b = value(ins[3]) if len(ins) > 3 else None
            bias = None if b is None else (b[0, :4 * hidden] + b[0, 4 * hidden:])
            add(Layer(name, "lstm", (producer[data[0]],), (in_shape[0], hidden), None if w is None else w[0], bias,
                      None if r is None else r[0], attrs={"input_size": in_shape[1], "hidden": hidden, "has_bias": b is not None}), out)
        elif op in ACT:
            add(Layer(name, "act", (producer[data[0]],), shape_of(data[0]), attrs={"fn": ACT[op]}), out)
        elif op in ("MaxPool", "AveragePool"):
            kh, kw = attrs["kernel_shape"]
            stride = tuple(attrs.get("strides", [1, 1]))
            pads = tuple(attrs.get("pads", [0, 0, 0, 0]))
            c, h, w_ = shape_of(data[0])
            ho, wo = (h + pads[0] + pads[2] - kh) // stride[0] + 1, (w_ + pads[1] + pads[3] - kw) // stride[1] + 1
            kind = "maxpool" if op == "MaxPool" else "avgpool"
            add(Layer(name, kind, (producer[data[0]],), (c, ho, wo), attrs={"kernel": (kh, kw), "stride": stride, "pads": pads}), out)
        elif op == "GlobalAveragePool":
            c, h, w_ = shape_of(data[0])
            add(Layer(name, "avgpool", (producer[data[0]],), (c, 1, 1), attrs={"kernel": (h, w_), "stride": (1, 1), "pads": (0, 0, 0, 0)}), out)
        elif op == "BatchNormalization":
            scale, shift = (None, None)
            if weights is not None:
                gamma, beta, mean, var = (value(t) for t in consts[:4])
                scale = gamma / np.sqrt(var + float(attrs.get("epsilon", 1e-5)))
                shift = beta - mean * scale
            add(Layer(name, "affine", (producer[data[0]],), shape_of(data[0]),
                      attrs={"scale": scale if scale is not None else 1.0, "shift": shift if shift is not None else 0.0,
                             "batchnorm": True}), out)
        elif op == "Clip":
            lo = value(ins[1]) if len(ins) > 1 and ins[1] in wshapes else attrs.get("min", -np.inf)
            hi = value(ins[2]) if len(ins) > 2 and ins[2] in wshapes else attrs.get("max", np.inf)
            add(Layer(name, "clip", (producer[data[0]],), shape_of(data[0]), attrs={"min": float(lo), "max": float(hi)}), out)
        elif op in ("Flatten", "Reshape"):
            target = tuple(node.shape[1:]) if op == "Reshape" else (int(np.prod(shape_of(data[0]))),)
            if int(np.prod(target)) != int(np.prod(shape_of(data[0]))):
                fail("changes the per-sample element count (batch must stay the first axis)")
            add(Layer(name, "reshape", (producer[data[0]],), target), out)
        elif op in ALIASES:
            producer[out] = producer[data[0]]
        else:
            fail("is accepted by the ONNX importer but cannot run on PUMA (no lowering rule)")
        for extra in node.attrs["outputs"][1:]:
            if extra and extra in consumers:
                fail(f"output '{extra}' is used; only the first output is supported")
    outputs = [n for n in graph.nodes(NodeKind.IO) if n.op == "output"]
    if len(outputs) != 1:
        raise InputError(source, "outputs", f"the PUMA mapper supports one model output, found {len(outputs)}")
    out_tensor = outputs[0].attrs["tensor"]
    if input_shape is None:
        raise InputError(source, "inputs", "the model has no graph input")
    return Network(graph.name, tuple(input_shape), layers, producer[out_tensor], notes)
