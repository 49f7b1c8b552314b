"""HPVM-style hierarchical dataflow graphs (seed 000 Ch. 3).

An internal node (``kind='hierarchy'``) holds a child :class:`DataflowGraph`. The child's
:class:`~solvermap.ir.graph.Bind` list connects the parent's ports to child nodes: an edge that enters
the internal node at ``dst_port=p`` reaches every child node bound to input port ``p``, and an edge
that leaves it at ``src_port=q`` comes from the child node bound to output port ``q``. Nodes may be
replicated (dynamic instances, up to 3-D); an edge between replicated nodes is ``one_to_one``
(instance i feeds instance i; extents must match) or ``all_to_all``.

:func:`flatten` turns the hierarchy into a graph of leaves. Leaf names are the path of internal
nodes joined by ``/``. With ``expand_instances=False`` a leaf keeps a ``replication`` equal to the
product of its own and its ancestors' extents; with ``True`` every dynamic instance becomes a node
named ``path[i,j,k]``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from solvermap.errors import InputError
from solvermap.ir.graph import Bind, DataflowGraph, Edge, NodeKind, Pattern


def add_internal_node(parent: DataflowGraph, name: str, child: DataflowGraph, *, replication=(), attrs=None) -> str:
    """Add a hierarchy node holding ``child`` (bind its ports with :func:`bind`)."""
    return parent.add_node(name, NodeKind.HIERARCHY, op="internal", child=child, replication=replication, attrs=attrs)


def bind(child: DataflowGraph, direction: str, port: str, node: str, node_port: str = "in") -> None:
    """Bind a parent port to a child node's port (``direction`` is ``'in'`` or ``'out'``)."""
    if direction not in ("in", "out"):
        raise InputError(child.source, f"bind '{port}'", f"direction must be 'in' or 'out', got {direction!r}")
    if node not in child:
        raise InputError(child.source, f"bind '{port}'", f"binds to unknown node '{node}'")
    child.binds.append(Bind(direction, port, node, node_port))


@dataclass(frozen=True)
class _Leaf:
    name: str  # flattened name
    replication: tuple[int, ...]


def flatten(graph: DataflowGraph, *, expand_instances: bool = False) -> DataflowGraph:
    """Flatten a hierarchical graph to its leaves (see the module docstring)."""
    graph.validate()
    flat = DataflowGraph(graph.name, dict(graph.attrs), source=graph.source)
    _flatten_into(graph, flat, prefix="", outer=())
    if expand_instances:
        flat = _expand(flat)
    return flat.validate()


def _flatten_into(graph: DataflowGraph, flat: DataflowGraph, prefix: str, outer: tuple[int, ...]) -> None:
    # Leaves first, then edges (each endpoint resolved through the binds of internal nodes).
    for node in graph.nodes():
        path = prefix + node.name
        replication = _combine(outer, node.replication, graph.source, path)
        if node.kind == NodeKind.HIERARCHY:
            _flatten_into(node.child, flat, path + "/", replication)
        else:
            flat.add_node(path, node.kind, op=node.op, resources=node.resources, shape=node.shape, dtype=node.dtype,
                          accuracy=node.accuracy, replication=replication, attrs=node.attrs)
    for edge in graph.edges():
        for src in _resolve(graph, edge.src, "out", edge.src_port, prefix):
            for dst in _resolve(graph, edge.dst, "in", edge.dst_port, prefix):
                flat.add_edge(src[0], dst[0], edge.kind, width_bits=edge.width_bits, activation=edge.activation,
                              src_port=src[1], dst_port=dst[1], loop_carried=edge.loop_carried,
                              init_tokens=edge.init_tokens, pattern=edge.pattern, shape=edge.shape,
                              dtype=edge.dtype, attrs=edge.attrs)


def _resolve(graph: DataflowGraph, name: str, direction: str, port: str, prefix: str) -> list[tuple[str, str]]:
    """Flattened (node, port) pairs an edge endpoint stands for."""
    node = graph.node(name)
    if node.kind != NodeKind.HIERARCHY:
        return [(prefix + name, port)]
    targets = [b for b in node.child.binds if b.direction == direction and b.port == port]
    if not targets:
        raise InputError(graph.source, f"node '{prefix + name}'", f"no bind for {direction}put port '{port}'")
    result: list[tuple[str, str]] = []
    for b in targets:
        result += _resolve(node.child, b.node, direction, b.node_port, prefix + name + "/")
    return result


def _combine(outer: tuple[int, ...], inner: tuple[int, ...], source: str, path: str) -> tuple[int, ...]:
    if not outer:
        return tuple(inner)
    if not inner:
        return tuple(outer)
    dims = max(len(outer), len(inner))
    if dims > 3:
        raise InputError(source, f"node '{path}'.replication", "more than 3 replication dimensions")
    a = tuple(outer) + (1,) * (dims - len(outer))
    b = tuple(inner) + (1,) * (dims - len(inner))
    return tuple(x * y for x, y in zip(a, b))


def _instances(replication: tuple[int, ...]) -> list[tuple[int, ...]]:
    return list(itertools.product(*(range(r) for r in replication))) if replication else [()]


def _instance_name(name: str, index: tuple[int, ...]) -> str:
    return f"{name}[{','.join(map(str, index))}]" if index else name


def _expand(flat: DataflowGraph) -> DataflowGraph:
    out = DataflowGraph(flat.name, dict(flat.attrs), source=flat.source)
    for node in flat.nodes():
        for index in _instances(node.replication):
            out.add_node(_instance_name(node.name, index), node.kind, op=node.op, resources=node.resources,
                         shape=node.shape, dtype=node.dtype, accuracy=node.accuracy,
                         attrs={**node.attrs, "instance_of": node.name, "instance": list(index)})
    for edge in flat.edges():
        src_rep, dst_rep = flat.node(edge.src).replication, flat.node(edge.dst).replication
        for src_index, dst_index in _instance_pairs(edge, src_rep, dst_rep, flat.source):
            out.add_edge(_instance_name(edge.src, src_index), _instance_name(edge.dst, dst_index), edge.kind,
                         width_bits=edge.width_bits, activation=edge.activation, src_port=edge.src_port,
                         dst_port=edge.dst_port, loop_carried=edge.loop_carried, init_tokens=edge.init_tokens,
                         shape=edge.shape, dtype=edge.dtype, attrs=edge.attrs)
    return out


def _instance_pairs(edge: Edge, src_rep, dst_rep, source: str):
    if edge.pattern == Pattern.ALL_TO_ALL or not src_rep or not dst_rep:
        return list(itertools.product(_instances(src_rep), _instances(dst_rep)))
    if tuple(src_rep) != tuple(dst_rep):
        raise InputError(source, f"edge '{edge.src}'->'{edge.dst}'.pattern",
                         f"one_to_one edge between different replications {list(src_rep)} and {list(dst_rep)}")
    return [(i, i) for i in _instances(src_rep)]
