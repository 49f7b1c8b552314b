"""Large clusters are solved chunk by chunk, with the delays of earlier chunks' values held fixed."""

from __future__ import annotations

import dataclasses

import pytest

from solvermap.formulations import partition as formulation
from solvermap.formulations.partition import chunks
from solvermap.formulations.problems.partition import (
    BinType,
    Item,
    Link,
    PartitionProblem,
    Retiming,
    complete,
    objective,
)
from solvermap.formulations.solver import SolverConfig, Status, available_backends
from solvermap.hardware.checks.partition import check

from . import instances

BACKENDS = [b for b in ("cpsat", "highs", "scip") if b in available_backends("milp")]


def two_readers(fixed: tuple = ()) -> PartitionProblem:
    """a reads x, b reads y and a; both fit one bin. With x and y free: one bin, no retiming. With y's
    value fixed 20 cycles after x's (L = 1, b_d = 4), 20 cycles of skew must be absorbed somewhere:
    one bin + 4 retiming bins (x waits 20), or two bins + 3 (19 split over x→a and a→b): 5 either way."""
    items = (Item("a", {"stages": 1}), Item("b", {"stages": 1}))
    links = (Link("x", "a", kind="scalar"), Link("y", "b", kind="scalar"), Link("a", "b", kind="scalar"),
             Link("b", "out", kind="scalar"))
    pcu = BinType("pcu", {"stages": 2}, inputs={"scalar": 3}, outputs={"scalar": 2})
    return PartitionProblem(items, (pcu,), links, acyclic=True, retiming=Retiming(1, 4, fixed), name="two-readers")


FIXED = ((("x", "out", ""), 0), (("y", "out", ""), 20))


@pytest.mark.parametrize("backend", BACKENDS)
def test_fixed_source_delays_cost_the_retiming_they_force(backend):
    free = formulation.solve(two_readers(), SolverConfig(backend=backend, time_limit_s=10))
    assert free.result.status == Status.OPTIMAL and free.result.objective == pytest.approx(1)
    problem = two_readers(FIXED)
    solved = formulation.solve(problem, SolverConfig(backend=backend, time_limit_s=10))
    assert solved.result.status == Status.OPTIMAL and solved.result.objective == pytest.approx(5)
    assert check(problem, solved.decision).ok, check(problem, solved.decision).violations
    sources = solved.decision.source_delays
    assert sources["y", "out", ""] - sources["x", "out", ""] == 20


def test_the_schedule_keeps_fixed_source_delays_apart():
    problem = two_readers(FIXED)
    decision = complete(problem, {"a": 0, "b": 0}, {0: "pcu"})
    assert decision.source_delays["y", "out", ""] - decision.source_delays["x", "out", ""] == 20
    assert decision.retiming_bins == 4 and check(problem, decision).ok


@pytest.mark.parametrize("retiming", [Retiming(3, 4), None], ids=["retiming", "no-retiming"])
def test_a_large_cluster_is_solved_in_chunks_no_worse_than_its_warm_start(monkeypatch, retiming):
    monkeypatch.setattr(formulation.SETTINGS, "chunk_items", 30)
    monkeypatch.setattr(formulation.SETTINGS, "chunk_size", 12)
    problem = instances.random_dag(7, n=40, retiming=retiming)
    problem = dataclasses.replace(problem, bin_types=(BinType("pcu", {"stages": 6}, inputs={"vector": 4, "scalar": 4},
                                                              outputs={"vector": 2, "scalar": 2}),))
    singletons = complete(problem, {n: k for k, n in enumerate(problem.topological_items())},
                          {k: "pcu" for k in range(len(problem.items))})
    solved = formulation.solve(problem, SolverConfig(time_limit_s=10), singletons)
    assert len(solved.details["chunks"]) > 2
    assert check(problem, solved.decision).ok, check(problem, solved.decision).violations
    assert objective(problem, solved.decision) < objective(problem, singletons)
    assert solved.result.objective == pytest.approx(objective(problem, solved.decision))
    assert solved.result.bound == pytest.approx(formulation.lower_bound(problem).cost)


def test_order_links_across_chunks_hold_in_the_joined_schedule(monkeypatch):
    """Order-only links (a path that leaves the actor and comes back) carry no value, so no chunk fixes
    a delay for them; the joined schedule must still start the later bin no earlier than the earlier."""
    monkeypatch.setattr(formulation.SETTINGS, "chunk_items", 30)
    monkeypatch.setattr(formulation.SETTINGS, "chunk_size", 12)
    base = instances.random_dag(7, n=40, retiming=Retiming(3, 4))
    order = tuple(Link(f"n{k}", f"n{k + 20}", "order", "order", order_only=True) for k in range(0, 20, 3))
    pcu = BinType("pcu", {"stages": 6}, inputs={"vector": 4, "scalar": 4}, outputs={"vector": 2, "scalar": 2})
    problem = dataclasses.replace(base, links=base.links + order, bin_types=(pcu,))
    singletons = complete(problem, {n: k for k, n in enumerate(problem.topological_items())},
                          {k: "pcu" for k in range(len(problem.items))})
    solved = formulation.solve(problem, SolverConfig(time_limit_s=10), singletons)
    assert len(solved.details["chunks"]) > 2
    assert check(problem, solved.decision).ok, check(problem, solved.decision).violations
    assert objective(problem, solved.decision) <= objective(problem, singletons)


def test_schedule_holds_rejects_a_bin_that_starts_before_its_order_predecessor():
    problem = dataclasses.replace(two_readers(), links=two_readers().links[:2] + (
        Link("a", "b", "order", "order", order_only=True), Link("b", "out", kind="scalar")))
    good = complete(problem, {"a": 0, "b": 1}, {0: "pcu", 1: "pcu"})
    assert chunks.schedule_holds(problem, good)
    early = dataclasses.replace(good, delays={0: good.delays[0], 1: good.delays[0] - 1})
    assert not chunks.schedule_holds(problem, early)
    late_value = dataclasses.replace(good, source_delays={k: v + 5 for k, v in good.source_delays.items()})
    assert not chunks.schedule_holds(problem, late_value)


def read_outside(at: int) -> PartitionProblem:
    """``two_readers`` with x fixed at 0 and b's value read outside at ``at`` (a later chunk's reader)."""
    problem = two_readers(((("x", "out", ""), 0),))
    return dataclasses.replace(problem, retiming=dataclasses.replace(problem.retiming, fixed_sinks=((("b", "out"), at),)))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_reader_outside_at_a_fixed_delay_costs_the_retiming_it_forces(backend):
    """x at 0, b read outside at 20 (L = 1, b_d = 4): 19 cycles between x's arrival and b's reader, at
    most 4 + 4 of them in the buffers of a and of b's reader. One bin at 5: the reader waits 14, 2 retiming
    bins; two bins (a at 5, b at 10 or 15): 1 retiming either way — 3 in both cases. y is free: no cost."""
    problem = read_outside(20)
    solved = formulation.solve(problem, SolverConfig(backend=backend, time_limit_s=10))
    assert solved.result.status == Status.OPTIMAL and solved.result.objective == pytest.approx(3)
    assert check(problem, solved.decision).ok, check(problem, solved.decision).violations
    # the schedule of a given partition (better of ASAP and ALAP) counts the reader's link: ASAP runs
    # the bin at 1, so the reader waits 18 cycles (3 retiming bins)
    one_bin = complete(problem, {"a": 0, "b": 0}, {0: "pcu"})
    assert one_bin.retiming == {("b", "out", -1): 3} and check(problem, one_bin).ok


def test_no_schedule_meets_a_reader_outside_that_comes_too_early():
    with pytest.raises(ValueError, match="fixed delays"):
        complete(read_outside(1), {"a": 0, "b": 1}, {0: "pcu", 1: "pcu"})  # b is ready at 2 at the earliest


def test_checker_rejects_a_decision_that_breaks_its_fixed_delays():
    problem = read_outside(20)
    good = complete(problem, {"a": 0, "b": 0}, {0: "pcu"})
    assert check(problem, good).ok
    undeclared = dataclasses.replace(good, retiming={})
    late = dataclasses.replace(good, delays={0: 20}, source_delays={("x", "out", ""): 0},
                               retiming={("x", "out", 0): 3})
    fixed_y = read_outside(20)
    fixed_y = dataclasses.replace(fixed_y, retiming=dataclasses.replace(
        fixed_y.retiming, fixed_sources=((("x", "out", ""), 0), (("y", "out", ""), 0))))
    uneven = dataclasses.replace(good, source_delays={("x", "out", ""): 0, ("y", "out", ""): 3})
    for bad_problem, bad in ((problem, undeclared), (problem, late), (fixed_y, uneven)):
        report = check(bad_problem, bad)
        assert not report.ok and any(v.rule == "fixed-delays" for v in report.violations), report.violations
