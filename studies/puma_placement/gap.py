"""Where the PUMA placement gap lies (issue #28): how far the certified bound is from the optimum, and the
optimum from the incumbent, split into the bound's two parts.

Hop-weighted bytes = *message bytes* (every message between two tiles, one router each) + *crossing bytes*
(bytes × router-to-router links); :mod:`solvermap.mappers.puma.placement_bounds` bounds each part by its own
relaxation. Two measurements:

* **small instances** (the test networks on ``puma_small``: the MLP 96-80-10 and the small LSTM): the exact
  optimum (CP-SAT on the joint placement model, proved optimal), its split into messages and crossings, the
  fewest message bytes of any placement on the minimum tiles (the exact tile grouping), and each relaxation's
  LP value and whole-unit MILP value (``COMPACT_MIN_WORK`` + 10 work units each), so each part's looseness
  is measured against the true optimum;
* **the study's large instances** (mlp_l4, mlp_l5, lstm_lm on ``puma``): the solver's incumbent and its
  bound parts as the committed ``placement.csv`` has them, beside a *row-band placement*: each layer's rows cut
  into bands of h rows (h chosen per layer among divisors), the bands' blocks filled into tiles in chain
  order, the tiles placed on the node by simulated annealing on tile-to-tile traffic × hops (seeded, a fixed
  number of moves). It is a plain construction, not a proposed mapper: it shows how much lower a placement
  can go than the incumbent.

    .venv/bin/python -m solvermap.studies.puma_placement.gap [--out DIR]

Writes ``gap_diagnosis.csv``: one row per (instance, what) with hop-weighted bytes, messages, crossings.
Every number is deterministic (work-limited solves, seeded annealing).
"""

from __future__ import annotations

import argparse
import itertools
import math
from pathlib import Path

import numpy as np
import pandas as pd

from solvermap.formulations import placement as shared
from solvermap.formulations.solver import SolverConfig, Status
from solvermap.hardware.checks.puma_placement import check
from solvermap.hardware.puma.placement_problem import PumaPlacementProblem, hop_weighted_bytes, level_bytes, make_problem
from solvermap.hardware.puma.program import PumaPlacement, Slot
from solvermap.hardware.targets import load_target
from solvermap.mappers.puma import application_optimizer as ao
from solvermap.mappers.puma import hierarchical_placement, placement_bounds
from solvermap.mappers.puma.baselines import BASELINES
from solvermap.mappers.puma.crossbar_partition import partition
from solvermap.mappers.puma.frontend import lower
from solvermap.ir.workloads import build
from solvermap.studies.puma_placement.run import prepare

HERE = Path(__file__).parent
SMALL = {"mlp": {"sizes": [96, 80, 10]}, "lstm_lm": {"hidden": 24, "embed": 16, "vocab": 12, "seq_len": 3}}
LARGE = ["mlp_l4", "mlp_l5", "lstm_lm"]
HEIGHTS = (1, 2, 4, 6, 8, 12, 16, 24, 32)


# --------------------------------------------------------------------------- the row-band placement


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


def _traffic(problem: PumaPlacementProblem, tile_of: dict[str, int], tiles: int) -> np.ndarray:
    """Bytes from node to node (tiles 0..tiles−1, then the I/O tiles), one message per destination tile."""
    io = sorted(problem.io_positions)
    node = {**tile_of, **{name: tiles + i for i, name in enumerate(io)}}
    traffic = np.zeros((tiles + len(io), tiles + len(io)))
    for value in problem.partition.values:
        src = node[value.source]
        for dst in {node[s] for s in value.sinks} - {src}:
            traffic[src, dst] += value.bytes
    return traffic


def anneal_positions(problem: PumaPlacementProblem, traffic: np.ndarray, tiles: int, seed: int, moves: int) -> list[int]:
    """Tile positions minimising Σ traffic × hops (I/O tiles fixed): simulated annealing over swaps and
    moves to free positions, ``moves`` proposals, linear cooling; the best positions seen."""
    spec = problem.spec
    rng = np.random.default_rng(seed)
    routers = np.array([spec.router_of(p) for p in range(spec.tile_positions)])
    hops = 1 + np.abs(routers[:, None, 0] - routers[None, :, 0]) + np.abs(routers[:, None, 1] - routers[None, :, 1])
    np.fill_diagonal(hops, 0)
    compute = list(problem.compute_positions)
    pos = np.array([int(p) for p in rng.permutation(compute)[:tiles]] + [problem.io_positions[n] for n in sorted(problem.io_positions)])
    free = [p for p in compute if p not in set(pos[:tiles].tolist())]
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


def band_placement(problem: PumaPlacementProblem, screen: int = 40, moves: int = 150_000) -> tuple[PumaPlacement, tuple[int, ...]]:
    """The best row-band placement: every combination of band heights ranked by message bytes, the ``screen``
    fewest annealed briefly (``moves`` / 7.5), the best of them annealed longer (four seeds, ``moves``)."""
    st = placement_bounds.structure(problem)
    cap = problem.blocks_per_tile
    tiles = problem.min_tiles()
    choices = [[h for h in HEIGHTS if h <= len(g.rows)] for g in st.grids]
    ranked = []
    for heights in itertools.product(*choices):
        tile_of = {name: i // cap for i, name in enumerate(band_order(problem, heights))}
        traffic = _traffic(problem, tile_of, tiles)
        ranked.append((float(traffic.sum()), heights, tile_of, traffic))
    ranked.sort(key=lambda r: (r[0], r[1]))
    best = None
    for _, heights, tile_of, traffic in ranked[:screen]:
        value = _value(problem, tile_of, anneal_positions(problem, traffic, tiles, 1, int(moves / 7.5)))
        if best is None or value < best[0]:
            best = (value, heights, tile_of, traffic)
    _, heights, tile_of, traffic = best
    placements = [_placement(problem, tile_of, anneal_positions(problem, traffic, tiles, seed, moves)) for seed in range(2, 6)]
    return min(placements, key=lambda p: hop_weighted_bytes(problem, p)), heights


def _placement(problem: PumaPlacementProblem, tile_of: dict[str, int], positions: list[int]) -> PumaPlacement:
    """Blocks on their tiles' positions, filling cores and MVMUs in order."""
    per_core = problem.spec.core.mvmus
    filled: dict[int, int] = {}
    slots = {}
    for name, tile in tile_of.items():
        k = filled.get(tile, 0)
        filled[tile] = k + 1
        slots[name] = Slot(positions[tile], k // per_core, k % per_core)
    return PumaPlacement(slots)


def _value(problem: PumaPlacementProblem, tile_of: dict[str, int], positions: list[int]) -> float:
    return hop_weighted_bytes(problem, _placement(problem, tile_of, positions))


# --------------------------------------------------------------------------- measurements


def split(problem: PumaPlacementProblem, placement: PumaPlacement) -> dict[str, float]:
    total = hop_weighted_bytes(problem, placement)
    sent = level_bytes(problem, placement)["send"]
    return {"hop_weighted_bytes": total, "messages": sent, "crossings": total - sent}


def small_rows(name: str, spec) -> list[dict]:
    net = ao.fold_bias(ao.fold_batchnorm(lower(build(name, "puma", SMALL[name]).ir)), spec.crossbar.rows)
    rng = np.random.default_rng(0)
    net = ao.quantize(net, 2.0 ** (spec.data.int_bits - 1), rng.random((4,) + tuple(net.input_shape)))
    problem = make_problem(partition(net, spec.crossbar.rows, spec.crossbar.cols), spec)
    starts = [BASELINES[b](problem) for b in ("row_major", "col_major")]
    joint = hierarchical_placement.joint_problem(problem, list(problem.compute_positions))
    hint = hierarchical_placement._joint_assignment(problem, {n: s.tile for n, s in starts[0].slots.items()})
    exact = shared.solve(joint, SolverConfig(backend="cpsat", time_limit_s=30), hint)
    assert exact.result.status == Status.OPTIMAL, exact.result
    optimum = _placement(problem, {n: int(a[3:]) for n, a in exact.decision.assignment.items() if a.startswith("pos")},
                         list(range(problem.spec.tile_positions)))
    grouping = shared.solve(hierarchical_placement.tile_grouping_problem(problem, problem.min_tiles()),
                            SolverConfig(backend="cpsat", time_limit_s=30))
    assert grouping.result.status == Status.OPTIMAL, grouping.result
    st = placement_bounds.structure(problem)
    work = placement_bounds.COMPACT_MIN_WORK + 10
    m, m_info = placement_bounds.message_bound(problem, st, problem.min_tiles(), starts, work)
    c, c_info = placement_bounds.crossing_bound(problem, st, problem.min_tiles(), starts, work)
    base = {"instance": f"small {name}", "workload": name}
    return [
        {**base, "what": "exact optimum", **split(problem, optimum)},
        {**base, "what": "fewest message bytes (exact tile grouping)", "messages": grouping.result.objective},
        {**base, "what": "bound: relaxation LP", "messages": m_info["lp"], "crossings": c_info["lp"],
         "hop_weighted_bytes": m_info["lp"] + c_info["lp"]},
        {**base, "what": "bound: whole-unit MILP", "messages": m, "crossings": c, "hop_weighted_bytes": m + c},
    ]


def large_rows(name: str, spec, study: pd.DataFrame) -> list[dict]:
    net = prepare(name, spec)
    problem = make_problem(partition(net, spec.crossbar.rows, spec.crossbar.cols, spec.data.bits / 8), spec)
    base = {"instance": name, "workload": name}
    rows = []
    solver = study[(study.workload == name) & (study.method == "solver")].iloc[0]
    rows.append({**base, "what": "solver incumbent (placement.csv)", "hop_weighted_bytes": solver.hop_weighted_bytes,
                 "messages": solver.send_bytes, "crossings": solver.hop_weighted_bytes - solver.send_bytes})
    rows.append({**base, "what": "certified bound (placement.csv)", "hop_weighted_bytes": solver.bound,
                 "messages": solver.bound_messages, "crossings": solver.bound_crossings})
    baseline = min((BASELINES[b](problem) for b in ("row_major", "col_major")), key=lambda p: hop_weighted_bytes(problem, p))
    rows.append({**base, "what": "best of row/col-major", **split(problem, baseline)})
    band, heights = band_placement(problem)
    assert check(problem, band).ok
    rows.append({**base, "what": f"row-band placement (band heights {'/'.join(map(str, heights))})", **split(problem, band)})
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args()
    study = pd.read_csv(args.out / "placement.csv")
    rows = []
    small_spec = load_target("puma_small")
    for name in SMALL:
        rows.extend(small_rows(name, small_spec))
    spec = load_target("puma")
    for name in LARGE:
        rows.extend(large_rows(name, spec, study))
    frame = pd.DataFrame(rows, columns=["instance", "workload", "what", "hop_weighted_bytes", "messages", "crossings"])
    frame.to_csv(args.out / "gap_diagnosis.csv", index=False)
    print(frame.to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
