"""Published DNN architectures as ONNX models, written the way exporters write them.

Builders return a ``ModelProto`` (``onnx.helper``) with the layer shapes of the published architecture
(a width multiplier and the image size shrink them for tests):

``resnet18``      He et al. 2016, torchvision layout: conv 7×7/2, max pool, four stages of two basic
                  blocks (64–512 channels, 1×1/2 downsample convs), global average pool, FC 1000
``mobilenet_v2``  Sandler et al. 2018, torchvision layout: inverted residuals (t, c, n, s) of Table 2,
                  depthwise 3×3 convolutions, ReLU6, 1×1 conv to 1280, FC 1000
``alexnet``       Krizhevsky et al. 2012 as in the ONNX model zoo's bvlc_alexnet: conv 11×11/4 with LRN
                  after conv1/conv2, five convs, three max pools, FC 4096–4096–1000
``transformer``   one BERT-base encoder layer (Vaswani et al. 2017, Devlin et al. 2019): 12 heads, d = 768,
                  FFN 3072, GELU, post-norm LayerNormalization
``conv_net``      an 8-layer super-resolution convolutional network (ESPCN-style: conv 5×5, six conv 3×3,
                  conv 3×3 to 3·r² channels, DepthToSpace r) at any image size, e.g. 540×960

Styles (``style``):

``pytorch``  ``torch.onnx.export`` at opset 17: ``Conv`` without bias before ``BatchNormalization``,
             ReLU6 as ``Clip`` fed by ``Constant`` nodes, ``Gemm`` with ``transB=1``, ``Flatten`` or the
             ``Shape → Gather → Unsqueeze → Concat → Reshape`` arithmetic, node names ``/layer1/…/Conv``
``keras``    tf2onnx at opset 13: NHWC input behind a ``Transpose``, ``MatMul`` + ``Add`` instead of
             ``Gemm``, ``Clip`` bounds as initializers, ``Reshape`` to a constant shape

Weights (``weights``): ``random`` (seeded Gaussian, std = 1/√fan_in), ``empty`` (initializers that declare
dims and carry no data, as shape-only exports do). :func:`save` writes a model, optionally with its
initializers in an external data file (``external=True``) as large exports do.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

STYLES = ("pytorch", "keras")


class Builder:
    """Accumulates nodes and initializers in one exporter style."""

    def __init__(self, name: str, *, style: str = "pytorch", weights: str = "random", seed: int = 0,
                 opset: int | None = None) -> None:
        if style not in STYLES:
            raise ValueError(f"style must be one of {STYLES}")
        if weights not in ("random", "empty"):
            raise ValueError("weights must be random or empty")
        self.name, self.style, self.weights = name, style, weights
        self.opset = opset or (17 if style == "pytorch" else 13)
        self.rng = np.random.default_rng(seed)
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self.count: dict[str, int] = {}
        self.constant_nodes = 0

    # ------------------------------------------------------------------ primitives
    def fresh(self, base: str) -> str:
        self.count[base] = self.count.get(base, 0) + 1
        return base if self.count[base] == 1 else f"{base}_{self.count[base] - 1}"

    def node(self, op: str, inputs: list[str], scope: str, *, outputs: int = 1, **attrs: Any) -> str | list[str]:
        from onnx import helper

        name = self.fresh(f"{scope}/{op}")
        outs = [f"{name}_output_{k}" for k in range(outputs)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=name, **attrs))
        return outs[0] if outputs == 1 else outs

    def weight(self, name: str, shape: tuple[int, ...], fan_in: int, scale: float = 1.0) -> str:
        if self.weights == "empty":
            return self._empty(name, shape)
        from onnx import numpy_helper

        value = self.rng.standard_normal(shape) * scale / math.sqrt(max(1, fan_in))
        self.inits.append(numpy_helper.from_array(value.astype(np.float32), name))
        return name

    def _empty(self, name: str, shape: tuple[int, ...]) -> str:
        """A float initializer with dims and no data, as shape-only exports write them."""
        from onnx import TensorProto

        tensor = TensorProto()
        tensor.name, tensor.data_type = name, TensorProto.FLOAT
        tensor.dims.extend(shape)
        self.inits.append(tensor)
        return name

    def fill(self, name: str, shape: tuple[int, ...], value: float) -> str:
        """A parameter with a fixed value (batch-norm statistics, biases) — empty in shape-only exports."""
        if self.weights == "empty":
            return self._empty(name, shape)
        from onnx import numpy_helper

        self.inits.append(numpy_helper.from_array(np.full(shape, value, dtype=np.float32), name))
        return name

    def const(self, name: str, value: Any, dtype=np.int64) -> str:
        """A small constant (shapes, axes, bounds): an initializer, always with data."""
        from onnx import numpy_helper

        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def constant_node(self, value: Any, scope: str, dtype=np.float32) -> str:
        """A ``Constant`` node, the way PyTorch exports scalars."""
        from onnx import helper, numpy_helper

        name = self.fresh(f"{scope}/Constant")
        out = f"{name}_output_0"
        self.nodes.append(helper.make_node("Constant", [], [out], name=name,
                                           value=numpy_helper.from_array(np.asarray(value, dtype=dtype))))
        self.constant_nodes += 1
        return out

    # ------------------------------------------------------------------ layers
    def conv(self, x: str, cin: int, cout: int, k: int, scope: str, *, stride: int = 1, pad: int | None = None,
             groups: int = 1, dilation: int = 1, bias: bool = True) -> str:
        pad = (k // 2) * dilation if pad is None else pad
        w = self.weight(f"{scope}.weight", (cout, cin // groups, k, k), (cin // groups) * k * k)
        inputs = [x, w] + ([self.fill(f"{scope}.bias", (cout,), 0.0)] if bias else [])
        return self.node("Conv", inputs, scope, kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4,
                         group=groups, dilations=[dilation, dilation])

    def batchnorm(self, x: str, c: int, scope: str) -> str:
        params = [self.fill(f"{scope}.weight", (c,), 1.0), self.fill(f"{scope}.bias", (c,), 0.0),
                  self.fill(f"{scope}.running_mean", (c,), 0.0), self.fill(f"{scope}.running_var", (c,), 1.0)]
        return self.node("BatchNormalization", [x] + params, scope, epsilon=1e-5)

    def relu(self, x: str, scope: str) -> str:
        return self.node("Relu", [x], scope)

    def relu6(self, x: str, scope: str) -> str:
        if self.style == "pytorch":
            lo, hi = self.constant_node(0.0, scope), self.constant_node(6.0, scope)
        else:
            lo = self.const(self.fresh(f"{scope}/min"), 0.0, np.float32)
            hi = self.const(self.fresh(f"{scope}/max"), 6.0, np.float32)
        return self.node("Clip", [x, lo, hi], scope)

    def linear(self, x: str, fin: int, fout: int, scope: str) -> str:
        if self.style == "pytorch":
            w = self.weight(f"{scope}.weight", (fout, fin), fin)
            return self.node("Gemm", [x, w, self.fill(f"{scope}.bias", (fout,), 0.0)], scope, alpha=1.0, beta=1.0, transB=1)
        w = self.weight(f"{scope}/kernel", (fin, fout), fin)
        y = self.node("MatMul", [x, w], scope)
        return self.node("Add", [y, self.fill(f"{scope}/bias", (fout,), 0.0)], scope)

    def flatten(self, x: str, scope: str, *, arithmetic: bool = False) -> str:
        """``Flatten``; or PyTorch's ``x.reshape(x.size(0), -1)`` shape arithmetic; Keras: a constant Reshape."""
        if self.style == "keras":
            return self.node("Reshape", [x, self.const(self.fresh(f"{scope}/shape"), [1, -1])], scope)
        if not arithmetic:
            return self.node("Flatten", [x], scope, axis=1)
        shape = self.node("Shape", [x], scope)
        batch = self.node("Gather", [shape, self.constant_node(0, scope, np.int64)], scope, axis=0)
        axes = self.constant_node([0], scope, np.int64)
        unsq = self.node("Unsqueeze", [batch, axes], scope)
        rest = self.constant_node([-1], scope, np.int64)
        target = self.node("Concat", [unsq, rest], scope, axis=0)
        return self.node("Reshape", [x, target], scope)

    # ------------------------------------------------------------------ the model
    def finish(self, x_shape: list[int], y: str, x: str = "input") -> Any:
        import onnx
        from onnx import TensorProto, helper

        inputs = [helper.make_tensor_value_info(x, TensorProto.FLOAT, x_shape)]
        outputs = [helper.make_tensor_value_info(y, TensorProto.FLOAT, None)]
        graph = helper.make_graph(self.nodes, self.name, inputs, outputs, self.inits)
        model = helper.make_model(graph, producer_name="pytorch" if self.style == "pytorch" else "tf2onnx",
                                  opset_imports=[helper.make_opsetid("", self.opset)])
        model.ir_version = 8
        inferred = onnx.shape_inference.infer_shapes(model)
        for out, typed in zip(model.graph.output, inferred.graph.output):
            out.type.CopyFrom(typed.type)
        return model

    def image_input(self, channels: int, height: int, width: int) -> tuple[str, list[int]]:
        """The graph input and its declared shape: NCHW, or Keras' NHWC behind a Transpose."""
        if self.style == "pytorch":
            return "input", [1, channels, height, width]
        return self.node("Transpose", ["input"], "input_nchw", perm=[0, 3, 1, 2]), [1, height, width, channels]


# =========================================================================== architectures


def resnet18(*, image: int = 224, width: int = 64, classes: int = 1000, style: str = "pytorch",
             weights: str = "random", seed: int = 0) -> Any:
    b = Builder("resnet18", style=style, weights=weights, seed=seed)
    x, shape = b.image_input(3, image, image)
    x = b.relu(b.batchnorm(b.conv(x, 3, width, 7, "/conv1", stride=2, pad=3, bias=False), width, "/bn1"), "/relu")
    x = b.node("MaxPool", [x], "/maxpool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = width
    for stage, mult in enumerate((1, 2, 4, 8), start=1):
        cout = width * mult
        for block in range(2):
            scope = f"/layer{stage}/layer{stage}.{block}"
            stride = 2 if stage > 1 and block == 0 else 1
            y = b.relu(b.batchnorm(b.conv(x, cin, cout, 3, f"{scope}/conv1", stride=stride, bias=False), cout,
                                   f"{scope}/bn1"), f"{scope}/relu")
            y = b.batchnorm(b.conv(y, cout, cout, 3, f"{scope}/conv2", bias=False), cout, f"{scope}/bn2")
            skip = x
            if stride != 1 or cin != cout:
                skip = b.batchnorm(b.conv(x, cin, cout, 1, f"{scope}/downsample/downsample.0", stride=stride, pad=0,
                                          bias=False), cout, f"{scope}/downsample/downsample.1")
            x = b.relu(b.node("Add", [y, skip], scope), f"{scope}/relu_1")
            cin = cout
    x = b.node("GlobalAveragePool", [x], "/avgpool")
    x = b.flatten(x, "/flatten")
    y = b.linear(x, cin, classes, "/fc")
    return b.finish(shape, y)


MOBILENET_V2 = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1))


def _divisible(value: float, divisor: int = 8) -> int:
    out = max(divisor, int(value + divisor / 2) // divisor * divisor)
    return out + divisor if out < 0.9 * value else out


def mobilenet_v2(*, image: int = 224, width_mult: float = 1.0, classes: int = 1000, style: str = "pytorch",
                 weights: str = "random", seed: int = 0) -> Any:
    b = Builder("mobilenet_v2", style=style, weights=weights, seed=seed)
    x, shape = b.image_input(3, image, image)
    cin = _divisible(32 * width_mult)
    last = _divisible(1280 * max(1.0, width_mult))
    x = b.relu6(b.batchnorm(b.conv(x, 3, cin, 3, "/features/features.0/features.0.0", stride=2, bias=False), cin,
                            "/features/features.0/features.0.1"), "/features/features.0/features.0.2")
    index = 1
    for t, c, n, s in MOBILENET_V2:
        cout = _divisible(c * width_mult)
        for k in range(n):
            scope = f"/features/features.{index}/conv"
            stride = s if k == 0 else 1
            hidden = cin * t
            y = x
            part = 0
            if t != 1:
                y = b.relu6(b.batchnorm(b.conv(y, cin, hidden, 1, f"{scope}/conv.0/conv.0.0", pad=0, bias=False), hidden,
                                        f"{scope}/conv.0/conv.0.1"), f"{scope}/conv.0/conv.0.2")
                part = 1
            y = b.relu6(b.batchnorm(b.conv(y, hidden, hidden, 3, f"{scope}/conv.{part}/conv.{part}.0", stride=stride,
                                           groups=hidden, bias=False), hidden, f"{scope}/conv.{part}/conv.{part}.1"),
                        f"{scope}/conv.{part}/conv.{part}.2")
            y = b.batchnorm(b.conv(y, hidden, cout, 1, f"{scope}/conv.{part + 1}", pad=0, bias=False), cout,
                            f"{scope}/conv.{part + 2}")
            x = b.node("Add", [x, y], f"/features/features.{index}") if stride == 1 and cin == cout else y
            cin = cout
            index += 1
    x = b.relu6(b.batchnorm(b.conv(x, cin, last, 1, f"/features/features.{index}/features.{index}.0", pad=0, bias=False),
                            last, f"/features/features.{index}/features.{index}.1"), f"/features/features.{index}/features.{index}.2")
    x = b.node("GlobalAveragePool", [x], "/avgpool")
    x = b.flatten(x, "/flatten", arithmetic=True)
    x = b.node("Dropout", [x], "/classifier/classifier.0")
    y = b.linear(x, last, classes, "/classifier/classifier.1")
    return b.finish(shape, y)


def alexnet(*, image: int = 224, width_mult: float = 1.0, classes: int = 1000, hidden: int = 4096,
            style: str = "pytorch", weights: str = "random", seed: int = 0) -> Any:
    b = Builder("alexnet", style=style, weights=weights, seed=seed)
    x, shape = b.image_input(3, image, image)
    widths = [max(8, int(w * width_mult)) for w in (64, 192, 384, 256, 256)]
    size = image
    x = b.relu(b.conv(x, 3, widths[0], 11, "/features/features.0", stride=4, pad=2), "/features/features.1")
    size = (size + 4 - 11) // 4 + 1
    x = b.node("LRN", [x], "/features/lrn1", size=5, alpha=1e-4, beta=0.75, bias=1.0)
    x = b.node("MaxPool", [x], "/features/features.2", kernel_shape=[3, 3], strides=[2, 2])
    size = (size - 3) // 2 + 1
    x = b.relu(b.conv(x, widths[0], widths[1], 5, "/features/features.3", pad=2), "/features/features.4")
    x = b.node("LRN", [x], "/features/lrn2", size=5, alpha=1e-4, beta=0.75, bias=1.0)
    x = b.node("MaxPool", [x], "/features/features.5", kernel_shape=[3, 3], strides=[2, 2])
    size = (size - 3) // 2 + 1
    x = b.relu(b.conv(x, widths[1], widths[2], 3, "/features/features.6"), "/features/features.7")
    x = b.relu(b.conv(x, widths[2], widths[3], 3, "/features/features.8"), "/features/features.9")
    x = b.relu(b.conv(x, widths[3], widths[4], 3, "/features/features.10"), "/features/features.11")
    x = b.node("MaxPool", [x], "/features/features.12", kernel_shape=[3, 3], strides=[2, 2])
    size = (size - 3) // 2 + 1
    x = b.flatten(x, "/flatten")
    features = widths[4] * size * size
    x = b.relu(b.linear(b.node("Dropout", [x], "/classifier/classifier.0"), features, hidden, "/classifier/classifier.1"),
               "/classifier/classifier.2")
    x = b.relu(b.linear(b.node("Dropout", [x], "/classifier/classifier.3"), hidden, hidden, "/classifier/classifier.4"),
               "/classifier/classifier.5")
    y = b.linear(x, hidden, classes, "/classifier/classifier.6")
    return b.finish(shape, y)


def transformer(*, seq: int = 128, d_model: int = 768, heads: int = 12, ffn: int = 3072, style: str = "pytorch",
                weights: str = "random", seed: int = 0, layer_norm: str = "op") -> Any:
    """One encoder layer; ``layer_norm`` "op" (LayerNormalization, opset 17) or "decomposed" (ReduceMean,
    Sub, Pow, Sqrt, Div, as older exports write it). GELU is the exact erf form PyTorch exports."""
    if d_model % heads:
        raise ValueError("d_model must be a multiple of heads")
    b = Builder("transformer", style=style, weights=weights, seed=seed, opset=17)
    dh = d_model // heads
    x = "input"

    def proj(v: str, fin: int, fout: int, scope: str) -> str:
        w = b.weight(f"{scope}.weight_t", (fin, fout), fin)
        return b.node("Add", [b.fill(f"{scope}.bias", (fout,), 0.0), b.node("MatMul", [v, w], scope)], scope)

    def heads_of(v: str, scope: str, perm: list[int]) -> str:
        r = b.node("Reshape", [v, b.const(b.fresh(f"{scope}/shape"), [1, seq, heads, dh])], scope)
        return b.node("Transpose", [r], scope, perm=perm)

    def norm(v: str, scope: str) -> str:
        gamma, beta = b.fill(f"{scope}.weight", (d_model,), 1.0), b.fill(f"{scope}.bias", (d_model,), 0.0)
        if layer_norm == "op":
            return b.node("LayerNormalization", [v, gamma, beta], scope, axis=-1, epsilon=1e-5)
        axes = b.const(b.fresh(f"{scope}/axes"), [-1])
        mean = b.node("ReduceMean", [v], scope, axes=[-1], keepdims=1) if b.opset < 18 else b.node("ReduceMean", [v, axes], scope)
        centred = b.node("Sub", [v, mean], scope)
        square = b.node("Pow", [centred, b.constant_node(2.0, scope)], scope)
        var = b.node("ReduceMean", [square], scope, axes=[-1], keepdims=1)
        std = b.node("Sqrt", [b.node("Add", [var, b.constant_node(1e-5, scope)], scope)], scope)
        return b.node("Add", [b.node("Mul", [b.node("Div", [centred, std], scope), gamma], scope), beta], scope)

    q = heads_of(proj(x, d_model, d_model, "/attention/self/query"), "/attention/self/q", [0, 2, 1, 3])
    k = heads_of(proj(x, d_model, d_model, "/attention/self/key"), "/attention/self/k", [0, 2, 3, 1])
    v = heads_of(proj(x, d_model, d_model, "/attention/self/value"), "/attention/self/v", [0, 2, 1, 3])
    scores = b.node("Div", [b.node("MatMul", [q, k], "/attention/self"), b.constant_node(math.sqrt(dh), "/attention/self")],
                    "/attention/self")
    probs = b.node("Softmax", [scores], "/attention/self", axis=-1)
    context = b.node("Transpose", [b.node("MatMul", [probs, v], "/attention/self")], "/attention/self", perm=[0, 2, 1, 3])
    context = b.node("Reshape", [context, b.const("/attention/self/merge_shape", [1, seq, d_model])], "/attention/self")
    attn = proj(context, d_model, d_model, "/attention/output/dense")
    h = norm(b.node("Add", [attn, x], "/attention/output"), "/attention/output/LayerNorm")
    f = proj(h, d_model, ffn, "/intermediate/dense")
    erf = b.node("Erf", [b.node("Div", [f, b.constant_node(math.sqrt(2.0), "/intermediate/gelu")], "/intermediate/gelu")],
                 "/intermediate/gelu")
    gelu = b.node("Mul", [b.node("Mul", [f, b.node("Add", [erf, b.constant_node(1.0, "/intermediate/gelu")],
                                                   "/intermediate/gelu")], "/intermediate/gelu"),
                          b.constant_node(0.5, "/intermediate/gelu")], "/intermediate/gelu")
    out = proj(gelu, ffn, d_model, "/output/dense")
    y = norm(b.node("Add", [out, h], "/output"), "/output/LayerNorm")
    return b.finish([1, seq, d_model], y)


def conv_net(*, height: int = 540, width: int = 960, channels: int = 64, upscale: int = 2, style: str = "pytorch",
             weights: str = "random", seed: int = 0) -> Any:
    """Eight convolutions at full resolution (ESPCN-style super resolution), then DepthToSpace."""
    b = Builder("conv_net", style=style, weights=weights, seed=seed)
    x, shape = b.image_input(3, height, width)
    x = b.relu(b.conv(x, 3, channels, 5, "/conv1"), "/relu1")
    for k in range(2, 8):
        x = b.relu(b.conv(x, channels, channels, 3, f"/conv{k}"), f"/relu{k}")
    x = b.conv(x, channels, 3 * upscale * upscale, 3, "/conv8")
    y = b.node("DepthToSpace", [x], "/pixel_shuffle", blocksize=upscale, mode="CRD")
    return b.finish(shape, y)


ARCHITECTURES = {"resnet18": resnet18, "mobilenet_v2": mobilenet_v2, "alexnet": alexnet, "transformer": transformer,
                 "conv_net": conv_net}


def save(model: Any, path: str | Path, *, external: bool = False) -> Path:
    """Write ``model``; with ``external`` its initializers go to ``<name>.data`` beside it."""
    import onnx

    path = Path(path)
    if external:
        onnx.save_model(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                        location=path.name + ".data", size_threshold=0)
    else:
        onnx.save_model(model, str(path))
    return path
