"""Generic lowering of any dataflow graph (a DFG from a DOT, GraphML, XML or JSON file) to a Plasticine VBDFG.

A DFG from a CGRA tool is the body of one loop iteration: operations, loads and stores of arrays,
live-in and live-out values, constants, back edges. SARA's VB allocation (seed 004 §4.2, L514–518)
turns a program into actors, memories and streams; this module does the same for a DFG, producing the
VBDFG conventions of :mod:`solvermap.ir.workloads.plasticine_vbdfg`, so the rest of the pipeline
(decompose → partition → merge → simulate) runs unchanged.

Roles, by the node's operation name (case-insensitive; :data:`LOADS`, :data:`STORES`, :data:`INPUTS`,
:data:`OUTPUTS`, :data:`CONSTANTS`; an ``io`` node is an input without producers, else an output):

* **operations** become ops of their loop's **actor**: one actor for the whole graph, or one per loop
  when nodes carry a ``loop`` attribute (in DOT, ``subgraph cluster_l { node [loop=l]; … }``). Each op's
  stages, lanes (vector = every PCU lane, scalar = one) and integer flag come from the target's **op
  table** (``ops`` in the preset, :class:`~solvermap.hardware.plasticine.OpCost`); an operation whose
  results only feed memory addresses (address arithmetic) is scalar integer whatever its name (O2), and
  goes to the loop's address actor ``<loop>.addr``, which like SARA's request actors (L533) may merge
  onto a PMU or DAG;
* **loads and stores** access an on-chip array (a PMU virtual memory, L481–483): one memory per
  ``array`` attribute (Morpher's ``BasePointerName``; a node without one is its own array) of
  ``array_bytes`` (else :data:`DEFAULT_ARRAY_BYTES`), with one read or write context per access. The
  address is the access's address operand (one producer: a direct scalar link; several, e.g. address and
  predicate: an ``addr`` op of the address actor combines them; none: a request actor ``…rq…`` with one
  ``addr`` op, as SARA's VB allocation builds). A store's address operand is its second operand (``I2``
  in Morpher, ``operand=1`` in CGRA-ME, LLVM's ``store value, pointer`` order) or an address-slice
  producer; its data is the other;
* **inputs** (live-ins) are DRAM load streams and **outputs** (live-outs) DRAM store streams (one DAG
  each, L489); **constants** are immediates of their consumers and take no stage.

Firings. ``trip_count`` (``--set workload.trip_count=N``, else the graph attribute
``trip_count.<loop>`` or ``trip_count``, else :data:`DEFAULT_TRIP_COUNT`) iterations of a loop fire its
actor ``⌈trip_count / lanes⌉`` times when it has a vector operation (the loop is vectorized over the PCU
lanes, as Spatial does innermost loops), else ``trip_count`` times. Edges between loops of different
firings carry the rates of :class:`~solvermap.ir.workloads.plasticine_vbdfg.AppBuilder`.

Back edges keep their initial tokens (at least one: a value of an earlier iteration). A graph that
already names its actors (``attrs.actors``) is a VBDFG and is checked, not lowered (:func:`check_actors`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from solvermap.errors import InputError
from solvermap.hardware.plasticine import PlasticineSpec
from solvermap.ir.graph import DataflowGraph, Edge, EdgeKind, NodeKind

DEFAULT_TRIP_COUNT = 1024  # iterations of a loop whose trip count neither the file nor --set gives
DEFAULT_ARRAY_BYTES = 16 * 1024  # an array of unknown size: one PMU bank (preset A6)
WORD_BYTES = 4

LOADS = frozenset({"load", "ld", "loadb", "oload", "lod", "read", "sram_read"})
STORES = frozenset({"store", "st", "storeb", "ostore", "str", "write", "sram_write"})
INPUTS = frozenset({"input", "in", "livein", "live_in", "arg"})
OUTPUTS = frozenset({"output", "out", "liveout", "live_out", "ret"})
CONSTANTS = frozenset({"const", "constant", "movc", "imm", "immediate"})
_ADDRESS_PORTS = frozenset({"i2", "1", "addr", "address", "waddr", "raddr", "ptr", "pointer"})
_DATA_PORTS = frozenset({"i1", "0", "data", "value", "wdata", "val"})


@dataclass(frozen=True)
class _Value:
    """Where a DFG node's value comes from in the VBDFG (None: a constant, an immediate)."""

    node: str
    port: str
    kind: str
    actor: str


def needs_lowering(graph: DataflowGraph) -> bool:
    return "actors" not in graph.attrs


def lower(graph: DataflowGraph, spec: PlasticineSpec, params: Mapping[str, Any] | None = None) -> DataflowGraph:
    """The VBDFG of ``graph`` (see the module docstring); InputError for what cannot be lowered."""
    return _Lowering(graph, spec, dict(params or {})).run()


class _Lowering:
    def __init__(self, graph: DataflowGraph, spec: PlasticineSpec, params: dict[str, Any]) -> None:
        self.src, self.spec, self.params = graph, spec, params
        self.source = graph.source
        self.role = {n.name: self._role(n) for n in graph.nodes()}
        self.loop = {n.name: str(n.attrs.get("loop", "") or graph.name or "loop") for n in graph.nodes()}
        self.address = self._address_slice()
        self.reads = self._reads_before()
        self.levels: dict[str, set[int]] = {}
        for name, role in self.role.items():
            if role == "compute":
                self.levels.setdefault(self.loop[name], set()).add(self.reads[name])
        self.g = DataflowGraph(graph.name, {k: v for k, v in graph.attrs.items() if k != "actors"}, source=self.source)
        self.g.attrs.update({"app": graph.name, "lowered_from": "dataflow graph", "actors": {}})
        self.firings = {loop: self._firings(loop) for loop in sorted(set(self.loop.values()))}
        self.values: dict[str, _Value | None] = {}
        self.memories: dict[str, int] = {}

    # ------------------------------------------------------------------ classification
    def _role(self, node) -> str:
        if node.kind in (NodeKind.MEMORY, NodeKind.HIERARCHY):
            raise InputError(self.source, f"node '{node.name}'",
                             f"a {node.kind} node in a graph without actors; write array accesses as load/store "
                             "operations (with an 'array' attribute) to lower it onto Plasticine")
        if node.kind == NodeKind.IO:
            return "input" if not self.src.in_edges(node.name) else "output"
        op = node.op.strip().lower()
        for role, names in (("load", LOADS), ("store", STORES), ("input", INPUTS), ("output", OUTPUTS),
                            ("const", CONSTANTS)):
            if op in names:
                return role
        return "compute"

    def _address_slice(self) -> set[str]:
        """Compute nodes whose every forward result feeds a memory address (directly or through others)."""
        out: set[str] = set()
        for name in reversed(self.src.topological_order()):
            if self.role[name] != "compute":
                continue
            uses = [e for e in self.src.out_edges(name) if not e.loop_carried and e.dst != name]
            if uses and all(self._feeds_address(e, out) for e in uses):
                out.add(name)
        return out

    def _reads_before(self) -> dict[str, int]:
        """Memory reads on the longest forward path into each node (a load's data is one read later)."""
        reads: dict[str, int] = {}
        for name in self.src.topological_order():
            reads[name] = max((reads[e.src] + (self.role[e.src] == "load") for e in self.src.in_edges(name)
                               if not e.loop_carried and e.src != name), default=0)
        return reads

    def _feeds_address(self, edge: Edge, slice_: set[str]) -> bool:
        role = self.role[edge.dst]
        if role == "load":
            return True
        if role == "store":
            return edge in self._store_operands(edge.dst)[0]
        return edge.dst in slice_

    def _store_operands(self, store: str) -> tuple[list[Edge], list[Edge]]:
        """(address edges, data edges) of a store: by operand port, else LLVM order (value, pointer)."""
        ins = [e for e in self.src.in_edges(store) if self.role[e.src] != "const"]
        address = [e for e in ins if e.dst_port.lower() in _ADDRESS_PORTS]
        data = [e for e in ins if e.dst_port.lower() in _DATA_PORTS]
        rest = [e for e in ins if e not in address and e not in data]
        if not data and rest:
            data.append(rest.pop(0))
        address += rest  # a second operand, predicates
        return address, data

    # ------------------------------------------------------------------ firings
    def _trip_count(self, loop: str) -> int:
        if "trip_count" in self.params:
            return int(self.params["trip_count"])
        for key in (f"trip_count.{loop}", "trip_count"):
            if key in self.src.attrs:
                value = self.src.attrs[key]
                try:
                    count = int(float(str(value)))
                except (TypeError, ValueError, OverflowError):
                    count = 0
                if not 1 <= count <= 2**40 or float(str(value)) != count:
                    raise InputError(self.source, f"graph attribute {key}",
                                     f"expected an integer trip count in [1, 2^40], got {value!r}")
                return count
        return DEFAULT_TRIP_COUNT

    def _vector(self, name: str) -> bool:
        return name not in self.address and self.spec.op_cost(self.src.node(name).op).lanes == "vector"

    def _firings(self, loop: str) -> int:
        trip = self._trip_count(loop)
        vector = any(self.loop[n] == loop and self.role[n] == "compute" and self._vector(n) for n in self.role)
        return max(1, math.ceil(trip / self.spec.pcu.lanes)) if vector else trip

    # ------------------------------------------------------------------ building
    def run(self) -> DataflowGraph:
        if not any(role == "compute" for role in self.role.values()):
            raise InputError(self.source, "", "the graph has no operations to map onto PCUs "
                                              "(only loads, stores, inputs, outputs and constants)")
        order = self.src.topological_order()
        for name in order:  # every value first (ops, streams, memory reads), then the links into them
            role = self.role[name]
            if role == "compute":
                self._op(name)
            elif role == "input":
                self._input(name)
            elif role == "load":
                self.values[name] = self._access(name, "sram_read")
            elif role == "const":
                self.values[name] = None
        for name in order:
            role = self.role[name]
            if role == "compute":
                for e in self.src.in_edges(name):
                    self._link(e, name, e.dst_port)
            elif role == "load":
                self._address_into(name, self.src.in_edges(name), "raddr")
            elif role == "store":
                self._store(name)
            elif role == "output":
                self._output(name)
        return self.g.validate()

    def _actor(self, name: str) -> str:
        """The loop's actor for operations after ``reads`` memory reads (``<loop>.r<k>`` when the loop has
        several such levels): a path that leaves an actor through a memory never comes back into it."""
        loop = self.loop[name]
        level = self.reads[name]
        actor = f"{loop}.r{level}" if len(self.levels.get(loop, ())) > 1 else loop
        if actor not in self.g.attrs["actors"]:
            self.g.attrs["actors"][actor] = {"firings": self.firings[loop], "loop": loop}
        return actor

    def _lanes(self, name: str) -> int:
        return self.spec.pcu.lanes if self._vector(name) else 1

    def _op(self, name: str) -> None:
        node = self.src.node(name)
        integer = name in self.address or self.spec.op_cost(node.op).integer
        actor = self._actor(name)
        self.g.add_node(name, NodeKind.OP, op=node.op.strip().lower() or "op", resources={"ops": 1},
                        attrs={"actor": actor, "lanes": self._lanes(name), "int": integer})
        kind = "vector" if self._lanes(name) > 1 and node.op.strip().lower() != "reduce" else "scalar"
        self.values[name] = _Value(name, "out", kind, actor)  # a cross-lane reduction yields a scalar

    def _loop_kind(self, name: str) -> str:
        """Data of a loop that has vector operations travels as vectors."""
        loop = self.loop[name]
        vector = any(self.loop[n] == loop and self.role[n] == "compute" and self._vector(n) for n in self.role)
        return "vector" if vector else "scalar"

    def _input(self, name: str) -> None:
        kind = self._loop_kind(name)
        firings = self.firings[self.loop[name]]
        self.g.add_node(name, NodeKind.IO, op="dram_load", resources={"dags": 1},
                        attrs={"bytes": firings * WORD_BYTES * (self.spec.pcu.lanes if kind == "vector" else 1),
                               "firings": firings})
        self.values[name] = _Value(name, "out", kind, name)

    def _output(self, name: str) -> None:
        producers = [e for e in self.src.in_edges(name) if self.values.get(e.src) is not None]
        if not producers:
            return  # a live-out of a constant: nothing streams
        kind = self._loop_kind(name)
        firings = self.firings[self.loop[name]]
        self.g.add_node(name, NodeKind.IO, op="dram_store", resources={"dags": 1},
                        attrs={"bytes": firings * WORD_BYTES * (self.spec.pcu.lanes if kind == "vector" else 1),
                               "firings": firings})
        for e in producers:
            self._link(e, name, "in")

    def _memory(self, name: str) -> str:
        node = self.src.node(name)
        array = str(node.attrs.get("array", "") or f"{name}.mem")
        if (array in self.src and array != name) or array in self.firings:
            array = f"{array}.mem"
        if array not in self.memories:
            size = node.attrs.get("array_bytes", DEFAULT_ARRAY_BYTES)
            try:
                size = int(float(str(size)))
            except (TypeError, ValueError, OverflowError):
                size = -1
            if not 1 <= size <= 2**40:
                raise InputError(self.source, f"node '{name}'.array_bytes",
                                 f"expected a size in bytes in [1, 2^40], got {node.attrs.get('array_bytes')!r}")
            self.g.add_node(array, NodeKind.MEMORY, op="sram",
                            resources={"sram_bytes": float(size), "banks": float(self.spec.pcu.lanes)},
                            attrs={"buffers": 1, "words": max(1, size // WORD_BYTES), "memory": array})
            self.memories[array] = 0
        self.memories[array] += 1
        return array

    def _access(self, name: str, op: str) -> _Value:
        array = self._memory(name)
        label = "rd" if op == "sram_read" else "wr"
        context = f"{array}.{label}{self.memories[array]}"
        self.g.add_node(context, NodeKind.MEMORY, op=op,
                        attrs={"memory": array, "firings": self.firings[self.loop[name]], "access": "",
                               "dfg_node": name})
        return _Value(context, "data" if op == "sram_read" else "ack", self._loop_kind(name), array)

    def _store(self, name: str) -> None:
        context = self._access(name, "sram_write").node
        address, data = self._store_operands(name)
        source = self._address_into(name, address, "waddr", context)
        data = [e for e in data if self.values.get(e.src) is not None]
        if data:
            self._link(data[0], context, "wdata")
        else:  # a store of a constant: the immediate travels with the address
            self._connect(source, context, "wdata", loop_carried=False, init_tokens=0, dst_loop=self.loop[name])

    def _address_into(self, access: str, edges: list[Edge], port: str, context: str | None = None) -> _Value:
        """Link the address operand(s) of a load or store into its context; returns the address value."""
        context = context or self.values[access].node
        producers = [e for e in edges if self.values.get(e.src) is not None]
        loop = self.loop[access]
        if len(producers) == 1:
            self._link(producers[0], context, port, kind="scalar")
            return self.values[producers[0].src]
        if producers:  # address and predicates combined in the actor of the latest of them
            actor = self._actor(max((e.src for e in producers if self.role[e.src] == "compute"),
                                    key=lambda n: self.reads[n], default=producers[0].src)) \
                if any(self.role[e.src] == "compute" for e in producers) else f"{loop}.rq.{context}"
        else:
            actor = f"{loop}.rq.{context}"
        if actor not in self.g.attrs["actors"]:
            self.g.attrs["actors"][actor] = {"firings": self.firings[loop], "loop": "request"}
        op = f"{actor}.addr.{context}"
        self.g.add_node(op, NodeKind.OP, op="addr", resources={"ops": 1}, attrs={"actor": actor, "lanes": 1, "int": True})
        for e in producers:
            self._link(e, op, e.dst_port, kind="scalar")
        value = _Value(op, "out", "scalar", actor)
        self._connect(value, context, port, loop_carried=False, init_tokens=0, dst_loop=loop)
        return value

    def _link(self, edge: Edge, dst: str, port: str, kind: str | None = None) -> None:
        value = self.values.get(edge.src)
        if value is None:
            return  # a constant operand: an immediate
        tokens = max(1, edge.init_tokens) if edge.loop_carried else 0
        self._connect(value, dst, port, loop_carried=edge.loop_carried, init_tokens=tokens,
                      dst_loop=self.loop[edge.dst], kind=kind)

    def _connect(self, value: _Value, dst: str, port: str, *, loop_carried: bool, init_tokens: int, dst_loop: str,
                 kind: str | None = None) -> None:
        kind = kind or value.kind
        src_firings = self._firings_of(value.node)
        dst_firings = self.firings[dst_loop]
        src_every = max(1, src_firings // dst_firings) if src_firings > dst_firings else 1
        dst_every = max(1, -(-dst_firings // src_firings)) if dst_firings > src_firings else 1
        width = 512 if kind == "vector" else (1 if kind == "token" else 32)
        self.g.add_edge(value.node, dst, EdgeKind(kind), src_port=value.port, dst_port=port, width_bits=width,
                        loop_carried=loop_carried, init_tokens=init_tokens,
                        attrs={"src_every": src_every, "dst_every": dst_every})

    def _firings_of(self, node: str) -> int:
        data = self.g.node(node)
        if data.kind == NodeKind.OP:
            return int(self.g.attrs["actors"][data.attrs["actor"]]["firings"])
        return int(data.attrs.get("firings", 1))


def check_actors(graph: DataflowGraph) -> DataflowGraph:
    """A graph that names its actors must follow the VBDFG conventions the pipeline reads
    (:mod:`solvermap.ir.workloads.plasticine_vbdfg`): InputError naming the first element that does not.

    Flat files carry strings: ``actors`` may be JSON text (a DOT ``actors="{…}"`` graph attribute) and the
    integer attributes (``lanes``, ``firings``, ``src_every``, ``dst_every``) and ``int`` may be strings;
    such a graph is returned as a copy with typed values."""
    source = graph.source
    actors = graph.attrs.get("actors")
    if isinstance(actors, str):
        try:
            actors = json.loads(actors)
        except ValueError:
            raise InputError(source, "attrs.actors", "expected a JSON object of actor name -> {firings, loop}") from None
    if not isinstance(actors, Mapping) or not actors:
        raise InputError(source, "attrs.actors", "expected a mapping of actor name -> {firings, loop}")
    typed = graph.copy()
    typed.attrs = {**graph.attrs, "actors": {}}
    for name, actor in actors.items():
        firings = actor.get("firings") if isinstance(actor, Mapping) else None
        typed.attrs["actors"][str(name)] = {**actor, "firings": _count(firings, source, f"attrs.actors.{name}.firings")}
    ops = 0
    for node in graph.nodes():
        where = f"node '{node.name}'"
        attrs = dict(node.attrs)
        if node.kind == NodeKind.OP:
            ops += 1
            if attrs.get("actor") not in typed.attrs["actors"]:
                raise InputError(source, f"{where}.attrs.actor", f"names no actor of attrs.actors (got {attrs.get('actor')!r})")
            attrs["lanes"] = _count(attrs.get("lanes", 1), source, f"{where}.attrs.lanes")
            attrs["int"] = str(attrs.get("int", False)).strip().lower() in ("1", "true", "yes")
        elif node.kind == NodeKind.MEMORY and node.op in ("sram_read", "sram_write"):
            if attrs.get("memory") not in graph:
                raise InputError(source, f"{where}.attrs.memory", "names no memory node of the graph")
        elif node.kind == NodeKind.HIERARCHY:
            raise InputError(source, where, "a hierarchy node in a Plasticine VBDFG")
        if "firings" in attrs:
            attrs["firings"] = _count(attrs["firings"], source, f"{where}.attrs.firings")
        typed.set_node(node.name, attrs=attrs)
    for edge in graph.edges():
        attrs = dict(edge.attrs)
        for key in ("src_every", "dst_every"):
            if key in attrs:
                attrs[key] = _count(attrs[key], source, f"edge '{edge.src}'->'{edge.dst}'.attrs.{key}")
        typed.set_edge(edge.src, edge.dst, edge.key, attrs=attrs)
    if not ops:
        raise InputError(source, "", "the graph has no operations to map onto PCUs")
    return typed


def _count(value: Any, source: str, where: str) -> int:
    """A positive integer (an int, or its decimal text from a flat file)."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 2**40:
        raise InputError(source, where, f"expected an integer in [1, 2^40], got {value!r}")
    return value
