"""Application optimiser passes (seed 003 Sec. IV, L112–L160) on a PUMA :class:`Network`.

``fold_batchnorm``  a batch norm (``affine`` with ``batchnorm``) right after a conv (its only consumer)
                    is folded into the conv: W' = W·s per output channel, b' = b·s + t (L150).
``fold_bias``       node aggregation [W | b]·[x; 1] (L136–L148). Policy ``always``, ``never`` or ``auto``
                    (default): fold unless the extra input row needs a new block column, i.e. unless
                    ``inputs % crossbar rows == 0`` — then the bias add stays a vector op (assumption:
                    the seed folds unconditionally; folding a 1024-input layer would add a whole column
                    of crossbars to save one vector add per output).
``quantize``        quantisation by inserted ops (L123–L130): an optional ``normalize`` of the model input
                    with user-given (shift, scale); then **one streamed calibration pass** in program order
                    over the calibration inputs that keeps only live values and gives every value a
                    power-of-two scale s (value = s × the original model's):
                    an MVM layer takes its input's s (its bias is multiplied by s) and, when its calibrated
                    peak would leave the fixed-point range, 2^-k more, folded into its weights; positively
                    homogeneous ops (ReLU, leaky ReLU, max/avg pool, reductions, data movements) pass s on;
                    affine and clip ops carry it into their constants; an add, concat, max or min first
                    brings its inputs to their smallest s (normalize ops), and, when its own output would
                    overflow, 2^-k more on every input; a product of two activations multiplies the scales;
                    any other op (sigmoid, tanh, softmax, layer norm, LSTM, division, ...) gets its inputs
                    restored to s = 1 by a ``normalize`` + ``clip``. The model output keeps its scale
                    (``Network.output_scale``; argmax is unchanged). Weights outside the range are clipped
                    (reported). (The seed's scheme carried scales only through ReLU, pooling and reshapes and
                    could not place an add whose operands had different scales: a residual block.)
Replication (L152–L160) is the ``replicate`` decision (:mod:`solvermap.formulations.replication`).
"""

from __future__ import annotations

import copy
import math

import numpy as np

from solvermap.hardware.puma.network import HOMOGENEOUS_ACTIVATIONS, Layer, Network, layer_float


def fold_batchnorm(network: Network) -> Network:
    net = copy.deepcopy(network)
    kept: list[Layer] = []
    rename: dict[str, str] = {}
    for layer in net.layers:
        layer.inputs = tuple(rename.get(name, name) for name in layer.inputs)
        prev = next((x for x in kept if x.name == layer.inputs[0]), None) if layer.inputs else None
        if (layer.kind == "affine" and layer.attrs.get("batchnorm") and prev is not None and prev.kind == "conv"
                and len(network.consumers(prev.name)) == 1):
            scale = np.asarray(layer.attrs["scale"], dtype=np.float64)
            shift = np.asarray(layer.attrs["shift"], dtype=np.float64)
            if prev.weight is not None:
                prev.weight = prev.weight * scale.reshape(-1, 1, 1, 1)
                bias = prev.bias if prev.bias is not None else np.zeros(prev.out_features)
                prev.bias = bias * scale + shift
            prev.attrs["has_bias"] = True
            rename[layer.name] = prev.name
            net.notes.append(f"{layer.name}: batch norm folded into {prev.name}")
            continue
        kept.append(layer)
    net.layers = kept
    net.output = rename.get(net.output, net.output)
    return net


def fold_bias(network: Network, rows: int, policy: str = "auto") -> Network:
    if policy not in ("auto", "always", "never"):
        raise ValueError(f"fold_bias policy must be auto, always or never, got {policy!r}")
    net = copy.deepcopy(network)
    for layer in net.mvm_layers():
        if not layer.attrs.get("has_bias"):
            continue
        width = layer.in_features + (int(layer.attrs["hidden"]) if layer.kind == "lstm" else 0)
        if layer.kind == "conv" and layer.attrs.get("unroll") == "im2col":
            width = layer.in_features * layer.attrs["kernel"][0] * layer.attrs["kernel"][1]
        fold = policy == "always" or (policy == "auto" and width % rows != 0)
        layer.bias_folded = fold
        net.notes.append(f"{layer.name}: bias {'folded into the crossbar as [W|b]' if fold else 'kept as a vector add'}")
    return net


def set_unroll(network: Network, mode: str) -> Network:
    if mode not in ("per_position", "im2col"):
        raise ValueError(f"conv unroll must be per_position or im2col, got {mode!r}")
    net = copy.deepcopy(network)
    for layer in net.layers:
        if layer.kind == "conv":
            layer.attrs["unroll"] = mode
    return net


def quantize(network: Network, limit: float, calibration: np.ndarray | None, input_normalization: tuple[float, float] | None = None,
             margin: float = 0.9) -> Network:
    """Insert normalize/clip ops and power-of-two layer scales so calibrated values stay below ``limit``
    (see the module docstring: one streamed calibration pass)."""
    net = copy.deepcopy(network)
    if input_normalization is not None:
        shift, scale = input_normalization
        norm = Layer("input_normalize", "normalize", ("input",), net.input_shape, attrs={"shift": float(shift), "scale": float(scale)})
        for layer in net.layers:
            layer.inputs = tuple("input_normalize" if n == "input" else n for n in layer.inputs)
        net.layers.insert(0, norm)
        net.notes.append(f"input normalized: (x - {shift:g}) * {scale:g}")
    for layer in net.mvm_layers():
        if layer.weight is None:
            continue
        for attr in ("weight", "recurrent"):
            w = getattr(layer, attr)
            if w is not None and np.abs(w).max() >= limit:
                setattr(layer, attr, np.clip(w, -limit + 1e-9, limit - 1e-9))
                net.notes.append(f"{layer.name}: {attr} clipped to the fixed-point range")
    if calibration is None or not net.has_weights:
        net.notes.append("quantize: no calibration data or weights; layer scales left at 1")
        return net
    _Calibration(net, limit * margin, limit).run(np.asarray(calibration))
    net.notes.append(f"output_scale {net.output_scale:g}")
    return net


# how a power-of-two scale s of the inputs passes through a layer kind
PASS = ("maxpool", "avgpool", "reshape", "transpose", "pad", "slice", "depth_to_space", "upsample", "reduce")
ALIGN = ("add", "concat")  # equal input scales needed; the output keeps it
BILINEAR = ("matmul",)  # the output scale is the product of the input scales


class _Calibration:
    """One pass in program order over the calibration inputs (only live values kept): each layer's output
    scale follows from its inputs' (module docstring); an MVM layer whose calibrated peak reaches
    ``threshold`` is scaled by 2^-k folded into its weights; an add, concat, max/min or product whose
    output would reach it gets 2^-k normalize ops on its inputs; a layer that is not positively
    homogeneous gets its inputs restored to scale 1 (normalize + clip)."""

    def __init__(self, net: Network, threshold: float, limit: float) -> None:
        self.net, self.threshold, self.limit = net, threshold, limit
        self.scale: dict[str, float] = {"input": 1.0, **{name: 1.0 for name in net.inputs}}
        self.values: dict[str, np.ndarray] = {}
        self.layers: list[Layer] = []
        self.shapes: dict[str, tuple[int, ...]] = {}  # of the inserted layers

    def run(self, x: np.ndarray) -> None:
        net = self.net
        self.values["input"] = x
        for name, shape in net.inputs.items():
            self.values[name] = np.resize(x, (len(x),) + tuple(shape))
        last = net.last_use()
        for index, layer in enumerate(net.layers):
            self.layer(layer)
            for name in list(self.values):  # keep only values a later layer reads (inserted ones are used up)
                if last.get(name, -1) <= index:
                    del self.values[name]
        net.layers = self.layers
        net.output_scale = self.scale[net.output]

    def insert(self, layer: Layer, position: int, factor: float, *, clip: bool) -> None:
        """A normalize (× factor) on input ``position`` of ``layer`` (with a clip when it can overflow)."""
        name = layer.inputs[position]
        shape = self.shapes[name] if name in self.shapes else self.net.shape_of(name)
        norm = Layer(f"{layer.name}.normalize[{name}]", "normalize", (name,), shape, attrs={"shift": 0.0, "scale": factor})
        while any(existing.name == norm.name for existing in self.layers):
            norm.name += "'"
        self.layers.append(norm)
        self.shapes[norm.name] = shape
        self.values[norm.name] = self.values[name] * factor
        head = norm.name
        if clip:
            guard = Layer(f"{layer.name}.clip[{name}]", "clip", (norm.name,), shape, attrs={"min": -self.limit, "max": self.limit - 2**-12})
            while any(existing.name == guard.name for existing in self.layers):
                guard.name += "'"
            self.layers.append(guard)
            self.shapes[guard.name] = shape
            self.values[guard.name] = np.clip(self.values[norm.name], -self.limit, self.limit - 2**-12)
            head = guard.name
        self.scale[norm.name] = self.scale[head] = self.scale[name] * factor
        layer.inputs = tuple(head if k == position else n for k, n in enumerate(layer.inputs))
        self.net.notes.append(f"{layer.name}: normalize x{factor:g}{' and clip' if clip else ''} inserted before it")

    def restore(self, layer: Layer) -> None:
        for position, name in enumerate(layer.inputs):
            if self.scale[name] != 1.0:
                self.insert(layer, position, 1.0 / self.scale[name], clip=True)

    def peak_factor(self, y: np.ndarray) -> float:
        peak = float(np.abs(y).max()) if y.size else 0.0
        if peak < self.threshold:
            return 1.0
        return 2.0 ** -math.ceil(math.log2(peak / self.threshold))

    def compute(self, layer: Layer) -> np.ndarray:
        return np.asarray(layer_float(layer, [self.values[n] for n in layer.inputs]))

    def layer(self, layer: Layer) -> None:
        kind, net = layer.kind, self.net
        scales = [self.scale[n] for n in layer.inputs]
        if kind in ("dense", "conv"):
            s = scales[0]
            if layer.bias is not None:
                layer.bias = layer.bias * s
            y = self.compute(layer)
            factor = self.peak_factor(y)
            if factor != 1.0:
                peak = float(np.abs(y).max())
                layer.weight = layer.weight * factor
                if layer.bias is not None:
                    layer.bias = layer.bias * factor
                y = y * factor
                net.notes.append(f"{layer.name}: calibrated peak {peak:.3g} exceeds the range; weights scaled by "
                                 f"2^-{round(-math.log2(factor))}")
            self.finish(layer, y, s * factor)
            return
        homogeneous_act = kind == "act" and layer.attrs["fn"] in HOMOGENEOUS_ACTIVATIONS
        if kind in PASS or homogeneous_act:
            self.finish(layer, self.compute(layer), scales[0])
            return
        if kind in ("affine", "clip"):  # constants carry the scale: a·(s·x) + s·b = s·(a·x + b)
            s = scales[0]
            if kind == "affine":
                layer.attrs["shift"] = np.asarray(layer.attrs["shift"], dtype=np.float64) * s
            else:
                layer.attrs["min"], layer.attrs["max"] = layer.attrs["min"] * s, layer.attrs["max"] * s
            self.finish(layer, self.compute(layer), s)
            return
        if kind in ALIGN or (kind == "binary" and layer.attrs["op"] in ("add", "sub", "max", "min")):
            low = min(scales)
            for position, s in enumerate(scales):
                if s != low:
                    self.insert(layer, position, low / s, clip=False)
            y = self.compute(layer)
            factor = self.peak_factor(y)
            if factor != 1.0:
                for position in range(len(layer.inputs)):
                    self.insert(layer, position, factor, clip=False)
                y = y * factor
            self.finish(layer, y, low * factor)
            return
        if kind in BILINEAR or (kind == "binary" and layer.attrs["op"] == "mul"):
            y = self.compute(layer)
            factor = self.peak_factor(y)
            if factor != 1.0:
                self.insert(layer, 0, factor, clip=False)
                y = y * factor
            self.finish(layer, y, scales[0] * scales[1] * factor)
            return
        self.restore(layer)  # not homogeneous: sigmoid, tanh, softmax, LSTM, division, ...
        self.finish(layer, self.compute(layer), 1.0)

    def finish(self, layer: Layer, y: np.ndarray, scale: float) -> None:
        self.layers.append(layer)
        self.values[layer.name] = y
        self.scale[layer.name] = scale
