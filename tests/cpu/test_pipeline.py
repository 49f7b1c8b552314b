"""The cpu pipeline and CLI: ``solvermap map`` reports bit_exact, the speedups over the untensorized nest
(tuned for itself) and onnxruntime (or why onnxruntime is missing); the 7-bit mode is validated on 7-bit
data and reports its error on full-range data; a non-applicable instruction is a one-line error with
exit code 2. Assertions are timing-free: speedups are checked to exist, not to exceed anything."""

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

from solvermap.hardware.cpu import best_x86_target
from solvermap.mappers.cpu import peers

from .conftest import needs_objdump

SMALL = {"C": 16, "K": 32, "IHW": 9}
FAST = {"trials": 2, "unit_pairs": 2, "tiles": 1, "rounds": 2, "min_seconds": 0.002, "min_reps": 1}
BEST = best_x86_target()
needs_x86 = pytest.mark.skipif(BEST is None, reason="this CPU runs none of the x86 targets (needs AVX2 and gcc)")


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


@pytest.fixture(scope="module")
def mapped(tmp_path_factory) -> dict:
    """One ``solvermap map --json`` run of a reduced conv_table1_3 on the best x86 target of this CPU."""
    if BEST is None:
        pytest.skip("this CPU runs none of the x86 targets (needs AVX2 and gcc)")
    sets = [f"workload.{k}={v}" for k, v in SMALL.items()] + [f"decisions.tensorize.{k}={v}" for k, v in FAST.items()]
    proc = _cli("map", "--workload", "conv_table1_3", "--target", BEST, "--json", "-q",
                "--out", str(tmp_path_factory.mktemp("map") / "run"), *sum((["--set", s] for s in sets), []))
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_cli_map_reports_bit_exact_and_speedups_over_the_self_tuned_untensorized_nest_and_onnxruntime(mapped):
    v = mapped["validation"]
    assert v["bit_exact"] is True and all(v["bit_exact_checks"].values()) and v["full_range"]["exact"]
    assert v["speedup_vs_untensorized"] > 0 and v["latency_s"] > 0 and "predicted_latency_s" in v
    assert isinstance(v["untensorized_tuning"], dict)  # tuned for itself, not under the tensorized schedule
    if peers.onnxruntime_unavailable():
        assert v["speedup_vs_onnxruntime"] is None and "onnxruntime" in v["onnxruntime"]["reason"]
    else:
        assert v["speedup_vs_onnxruntime"] > 0 and v["onnxruntime"]["ConvInteger"]["exact_on_full_range"]
        assert v["onnxruntime"]["QLinearConv"]["kernel_latency_s"] > 0


@needs_objdump
def test_cli_map_checks_the_kernel_disassembly(mapped):
    v = mapped["validation"]
    assert v["kernel_uses_instruction"] is True and isinstance(v["untensorized_uses_instruction"], bool)


@needs_x86
def test_missing_onnxruntime_is_reported_with_its_reason(monkeypatch):
    monkeypatch.setattr(peers, "onnxruntime_unavailable", lambda: "onnxruntime is not installed (test)")
    v = _run("conv_table1_3", BEST, SMALL, {**FAST, "measure": "model", "tune_untensorized": False}).validation
    assert v["speedup_vs_onnxruntime"] is None and v["onnxruntime"]["reason"] == "onnxruntime is not installed (test)"


def test_seven_bit_mode_is_validated_on_seven_bit_data_and_reports_its_full_range_error():
    result = _run("conv2d", "x86-avx2-u7", {"C": 16, "K": 8, "IHW": 6},
                  {**FAST, "measure": "model", "execute": "emulate"})
    v = result.validation
    assert v["bit_exact"] is True and v["input_ranges"] == {"data": [0, 127]}
    assert v["exact_on_full_range_by_design"] is False
    assert v["full_range"]["exact"] is False and 0 < v["full_range"]["wrong_fraction"] < 1


def test_cli_rejection_is_one_line_with_exit_code_2(tmp_path):
    proc = _cli("solve", "tensorize", "--workload", "conv2d", "--target", "x86-vnni", "--set", "workload.data_dtype=int8",
                "-q", "--out", str(tmp_path / "run"))
    assert proc.returncode == 2
    lines = [l for l in proc.stderr.strip().splitlines() if l.startswith("error")]
    assert len(lines) == 1 and "dtype-mismatch" in lines[0] and "Traceback" not in proc.stderr
