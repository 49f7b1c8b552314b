"""ONNX import: models built with onnx.helper; shapes and MAC counts checked against hand computation."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from solvermap.errors import InputError
from solvermap.ir.graph import NodeKind
from solvermap.ir.onnx_import import import_onnx


def init(name, shape, seed=0):
    return numpy_helper.from_array(np.random.default_rng(seed).standard_normal(shape).astype(np.float32), name)


def model(nodes, inputs, outputs, inits, name="m"):
    graph = helper.make_graph(nodes, name, inputs, outputs, inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(m)
    return m


def vinfo(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def lenet_like():
    """x[1,1,8,8] → Conv(4,3x3,pad1) → BN → Relu → MaxPool2 → Flatten → Gemm(64→10) → Sigmoid."""
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "s", "bb", "mean", "var"], ["bn"], name="bn1"),
        helper.make_node("Relu", ["bn"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p1"], ["f"], name="flat"),
        helper.make_node("Gemm", ["f", "w2", "b2"], ["g"], name="fc", transB=1),
        helper.make_node("Sigmoid", ["g"], ["y"], name="sig"),
    ]
    inits = [init("w1", (4, 1, 3, 3)), init("b1", (4,)), init("s", (4,)), init("bb", (4,)), init("mean", (4,)),
             init("var", (4,)), init("w2", (10, 64)), init("b2", (10,))]
    return model(nodes, [vinfo("x", [1, 1, 8, 8])], [vinfo("y", [1, 10])], inits, "lenet_like")


def test_conv_shapes_and_macs_match_hand_computation():
    g = import_onnx(lenet_like())
    conv = g.node("conv1")
    assert conv.shape == (1, 4, 8, 8)
    assert conv.resource("macs") == 4 * 8 * 8 * (1 * 3 * 3)  # C_out·H·W·(C_in·kH·kW) = 2304
    assert conv.resource("flops") == 2 * 2304 + 4 * 8 * 8
    assert conv.resource("weights") == 4 * 9 + 4
    assert conv.attrs["weight_shapes"] == {"w1": [4, 1, 3, 3], "b1": [4]}


def test_gemm_pool_flatten_and_activations():
    g = import_onnx(lenet_like())
    assert g.node("pool1").shape == (1, 4, 4, 4) and g.node("pool1").resource("flops") == 64 * 4
    assert g.node("flat").shape == (1, 64) and g.node("flat").resource("flops") == 0
    assert g.node("fc").resource("macs") == 10 * 64
    assert g.node("sig").resource("flops") == 10
    assert g.node("bn1").resource("flops") == 2 * 256


def test_graph_structure_has_io_nodes_and_tensor_edges():
    g = import_onnx(lenet_like())
    assert g.node("input:x").kind == NodeKind.IO and g.node("output:y").kind == NodeKind.IO
    edge = g.edge("conv1", "bn1", 0)
    assert edge.src_port == "c1" and edge.width_bits == 256 * 32 and edge.shape == (1, 4, 8, 8)
    assert g.topological_order()[0] == "input:x"


def test_matmul_and_add_broadcast_one_value_to_two_consumers():
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
             helper.make_node("Tanh", ["h"], ["t"], name="tanh"),
             helper.make_node("Add", ["h", "t"], ["y"], name="add")]
    m = model(nodes, [vinfo("x", [2, 3, 5])], [vinfo("y", [2, 3, 7])], [init("w", (5, 7))])
    g = import_onnx(m)
    assert g.node("mm").resource("macs") == 2 * 3 * 7 * 5
    assert len(g.broadcast_groups()[("mm", "h")]) == 2


def test_lstm_and_gru_macs_per_gate():
    seq, batch, inp, hid = 4, 1, 6, 8
    lstm = helper.make_node("LSTM", ["x", "W", "R"], ["Y"], name="lstm", hidden_size=hid)
    m = model([lstm], [vinfo("x", [seq, batch, inp])], [vinfo("Y", [seq, 1, batch, hid])],
              [init("W", (1, 4 * hid, inp)), init("R", (1, 4 * hid, hid))])
    assert import_onnx(m).node("lstm").resource("macs") == seq * batch * 4 * hid * (inp + hid)
    gru = helper.make_node("GRU", ["x", "W", "R"], ["Y"], name="gru", hidden_size=hid)
    m = model([gru], [vinfo("x", [seq, batch, inp])], [vinfo("Y", [seq, 1, batch, hid])],
              [init("W", (1, 3 * hid, inp)), init("R", (1, 3 * hid, hid))])
    assert import_onnx(m).node("gru").resource("macs") == seq * batch * 3 * hid * (inp + hid)


def test_average_pool_and_reshape():
    shape = numpy_helper.from_array(np.array([1, 16], dtype=np.int64), "shape")
    nodes = [helper.make_node("AveragePool", ["x"], ["p"], name="avg", kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Reshape", ["p", "shape"], ["y"], name="reshape")]
    m = model(nodes, [vinfo("x", [1, 4, 4, 4])], [vinfo("y", [1, 16])], [shape])
    g = import_onnx(m)
    assert g.node("avg").shape == (1, 4, 2, 2) and g.node("avg").resource("flops") == 16 * 4
    assert g.node("reshape").shape == (1, 16)


def test_unsupported_operator_names_operator_and_node():
    nodes = [helper.make_node("Einsum", ["x", "x"], ["y"], name="weird", equation="ij,ij->ij")]
    m = model(nodes, [vinfo("x", [2, 2])], [vinfo("y", [2, 2])], [])
    with pytest.raises(InputError, match=r"node 'weird'.*unsupported ONNX operator 'Einsum'"):
        import_onnx(m)


def test_file_round_trip_and_missing_file(tmp_path):
    path = tmp_path / "lenet.onnx"
    onnx.save(lenet_like(), path)
    assert import_onnx(path).total("macs") == 2304 + 640
    with pytest.raises(InputError, match="no such file"):
        import_onnx(tmp_path / "absent.onnx")
