"""ONNX import of models as exporters write them: folding, shapes only, external data, refusals."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from solvermap.errors import InputError
from solvermap.hardware.puma.network import forward_float
from solvermap.ir.onnx_import import canonical, import_model
from solvermap.ir.onnx_zoo import mobilenet_v2, resnet18
from solvermap.ir.workloads import build
from solvermap.mappers.puma.frontend import lower

from .models import MODELS, attention, keras_block, pytorch_block, random_input, write


def _ops(model) -> set[str]:
    return {n.op for n in model.graph.nodes() if n.kind == "op"}


def test_constant_fed_clip_and_shape_arithmetic_fold_away():
    proto = pytorch_block()
    assert {"Constant", "Shape", "Gather", "Unsqueeze", "Concat"} <= {n.op_type for n in proto.graph.node}
    model = import_model(proto)
    assert _ops(model) == {"Conv", "BatchNormalization", "Clip", "Add", "Relu", "MaxPool", "Reshape", "Gemm"}
    clip = next(n for n in model.op_nodes() if n.op == "Clip")
    bounds = [model.value(t) for t in clip.attrs["inputs"][1:]]
    assert [float(v) for v in bounds] == [0.0, 6.0]
    reshape = next(n for n in model.op_nodes() if n.op == "Reshape")
    assert model.value(reshape.attrs["inputs"][1]).tolist() == [1, -1]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_lowered_model_computes_what_the_onnx_reference_evaluator_computes(name):
    proto = MODELS[name]()
    x = random_input(proto)
    expected = ReferenceEvaluator(proto).run(None, {"input": x})[0]
    net = lower(import_model(proto))
    ours = forward_float(net, x if name == "attention" else x[0][None] if x.ndim == 2 else x)
    assert np.allclose(ours.reshape(expected.shape), expected, atol=1e-4)


def test_depthwise_residual_mobilenet_matches_the_reference_evaluator():
    proto = mobilenet_v2(image=32, width_mult=0.25, classes=10, seed=1)
    x = random_input(proto, 1)
    expected = ReferenceEvaluator(proto).run(None, {"input": x})[0]
    ours = forward_float(lower(import_model(proto)), x)
    assert np.allclose(ours.reshape(expected.shape), expected, atol=1e-4)


def test_silu_written_as_mul_of_sigmoid_becomes_one_silu_node():
    nodes = [helper.make_node("Sigmoid", ["x"], ["s"], name="sig"), helper.make_node("Mul", ["x", "s"], ["y"], name="mul")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])])
    model = import_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))
    assert _ops(model) == {"Silu"}


def test_operator_names_match_case_insensitively():
    assert canonical("conv") == "Conv" and canonical("GLOBALAVERAGEPOOL") == "GlobalAveragePool"
    assert canonical("NonMaxSuppression") is None


def test_external_data_beside_the_model_is_read(tmp_path):
    model = build(str(write(tmp_path, "pytorch_block", external="present")), "puma").ir
    direct = import_model(pytorch_block())
    assert model.weights == "file"
    assert all(np.array_equal(model.value(t), direct.value(t)) for t in direct.constants)


def test_missing_external_data_imports_the_model_as_shapes(tmp_path):
    model = build(str(write(tmp_path, "pytorch_block", external="missing")), "puma").ir
    assert model.weights == "missing" and model.missing
    assert any("not found next to the model" in note for note in model.notes)
    assert model.graph.total("macs") == import_model(pytorch_block()).graph.total("macs")


def test_empty_initializers_import_as_shapes_with_the_same_costs():
    shapes, full = import_model(pytorch_block(weights="empty")), import_model(pytorch_block())
    assert shapes.weights == "missing"
    assert shapes.graph.total("macs") == full.graph.total("macs")
    assert shapes.graph.total("weights") == full.graph.total("weights")


def test_synthetic_weights_are_deterministic_and_say_so():
    shapes = import_model(pytorch_block(weights="empty"))
    a, b = shapes.with_synthetic_weights(3), shapes.with_synthetic_weights(3)
    assert a.weights == "synthetic" and not a.missing
    assert all(np.array_equal(a.value(t), b.value(t)) for t in shapes.missing)
    conv = a.value("/conv1.weight")
    assert conv.shape == (8, 4, 3, 3) and 0.05 < conv.std() < 0.5


def test_external_data_location_outside_the_model_directory_is_refused(tmp_path):
    path = write(tmp_path, "keras_block", external="present")
    proto = onnx.load(str(path), load_external_data=False)
    for init in proto.graph.initializer:
        for entry in init.external_data:
            if entry.key == "location":
                entry.value = "../../etc/passwd"
    onnx.save(proto, str(path))
    with pytest.raises(InputError, match="outside the model's directory"):
        import_model(path)


def test_a_cyclic_graph_is_refused_naming_the_cycle():
    nodes = [helper.make_node("Relu", ["b"], ["a"], name="first"), helper.make_node("Relu", ["a"], ["b"], name="second")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("b", TensorProto.FLOAT, [1, 4])])
    with pytest.raises(InputError, match="cyclic graph: .*first.*second|cyclic graph: .*second.*first"):
        import_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))


@pytest.mark.parametrize("opset", [7, 10, 22])
def test_an_opset_outside_11_to_21_is_refused(opset):
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    with pytest.raises(InputError, match=f"opset {opset} is not supported"):
        import_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]))


def test_a_huge_declared_input_is_refused_before_anything_is_allocated():
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 10**6, 10**6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 10**6, 10**6])])
    with pytest.raises(InputError) as err:
        import_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), memory_limit=1 << 30)
    assert err.value.field == "workload.memory_limit_mb" and "'x'" in str(err.value)


def test_an_unsupported_operator_names_operator_and_node():
    graph = helper.make_graph([helper.make_node("NonZero", ["x"], ["y"], name="the_node")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.INT64, None)])
    with pytest.raises(InputError) as err:
        import_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    assert "NonZero" in str(err.value) and "the_node" in str(err.value) and "\n" not in str(err.value)


def test_resnet_residual_adds_quantize_whatever_the_weight_scale():
    """The seed optimiser stopped at a residual Add when a conv before it had to be scaled (std 0.05 did)."""
    from solvermap.mappers.puma import application_optimizer as ao

    proto = resnet18(image=32, width=8, classes=10, seed=2)
    for init in proto.graph.initializer:
        if init.name.endswith(".weight") and len(init.dims) == 4:
            value = numpy_helper.to_array(init) * 4.0  # large weights (|w| < 8): the stages overflow 4.12 fixed point
            init.CopyFrom(numpy_helper.from_array(value.astype(np.float32), init.name))
    net = ao.fold_batchnorm(lower(import_model(proto)))
    x = np.random.default_rng(0).random((2, 3, 32, 32))
    quant = ao.quantize(net, 8.0, x)
    assert any("scaled by 2^-" in note for note in quant.notes)
    out = forward_float(quant, x)
    assert np.abs(out).max() < 8.0
    assert np.allclose(out / quant.output_scale, forward_float(net, x), rtol=1e-6, atol=1e-6)


def test_keras_and_pytorch_styles_of_one_architecture_cost_the_same():
    torch_style, keras_style = import_model(resnet18(image=32, width=8)), import_model(resnet18(image=32, width=8, style="keras"))
    assert torch_style.graph.total("macs") == keras_style.graph.total("macs")
    assert "Transpose" in _ops(keras_style) and "MatMul" in _ops(keras_style) and "Gemm" in _ops(torch_style)


def test_attention_block_has_products_of_two_activations():
    model = import_model(attention())
    products = [n for n in model.op_nodes() if n.op == "MatMul" and not any(model.is_constant(t) for t in n.attrs["inputs"])]
    assert len(products) == 2  # Q·Kᵀ and softmax·V


def test_keras_block_depthwise_conv_keeps_its_groups():
    conv = next(n for n in import_model(keras_block()).op_nodes() if n.op == "Conv")
    assert conv.attrs["onnx_attrs"]["group"] == 4 and conv.resource("macs") == 4 * 8 * 8 * 9
