"""The PUMA pipeline end to end through the CLI: `solve place` JSON contract and `map` metrics."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from solvermap.cli import app


def run(args, tmp_path):
    result = CliRunner().invoke(app, args + ["--json", "-q", "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout[result.stdout.index("{"):result.stdout.rindex("}") + 1])


def test_solve_place_reports_solver_baseline_check_and_validation(tmp_path):
    out = run(["solve", "place", "--workload", "lenet", "--target", "puma", "--solver", "cpsat", "--time-limit", "5"], tmp_path)
    assert out["decision"] == "place" and out["check"]["ok"]
    assert {b["name"] for b in out["baseline"]["all"]} == {"row_major", "col_major", "random", "min_cut"}
    assert out["solver"]["objective"] < out["baseline"]["objective"]
    validation = out["validation"]
    assert validation["predicted_hop_weighted_bytes"] == validation["simulated_hop_weighted_bytes"]
    for key in ("latency_s", "throughput", "energy_j", "area_mm2", "tiles_used"):
        assert validation[key] > 0


def test_map_digits_reports_accuracy_loss_and_functional_agreement(tmp_path):
    out = run(["map", "--workload", "digits_mlp", "--target", "puma", "--time-limit", "5"], tmp_path)
    validation = out["validation"]
    assert validation["functional_within_bound"] and validation["functional_bound_applies"]
    assert 0.0 <= validation["accuracy_loss"] <= 0.002
    assert [d["decision"] for d in out["decisions"]] == ["replicate", "place"]
