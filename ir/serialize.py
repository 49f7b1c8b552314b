"""Graph IO: versioned JSON round trip, DOT and GraphML import.

JSON format (``format: solvermap.graph``, ``version: 1``)::

    {"format": "solvermap.graph", "version": 1, "name": ..., "attrs": {...},
     "nodes": [{"name", "kind", "op", "resources", "shape", "dtype", "accuracy", "replication",
                "child": <graph object or null>, "attrs"}],
     "edges": [{"src", "dst", "kind", "width_bits", "activation", "src_port", "dst_port",
                "loop_carried", "init_tokens", "pattern", "shape", "dtype", "attrs"}],
     "binds": [{"direction", "port", "node", "node_port"}]}

Only ``name``/``kind`` (nodes) and ``src``/``dst`` (edges) are required; other fields take the
defaults of :mod:`solvermap.ir.graph`. DOT and GraphML carry flat attributes: ``kind``, ``op``,
``dtype``, ``resource.<name>`` (or ``res_<name>``) for the resource vector, ``shape`` as
``"2x3x4"``; edge attributes ``kind``, ``width_bits``, ``activation``, ``src_port``, ``dst_port``,
``loop_carried`` (``true``/``1``), ``init_tokens``. A node without ``kind`` is an ``op`` node; an edge
without ``kind`` is a ``tensor`` edge.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import networkx as nx

from solvermap.errors import InputError
from solvermap.ir.graph import Accuracy, Bind, DataflowGraph

FORMAT = "solvermap.graph"
VERSION = 1
_NODE_KEYS = {"name", "kind", "op", "resources", "shape", "dtype", "accuracy", "replication", "child", "attrs"}
_EDGE_KEYS = {"src", "dst", "kind", "width_bits", "activation", "src_port", "dst_port", "loop_carried",
              "init_tokens", "pattern", "shape", "dtype", "attrs"}


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
        raise InputError(source, _join(path, "format"), f"expected {FORMAT!r}, got {data.get('format')!r}")
    if data.get("version") != VERSION:
        raise InputError(source, _join(path, "version"), f"unsupported version {data.get('version')!r} (this build reads {VERSION})")
    graph = DataflowGraph(str(data.get("name", "graph")), data.get("attrs") or {}, source=source)
    for i, node in enumerate(_list(data, "nodes", source, path)):
        where = _join(path, f"nodes[{i}]")
        _require(node, ("name", "kind"), _NODE_KEYS, source, where)
        child = None
        if node.get("child") is not None:
            child = from_json(node["child"], source, _join(where, "child"))
        acc = node.get("accuracy")
        accuracy = Accuracy(acc.get("l1_budget"), acc.get("l2_budget")) if isinstance(acc, dict) else None
        _guard(source, where, lambda: graph.add_node(
            node["name"], node["kind"], op=node.get("op", ""), resources=node.get("resources") or {},
            shape=node.get("shape"), dtype=node.get("dtype"), accuracy=accuracy,
            replication=node.get("replication") or (), child=child, attrs=node.get("attrs") or {}))
    for i, edge in enumerate(_list(data, "edges", source, path)):
        where = _join(path, f"edges[{i}]")
        _require(edge, ("src", "dst"), _EDGE_KEYS, source, where)
        kwargs = {k: v for k, v in edge.items() if k not in ("src", "dst") and v is not None}
        kind = kwargs.pop("kind", "tensor")
        _guard(source, where, lambda: graph.add_edge(edge["src"], edge["dst"], kind, **kwargs))
    for i, b in enumerate(data.get("binds") or []):
        where = _join(path, f"binds[{i}]")
        _require(b, ("direction", "port", "node"), {"direction", "port", "node", "node_port"}, source, where)
        graph.binds.append(Bind(b["direction"], b["port"], b["node"], b.get("node_port", "in")))
    return graph.validate()


def loads(text: str, source: str = "<json>") -> DataflowGraph:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(source, f"line {exc.lineno}", f"invalid JSON: {exc.msg}") from None
    return from_json(data, source)


def load(path: str | Path) -> DataflowGraph:
    """Load a graph file by extension: ``.json``, ``.dot``/``.gv``, ``.graphml``, ``.onnx``."""
    path = Path(path)
    if not path.exists():
        raise InputError(str(path), "", "no such file")
    suffix = path.suffix.lower()
    if suffix == ".json":
        return loads(path.read_text(), str(path))
    if suffix in (".dot", ".gv"):
        return read_dot(path)
    if suffix == ".graphml":
        return read_graphml(path)
    if suffix == ".onnx":
        from solvermap.ir.onnx_import import import_onnx

        return import_onnx(path)
    raise InputError(str(path), "", f"unknown graph format {suffix!r}; expected .json, .dot, .graphml or .onnx")


def save(graph: DataflowGraph, path: str | Path) -> None:
    Path(path).write_text(dumps(graph))


# ------------------------------------------------------------------ DOT / GraphML


def read_dot(path: str | Path) -> DataflowGraph:
    try:
        import pydot
    except ImportError:  # pragma: no cover - pydot is a dependency
        raise InputError(str(path), "", "reading DOT needs pydot") from None
    parsed = pydot.graph_from_dot_file(str(path))
    if not parsed:
        raise InputError(str(path), "", "not a DOT graph")
    return from_networkx(nx.nx_pydot.from_pydot(parsed[0]), source=str(path))


def read_graphml(path: str | Path) -> DataflowGraph:
    try:
        g = nx.read_graphml(str(path), force_multigraph=True)
    except Exception as exc:  # noqa: BLE001 - any parse failure is bad input
        raise InputError(str(path), "", f"invalid GraphML: {exc}") from None
    return from_networkx(g, source=str(path))


def from_networkx(g: nx.Graph, source: str = "<networkx>") -> DataflowGraph:
    """Convert a graph with flat attributes (DOT/GraphML conventions above) to a validated IR graph."""
    graph = DataflowGraph(str(g.graph.get("name") or Path(source).stem), source=source)
    for name, attrs in g.nodes(data=True):
        name = _unquote(str(name))
        if name in ("node", "edge", "graph", "\\n"):  # pydot's pseudo-nodes for default attributes
            continue
        attrs = {_unquote(k): _unquote(v) for k, v in attrs.items()}
        resources = {}
        for key, value in list(attrs.items()):
            for prefix in ("resource.", "res_"):
                if key.startswith(prefix):
                    resources[key[len(prefix):]] = _number(value, source, f"node '{name}'.{key}")
        shape = _shape(attrs.get("shape"), source, f"node '{name}'.shape")
        graph.add_node(name, attrs.get("kind", "op"), op=str(attrs.get("op", "")), resources=resources,
                       shape=shape, dtype=attrs.get("dtype") or None,
                       attrs={k: v for k, v in attrs.items() if k not in ("kind", "op", "shape", "dtype")
                              and not k.startswith(("resource.", "res_"))})
    edges = g.edges(data=True, keys=True) if g.is_multigraph() else ((u, v, 0, d) for u, v, d in g.edges(data=True))
    for u, v, _key, attrs in edges:
        u, v = _unquote(str(u)), _unquote(str(v))
        attrs = {_unquote(k): _unquote(val) for k, val in attrs.items()}
        where = f"edge '{u}'->'{v}'"
        if u not in graph or v not in graph:
            missing = u if u not in graph else v
            raise InputError(source, where, f"dangling edge: no node named '{missing}'")
        graph.add_edge(
            u, v, attrs.get("kind", "tensor"),
            width_bits=int(_number(attrs.get("width_bits", 32), source, f"{where}.width_bits")),
            activation=_number(attrs.get("activation", 1.0), source, f"{where}.activation"),
            src_port=str(attrs.get("src_port", "out")), dst_port=str(attrs.get("dst_port", "in")),
            loop_carried=str(attrs.get("loop_carried", "false")).lower() in ("1", "true", "yes"),
            init_tokens=int(_number(attrs.get("init_tokens", 0), source, f"{where}.init_tokens")),
        )
    return graph.validate()


# ------------------------------------------------------------------ helpers


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _list(data: dict, key: str, source: str, path: str) -> list:
    value = data.get(key, [])
    if not isinstance(value, list):
        raise InputError(source, _join(path, key), "expected a list")
    return value


def _require(obj: Any, required: tuple[str, ...], allowed: set[str], source: str, where: str) -> None:
    if not isinstance(obj, dict):
        raise InputError(source, where, "expected an object")
    for key in required:
        if key not in obj:
            raise InputError(source, _join(where, key), "missing required field")
    for key in obj:
        if key not in allowed:
            raise InputError(source, _join(where, key), "unknown field")


def _guard(source: str, where: str, action) -> None:
    try:
        action()
    except InputError:
        raise
    except (TypeError, ValueError) as exc:
        raise InputError(source, where, str(exc)) from None


def _unquote(value: Any) -> Any:
    if isinstance(value, str) and len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1]
    return value


def _number(value: Any, source: str, where: str) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise InputError(source, where, f"expected a number, got {value!r}") from None


def _shape(value: Any, source: str, where: str) -> tuple[int, ...] | None:
    if value in (None, ""):
        return None
    try:
        return tuple(int(d) for d in str(value).replace(",", "x").split("x") if d.strip())
    except ValueError:
        raise InputError(source, where, f"expected a shape like 2x3x4, got {value!r}") from None
