import itertools

import numpy as np
import pytest

from solvermap.formulations import scheduling
from solvermap.formulations.problems.scheduling import Schedule, completion_of
from solvermap.formulations.solver import SolverConfig
from solvermap.hardware.checks.schedule import check
from solvermap.ir.loopnest import evaluate, random_inputs
from solvermap.ir.workloads import build
from solvermap.mappers.pushmem.baselines import sequential_schedule
from solvermap.mappers.pushmem.buffers import extract_buffers
from solvermap.mappers.pushmem.dependences import rate_matching, schedule_problem
from tests.backends import PYOMO, milp_backends

APPS = ["gaussian", "harris", "upsample", "unsharp", "camera", "resnet", "mobilenet", "brighten_blur"]


@pytest.mark.parametrize("app", APPS)
def test_every_app_has_a_golden_output(app):
    program = build(app, "pushmem").ir
    env = evaluate(program, random_inputs(program, 0))
    assert all(env[t.name].shape == t.shape for t in program.outputs)


def test_sequential_words_reproduce_table_vii_for_gaussian_harris_upsample():
    # Table VII sequential column = sum of all intermediate buffer sizes at 64x64 (001:L386-L388)
    for app, seed in (("gaussian", 11784), ("harris", 41080), ("upsample", 20480)):
        p = build(app, "pushmem").ir
        assert sum(t.size for t in p.tensors.values() if t.role == "temp") == seed


def test_upsample_rates_are_rational_multiples():
    rates = rate_matching(build("upsample", "pushmem", {"size": 8}).ir)
    assert rates["upsampled"] == (16, 1) and rates["hw_input"] == (32, 2)


def test_brighten_blur_ports_sit_at_distances_0_1_64_65():
    program = build("brighten_blur", "pushmem").ir
    problem = schedule_problem(program)
    schedule = scheduling.solve(problem, SolverConfig(backend="highs")).decision
    ub = next(b for b in extract_buffers(program, schedule, problem.latency) if b.tensor == "brighten")
    assert sorted(ub.summary()["distances"].values()) == [0, 1, 64, 65]  # 001:L256


@pytest.mark.parametrize("backend", milp_backends("cpsat", "highs", "scip", *PYOMO))
def test_schedule_backends_reach_the_enumerated_optimum(backend):
    program = build("brighten_blur", "pushmem", {"size": 5}).ir
    problem = schedule_problem(program)
    rates = {s: tuple(q) for s, q in problem.rates.items()}
    best = None
    for d1, d2 in itertools.product(range(0, 30), range(0, 40)):
        delays = {"hw_input": 0, "brighten": d1, "hw_output": d2}
        cand = Schedule(rates, delays, completion_of(problem, delays, None))
        if check(problem, cand).ok and (best is None or cand.completion < best):
            best = cand.completion
    solved = scheduling.solve(problem, SolverConfig(backend=backend, time_limit_s=20))
    assert solved.decision.completion == best
    assert check(problem, solved.decision).ok


def test_dnn_pipeline_binary_search_reaches_full_utilisation():
    program = build("resnet", "pushmem", {"size": 8, "channels": 4, "filters": 2, "tile": 4}).ir
    problem = schedule_problem(program)
    solved = scheduling.solve(problem, SolverConfig(backend="highs"))
    assert problem.pipeline == "dnn"
    assert solved.decision.ii == problem.ii_bounds[0]  # the conv stage at 100% utilisation (001:L226)
    assert check(problem, solved.decision).ok
    assert check(problem, sequential_schedule(problem)).ok
    assert solved.decision.completion < sequential_schedule(problem).completion


def _gaussian_problem():
    program = build("gaussian", "pushmem", {"size": 8}).ir
    problem = schedule_problem(program)
    return problem, scheduling.solve(problem, SolverConfig(backend="highs")).decision


def test_checker_rejects_a_violated_dependence():
    problem, s = _gaussian_problem()
    bad = Schedule(s.rates, {**s.delays, "blur": s.delays["blur"] - 1}, s.completion)
    assert "dependence" in check(problem, bad).rules()


def test_checker_rejects_two_operations_of_a_statement_in_one_cycle():
    problem, s = _gaussian_problem()
    bad = Schedule({**s.rates, "blur": (1, 1)}, s.delays, s.completion)
    assert "statement-overlap" in check(problem, bad).rules()


def test_checker_rejects_a_wrong_completion():
    problem, s = _gaussian_problem()
    assert "completion" in check(problem, Schedule(s.rates, s.delays, s.completion - 1)).rules()


def test_checker_rejects_an_overwritten_double_buffer_slot():
    program = build("resnet", "pushmem", {"size": 8, "channels": 4, "filters": 2, "tile": 4}).ir
    problem = schedule_problem(program)
    s = scheduling.solve(problem, SolverConfig(backend="highs")).decision
    rates = {k: (1,) + v[1:] if k == "load_input" else v for k, v in s.rates.items()}
    bad = Schedule(rates, s.delays, s.completion, s.ii, slots=2)
    assert "buffer-slots" in check(problem, bad).rules() or "statement-overlap" in check(problem, bad).rules()
