"""Stage D (selection by simulation) applied to the PUMA compiler's baselines: how much of the solver's
simulated gain the stage alone would give them.

For each workload and each of row-major, col-major and min-cut, :func:`~solvermap.mappers.puma.
simulated_selection.select` runs on the baseline's placement with the work the study's solver gets at
240 units (``selection_share`` 0.25 × 240 × ``RESERVATIONS_PER_UNIT``). Writes
``results/selection_baselines.csv``: hop-weighted bytes, simulated interval and latency before and
after, and the simulations run.

    .venv/bin/python -m solvermap.studies.puma_placement.selection_baselines [--workloads lenet vgg mlp_l4]
"""

from __future__ import annotations

import argparse

import pandas as pd

from solvermap.hardware.checks.puma_placement import check
from solvermap.hardware.puma.placement_problem import make_problem, objective
from solvermap.hardware.targets import load_target
from solvermap.mappers.puma.baselines import BASELINES
from solvermap.mappers.puma.crossbar_partition import partition
from solvermap.mappers.puma.simulated_selection import RESERVATIONS_PER_UNIT, select
from solvermap.studies.puma_placement.run import HERE, prepare

UNITS = 0.25 * 240  # the study's selection work at --time-limit 240


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workloads", nargs="*", default=["lenet", "vgg", "mlp_l4"])
    args = parser.parse_args()
    spec = load_target("puma")
    rows = []
    for name in args.workloads:
        problem = make_problem(partition(prepare(name, spec), spec.crossbar.rows, spec.crossbar.cols, spec.data.bits / 8), spec)
        for label in ("row_major", "col_major", "min_cut"):
            given = BASELINES[label](problem)
            chosen, details = select(problem, given, int(UNITS * RESERVATIONS_PER_UNIT))
            report = check(problem, chosen)  # the independent checker, as the study's own placements
            assert report.ok, f"{name} {label}: {report.violations[:3]}"
            rows.append({"workload": name, "method": label, "hop_weighted_bytes": objective(problem, given),
                         "selected_hop_weighted_bytes": objective(problem, chosen),
                         "interval_s": details["given_interval_s"], "selected_interval_s": details["interval_s"],
                         "latency_s": details["given_latency_s"], "selected_latency_s": details["latency_s"],
                         "simulations": details["simulations"]})
            print(rows[-1], flush=True)
    pd.DataFrame(rows).to_csv(HERE / "results" / "selection_baselines.csv", index=False)


if __name__ == "__main__":
    main()
