"""Export a built-in ApproxHPVM network (trained on digits) as an ONNX model the way PyTorch writes it."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def export(name: str, path: Path, *, weights: str = "random") -> Path:
    """Conv (3x3, pads 1, with bias) → Tanh → MaxPool per conv layer; Flatten; Gemm (transB=1) → Tanh per FC
    layer; ``weights="empty"``: initializers with dims and no data (shape only)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from solvermap.ir.workloads.approxhpvm_networks import trained_network

    net = trained_network(name)

    def init(array: np.ndarray, tensor: str):
        if weights == "empty":
            proto = TensorProto()
            proto.name, proto.data_type = tensor, TensorProto.FLOAT
            proto.dims.extend(array.shape)
            return proto
        return numpy_helper.from_array(array.astype(np.float32), tensor)

    nodes, inits, current, flat = [], [], "x", len(net.input_shape) == 1
    for layer in net.layers:
        ops = [op.op for op in net.layer_ops(layer)]
        w, b = net.params[f"{layer}.W"], net.params[f"{layer}.b"]
        if ops[0] == "conv":
            inits += [init(w.T.reshape(w.shape[1], -1, 3, 3), f"{layer}.weight"), init(b, f"{layer}.bias")]
            nodes.append(helper.make_node("Conv", [current, f"{layer}.weight", f"{layer}.bias"], [f"{layer}/conv"],
                                          name=f"/{layer}/Conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
        else:
            if not flat:
                nodes.append(helper.make_node("Flatten", [current], ["flat"], name="/Flatten"))
                current, flat = "flat", True
            inits += [init(w.T, f"{layer}.weight"), init(b, f"{layer}.bias")]
            nodes.append(helper.make_node("Gemm", [current, f"{layer}.weight", f"{layer}.bias"], [f"{layer}/conv"],
                                          name=f"/{layer}/Gemm", transB=1))
        current = f"{layer}/conv"
        for op in ops[2:]:
            if op == "pool":
                continue
            kind = {"tanh": "Tanh", "relu": "Relu", "sigmoid": "Sigmoid"}[op]
            nodes.append(helper.make_node(kind, [current], [f"{layer}/{op}"], name=f"/{layer}/{kind}"))
            current = f"{layer}/{op}"
        if "pool" in ops:
            nodes.append(helper.make_node("MaxPool", [current], [f"{layer}/pool"], name=f"/{layer}/MaxPool",
                                          kernel_shape=[2, 2], strides=[2, 2]))
            current = f"{layer}/pool"
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, *net.input_shape])],
                              [helper.make_tensor_value_info(current, TensorProto.FLOAT, [1, 10])], inits)
    model = helper.make_model(graph, producer_name="pytorch", opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, str(path))
    return Path(path)
