"""Row-band placement for PUMA: a constructive start for the tile placement of large instances.

What it constructs: each layer's crossbar grid (the blocks of one layer, row blocks × column blocks in the
partition's chain order) is cut into *bands* of h consecutive rows, h chosen per layer among
:data:`HEIGHTS` (those no taller than the layer); the layers' bands, in program order, are read column
position by column position, and the resulting block order is filled into tiles of N·M MVMUs in turn
(:meth:`~solvermap.hardware.puma.placement_problem.PumaPlacementProblem.min_tiles` tiles, so at most the
compiler's tile count K and every capacity holds by construction). A band keeps a reduction chain's partial
sums on few tiles and the blocks sharing an input row band on few tiles, which neither all-row-major nor
all-column-major order does.

What it minimises, in two steps (a heuristic: no optimality claim, no bound):

1. *band heights*: every combination of per-layer heights is ranked by the **message bytes** of its tile
   grouping (one message per value and destination tile other than its source's, I/O tiles included); the
   :data:`SCREEN` combinations with the fewest are kept. The combinations grow as (heights per layer) ^
   layers, so above :data:`MAX_COMBINATIONS` (a deep network: 20 layers of 16 block rows are 8^20) only the
   combinations met by a per-layer descent are ranked — from the shortest bands, each layer in turn takes
   the height with the fewest message bytes given the others, for at most :data:`DESCENT_PASSES` passes
   over the layers or until a pass changes nothing (at most passes × Σ heights per layer evaluations).
2. *tile positions*: the tiles of each kept grouping are placed on the node's compute positions by
   simulated annealing on **Σ tile-to-tile traffic × hops** (hops = 1 + Manhattan distance between the
   routers; the I/O tiles are fixed), which is the placement's hop-weighted bytes for that grouping. Each
   screened grouping gets ``MOVES / 7.5`` proposals (seed 1); the one with the fewest hop-weighted bytes is
   annealed again with ``MOVES`` proposals from seeds 2–5, and the best of those four placements is returned.

The work is fixed (the number of height combinations, ``SCREEN``, ``MOVES``) and the seeds are fixed, so the
same problem gives the same placement on any machine load; nothing reads the clock. Cores and MVMU slots
are filled in order within each tile (stage C of :mod:`.hierarchical_placement` regroups them later).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from solvermap.hardware.puma.placement_problem import PumaPlacementProblem, hop_weighted_bytes
from solvermap.hardware.puma.program import PumaPlacement, Slot
from solvermap.mappers.puma import placement_bounds

HEIGHTS = (1, 2, 4, 6, 8, 12, 16, 24, 32)  # band heights tried per layer (rows of crossbar blocks)
SCREEN = 40  # height combinations (fewest message bytes) whose tile positions are annealed
MOVES = 150_000  # annealing proposals of the final runs (the screen's runs: MOVES / 7.5)
FINAL_SEEDS = (2, 3, 4, 5)  # seeds of the final annealing runs (the screen uses seed 1)
MAX_COMBINATIONS = 10_000  # height combinations enumerated at most (the study's largest, mlp_l5: 2,240) ...
DESCENT_PASSES = 4  # ... above it, passes of the per-layer descent at most


def band_order(problem: PumaPlacementProblem, heights: tuple[int, ...]) -> list[str]:
    """Blocks in fill order: per layer (grid), bands of ``heights[g]`` rows, each band position by position."""
    st = placement_bounds.structure(problem)
    order = []
    for grid, h in zip(st.grids, heights):
        for r0 in range(0, len(grid.rows), h):
            band = grid.rows[r0:r0 + h]
            for j in range(max(len(r) for r in band)):
                order.extend(row[j] for row in band if j < len(row))
    return order


def tile_traffic(problem: PumaPlacementProblem, tile_of: dict[str, int], tiles: int) -> np.ndarray:
    """Bytes from node to node (tiles 0..tiles−1, then the I/O tiles in name order), one message per
    destination tile other than the source's."""
    io = sorted(problem.io_positions)
    node = {**tile_of, **{name: tiles + i for i, name in enumerate(io)}}
    traffic = np.zeros((tiles + len(io), tiles + len(io)))
    for value in problem.partition.values:
        src = node[value.source]
        for dst in {node[s] for s in value.sinks} - {src}:
            traffic[src, dst] += value.bytes
    return traffic


def anneal_positions(problem: PumaPlacementProblem, traffic: np.ndarray, tiles: int, seed: int, moves: int) -> list[int]:
    """Tile positions minimising Σ traffic × hops (I/O tiles fixed): simulated annealing over swaps of two
    tiles and moves of a tile to a free compute position, ``moves`` proposals, linear cooling from 2 % of the
    start cost per tile; the best positions seen. Deterministic for a given ``seed``."""
    spec = problem.spec
    rng = np.random.default_rng(seed)
    routers = np.array([spec.router_of(p) for p in range(spec.tile_positions)])
    hops = 1 + np.abs(routers[:, None, 0] - routers[None, :, 0]) + np.abs(routers[:, None, 1] - routers[None, :, 1])
    np.fill_diagonal(hops, 0)
    compute = list(problem.compute_positions)
    pos = np.array([int(p) for p in rng.permutation(compute)[:tiles]] + [problem.io_positions[n] for n in sorted(problem.io_positions)])
    taken = set(pos[:tiles].tolist())
    free = [p for p in compute if p not in taken]
    both = traffic + traffic.T
    cost = float((traffic * hops[np.ix_(pos, pos)]).sum())
    best, best_pos = cost, pos.copy()
    start_temp = cost * 0.02 / tiles
    for step in range(moves):
        temp = start_temp * (1 - step / moves) + 1e-9
        i = int(rng.integers(tiles))
        if free and rng.random() < 0.3:
            f = int(rng.integers(len(free)))
            new, old = free[f], pos[i]
            delta = float(both[i] @ (hops[new, pos] - hops[old, pos]))
            if delta < 0 or rng.random() < math.exp(-delta / temp):
                pos[i], free[f] = new, old
                cost += delta
        else:
            j = int(rng.integers(tiles))
            if i == j:
                continue
            pi, pj = pos[i], pos[j]
            delta = float(both[i] @ (hops[pj, pos] - hops[pi, pos]) + both[j] @ (hops[pi, pos] - hops[pj, pos]))
            delta -= both[i, j] * (0 - hops[pi, pj]) + both[j, i] * (0 - hops[pj, pi])  # i↔j keep their distance
            if delta < 0 or rng.random() < math.exp(-delta / temp):
                pos[i], pos[j] = pj, pi
                cost += delta
        if cost < best - 1e-9:
            best, best_pos = cost, pos.copy()
    return [int(p) for p in best_pos[:tiles]]


def as_placement(problem: PumaPlacementProblem, tile_of: dict[str, int], positions: list[int]) -> PumaPlacement:
    """Blocks on their tiles' positions, filling cores and MVMUs in order."""
    per_core = problem.spec.core.mvmus
    filled: dict[int, int] = {}
    slots = {}
    for name, tile in tile_of.items():
        k = filled.get(tile, 0)
        filled[tile] = k + 1
        slots[name] = Slot(positions[tile], k // per_core, k % per_core)
    return PumaPlacement(slots)


def band_placement(problem: PumaPlacementProblem, screen: int = SCREEN, moves: int = MOVES) -> tuple[PumaPlacement, tuple[int, ...]]:
    """The best row-band placement and its band heights (one per layer grid): every combination of heights
    (above :data:`MAX_COMBINATIONS`, those the per-layer descent meets) ranked by message bytes, the ``screen`` fewest annealed briefly (``moves`` / 7.5 proposals, seed 1), the
    best of them annealed longer (``moves`` proposals, seeds :data:`FINAL_SEEDS`); fewest hop-weighted bytes
    wins, ties by heights. Uses :meth:`min_tiles` tiles."""
    st = placement_bounds.structure(problem)
    cap = problem.blocks_per_tile
    tiles = problem.min_tiles()
    choices = [[h for h in HEIGHTS if h <= len(g.rows)] or [1] for g in st.grids]

    def grouping(heights: tuple[int, ...]) -> tuple[dict[str, int], np.ndarray]:
        tile_of = {name: i // cap for i, name in enumerate(band_order(problem, heights))}
        return tile_of, tile_traffic(problem, tile_of, tiles)

    ranked = sorted((messages, heights) for heights, messages in _ranked_heights(choices, lambda h: float(grouping(h)[1].sum())).items())
    best = None
    for _, heights in ranked[:screen]:
        tile_of, traffic = grouping(heights)
        value = hop_weighted_bytes(problem, as_placement(problem, tile_of, anneal_positions(problem, traffic, tiles, 1, int(moves / 7.5))))
        if best is None or value < best[0]:
            best = (value, heights, tile_of, traffic)
    _, heights, tile_of, traffic = best
    placements = [as_placement(problem, tile_of, anneal_positions(problem, traffic, tiles, seed, moves)) for seed in FINAL_SEEDS]
    return min(placements, key=lambda p: hop_weighted_bytes(problem, p)), heights


def _ranked_heights(choices: list[list[int]], messages) -> dict[tuple[int, ...], float]:
    """Message bytes of every height combination, or (more than :data:`MAX_COMBINATIONS`) of those the
    per-layer descent meets (module docstring, step 1)."""
    if math.prod(len(c) for c in choices) <= MAX_COMBINATIONS:
        return {heights: messages(heights) for heights in itertools.product(*choices)}
    seen: dict[tuple[int, ...], float] = {}

    def value(heights: tuple[int, ...]) -> float:
        if heights not in seen:
            seen[heights] = messages(heights)
        return seen[heights]

    current = tuple(c[0] for c in choices)
    value(current)
    for _ in range(DESCENT_PASSES):
        changed = False
        for g, options in enumerate(choices):
            trials = [current[:g] + (h,) + current[g + 1:] for h in options]
            chosen = min(trials, key=lambda t: (value(t), t))
            changed = changed or chosen != current
            current = chosen
        if not changed:
            break
    return seen
