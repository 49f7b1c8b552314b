"""ONNX models with trained weights → ApproxHPVM tensor networks (the ops HPVM's DNN benchmarks use).

:func:`network_from_onnx` turns a chain-structured ONNX model into a :class:`TensorNetwork`: each ``Conv``, ``Gemm``
or ``MatMul`` opens a layer (an HPVM internal node, L1187) and the ops after it join that layer until the next one;
a ``Softmax`` is a layer of its own (as in HPVM's benchmarks, ``softmax`` has its own node). Supported operators:

=========================  =====================================================================================
ONNX                       tensor op
=========================  =====================================================================================
Conv                       ``conv`` (square kernel, equal strides, equal pads on all sides, dilation 1, any
                           ``group``: grouped and depthwise convolutions); its bias → ``add``
Gemm, MatMul               ``gemm`` (constant weight; ``transB`` honoured, alpha = beta = 1); Gemm's C → ``add``
Add                        ``add`` when one input is a constant (a bias); two activations (residual) are refused
BatchNormalization         ``batchnorm`` folded to scale γ/√(var+ε) and shift β − mean·scale (inference)
Relu, Tanh, Sigmoid        ``relu``, ``tanh``, ``sigmoid``
MaxPool                    ``pool`` (square window, equal strides and pads)
AveragePool                ``avgpool`` (square window, no padding)
GlobalAveragePool          ``avgpool`` over the whole map
Softmax                    ``softmax``
Flatten, Reshape,          nothing (a GEMM flattens its input; Dropout and Identity are the identity at inference)
Dropout, Identity
=========================  =====================================================================================

Anything else is one line naming the operator and the node. The ONNX importer of the shared IR
(:mod:`solvermap.ir.onnx_import`) gives the graph without values; this module reads the initializers too, because
the ApproxHPVM pipeline runs the network (accuracy, Monte Carlo). ``data`` is the dataset the network is evaluated
on (None: costs only; accuracy needs one).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from solvermap.errors import InputError
from solvermap.ir.graph import DataflowGraph, NodeKind
from solvermap.ir.workloads.approxhpvm_tensor_ops import (
    Dataset,
    Leaf,
    TensorNetwork,
    Window,
    add_layer,
    conv_leaf,
    elementwise_leaf,
    gemm_leaf,
    ops_of,
    pool_leaf,
)

OPENS_LAYER = ("Conv", "Gemm", "MatMul")
PASS_THROUGH = ("Flatten", "Reshape", "Dropout", "Identity")
ACTIVATIONS = {"Relu": "relu", "Tanh": "tanh", "Sigmoid": "sigmoid"}
SUPPORTED = (*OPENS_LAYER, "Add", "BatchNormalization", *ACTIVATIONS, "MaxPool", "AveragePool", "GlobalAveragePool",
             "Softmax", *PASS_THROUGH)


def _load(model_or_path: Any, source: str):
    import onnx

    if isinstance(model_or_path, (str, Path)):
        if not Path(model_or_path).is_file():
            raise InputError(source, "", "no such file")
        try:
            return onnx.load(str(model_or_path))
        except Exception as exc:  # noqa: BLE001 - any decode failure is bad input
            raise InputError(source, "", f"not a readable ONNX model ({' '.join(str(exc).split())})") from None
    return model_or_path


def _attrs(node) -> dict[str, Any]:
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _square(values, what: str, source: str, where: str) -> int:
    values = list(values)
    if not values or any(v != values[0] for v in values):
        raise InputError(source, where, f"{what} must be the same on every axis, got {values}")
    return int(values[0])


def network_from_onnx(model_or_path: Any, data: Dataset | None = None, *, name: str | None = None) -> TensorNetwork:
    """The tensor network of a chain-structured ONNX model with its weights (module docstring)."""
    from onnx import numpy_helper

    source = str(model_or_path) if isinstance(model_or_path, (str, Path)) else (name or "<onnx>")
    model = _load(model_or_path, source)
    graph_in = model.graph
    consts = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in graph_in.initializer}
    for node in graph_in.node:  # Constant nodes are constants too
        if node.op_type == "Constant":
            consts[node.output[0]] = numpy_helper.to_array(_attrs(node)["value"]).astype(np.float64)
    inputs = [i for i in graph_in.input if i.name not in consts]
    if len(inputs) != 1:
        raise InputError(source, "graph.input", f"expected one input tensor, got {len(inputs)}")
    dims = [d.dim_value for d in inputs[0].type.tensor_type.shape.dim]
    if len(dims) < 2 or any(d <= 0 for d in dims[1:]):
        raise InputError(source, f"input '{inputs[0].name}'", f"needs a fixed shape after the batch axis, got {dims}")
    input_shape = tuple(int(d) for d in dims[1:])
    net_name = name or graph_in.name or Path(source).stem
    graph = DataflowGraph(net_name, {"family": "approxhpvm", "dataset": "user" if data is not None else "none"},
                          source=source)
    graph.add_node("input", NodeKind.IO, op="input", shape=input_shape, dtype="float32")
    params: dict[str, np.ndarray] = {}
    layers: list[str] = []
    current: list[Leaf] = []
    kind = ""
    previous, in_shape, shape = "input", input_shape, input_shape
    producer = inputs[0].name
    used: set[str] = set()

    def close():
        nonlocal current, previous, in_shape
        if current:
            add_layer(graph, layers[-1], kind, current, previous, in_shape)
            previous, in_shape, current = layers[-1], current[-1].shape, []

    def leaf_name(op: str) -> str:
        base, n = op, 1
        while base in used:
            n += 1
            base = f"{op}{n}"
        used.add(base)
        return base

    def open_layer(layer_kind: str):
        nonlocal kind
        close()
        layers.append(f"{layer_kind}{sum(1 for l in layers if l.startswith(layer_kind)) + 1}")
        kind = layer_kind
        used.clear()

    for node in graph_in.node:
        where = f"node '{node.name or node.output[0]}'"
        op = node.op_type
        if op == "Constant":
            continue
        if op not in SUPPORTED:
            raise InputError(source, where, f"unsupported ONNX operator '{op}' for the ApproxHPVM IR "
                             f"(supported: {', '.join(SUPPORTED)})")
        acts = [t for t in node.input if t and t not in consts]
        if len(acts) != 1 or acts[0] != producer:
            raise InputError(source, where, f"'{op}' must take the previous op's output as its only activation input "
                             f"(a chain); it reads {acts} (residual or branching graphs are not supported here)")
        attrs = _attrs(node)
        producer = node.output[0]
        if op in PASS_THROUGH:
            if op in ("Flatten", "Reshape"):
                shape = (int(np.prod(shape)),)
            continue
        if op in OPENS_LAYER:
            open_layer("conv" if op == "Conv" else "fc")
            layer = layers[-1]
            if op == "Conv":
                w = consts.get(node.input[1])
                if w is None or w.ndim != 4:
                    raise InputError(source, where, "Conv needs a constant 4-D weight")
                if any(d != 1 for d in attrs.get("dilations", [1, 1])):
                    raise InputError(source, where, f"dilations {attrs['dilations']} are not supported")
                k = _square(w.shape[2:], "kernel", source, where)
                stride = _square(attrs.get("strides", [1, 1]), "strides", source, where)
                pad = _square(attrs.get("pads", [0, 0, 0, 0]), "pads", source, where)
                groups = int(attrs.get("group", 1))
                if len(shape) != 3 or shape[0] != w.shape[1] * groups:
                    raise InputError(source, where,
                                     f"Conv weight {w.shape} (group {groups}) does not fit input {shape}")
                leaf = conv_leaf(leaf_name("conv"), shape, w.shape[0], Window(k, stride, pad, groups), f"{layer}.W")
                params[f"{layer}.W"] = w.reshape(w.shape[0], -1).T.copy()
                bias = consts.get(node.input[2]) if len(node.input) > 2 and node.input[2] else None
            else:
                w = consts.get(node.input[1])
                if w is None or w.ndim != 2:
                    raise InputError(source, where, f"{op} needs a constant 2-D weight")
                if op == "Gemm":
                    if attrs.get("transA", 0) or attrs.get("alpha", 1.0) != 1.0 or attrs.get("beta", 1.0) != 1.0:
                        raise InputError(source, where, "Gemm with transA or alpha/beta ≠ 1 is not supported")
                    w = w.T if attrs.get("transB", 0) else w
                if int(np.prod(shape)) != w.shape[0]:
                    raise InputError(source, where, f"weight {w.shape} does not fit input {shape}")
                leaf = gemm_leaf(leaf_name("gemm"), shape, w.shape[1], f"{layer}.W")
                params[f"{layer}.W"] = w.copy()
                bias = consts.get(node.input[2]) if op == "Gemm" and len(node.input) > 2 and node.input[2] else None
            current.append(leaf)
            shape = leaf.shape
            if bias is not None:
                params[f"{layer}.b{len(current)}"] = bias.reshape(-1)
                current.append(elementwise_leaf(leaf_name("add"), "add", shape, f"{layer}.b{len(current)}"))
            continue
        if op == "Softmax":
            open_layer("softmax")
            current.append(elementwise_leaf("softmax", "softmax", (int(np.prod(shape)),), per_element=3.0))
            shape = current[-1].shape
            continue
        if not current:
            raise InputError(source, where, f"'{op}' before the first Conv/Gemm/MatMul has no layer to join")
        layer = layers[-1]
        if op == "Add":
            bias = consts[next(t for t in node.input if t in consts)]
            key = f"{layer}.b{len(current) + 1}"
            params[key] = _per_channel(bias, shape, source, where)
            current.append(elementwise_leaf(leaf_name("add"), "add", shape, key))
        elif op == "BatchNormalization":
            gamma, beta, mean, var = (consts[t] for t in node.input[1:5])
            scale = gamma / np.sqrt(var + float(attrs.get("epsilon", 1e-5)))
            key = f"{layer}.bn{len(current) + 1}"
            params[key] = np.stack([scale, beta - mean * scale])
            current.append(elementwise_leaf(leaf_name("batchnorm"), "batchnorm", shape, key, per_element=2.0))
        elif op in ACTIVATIONS:
            current.append(elementwise_leaf(leaf_name(ACTIVATIONS[op]), ACTIVATIONS[op], shape))
        else:  # pooling
            if len(shape) != 3:
                raise InputError(source, where, f"{op} needs a (C, H, W) input, got {shape}")
            if op == "GlobalAveragePool":
                window = Window(shape[1], shape[1], 0)
                if shape[1] != shape[2]:
                    raise InputError(source, where, f"GlobalAveragePool needs a square map, got {shape}")
            else:
                if attrs.get("ceil_mode", 0):
                    raise InputError(source, where, f"{op} with ceil_mode is not supported")
                k = _square(attrs["kernel_shape"], "kernel_shape", source, where)
                stride = _square(attrs.get("strides", [1, 1]), "strides", source, where)
                pad = _square(attrs.get("pads", [0, 0, 0, 0]), "pads", source, where)
                if op == "AveragePool" and pad:
                    raise InputError(source, where, "AveragePool with padding is not supported")
                window = Window(k, stride, pad)
            kind_op = "pool" if op == "MaxPool" else "avgpool"
            current.append(pool_leaf(leaf_name(kind_op), kind_op, shape, window))
        shape = current[-1].shape
    close()
    if not layers:
        raise InputError(source, "graph", "no Conv, Gemm or MatMul: nothing for the ApproxHPVM pipeline to map")
    graph.validate()
    return TensorNetwork(net_name, graph, ops_of(graph), params, data, tuple(layers),
                         f"{net_name} imported from ONNX", input_shape)


def _per_channel(bias: np.ndarray, shape: tuple[int, ...], source: str, where: str) -> np.ndarray:
    """A bias added to a (C, H, W) or (N,) activation, as one value per channel / feature."""
    flat = bias.reshape(-1)
    if flat.size == shape[0]:
        return flat.copy()
    raise InputError(source, where, f"Add of a constant of shape {bias.shape} to an activation of shape {shape}: "
                     "only a per-channel bias is supported")
