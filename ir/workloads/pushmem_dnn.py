"""DNN layers of seed 001 (Table III, 001:L323-L324) as affine loop-nest programs, at published layer shapes.

The seed gives no layer shapes (001:L329: "smaller problem sizes"). The defaults are published layers
that a cycle-level simulator in Python can run, chosen before running them and not tuned afterwards:

* ``resnet``: a 3x3, stride-1, padded convolution of the CIFAR-10 ResNets of He et al., "Deep Residual
  Learning for Image Recognition" (CVPR 2016, arXiv:1512.03385), Sec. 4.2: "3x3 convolutions on the
  feature maps of sizes {32, 16, 8} ... The numbers of filters are {16, 32, 64}"; the default is the
  first stage, 32x32 maps, 16 → 16 channels. (The ImageNet layers of the paper's Table 1 have 116 M MACs
  each, 12.8 M cycles of this 9-MAC unit.) The reduction over input channels is not unrolled, so the
  scheduler classifies the program as a DNN pipeline (001:L222) and builds a double-buffered
  coarse-grained pipeline over output tiles ``n`` (001:L224-L226). Stages per tile: load the input tile
  (with its one-pixel halo: the global buffer holds the padded map cut into tiles), load the weights,
  convolve (3x3 taps unrolled, channel loop ``c`` innermost so the PE accumulates in place), store.
  Tensors are channels-last so a wide fetch reads 4 channels. The tile edge (8 outputs) is a schedule
  parameter (tiling stays in the Halide schedule, 001:L204), fixed for every layer size.
* ``mobilenet``: a depthwise 3x3 + pointwise 1x1 pair ("separable, multi-channel convolution") at the
  shape of the first separable block of MobileNet v1 (Howard et al., arXiv:1704.04861, Table 1:
  "Conv dw / s1, 3x3x32 dw, 112x112x32" then "Conv / s1, 1x1x32x64") with the paper's width multiplier
  0.25 and resolution 128 (the 0.25 MobileNet-128 of its Table 7): a 64x64x8 map (padded to 66x66 in
  the global buffer), 8 → 16 channels. Channel loops are unrolled into one statement per channel and
  filter, which the D2 rule schedules as a stencil pipeline; the seed notes it is "structurally similar to
  a stencil pipeline" (001:L374).

Weights: resnet's are int16 program inputs; mobilenet's are constants inlined into the kernels (001:L210).
The golden model is ``loopnest.evaluate``.
"""

from __future__ import annotations

from solvermap.errors import InputError
from solvermap.ir.loopnest import Program, Tensor, statement
from solvermap.ir.workloads import Param, loopnest_bytes, register, settings

DT = "int16"


@register("resnet", "pushmem", "CIFAR-10 ResNet 3x3 conv layer (He et al. 2016 Sec. 4.2), DNN coarse-grained pipeline "
          "(001 Table III)", params={"size": Param(32, "feature-map edge", 1, 4096), "channels": Param(16, "input channels", 1, 1024),
                                     "filters": Param(16, "output channels", 1, 1024),
                                     "tile": Param(8, "tile edge (divides size)", 1, 4096)},
          estimate=lambda **p: [(f"{settings(p)}: tensors and golden evaluation", loopnest_bytes(resnet(**p)))])
def resnet(size: int = 32, channels: int = 16, filters: int = 16, tile: int = 8) -> Program:
    for field, value in (("size", size), ("channels", channels), ("filters", filters), ("tile", tile)):
        if value < 1:
            raise InputError("", f"workload.{field}", f"must be positive, got {value}")
    if size % tile:
        raise InputError("", "workload.tile", f"must divide the map size {size}, got {tile}")
    n, c, k, s = (size // tile) ** 2, channels, filters, tile
    h = s + 2
    tensors = {
        "input": Tensor("input", (n, h, h, c), DT, "input"),
        "weights": Tensor("weights", (k, 3, 3, c), DT, "input"),
        "in_buf": Tensor("in_buf", (n, h, h, c), DT),
        "w_buf": Tensor("w_buf", (n, k, 3, 3, c), DT),
        "conv": Tensor("conv", (n, k, s, s), DT),
        "output": Tensor("output", (n, k, s, s), DT, "output"),
    }
    taps = " + ".join(f"w_buf[n, k, {ry}, {rx}, c] * in_buf[n, y + {ry}, x + {rx}, c]" for ry in range(3) for rx in range(3))
    stmts = [
        statement("load_input", [("n", 0, n), ("y", 0, h), ("x", 0, h), ("c", 0, c)], "in_buf[n, y, x, c]",
                  "input[n, y, x, c]", dtype=DT),
        statement("load_weights", [("n", 0, n), ("k", 0, k), ("ry", 0, 3), ("rx", 0, 3), ("c", 0, c)],
                  "w_buf[n, k, ry, rx, c]", "weights[k, ry, rx, c]", dtype=DT),
        statement("conv", [("n", 0, n), ("k", 0, k), ("y", 0, s), ("x", 0, s), ("c", 0, c, "reduction")],
                  "conv[n, k, y, x]", f"({taps})", dtype=DT, accumulate=True),
        statement("hw_output", [("n", 0, n), ("k", 0, k), ("y", 0, s), ("x", 0, s)], "output[n, k, y, x]",
                  "max(conv[n, k, y, x] >> 4, 0)", dtype=DT),
    ]
    return Program("resnet", tensors, stmts, attrs={"coarse_loops": 1, "image": size}).validate()


@register("mobilenet", "pushmem", "MobileNet v1 depthwise 3x3 + pointwise 1x1 block at 0.25 width, 128 resolution "
          "(Howard et al. 2017), channels unrolled (001 Table III)",
          params={"size": Param(64, "output feature-map edge", 2, 4096), "channels": Param(8, "input channels", 1, 1024),
                  "filters": Param(16, "output channels", 1, 1024)},
          estimate=lambda **p: [(f"{settings(p)}: tensors and golden evaluation", loopnest_bytes(mobilenet(**p)))])
def mobilenet(size: int = 64, channels: int = 8, filters: int = 16) -> Program:
    if size < 2:
        raise InputError("", "workload.size", f"must be at least 2, got {size}")
    if channels < 1 or filters < 1:
        raise InputError("", "workload.channels", "channels and filters must be positive")
    o, p = size, size + 2  # output map and its padded input
    tensors: dict[str, Tensor] = {"input": Tensor("input", (channels, p, p), DT, "input"),
                                  "output": Tensor("output", (filters, o, o), DT, "output")}
    stmts = []
    for c in range(channels):
        tensors[f"in{c}"] = Tensor(f"in{c}", (p, p), DT)
        stmts.append(statement(f"hw_input{c}", [("y", 0, p), ("x", 0, p)], f"in{c}[y, x]", f"input[{c}, y, x]", dtype=DT))
    for c in range(channels):
        tensors[f"dw{c}"] = Tensor(f"dw{c}", (o, o), DT)
        weights = [((c + ry * 3 + rx) % 5) - 2 for ry in range(3) for rx in range(3)]  # inlined constants (001:L210)
        terms = [f"{w}*in{c}[y + {i // 3}, x + {i % 3}]" if w >= 0 else f"-{-w}*in{c}[y + {i // 3}, x + {i % 3}]"
                 for i, w in enumerate(weights) if w != 0]
        stmts.append(statement(f"dw{c}", [("y", 0, o), ("x", 0, o)], f"dw{c}[y, x]",
                               f"max(({' + '.join(terms)}) >> 2, 0)", dtype=DT))
    for f in range(filters):
        terms = [f"{((f * 3 + c) % 7) - 3}*dw{c}[y, x]" for c in range(channels) if ((f * 3 + c) % 7) - 3 != 0]
        terms = terms or ["0*dw0[y, x]"]
        stmts.append(statement(f"pw{f}", [("y", 0, o), ("x", 0, o)], f"output[{f}, y, x]",
                               f"max(({' + '.join(terms)}) >> 1, 0)", dtype=DT))
    return Program("mobilenet", tensors, stmts, attrs={"image": size}).validate()
