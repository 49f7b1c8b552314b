"""Layer-shape files: convolution and matrix layers by their problem dimensions, as mappers of the field
describe them (Timeloop, CoSA, Accelergy examples), and the loop nests they stand for.

A layer-shape file is YAML (read with ``yaml.safe_load``: nothing in it can run code)::

    name: resnet18-convs        # optional
    layers:
      - name: conv1             # optional (layer<k>)
        C: 3                    # input channels
        K: 64                   # output channels (Timeloop's M is accepted too)
        R: 7                    # filter width  (Timeloop: R pairs with P and Wstride)
        S: 7                    # filter height (S pairs with Q and Hstride)
        P: 112                  # output width
        Q: 112                  # output height
        N: 1                    # batch
        Wstride: 2              # default 1 (also Hstride, Wdilation, Hdilation)
        Hstride: 2
        G: 1                    # groups (``groups`` accepted); G = C = K is a depthwise layer
        dtypes: {input: uint8, weight: int8, output: int32}   # optional; these are the defaults

Each entry of ``layers`` may instead be a Timeloop/CoSA problem (``problem: {shape: {name: CNN-Layer, ...},
instance: {C: 64, M: 64, R: 3, S: 3, P: 56, Q: 56, N: 1, Wstride: 1, ...}}``), and the whole file may be
one such problem, or several as YAML documents separated by ``---``. A ``dw-cnn-layer`` problem (no K/M)
is depthwise (G = K = C). As in Timeloop the input is the padded tensor the output needs:
W = (P − 1)·Wstride + (R − 1)·Wdilation + 1 and H = (Q − 1)·Hstride + (S − 1)·Hdilation + 1.

Limits (a value outside is one line naming file, field and the range): every dimension an integer in
[1, 2^20]; G divides C and K; the file at most 4 MB; the bytes of all declared tensors under the memory cap
(``memory_limit_mb``; default half of physical memory).

:func:`conv_program` is a layer's loop nest (``out[n, k, q, p] += data[n, c, ...] · weight[k, c/G, s, r]``,
with a group loop for G > 1 and a batch loop for N > 1), :func:`conv_reference` its fast NumPy result;
:func:`from_model` reads the conv and matrix layers of an imported ONNX model as shapes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from solvermap.errors import InputError

MAX_DIM = 1 << 20
MAX_FILE_BYTES = 4 << 20
DTYPES = ("uint8", "int8", "int16", "int32")
_KEYS = {"C", "K", "M", "R", "S", "P", "Q", "N", "G", "groups", "Wstride", "Hstride", "Wdilation", "Hdilation",
         "name", "dtypes"}
_DIMENSION_KEYS = ("C", "K", "R", "S", "P", "Q", "N", "G", "Wstride", "Hstride", "Wdilation", "Hdilation")


@dataclass(frozen=True)
class ConvShape:
    """One layer: ``out[N, K, Q, P] += in[N, C, H, W] ⋆ weight[K, C/G, S, R]`` (see the module docstring).
    A matrix product ``[M × k] · [k × n]`` is C = k, K = n, P = M, Q = R = S = 1."""

    name: str
    C: int
    K: int
    R: int = 1
    S: int = 1
    P: int = 1
    Q: int = 1
    N: int = 1
    G: int = 1
    Wstride: int = 1
    Hstride: int = 1
    Wdilation: int = 1
    Hdilation: int = 1
    input_dtype: str = "uint8"
    weight_dtype: str = "int8"
    output_dtype: str = "int32"
    origin: str = ""  # the ONNX node (from_model) or "file"

    @property
    def W(self) -> int:
        return (self.P - 1) * self.Wstride + (self.R - 1) * self.Wdilation + 1

    @property
    def H(self) -> int:
        return (self.Q - 1) * self.Hstride + (self.S - 1) * self.Hdilation + 1

    @property
    def macs(self) -> int:
        return self.N * self.K * self.P * self.Q * (self.C // self.G) * self.R * self.S

    def tensor_bytes(self) -> int:
        return (self.N * self.C * self.H * self.W + self.K * (self.C // self.G) * self.R * self.S
                + 4 * self.N * self.K * self.P * self.Q)

    def key(self) -> tuple:
        """What makes two layers the same problem (the name aside)."""
        return (self.C, self.K, self.R, self.S, self.P, self.Q, self.N, self.G, self.Wstride, self.Hstride,
                self.Wdilation, self.Hdilation, self.input_dtype, self.weight_dtype, self.output_dtype)

    def describe(self) -> dict[str, Any]:
        return {"C": self.C, "K": self.K, "R": self.R, "S": self.S, "P": self.P, "Q": self.Q, "N": self.N, "G": self.G,
                "Wstride": self.Wstride, "Hstride": self.Hstride, "Wdilation": self.Wdilation, "Hdilation": self.Hdilation}


@dataclass
class LayerShapes:
    """The layers of a layer-shape file (or of a model, read as shapes)."""

    name: str
    layers: tuple[ConvShape, ...]
    source: str = ""
    notes: list[str] = field(default_factory=list)

    def distinct(self) -> list[tuple[ConvShape, list[str]]]:
        """Each distinct problem once, with the names of the layers that share it (in file order)."""
        groups: dict[tuple, tuple[ConvShape, list[str]]] = {}
        for layer in self.layers:
            groups.setdefault(layer.key(), (layer, []))[1].append(layer.name)
        return list(groups.values())


# =========================================================================== reading


def load(path: str | Path, *, memory_limit: int | None = None) -> LayerShapes:
    """Read a layer-shape file (see the module docstring); bad input is one :class:`InputError` line."""
    import yaml

    path = Path(path)
    source = str(path)
    if path.is_dir():
        raise InputError(source, "", "is a directory, not a layer-shape file")
    if not path.exists():
        raise InputError(source, "", "no such file")
    size = path.stat().st_size
    if size == 0:
        raise InputError(source, "", "empty file (0 bytes)")
    if size > MAX_FILE_BYTES:
        raise InputError(source, "", f"{size} bytes; a layer-shape file holds at most {MAX_FILE_BYTES} bytes")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(source, "", "not UTF-8 text (a binary file?)") from None
    except OSError as exc:
        raise InputError(source, "", f"cannot read the file ({exc.strerror})") from None
    try:
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else ""
        raise InputError(source, where, f"invalid YAML: {getattr(exc, 'problem', None) or 'parse error'}") from None
    except RecursionError:
        raise InputError(source, "", "nesting too deep") from None
    return parse(documents, source, path.stem, memory_limit=memory_limit)


def parse(documents: list[Any], source: str, default_name: str = "layers", *, memory_limit: int | None = None) -> LayerShapes:
    """Layer shapes from parsed YAML documents (see the module docstring)."""
    from solvermap.ir.onnx_import import default_memory_limit

    if not documents:
        raise InputError(source, "", "no layers (an empty document)")
    name = default_name
    entries: list[tuple[str, Any]] = []
    if len(documents) == 1 and isinstance(documents[0], dict) and "layers" in documents[0]:
        top = documents[0]
        unknown = sorted(set(top) - {"name", "layers", "format", "version"})
        if unknown:
            raise InputError(source, unknown[0], "unknown field; a layer-shape file has name and layers")
        name = str(top.get("name", name))
        layers = top["layers"]
        if not isinstance(layers, list) or not layers:
            raise InputError(source, "layers", "expected a non-empty list of layers")
        entries = [(f"layers[{k}]", entry) for k, entry in enumerate(layers)]
    else:
        entries = [(f"document {k + 1}" if len(documents) > 1 else "problem", doc) for k, doc in enumerate(documents)]
    shapes: list[ConvShape] = []
    for k, (where, entry) in enumerate(entries):
        shapes.append(_layer(entry, source, where, f"layer{k + 1}"))
    names = [s.name for s in shapes]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate is not None:
        raise InputError(source, f"layers.{duplicate}", "duplicate layer name")
    limit = memory_limit or default_memory_limit()
    total = sum(s.tensor_bytes() for s in shapes)
    if total > limit:
        largest = max(shapes, key=lambda s: s.tensor_bytes())
        raise InputError(source, "workload.memory_limit_mb", f"the layers' tensors take {total / 2**20:.0f} MB "
                         f"(largest: '{largest.name}', {largest.tensor_bytes() / 2**20:.0f} MB), over the memory cap "
                         f"of {limit / 2**20:.0f} MB")
    return LayerShapes(str(name), tuple(shapes), source)


def shape_of(dims: dict[str, Any], source: str = "", where: str = "layer", name: str = "layer") -> ConvShape:
    """A checked :class:`ConvShape` from a mapping of dimensions (the keys of a layer-shape file entry)."""
    return _layer({"name": name, **{k: v for k, v in dims.items() if v is not None}}, source, where, name)


def _layer(entry: Any, source: str, where: str, default_name: str) -> ConvShape:
    if not isinstance(entry, dict):
        raise InputError(source, where, f"expected a mapping of layer dimensions, got {type(entry).__name__}")
    name = entry.get("name", default_name)
    depthwise = False
    if "problem" in entry:  # Timeloop / CoSA problem
        problem = entry["problem"]
        if not isinstance(problem, dict):
            raise InputError(source, f"{where}.problem", "expected a mapping")
        shape = problem.get("shape", {})
        if shape is not None and not isinstance(shape, dict):
            raise InputError(source, f"{where}.problem.shape", "expected a mapping")
        shape_name = str((shape or {}).get("name", "CNN-Layer"))
        depthwise = "dw" in shape_name.lower() or "depthwise" in shape_name.lower()
        dims = problem.get("instance", {k: v for k, v in problem.items() if k != "shape"})
        if not isinstance(dims, dict):
            raise InputError(source, f"{where}.problem.instance", "expected a mapping of dimensions")
        name = entry.get("name", shape_name if shape_name not in ("CNN-Layer", "cnn-layer", "conv_layer") else default_name)
        where = f"{where}.problem.instance" if "instance" in problem else f"{where}.problem"
        dims = {k: v for k, v in dims.items() if k not in ("densities",)}
    else:
        dims = {k: v for k, v in entry.items() if k != "name"}
    unknown = sorted(str(k) for k in dims if k not in _KEYS)
    if unknown:
        raise InputError(source, f"{where}.{unknown[0]}", f"unknown dimension; known: {', '.join(sorted(_KEYS - {'name'}))}")
    if "M" in dims and "K" in dims:
        raise InputError(source, f"{where}.M", "give the output channels as K or M, not both")
    if "groups" in dims and "G" in dims:
        raise InputError(source, f"{where}.groups", "give the groups as G or groups, not both")
    values: dict[str, int] = {}
    for key in ("C", "K", "M", "R", "S", "P", "Q", "N", "G", "groups", "Wstride", "Hstride", "Wdilation", "Hdilation"):
        if key not in dims:
            continue
        value = dims[key]
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_DIM:
            raise InputError(source, f"{where}.{key}", f"expected an integer in [1, {MAX_DIM}], got {value!r}")
        values["K" if key == "M" else ("G" if key == "groups" else key)] = value
    if "C" not in values:
        raise InputError(source, f"{where}.C", "missing required dimension")
    if depthwise:
        values.setdefault("K", values["C"])
        values.setdefault("G", values["C"])
    if "K" not in values:
        raise InputError(source, f"{where}.K", "missing required dimension (output channels, K or M)")
    groups = values.get("G", 1)
    if values["C"] % groups or values["K"] % groups:
        raise InputError(source, f"{where}.G", f"{groups} groups do not divide C = {values['C']} and K = {values['K']}")
    dtypes = dims.get("dtypes", {}) or {}
    if not isinstance(dtypes, dict):
        raise InputError(source, f"{where}.dtypes", "expected a mapping of input, weight, output")
    for key, value in dtypes.items():
        if key not in ("input", "weight", "output"):
            raise InputError(source, f"{where}.dtypes.{key}", "unknown tensor; expected input, weight or output")
        if value not in DTYPES:
            raise InputError(source, f"{where}.dtypes.{key}", f"unknown dtype {value!r}; expected one of {', '.join(DTYPES)}")
    if not isinstance(name, (str, int)) or not str(name).strip():
        raise InputError(source, f"{where}.name", "expected a non-empty string")
    return ConvShape(str(name), values["C"], values["K"], values.get("R", 1), values.get("S", 1), values.get("P", 1),
                     values.get("Q", 1), values.get("N", 1), groups, values.get("Wstride", 1), values.get("Hstride", 1),
                     values.get("Wdilation", 1), values.get("Hdilation", 1), dtypes.get("input", "uint8"),
                     dtypes.get("weight", "int8"), dtypes.get("output", "int32"), "file")


# =========================================================================== models as shapes


def from_model(model) -> LayerShapes:
    """The quantisable layers of an imported ONNX model as shapes: every Conv (2-D), Gemm and MatMul (with a
    weight, or of two activations: a batched product is N independent products, P = rows)."""
    layers: list[ConvShape] = []
    for node in model.op_nodes():
        if node.op not in ("Conv", "Gemm", "MatMul"):
            continue
        ins = [t for t in node.attrs["inputs"] if t]
        a = node.attrs.get("onnx_attrs", {})
        if node.op == "Conv":
            w = model.shapes[ins[1]]
            if len(w) != 4:
                continue
            out = model.shapes[node.attrs["outputs"][0]]
            groups = int(a.get("group", 1))
            sh, sw = (int(s) for s in a.get("strides", [1, 1]))
            dh, dw = (int(d) for d in a.get("dilations", [1, 1]))
            layers.append(ConvShape(node.name, int(w[1]) * groups, int(w[0]), int(w[3]), int(w[2]), int(out[3]), int(out[2]),
                                    int(out[0]), groups, sw, sh, dw, dh, origin=node.name))
            continue
        a_shape = model.shapes[ins[0]]
        b_shape = model.shapes[ins[1]]
        trans_a = int(a.get("transA", 0)) if node.op == "Gemm" else 0
        trans_b = int(a.get("transB", 0)) if node.op == "Gemm" else 0
        k = a_shape[-2] if trans_a else a_shape[-1]
        n = b_shape[-2] if trans_b else b_shape[-1]
        rows = a_shape[-1] if trans_a else (a_shape[-2] if len(a_shape) >= 2 else 1)
        batch = int(math.prod(a_shape[:-2])) if len(a_shape) > 2 else 1
        if model.is_constant(ins[1]):  # a weight: the batch folds into the rows
            layers.append(ConvShape(node.name, int(k), int(n), P=int(rows * batch), origin=node.name))
        else:
            layers.append(ConvShape(node.name, int(k), int(n), P=int(rows), N=batch, origin=node.name))
    return LayerShapes(model.name, tuple(layers), model.source)


# =========================================================================== loop nests


def conv_program(shape: ConvShape, name: str | None = None):
    """The loop nest of a layer (tensorize's and push memory's IR). With G = 1, N = 1, square filters, equal
    strides and no dilation it is exactly the ``conv2d`` workload's nest (and carries its ``conv2d`` attrs)."""
    from solvermap.ir.loopnest import Program, Tensor, statement

    s = shape
    name = name or s.name
    cg, kg = s.C // s.G, s.K // s.G
    loops: list[tuple] = []
    batch = s.N > 1
    grouped = s.G > 1
    if batch:
        loops.append(("n", 0, s.N, "data_parallel"))
    if grouped:
        loops.append(("g", 0, s.G, "data_parallel"))
    loops += [("k", 0, kg if grouped else s.K, "data_parallel"), ("y", 0, s.Q, "data_parallel"),
              ("x", 0, s.P, "data_parallel"), ("c", 0, cg, "reduction"), ("r", 0, s.S, "reduction"),
              ("s", 0, s.R, "reduction")]
    n_idx = "n, " if batch else ""
    k_idx = f"{kg}*g + k" if grouped else "k"
    c_idx = f"{cg}*g + c" if grouped else "c"
    row = f"{s.Hstride}*y + {s.Hdilation}*r" if s.Hdilation != 1 else f"{s.Hstride}*y + r"
    col = f"{s.Wstride}*x + {s.Wdilation}*s" if s.Wdilation != 1 else f"{s.Wstride}*x + s"
    stmt = statement("conv", loops, f"out[{n_idx}{k_idx}, y, x]",
                     f"int32(data[{n_idx}{c_idx}, {row}, {col}]) * int32(weight[{k_idx}, c, r, s])",
                     dtype=s.output_dtype, accumulate=True)
    lead = (s.N,) if batch else ()
    tensors = {
        "data": Tensor("data", lead + (s.C, s.H, s.W), s.input_dtype, "input"),
        "weight": Tensor("weight", (s.K, cg, s.S, s.R), s.weight_dtype, "input"),
        "out": Tensor("out", lead + (s.K, s.Q, s.P), s.output_dtype, "output"),
    }
    attrs: dict[str, Any] = {"conv": s.describe()}
    if not batch and not grouped and s.R == s.S and s.H == s.W and s.Hstride == s.Wstride and s.Hdilation == s.Wdilation == 1:
        attrs["conv2d"] = {"C": s.C, "K": s.K, "IHW": s.H, "R": s.R, "stride": s.Hstride, "OHW": s.Q}
    return Program(name, tensors, [stmt], attrs, source=f"layer {name}").validate()


def conv_reference(data: np.ndarray, weight: np.ndarray, conv: dict[str, int]) -> np.ndarray:
    """Exact integer result of :func:`conv_program` (float64 products are exact for 8/16-bit operands and
    sums below 2^53), wrapped to int32 like the hardware."""
    n_, g = conv["N"], conv["G"]
    batch = data if n_ > 1 else data[None]
    b, c, h, w = batch.shape
    k, cg, fs, fr = weight.shape
    q, p = conv["Q"], conv["P"]
    kg = k // g
    out = np.zeros((b, k, q, p), dtype=np.float64)
    for dy in range(fs):
        for dx in range(fr):
            y0, x0 = dy * conv["Hdilation"], dx * conv["Wdilation"]
            window = batch[:, :, y0:y0 + (q - 1) * conv["Hstride"] + 1:conv["Hstride"],
                           x0:x0 + (p - 1) * conv["Wstride"] + 1:conv["Wstride"]].astype(np.float64)
            for grp in range(g):
                wg = weight[grp * kg:(grp + 1) * kg, :, dy, dx].astype(np.float64)  # kg × cg
                xg = window[:, grp * cg:(grp + 1) * cg]  # b × cg × q × p
                out[:, grp * kg:(grp + 1) * kg] += np.einsum("kc,bcqp->bkqp", wg, xg)
    result = out.astype(np.int64).astype(np.int32)
    return result if n_ > 1 else result[0]
