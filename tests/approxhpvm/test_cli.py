"""The CLI contract for the approxhpvm decisions, and one-line errors for malformed input.

The CLI runs in-process (``solvermap.cli.main`` with a patched ``argv``, as in tests/foundation/test_cli.py), so
the trained networks are the session's (the workload builder caches them per process) and no test pays for a
fresh interpreter and a retraining. An uncaught exception fails the test outright, which is stricter than looking
for "Traceback" in a subprocess's stderr.
"""

from __future__ import annotations

import json
import sys

import pytest

from solvermap.cli import main
from solvermap.ir.graph import DataflowGraph
from solvermap.ir.serialize import save


def run_cli(monkeypatch, capsys, tmp_path, *args):
    monkeypatch.setattr(sys, "argv", ["solvermap", *args, "--out", str(tmp_path / "run"), "-q"])
    with pytest.raises(SystemExit) as exit_info:
        main()
        raise SystemExit(0)
    captured = capsys.readouterr()
    return exit_info.value.code or 0, captured.out, captured.err


def error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("error:")]


def test_solve_fuse_json_contract(monkeypatch, capsys, tmp_path):
    code, out, err = run_cli(monkeypatch, capsys, tmp_path, "solve", "fuse", "--workload", "dnn1", "--target",
                             "promise-soc", "--time-limit", "20", "--json")
    assert code == 0, err
    record = json.loads(out)
    assert record["decision"] == "fuse" and record["check"]["ok"]
    assert {"backend", "status", "objective", "bound", "gap"} <= set(record["solver"])
    assert record["baseline"]["name"] in ("seed-promise-patterns", "gpu-unfused")
    assert (tmp_path / "run").is_dir()


def test_solve_knobs_json_validation_carries_the_monte_carlo_and_speedup_keys(knobs_run):
    # Small Monte Carlo counts: this is the interface test; the acceptance test (≥ 95 of 100 runs) is in
    # test_budget.py and runs the full 100. The run (conftest.knobs_run) is the one the export tests read.
    record, _ = knobs_run
    assert record["decision"] == "knobs" and record["check"]["ok"]
    v = record["validation"]
    assert {"pass_rate", "accuracy_mean", "accuracy_std", "speedup", "energy_reduction"} <= set(v)
    assert v["mc_runs"] == 10 and 0.0 <= v["pass_rate"] <= 1.0
    assert v["speedup"] > 1.0 and v["energy_reduction"] > 1.0  # approximation never loses to all-FP32 here
    assert set(record["solution"]["layer_settings"]) == {"fc1", "fc2"}


@pytest.mark.parametrize("value", ["0", "-0.1", "1", "x"])
def test_loss_limit_validation_rejects_values_outside_0_1(value):
    from solvermap.errors import InputError
    from solvermap.hardware.approxhpvm import validate_loss_limit

    with pytest.raises(InputError, match=r"\(0, 1\)"):
        validate_loss_limit(value, "decisions.budget")


def test_loss_limit_outside_0_1_is_a_one_line_error(monkeypatch, capsys, tmp_path):
    code, _, err = run_cli(monkeypatch, capsys, tmp_path, "solve", "budget", "--workload", "dnn1", "--target",
                           "promise-soc", "--set", "decisions.budget.loss_limit=1.5")
    assert code == 2
    lines = error_lines(err)
    assert len(lines) == 1 and "loss_limit" in lines[0] and "(0, 1)" in lines[0]
    assert "Traceback" not in err


def test_unsupported_op_in_a_graph_file_is_a_one_line_error(monkeypatch, capsys, tmp_path):
    g = DataflowGraph("net")
    g.add_node("x", "io", op="input")
    g.add_node("sm", op="lstm")
    g.add_edge("x", "sm")
    path = tmp_path / "net.json"
    save(g, path)
    code, _, err = run_cli(monkeypatch, capsys, tmp_path, "solve", "fuse", "--workload", str(path), "--target",
                           "promise-soc")
    assert code == 2 and len(error_lines(err)) == 1 and "unsupported tensor op 'lstm'" in err
    assert "Traceback" not in err


def test_unknown_knob_from_the_command_line_is_a_one_line_error(monkeypatch, capsys, tmp_path):
    code, _, err = run_cli(monkeypatch, capsys, tmp_path, "solve", "knobs", "--workload", "dnn1", "--target",
                           "promise-soc", "--set", "decisions.knobs.allowed=[FP32,P9]",
                           "--set", "decisions.budget.optuna_trials=0", "--set", "decisions.budget.top=1")
    assert code == 2 and len(error_lines(err)) == 1 and "unknown knob 'P9'" in err
    assert "Traceback" not in err
