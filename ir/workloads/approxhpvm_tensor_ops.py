"""Tensor networks as HPVM-style hierarchical graphs, with a NumPy executor and trainer (seed 000 Ch. 5).

A :class:`TensorNetwork` is the IR of an ApproxHPVM workload:

* ``graph`` — the hierarchical :class:`~solvermap.ir.graph.DataflowGraph`: an ``io`` input node, one internal
  node per layer (seed L1187: a conv layer lowers to conv + bias add + pooling + activation, an FC layer to
  GEMM + bias add + activation) whose child graph holds the tensor-op leaves (Table 5.1, L934–948), bound to the
  layer's ``in``/``out`` ports as in Fig. 5.1 (L990–1017). Every leaf carries ``resources`` (``macs``,
  ``flops`` = N_c, the multiply + add count of the op per image, L1098) and ``attrs`` (``layer``,
  ``dot_length`` for conv/GEMM, ``param``).
* ``ops`` — the leaves in topological order after :func:`~solvermap.ir.hierarchy.flatten` (names
  ``layer/op``), the order the executor runs them in;
* ``params`` — trained weights (conv weights stored as the (C·9, K) patch-matrix operand: convolution is
  GEMM-based on both the GPU and PROMISE, L1266);
* ``data`` — the sklearn digits split (train / test).

:meth:`TensorNetwork.forward` runs the ops on a batch; a ``hook(op, inputs, golden_fn)`` may replace any op's
computation (error injection, FP16, the PROMISE functional simulator). :func:`train` fits the parameters by
Adam on softmax cross-entropy with a fixed seed (no PyTorch; the convolution uses im2col).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from solvermap.errors import InputError
from solvermap.ir.graph import DataflowGraph, NodeKind
from solvermap.ir.hierarchy import add_internal_node, bind, flatten

Hook = Callable[["TensorOp", list, Callable[[], np.ndarray]], np.ndarray]


def single_threaded_blas():
    """Context manager: BLAS on one thread. The matrices here are small, and on a shared 2-core machine a
    multi-threaded BLAS is 10× slower than one thread (measured: 12.6 ms against 1.0 ms for 899×64·64×128)."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")


@dataclass(frozen=True)
class Dataset:
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray


@lru_cache(maxsize=4)
def digits(image: bool = False, upsample: int = 1, seed: int = 0) -> Dataset:
    """sklearn's digits (1797 8×8 images, shipped with sklearn), scaled to [0, 1], split 50/50 stratified.

    ``image`` keeps the (n, 1, H, W) layout for convolutions; ``upsample`` repeats pixels (16×16 for the PROMISE
    kernels of Table 4.2, whose inputs are 16² and larger).
    """
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    bunch = load_digits()
    x = (bunch.images / 16.0).astype(np.float64)
    if upsample > 1:
        x = np.kron(x, np.ones((1, upsample, upsample)))
    x = x[:, None] if image else x.reshape(len(x), -1)
    x_train, x_test, y_train, y_test = train_test_split(x, bunch.target, test_size=0.5, random_state=seed,
                                                        stratify=bunch.target)
    return Dataset(x_train, y_train.astype(np.int64), x_test, y_test.astype(np.int64))


@dataclass(frozen=True)
class TensorOp:
    """One leaf tensor op of a flattened network."""

    name: str  # "layer/op"
    op: str  # conv | gemm | add | tanh | relu | sigmoid | pool
    layer: str
    inputs: tuple[str, ...]  # producer op names; "input" is the network input
    param: str | None = None  # key in TensorNetwork.params
    dot_length: int = 0  # N of the dot products (conv, gemm)
    n_c: float = 0.0  # multiply + add count per image (L1098)
    out_elements: int = 0  # output elements per image

    @property
    def is_dot(self) -> bool:
        return self.op in ("conv", "gemm")


@dataclass
class TensorNetwork:
    name: str
    graph: DataflowGraph
    ops: tuple[TensorOp, ...]
    params: dict[str, np.ndarray]
    data: Dataset
    layers: tuple[str, ...]
    description: str = ""
    input_shape: tuple[int, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict)

    # ------------------------------------------------------------------ structure
    def op(self, name: str) -> TensorOp:
        for op in self.ops:
            if op.name == name:
                return op
        raise InputError(self.name, "op", f"no op named {name!r}")

    def layer_ops(self, layer: str) -> list[TensorOp]:
        return [op for op in self.ops if op.layer == layer]

    def consumers(self, name: str) -> list[TensorOp]:
        return [op for op in self.ops if name in op.inputs]

    @property
    def output_op(self) -> str:
        return self.ops[-1].name

    # ------------------------------------------------------------------ execution
    def forward(self, x: np.ndarray, hook: Hook | None = None, *, start: Mapping[str, np.ndarray] | None = None,
                keep: bool = False) -> np.ndarray | dict[str, np.ndarray]:
        """Run the network; ``start`` gives precomputed op outputs (ops whose output is given are skipped)."""
        values: dict[str, np.ndarray] = {"input": x}
        if start:
            values.update(start)
        for op in self.ops:
            if op.name in values:
                continue
            inputs = [values[i] for i in op.inputs]
            golden = (lambda op=op, inputs=inputs: apply_op(op, inputs, self.params))
            values[op.name] = hook(op, inputs, golden) if hook is not None else golden()
        return values if keep else values[self.output_op]

    def accuracy(self, logits: np.ndarray, y: np.ndarray | None = None) -> float:
        y = self.data.y_test if y is None else y
        return float(np.mean(np.argmax(logits, axis=1) == y))

    def golden(self) -> dict[str, np.ndarray]:
        """FP32 (float64 here) activations of every op on the test set, cached."""
        if "golden" not in self.meta:
            self.meta["golden"] = self.forward(self.data.x_test, keep=True)
        return self.meta["golden"]

    def golden_accuracy(self) -> float:
        return self.accuracy(self.golden()[self.output_op])


# ---------------------------------------------------------------------- tensor op kernels


def im2col(x: np.ndarray) -> np.ndarray:
    """(n, C, H, W) → (n·H·W, C·9) patches of 3×3 windows, stride 1, zero padding 1."""
    n, c, h, w = x.shape
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))  # n, C, H, W, 3, 3
    return windows.transpose(0, 2, 3, 1, 4, 5).reshape(n * h * w, c * 9)


def col2im(cols: np.ndarray, shape: tuple[int, int, int, int]) -> np.ndarray:
    n, c, h, w = shape
    grad = cols.reshape(n, h, w, c, 3, 3)
    padded = np.zeros((n, c, h + 2, w + 2))
    for di in range(3):
        for dj in range(3):
            padded[:, :, di:di + h, dj:dj + w] += grad[:, :, :, :, di, dj].transpose(0, 3, 1, 2)
    return padded[:, :, 1:-1, 1:-1]


def conv_output(cols_product: np.ndarray, n: int, h: int, w: int) -> np.ndarray:
    return cols_product.reshape(n, h, w, -1).transpose(0, 3, 1, 2)


def apply_op(op: TensorOp, inputs: list[np.ndarray], params: Mapping[str, np.ndarray]) -> np.ndarray:
    """The FP32 reference semantics of one op."""
    x = inputs[0]
    if op.op == "gemm":
        return x.reshape(len(x), -1) @ params[op.param]
    if op.op == "conv":
        n, _, h, w = x.shape
        return conv_output(im2col(x) @ params[op.param], n, h, w)
    if op.op == "add":
        b = params[op.param]
        return x + (b[None, :, None, None] if x.ndim == 4 else b[None, :])
    if op.op == "tanh":
        return np.tanh(x)
    if op.op == "relu":
        return np.maximum(x, 0.0)
    if op.op == "sigmoid":
        return 1.0 / (1.0 + np.exp(-x))
    if op.op == "pool":  # 2×2 max pooling, stride 2: the max of the four strided quarters (exact, and 3× faster
        # than a 6-D reshape + max on the transposed conv output)
        return np.maximum(np.maximum(x[:, :, 0::2, 0::2], x[:, :, 0::2, 1::2]),
                          np.maximum(x[:, :, 1::2, 0::2], x[:, :, 1::2, 1::2]))
    raise InputError("", f"op '{op.name}'", f"unsupported tensor op {op.op!r}")


def backward_op(op: TensorOp, inputs: list[np.ndarray], output: np.ndarray, grad: np.ndarray,
                params: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray | None]:
    """Gradient w.r.t. the op's input and (if any) its parameter."""
    x = inputs[0]
    if op.op == "gemm":
        flat = x.reshape(len(x), -1)
        return (grad @ params[op.param].T).reshape(x.shape), flat.T @ grad
    if op.op == "conv":
        cols = im2col(x)
        g = grad.transpose(0, 2, 3, 1).reshape(-1, grad.shape[1])
        return col2im(g @ params[op.param].T, x.shape), cols.T @ g
    if op.op == "add":
        return grad, grad.sum(axis=(0, 2, 3)) if grad.ndim == 4 else grad.sum(axis=0)
    if op.op == "tanh":
        return grad * (1.0 - output ** 2), None
    if op.op == "relu":
        return grad * (x > 0), None
    if op.op == "sigmoid":
        return grad * output * (1.0 - output), None
    if op.op == "pool":
        n, c, h, w = x.shape
        up = np.repeat(np.repeat(output, 2, axis=2), 2, axis=3)
        mask = (x == up)
        mask = mask / np.maximum(1, mask.reshape(n, c, h // 2, 2, w // 2, 2).sum(axis=(3, 5)).repeat(2, 2).repeat(2, 3))
        return mask * np.repeat(np.repeat(grad, 2, axis=2), 2, axis=3), None
    raise InputError("", f"op '{op.name}'", f"unsupported tensor op {op.op!r}")


def backward(net: TensorNetwork, values: Mapping[str, np.ndarray], grad_out: np.ndarray,
             ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Backpropagate ``grad_out`` (w.r.t. the output op); returns (grads of op outputs, grads of params)."""
    grads: dict[str, np.ndarray] = {net.output_op: grad_out}
    pgrads: dict[str, np.ndarray] = {}
    for op in reversed(net.ops):
        g = grads.get(op.name)
        if g is None:
            continue
        gin, gp = backward_op(op, [values[i] for i in op.inputs], values[op.name], g, net.params)
        if gp is not None:
            pgrads[op.param] = gp
        src = op.inputs[0]
        grads[src] = grads[src] + gin if src in grads else gin
    return grads, pgrads


# ---------------------------------------------------------------------- training


def softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def train(net: TensorNetwork, *, epochs: int, lr: float = 2e-3, batch: int = 32, seed: int = 0,
          weight_decay: float = 1e-4) -> list[float]:
    """Adam on softmax cross-entropy over ``net.data.x_train``; deterministic for a seed. Returns losses."""
    with single_threaded_blas():
        return _train(net, epochs=epochs, lr=lr, batch=batch, seed=seed, weight_decay=weight_decay)


def _train(net: TensorNetwork, *, epochs: int, lr: float, batch: int, seed: int, weight_decay: float) -> list[float]:
    rng = np.random.default_rng(seed)
    x, y = net.data.x_train, net.data.y_train
    m = {k: np.zeros_like(v) for k, v in net.params.items()}
    v = {k: np.zeros_like(w) for k, w in net.params.items()}
    b1, b2, step, losses = 0.9, 0.999, 0, []
    for _ in range(epochs):
        order = rng.permutation(len(x))
        total = 0.0
        for start in range(0, len(x), batch):
            idx = order[start:start + batch]
            values = net.forward(x[idx], keep=True)
            p = softmax(values[net.output_op])
            onehot = np.eye(p.shape[1])[y[idx]]
            total += float(-np.sum(onehot * np.log(p + 1e-12)))
            _, pgrads = backward(net, values, (p - onehot) / len(idx))
            step += 1
            for key, g in pgrads.items():
                g = g + weight_decay * net.params[key]
                m[key] = b1 * m[key] + (1 - b1) * g
                v[key] = b2 * v[key] + (1 - b2) * g * g
                mhat, vhat = m[key] / (1 - b1 ** step), v[key] / (1 - b2 ** step)
                net.params[key] -= lr * mhat / (np.sqrt(vhat) + 1e-8)
        losses.append(total / len(x))
    net.meta.pop("golden", None)
    return losses


# ---------------------------------------------------------------------- construction


@dataclass(frozen=True)
class LayerSpec:
    """One layer: ``kind`` conv (3×3, pad 1, ``width`` output channels) or fc (``width`` outputs)."""

    name: str
    kind: str  # "conv" | "fc"
    width: int
    activation: str | None = "tanh"
    pool: bool = False


def build_network(name: str, layers: list[LayerSpec], data: Dataset, *, seed: int = 0, description: str = "",
                  input_shape: tuple[int, ...]) -> TensorNetwork:
    """The hierarchical HPVM graph, flattened op list and initial (Glorot) parameters of a layer stack."""
    rng = np.random.default_rng(seed)
    graph = DataflowGraph(name, {"family": "approxhpvm", "dataset": "sklearn digits"})
    graph.add_node("input", NodeKind.IO, op="input", shape=input_shape, dtype="float32")
    params: dict[str, np.ndarray] = {}
    shape = tuple(input_shape)
    previous = "input"
    for layer in layers:
        child = DataflowGraph(layer.name)
        leaves: list[str] = []
        if layer.kind == "conv":
            c, h, w = shape
            n_dot = c * 9
            out = (layer.width, h, w)
            params[f"{layer.name}.W"] = rng.uniform(-1, 1, (n_dot, layer.width)) * np.sqrt(6.0 / (n_dot + layer.width * 9))
            main = ("conv", n_dot, 2.0 * n_dot * layer.width * h * w)
        elif layer.kind == "fc":
            n_dot = int(np.prod(shape))
            out = (layer.width,)
            params[f"{layer.name}.W"] = rng.uniform(-1, 1, (n_dot, layer.width)) * np.sqrt(6.0 / (n_dot + layer.width))
            main = ("gemm", n_dot, 2.0 * n_dot * layer.width)
        else:
            raise InputError(name, f"layer '{layer.name}'.kind", f"unknown layer kind {layer.kind!r}")
        params[f"{layer.name}.b"] = np.zeros(layer.width)
        elements = int(np.prod(out))
        child.add_node(main[0], op=main[0], resources={"macs": main[2] / 2, "flops": main[2]}, shape=out,
                       dtype="float32", attrs={"layer": layer.name, "dot_length": main[1], "param": f"{layer.name}.W"})
        leaves.append(main[0])
        child.add_node("add", op="add", resources={"flops": elements}, shape=out, dtype="float32",
                       attrs={"layer": layer.name, "param": f"{layer.name}.b"})
        leaves.append("add")
        if layer.pool:
            out = (out[0], out[1] // 2, out[2] // 2)
            child.add_node("pool", op="pool", resources={"flops": 3 * int(np.prod(out))}, shape=out, dtype="float32",
                           attrs={"layer": layer.name})
            leaves.append("pool")
        if layer.activation:
            child.add_node(layer.activation, op=layer.activation, resources={"flops": int(np.prod(out))}, shape=out,
                           dtype="float32", attrs={"layer": layer.name})
            leaves.append(layer.activation)
        for a, b in zip(leaves, leaves[1:]):
            child.add_edge(a, b, "tensor", pattern="one_to_one", shape=child.node(a).shape)
        bind(child, "in", "in", leaves[0])
        bind(child, "out", "out", leaves[-1])
        add_internal_node(graph, layer.name, child, attrs={"layer_kind": layer.kind})
        graph.add_edge(previous, layer.name, "tensor", src_port="out", dst_port="in", shape=shape)
        previous, shape = layer.name, out
    graph.validate()
    return TensorNetwork(name, graph, ops_of(graph), params, data, tuple(l.name for l in layers), description,
                         tuple(input_shape))


def ops_of(graph: DataflowGraph) -> tuple[TensorOp, ...]:
    """The flattened leaves of a network graph, in topological order, as :class:`TensorOp` s."""
    flat = flatten(graph)
    ops = []
    for name in flat.topological_order():
        node = flat.node(name)
        if node.kind != NodeKind.OP:
            continue
        preds = [e.src for e in flat.in_edges(name)]
        elements = int(np.prod(node.shape)) if node.shape else 0
        ops.append(TensorOp(
            name=name, op=node.op, layer=str(node.attrs.get("layer", name.split("/")[0])),
            inputs=tuple(p if flat.node(p).kind == NodeKind.OP else "input" for p in preds) or ("input",),
            param=node.attrs.get("param"), dot_length=int(node.attrs.get("dot_length", 0)),
            n_c=float(node.resource("flops")), out_elements=elements))
    return tuple(ops)
