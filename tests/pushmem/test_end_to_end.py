import json
import subprocess
import sys

import pytest

from tests.pushmem.conftest import mapped

SMALL = [("gaussian", {"size": 16}), ("harris", {"size": 16}), ("upsample", {"size": 8}), ("unsharp", {"size": 12}),
         ("camera", {"size": 16}), ("mobilenet", {"size": 8, "channels": 2, "filters": 2}),
         ("resnet", {"size": 8, "channels": 4, "filters": 2, "tile": 4})]


@pytest.mark.parametrize("app,params", SMALL, ids=[a for a, _ in SMALL])
def test_app_simulates_bit_exactly_with_zero_port_conflicts(app, params):
    ctx, result = mapped(app, params)
    v = result.validation
    assert v["bit_exact"] and v["mismatches"] == 0
    assert not v["hazards"] and v["stall_cycles"] == 0
    assert v["cycles"] == v["predicted_cycles"]  # no stall: the static schedule is what the hardware ran
    assert v["storage_check_ok"]
    assert all(r.check.ok for r in result.records)


def test_gaussian_pipeline_beats_the_sequential_schedule(gaussian16):
    _, result = gaussian16
    v = result.validation
    assert v["cycles"] < v["sequential_cycles"] and v["sram_words"] > 0
    assert v["energy_j"] > 0 and v["area_mm2"] > 0
    e = v["energy_j_by_memory_design"]
    assert e["sp_wide"] < e["dp_ag"] < e["dp_pe"]  # Table II ordering


def test_cli_solve_schedule_json(tmp_path):
    out = subprocess.run([sys.executable, "-m", "solvermap.cli", "solve", "schedule", "--workload", "gaussian", "--target",
                          "pushmem-cgra", "--set", "workload.size=12", "--json", "-q", "--out", str(tmp_path / "run")],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    payload = json.loads(out.stdout)
    assert payload["decision"] == "schedule" and payload["check"]["ok"]
    assert payload["baseline"]["name"] == "sequential" and payload["validation"]["cycles"] < payload["baseline"]["objective"]


def test_an_exported_built_in_maps_to_the_same_cycles_and_sram_words(tmp_path):
    from typer.testing import CliRunner

    from solvermap.cli import app
    from solvermap.ir.program_file import export_workload

    (tmp_path / "g.yaml").write_text(export_workload("gaussian", params={"size": 16}))
    out = CliRunner().invoke(app, ["map", "--workload", str(tmp_path / "g.yaml"), "--target", "pushmem-cgra", "--json", "-q",
                                   "--out", str(tmp_path / "run")])
    assert out.exit_code == 0, out.output
    from_file = json.loads(out.stdout)["validation"]
    _, result = mapped("gaussian", {"size": 16})
    built_in = result.validation
    assert (from_file["cycles"], from_file["sram_words"]) == (built_in["cycles"], built_in["sram_words"])
    assert from_file["bit_exact"] and built_in["bit_exact"]
