"""Trial evaluation through a real pipeline; infeasible and over-cap trials; the content-hash solve cache."""

from __future__ import annotations

import math
from dataclasses import dataclass

import networkx as nx
import numpy as np
import pytest

from solvermap.errors import InputError
from solvermap.search.cache import SolveCache, Uncacheable, content_hash
from solvermap.search.evaluate import Evaluator, StudyError
from solvermap.search.study_file import parse_study
from tests.search.conftest import toy_study
from tests.search.toy_family import PACK, PackProblem, check, objective


def _evaluator(tmp_path=None, **changes) -> Evaluator:
    return Evaluator(parse_study(toy_study(**changes), "toy"), tmp_path, allow_imports=True)


BASE = {"target.pes": 2, "target.lanes": 4, "target.network": "static"}


def test_feasible_trial_reports_pipeline_metrics_and_solver_stats(tmp_path):
    result = _evaluator(tmp_path).evaluate(BASE, number=0)
    assert result.feasible and result.constraints == {"mapping": 0.0}
    assert result.values == [result.metrics["cycles"], result.metrics["area_mm2"]]
    assert result.metrics["pack.objective"] == result.metrics["cycles"]  # static network: no slowdown
    assert result.metrics["solver_seconds"] > 0
    trial_dir = tmp_path / "trials" / "000000"
    assert (trial_dir / "params.yaml").exists() and (trial_dir / "tasks" / "records.json").exists()


def test_a_trial_log_has_each_workloads_progress_and_the_verdict(tmp_path):
    _evaluator(tmp_path).evaluate(BASE, number=0)
    lines = [line.split(" ", 1)[1] for line in (tmp_path / "trials" / "000000" / "log.txt").read_text().splitlines()]
    assert lines[-1] == "feasible" and lines[:-1] and all(line.startswith("tasks: ") for line in lines[:-1])


def test_infeasible_mapping_is_a_constrained_trial_not_an_exception(tmp_path):
    # lanes 2 x stages 2 = 4 < the widest task (width 7): the pack decision is infeasible
    result = _evaluator(tmp_path).evaluate({**BASE, "target.lanes": 2}, number=1)
    assert not result.feasible
    assert result.constraints["mapping"] == 1.0
    assert result.values == [math.inf, math.inf]
    assert "needs width" in result.reason


def test_cap_violation_is_positive_constraint_with_real_values():
    evaluator = _evaluator(constraints=[{"metric": "area_mm2", "max": 0.5}])
    result = evaluator.evaluate({**BASE, "target.pes": 4})
    assert not result.feasible and result.constraints["area_mm2<=0.5"] > 0
    assert all(math.isfinite(v) for v in result.values)
    small = evaluator.evaluate({**BASE, "target.pes": 1})
    assert small.feasible and small.constraints["area_mm2<=0.5"] <= 0


def test_metric_the_pipeline_does_not_report_stops_the_study():
    evaluator = _evaluator(objectives=[{"metric": "energy_j", "direction": "minimize"}])
    with pytest.raises(StudyError, match="energy_j"):
        evaluator.evaluate(BASE)


def test_maximised_infeasible_objective_gets_minus_infinity():
    evaluator = _evaluator(objectives=[{"metric": "pbs_used", "direction": "maximize"}])
    assert evaluator.evaluate({**BASE, "target.lanes": 2}).values == [-math.inf]


def test_workload_parameter_in_space_reaches_the_workload():
    evaluator = _evaluator(space={"workload.par": {"type": "int", "low": 1, "high": 3}})
    one = evaluator.evaluate({"workload.par": 1})
    three = evaluator.evaluate({"workload.par": 3})
    assert three.metrics["cycles"] > one.metrics["cycles"]


def test_irrelevant_spec_field_hits_the_cache(tmp_path):
    evaluator = _evaluator(tmp_path)
    first = evaluator.evaluate({**BASE, "target.network": "dynamic", "target.vcs": 1}, number=0)
    second = evaluator.evaluate({**BASE, "target.network": "dynamic", "target.vcs": 2}, number=1)
    assert first.cache["misses"] == 1 and second.cache["hits"] == 1
    # same decision, different network model: cycles differ only by the slowdown
    assert first.metrics["pack.objective"] == second.metrics["pack.objective"]
    assert second.metrics["cycles"] < first.metrics["cycles"]


def test_cache_is_shared_through_the_study_directory(tmp_path):
    _evaluator(tmp_path).evaluate(BASE, number=0)
    fresh = _evaluator(tmp_path).evaluate(BASE, number=1)  # a new process would see the same files
    assert fresh.cache["hits"] == 1


def test_neighbour_solution_better_than_the_baseline_becomes_the_warm_start(tmp_path):
    from solvermap.formulations.solver import SolverConfig
    from tests.search.toy_family import lpt

    cache = SolveCache(tmp_path, neighbours=3, distance=lambda a, b: 0.0)
    config = SolverConfig(time_limit_s=10)
    # LPT packs (3, 3, 2, 2, 2) on 2 PEs with makespan 7; the optimum is 6 (3+3 | 2+2+2)
    first = PackProblem((3, 3, 2, 2, 2), (1,) * 5, 2, 8)
    second = PackProblem((3, 3, 2, 2, 2), (1,) * 5, 2, 16)  # another problem (capacity), same packings fit
    assert objective(second, lpt(second)) == 7
    cache.begin_trial(0, {})
    cache.solve(None, PACK, first, config, lpt(first))
    cache.begin_trial(1, {})
    solved = cache.solve(None, PACK, second, config, lpt(second))
    assert solved.details["cache"] == "miss"
    assert solved.details["warm_start"] == {"source": "trial 0 (distance 0)", "objective": 6.0}
    assert cache.warm_from_neighbour == 1 and solved.result.objective == 6


def test_warm_start_ignores_neighbour_decisions_that_do_not_fit(tmp_path):
    cache = SolveCache(tmp_path, neighbours=3, distance=lambda a, b: 0.0)
    from solvermap.formulations.solver import SolverConfig

    config = SolverConfig(time_limit_s=10)
    big = PackProblem((3, 3, 2, 2), (1, 1, 1, 1), 4, 8)
    small = PackProblem((3, 3, 2, 2), (1, 1, 1, 1), 2, 8)
    cache.begin_trial(0, {})
    cache.solve(None, PACK, big, config, None)
    cache.begin_trial(1, {})
    solved = cache.solve(None, PACK, small, config, None)
    assert solved.details["warm_start"]["source"] is None  # the 4-PE packing uses PEs 2, 3: rejected
    assert check(small, solved.decision).ok and solved.result.objective == 5


@dataclass(frozen=True)
class _P:
    values: tuple
    graph: object
    weights: object


def test_content_hash_is_stable_and_sensitive():
    g = nx.MultiDiGraph()
    g.add_edge("a", "b", width=32)
    h = nx.MultiDiGraph()
    h.add_edge("a", "b", width=32)
    a = _P((1, 2.5, "x"), g, np.arange(4))
    b = _P((1, 2.5, "x"), h, np.arange(4))
    assert content_hash(a) == content_hash(b)
    h.add_edge("b", "a", width=32)
    assert content_hash(a) != content_hash(b)
    assert content_hash({"x": 1, "y": 2}) == content_hash({"y": 2, "x": 1})
    assert content_hash((1,)) != content_hash([1]) != content_hash((1.0,))


def test_objects_without_content_are_uncacheable():
    with pytest.raises(Uncacheable):
        content_hash(_P((lambda x: x,), None, None))


def test_choice_sets_move_coupled_fields_together():
    space = {"choice.array": {"type": "categorical", "choices": ["small", "big"],
                              "sets": {"small": {"target.pes": 1, "target.lanes": 4},
                                       "big": {"target.pes": 4, "target.lanes": 8}}}}
    evaluator = _evaluator(space=space)
    small, big = evaluator.evaluate({"choice.array": "small"}), evaluator.evaluate({"choice.array": "big"})
    assert small.metrics["pbs_used"] == 1 and big.metrics["pbs_used"] == 4
    assert big.metrics["area_mm2"] > small.metrics["area_mm2"]


def test_sets_naming_a_missing_spec_field_is_an_input_error():
    space = {"choice.array": {"type": "categorical", "choices": ["a"], "sets": {"a": {"target.pez": 1}}}}
    with pytest.raises(InputError) as info:
        _evaluator(space=space)
    assert info.value.field == "space.choice.array.sets.a.target.pez"


def test_cache_without_a_study_directory_lives_in_memory():
    evaluator = _evaluator(None)
    evaluator.evaluate(BASE)
    assert evaluator.evaluate({**BASE, "target.network": "dynamic", "target.vcs": 2}).cache["hits"] == 1


def test_derived_metric_combines_spec_fields_and_metrics():
    evaluator = _evaluator(metrics={"array_lanes": "target.pes * target.lanes", "cycles_per_lane": "cycles / array_lanes"},
                           objectives=[{"metric": "cycles_per_lane", "direction": "minimize"}])
    result = evaluator.evaluate(BASE)
    assert result.metrics["array_lanes"] == 8
    assert result.values == [result.metrics["cycles"] / 8]


def test_derived_metric_with_an_unknown_name_stops_the_study():
    evaluator = _evaluator(metrics={"bad": "target.pez * 2"})
    with pytest.raises(StudyError, match="metrics.bad: unknown name 'target.pez'"):
        evaluator.evaluate(BASE)


def test_aggregates_over_workloads():
    from solvermap.search.evaluate import aggregate

    assert aggregate([5.0, 5.0], "sum") == 10.0 and aggregate([5.0, 5.0], "geomean") == 5.0
    assert aggregate([2.0, 8.0], "geomean") == pytest.approx(4.0)
    assert aggregate([0.0, 8.0], "geomean") == 0.0 and aggregate([-1.0, 3.0], "geomean") == 1.0
    assert aggregate([1.0, 3.0], "max") == 3.0 and aggregate([1.0, 3.0], "min") == 1.0
