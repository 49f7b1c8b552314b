"""Symmetry breaking between interchangeable items (formulations/partition/symmetry.py): the automorphisms
found are automorphisms, an item that reads a value the others do not is left alone, a warm start moved
onto the constraints keeps its objective and passes the checker, and the slot model with the constraints
keeps the enumerated optimum (with and without retiming) on two backends."""

from __future__ import annotations

import dataclasses

import pytest

from solvermap.formulations import partition as formulation
from solvermap.formulations.partition.settings import SETTINGS
from solvermap.formulations.partition.slots import build, canonical_hint, item_order
from solvermap.formulations.partition.symmetry import canonical, labelled_graph, symmetry
from solvermap.formulations.problems.partition import (
    BinType,
    Item,
    Link,
    PartitionProblem,
    Retiming,
    complete,
    objective,
)
from solvermap.formulations.solver import SolverConfig, Status
from solvermap.hardware.checks.partition import check
from tests.backends import milp_backends

from .enumeration import optimum
from .test_partition_replicas import replicated

@pytest.fixture(autouse=True)
def breaking_on(monkeypatch):
    """The breaking is off by default (settings.item_symmetry): these tests switch it on."""
    monkeypatch.setattr(SETTINGS, "item_symmetry", True)


PCU = BinType("pcu", {"stages": 3}, inputs={"vector": 2, "token": 1}, outputs={"vector": 2})


def tree(retiming: Retiming | None = None, extra: Link | None = None) -> PartitionProblem:
    """Two interchangeable branches a_k → b_k (reading one external value) into a root r: the swap of the
    branches is the only non-trivial automorphism. ``extra``: one more link."""
    items = [Item("a0", {"stages": 1}), Item("b0", {"stages": 2}), Item("a1", {"stages": 1}),
             Item("b1", {"stages": 2}), Item("r", {"stages": 1})]
    links = [Link("in", "a0", kind="vector"), Link("in", "a1", kind="vector"),
             Link("a0", "b0", kind="vector"), Link("a1", "b1", kind="vector"),
             Link("b0", "r", kind="vector"), Link("b1", "r", kind="vector"), Link("r", "out", kind="vector")]
    if extra is not None:
        links.append(extra)
    return PartitionProblem(tuple(items), (PCU,), tuple(links), acyclic=True, retiming=retiming, name="tree")


def _automorphic(problem: PartitionProblem, sigma: dict[str, str]) -> bool:
    g = labelled_graph(problem)
    full = {n: sigma.get(n, n) for n in g.nodes}
    return sorted((full[u], full[v], l) for u, v, l in g.edges(data="l")) == sorted(g.edges(data="l"))


def test_the_swap_of_two_branches_is_found_and_is_an_automorphism():
    problem = tree()
    sym = symmetry(problem, item_order(problem))
    assert sym is not None and sym.complete
    assert len(sym.pairs) == 1
    (i, j), = sym.pairs
    assert {i, j} in ({"a0", "a1"}, {"b0", "b1"})
    assert _automorphic(problem, sym.maps[i, j])


def test_an_item_reading_a_value_the_other_does_not_is_not_interchangeable():
    problem = tree(extra=Link("go", "a0", kind="vector"))
    assert symmetry(problem, item_order(problem)).pairs == []


def test_a_backward_token_no_bin_runs_out_of_does_not_break_the_symmetry():
    """(kmeans' loop token into one copy): one token value, every bin takes one: its link changes no row."""
    assert len(symmetry(tree(extra=Link("go", "a0", kind="token", forward=False)), item_order(tree())).pairs) == 1
    problem = tree(extra=Link("go", "a0", kind="token", forward=False))
    problem = dataclasses.replace(problem, links=problem.links + (Link("stop", "r", kind="token", forward=False),))
    assert symmetry(problem, item_order(problem)).pairs == []  # two tokens fill a bin's one token input: kept


def test_copies_sharing_an_input_are_interchangeable():
    problem = replicated(3, 3, 3, shared_input=True)  # three copies that all read in0: not replicas
    sym = symmetry(problem, item_order(problem))
    assert sym.pairs and all(_automorphic(problem, sym.maps[p]) for p in sym.pairs)


def test_no_breaking_when_switched_off_or_too_large(monkeypatch):
    problem = tree()
    monkeypatch.setattr(SETTINGS, "item_symmetry", False)
    assert symmetry(problem, item_order(problem)) is None
    monkeypatch.setattr(SETTINGS, "item_symmetry", True)
    monkeypatch.setattr(SETTINGS, "symmetry_items", 4)
    assert symmetry(problem, item_order(problem)) is None


def test_a_warm_start_moved_onto_the_constraints_keeps_its_objective_and_passes_the_checker():
    problem = replicated(2, 3, 3, retiming=Retiming(1, 0), shared_input=True)  # (no enumeration: 9 items)
    order = item_order(problem)
    sym = symmetry(problem, order)
    # every copy in its own bins, the copies' bins in reverse order: violates the breaking
    names = problem.item_names
    copies = sorted({n.split("@")[1] for n in names}, reverse=True)
    bins = {c: k for k, c in enumerate(copies)}
    start = complete(problem, {n: bins[n.split("@")[1]] for n in names}, dict.fromkeys(range(len(copies)), "pcu"))
    start = canonical_hint(problem, start, order)
    moved = canonical(problem, sym, start)
    assert all(moved.assignment[i] <= moved.assignment[j] for i, j in sym.pairs)
    assert check(problem, moved).ok
    assert objective(problem, moved) == pytest.approx(objective(problem, start))


def test_the_slot_model_holds_the_breaking_rows():
    problem = tree()
    built = build(problem, SolverConfig(time_limit_s=5))
    assert built.symmetry is not None and built.symmetry.pairs
    assert any("<=" in row.name for row in built.builder.groups["symmetry"])


CASES = {
    "tree": tree,
    "tree-retime": lambda: tree(Retiming(1, 0)),
    "shared-copies": lambda: replicated(1, 2, 3, shared_input=True),
}


@pytest.mark.parametrize("backend", milp_backends("cpsat", "highs"))
@pytest.mark.parametrize("case", sorted(CASES))
def test_breaking_keeps_the_enumerated_optimum(case, backend):
    problem = CASES[case]()
    assert symmetry(problem, item_order(problem)).pairs  # the case has symmetry to break
    solved = formulation.solve(problem, SolverConfig(backend=backend, time_limit_s=20))
    assert solved.result.status == Status.OPTIMAL
    assert check(problem, solved.decision).ok
    assert solved.result.objective == pytest.approx(optimum(problem))
