"""ONNX → tensor-op :class:`DataflowGraph`, for models as exporters write them.

:func:`import_model` reads a ``.onnx`` file (or a ``ModelProto``) and returns an :class:`OnnxModel`: the
tensor-op graph, the values of its constants, every tensor's static shape, and which weights are missing.

Reading (each failure is one :class:`~solvermap.errors.InputError` line naming file, field and problem)
    * the path must be a non-empty file; its bytes must parse as a ``ModelProto`` with a graph and an
      ``ir_version``; the default-domain opset must be in :data:`OPSETS` (11–21);
    * the graph must be acyclic (a cycle is named node by node); nodes out of order are sorted;
    * before anything is allocated, the bytes every declared tensor would take (initializers, graph
      inputs, declared value infos) are summed: above the memory cap (``memory_limit_mb``; default half of
      physical memory) the import stops, naming the largest tensor and the estimate;
    * initializers stored as **external data** are read from the file named in ``location`` when it exists
      next to the model (a location that leaves the model's directory is refused); a missing data file, or
      an initializer that declares dims but carries no data (exports made "shape only"), leaves that weight
      *missing*: the model imports as shapes (``OnnxModel.weights`` is ``"missing"`` or ``"partial"``).

Rewrites before import (:mod:`solvermap.ir.onnx_fold`)
    ``Constant`` nodes become constants; every node of :data:`~solvermap.ir.onnx_fold.FOLDABLE` whose inputs
    are constants is evaluated (``Shape``/``Size`` from static shapes): the ``Shape → Gather → Unsqueeze →
    Concat`` arithmetic before ``Reshape``, ``Constant``-fed ``Clip`` bounds, ``ConstantOfShape`` masks,
    weight ``Transpose`` s. A foldable node on a missing weight gives a missing constant of the inferred
    shape. ``Mul(x, Sigmoid(x))`` becomes ``Silu`` and ``Mul(x, HardSigmoid(x))`` (α = 1/6, β = ½)
    ``HardSwish``. Symbolic dimensions (the batch) are taken as 1. ONNX shape inference (strict) then gives
    every remaining tensor a static shape.

Graph
    Each remaining node becomes an ``op`` node (``op`` = the canonical operator name of :data:`SUPPORTED`,
    matched case-insensitively) whose ``shape``/``dtype`` are its first output's and whose resources are

    ``macs``          multiply-accumulates (Conv incl. groups, Gemm, MatMul of weights or of two activations,
                      LSTM, GRU; 0 elsewhere)
    ``flops``         2 per MAC, plus per output element: 1 for bias adds, element-wise ops and activations,
                      k·k per pooled output, 2 per batch-norm element, 5 per softmax / LRN element, 8 per
                      layer-norm element; reductions 1 per input element
    ``weights``       elements of the node's constant inputs (weights, biases, bounds)
    ``weight_bytes``  the same in bytes at their dtypes

    ``attrs``: ``weight_shapes`` (constant input → shape), ``onnx_attrs``, ``inputs``/``outputs`` (tensor
    names). Graph inputs and outputs are ``io`` nodes; a tensor read by several nodes is one broadcast group
    (``src_port`` = the tensor's name), ``width_bits`` = elements × bits of the whole tensor.

LSTM (4 gates) and GRU (3 gates): per time step, direction and batch row the gates cost gates·H·(I + H)
MACs; the cell's element-wise arithmetic is ``elementwise_per_unit``·H flops (LSTM 8, GRU 6; a documented
approximation of the sigmoid/tanh/products of the cell).

An operator outside :data:`SUPPORTED` (after folding) is one line naming the operator and the node.
"""

from __future__ import annotations

import math
import os
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from solvermap.errors import InputError
from solvermap.ir.graph import DataflowGraph, EdgeKind, NodeKind, dtype_bits
from solvermap.ir.onnx_fold import FOLDABLE, evaluate, output_elements_bounded

OPSETS = range(11, 22)  # default-domain opsets read (11–21)

# canonical operator → category; lookups ignore case (``canonical``)
SUPPORTED: dict[str, str] = {
    **dict.fromkeys(("Conv", "Gemm", "MatMul"), "mvm"),
    **dict.fromkeys(("LSTM", "GRU"), "recurrent"),
    **dict.fromkeys(("Relu", "LeakyRelu", "PRelu", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "Silu", "Gelu",
                     "Erf", "Exp", "Log", "Sqrt", "Reciprocal", "Neg", "Abs", "Floor", "Ceil", "Round", "Clip",
                     "Softplus", "Elu", "Selu", "Celu", "Mish", "Softsign", "Sin", "Cos"), "activation"),
    **dict.fromkeys(("Add", "Sub", "Mul", "Div", "Max", "Min", "Sum", "Mean", "Pow"), "elementwise"),
    **dict.fromkeys(("BatchNormalization", "LayerNormalization", "InstanceNormalization", "LRN", "Softmax",
                     "LogSoftmax"), "normalization"),
    **dict.fromkeys(("MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"), "pooling"),
    **dict.fromkeys(("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin"), "reduction"),
    **dict.fromkeys(("Flatten", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Concat", "Pad", "Slice", "Split",
                     "Expand", "Identity", "Dropout", "DepthToSpace", "SpaceToDepth", "Resize", "Tile", "Gather"),
                    "movement"),
    **dict.fromkeys(("Cast", "QuantizeLinear", "DequantizeLinear"), "conversion"),
}
_CANONICAL = {name.lower(): name for name in SUPPORTED}
# operators that are not ONNX (or only from an opset on): accepted from any domain, shape-inferred as a stand-in
_NOT_ONNX = {"Silu": ("Sigmoid", None), "Gelu": ("Erf", 20), "HardSwish": ("HardSigmoid", 14)}
_POINTWISE = {"activation", "elementwise", "conversion"}

_ONNX_DTYPES = {1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64", 9: "bool",
                10: "float16", 11: "float64", 12: "int32", 13: "int64", 16: "bfloat16"}
_ITEMSIZE = {1: 4, 2: 1, 3: 1, 4: 2, 5: 2, 6: 4, 7: 8, 9: 1, 10: 2, 11: 8, 12: 4, 13: 8, 16: 2}
_NUMPY = {1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32, 7: np.int64,
          9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64}


def canonical(op_type: str) -> str | None:
    """The canonical name of a supported operator (case-insensitive), or None."""
    return _CANONICAL.get(str(op_type).lower())


def default_memory_limit() -> int:
    """Half of the machine's physical memory, in bytes (the default cap on a model's tensor bytes)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2)
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return 8 << 30


@dataclass
class OnnxModel:
    """An imported model: the tensor-op graph plus what the families need to lower it.

    ``constants`` holds the value of every initializer and folded constant that has one; ``missing`` the
    constants whose values are not available (shape-only exports, external data not shipped);
    ``weights`` is ``"file"`` (every value present), ``"missing"`` (no weight values), ``"partial"`` or
    ``"synthetic"`` (missing values filled by :meth:`with_synthetic_weights`)."""

    name: str
    source: str
    graph: DataflowGraph
    constants: dict[str, np.ndarray]
    shapes: dict[str, tuple[int, ...]]
    dtypes: dict[str, str]
    missing: tuple[str, ...] = ()
    weights: str = "file"
    opset: int = 17
    producer: str = ""
    notes: list[str] = field(default_factory=list)
    memory_limit: int = 0
    proto: Any = None  # the ModelProto, when the model was built in memory (built-in workloads)

    # ------------------------------------------------------------------ access
    def is_constant(self, tensor: str) -> bool:
        return tensor in self.constants or tensor in self.missing

    def value(self, tensor: str) -> np.ndarray | None:
        return self.constants.get(tensor)

    def shape(self, tensor: str) -> tuple[int, ...]:
        return self.shapes[tensor]

    @property
    def has_weights(self) -> bool:
        return not self.missing

    @property
    def model(self) -> Any:
        """The in-memory ``ModelProto`` (built-in workloads); None for a file."""
        return self.proto

    def op_nodes(self) -> list:
        """The op nodes in topological order."""
        return [self.graph.node(n) for n in self.graph.topological_order() if self.graph.node(n).kind == NodeKind.OP]

    def save(self, path: str | Path) -> Path:
        import onnx

        if self.proto is None:
            raise InputError(self.source, "", "only a model built in memory can be saved")
        onnx.save(self.proto, str(path))
        return Path(path)

    # ------------------------------------------------------------------ synthetic weights
    def with_synthetic_weights(self, seed: int = 0) -> OnnxModel:
        """A copy whose missing constants hold deterministic synthetic values (same seed, same values):
        conv/matrix weights N(0, 1/fan_in), recurrent weights N(0, 1/(I + H)), biases and shifts 0,
        batch-norm and layer-norm scales and variances 1, means 0, anything else N(0, 0.1²).
        Each tensor's generator is seeded by ``seed`` and the CRC-32 of its name."""
        if not self.missing:
            return self
        roles = _roles(self.graph)
        constants = dict(self.constants)
        for tensor in self.missing:
            shape = self.shapes[tensor]
            rng = np.random.default_rng([seed, zlib.crc32(tensor.encode())])
            constants[tensor] = _synthetic(roles.get(tensor, ("", 0)), shape, rng)
        twin = replace(self, constants=constants, missing=(), weights="synthetic",
                       notes=self.notes + [f"{len(self.missing)} missing constants filled with synthetic values (seed {seed})"])
        twin.graph = self.graph.copy()
        twin.graph.attrs["weights"] = "synthetic"
        return twin


def _roles(graph: DataflowGraph) -> dict[str, tuple[str, int]]:
    roles: dict[str, tuple[str, int]] = {}
    for node in graph.nodes(NodeKind.OP):
        for index, tensor in enumerate(node.attrs.get("inputs", [])):
            if tensor in node.attrs.get("weight_shapes", {}):
                roles.setdefault(tensor, (node.op, index))
    return roles


def _synthetic(role: tuple[str, int], shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    op, index = role
    if op == "BatchNormalization":
        return np.full(shape, 1.0 if index in (1, 4) else 0.0, dtype=np.float32)
    if op in ("LayerNormalization", "InstanceNormalization"):
        return np.full(shape, 1.0 if index == 1 else 0.0, dtype=np.float32)
    if op in ("Conv", "Gemm", "MatMul") and index == 1 and len(shape) >= 2:
        fan_in = int(np.prod(shape[1:])) if op == "Conv" else (shape[0] if op == "MatMul" else max(shape))
        return (rng.standard_normal(shape) / math.sqrt(max(1, fan_in))).astype(np.float32)
    if op in ("LSTM", "GRU") and index in (1, 2) and len(shape) == 3:
        return (rng.standard_normal(shape) / math.sqrt(max(1, shape[1] // (4 if op == "LSTM" else 3) + shape[2]))).astype(np.float32)
    if (op in ("Conv", "Gemm") and index == 2) or (op in ("LSTM", "GRU") and index == 3) or op in ("Add", "Sub"):
        return np.zeros(shape, dtype=np.float32)
    return (0.1 * rng.standard_normal(shape)).astype(np.float32)


# =========================================================================== reading


def import_onnx(model_or_path: Any, *, name: str | None = None) -> DataflowGraph:
    """The tensor-op graph of an ONNX model (path or ``ModelProto``); see :func:`import_model`."""
    return import_model(model_or_path, name=name).graph


def import_model(model_or_path: Any, *, name: str | None = None, memory_limit: int | None = None) -> OnnxModel:
    """Read and import an ONNX model (a path or a ``ModelProto``); see the module docstring."""
    limit = int(memory_limit) if memory_limit else default_memory_limit()
    if isinstance(model_or_path, (str, Path)):
        path = Path(model_or_path)
        source = str(path)
        proto = _read(path, limit)
        directory: Path | None = path.parent
        in_memory = None
    else:
        proto, source, directory, in_memory = model_or_path, name or "<onnx>", None, model_or_path
    return _Importer(proto, source, directory, limit, name, in_memory).run()


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:300] + ("…" if len(text) > 300 else "")


def _read(path: Path, limit: int):
    import onnx

    source = str(path)
    if path.is_dir():
        raise InputError(source, "", "is a directory, not an ONNX file")
    if not path.exists():
        raise InputError(source, "", "no such file")
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise InputError(source, "", f"cannot read the file ({_one_line(exc)})") from None
    if size == 0:
        raise InputError(source, "", "empty file (0 bytes), not an ONNX model")
    if size > limit:
        raise InputError(source, "workload.memory_limit_mb",
                         f"the file holds {size / 2**20:.0f} MB, over the memory cap of {limit / 2**20:.0f} MB")
    try:
        return onnx.load(str(path), load_external_data=False)
    except PermissionError:
        raise InputError(source, "", "permission denied") from None
    except Exception as exc:  # noqa: BLE001 - any decode failure (protobuf DecodeError, ...) is bad input
        raise InputError(source, "", f"not a readable ONNX model ({_one_line(exc)})") from None


class _Importer:
    """One import: checks, initializers, folding, shape inference, the graph (see the module docstring)."""

    def __init__(self, proto, source: str, directory: Path | None, limit: int, name: str | None, in_memory) -> None:
        self.proto, self.source, self.directory, self.limit = proto, source, directory, limit
        self.name = name or proto.graph.name or Path(source).stem
        self.in_memory = in_memory
        self.constants: dict[str, np.ndarray] = {}
        self.missing: dict[str, tuple[int, ...]] = {}  # constant without a value → its shape
        self.const_dtypes: dict[str, str] = {}
        self.notes: list[str] = []

    def fail(self, field: str, problem: str) -> None:
        raise InputError(self.source, field, problem)

    # ------------------------------------------------------------------ the steps
    def run(self) -> OnnxModel:
        self.check_header()
        nodes = self.sorted_nodes()
        self.check_declared_bytes()
        self.read_initializers()
        nodes = self.fold_and_infer(nodes)
        return self.build(nodes)

    def check_header(self) -> None:
        proto = self.proto
        if not proto.HasField("graph") or proto.ir_version <= 0:
            self.fail("", "not an ONNX model (no graph or no ir_version)")
        opsets = {op.domain or "ai.onnx": op.version for op in proto.opset_import}
        if "ai.onnx" not in opsets:
            self.fail("opset_import", "declares no default-domain (ai.onnx) opset")
        self.opset = int(opsets["ai.onnx"])
        if self.opset not in OPSETS:
            self.fail("opset_import", f"opset {self.opset} is not supported (reads opsets {OPSETS.start}–{OPSETS.stop - 1})")
        if not proto.graph.node:
            self.fail("graph", "the graph has no nodes")

    def sorted_nodes(self) -> list:
        """The nodes in a topological order; a cycle is one line naming it."""
        graph = self.proto.graph
        producer: dict[str, int] = {}
        for index, node in enumerate(graph.node):
            for out in node.output:
                if not out:
                    continue
                if out in producer:
                    self.fail(f"node '{_label(node, index)}'", f"output '{out}' is also produced by node "
                                                                f"'{_label(graph.node[producer[out]], producer[out])}'")
                producer[out] = index
        order = nx.DiGraph()
        order.add_nodes_from(range(len(graph.node)))
        for index, node in enumerate(graph.node):
            for tensor in node.input:
                if tensor in producer:
                    order.add_edge(producer[tensor], index)
        if not nx.is_directed_acyclic_graph(order):
            cycle = nx.find_cycle(order)
            names = [_label(graph.node[u], u) for u, _ in cycle] + [_label(graph.node[cycle[0][0]], cycle[0][0])]
            self.fail("graph", f"cyclic graph: {' -> '.join(names)}")
        return [graph.node[i] for i in nx.lexicographical_topological_sort(order)]

    def check_declared_bytes(self) -> None:
        """Bytes of every declared tensor, before anything is allocated (Python integers: no overflow)."""
        graph = self.proto.graph
        total, largest, largest_name = 0, 0, ""
        declared = [(init.name, list(init.dims), init.data_type) for init in graph.initializer]
        for info in list(graph.input) + list(graph.value_info) + list(graph.output):
            tensor = info.type.tensor_type
            dims = [d.dim_value if d.HasField("dim_value") else 1 for d in tensor.shape.dim]
            declared.append((info.name, dims, tensor.elem_type))
        for tensor, dims, dtype in declared:
            if any(d < 0 for d in dims):
                self.fail(f"tensor '{tensor}'.shape", f"negative dimension in {dims}")
            size = math.prod(dims) * _ITEMSIZE.get(dtype, 4)
            total += size
            if size > largest:
                largest, largest_name = size, tensor
        if total > self.limit:
            self.fail("workload.memory_limit_mb",
                      f"the declared tensors take {_bytes(total)} (largest: '{largest_name}', {_bytes(largest)}), "
                      f"over the memory cap of {_bytes(self.limit)}")

    def read_initializers(self) -> None:
        from onnx import numpy_helper

        if self.proto.graph.sparse_initializer:
            self.fail("graph.sparse_initializer", "sparse initializers are not supported")
        unread_files: set[str] = set()
        for init in self.proto.graph.initializer:
            where = f"initializer '{init.name}'"
            dims = tuple(int(d) for d in init.dims)
            dtype = _ONNX_DTYPES.get(init.data_type)
            if dtype is None:
                self.fail(f"{where}.data_type", f"unsupported data type {init.data_type}")
            self.const_dtypes[init.name] = dtype
            if init.data_location == 1:  # TensorProto.EXTERNAL
                value = self.external(init, dims, unread_files)
            elif math.prod(dims) > 0 and not _has_data(init):
                value = None  # declared, no data: a shape-only export
            else:
                try:
                    value = numpy_helper.to_array(init)
                except Exception as exc:  # noqa: BLE001 - inconsistent size, bad encoding
                    self.fail(where, f"unreadable initializer data ({_one_line(exc)})")
            if value is None:
                self.missing[init.name] = dims
            else:
                self.constants[init.name] = value
        for name in sorted(unread_files):
            self.notes.append(f"external data file '{name}' not found next to the model: its weights are missing")
        if self.missing and not unread_files:
            self.notes.append(f"{len(self.missing)} initializers declare dims but carry no data: imported as shapes")

    def external(self, init, dims: tuple[int, ...], unread: set[str]) -> np.ndarray | None:
        where = f"initializer '{init.name}'.external_data"
        info = {entry.key: entry.value for entry in init.external_data}
        location = info.get("location", "")
        if not location:
            self.fail(where, "no location")
        if self.directory is None:
            unread.add(location)
            return None
        base = self.directory.resolve()
        target = (base / location).resolve()
        if Path(location).is_absolute() or base not in target.parents:
            self.fail(f"{where}.location", f"'{location}' points outside the model's directory")
        if not target.is_file():
            unread.add(location)
            return None
        dtype = _NUMPY.get(init.data_type)
        if dtype is None:
            self.fail(f"initializer '{init.name}'.data_type", f"external data of type {init.data_type} is not supported")
        try:
            offset = int(info.get("offset", 0))
            count = math.prod(dims)
            length = int(info.get("length", count * np.dtype(dtype).itemsize))
        except ValueError:
            self.fail(where, "offset and length must be integers")
        if offset < 0 or length != count * np.dtype(dtype).itemsize:
            self.fail(where, f"length {length} does not match dims {list(dims)}")
        if offset + length > target.stat().st_size:
            self.fail(where, f"data file '{location}' is shorter than offset {offset} + length {length}")
        with open(target, "rb") as handle:
            handle.seek(offset)
            data = handle.read(length)
        return np.frombuffer(data, dtype=dtype).reshape(dims).copy()

    # ------------------------------------------------------------------ folding and shapes
    def fold_and_infer(self, nodes: list) -> list:
        """Fold constants and infer shapes until nothing changes, then infer strictly."""
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.dtypes: dict[str, str] = {}
        for _ in range(16):
            self.infer(nodes, strict=False)
            nodes, changed = self.fold(nodes)
            nodes, fused = _fuse_gates(nodes, self.constants)
            if not changed and not fused:
                break
        self.infer(nodes, strict=True)
        return nodes

    def fold(self, nodes: list) -> tuple[list, bool]:
        from onnx import helper, numpy_helper

        kept, changed = [], False
        for node in nodes:
            op = canonical(node.op_type) or node.op_type
            inputs = [t for t in node.input]
            attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
            if op == "Constant":
                value = _constant_value(attrs)
                if value is None:
                    self.fail(f"node '{node.name or node.output[0]}'", "Constant without a value attribute")
                self._set(node.output[0], value)
                changed = True
                continue
            if op in ("Shape", "Size") and inputs and inputs[0] in self.shapes:
                shape = self.shapes[inputs[0]]
                if op == "Size":
                    value = np.array(math.prod(shape), dtype=np.int64)
                else:
                    start, end = int(attrs.get("start", 0)), attrs.get("end")
                    value = np.array(shape[start:None if end is None else int(end)], dtype=np.int64)
                self._set(node.output[0], value)
                changed = True
                continue
            real = [t for t in inputs if t]
            if op in FOLDABLE and real and all(t in self.constants or t in self.missing for t in real):
                if any(t in self.missing for t in real):
                    out = node.output[0]
                    if out in self.shapes and len(node.output) == 1:
                        self.missing[out] = self.shapes[out]
                        self.const_dtypes[out] = self.dtypes.get(out, "float32")
                        changed = True
                        continue
                else:
                    values = [self.constants[t] if t else None for t in inputs]
                    if len(node.output) == 1 and output_elements_bounded(op, values):
                        value = evaluate(op, attrs, values)
                        if value is not None:
                            self._set(node.output[0], value)
                            changed = True
                            continue
            kept.append(node)
        return kept, changed

    def _set(self, tensor: str, value: np.ndarray) -> None:
        self.constants[tensor] = np.asarray(value)
        self.const_dtypes[tensor] = _dtype_name(np.asarray(value).dtype)
        self.shapes[tensor] = tuple(np.asarray(value).shape)

    def skeleton(self, nodes: list):
        """A ModelProto of the remaining nodes whose large constants carry dims only (for shape inference)."""
        from onnx import TensorProto, helper, numpy_helper

        graph = self.proto.graph
        inits = []
        for tensor, value in self.constants.items():
            if value.size <= 4096 and value.dtype != np.float16:
                inits.append(numpy_helper.from_array(np.ascontiguousarray(value), tensor))
            else:
                inits.append(_dims_only(tensor, value.shape, _onnx_type(value.dtype)))
        for tensor, dims in self.missing.items():
            inits.append(_dims_only(tensor, dims, _onnx_type_name(self.const_dtypes.get(tensor, "float32"))))
        inputs = []
        for info in graph.input:
            if info.name in self.constants or info.name in self.missing:
                continue
            tensor = info.type.tensor_type
            dims = [d.dim_value if d.HasField("dim_value") else 1 for d in tensor.shape.dim] if tensor.HasField("shape") else None
            inputs.append(helper.make_tensor_value_info(info.name, tensor.elem_type or TensorProto.FLOAT, dims))
        proto_nodes = []
        for node in nodes:
            op = canonical(node.op_type) or node.op_type
            if op in _NOT_ONNX and not self.official(op, node):
                proto_nodes.append(helper.make_node(_NOT_ONNX[op][0], [node.input[0]], [node.output[0]], name=node.name))
                continue
            clone = type(node)()
            clone.CopyFrom(node)
            clone.op_type = op
            if op in SUPPORTED:
                clone.domain = ""
            proto_nodes.append(clone)
        outputs = [helper.make_tensor_value_info(o.name, o.type.tensor_type.elem_type or TensorProto.FLOAT, None)
                   for o in graph.output]
        model = helper.make_model(helper.make_graph(proto_nodes, graph.name or "g", inputs, outputs, inits),
                                  opset_imports=[helper.make_opsetid("", self.opset)])
        model.ir_version = max(self.proto.ir_version, 7)
        return model

    def official(self, op: str, node) -> bool:
        """Whether ``op`` is an ONNX operator at this model's opset (see ``_NOT_ONNX``)."""
        since = _NOT_ONNX[op][1]
        return since is not None and self.opset >= since and node.domain in ("", "ai.onnx")

    def infer(self, nodes: list, *, strict: bool) -> None:
        from onnx import shape_inference

        try:
            inferred = shape_inference.infer_shapes(self.skeleton(nodes), strict_mode=strict, data_prop=True)
        except Exception as exc:  # noqa: BLE001 - inconsistent shapes, bad attributes
            if not strict:
                return
            self.fail("", f"ONNX shape inference failed: {_one_line(exc)}")
        for info in list(inferred.graph.input) + list(inferred.graph.value_info) + list(inferred.graph.output):
            tensor = info.type.tensor_type
            if not tensor.HasField("shape"):
                continue
            dims = [d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim]
            if any(d is None for d in dims):
                continue
            self.shapes[info.name] = tuple(int(d) for d in dims)
            self.dtypes[info.name] = _ONNX_DTYPES.get(tensor.elem_type, "float32")
        for tensor, value in self.constants.items():
            self.shapes[tensor] = tuple(value.shape)
            self.dtypes[tensor] = _dtype_name(value.dtype)
        for tensor, dims in self.missing.items():
            self.shapes[tensor] = tuple(dims)
            self.dtypes[tensor] = self.const_dtypes.get(tensor, "float32")

    # ------------------------------------------------------------------ the graph
    def build(self, nodes: list) -> OnnxModel:
        from onnx import helper

        proto = self.proto
        activations = 0
        for node in nodes:
            op = canonical(node.op_type)
            label = _label(node, 0)
            if op is None or (node.domain not in ("", "ai.onnx") and op not in _NOT_ONNX):
                domain = f" (domain '{node.domain}')" if node.domain not in ("", "ai.onnx") else ""
                self.fail(f"node '{label}'", f"unsupported ONNX operator '{node.op_type}'{domain} for the ONNX importer "
                                             f"(every family); supported: {', '.join(sorted(SUPPORTED))}")
            for out in node.output:
                if out and out not in self.shapes:
                    self.fail(f"node '{label}'", f"shape of output '{out}' could not be inferred (a dynamic shape?)")
                if out:
                    activations += math.prod(self.shapes[out]) * (dtype_bits(self.dtypes.get(out, "float32")) // 8 or 1)
        weight_bytes = sum(v.nbytes for v in self.constants.values())
        weight_bytes += sum(math.prod(d) * 4 for d in self.missing.values())
        if weight_bytes + activations > self.limit:
            self.fail("workload.memory_limit_mb", f"the model's tensors take {_bytes(weight_bytes + activations)} "
                                                  f"(weights {_bytes(weight_bytes)}, activations {_bytes(activations)}), "
                                                  f"over the memory cap of {_bytes(self.limit)}")
        graph = DataflowGraph(self.name, {"producer": proto.producer_name, "opset": self.opset}, source=self.source)
        producer: dict[str, str] = {}
        for inp in proto.graph.input:
            if inp.name in self.constants or inp.name in self.missing:
                continue
            io = _io_name(inp.name, "input")
            graph.add_node(io, NodeKind.IO, op="input", shape=self.shapes.get(inp.name), dtype=self.dtypes.get(inp.name),
                           attrs={"tensor": inp.name})
            producer[inp.name] = io
        used: set[str] = set(graph.node_names())
        for index, node in enumerate(nodes):
            op = canonical(node.op_type)
            node_name = node.name or f"{op}_{index}"
            if node_name in used:
                node_name = f"{node_name}_{index}"
            used.add(node_name)
            attrs = {a.name: _attr_value(helper.get_attribute_value(a)) for a in node.attribute}
            constant_inputs = [t for t in node.input if t and (t in self.constants or t in self.missing)]
            for t in node.input:
                if t and t not in producer and t not in self.constants and t not in self.missing:
                    self.fail(f"node '{node_name}'", f"input '{t}' is produced by no node, input or initializer")
            n_weights = int(sum(math.prod(self.shapes[t]) for t in constant_inputs))
            nbytes = int(sum(math.prod(self.shapes[t]) * max(1, dtype_bits(self.dtypes.get(t, "float32")) // 8)
                             for t in constant_inputs))
            out_shape = self.shapes[node.output[0]]
            macs, flops = _cost(op, node, attrs, self.shapes, out_shape, self.source, node_name)
            graph.add_node(node_name, NodeKind.OP, op=op, shape=out_shape, dtype=self.dtypes.get(node.output[0], "float32"),
                           resources={"macs": macs, "flops": flops, "weights": n_weights, "weight_bytes": nbytes},
                           attrs={"weight_shapes": {t: list(self.shapes[t]) for t in constant_inputs}, "onnx_attrs": attrs,
                                  "inputs": list(node.input), "outputs": list(node.output)})
            for tensor in dict.fromkeys(t for t in node.input if t in producer):
                _tensor_edge(graph, producer[tensor], node_name, tensor, self.shapes, self.dtypes)
            for tensor in node.output:
                if tensor:
                    producer[tensor] = node_name
        for out in proto.graph.output:
            out_node = _io_name(out.name, "output")
            if out.name not in producer:
                if out.name in self.constants or out.name in self.missing:
                    self.notes.append(f"output '{out.name}' is a constant; not part of the graph")
                    continue
                self.fail(f"output '{out.name}'", "is produced by no node")
            graph.add_node(out_node, NodeKind.IO, op="output", shape=self.shapes.get(out.name),
                           dtype=self.dtypes.get(out.name), attrs={"tensor": out.name})
            _tensor_edge(graph, producer[out.name], out_node, out.name, self.shapes, self.dtypes)
        graph.validate()
        used = {t for n in graph.nodes(NodeKind.OP) for t in n.attrs["weight_shapes"]}
        constants = {t: v for t, v in self.constants.items() if t in used}
        missing = tuple(t for t in self.missing if t in used)
        state = _weight_state(graph, missing)
        graph.attrs["weights"] = state
        return OnnxModel(self.name, self.source, graph, constants, dict(self.shapes), dict(self.dtypes), missing, state,
                         self.opset, proto.producer_name, self.notes, self.limit, self.in_memory)


def _weight_state(graph: DataflowGraph, missing: tuple[str, ...]) -> str:
    """``file`` (every constant has a value), ``missing`` (no weight of a MAC operator has one) or ``partial``."""
    if not missing:
        return "file"
    weights = {t for n in graph.nodes(NodeKind.OP) if SUPPORTED.get(n.op) in ("mvm", "recurrent")
               for t in n.attrs["weight_shapes"]}
    return "missing" if weights and weights <= set(missing) else "partial"


def _fuse_gates(nodes: list, constants: Mapping[str, np.ndarray]) -> tuple[list, bool]:
    """``Mul(x, Sigmoid(x))`` → ``Silu(x)``; ``Mul(x, HardSigmoid(x))`` with α = 1/6, β = ½ → ``HardSwish(x)``
    (when the gate's output feeds only that Mul)."""
    from onnx import helper

    readers: dict[str, int] = {}
    for node in nodes:
        for t in node.input:
            readers[t] = readers.get(t, 0) + 1
    by_output = {node.output[0]: node for node in nodes if node.output}
    drop: set[int] = set()
    out, changed = [], False
    for node in nodes:
        if canonical(node.op_type) == "Mul" and len(node.input) == 2:
            for x, g in (node.input, node.input[::-1]):
                gate = by_output.get(g)
                if gate is None or readers.get(g, 0) != 1 or not gate.input or gate.input[0] != x:
                    continue
                kind = canonical(gate.op_type)
                attrs = {a.name: helper.get_attribute_value(a) for a in gate.attribute}
                fused = None
                if kind == "Sigmoid":
                    fused = "Silu"
                elif kind == "HardSigmoid" and abs(attrs.get("alpha", 0.2) - 1 / 6) < 1e-6 and abs(attrs.get("beta", 0.5) - 0.5) < 1e-6:
                    fused = "HardSwish"
                if fused:
                    drop.add(id(gate))
                    node = helper.make_node(fused, [x], [node.output[0]], name=node.name or gate.name)
                    changed = True
                    break
        out.append(node)
    return [n for n in out if id(n) not in drop], changed


# =========================================================================== helpers


def _label(node, index: int) -> str:
    return node.name or (f"{node.op_type}:{node.output[0]}" if node.output else f"{node.op_type}_{index}")


def _bytes(n: int) -> str:
    if n >= 1 << 30:
        return f"{n / 2**30:.3g} GB"
    return f"{n / 2**20:.3g} MB"


def _has_data(init) -> bool:
    return bool(init.raw_data or init.float_data or init.int32_data or init.int64_data or init.double_data
                or init.uint64_data or init.string_data)


def _dims_only(name: str, dims: Iterable[int], elem_type: int):
    from onnx import TensorProto

    tensor = TensorProto()
    tensor.name = name
    tensor.data_type = elem_type
    tensor.dims.extend(int(d) for d in dims)
    return tensor


def _onnx_type(dtype: np.dtype) -> int:
    reverse = {np.dtype(v): k for k, v in _NUMPY.items()}
    return reverse.get(np.dtype(dtype), 1)


def _onnx_type_name(name: str) -> int:
    reverse = {v: k for k, v in _ONNX_DTYPES.items() if k not in (12, 13)}
    return reverse.get(name, 1)


def _dtype_name(dtype: np.dtype) -> str:
    name = str(np.dtype(dtype))
    return {"uint32": "int32", "uint64": "int64"}.get(name, name if name in _ONNX_DTYPES.values() else "float32")


def _constant_value(attrs: Mapping[str, Any]) -> np.ndarray | None:
    from onnx import numpy_helper

    if "value" in attrs:
        value = attrs["value"]
        return numpy_helper.to_array(value) if hasattr(value, "dims") else np.asarray(value)
    for key, dtype in (("value_float", np.float32), ("value_int", np.int64), ("value_floats", np.float32),
                       ("value_ints", np.int64)):
        if key in attrs:
            return np.asarray(attrs[key], dtype=dtype)
    return None


def _io_name(tensor: str, role: str) -> str:
    return f"{role}:{tensor}"


def _tensor_edge(graph, src, dst, tensor, shapes, dtypes) -> None:
    shape = shapes.get(tensor, ())
    dtype = dtypes.get(tensor, "float32")
    elements = math.prod(shape) if shape else 1
    graph.add_edge(src, dst, EdgeKind.TENSOR, width_bits=max(1, elements * dtype_bits(dtype)), src_port=tensor,
                   dst_port=tensor, shape=shape, dtype=dtype)


def _attr_value(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    if isinstance(value, (list, tuple)):
        return [v.decode(errors="replace") if isinstance(v, bytes) else v for v in value]
    if isinstance(value, (int, float, str)):
        return value
    if hasattr(value, "dims"):  # a TensorProto attribute (ConstantOfShape value): keep it when small
        from onnx import numpy_helper

        array = numpy_helper.to_array(value)
        return array.tolist() if array.size <= 16 else f"tensor{list(array.shape)}"
    return str(type(value).__name__)


def _numel(shape: tuple[int, ...]) -> int:
    return int(math.prod(shape)) if shape else 1


def _cost(op: str, node, attrs, shapes, out_shape, source, node_name) -> tuple[float, float]:
    out = _numel(out_shape)
    category = SUPPORTED[op]
    if op == "Conv":
        w = shapes[node.input[1]]  # (C_out, C_in/group, kH, kW...)
        macs = out * _numel(w[1:])
        bias = out if len(node.input) > 2 and node.input[2] else 0
        return float(macs), float(2 * macs + bias)
    if op == "Gemm":
        a = shapes[node.input[0]]
        k = a[0] if attrs.get("transA", 0) else a[-1]
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
    if op in ("GlobalAveragePool", "GlobalMaxPool") or category == "reduction":
        return 0.0, float(_numel(shapes[node.input[0]]))
    if op == "BatchNormalization":
        return 0.0, float(2 * out)
    if op in ("Softmax", "LogSoftmax", "LRN"):
        return 0.0, float(5 * out)
    if op in ("LayerNormalization", "InstanceNormalization"):
        return 0.0, float(8 * out)
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
    if category in _POINTWISE:
        return 0.0, float(out)
    return 0.0, 0.0  # data movement
