"""Hierarchical tile placement for PUMA, expressed as solves of the shared placement model.

Every level is an instance of :mod:`solvermap.formulations.placement` (typed sites, capacities,
per-destination-site dedup), so PUMA adds no model of its own. K = the compiler's tile count
(⌈blocks / (N·M)⌉) + ``extra_tiles``; every placement uses at most K tiles (checker rule
``tile-budget``). The flow of :func:`solve`:

0  *start*: the best of the hint (best baseline) and the layer-order portfolio — blocks filled
   sequentially as the compiler fills them, each layer row- or column-major, all 2^L combinations
   scored (:func:`_layer_order_portfolio`; all-row and all-column are the compiler's baselines) — and,
   on instances of more than ``EXACT_STAGES_MAX_BLOCKS`` blocks (where stages A/B are skipped), the
   row-band placement of :mod:`.band_placement` (each layer's rows cut into bands, band heights ranked by
   message bytes, tile positions annealed on traffic × hops; it uses the minimum tiles, so ≤ K). The
   starts are ranked by hop-weighted bytes; the best is the LNS's start and the others its ``others``
   (``details["band_start"]``: heights, hop-weighted bytes). The band construction's work is fixed
   (height combinations, annealing proposals, seeds) and not charged to the Budget, like the portfolio's
   scoring: it never reads the clock, so it repeats exactly, and the stages keep the same work budget.
``hierarchical`` (default; top-down, the seed's "alternative" of L177–L179), on instances of at most
``EXACT_STAGES_MAX_BLOCKS`` blocks:
    A  blocks → K virtual tiles (capacity N·M MVMUs each; uniform distance, so the objective is the
       (λ−1) cut = bytes sent between tiles; the input and output tiles are typed sites), warm-started
       from the start's tile grouping; symmetric virtual tiles.
    B  virtual tiles → node positions (capacity one virtual tile per position, coordinates = router of
       the position, hop offset 1 = the router every message crosses; objective = hop-weighted bytes,
       optionally + μ · max link load), warm-started from the start's positions matched by overlap.
``joint``
    A+B in one model: blocks → positions among the ``joint_candidates`` positions nearest the I/O router.
LNS  (``lns_share`` of the time, unless A's bound already proves the start optimal) on the joint model
    blocks → positions with the full hop-weighted objective (:func:`shared.improve`): a short run from
    each distinct start (portfolio, hint, band start), the best continued with sweeps over every pair of tiles
    sharing traffic first (``sweep_pairs``); then B re-solved on the final tiles.
C   per tile: its blocks → M cores (capacity N MVMUs; objective = bytes loaded by cores other than the
    producer's, + λ · max core ALU work), warm-started from the hint's cores or first-free; the
    solver's grouping replaces the start only if it moves fewer store + load bytes (exact count); MVMU
    slots in order (seed L189: MVMUs of a core are equidistant). C does not change hop-weighted bytes.
D   (``selection_share`` > 0) the performance simulator chooses among placements with no more hop-weighted
    bytes: core fills and moves within tiles, same-layer swaps across tiles (:mod:`.simulated_selection`),
    before the bound, so the bound is one of the reported placement's bytes. Its work — simulator
    reservations, ``RESERVATIONS_PER_UNIT`` per unit — is ``selection_share`` × the time limit (×
    ``NO_LIMIT_UNITS`` without one), on top of the limit.
Bound  the larger of stage A's dual bound on bytes sent (every send crosses ≥ 1 router; valid for
    every placement on ≤ K tiles) and, when that does not close the gap, the certified bound of
    :mod:`.placement_bounds` (message + router-crossing relaxations, ``bound_share`` of the time).
    The status is ``optimal`` only when the bound meets the objective. Stage records are combined
    (times summed).
Budget  ``config.time_limit_s`` is split between the stages by one
    :class:`~solvermap.formulations.strategy.Budget`: with ``config.deterministic`` (the default) every
    stage is charged the deterministic work its solves report, and the certified bound's column
    generation spends deterministic work too, so the same config gives the same placement, bound and
    status on any machine load. A stage without an incumbent keeps its warm start (``kept_warm_start``).
"""

from __future__ import annotations

import math
from typing import Any

from solvermap.formulations import placement as shared
from solvermap.formulations.decision import Solved, combine
from solvermap.formulations.problems.placement import Item, Net, Placement, PlacementProblem, Site
from solvermap.formulations.solver import SolveResult, SolverConfig, Status, relative_gap
from solvermap.formulations.strategy import Budget
from solvermap.hardware.puma.placement_problem import PumaPlacementProblem, hop_weighted_bytes
from solvermap.hardware.puma.program import PumaPlacement, Slot

NAME = "puma_tile_placement"
KIND = "milp"
MEM = "tile-memory"


def diagnose(problem: PumaPlacementProblem) -> str | None:
    need = problem.min_tiles()
    have = len(problem.compute_positions)
    if need > have:
        return (f"{len(problem.partition.blocks)} crossbar blocks need {need} tiles of {problem.blocks_per_tile} MVMUs; "
                f"the node has {have} compute tiles (constraint group: capacity)")
    return None


def _io_items_and_sites(problem: PumaPlacementProblem, coords: bool):
    items, sites = [], []
    for name, position in problem.io_positions.items():
        items.append(Item(name, {}, type=name))
        sites.append(Site(f"io@{position}:{name}", {}, problem.spec.router_of(position) if coords else None, types=(name,)))
    return items, sites


def _nets(problem: PumaPlacementProblem, group=lambda name: name) -> tuple[Net, ...]:
    merged: dict[tuple[str, tuple[str, ...]], float] = {}
    for value in problem.partition.values:
        src = group(value.source)
        sinks = tuple(sorted({group(s) for s in value.sinks}))
        if sinks == (src,):
            continue
        merged[src, sinks] = merged.get((src, sinks), 0.0) + value.bytes
    return tuple(Net(src, sinks, w, f"n{k}") for k, ((src, sinks), w) in enumerate(merged.items()))


def _stage_config(config: SolverConfig, share: float) -> SolverConfig:
    budget = config.budget()
    return config.with_budget(None if budget is None else max(0.5, budget * share))


def tile_grouping_problem(problem: PumaPlacementProblem, k: int) -> PlacementProblem:
    io_items, io_sites = _io_items_and_sites(problem, coords=False)
    items = tuple(Item(b.name, {"mvmu": 1.0}) for b in problem.partition.blocks) + tuple(io_items)
    sites = tuple(Site(f"vt{t}", {"mvmu": float(problem.blocks_per_tile)}) for t in range(k)) + tuple(io_sites)
    return PlacementProblem(items, sites, _nets(problem), hop_offset=1.0, symmetric_sites=True, name="puma-tile-grouping")


def position_problem(problem: PumaPlacementProblem, groups: dict[str, str], virtual: list[str]) -> PlacementProblem:
    io_items, io_sites = _io_items_and_sites(problem, coords=True)
    items = tuple(Item(v, {"tile": 1.0}) for v in virtual) + tuple(io_items)
    sites = tuple(Site(f"pos{p}", {"tile": 1.0}, problem.spec.router_of(p)) for p in problem.compute_positions) + tuple(io_sites)
    nets = _nets(problem, group=lambda name: groups.get(name, name))
    return PlacementProblem(items, sites, nets, hop_offset=1.0, link_weight=problem.link_weight, name="puma-tile-positions")


def joint_problem(problem: PumaPlacementProblem, candidates: list[int]) -> PlacementProblem:
    io_items, io_sites = _io_items_and_sites(problem, coords=True)
    items = tuple(Item(b.name, {"mvmu": 1.0}) for b in problem.partition.blocks) + tuple(io_items)
    sites = tuple(Site(f"pos{p}", {"mvmu": float(problem.blocks_per_tile)}, problem.spec.router_of(p)) for p in candidates) + tuple(io_sites)
    return PlacementProblem(items, sites, _nets(problem), hop_offset=1.0, link_weight=problem.link_weight, name="puma-joint")


def core_problem(problem: PumaPlacementProblem, tile_blocks: list[str]) -> PlacementProblem:
    inside = set(tile_blocks)
    blocks = {b.name: b for b in problem.partition.blocks}
    items = [Item(name, {"mvmu": 1.0}, work=blocks[name].alu_ops) for name in tile_blocks] + [Item(MEM, {}, type="mem")]
    sites = [Site(f"core{c}", {"mvmu": float(problem.spec.core.mvmus)}) for c in range(problem.spec.tile.cores)]
    sites.append(Site(MEM, {}, types=("mem",)))
    merged: dict[tuple[str, tuple[str, ...]], float] = {}
    for value in problem.partition.values:
        sinks = tuple(sorted({s for s in value.sinks if s in inside}))
        if not sinks:
            continue
        src = value.source if value.source in inside else MEM
        if sinks == (src,):
            continue
        merged[src, sinks] = merged.get((src, sinks), 0.0) + value.bytes
    nets = tuple(Net(s, t, w) for (s, t), w in merged.items())
    return PlacementProblem(tuple(items), tuple(sites), nets, hop_offset=1.0, balance_weight=problem.balance_weight,
                            symmetric_sites=True, name="puma-core-grouping")  # the cores of a tile are interchangeable


# --------------------------------------------------------------------------- helpers on hints


def _tile_groups(problem: PumaPlacementProblem, hint: PumaPlacement | None, k: int) -> Placement | None:
    if hint is None:
        return None
    order: dict[int, int] = {}
    assignment = {}
    for b in problem.partition.blocks:
        tile = hint.slots[b.name].tile
        if tile not in order:
            order[tile] = len(order)
        if order[tile] >= k:
            return None
        assignment[b.name] = f"vt{order[tile]}"
    for name, position in problem.io_positions.items():
        assignment[name] = f"io@{position}:{name}"
    return Placement(assignment)


def _position_hint(problem: PumaPlacementProblem, hint: PumaPlacement | None, groups: dict[str, str], virtual: list[str]) -> Placement:
    """Each virtual tile goes where the hint put most of its blocks (greedy by overlap), else first free."""
    taken: set[int] = set()
    chosen: dict[str, int] = {}
    if hint is not None:
        overlap: dict[tuple[str, int], int] = {}
        for block, vt in groups.items():
            if block in hint.slots:
                key = (vt, hint.slots[block].tile)
                overlap[key] = overlap.get(key, 0) + 1
        for (vt, pos), _ in sorted(overlap.items(), key=lambda kv: -kv[1]):
            if vt not in chosen and pos not in taken and pos in problem.compute_positions:
                chosen[vt] = pos
                taken.add(pos)
    free = [p for p in problem.compute_positions if p not in taken]
    for vt in virtual:
        if vt not in chosen:
            chosen[vt] = free.pop(0)
    assignment = {vt: f"pos{p}" for vt, p in chosen.items()}
    for name, position in problem.io_positions.items():
        assignment[name] = f"io@{position}:{name}"
    return Placement(assignment)


def _first_free(tile_blocks: list[str], mvmus: int) -> Placement:
    assignment = {name: f"core{k // mvmus}" for k, name in enumerate(tile_blocks)}
    assignment[MEM] = MEM
    return Placement(assignment)


# --------------------------------------------------------------------------- solve


def _reserve(problem: PumaPlacementProblem, clock) -> float:
    """Seconds kept for the core stage and the bound after the LNS."""
    return 0.0 if clock.total is None else (0.1 + problem.bound_share) * clock.total


NO_LIMIT_UNITS = 60.0  # stage D's work units when the config has no time limit
EXACT_STAGES_MAX_BLOCKS = 400  # stages A/B (exact tile grouping and positions) only on instances this small


def _as_placement(tile_of: dict[str, int]) -> PumaPlacement:
    """A tile-only placement (cores and MVMUs not decided yet): enough to score hop-weighted bytes."""
    return PumaPlacement({name: Slot(tile, 0, 0) for name, tile in tile_of.items()})


def _joint_assignment(problem: PumaPlacementProblem, tile_of: dict[str, int]) -> Placement:
    assignment = {name: f"pos{tile}" for name, tile in tile_of.items()}
    assignment.update({name: f"io@{p}:{name}" for name, p in problem.io_positions.items()})
    return Placement(assignment)


def solve(problem: PumaPlacementProblem, config: SolverConfig, hint: PumaPlacement | None = None) -> Solved[PumaPlacement]:
    records: list[SolveResult] = []
    details: dict[str, Any] = {"variant": problem.variant}
    clock = Budget(config)
    k = min(problem.min_tiles() + problem.extra_tiles, len(problem.compute_positions))
    lns = problem.lns_share if (clock.total is None or clock.total >= 2.0) else 0.0
    portfolio = _layer_order_portfolio(problem, k) or []
    starts = [placement for placement, _ in portfolio]
    if portfolio:
        details["portfolio"] = {"orders": [c for _, c in portfolio], "hop_bytes": [hop_weighted_bytes(problem, p) for p, _ in portfolio]}
    if hint is not None and len({s.tile for s in hint.slots.values()}) <= k:
        starts.append(hint)
    exact_stages = len(problem.partition.blocks) <= EXACT_STAGES_MAX_BLOCKS or lns == 0
    if not exact_stages:  # large instance: the row-band construction joins the start pool (fixed work, not charged)
        from solvermap.mappers.puma import band_placement as bands

        band, heights = bands.band_placement(problem, bands.SCREEN, bands.MOVES)
        if band.tiles_used() <= k:
            starts.append(band)
        details["band_start"] = {"heights": list(heights), "hop_bytes": hop_weighted_bytes(problem, band),
                                 "tiles": band.tiles_used(), "used": band.tiles_used() <= k}
    starts.sort(key=lambda p: hop_weighted_bytes(problem, p))
    hint = starts[0] if starts else hint
    tile_of, bound = None, 0.0
    share = 0.15 if lns else max(0.1, 0.9 - problem.bound_share)
    if problem.variant == "joint" and exact_stages:
        tile_of, bound = _joint(problem, config, hint, k, records, details, clock, share)
    elif problem.variant == "hierarchical" and exact_stages:
        tile_of, bound = _hierarchical(problem, config, hint, k, records, details, clock, share)
    elif problem.variant not in ("joint", "hierarchical"):
        raise ValueError(f"unknown placement variant {problem.variant!r}; use hierarchical or joint")
    if hint is not None and len({s.tile for s in hint.slots.values()}) <= k:
        hinted = {name: slot.tile for name, slot in hint.slots.items()}
        if tile_of is None or hop_weighted_bytes(problem, _as_placement(hinted)) < hop_weighted_bytes(problem, _as_placement(tile_of)):
            tile_of = hinted
            details["kept_hint_tiles"] = True
    if tile_of is None:
        return Solved(combine(records), None, [], details)
    proven = hop_weighted_bytes(problem, _as_placement(tile_of)) - bound <= 1e-6 * max(1.0, bound)
    if lns > 0 and not proven:
        fraction = 1.0 if clock.total is None else max(0.05, 0.9 - problem.bound_share
                                                         - clock.elapsed() / clock.total)
        others = [{n: sl.tile for n, sl in p.slots.items()} for p in starts[1:]]
        tile_of = _lns(problem, config, tile_of, k, records, details, clock, fraction, others)
    details["stage_a_bound"] = bound
    slots = _cores(problem, config, tile_of, hint, records, details, clock)
    decision = PumaPlacement(slots)
    if problem.selection_share > 0:
        from solvermap.mappers.puma.simulated_selection import RESERVATIONS_PER_UNIT, select

        units = problem.selection_share * (clock.total if clock.total is not None else NO_LIMIT_UNITS)
        decision, details["simulated_selection"] = select(problem, decision, int(units * RESERVATIONS_PER_UNIT))
    value = hop_weighted_bytes(problem, decision)
    if problem.bound_share > 0 and value > bound + 1e-6 * max(1.0, value):
        from solvermap.mappers.puma.placement_bounds import lower_bound

        left = clock.left()
        budget = 60.0 if left is None else max(1.0, left, problem.bound_share * clock.total)
        certified = lower_bound(problem, budget, [decision] + ([hint] if hint is not None else []), k, config)
        details["certified_bound"] = certified.to_json()
        bound = max(bound, certified.value)
        clock.backstop_fired = clock.backstop_fired or certified.details.get("backstop_fired", False)
    bound = min(bound, value)
    status = Status.OPTIMAL if value - bound <= 1e-6 * max(1.0, value) else Status.FEASIBLE
    last = records[-1]
    merged = combine(records)
    result = SolveResult(status, value, bound, relative_gap(value, bound), merged.build_seconds, merged.solve_seconds,
                         last.backend, last.solver_version, merged.limit_reached, "", work=merged.work,
                         backstop_fired=merged.backstop_fired or clock.backstop_fired)
    details["tiles_used"] = decision.tiles_used()
    return Solved(result, decision, [], details)


def _layer_order_portfolio(problem: PumaPlacementProblem, k: int, top: int = 3) -> list[tuple[PumaPlacement, str]] | None:
    """Warm start: blocks filled sequentially (cores, then tiles, then positions in order, as the PUMA
    compiler fills them) in program order, each layer in row-major or column-major order — every one of
    the 2^L combinations (L ≤ 8 layers; greedily layer by layer beyond), scored by hop-weighted bytes.
    All-row-major and all-column-major are the compiler's own baselines, so the best is never worse than
    them. Returns the ``top`` best (placement, orders), best first."""
    from solvermap.mappers.puma.baselines import sequential

    layers = list(problem.partition.layer_order)
    rank = {name: i for i, name in enumerate(layers)}
    keys = {"r": lambda b: (b.replica, b.position, b.row_block, b.col_block),
            "c": lambda b: (b.replica, b.position, b.col_block, b.row_block)}

    def build(choice: str) -> PumaPlacement | None:
        order = sorted(problem.partition.blocks, key=lambda b: (rank[b.layer],) + keys[choice[rank[b.layer]]](b))
        placement = sequential(problem, [b.name for b in order])
        if placement is None or placement.tiles_used() > k:
            return None
        return placement

    def score(choice: str) -> float:
        placement = build(choice)
        return math.inf if placement is None else hop_weighted_bytes(problem, placement)

    if len(layers) <= 8:
        import itertools

        choices = sorted(("".join(c) for c in itertools.product("rc", repeat=len(layers))), key=score)
    else:
        best = "r" * len(layers)
        for i in range(len(layers)):
            flipped = best[:i] + "c" + best[i + 1:]
            if score(flipped) < score(best):
                best = flipped
        choices = [best]
    ranked = [(build(c), c) for c in choices[:top] if math.isfinite(score(c))]
    return ranked or None


def _lns(problem, config, tile_of, k, records, details, clock, share, others=()):
    """Large-neighbourhood search on the joint model (blocks → positions, hop-weighted bytes): a first
    phase from ``tile_of`` and from each of ``others`` (a quarter of the time, split), the best result
    continued; then the positions of the final tiles re-solved (stage B on the final grouping)."""
    joint = joint_problem(problem, list(problem.compute_positions))
    before = hop_weighted_bytes(problem, _as_placement(tile_of))
    runs = []
    total = None if clock.total is None else share * clock.total
    phase, seen = [tile_of], {before}
    for other in others:  # distinct starts only (equal scores: the same placement up to a few blocks)
        score = hop_weighted_bytes(problem, _as_placement(other))
        if score not in seen:
            phase.append(other)
            seen.add(score)
    for i, start_tiles in enumerate(phase):
        portion = (0.25 / len(phase)) if len(phase) > 1 else 1.0
        cfg = config if total is None else config.with_(time_limit_s=max(0.5, min(portion * total, clock.left() or 0.5)))
        improved = shared.improve(joint, cfg.with_(seed=config.seed + i), _joint_assignment(problem, start_tiles),
                                  sites_per_round=2, max_free_items=100, max_sites_used=k, sub_time_limit_s=2.0,
                                  sweep_pairs=len(phase) == 1)
        clock.charge(improved.details["work"])
        records.append(improved.result)
        runs.append(improved)
    best = min(runs, key=lambda r: r.result.objective)
    rounds = sum(r.details["rounds"] for r in runs)
    improvements = sum(len(r.details["trajectory"]) - 1 for r in runs)
    if len(phase) > 1 and (total is None or (clock.left() or 0) > 1.0):
        cfg = config if total is None else config.with_(time_limit_s=max(0.5, (clock.left() or 0.5) - _reserve(problem, clock)))
        cont = shared.improve(joint, cfg, best.decision, sites_per_round=2, max_free_items=100, max_sites_used=k, sub_time_limit_s=2.0,
                              sweep_pairs=True)
        clock.charge(cont.details["work"])
        records.append(cont.result)
        rounds += cont.details["rounds"]
        improvements += len(cont.details["trajectory"]) - 1
        best = cont if cont.result.objective <= best.result.objective else best
    tile_of = {name: int(best.decision.assignment[name][3:]) for name in tile_of}
    details["lns"] = {"start_hop_bytes": before, "starts": [r.details["trajectory"][0][1] for r in runs],
                      "after_first_phase": [r.result.objective for r in runs],
                      "objective_hop_bytes": hop_weighted_bytes(problem, _as_placement(tile_of)),
                      "rounds": rounds, "improvements": improvements}
    # positions of the final tiles (stage B), warm-started from where they are
    groups = {name: f"vt{tile}" for name, tile in tile_of.items()}
    virtual = sorted(set(groups.values()), key=lambda v: int(v[2:]))
    positions = position_problem(problem, groups, virtual)
    here = Placement({**{vt: f"pos{vt[2:]}" for vt in virtual},
                      **{name: f"io@{p}:{name}" for name, p in problem.io_positions.items()}})
    solved = shared.solve(positions, clock.portion(0.05), here)
    clock.charge(solved.details["work"])
    records.append(solved.result)
    if solved.decision is not None:
        moved = {name: int(solved.decision.assignment[groups[name]][3:]) for name in tile_of}
        if hop_weighted_bytes(problem, _as_placement(moved)) < hop_weighted_bytes(problem, _as_placement(tile_of)):
            tile_of = moved
            details["lns"]["repositioned_hop_bytes"] = hop_weighted_bytes(problem, _as_placement(tile_of))
    return tile_of


def _hierarchical(problem, config, hint, k, records, details, clock, share):
    grouping = tile_grouping_problem(problem, k)
    start_a = _tile_groups(problem, hint, k)
    solved_a = shared.solve(grouping, clock.portion(0.65 * share), start_a)
    clock.charge(solved_a.details["work"])
    records.append(solved_a.result)
    details["stage_a"] = {"objective_send_bytes": solved_a.result.objective, "bound": solved_a.result.bound,
                          "status": str(solved_a.result.status), "seconds": solved_a.result.solve_seconds}
    chosen_a = solved_a.decision
    if chosen_a is None:  # no incumbent within the limit: keep the warm start (reported)
        if start_a is None:
            return None, 0.0
        chosen_a = start_a
        details["stage_a"]["kept_warm_start"] = True
    groups = {b.name: chosen_a.assignment[b.name] for b in problem.partition.blocks}
    virtual = sorted(set(groups.values()), key=lambda v: int(v[2:]))
    positions = position_problem(problem, groups, virtual)
    start_b = _position_hint(problem, hint, groups, virtual)
    solved_b = shared.solve(positions, clock.portion(0.35 * share), start_b)
    clock.charge(solved_b.details["work"])
    records.append(solved_b.result)
    details["stage_b"] = {"objective_hop_bytes": solved_b.result.objective, "bound": solved_b.result.bound,
                          "status": str(solved_b.result.status), "seconds": solved_b.result.solve_seconds}
    chosen_b = solved_b.decision
    if chosen_b is None:
        chosen_b = start_b
        details["stage_b"]["kept_warm_start"] = True
    tile_of = {name: int(chosen_b.assignment[vt][3:]) for name, vt in groups.items()}
    bound = max(solved_a.result.bound or 0.0, 0.0)  # every byte sent crosses ≥ 1 router
    return tile_of, bound


def _joint(problem, config, hint, k, records, details, clock, share):
    io_router = problem.spec.router_of(min(problem.io_positions.values(), default=problem.compute_positions[0]))
    count = problem.joint_candidates or max(k, math.ceil(1.5 * k))
    ranked = sorted(problem.compute_positions, key=lambda p: (abs(problem.spec.router_of(p)[0] - io_router[0])
                                                               + abs(problem.spec.router_of(p)[1] - io_router[1]), p))
    candidates = sorted(ranked[:count])
    if hint is not None:
        candidates = sorted(set(candidates) | {s.tile for s in hint.slots.values()})
    joint = joint_problem(problem, candidates)
    start = None
    if hint is not None:
        assignment = {name: f"pos{slot.tile}" for name, slot in hint.slots.items()}
        assignment.update({name: f"io@{p}:{name}" for name, p in problem.io_positions.items()})
        start = Placement(assignment)
    solved = shared.solve(joint, clock.portion(share), start)
    clock.charge(solved.details["work"])
    records.append(solved.result)
    details["joint"] = {"candidates": len(candidates), "objective_hop_bytes": solved.result.objective,
                        "bound": solved.result.bound, "status": str(solved.result.status)}
    chosen = solved.decision
    if chosen is None:
        if start is None:
            return None, 0.0
        chosen, details["joint"]["kept_warm_start"] = start, True
    tile_of = {b.name: int(chosen.assignment[b.name][3:]) for b in problem.partition.blocks}
    return tile_of, max(solved.result.bound or 0.0, 0.0)


def _tile_memory_bytes(problem: PumaPlacementProblem, tile_of: dict[str, int], core_of: dict[str, int], tile: int) -> float:
    """Store + load bytes attributed to ``tile`` (loads by its cores, stores of values its blocks produce),
    with the seed's dedup (L183), for the core assignment ``core_of`` of the tile's blocks."""
    io = problem.io_positions

    def where(name: str) -> tuple[int, int]:
        if name in io:
            return (io[name], -1)
        return (tile_of[name], core_of.get(name, -2) if tile_of[name] == tile else -2)

    total = 0.0
    for value in problem.partition.values:
        src = where(value.source)
        sinks = {where(n) for n in value.sinks}
        foreign = sinks - {src}
        if src[0] == tile and src[1] >= 0 and foreign:
            total += value.bytes  # store
        total += value.bytes * sum(1 for t, c in foreign if t == tile and c >= 0)  # loads on this tile's cores
    return total


def _cores(problem, config, tile_of, hint, records, details, clock) -> dict[str, Slot]:
    """Stage C per tile: the solver's core grouping or the warm start (the hint's cores, else first-free
    in program order), whichever moves fewer tile-memory bytes (stores + loads, exact); ties keep the start."""
    by_tile: dict[int, list[str]] = {}
    for b in problem.partition.blocks:
        by_tile.setdefault(tile_of[b.name], []).append(b.name)
    share = 0.1 / max(1, len(by_tile))
    slots: dict[str, Slot] = {}
    memory_bytes = 0.0
    kept = 0
    for tile, names in sorted(by_tile.items()):
        sub = core_problem(problem, names)
        start = _first_free(names, problem.spec.core.mvmus)
        if hint is not None and all(hint.slots[n].tile == hint.slots[names[0]].tile for n in names) and \
                len({hint.slots[n].core for n in names}) <= problem.spec.tile.cores:
            start = Placement({**{n: f"core{hint.slots[n].core}" for n in names}, MEM: MEM})
        solved = shared.solve(sub, clock.portion(share), start)
        clock.charge(solved.details["work"])
        records.append(solved.result)
        decision = start
        cost = _tile_memory_bytes(problem, tile_of, {n: int(start.assignment[n][4:]) for n in names}, tile)
        if solved.decision is not None:
            other = _tile_memory_bytes(problem, tile_of, {n: int(solved.decision.assignment[n][4:]) for n in names}, tile)
            if other < cost:
                decision, cost = solved.decision, other
        kept += decision is start
        memory_bytes += cost
        fill: dict[int, int] = {}
        for name in names:
            core = int(decision.assignment[name][4:])
            slots[name] = Slot(tile, core, fill.get(core, 0))
            fill[core] = fill.get(core, 0) + 1
    details["stage_c_memory_bytes"] = memory_bytes
    details["stage_c_kept_start"] = kept
    return slots
