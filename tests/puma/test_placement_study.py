"""The PUMA placement study's CSVs: re-running a subset of workloads rewrites only their rows."""

from __future__ import annotations

import pandas as pd

from solvermap.studies.puma_placement.run import _write_merged


def test_a_workload_subset_replaces_its_rows_and_keeps_the_others_byte_for_byte(tmp_path):
    path = tmp_path / "placement_summary.csv"
    old = pd.DataFrame({"workload": ["mlp_l4", "mlp_l5", "lenet"], "bound": [19363.0, 92846.0, 3940.0],
                        "gap": [0.21403636954050984, 0.49232300255899913, 0.0]})
    old.to_csv(path, index=False)
    kept = [line for line in path.read_text().splitlines() if not line.startswith("mlp_l5")]
    _write_merged(pd.DataFrame({"workload": ["mlp_l5"], "bound": [99000.0], "gap": [0.4]}), path)
    lines = path.read_text().splitlines()
    assert [lines[0], lines[1], lines[3]] == kept  # header, mlp_l4 and lenet as they were, in WORKLOADS order
    assert lines[2] == "mlp_l5,99000.0,0.4"


def test_row_band_placement_of_the_gap_diagnosis_passes_the_checker_on_the_minimum_tiles(small_models, puma_small):
    from solvermap.hardware.checks.puma_placement import check
    from solvermap.hardware.puma.placement_problem import hop_weighted_bytes, make_problem
    from solvermap.studies.puma_placement.gap import band_placement

    problem = make_problem(small_models["mlp"][2], puma_small)
    placement, heights = band_placement(problem, screen=3, moves=1500)
    assert check(problem, placement).ok
    assert placement.tiles_used() == problem.min_tiles() and len(heights) == 2
    assert hop_weighted_bytes(problem, placement) > 0
