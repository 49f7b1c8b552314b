"""Constant folding of ONNX nodes as exporters emit them: shape arithmetic and ``Constant`` feeds.

PyTorch exports compute a ``Reshape`` target from ``Shape → Gather → Unsqueeze → Concat``, feed ``Clip``
its bounds through ``Constant`` nodes, and build masks with ``ConstantOfShape``/``Range``/``Where``;
tf2onnx transposes weights through ``Transpose`` nodes on initializers. Every such node whose inputs are
all known is evaluated here with NumPy, so the importer sees only the tensor operations of the model.

:func:`evaluate` computes one node's outputs from its input values, or returns None when the node is not
foldable (an operator outside :data:`FOLDABLE`, or an output above :data:`FOLD_LIMIT` elements).
``Shape``/``Size`` are folded from static shapes by the importer, not here. The semantics follow the
ONNX operator specification for opsets 11–21, including the attribute forms of older opsets (``axes`` of
``Squeeze``/``Unsqueeze`` before 13 and of the reductions before 18).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

FOLD_LIMIT = 1 << 26  # elements of a folded output (a 256 MB float32 weight transpose at most)

ONNX_TO_NUMPY = {1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32, 7: np.int64,
                 9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64}


def _axes(attrs: Mapping[str, Any], inputs: Sequence[np.ndarray | None], index: int) -> list[int] | None:
    """``axes`` from the attribute (older opsets) or the input at ``index`` (newer ones)."""
    if "axes" in attrs:
        return [int(a) for a in attrs["axes"]]
    if len(inputs) > index and inputs[index] is not None and inputs[index].size:
        return [int(a) for a in np.asarray(inputs[index]).reshape(-1)]
    return None


def _unsqueeze(attrs, x):
    axes = _axes(attrs, x, 1) or []
    out = np.asarray(x[0])
    rank = out.ndim + len(axes)
    for axis in sorted(a % rank for a in axes):
        out = np.expand_dims(out, axis)
    return out


def _squeeze(attrs, x):
    axes = _axes(attrs, x, 1)
    data = np.asarray(x[0])
    if axes is None:
        return np.squeeze(data)
    return np.squeeze(data, axis=tuple(a % data.ndim for a in axes))


def _slice(attrs, x):
    data = np.asarray(x[0])
    if "starts" in attrs:  # opset < 10 form (kept for completeness)
        starts, ends = attrs["starts"], attrs["ends"]
        axes = attrs.get("axes", list(range(len(starts))))
        steps = [1] * len(starts)
    else:
        starts, ends = np.asarray(x[1]).reshape(-1), np.asarray(x[2]).reshape(-1)
        axes = np.asarray(x[3]).reshape(-1) if len(x) > 3 and x[3] is not None else range(len(starts))
        steps = np.asarray(x[4]).reshape(-1) if len(x) > 4 and x[4] is not None else [1] * len(starts)
    index = [slice(None)] * data.ndim
    for start, end, axis, step in zip(starts, ends, axes, steps):
        index[int(axis) % data.ndim] = slice(int(start), int(end), int(step))
    return data[tuple(index)]


def _reshape(attrs, x):
    data, shape = np.asarray(x[0]), [int(d) for d in np.asarray(x[1]).reshape(-1)]
    if not attrs.get("allowzero", 0):
        shape = [data.shape[i] if d == 0 else d for i, d in enumerate(shape)]
    return data.reshape(shape)


def _reduce(fn: Callable[..., np.ndarray]):
    def run(attrs, x):
        axes = _axes(attrs, x, 1)
        data = np.asarray(x[0])
        if axes is None and attrs.get("noop_with_empty_axes", 0):
            return data
        return fn(data, axis=None if axes is None else tuple(axes), keepdims=bool(attrs.get("keepdims", 1)))
    return run


def _constant_of_shape(attrs, x):
    value = attrs.get("value")
    fill = np.zeros(1, dtype=np.float32) if value is None else np.asarray(value).reshape(-1)
    return np.full([int(d) for d in np.asarray(x[0]).reshape(-1)], fill[0], dtype=fill.dtype)


def _dequantize(attrs, x):
    data, scale = np.asarray(x[0]).astype(np.float32), np.asarray(x[1], dtype=np.float32)
    zero = np.asarray(x[2]).astype(np.float32) if len(x) > 2 and x[2] is not None else np.float32(0)
    if scale.ndim == 1 and data.ndim > 1:
        axis = int(attrs.get("axis", 1)) % data.ndim
        shape = [1] * data.ndim
        shape[axis] = -1
        scale = scale.reshape(shape)
        zero = zero.reshape(shape) if np.ndim(zero) == 1 else zero
    return ((data - zero) * scale).astype(np.float32)


def _cast(attrs, x):
    dtype = ONNX_TO_NUMPY.get(int(attrs.get("to", 1)))
    if dtype is None:
        raise ValueError("unsupported cast")
    return np.asarray(x[0]).astype(dtype)


def _gather(attrs, x):
    return np.take(np.asarray(x[0]), np.asarray(x[1]).astype(np.int64), axis=int(attrs.get("axis", 0)))


def _concat(attrs, x):
    parts = [np.asarray(v) for v in x if v is not None]
    return np.concatenate(parts, axis=int(attrs.get("axis", 0)))


def _range(attrs, x):
    start, limit, delta = (np.asarray(v).item() for v in x[:3])
    return np.arange(start, limit, delta, dtype=np.asarray(x[0]).dtype)


def _expand(attrs, x):
    data, shape = np.asarray(x[0]), tuple(int(d) for d in np.asarray(x[1]).reshape(-1))
    return data * np.ones(shape, dtype=data.dtype)


def _transpose(attrs, x):
    perm = attrs.get("perm")
    return np.transpose(np.asarray(x[0]), None if perm is None else [int(p) for p in perm])


def _flatten(attrs, x):
    data = np.asarray(x[0])
    axis = int(attrs.get("axis", 1)) % max(1, data.ndim) if data.ndim else 0
    return data.reshape(int(np.prod(data.shape[:axis])), -1)


def _tile(attrs, x):
    return np.tile(np.asarray(x[0]), [int(r) for r in np.asarray(x[1]).reshape(-1)])


def _binary(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]):
    def run(attrs, x):
        a, b = np.asarray(x[0]), np.asarray(x[1])
        return fn(a, b)
    return run


def _div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if np.issubdtype(a.dtype, np.integer) and np.issubdtype(b.dtype, np.integer):
        return np.trunc(a / b).astype(np.result_type(a, b))  # ONNX integer Div truncates
    return (a / b).astype(np.result_type(a, b))


FOLDABLE: dict[str, Callable[[Mapping[str, Any], list], np.ndarray]] = {
    "Identity": lambda a, x: np.asarray(x[0]),
    "Cast": _cast,
    "Gather": _gather,
    "Unsqueeze": _unsqueeze,
    "Squeeze": _squeeze,
    "Concat": _concat,
    "Slice": _slice,
    "Reshape": _reshape,
    "Flatten": _flatten,
    "Transpose": _transpose,
    "Expand": _expand,
    "Tile": _tile,
    "ConstantOfShape": _constant_of_shape,
    "Range": _range,
    "DequantizeLinear": _dequantize,
    "Add": _binary(np.add),
    "Sub": _binary(np.subtract),
    "Mul": _binary(np.multiply),
    "Div": _binary(_div),
    "Mod": _binary(np.mod),
    "Pow": _binary(np.power),
    "Max": lambda a, x: np.maximum.reduce([np.asarray(v) for v in x]),
    "Min": lambda a, x: np.minimum.reduce([np.asarray(v) for v in x]),
    "Equal": _binary(np.equal),
    "Less": _binary(np.less),
    "Greater": _binary(np.greater),
    "Where": lambda a, x: np.where(np.asarray(x[0]), np.asarray(x[1]), np.asarray(x[2])),
    "Not": lambda a, x: np.logical_not(np.asarray(x[0])),
    "Neg": lambda a, x: np.negative(np.asarray(x[0])),
    "Abs": lambda a, x: np.abs(np.asarray(x[0])),
    "Sqrt": lambda a, x: np.sqrt(np.asarray(x[0])),
    "Floor": lambda a, x: np.floor(np.asarray(x[0])),
    "Ceil": lambda a, x: np.ceil(np.asarray(x[0])),
    "ReduceProd": _reduce(np.prod),
    "ReduceSum": _reduce(np.sum),
    "ReduceMax": _reduce(np.max),
    "ReduceMin": _reduce(np.min),
}


def evaluate(op: str, attrs: Mapping[str, Any], inputs: list[np.ndarray | None]) -> np.ndarray | None:
    """The value of a foldable node's (first) output, or None when it cannot or should not be folded."""
    fn = FOLDABLE.get(op)
    if fn is None:
        return None
    try:
        with np.errstate(all="ignore"):
            value = np.asarray(fn(attrs, inputs))
    except (ValueError, TypeError, IndexError, ZeroDivisionError, OverflowError, MemoryError):
        return None
    return value if value.size <= FOLD_LIMIT else None


def output_elements_bounded(op: str, inputs: list[np.ndarray | None]) -> bool:
    """Whether folding ``op`` could stay under :data:`FOLD_LIMIT` (``Expand``/``ConstantOfShape``/``Tile``/
    ``Range`` can make large outputs from small inputs; their target sizes are checked first)."""
    if op in ("Expand", "ConstantOfShape"):
        shape = np.asarray(inputs[-1]).reshape(-1)
        return bool(shape.size < 16 and all(0 <= d < FOLD_LIMIT for d in shape) and np.prod(shape, dtype=float) <= FOLD_LIMIT)
    if op == "Tile":
        reps = np.asarray(inputs[1]).reshape(-1)
        return bool(np.prod(reps, dtype=float) * np.asarray(inputs[0]).size <= FOLD_LIMIT)
    if op == "Range":
        start, limit, delta = (float(np.asarray(v).reshape(-1)[0]) for v in inputs[:3])
        return delta != 0 and abs((limit - start) / delta) <= FOLD_LIMIT
    return True
