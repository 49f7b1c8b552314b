"""ONNX models on the promise-soc target: a model with trained weights and a labelled dataset becomes an
ApproxHPVM :class:`~solvermap.ir.workloads.approxhpvm_tensor_ops.TensorNetwork`.

The network's layers are those of the seed's HPVM lowering (000:L1187): a conv layer is conv + bias add
(+ 2 × 2 max pooling) (+ activation), an FC layer GEMM + bias add (+ activation). An ONNX model maps when
its operators form that chain:

* ``Conv`` 3 × 3, pads 1, stride 1, no groups or dilation (the executor's im2col, L1266), its bias input or
  a following constant ``Add``; ``Gemm`` (transB either way, alpha = beta = 1) or ``MatMul`` with a
  constant weight, and a following constant ``Add`` as bias (missing biases are zero);
* ``Relu``, ``Tanh``, ``Sigmoid``; ``MaxPool`` 2 × 2 stride 2 (pooling then activation equals activation
  then pooling for these monotone activations, so ONNX's conv → ReLU → pool order is kept exactly);
* ``Flatten``/``Reshape`` before an FC layer, ``Identity``, ``Dropout``.

Any other operator (or attribute) is one line naming the operator, the node and the family. Weights are
converted exactly: conv W[K, C, 3, 3] to the patch matrix W.reshape(K, 9C)ᵀ, Gemm/MatMul to W[in, out].

Data (``--set workload.dataset=FILE.npz``): an ``.npz`` with arrays ``x`` (samples first, each of the
model's input shape) and ``y`` (integer class labels), read with ``allow_pickle=False``; split 50/50
stratified with seed 0 like the built-in networks. Default ``digits``: sklearn's 8 × 8 digits, as images
(1, 8, 8) or flat (64) to match the model's input. A shape-only model maps for the fuse decision (costs need
shapes only); the accuracy decisions (budget, knobs, swing) then stop with a one-line refusal unless the
user asks for synthetic weights (``workload.weights=random``), and the record says the weights are
synthetic.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from solvermap.errors import InputError
from solvermap.ir.onnx_import import OnnxModel
from solvermap.ir.workloads.approxhpvm_tensor_ops import Dataset, LayerSpec, TensorNetwork, build_network, digits

FAMILY = "approxhpvm"
ACTIVATIONS = {"Relu": "relu", "Tanh": "tanh", "Sigmoid": "sigmoid"}
SUPPORTED = {"Conv", "Gemm", "MatMul", "Add", "MaxPool", "Flatten", "Reshape", "Identity", "Dropout"} | set(ACTIVATIONS)
_CACHE: dict[int, tuple[Any, str, TensorNetwork]] = {}


def is_model(ir: Any) -> bool:
    return isinstance(ir, OnnxModel)


def network(model: OnnxModel, dataset: str = "digits") -> TensorNetwork:
    """The TensorNetwork of a model (cached per model and dataset)."""
    cached = _CACHE.get(id(model))
    if cached is not None and cached[0] is model and cached[1] == dataset:
        return cached[2]
    net = _convert(model, dataset)
    _CACHE[id(model)] = (model, dataset, net)
    return net


def _fail(model: OnnxModel, node: str, problem: str) -> None:
    raise InputError(model.source or model.name, f"node '{node}'", f"{problem} (family {FAMILY}, target promise-soc)")


def _layers(model: OnnxModel) -> tuple[list[LayerSpec], dict[str, np.ndarray | None], tuple[int, ...]]:
    """Walk the chain of nodes into HPVM layers and their parameters (patch matrices, biases)."""
    inputs = [n for n in model.graph.nodes() if n.kind == "io" and n.op == "input"]
    if len(inputs) != 1:
        raise InputError(model.source, "inputs", f"promise-soc networks have one input, found {len(inputs)}")
    in_shape = tuple(inputs[0].shape or ())[1:]
    layers: list[LayerSpec] = []
    params: dict[str, np.ndarray | None] = {}
    current: dict[str, Any] | None = None  # the open layer

    def close() -> None:
        nonlocal current
        if current is not None:
            layers.append(LayerSpec(current["name"], current["kind"], current["width"], current["act"], current["pool"]))
            current = None

    for node in model.op_nodes():
        op, name, a = node.op, node.name, node.attrs.get("onnx_attrs", {})
        ins = [t for t in node.attrs["inputs"] if t]
        consts = [t for t in ins if model.is_constant(t)]
        if op not in SUPPORTED:
            _fail(model, name, f"operator '{op}' has no ApproxHPVM tensor op (supported: {', '.join(sorted(SUPPORTED))})")
        if op in ("Identity", "Dropout", "Flatten", "Reshape"):
            continue
        if op in ("Conv", "Gemm", "MatMul"):
            close()
            if not consts or consts[0] != ins[1]:
                _fail(model, name, f"operator '{op}' without a constant weight has no ApproxHPVM rule")
            label = f"layer{len(layers) + 1}"
            w = model.value(ins[1])
            if op == "Conv":
                shape = model.shapes[ins[1]]
                if (list(shape[2:]) != [3, 3] or int(a.get("group", 1)) != 1 or list(a.get("pads", [0] * 4)) != [1] * 4
                        or any(int(s) != 1 for s in a.get("strides", [1, 1])) or any(int(d) != 1 for d in a.get("dilations", [1, 1]))):
                    _fail(model, name, "operator 'Conv' runs on promise-soc as 3x3, pads 1, stride 1, no groups or dilation only")
                width = int(shape[0])
                params[f"{label}.W"] = None if w is None else np.asarray(w, dtype=np.float64).reshape(width, -1).T.copy()
                current = {"name": label, "kind": "conv", "width": width, "act": None, "pool": False}
            else:
                trans_b = int(a.get("transB", 0)) if op == "Gemm" else 0
                if op == "Gemm" and (int(a.get("transA", 0)) or float(a.get("alpha", 1.0)) != 1.0 or float(a.get("beta", 1.0)) != 1.0):
                    _fail(model, name, "operator 'Gemm' with transA, alpha or beta has no ApproxHPVM rule")
                shape = model.shapes[ins[1]]
                width = int(shape[0] if trans_b else shape[1])
                params[f"{label}.W"] = None if w is None else (np.asarray(w, dtype=np.float64).T if trans_b else np.asarray(w, dtype=np.float64)).copy()
                current = {"name": label, "kind": "fc", "width": width, "act": None, "pool": False}
            bias = model.value(ins[2]) if len(ins) > 2 else np.zeros(width)
            params[f"{label}.b"] = None if bias is None and len(ins) > 2 else np.asarray(bias if bias is not None else np.zeros(width), dtype=np.float64).reshape(-1)
            continue
        if current is None:
            _fail(model, name, f"operator '{op}' before the first conv or FC layer has no ApproxHPVM rule")
        if op == "Add":
            if len(consts) != 1 or current["act"] or current["pool"]:
                _fail(model, name, "operator 'Add' other than a layer's bias has no ApproxHPVM rule")
            value = model.value(consts[0])
            if value is not None and np.asarray(value).size != current["width"]:
                _fail(model, name, "operator 'Add' with a constant that is not a per-output bias has no ApproxHPVM rule")
            params[f"{current['name']}.b"] = None if value is None else np.asarray(value, dtype=np.float64).reshape(-1)
        elif op in ACTIVATIONS:
            if current["act"]:
                _fail(model, name, f"operator '{op}' after another activation has no ApproxHPVM rule")
            current["act"] = ACTIVATIONS[op]
        elif op == "MaxPool":
            if current["kind"] != "conv" or current["pool"] or list(a.get("kernel_shape", [])) != [2, 2] \
                    or list(a.get("strides", [1, 1])) != [2, 2] or any(int(p) for p in a.get("pads", [0, 0, 0, 0])):
                _fail(model, name, "operator 'MaxPool' runs on promise-soc as 2x2, stride 2, after a conv only")
            current["pool"] = True
    close()
    if not layers:
        raise InputError(model.source, "model", f"has no conv or FC layer (family {FAMILY})")
    return layers, params, in_shape


def load_dataset(dataset: str, in_shape: tuple[int, ...], source: str) -> Dataset:
    """The labelled data of the module docstring, checked against the model's input shape."""
    if dataset == "digits":
        if in_shape == (64,):
            return digits(image=False)
        if in_shape == (1, 8, 8):
            return digits(image=True)
        raise InputError(source, "workload.dataset", f"the model's input {list(in_shape)} is not sklearn's 8x8 digits "
                         "((1, 8, 8) or (64)); name an .npz with x and y")
    path = Path(dataset)
    if not path.is_file():
        raise InputError(dataset, "workload.dataset", "no such .npz file")
    try:
        with np.load(path, allow_pickle=False) as data:
            x, y = np.asarray(data["x"], dtype=np.float64), np.asarray(data["y"])
    except KeyError:
        raise InputError(dataset, "workload.dataset", "the .npz needs arrays x and y") from None
    except Exception as exc:  # noqa: BLE001 - not a zip, pickled objects, truncated
        raise InputError(dataset, "workload.dataset", f"not a readable .npz ({' '.join(str(exc).split())[:200]})") from None
    if x.ndim < 2 or tuple(x.shape[1:]) != tuple(in_shape):
        raise InputError(dataset, "x", f"samples of shape {list(x.shape[1:])} do not match the model's input {list(in_shape)}")
    if y.shape != (len(x),) or not np.issubdtype(y.dtype, np.integer) or len(x) < 4:
        raise InputError(dataset, "y", "expected one integer label per sample (at least 4 samples)")
    from sklearn.model_selection import train_test_split

    counts = np.bincount(y - y.min())
    stratify = y if counts[counts > 0].min() >= 2 else None
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.5, random_state=0, stratify=stratify)
    return Dataset(x_train, y_train.astype(np.int64), x_test, y_test.astype(np.int64))


def _convert(model: OnnxModel, dataset: str) -> TensorNetwork:
    layers, params, in_shape = _layers(model)
    data = load_dataset(dataset, in_shape, model.source)
    net = build_network(model.name, layers, data, seed=0, input_shape=in_shape, description=f"ONNX model {model.source}")
    missing = [key for key, value in params.items() if value is None]
    for key, value in params.items():
        if value is not None:
            if net.params[key].shape != value.shape:
                raise InputError(model.source, key, f"parameter shape {list(value.shape)} does not match the layer's "
                                 f"{list(net.params[key].shape)} (family {FAMILY})")
            net.params[key] = value
    net.meta["weights"] = "missing" if missing else model.weights
    net.meta["dataset"] = dataset
    classes = int(data.y_test.max()) + 1
    if layers[-1].kind != "fc" or layers[-1].width < classes:
        raise InputError(model.source, "outputs", f"the last layer must be an FC layer with at least {classes} outputs, "
                         f"one per class of the dataset (family {FAMILY})")
    return net


def require_weights(net: TensorNetwork, step: str, source: str) -> None:
    """The accuracy decisions' refusal for a shape-only model."""
    if net.meta.get("weights") == "missing":
        raise InputError(source, "workload", f"the {step} decision measures accuracy and the model has no weight values "
                         f"(shape-only; family {FAMILY}); the fuse decision runs on shapes, and "
                         "--set workload.weights=random runs every decision on deterministic synthetic weights")
