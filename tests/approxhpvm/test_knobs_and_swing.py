"""Knob mapping and swing MILPs reach the exhaustive optimum; checker mutations; seed baselines."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from solvermap.formulations import knob_mapping, swing
from solvermap.formulations.problems.knob_mapping import ALL_KNOBS, PROMISE_KNOBS, KnobDecision
from solvermap.formulations.problems.knob_mapping import objective as knob_objective
from solvermap.formulations.problems.swing import LEVELS, SwingDecision, SwingProblem, precision_bits, sakr_cost
from solvermap.formulations.problems.swing import objective as swing_objective
from solvermap.hardware.checks.knob_mapping import check as knob_check
from solvermap.hardware.checks.swing import check as swing_check
from solvermap.mappers.approxhpvm.baselines import brute_force, seed_least_accurate, seed_uniform_bits
from solvermap.mappers.approxhpvm.problems import knob_problem, swing_problem_kernel

from .conftest import MILP_BACKENDS, config


def dnn1_knobs(dnn1, spec, errors, level=8):
    budget = {op.name: spec.noise.l1(level) for op in dnn1.ops}
    sigma = {op.name: spec.noise.sigma(level) for op in dnn1.ops}
    groups = (("fc1/gemm", "fc1/add"), ("fc1/tanh",), ("fc2/gemm", "fc2/add"))
    return knob_problem(dnn1, spec, errors=errors, l1_budget=budget, l2_budget=sigma, gpu_groups=groups)


def exhaustive(problem):
    best = float("inf")
    choices = [[h for h in ALL_KNOBS if problem.feasible(o, h)] for o in problem.ops]
    for combo in itertools.product(*choices):
        d = KnobDecision(dict(zip(problem.ops, combo)))
        if knob_check(problem, d).ok:
            best = min(best, knob_objective(problem, d))
    return best


@pytest.fixture(scope="module")
def dnn1_knob_optima(dnn1, spec, dnn1_errors):
    """level → (knob problem, exhaustive optimum), enumerated once per level for all backends."""
    cache = {}

    def get(level):
        if level not in cache:
            problem = dnn1_knobs(dnn1, spec, dnn1_errors, level)
            cache[level] = problem, exhaustive(problem)
        return cache[level]

    return get


@pytest.mark.parametrize("backend", MILP_BACKENDS)
@pytest.mark.parametrize("level", [3, 8, 14])
def test_knob_milp_reaches_the_exhaustive_optimum(dnn1_knob_optima, backend, level):
    problem, optimum = dnn1_knob_optima(level)
    solved = knob_mapping.solve(problem, config(backend))
    assert knob_check(problem, solved.decision).ok
    assert solved.result.objective == pytest.approx(optimum, rel=1e-7)
    seed = seed_least_accurate(problem)
    assert knob_check(problem, seed).ok and solved.result.objective <= knob_objective(problem, seed) * (1 + 1e-9)


def test_unknown_knob_is_a_one_line_input_error():
    from solvermap.errors import InputError
    from solvermap.hardware.approxhpvm import parse_knobs

    with pytest.raises(InputError, match="unknown knob 'P9'"):
        parse_knobs(["FP32", "P9"])


def _knob_valid(dnn1, spec, errors):
    problem = dnn1_knobs(dnn1, spec, errors, 8)
    return problem, knob_mapping.solve(problem, config()).decision


def test_knob_checker_flags_each_rule(dnn1, spec, dnn1_errors):
    problem, d = _knob_valid(dnn1, spec, dnn1_errors)
    knobs = dict(d.knobs)
    assert "assignment" in knob_check(problem, KnobDecision({k: v for k, v in knobs.items() if k != "fc1/add"})).rules()
    assert "error-budget" in knob_check(problem, KnobDecision({o: "P1" for o in problem.ops})).rules()
    mixed = {o: "FP32" for o in problem.ops} | {"fc1/gemm": "P7"}
    assert "promise-task" in knob_check(problem, KnobDecision(mixed)).rules()
    split = {o: "FP32" for o in problem.ops} | {"fc1/add": "FP16"}
    assert "group-precision" in knob_check(problem, KnobDecision(split)).rules()
    no_promise = replace(problem, promise_eligible={"fc1": False, "fc2": True})
    assert "promise-eligibility" in knob_check(no_promise, KnobDecision({o: "P7" for o in problem.ops})).rules()


def sakr_problem() -> SwingProblem:
    tasks = ("t1", "t2", "t3", "t4")
    dot = {"t1": 784, "t2": 512, "t3": 256, "t4": 128}
    f = (0.75, 0.5165, 0.3557, 0.2449, 0.1687, 0.1162, 0.08)
    e_a = {"t1": 0.02, "t2": 0.05, "t3": 0.01, "t4": 0.03}
    energy = {t: {s: (30 + 10 * s * s) * dot[t] / 128 for s in LEVELS} for t in tasks}
    q = {t: {s: sakr_cost(e_a[t], precision_bits(dot[t], f[s - 1])) for s in LEVELS} for t in tasks}
    e_w, p_m = 0.5, 0.01
    return SwingProblem(tasks, energy, q, p_m - 4.0 ** -6 * e_w, "sakr", p_m, dot, f, e_a, e_w, 7)


@pytest.mark.parametrize("backend", MILP_BACKENDS)
def test_swing_milp_reaches_the_brute_force_optimum(backend):
    problem = sakr_problem()
    solved = swing.solve(problem, config(backend))
    best = brute_force(problem)
    assert swing_check(problem, solved.decision).ok
    assert solved.result.objective == pytest.approx(swing_objective(problem, best), rel=1e-9)
    seed = seed_uniform_bits(problem)
    assert swing_check(problem, seed).ok and solved.result.objective <= swing_objective(problem, seed) + 1e-9


def test_swing_infeasibility_names_the_task():
    problem = replace(sakr_problem(), budget=1e-6)
    assert "task" in swing.diagnose(problem)


def test_swing_checker_flags_each_rule():
    problem = sakr_problem()
    d = swing.solve(problem, config()).decision
    assert "one-swing" in swing_check(problem, SwingDecision({"t1": 3})).rules()
    assert "swing-range" in swing_check(problem, SwingDecision({**d.levels, "t1": 8})).rules()
    assert "precision-budget" in swing_check(problem, SwingDecision({t: 1 for t in problem.tasks})).rules()
    assert "measured-mismatch" in swing_check(problem, SwingDecision(d.levels, 0.0, 0.5)).rules()


def test_matched_filter_swing_meets_p_m_and_saves_energy(spec):
    from solvermap.ir.workloads.approxhpvm_kernels import build_kernel

    problem = swing_problem_kernel(build_kernel("matched_filter"), spec, p_m=0.01, runs=3)
    solved = swing.solve(problem, config("highs"))
    assert swing_check(problem, solved.decision).ok
    assert solved.decision.measured_mismatch <= 0.01
    assert solved.result.objective < sum(problem.energy[t][7] for t in problem.tasks)
    assert solved.result.objective == pytest.approx(swing_objective(problem, brute_force(problem)))


@pytest.fixture(scope="module")
def dnn1_knobs_after_failure(dnn1_knob_optima):
    """The level-8 problem with its optimum marked as failed in the Monte Carlo test, and the new optimum."""
    problem, _ = dnn1_knob_optima(8)
    first = knob_mapping.solve(problem, config()).decision
    cut = replace(problem, failed=(dict(first.knobs),))
    return first, cut, exhaustive(cut)


@pytest.mark.parametrize("backend", MILP_BACKENDS)
def test_knob_milp_after_a_failed_mapping_reaches_the_exhaustive_optimum(dnn1_knobs_after_failure, backend):
    first, cut, optimum = dnn1_knobs_after_failure
    solved = knob_mapping.solve(cut, config(backend))
    assert knob_check(cut, solved.decision).ok  # includes: not at least as inaccurate as the failed mapping
    assert solved.decision.knobs != first.knobs
    assert solved.result.objective == pytest.approx(optimum, rel=1e-7)


def test_knob_checker_flags_a_mapping_dominated_by_a_failed_one(dnn1, spec, dnn1_errors):
    problem, d = _knob_valid(dnn1, spec, dnn1_errors)
    assert "failed-mapping" not in knob_check(problem, d).rules()
    assert "failed-mapping" in knob_check(replace(problem, failed=(dict(d.knobs),)), d).rules()
    more_accurate = {o: "FP32" for o in problem.ops}
    looser = replace(problem, failed=(dict(d.knobs),))
    assert "failed-mapping" not in knob_check(looser, KnobDecision(more_accurate)).rules()


def test_mapping_selection_cuts_a_failed_mapping_and_validates_the_next_cheapest():
    from solvermap.mappers.approxhpvm import MappingCandidate, select_mapping

    class P:
        ops = ("a", "b")

    noisy, safe, other = {"a": "P1", "b": "P1"}, {"a": "P3", "b": "FP16"}, {"a": "FP16", "b": "FP16"}
    pool = [MappingCandidate(1.0, 0, KnobDecision(noisy), P(), ()), MappingCandidate(3.0, 1, KnobDecision(other), P(), ())]
    resolved, validated = [], []

    def resolve(c, failed):
        resolved.append((c.index, failed))
        return MappingCandidate(2.0, c.index, KnobDecision(safe), P(), ())

    def validate(c):
        validated.append(dict(c.decision.knobs))
        return {"meets_loss_limit": c.decision.knobs != noisy}

    selection = select_mapping(pool, resolve=resolve, validate=validate, max_validations=5)
    assert validated == [noisy, safe] and resolved == [(0, (noisy,))]  # only the dominated candidate is re-solved
    assert selection.chosen.decision.knobs == safe and selection.validation["meets_loss_limit"]
    assert selection.validations == 2 and selection.failed == [noisy]


# ---------------------------------------------------------------------- joint budget variant (cost function "energy")


@pytest.fixture(scope="module")
def dnn1_joint(dnn1, spec, dnn1_errors, dnn1_profile):
    """The joint level + knob problem of dnn1 at a 2 % modelled-loss target with one failed and one shipped level
    configuration as cuts, and its exhaustive optimum."""
    from solvermap.mappers.approxhpvm.problems import joint_knob_problem, knob_levels

    groups = (("fc1/gemm", "fc1/add"), ("fc1/tanh",), ("fc2/gemm", "fc2/add"))
    need = knob_levels(dnn1_profile, dnn1_errors)
    free = joint_knob_problem(dnn1, spec, dnn1_profile, errors=dnn1_errors, gpu_groups=groups, target=0.02)
    first = knob_mapping.solve(free, config()).decision
    failed = {o: need[o][first.knobs[o]] for o in free.ops}  # the unconstrained optimum "failed" Monte Carlo
    shipped = {o: 1 for o in free.ops}
    cut = joint_knob_problem(dnn1, spec, dnn1_profile, errors=dnn1_errors, gpu_groups=groups, target=0.02,
                             failed=(failed,), shipped=(shipped,))
    return free, cut, exhaustive(free), exhaustive(cut), need, failed, shipped


@pytest.mark.parametrize("backend", MILP_BACKENDS)
def test_joint_knob_milp_reaches_the_exhaustive_optimum_under_loss_budget_and_cuts(dnn1_joint, backend):
    free, cut, free_opt, cut_opt, need, failed, shipped = dnn1_joint
    for problem, optimum in ((free, free_opt), (cut, cut_opt)):
        solved = knob_mapping.solve(problem, config(backend))
        assert knob_check(problem, solved.decision).ok
        assert solved.result.objective == pytest.approx(optimum, rel=1e-7)
    levels = {o: need[o][solved.decision.knobs[o]] for o in cut.ops}
    assert not all(levels[o] >= failed[o] for o in cut.ops) and levels != shipped
    assert cut.modelled_loss(solved.decision.knobs) <= 0.02 + 1e-12


def test_knob_checker_flags_loss_budget_and_excluded(dnn1_joint):
    free, cut, *_ = dnn1_joint
    d = knob_mapping.solve(free, config()).decision
    tight = replace(free, loss_budget=free.modelled_loss(d.knobs) / 2)
    assert "loss-budget" in knob_check(tight, d).rules()
    barred = replace(free, excluded=({o: frozenset([d.knobs[o]]) for o in free.ops},))
    assert "excluded" in knob_check(barred, d).rules() and "excluded" not in knob_check(free, d).rules()


# ---------------------------------------------------------------------- mapping selection: the rejection path


def _selection_pool():
    from solvermap.mappers.approxhpvm import MappingCandidate

    class P:
        ops = ("a", "b")

    noisy, medium = {"a": "P1", "b": "P1"}, {"a": "P3", "b": "P5"}
    pool = [MappingCandidate(1.0, 0, KnobDecision(noisy), P(), ()), MappingCandidate(2.0, 1, KnobDecision(medium), P(), ())]
    safe = MappingCandidate(9.0, -1, KnobDecision({"a": "FP32", "b": "FP32"}), P(), ())
    return pool, safe


def test_mapping_selection_ships_the_fallback_when_every_solver_mapping_fails():
    from solvermap.mappers.approxhpvm import select_mapping

    pool, safe = _selection_pool()
    validated = []

    def validate(c):
        validated.append(dict(c.decision.knobs))
        return {"meets_loss_limit": c.decision.knobs["a"] == "FP32", "pass_rate": 0.9}

    selection = select_mapping(pool, resolve=lambda c, failed: None, validate=validate, max_validations=5,
                               fallback=safe)
    assert selection.status == "fallback" and selection.chosen is safe and selection.validation["meets_loss_limit"]
    assert validated == [dict(pool[0].decision.knobs), dict(pool[1].decision.knobs), dict(safe.decision.knobs)]
    assert len(selection.failed) == 2


def test_mapping_selection_never_reports_a_failing_mapping_as_meeting_the_limit():
    from solvermap.mappers.approxhpvm import select_mapping

    pool, safe = _selection_pool()
    for fallback in (None, safe):
        selection = select_mapping(pool, resolve=lambda c, failed: c, validate=lambda c: {"meets_loss_limit": False},
                                   max_validations=2, fallback=fallback)
        assert selection.status == "loss-limit-not-met" and not selection.validation["meets_loss_limit"]
        assert selection.validations == (2 if fallback is None else 3)


def test_layer_screen_cuts_only_the_layers_that_fail_alone(dnn1, spec):
    from solvermap.hardware.approxhpvm.calibration import layer_knobs
    from solvermap.mappers.approxhpvm.layer_screen import layer_screen

    screen = layer_screen(dnn1, spec, runs=4, loss_limit=0.01, seed=0, pass_rate=0.95)
    cuts = screen(layer_knobs(dnn1, "P1-P7"))  # fc1 on P1 loses > 1 % alone; fc2 on P7 does not
    assert cuts == [layer_knobs(dnn1, "P1-FP32")] and len(screen.tested) == 2


def test_mapping_selection_adds_the_screen_cuts_after_a_failure():
    from solvermap.mappers.approxhpvm import MappingCandidate, select_mapping

    class P:
        ops = ("a", "b")

    noisy, safe = {"a": "P1", "b": "P2"}, {"a": "P3", "b": "P2"}
    layer_cut = {"a": "P1", "b": "FP32"}  # "a at P1 or less accurate, anything for b"
    pool = [MappingCandidate(1.0, 0, KnobDecision(noisy), P(), ())]
    seen_cuts = []

    def resolve(c, failed):
        seen_cuts.append(failed)
        return MappingCandidate(2.0, c.index, KnobDecision(safe), P(), ())

    selection = select_mapping(pool, resolve=resolve, validate=lambda c: {"meets_loss_limit": c.decision.knobs == safe},
                               max_validations=5, screen=lambda knobs: [layer_cut])
    assert seen_cuts == [(noisy, layer_cut)] and selection.chosen.decision.knobs == safe
