"""Typed dataflow graph over ``networkx.MultiDiGraph``: the one graph IR every target maps.

Nodes
    ``kind`` ∈ {op, memory, io, control, hierarchy}; ``op`` names the operation (``"add"``, ``"Conv"``,
    ``"sram"``, ...); ``resources`` is a named resource vector (vocabulary below); optional tensor
    ``shape``/``dtype``; optional ``accuracy`` budgets (relative L1/L2 error, ApproxHPVM); ``replication``
    gives HPVM dynamic instances (up to 3-D); a hierarchy node holds a ``child`` graph; ``attrs`` holds
    anything else (JSON-serialisable).

Edges
    ``kind`` ∈ {vector, scalar, token, tensor} — vector data (16-word Plasticine vectors), scalar data,
    1-bit control tokens, whole tensors (ONNX / HPVM graphs); ``loop_carried`` marks a back edge
    (a loop-carried dependency that carries ``init_tokens`` initial values, so it may close a cycle);
    ``width_bits``; ``activation`` ∈ [0, 1] = fraction of cycles the link is active; ``src_port`` names
    the produced value and ``dst_port`` the consumer's input; ``pattern`` (HPVM) is ``one_to_one`` or
    ``all_to_all`` between replicated nodes.

Broadcast groups
    One produced value read by many consumers is one logical link: all out-edges of a node that
    share ``src_port`` form a broadcast group with key ``(src, src_port)``. Partitioning counts a
    broadcast once toward output arity; routing carries it as one tree.

Resource vocabulary (free-form, these names are shared): ``ops`` (operations), ``stages`` (pipeline
stages), ``lanes`` (SIMD lanes), ``sram_bytes``, ``banks``, ``macs``, ``flops``, ``weights``
(parameter count), ``weight_bytes``, ``vin``/``vout``/``sin``/``sout`` (port demands).

Validation (``validate()``, also run by every loader): unknown kinds, dangling edges, negative sizes,
activation outside [0, 1], a cycle made only of forward (non-loop-carried) edges — each reported as an
:class:`~solvermap.errors.InputError` that names the element.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import networkx as nx

from solvermap.errors import InputError


class NodeKind(StrEnum):
    OP = "op"
    MEMORY = "memory"
    IO = "io"
    CONTROL = "control"
    HIERARCHY = "hierarchy"


class EdgeKind(StrEnum):
    VECTOR = "vector"
    SCALAR = "scalar"
    TOKEN = "token"
    TENSOR = "tensor"


class Pattern(StrEnum):
    ONE_TO_ONE = "one_to_one"
    ALL_TO_ALL = "all_to_all"


DTYPES = ("bool", "int1", "int4", "int8", "uint8", "int16", "uint16", "int32", "int64",
          "float8", "float16", "bfloat16", "float32", "float64", "fixed16")


def dtype_bits(dtype: str) -> int:
    """Bits per element of a dtype name (``fixed16`` is PUMA's 16-bit fixed point)."""
    if dtype in ("bool", "int1"):
        return 1
    digits = "".join(ch for ch in dtype if ch.isdigit())
    if not digits:
        raise InputError("", "dtype", f"unknown dtype {dtype!r}")
    return int(digits)


@dataclass(frozen=True)
class Accuracy:
    """Per-op relative error budgets (ApproxHPVM, seed 000 Ch. 5): ‖ΔY‖₁/‖Y‖₁ and ‖ΔY‖₂/‖Y‖₂."""

    l1_budget: float | None = None
    l2_budget: float | None = None


@dataclass(frozen=True)
class Node:
    """Read-only view of one node's attributes."""

    name: str
    kind: NodeKind
    op: str = ""
    resources: Mapping[str, float] = field(default_factory=dict)
    shape: tuple[int, ...] | None = None
    dtype: str | None = None
    accuracy: Accuracy | None = None
    replication: tuple[int, ...] = ()
    child: DataflowGraph | None = None
    attrs: Mapping[str, Any] = field(default_factory=dict)

    def resource(self, name: str, default: float = 0.0) -> float:
        return float(self.resources.get(name, default))

    @property
    def instances(self) -> int:
        count = 1
        for extent in self.replication:
            count *= extent
        return count


@dataclass(frozen=True)
class Edge:
    """Read-only view of one edge's attributes; ``key`` disambiguates parallel edges."""

    src: str
    dst: str
    key: int
    kind: EdgeKind = EdgeKind.TENSOR
    width_bits: int = 32
    activation: float = 1.0
    src_port: str = "out"
    dst_port: str = "in"
    loop_carried: bool = False
    init_tokens: int = 0
    pattern: Pattern = Pattern.ONE_TO_ONE
    shape: tuple[int, ...] | None = None
    dtype: str | None = None
    attrs: Mapping[str, Any] = field(default_factory=dict)

    @property
    def group(self) -> tuple[str, str]:
        """Broadcast group: one produced value (``src``, ``src_port``) is one logical link."""
        return (self.src, self.src_port)


_NODE_FIELDS = ("kind", "op", "resources", "shape", "dtype", "accuracy", "replication", "child", "attrs")
_EDGE_FIELDS = ("kind", "width_bits", "activation", "src_port", "dst_port", "loop_carried", "init_tokens",
                "pattern", "shape", "dtype", "attrs")


class DataflowGraph:
    """A typed dataflow graph; the underlying ``networkx.MultiDiGraph`` is ``self.nx``."""

    def __init__(self, name: str = "graph", attrs: Mapping[str, Any] | None = None, *, source: str = "") -> None:
        self.nx: nx.MultiDiGraph = nx.MultiDiGraph(name=name)
        self.name = name
        self.attrs: dict[str, Any] = dict(attrs or {})
        self.binds: list[Bind] = []
        self.source = source  # file the graph came from, for error messages

    # ------------------------------------------------------------------ construction
    def add_node(
        self,
        name: str,
        kind: NodeKind | str = NodeKind.OP,
        *,
        op: str = "",
        resources: Mapping[str, float] | None = None,
        shape: Iterable[int] | None = None,
        dtype: str | None = None,
        accuracy: Accuracy | None = None,
        replication: Iterable[int] = (),
        child: DataflowGraph | None = None,
        attrs: Mapping[str, Any] | None = None,
    ) -> str:
        name = str(name)
        if name in self.nx:
            raise InputError(self.source, f"node '{name}'", "duplicate node name")
        kind = _node_kind(kind, self.source, name)
        self.nx.add_node(
            name,
            kind=kind,
            op=op,
            resources={str(k): float(v) for k, v in (resources or {}).items()},
            shape=tuple(int(d) for d in shape) if shape is not None else None,
            dtype=dtype,
            accuracy=accuracy,
            replication=tuple(int(r) for r in replication),
            child=child,
            attrs=dict(attrs or {}),
        )
        self._check_node(name)
        return name

    def add_edge(
        self,
        src: str,
        dst: str,
        kind: EdgeKind | str = EdgeKind.TENSOR,
        *,
        width_bits: int = 32,
        activation: float = 1.0,
        src_port: str = "out",
        dst_port: str = "in",
        loop_carried: bool = False,
        init_tokens: int = 0,
        pattern: Pattern | str = Pattern.ONE_TO_ONE,
        shape: Iterable[int] | None = None,
        dtype: str | None = None,
        attrs: Mapping[str, Any] | None = None,
    ) -> int:
        for end in (src, dst):
            if end not in self.nx:
                raise InputError(self.source, f"edge '{src}'->'{dst}'", f"dangling edge: no node named '{end}'")
        label = f"edge '{src}'->'{dst}'"
        key = self.nx.add_edge(
            src,
            dst,
            kind=_edge_kind(kind, self.source, label),
            width_bits=int(width_bits),
            activation=float(activation),
            src_port=str(src_port),
            dst_port=str(dst_port),
            loop_carried=bool(loop_carried),
            init_tokens=int(init_tokens),
            pattern=_pattern(pattern, self.source, label),
            shape=tuple(int(d) for d in shape) if shape is not None else None,
            dtype=dtype,
            attrs=dict(attrs or {}),
        )
        self._check_edge(src, dst, key)
        return key

    def set_node(self, name: str, **changes: Any) -> None:
        """Change attributes of an existing node (validated like ``add_node``)."""
        if name not in self.nx:
            raise InputError(self.source, f"node '{name}'", "no such node")
        for key, value in changes.items():
            if key not in _NODE_FIELDS:
                raise InputError(self.source, f"node '{name}'", f"unknown attribute {key!r}")
            if key == "kind":
                value = _node_kind(value, self.source, name)
            self.nx.nodes[name][key] = value
        self._check_node(name)

    def set_edge(self, src: str, dst: str, key: int, **changes: Any) -> None:
        data = self.nx.edges[src, dst, key]
        for name, value in changes.items():
            if name not in _EDGE_FIELDS:
                raise InputError(self.source, f"edge '{src}'->'{dst}'", f"unknown attribute {name!r}")
            data[name] = value
        self._check_edge(src, dst, key)

    def remove_node(self, name: str) -> None:
        self.nx.remove_node(name)

    def remove_edge(self, src: str, dst: str, key: int) -> None:
        self.nx.remove_edge(src, dst, key)

    # ------------------------------------------------------------------ typed access
    def __contains__(self, name: object) -> bool:
        return name in self.nx

    def __len__(self) -> int:
        return self.nx.number_of_nodes()

    def node(self, name: str) -> Node:
        data = self.nx.nodes[name]
        return Node(name=name, **{k: data[k] for k in _NODE_FIELDS})

    def nodes(self, kind: NodeKind | str | None = None) -> Iterator[Node]:
        for name in self.nx.nodes:
            node = self.node(name)
            if kind is None or node.kind == kind:
                yield node

    def node_names(self) -> list[str]:
        return list(self.nx.nodes)

    def edge(self, src: str, dst: str, key: int) -> Edge:
        data = self.nx.edges[src, dst, key]
        return Edge(src=src, dst=dst, key=key, **{k: data[k] for k in _EDGE_FIELDS})

    def edges(self, kind: EdgeKind | str | None = None) -> Iterator[Edge]:
        for src, dst, key in self.nx.edges(keys=True):
            edge = self.edge(src, dst, key)
            if kind is None or edge.kind == kind:
                yield edge

    def in_edges(self, name: str) -> list[Edge]:
        return [self.edge(s, d, k) for s, d, k in self.nx.in_edges(name, keys=True)]

    def out_edges(self, name: str) -> list[Edge]:
        return [self.edge(s, d, k) for s, d, k in self.nx.out_edges(name, keys=True)]

    def forward_edges(self) -> list[Edge]:
        return [e for e in self.edges() if not e.loop_carried]

    def broadcast_groups(self) -> dict[tuple[str, str], list[Edge]]:
        """Logical links: produced value (src, src_port) → the edges that read it."""
        groups: dict[tuple[str, str], list[Edge]] = {}
        for edge in self.edges():
            groups.setdefault(edge.group, []).append(edge)
        return groups

    def forward_digraph(self) -> nx.DiGraph:
        """Simple digraph of the forward (non-loop-carried) edges, for orders and reachability."""
        graph = nx.DiGraph()
        graph.add_nodes_from(self.nx.nodes)
        graph.add_edges_from((e.src, e.dst) for e in self.edges() if not e.loop_carried)
        return graph

    def topological_order(self) -> list[str]:
        return list(nx.lexicographical_topological_sort(self.forward_digraph()))

    def total(self, resource: str) -> float:
        return sum(n.resource(resource) for n in self.nodes())

    def copy(self) -> DataflowGraph:
        twin = DataflowGraph(self.name, dict(self.attrs), source=self.source)
        twin.nx = self.nx.copy()
        twin.binds = list(self.binds)
        return twin

    def summary(self) -> dict[str, Any]:
        kinds: dict[str, int] = {}
        for node in self.nodes():
            kinds[str(node.kind)] = kinds.get(str(node.kind), 0) + 1
        return {"name": self.name, "nodes": len(self), "edges": self.nx.number_of_edges(),
                "node_kinds": kinds, "logical_links": len(self.broadcast_groups())}

    # ------------------------------------------------------------------ validation
    def validate(self) -> DataflowGraph:
        """Raise :class:`InputError` naming the first bad element; returns ``self`` for chaining."""
        for name in self.nx.nodes:
            self._check_node(name)
        for src, dst, key in self.nx.edges(keys=True):
            self._check_edge(src, dst, key)
        forward = self.forward_digraph()
        if not nx.is_directed_acyclic_graph(forward):
            cycle = nx.find_cycle(forward)
            path = " -> ".join([u for u, _ in cycle] + [cycle[-1][1]])
            raise InputError(self.source, f"cycle {path}",
                             "cycle of forward edges; mark the edge that closes a loop as loop_carried")
        for bind in self.binds:
            if bind.node not in self.nx:
                raise InputError(self.source, f"bind '{bind.port}'", f"binds to unknown node '{bind.node}'")
        for node in self.nodes(NodeKind.HIERARCHY):
            if node.child is not None:
                node.child.validate()
        return self

    def _check_node(self, name: str) -> None:
        data = self.nx.nodes[name]
        where = f"node '{name}'"
        _node_kind(data.get("kind"), self.source, name)
        for res, amount in data["resources"].items():
            if amount < 0:
                raise InputError(self.source, f"{where}.resources.{res}", f"negative size {amount:g}")
        if data["shape"] is not None and any(d < 0 for d in data["shape"]):
            raise InputError(self.source, f"{where}.shape", f"negative dimension in {list(data['shape'])}")
        if data["dtype"] is not None and data["dtype"] not in DTYPES:
            raise InputError(self.source, f"{where}.dtype", f"unknown dtype {data['dtype']!r}")
        replication = data["replication"]
        if len(replication) > 3 or any(r < 1 for r in replication):
            raise InputError(self.source, f"{where}.replication", f"need 1 to 3 extents >= 1, got {list(replication)}")
        acc = data["accuracy"]
        if acc is not None:
            for label, budget in (("l1_budget", acc.l1_budget), ("l2_budget", acc.l2_budget)):
                if budget is not None and budget < 0:
                    raise InputError(self.source, f"{where}.accuracy.{label}", f"negative budget {budget:g}")
        if data["kind"] == NodeKind.HIERARCHY and data["child"] is None:
            raise InputError(self.source, where, "hierarchy node without a child graph")
        if data["kind"] != NodeKind.HIERARCHY and data["child"] is not None:
            raise InputError(self.source, where, f"{data['kind']} node cannot hold a child graph")

    def _check_edge(self, src: str, dst: str, key: int) -> None:
        data = self.nx.edges[src, dst, key]
        where = f"edge '{src}'->'{dst}'"
        _edge_kind(data.get("kind"), self.source, where)
        if data["width_bits"] <= 0:
            raise InputError(self.source, f"{where}.width_bits", f"width must be positive, got {data['width_bits']}")
        if not 0.0 <= data["activation"] <= 1.0:
            raise InputError(self.source, f"{where}.activation", f"activation must be in [0, 1], got {data['activation']:g}")
        if data["init_tokens"] < 0:
            raise InputError(self.source, f"{where}.init_tokens", "negative initial tokens")
        if data["init_tokens"] and not data["loop_carried"]:
            raise InputError(self.source, f"{where}.init_tokens", "only loop-carried edges carry initial tokens")
        if data["shape"] is not None and any(d < 0 for d in data["shape"]):
            raise InputError(self.source, f"{where}.shape", f"negative dimension in {list(data['shape'])}")


@dataclass(frozen=True)
class Bind:
    """HPVM bind edge: a parent's input (``direction='in'``) or output port bound to a child node's port."""

    direction: str  # "in" or "out"
    port: str  # parent-side port name
    node: str  # child node
    node_port: str = "in"


def _node_kind(value: Any, source: str, name: str) -> NodeKind:
    try:
        return NodeKind(value)
    except ValueError:
        raise InputError(source, f"node '{name}'.kind",
                         f"unknown kind {value!r}; expected one of {', '.join(k.value for k in NodeKind)}") from None


def _edge_kind(value: Any, source: str, label: str) -> EdgeKind:
    try:
        return EdgeKind(value)
    except ValueError:
        raise InputError(source, f"{label}.kind",
                         f"unknown kind {value!r}; expected one of {', '.join(k.value for k in EdgeKind)}") from None


def _pattern(value: Any, source: str, label: str) -> Pattern:
    try:
        return Pattern(value)
    except ValueError:
        raise InputError(source, f"{label}.pattern",
                         f"unknown pattern {value!r}; expected one_to_one or all_to_all") from None
