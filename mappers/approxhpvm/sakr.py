"""Sakr's quantization-noise statistics E_A and E_W of a trained network (seed 000 L792–807, ref. [44]).

Sakr et al. bound the mismatch of a quantized network by p_m ≤ Δ_A²·E_A + Δ_W²·E_W, with

    E_A = E_x[ Σ_{j≠ŷ} Σ_a |∂(z_ŷ − z_j)/∂a|² / (24·|z_ŷ − z_j|²) ]

and E_W defined the same way with the weights in place of the activations. ŷ is the predicted class and z the
logits. The gradients come from backpropagation through the trained model (the NumPy executor). One backward
pass per class j, batched over the images.

The seed quantizes values in [−1, 1] with step Δ = 2^−(B−1). A tensor with range r has step r·Δ, so each term is
scaled by r², where r = max |a| of the tensor on the sample (assumption, stated in the swing docstring).
E_A is split by task: E_A,t sums over the activations that task t writes, i.e. its layer's output. For the
last layer these are the logits.
"""

from __future__ import annotations

import numpy as np

from solvermap.ir.workloads.approxhpvm_tensor_ops import TensorNetwork, backward


def gradient_statistics(net: TensorNetwork, *, samples: int = 300) -> tuple[dict[str, float], float]:
    """(E_A per layer, E_W) on the first ``samples`` test images."""
    x = net.data.x_test[:samples]
    values = net.forward(x, keep=True)
    logits = values[net.output_op]
    pred = np.argmax(logits, axis=1)
    classes = logits.shape[1]
    outputs = {layer: net.layer_ops(layer)[-1].name for layer in net.layers}
    ranges = {layer: float(np.max(np.abs(values[name]))) for layer, name in outputs.items()}
    e_a = {layer: 0.0 for layer in net.layers}
    e_w = 0.0
    weights = [op for op in net.ops if op.is_dot]
    w_range = {op.param: float(np.max(np.abs(net.params[op.param]))) for op in weights}
    rows = np.arange(len(x))
    for j in range(classes):
        mask = pred != j
        if not mask.any():
            continue
        diff = logits[rows, pred] - logits[:, j]
        denom = 24.0 * np.maximum(diff, 1e-6) ** 2
        seed = np.zeros_like(logits)
        seed[rows, pred] = 1.0
        seed[:, j] -= 1.0
        seed[~mask] = 0.0
        grads, _ = backward(net, values, seed)
        for layer, name in outputs.items():
            g = grads[name].reshape(len(x), -1)
            e_a[layer] += float(np.sum(mask * (g * g).sum(axis=1) / denom)) * ranges[layer] ** 2
        for op in weights:
            # per-image weight gradient of a GEMM is the outer product x·gᵀ: ‖x gᵀ‖² = ‖x‖²‖g‖²
            g = grads[op.name].reshape(len(x), -1) if op.op == "gemm" else None
            inp = values[op.inputs[0]].reshape(len(x), -1)
            if op.op == "gemm":
                norm = (inp * inp).sum(axis=1) * (g * g).sum(axis=1)
            else:
                from solvermap.ir.workloads.approxhpvm_tensor_ops import CONV3, im2col

                gout = grads[op.name]
                n, k, h, w = gout.shape
                cols = im2col(values[op.inputs[0]], op.window or CONV3).reshape(n, h * w, -1)
                per_image = np.einsum("npc,npk->nck", cols, gout.transpose(0, 2, 3, 1).reshape(n, h * w, k))
                norm = (per_image ** 2).sum(axis=(1, 2))
            e_w += float(np.sum(mask * norm / denom)) * w_range[op.param] ** 2
    return {k: v / len(x) for k, v in e_a.items()}, e_w / len(x)
