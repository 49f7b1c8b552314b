"""Stage D of the PUMA placement: choose, by simulation, among placements that move no more bytes.

Hop-weighted bytes (the placement objective) does not see what the performance simulator
(:mod:`solvermap.hardware.puma.performance_sim`) measures: its resources — cores, tile-memory buses, network
interfaces, links — serve requests in program order, so which blocks share a core, and in which order the
cores of a tile come, sets the latency and the initiation interval. Placements with the same bytes differ by
several per cent in both (the study README, issue #28, has the measurements). This stage uses the simulator
as the evaluator, after the search and before the bound, and never accepts a placement with more
hop-weighted bytes, so the objective, the bound and the gap keep their meaning:

1. *candidates* on the search's tiles: the search's placement, and each tile's blocks filled into its cores
   first-free in program order (layer, replica, kernel position, output block, input block: one layer per
   core where the counts allow, as the compiler's row-major fill) and in column-major order; the one with the
   lowest score is the start;
2. *local search*, first improvement in a fixed order: swap the contents of two cores of a tile (the
   simulator serves a tile's cores in index order); move a block to another core of its tile, or swap it with
   the first block of another layer there when that core is full; swap two blocks of the same layer and the
   same output or input block on different tiles when hop-weighted bytes do not rise. A move is kept when
   the score falls and neither the interval nor the latency rises above the start's.

Score = simulated initiation interval × latency (a relative change of either counts the same), with the
simulator's defaults (4 pipelined inferences, 8 chunks per layer). Work: the simulator's resource
reservations, summed over the simulations run; a simulation runs only while the work left covers the
previous one's reservations, so the stage spends at most ``work`` plus one simulation's variation — a
count, so the answer does not depend on machine load (:data:`RESERVATIONS_PER_UNIT` of them take about a
second, like a unit of the deterministic time limit; ``work = 0`` turns the stage off).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from solvermap.hardware.puma.placement_problem import PumaPlacementProblem
from solvermap.hardware.puma.program import PumaPlacement, Slot


RESERVATIONS_PER_UNIT = 100_000  # about 1 s of the simulator on the 2-core reference machine (7–11 µs each)


@dataclass(frozen=True)
class Score:
    interval_s: float
    latency_s: float
    reservations: int

    @property
    def value(self) -> float:
        return self.interval_s * self.latency_s


def simulated(problem: PumaPlacementProblem, placement: PumaPlacement) -> Score:
    from solvermap.hardware.puma.performance_sim import simulate
    from solvermap.mappers.puma.communication import insert

    perf = simulate(problem.partition, placement, insert(problem, placement), problem.spec, dict(problem.io_positions))
    return Score(float(perf.extra["interval_s"]), float(perf.latency_s), int(perf.extra["reservations"]))


class _Search:
    """Blocks → (tile, core); MVMU slots follow program order within a core (seed L189: equidistant)."""

    def __init__(self, problem: PumaPlacementProblem, work: int):
        self.problem = problem
        self.rank = {b.name: k for k, b in enumerate(problem.partition.blocks)}
        self.layer = {b.name: b.layer for b in problem.partition.blocks}
        self.left = work  # reservations
        self.cost = 0  # reservations of the last simulation: the next one is run only if that many are left
        self.used = 0  # simulations
        self.touching: dict[str, list] = {}
        for value in problem.partition.values:
            for name in {value.source, *value.sinks}:
                self.touching.setdefault(name, []).append(value)

    def bytes_of(self, values, where: dict[str, tuple[int, int]]) -> float:
        """Hop-weighted bytes of ``values`` (one message per destination tile, as the objective counts)."""
        io, hops = self.problem.io_positions, self.problem.spec.hops

        def tile(name: str) -> int:
            return io[name] if name in io else where[name][0]

        total = 0.0
        for value in values:
            src = tile(value.source)
            total += value.bytes * sum(hops(src, d) for d in {tile(s) for s in value.sinks} - {src})
        return total

    def placement(self, where: dict[str, tuple[int, int]]) -> PumaPlacement:
        fill: dict[tuple[int, int], int] = {}
        slots = {}
        for name in sorted(where, key=self.rank.__getitem__):
            slots[name] = Slot(*where[name], fill.get(where[name], 0))
            fill[where[name]] = fill.get(where[name], 0) + 1
        return PumaPlacement(slots)

    def score(self, where: dict[str, tuple[int, int]]) -> Score | None:
        if self.left < max(1, self.cost):
            return None
        score = simulated(self.problem, self.placement(where))
        self.left -= score.reservations
        self.cost = score.reservations
        self.used += 1
        return score


def _filled(problem: PumaPlacementProblem, where: dict[str, tuple[int, int]], key) -> dict[str, tuple[int, int]]:
    """Each tile's blocks filled into its cores in ``key`` order, ``core.mvmus`` per core."""
    layer_rank = {name: k for k, name in enumerate(problem.partition.layer_order)}
    by_tile: dict[int, list] = {}
    for b in problem.partition.blocks:
        by_tile.setdefault(where[b.name][0], []).append(b)
    out = {}
    for tile, blocks in by_tile.items():
        for k, b in enumerate(sorted(blocks, key=lambda b: (layer_rank[b.layer],) + key(b))):
            out[b.name] = (tile, k // problem.spec.core.mvmus)
    return out


def _moves(search: _Search, where: dict[str, tuple[int, int]]) -> list[tuple]:
    """The neighbourhood in the fixed order of the module docstring, as moves applied to the current
    placement by :func:`_apply` (the scan goes on from the last kept move)."""
    problem = search.problem
    tiles = sorted({t for t, _ in where.values()})
    cores = range(problem.spec.tile.cores)
    names = sorted(where, key=search.rank.__getitem__)
    block = {b.name: b for b in problem.partition.blocks}
    moves: list[tuple] = [("cores", t, a, b) for t in tiles for a in cores for b in cores if a < b]
    for n in names:
        moves += [("core", n, c) for c in cores]
        moves += [("swap", n, m) for m in names if search.rank[m] > search.rank[n] and search.layer[m] == search.layer[n]
                  and (block[m].row_block == block[n].row_block or block[m].col_block == block[n].col_block)]
    return moves


def _apply(search: _Search, where: dict[str, tuple[int, int]], move: tuple):
    """``where`` after ``move``, or None when the move does nothing, overfills a core or (a swap across
    tiles) raises hop-weighted bytes."""
    kind = move[0]
    if kind == "cores":
        _, tile, a, b = move
        swap = {(tile, a): (tile, b), (tile, b): (tile, a)}
        return {n: swap.get(w, w) for n, w in where.items()} if any(w in swap for w in where.values()) else None
    if kind == "core":
        _, n, core = move
        tile = where[n][0]
        if where[n][1] == core:
            return None
        there = sorted((m for m, w in where.items() if w == (tile, core)), key=search.rank.__getitem__)
        if len(there) < search.problem.spec.core.mvmus:
            return {**where, n: (tile, core)}
        foreign = [m for m in there if search.layer[m] != search.layer[n]]
        return {**where, n: (tile, core), foreign[0]: where[n]} if foreign else None
    _, n, m = move
    if where[n][0] == where[m][0]:
        return None
    swapped = {**where, n: where[m], m: where[n]}
    values = {id(v): v for v in search.touching.get(n, []) + search.touching.get(m, [])}.values()
    return swapped if search.bytes_of(values, swapped) <= search.bytes_of(values, where) + 1e-9 else None


def select(problem: PumaPlacementProblem, placement: PumaPlacement, work: int) -> tuple[PumaPlacement, dict[str, Any]]:
    """The placement this stage keeps and its record (scores before and after, simulations, moves)."""
    search = _Search(problem, work)
    if work <= 0:
        return placement, {"simulations": 0, "work_reservations": work}
    given = {n: (s.tile, s.core) for n, s in placement.slots.items()}
    candidates = {"search": given,
                  "row_major_cores": _filled(problem, given, lambda b: (b.replica, b.position, b.row_block, b.col_block)),
                  "col_major_cores": _filled(problem, given, lambda b: (b.replica, b.position, b.col_block, b.row_block))}
    scores = {}
    for label, where in candidates.items():
        score = search.score(where)
        if score is None:
            break
        scores[label] = score
    if "search" not in scores:  # not even one simulation fits in the work
        return placement, {"simulations": 0, "work_reservations": work}
    chosen = min(scores, key=lambda label: scores[label].value)
    where, start = candidates[chosen], scores[chosen]
    current, moves = start, 0
    neighbourhood = _moves(search, where)
    since = 0  # moves tried since the last kept one: a whole scan without one ends the search
    k = 0
    while search.left >= search.cost and since < len(neighbourhood):
        trial = _apply(search, where, neighbourhood[k])
        k, since = (k + 1) % len(neighbourhood), since + 1
        if trial is None:
            continue
        score = search.score(trial)
        if score is not None and score.value < current.value * (1 - 1e-9) and score.interval_s <= start.interval_s \
                and score.latency_s <= start.latency_s:
            where, current, moves, since = trial, score, moves + 1, 0
    details = {"simulations": search.used, "work_reservations": work, "spent_reservations": work - search.left,
               "start": chosen, "moves": moves,
               "given_interval_s": scores["search"].interval_s, "given_latency_s": scores["search"].latency_s,
               "interval_s": current.interval_s, "latency_s": current.latency_s}
    if current.value >= scores["search"].value:  # nothing better than the search's placement: keep it as it was
        return placement, {**details, "start": "search", "moves": 0, "interval_s": scores["search"].interval_s,
                           "latency_s": scores["search"].latency_s}
    return search.placement(where), details
