"""The model a PUMA machine executes: a chain/DAG of layers with weights, and its float reference.

Produced by the ONNX converter (:mod:`solvermap.mappers.puma.frontend`) and rewritten by the application
optimiser (seed 003 Sec. IV). Shapes are per sample (no batch axis): dense ``(..., n)``, conv
``(C, H, W)``, LSTM ``(seq, n)``.

Layer kinds
    MVM layers (run on crossbars): ``dense`` (W[out,in], bias), ``conv`` (W[oc,ic/g,kh,kw], bias, stride,
    pads, dilation, ``groups`` g: a grouped or depthwise conv is a block-diagonal matrix per kernel position
    whose all-zero crossbar blocks are not placed), ``lstm`` (W[4H,I], R[4H,H], bias[4H]; ONNX gate order
    i, o, f, c).
    Vector (ALU) layers run on the cores' digital units: ``act`` (a unary function from :data:`ACTIVATIONS`
    through the activation LUTs per core, seed L222), ``maxpool``, ``avgpool``, ``add`` (two tensors),
    ``binary`` (add, sub, mul, div, max, min of two tensors with NumPy broadcasting), ``affine`` (constant
    scale and shift: a 1-D array is per channel — an unfolded batch norm —, an array of the per-sample rank
    broadcasts), ``clip`` (seed L127), ``normalize`` (y = (x − shift)·scale, seed L128), ``reshape`` (free),
    ``matmul`` (a product of two activations, batched over leading axes), ``reduce`` (mean | sum | max | min
    over axes), ``softmax``, ``layernorm`` (over the trailing axes from ``axis``, then γ, β), ``lrn``
    (across channels), and the data movements ``transpose``, ``concat``, ``pad``, ``slice``,
    ``depth_to_space``, ``upsample`` (nearest, integer factors).

Crossbar matrices (:func:`mvm_matrices`): every MVM layer is one or more matrices M_p (outputs × inputs)
applied to input vectors v_p (:func:`mvm_inputs`) and summed over p:

* dense: one matrix W; with a folded bias [W | b] and inputs [x; 1] (seed L136–L148);
* conv, ``unroll = per_position`` (public PUMA compiler scheme, digest §3.1): one matrix W[:, :, a, b]
  (oc × ic) per kernel position (a, b); the folded bias rides on position 0;
* conv, ``unroll = im2col``: one matrix W reshaped to oc × (ic·kh·kw);
* lstm: one matrix [W | R] (4H × (I + H)), inputs [x_t; h_{t−1}] (+ [b] folded).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

MVM_KINDS = ("dense", "conv", "lstm")
MOVEMENT_KINDS = ("reshape", "transpose", "concat", "pad", "slice", "depth_to_space", "upsample")


@dataclass
class Layer:
    name: str
    kind: str
    inputs: tuple[str, ...]  # producing layers ("input" = the model input)
    shape: tuple[int, ...]  # per-sample output shape
    weight: np.ndarray | None = None
    bias: np.ndarray | None = None
    recurrent: np.ndarray | None = None  # LSTM R
    attrs: dict[str, Any] = field(default_factory=dict)
    bias_folded: bool = False

    @property
    def is_mvm(self) -> bool:
        return self.kind in MVM_KINDS

    @property
    def has_weights(self) -> bool:
        return self.weight is not None

    @property
    def in_features(self) -> int:
        if self.kind == "dense":
            return int(self.attrs["in_features"])
        if self.kind == "conv":
            return int(self.attrs["in_channels"])
        if self.kind == "lstm":
            return int(self.attrs["input_size"])
        raise ValueError(self.kind)

    @property
    def out_features(self) -> int:
        if self.kind == "dense":
            return int(self.attrs["out_features"])
        if self.kind == "conv":
            return int(self.attrs["out_channels"])
        if self.kind == "lstm":
            return 4 * int(self.attrs["hidden"])
        raise ValueError(self.kind)

    def steps(self) -> int:
        """MVMs each crossbar block of this layer performs per inference."""
        if self.kind == "dense":
            return int(np.prod(self.shape[:-1])) if len(self.shape) > 1 else 1
        if self.kind == "conv":
            return int(self.shape[1] * self.shape[2])
        if self.kind == "lstm":
            return int(self.shape[0])
        return 0


@dataclass
class Network:
    name: str
    input_shape: tuple[int, ...]
    layers: list[Layer]
    output: str  # name of the layer producing the model output
    notes: list[str] = field(default_factory=list)  # what the converter and optimiser did
    output_scale: float = 1.0  # the output is this multiple of the original model's (quantisation scales)
    inputs: dict[str, tuple[int, ...]] = field(default_factory=dict)  # more model inputs by name (layer-shape files)
    outputs: tuple[str, ...] = ()  # every layer whose value leaves the chip (default: ``output`` alone)

    def layer(self, name: str) -> Layer:
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise KeyError(name)

    def mvm_layers(self) -> list[Layer]:
        return [layer for layer in self.layers if layer.is_mvm]

    def consumers(self, name: str) -> list[Layer]:
        return [layer for layer in self.layers if name in layer.inputs]

    def shape_of(self, name: str) -> tuple[int, ...]:
        if name == "input":
            return self.input_shape
        if name in self.inputs:
            return self.inputs[name]
        return self.layer(name).shape

    def output_names(self) -> tuple[str, ...]:
        return self.outputs or (self.output,)

    @property
    def has_weights(self) -> bool:
        return all(layer.has_weights for layer in self.mvm_layers()) and not any(
            layer.attrs.get("missing_values") for layer in self.layers)

    def last_use(self) -> dict[str, int]:
        """Index of the last layer that reads each value (the output counts as read at the end)."""
        out = {name: index for index, layer in enumerate(self.layers) for name in layer.inputs}
        for name in self.output_names():
            out[name] = len(self.layers)
        return out


# --------------------------------------------------------------------------- crossbar matrices


def dense_conv_weight(layer: Layer) -> np.ndarray:
    """A conv layer's weight as oc × ic × kh × kw, zero outside its groups' diagonal blocks."""
    w = layer.weight
    groups = int(layer.attrs.get("groups", 1))
    if groups == 1:
        return w
    oc, icg, kh, kw = w.shape
    full = np.zeros((oc, icg * groups, kh, kw), dtype=w.dtype)
    kg = oc // groups
    for g in range(groups):
        full[g * kg:(g + 1) * kg, g * icg:(g + 1) * icg] = w[g * kg:(g + 1) * kg]
    return full


def group_columns(layer: Layer, p: int) -> tuple[int, int, int]:
    """(groups, outputs per group, matrix columns per group) of M_p; one group for dense and LSTM."""
    n_out, n_in = matrix_shapes(layer)[p]
    groups = int(layer.attrs.get("groups", 1)) if layer.kind == "conv" else 1
    if groups == 1:
        return 1, n_out, n_in
    per = layer.in_features // groups
    if layer.attrs.get("unroll", "per_position") == "im2col":
        kh, kw = layer.attrs["kernel"]
        per *= kh * kw
    return groups, n_out // groups, per


def block_columns(layer: Layer, p: int, out_rng: tuple[int, int], in_rng: tuple[int, int]) -> list[tuple[int, int]]:
    """The column ranges of block (out_rng × in_rng) of M_p that hold weights (structurally non-zero);
    empty for an all-zero block of a grouped conv. A folded bias column belongs to every block row."""
    groups, kg, per = group_columns(layer, p)
    if groups == 1:
        return [in_rng]
    lo, hi = in_rng
    out: list[tuple[int, int]] = []
    for g in range(out_rng[0] // kg, (out_rng[1] - 1) // kg + 1):
        a, b = max(lo, g * per), min(hi, (g + 1) * per)
        if a < b:
            out.append((a, b))
    bias_col = groups * per
    if lo <= bias_col < hi:
        out.append((bias_col, bias_col + 1))
    return out


def structure(layer: Layer, p: int) -> np.ndarray:
    """Boolean mask of M_p's structurally non-zero entries."""
    n_out, n_in = matrix_shapes(layer)[p]
    groups, kg, per = group_columns(layer, p)
    if groups == 1:
        return np.ones((n_out, n_in), dtype=bool)
    mask = np.zeros((n_out, n_in), dtype=bool)
    for g in range(groups):
        mask[g * kg:(g + 1) * kg, g * per:(g + 1) * per] = True
    mask[:, groups * per:] = True  # a folded bias
    return mask


def crossbar_blocks(layer: Layer, rows: int, cols: int) -> int:
    """Crossbar blocks of one copy of an MVM layer (all-zero blocks of grouped convs excluded)."""
    count = 0
    for p, (n_out, n_in) in enumerate(matrix_shapes(layer)):
        for r in range(math.ceil(n_out / cols)):
            out_rng = (r * cols, min(n_out, (r + 1) * cols))
            for c in range(math.ceil(n_in / rows)):
                if block_columns(layer, p, out_rng, (c * rows, min(n_in, (c + 1) * rows))):
                    count += 1
    return count


def mvm_matrices(layer: Layer) -> list[np.ndarray]:
    """The matrices M_p (outputs × inputs) of an MVM layer (see module docstring); needs weights."""
    w = dense_conv_weight(layer) if layer.kind == "conv" else layer.weight
    b = layer.bias if layer.bias_folded else None
    if layer.kind == "dense":
        return [np.hstack([w, b[:, None]]) if b is not None else w]
    if layer.kind == "lstm":
        m = np.hstack([w, layer.recurrent])
        return [np.hstack([m, b[:, None]]) if b is not None else m]
    if layer.kind == "conv":
        oc, ic, kh, kw = w.shape
        if layer.attrs.get("unroll", "per_position") == "im2col":
            m = w.reshape(oc, ic * kh * kw)
            return [np.hstack([m, b[:, None]]) if b is not None else m]
        mats = []
        for a in range(kh):
            for c in range(kw):
                m = w[:, :, a, c]
                if b is not None and a == 0 and c == 0:
                    m = np.hstack([m, b[:, None]])
                mats.append(m)
        return mats
    raise ValueError(f"{layer.name} is not an MVM layer")


def matrix_shapes(layer: Layer) -> list[tuple[int, int]]:
    """(outputs, inputs) of every M_p, without needing weights."""
    fold = 1 if layer.bias_folded else 0
    if layer.kind == "dense":
        return [(layer.out_features, layer.in_features + fold)]
    if layer.kind == "lstm":
        hidden = int(layer.attrs["hidden"])
        return [(4 * hidden, layer.in_features + hidden + fold)]
    if layer.kind == "conv":
        oc, ic = layer.out_features, layer.in_features
        kh, kw = layer.attrs["kernel"]
        if layer.attrs.get("unroll", "per_position") == "im2col":
            return [(oc, ic * kh * kw + fold)]
        return [(oc, ic + (fold if p == 0 else 0)) for p in range(kh * kw)]
    raise ValueError(layer.kind)


def conv_patches(x: np.ndarray, layer: Layer) -> np.ndarray:
    """x: (B, C, H, W) → patches (B, Ho, Wo, C, kh, kw) with zero padding and dilation (a strided view)."""
    kh, kw = layer.attrs["kernel"]
    sh, sw = layer.attrs["stride"]
    dh, dw = layer.attrs.get("dilation", (1, 1))
    top, left, bottom, right = layer.attrs["pads"]
    xp = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    windows = np.lib.stride_tricks.sliding_window_view(xp, ((kh - 1) * dh + 1, (kw - 1) * dw + 1), axis=(2, 3))
    windows = windows[:, :, ::sh, ::sw, ::dh, ::dw][:, :, :layer.shape[1], :layer.shape[2]]
    return np.transpose(windows, (0, 2, 3, 1, 4, 5))


def mvm_inputs(layer: Layer, x: np.ndarray, one: float = 1.0) -> list[np.ndarray]:
    """Input vectors v_p for every step of a non-recurrent MVM layer: list over p of (B·steps, inputs_p).
    ``x`` is the layer input with a batch axis; ``one`` is the constant fed to a folded bias row."""
    batch = x.shape[0]
    if layer.kind == "dense":
        v = x.reshape(-1, layer.in_features)
        if layer.bias_folded:
            v = np.hstack([v, np.full((v.shape[0], 1), one, dtype=v.dtype)])
        return [v]
    if layer.kind == "conv":
        patches = conv_patches(x, layer)  # B, Ho, Wo, C, kh, kw
        kh, kw = layer.attrs["kernel"]
        steps = patches.shape[1] * patches.shape[2]
        if layer.attrs.get("unroll", "per_position") == "im2col":
            v = patches.reshape(batch * steps, -1)
            if layer.bias_folded:
                v = np.hstack([v, np.full((v.shape[0], 1), one, dtype=v.dtype)])
            return [v]
        out = []
        for a in range(kh):
            for c in range(kw):
                v = patches[..., a, c].reshape(batch * steps, -1)
                if layer.bias_folded and a == 0 and c == 0:
                    v = np.hstack([v, np.full((v.shape[0], 1), one, dtype=v.dtype)])
                out.append(v)
        return out
    raise ValueError(f"mvm_inputs does not apply to {layer.kind}")


# --------------------------------------------------------------------------- float reference


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(x, -700, 700)))


def _erf(x: np.ndarray) -> np.ndarray:
    from scipy.special import erf

    return erf(x)


# unary functions of ``act`` layers: name → (function(x, attrs), Lipschitz constant or None when unbounded)
ACTIVATION_FUNCTIONS = {
    "relu": (lambda v, a: np.maximum(v, 0.0), 1.0),
    "sigmoid": (lambda v, a: sigmoid(v), 0.25),
    "tanh": (lambda v, a: np.tanh(v), 1.0),
    "leakyrelu": (lambda v, a: np.where(v >= 0, v, a.get("alpha", 0.01) * v), None),
    "elu": (lambda v, a: np.where(v >= 0, v, a.get("alpha", 1.0) * np.expm1(np.minimum(v, 0))), None),
    "selu": (lambda v, a: a.get("gamma", 1.0507) * np.where(v > 0, v, a.get("alpha", 1.67326) * np.expm1(np.minimum(v, 0))), None),
    "celu": (lambda v, a: np.maximum(v, 0) + np.minimum(0, a.get("alpha", 1.0) * np.expm1(np.minimum(v, 0) / a.get("alpha", 1.0))), 1.0),
    "hardsigmoid": (lambda v, a: np.clip(a.get("alpha", 0.2) * v + a.get("beta", 0.5), 0.0, 1.0), None),
    "hardswish": (lambda v, a: v * np.clip(v / 6.0 + 0.5, 0.0, 1.0), 1.5),
    "silu": (lambda v, a: v * sigmoid(v), 1.1),
    "gelu": (lambda v, a: 0.5 * v * (1.0 + _erf(v / np.sqrt(2.0))), 1.13),
    "erf": (lambda v, a: _erf(v), 1.1284),
    "softplus": (lambda v, a: np.logaddexp(0.0, v), 1.0),
    "softsign": (lambda v, a: v / (1.0 + np.abs(v)), 1.0),
    "mish": (lambda v, a: v * np.tanh(np.logaddexp(0.0, v)), 1.1),
    "sin": (lambda v, a: np.sin(v), 1.0),
    "cos": (lambda v, a: np.cos(v), 1.0),
    "abs": (lambda v, a: np.abs(v), 1.0),
    "neg": (lambda v, a: -v, 1.0),
    "floor": (lambda v, a: np.floor(v), None),
    "ceil": (lambda v, a: np.ceil(v), None),
    "round": (lambda v, a: np.round(v), None),
    "exp": (lambda v, a: np.exp(np.minimum(v, 700)), None),
    "log": (lambda v, a: np.log(np.maximum(v, 1e-300)), None),
    "sqrt": (lambda v, a: np.sqrt(np.maximum(v, 0.0)), None),
    "reciprocal": (lambda v, a: 1.0 / np.where(v == 0, np.finfo(float).tiny, v), None),
    "pow": (lambda v, a: np.power(v, a.get("exponent", 2.0)), None),
}
ACTIVATIONS = {name: (lambda fn: (lambda v: fn(v, {})))(fn) for name, (fn, _) in ACTIVATION_FUNCTIONS.items()}
# positively homogeneous activations: f(s·x) = s·f(x) for s > 0 (a power-of-two scale passes through them)
HOMOGENEOUS_ACTIVATIONS = ("relu", "leakyrelu", "abs", "neg")


def activation(layer: Layer, x: np.ndarray) -> np.ndarray:
    return ACTIVATION_FUNCTIONS[layer.attrs["fn"]][0](x, layer.attrs)


def lipschitz(layer: Layer) -> float | None:
    """A Lipschitz constant of an ``act`` layer's function (None: not globally Lipschitz)."""
    fn = layer.attrs["fn"]
    if fn in ("leakyrelu", "elu"):
        return max(1.0, abs(float(layer.attrs.get("alpha", 1.0))))
    if fn == "selu":
        return float(layer.attrs.get("gamma", 1.0507)) * max(1.0, float(layer.attrs.get("alpha", 1.67326)))
    if fn == "hardsigmoid":
        return abs(float(layer.attrs.get("alpha", 0.2)))
    return ACTIVATION_FUNCTIONS[fn][1]


def pool(x: np.ndarray, layer: Layer, reduce) -> np.ndarray:
    kh, kw = layer.attrs["kernel"]
    sh, sw = layer.attrs["stride"]
    top, left, bottom, right = layer.attrs.get("pads", (0, 0, 0, 0))
    fill = -np.inf if reduce is np.max else 0.0
    xp = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=fill)
    windows = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))[:, :, ::sh, ::sw]
    return reduce(windows, axis=(4, 5))


def forward_float(network: Network, x: np.ndarray, *, keep: bool = False) -> np.ndarray | dict[str, np.ndarray]:
    """Float64 reference: ``x`` has a batch axis; returns the output (or every layer's output)."""
    values: dict[str, np.ndarray] = {"input": np.asarray(x, dtype=np.float64)}
    for name, shape in network.inputs.items():  # extra inputs (layer-shape files): the same samples, reshaped
        values[name] = np.resize(values["input"], (len(values["input"]),) + tuple(shape))
    last = network.last_use()
    for index, layer in enumerate(network.layers):
        ins = [values[name] for name in layer.inputs]
        values[layer.name] = layer_float(layer, ins)
        if not keep:  # stream: drop every value no later layer reads
            for name in set(layer.inputs):
                if last.get(name, -1) <= index:
                    values.pop(name, None)
    return values if keep else values[network.output]


def layer_float(layer: Layer, ins: list[np.ndarray]) -> np.ndarray:
    x = ins[0]
    batch = x.shape[0]
    if layer.kind == "conv":
        return conv_float(layer, x)
    if layer.kind == "dense":
        out = sum(v @ m.T for v, m in zip(mvm_inputs(layer, x), mvm_matrices(layer)))
        if layer.bias is not None and not layer.bias_folded:
            out = out + layer.bias
        if layer.kind == "conv":
            ho, wo = layer.shape[1], layer.shape[2]
            return out.reshape(batch, ho, wo, -1).transpose(0, 3, 1, 2)
        return out.reshape((batch,) + layer.shape)
    if layer.kind == "lstm":
        hidden = int(layer.attrs["hidden"])
        m = mvm_matrices(layer)[0]
        h = np.zeros((batch, hidden))
        c = np.zeros((batch, hidden))
        ys = []
        for t in range(x.shape[1]):
            v = np.hstack([x[:, t, :], h] + ([np.ones((batch, 1))] if layer.bias_folded else []))
            g = v @ m.T
            if layer.bias is not None and not layer.bias_folded:
                g = g + layer.bias
            i, o, f, cc = (g[:, k * hidden:(k + 1) * hidden] for k in range(4))
            c = sigmoid(f) * c + sigmoid(i) * np.tanh(cc)
            h = sigmoid(o) * np.tanh(c)
            ys.append(h)
        return np.stack(ys, axis=1)
    if layer.kind == "act":
        return activation(layer, x)
    if layer.kind == "maxpool":
        return pool(x, layer, np.max)
    if layer.kind == "avgpool":
        return pool(x, layer, np.mean)
    if layer.kind == "add":
        return ins[0] + ins[1]
    if layer.kind == "affine":
        return x * per_channel(x, layer.attrs["scale"]) + per_channel(x, layer.attrs["shift"])
    if layer.kind == "clip":
        return np.clip(x, layer.attrs["min"], layer.attrs["max"])
    if layer.kind == "normalize":
        return (x - layer.attrs["shift"]) * layer.attrs["scale"]
    if layer.kind == "reshape":
        return x.reshape((batch,) + layer.shape)
    return vector_float(layer, ins)


BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "max": np.maximum, "min": np.minimum}
REDUCE = {"mean": np.mean, "sum": np.sum, "max": np.max, "min": np.min}


def vector_float(layer: Layer, ins: list[np.ndarray]) -> np.ndarray:
    """Float reference of the vector kinds beyond the seed's (inputs and output carry a batch axis)."""
    x, a = ins[0], layer.attrs
    batch = x.shape[0]
    kind = layer.kind
    if kind == "binary":
        with np.errstate(divide="ignore", invalid="ignore"):
            return BINARY[a["op"]](ins[0], ins[1])
    if kind == "matmul":
        return np.matmul(ins[0], ins[1])
    if kind == "reduce":
        axes = tuple(k + 1 for k in a["axes"])
        return REDUCE[a["fn"]](x, axis=axes, keepdims=True).reshape((batch,) + layer.shape)
    if kind == "softmax":
        axis = a["axis"] + 1
        z = x - x.max(axis=axis, keepdims=True)
        e = np.exp(z)
        out = e / e.sum(axis=axis, keepdims=True)
        return np.log(np.maximum(out, 1e-300)) if a.get("log") else out
    if kind == "layernorm":
        axes = tuple(range(a["axis"] + 1, x.ndim))
        mean = x.mean(axis=axes, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
        y = (x - mean) / np.sqrt(var + a.get("epsilon", 1e-5))
        return y * np.asarray(a["gamma"])[None] + np.asarray(a["beta"])[None]
    if kind == "lrn":
        size, alpha, beta, bias = a["size"], a["alpha"], a["beta"], a["bias"]
        sq = np.pad(x * x, ((0, 0), ((size - 1) // 2, size // 2)) + ((0, 0),) * (x.ndim - 2))
        window = np.lib.stride_tricks.sliding_window_view(sq, size, axis=1).sum(axis=-1)
        return x / (bias + alpha / size * window) ** beta
    if kind == "transpose":
        return np.transpose(x, (0,) + tuple(p + 1 for p in a["perm"]))
    if kind == "concat":
        return np.concatenate(ins, axis=a["axis"] + 1)
    if kind == "pad":
        return np.pad(x, ((0, 0),) + tuple(tuple(p) for p in a["pads"]), constant_values=a.get("value", 0.0))
    if kind == "slice":
        return x[(slice(None),) + tuple(slice(*s) for s in a["slices"])]
    if kind == "depth_to_space":
        return depth_to_space(x, a["block"], a.get("mode", "DCR"))
    if kind == "upsample":
        out = x
        for axis, factor in enumerate(a["factors"]):
            out = np.repeat(out, factor, axis=axis + 1)
        return out
    raise ValueError(f"unknown layer kind {layer.kind!r}")


def depth_to_space(x: np.ndarray, block: int, mode: str = "DCR") -> np.ndarray:
    """ONNX DepthToSpace on (B, C, H, W)."""
    b, c, h, w = x.shape
    if mode == "DCR":
        y = x.reshape(b, block, block, c // block**2, h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        y = x.reshape(b, c // block**2, block, block, h, w).transpose(0, 1, 4, 2, 5, 3)
    return y.reshape(b, c // block**2, h * block, w * block)


def conv_float(layer: Layer, x: np.ndarray) -> np.ndarray:
    """Float reference of a conv layer, one kernel position at a time (memory: one patch slice)."""
    oc, icg, kh, kw = layer.weight.shape
    groups = int(layer.attrs.get("groups", 1))
    batch, ho, wo = x.shape[0], layer.shape[1], layer.shape[2]
    patches = conv_patches(x, layer)  # a view: B, Ho, Wo, C, kh, kw
    kg = oc // groups
    out = np.zeros((batch, ho, wo, oc), dtype=np.result_type(x, layer.weight))
    folded = layer.bias if layer.bias_folded else None
    for a in range(kh):
        for c in range(kw):
            v = patches[..., a, c]
            if groups == 1:
                out += (v.reshape(-1, icg) @ layer.weight[:, :, a, c].T).reshape(out.shape)
            elif icg == 1 and kg == 1:  # depthwise
                out += v * layer.weight[:, 0, a, c]
            else:
                vg = v.reshape(batch, ho, wo, groups, icg)
                wg = layer.weight[:, :, a, c].reshape(groups, kg, icg)
                out += np.einsum("bhwgc,gkc->bhwgk", vg, wg).reshape(out.shape)
    if folded is not None:
        out += folded
    if layer.bias is not None and not layer.bias_folded:
        out += layer.bias
    return out.transpose(0, 3, 1, 2)


def per_channel(x: np.ndarray, values) -> np.ndarray:
    """A constant broadcast against ``x`` (batch axis first): a scalar; an array of the per-sample rank;
    or a 1-D array per channel (axis 1)."""
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim == 0:
        return arr
    if arr.ndim == x.ndim - 1:
        return arr[None]
    return arr.reshape((1, -1) + (1,) * (x.ndim - 2))


_per_channel = per_channel
