"""Independent checker of a PUMA hierarchical placement (never imports the placement formulation).

Rules:
``block-placed``    every crossbar block of the partition has exactly one slot
``unknown-block``   the decision places a block the partition does not have
``tile-position``   blocks sit on compute tile positions of the node (not the I/O tiles, not outside)
``core-range``      core index < cores per tile;  ``mvmu-range``: MVMU index < MVMUs per core
``slot-unique``     no two blocks share one MVMU (tile, core, MVMU)
``core-capacity``   ≤ MVMUs-per-core blocks on a core;  ``tile-capacity``: ≤ cores × MVMUs blocks on a tile
``tile-budget``     ≤ K tiles in use, K = ⌈blocks / (cores × MVMUs)⌉ + ``extra_tiles`` (the PUMA compiler's
                    tile count; the certified lower bounds hold for placements within it)
"""

from __future__ import annotations

import math

from solvermap.hardware.puma.placement_problem import PumaPlacementProblem
from solvermap.hardware.puma.program import PumaPlacement
from solvermap.results import CheckReport


def check(problem: PumaPlacementProblem, decision: PumaPlacement) -> CheckReport:
    report = CheckReport()
    spec = problem.spec
    names = {b.name for b in problem.partition.blocks}
    allowed = set(problem.compute_positions)
    for name in decision.slots:
        if name not in names:
            report.add("unknown-block", f"decision places unknown block {name!r}")
    per_core: dict[tuple[int, int], int] = {}
    per_tile: dict[int, int] = {}
    seen: dict[tuple[int, int, int], str] = {}
    for name in sorted(names):
        slot = decision.slots.get(name)
        if slot is None:
            report.add("block-placed", f"block {name!r} has no MVMU")
            continue
        if slot.tile not in allowed:
            report.add("tile-position", f"block {name!r} on tile {slot.tile}, not a compute tile of the node")
        if not 0 <= slot.core < spec.tile.cores:
            report.add("core-range", f"block {name!r} on core {slot.core}; a tile has {spec.tile.cores}")
        if not 0 <= slot.mvmu < spec.core.mvmus:
            report.add("mvmu-range", f"block {name!r} on MVMU {slot.mvmu}; a core has {spec.core.mvmus}")
        key = (slot.tile, slot.core, slot.mvmu)
        if key in seen:
            report.add("slot-unique", f"blocks {seen[key]!r} and {name!r} share MVMU {key}")
        seen[key] = name
        per_core[slot.tile, slot.core] = per_core.get((slot.tile, slot.core), 0) + 1
        per_tile[slot.tile] = per_tile.get(slot.tile, 0) + 1
    for (tile, core), count in per_core.items():
        if count > spec.core.mvmus:
            report.add("core-capacity", f"core {core} of tile {tile} holds {count} blocks; capacity {spec.core.mvmus}")
    for tile, count in per_tile.items():
        if count > spec.mvmus_per_tile:
            report.add("tile-capacity", f"tile {tile} holds {count} blocks; capacity {spec.mvmus_per_tile}")
    budget = math.ceil(len(names) / spec.mvmus_per_tile) + problem.extra_tiles
    if len(per_tile) > budget:
        report.add("tile-budget", f"{len(per_tile)} tiles in use; the problem allows {budget}")
    return report
