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

A builder takes keyword parameters (with defaults declared at registration, e.g. a parallelization
factor ``par``) and returns the IR object the family's mapper consumes: a
:class:`~solvermap.ir.graph.DataflowGraph`, a :class:`~solvermap.ir.loopnest.Program`, or a
family-specific bundle built from them.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from solvermap.errors import InputError, UnknownNameError

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
    params: Mapping[str, Any] = field(default_factory=dict)


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


def register(name: str, family: str, description: str, params: Mapping[str, Any] | None = None):
    """Decorator: register ``builder(**params) -> IR`` as workload ``name`` for ``family``."""

    def decorate(builder: Callable[..., Any]) -> Callable[..., Any]:
        key = (name, family)
        if key in _REGISTRY and _REGISTRY[key].builder is not builder:
            raise RuntimeError(f"workload {name!r} registered twice for family {family!r}")
        _REGISTRY[key] = WorkloadInfo(name, family, description, builder, dict(params or {}))
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
    """Build a registered workload, or load a program, model or graph file when ``name`` is a path."""
    from solvermap.ir import program_file

    if program_file.is_program_file(name):
        if params:
            raise InputError(name, f"workload.{next(iter(params))}", "a program file takes no workload parameters")
        program = program_file.load(name)
        return Workload(Path(name).stem, family, {}, program, f"program file {name}")
    if name.lower().endswith((".onnx",) + LAYER_SUFFIXES):
        return _model_file(name, family, params)
    if name.lower().endswith(GRAPH_SUFFIXES) or Path(name).is_file():  # (a directory named dnn1 is no graph)
        from solvermap.ir.serialize import load

        checked = graph_file_params(params)
        graph = load(name, back_edge=checked.get("back_edge"))
        return Workload(Path(name).stem, family, checked, graph, f"graph file {name}")
    entry = info(name, family)
    merged = dict(entry.params)
    for key, value in (params or {}).items():
        if key not in merged:
            raise InputError("", f"workload.{key}",
                             f"unknown parameter for {name!r}; known: {', '.join(sorted(merged)) or '(none)'}")
        merged[key] = value
    return Workload(name, family, merged, entry.builder(**merged), entry.description)
