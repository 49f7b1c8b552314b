"""Event-based performance and energy simulator of a mapped PUMA program (seed 003 L228–L230, L256).

The program is generated from the partition, the placement and the inserted communication: for every
inference and every *chunk* of a layer's MVM steps (conv layers are cut into ``chunks`` pieces of output
pixels, LSTM layers into time steps, dense layers are one chunk) each core

1. loads the input values its blocks need (tile-memory bus of its tile, ``memory_access_cycles`` per
   bus-width access),
2. fires one MVM instruction per layer over all its blocks of that layer (the ``mask`` operand, L65):
   steps × :meth:`PumaSpec.mvm_cycles` (input bit-streaming through the DAC, ADC conversions),
3. runs its vector work (row reductions, bias, activations, pooling, LSTM cells, offset correction) on
   ``vector_lanes`` ALU lanes,
4. stores the values it produces;

and every tile sends each value to each destination tile once (the transfers of
:mod:`solvermap.mappers.puma.communication`): the tile's network interface serialises its sends, a
message holds every router link of its XY route for its flits (``flit_bits`` per cycle) after
``router_latency_cycles`` per router (wormhole approximation), the receiving tile writes it to memory.

Resources — cores, tile-memory buses, network interfaces, links — serve their requests in program
order (in-order cores, static arbitration) and a task starts when its inputs are ready and its
resources are free: a deterministic discrete-event schedule. Dependencies: a consumer chunk waits for
the producer chunk covering it; a row's running partial sum passes along its reduction chain (each block
adds its partial after its MVM and the previous block's sum, on its own core's ALU); an LSTM step waits for
the previous step's hidden state; the count-based synchronisation of tile memory (L74, L85) makes the
store of inference i+1 wait until every load of inference i of that location is done. Successive
inferences enter as soon as the input tile may rewrite its buffers (the driver's pipelining, L213–L218).
Transfers of vector layers (an add's or a product's operands, a softmax's groups) are recorded under the
next MVM layer and move before its MVMs; those after the last MVM layer move before the output.

Beside the simulated interval, the load model's: the busiest resource's busy time per inference
(``extra["busiest_resource_s"]``, its kind in ``busiest_resource``) — the interval a schedule overlapping
inferences perfectly would reach, what a load-balance term (max link load, max core work) models; their
difference is what in-order service and dependencies add. ``extra["reservations"]`` counts the resource
reservations made: the simulator's deterministic work.

Energy per inference: MVMs (``input_steps`` × ``weight_slices`` physical crossbar bit-steps plus one ADC
conversion per column per step and slice), ALU operations, tile-memory accesses, flit-hops, plus tile
leakage over one initiation interval. A layer with R replicas gives each replica 1/R of its MVM steps
(average; assumption). Whole-model copies (L158) multiply throughput and tiles, not latency.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from solvermap.formulations.problems.placement import xy_route
from solvermap.hardware.puma import PumaSpec
from solvermap.hardware.puma.program import Communication, Partition, PumaPlacement


@dataclass
class PerfResult:
    latency_s: float
    throughput: float  # inferences per second (one model copy)
    energy_j: float  # per inference
    energy_breakdown_j: dict[str, float]
    mvmu_utilisation: float
    tiles_used: int
    hop_weighted_bytes: float  # per inference, as sent by the simulated program
    bytes_by_op: dict[str, float]
    sync_stall_s: float
    makespan_s: float
    inferences: int
    area_mm2: float
    extra: dict[str, float] = field(default_factory=dict)
    busiest_resource: str = ""  # kind (core, bus, nic, link) of the resource with the most busy time


class _Resources:
    def __init__(self) -> None:
        self.free: dict[object, float] = {}
        self.busy: dict[object, float] = {}
        self.reservations = 0  # the simulator's work: its run time is about proportional to it

    def reserve(self, keys: list, ready: float, duration: float) -> float:
        start = max([ready] + [self.free.get(k, 0.0) for k in keys])
        self.reservations += 1
        for k in keys:
            self.free[k] = start + duration
            self.busy[k] = self.busy.get(k, 0.0) + duration
        return start


def simulate(partition: Partition, placement: PumaPlacement, communication: Communication, spec: PumaSpec,
             io_positions: dict[str, int], *, inferences: int = 4, chunks: int = 8) -> PerfResult:
    cyc = spec.timing.cycle_ns * 1e-9
    mvm_cycles = spec.mvm_cycles()
    bus = spec.tile.memory_bus_bits
    lanes = spec.core.vector_lanes
    blocks = {b.name: b for b in partition.blocks}
    layer_rank = {name: k for k, name in enumerate(partition.layer_order)}
    n_chunks = {layer: 1 for layer in partition.layer_order}
    for b in partition.blocks:
        if b.steps > 1:
            n_chunks[b.layer] = max(n_chunks[b.layer], min(chunks, int(math.ceil(b.steps))))
    is_lstm = {b.layer: b.layer.startswith("lstm") for b in partition.blocks}
    for b in partition.blocks:
        if any(v.kind == "recurrent" and v.layer == b.layer for v in partition.values):
            is_lstm[b.layer] = True
            n_chunks[b.layer] = max(1, int(round(b.steps)))

    def core_of(name: str) -> tuple[int, int]:
        return placement.core_of(name, io_positions)

    def tile_of(name: str) -> int:
        return placement.tile_of(name, io_positions)

    def access_cycles(nbytes: float) -> float:
        return math.ceil(nbytes * 8 / bus) * spec.timing.memory_access_cycles if nbytes > 0 else 0.0

    # per layer: cores, their blocks, and their vector work
    layer_cores: dict[str, dict[tuple[int, int], list[str]]] = {}
    for b in partition.blocks:
        layer_cores.setdefault(b.layer, {}).setdefault(core_of(b.name), []).append(b.name)
    # values grouped by consuming layer; the producing layer of a block source
    def layer_of(name: str) -> str | None:
        return blocks[name].layer if name in blocks else None

    res = _Resources()
    done: dict[tuple, float] = {}  # (kind, value/core key, inference, chunk) → finish time (s)
    loads_done: dict[tuple[str, int], float] = {}  # (value, chunk) → last load finish of the previous inference
    energy = {"mvm": 0.0, "alu": 0.0, "memory": 0.0, "noc": 0.0, "leakage": 0.0}
    hop_bytes = 0.0
    by_op = {"store": 0.0, "load": 0.0, "send": 0.0, "receive": 0.0}
    stall = 0.0
    mvmu_busy = 0.0
    finish_inference: list[float] = []
    start_inference: list[float] = []
    slices, steps_in = spec.weight_slices, spec.input_steps
    mvm_pj = steps_in * slices * spec.energy.xbar_step_pj_per_physical
    adc_pj_per_col = steps_in * slices * spec.energy.adc_conversion_pj

    def chunk_of_producer(producer_layer: str | None, consumer_layer: str, k: int) -> int:
        if producer_layer is None:
            return 0
        cp, cc = n_chunks[producer_layer], n_chunks.get(consumer_layer, 1)
        if producer_layer == consumer_layer:
            return k
        return min(cp - 1, math.ceil((k + 1) * cp / cc) - 1)

    def transfer(value, k: int, i: int, ready: float, frac: float) -> dict[tuple[int, int], float]:
        """Store/send/receive of one value chunk; returns when each consumer core may load it."""
        nonlocal hop_bytes, stall
        nbytes = value.bytes * frac
        src_tile, src_core = core_of(value.source)
        consumers = {core_of(s) for s in value.sinks}
        foreign = consumers - {(src_tile, src_core)}
        avail: dict[int, float] = {src_tile: ready}
        if foreign and src_core >= 0:
            gate = loads_done.get((value.name, k), 0.0)
            if gate > ready:
                stall += gate - ready
            d = access_cycles(nbytes) * cyc
            start = res.reserve([("core", src_tile, src_core), ("bus", src_tile)], max(ready, gate), d)
            avail[src_tile] = start + d
            by_op["store"] += nbytes
            energy["memory"] += math.ceil(nbytes * 8 / bus) * spec.energy.memory_access_pj
        for tile in sorted({t for t, _ in foreign} - {src_tile}):
            hops = spec.hops(src_tile, tile)
            flits = math.ceil(nbytes * 8 / spec.noc.flit_bits)
            route = [("link",) + link for link in xy_route(spec.router_of(src_tile), spec.router_of(tile))]
            wire = flits * cyc
            start = res.reserve([("nic", src_tile)] + route, avail[src_tile], wire)
            arrive = start + (hops * spec.noc.router_latency_cycles) * cyc + wire
            d = access_cycles(nbytes) * cyc
            wstart = res.reserve([("bus", tile)], arrive, d)
            avail[tile] = wstart + d
            hop_bytes += nbytes * hops
            by_op["send"] += nbytes
            by_op["receive"] += nbytes
            energy["noc"] += flits * hops * spec.energy.flit_hop_pj
            energy["memory"] += math.ceil(nbytes * 8 / bus) * spec.energy.memory_access_pj
        ready_at: dict[tuple[int, int], float] = {}
        for tile, core in consumers:
            if (tile, core) == (src_tile, src_core) or core < 0:
                ready_at[(tile, core)] = avail.get(tile, ready)
                continue
            d = access_cycles(nbytes) * cyc
            start = res.reserve([("core", tile, core), ("bus", tile)], avail[tile], d)
            ready_at[(tile, core)] = start + d
            by_op["load"] += nbytes
            energy["memory"] += math.ceil(nbytes * 8 / bus) * spec.energy.memory_access_pj
            loads_done[(value.name, k)] = max(loads_done.get((value.name, k), 0.0), start + d)
        return ready_at

    values_into: dict[str, list] = {}
    for v in partition.values:
        values_into.setdefault(v.layer, []).append(v)

    produced: dict[tuple[str, int, int], float] = {}  # (block, inference, chunk) → time its outputs are ready
    for i in range(inferences):
        start_inference.append(res.free.get(("nic", io_positions.get("io:input", 0)), 0.0))
        for layer in partition.layer_order:
            cores = layer_cores[layer]
            c_count = n_chunks[layer]
            for k in range(c_count):
                frac = 1.0 / c_count
                # inputs of this chunk (from other layers / the input tile / own previous step)
                ready_core: dict[tuple[int, int], float] = {}
                for v in values_into.get(layer, []):
                    if v.kind in ("partial", "gate"):
                        continue
                    src_layer = layer_of(v.source)
                    if v.kind == "recurrent":
                        if k == 0:
                            continue
                        pk = k - 1
                    else:
                        pk = chunk_of_producer(src_layer, layer, k)
                    t0 = produced.get((v.source, i, pk), start_inference[-1]) if v.source in blocks else start_inference[-1]
                    for core, t in transfer(v, k, i, t0, 1.0 / (c_count - 1) if v.kind == "recurrent" else frac).items():
                        ready_core[core] = max(ready_core.get(core, 0.0), t)
                # MVM per core (blocks of this layer on that core fire together)
                mvm_done: dict[str, float] = {}
                for core, names in sorted(cores.items()):
                    steps = max(blocks[n].steps for n in names) * frac
                    d = steps * mvm_cycles * cyc
                    start = res.reserve([("core",) + core], ready_core.get(core, start_inference[-1]), d)
                    for n in names:
                        mvm_done[n] = start + d
                        mvmu_busy += d
                        energy["mvm"] += blocks[n].steps * frac * (mvm_pj + adc_pj_per_col * blocks[n].cols_used)
                # reduction chains (sequential, as the public compiler emits them): a block's running sum
                # leaves after its MVM, the arrival of the previous block's sum and its own add; then the
                # gate values (LSTM) go from the gate rows' homes to the cell homes; then vector work
                partials = [v for v in values_into.get(layer, []) if v.kind == "partial"]
                incoming = {v.sinks[0]: v for v in partials}
                arrival: dict[str, float] = {}
                sum_ready: dict[str, float] = {}
                add_ops: dict[str, float] = {}

                def running_sum(n: str) -> float:
                    if n in sum_ready:
                        return sum_ready[n]
                    if n not in incoming:
                        sum_ready[n] = mvm_done[n]
                        return sum_ready[n]
                    v_in = incoming[n]
                    ready_in = running_sum(v_in.source)
                    for core, t in transfer(v_in, k, i, ready_in, frac).items():
                        if core_of(n) == core:
                            arrival[n] = t
                    ops = blocks[n].cols_used * blocks[n].steps * frac
                    add_ops[n] = ops
                    d = ops / lanes * spec.timing.alu_cycles_per_op * cyc
                    start = res.reserve([("core",) + core_of(n)], max(mvm_done[n], arrival[n]), d)
                    sum_ready[n] = start + d
                    return sum_ready[n]

                for core, names in sorted(cores.items()):
                    for n in names:
                        running_sum(n)
                home_ready: dict[str, float] = dict(sum_ready)
                for v in values_into.get(layer, []):
                    if v.kind != "gate":
                        continue
                    for core, t in transfer(v, k, i, sum_ready[v.source], frac).items():
                        for n in v.sinks:
                            if core_of(n) == core:
                                home_ready[n] = max(home_ready.get(n, 0.0), t)
                for core, names in sorted(cores.items()):
                    ops = sum(blocks[n].alu_ops for n in names) * frac
                    rest = max(0.0, ops - sum(add_ops.get(n, 0.0) for n in names))
                    d = rest / lanes * spec.timing.alu_cycles_per_op * cyc
                    ready = max(home_ready[n] for n in names)
                    start = res.reserve([("core",) + core], ready, d)
                    energy["alu"] += ops * spec.energy.alu_op_pj
                    for n in names:
                        produced[(n, i, k)] = start + d
        out_ready = 0.0
        for v in partition.values:  # vector work after the last MVM layer, then the model output
            if v.kind == "operand" and v.layer == "output":
                src = layer_of(v.source)
                pk = n_chunks[src] - 1 if src is not None else 0
                t0 = produced.get((v.source, i, pk), start_inference[-1])
                for _, t in transfer(v, 0, i, t0, 1.0).items():
                    out_ready = max(out_ready, t)
        for v in partition.values:
            if v.kind == "output":
                pk = n_chunks[layer_of(v.source)] - 1
                for _, t in transfer(v, 0, i, produced[(v.source, i, pk)], 1.0).items():
                    out_ready = max(out_ready, t)
        finish_inference.append(out_ready)

    makespan = max(finish_inference)
    latency = finish_inference[0] - start_inference[0]
    if inferences > 1:
        interval = (finish_inference[-1] - finish_inference[0]) / (inferences - 1)
    else:
        interval = latency
    interval = max(interval, 1e-12)
    busiest = max(res.busy, key=lambda k: (res.busy[k], repr(k)), default=None)
    busiest_s = res.busy[busiest] / inferences if busiest is not None else 0.0
    tiles = placement.tiles_used()
    dynamic = {k: v * 1e-12 / inferences for k, v in energy.items()}
    dynamic["leakage"] = tiles * spec.energy.tile_leakage_mw * 1e-3 * interval
    total = sum(dynamic.values())
    n_mvmus = len(partition.blocks)
    utilisation = mvmu_busy / max(1e-30, n_mvmus * makespan)
    routers = len({spec.router_of(s.tile) for s in placement.slots.values()} | {spec.router_of(p) for p in io_positions.values()})
    area = tiles * spec.energy.tile_area_mm2 + routers * spec.energy.router_area_mm2
    return PerfResult(latency, 1.0 / interval, total, dynamic, utilisation, tiles, hop_bytes / inferences,
                      {k: v / inferences for k, v in by_op.items()}, stall / inferences, makespan, inferences, area,
                      {"interval_s": interval, "busiest_resource_s": busiest_s, "reservations": res.reservations}, busiest[0] if busiest else "")
