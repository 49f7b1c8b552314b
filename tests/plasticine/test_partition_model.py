"""The shared partition / merge / bin-packing model: backends agree with enumerated optima."""

from __future__ import annotations

import time

import pytest

from solvermap.formulations import partition as formulation
from solvermap.formulations.partition import solves, two_phase
from solvermap.formulations.problems.partition import (
    BinType,
    Item,
    Link,
    PartitionProblem,
    Retiming,
    complete,
    objective,
)
from solvermap.formulations.decision import Solved
from solvermap.formulations.solver import SolveResult, SolverConfig, Status, available_backends, solve_milp
from solvermap.formulations.strategy import MIN_SOLVE_WORK
from solvermap.hardware.checks.partition import check
from tests.backends import PYOMO, milp_backends

from . import instances
from .enumeration import optimum

BACKENDS = [b for b in ("cpsat", "highs", "scip") if b in available_backends("milp")]
AGREEMENT = milp_backends("cpsat", "highs", "scip", *PYOMO)  # the enumerated-optimum tests
CASES = {
    "plain": instances.plain_packing,
    "broadcast": instances.broadcast_dag,
    "random1": lambda: instances.random_dag(1),
    "random2": lambda: instances.random_dag(2),
    "random3": lambda: instances.random_dag(3),
    "retime-chain": instances.retiming_chain,
    "random-retime": lambda: instances.random_dag(9, n=4, retiming=Retiming(1, 0)),
    "merge": instances.merge_types,
    "traffic": instances.traffic_packing,
    "crossing": instances.crossing_pairs,
}
KNOWN: dict[str, float] = {}


def known_optimum(name: str) -> float:
    if name not in KNOWN:
        KNOWN[name] = optimum(CASES[name]())
    return KNOWN[name]


def test_plain_packing_optimum_is_three_by_enumeration():
    assert known_optimum("plain") == 3


@pytest.mark.parametrize("backend", AGREEMENT)
@pytest.mark.parametrize("case", sorted(CASES))
def test_backend_reaches_the_enumerated_optimum(case, backend):
    problem = CASES[case]()
    solved = formulation.solve(problem, SolverConfig(backend=backend, time_limit_s=30))
    assert solved.result.status == Status.OPTIMAL
    assert check(problem, solved.decision).ok, check(problem, solved.decision).violations
    assert objective(problem, solved.decision) == pytest.approx(known_optimum(case))
    assert solved.result.objective == pytest.approx(known_optimum(case))
    assert solved.result.bound == pytest.approx(known_optimum(case))


@pytest.mark.parametrize("case", ["broadcast", "random1", "random2", "retime-chain"])
def test_literal_table42_variant_reaches_the_same_optimum(case):
    problem = CASES[case]()
    solved = formulation.solve(problem, SolverConfig(backend="cpsat", time_limit_s=30), variant="table42")
    assert solved.result.status == Status.OPTIMAL
    assert check(problem, solved.decision).ok
    assert objective(problem, solved.decision) == pytest.approx(known_optimum(case))


def test_retiming_chain_needs_retiming_bins():
    problem = instances.retiming_chain()
    solved = formulation.solve(problem, SolverConfig(time_limit_s=30))
    assert solved.decision.retiming_bins >= 1
    assert known_optimum("retime-chain") == 4 + solved.decision.retiming_bins


def test_warm_start_never_ends_worse_than_the_hint():
    problem = instances.random_dag(4, n=6)
    singletons = complete(problem, {n: k for k, n in enumerate(problem.item_names)},
                          {k: "pcu" for k in range(len(problem.items))})
    solved = formulation.solve(problem, SolverConfig(time_limit_s=30), singletons)
    assert objective(problem, solved.decision) <= objective(problem, singletons)


def test_broadcast_counts_once_toward_input_arity():
    # three items read the same external value: together in one bin they use one vector input
    items = tuple(Item(n, {"stages": 1}) for n in "abc")
    links = tuple(Link("x", n, kind="vector") for n in "abc")
    pcu = BinType("pcu", {"stages": 3}, inputs={"vector": 1})
    problem = PartitionProblem(items, (pcu,), links, acyclic=True)
    solved = formulation.solve(problem, SolverConfig(time_limit_s=10))
    assert len(solved.decision.bins) == 1 and check(problem, solved.decision).ok


def test_clusters_are_solved_separately_with_the_same_optimum():
    a = instances.random_dag(5, n=5)
    items = tuple(Item(i.name, i.demand, cluster="left" if k < 3 else "right") for k, i in enumerate(a.items))
    problem = PartitionProblem(items, a.bin_types, a.links, acyclic=True)
    separate = formulation.solve(problem, SolverConfig(time_limit_s=30))
    assert separate.details.get("components") and len(separate.details["components"]) == 2
    assert separate.result.status == Status.OPTIMAL
    assert check(problem, separate.decision).ok
    assert objective(problem, separate.decision) == pytest.approx(optimum(problem))


def test_lower_bound_never_exceeds_the_optimum():
    for name in ("plain", "broadcast", "random1", "random2", "random3", "merge"):
        problem = CASES[name]()
        assert formulation.lower_bound(problem).cost <= known_optimum(name) + 1e-9


def test_diagnose_names_the_node_and_the_limit():
    items = (Item("wide", {"stages": 1}),)
    links = tuple(Link(f"v{k}", "wide", kind="vector") for k in range(5))  # external values
    pcu = BinType("pcu", {"stages": 6}, inputs={"vector": 4})
    reason = formulation.diagnose(PartitionProblem(items, (pcu,), links))
    assert reason is not None and "'wide'" in reason and "5 vector inputs" in reason and "has 4" in reason


def test_unknown_variant_is_a_config_error():
    from solvermap.errors import ConfigError

    with pytest.raises(ConfigError):
        formulation.solve(instances.plain_packing(), SolverConfig(), variant="nope")


def test_diagnose_names_a_type_whose_count_is_too_small():
    items = tuple(Item(f"op{k}", {"stages": 4}) for k in range(5))
    pcu = BinType("pcu", {"stages": 6}, count=3)
    reason = formulation.diagnose(PartitionProblem(items, (pcu,)))
    assert reason is not None and "only a pcu" in reason and "has 3" in reason


@pytest.mark.parametrize("backend", BACKENDS)
def test_cycle_cuts_turn_the_cyclic_cover_into_the_acyclic_optimum(backend):
    problem = instances.crossing_pairs()
    columns = formulation.convex_bins(problem)
    config = SolverConfig(backend=backend, time_limit_s=20)
    plain = solve_milp(formulation.build_columns(problem, config, columns=columns).builder, config)
    assert plain.result.objective == pytest.approx(2)  # the cover alone: {a1, a2} {b1, b2}, a cycle
    solved = solves.solve_columns(problem, config, None, False, columns, None)
    assert solved.result.status == Status.OPTIMAL and solved.result.objective == pytest.approx(3)
    assert check(problem, solved.decision).ok and solved.details["cut_rounds"][0]["cycles"] >= 1


@pytest.mark.parametrize("case", ["random-retime", "retime-chain"])
def test_same_config_gives_the_same_partition_on_a_slower_clock(case, monkeypatch):
    """Deterministic configs split the budget between phases by reported work, not by the wall clock."""
    problem = CASES[case]()
    config = SolverConfig(backend="cpsat", time_limit_s=1.0, seed=0)
    budgets: list[float] = []
    real_solve = solves.solve_milp

    def recording(builder, cfg, **kwargs):
        budgets.append(cfg.time_limit_s)
        return real_solve(builder, cfg, **kwargs)

    monkeypatch.setattr(solves, "solve_milp", recording)
    first = formulation.solve(problem, config)
    first_budgets, budgets[:] = list(budgets), []
    real = time.perf_counter
    origin = real()
    monkeypatch.setattr(time, "perf_counter", lambda: origin + 1.5 * (real() - origin))  # a 1.5× slower machine
    second = formulation.solve(problem, config)
    assert len(first_budgets) >= 2  # the budget was split between solves
    assert budgets == first_budgets
    assert second.decision == first.decision
    assert second.result.objective == first.result.objective and second.result.bound == first.result.bound
    assert second.details["work"] == first.details["work"] <= config.time_limit_s + MIN_SOLVE_WORK + 1e-9


ZERO_RETIMING_CASES = {
    "retime-chain": instances.retiming_chain,  # the skip link always waits: no zero-retiming partition
    "random-retime": CASES["random-retime"],  # likewise (buffer depth 0); the joint optimum is 4
    "random-retime-depth1": lambda: instances.random_dag(9, n=4, retiming=Retiming(1, 1)),
    "random7-retime": lambda: instances.random_dag(7, n=4, retiming=Retiming(1, 0)),
    "two-skips": instances.two_skips,
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", sorted(ZERO_RETIMING_CASES))
def test_zero_retiming_model_reaches_the_enumerated_zero_retiming_optimum(case, backend):
    """The retiming-capped model of phase B with cap 0 (no retiming variables, no big-M) is exact."""
    problem = ZERO_RETIMING_CASES[case]()
    expected = optimum(problem, max_retiming=0)
    config = SolverConfig(backend=backend, time_limit_s=20)
    built = formulation.build(problem, config, slots=len(problem.items), max_retiming=0)
    solution = solve_milp(built.builder, config)
    if expected is None:
        assert solution.result.status == Status.INFEASIBLE
        return
    assert solution.result.status == Status.OPTIMAL
    decision = formulation.decode(problem, built, solution)
    assert decision.retiming_bins == 0 and check(problem, decision).ok
    assert objective(problem, decision) == pytest.approx(expected)


def _joint_without_proof(monkeypatch) -> None:
    """Phase B's uncapped joint model returns its warm start unproven, as when its share of the budget runs
    out (blackscholes), so that the capped steps after it run."""
    real = solves.solve_slots

    def solve_slots(problem, config, hint, variant, explain, **kwargs):
        if kwargs.get("max_retiming") is None and kwargs.get("slots") is None and problem.retiming is not None:
            return Solved(SolveResult(Status.FEASIBLE, objective(problem, hint), 0.0),
                                      hint, [], {})
        return real(problem, config, hint, variant, explain, **kwargs)

    monkeypatch.setattr(two_phase, "solve_slots", solve_slots)


def _one_bin_each(problem: PartitionProblem):
    names = [i.name for i in problem.items]
    return complete(problem, {n: k for k, n in enumerate(names)}, dict.fromkeys(range(len(names)), "pcu"))


@pytest.mark.parametrize("backend", BACKENDS)
def test_fewest_bins_step_bounds_the_solutions_with_more_bins(backend, monkeypatch):
    """After the zero-retiming model (infeasible: every solution has ≥ 1 retiming bin), the step on phase
    A's 3 bins of slots with at most 1 retiming bin (what can still beat the incumbent 3 + 2) is
    infeasible too; solutions outside it have ≥ 2 retiming bins (≥ 3 + 2) or ≥ 4 bins (≥ 4 + 1): the
    optimum 5 is proven there, without the step on the incumbent's 5 slots."""
    _joint_without_proof(monkeypatch)
    problem = instances.two_skips()
    solved = formulation.solve(problem, SolverConfig(backend=backend, time_limit_s=10), _one_bin_each(problem),
                               retiming_search="slots")
    assert solved.result.status == Status.OPTIMAL and solved.result.objective == pytest.approx(optimum(problem)) == 5
    assert check(problem, solved.decision).ok
    phases = [(p["phase"], p["status"]) for p in solved.details["phases"]]
    assert phases[2:] == [("B (retiming <= 0)", "infeasible"), ("B (retiming <= 1, 3 bins)", "infeasible")]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", sorted(ZERO_RETIMING_CASES))
def test_capped_steps_reach_the_enumerated_joint_optimum(case, backend, monkeypatch):
    """The capped steps alone (the joint model proving nothing) still end at the enumerated optimum, with
    every bound they claim below it."""
    _joint_without_proof(monkeypatch)
    problem = ZERO_RETIMING_CASES[case]()
    solved = formulation.solve(problem, SolverConfig(backend=backend, time_limit_s=10), _one_bin_each(problem),
                               retiming_search="slots")
    expected = optimum(problem)
    assert solved.result.bound <= expected + 1e-9 and check(problem, solved.decision).ok
    assert solved.result.status == Status.OPTIMAL and solved.result.objective == pytest.approx(expected)


@pytest.mark.parametrize("search", ["slots", "columns"])
@pytest.mark.parametrize("backend", milp_backends("cpsat", "highs"))
def test_types_of_different_cost_reach_the_enumerated_optimum(backend, search):
    """Phase A's cheapest partition is two small bins (0.8) whose skip link needs a retiming bin (1.8);
    one large bin (1.0) is the joint optimum. Phase A's cost proves at least 0.8 / 1.0 (the dearest
    type) bins, not 0.8 / 0.4 (the cheapest): a floor of 2 bins would lose the optimum."""
    large = BinType("large", {"stages": 2}, inputs={"vector": 3}, outputs={"vector": 3}, cost=1.0)
    small = BinType("small", {"stages": 1}, inputs={"vector": 3}, outputs={"vector": 3}, cost=0.4)
    problem = PartitionProblem(
        (Item("a", {"stages": 1}), Item("b", {"stages": 1})), (large, small),
        (Link("in", "a"), Link("a", "b"), Link("in", "b"), Link("b", "out")),
        acyclic=True, retiming=Retiming(1, 0), name="two-costs")
    solved = formulation.solve(problem, SolverConfig(backend=backend, time_limit_s=10), retiming_search=search)
    assert check(problem, solved.decision).ok
    assert solved.result.objective == pytest.approx(optimum(problem)) == pytest.approx(1.0)
    assert solved.result.bound <= 1.0 + 1e-9
