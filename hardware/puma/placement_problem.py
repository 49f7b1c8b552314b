"""The PUMA "tile placement" decision: problem, decision scoring (shared by solver, baselines, checker).

Assign every crossbar block to an MVMU slot of a core of a tile at a node position (seed 003 L171–L189).
The objective is **hop-weighted bytes**: Σ over values of bytes × routers traversed, one message per
distinct destination tile (seed L183 dedup), the input coming from the input tile and the output going to
the output tile (positions reserved for I/O, digest §1a).

It lives in ``hardware/puma`` beside the spec and program types it is made of, so the checkers
(``hardware/checks/puma_*.py``) take it from their own layer and the mapper's hierarchical placement model,
which solves it, imports it from below.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from solvermap.hardware.puma import PumaSpec
from solvermap.hardware.puma.program import IO_INPUT, IO_OUTPUT, Partition, PumaPlacement


@dataclass(frozen=True)
class PumaPlacementProblem:
    partition: Partition
    spec: PumaSpec
    compute_positions: tuple[int, ...]  # tile positions blocks may use
    io_positions: Mapping[str, int] = field(default_factory=dict)  # IO_INPUT / IO_OUTPUT → tile position
    variant: str = "hierarchical"  # hierarchical | joint
    extra_tiles: int = 0  # virtual tiles beyond the minimum the solver may use
    balance_weight: float = 0.0  # core level: weight of the largest core work (ALU ops) term
    link_weight: float = 0.0  # tile level: weight of the largest link load term
    joint_candidates: int = 0  # joint variant: candidate positions (0 = minimum tiles + 50 %)
    lns_share: float = 0.45  # share of the time limit spent in large-neighbourhood search on the joint model (0 = off)
    bound_share: float = 0.3  # share of the time limit spent on the certified lower bound (placement_bounds; 0 = off)
    selection_share: float = 0.25  # stage D, the selection by simulation: its work as a share of the time limit (0 = off)

    @property
    def blocks_per_tile(self) -> int:
        return self.spec.mvmus_per_tile

    def min_tiles(self) -> int:
        return math.ceil(len(self.partition.blocks) / self.blocks_per_tile)


def make_problem(partition: Partition, spec: PumaSpec, **options) -> PumaPlacementProblem:
    io = {}
    if spec.noc.io_tiles >= 1:
        io[IO_INPUT] = 0
        io[IO_OUTPUT] = 1 if spec.noc.io_tiles >= 2 else 0
    compute = tuple(range(spec.noc.io_tiles, spec.tile_positions))
    return PumaPlacementProblem(partition, spec, compute, io, **options)


def message_tiles(problem: PumaPlacementProblem, placement: PumaPlacement):
    """(value, source tile, destination tiles ≠ source) for every value."""
    io = problem.io_positions
    for value in problem.partition.values:
        src = placement.tile_of(value.source, io)
        dests = sorted({placement.tile_of(s, io) for s in value.sinks} - {src})
        yield value, src, dests


def hop_weighted_bytes(problem: PumaPlacementProblem, placement: PumaPlacement) -> float:
    spec = problem.spec
    return sum(value.bytes * spec.hops(src, d) for value, src, dests in message_tiles(problem, placement) for d in dests)


def objective(problem: PumaPlacementProblem, placement: PumaPlacement) -> float:
    """The decision's scalar objective: hop-weighted bytes per inference."""
    return hop_weighted_bytes(problem, placement)


def level_bytes(problem: PumaPlacementProblem, placement: PumaPlacement) -> dict[str, float]:
    """Bytes per inference by level: stores/loads (tile memory) and sends (NoC), with dedup."""
    io = problem.io_positions
    out = {"store": 0.0, "load": 0.0, "send": 0.0, "hop_bytes": 0.0}
    for value in problem.partition.values:
        src_core = placement.core_of(value.source, io)
        cores = {placement.core_of(s, io) for s in value.sinks}
        foreign = cores - {src_core}
        if foreign and value.source in placement.slots:
            out["store"] += value.bytes
        out["load"] += value.bytes * sum(1 for c in foreign if c[1] >= 0)
        src_tile = src_core[0]
        for tile in sorted({c[0] for c in foreign} - {src_tile}):
            out["send"] += value.bytes
            out["hop_bytes"] += value.bytes * problem.spec.hops(src_tile, tile)
    return out


def link_loads(problem: PumaPlacementProblem, placement: PumaPlacement) -> dict[tuple, float]:
    """Bytes per inference on each directed router link (XY routing on the router grid)."""
    from solvermap.formulations.problems.placement import xy_route

    loads: dict[tuple, float] = {}
    for value, src, dests in message_tiles(problem, placement):
        for d in dests:
            for link in xy_route(problem.spec.router_of(src), problem.spec.router_of(d)):
                loads[link] = loads.get(link, 0.0) + value.bytes
    return loads
