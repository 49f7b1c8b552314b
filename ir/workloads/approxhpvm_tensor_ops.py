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

import copy
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
class Window:
    """Sliding-window geometry of a convolution or pooling: square ``kernel``, ``stride``, zero ``padding``
    and (convolutions) ``groups`` (1 = dense, = channels for a depthwise convolution)."""

    kernel: int = 3
    stride: int = 1
    padding: int = 0
    groups: int = 1

    def out_size(self, size: int) -> int:
        return (size + 2 * self.padding - self.kernel) // self.stride + 1


CONV3 = Window(3, 1, 1)  # the 8×8 networks' 3×3 convolution, stride 1, zero padding 1
POOL2 = Window(2, 2, 0)  # 2×2 pooling, stride 2


@dataclass(frozen=True)
class TensorOp:
    """One leaf tensor op of a flattened network."""

    name: str  # "layer/op"
    op: str  # conv | gemm | add | batchnorm | tanh | relu | sigmoid | pool | avgpool | softmax
    layer: str
    inputs: tuple[str, ...]  # producer op names; "input" is the network input
    param: str | None = None  # key in TensorNetwork.params
    dot_length: int = 0  # N of the dot products (conv: C/groups·k², gemm: inputs)
    n_c: float = 0.0  # multiply + add count per image (L1098)
    out_elements: int = 0  # output elements per image
    window: Window | None = None  # conv and pooling geometry
    shape: tuple[int, ...] = ()  # output shape per image

    @property
    def is_dot(self) -> bool:
        return self.op in ("conv", "gemm")


@dataclass
class TensorNetwork:
    name: str
    graph: DataflowGraph
    ops: tuple[TensorOp, ...]
    params: dict[str, np.ndarray]
    data: Dataset | None  # None: imported without a dataset (costs only)
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

    def op_input_shape(self, op: TensorOp) -> tuple[int, ...]:
        """The per-image shape of ``op``'s (first) input."""
        src = op.inputs[0]
        return tuple(self.input_shape) if src == "input" else self.op(src).shape

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

    def dataset(self) -> Dataset:
        if self.data is None:
            raise InputError(self.name, "data", "the network has no dataset (imported without one): accuracy and the "
                             "Monte Carlo tests need its inputs and labels")
        return self.data

    def accuracy(self, logits: np.ndarray, y: np.ndarray | None = None) -> float:
        y = self.dataset().y_test if y is None else y
        return float(np.mean(np.argmax(logits, axis=1) == y))

    def golden(self) -> dict[str, np.ndarray]:
        """FP32 (float64 here) activations of every op on the test set, cached."""
        if "golden" not in self.meta:
            self.meta["golden"] = self.forward(self.dataset().x_test, keep=True)
        return self.meta["golden"]

    def golden_accuracy(self) -> float:
        return self.accuracy(self.golden()[self.output_op])


def detached(net: TensorNetwork) -> TensorNetwork:
    """A copy of a (cached, trained) network whose parameters and meta a caller may change freely."""
    twin = copy.copy(net)
    twin.params = {k: v.copy() for k, v in net.params.items()}
    twin.meta = dict(net.meta)
    return twin


def register_trained(name: str, description: str, trained: Callable[[str, int, int], TensorNetwork]) -> None:
    """Register a trained network as an approxhpvm workload with its ``seed`` and ``epochs`` parameters."""
    from solvermap.ir.workloads import Param, register, seed_param

    @register(name, "approxhpvm", description, params={
        "seed": seed_param("seed of the weight initialisation and the training order"),
        "epochs": Param(0, "training epochs; 0 = the network's own default", 0, 1000)})
    def builder(seed: int = 0, epochs: int = 0) -> TensorNetwork:
        return trained(name, int(seed), int(epochs))


# ---------------------------------------------------------------------- tensor op kernels


def im2col(x: np.ndarray, window: Window = CONV3) -> np.ndarray:
    """(n, C, H, W) → (n·Ho·Wo, C·k²) patches of k×k windows (channel-major, then the window's rows and
    columns), Ho = ``window.out_size(H)``: the patch matrix of GEMM-based convolution (L1266)."""
    k, stride, pad = window.kernel, window.stride, window.padding
    n, c, _, _ = x.shape
    padded = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad))) if pad else x
    windows = np.lib.stride_tricks.sliding_window_view(padded, (k, k), axis=(2, 3))  # n, C, Ho', Wo', k, k
    if stride > 1:
        windows = windows[:, :, ::stride, ::stride]
    ho, wo = windows.shape[2], windows.shape[3]
    return windows.transpose(0, 2, 3, 1, 4, 5).reshape(n * ho * wo, c * k * k)


def col2im(cols: np.ndarray, shape: tuple[int, int, int, int], window: Window = CONV3) -> np.ndarray:
    """The adjoint of :func:`im2col`: patch-matrix gradients summed back onto the (n, C, H, W) input."""
    n, c, h, w = shape
    k, stride, pad = window.kernel, window.stride, window.padding
    ho, wo = window.out_size(h), window.out_size(w)
    grad = cols.reshape(n, ho, wo, c, k, k)
    padded = np.zeros((n, c, h + 2 * pad, w + 2 * pad))
    for di in range(k):
        for dj in range(k):
            padded[:, :, di:di + stride * ho:stride, dj:dj + stride * wo:stride] += \
                grad[:, :, :, :, di, dj].transpose(0, 3, 1, 2)
    return padded[:, :, pad:pad + h, pad:pad + w]


def conv_output(cols_product: np.ndarray, n: int, h: int, w: int) -> np.ndarray:
    return cols_product.reshape(n, h, w, -1).transpose(0, 3, 1, 2)


MatMul = Callable[[np.ndarray, np.ndarray], np.ndarray]


def grouped_product(cols: np.ndarray, w: np.ndarray, groups: int, matmul: MatMul = np.matmul) -> np.ndarray:
    """Patch matrix (P, C·k²) times the weight operand (C/g·k², K) of a convolution with ``groups`` groups:
    group i multiplies its channels' columns by its K/g output columns. ``matmul`` is the exact product or a
    hardware model of it (PROMISE computes each group's dot products the same way)."""
    if groups == 1:
        return matmul(cols, w)
    per_in, per_out = cols.shape[1] // groups, w.shape[1] // groups
    out = np.empty((cols.shape[0], w.shape[1]))
    for i in range(groups):
        out[:, i * per_out:(i + 1) * per_out] = matmul(cols[:, i * per_in:(i + 1) * per_in],
                                                       w[:, i * per_out:(i + 1) * per_out])
    return out


PATCH_LIMIT = 1 << 22  # patch-matrix elements above which a convolution is computed a few images at a time


def patch_elements(shape: tuple[int, ...], window: Window) -> int:
    """Elements of the patch matrix of an (n, C, H, W) input."""
    n, c, h, w = shape
    return n * window.out_size(h) * window.out_size(w) * c * window.kernel ** 2


def conv_product(x: np.ndarray, w: np.ndarray, window: Window) -> np.ndarray:
    """patches(x) @ w as a (n·Ho·Wo, K) matrix. A patch matrix above :data:`PATCH_LIMIT` elements is built and
    multiplied for a few images at a time (same rows, same sums): LeNet's Conv2 on 899 images would need 141 M
    elements at once, and the chunks stay in cache (measured: 13.3 s → 2.5 s on a loaded 2-core machine)."""
    n = len(x)
    per_image = patch_elements((1, *x.shape[1:]), window)
    if n * per_image <= PATCH_LIMIT:
        return grouped_product(im2col(x, window), w, window.groups)
    chunk = max(1, (1 << 20) // per_image)
    return np.concatenate([grouped_product(im2col(x[i:i + chunk], window), w, window.groups)
                           for i in range(0, n, chunk)])


def conv2d(x: np.ndarray, w: np.ndarray, window: Window, matmul: MatMul | None = None) -> np.ndarray:
    """GEMM-based convolution (L1266): im2col, the (grouped) product with ``matmul`` (default: exact, see
    :func:`conv_product`), unpatching."""
    n, _, h, wd = x.shape
    if matmul is None:
        product = conv_product(x, w, window)
    else:
        product = grouped_product(im2col(x, window), w, window.groups, matmul)
    return conv_output(product, n, window.out_size(h), window.out_size(wd))


def _channel(v: np.ndarray, ndim: int) -> np.ndarray:
    return v.reshape((1, -1, 1, 1) if ndim == 4 else (1, -1))


def _pool(x: np.ndarray, window: Window, reduce) -> np.ndarray:
    pad = window.padding
    if pad:
        x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=-np.inf)
    views = np.lib.stride_tricks.sliding_window_view(x, (window.kernel, window.kernel), axis=(2, 3))
    views = views[:, :, ::window.stride, ::window.stride]
    return reduce(views, axis=(4, 5))


def apply_op(op: TensorOp, inputs: list[np.ndarray], params: Mapping[str, np.ndarray]) -> np.ndarray:
    """The FP32 reference semantics of one op."""
    x = inputs[0]
    if op.op == "gemm":
        return x.reshape(len(x), -1) @ params[op.param]
    if op.op == "conv":
        return conv2d(x, params[op.param], op.window or CONV3)
    if op.op == "add":
        return x + _channel(params[op.param], x.ndim)
    if op.op == "batchnorm":  # inference batch normalisation folded to a per-channel affine map (scale, shift)
        scale_shift = params[op.param]
        return x * _channel(scale_shift[0], x.ndim) + _channel(scale_shift[1], x.ndim)
    if op.op == "tanh":
        return np.tanh(x)
    if op.op == "relu":
        return np.maximum(x, 0.0)
    if op.op == "sigmoid":
        return 1.0 / (1.0 + np.exp(-x))
    if op.op == "pool":
        window = op.window or POOL2
        if window == POOL2 and x.shape[2] % 2 == 0 and x.shape[3] % 2 == 0:
            # the max of the four strided quarters: exact, and 3× faster than a windowed max
            return np.maximum(np.maximum(x[:, :, 0::2, 0::2], x[:, :, 0::2, 1::2]),
                              np.maximum(x[:, :, 1::2, 0::2], x[:, :, 1::2, 1::2]))
        return _pool(x, window, np.max)
    if op.op == "avgpool":
        return _pool(x, op.window or POOL2, np.mean)
    if op.op == "softmax":
        return softmax(x.reshape(len(x), -1))
    raise InputError("", f"op '{op.name}'", f"unsupported tensor op {op.op!r}")


def _non_overlapping(op: TensorOp, x: np.ndarray) -> int:
    window = op.window or POOL2
    k = window.kernel
    if window.stride != k or window.padding or x.shape[2] % k or x.shape[3] % k:
        raise InputError("", f"op '{op.name}'", "training through pooling needs non-overlapping windows that tile "
                         f"the input (kernel = stride, no padding); got kernel {k}, stride {window.stride}, "
                         f"padding {window.padding} on {x.shape[2]}×{x.shape[3]}")
    return k


def backward_op(op: TensorOp, inputs: list[np.ndarray], output: np.ndarray, grad: np.ndarray,
                params: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray | None]:
    """Gradient w.r.t. the op's input and (if any) its parameter."""
    x = inputs[0]
    if op.op == "gemm":
        flat = x.reshape(len(x), -1)
        return (grad @ params[op.param].T).reshape(x.shape), flat.T @ grad
    if op.op == "conv":
        window = op.window or CONV3
        w = params[op.param]
        g = grad.transpose(0, 2, 3, 1).reshape(-1, grad.shape[1])
        cols = im2col(x, window)
        if window.groups == 1:
            return col2im(g @ w.T, x.shape, window), cols.T @ g
        groups, per_in, per_out = window.groups, cols.shape[1] // window.groups, w.shape[1] // window.groups
        dcols, dw = np.empty_like(cols), np.empty_like(w)
        for i in range(groups):
            gi, ci = g[:, i * per_out:(i + 1) * per_out], cols[:, i * per_in:(i + 1) * per_in]
            dcols[:, i * per_in:(i + 1) * per_in] = gi @ w[:, i * per_out:(i + 1) * per_out].T
            dw[:, i * per_out:(i + 1) * per_out] = ci.T @ gi
        return col2im(dcols, x.shape, window), dw
    axes = (0, 2, 3) if grad.ndim == 4 else (0,)
    if op.op == "add":
        return grad, grad.sum(axis=axes)
    if op.op == "batchnorm":
        scale_shift = params[op.param]
        return grad * _channel(scale_shift[0], x.ndim), np.stack([(grad * x).sum(axis=axes), grad.sum(axis=axes)])
    if op.op == "tanh":
        return grad * (1.0 - output ** 2), None
    if op.op == "relu":
        return grad * (x > 0), None
    if op.op == "sigmoid":
        return grad * output * (1.0 - output), None
    if op.op == "pool":
        k = _non_overlapping(op, x)
        n, c, h, w = x.shape
        up = np.repeat(np.repeat(output, k, axis=2), k, axis=3)
        mask = (x == up)
        mask = mask / np.maximum(1, mask.reshape(n, c, h // k, k, w // k, k).sum(axis=(3, 5)).repeat(k, 2).repeat(k, 3))
        return mask * np.repeat(np.repeat(grad, k, axis=2), k, axis=3), None
    if op.op == "avgpool":
        k = _non_overlapping(op, x)
        return np.repeat(np.repeat(grad, k, axis=2), k, axis=3) / (k * k), None
    if op.op == "softmax":
        flat = grad.reshape(len(grad), -1)
        return (output * (flat - np.sum(flat * output, axis=1, keepdims=True))).reshape(x.shape), None
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
    """One layer of a network built by :func:`build_network`.

    ``kind`` conv (``width`` output channels, a ``kernel``×``kernel`` window at ``stride``, zero ``padding``
    (None: ``kernel // 2``, "same"), ``groups``), fc (``width`` outputs) or softmax (no parameters). After the
    conv/GEMM and its bias add come an optional batch normalisation, then the activation and ``pool``
    (``pool_kind`` max or avg, ``pool_window``×``pool_window`` at stride ``pool_window``) in the order
    ``pool_first`` gives: the 8×8 networks pool first (L1187 lists conv, bias add, pooling, tanh), HPVM's
    own LeNet (``lenet_mnist_cudnn.cpp``) applies tanh first.
    """

    name: str
    kind: str  # "conv" | "fc" | "softmax"
    width: int = 0
    activation: str | None = "tanh"
    pool: bool = False
    kernel: int = 3
    stride: int = 1
    padding: int | None = None
    groups: int = 1
    batchnorm: bool = False
    pool_kind: str = "max"
    pool_window: int = 2
    pool_first: bool = True


@dataclass(frozen=True)
class Leaf:
    """One tensor op of a layer before it enters the graph: op kind, output shape per image, FLOPs (N_c) and
    MACs per image, and attributes (``dot_length``, ``param``, ``window``)."""

    name: str
    op: str
    shape: tuple[int, ...]
    flops: float
    macs: float = 0.0
    attrs: Mapping[str, Any] = field(default_factory=dict)


def window_attrs(window: Window) -> dict[str, int]:
    return {"kernel": window.kernel, "stride": window.stride, "padding": window.padding, "groups": window.groups}


def conv_leaf(name: str, in_shape: tuple[int, ...], out_channels: int, window: Window, param: str) -> Leaf:
    c, h, w = in_shape
    n_dot = c // window.groups * window.kernel ** 2
    out = (out_channels, window.out_size(h), window.out_size(w))
    macs = float(n_dot * int(np.prod(out)))
    return Leaf(name, "conv", out, 2.0 * macs, macs,
                {"dot_length": n_dot, "param": param, "window": window_attrs(window)})


def gemm_leaf(name: str, in_shape: tuple[int, ...], outputs: int, param: str) -> Leaf:
    n_dot = int(np.prod(in_shape))
    return Leaf(name, "gemm", (outputs,), 2.0 * n_dot * outputs, float(n_dot * outputs), {"dot_length": n_dot,
                                                                                          "param": param})


def pool_leaf(name: str, op: str, in_shape: tuple[int, ...], window: Window) -> Leaf:
    c, h, w = in_shape
    out = (c, window.out_size(h), window.out_size(w))
    per_output = window.kernel ** 2 - (1 if op == "pool" else 0)  # comparisons (max) or adds + 1 divide (mean)
    return Leaf(name, op, out, float(per_output * int(np.prod(out))), attrs={"window": window_attrs(window)})


def elementwise_leaf(name: str, op: str, shape: tuple[int, ...], param: str | None = None,
                     per_element: float = 1.0) -> Leaf:
    return Leaf(name, op, tuple(shape), per_element * int(np.prod(shape)), attrs={"param": param} if param else {})


def add_layer(graph: DataflowGraph, name: str, kind: str, leaves: list[Leaf], previous: str,
              in_shape: tuple[int, ...]) -> None:
    """Add one HPVM internal node (a layer) holding ``leaves`` as a chain, fed by ``previous``'s output."""
    child = DataflowGraph(name)
    for leaf in leaves:
        resources = {"flops": leaf.flops} | ({"macs": leaf.macs} if leaf.macs else {})
        child.add_node(leaf.name, op=leaf.op, resources=resources, shape=leaf.shape, dtype="float32",
                       attrs={"layer": name, **leaf.attrs})
    for a, b in zip(leaves, leaves[1:]):
        child.add_edge(a.name, b.name, "tensor", pattern="one_to_one", shape=a.shape)
    bind(child, "in", "in", leaves[0].name)
    bind(child, "out", "out", leaves[-1].name)
    add_internal_node(graph, name, child, attrs={"layer_kind": kind})
    graph.add_edge(previous, name, "tensor", src_port="out", dst_port="in", shape=tuple(in_shape))


def _layer_leaves(layer: LayerSpec, shape: tuple[int, ...], params: dict[str, np.ndarray],
                  rng: np.random.Generator, source: str) -> list[Leaf]:
    if layer.kind == "softmax":
        return [elementwise_leaf("softmax", "softmax", (int(np.prod(shape)),), per_element=3.0)]
    if layer.kind == "conv":
        if len(shape) != 3:
            raise InputError(source, f"layer '{layer.name}'", f"a convolution needs a (C, H, W) input, got {shape}")
        k = layer.kernel
        window = Window(k, layer.stride, k // 2 if layer.padding is None else layer.padding, layer.groups)
        main = conv_leaf("conv", shape, layer.width, window, f"{layer.name}.W")
        fan = main.attrs["dot_length"]
        scale = np.sqrt(6.0 / (fan + layer.width * k * k))
        params[main.attrs["param"]] = rng.uniform(-1, 1, (fan, layer.width)) * scale
    elif layer.kind == "fc":
        main = gemm_leaf("gemm", shape, layer.width, f"{layer.name}.W")
        fan = main.attrs["dot_length"]
        params[main.attrs["param"]] = rng.uniform(-1, 1, (fan, layer.width)) * np.sqrt(6.0 / (fan + layer.width))
    else:
        raise InputError(source, f"layer '{layer.name}'.kind", f"unknown layer kind {layer.kind!r}")
    params[f"{layer.name}.b"] = np.zeros(layer.width)
    leaves = [main, elementwise_leaf("add", "add", main.shape, f"{layer.name}.b")]
    if layer.batchnorm:
        params[f"{layer.name}.bn"] = np.stack([np.ones(layer.width), np.zeros(layer.width)])
        leaves.append(elementwise_leaf("batchnorm", "batchnorm", main.shape, f"{layer.name}.bn", per_element=2.0))
    tail: list[str] = []
    if layer.pool:
        tail.append("pool")
    if layer.activation:
        tail.insert(len(tail) if layer.pool_first else 0, "activation")
    out = main.shape
    for step in tail:
        if step == "pool":
            op = "pool" if layer.pool_kind == "max" else "avgpool"
            leaves.append(pool_leaf(op, op, out, Window(layer.pool_window, layer.pool_window, 0)))
        else:
            leaves.append(elementwise_leaf(layer.activation, layer.activation, out))
        out = leaves[-1].shape
    return leaves


def build_network(name: str, layers: list[LayerSpec], data: Dataset, *, seed: int = 0, description: str = "",
                  input_shape: tuple[int, ...], dataset: str = "sklearn digits") -> TensorNetwork:
    """The hierarchical HPVM graph, flattened op list and initial (Glorot) parameters of a layer stack."""
    rng = np.random.default_rng(seed)
    graph = DataflowGraph(name, {"family": "approxhpvm", "dataset": dataset})
    graph.add_node("input", NodeKind.IO, op="input", shape=input_shape, dtype="float32")
    params: dict[str, np.ndarray] = {}
    shape = tuple(input_shape)
    previous = "input"
    for layer in layers:
        leaves = _layer_leaves(layer, shape, params, rng, name)
        add_layer(graph, layer.name, layer.kind, leaves, previous, shape)
        previous, shape = layer.name, leaves[-1].shape
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
        window = node.attrs.get("window")
        ops.append(TensorOp(
            name=name, op=node.op, layer=str(node.attrs.get("layer", name.split("/")[0])),
            inputs=tuple(p if flat.node(p).kind == NodeKind.OP else "input" for p in preds) or ("input",),
            param=node.attrs.get("param"), dot_length=int(node.attrs.get("dot_length", 0)),
            n_c=float(node.resource("flops")), out_elements=elements,
            window=Window(**window) if window else None, shape=tuple(node.shape or ())))
    return tuple(ops)
