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
from pathlib import Path

import numpy as np
import pandas as pd

from solvermap.formulations import placement as shared
from solvermap.formulations.solver import SolverConfig, Status
from solvermap.hardware.checks.puma_placement import check
from solvermap.hardware.puma.placement_problem import PumaPlacementProblem, hop_weighted_bytes, level_bytes, make_problem
from solvermap.hardware.puma.program import PumaPlacement
from solvermap.hardware.targets import load_target
from solvermap.mappers.puma import application_optimizer as ao
from solvermap.mappers.puma import hierarchical_placement, placement_bounds
from solvermap.mappers.puma.band_placement import as_placement, band_placement
from solvermap.mappers.puma.baselines import BASELINES
from solvermap.mappers.puma.crossbar_partition import partition
from solvermap.mappers.puma.frontend import lower
from solvermap.ir.workloads import build
from solvermap.studies.puma_placement.run import prepare

HERE = Path(__file__).parent
SMALL = {"mlp": {"sizes": [96, 80, 10]}, "lstm_lm": {"hidden": 24, "embed": 16, "vocab": 12, "seq_len": 3}}
LARGE = ["mlp_l4", "mlp_l5", "lstm_lm"]


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
    optimum = as_placement(problem, {n: int(a[3:]) for n, a in exact.decision.assignment.items() if a.startswith("pos")},
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
