"""A solve the wall-clock backstop stopped (its answer depends on machine load) is never silently kept: the
design-space cache does not store it, the trial is evaluated again, a trial where it fires twice is not
reproducible (failed, never in the tables), and a ``solvermap map`` run record says so.

The backstop is made to fire by wrapping the toy pack formulation (tests/search/toy_family.py): its real
solve runs, then its result is marked ``backstop_fired`` as the facade marks a solve the wall clock cut
short (tests/foundation/test_strategy.py covers the facade's own marking)."""

from __future__ import annotations

import json

import pytest

from solvermap.formulations.solver import SolverConfig
from solvermap.search.cache import SolveCache
from solvermap.search.evaluate import Evaluator, NotReproducibleError
from solvermap.search.explore import explore
from solvermap.search.study_file import parse_study
from tests.cli_errors import run_main
from tests.search import toy_family
from tests.search.conftest import TOY_TARGET, toy_study, write_study
from tests.search.toy_family import PACK, PackProblem

BASE = {"target.pes": 2, "target.lanes": 4, "target.network": "static"}
PROBLEM = PackProblem((3, 5, 2, 4), (1, 1, 1, 1), 2, 4)


@pytest.fixture
def backstop(monkeypatch):
    """``fire(when)``: from now on a pack solve is marked as stopped by the backstop when ``when(problem,
    call number)`` holds; returns the list of calls made (problem, fired)."""
    calls: list[tuple[PackProblem, bool]] = []
    solve = toy_family.Pack.solve

    def fire(when):
        def marked(cls, problem, config, hint=None):
            solved = solve(problem, config, hint)
            fired = bool(when(problem, len(calls)))
            solved.result.backstop_fired = fired
            calls.append((problem, fired))
            return solved

        monkeypatch.setattr(toy_family.Pack, "solve", classmethod(marked))
        return calls

    return fire


def _evaluator(root) -> Evaluator:
    return Evaluator(parse_study(toy_study(), "toy"), root, allow_imports=True)


def test_a_solve_stopped_by_the_backstop_is_not_stored_in_the_cache(tmp_path, backstop):
    calls = backstop(lambda problem, n: True)
    cache = SolveCache(tmp_path)
    for _ in range(2):
        solved = cache.solve(None, PACK, PROBLEM, SolverConfig(time_limit_s=5), None, PACK.options())
        assert solved.details["cache"] == "miss"
    assert len(calls) == 2 and cache.stats()["hits"] == 0
    assert not list(tmp_path.rglob("*.json"))


def test_a_stored_entry_that_says_the_backstop_fired_is_a_miss(tmp_path):
    config = SolverConfig(time_limit_s=5)
    SolveCache(tmp_path).solve(None, PACK, PROBLEM, config, None, PACK.options())
    [entry] = [p for p in tmp_path.rglob("*.json") if not p.name.endswith(".meta.json")]
    data = json.loads(entry.read_text())
    data["result"]["backstop_fired"] = True
    entry.write_text(json.dumps(data))
    fresh = SolveCache(tmp_path)
    assert fresh.solve(None, PACK, PROBLEM, config, None, PACK.options()).details["cache"] == "miss"


def test_a_trial_whose_backstop_fired_once_is_evaluated_again_and_kept(tmp_path, backstop):
    calls = backstop(lambda problem, n: n == 0)
    result = _evaluator(tmp_path).evaluate(BASE, number=0)
    assert result.feasible and [fired for _, fired in calls] == [True, False]
    trial = tmp_path / "trials" / "000000"
    assert json.loads((trial / "metrics.json").read_text())["reproducible"] is True
    assert "evaluating again" in (trial / "log.txt").read_text()


def test_a_trial_whose_backstop_fires_twice_is_not_reproducible(tmp_path, backstop):
    calls = backstop(lambda problem, n: True)
    with pytest.raises(NotReproducibleError, match="not reproducible.*tasks: pack"):
        _evaluator(tmp_path).evaluate(BASE, number=0)
    assert len(calls) == 2
    record = json.loads((tmp_path / "trials" / "000000" / "metrics.json").read_text())
    assert record["reproducible"] is False and record["backstop_fired"] == ["tasks: pack"]


def test_a_study_marks_not_reproducible_trials_failed_and_keeps_them_off_the_front(tmp_path, backstop):
    backstop(lambda problem, n: problem.pes == 1)  # every trial with one PE is cut short, every time
    path = write_study(tmp_path / "toy.yaml", budget={"n_trials": 6})
    sdir, results, report = explore(path, out=tmp_path / "run", progress=False, allow_imports=True)
    trials = results.trials
    one_pe = trials[trials["target.pes"] == 1]
    assert report.completed == 6 and len(one_pe) == report.failed >= 1
    assert set(one_pe["state"]) == {"fail"} and one_pe["reason"].str.contains("not reproducible").all()
    assert (results.front["target.pes"] != 1).all()


def test_a_map_run_record_says_when_the_backstop_fired(tmp_path, backstop):
    backstop(lambda problem, n: True)
    outcome = run_main("map", "--target", str(TOY_TARGET), "--workload", "tasks", "--out", str(tmp_path / "run"), "-q")
    assert outcome.code == 0, outcome.err
    record = json.loads((tmp_path / "run" / "records.json").read_text())
    assert record["reproducible"] is False and record["backstop_fired"] == ["pack"]
    assert "not reproducible" in outcome.err and "not reproducible" in (tmp_path / "run" / "log.txt").read_text()
