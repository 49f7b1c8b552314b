"""Quantized 2-D convolutions for the ``cpu`` family (UNIT, seed 002): Table I and ResNet-18.

Each workload is a one-statement loop-nest :class:`~solvermap.ir.loopnest.Program` (batch N = 1,
002:L278)::

    out[k, y, x] += int32(data[c, stride*y + r, stride*x + s]) * int32(weight[k, c, r, s])

with loops k, y, x data-parallel and c, r, s reduction, ``data`` uint8 (activations after Relay
quantization, 002:L276), ``weight`` int8 and ``out`` int32 — the operand types of VNNI
(002:L131). ``IHW`` already includes the spatial padding, as in Table I, where
``OHW = (IHW - R) // stride + 1`` holds for every column (digest 002 §2.4 [INFERENCE]).

* ``conv_table1_1`` … ``conv_table1_16``: the 16 ablation layers of Table I (002:L326-L333).
* ``resnet18_conv1`` … ``resnet18_conv11``: the distinct 2-D convolutions of ResNet-18 at 224×224
  (the network of the conv3d study, 002:L341; shapes are the standard torchvision ResNet-18, not
  printed in the seed).
* ``conv2d``: any shape (parameters C, K, IHW, R, stride, dtypes).

Every workload takes the parameters ``C, K, IHW, R, stride, data_dtype, weight_dtype`` so tests can
build reduced sizes (``--set workload.C=16``). :func:`conv2d_reference` is the fast NumPy int8 → int32
reference (im2col + exact float64 GEMM) used for full-size layers and as the NumPy timing baseline;
tests check it against the golden executor :func:`~solvermap.ir.loopnest.evaluate`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from solvermap.errors import InputError
from solvermap.ir.loopnest import Program, Tensor, statement
from solvermap.ir.workloads import Param, register

# Table I (002:L326-L333): C, IHW, K, R=S, stride (OHW follows).
TABLE_I = (
    (288, 35, 384, 3, 2), (160, 9, 224, 3, 1), (1056, 7, 192, 1, 1), (80, 73, 192, 3, 1),
    (128, 16, 128, 3, 1), (192, 16, 192, 3, 1), (256, 16, 256, 3, 1), (1024, 14, 512, 1, 1),
    (128, 16, 160, 3, 1), (576, 14, 192, 1, 1), (96, 16, 128, 3, 1), (1024, 14, 256, 1, 1),
    (576, 14, 128, 1, 1), (64, 29, 96, 3, 1), (64, 56, 128, 1, 2), (608, 14, 192, 1, 1),
)
TABLE_I_OHW = (17, 7, 7, 71, 14, 14, 14, 14, 14, 14, 14, 14, 14, 27, 28, 14)

# ResNet-18 at 224x224, distinct convolutions: C, IHW (padded), K, R, stride.
RESNET18 = (
    (3, 230, 64, 7, 2),     # conv1 -> 112
    (64, 58, 64, 3, 1),     # layer1 3x3 -> 56
    (64, 58, 128, 3, 2),    # layer2.0.conv1 -> 28
    (64, 56, 128, 1, 2),    # layer2.0.downsample -> 28
    (128, 30, 128, 3, 1),   # layer2 3x3 -> 28
    (128, 30, 256, 3, 2),   # layer3.0.conv1 -> 14
    (128, 28, 256, 1, 2),   # layer3.0.downsample -> 14
    (256, 16, 256, 3, 1),   # layer3 3x3 -> 14
    (256, 16, 512, 3, 2),   # layer4.0.conv1 -> 7
    (256, 14, 512, 1, 2),   # layer4.0.downsample -> 7
    (512, 9, 512, 3, 1),    # layer4 3x3 -> 7
)


def output_size(ihw: int, r: int, stride: int) -> int:
    return (ihw - r) // stride + 1


def conv2d_program(name: str, C: int, K: int, IHW: int, R: int, stride: int,
                   data_dtype: str = "uint8", weight_dtype: str = "int8") -> Program:
    for field, value in (("C", C), ("K", K), ("IHW", IHW), ("R", R), ("stride", stride)):
        if int(value) <= 0:
            raise InputError(name, f"workload.{field}", f"must be a positive integer, got {value}")
    if IHW < R:
        raise InputError(name, "workload.IHW", f"input size {IHW} is smaller than the kernel size {R}")
    ohw = output_size(IHW, R, stride)
    stmt = statement(
        "conv",
        [("k", 0, K, "data_parallel"), ("y", 0, ohw, "data_parallel"), ("x", 0, ohw, "data_parallel"),
         ("c", 0, C, "reduction"), ("r", 0, R, "reduction"), ("s", 0, R, "reduction")],
        "out[k, y, x]",
        f"int32(data[c, {stride}*y + r, {stride}*x + s]) * int32(weight[k, c, r, s])",
        dtype="int32", accumulate=True,
    )
    tensors = {
        "data": Tensor("data", (C, IHW, IHW), data_dtype, "input"),
        "weight": Tensor("weight", (K, C, R, R), weight_dtype, "input"),
        "out": Tensor("out", (K, ohw, ohw), "int32", "output"),
    }
    attrs = {"conv2d": {"C": C, "K": K, "IHW": IHW, "R": R, "stride": stride, "OHW": ohw}}
    return Program(name, tensors, [stmt], attrs, source=f"workload {name}").validate()


def conv2d_reference(data: np.ndarray, weight: np.ndarray, stride: int) -> np.ndarray:
    """Exact int32 convolution with NumPy: im2col + float64 GEMM (|sums| < 2^53, so exact), wrapped to int32."""
    C, ihw, _ = data.shape
    K, _, R, _ = weight.shape
    ohw = output_size(ihw, R, stride)
    cols = np.empty((C, R, R, ohw, ohw), dtype=np.float64)
    for r in range(R):
        for s in range(R):
            cols[:, r, s] = data[:, r: r + stride * (ohw - 1) + 1: stride, s: s + stride * (ohw - 1) + 1: stride]
    gemm = weight.reshape(K, C * R * R).astype(np.float64) @ cols.reshape(C * R * R, ohw * ohw)
    return gemm.astype(np.int64).astype(np.int32).reshape(K, ohw, ohw)


def conv2d_inputs(program: Program, seed: int = 0,
                  ranges: dict[str, tuple[int, int]] | None = None) -> dict[str, np.ndarray]:
    """Deterministic inputs: data over its dtype range, weights over int8 (or int16 clipped to
    -128..255); ``ranges`` narrows a tensor to ``(lo, hi)`` inclusive (7-bit activations: (0, 127))."""
    rng = np.random.default_rng(seed)
    out = {}
    for tensor in program.inputs:
        info = np.iinfo(np.dtype(tensor.dtype))
        lo, hi = max(info.min, -128), min(info.max, 255)
        if ranges and tensor.name in ranges:
            lo, hi = max(lo, ranges[tensor.name][0]), min(hi, ranges[tensor.name][1])
        out[tensor.name] = rng.integers(lo, hi + 1, size=tensor.shape).astype(tensor.dtype)
    return out


INTEGER_DTYPES = ("uint8", "int8", "uint16", "int16", "int32")


def _conv_params(C, IHW, K, R, stride) -> dict:
    return {"C": Param(C, "input channels", 1, 8192), "K": Param(K, "output channels (filters)", 1, 8192),
            "IHW": Param(IHW, "input height = width, padding included", 1, 8192),
            "R": Param(R, "kernel height = width", 1, 31), "stride": Param(stride, "stride", 1, 16),
            "data_dtype": Param("uint8", "activation dtype", choices=INTEGER_DTYPES),
            "weight_dtype": Param("int8", "weight dtype", choices=INTEGER_DTYPES)}


def conv2d_bytes(C: int, K: int, IHW: int, R: int, stride: int, data_dtype: str, weight_dtype: str, **_: Any):
    """Memory a run holds at least: data, weights and int32 output, and the float64 im2col matrix and
    product of the reference (:func:`conv2d_reference`), counted for the square layer these C, K, IHW, R and
    stride give (the other layer-shape parameters are not counted: a lower estimate)."""
    ohw = max(0, (IHW - R) // stride + 1)
    size = {d: np.dtype(d).itemsize for d in INTEGER_DTYPES}
    tensors = C * IHW * IHW * size[data_dtype] + K * C * R * R * size[weight_dtype] + 4 * K * ohw * ohw
    reference = 8 * (C * R * R * ohw * ohw + K * ohw * ohw)
    return [(f"workload.C={C}, K={K}, IHW={IHW}, R={R}, stride={stride}: tensors and the im2col reference",
             tensors + reference)]


def _register_table_layer(index: int, row: tuple) -> None:
    C, IHW, K, R, stride = row
    name = f"conv_table1_{index}"

    def build(C: int, K: int, IHW: int, R: int, stride: int, data_dtype: str, weight_dtype: str) -> Program:
        return conv2d_program(name, C, K, IHW, R, stride, data_dtype, weight_dtype)

    register(name, "cpu", f"UNIT Table I layer #{index}: C={C} IHW={IHW} K={K} R=S={R} stride={stride} "
             f"(002:L326-L333)", params=_conv_params(C, IHW, K, R, stride), estimate=conv2d_bytes)(build)


def _register_resnet_layer(index: int, row: tuple) -> None:
    C, IHW, K, R, stride = row
    name = f"resnet18_conv{index}"

    def build(C: int, K: int, IHW: int, R: int, stride: int, data_dtype: str, weight_dtype: str) -> Program:
        return conv2d_program(name, C, K, IHW, R, stride, data_dtype, weight_dtype)

    register(name, "cpu", f"ResNet-18 conv #{index}: C={C} IHW={IHW} K={K} R=S={R} stride={stride}",
             params=_conv_params(C, IHW, K, R, stride), estimate=conv2d_bytes)(build)


for _i, _row in enumerate(TABLE_I, start=1):
    _register_table_layer(_i, _row)
for _i, _row in enumerate(RESNET18, start=1):
    _register_resnet_layer(_i, _row)


@register("conv2d", "cpu", "quantized 2-D convolution of any shape: C, K, R x S filters, P x Q outputs, batch N, "
          "groups G, strides, dilations (uint8 data, int8 weights, int32 out)",
          params={**_conv_params(64, 16, 64, 3, 1),
                  "S": Param(None, "kernel height (default: R)"), "P": Param(None, "output width (default: from IHW)"),
                  "Q": Param(None, "output height (default: from IHW)"), "N": Param(1, "batch", 1, 4096),
                  "G": Param(1, "groups", 1, 8192), "Wstride": Param(None, "width stride (default: stride)"),
                  "Hstride": Param(None, "height stride (default: stride)"), "Wdilation": Param(1, "width dilation", 1, 64),
                  "Hdilation": Param(1, "height dilation", 1, 64)},
          estimate=conv2d_bytes)
def conv2d(C: int, K: int, IHW: int, R: int, stride: int, data_dtype: str, weight_dtype: str, S: int | None = None,
           P: int | None = None, Q: int | None = None, N: int = 1, G: int = 1, Wstride: int | None = None,
           Hstride: int | None = None, Wdilation: int = 1, Hdilation: int = 1) -> Program:
    """The layer-shape parameters (:mod:`solvermap.ir.layer_shapes`: R filter width, S height, P output width, Q
    height, the input padded to what they need); P and Q default to what an IHW × IHW padded input gives,
    S to R, the strides to ``stride``. With the defaults this is the square Table I nest."""
    from solvermap.ir.layer_shapes import conv_program as layer_program, shape_of

    w_stride, h_stride = Wstride or stride, Hstride or stride
    filter_h = S or R
    for field, value in (("IHW", IHW), ("R", R), ("stride", stride), ("Wstride", w_stride), ("Hstride", h_stride)):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise InputError("conv2d", f"workload.{field}", f"must be a positive integer, got {value!r}")
    if P is None:
        P = (IHW - (R - 1) * Wdilation - 1) // w_stride + 1
    if Q is None:
        Q = (IHW - (filter_h - 1) * Hdilation - 1) // h_stride + 1
    if P < 1 or Q < 1:
        raise InputError("conv2d", "workload.IHW", f"input size {IHW} is smaller than the (dilated) filter")
    dims = {"C": C, "K": K, "R": R, "S": filter_h, "P": P, "Q": Q, "N": N, "G": G, "Wstride": w_stride, "Hstride": h_stride,
            "Wdilation": Wdilation, "Hdilation": Hdilation, "dtypes": {"input": data_dtype, "weight": weight_dtype}}
    return layer_program(shape_of(dims, "conv2d", "workload", "conv2d"), "conv2d")
