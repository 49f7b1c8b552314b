"""Virtual memory decomposition (seed 004 §4.3.1, L570–572, L627–631): a transform on the VBDFG.

A virtual memory whose bytes exceed a PMU's capacity or whose virtual banks exceed a PMU's banks is
sharded into ``S = max(⌈bytes / PMU bytes⌉, ⌈banks / PMU banks⌉)`` memory partitions, each holding a
contiguous subset of the virtual banks (L572). Accesses are rewritten as in Fig 4.3 (L627):

* the request actor computes the bank ID (BI) and bank offset (BO) — two integer ops, plus two more
  (sub-bank ID/offset, flattened into the new BI/BO) when a virtual bank itself is split (L572);
* per memory partition a **merge actor** shuffles the BO vector into the partition's bank order
  (invalid lanes marked by BO bit 0, L627) and sends it to that partition's access context;
* a read: every partition **broadcasts** its response to the receiver, which re-shuffles each
  response by BI and ORs them (S shuffles + an OR tree of S−1, added to the receiving actor; L627);
* a write: data and BI/BO are broadcast to every partition's merge actor; the write acknowledgements
  of all partitions are combined by an AND tree in the response actor before its token leaves.

High fan-in shuffle/OR trees are left to compute partitioning (L631).

First, the unrolled copies of one declared access (``attrs.access``) become one access: a **request-merge
actor** ORs the copies' bank-aligned addresses (and, for a write, their data) into one request stream —
safe because static banking keeps parallel copies on different banks (L627) — and the response is
broadcast to every copy, which picks its lanes with a shuffle (L627).

Then a memory with more read accesses than one PMU can serve (a read needs a vector or
scalar output and a scalar address input; the writes need their inputs too) is **duplicated**: each
replica receives every write (the writer's data and address are broadcast, the acknowledgements of all
replicas are ANDed) and serves a subset of the reads — Spatial's memory duplication for parallel readers
(L211: Spatial "automatically banks and buffers"); the seed gives no port counts (preset A3).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from solvermap.hardware.plasticine import PlasticineSpec
from solvermap.ir.graph import DataflowGraph, EdgeKind, NodeKind


@dataclass(frozen=True)
class Shard:
    memory: str
    partitions: int
    reason: str
    split_banks: bool
    how: str = "shard"  # "shard" (capacity / banks) or "duplicate" (read ports)


def plan(graph: DataflowGraph, spec: PlasticineSpec) -> list[Shard]:
    """Which memories must be sharded and into how many partitions."""
    out = []
    cap, banks = spec.pmu.capacity_bytes, spec.pmu.banks
    for node in graph.nodes(NodeKind.MEMORY):
        if node.op != "sram":
            continue
        size, vbanks = node.resource("sram_bytes"), node.resource("banks", 1)
        by_size = math.ceil(size / cap)
        by_banks = math.ceil(vbanks / banks)
        parts = max(by_size, by_banks, 1)
        if parts > 1:
            reasons = []
            if by_size > 1:
                reasons.append(f"{int(size)} B > {cap} B per PMU")
            if by_banks > 1:
                reasons.append(f"{int(vbanks)} virtual banks > {banks} per PMU")
            # a virtual bank larger than a PMU is split into sub-banks (L572)
            split = size / max(vbanks, 1) > cap
            out.append(Shard(node.name, parts, "; ".join(reasons), split))
    return out


def replicas_needed(graph: DataflowGraph, memory: str, spec: PlasticineSpec) -> int:
    """Replicas so that every copy's reads fit the PMU's outputs and address inputs."""
    ctxs = [n for n in graph.nodes(NodeKind.MEMORY) if n.attrs.get("memory") == memory and n.name != memory]
    reads = [n for n in ctxs if n.op == "sram_read"]
    writes = len(ctxs) - len(reads)
    vector_reads = sum(1 for r in reads if any(str(e.kind) == "vector" for e in graph.out_edges(r.name)))
    scalar_reads = len(reads) - vector_reads
    per_copy_in = spec.pmu.inputs.scalar - writes  # each read needs one scalar address input
    if per_copy_in < 1 or not reads:
        return 1
    need = math.ceil(len(reads) / per_copy_in)
    if vector_reads:
        need = max(need, math.ceil(vector_reads / max(1, spec.pmu.outputs.vector)))
    if scalar_reads:
        need = max(need, math.ceil(scalar_reads / max(1, spec.pmu.outputs.scalar)))
    return max(1, need)


def decompose(graph: DataflowGraph, spec: PlasticineSpec) -> tuple[DataflowGraph, list[Shard]]:
    """A new VBDFG in which every memory fits a PMU (read ports, capacity and banks)."""
    g = graph.copy()
    g.attrs = dict(graph.attrs)
    g.attrs["actors"] = {k: dict(v) for k, v in graph.attrs["actors"].items()}
    done: list[Shard] = []
    merged = merge_parallel_accesses(g)
    if merged:
        done += [Shard(m, n, f"{n} unrolled copies of access '{a}' merged", False, "merge-requests")
                 for m, a, n in merged]
    for node in list(g.nodes(NodeKind.MEMORY)):
        if node.op != "sram":
            continue
        copies = replicas_needed(g, node.name, spec)
        if copies > 1:
            _replicate_memory(g, node.name, copies)
            done.append(Shard(node.name, copies, f"{copies} copies for its read accesses", False, "duplicate"))
    shards = plan(g, spec)
    for shard in shards:
        _shard_memory(g, shard)
    done += shards
    if not done:
        return graph, []
    g.attrs["decomposed"] = [s.__dict__ for s in done]
    return g.validate(), done


def _add_op(g: DataflowGraph, actor: str, name: str, op: str, *, lanes: int, integer: bool) -> str:
    g.add_node(name, NodeKind.OP, op=op, resources={"ops": 1}, attrs={"actor": actor, "lanes": lanes, "int": integer})
    return name


def _edge(g: DataflowGraph, src: str, dst: str, kind: str, *, src_port: str = "out", dst_port: str = "in",
          src_every: int = 1, dst_every: int = 1) -> None:
    width = 512 if kind == "vector" else (1 if kind == "token" else 32)
    g.add_edge(src, dst, EdgeKind(kind), src_port=src_port, dst_port=dst_port, width_bits=width,
               attrs={"src_every": src_every, "dst_every": dst_every})


def _shard_memory(g: DataflowGraph, shard: Shard) -> None:
    m = shard.memory
    node = g.node(m)
    parts = shard.partitions
    actors = g.attrs["actors"]
    # storage shards
    for s in range(parts):
        g.add_node(f"{m}#{s}", NodeKind.MEMORY, op="sram",
                   resources={"sram_bytes": node.resource("sram_bytes") / parts,
                              "banks": max(1.0, node.resource("banks", 1) / parts)},
                   attrs={**dict(node.attrs), "memory": f"{m}#{s}", "shard_of": m, "shard": s})
    contexts = [n for n in g.nodes(NodeKind.MEMORY) if n.attrs.get("memory") == m and n.name != m]
    for ctx in contexts:
        if ctx.op == "sram_read":
            _shard_read(g, shard, ctx.name, actors)
        else:
            _shard_write(g, shard, ctx.name, actors)
    g.remove_node(m)


def _tree(g: DataflowGraph, actor: str, leaves: list[tuple[str, str]], op: str, kind: str, prefix: str, *,
          lanes: int, integer: bool) -> tuple[str, str]:
    """Reduce (node, port) values pairwise with ``op`` in ``actor``; returns the root (node, port). The tree's
    ops are named ``prefix``k, k counting up past names another tree of the actor already took (a memory both
    replicated and sharded ANDs several write copies' acknowledgements in one actor)."""
    level = list(leaves)
    k = 0
    while len(level) > 1:
        nxt = []
        for i in range(0, len(level) - 1, 2):
            while f"{prefix}{k}" in g:
                k += 1
            o = _add_op(g, actor, f"{prefix}{k}", op, lanes=lanes, integer=integer)
            k += 1
            for src, port in (level[i], level[i + 1]):
                _edge(g, src, o, kind, src_port=port)
            nxt.append((o, "out"))
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    return level[0]


def _or_tree(g: DataflowGraph, actor: str, leaves: list[tuple[str, str]], kind: str, label: str) -> tuple[str, str]:
    """OR together (node, port) values in ``actor``; returns the root (node, port)."""
    return _tree(g, actor, leaves, "or", kind, f"{actor}.{label}", lanes=16 if kind == "vector" else 1,
                 integer=kind != "vector")


def _and_tree(g: DataflowGraph, actor: str, acks: list[str], prefix: str) -> tuple[str, str]:
    """AND the acknowledgement tokens of write contexts ``acks`` in ``actor``; returns the root (node, port)."""
    return _tree(g, actor, [(a, "ack") for a in acks], "and", "token", prefix, lanes=1, integer=True)


def merge_parallel_accesses(g: DataflowGraph) -> list[tuple[str, str, int]]:
    """Merge the unrolled copies of each declared access into one request stream (L627)."""
    groups: dict[tuple[str, str, str], list] = {}
    for n in g.nodes(NodeKind.MEMORY):
        if n.op in ("sram_read", "sram_write") and n.attrs.get("access"):
            groups.setdefault((n.attrs["memory"], n.attrs["access"], n.op), []).append(n)
    out = []
    actors = g.attrs["actors"]
    for (mem, access, op), ctxs in sorted(groups.items()):
        if len(ctxs) < 2:
            continue
        firings = int(ctxs[0].attrs.get("firings", 1))
        if any(int(c.attrs.get("firings", 1)) != firings for c in ctxs):  # one request stream fires at one rate
            raise ValueError(f"access '{access}' of memory '{mem}': its copies fire "
                             f"{sorted({int(c.attrs.get('firings', 1)) for c in ctxs})} times; unrolled copies of one "
                             "declared access fire together (accesses of different readers need different names)")
        actor = f"{mem}.{access}.merge"
        actors[actor] = {"firings": firings, "loop": "request-merge"}
        new = f"{mem}.{'rd' if op == 'sram_read' else 'wr'}.{access}"
        g.add_node(new, NodeKind.MEMORY, op=op, attrs={"memory": mem, "firings": firings, "access": access})
        port_in = "raddr" if op == "sram_read" else "waddr"
        addrs = []
        datas = []
        data_kind = "vector"
        for c in ctxs:
            for e in g.in_edges(c.name):
                if e.dst_port == port_in:
                    addrs.append((e.src, e.src_port))
                elif e.dst_port == "wdata":
                    datas.append((e.src, e.src_port))
                    data_kind = str(e.kind)
        root = _or_tree(g, actor, addrs, "scalar", "or_addr")
        _edge(g, root[0], new, "scalar", src_port=root[1], dst_port=port_in)
        if datas:
            droot = _or_tree(g, actor, datas, data_kind, "or_data")
            _edge(g, droot[0], new, data_kind, src_port=droot[1], dst_port="wdata")
        for c in ctxs:
            for e in g.out_edges(c.name):
                target = g.node(e.dst)
                if op == "sram_read" and target.kind == NodeKind.OP:  # each copy picks its lanes
                    pick = _add_op(g, target.attrs["actor"], f"{e.dst}.pick.{c.name}", "shuffle",
                                   lanes=16 if str(e.kind) == "vector" else 1, integer=False)
                    _edge(g, new, pick, str(e.kind), src_port="data", src_every=int(e.attrs.get("src_every", 1)),
                          dst_every=int(e.attrs.get("dst_every", 1)))
                    _edge(g, pick, e.dst, str(e.kind), dst_port=e.dst_port)
                else:
                    _edge(g, new, e.dst, str(e.kind), src_port="data" if op == "sram_read" else "ack",
                          dst_port=e.dst_port, src_every=int(e.attrs.get("src_every", 1)),
                          dst_every=int(e.attrs.get("dst_every", 1)))
            g.remove_node(c.name)
        out.append((mem, access, len(ctxs)))
    return out


def _replicate_memory(g: DataflowGraph, m: str, copies: int) -> None:
    node = g.node(m)
    ctxs = [n for n in g.nodes(NodeKind.MEMORY) if n.attrs.get("memory") == m and n.name != m]
    reads = [n for n in ctxs if n.op == "sram_read"]
    writes = [n for n in ctxs if n.op == "sram_write"]
    names = [f"{m}~{r}" for r in range(copies)]
    for r, name in enumerate(names):
        g.add_node(name, NodeKind.MEMORY, op="sram", resources=dict(node.resources),
                   attrs={**dict(node.attrs), "memory": name, "copy_of": m, "copy": r})
    for k, ctx in enumerate(reads):  # reads round robin over the copies
        g.set_node(ctx.name, attrs={**dict(ctx.attrs), "memory": names[k % copies]})
    for ctx in writes:  # every copy receives every write
        ins = g.in_edges(ctx.name)
        acks = g.out_edges(ctx.name)
        copies_ctx = []
        for r, name in enumerate(names):
            cname = f"{ctx.name}~{r}"
            g.add_node(cname, NodeKind.MEMORY, op="sram_write", attrs={**dict(ctx.attrs), "memory": name})
            for e in ins:
                g.add_edge(e.src, cname, e.kind, src_port=e.src_port, dst_port=e.dst_port, width_bits=e.width_bits,
                           attrs=dict(e.attrs))
            copies_ctx.append(cname)
        for e in acks:
            actor = g.node(e.dst).attrs["actor"]
            root, port = _and_tree(g, actor, copies_ctx, f"{actor}.copyand.{ctx.name}.")
            _edge(g, root, e.dst, "token", src_port=port, dst_port=e.dst_port)
        g.remove_node(ctx.name)
    g.remove_node(m)


def _request_source(g: DataflowGraph, ctx: str, port: str) -> tuple[str, int, int]:
    """The op that sends the address into context ``ctx`` and the edge rate attributes."""
    for e in g.in_edges(ctx):
        if e.dst_port == port:
            return e.src, int(e.attrs.get("src_every", 1)), int(e.attrs.get("dst_every", 1))
    raise ValueError(f"{ctx} has no {port} input")


def _bi_bo(g: DataflowGraph, addr: str, shard: Shard) -> str:
    """Bank ID / bank offset ops in the requester (plus sub-bank ops when banks are split)."""
    actor = g.node(addr).attrs["actor"]
    last = addr
    for label in ("bi", "bo") + (("subbank_id", "subbank_offset") if shard.split_banks else ()):
        name = f"{actor}.{label}.{shard.memory}.{last.split('.')[-1]}"
        k = 0
        while name in g:
            k += 1
            name = f"{actor}.{label}{k}.{shard.memory}"
        _add_op(g, actor, name, label, lanes=1, integer=True)
        _edge(g, last, name, "scalar")
        last = name
    return last


def _shard_read(g: DataflowGraph, shard: Shard, ctx: str, actors: dict) -> None:
    m, parts = shard.memory, shard.partitions
    firings = int(g.node(ctx).attrs.get("firings", 1))
    addr, src_every, dst_every = _request_source(g, ctx, "raddr")
    index = _bi_bo(g, addr, shard)
    consumers = g.out_edges(ctx)
    data_kind = str(consumers[0].kind) if consumers else "vector"
    responses = []
    for s in range(parts):
        merge_actor = f"{ctx}.merge{s}"
        actors[merge_actor] = {"firings": firings, "loop": "request-merge"}
        shuffle = _add_op(g, merge_actor, f"{merge_actor}.shuffle", "shuffle", lanes=1, integer=True)
        _edge(g, index, shuffle, "scalar", src_every=src_every, dst_every=dst_every)
        part_ctx = f"{m}#{s}.rd{ctx.rsplit('.rd', 1)[1]}"
        g.add_node(part_ctx, NodeKind.MEMORY, op="sram_read", attrs={"memory": f"{m}#{s}", "firings": firings})
        _edge(g, shuffle, part_ctx, "scalar", dst_port="raddr")
        responses.append(part_ctx)
    # receivers: re-shuffle each partition's broadcast response by BI and OR them (in the receiving actor)
    by_actor: dict[str, list] = {}
    for e in consumers:
        actor = g.node(e.dst).attrs.get("actor", e.dst) if g.node(e.dst).kind == NodeKind.OP else e.dst
        by_actor.setdefault(actor, []).append(e)
    for actor, edges in by_actor.items():
        lanes = 16 if data_kind == "vector" else 1
        level = []
        for s, part_ctx in enumerate(responses):
            sh = _add_op(g, actor, f"{actor}.unshuffle.{ctx}.{s}", "shuffle", lanes=lanes, integer=False)
            _edge(g, part_ctx, sh, data_kind, src_port="data", src_every=int(edges[0].attrs.get("src_every", 1)),
                  dst_every=int(edges[0].attrs.get("dst_every", 1)))
            level.append((sh, "out"))
        root, port = _tree(g, actor, level, "or", data_kind, f"{actor}.or.{ctx}.", lanes=lanes, integer=False)
        for e in edges:
            _edge(g, root, e.dst, data_kind, src_port=port, dst_port=e.dst_port)
    g.remove_node(ctx)


def _shard_write(g: DataflowGraph, shard: Shard, ctx: str, actors: dict) -> None:
    m, parts = shard.memory, shard.partitions
    firings = int(g.node(ctx).attrs.get("firings", 1))
    addr, a_src, a_dst = _request_source(g, ctx, "waddr")
    data, d_src, d_dst = _request_source(g, ctx, "wdata")
    data_edge = next(e for e in g.in_edges(ctx) if e.dst_port == "wdata")
    index = _bi_bo(g, addr, shard)
    acks = []
    for s in range(parts):
        merge_actor = f"{ctx}.merge{s}"
        actors[merge_actor] = {"firings": firings, "loop": "request-merge"}
        shuffle = _add_op(g, merge_actor, f"{merge_actor}.shuffle", "shuffle", lanes=1, integer=True)
        _edge(g, index, shuffle, "scalar", src_every=a_src, dst_every=a_dst)
        part_ctx = f"{m}#{s}.wr{ctx.rsplit('.wr', 1)[1]}"
        g.add_node(part_ctx, NodeKind.MEMORY, op="sram_write", attrs={"memory": f"{m}#{s}", "firings": firings})
        _edge(g, shuffle, part_ctx, "scalar", dst_port="waddr")
        _edge(g, data, part_ctx, str(data_edge.kind), src_port=data_edge.src_port, dst_port="wdata",
              src_every=d_src, dst_every=d_dst)
        acks.append(part_ctx)
    ack_edges = g.out_edges(ctx)
    for e in ack_edges:  # the response actor ANDs the partitions' acknowledgements
        actor = g.node(e.dst).attrs["actor"]
        root, port = _and_tree(g, actor, acks, f"{actor}.ackand.")
        _edge(g, root, e.dst, "token", src_port=port, dst_port=e.dst_port)
    g.remove_node(ctx)
