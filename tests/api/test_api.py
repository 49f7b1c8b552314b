"""The public Python API: the README's example runs, results equal the CLI's --json, names and errors as the CLI."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import solvermap
from solvermap import api, cli
from solvermap.errors import InputError, SolvermapError, UnknownNameError

from tests.foundation import toy_family  # noqa: F401 - registers the "toy" family
from tests.foundation.test_cli import run_cli

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture()
def toy_target(tmp_path):
    path = tmp_path / "toy.yaml"
    path.write_text("name: toy\nfamily: toy\ncapacity: 10\n")
    return str(path)


def readme_python_example() -> str:
    text = (REPO / "README.md").read_text()
    section = text[text.index("## Use from Python"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_readme_python_example_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    exec(compile(readme_python_example(), "README.md", "exec"), {"__name__": "readme"})
    out = capsys.readouterr().out
    assert "--set target.pcu.stagez=3: unknown field" in out
    assert (tmp_path / "runs" / "example-front.png").stat().st_size > 0
    assert json.loads((tmp_path / "runs" / "example-map" / "run.json").read_text())["state"] == "ok"


def test_importing_solvermap_loads_nothing_below_it():
    code = ("import sys, solvermap; print(sorted(m for m in sys.modules if m.startswith(('solvermap.', 'ortools', "
            "'pandas', 'optuna', 'rich'))))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.strip() == "[]"


def test_a_public_name_loads_on_first_use():
    assert solvermap.map is api.map and solvermap.MapResult is api.MapResult
    assert solvermap.StudyResults.__name__ == "StudyResults"
    with pytest.raises(AttributeError):
        solvermap.no_such_function  # noqa: B018


def comparable(data):
    """A record without its timings (keys ending in seconds) and paths: two runs of a config compare equal."""
    return api._comparable(data)


def test_map_result_equals_the_cli_json_of_the_same_run(monkeypatch, capsys, tmp_path, toy_target):
    result = solvermap.map("toy_items", toy_target, solver="highs", options={"workload.n": 7}, out=tmp_path / "api")
    code, out, err = run_cli(monkeypatch, capsys, "map", "-w", "toy_items", "-t", toy_target, "--solver", "highs",
                             "--set", "workload.n=7", "--json", "-q", "--out", str(tmp_path / "cli"))
    assert code == 0, err
    assert comparable(result.to_dict()) == comparable(json.loads(out))
    assert result.to_dict() == json.loads((tmp_path / "api" / "records.json").read_text())


def test_solve_result_equals_the_cli_json_of_the_same_run(monkeypatch, capsys, tmp_path, toy_target):
    result = solvermap.solve("select", "toy_items", toy_target, solver="cpsat", out=tmp_path / "api")
    code, out, err = run_cli(monkeypatch, capsys, "solve", "select", "-w", "toy_items", "-t", toy_target, "--json", "-q",
                             "--out", str(tmp_path / "cli"))
    assert code == 0, err
    assert comparable(result.to_dict()) == comparable(json.loads(out))
    assert result.decision == "select" and result.status == "optimal" and result.check.ok


def test_to_frame_is_the_run_directorys_decisions_table(tmp_path, toy_target):
    import pandas as pd

    result = solvermap.map("toy_items", toy_target, out=tmp_path / "run")
    frame = result.to_frame()
    assert list(frame["decision"]) == ["select"] and frame.loc[0, "seconds"] >= frame.loc[0, "solver_solve_seconds"]
    pd.testing.assert_frame_equal(frame, pd.read_parquet(tmp_path / "run" / "tables" / "decisions.parquet"))


def test_loaded_workload_and_target_objects_map_like_their_names(tmp_path, toy_target):
    by_name = solvermap.map("toy_items", toy_target, options={"workload.n": 5, "target.capacity": 7}, out=tmp_path / "a")
    by_object = solvermap.map(solvermap.load_workload("toy_items", n=5), solvermap.load_target(toy_target, capacity=7),
                              out=tmp_path / "b")
    assert comparable(by_name.to_dict()) == comparable(by_object.to_dict())


def test_load_target_takes_dotted_and_nested_overrides():
    dotted = solvermap.load_target("plasticine", **{"pcu.stages": 4})
    nested = solvermap.load_target("plasticine", pcu={"stages": 4})
    assert dotted == nested and dotted.pcu.stages == 4


def test_load_workload_asks_for_the_family_of_a_name_several_families_have():
    with pytest.raises(SolvermapError, match="several target families"):
        solvermap.load_workload("lenet")
    assert solvermap.load_workload("lenet", family="plasticine").family == "plasticine"


def test_bad_input_raises_the_cli_error_instead_of_exiting(tmp_path, toy_target):
    with pytest.raises(UnknownNameError, match="unknown workload 'nope'"):
        solvermap.map("nope", toy_target, out=tmp_path / "r")
    with pytest.raises(InputError, match=r"--set target.capacity=-1"):
        solvermap.map("toy_items", toy_target, options={"target.capacity": -1}, out=tmp_path / "r")
    assert not (tmp_path / "r").exists()


def test_explore_takes_a_shipped_study_by_name(monkeypatch, tmp_path):
    seen = []

    def stop(path, *args, **kwargs):
        seen.append(Path(path))
        raise InputError("stop", "", "stopped before running")

    monkeypatch.setattr("solvermap.search.explore.prepare_dir", stop)
    with pytest.raises(InputError, match="stopped before running"):
        solvermap.explore("plasticine-dse", out=tmp_path / "s")
    assert seen == [REPO / "search" / "studies" / "plasticine_dse.yaml"]


def test_listings_equal_the_cli_listings_json(monkeypatch, capsys):
    for command, function in (("workloads", api.workloads), ("targets", api.targets), ("decisions", api.decisions),
                              ("studies", api.studies)):
        code, out, _ = run_cli(monkeypatch, capsys, command, "--json")
        assert code == 0 and json.loads(out) == json.loads(json.dumps(function(), default=str)), command


def test_cli_commands_call_the_api():
    """One code path: the run commands hold no pipeline code of their own."""
    source = Path(cli.__file__).read_text()
    assert "pipeline.run(" not in source and "RunDirectory.create(" not in source
