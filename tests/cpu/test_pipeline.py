"""The cpu pipeline and CLI: ``solvermap solve tensorize`` reports bit_exact and speedup_vs_untensorized;
a non-applicable instruction is a one-line error with exit code 2."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from solvermap.errors import InputError
from solvermap.formulations.solver import SolverConfig
from solvermap.hardware.targets import load_target
from solvermap.ir.workloads import build
from solvermap.mappers import pipeline_for
from solvermap.mappers.pipeline import Context

from .conftest import needs_vnni

SMALL = {"C": 16, "K": 32, "IHW": 9}
FAST = {"trials": 2, "unit_pairs": 2, "rounds": 2, "min_seconds": 0.002, "min_reps": 1}


def _run(workload: str, target: str, params: dict, options: dict):
    spec = load_target(target)
    ctx = Context(workload=build(workload, "cpu", params), target=spec, solver=SolverConfig(time_limit_s=10),
                  options={"tensorize": options})
    return pipeline_for("cpu").run(ctx, upto="tensorize")


def test_pipeline_records_solver_baseline_check_and_mappings_with_the_model_tuner():
    result = _run("conv_table1_1", "x86-vnni", {"C": 8, "K": 32, "IHW": 11},
                  {**FAST, "measure": "model", "execute": "emulate"})
    record = result.records[-1]
    assert record.decision == "tensorize" and record.check.ok
    assert record.baseline.name == "unit-greedy-innermost"
    assert record.solution["loop_map"] == {"i": "k", "j": "c"}
    assert record.details["feasible_mappings"] == 9
    assert result.validation["bit_exact"] is True


def test_arm_sdot_target_validates_with_the_emulator():
    result = _run("conv2d", "arm-dot", {"C": 8, "K": 8, "IHW": 6, "data_dtype": "int8"}, {**FAST})
    v = result.validation
    assert v["bit_exact"] is True and v["speedup_vs_untensorized"] is None and v["predicted_latency_s"] > 0


def test_solver_beats_the_greedy_baseline_on_the_first_resnet_layer():
    result = _run("resnet18_conv1", "x86-vnni", {"K": 16, "IHW": 15}, {**FAST, "measure": "model", "execute": "emulate"})
    record = result.records[-1]
    assert record.solver.objective < record.baseline.objective  # greedy (x, s) gathers strided data
    assert record.solution_source == "solver"


def test_not_applicable_instruction_stops_the_pipeline_with_the_rule():
    with pytest.raises(InputError, match=r"not applicable \(dtype-mismatch\)"):
        _run("conv2d", "x86-vnni", {"data_dtype": "int8"}, FAST)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "solvermap.cli", *args], capture_output=True, text=True, timeout=300)


@needs_vnni
def test_cli_solve_tensorize_reports_bit_exact_and_speedup(tmp_path):
    sets = [f"workload.{k}={v}" for k, v in SMALL.items()] + [f"decisions.tensorize.{k}={v}" for k, v in FAST.items()]
    proc = _cli("solve", "tensorize", "--workload", "conv_table1_3", "--target", "x86-vnni", "--json", "-q",
                "--out", str(tmp_path / "run"), *sum((["--set", s] for s in sets), []))
    assert proc.returncode == 0, proc.stderr
    payload = json.loads(proc.stdout)
    v = payload["validation"]
    assert payload["decision"] == "tensorize" and payload["check"]["ok"]
    assert v["bit_exact"] is True and all(v["bit_exact_checks"].values())
    assert v["speedup_vs_untensorized"] > 1 and v["latency_s"] > 0 and "predicted_latency_s" in v


def test_cli_rejection_is_one_line_with_exit_code_2(tmp_path):
    proc = _cli("solve", "tensorize", "--workload", "conv2d", "--target", "x86-vnni", "--set", "workload.data_dtype=int8",
                "-q", "--out", str(tmp_path / "run"))
    assert proc.returncode == 2
    lines = [l for l in proc.stderr.strip().splitlines() if l.startswith("error")]
    assert len(lines) == 1 and "dtype-mismatch" in lines[0] and "Traceback" not in proc.stderr
