"""Cycle-level network-on-chip simulator coupled with the dataflow units (seed 004 §3.3.2–3.3.3, L300–324).

The dataflow part follows :mod:`~solvermap.hardware.plasticine.dataflow_sim` (same :class:`SimGraph`,
units fire when every input they read holds a token and every output has room, DRAM byte budget,
window scaling) and takes from it the channel state, the scaled rates, the input readiness rule, the
deadlock report and the extrapolation of the window; unlike it, every unit ready in a cycle is found before
any of them fires. What travels between PBs is simulated by the network the logical link is routed on:

local     units on the same PB: 1 cycle, room = consumer buffer + producer pipeline + 1 (as dataflow_sim).
static    circuit-switched tree of exclusive tracks (L302): a distance-based delay of (hops + 1) switch
          hops (the seed models static networks by distance, L324). ``db``: per-hop backpressure with
          ``skid_entries`` entries per switch (L306–308), so a link holds up to skid × (hops + 1) tokens
          besides the consumer's buffer; ``cd``: end-to-end credits = the consumer's buffer depth, a
          credit returns (hops + 1) cycles after the consumer dequeues (L304–306, L419).
dynamic   routers, one per mesh node, each input port with per-VC buffers of ``buffers_per_vc`` flits; a
          packet of ⌈bits / flit_bits⌉ flits (512-bit vectors, 32-bit scalars and tokens; the packet ID
          rides in the head flit's side band, assumption NT12); table-based source routing along the
          logical link's tree; every logical path owns its VC on every link (the VC allocation's rule,
          L316), so flits of different paths share only link and crossbar bandwidth. Per cycle each
          router runs a single-iteration separable input-first allocator (L312): every input port picks
          one of its VCs with a routable head flit (round robin), every output port grants one requesting
          input (round robin). A broadcast flit is copied to its tree's outputs one at a time in fixed
          order (L312, L324) and leaves its buffer after the last copy. The PB→router injection link and
          the router→PB ejection port move one flit per cycle each; a packet is delivered to the
          consumer's input buffer when its last flit ejects and there is room (else it waits in its VC).
          Credits: a flit moves only into a downstream VC buffer with a free entry (``hop_cycles`` per hop).
ideal     zero latency and unlimited bandwidth (L398's reference network) on every routed link, with the
          buffering the real link has (consumer buffer, in-flight slots, skid buffers or the VC buffers
          along the path), so the comparison isolates the network's latency and bandwidth.

DRAM: the streams share ``dram_bytes_per_cycle`` in proportion to their traffic (each stream's k-th
request completes no earlier than k · bytes / its share; dataflow_sim arbitrates round robin instead). With
no shared arbiter left, the simulation is a timed marked graph fired as soon as possible, so lowering a
delay or raising a capacity never delays a firing: the ideal network is never slower than a real one.

Time-scheduled CGRAs (L259): a unit with initiation interval ``ii`` fires at most once every ``ii``
cycles (``ii`` from the caller).

Scaling: as in dataflow_sim, firings are scaled so that the busiest unit fires ``window`` times; the
steady part — from the busiest unit's first to its last firing — is scaled back, the fill before it and
the drain after it are not: ``cycles = fill + steady / f + drain`` (dataflow_sim scales the drain too). Flit and hop counts are
scaled back by 1/f. Deadlock: no firing, no flit move and nothing in flight for longer than the longest
latency while work remains → ``deadlock=True`` with the blocked units.

:func:`router_testbench` drives one router with uniform random traffic to check its saturation (the seed
reports ~60 % duty cycle for its crossbar without speedup, L364).
"""

from __future__ import annotations

import math
import random
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field

from solvermap.formulations.problems.routing import children, sink_depths
from solvermap.hardware.plasticine import dataflow_sim
from solvermap.hardware.plasticine.dataflow_sim import (Channel, SimGraph, Unit, _blocked, _close, _extrapolate,
                                                        _pipeline_latency, _rates, _scaled)

Node = tuple[int, int]
Link = tuple[Node, Node]


@dataclass(frozen=True)
class NocConfig:
    mode: str = "network"  # "network" | "ideal"
    static_hop_cycles: int = 1
    flow_control: str = "db"  # "db" | "cd"
    skid_entries: int = 2
    router_hop_cycles: int = 2
    flit_bits: int = 512
    buffers_per_vc: int = 3
    injection_buffer: int = 2
    vector_bits: int = 512
    scalar_bits: int = 32


@dataclass(frozen=True)
class RoutedValue:
    """The route of one logical link (a value): its network, source node, tree and sink nodes."""

    name: str
    network: str  # "static" | "dynamic"
    source: Node
    tree: tuple[Link, ...]
    kind: str = "vector"


@dataclass
class NocResult:
    cycles: float
    throughput: float
    deadlock: bool
    window_cycles: int
    scale: float
    fill_cycles: int
    blocked: list[str] = field(default_factory=list)
    static_switch_flits: dict[str, float] = field(default_factory=dict)  # class -> switch traversals (full run)
    router_flits: dict[str, float] = field(default_factory=dict)  # class -> router traversals (full run)
    static_hops: dict[str, float] = field(default_factory=dict)  # class -> link traversals (full run)
    dynamic_hops: dict[str, float] = field(default_factory=dict)
    switches_used: int = 0
    routers_used: int = 0
    max_link_utilization: float = 0.0  # busiest dynamic link: flits per cycle in the window
    packets_delivered: int = 0

    def to_json(self) -> dict:
        return {"cycles": self.cycles, "throughput": self.throughput, "deadlock": self.deadlock,
                "window_cycles": self.window_cycles, "scale": self.scale, "fill_cycles": self.fill_cycles,
                "blocked": self.blocked[:10], "static_hops": self.static_hops, "dynamic_hops": self.dynamic_hops,
                "switches_used": self.switches_used, "routers_used": self.routers_used,
                "max_link_utilization": self.max_link_utilization}


def ideal_key(config: NocConfig) -> tuple:
    """The fields of ``config`` that a run in ideal mode reads: every link is zero-latency with the same buffering
    (:func:`_link`'s rooms: flow control, skid entries, injection buffer, buffers per VC), no flit is routed, and
    the router hop latency sets how long an idle network waits before it reports a deadlock; so two ideal runs of
    one mapping (same graph, nodes, routes, II and window) whose keys agree give one result."""
    return (config.mode, config.flow_control, config.skid_entries, config.injection_buffer, config.buffers_per_vc,
            config.router_hop_cycles)


# =========================================================================== separable allocator


def separable_allocate(requests: dict, pointers: dict) -> list:
    """Single-iteration separable input-first allocation (round robin at both stages).

    ``requests``: input port → list of (vc, output port) with orderable (integer) keys; returns the
    granted (input, vc, output). ``pointers`` holds the round-robin state: ("in", port) → the VC granted
    last, ("out", port) → the input granted last; the next grant goes to the first key after it.
    """
    if len(requests) == 1:  # one input port bids: it gets its round-robin choice (the loop below, shortened)
        (port, options), = requests.items()
        if options:
            last = pointers.get(("in", port))
            after = [o for o in options if o[0] > last] if last is not None else None
            choice = min(after) if after else min(options)
            pointers[("out", choice[1])] = port
            pointers[("in", port)] = choice[0]
            return [(port, choice[0], choice[1])]
    by_output: dict = {}
    for port, options in requests.items():
        if not options:
            continue
        last = pointers.get(("in", port))
        choice = None
        if last is not None:
            after = [o for o in options if o[0] > last]
            if after:
                choice = min(after)
        if choice is None:
            choice = min(options)
        by_output.setdefault(choice[1], []).append((port, choice[0]))
    grants = []
    for out, bids in by_output.items():
        last = pointers.get(("out", out))
        pick = None
        if last is not None:
            after = [b for b in bids if b[0] > last]
            if after:
                pick = min(after)
        if pick is None:
            pick = min(bids)
        pointers[("out", out)] = pick[0]
        pointers[("in", pick[0])] = pick[1]
        grants.append((pick[0], pick[1], out))
    return grants


# =========================================================================== the coupled simulation


class _Chan(dataflow_sim._Chan):
    """A dataflow channel and the network it travels on: ``net`` local | static | dynamic | ideal."""

    __slots__ = ("net", "credit_delay", "idx")

    def __init__(self, spec: Channel, src_every: int, dst_every: int, cap: float, delay: int, net: str,
                 credit_delay: int, idx: int) -> None:
        super().__init__(spec, src_every, dst_every, cap, delay)
        self.net = net
        self.credit_delay = credit_delay  # cd flow control: cycles until a dequeue's credit reaches the producer
        self.idx = idx


class _Buffer:
    """The VC buffer of one dynamic path at one router input (or its injection VC at the source)."""

    __slots__ = ("path", "node", "port", "flits", "outputs", "out_keys", "downs", "sent", "count", "key")

    def __init__(self, path: int, node: Node, port, outputs: list, key: int) -> None:
        self.path = path
        self.node = node
        self.port = port  # input port: 0 = injection from the PB, 1..4 = from a neighbour
        self.key = key
        self.out_keys: list[int] = []
        self.downs: list = []  # per output: the path's buffer at that child node, None for "eject"
        self.flits: deque = deque()  # (arrival cycle, last flit of its packet, packet id)
        self.outputs = outputs  # fixed order: child nodes, then "eject" when the node is a sink
        self.sent = 0  # copies of the head flit already sent
        self.count = 0  # flits queued or in flight into this buffer (credit accounting)


def _direction(node: Node, other: Node) -> int:
    """Port number of the neighbour ``other`` seen from ``node``: 1 N, 2 E, 3 S, 4 W."""
    dr, dc = other[0] - node[0], other[1] - node[1]
    return {(-1, 0): 1, (0, 1): 2, (1, 0): 3, (0, -1): 4}[(dr, dc)]


def _link(c: Channel, units: Mapping[str, Unit], graph: SimGraph, node_of_unit: Mapping[str, Node],
          routes: Mapping[str, RoutedValue], config: NocConfig) -> tuple[str, int, float, int]:
    """(network, delay, room, credit delay) of channel ``c``: room = the consumer's buffer plus every token
    the link holds besides (the producer's pipeline, skid buffers; ∞ on dynamic links, whose room is checked
    at ejection: the producer sees its injection queue)."""
    pipeline = _pipeline_latency(units[c.src], graph)
    a, b = node_of_unit.get(c.src), node_of_unit.get(c.dst)
    route = routes.get(c.name)
    if units[c.src].pb and units[c.src].pb == units[c.dst].pb:
        return "local", 1, c.depth + pipeline + 1, 0
    if route is None or a is None or b is None or a == b:
        return "ideal", 0, math.inf, 0  # off-array (host) links
    hops = sink_depths(sorted(route.tree), route.source).get(b)
    if hops is None:
        raise ValueError(f"value {c.name!r}: the tree does not reach node {b}")
    if route.network == "static":
        net, delay = "static", (hops + 1) * config.static_hop_cycles
        credits = config.flow_control == "cd"
        room = c.depth if credits else c.depth + pipeline + config.skid_entries * (hops + 1)
        credit_delay = delay if credits else 0
    else:
        net, delay, room, credit_delay = "dynamic", 0, math.inf, 0
    if config.mode == "ideal":  # same buffering, zero latency, unlimited bandwidth
        if net == "dynamic":
            room = c.depth + pipeline + config.injection_buffer + config.buffers_per_vc * (hops + 1)
        return "ideal", 0, room, 0
    return net, delay, room, credit_delay


def simulate(graph: SimGraph, node_of_unit: Mapping[str, Node], routes: Mapping[str, RoutedValue],
             config: NocConfig = NocConfig(), *, ii: Mapping[str, int] | None = None, window: int = 2048,
             max_cycles: int = 2_000_000) -> NocResult:
    """Simulate the mapped app: units from ``graph``, each on the node ``node_of_unit`` gives; each
    channel between different nodes travels on the route of its value (``routes``; ideal mode ignores
    them)."""
    units = {u.name: u for u in graph.units}
    firings, scale = _scaled(graph, window)
    ii = dict(ii or {})
    ideal = config.mode == "ideal"

    chans: list[_Chan] = []
    inputs: dict[str, list[_Chan]] = {u: [] for u in units}
    outputs: dict[str, list[_Chan]] = {u: [] for u in units}
    for c in graph.channels:
        if c.src == c.dst:
            continue
        net, delay, cap, credit_delay = _link(c, units, graph, node_of_unit, routes, config)
        ch = _Chan(c, *_rates(c, units, firings, scale), cap, delay, net, credit_delay, len(chans))
        chans.append(ch)
        inputs[c.dst].append(ch)
        outputs[c.src].append(ch)

    # ---------------------------------------------------------------- dynamic network state
    path_index: dict[str, int] = {}
    paths: list[RoutedValue] = []
    for ch in chans:
        if ch.net == "dynamic" and ch.spec.name not in path_index:
            path_index[ch.spec.name] = len(paths)
            paths.append(routes[ch.spec.name])
    buffers: dict[tuple[int, Node], _Buffer] = {}
    by_node: dict[Node, list[_Buffer]] = {}
    eject_chans: dict[tuple[int, Node], list[_Chan]] = {}
    for ch in chans:
        if ch.net == "dynamic":
            eject_chans.setdefault((path_index[ch.spec.name], node_of_unit[ch.spec.dst]), []).append(ch)
    flits_of: list[int] = []
    for p, route in enumerate(paths):
        bits = config.vector_bits if route.kind == "vector" else config.scalar_bits
        flits_of.append(max(1, math.ceil(bits / config.flit_bits)))
        kids = children(sorted(route.tree))
        parent = {b: a for a, b in route.tree}
        for node in sink_depths(sorted(route.tree), route.source):
            outs: list = list(kids.get(node, []))
            if (p, node) in eject_chans:
                outs.append("eject")
            port = 0 if node == route.source else _direction(node, parent[node])
            buf = _Buffer(p, node, port, outs, len(buffers))
            buf.out_keys = [0 if o == "eject" else _direction(node, o) for o in outs]
            buffers[(p, node)] = buf
            by_node.setdefault(node, []).append(buf)
    for (p, node), buf in buffers.items():
        buf.downs = [None if o == "eject" else buffers[(p, o)] for o in buf.outputs]
    injection: dict[int, deque] = {p: deque() for p in range(len(paths))}  # packets: [flits left, mask, id]
    inject_rr: dict[Node, int] = {}
    sources_at: dict[Node, list[int]] = {}
    # flits in each router's buffers and packets waiting at each source: a router holding none makes no request
    # and an empty source injects nothing, so the loops below pass them by (same order, same allocations)
    held: dict[Node, int] = dict.fromkeys(by_node, 0)
    buffers_per_vc = config.buffers_per_vc
    queued: dict[Node, int] = {}
    for p, route in enumerate(paths):
        sources_at.setdefault(route.source, []).append(p)
        queued[route.source] = 0
    pointers: dict = {}
    packet_masks: dict[int, frozenset] = {}
    packet_seq = 0
    link_flits: dict = {}

    done = dict.fromkeys(units, 0)
    # the input channel a unit's next firing found empty: a queue fills only by an arrival and empties only by
    # its one consumer's firing, so while it stays empty the unit cannot fire and its other conditions (all
    # side-effect free) need no look -- the same firings as checking every unit in full on every cycle
    waiting: dict[str, _Chan | None] = dict.fromkeys(units)
    last_fire: dict[str, int] = {}
    first_fire: dict[str, int] = {}
    pending: dict[int, list[_Chan]] = {}
    credits: dict[int, list[_Chan]] = {}
    in_flight = 0
    # DRAM: every stream gets the share of the channels' bandwidth its traffic needs (a balanced memory
    # controller); its k-th request completes no earlier than k · bytes / share. Without a shared
    # arbiter the simulation is monotone: faster links never delay a firing.
    dram_bytes = {n: firings[n] * u.bytes_per_firing for n, u in units.items() if u.kind == "dram"}
    total_dram = sum(dram_bytes.values())
    dram_rate: dict[str, float] = {}
    if graph.dram_bytes_per_cycle != math.inf and total_dram > 0:
        dram_rate = {n: graph.dram_bytes_per_cycle * b / total_dram for n, b in dram_bytes.items()}
    order = list(units)
    remaining = sum(firings.values())
    horizon = (max([u.latency for u in graph.units] + [0]) + max([ch.delay for ch in chans] + [1])
               + graph.dram_latency + 4 * config.router_hop_cycles * (len(paths) + 2) + 8)
    static_sw: dict[str, float] = {}
    static_hops: dict[str, float] = {}
    router_fl: dict[str, float] = {}
    dyn_hops: dict[str, float] = {}
    static_tree_len = {name: len(r.tree) for name, r in routes.items() if r.network == "static"}
    static_kind = {name: r.kind for name, r in routes.items()}
    delivered = 0
    cycle = 0
    idle = 0
    while remaining > 0 and cycle < max_cycles:
        moved = False
        arriving = pending.pop(cycle, None)
        if arriving:
            for ch in arriving:
                ch.queue.append(cycle)
                in_flight -= 1
        returned = credits.pop(cycle, None)
        if returned:
            for ch in returned:
                ch.occupied -= 1
                in_flight -= 1
        # ---------------------------------------------------------------- routers
        if paths:
            for node, bufs in by_node.items():
                if not held[node]:
                    continue
                requests: dict = {}
                index: dict[int, _Buffer] = {}
                for buf in bufs:
                    flits = buf.flits
                    if not flits or flits[0][0] > cycle:
                        continue
                    down = buf.downs[buf.sent]
                    if down is None:  # eject
                        arrival, last, pid = flits[0]
                        if last:
                            targets = eject_chans[(buf.path, node)]
                            mask = packet_masks.get(pid, ())
                            if any(len(ch.queue) >= ch.spec.depth and not ch.dead for ch in targets if ch.idx in mask):
                                continue
                    elif down.count >= buffers_per_vc:
                        continue
                    index[buf.key] = buf
                    requests.setdefault(buf.port, []).append((buf.key, buf.out_keys[buf.sent]))
                if not requests:
                    continue
                for port, key, _ in separable_allocate(requests, pointers.setdefault(node, {})):
                    buf = index[key]
                    path = buf.path
                    out = buf.outputs[buf.sent]
                    arrival, last, pid = buf.flits[0]
                    kind = paths[path].kind
                    router_fl[kind] = router_fl.get(kind, 0.0) + 1
                    if out == "eject":
                        if last:
                            mask = packet_masks.get(pid, ())
                            for ch in eject_chans[(path, node)]:
                                if ch.idx in mask and not ch.dead:
                                    ch.queue.append(cycle)
                            delivered += 1
                    else:
                        down = buf.downs[buf.sent]
                        down.count += 1
                        down.flits.append((cycle + config.router_hop_cycles, last, pid))
                        held[out] += 1
                        dyn_hops[kind] = dyn_hops.get(kind, 0.0) + 1
                        link_flits[(node, out)] = link_flits.get((node, out), 0) + 1
                    buf.sent += 1
                    moved = True
                    if buf.sent == len(buf.outputs):
                        buf.sent = 0
                        buf.flits.popleft()
                        held[node] -= 1
                        buf.count -= 1
            # injection: one flit per node per cycle into the path's VC at its source router
            for node, plist in sources_at.items():
                if not queued[node]:
                    continue
                k0 = inject_rr.get(node, 0)
                for step in range(len(plist)):
                    p = plist[(k0 + step) % len(plist)]
                    queue = injection[p]
                    if not queue:
                        continue
                    buf = buffers[(p, node)]
                    if buf.count >= config.buffers_per_vc:
                        continue
                    packet = queue[0]
                    if packet[3] > cycle:
                        continue
                    packet[0] -= 1
                    last = packet[0] == 0
                    buf.flits.append((cycle + 1, last, packet[2]))
                    held[node] += 1
                    buf.count += 1
                    if last:
                        queue.popleft()
                        queued[node] -= 1
                    inject_rr[node] = (k0 + step + 1) % len(plist)
                    moved = True
                    break
        # ---------------------------------------------------------------- units
        fired_any = False
        rotate = cycle % max(1, len(order))
        ready_units = []
        for name in order[rotate:] + order[:rotate]:
            k = done[name]
            if k >= firings[name]:
                continue
            lacking = waiting[name]
            if lacking is not None:
                if not lacking.queue:
                    continue  # the input its k-th firing found empty still is (see ``waiting``)
                waiting[name] = None
            step_ii = ii.get(name, 1)
            if step_ii > 1 and name in last_fire and cycle - last_fire[name] < step_ii:
                continue
            if name in dram_rate and k * units[name].bytes_per_firing > dram_rate[name] * cycle + 1e-9:
                continue  # the stream's share of the DRAM bandwidth has not yet delivered this request
            ready = True
            for ch in inputs[name]:  # every input the k-th firing reads holds a token that has arrived
                if k % ch.dst_every == 0 and (not ch.queue or ch.queue[0] > cycle):
                    ready = False
                    if not ch.queue:
                        waiting[name] = ch
                    break
            if ready:
                last = k + 1 == firings[name]
                sends_dynamic: set[int] = set()
                for ch in outputs[name]:
                    if ch.dead or not ((k + 1) % ch.src_every == 0 or last):
                        continue
                    if ch.net == "dynamic":
                        sends_dynamic.add(path_index[ch.spec.name])
                    elif ch.occupied >= ch.cap:
                        ready = False
                        break
                if ready:
                    for p in sends_dynamic:
                        # packets still in the producer's pipeline (or DRAM) plus the output buffer
                        in_pipe = _pipeline_latency(units[name], graph)
                        if len(injection[p]) >= config.injection_buffer + in_pipe:
                            ready = False
                            break
            if ready:
                ready_units.append(name)
        for name in ready_units:
            unit = units[name]
            k = done[name]
            for ch in inputs[name]:
                if k % ch.dst_every == 0:
                    ch.queue.popleft()
                    if ch.net == "static" and ch.credit_delay:
                        credits.setdefault(cycle + ch.credit_delay, []).append(ch)
                        in_flight += 1
                    elif ch.net != "dynamic":
                        ch.occupied -= 1
            last = k + 1 == firings[name]
            out_latency = _pipeline_latency(unit, graph)
            masks: dict[int, set[int]] = {}
            static_sent: set[str] = set()
            for ch in outputs[name]:
                if ch.dead or not ((k + 1) % ch.src_every == 0 or last):
                    continue
                if ch.net == "dynamic":
                    masks.setdefault(path_index[ch.spec.name], set()).add(ch.idx)
                    continue
                ch.occupied += 1
                pending.setdefault(cycle + out_latency + ch.delay, []).append(ch)
                in_flight += 1
                if ch.net == "static" and ch.spec.name not in static_sent:
                    static_sent.add(ch.spec.name)
                    cls = static_kind[ch.spec.name]
                    static_hops[cls] = static_hops.get(cls, 0.0) + static_tree_len[ch.spec.name]
                    static_sw[cls] = static_sw.get(cls, 0.0) + static_tree_len[ch.spec.name] + 1
            for p, mask in masks.items():
                packet_seq += 1
                packet_masks[packet_seq] = frozenset(mask)
                # the packet can enter the router once the producer's pipeline is through (latency)
                injection[p].append([flits_of[p], mask, packet_seq, cycle + out_latency])
                queued[paths[p].source] += 1
            done[name] = k + 1
            remaining -= 1
            fired_any = True
            first_fire.setdefault(name, cycle)
            last_fire[name] = cycle
            if last:
                _close(inputs[name])
        if fired_any or moved or in_flight or arriving:
            idle = 0
        else:
            idle += 1
            if idle > horizon:
                break
        cycle += 1

    deadlock = remaining > 0
    blocked = _blocked(order, done, firings, inputs, outputs) if deadlock else []  # dynamic links: cap ∞
    cycles, throughput, fill = _extrapolate(graph, scale, cycle, first_fire, deadlock, last_fire)
    inv = 1.0 / scale
    static_nodes = {n for r in routes.values() if r.network == "static" for link in r.tree for n in link}
    static_nodes |= {r.source for r in routes.values() if r.network == "static"}
    dyn_nodes = {n for r in paths for link in r.tree for n in link} | {r.source for r in paths}
    return NocResult(
        cycles=cycles, throughput=throughput, deadlock=deadlock, window_cycles=cycle, scale=scale,
        fill_cycles=fill, blocked=blocked,
        static_switch_flits={k: v * inv for k, v in static_sw.items()},
        router_flits={k: v * inv for k, v in router_fl.items()},
        static_hops={k: v * inv for k, v in static_hops.items()},
        dynamic_hops={k: v * inv for k, v in dyn_hops.items()},
        switches_used=len(static_nodes) if not ideal else 0, routers_used=len(dyn_nodes) if not ideal else 0,
        max_link_utilization=max((v / max(1, cycle) for v in link_flits.values()), default=0.0),
        packets_delivered=delivered)


# =========================================================================== single-router testbench


def router_testbench(duty: float, *, vcs: int = 2, buffers_per_vc: int = 3, ports: int = 5, cycles: int = 4000,
                     packet_flits: int = 1, seed: int = 0, warmup: int = 500) -> float:
    """Accepted flits per cycle per input port of one router under uniform random traffic: every input
    receives a packet with probability ``duty`` per cycle for a uniformly random other output; a packet
    takes a free VC of its input (dynamic VC allocation in the testbench); outputs always accept. The
    switch allocator is :func:`separable_allocate` (single iteration, input first, no speedup)."""
    rng = random.Random(seed)
    source: list[deque] = [deque() for _ in range(ports)]
    vc_out: list[list] = [[None] * vcs for _ in range(ports)]  # output of the packet in each VC
    vc_flits: list[list[int]] = [[0] * vcs for _ in range(ports)]
    pointers: dict = {}
    accepted = 0
    for cycle in range(cycles):
        for i in range(ports):
            if rng.random() < duty:
                out = rng.randrange(ports - 1)
                source[i].append(out if out < i else out + 1)
            # the head packet of the source queue takes an idle VC (whole packet buffered: ≤ buffers)
            if source[i]:
                for v in range(vcs):
                    if vc_out[i][v] is None:
                        vc_out[i][v] = source[i].popleft()
                        vc_flits[i][v] = packet_flits
                        break
        requests = {i: [(v, vc_out[i][v]) for v in range(vcs) if vc_out[i][v] is not None] for i in range(ports)}
        for i, v, out in separable_allocate(requests, pointers):
            vc_flits[i][v] -= 1
            if cycle >= warmup:
                accepted += 1
            if vc_flits[i][v] == 0:
                vc_out[i][v] = None
    return accepted / (ports * max(1, cycles - warmup))
