"""CLI conventions: --version, -v/-q everywhere, full tables on a pipe, honest times, extras checked up front."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main

from solvermap import cli

from tests.foundation import toy_family  # noqa: F401 - registers the "toy" family
from tests.foundation.test_cli import run_cli

SOLVERMAP = str(Path(sys.executable).with_name("solvermap"))


@pytest.fixture()
def toy_target(tmp_path):
    path = tmp_path / "toy.yaml"
    path.write_text("name: toy\nfamily: toy\ncapacity: 10\n")
    return str(path)


def test_version_prints_the_version(monkeypatch, capsys):
    from solvermap import __version__

    code, out, _ = run_cli(monkeypatch, capsys, "--version")
    assert code == 0 and out.strip() == f"solvermap {__version__}"


def test_every_command_takes_verbose_and_quiet():
    group = typer.main.get_command(cli.app)
    for name, command in group.commands.items():
        options = {opt for param in command.params for opt in param.opts}
        assert {"-v", "--verbose", "-q", "--quiet"} <= options, name


def test_every_listing_command_prints_json(monkeypatch, capsys):
    for command in ("workloads", "targets", "decisions", "studies"):
        code, out, _ = run_cli(monkeypatch, capsys, command, "--json", "-q")
        assert code == 0 and isinstance(json.loads(out), list) and json.loads(out), command


def test_a_piped_map_prints_whole_tables_at_80_columns(tmp_path):
    env = {**os.environ, "COLUMNS": "80"}
    result = subprocess.run([SOLVERMAP, "map", "--workload", "dotproduct", "--target", "plasticine", "--out",
                             str(tmp_path / "run")], capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr
    assert "…" not in result.stdout and "…" not in result.stderr
    header = next(line for line in result.stdout.splitlines() if "decision" in line and "backend" in line)
    for column in ("status", "objective", "baseline obj", "solve s", "total s"):
        assert column in header
    assert "partition" in result.stdout and "merge" in result.stdout


def test_listings_cite_no_seed_line_numbers(monkeypatch, capsys):
    for command in ("workloads", "targets", "decisions"):
        code, out, _ = run_cli(monkeypatch, capsys, command)
        assert code == 0 and not re.search(r"\bL\d{2,4}\b|\d{3}:L\d", out), command


def test_without_line_citations_keeps_sections_and_tables():
    text = "Plasticine RNN (seed 004 §3.2.2, L251): folded tree (L244-247); UNIT layer (002:L326-L333)"
    assert cli.without_line_citations(text) == "Plasticine RNN (seed 004 §3.2.2): folded tree; UNIT layer"


@pytest.mark.parametrize("value", ["inf", "nan", "-1", "0"])
def test_a_time_limit_must_be_a_positive_finite_number(monkeypatch, capsys, tmp_path, toy_target, value):
    code, _, err = run_cli(monkeypatch, capsys, "map", "-w", "toy_items", "-t", toy_target, f"--time-limit={value}",
                           "--out", str(tmp_path / "run"))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--time-limit" in err
    assert not (tmp_path / "run").exists()


def test_a_time_limit_set_as_an_option_must_be_finite_too(monkeypatch, capsys, tmp_path, toy_target):
    code, _, err = run_cli(monkeypatch, capsys, "map", "-w", "toy_items", "-t", toy_target, "--set",
                           "solver.time_limit_s=.inf", "--out", str(tmp_path / "run"))
    assert code == 2 and "time_limit_s" in err and "finite" in err


def test_the_time_limit_help_states_what_it_limits_and_the_worst_case():
    help_text = typer.main.get_command(cli.app).commands["map"].params
    text = next(p.help for p in help_text if "--time-limit" in p.opts)
    assert "each solve" in text and "deterministic" in text and "20 x the budget + 60 s" in text
    assert "several solves" in text and "not limited" in text


def test_the_decision_table_shows_each_steps_total_time_beside_its_solve_time(monkeypatch, capsys, tmp_path,
                                                                             toy_target):
    code, out, _ = run_cli(monkeypatch, capsys, "map", "-w", "toy_items", "-t", toy_target, "-q", "--out",
                           str(tmp_path / "run"))
    assert code == 0 and "solve s" in out and "total s" in out
    record = json.loads((tmp_path / "run" / "records.json").read_text())["decisions"][0]
    assert record["seconds"] >= record["solver"]["solve_seconds"] > 0


def test_the_log_names_the_backend_the_record_names(monkeypatch, capsys, tmp_path, toy_target):
    code, _, _ = run_cli(monkeypatch, capsys, "map", "-w", "toy_items", "-t", toy_target, "--solver", "highs", "-q",
                         "--out", str(tmp_path / "run"))
    record = json.loads((tmp_path / "run" / "records.json").read_text())["decisions"][0]
    log = (tmp_path / "run" / "log.txt").read_text()
    assert code == 0 and record["solver"]["backend"] == "highs" and "select: highs optimal" in log


def test_verbose_shows_each_baselines_result(monkeypatch, capsys, tmp_path, toy_target):
    code, _, err = run_cli(monkeypatch, capsys, "map", "-w", "toy_items", "-t", toy_target, "-v", "--out",
                           str(tmp_path / "run"))
    assert code == 0 and "select: baseline greedy-ratio: objective" in err
    _, _, quiet = run_cli(monkeypatch, capsys, "map", "-w", "toy_items", "-t", toy_target, "-q", "--out",
                          str(tmp_path / "quiet"))
    assert "select:" not in quiet


def test_batch_without_submitit_names_the_extra_and_leaves_no_directory(monkeypatch, capsys, tmp_path):
    from tests.search.conftest import write_study

    study = write_study(tmp_path / "toy.yaml")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, "submitit", None)  # `import submitit` now fails as if it were not installed
    code, _, err = run_cli(monkeypatch, capsys, "batch", str(study), "--allow-imports", "--out", str(tmp_path / "s"))
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "submitit" in err and "pip install 'solvermap[cluster]'" in err
    assert not (tmp_path / "s").exists() and not (tmp_path / "runs").exists()


def test_a_postgresql_storage_without_its_driver_names_the_extra_before_any_directory(monkeypatch, capsys, tmp_path):
    from tests.search.conftest import write_study

    study = write_study(tmp_path / "toy.yaml")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, "psycopg2", None)
    code, _, err = run_cli(monkeypatch, capsys, "explore", str(study), "--allow-imports", "--storage",
                           "postgresql://me@db:5432/studies", "--out", str(tmp_path / "s"))
    assert code == 2 and "psycopg2" in err and "solvermap[cluster]" in err
    assert not (tmp_path / "s").exists() and not (tmp_path / "runs").exists()


def test_a_missing_gurobi_is_named_before_any_work(monkeypatch, capsys, tmp_path, toy_target):
    import dataclasses

    from solvermap.formulations.solver import availability
    from solvermap.ir.workloads import _REGISTRY

    monkeypatch.setitem(availability._PROBE_CACHE, ("milp", "gurobi"),
                        "backend 'gurobi' needs gurobipy: pip install 'solvermap[gurobi]' (and a Gurobi licence)")
    entry = _REGISTRY[("toy_items", "toy")]
    monkeypatch.setitem(_REGISTRY, ("toy_items", "toy"),
                        dataclasses.replace(entry, builder=lambda **_: pytest.fail("the workload was built")))
    code, _, err = run_cli(monkeypatch, capsys, "map", "-w", "toy_items", "-t", toy_target, "--set",
                           "decisions.select.solver.backend=gurobi", "--out", str(tmp_path / "run"))
    assert code == 2 and "solvermap[gurobi]" in err and not (tmp_path / "run").exists()
