"""Application optimiser passes (seed 003 Sec. IV, L112–L160) on a PUMA :class:`Network`.

``fold_batchnorm``  a batch norm (``affine`` with ``batchnorm``) right after a conv (its only consumer)
                    is folded into the conv: W' = W·s per output channel, b' = b·s + t (L150).
``fold_bias``       node aggregation [W | b]·[x; 1] (L136–L148). Policy ``always``, ``never`` or ``auto``
                    (default): fold unless the extra input row needs a new block column, i.e. unless
                    ``inputs % crossbar rows == 0`` — then the bias add stays a vector op (assumption:
                    the seed folds unconditionally; folding a 1024-input layer would add a whole column
                    of crossbars to save one vector add per output).
``quantize``        quantisation by inserted ops (L123–L130): an optional ``normalize`` of the model input
                    with user-given (shift, scale); a calibration pass (float reference on calibration
                    inputs) finds each MVM layer's largest pre-activation; a layer that would leave the
                    fixed-point range is scaled down by a power of two 2^-k folded into its weights, the
                    scale is carried through positively homogeneous ops (ReLU, max/avg pool, reshape) and
                    into downstream biases, and undone by a ``normalize`` + ``clip`` before any op that is
                    not homogeneous (sigmoid, tanh, LSTM, add); the model output keeps the scale
                    (``Network.output_scale``; argmax is unchanged). Weights outside the range are
                    clipped (reported).
Replication (L152–L160) is the ``replicate`` decision (:mod:`solvermap.formulations.replication`).
"""

from __future__ import annotations

import copy
import math

import numpy as np

from solvermap.hardware.puma.network import Layer, Network, forward_float

HOMOGENEOUS = ("maxpool", "avgpool", "reshape")


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
    """Insert normalize/clip ops and power-of-two layer scales so calibrated values stay below ``limit``."""
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
    scale: dict[str, float] = {"input": 1.0}
    layers: list[Layer] = []
    for layer in net.layers:
        ins_scale = [scale[name] for name in layer.inputs]
        if layer.kind in HOMOGENEOUS or (layer.kind == "act" and layer.attrs["fn"] == "relu"):
            scale[layer.name] = ins_scale[0]
            layers.append(layer)
            continue
        if layer.kind in ("dense", "conv"):
            s_in = ins_scale[0]
            if layer.bias is not None:
                layer.bias = layer.bias * s_in
            scale[layer.name] = s_in
            layers.append(layer)
            continue
        # not homogeneous: bring every input back to scale 1 first
        new_inputs = []
        for name, s in zip(layer.inputs, ins_scale):
            if s != 1.0:
                restore = Layer(f"{layer.name}.normalize[{name}]", "normalize", (name,), net.shape_of(name) if name != "input" else net.input_shape,
                                attrs={"shift": 0.0, "scale": 1.0 / s})
                clip = Layer(f"{layer.name}.clip[{name}]", "clip", (restore.name,), restore.shape, attrs={"min": -limit, "max": limit - 2**-12})
                layers += [restore, clip]
                scale[restore.name] = scale[clip.name] = 1.0
                new_inputs.append(clip.name)
                net.notes.append(f"{layer.name}: normalize x{1.0 / s:g} and clip inserted before it")
            else:
                new_inputs.append(name)
        layer.inputs = tuple(new_inputs)
        scale[layer.name] = 1.0
        layers.append(layer)
    net.layers = layers
    # calibrate MVM layers in program order; scale a layer down when it would overflow
    for layer in net.mvm_layers():
        if layer.kind == "lstm":
            continue
        values = forward_float(net, calibration, keep=True)
        peak = float(np.abs(values[layer.name]).max())
        if peak < limit * margin:
            continue
        k = math.ceil(math.log2(peak / (limit * margin)))
        factor = 2.0**-k
        layer.weight = layer.weight * factor
        if layer.bias is not None:
            layer.bias = layer.bias * factor
        _propagate_scale(net, layer.name, factor)
        net.notes.append(f"{layer.name}: calibrated peak {peak:.3g} exceeds the range; weights scaled by 2^-{k}")
    net.notes.append(f"output_scale {net.output_scale:g}")
    return net


def _propagate_scale(net: Network, start: str, factor: float) -> None:
    """Downstream of ``start`` values are ``factor`` times larger/smaller: fix biases of MVM layers
    reached through homogeneous ops and the restoring normalize ops."""
    frontier = [start]
    seen = set()
    while frontier:
        name = frontier.pop()
        if name == net.output:
            net.output_scale *= factor
        for layer in net.consumers(name):
            if layer.name in seen:
                continue
            seen.add(layer.name)
            if layer.kind in HOMOGENEOUS or (layer.kind == "act" and layer.attrs["fn"] == "relu"):
                frontier.append(layer.name)
            elif layer.kind in ("dense", "conv"):
                if layer.bias is not None:
                    layer.bias = layer.bias * factor
                frontier.append(layer.name)
            elif layer.kind == "normalize":
                layer.attrs["scale"] = layer.attrs["scale"] / factor
            else:
                raise ValueError(f"cannot carry a scale into {layer.kind} layer {layer.name}")
