"""Small models written as exporters write them (onnx.helper), for the ONNX tests.

``pytorch_block``  PyTorch style: Conv (no bias) → BatchNormalization → Clip fed by Constant nodes (ReLU6),
                   a residual Add, MaxPool, the Shape → Gather → Unsqueeze → Concat → Reshape arithmetic,
                   Gemm with transB=1
``keras_block``    tf2onnx style: NHWC input behind a Transpose, a depthwise Conv (group = channels), Clip with
                   initializer bounds, a 1×1 Conv, GlobalAveragePool, Reshape to a constant shape, MatMul + Add
``two_readers``    one activation read by a 3×3 Conv and a 1×1 Conv (a ResNet downsample's shape) joined by Add
``late_weights``   a small Conv before a Gemm with 64× its weights (both in the one weight stream of the
                   plasticine lowering)
``attention``      one encoder layer (ir.onnx_zoo.transformer) at toy sizes: activation × activation MatMul,
                   Softmax, LayerNormalization, erf GELU
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from solvermap.ir.onnx_zoo import Builder, save, transformer


def pytorch_block(*, weights: str = "random", seed: int = 0):
    b = Builder("pytorch_block", style="pytorch", weights=weights, seed=seed)
    x = "input"
    y = b.relu6(b.batchnorm(b.conv(x, 4, 8, 3, "/conv1", bias=False), 8, "/bn1"), "/act1")
    z = b.batchnorm(b.conv(y, 8, 8, 3, "/conv2", bias=False), 8, "/bn2")
    x = b.relu(b.node("Add", [z, y], "/residual"), "/act2")
    x = b.node("MaxPool", [x], "/pool", kernel_shape=[2, 2], strides=[2, 2])
    x = b.flatten(x, "/flatten", arithmetic=True)
    out = b.linear(x, 8 * 4 * 4, 10, "/fc")
    return b.finish([1, 4, 8, 8], out)


def keras_block(*, weights: str = "random", seed: int = 0):
    b = Builder("keras_block", style="keras", weights=weights, seed=seed)
    x, shape = b.image_input(4, 8, 8)
    x = b.relu6(b.conv(x, 4, 4, 3, "depthwise", groups=4), "depthwise_relu6")
    x = b.relu(b.conv(x, 4, 8, 1, "pointwise", pad=0), "pointwise_relu")
    x = b.node("GlobalAveragePool", [x], "gap")
    x = b.flatten(x, "reshape")
    out = b.linear(x, 8, 10, "dense")
    return b.finish(shape, out)


def two_readers(*, weights: str = "random", seed: int = 0):
    b = Builder("two_readers", weights=weights, seed=seed)
    x = b.relu(b.conv("input", 4, 8, 3, "/conv0"), "/relu0")
    out = b.node("Add", [b.conv(x, 8, 8, 3, "/conv1"), b.conv(x, 8, 8, 1, "/downsample", pad=0)], "/residual")
    return b.finish([1, 4, 8, 8], out)


def late_weights(*, weights: str = "random", seed: int = 0):
    b = Builder("late_weights", weights=weights, seed=seed)
    x = b.flatten(b.relu(b.conv("input", 4, 8, 3, "/conv0"), "/relu0"), "/flatten")
    return b.finish([1, 4, 8, 8], b.linear(x, 8 * 8 * 8, 256, "/fc"))


def attention(*, weights: str = "random", seed: int = 0):
    return transformer(seq=4, d_model=8, heads=2, ffn=16, weights=weights, seed=seed)


MODELS = {"pytorch_block": pytorch_block, "keras_block": keras_block, "attention": attention,
          "two_readers": two_readers, "late_weights": late_weights}


def write(tmp: Path, name: str, *, external: str = "no", weights: str = "random") -> Path:
    """Save model ``name`` under ``tmp``; ``external``: no | present | missing (the data file deleted)."""
    path = tmp / f"{name}-{external}-{weights}.onnx"
    save(MODELS[name](weights=weights), path, external=external != "no")
    if external == "missing":
        (tmp / (path.name + ".data")).unlink()
    return path


def random_input(model, seed: int = 0) -> np.ndarray:
    dims = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    return np.random.default_rng(seed).random(dims).astype(np.float32)
