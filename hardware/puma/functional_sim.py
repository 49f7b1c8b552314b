"""Functional simulator of a mapped PUMA model: bit-sliced crossbar MVMs in fixed point, layer by layer.

Arithmetic (seed 003 L256 "input bit-streaming and weight-slicing" after ISAAC; digest §1a formats):

* Values are ``data.bits``-bit two's-complement fixed point with ``data.frac_bits`` fraction bits
  (default 16-bit 4.12); conversions round to nearest and saturate (saturations are counted).
* A block's MVM runs on its crossbar slice of the quantised matrix in offset binary
  (w + 2^(b−1), x + 2^(b−1); assumption): the weight is cut into ⌈b / bits_per_cell⌉ slices of
  ``bits_per_cell`` bits held on separate physical crossbars, the input is streamed ``dac_bits`` at a
  time; each (input step, slice) column sum is an analog dot product (Kirchhoff) digitised by the ADC;
  results are shifted and added; the offsets are removed digitally. With ``flipped_encoding`` a column
  slice whose sum exceeds half the full scale is stored complemented (ISAAC), halving the ADC range.
  An ADC with fewer bits than the range needs drops LSBs (rounds); ``noise_sigma`` adds Gaussian
  conductance noise (in conductance levels, fixed per programmed cell, seeded).
* A block's partial result is rounded to the data format in its output register; the row home sums
  partials (saturating adds), adds an unfolded bias, and applies activations via look-up tables indexed
  by the fixed-point input (seed L222) — i.e. the exact function rounded to the format.

:func:`simulate` also runs the float64 reference of the same network and propagates a rigorous
element-wise error bound (input and weight quantisation, rounding of every partial and vector op,
activation Lipschitz constants: ReLU 1, sigmoid 1/4, tanh 1; products |âb̂ − ab| ≤ |â||b̂−b| + |b||â−a|).
The bound holds when no value saturates, the ADC is lossless and there is no device noise — the result
says whether those conditions held. Vector layers beyond the seed's run as the exact function of the
fixed-point inputs rounded to the format (a LUT or the digital units); their bound is rigorous where a
Lipschitz constant is known (movements exact; add/sub e₁ + e₂; max/min max(e₁, e₂); products
|â|e_b + (|b̂| + e_b)e_a; sums and means of the reduced errors; softmax ½·max of its group's errors, since
Σ_j |∂s_i/∂x_j| = 2s_i(1 − s_i) ≤ ½) and infinite otherwise (division, exp, log, layer norm, LRN), which
makes ``bound_applies`` false.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from solvermap.hardware.puma import PumaSpec
from solvermap.hardware.puma.network import (
    ACTIVATIONS,
    MOVEMENT_KINDS,
    Layer,
    Network,
    activation,
    conv_patches,
    layer_float,
    lipschitz,
    mvm_inputs,
    mvm_matrices,
    per_channel,
    pool,
    sigmoid,
    structure,
    vector_float,
)
from solvermap.hardware.puma.program import Partition


@dataclass
class FunctionalResult:
    output: np.ndarray  # simulated output (float view of the fixed-point values)
    reference: np.ndarray  # float64 reference of the same network
    bound: np.ndarray  # element-wise error bound
    saturations: int
    adc_lossless: bool
    noise: bool
    layer_errors: dict[str, float] = field(default_factory=dict)

    @property
    def max_error(self) -> float:
        return float(np.abs(self.output - self.reference).max())

    @property
    def bound_applies(self) -> bool:
        return self.saturations == 0 and self.adc_lossless and not self.noise and bool(np.isfinite(self.bound).all())

    @property
    def within_bound(self) -> bool:
        return bool(np.all(np.abs(self.output - self.reference) <= self.bound + 1e-12))


class FixedPoint:
    def __init__(self, spec: PumaSpec) -> None:
        self.bits, self.frac = spec.data.bits, spec.data.frac_bits
        self.lo, self.hi = -(2 ** (self.bits - 1)), 2 ** (self.bits - 1) - 1
        self.half = 2.0 ** -(self.frac + 1)
        self.saturations = 0

    def quantize(self, x: np.ndarray) -> np.ndarray:
        q = np.floor(np.asarray(x, dtype=np.float64) * 2**self.frac + 0.5)
        return self.saturate(q)

    def saturate(self, q: np.ndarray) -> np.ndarray:
        over = (q < self.lo) | (q > self.hi)
        self.saturations += int(over.sum())
        return np.clip(q, self.lo, self.hi).astype(np.int64)

    def value(self, q: np.ndarray) -> np.ndarray:
        return q.astype(np.float64) / 2**self.frac

    def rescale(self, wide: np.ndarray) -> np.ndarray:
        """A product of two fixed-point numbers (2·frac fraction bits) back to the format."""
        return self.saturate(np.floor((wide + 2 ** (self.frac - 1)) / 2**self.frac))

    def lut(self, fn, q: np.ndarray) -> np.ndarray:
        return self.quantize(fn(self.value(q)))


class Crossbar:
    """Bit-sliced analog MVM of one block (see module docstring)."""

    def __init__(self, spec: PumaSpec, rng: np.random.Generator | None) -> None:
        xb = spec.crossbar
        self.bits = spec.data.bits
        self.cell, self.dac, self.adc = xb.bits_per_cell, xb.dac_bits, xb.adc_bits
        self.slices = math.ceil(self.bits / self.cell)
        self.steps = math.ceil(self.bits / self.dac)
        self.flip = xb.flipped_encoding
        self.sigma = xb.noise_sigma
        self.rng = rng
        self.offset = 2 ** (self.bits - 1)
        self.lossless = True

    def needed_bits(self, rows: int) -> int:
        full = rows * (2**self.dac - 1) * (2**self.cell - 1)
        if self.flip:
            full = math.ceil(full / 2)
        return max(1, math.ceil(math.log2(full + 1)))

    def mvm(self, w: np.ndarray, x: np.ndarray, exact: bool = False) -> np.ndarray:
        """w: (rows, cols) integers, x: (S, rows) integers → (S, cols) exact-format integer Σ w·x."""
        if exact:
            return x.astype(np.float64) @ w.astype(np.float64)
        rows = w.shape[0]
        wu = (w + self.offset).astype(np.int64)
        xu = (x + self.offset).astype(np.int64)
        cell_max, dac_max = 2**self.cell - 1, 2**self.dac - 1
        need = self.needed_bits(rows)
        step = 2 ** max(0, need - self.adc)
        if step > 1:
            self.lossless = False
        planes = [((xu >> (self.dac * k)) & dac_max).astype(np.float64) for k in range(self.steps)]
        total = np.zeros((x.shape[0], w.shape[1]))
        for s in range(self.slices):
            sl = ((wu >> (self.cell * s)) & cell_max).astype(np.float64)
            flipped = np.zeros(w.shape[1], dtype=bool)
            if self.flip:
                flipped = sl.sum(axis=0) > rows * cell_max / 2
                sl = np.where(flipped[None, :], cell_max - sl, sl)
            analog_w = sl + (self.rng.standard_normal(sl.shape) * self.sigma if self.sigma > 0 and self.rng is not None else 0.0)
            for k, plane in enumerate(planes):
                analog = plane @ analog_w
                digital = np.clip(np.floor(analog / step + 0.5), 0, 2**self.adc - 1) * step
                if self.flip:
                    digital = np.where(flipped[None, :], cell_max * plane.sum(axis=1, keepdims=True) - digital, digital)
                total += digital * 2.0 ** (self.cell * s + self.dac * k)
        sum_x = xu.sum(axis=1, keepdims=True).astype(np.float64)
        sum_w = wu.sum(axis=0, keepdims=True).astype(np.float64)
        return total - self.offset * sum_x - self.offset * sum_w + rows * float(self.offset) ** 2


def simulate(network: Network, partition: Partition, spec: PumaSpec, x: np.ndarray, *, exact: bool = False,
             seed: int = 0) -> FunctionalResult:
    """Run ``x`` (batch axis first) through the mapped network; see module docstring."""
    if not network.has_weights:
        raise ValueError("functional simulation needs the model's weights")
    fx = FixedPoint(spec)
    xbar = Crossbar(spec, np.random.default_rng(seed))
    ref = {"input": np.asarray(x, dtype=np.float64)}
    for name, shape in network.inputs.items():
        ref[name] = np.resize(ref["input"], (len(ref["input"]),) + tuple(shape))
    fix = {name: fx.quantize(value) for name, value in ref.items()}
    err = {name: np.abs(fx.value(fix[name]) - ref[name]) for name in ref}
    layer_errors: dict[str, float] = {}
    with np.errstate(over="ignore", invalid="ignore"):  # an unbounded error bound is inf, by design
        _run_layers(network, partition, fx, xbar, ref, fix, err, layer_errors, exact)
    out = network.output
    return FunctionalResult(fx.value(fix[out]), ref[out], err[out], fx.saturations, xbar.lossless,
                            spec.crossbar.noise_sigma > 0, layer_errors)


def _run_layers(network, partition, fx, xbar, ref, fix, err, layer_errors, exact) -> None:
    for layer in network.layers:
        rin = [ref[n] for n in layer.inputs]
        qin = [fix[n] for n in layer.inputs]
        ein = [err[n] for n in layer.inputs]
        if layer.kind == "lstm":
            ref[layer.name], fix[layer.name], err[layer.name] = _lstm(layer, partition, fx, xbar, rin[0], qin[0], ein[0], exact)
        elif layer.kind in ("dense", "conv"):
            ref[layer.name] = layer_float(layer, rin)
            fix[layer.name], err[layer.name] = _mvm_layer(layer, partition, fx, xbar, rin[0], qin[0], ein[0], exact)
        else:
            ref[layer.name] = layer_float(layer, rin)
            fix[layer.name], err[layer.name] = _vector_layer(layer, fx, rin, qin, ein)
        err[layer.name] = np.nan_to_num(err[layer.name], nan=np.inf, posinf=np.inf)  # inf · 0 of an unbounded input stays unbounded
        layer_errors[layer.name] = float(np.abs(fx.value(fix[layer.name]) - ref[layer.name]).max())


# --------------------------------------------------------------------------- MVM layers


def _blocks(layer: Layer, partition: Partition, shapes: list[tuple[int, int]]):
    blocks = [b for b in partition.blocks_of(layer.name) if b.replica == 0]
    for p, (n_out, n_in) in enumerate(shapes):
        covered = np.zeros((n_out, n_in), dtype=np.int64)
        for b in blocks:
            if b.position == p:
                covered[b.out_range[0]:b.out_range[1], b.in_range[0]:b.in_range[1]] += 1
        if covered.max(initial=0) > 1 or not np.all(covered[structure(layer, p)] == 1):
            raise ValueError(f"partition of {layer.name} does not cover matrix {p}'s weights exactly once")
    return blocks


def _mvm(layer, partition, fx, xbar, mats_q, mats, vq, ve, vabs, exact):
    """Σ_p M_p v_p over the layer's blocks; returns fixed outputs (S, out) and their error bound."""
    shapes = [m.shape for m in mats]
    blocks = _blocks(layer, partition, shapes)
    n_out = shapes[0][0]
    steps = vq[0].shape[0]
    acc = np.zeros((steps, n_out), dtype=np.int64)
    count = np.zeros(n_out)
    for b in blocks:
        (olo, ohi), (ilo, ihi) = b.out_range, b.in_range
        wide = xbar.mvm(mats_q[b.position][olo:ohi, ilo:ihi].T, vq[b.position][:, ilo:ihi], exact)
        partial = fx.rescale(wide)
        acc[:, olo:ohi] = fx.saturate(acc[:, olo:ohi] + partial)
        count[olo:ohi] += 1
    bound = sum(e @ np.abs(fx.value(mq)).T + a @ np.abs(m - fx.value(mq)).T
                for e, a, mq, m in zip(ve, vabs, mats_q, mats)) + count * fx.half
    return acc, bound


def _mvm_layer(layer, partition, fx, xbar, rin, qin, ein, exact):
    mats = mvm_matrices(layer)
    mats_q = [fx.quantize(m) for m in mats]
    one = 2**fx.frac
    vq = [v.astype(np.int64) for v in mvm_inputs(layer, qin, one=one)]
    ve = mvm_inputs(layer, ein, one=0.0)
    vabs = mvm_inputs(layer, np.abs(rin), one=1.0)
    acc, bound = _mvm(layer, partition, fx, xbar, mats_q, mats, vq, ve, vabs, exact)
    if layer.bias is not None and not layer.bias_folded:
        bq = fx.quantize(layer.bias)
        acc = fx.saturate(acc + bq)
        bound = bound + np.abs(layer.bias - fx.value(bq))
    batch = rin.shape[0]
    if layer.kind == "conv":
        ho, wo = layer.shape[1], layer.shape[2]
        return (acc.reshape(batch, ho, wo, -1).transpose(0, 3, 1, 2), bound.reshape(batch, ho, wo, -1).transpose(0, 3, 1, 2))
    return acc.reshape((batch,) + layer.shape), bound.reshape((batch,) + layer.shape)


def _lstm(layer, partition, fx, xbar, rin, qin, ein, exact):
    hidden = int(layer.attrs["hidden"])
    mat = mvm_matrices(layer)[0]
    mat_q = fx.quantize(mat)
    batch, seq = rin.shape[0], rin.shape[1]
    h, c = np.zeros((batch, hidden)), np.zeros((batch, hidden))
    hq, cq = np.zeros((batch, hidden), dtype=np.int64), np.zeros((batch, hidden), dtype=np.int64)
    eh, ec = np.zeros((batch, hidden)), np.zeros((batch, hidden))
    bq = fx.quantize(layer.bias) if layer.bias is not None and not layer.bias_folded else None
    fold = [np.ones((batch, 1))] if layer.bias_folded else []
    ys, yq, ye = [], [], []
    for t in range(seq):
        v = np.hstack([rin[:, t], h] + fold)
        vq = np.hstack([qin[:, t], hq] + ([np.full((batch, 1), 2**fx.frac, dtype=np.int64)] if fold else []))
        ve = np.hstack([ein[:, t], eh] + ([np.zeros((batch, 1))] if fold else []))
        g = v @ mat.T + (layer.bias if layer.bias is not None and not layer.bias_folded else 0.0)
        gq, eg = _mvm(layer, partition, fx, xbar, [mat_q], [mat], [vq], [ve], [np.abs(v)], exact)
        if bq is not None:
            gq = fx.saturate(gq + bq)
            eg = eg + np.abs(layer.bias - fx.value(bq))
        part = lambda a, k: a[:, k * hidden:(k + 1) * hidden]  # noqa: E731
        gi, go, gf, gc = (sigmoid(part(g, 0)), sigmoid(part(g, 1)), sigmoid(part(g, 2)), np.tanh(part(g, 3)))
        qi, qo, qf = (fx.lut(sigmoid, part(gq, k)) for k in (0, 1, 2))
        qc = fx.lut(np.tanh, part(gq, 3))
        ei, eo, ef = (0.25 * part(eg, k) + fx.half for k in (0, 1, 2))
        ecc = part(eg, 3) + fx.half
        c_new = gf * c + gi * gc
        cq_new = fx.saturate(fx.rescale(qf * cq) + fx.rescale(qi * qc))
        ec = (np.abs(fx.value(qf)) * ec + np.abs(c) * ef + fx.half) + (np.abs(fx.value(qi)) * ecc + np.abs(gc) * ei + fx.half)
        c, cq = c_new, cq_new
        tc = np.tanh(c)
        tq = fx.lut(np.tanh, cq)
        et = ec + fx.half
        h = go * tc
        hq = fx.rescale(qo * tq)
        eh = np.abs(fx.value(qo)) * et + np.abs(tc) * eo + fx.half
        ys.append(h), yq.append(hq), ye.append(eh)
    return np.stack(ys, 1), np.stack(yq, 1), np.stack(ye, 1)


# --------------------------------------------------------------------------- vector layers


def _vector_layer(layer, fx, rin, qin, ein):
    x, q, e = rin[0], qin[0], ein[0]
    kind = layer.kind
    if kind == "act":
        fn = layer.attrs["fn"]
        if fn == "relu":
            return np.maximum(q, 0), e
        constant = lipschitz(layer)
        out = fx.lut(lambda v: activation(layer, v), q)
        return out, (constant * e + fx.half) if constant is not None else np.full(e.shape, np.inf)
    if kind == "maxpool":
        qf = pool(q.astype(np.float64), layer, np.max).astype(np.int64)
        return qf, pool(e, layer, np.max)
    if kind == "avgpool":
        kh, kw = layer.attrs["kernel"]
        total = pool(q.astype(np.float64), layer, np.sum)
        return fx.saturate(np.floor(total / (kh * kw) + 0.5)), pool(e, layer, np.mean) + fx.half
    if kind == "reshape":
        return q.reshape((q.shape[0],) + layer.shape), e.reshape((e.shape[0],) + layer.shape)
    if kind == "clip":
        lo, hi = fx.quantize(np.array(layer.attrs["min"])), fx.quantize(np.array(layer.attrs["max"]))
        return np.clip(q, lo, hi), e
    if kind == "add":
        return fx.saturate(qin[0] + qin[1]), ein[0] + ein[1]
    if kind in ("normalize", "affine"):
        scale_r = per_channel(x, layer.attrs["scale"])
        shift_r = per_channel(x, layer.attrs["shift"])
        sq, tq = fx.quantize(scale_r), fx.quantize(shift_r)
        if kind == "normalize":
            centred = fx.saturate(q - tq)
            out = fx.rescale(centred * sq)
            bound = np.abs(fx.value(sq)) * e + np.abs(x - shift_r) * np.abs(scale_r - fx.value(sq)) \
                + np.abs(fx.value(sq)) * np.abs(shift_r - fx.value(tq)) + fx.half
            return out, bound
        out = fx.saturate(fx.rescale(q * sq) + tq)
        bound = np.abs(fx.value(sq)) * e + np.abs(x) * np.abs(scale_r - fx.value(sq)) + np.abs(shift_r - fx.value(tq)) + fx.half
        return out, bound
    return _digital_layer(layer, fx, rin, qin, ein)


def _digital_layer(layer, fx, rin, qin, ein):
    """The vector kinds beyond the seed's: the exact function of the fixed-point inputs, rounded."""
    kind, a = layer.kind, layer.attrs
    values = [fx.value(q) for q in qin]
    if kind in MOVEMENT_KINDS:  # exact: the same movement of values and of their error bounds
        moved = vector_float(layer, [q.astype(np.float64) for q in qin])
        return moved.astype(np.int64), vector_float(layer, ein)
    out = fx.quantize(vector_float(layer, values))
    e1 = ein[0]
    if kind == "binary" and a["op"] in ("add", "sub"):
        bound = e1 + ein[1]
    elif kind == "binary" and a["op"] in ("max", "min"):
        bound = np.maximum(e1, ein[1]) + 0.0
    elif kind == "binary" and a["op"] == "mul":
        bound = np.abs(values[0]) * ein[1] + (np.abs(values[1]) + ein[1]) * e1 + fx.half
    elif kind == "matmul":
        bound = np.matmul(np.abs(values[0]), ein[1]) + np.matmul(e1, np.abs(values[1]) + ein[1]) + fx.half
    elif kind == "reduce" and a["fn"] in ("sum", "mean", "max", "min"):
        axes = tuple(k + 1 for k in a["axes"])
        reduce = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.max}[a["fn"]]
        bound = reduce(e1, axis=axes, keepdims=True).reshape(out.shape) + fx.half
    elif kind == "softmax" and not a.get("log"):
        bound = 0.5 * np.broadcast_to(e1.max(axis=a["axis"] + 1, keepdims=True), e1.shape) + fx.half
    else:
        bound = np.full(out.shape, np.inf)
    return out, np.broadcast_to(bound, out.shape)


__all__ = ["FunctionalResult", "simulate", "Crossbar", "FixedPoint", "conv_patches"]
