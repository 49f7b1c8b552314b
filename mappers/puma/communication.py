"""Data communication insertion (seed 003 L181–L183), with the seed's deduplication.

For every value whose readers are on other cores: one ``store`` on the producing core, one ``load`` per
consumer core (however many readers it hosts); for every tile other than the producer's that hosts
readers: one ``send`` on the producing tile and one ``receive`` on that tile. The model input starts in
the input tile's memory (no store), the output ends in the output tile (no load). Copies between a
core's register spaces (L183) are counted by the performance simulator as part of each MVM.
"""

from __future__ import annotations

from solvermap.hardware.puma.placement_problem import PumaPlacementProblem
from solvermap.hardware.puma.program import Communication, PumaPlacement, Transfer


def insert(problem: PumaPlacementProblem, placement: PumaPlacement) -> Communication:
    io = problem.io_positions
    transfers: list[Transfer] = []
    for value in problem.partition.values:
        src_tile, src_core = placement.core_of(value.source, io)
        foreign = sorted({placement.core_of(s, io) for s in value.sinks} - {(src_tile, src_core)})
        if not foreign:
            continue
        if src_core >= 0:
            transfers.append(Transfer("store", value.name, value.bytes, src_tile, src_core))
        for tile, core in foreign:
            if core >= 0:
                transfers.append(Transfer("load", value.name, value.bytes, tile, core))
        for tile in sorted({t for t, _ in foreign} - {src_tile}):
            hops = problem.spec.hops(src_tile, tile)
            transfers.append(Transfer("send", value.name, value.bytes, src_tile, -1, tile, hops))
            transfers.append(Transfer("receive", value.name, value.bytes, tile, -1, src_tile, hops))
    return Communication(transfers)


def summary(communication: Communication) -> dict[str, float]:
    out = {f"{op}_bytes": float(v) for op, v in communication.bytes_by_op().items()}
    out.update({f"{op}_count": float(v) for op, v in communication.counts().items()})
    out["hop_weighted_bytes"] = float(communication.hop_weighted_bytes())
    return out
