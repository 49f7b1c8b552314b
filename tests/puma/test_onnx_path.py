"""ONNX path: workloads round-trip through ONNX files, the converter matches ONNX's reference evaluator."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from solvermap.errors import InputError
from solvermap.hardware.puma.network import forward_float
from solvermap.ir.onnx_import import import_onnx
from solvermap.ir.workloads import build
from solvermap.mappers.puma.frontend import lower

from .conftest import SMALL


def onnx_input(workload, rng):
    dims = [d.dim_value for d in workload.model.graph.input[0].type.tensor_type.shape.dim]
    return rng.random(dims).astype(np.float32)


@pytest.mark.parametrize("name", sorted(SMALL))
def test_lowered_network_matches_onnx_reference_evaluator(name):
    from onnx.reference import ReferenceEvaluator

    workload = build(name, "puma", SMALL[name]).ir
    net = lower(workload)
    x = onnx_input(workload, np.random.default_rng(3))
    expected = ReferenceEvaluator(workload.model).run(None, {"x": x})[0]
    ours = forward_float(net, x.transpose(1, 0, 2) if name == "lstm_lm" else x)
    if name == "lstm_lm":
        ours = ours.reshape(ours.shape[0], ours.shape[1], -1).transpose(1, 0, 2)
    assert np.allclose(ours.reshape(expected.shape), expected, atol=1e-5)


@pytest.mark.parametrize("name", ["lenet", "lstm_lm", "mlp"])
def test_workload_exported_to_onnx_file_reimports_to_the_same_graph(name, tmp_path):
    workload = build(name, "puma", SMALL[name]).ir
    path = workload.save(tmp_path / f"{name}.onnx")
    again = build(str(path), "puma").ir.graph
    assert again.summary()["nodes"] == workload.graph.summary()["nodes"]
    assert again.total("macs") == workload.graph.total("macs")
    a, b = lower(workload), lower(build(str(path), "puma").ir)  # weights read from the file
    assert [layer.kind for layer in a.layers] == [layer.kind for layer in b.layers]
    assert all(np.array_equal(x.weight, y.weight) for x, y in zip(a.mvm_layers(), b.mvm_layers()))


def _model_with(op: str, **attrs):
    node = helper.make_node(op, ["x"], ["y"], name="the_node", **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_operator_unknown_to_the_importer_is_a_one_line_error_naming_it_and_the_node():
    with pytest.raises(InputError) as err:
        import_onnx(_model_with("Hardmax"))
    message = str(err.value)
    assert "Hardmax" in message and "the_node" in message and "\n" not in message


def test_operator_the_puma_lowering_cannot_run_is_a_one_line_error_naming_it_the_node_and_the_family():
    from onnx import numpy_helper

    node = helper.make_node("Tile", ["x", "reps"], ["y"], name="the_node")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])],
                              [numpy_helper.from_array(np.array([1, 2], dtype=np.int64), "reps")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(InputError) as err:
        lower(import_onnx(model))
    message = str(err.value)
    assert "Tile" in message and "the_node" in message and "puma" in message and "\n" not in message


def test_cli_reports_an_unsupported_operator_in_one_line_with_exit_code_2(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    import onnx

    path = tmp_path / "bad.onnx"
    onnx.save(_model_with("Hardmax"), str(path))
    exe = Path(sys.executable).parent / "solvermap"
    result = subprocess.run([str(exe), "solve", "place", "--workload", str(path), "--target", "puma", "--out", str(tmp_path / "run"), "-q"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Hardmax" in lines[0] and "the_node" in lines[0]
