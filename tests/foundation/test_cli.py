"""The CLI contract: --json keys, run directories, one-line errors with exit code 2."""

import json
import os
import subprocess
import sys

import pytest

from solvermap import api, cli

from . import toy_family  # noqa: F401 - registers the "toy" family


@pytest.fixture()
def toy_target(tmp_path):
    path = tmp_path / "toy.yaml"
    path.write_text("name: toy\nfamily: toy\ncapacity: 10\n")
    return str(path)


def run_cli(monkeypatch, capsys, *args):
    monkeypatch.setattr(sys, "argv", ["solvermap", *args])
    with pytest.raises(SystemExit) as exit_info:
        cli.main()
        raise SystemExit(0)
    captured = capsys.readouterr()
    return exit_info.value.code or 0, captured.out, captured.err


def test_solve_json_has_the_documented_keys(monkeypatch, capsys, tmp_path, toy_target):
    code, out, err = run_cli(monkeypatch, capsys, "solve", "select", "--workload", "toy_items", "--target", toy_target,
                             "--solver", "highs", "--json", "--out", str(tmp_path / "run"), "-q")
    assert code == 0, err
    data = json.loads(out)
    for key in ("decision", "workload", "target", "solver", "baseline", "check", "validation"):
        assert key in data
    for key in ("backend", "status", "objective", "bound", "gap", "build_seconds", "solve_seconds"):
        assert key in data["solver"]
    assert set(data["baseline"]) >= {"name", "objective"} and set(data["check"]) >= {"ok", "violations"}
    assert data["solver"]["backend"] == "highs" and data["solver"]["status"] == "optimal"
    # n=6 items, capacity 10: the optimum by enumeration
    items = toy_family.toy_items(6)
    from itertools import combinations

    best = max(sum(items.values[i] for i in c) for r in range(7) for c in combinations(range(6), r)
               if sum(items.weights[i] for i in c) <= 10)
    assert data["solver"]["objective"] == best and data["check"]["ok"]
    assert data["baseline"]["name"] == "greedy-ratio" and data["baseline"]["objective"] <= best


def test_native_prints_during_a_json_run_go_to_stderr(capfd):
    """A solver library writing to file descriptor 1 from native code (HiGHS does) cannot spoil --json."""
    with cli._stdout_for_json_only(True):
        os.write(1, b"native solver noise\n")
        print("python noise")
    sys.stdout.write('{"a": 1}\n')
    out, err = capfd.readouterr()
    assert json.loads(out) == {"a": 1}
    assert "native solver noise" in err and "python noise" in err


def test_every_run_writes_a_complete_run_directory(monkeypatch, capsys, tmp_path, toy_target):
    out_dir = tmp_path / "run"
    code, _, err = run_cli(monkeypatch, capsys, "map", "-w", "toy_items", "-t", toy_target, "--out", str(out_dir), "-q")
    assert code == 0, err
    for name in ("config.yaml", "environment.json", "records.json", "log.txt", "tables/decisions.parquet"):
        assert (out_dir / name).exists(), name
    env = json.loads((out_dir / "environment.json").read_text())
    assert env["backends"]["milp:cpsat"]["available"] and env["packages"]["ortools"]
    record = json.loads((out_dir / "records.json").read_text())
    assert record["decisions"][0]["decision"] == "select" and "value" in record["validation"]


def test_an_existing_run_directory_is_never_overwritten(monkeypatch, capsys, tmp_path, toy_target):
    out_dir = tmp_path / "run"
    out_dir.mkdir()
    (out_dir / "keep.txt").write_text("x")
    code, _, err = run_cli(monkeypatch, capsys, "map", "-w", "toy_items", "-t", toy_target, "--out", str(out_dir))
    assert code == 2 and "not empty" in err and (out_dir / "keep.txt").read_text() == "x"


def test_same_config_gives_the_same_answer(monkeypatch, capsys, tmp_path, toy_target):
    outs = []
    for k in range(2):
        code, out, _ = run_cli(monkeypatch, capsys, "solve", "select", "-w", "toy_items", "-t", toy_target, "--json",
                               "--out", str(tmp_path / f"r{k}"), "-q", "--set", "workload.n=9")
        data = json.loads(out)
        outs.append((data["solver"]["objective"], data["solution"]))
    assert outs[0] == outs[1]


@pytest.mark.parametrize("args, message", [
    (["map", "-w", "nope", "-t", "TOY"], "unknown workload 'nope' for target family 'toy'"),
    (["map", "-w", "toy_items", "-t", "TOY", "--set", "workload.size=3"], "field 'workload.size': unknown parameter"),
    (["map", "-w", "toy_items", "-t", "TOY", "--solver", "glpk"], "unknown backend 'glpk'"),
    (["map", "-w", "toy_items", "-t", "TOY", "--set", "target.capacity=-2"], "--set target.capacity=-2: Input should be"),
    (["solve", "route", "-w", "toy_items", "-t", "TOY"], "decision 'route' is not part of the toy pipeline"),
    (["map", "-w", "toy_items", "-t", "missing.yaml"], "missing.yaml: no such file"),
    (["map", "--bogus"], "No such option: --bogus"),
    (["solve", "select", "-w", "toy_items", "-t", "TOY", "--write-model", "model.txt"], "must end in .lp or .mps"),
])
def test_bad_input_is_one_line_with_exit_code_2(monkeypatch, capsys, tmp_path, toy_target, args, message):
    args = [toy_target if a == "TOY" else a for a in args] + ["--out", str(tmp_path / "r")]
    code, out, err = run_cli(monkeypatch, capsys, *args)
    assert code == 2
    assert message in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("suffix", [".lp", ".mps"])
def test_a_written_model_resolves_with_highspy_to_the_decisions_objective(monkeypatch, capsys, tmp_path, toy_target,
                                                                          suffix):
    import highspy

    path = tmp_path / f"select{suffix}"
    code, out, err = run_cli(monkeypatch, capsys, "solve", "select", "-w", "toy_items", "-t", toy_target, "--solver",
                             "pyomo-highs", "--json", "--out", str(tmp_path / "r"), "-q", "--write-model", str(path))
    assert code == 0, err
    data = json.loads(out)
    assert data["solver"]["backend"] == "pyomo-highs" and data["solver"]["status"] == "optimal"
    assert data["model_file"]["path"] == str(path) and data["model_file"]["solves"] == 1
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    assert h.readModel(str(path)) == highspy.HighsStatus.kOk
    h.run()
    assert h.getInfo().objective_function_value == pytest.approx(data["solver"]["objective"])


def test_writing_the_model_of_a_decision_that_solved_no_milp_is_one_line():
    from solvermap.errors import ConfigError
    from solvermap.formulations.solver import ModelCapture

    with pytest.raises(ConfigError, match="decision 'bank' solved no MILP model with backend 'cpsat'.*--solver highs"):
        api._write_model("bank.lp", ModelCapture(), "bank", "cpsat")


def test_a_pyomo_backend_that_is_not_installed_is_one_line_naming_what_to_install(monkeypatch, capsys, tmp_path,
                                                                                  toy_target):
    from solvermap.formulations.solver import unavailable_reason

    if unavailable_reason("milp", "pyomo-xpress") is None:
        pytest.skip("Xpress is installed here")
    code, _, err = run_cli(monkeypatch, capsys, "solve", "select", "-w", "toy_items", "-t", toy_target, "--solver",
                           "pyomo-xpress", "--out", str(tmp_path / "r"), "-q")
    assert code == 2 and "pip install xpress" in err and len(err.strip().splitlines()) == 1


def test_listing_commands_print_json(monkeypatch, capsys):
    for command in ("workloads", "targets", "decisions"):
        code, out, _ = run_cli(monkeypatch, capsys, command, "--json")
        assert code == 0 and isinstance(json.loads(out), list)
    _, out, _ = run_cli(monkeypatch, capsys, "decisions", "--json")
    assert any(d["name"] == "select" and d["families"] == ["toy"] for d in json.loads(out))


def test_help_is_readable():
    result = subprocess.run([sys.executable, "-m", "solvermap.cli", "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0
    for command in ("map", "solve", "workloads", "targets", "decisions"):
        assert command in result.stdout
