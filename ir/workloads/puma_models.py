"""PUMA workloads (seed 003): networks built as ONNX models and re-imported through the ONNX importer.

Each builder makes an ONNX ``ModelProto`` with deterministic weights (``seed``), imports it with
:func:`solvermap.ir.onnx_import.import_model` and returns the :class:`~solvermap.ir.onnx_import.OnnxModel`
(graph, constant values, and the ``ModelProto`` itself as ``.model``). A user's ``.onnx`` file takes the
same path (``--workload model.onnx``); its weights are read from the file.

mlp_l4   1024-1024-2048-1024-10 (issue 6), ReLU
mlp_l5   1024-2048-3072-3072-1024-10 (issue 6), ReLU
lstm_lm  two LSTM layers of ``hidden`` units over ``seq_len`` embedded tokens, then a vocabulary FC
lenet    LeNet-5 style CNN on 1×28×28 (conv5-6, pool, conv5-16, pool, fc120, fc84, fc10)
vgg      VGG-style CNN on 3×32×32 with batch norm (conv3 ×5 in three stages, two FC layers)

Weights are scaled Gaussian (std = gain/√fan_in) so activations stay inside PUMA's 4.12 fixed-point range.
"""

from __future__ import annotations

import numpy as np

from solvermap.ir.graph import DataflowGraph
from solvermap.ir.onnx_import import OnnxModel, import_model
from solvermap.ir.workloads import Param, register, seed_param

OPSET = 17


# An imported model plus the ModelProto it came from (``.model``, ``.save(path)``).
OnnxWorkload = OnnxModel


def finish(graph_proto, name: str) -> OnnxModel:
    """Check the ONNX model and import it (the model stays attached for ``save`` and reference runs)."""
    import onnx
    from onnx import helper

    model = helper.make_model(graph_proto, producer_name="solvermap", opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return import_model(model, name=name)


def _init(name: str, array: np.ndarray):
    from onnx import numpy_helper

    return numpy_helper.from_array(np.asarray(array), name)


def _gaussian(rng: np.random.Generator, shape, fan_in: int, gain: float) -> np.ndarray:
    return (rng.standard_normal(shape) * gain / np.sqrt(fan_in)).astype(np.float32)


def mlp_model(sizes: list[int], name: str, seed: int = 0, activation: str = "Relu", gain: float = 1.0,
              weights: list[tuple[np.ndarray, np.ndarray]] | None = None) -> OnnxWorkload:
    """A Gemm/activation chain; ``weights`` (W[out,in], b[out]) replaces the random ones when given."""
    from onnx import TensorProto, helper

    rng = np.random.default_rng(seed)
    nodes, inits = [], []
    current = "x"
    for k in range(len(sizes) - 1):
        fan_in, fan_out = sizes[k], sizes[k + 1]
        if weights is not None:
            w, b = (np.asarray(a, dtype=np.float32) for a in weights[k])
        else:
            w = _gaussian(rng, (fan_out, fan_in), fan_in, gain)
            b = (rng.standard_normal(fan_out) * 0.1).astype(np.float32)
        inits += [_init(f"fc{k + 1}.W", w), _init(f"fc{k + 1}.b", b)]
        out = f"fc{k + 1}.out"
        nodes.append(helper.make_node("Gemm", [current, f"fc{k + 1}.W", f"fc{k + 1}.b"], [out], name=f"fc{k + 1}", transB=1))
        current = out
        if k < len(sizes) - 2:
            nodes.append(helper.make_node(activation, [current], [f"act{k + 1}.out"], name=f"act{k + 1}"))
            current = f"act{k + 1}.out"
    nodes.append(helper.make_node("Identity", [current], ["y"], name="output"))
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, sizes[0]])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, sizes[-1]])], inits)
    return finish(graph, name)


WIDTH_MAX = 1 << 20
SEED = {"seed": seed_param("seed of the Gaussian weights")}


def weight_bytes(what: str, elements: float) -> list[tuple[str, float]]:
    """float32 weights held twice while the model is built: the NumPy arrays and their ONNX initializers."""
    return [(f"{what}: {elements:,.0f} float32 weights", 2 * 4 * elements)]


def _mlp_elements(sizes) -> int:
    return sum(a * b + b for a, b in zip(sizes, sizes[1:]))


@register("mlp_l4", "puma", "MLP 1024-1024-2048-1024-10 (ReLU), ONNX round trip", params=SEED)
def mlp_l4(seed: int = 0) -> OnnxWorkload:
    return mlp_model([1024, 1024, 2048, 1024, 10], "mlp_l4", seed)


@register("mlp_l5", "puma", "MLP 1024-2048-3072-3072-1024-10 (ReLU), ONNX round trip", params=SEED)
def mlp_l5(seed: int = 0) -> OnnxWorkload:
    return mlp_model([1024, 2048, 3072, 3072, 1024, 10], "mlp_l5", seed)


@register("mlp", "puma", "MLP with user-given layer sizes (ReLU), ONNX round trip",
          params={"sizes": Param([256, 256, 10], "layer widths, input first", 1, WIDTH_MAX, length=(2, 64)), **SEED,
                  "activation": Param("Relu", "activation between layers", choices=("Relu", "Sigmoid", "Tanh"))},
          estimate=lambda sizes, **_: weight_bytes(f"workload.sizes={list(sizes)}", _mlp_elements(list(sizes))))
def mlp(sizes=(256, 256, 10), seed: int = 0, activation: str = "Relu") -> OnnxWorkload:
    return mlp_model([int(s) for s in sizes], "mlp", seed, activation)


@register("lstm_lm", "puma", "LSTM language model: 2 LSTM layers + vocabulary FC, ONNX round trip",
          params={"hidden": Param(1024, "LSTM hidden units per layer", 1, WIDTH_MAX),
                  "embed": Param(1024, "embedding width (the first LSTM's input)", 1, WIDTH_MAX),
                  "vocab": Param(2048, "vocabulary size (outputs of the FC)", 1, WIDTH_MAX),
                  "seq_len": Param(8, "tokens per sequence", 1, 65536), **SEED},
          estimate=lambda hidden, embed, vocab, **_: weight_bytes(
              f"workload.hidden={hidden}, embed={embed}, vocab={vocab}: LSTM and FC",
              4 * hidden * (embed + hidden) + 4 * hidden * 2 * hidden + 16 * hidden + (hidden + 1) * vocab))
def lstm_lm(hidden: int = 1024, embed: int = 1024, vocab: int = 2048, seq_len: int = 8, seed: int = 0) -> OnnxWorkload:
    from onnx import TensorProto, helper

    rng = np.random.default_rng(seed)
    nodes, inits = [], []
    current, width = "x", embed
    for k in (1, 2):
        w = _gaussian(rng, (1, 4 * hidden, width), width + hidden, 1.0)
        r = _gaussian(rng, (1, 4 * hidden, hidden), width + hidden, 1.0)
        b = (rng.standard_normal((1, 8 * hidden)) * 0.05).astype(np.float32)
        inits += [_init(f"lstm{k}.W", w), _init(f"lstm{k}.R", r), _init(f"lstm{k}.B", b)]
        nodes.append(helper.make_node("LSTM", [current, f"lstm{k}.W", f"lstm{k}.R", f"lstm{k}.B"], [f"lstm{k}.Y"],
                                      name=f"lstm{k}", hidden_size=hidden))
        inits.append(_init(f"squeeze{k}.axes", np.array([1], dtype=np.int64)))
        nodes.append(helper.make_node("Squeeze", [f"lstm{k}.Y", f"squeeze{k}.axes"], [f"squeeze{k}.out"], name=f"squeeze{k}"))
        current, width = f"squeeze{k}.out", hidden
    inits += [_init("fc.W", _gaussian(rng, (hidden, vocab), hidden, 1.0)),
              _init("fc.b", (rng.standard_normal(vocab) * 0.1).astype(np.float32))]
    nodes.append(helper.make_node("MatMul", [current, "fc.W"], ["fc.mm"], name="fc"))
    nodes.append(helper.make_node("Add", ["fc.mm", "fc.b"], ["y"], name="fc_bias"))
    graph = helper.make_graph(nodes, "lstm_lm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [seq_len, 1, embed])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [seq_len, 1, vocab])], inits)
    return finish(graph, "lstm_lm")


def _conv(nodes, inits, rng, name, current, cin, cout, k, pad, gain=1.0, batchnorm=False):
    from onnx import helper

    inits += [_init(f"{name}.W", _gaussian(rng, (cout, cin, k, k), cin * k * k, gain)),
              _init(f"{name}.b", (rng.standard_normal(cout) * 0.05).astype(np.float32))]
    out = f"{name}.out"
    nodes.append(helper.make_node("Conv", [current, f"{name}.W", f"{name}.b"], [out], name=name, kernel_shape=[k, k],
                                  pads=[pad] * 4, strides=[1, 1]))
    if batchnorm:
        inits += [_init(f"{name}_bn.scale", (1.0 + 0.1 * rng.standard_normal(cout)).astype(np.float32)),
                  _init(f"{name}_bn.bias", (0.05 * rng.standard_normal(cout)).astype(np.float32)),
                  _init(f"{name}_bn.mean", (0.05 * rng.standard_normal(cout)).astype(np.float32)),
                  _init(f"{name}_bn.var", (1.0 + 0.1 * rng.random(cout)).astype(np.float32))]
        nodes.append(helper.make_node("BatchNormalization", [out, f"{name}_bn.scale", f"{name}_bn.bias", f"{name}_bn.mean",
                                                             f"{name}_bn.var"], [f"{name}_bn.out"], name=f"{name}_bn"))
        out = f"{name}_bn.out"
    nodes.append(helper.make_node("Relu", [out], [f"{name}_relu.out"], name=f"{name}_relu"))
    return f"{name}_relu.out"


def _pool(nodes, name, current):
    from onnx import helper

    nodes.append(helper.make_node("MaxPool", [current], [f"{name}.out"], name=name, kernel_shape=[2, 2], strides=[2, 2]))
    return f"{name}.out"


def _fc(nodes, inits, rng, name, current, fan_in, fan_out, relu=True):
    from onnx import helper

    inits += [_init(f"{name}.W", _gaussian(rng, (fan_out, fan_in), fan_in, 1.0)),
              _init(f"{name}.b", (rng.standard_normal(fan_out) * 0.05).astype(np.float32))]
    nodes.append(helper.make_node("Gemm", [current, f"{name}.W", f"{name}.b"], [f"{name}.out"], name=name, transB=1))
    if not relu:
        return f"{name}.out"
    nodes.append(helper.make_node("Relu", [f"{name}.out"], [f"{name}_relu.out"], name=f"{name}_relu"))
    return f"{name}_relu.out"


@register("lenet", "puma", "LeNet-5 style CNN on 1x28x28, ONNX round trip", params=SEED)
def lenet(seed: int = 0) -> OnnxWorkload:
    from onnx import TensorProto, helper

    rng = np.random.default_rng(seed)
    nodes, inits = [], []
    cur = _conv(nodes, inits, rng, "conv1", "x", 1, 6, 5, 2)
    cur = _pool(nodes, "pool1", cur)
    cur = _conv(nodes, inits, rng, "conv2", cur, 6, 16, 5, 0)
    cur = _pool(nodes, "pool2", cur)
    nodes.append(helper.make_node("Flatten", [cur], ["flat.out"], name="flatten"))
    cur = _fc(nodes, inits, rng, "fc1", "flat.out", 400, 120)
    cur = _fc(nodes, inits, rng, "fc2", cur, 120, 84)
    cur = _fc(nodes, inits, rng, "fc3", cur, 84, 10, relu=False)
    nodes.append(helper.make_node("Identity", [cur], ["y"], name="output"))
    graph = helper.make_graph(nodes, "lenet", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 28, 28])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    return finish(graph, "lenet")


@register("vgg", "puma", "VGG-style CNN with batch norm on 3x32x32, ONNX round trip",
          params={"width": Param(32, "channels of the first stage (then 2x, 4x)", 1, 8192), **SEED},
          estimate=lambda width, **_: weight_bytes(
              f"workload.width={width}: conv and FC", 9 * (3 * width + width**2 + 2 * width**2 + 4 * width**2 + 8 * width**2)
              + 64 * width * 256))
def vgg(width: int = 32, seed: int = 0) -> OnnxWorkload:
    from onnx import TensorProto, helper

    rng = np.random.default_rng(seed)
    nodes, inits = [], []
    w1, w2, w3 = width, 2 * width, 4 * width
    cur = _conv(nodes, inits, rng, "conv1", "x", 3, w1, 3, 1, batchnorm=True)
    cur = _conv(nodes, inits, rng, "conv2", cur, w1, w1, 3, 1, batchnorm=True)
    cur = _pool(nodes, "pool1", cur)
    cur = _conv(nodes, inits, rng, "conv3", cur, w1, w2, 3, 1, batchnorm=True)
    cur = _conv(nodes, inits, rng, "conv4", cur, w2, w2, 3, 1, batchnorm=True)
    cur = _pool(nodes, "pool2", cur)
    cur = _conv(nodes, inits, rng, "conv5", cur, w2, w3, 3, 1, batchnorm=True)
    cur = _pool(nodes, "pool3", cur)
    nodes.append(helper.make_node("Flatten", [cur], ["flat.out"], name="flatten"))
    cur = _fc(nodes, inits, rng, "fc1", "flat.out", w3 * 16, 256)
    cur = _fc(nodes, inits, rng, "fc2", cur, 256, 10, relu=False)
    nodes.append(helper.make_node("Identity", [cur], ["y"], name="output"))
    graph = helper.make_graph(nodes, "vgg", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    return finish(graph, "vgg")
