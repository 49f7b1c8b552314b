"""The partition checker: mutation tests (break one rule, expect that rule) and property tests."""

from __future__ import annotations

import dataclasses
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from solvermap.formulations import partition as formulation
from solvermap.formulations.problems.partition import (
    BinType,
    Item,
    Link,
    PartitionDecision,
    PartitionProblem,
    Retiming,
    complete,
)
from solvermap.formulations.solver import SolverConfig
from solvermap.hardware.checks.partition import check

from . import instances

PCU = BinType("pcu", {"stages": 4}, inputs={"vector": 2, "scalar": 2}, outputs={"vector": 1, "scalar": 1}, count=4)


def chain_problem(**changes) -> PartitionProblem:
    """a → b → c → d (scalars), external vectors into a and c; 4 stages per bin."""
    items = tuple(Item(n, {"stages": 2}) for n in "abcd")
    links = (Link("va", "a", kind="vector"), Link("vc", "c", kind="vector"), Link("a", "b", kind="scalar"),
             Link("b", "c", kind="scalar"), Link("c", "d", kind="scalar"), Link("d", "out", kind="scalar"))
    base = dict(items=items, bin_types=(PCU,), links=links, acyclic=True)
    base.update(changes)
    return PartitionProblem(**base)


def valid() -> PartitionDecision:
    return PartitionDecision({"a": 0, "b": 0, "c": 1, "d": 1}, {0: "pcu", 1: "pcu"})


def test_the_reference_decision_is_valid():
    assert check(chain_problem(), valid()).ok


def test_missing_item_breaks_assignment():
    d = valid()
    broken = dataclasses.replace(d, assignment={k: v for k, v in d.assignment.items() if k != "d"})
    assert "assignment" in check(chain_problem(), broken).rules()


def test_unknown_type_breaks_bin_type():
    broken = dataclasses.replace(valid(), bin_types={0: "pcu", 1: "gpu"})
    assert "bin-type" in check(chain_problem(), broken).rules()


def test_forbidden_pair_breaks_bin_type():
    problem = chain_problem(feasible=frozenset({("a", "pcu"), ("b", "pcu"), ("c", "pcu")}))
    assert "bin-type" in check(problem, valid()).rules()


def test_three_items_in_one_bin_break_capacity():
    broken = PartitionDecision({"a": 0, "b": 0, "c": 0, "d": 1}, {0: "pcu", 1: "pcu"})
    assert "capacity" in check(chain_problem(), broken).rules()


def test_max_reduced_resource_breaks_capacity_on_the_largest_demand():
    wide = BinType("pcu", {"lanes": 8}, {"lanes": "max"})
    problem = PartitionProblem((Item("a", {"lanes": 4}), Item("b", {"lanes": 16})), (wide,))
    report = check(problem, PartitionDecision({"a": 0, "b": 0}, {0: "pcu"}))
    assert report.rules() == {"capacity"}


def test_too_many_distinct_inputs_break_input_arity():
    problem = chain_problem(links=chain_problem().links + (Link("vb", "b", kind="vector"), Link("vd", "a", kind="vector")))
    assert "input-arity" in check(problem, valid()).rules()


def test_broadcast_counts_once_in_the_checker():
    links = chain_problem().links + (Link("va", "b", kind="vector"),)  # same value read twice in bin 0
    assert check(chain_problem(links=links), valid()).ok


def test_two_exported_values_break_output_arity():
    links = chain_problem().links + (Link("a", "ext", src_port="second", kind="scalar"),)
    assert "output-arity" in check(chain_problem(links=links), valid()).rules()


def test_more_bins_than_available_break_type_count():
    singletons = PartitionDecision({"a": 0, "b": 1, "c": 2, "d": 3}, {k: "pcu" for k in range(4)})
    scarce = BinType("pcu", PCU.capacity, inputs=PCU.inputs, outputs=PCU.outputs, count=3)
    assert "type-count" in check(chain_problem(bin_types=(scarce,)), singletons).rules()


def test_mixed_clusters_break_cluster():
    items = tuple(Item(i.name, i.demand, cluster="x" if i.name in "ab" else "y") for i in chain_problem().items)
    broken = PartitionDecision({"a": 0, "b": 1, "c": 1, "d": 1}, {0: "pcu", 1: "pcu"})
    assert "cluster" in check(chain_problem(items=items), broken).rules()


def test_interleaved_bins_break_acyclic():
    broken = PartitionDecision({"a": 0, "c": 0, "b": 1, "d": 1}, {0: "pcu", 1: "pcu"})
    assert "acyclic" in check(chain_problem(), broken).rules()


def test_a_cycle_through_more_bins_than_the_recursion_limit_is_found():
    n = 3 * sys.getrecursionlimit()
    names = [f"i{k}" for k in range(n)]
    links = tuple(Link(names[k], names[(k + 1) % n], kind="scalar") for k in range(n))
    wide = BinType("pcu", {"stages": 4}, inputs={"scalar": 2}, outputs={"scalar": 2})
    problem = PartitionProblem(tuple(Item(name, {"stages": 1}) for name in names), (wide,), links, acyclic=True)
    one_each = PartitionDecision({name: k for k, name in enumerate(names)}, dict.fromkeys(range(n), "pcu"))
    [violation] = [v for v in check(problem, one_each).violations if v.rule == "acyclic"]
    assert violation.message.count("->") == n


def test_loop_carried_links_do_not_count_for_acyclicity():
    links = chain_problem().links + (Link("d", "a", src_port="back", kind="scalar", forward=False),)
    problem = chain_problem(links=links, bin_types=(BinType("pcu", PCU.capacity, inputs=PCU.inputs, outputs={"scalar": 2, "vector": 1}),))
    assert check(problem, valid()).ok


def retiming_problem() -> PartitionProblem:
    return instances.retiming_chain()


def retimed() -> PartitionDecision:
    return complete(retiming_problem(), {"a": 0, "b": 1, "c": 2, "d": 3}, {k: "pcu" for k in range(4)})


def test_completed_schedule_is_valid():
    assert check(retiming_problem(), retimed()).ok


def test_early_consumer_breaks_schedule():
    d = retimed()
    broken = dataclasses.replace(d, delays={**d.delays, 1: d.delays[0]})
    assert "schedule" in check(retiming_problem(), broken).rules()


def test_missing_delay_breaks_schedule():
    d = retimed()
    broken = dataclasses.replace(d, delays={b: t for b, t in d.delays.items() if b != 3})
    assert "schedule" in check(retiming_problem(), broken).rules()


def test_undeclared_retiming_breaks_retiming():
    d = retimed()
    assert d.retiming_bins >= 1
    broken = dataclasses.replace(d, retiming={})
    assert check(retiming_problem(), broken).rules() == {"retiming"}


# ---------------------------------------------------------------------- properties


@st.composite
def small_problems(draw):
    n = draw(st.integers(2, 6))
    names = [f"n{k}" for k in range(n)]
    items = tuple(Item(name, {"stages": draw(st.integers(1, 3))}) for name in names)
    links = []
    for k in range(1, n):
        for p in sorted(set(draw(st.lists(st.integers(0, k - 1), min_size=0, max_size=2)))):
            links.append(Link(names[p], names[k], kind="scalar"))
    for k in sorted(set(draw(st.lists(st.integers(0, n - 1), max_size=3)))):
        links.append(Link(f"ext{k}", names[k], kind="vector"))
    pcu = BinType("pcu", {"stages": draw(st.integers(3, 6))}, inputs={"vector": 3, "scalar": draw(st.integers(2, 4))},
                  outputs={"scalar": draw(st.integers(1, 3))})
    retiming = Retiming(draw(st.integers(1, 3)), draw(st.integers(0, 2))) if draw(st.booleans()) else None
    return PartitionProblem(items, (pcu,), tuple(links), acyclic=True, retiming=retiming)


@settings(max_examples=25, deadline=None)
@given(small_problems())
def test_singleton_bins_pass_every_rule(problem):
    singles = complete(problem, {n: k for k, n in enumerate(problem.item_names)},
                       {k: "pcu" for k in range(len(problem.items))})
    assert check(problem, singles).ok


@settings(max_examples=15, deadline=None)
@given(small_problems())
def test_solver_decisions_pass_the_checker_and_respect_the_bound(problem):
    solved = formulation.solve(problem, SolverConfig(time_limit_s=10))
    assert solved.decision is not None and check(problem, solved.decision).ok
    assert formulation.lower_bound(problem).cost <= solved.result.objective + 1e-9


def test_two_memories_in_one_pmu_break_capacity_on_banks():
    pmu = BinType("pmu", {"sram_bytes": 262144, "banks": 16}, count=4)
    items = (Item("m0", {"sram_bytes": 1024, "banks": 16}), Item("m1", {"sram_bytes": 1024, "banks": 16}))
    report = check(PartitionProblem(items, (pmu,)), PartitionDecision({"m0": 0, "m1": 0}, {0: "pmu"}))
    assert report.rules() == {"capacity"} and "banks" in report.violations[0].message


def test_a_memory_larger_than_a_pmu_breaks_capacity_on_bytes():
    pmu = BinType("pmu", {"sram_bytes": 262144, "banks": 16})
    items = (Item("m0", {"sram_bytes": 300000, "banks": 16}),)
    report = check(PartitionProblem(items, (pmu,)), PartitionDecision({"m0": 0}, {0: "pmu"}))
    assert report.rules() == {"capacity"} and "sram_bytes" in report.violations[0].message
