"""Independent checker of inserted communication (seed 003 L183): re-derives what every value needs.

Rules:
``store-missing``    a value read on another core has no store on its producing core
``load-missing``     a consumer core of a value (other than the producer's) has no load of it
``send-missing`` / ``receive-missing``   a destination tile of a value has no send / receive pair
``duplicate``        the same operation appears twice (the seed's dedup: one per producer / core / tile)
``spurious``         an operation no value needs (wrong core or tile, or a value with no foreign reader)
``bytes``            an operation moves a different number of bytes than its value
``hops``             a send's hop count differs from the NoC distance of its two tiles
"""

from __future__ import annotations

from solvermap.hardware.puma.placement_problem import PumaPlacementProblem
from solvermap.hardware.puma.program import Communication, PumaPlacement
from solvermap.results import CheckReport


def required(problem: PumaPlacementProblem, placement: PumaPlacement) -> dict[tuple, float]:
    io = problem.io_positions
    need: dict[tuple, float] = {}
    for value in problem.partition.values:
        src = placement.core_of(value.source, io)
        cores = {placement.core_of(s, io) for s in value.sinks}
        foreign = cores - {src}
        if not foreign:
            continue
        if src[1] >= 0:
            need["store", value.name, src[0], src[1], -1] = value.bytes
        for tile, core in foreign:
            if core >= 0:
                need["load", value.name, tile, core, -1] = value.bytes
        for tile in {t for t, _ in foreign} - {src[0]}:
            need["send", value.name, src[0], -1, tile] = value.bytes
            need["receive", value.name, tile, -1, src[0]] = value.bytes
    return need


def check(problem: PumaPlacementProblem, placement: PumaPlacement, communication: Communication) -> CheckReport:
    report = CheckReport()
    need = required(problem, placement)
    have: dict[tuple, float] = {}
    for t in communication.transfers:
        key = (t.op, t.value, t.tile, t.core, t.peer_tile)
        if key in have:
            report.add("duplicate", f"{t.op} of {t.value} on tile {t.tile} core {t.core} appears twice")
        have[key] = t.bytes
        if key not in need:
            report.add("spurious", f"{t.op} of {t.value} on tile {t.tile} core {t.core} is not needed")
        elif abs(need[key] - t.bytes) > 1e-9:
            report.add("bytes", f"{t.op} of {t.value} moves {t.bytes:g} bytes; the value has {need[key]:g}")
        if t.op == "send" and t.hops != problem.spec.hops(t.tile, t.peer_tile):
            report.add("hops", f"send of {t.value} from tile {t.tile} to {t.peer_tile} claims {t.hops} hops")
    for key in need:
        if key not in have:
            op, value, tile, core, peer = key
            report.add(f"{op}-missing", f"{op} of {value} on tile {tile}" + (f" core {core}" if core >= 0 else f" (peer tile {peer})"))
    return report
