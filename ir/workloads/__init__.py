"""Workload registry: built-in workloads by name, per target family.

A workload module in this package registers builders with :func:`register`; the registry imports
every module here on first use, so adding a workload needs no edit elsewhere. The same name may exist
for several families (``lenet`` is a Plasticine app and an ApproxHPVM network); the target's family
picks the one to build. A user may also pass a file: a loop-nest program file (``.yaml``/``.yml`` with a
top-level ``solvermap-program: 1``, or ``.json`` with that key; :mod:`solvermap.ir.program_file`) loads as a
:class:`~solvermap.ir.loopnest.Program`; an ONNX model (``.onnx``: :func:`solvermap.ir.onnx_import.import_model`)
or a layer-shape file (any other ``.yaml``/``.yml``: :mod:`solvermap.ir.layer_shapes`), which every DNN family
lowers; a graph file (``.json``, ``.dot``, ``.graphml``, ``.xml``) loads as a graph for any family whose mapper
accepts graphs. Model files take the parameters of :data:`MODEL_PARAMS` (``--set workload.weights=random``).

A builder takes keyword parameters and returns the IR object the family's mapper consumes: a
:class:`~solvermap.ir.graph.DataflowGraph`, a :class:`~solvermap.ir.loopnest.Program`, or a
family-specific bundle built from them. Each parameter is declared at registration as a :class:`Param`
— default, meaning and documented range (``low``/``high`` for numbers and for the items of a list,
``choices`` for names, ``length`` for lists) — and :func:`build` checks every value against it before the
builder runs, so ``--set workload.par=99`` is one line naming the range. A registration may also give
``estimate(**params) -> [(what, bytes)]``, the memory the builder itself allocates (weights, tensors);
each entry goes through :func:`solvermap.limits.check_estimate` before the builder runs. ``solvermap
workloads`` lists the ranges.
"""

from __future__ import annotations

import importlib
import math
import numbers
import pkgutil
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from solvermap.errors import InputError, UnknownNameError
from solvermap.limits import check_estimate

GRAPH_SUFFIXES = (".json", ".dot", ".gv", ".graphml", ".xml", ".onnx")
LAYER_SUFFIXES = (".yaml", ".yml")

# parameters of a model file (.onnx, layer-shape .yaml): default and meaning
MODEL_PARAMS: dict[str, tuple[Any, str]] = {
    "weights": ("file", "file: the values in the model (missing ones make it shape-only); random: deterministic "
                        "synthetic values for every missing weight (the records say so)"),
    "seed": (0, "seed of the synthetic weights"),
    "memory_limit_mb": (None, "cap on the model's tensor bytes (default: half of physical memory)"),
    "par": (2, "Plasticine: parallelisation factor of each layer's MAC actor (1-16)"),
    "dataset": ("digits", "promise-soc: an .npz file with arrays x and y, or digits (sklearn's 8x8 digits)"),
}

SEED_MAX = 2**32 - 1  # NumPy's and scikit-learn's seeds are 32-bit


@dataclass(frozen=True)
class Param:
    """One workload parameter: its default, meaning and documented range.

    The type is the default's (int, float, str, or a list of ints); ``low``/``high`` bound a number or
    every item of a list, ``choices`` lists the allowed values, ``length`` the allowed list lengths."""

    default: Any
    doc: str = ""
    low: float | None = None
    high: float | None = None
    choices: tuple[Any, ...] = ()
    length: tuple[int, int] | None = None

    @property
    def kind(self) -> type:
        if isinstance(self.default, bool):
            return bool
        for kind in (int, float, str, list):
            if isinstance(self.default, kind if kind is not list else (list, tuple)):
                return kind
        return object

    def documented(self) -> bool:
        """Whether the parameter states its meaning and its range (every built-in one does)."""
        if not self.doc:
            return False
        if self.kind in (int, float, list):
            return self.low is not None and self.high is not None and (self.kind is not list or self.length is not None)
        return self.kind is bool or bool(self.choices)

    def describe(self) -> str:
        """The range in words: ``integer in [1, 16]``, ``one of uint8, int8``, ``2-64 integers in [1, 65536]``."""
        if self.choices:
            return "one of " + ", ".join(map(str, self.choices))
        bounds = f" in [{_fmt(self.low)}, {_fmt(self.high)}]" if self.low is not None or self.high is not None else ""
        if self.kind is list:
            count = f"{self.length[0]}-{self.length[1]} " if self.length else ""
            return f"a list of {count}integers{bounds}"
        return {int: "an integer", float: "a number", bool: "true or false", str: "text"}.get(self.kind, "a value") + bounds

    def span(self) -> str:
        """The range in short: ``1..16``, ``uint8|int8``, ``2..64 × 1..65,536``."""
        if self.choices:
            return "|".join(map(str, self.choices))
        bounds = f"{_fmt(self.low)}..{_fmt(self.high)}" if self.low is not None or self.high is not None else self.describe()
        return f"{self.length[0]}..{self.length[1]} × {bounds}" if self.kind is list and self.length else bounds

    def check(self, name: str, value: Any, workload: str) -> Any:
        """``value`` if it is allowed, else one line naming the parameter, the value and the range."""
        if not self._allowed(value):
            shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
            raise InputError(workload, f"workload.{name}", f"must be {self.describe()}, got {shown}")
        return list(value) if self.kind is list else value

    def _allowed(self, value: Any) -> bool:
        kind = self.kind
        if self.choices:
            return any(value == c and type(value) is type(c) for c in self.choices)
        if kind is bool:
            return isinstance(value, bool)
        if kind is str:
            return isinstance(value, str)
        if kind is list:
            if not isinstance(value, (list, tuple)):
                return False
            if self.length and not self.length[0] <= len(value) <= self.length[1]:
                return False
            return all(_integer(v) and self._within(v) for v in value)
        if kind is int:
            return _integer(value) and self._within(value)
        if kind is float:
            return (isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
                    and self._within(value))
        return True

    def _within(self, value: float) -> bool:
        return (self.low is None or value >= self.low) and (self.high is None or value <= self.high)


def _integer(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _fmt(bound: float | None) -> str:
    if bound is None:
        return "-inf"
    return f"{int(bound):,}" if float(bound).is_integer() else f"{bound:g}"


def seed_param(doc: str = "seed of the deterministic weights or data") -> Param:
    return Param(0, doc, 0, SEED_MAX)


Estimate = Callable[..., Iterable[tuple[str, float]]]


def settings(params: Mapping[str, Any]) -> str:
    """``workload.size=32, channels=16`` for an estimate's message."""
    return "workload." + ", ".join(f"{k}={v}" for k, v in params.items())


def loopnest_bytes(program: Any) -> float:
    """Memory of evaluating a loop-nest :class:`~solvermap.ir.loopnest.Program` with its NumPy golden
    executor, at least: every tensor, plus the int64 index grid (one array per loop) of its largest
    statement, which the executor materialises."""
    import numpy as np

    from solvermap.ir.loopnest import NUMPY_DTYPES

    tensors = sum(math.prod(t.shape) * np.dtype(NUMPY_DTYPES.get(t.dtype, np.int64)).itemsize
                  for t in program.tensors.values())
    grids = [math.prod(max(0, loop.hi - loop.lo) for loop in s.loops) * len(s.loops) * 8 for s in program.statements]
    return float(tensors + max(grids, default=0))


# parameters a graph file takes (``--set workload.<name>=...``), with their ranges
GRAPH_PARAMS = {
    "back_edge": "ATTRIBUTE:VALUE marking back edges in DOT/GraphML files (default loop_carried:true)",
    "trip_count": "iterations of every loop of a DFG lowered to Plasticine, 1..2^40 (default: the graph's "
                  "trip_count attribute, else 1024)",
}


@dataclass(frozen=True)
class WorkloadInfo:
    name: str
    family: str
    description: str
    builder: Callable[..., Any]
    params: Mapping[str, Any] = field(default_factory=dict)  # name → default
    specs: Mapping[str, Param] = field(default_factory=dict)  # name → its declaration
    estimate: Estimate | None = None

    def checked(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Defaults updated with ``values``, every one checked against its declaration."""
        merged = dict(self.params)
        for key, value in values.items():
            if key not in self.specs:
                raise InputError(self.name, f"workload.{key}",
                                 f"unknown parameter; known: {', '.join(sorted(self.specs)) or '(none)'}")
            merged[key] = self.specs[key].check(key, value, self.name)
        return merged


@dataclass
class Workload:
    """A built workload: its name, family, the parameters used and the IR object."""

    name: str
    family: str
    params: dict[str, Any]
    ir: Any
    description: str = ""


_REGISTRY: dict[tuple[str, str], WorkloadInfo] = {}
_DISCOVERED = False


def register(name: str, family: str, description: str, params: Mapping[str, Param | Any] | None = None,
             estimate: Estimate | None = None):
    """Decorator: register ``builder(**params) -> IR`` as workload ``name`` for ``family``; ``params`` maps
    each parameter to its :class:`Param` (a plain default declares the type only), ``estimate`` gives the
    builder's own memory (module docstring)."""

    def decorate(builder: Callable[..., Any]) -> Callable[..., Any]:
        key = (name, family)
        if key in _REGISTRY and _REGISTRY[key].builder is not builder:
            raise RuntimeError(f"workload {name!r} registered twice for family {family!r}")
        specs = {k: v if isinstance(v, Param) else Param(v) for k, v in (params or {}).items()}
        _REGISTRY[key] = WorkloadInfo(name, family, description, builder, {k: s.default for k, s in specs.items()},
                                      specs, estimate)
        return builder

    return decorate


def _discover() -> None:
    global _DISCOVERED
    if _DISCOVERED:
        return
    _DISCOVERED = True
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")


def all_workloads() -> list[WorkloadInfo]:
    _discover()
    return sorted(_REGISTRY.values(), key=lambda w: (w.family, w.name))


def families_of(name: str) -> list[str]:
    _discover()
    return sorted(f for (n, f) in _REGISTRY if n == name)


def info(name: str, family: str) -> WorkloadInfo:
    _discover()
    if (name, family) not in _REGISTRY:
        known = sorted(n for (n, f) in _REGISTRY if f == family)
        others = families_of(name)
        hint = f"; {name!r} exists for {', '.join(others)}" if others else ""
        raise UnknownNameError(f"unknown workload {name!r} for target family {family!r}{hint}; "
                               f"known: {', '.join(known) or '(none)'}")
    return _REGISTRY[(name, family)]


def model_params(source: str, params: Mapping[str, Any] | None) -> dict[str, Any]:
    """The parameters of a model file, checked (one line on an unknown key or a bad value)."""
    out = {key: default for key, (default, _) in MODEL_PARAMS.items()}
    for key, value in (params or {}).items():
        if key not in MODEL_PARAMS:
            raise InputError(source, f"workload.{key}", f"unknown parameter for a model file; known: {', '.join(MODEL_PARAMS)}")
        out[key] = value
    if out["weights"] not in ("file", "random"):
        raise InputError(source, "workload.weights", f"expected file or random, got {out['weights']!r}")
    for key, low, high in (("seed", 0, 2**31 - 1), ("par", 1, 16)):
        value = out[key]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise InputError(source, f"workload.{key}", f"expected an integer in [{low}, {high}], got {value!r}")
    limit = out["memory_limit_mb"]
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, (int, float)) or not 1 <= limit <= 2**24):
        raise InputError(source, "workload.memory_limit_mb", f"expected a number of MB in [1, 16777216], got {limit!r}")
    if not isinstance(out["dataset"], str):
        raise InputError(source, "workload.dataset", f"expected a file name or digits, got {out['dataset']!r}")
    return out


def _model_file(name: str, family: str, params: Mapping[str, Any] | None) -> Workload:
    """An ONNX model or a layer-shape file as a workload (see :data:`MODEL_PARAMS`)."""
    merged = model_params(name, params)
    limit = int(merged["memory_limit_mb"] * 2**20) if merged["memory_limit_mb"] else None
    if name.lower().endswith(LAYER_SUFFIXES):
        from solvermap.ir.layer_shapes import load as load_layers

        shapes = load_layers(name, memory_limit=limit)
        return Workload(Path(name).stem, family, merged, shapes, f"layer-shape file {name} ({len(shapes.layers)} layers)")
    from solvermap.ir.onnx_import import import_model

    model = import_model(name, memory_limit=limit)
    if merged["weights"] == "random":
        model = model.with_synthetic_weights(int(merged["seed"]))
    return Workload(Path(name).stem, family, merged, model, f"ONNX model {name} (weights: {model.weights})")


def graph_file_params(params: Mapping[str, Any] | None) -> dict[str, Any]:
    """Check the ``workload.*`` parameters given with a graph file (:data:`GRAPH_PARAMS`)."""
    from solvermap.ir.dfg_flat import BackEdgeRule

    out = dict(params or {})
    for key, value in out.items():
        if key not in GRAPH_PARAMS:
            raise InputError("--set", f"workload.{key}",
                             f"unknown parameter for a graph file; known: {', '.join(sorted(GRAPH_PARAMS))}")
    if "back_edge" in out:
        out["back_edge"] = str(BackEdgeRule.parse(out["back_edge"]))
    if "trip_count" in out:
        value = out["trip_count"]
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 2**40:
            raise InputError("--set", "workload.trip_count", f"must be an integer in [1, 2^40], got {value!r}")
    return out


def build(name: str, family: str, params: Mapping[str, Any] | None = None) -> Workload:
    """Build a registered workload, or load a program, model or graph file when ``name`` is a path (a graph
    path is checked to be a readable file first: a directory or a FIFO is one line, not an error inside a loader)."""
    from solvermap.ir import program_file

    if program_file.is_program_file(name):
        if params:
            raise InputError(name, f"workload.{next(iter(params))}", "a program file takes no workload parameters")
        program = program_file.load(name)
        return Workload(Path(name).stem, family, {}, program, f"program file {name}")
    if name.lower().endswith((".onnx",) + LAYER_SUFFIXES):
        return _model_file(name, family, params)
    if name.lower().endswith(GRAPH_SUFFIXES) or "/" in name or Path(name).is_file():  # (a directory named dnn1 is no graph)
        from solvermap.inputs import input_file
        from solvermap.ir.serialize import load

        input_file(name)
        checked = graph_file_params(params)
        graph = load(name, back_edge=checked.get("back_edge"))
        return Workload(Path(name).stem, family, checked, graph, f"graph file {name}")
    entry = info(name, family)
    merged = entry.checked(params or {})
    for what, size in (entry.estimate(**merged) if entry.estimate is not None else ()):
        check_estimate(what, size, name)
    return Workload(name, family, merged, entry.builder(**merged), entry.description)
