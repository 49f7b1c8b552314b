"""PUMA placement baselines as in the public PUMA compiler (digest §3.1, §3.3), scored like the solver.

Grouping (bottom-up, seed L171–L175), then the public placer's *identity* placement (virtual tile k →
the k-th compute tile position; cores and MVMUs first-free, seed L189):

``row_major``     blocks in program order (layer, replica, kernel position, output block, input block),
                  filled sequentially: core = ⌊index / N⌋, tile = ⌊core / M⌋ (``GP_ROW_MAJOR``, the default)
``col_major``     the same with input block before output block (``GP_COL_MAJOR``)
``random``        a seeded random permutation, filled sequentially (``GP_RANDOM``)
``min_cut``       KaHIP (the seed's partitioner, L173 [48]): blocks → ⌈n/N⌉ cores, then the aggregated
                  core graph → ⌈cores/M⌉ tiles, ``kaffpa`` strong mode with the public compiler's imbalance
                  k·cap/n − 1; edge weight = bytes between two blocks (every value's source–sink pairs);
                  any block over capacity after KaHIP moves to the part with room it talks to most.
                  KaHIP has no work limit and the time of its strong mode grows about as the square of the
                  number of parts (random graphs of average degree 8), so above ``MIN_CUT_MAX_PARTS`` parts at
                  either level the baseline is not run and its record says why (``unavailable``): a
                  deterministic size rule, never the wall clock.

Identity placement numbers virtual tiles in order of their first block in program order, so the seed's
layer-order heuristic (L187: tiles in the order their matrices are used) is what identity does here.
"""

from __future__ import annotations

import math

import numpy as np

from solvermap.hardware.puma.placement_problem import PumaPlacementProblem
from solvermap.hardware.puma.program import PumaPlacement, Slot
from solvermap.results import BaselineUnavailable


def _order(problem: PumaPlacementProblem, key) -> list[str]:
    layer_rank = {name: k for k, name in enumerate(problem.partition.layer_order)}
    return [b.name for b in sorted(problem.partition.blocks, key=lambda b: (layer_rank[b.layer],) + key(b))]


def sequential(problem: PumaPlacementProblem, order: list[str]) -> PumaPlacement | None:
    n_core, n_tile = problem.spec.core.mvmus, problem.spec.tile.cores
    if math.ceil(len(order) / (n_core * n_tile)) > len(problem.compute_positions):
        return None
    slots = {}
    for index, name in enumerate(order):
        core = index // n_core
        slots[name] = Slot(problem.compute_positions[core // n_tile], core % n_tile, index % n_core)
    return PumaPlacement(slots)


def row_major(problem: PumaPlacementProblem) -> PumaPlacement | None:
    return sequential(problem, _order(problem, lambda b: (b.replica, b.position, b.row_block, b.col_block)))


def col_major(problem: PumaPlacementProblem) -> PumaPlacement | None:
    return sequential(problem, _order(problem, lambda b: (b.replica, b.position, b.col_block, b.row_block)))


def random_order(problem: PumaPlacementProblem, seed: int = 0) -> PumaPlacement | None:
    order = [b.name for b in problem.partition.blocks]
    rng = np.random.default_rng(seed)
    return sequential(problem, [order[k] for k in rng.permutation(len(order))])


def block_graph(problem: PumaPlacementProblem) -> dict[tuple[int, int], float]:
    """Undirected weighted edges between block indices: bytes of every source–sink pair of every value."""
    index = {b.name: k for k, b in enumerate(problem.partition.blocks)}
    edges: dict[tuple[int, int], float] = {}
    for value in problem.partition.values:
        if value.source not in index:
            continue
        for sink in value.sinks:
            if sink in index and sink != value.source:
                a, b = sorted((index[value.source], index[sink]))
                edges[a, b] = edges.get((a, b), 0.0) + value.bytes
    return edges


MIN_CUT_MAX_PARTS = 256  # KaHIP parts at most (module docstring)


def kahip_parts(n: int, edges: dict[tuple[int, int], float], capacity: int, seed: int = 0, *,
                what: str = "blocks") -> list[int]:
    """Capacity-limited k-way min-cut with KaHIP (k = ⌈n / capacity⌉), repaired to respect capacity; above
    ``MIN_CUT_MAX_PARTS`` parts :class:`BaselineUnavailable` (``what`` names the items in its message)."""
    k = math.ceil(n / capacity)
    if k <= 1:
        return [0] * n
    if k > MIN_CUT_MAX_PARTS:
        raise BaselineUnavailable(f"{n:,} {what} into {k:,} parts of {capacity}: KaHIP (no work limit) is run "
                                  f"up to {MIN_CUT_MAX_PARTS} parts")
    import kahip

    adjacency: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    for (a, b), w in edges.items():
        weight = max(1, int(round(w)))
        adjacency[a].append((b, weight))
        adjacency[b].append((a, weight))
    xadj, adjncy, adjcwgt = [0], [], []
    for row in adjacency:
        for b, w in row:
            adjncy.append(b)
            adjcwgt.append(w)
        xadj.append(len(adjncy))
    imbalance = max(0.0, k * capacity / n - 1.0)
    _, parts = kahip.kaffpa([1] * n, xadj, adjcwgt, adjncy, k, imbalance, True, seed, 2)  # mode 2 = STRONG
    parts = list(parts)
    # repair: move blocks out of over-full parts to the part with room they are most connected to
    load = [parts.count(p) for p in range(k)]
    for v in range(n):
        p = parts[v]
        if load[p] <= capacity:
            continue
        gain = {}
        for b, w in adjacency[v]:
            gain[parts[b]] = gain.get(parts[b], 0) + w
        room = [q for q in range(k) if load[q] < capacity]
        target = max(room, key=lambda q: (gain.get(q, 0), -q))
        parts[v] = target
        load[p] -= 1
        load[target] += 1
    return parts


def min_cut(problem: PumaPlacementProblem, seed: int = 0) -> PumaPlacement | None:
    blocks = [b.name for b in problem.partition.blocks]
    n_core, n_tile = problem.spec.core.mvmus, problem.spec.tile.cores
    edges = block_graph(problem)
    core_of = kahip_parts(len(blocks), edges, n_core, seed, what="crossbar blocks")
    n_cores = max(core_of) + 1
    core_edges: dict[tuple[int, int], float] = {}
    for (a, b), w in edges.items():
        ca, cb = sorted((core_of[a], core_of[b]))
        if ca != cb:
            core_edges[ca, cb] = core_edges.get((ca, cb), 0.0) + w
    tile_of_core = kahip_parts(n_cores, core_edges, n_tile, seed, what="cores")
    if max(tile_of_core) + 1 > len(problem.compute_positions):
        return None
    # identity placement: virtual tiles numbered by first appearance in program order; first-free cores/MVMUs
    order = _order(problem, lambda b: (b.replica, b.position, b.row_block, b.col_block))
    position = {b: k for k, b in enumerate(blocks)}
    tile_label: dict[int, int] = {}
    core_label: dict[int, tuple[int, int]] = {}
    fill: dict[tuple[int, int], int] = {}
    next_core: dict[int, int] = {}
    slots = {}
    for name in order:
        c = core_of[position[name]]
        t = tile_of_core[c]
        if t not in tile_label:
            tile_label[t] = len(tile_label)
        if c not in core_label:
            core_label[c] = (tile_label[t], next_core.get(t, 0))
            next_core[t] = next_core.get(t, 0) + 1
        vt, core = core_label[c]
        slot = fill.get((vt, core), 0)
        fill[vt, core] = slot + 1
        slots[name] = Slot(problem.compute_positions[vt], core, slot)
    return PumaPlacement(slots)


BASELINES = {"row_major": row_major, "col_major": col_major, "random": random_order, "min_cut": min_cut}
