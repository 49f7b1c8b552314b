"""PROMISE simulator (seed 000 Ch. 4; the ApproxHPVM analytical model, L1179–1181).

Functional model (eq. 4.2, L788–790)
    X is quantized to ``data_bits`` = 8 bits and W to ``weight_bits`` = 7 magnitude bits plus sign (L805).
    Each analog read gives Ŵ ~ N(W, (|W|·f(s))²), and charge sharing aggregates N products. So a dot product
    y = Σ_i x_i·w_i comes out as y + f(s)·√(Σ_i x_i² w_i²)·z with z ~ N(0, 1). This is exact in distribution,
    because the reads are independent. For |x| = |w| = 1 the aggregated mean has σ_agg = f(s)/√N, which is
    eq. 4.2. The bias add, pooling and activation are digital Class-4 ops (Table 4.3). The task's output is
    quantized to 8 bits on the way back to DRAM.
    Distance kernels (aSUBT then absolute or square, Table 4.2) read Ŵ − X element by element. Their noise
    is sampled for each element.

Timing and energy of one task on the SoC (ApproxHPVM, L1179–1181)
    A weight matrix N × M is cut into R = ⌈N/128⌉ × ⌈M/128⌉ bank tiles. If fewer than ``banks`` tiles are
    needed, the tiles are replicated so that every bank works; otherwise the task runs in ⌈tiles/banks⌉
    passes. One row op (a 128-element partial dot product) takes ``dot_ns`` and costs ``dot_energy(s)``
    (a table, or Table 4.3's aREAD + sign_mult at the level's swing plus the ADC). Partial sums of dot products
    longer than 128 are reduced at ``reduction_ns`` and ``reduction_pj`` (0 ns in the calibrated preset: the
    Class-4 accumulation, 4 cycles, hides under T_P, L631). With ``soc_static_energy`` every active bank leaks
    0.6 pJ and the controller draws 5.4 pJ per cycle (Table 4.3). DRAM moves the weights (1 byte each, once per
    pass) here; the input and output move on the edges (:mod:`.gpu_cost`) at 33 GB/s and 20 pJ/bit. Time adds
    the phases (load, compute, write back), as the seed's four-step model does.

Compute-only energy of Ch. 4 (eq. 4.4, L856)
    E = Σ_class E_class + E_leak + E_ctrl per decision, with weights resident in the banks. T_P is the
    largest delay among the Class-1 and Class-2 ops used (digest §3.3 [DER]; it reproduces the k-NN and
    DNN figures of L878–880). The Class-1 and Class-2 energies scale with the swing (L902) by the ratio
    dot_energy_pj[s] / dot_energy_pj[P7].
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from solvermap.ir.workloads.approxhpvm_kernels import PromiseKernel


def quantize(x: np.ndarray, bits: int, signed: bool = True) -> np.ndarray:
    """Uniform quantization to ``bits`` bits over the tensor's own range (per-tensor scale, symmetric)."""
    scale = float(np.max(np.abs(x))) if x.size else 0.0
    if scale == 0.0:
        return x.copy()
    levels = 2 ** (bits - 1) - 1 if signed else 2 ** bits - 1
    return np.round(x / scale * levels) / levels * scale


def quantize_weights(w: np.ndarray, weight_bits: int) -> np.ndarray:
    """7 magnitude bits plus sign: levels ±(2^7 − 1) (L805)."""
    scale = float(np.max(np.abs(w))) if w.size else 0.0
    if scale == 0.0:
        return w.copy()
    levels = 2 ** weight_bits - 1
    return np.round(w / scale * levels) / levels * scale


def noisy_dot(x2d: np.ndarray, w: np.ndarray, f: float, rng: np.random.Generator, *, data_bits: int = 8,
              weight_bits: int = 7) -> np.ndarray:
    """(n, N) · (N, M) on PROMISE at swing factor ``f`` (see the module docstring)."""
    xq = quantize(x2d, data_bits)
    wq = quantize_weights(w, weight_bits)
    exact = xq @ wq
    sigma = f * np.sqrt((xq * xq) @ (wq * wq))
    return exact + sigma * rng.standard_normal(exact.shape)


def noisy_conv(x: np.ndarray, w: np.ndarray, window, f: float, rng: np.random.Generator, *, data_bits: int = 8,
               weight_bits: int = 7) -> np.ndarray:
    """A convolution on PROMISE: :func:`noisy_dot` of its patch matrix and weights, with the patch products
    computed a few images at a time (the per-tensor scale of the patches is that of the input)."""
    from solvermap.ir.workloads.approxhpvm_tensor_ops import conv_output, conv_product

    xq = quantize(x, data_bits)
    wq = quantize_weights(w, weight_bits)
    exact = conv_product(xq, wq, window)
    sigma = f * np.sqrt(conv_product(xq * xq, wq * wq, window))
    out = exact + sigma * rng.standard_normal(exact.shape)
    n, _, h, wd = x.shape
    return conv_output(out, n, window.out_size(h), window.out_size(wd))


def noisy_distance(x: np.ndarray, w: np.ndarray, f: float, rng: np.random.Generator, kind: str, *,
                   data_bits: int = 8, weight_bits: int = 7, chunk: int = 64) -> np.ndarray:
    """Distances (Q queries × M stored rows) computed as Σ|Ŵ−X| (``l1``) or Σ(Ŵ−X)² (``l2``), Ŵ noisy per read."""
    xq = quantize(x, data_bits, signed=False)
    wq = quantize_weights(w, weight_bits)
    out = np.empty((len(xq), len(wq)))
    for start in range(0, len(xq), chunk):
        q = xq[start:start + chunk]
        w_hat = wq[None, :, :] + np.abs(wq)[None, :, :] * f * rng.standard_normal((len(q),) + wq.shape)
        diff = w_hat - q[:, None, :]
        out[start:start + chunk] = np.abs(diff).sum(axis=2) if kind == "l1" else (diff * diff).sum(axis=2)
    return out


def kernel_decisions(kernel: PromiseKernel, f: float, rng: np.random.Generator, *, data_bits: int = 8,
                     weight_bits: int = 7) -> np.ndarray:
    """A single-task PROMISE kernel's decisions with its task on the functional model at swing factor ``f``.

    Dot-product kernels read W once per query block (:func:`noisy_dot`), distance kernels per element
    (:func:`noisy_distance`); the kernel's own rule turns the scores into decisions. (linreg has four tasks,
    each at its own swing: the ApproxHPVM mapper aggregates its sums task by task.)
    """
    if kernel.kind == "linreg":
        raise ValueError("linreg has four tasks with a swing each; run its sums task by task")
    if kernel.kind == "dot":
        scores = noisy_dot(kernel.x, kernel.w.T, f, rng, data_bits=data_bits, weight_bits=weight_bits)
    else:
        scores = noisy_distance(kernel.x, kernel.w, f, rng, kernel.kind, data_bits=data_bits, weight_bits=weight_bits)
    return kernel.decide(scores)


@dataclass(frozen=True)
class TaskCost:
    """Time (s) and energy (J) of one PROMISE task on the SoC, split into phases."""

    compute_s: float
    dram_s: float
    compute_j: float
    dram_j: float
    banks_used: int
    passes: int
    row_ops: float

    @property
    def time_s(self) -> float:
        return self.compute_s + self.dram_s

    @property
    def energy_j(self) -> float:
        return self.compute_j + self.dram_j


def task_cost(spec, *, dot_length: int, outputs_per_image: int, weight_cols: int, level: int, batch: int,
              in_bytes: float, out_bytes: float) -> TaskCost:
    """One layer on PROMISE at swing ``level`` (1..7), for ``batch`` images (module docstring).

    ``outputs_per_image`` = dot products per image (M for a GEMM, K·H·W for a convolution);
    ``weight_cols`` = M (columns of the weight matrix); ``in_bytes``/``out_bytes`` = DRAM bytes per batch.
    """
    p, dram = spec.promise, spec.dram
    rows = math.ceil(dot_length / p.bank_rows)
    tiles = rows * math.ceil(weight_cols / p.bank_words)
    if tiles <= p.banks:
        active, passes = (p.banks // tiles) * tiles, 1
    else:
        active, passes = p.banks, math.ceil(tiles / p.banks)
    row_ops = float(batch) * outputs_per_image * rows
    reductions = float(batch) * outputs_per_image * (rows - 1)
    compute_s = math.ceil(row_ops / active) * p.dot_ns * 1e-9 + math.ceil(reductions / active) * p.reduction_ns * 1e-9
    compute_j = row_ops * p.dot_energy(level) * 1e-12 + reductions * p.reduction_pj * 1e-12
    if p.soc_static_energy:  # Table 4.3: leakage of every active bank and the controller, per cycle
        cycles = compute_s * p.clock_ghz * 1e9
        compute_j += cycles * (p.leakage_pj_per_cycle_bank * active + p.ctrl_pj_per_cycle) * 1e-12
    weight_bytes = float(dot_length) * weight_cols * passes
    moved = weight_bytes + in_bytes + out_bytes
    dram_s = moved / (dram.bandwidth_gbs * 1e9)
    dram_j = moved * 8 * dram.energy_pj_per_bit * 1e-12 + (in_bytes + out_bytes) * p.quantize_pj_per_element * 1e-12
    return TaskCost(compute_s, dram_s, compute_j, dram_j, active, passes, row_ops)


# ---------------------------------------------------------------------- Ch. 4 compute-only model

VECOPS = {
    # kernel kind: (Class-1 op, Class-2 op) of Table 4.2's vecOp / redOp
    "dot": ("aREAD", "sign_mult"),
    "l1": ("aSUBT", "absolute"),
    "l2": ("aSUBT", "square"),
}


@dataclass(frozen=True)
class KernelEnergy:
    energy_j: float  # per decision (one query)
    time_s: float  # per decision
    vector_ops: int
    cycles: float


def kernel_energy(spec, *, kind: str, dot_length: int, rows: int, level: int, banks: int | None = None) -> KernelEnergy:
    """Energy and delay per decision of ``rows`` vector ops of length ``dot_length`` (Ch. 4 eq. 4.4).

    ``banks`` defaults to the tiles the weights need (weights resident). T_P = max(Class-1, Class-2 delay).
    """
    p = spec.promise
    class1, class2 = VECOPS[kind]
    scale = p.swing_scale(level)
    chunks = math.ceil(dot_length / p.bank_rows)
    vector_ops = chunks * rows
    tiles = chunks * math.ceil(rows / p.bank_words)
    banks = banks or tiles
    e_class12 = p.class_energy_pj[class1] * (scale if "class1" in p.swing_scaled_classes else 1.0) \
        + p.class_energy_pj[class2] * (scale if "class2" in p.swing_scaled_classes else 1.0)
    per_op = e_class12 + p.class_energy_pj["ADC"] + p.class_energy_pj.get("class4", 0.0)
    t_p = max(p.class_delay_cycles[class1], p.class_delay_cycles[class2]) / p.clock_ghz
    cycles = math.ceil(vector_ops / banks) * t_p * p.clock_ghz
    energy = vector_ops * per_op + cycles * (p.leakage_pj_per_cycle_bank * banks + p.ctrl_pj_per_cycle)
    return KernelEnergy(energy * 1e-12, cycles / (p.clock_ghz * 1e9), vector_ops, cycles)


def network_kernel_energy(spec, layer_shapes: list[tuple[int, int]], levels: list[int], banks: int | None = None,
                          ) -> KernelEnergy:
    """A chain of dot-product tasks (an MLP, weights resident): per-decision energy and delay summed."""
    energy = time = cycles = 0.0
    vops = 0
    for (n, m), level in zip(layer_shapes, levels):
        part = kernel_energy(spec, kind="dot", dot_length=n, rows=m, level=level, banks=banks)
        energy, time, cycles, vops = energy + part.energy_j, time + part.time_s, cycles + part.cycles, vops + part.vector_ops
    return KernelEnergy(energy, time, vops, cycles)
