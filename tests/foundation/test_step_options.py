"""Typed options and declared state: both are checked before anything runs; a wrong key or value is one line."""

from __future__ import annotations

import pytest

from solvermap.errors import ConfigError
from solvermap.formulations.solver import SolverConfig
from solvermap.hardware.targets import load_target
from solvermap.ir.workloads import build
from solvermap.mappers.decisions import PARTITION, VC
from solvermap.mappers.pipeline import Context, Pipeline, StateError, decide, transform
from solvermap.mappers.plasticine import PIPELINE

from . import toy_family
from .test_cli import run_cli


def _one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_misspelt_option_is_one_line_naming_the_valid_keys(monkeypatch, capsys, tmp_path):
    code, _, err = run_cli(monkeypatch, capsys, "solve", "partition", "-w", "dotproduct", "-t", "plasticine",
                           "--set", "decisions.partition.varient=table42", "--out", str(tmp_path / "run"))
    line = _one_error_line(err)
    assert code == 2 and "decisions.partition.varient: unknown option" in line
    assert "retiming, retiming_search, solver, variant" in line
    assert not (tmp_path / "run").exists()  # refused before the run directory is written


def test_option_value_of_the_wrong_type_is_one_line_with_key_value_and_range(monkeypatch, capsys, tmp_path):
    code, _, err = run_cli(monkeypatch, capsys, "map", "-w", "dotproduct", "-t", "plasticine-hybrid",
                           "--set", "decisions.vc.candidates=abc", "--out", str(tmp_path / "run"))
    line = _one_error_line(err)
    assert code == 2 and "decisions.vc.candidates: 'abc' is not allowed" in line and "an integer ≥ 1" in line


def test_option_value_out_of_range_names_the_range(monkeypatch, capsys, tmp_path):
    code, _, err = run_cli(monkeypatch, capsys, "map", "-w", "dotproduct", "-t", "plasticine-hybrid",
                           "--set", "decisions.vc.candidates=0", "--out", str(tmp_path / "run"))
    assert code == 2 and "decisions.vc.candidates: 0 is not allowed" in _one_error_line(err)


def test_options_for_a_step_outside_the_target_pipeline_are_one_line(monkeypatch, capsys, tmp_path):
    code, _, err = run_cli(monkeypatch, capsys, "map", "-w", "dotproduct", "-t", "plasticine",
                           "--set", "decisions.fuse.objective=time", "--out", str(tmp_path / "run"))
    line = _one_error_line(err)
    assert code == 2 and "decisions.fuse: the plasticine pipeline has no step 'fuse' that takes options" in line


def test_unknown_solver_setting_of_a_decision_is_one_line(monkeypatch, capsys, tmp_path):
    code, _, err = run_cli(monkeypatch, capsys, "map", "-w", "dotproduct", "-t", "plasticine",
                           "--set", "decisions.merge.solver.backnd=highs", "--out", str(tmp_path / "run"))
    line = _one_error_line(err)
    assert code == 2 and "decisions.merge.solver" in line and "backnd: unknown solver setting" in line


def test_pipeline_run_checks_every_option_before_the_first_step():
    said: list[str] = []
    ctx = Context(workload=build("dotproduct", "plasticine"), target=load_target("plasticine"), solver=SolverConfig(),
                  options={"merge": {"solver": {"backend": "highs"}}, "vc": {"mode": "per_link"}}, progress=said.append)
    with pytest.raises(ConfigError, match="decisions.vc.mode: 'per_link' is not allowed"):
        PIPELINE.run(ctx, upto="partition")
    assert said == [] and ctx.records == []


def test_options_for_returns_the_validated_model_with_defaults():
    ctx = Context(workload=None, target=None, solver=SolverConfig(), options={"partition": {"variant": "table42"}})
    options = ctx.options_for(PARTITION)
    assert (options.variant, options.retiming_search, options.retiming) == ("table42", "auto", True)
    assert ctx.options_for(VC).candidates == 4


def test_decision_solver_options_override_the_run_config_and_the_preferred_backend():
    ctx = Context(workload=None, target=None, solver=SolverConfig(), options={"route": {"solver": {"time_limit_s": 5}}})
    assert ctx.solver_for("route", "highs").backend == "highs" and ctx.solver_for("route").time_limit_s == 5
    pinned = Context(workload=None, target=None, solver=SolverConfig(), options={"route": {"solver": {"backend": "scip"}}})
    assert pinned.solver_for("route", "highs").backend == "scip"


def test_a_step_that_needs_state_no_earlier_step_provides_is_refused_at_construction():
    with pytest.raises(StateError, match="step 'select' needs ctx.state 'items'"):
        Pipeline("bad", "", (decide(toy_family.SELECT, toy_family.select_step, needs=("items",)),))


def test_a_step_writing_undeclared_state_fails_while_the_pipeline_runs():
    def sneaky(ctx):
        ctx.state["undeclared"] = 1

    pipeline = Pipeline("sneaky", "", (transform("sneak", "writes what it does not declare", sneaky),))
    ctx = Context(workload=None, target=None, solver=SolverConfig())
    with pytest.raises(StateError, match="writes ctx.state\\['undeclared'\\]"):
        pipeline.run(ctx)


def test_a_step_reading_another_steps_state_without_declaring_it_fails():
    def first(ctx):
        ctx.state["made"] = 1

    def second(ctx):
        return ctx.state.get("made")

    pipeline = Pipeline("reads", "", (transform("first", "", first, provides=("made",)),
                                      transform("second", "", second)))
    with pytest.raises(StateError, match="step 'second' reads ctx.state\\['made'\\]"):
        pipeline.run(Context(workload=None, target=None, solver=SolverConfig()))
