"""GraphML reader (networkx's parser) keeping the graph's own attributes.

Node, edge and graph ``<data>`` become the flat attributes of :mod:`solvermap.ir.dfg_flat`; a key's
``<default>`` applies to the nodes or edges that do not set it. The graph's ``<data>`` (for example
``trip_count``) goes to ``graph.attrs``. A document type declaration is refused
(:func:`~solvermap.ir.dfg_files.refuse_xml_declarations`), as is an undirected graph and any file
networkx cannot read (one line naming the file).
"""

from __future__ import annotations

from pathlib import Path

import networkx as nx

from solvermap.errors import InputError
from solvermap.ir.dfg_files import read_text, refuse_xml_declarations
from solvermap.ir.dfg_flat import BackEdgeRule, FlatGraph, to_ir
from solvermap.ir.graph import DataflowGraph


def parse(text: str, source: str = "<graphml>") -> FlatGraph:
    refuse_xml_declarations(text, source)
    if not text.strip():
        raise InputError(source, "", "empty file: no GraphML graph")
    try:
        g = nx.parse_graphml(text, force_multigraph=True)
    except Exception as exc:  # noqa: BLE001 - any parse failure of the file is bad input
        problem = " ".join(str(exc).split()) or type(exc).__name__
        raise InputError(source, "", f"invalid GraphML: {problem[:300]}") from None
    if not g.is_directed():
        raise InputError(source, "", "an undirected GraphML graph; a dataflow graph is directed (edgedefault=\"directed\")")
    attrs = dict(g.graph)
    node_default = attrs.pop("node_default", {}) or {}
    edge_default = attrs.pop("edge_default", {}) or {}
    flat = FlatGraph(name=str(attrs.pop("name", "") or ""), attrs=attrs)
    for name, data in g.nodes(data=True):
        flat.nodes[str(name)] = {**node_default, **data}
    for u, v, _key, data in g.edges(keys=True, data=True):
        flat.edges.append((str(u), str(v), {**edge_default, **data}))
    return flat


def read_graphml(path: str | Path, back_edge: BackEdgeRule | str | None = None) -> DataflowGraph:
    source = str(path)
    return to_ir(parse(read_text(path, "GraphML file"), source), source, back_edge)
