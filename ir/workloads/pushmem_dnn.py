"""DNN layers of seed 001 (Table III, 001:L323-L324) as affine loop-nest programs.

* ``resnet``: one multi-channel 3x3 convolution layer with a reduction loop over input channels that is
  *not* unrolled, so the scheduler classifies it as a DNN pipeline (001:L222) and builds a
  double-buffered coarse-grained pipeline over the tile loop ``n`` (001:L224-L226). Stages per tile:
  load the input tile, load the weights, convolve (3x3 taps unrolled, channel loop ``c`` innermost so
  the PE accumulates in place), store. Tensors are channels-last so a wide fetch reads 4 channels.
* ``mobilenet``: a depthwise 3x3 + pointwise 1x1 pair ("separable, multi-channel convolution") with the
  channel reductions unrolled (small channel counts), which the D2 rule schedules as a stencil pipeline;
  the seed notes it is "structurally similar to a stencil pipeline" (001:L374).

The seed gives no layer shapes (001:L329: "smaller problem sizes"); defaults are chosen so that the
optimised completion times land near Table VI (resnet ~15.6k, mobilenet ~1k cycles) and are listed in
the study notes. Weights are int16 program inputs; the golden model is ``loopnest.evaluate``.
"""

from __future__ import annotations

from solvermap.errors import InputError
from solvermap.ir.loopnest import Program, Tensor, statement
from solvermap.ir.workloads import register

DT = "int16"


@register("resnet", "pushmem", "ResNet-style 3x3 multi-channel conv layer, DNN coarse-grained pipeline (001 Table III)",
          params={"tiles": 4, "channels": 8, "filters": 8, "tile_size": 8})
def resnet(tiles: int = 4, channels: int = 8, filters: int = 8, tile_size: int = 8) -> Program:
    for field, value in (("tiles", tiles), ("channels", channels), ("filters", filters), ("tile_size", tile_size)):
        if value < 1:
            raise InputError("", f"workload.{field}", f"must be positive, got {value}")
    n, c, k, s = tiles, channels, filters, tile_size
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
    return Program("resnet", tensors, stmts, attrs={"coarse_loops": 1}).validate()


@register("mobilenet", "pushmem", "MobileNet depthwise 3x3 + pointwise 1x1 pair, channels unrolled (001 Table III)",
          params={"size": 32, "channels": 4, "filters": 4})
def mobilenet(size: int = 32, channels: int = 4, filters: int = 4) -> Program:
    if size < 4:
        raise InputError("", "workload.size", f"must be at least 4, got {size}")
    if channels < 1 or filters < 1:
        raise InputError("", "workload.channels", "channels and filters must be positive")
    o = size - 2
    tensors: dict[str, Tensor] = {"input": Tensor("input", (channels, size, size), DT, "input"),
                                  "output": Tensor("output", (filters, o, o), DT, "output")}
    stmts = []
    for c in range(channels):
        tensors[f"in{c}"] = Tensor(f"in{c}", (size, size), DT)
        stmts.append(statement(f"hw_input{c}", [("y", 0, size), ("x", 0, size)], f"in{c}[y, x]", f"input[{c}, y, x]", dtype=DT))
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
