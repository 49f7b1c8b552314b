"""Graphs with flat attributes (DOT, GraphML, the XML DFG dialect) → the IR, and the back-edge rule.

Each reader (:mod:`.dfg_dot`, :mod:`.dfg_graphml`, :mod:`.dfg_xml`) turns its file into a
:class:`FlatGraph` — node and edge attributes as strings, the graph's own attributes kept — and
:func:`to_ir` applies the conventions below once for all of them (README "Dataflow graph files").

Nodes
    ``kind`` (default ``op``); the operation ``op``, else ``opcode`` (CGRA-ME), else ``type`` when it is
    ``input``/``output``/``const`` (GenMap-style files), else the first word of ``label`` (``"(3) add"``
    and an LLVM instruction ``"%x = add nsw i32 …"`` both give ``add``); ``resource.<r>`` or ``res_<r>``
    for the resource vector; ``shape`` as ``2x3x4`` (any other ``shape``, such as DOT's ``box``, is kept in
    ``attrs``); ``dtype``. Everything else is kept in ``attrs``.
Edges
    ``kind`` (default ``tensor``), ``width_bits``, ``activation``, ``src_port`` (default ``out``),
    ``dst_port`` (else ``operand`` — CGRA-ME's operand index — else the DOT head port, default ``in``).
    An edge is a **back edge** (``loop_carried``) when its ``loop_carried`` attribute is true
    (``true``/``1``/``yes``) or when it matches the back-edge rule (``--set workload.back_edge=color:red``:
    attribute ``color`` equal to ``red``, case-insensitive; a comma-separated attribute such as
    ``style="dashed,bold"`` matches any of its items), and when its iteration ``distance`` (``nextiter``
    in the XML dialect) is positive. A back edge carries ``init_tokens`` (else its ``distance``, else 1)
    initial tokens: the values of earlier iterations.
Graph
    The file's graph attributes go to ``graph.attrs`` (a DOT ``label=…``, ``trip_count=…``, GraphML
    ``<data>`` of the graph); ``name`` names the graph (else the file's stem).

A graph without nodes is refused: an empty file, or a file whose nodes the reader could not find, is
never a dataflow graph.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from solvermap.errors import InputError
from solvermap.ir.graph import DataflowGraph

TRUE = ("1", "true", "yes", "on")
_SHAPE = re.compile(r"^\s*\d+(\s*[x,]\s*\d+)*\s*$")


@dataclass(frozen=True)
class BackEdgeRule:
    """An edge is a back edge when attribute ``key`` equals ``value`` (``--set workload.back_edge=key:value``)."""

    key: str = "loop_carried"
    value: str = "true"

    @classmethod
    def parse(cls, text: Any, source: str = "--set", field: str = "workload.back_edge") -> BackEdgeRule:
        if isinstance(text, BackEdgeRule):
            return text
        if not isinstance(text, str) or not any(sep in text for sep in ":="):
            raise InputError(source, field, f"expected ATTRIBUTE:VALUE (e.g. color:red), got {text!r}")
        sep = ":" if ":" in text else "="
        key, value = (part.strip().strip('"') for part in text.split(sep, 1))
        if not key or not value:
            raise InputError(source, field, f"expected ATTRIBUTE:VALUE (e.g. color:red), got {text!r}")
        return cls(key, value)

    def matches(self, attrs: dict[str, str]) -> bool:
        if self.key not in attrs:
            return False
        items = {item.strip().lower() for item in str(attrs[self.key]).split(",")}
        wanted = self.value.lower()
        if self.key == "loop_carried" and wanted in TRUE:
            return bool(items & set(TRUE))
        return wanted in items

    def __str__(self) -> str:
        return f"{self.key}:{self.value}"


@dataclass
class FlatGraph:
    """What a reader found: attributes are strings (or numbers), nothing is interpreted yet."""

    name: str = ""
    attrs: dict[str, Any] = field(default_factory=dict)
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    edges: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)


def to_ir(flat: FlatGraph, source: str, back_edge: BackEdgeRule | str | None = None) -> DataflowGraph:
    """Apply the conventions of the module docstring and validate; an empty graph is an error."""
    rule = BackEdgeRule.parse(back_edge, source) if back_edge is not None else BackEdgeRule()
    if not flat.nodes:
        raise InputError(source, "", "the graph has no nodes")
    name = flat.name or Path(source).stem or "graph"
    graph = DataflowGraph(str(name), dict(flat.attrs), source=source)
    if rule != BackEdgeRule():
        graph.attrs.setdefault("back_edge", str(rule))
    for node, attrs in flat.nodes.items():
        _add_node(graph, str(node), dict(attrs), source)
    for src, dst, attrs in flat.edges:
        _add_edge(graph, str(src), str(dst), dict(attrs), rule, source)
    try:
        return graph.validate()
    except InputError as exc:
        if not exc.field.startswith("cycle"):
            raise
        raise InputError(exc.source, exc.field, f"{exc.problem}, or name how this file marks back edges "
                                                f"(--set workload.back_edge=ATTRIBUTE:VALUE; now {rule})") from None


def _add_node(graph: DataflowGraph, name: str, attrs: dict[str, Any], source: str) -> None:
    where = f"node '{name}'"
    resources = {}
    for key in list(attrs):
        for prefix in ("resource.", "res_"):
            if key.startswith(prefix):
                resources[key[len(prefix):]] = number(attrs.pop(key), source, f"{where}.{key}", minimum=0.0)
    kind = str(attrs.pop("kind", "op"))
    op = operation(attrs)
    attrs.pop("op", None)
    shape = None
    if _SHAPE.match(str(attrs.get("shape", ""))):  # a tensor shape; DOT's shape=box is a drawing attribute
        shape = _shape(attrs.pop("shape"), source, f"{where}.shape")
    dtype = attrs.pop("dtype", None)
    graph.add_node(name, kind, op=op, resources=resources, shape=shape, dtype=str(dtype) if dtype else None,
                   attrs=attrs)


def operation(attrs: dict[str, Any]) -> str:
    """The node's operation name by the conventions of the module docstring ("" when none is given)."""
    for key in ("op", "opcode"):
        if str(attrs.get(key, "")).strip():
            return str(attrs[key]).strip()
    if str(attrs.get("type", "")).strip().lower() in ("input", "output", "const"):
        return str(attrs["type"]).strip().lower()
    label = str(attrs.get("label", "")).strip()
    if label.startswith("(") and ")" in label:  # "(3) add": an id in parentheses first
        label = label.split(")", 1)[1].strip()
    if label.startswith("%") and "=" in label:  # an LLVM instruction "%x = add nsw i32 %a, %b"
        label = label.split("=", 1)[1].strip()
    words = label.replace("\\n", " ").replace(",", " ").split()
    return words[0] if words else ""


def _add_edge(graph: DataflowGraph, src: str, dst: str, attrs: dict[str, Any], rule: BackEdgeRule,
              source: str) -> None:
    where = f"edge '{src}'->'{dst}'"
    for end in (src, dst):
        if end not in graph:
            raise InputError(source, where, f"dangling edge: no node named '{end}'")
    distance = attrs.get("distance", attrs.get("nextiter"))
    if distance is not None:
        distance = int(number(distance, source, f"{where}.distance", minimum=0, maximum=2**31))
    back = BackEdgeRule().matches(attrs) or rule.matches(attrs) or bool(distance)
    tokens = 0
    if back:
        given = attrs.get("init_tokens", distance or 1)
        tokens = int(number(given, source, f"{where}.init_tokens", minimum=0, maximum=2**31))
    elif "init_tokens" in attrs and number(attrs["init_tokens"], source, f"{where}.init_tokens") != 0:
        raise InputError(source, f"{where}.init_tokens", "only back edges (loop_carried) carry initial tokens")
    dst_port = attrs.get("dst_port", attrs.get("operand", attrs.get("headport", "in")))
    known = {"kind", "width_bits", "activation", "src_port", "dst_port", "loop_carried", "init_tokens", "distance",
             "nextiter"}
    graph.add_edge(
        src, dst, str(attrs.get("kind", "tensor")),
        width_bits=int(number(attrs.get("width_bits", 32), source, f"{where}.width_bits", minimum=1, maximum=2**32)),
        activation=number(attrs.get("activation", 1.0), source, f"{where}.activation", minimum=0.0, maximum=1.0),
        src_port=str(attrs.get("src_port", attrs.get("tailport", "out"))), dst_port=str(dst_port),
        loop_carried=back, init_tokens=tokens,
        attrs={k: v for k, v in attrs.items() if k not in known},
    )


def number(value: Any, source: str, where: str, *, minimum: float | None = None,
           maximum: float | None = 1e18) -> float:
    """A finite number within [minimum, maximum], or an InputError naming the field."""
    try:
        out = float(value)
    except (TypeError, ValueError, OverflowError):
        raise InputError(source, where, f"expected a number, got {value!r}") from None
    if not math.isfinite(out):
        raise InputError(source, where, f"expected a finite number, got {value!r}")
    if minimum is not None and out < minimum:
        raise InputError(source, where, f"must be at least {minimum:g}, got {out:g}")
    if maximum is not None and out > maximum:
        raise InputError(source, where, f"must be at most {maximum:g}, got {out:g}")
    return out


def _shape(value: Any, source: str, where: str) -> tuple[int, ...] | None:
    if value in (None, ""):
        return None
    try:
        dims = tuple(int(d) for d in str(value).replace(",", "x").split("x") if d.strip())
    except ValueError:
        raise InputError(source, where, f"expected a shape like 2x3x4, got {value!r}") from None
    if any(d < 0 or d > 2**40 for d in dims):
        raise InputError(source, where, f"dimensions must be in [0, 2^40], got {value!r}")
    return dims
