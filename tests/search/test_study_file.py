"""Study files: validation errors are one line naming the field; the CLI exits 2 without a traceback."""

from __future__ import annotations

import subprocess

import pytest
import yaml

from solvermap.errors import InputError
from solvermap.search.evaluate import Evaluator
from solvermap.search.study_file import load_study, parse_study, study_digest
from tests.search.conftest import SOLVERMAP, subprocess_env, toy_study, write_study


def _error(tmp_path, **changes) -> InputError:
    path = write_study(tmp_path / "bad.yaml", **changes)
    with pytest.raises(InputError) as info:
        load_study(path)
    assert "\n" not in str(info.value)
    assert str(path) in str(info.value)
    return info.value


def test_valid_study_fills_defaults(study_file):
    study = load_study(study_file)
    assert study.directions == ["minimize", "minimize"]
    assert study.storage.grace == 3
    assert study.solver.time_limit_s == 10


def test_unknown_top_level_field_is_named(tmp_path):
    err = _error(tmp_path, objectivs=[])
    assert err.field == "objectivs" and "unknown field" in err.problem


def test_unknown_field_inside_a_parameter_is_named(tmp_path):
    space = toy_study()["space"]
    space["target.pes"] = {"type": "int", "low": 1, "hgh": 4}
    err = _error(tmp_path, space=space)
    assert err.field == "space.target.pes.hgh"


def test_empty_space_is_an_error(tmp_path):
    err = _error(tmp_path, space={})
    assert err.field == "space" and "empty" in err.problem


def test_null_space_is_an_error(tmp_path):
    err = _error(tmp_path, space=None)
    assert err.field == "space"


def test_objective_without_direction_names_the_field(tmp_path):
    err = _error(tmp_path, objectives=[{"metric": "cycles"}])
    assert err.field == "objectives.0.direction" and "missing" in err.problem


def test_parameter_without_type_is_an_error(tmp_path):
    err = _error(tmp_path, space={"target.pes": {"low": 1, "high": 2}})
    assert err.field == "space.target.pes" and "type" in err.problem


def test_condition_on_a_later_parameter_is_an_error(tmp_path):
    space = {"target.vcs": {"type": "int", "low": 1, "high": 2, "when": {"target.network": "dynamic"}},
             "target.network": {"type": "categorical", "choices": ["static", "dynamic"]}}
    err = _error(tmp_path, space=space)
    assert err.field == "space" and "earlier parameter" in err.problem


def test_cap_needs_exactly_one_bound(tmp_path):
    err = _error(tmp_path, constraints=[{"metric": "area_mm2"}])
    assert err.field == "constraints.0"


def test_space_name_that_is_not_a_spec_field_is_an_error(tmp_path):
    space = toy_study()["space"]
    space["target.pess"] = {"type": "int", "low": 1, "high": 2}
    study = load_study(write_study(tmp_path / "typo.yaml", space=space))
    with pytest.raises(InputError) as info:
        Evaluator(study, None, source="typo.yaml", allow_imports=True)
    assert info.value.field == "space.target.pess"


def test_unknown_sampler_option_is_named(tmp_path):
    from solvermap.search.samplers import make_sampler

    study = load_study(write_study(tmp_path / "s.yaml", sampler={"name": "nsga2", "options": {"popsize": 4}}))
    with pytest.raises(InputError) as info:
        make_sampler(study, source="s.yaml")
    assert info.value.field == "sampler.options.popsize"


def test_digest_ignores_budget_but_not_space(tmp_path):
    a = parse_study(toy_study(), "a")
    b = parse_study(toy_study(budget={"n_trials": 99}), "b")
    c = parse_study(toy_study(seed=1), "c")
    assert study_digest(a) == study_digest(b) != study_digest(c)


def test_cli_reports_a_bad_study_in_one_line_with_exit_code_2(tmp_path):
    bad = tmp_path / "bad.yaml"
    data = toy_study()
    data["objectives"] = [{"metric": "cycles"}]
    bad.write_text(yaml.safe_dump(data))
    run = subprocess.run([SOLVERMAP, "explore", str(bad), "--out", str(tmp_path / "out")], capture_output=True,
                         text=True, env=subprocess_env(), timeout=60)
    assert run.returncode == 2
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "objectives.0.direction" in lines[0]
    assert "Traceback" not in run.stderr


def test_sets_for_a_value_that_is_not_a_choice_is_an_error(tmp_path):
    err = _error(tmp_path, space={"choice.array": {"type": "categorical", "choices": ["a"], "sets": {"b": {"target.pes": 1}}}})
    assert err.field == "space.choice.array" and "not one of the choices" in err.problem


def test_choice_parameter_without_sets_is_an_error(tmp_path):
    err = _error(tmp_path, space={"choice.array": {"type": "categorical", "choices": ["a"]}})
    assert err.field == "space" and "sets" in err.problem


def test_metric_expression_with_a_forbidden_construct_is_rejected_at_load(tmp_path):
    err = _error(tmp_path, metrics={"evil": "__import__('os').system('true')"})
    assert err.field == "metrics" and "evil" in err.problem


def test_expressions_evaluate_arithmetic_functions_and_conditionals():
    from solvermap.search.expressions import evaluate, parse

    names = {"a": 3.0, "b.c": 4.0}
    assert evaluate(parse("sqrt(a**2 + b.c**2)"), names.__getitem__) == 5.0
    assert evaluate(parse("max(a, 10) if b.c > 3 else -1"), names.__getitem__) == 10.0
