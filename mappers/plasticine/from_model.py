"""ONNX models and layer-shape files as Plasticine virtual-block dataflow graphs (seed 004 §4.1–4.2).

The lowering follows the built-in ``lenet`` app (:mod:`solvermap.ir.workloads.plasticine_apps`): each layer
with a weight (Conv, Gemm, MatMul with a constant, LSTM, GRU) is

* a weight memory filled once per inference by a loader actor from the model's one weight stream (one DAG
  streams every layer's weights in layer order, each loader taking its slice, as the apps' LSTM/GRU share
  ``weights_in``; weight-stationary: every weight is read from DRAM once);
* a MAC actor of ``par`` copies of (read input, read weight, mul) on 16-lane vectors, an adder tree and an
  accumulator, firing MACs / (16 · par) times (``par``: the workload parameter, as the apps' ``par``); its
  weight reads start once the loader has filled the weight memory (one RAW token per inference: the loader
  and the MAC loop meet at the inference controller, L545; a token per loader firing would tie every
  layer's MAC to the shared stream's pace, and the first layer would wait for weight slices that later
  layers' loaders, held back by their idle MACs, do not let through); its input reads follow the
  producer's writes as they are made (layers stream). Each reader names its own accesses (``<actor>.x``),
  so decomposition merges only the unrolled copies within one actor (L627);
* an activation actor, one firing per 16 outputs, that adds the bias and runs every following point-wise
  operator whose input has no other reader (ReLU/ReLU6 as max/min, batch norm as a multiply-add, sigmoid,
  tanh, SiLU, GELU and the like as their operation counts, a residual add reading the other operand's
  memory, pooling as k·k − 1 max/add operations), then writes the layer's output memory.

A product of two activations is a MAC actor reading both operand memories; softmax, layer norm, LRN and
reductions are one actor each (exp or square, a cross-lane reduction, an accumulator, the division);
reshapes, transposes, slices, pads and concatenations cost no actor (their readers address the producer's
memory). The model input is loaded from DRAM into an image memory, the output stored to DRAM. Memories
larger than a PMU are sharded by the ``decompose`` step; DRAM streams need DAGs, so a model with many layers
are few (the input, the weight stream, the output), but memories add up: ``merge`` names the count a
model needs beyond the chip's. A layer-shape file lowers each layer
the same way, reading its own input from DRAM. Operation counts of activations (sigmoid 4, tanh 5,
GELU 7, ...) are our choice (the apps' ``_sigmoid``/``_tanh`` expansions).
"""

from __future__ import annotations

import math
import re
from typing import Any

from solvermap.errors import InputError
from solvermap.ir.graph import DataflowGraph
from solvermap.ir.layer_shapes import LayerShapes
from solvermap.ir.onnx_import import SUPPORTED as IMPORTED, OnnxModel
from solvermap.ir.workloads.plasticine_vbdfg import LANES, AppBuilder, Memory, Value

MVM = ("Conv", "Gemm", "MatMul", "LSTM", "GRU")
MOVEMENT = ("Flatten", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Concat", "Pad", "Slice", "Split", "Expand",
            "Identity", "Dropout", "DepthToSpace", "SpaceToDepth", "Resize", "Tile", "Gather", "Cast",
            "QuantizeLinear", "DequantizeLinear")
# point-wise operators: the operations one output vector costs (ops of the activation actor)
POINTWISE = {"Relu": ("max",), "LeakyRelu": ("mul", "max"), "PRelu": ("mul", "max"), "Clip": ("max", "min"),
             "Sigmoid": ("neg", "exp", "add", "div"), "Tanh": ("mul", "exp", "sub", "add", "div"),
             "HardSigmoid": ("fma", "max", "min"), "HardSwish": ("fma", "max", "min", "mul"),
             "Silu": ("neg", "exp", "add", "div", "mul"), "Gelu": ("div", "erf", "add", "mul", "mul"),
             "Erf": ("erf",), "Exp": ("exp",), "Log": ("log",), "Sqrt": ("sqrt",), "Reciprocal": ("div",),
             "Neg": ("neg",), "Abs": ("abs",), "Floor": ("floor",), "Ceil": ("ceil",), "Round": ("round",),
             "Softplus": ("exp", "add", "log"), "Elu": ("exp", "sub", "mul", "max"), "Selu": ("exp", "sub", "mul", "max", "mul"),
             "Celu": ("div", "exp", "sub", "mul", "max"), "Mish": ("exp", "add", "log", "tanh", "mul"),
             "Softsign": ("abs", "add", "div"), "Sin": ("sin",), "Cos": ("cos",), "BatchNormalization": ("fma",),
             "Add": ("add",), "Sub": ("sub",), "Mul": ("mul",), "Div": ("div",), "Max": ("max",), "Min": ("min",),
             "Sum": ("add",), "Mean": ("add", "mul"), "Pow": ("mul",), "InstanceNormalization": ("sub", "mul", "fma")}
NORMS = {"Softmax": ("exp", "reduce", "div"), "LogSoftmax": ("exp", "reduce", "log", "sub"),
         "LayerNormalization": ("reduce", "sub", "mul", "reduce", "sqrt", "div", "fma"),
         "LRN": ("mul", "reduce", "fma", "div"), "ReduceMean": ("reduce", "mul"), "ReduceSum": ("reduce",),
         "ReduceMax": ("reduce",), "ReduceMin": ("reduce",), "GlobalAveragePool": ("reduce", "mul"),
         "GlobalMaxPool": ("reduce",)}
POOLS = ("MaxPool", "AveragePool")
SUPPORTED = set(MVM) | set(MOVEMENT) | set(POINTWISE) | set(NORMS) | set(POOLS)  # the README's operator table
assert SUPPORTED <= set(IMPORTED)


def is_model(ir: Any) -> bool:
    return isinstance(ir, (OnnxModel, LayerShapes))


def _name(text: str, used: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9_]", "_", text).strip("_") or "node"
    name, k = base, 1
    while name in used:
        k += 1
        name = f"{base}_{k}"
    used.add(name)
    return name


class _Lowering:
    def __init__(self, model: OnnxModel, par: int) -> None:
        self.model, self.par = model, par
        self.app = AppBuilder(re.sub(r"[^A-Za-z0-9_]", "_", model.name) or "model", par, "1 inference")
        self.used: set[str] = set()
        self.mems: dict[str, list[tuple[Memory, Value]]] = {}  # tensor → memories holding it, with their done tokens
        self.pending: dict[str, tuple[Any, Value, int]] = {}  # tensor → (open actor, value, output words)
        self.weight_stream: Value | None = None
        self.readers: dict[str, int] = {}
        for node in model.graph.nodes():
            for t in node.attrs.get("inputs", []):
                if t:
                    self.readers[t] = self.readers.get(t, 0) + 1

    def words(self, tensor: str) -> int:
        return max(1, math.prod(self.model.shapes.get(tensor, (1,))))

    def materialize(self, tensor: str) -> list[tuple[Memory, Value]]:
        if tensor in self.pending:
            actor, value, words = self.pending.pop(tensor)
            mem = self.app.sram(_name(f"{actor.name}_out", self.used), max(LANES, words))
            done = self.app.write(mem, actor, value)
            self.mems[tensor] = [(mem, done)]
        if tensor not in self.mems:
            raise InputError(self.model.source, f"tensor '{tensor}'", "is read before it is produced (family plasticine)")
        return self.mems[tensor]

    def read(self, tensor: str, actor, *, access: str = "") -> Value:
        """Read a tensor in ``actor``: every memory holding part of it (a concatenation reads each)."""
        values = [self.app.read(mem, actor, after=done, access=access) for mem, done in self.materialize(tensor)]
        value = values[0]
        for other in values[1:]:
            value = actor.op("mov", value, other)
        return value

    def run(self) -> DataflowGraph:
        model, app = self.model, self.app
        inputs = [n for n in model.graph.nodes() if n.kind == "io" and n.op == "input"]
        for node in inputs:
            tensor = node.attrs["tensor"]
            words = self.words(tensor)
            image = app.sram(_name(f"{tensor}_sram", self.used), words)
            load = app.actor(_name(f"load_{tensor}", self.used), max(1, words // LANES), loop="px")
            done = app.write(image, load, load.op("mov", app.dram_load(_name(f"{tensor}_in", self.used), words)))
            self.mems[tensor] = [(image, done)]
        weights = sum(int(n.resources.get("weights", 0)) or 1 for n in model.op_nodes() if n.op in MVM and
                      not (n.op in ("Gemm", "MatMul") and all(not model.is_constant(t) for t in n.attrs["inputs"][:2])))
        if weights:
            self.weight_stream = app.dram_load(_name("weights_in", self.used), weights)
        for node in model.op_nodes():
            self.node(node)
        outputs = [n for n in model.graph.nodes() if n.kind == "io" and n.op == "output"]
        for node in outputs:
            tensor = node.attrs["tensor"]
            words = self.words(tensor)
            store = app.actor(_name(f"store_{tensor}", self.used), max(1, words // LANES), loop="out")
            app.dram_store(_name(f"{tensor}_out", self.used), store.op("mov", self.read(tensor, store)), max(LANES, words))
        return app.finish()

    def node(self, node) -> None:
        op, model = node.op, self.model
        ins = [t for t in node.attrs.get("inputs", []) if t]
        data = [t for t in ins if not model.is_constant(t)]
        outs = [t for t in node.attrs["outputs"] if t]
        name = node.name
        if op in MVM:
            if op in ("Gemm", "MatMul") and len(data) == 2:
                self.matmul(name, node, data, outs[0])
            else:
                self.layer(name, node, data[0], outs[0])
        elif op in MOVEMENT:
            entries = [entry for t in data for entry in self.materialize(t)]
            for out in outs:
                self.mems[out] = entries
        elif op in POINTWISE or op in POOLS:
            self.pointwise(name, node, data, outs[0])
        elif op in NORMS:
            actor = self.app.actor(_name(name, self.used), max(1, self.words(data[0]) // LANES), loop="o")
            value = self.read(data[0], actor)
            for opname in NORMS[op]:
                value = actor.accumulate("add", actor.op("reduce", value)) if opname == "reduce" else actor.op(opname, value)
            self.pending[outs[0]] = (actor, value, self.words(outs[0]))
        else:
            raise InputError(model.source, f"node '{name}'", f"operator '{op}' has no lowering rule (family plasticine)")

    def layer(self, name: str, node, x: str, out: str) -> None:
        app, model = self.app, self.model
        weights = int(node.resources.get("weights", 0)) or 1
        macs = int(node.resources.get("macs", 0)) or 1
        label = _name(name, self.used)
        wmem = app.sram(_name(f"{label}_w", self.used), max(LANES, weights))
        loader = app.actor(_name(f"load_{label}_w", self.used), max(1, weights // LANES), loop="w")
        done_w = app.write(wmem, loader, loader.op("mov", self.weight_stream))
        mac = app.actor(label, max(1, macs // (LANES * self.par)), loop="o,tap")
        products = []
        for _ in range(self.par):
            xv = self.read(x, mac, access=f"{label}.x")
            wv = app.read(wmem, mac, after=done_w, per=1, access=f"{label}.w")
            products.append(mac.op("mul", xv, wv))
        acc = mac.accumulate("add", mac.tree("add", products))
        act = app.actor(_name(f"{label}_act", self.used), max(1, self.words(out) // LANES), loop="o")
        value = act.op("add", acc, 0.0)  # the bias
        if node.op in ("LSTM", "GRU"):  # the cell's gate arithmetic (the apps' _rnn cell, per output vector)
            for opname in ("neg", "exp", "add", "div", "mul", "exp", "sub", "add", "div", "mul", "add")[: 11 if node.op == "LSTM" else 9]:
                value = act.op(opname, value)
        self.pending[out] = (act, value, self.words(out))

    def matmul(self, name: str, node, data: list[str], out: str) -> None:
        app = self.app
        label = _name(name, self.used)
        mac = app.actor(label, max(1, int(node.resources.get("macs", 1)) // (LANES * self.par)), loop="o,k")
        products = [mac.op("mul", self.read(data[0], mac, access=f"{label}.a"), self.read(data[1], mac, access=f"{label}.b"))
                    for _ in range(self.par)]
        acc = mac.accumulate("add", mac.tree("add", products))
        act = app.actor(_name(f"{label}_act", self.used), max(1, self.words(out) // LANES), loop="o")
        self.pending[out] = (act, act.op("mov", acc), self.words(out))

    def pointwise(self, name: str, node, data: list[str], out: str) -> None:
        op = node.op
        x = data[0]
        if x in self.pending and self.readers.get(x, 0) == 1:
            actor, value, _ = self.pending.pop(x)
        else:
            actor = self.app.actor(_name(name, self.used), max(1, self.words(x) // LANES), loop="o")
            value = self.read(x, actor)
        for other in data[1:]:
            value = actor.op(POINTWISE.get(op, ("add",))[0], value, self.read(other, actor, access=f"{actor.name}.{other}"))
        if op in POOLS:
            kernel = node.attrs.get("onnx_attrs", {}).get("kernel_shape", [2, 2])
            for _ in range(max(1, math.prod(int(k) for k in kernel) - 1)):
                value = actor.op("max" if op == "MaxPool" else "add", value)
        elif len(data) == 1 or op not in ("Add", "Sub", "Mul", "Div", "Max", "Min", "Sum"):
            for opname in POINTWISE[op]:
                value = actor.op(opname, value, 0.0)
        self.pending[out] = (actor, value, self.words(out))


def lower(workload) -> DataflowGraph:
    """The VBDFG of an ONNX model or a layer-shape file (module docstring); ``workload.params['par']``."""
    ir = workload.ir
    par = int((workload.params or {}).get("par", 2))
    if isinstance(ir, LayerShapes):
        return _lower_layers(ir, par)
    return _Lowering(ir, par).run()


def _lower_layers(shapes: LayerShapes, par: int) -> DataflowGraph:
    app = AppBuilder(re.sub(r"[^A-Za-z0-9_]", "_", shapes.name) or "layers", par, "layer-shape file")
    used: set[str] = set()
    stream = app.dram_load("weights_in", sum(layer.K * (layer.C // layer.G) * layer.R * layer.S for layer in shapes.layers))
    for layer in shapes.layers:
        label = _name(layer.name, used)
        in_words, out_words = layer.N * layer.C * layer.H * layer.W, layer.N * layer.K * layer.P * layer.Q
        weights = layer.K * (layer.C // layer.G) * layer.R * layer.S
        image = app.sram(f"{label}_in_sram", max(LANES, in_words))
        load = app.actor(f"load_{label}_in", max(1, in_words // LANES), loop="px")
        done = app.write(image, load, load.op("mov", app.dram_load(f"{label}_in", in_words)))
        wmem = app.sram(f"{label}_w", max(LANES, weights))
        loader = app.actor(f"load_{label}_w", max(1, weights // LANES), loop="w")
        done_w = app.write(wmem, loader, loader.op("mov", stream))
        mac = app.actor(label, max(1, layer.macs // (LANES * par)), loop="o,tap")
        products = [mac.op("mul", app.read(image, mac, after=done, access="x"), app.read(wmem, mac, after=done_w, per=1, access="w"))
                    for _ in range(par)]
        acc = mac.accumulate("add", mac.tree("add", products))
        store = app.actor(f"{label}_act", max(1, out_words // LANES), loop="o")
        app.dram_store(f"{label}_out", store.op("add", acc, 0.0), max(LANES, out_words))
    return app.finish()
