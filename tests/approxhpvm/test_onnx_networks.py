"""ONNX models with HPVM's benchmark ops (grouped and depthwise convolution, batch normalisation, mean pooling,
softmax) import as ApproxHPVM tensor networks that compute what ONNX's reference evaluator computes, cost on the
SoC model and map through the pipeline; anything else is a one-line error."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from solvermap.cli import main
from solvermap.errors import InputError
from solvermap.hardware.approxhpvm.soc_sim import all_fp32, schedule_cost, schedule_units
from solvermap.ir.workloads.approxhpvm_onnx import network_from_onnx

RNG = np.random.default_rng(0)


def _init(name, *shape):
    return numpy_helper.from_array((RNG.standard_normal(shape) * 0.3).astype(np.float32), name)


def _model(nodes, inits, in_shape, out_shape, name="m"):
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", *in_shape])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", *out_shape])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])


def mobilenet_block():
    """Conv 3×3 → BN → ReLU → depthwise 3×3 (stride 2) → BN → ReLU → Conv 1×1 → global mean pool → FC → softmax."""
    bn = lambda p, c: [numpy_helper.from_array(v.astype(np.float32), f"{p}.{k}") for k, v in  # noqa: E731
                       (("g", RNG.random(c) + 0.5), ("b", RNG.standard_normal(c) * 0.1),
                        ("m", RNG.standard_normal(c) * 0.1), ("v", RNG.random(c) + 0.5))]
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node("BatchNormalization", ["c1", "bn1.g", "bn1.b", "bn1.m", "bn1.v"], ["n1"], name="bn1"),
        helper.make_node("Relu", ["n1"], ["r1"]),
        helper.make_node("Conv", ["r1", "dw"], ["c2"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2],
                         group=8, name="depthwise"),
        helper.make_node("BatchNormalization", ["c2", "bn2.g", "bn2.b", "bn2.m", "bn2.v"], ["n2"]),
        helper.make_node("Relu", ["n2"], ["r2"]),
        helper.make_node("Conv", ["r2", "pw", "pw.b"], ["c3"], kernel_shape=[1, 1], name="pointwise"),
        helper.make_node("GlobalAveragePool", ["c3"], ["gap"]),
        helper.make_node("Flatten", ["gap"], ["f"]),
        helper.make_node("Gemm", ["f", "fc", "fc.b"], ["logits"], transB=1),
        helper.make_node("Softmax", ["logits"], ["y"], axis=1),
    ]
    inits = [_init("w1", 8, 3, 3, 3), *bn("bn1", 8), _init("dw", 8, 1, 3, 3), *bn("bn2", 8), _init("pw", 16, 8, 1, 1),
             _init("pw.b", 16), _init("fc", 10, 16), _init("fc.b", 10)]
    return _model(nodes, inits, (3, 8, 8), (10,), "mobilenet_block")


def test_imported_network_computes_what_onnx_computes():
    model = mobilenet_block()
    net = network_from_onnx(model)
    x = RNG.random((4, 3, 8, 8))
    expected = ReferenceEvaluator(model).run(None, {"x": x.astype(np.float32)})[0]
    assert np.allclose(net.forward(x), expected, atol=1e-5)


def test_hpvm_benchmark_ops_become_layers_of_tensor_ops():
    net = network_from_onnx(mobilenet_block())
    assert net.layers == ("conv1", "conv2", "conv3", "fc1", "softmax1")
    assert [op.op for op in net.layer_ops("conv2")] == ["conv", "batchnorm", "relu"]
    depthwise = net.layer_ops("conv2")[0]
    assert depthwise.window.groups == 8 and depthwise.window.stride == 2 and depthwise.dot_length == 9
    assert [op.op for op in net.layer_ops("conv3")] == ["conv", "add", "avgpool"]


def test_imported_network_costs_on_the_soc_model(spec):
    net = network_from_onnx(mobilenet_block())
    report = schedule_cost(net, spec, schedule_units(net, all_fp32(net), ()))
    assert report.total.time_s > 0 and set(report.layer_totals) == set(net.layers)


def lenet_28():
    """HPVM's LeNet (lenet_mnist_cudnn.cpp) as an exporter would write it, with small widths."""
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[5, 5], pads=[2, 2, 2, 2]),
        helper.make_node("Tanh", ["c1"], ["t1"]),
        helper.make_node("MaxPool", ["t1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], kernel_shape=[5, 5], pads=[2, 2, 2, 2]),
        helper.make_node("Tanh", ["c2"], ["t2"]),
        helper.make_node("MaxPool", ["t2"], ["p2"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p2"], ["f"]),
        helper.make_node("MatMul", ["f", "w3"], ["m3"]),
        helper.make_node("Add", ["m3", "b3"], ["a3"]),
        helper.make_node("Tanh", ["a3"], ["y"]),
    ]
    inits = [_init("w1", 4, 1, 5, 5), _init("b1", 4), _init("w2", 8, 4, 5, 5), _init("b2", 8), _init("w3", 392, 10),
             _init("b3", 10)]
    return _model(nodes, inits, (1, 28, 28), (10,), "lenet28")


def test_an_onnx_lenet_maps_through_the_pipeline(monkeypatch, capsys, tmp_path):
    import onnx

    path = tmp_path / "lenet28.onnx"
    onnx.save(lenet_28(), str(path))
    monkeypatch.setattr(sys, "argv", ["solvermap", "solve", "fuse", "--workload", str(path), "--target", "promise-soc",
                                      "--time-limit", "10", "--out", str(tmp_path / "run"), "-q"])
    with pytest.raises(SystemExit) as exit_info:
        main()
        raise SystemExit(0)
    assert (exit_info.value.code or 0) == 0, capsys.readouterr().err


def test_a_residual_add_is_a_one_line_error():
    model = _model([helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
                    helper.make_node("Add", ["c", "x"], ["y"], name="residual")], [_init("w", 1, 1, 3, 3)],
                   (1, 4, 4), (1, 4, 4))
    with pytest.raises(InputError, match="node 'residual'.*only activation input") as err:
        network_from_onnx(model, name="res")
    assert "\n" not in str(err.value)


def test_an_unsupported_operator_is_named_with_its_node():
    model = _model([helper.make_node("LRN", ["x"], ["y"], size=3, name="lrn1")], [], (1, 4, 4), (1, 4, 4))
    with pytest.raises(InputError, match="node 'lrn1'.*unsupported ONNX operator 'LRN'"):
        network_from_onnx(model, name="lrn")


def test_garbage_bytes_are_a_one_line_error(tmp_path):
    path = tmp_path / "bad.onnx"
    path.write_bytes(b"\x00\xffnot a model\x13")
    with pytest.raises(InputError, match="not a readable ONNX model") as err:
        network_from_onnx(path)
    assert "\n" not in str(err.value)
