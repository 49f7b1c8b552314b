"""Graph IO: the versioned JSON format (read and written), and ``load`` for every graph file format.

JSON (``format: solvermap.graph``, ``version: 1``) is the IR's own format: :func:`to_json` writes every
attribute and :func:`from_json` reads it back exactly. The reader validates the whole object with the
pydantic models below before building anything, so a wrong type anywhere (``"binds": 5``, a string for
``width_bits``), an unknown or missing field, a number out of range (``init_tokens`` above 2^31, an
infinite activation) or nesting deeper than :data:`~solvermap.ir.dfg_files.MAX_NESTING` levels is one
:class:`~solvermap.errors.InputError` naming the file and the JSON path. The fields and what a graph
needs are documented for users in README "Dataflow graph files".

:func:`load` picks the reader by extension: JSON here, DOT (:mod:`.dfg_dot`), GraphML
(:mod:`.dfg_graphml`), the XML DFG dialect of CGRA mappers (:mod:`.dfg_xml`, also when the file is
named ``.graphml``) and ONNX (:mod:`.onnx_import`). Every text format is read through
:func:`~solvermap.ir.dfg_files.read_text` (size limit, directories, binary and non-UTF-8 files refused).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from solvermap.errors import InputError
from solvermap.ir import dfg_dot, dfg_graphml, dfg_xml
from solvermap.ir.dfg_files import MAX_NESTING, nesting_depth, read_text
from solvermap.ir.dfg_flat import BackEdgeRule, to_ir
from solvermap.ir.graph import Accuracy, Bind, DataflowGraph

FORMAT = "solvermap.graph"
VERSION = 1

_Name = Annotated[str, Field(min_length=1, max_length=10_000)]
_Size = Annotated[float, Field(ge=0, le=1e18)]
_Dim = Annotated[int, Field(ge=0, le=2**40)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, frozen=True)


class AccuracyJSON(_Model):
    l1_budget: float | None = Field(None, ge=0)
    l2_budget: float | None = Field(None, ge=0)


class NodeJSON(_Model):
    name: _Name
    kind: str
    op: str = ""
    resources: dict[str, _Size] | None = None
    shape: list[_Dim] | None = None
    dtype: str | None = None
    accuracy: AccuracyJSON | None = None
    replication: list[Annotated[int, Field(ge=1, le=2**31)]] | None = Field(None, max_length=3)
    child: GraphJSON | None = None
    attrs: dict[str, Any] | None = None


class EdgeJSON(_Model):
    src: _Name
    dst: _Name
    kind: str = "tensor"
    width_bits: int = Field(32, ge=1, le=2**32)
    activation: float = Field(1.0, ge=0.0, le=1.0)
    src_port: str = "out"
    dst_port: str = "in"
    loop_carried: bool = False
    init_tokens: int = Field(0, ge=0, le=2**31)
    pattern: str = "one_to_one"
    shape: list[_Dim] | None = None
    dtype: str | None = None
    attrs: dict[str, Any] | None = None


class BindJSON(_Model):
    direction: Literal["in", "out"]
    port: str
    node: _Name
    node_port: str = "in"


class GraphJSON(_Model):
    format: Literal["solvermap.graph"]
    version: Literal[1]
    name: str = "graph"
    attrs: dict[str, Any] | None = None
    nodes: list[NodeJSON] = []
    edges: list[EdgeJSON] = []
    binds: list[BindJSON] = []


NodeJSON.model_rebuild()


def to_json(graph: DataflowGraph) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "version": VERSION,
        "name": graph.name,
        "attrs": graph.attrs,
        "nodes": [
            {
                "name": n.name,
                "kind": str(n.kind),
                "op": n.op,
                "resources": dict(n.resources),
                "shape": list(n.shape) if n.shape is not None else None,
                "dtype": n.dtype,
                "accuracy": {"l1_budget": n.accuracy.l1_budget, "l2_budget": n.accuracy.l2_budget} if n.accuracy else None,
                "replication": list(n.replication),
                "child": to_json(n.child) if n.child is not None else None,
                "attrs": dict(n.attrs),
            }
            for n in graph.nodes()
        ],
        "edges": [
            {
                "src": e.src, "dst": e.dst, "kind": str(e.kind), "width_bits": e.width_bits,
                "activation": e.activation, "src_port": e.src_port, "dst_port": e.dst_port,
                "loop_carried": e.loop_carried, "init_tokens": e.init_tokens, "pattern": str(e.pattern),
                "shape": list(e.shape) if e.shape is not None else None, "dtype": e.dtype, "attrs": dict(e.attrs),
            }
            for e in graph.edges()
        ],
        "binds": [{"direction": b.direction, "port": b.port, "node": b.node, "node_port": b.node_port} for b in graph.binds],
    }


def dumps(graph: DataflowGraph) -> str:
    return json.dumps(to_json(graph), indent=1, sort_keys=False)


def from_json(data: Any, source: str = "<json>", path: str = "") -> DataflowGraph:
    """Build and validate a graph from its JSON object; errors name ``source`` and the JSON path."""
    if not isinstance(data, dict):
        raise InputError(source, path or "(top)", "expected a JSON object")
    if data.get("format") != FORMAT:
        raise InputError(source, _join(path, "format"), f"expected {FORMAT!r}, got {_short(data.get('format'))}")
    if data.get("version") != VERSION:
        raise InputError(source, _join(path, "version"),
                         f"unsupported version {_short(data.get('version'))} (this build reads {VERSION})")
    try:
        parsed = GraphJSON.model_validate(data)
    except ValidationError as exc:
        raise _first_error(exc, source, path) from None
    return _build(parsed, source, path)


def _build(data: GraphJSON, source: str, path: str) -> DataflowGraph:
    if not data.nodes and not path:
        raise InputError(source, "nodes", "the graph has no nodes")
    graph = DataflowGraph(data.name, data.attrs or {}, source=source)
    for i, node in enumerate(data.nodes):
        where = _join(path, f"nodes[{i}]")
        child = _build(node.child, source, _join(where, "child")) if node.child is not None else None
        accuracy = Accuracy(node.accuracy.l1_budget, node.accuracy.l2_budget) if node.accuracy else None
        _guard(source, where, lambda: graph.add_node(
            node.name, node.kind, op=node.op, resources=node.resources or {}, shape=node.shape, dtype=node.dtype,
            accuracy=accuracy, replication=node.replication or (), child=child, attrs=node.attrs or {}))
    for i, edge in enumerate(data.edges):
        kwargs = edge.model_dump(exclude={"src", "dst", "kind"}, exclude_none=True)
        _guard(source, _join(path, f"edges[{i}]"), lambda: graph.add_edge(edge.src, edge.dst, edge.kind, **kwargs))
    for b in data.binds:
        graph.binds.append(Bind(b.direction, b.port, b.node, b.node_port))
    return graph.validate()


def loads(text: str, source: str = "<json>") -> DataflowGraph:
    if not text.strip():
        raise InputError(source, "", "empty file: no JSON graph")
    if nesting_depth(text) > MAX_NESTING:
        raise InputError(source, "", f"JSON nested deeper than {MAX_NESTING} levels")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(source, f"line {exc.lineno}", f"invalid JSON: {exc.msg}") from None
    except (ValueError, RecursionError) as exc:  # an integer of more than 4300 digits
        raise InputError(source, "", f"invalid JSON: {' '.join(str(exc).split())[:200]}") from None
    return from_json(data, source)


def load(path: str | Path, back_edge: BackEdgeRule | str | None = None) -> DataflowGraph:
    """Load a graph file by extension: ``.json``, ``.dot``/``.gv``, ``.graphml``, ``.xml`` (the XML DFG
    dialect of :mod:`.dfg_xml`), ``.onnx``. A ``.graphml`` file that holds an XML DFG is read as one.
    ``back_edge`` is the back-edge rule of the flat formats (:mod:`.dfg_flat`)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".onnx":
        from solvermap.ir.onnx_import import import_onnx

        return import_onnx(path)
    if suffix not in (".json", ".dot", ".gv", ".graphml", ".xml"):
        if not path.exists():
            raise InputError(str(path), "", "no such file")
        raise InputError(str(path), "", f"unknown graph format {suffix!r}; expected .json, .dot, .graphml, .xml or .onnx")
    text = read_text(path, f"{suffix[1:]} graph file")
    source = str(path)
    if suffix == ".json":
        return loads(text, source)
    if suffix in (".dot", ".gv"):
        return to_ir(dfg_dot.parse(text, source), source, back_edge)
    if suffix == ".xml" or (dfg_xml.looks_like(text) and "<graphml" not in text):
        return to_ir(dfg_xml.parse(text, source), source, back_edge)
    return to_ir(dfg_graphml.parse(text, source), source, back_edge)


def save(graph: DataflowGraph, path: str | Path) -> None:
    Path(path).write_text(dumps(graph))


# ------------------------------------------------------------------ DOT / GraphML / XML


def read_dot(path: str | Path, back_edge: BackEdgeRule | str | None = None) -> DataflowGraph:
    return dfg_dot.read_dot(path, back_edge)


def read_graphml(path: str | Path, back_edge: BackEdgeRule | str | None = None) -> DataflowGraph:
    return dfg_graphml.read_graphml(path, back_edge)


# ------------------------------------------------------------------ helpers


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _guard(source: str, where: str, action) -> None:
    try:
        action()
    except InputError:
        raise
    except (TypeError, ValueError, OverflowError) as exc:
        raise InputError(source, where, str(exc)) from None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _first_error(exc: ValidationError, source: str, path: str) -> InputError:
    """The first pydantic error as one line: the JSON path, then the problem."""
    err = exc.errors()[0]
    where = path
    for part in err["loc"]:
        where = f"{where}[{part}]" if isinstance(part, int) else _join(where, str(part))
    if err["type"] == "extra_forbidden":
        return InputError(source, where, "unknown field")
    if err["type"] == "missing":
        return InputError(source, where, "missing required field")
    return InputError(source, where, f"{err['msg']}, got {_short(err.get('input'))}")
