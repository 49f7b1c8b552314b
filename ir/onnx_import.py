"""ONNX → tensor-op :class:`DataflowGraph` (with ONNX shape inference).

Each ONNX node becomes an ``op`` node (``op`` = ONNX op type) whose ``shape``/``dtype`` are those of
its first output and whose resource vector holds:

``macs``          multiply-accumulates (Conv, Gemm, MatMul, LSTM, GRU; 0 elsewhere)
``flops``         floating-point operations: 2 per MAC, plus 1 per output element for bias adds,
                  element-wise ops and activations, k·k per pooled output, 2 per batch-norm element
``weights``       parameters held in initializers (weights and biases)
``weight_bytes``  the same in bytes at the initializers' dtype

``attrs`` carries ``weight_shapes`` (initializer name → shape), ``onnx_attrs`` (the node's
attributes) and ``inputs``/``outputs`` (tensor names). Graph inputs and outputs become ``io`` nodes.
Every tensor produced by one node and read by others is a ``tensor`` edge per consumer, with
``src_port`` = the tensor's name (so all readers form one broadcast group) and ``width_bits`` =
elements × bits of the whole tensor.

LSTM (4 gates) and GRU (3 gates): per time step, direction and batch row the gates cost
gates·H·(I + H) MACs; element-wise gate arithmetic is counted as ``elementwise_per_unit``·H
flops (LSTM 8, GRU 6; a documented approximation of the sigmoid/tanh/products of the cell).

An operator outside :data:`SUPPORTED` is an :class:`~solvermap.errors.InputError` naming the
operator and the node.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from solvermap.errors import InputError
from solvermap.ir.graph import DataflowGraph, EdgeKind, NodeKind

ELEMENTWISE = {"Add", "Sub", "Mul", "Div", "Relu", "Tanh", "Sigmoid", "LeakyRelu", "Clip", "Sum", "Max", "Min",
               "Neg", "Abs", "Exp", "Sqrt", "Softmax", "Round", "Floor", "Cast", "QuantizeLinear", "DequantizeLinear"}
MOVEMENT = {"Flatten", "Reshape", "Identity", "Dropout", "Transpose", "Squeeze", "Unsqueeze", "Concat"}
SUPPORTED = {"Conv", "Gemm", "MatMul", "MaxPool", "AveragePool", "GlobalAveragePool", "BatchNormalization",
             "LSTM", "GRU"} | ELEMENTWISE | MOVEMENT

_ONNX_DTYPES = {1: "float32", 2: "uint8", 3: "int8", 5: "int16", 6: "int32", 7: "int64", 9: "bool", 10: "float16",
                11: "float64", 16: "bfloat16"}


def import_onnx(model_or_path: Any, *, name: str | None = None) -> DataflowGraph:
    """Import an ONNX model (a path or a ``ModelProto``) as a validated tensor-op graph."""
    import onnx
    from onnx import numpy_helper, shape_inference

    source = str(model_or_path) if isinstance(model_or_path, (str, Path)) else (name or "<onnx>")
    if isinstance(model_or_path, (str, Path)):
        if not Path(model_or_path).exists():
            raise InputError(source, "", "no such file")
        try:
            model = onnx.load(str(model_or_path))
        except Exception as exc:  # noqa: BLE001 - any decode failure is bad input
            raise InputError(source, "", f"not a readable ONNX model ({exc})") from None
    else:
        model = model_or_path
    for node in model.graph.node:
        if node.op_type not in SUPPORTED:
            raise InputError(source, f"node '{node.name or node.output[0]}'",
                             f"unsupported ONNX operator '{node.op_type}' (supported: {', '.join(sorted(SUPPORTED))})")
    try:
        model = shape_inference.infer_shapes(model, strict_mode=True)
    except Exception as exc:  # noqa: BLE001
        raise InputError(source, "", f"ONNX shape inference failed: {exc}") from None

    shapes: dict[str, tuple[int, ...]] = {}
    dtypes: dict[str, str] = {}
    for info in list(model.graph.input) + list(model.graph.value_info) + list(model.graph.output):
        tensor_type = info.type.tensor_type
        dims = []
        for d in tensor_type.shape.dim:
            dims.append(d.dim_value if d.HasField("dim_value") else 1)  # symbolic dims (batch) count as 1
        shapes[info.name] = tuple(dims)
        dtypes[info.name] = _ONNX_DTYPES.get(tensor_type.elem_type, "float32")
    weights = {init.name: numpy_helper.to_array(init) for init in model.graph.initializer}
    for wname, array in weights.items():
        shapes[wname] = tuple(array.shape)
        dtypes[wname] = str(array.dtype) if str(array.dtype) in _ONNX_DTYPES.values() else "float32"

    graph = DataflowGraph(name or model.graph.name or Path(source).stem, {"producer": model.producer_name}, source=source)
    producer: dict[str, str] = {}
    for inp in model.graph.input:
        if inp.name in weights:
            continue
        graph.add_node(_io_name(inp.name, "input"), NodeKind.IO, op="input", shape=shapes.get(inp.name),
                       dtype=dtypes.get(inp.name), attrs={"tensor": inp.name})
        producer[inp.name] = _io_name(inp.name, "input")
    used_names: set[str] = set(graph.node_names())
    for index, node in enumerate(model.graph.node):
        node_name = node.name or f"{node.op_type}_{index}"
        if node_name in used_names:
            node_name = f"{node_name}_{index}"
        used_names.add(node_name)
        out_shape = shapes.get(node.output[0])
        if out_shape is None:
            raise InputError(source, f"node '{node_name}'", f"shape of output '{node.output[0]}' could not be inferred")
        attrs = {a.name: _attr_value(a) for a in node.attribute}
        weight_inputs = [t for t in node.input if t in weights]
        n_weights = int(sum(weights[t].size for t in weight_inputs))
        weight_bytes = int(sum(weights[t].nbytes for t in weight_inputs))
        macs, flops = _cost(node.op_type, node, attrs, shapes, out_shape, source, node_name)
        graph.add_node(
            node_name, NodeKind.OP, op=node.op_type, shape=out_shape, dtype=dtypes.get(node.output[0], "float32"),
            resources={"macs": macs, "flops": flops, "weights": n_weights, "weight_bytes": weight_bytes},
            attrs={"weight_shapes": {t: list(weights[t].shape) for t in weight_inputs}, "onnx_attrs": attrs,
                   "inputs": list(node.input), "outputs": list(node.output)},
        )
        for tensor in node.input:
            if tensor and tensor not in weights and tensor in producer:
                _tensor_edge(graph, producer[tensor], node_name, tensor, shapes, dtypes)
        for tensor in node.output:
            if tensor:
                producer[tensor] = node_name
    for out in model.graph.output:
        out_node = _io_name(out.name, "output")
        graph.add_node(out_node, NodeKind.IO, op="output", shape=shapes.get(out.name), dtype=dtypes.get(out.name),
                       attrs={"tensor": out.name})
        if out.name in producer:
            _tensor_edge(graph, producer[out.name], out_node, out.name, shapes, dtypes)
    return graph.validate()


def _io_name(tensor: str, role: str) -> str:
    return f"{role}:{tensor}"


def _tensor_edge(graph, src, dst, tensor, shapes, dtypes) -> None:
    from solvermap.ir.graph import dtype_bits

    shape = shapes.get(tensor, ())
    dtype = dtypes.get(tensor, "float32")
    elements = int(np.prod(shape)) if shape else 1
    graph.add_edge(src, dst, EdgeKind.TENSOR, width_bits=max(1, elements * dtype_bits(dtype)), src_port=tensor,
                   dst_port=tensor, shape=shape, dtype=dtype)


def _attr_value(attr: Any) -> Any:
    from onnx import helper

    value = helper.get_attribute_value(attr)
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    if isinstance(value, (list, tuple)):
        return [v.decode(errors="replace") if isinstance(v, bytes) else v for v in value]
    if isinstance(value, (int, float, str)):
        return value
    return str(type(value).__name__)


def _numel(shape: tuple[int, ...]) -> int:
    return int(math.prod(shape)) if shape else 1


def _cost(op: str, node, attrs, shapes, out_shape, source, node_name) -> tuple[float, float]:
    out = _numel(out_shape)
    if op == "Conv":
        w = shapes[node.input[1]]  # (C_out, C_in/group, kH, kW...)
        macs = out * _numel(w[1:])
        bias = out if len(node.input) > 2 and node.input[2] else 0
        return float(macs), float(2 * macs + bias)
    if op == "Gemm":
        a = shapes[node.input[0]]
        k = a[0] if attrs.get("transA", 0) else a[1]
        macs = out * k
        bias = out if len(node.input) > 2 and node.input[2] else 0
        return float(macs), float(2 * macs + bias)
    if op == "MatMul":
        a = shapes[node.input[0]]
        macs = out * a[-1]
        return float(macs), float(2 * macs)
    if op in ("MaxPool", "AveragePool"):
        window = _numel(tuple(attrs.get("kernel_shape", (1,))))
        return 0.0, float(out * window)
    if op == "GlobalAveragePool":
        return 0.0, float(_numel(shapes[node.input[0]]))
    if op == "BatchNormalization":
        return 0.0, float(2 * out)
    if op in ("LSTM", "GRU"):
        x = shapes[node.input[0]]  # (seq, batch, input)
        seq, batch, inp = x[0], x[1], x[2]
        hidden = int(attrs.get("hidden_size", 0))
        if hidden <= 0:
            raise InputError(source, f"node '{node_name}'", f"{op} without a positive hidden_size attribute")
        directions = 2 if attrs.get("direction", "forward") == "bidirectional" else 1
        gates, elementwise_per_unit = (4, 8) if op == "LSTM" else (3, 6)
        macs = seq * batch * directions * gates * hidden * (inp + hidden)
        flops = 2 * macs + seq * batch * directions * hidden * (elementwise_per_unit + gates)  # + gate biases
        return float(macs), float(flops)
    if op in ELEMENTWISE:
        return 0.0, float(out)
    return 0.0, 0.0  # data movement
