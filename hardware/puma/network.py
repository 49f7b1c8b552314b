"""The model a PUMA machine executes: a chain/DAG of layers with weights, and its float reference.

Produced by the ONNX converter (:mod:`solvermap.mappers.puma.frontend`) and rewritten by the application
optimiser (seed 003 Sec. IV). Shapes are per sample (no batch axis): dense ``(..., n)``, conv
``(C, H, W)``, LSTM ``(seq, n)``.

Layer kinds
    MVM layers (run on crossbars): ``dense`` (W[out,in], bias), ``conv`` (W[oc,ic,kh,kw], bias, stride,
    pads), ``lstm`` (W[4H,I], R[4H,H], bias[4H]; ONNX gate order i, o, f, c).
    Vector (ALU) layers: ``act`` (relu | sigmoid | tanh, activation LUTs per core, seed L222), ``maxpool``,
    ``avgpool``, ``add`` (two tensors), ``affine`` (per-channel scale and shift, e.g. an unfolded batch
    norm), ``clip`` (seed L127), ``normalize`` (y = (x − shift)·scale, seed L128), ``reshape`` (free).

Crossbar matrices (:func:`mvm_matrices`): every MVM layer is one or more matrices M_p (outputs × inputs)
applied to input vectors v_p (:func:`mvm_inputs`) and summed over p:

* dense: one matrix W; with a folded bias [W | b] and inputs [x; 1] (seed L136–L148);
* conv, ``unroll = per_position`` (public PUMA compiler scheme, digest §3.1): one matrix W[:, :, a, b]
  (oc × ic) per kernel position (a, b); the folded bias rides on position 0;
* conv, ``unroll = im2col``: one matrix W reshaped to oc × (ic·kh·kw);
* lstm: one matrix [W | R] (4H × (I + H)), inputs [x_t; h_{t−1}] (+ [b] folded).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

MVM_KINDS = ("dense", "conv", "lstm")


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
        return self.input_shape if name == "input" else self.layer(name).shape

    @property
    def has_weights(self) -> bool:
        return all(layer.has_weights for layer in self.mvm_layers())


# --------------------------------------------------------------------------- crossbar matrices


def mvm_matrices(layer: Layer) -> list[np.ndarray]:
    """The matrices M_p (outputs × inputs) of an MVM layer (see module docstring); needs weights."""
    w = layer.weight
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
    """x: (B, C, H, W) → patches (B, Ho, Wo, C, kh, kw) with zero padding."""
    kh, kw = layer.attrs["kernel"]
    sh, sw = layer.attrs["stride"]
    top, left, bottom, right = layer.attrs["pads"]
    xp = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    windows = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))  # B, C, H', W', kh, kw
    windows = windows[:, :, ::sh, ::sw]
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
    return 1.0 / (1.0 + np.exp(-x))


ACTIVATIONS = {"relu": lambda v: np.maximum(v, 0.0), "sigmoid": sigmoid, "tanh": np.tanh}


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
    for layer in network.layers:
        ins = [values[name] for name in layer.inputs]
        values[layer.name] = layer_float(layer, ins)
    return values if keep else values[network.output]


def layer_float(layer: Layer, ins: list[np.ndarray]) -> np.ndarray:
    x = ins[0]
    batch = x.shape[0]
    if layer.kind in ("dense", "conv"):
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
        return ACTIVATIONS[layer.attrs["fn"]](x)
    if layer.kind == "maxpool":
        return pool(x, layer, np.max)
    if layer.kind == "avgpool":
        return pool(x, layer, np.mean)
    if layer.kind == "add":
        return ins[0] + ins[1]
    if layer.kind == "affine":
        return x * _per_channel(x, layer.attrs["scale"]) + _per_channel(x, layer.attrs["shift"])
    if layer.kind == "clip":
        return np.clip(x, layer.attrs["min"], layer.attrs["max"])
    if layer.kind == "normalize":
        return (x - layer.attrs["shift"]) * layer.attrs["scale"]
    if layer.kind == "reshape":
        return x.reshape((batch,) + layer.shape)
    raise ValueError(f"unknown layer kind {layer.kind!r}")


def _per_channel(x: np.ndarray, values) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim == 0:
        return arr
    return arr.reshape((1, -1) + (1,) * (x.ndim - 2))
