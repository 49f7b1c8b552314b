"""Virtual-block dataflow graphs (VBDFG, seed 004 §4.1–4.2, L495–553) built on the shared graph IR.

SARA's VB allocation turns a Spatial program into actors, memories and streams (L514–518). Here a
VBDFG is a :class:`~solvermap.ir.graph.DataflowGraph` with these conventions:

Nodes
    ``op``      one operation of an actor. ``attrs.actor`` names the actor (one per innermost-loop basic
                block, L514); ``resources.ops`` = 1; ``attrs.lanes`` 16 for vector ops, 1 for scalar;
                ``attrs.int`` marks integer address arithmetic (fits PMU/DAG scalar pipelines, L481/L489);
                op ``reduce`` is a cross-lane reduction (vector in, scalar out).
    ``memory``  a virtual on-chip memory: the storage node ``M`` (``op`` sram; ``resources.sram_bytes``,
                ``resources.banks`` = virtual banks, ``attrs.buffers`` = multi-buffering depth, L527) and
                one context node per access, ``M.rd<k>`` (``op`` sram_read) or ``M.wr<k>``
                (``op`` sram_write), each with ``attrs.memory`` = M and ``attrs.access`` = the declared
                access it is an unrolled copy of (if any), because a PMU serves accesses from
                independently triggered contexts (L481–483). No edge joins them: the order of a write
                and a later read is the token of the p2p scheme, so the forward graph stays acyclic.
    ``io``      a DRAM stream (``op`` dram_load / dram_store; one DAG each, L489) or the host (``host``).
Edges
    ``vector`` (16 words) / ``scalar`` (32-bit) data, ``token`` 1-bit control (the p2p access grants,
    L518, L531–535; ``loop_carried`` with ``init_tokens`` for LCD tokens and accumulators).
    ``attrs.src_every`` k: the producer sends one value every k firings (e.g. a per-tile reduction);
    ``attrs.dst_every`` k: the consumer reads one value every k firings (a broadcast scalar reused by the
    inner loop). ``src_port`` names the value (broadcast group).
Graph attrs
    ``actors``: actor → {firings, loop}; ``app``/``par``/``data_size``: what was built.

Memory accesses follow the request/response split (L533): a read of memory M by actor A creates a
request actor ``A.rq.M`` (integer address ops) sending a scalar address to M and M sending the data to A;
a write sends address and data from the writer and M acknowledges to a response actor ``A.ws.M``, whose
token grants the next access in program order (RAW/WAR tokens, L531–535).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from solvermap.errors import InputError
from solvermap.ir.graph import DataflowGraph, EdgeKind, NodeKind

LANES = 16
WORD_BYTES = 4


@dataclass(frozen=True)
class Value:
    """A produced value: node, port, kind and the firings of its producer."""

    node: str
    port: str
    kind: str  # "vector" | "scalar" | "token"
    firings: int


@dataclass
class Actor:
    app: AppBuilder
    name: str
    firings: int
    ops: list[str] = field(default_factory=list)

    def op(self, opname: str, *inputs: Value | float, vector: bool | None = None, integer: bool = False,
           label: str = "") -> Value:
        """Add one operation (one pipeline stage) reading ``inputs``; constants are immediates."""
        real = [v for v in inputs if isinstance(v, Value)]
        if vector is None:
            vector = opname != "reduce" and any(v.kind == "vector" for v in real)
        node = f"{self.name}.{label or opname}{len(self.ops)}"
        lanes = LANES if (vector or opname == "reduce") else 1
        self.app.g.add_node(node, NodeKind.OP, op=opname, resources={"ops": 1},
                            attrs={"actor": self.name, "lanes": lanes, "int": integer})
        self.ops.append(node)
        for v in real:
            self.app.connect(v, node, self.firings)
        return Value(node, "out", "vector" if vector else "scalar", self.firings)

    def accumulate(self, opname: str, value: Value, *, label: str = "acc") -> Value:
        """An accumulator: ``acc = acc ∘ value``, the loop-carried self edge holds one initial token."""
        out = self.op(opname, value, vector=value.kind == "vector", label=label)
        self.app.g.add_edge(out.node, out.node, EdgeKind(out.kind), src_port="out", dst_port="carry",
                            loop_carried=True, init_tokens=1)
        return out

    def tree(self, opname: str, values: list[Value], *, label: str = "") -> Value:
        """Balanced reduction tree of a binary operator."""
        level = list(values)
        while len(level) > 1:
            nxt = [self.op(opname, level[k], level[k + 1], label=label or opname) for k in range(0, len(level) - 1, 2)]
            if len(level) % 2:
                nxt.append(level[-1])
            level = nxt
        return level[0]


@dataclass
class Memory:
    name: str
    words: int
    banks: int
    buffers: int
    accesses: int = 0


class AppBuilder:
    """Builds one VBDFG; ``finish()`` validates it."""

    def __init__(self, app: str, par: int, data_size: str) -> None:
        if par < 1:
            raise InputError("", "workload.par", f"must be a positive integer, got {par}")
        self.g = DataflowGraph(app, {"app": app, "par": par, "data_size": data_size, "actors": {}})
        self.actors: dict[str, Actor] = {}

    # ------------------------------------------------------------------ actors and streams
    def actor(self, name: str, firings: int, loop: str = "") -> Actor:
        if name in self.actors:
            raise ValueError(f"duplicate actor {name}")
        firings = max(1, int(firings))
        self.actors[name] = Actor(self, name, firings)
        self.g.attrs["actors"][name] = {"firings": firings, "loop": loop}
        return self.actors[name]

    def dram_load(self, name: str, words: int, *, vector: bool = True) -> Value:
        firings = max(1, words // LANES) if vector else max(1, words)
        self.g.add_node(name, NodeKind.IO, op="dram_load", resources={"dags": 1},
                        attrs={"bytes": words * WORD_BYTES, "firings": firings})
        return Value(name, "out", "vector" if vector else "scalar", firings)

    def dram_store(self, name: str, value: Value, words: int) -> None:
        firings = max(1, words // LANES) if value.kind == "vector" else max(1, words)
        self.g.add_node(name, NodeKind.IO, op="dram_store", resources={"dags": 1},
                        attrs={"bytes": words * WORD_BYTES, "firings": firings})
        self.connect(value, name, firings)

    def host_out(self, name: str, value: Value) -> None:
        self.g.add_node(name, NodeKind.IO, op="host", attrs={"firings": 1, "bytes": WORD_BYTES})
        self.connect(value, name, 1)

    def connect(self, value: Value, dst: str, dst_firings: int, *, kind: str | None = None, dst_port: str = "in",
                loop_carried: bool = False, init_tokens: int = 0) -> None:
        # producers send at least what consumers read (floor on the sender, ceil on the reader)
        src_every = max(1, value.firings // dst_firings) if value.firings > dst_firings else 1
        dst_every = max(1, -(-dst_firings // value.firings)) if dst_firings > value.firings else 1
        self.g.add_edge(value.node, dst, EdgeKind(kind or value.kind), src_port=value.port, dst_port=dst_port,
                        loop_carried=loop_carried, init_tokens=init_tokens,
                        width_bits=512 if (kind or value.kind) == "vector" else (1 if (kind or value.kind) == "token" else 32),
                        attrs={"src_every": src_every, "dst_every": dst_every})

    # ------------------------------------------------------------------ memories
    def sram(self, name: str, words: int, *, banks: int = LANES, buffers: int = 1) -> Memory:
        self.g.add_node(name, NodeKind.MEMORY, op="sram",
                        resources={"sram_bytes": words * WORD_BYTES * buffers, "banks": banks},
                        attrs={"buffers": buffers, "words": words, "memory": name})
        return Memory(name, words, banks, buffers)

    def read(self, mem: Memory, reader: Actor, *, vector: bool = True, firings: int | None = None,
             address_ops: int = 1, after: Value | None = None, per: int | None = None, access: str = "") -> Value:
        """A read access of ``mem`` whose response goes to ``reader``: request actor → memory → data.

        ``firings`` is the number of accesses (defaults to the reader's firings); ``after`` is a token
        the request actor waits for (program-order synchronisation): by default interleaved with the
        writer's firings (the reader streams behind the writer); ``per`` = how many tokens in total
        instead (one per iteration of the two accesses' LCA controller, L545: ``per=1`` waits for the
        whole write, e.g. a weight memory filled once per inference). ``access`` names the declared
        access when several unrolled copies of it in ``reader`` issue it (their requests are merged by
        decomposition, L627); accesses of different readers must not share a name."""
        firings = firings or reader.firings
        mem.accesses += 1
        req = self.actor(f"{reader.name}.rq.{mem.name}{mem.accesses}", firings, loop="request")
        streamed = after is not None and per is None
        addr = req.op("addr", *([after] if streamed else []), vector=False, integer=True)
        if after is not None and per is not None:
            self.token(after, req, per=per)
        for _ in range(address_ops - 1):
            addr = req.op("addr", addr, vector=False, integer=True)
        ctx = f"{mem.name}.rd{mem.accesses}"
        self.g.add_node(ctx, NodeKind.MEMORY, op="sram_read",
                        attrs={"memory": mem.name, "firings": firings, "access": access})
        self.connect(addr, ctx, firings, dst_port="raddr")
        return Value(ctx, "data", "vector" if vector else "scalar", firings)

    def write(self, mem: Memory, writer: Actor, value: Value, *, address_ops: int = 1, access: str = "") -> Value:
        """A write access: address computed in the writer, data and address to the memory; the memory
        acknowledges to a response actor whose token (returned) marks the access done (L533)."""
        mem.accesses += 1
        addr = writer.op("addr", vector=False, integer=True)
        for _ in range(address_ops - 1):
            addr = writer.op("addr", addr, vector=False, integer=True)
        ctx = f"{mem.name}.wr{mem.accesses}"
        self.g.add_node(ctx, NodeKind.MEMORY, op="sram_write",
                        attrs={"memory": mem.name, "firings": writer.firings, "access": access})
        self.connect(addr, ctx, writer.firings, dst_port="waddr")
        self.connect(value, ctx, writer.firings, dst_port="wdata")
        ack = Value(ctx, "ack", "token", writer.firings)
        resp = self.actor(f"{writer.name}.ws.{mem.name}{mem.accesses}", writer.firings, loop="response")
        done = resp.op("count", ack, vector=False, integer=True)
        return Value(done.node, "out", "token", writer.firings)

    def token(self, value: Value, dst_actor: Actor, *, per: int | None = None, loop_carried: bool = False,
              init_tokens: int = 0) -> None:
        """A p2p token from ``value``'s producer to the first op of ``dst_actor`` (an access grant).

        ``per`` = how many tokens in total (one per iteration of the two accesses' LCA controller, L545);
        by default one per producer firing. ``init_tokens`` pre-loads a loop-carried token (1, or the
        buffer depth of a multi-buffered memory, L535)."""
        first = dst_actor.ops[0]
        port = value.port if value.kind == "token" else "done"
        if per is None:
            self.connect(Value(value.node, port, "token", value.firings), first, dst_actor.firings, kind="token",
                         dst_port="grant", loop_carried=loop_carried, init_tokens=init_tokens)
            return
        per = max(1, per)
        width = 1
        self.g.add_edge(value.node, first, EdgeKind.TOKEN, src_port=port, dst_port="grant", width_bits=width,
                        loop_carried=loop_carried, init_tokens=init_tokens,
                        attrs={"src_every": max(1, value.firings // per), "dst_every": max(1, -(-dst_actor.firings // per))})

    def finish(self) -> DataflowGraph:
        for name, actor in self.actors.items():
            if not actor.ops:
                raise ValueError(f"actor {name} has no operations")
        return self.g.validate()


def actor_of(graph: DataflowGraph, node: str) -> str:
    """The VB a node starts in: its actor for ops, its memory for both memory contexts, else itself."""
    data = graph.nx.nodes[node]
    if data["kind"] == NodeKind.OP:
        return data["attrs"]["actor"]
    if data["kind"] == NodeKind.MEMORY:
        return data["attrs"].get("memory", node)
    return node


def firings_of(graph: DataflowGraph, node: str) -> int:
    data = graph.nx.nodes[node]
    if data["kind"] == NodeKind.OP:
        return int(graph.attrs["actors"][data["attrs"]["actor"]]["firings"])
    return int(data["attrs"].get("firings", 1))


def describe(graph: DataflowGraph) -> dict[str, Any]:
    ops = [n for n in graph.nodes() if n.kind == NodeKind.OP]
    return {"app": graph.attrs.get("app"), "par": graph.attrs.get("par"), "actors": len(graph.attrs.get("actors", {})),
            "ops": len(ops), "memories": sum(1 for n in graph.nodes() if n.kind == NodeKind.MEMORY and n.op == "sram"),
            "streams": sum(1 for n in graph.nodes() if n.kind == NodeKind.IO), "edges": graph.nx.number_of_edges()}
