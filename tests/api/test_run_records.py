"""Reproducible run records: the resolved target and workload, run state, failures recorded, `rerun`."""

from __future__ import annotations

import json

import pytest
import yaml

import solvermap
from solvermap.errors import InfeasibleError, InputError
from solvermap.runs import RunDirectory, read_run

from tests.foundation import toy_family
from tests.foundation.test_cli import run_cli


@pytest.fixture()
def toy_target(tmp_path):
    path = tmp_path / "toy.yaml"
    path.write_text("name: toy\nfamily: toy\ncapacity: 10\n")
    return str(path)


def test_rerun_reproduces_a_plasticine_map_runs_records(monkeypatch, capsys, tmp_path):
    code, _, err = run_cli(monkeypatch, capsys, "map", "--workload", "dotproduct", "--target", "plasticine",
                           "--set", "workload.par=1", "--set", "target.dram.channels=2", "-q",
                           "--out", str(tmp_path / "first"))
    assert code == 0, err
    code, _, err = run_cli(monkeypatch, capsys, "rerun", str(tmp_path / "first"), "-q", "--out", str(tmp_path / "again"))
    assert code == 0, err
    assert "the records equal those of" in err
    first, again = (json.loads((tmp_path / d / "records.json").read_text()) for d in ("first", "again"))
    assert solvermap.api._comparable(first) == solvermap.api._comparable(again)
    assert (tmp_path / "first" / "target.yaml").read_text() == (tmp_path / "again" / "target.yaml").read_text()


def test_rerun_reports_each_difference_and_exits_4(monkeypatch, capsys, tmp_path, toy_target):
    solvermap.map("toy_items", toy_target, out=tmp_path / "first")
    records = json.loads((tmp_path / "first" / "records.json").read_text())
    records["decisions"][0]["solver"]["objective"] = 1.0
    (tmp_path / "first" / "records.json").write_text(json.dumps(records))
    code, _, err = run_cli(monkeypatch, capsys, "rerun", str(tmp_path / "first"), "-q", "--out", str(tmp_path / "again"))
    assert code == 4
    assert "1 difference(s)" in err and "decisions[0].solver.objective: 1.0 →" in err


def test_rerun_uses_the_recorded_target_spec_not_the_changed_file(tmp_path, toy_target):
    solvermap.map("toy_items", toy_target, options={"workload.n": 8}, out=tmp_path / "first")
    with open(toy_target, "w") as f:
        f.write("name: toy\nfamily: toy\ncapacity: 3\n")
    rerun = solvermap.rerun(tmp_path / "first", out=tmp_path / "again")
    assert rerun.identical, rerun.differences
    assert rerun.result.records[0].workload == "toy_items"


def test_the_run_directory_holds_the_resolved_target_and_every_workload_parameter(tmp_path, toy_target):
    child = tmp_path / "child.yaml"
    child.write_text(f"name: child\nfamily: toy\nextends: {toy_target}\ndescription: a toy variant\n")
    solvermap.map("toy_items", str(child), options={"target.capacity": 7}, out=tmp_path / "run")
    target = yaml.safe_load((tmp_path / "run" / "target.yaml").read_text())
    assert target["name"] == "child" and target["capacity"] == 7 and "extends" not in target
    workload = json.loads((tmp_path / "run" / "workload.json").read_text())
    assert workload == {"name": "toy_items", "family": "toy", "params": {"n": 6}, "source": {"registry": "toy_items"}}


def failing_step(monkeypatch):
    def fail(*args, **kwargs):
        raise InfeasibleError("select: infeasible: a planted failure")

    monkeypatch.setattr(toy_family, "run_decision", fail)


def test_an_error_after_the_run_directory_exists_is_logged_and_marks_it_failed(monkeypatch, capsys, tmp_path,
                                                                                toy_target):
    failing_step(monkeypatch)
    out = tmp_path / "run"
    code, _, err = run_cli(monkeypatch, capsys, "map", "-w", "toy_items", "-t", toy_target, "-q", "--out", str(out))
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "a planted failure" in err and f"run directory {out}, marked failed" in err
    assert (out / "log.txt").read_text().splitlines()[-1].endswith("error: select: infeasible: a planted failure")
    state = read_run(out)
    assert state.failed and state.exit_code == 2 and "a planted failure" in state.error
    code, status_out, _ = run_cli(monkeypatch, capsys, "status", str(out))
    assert code == 0 and "map run" in status_out and "failed" in status_out and "a planted failure" in status_out


def test_the_api_tells_a_failed_run(monkeypatch, tmp_path, toy_target):
    failing_step(monkeypatch)
    with pytest.raises(InfeasibleError):
        solvermap.map("toy_items", toy_target, out=tmp_path / "run")
    assert solvermap.run_state(tmp_path / "run").state == "failed"


def test_an_interrupted_run_is_marked_interrupted(tmp_path):
    run = RunDirectory(tmp_path)
    with pytest.raises(KeyboardInterrupt), run.recording("map"):
        raise KeyboardInterrupt
    state = read_run(tmp_path)
    assert state.state == "interrupted" and state.exit_code == 130
    assert (tmp_path / "log.txt").read_text().rstrip().endswith("interrupted")


def test_a_finished_run_is_marked_ok(tmp_path, toy_target):
    result = solvermap.map("toy_items", toy_target, out=tmp_path / "run")
    state = solvermap.run_state(result.run_dir)
    assert state.state == "ok" and not state.failed and state.command == "map"


def test_a_study_that_fails_after_its_directory_exists_is_marked_failed(tmp_path, monkeypatch):
    from solvermap.search import worker
    from tests.search.conftest import write_study

    def refused(*args, **kwargs):
        raise InputError("postgresql://nobody@127.0.0.1:9/none", "", "connection refused")

    monkeypatch.setattr(worker, "open_study", refused)  # the storage fails once the study directory is made
    study = write_study(tmp_path / "toy.yaml")
    with pytest.raises(InputError):
        solvermap.explore(study, out=tmp_path / "s", allow_imports=True)
    state = read_run(tmp_path / "s")
    assert state.command == "explore" and state.failed and "127.0.0.1" in (tmp_path / "s" / "log.txt").read_text()


def test_an_unreachable_storage_is_refused_before_the_study_directory_exists(tmp_path):
    from tests.search.conftest import write_study

    study = write_study(tmp_path / "toy.yaml")
    with pytest.raises(InputError, match="127.0.0.1"):
        solvermap.explore(study, out=tmp_path / "s", storage="postgresql://nobody@127.0.0.1:9/none",
                          allow_imports=True)
    assert not (tmp_path / "s").exists()


def test_read_run_refuses_a_directory_without_a_record(tmp_path):
    with pytest.raises(InputError, match="not a run directory"):
        read_run(tmp_path)
