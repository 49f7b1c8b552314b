"""Replicated clusters (formulations/partition/replicas.py): copies found, one copy's solution copied, and
k × the light and the shares relaxation's bounds never above the enumerated optimum of the whole, on two
backends, also where mixing copies in one bin beats k × the copy's optimum; the arity relaxation's the same way."""

from __future__ import annotations

import random

import pytest

from solvermap.formulations import partition as formulation
from solvermap.formulations.partition import strategy
from solvermap.formulations.partition.replicas import (
    arity_relaxation,
    find_copies,
    integral,
    light_relaxation,
    replicate,
    share_relaxation,
)
from solvermap.formulations.partition.two_phase import needs_retiming
from solvermap.formulations.problems.partition import BinType, Item, Link, PartitionProblem, Retiming, objective
from solvermap.formulations.solver import SolverConfig
from solvermap.hardware.checks.partition import check
from tests.backends import milp_backends

from .enumeration import optimum

# a PCU whose input arity (2 of 3 shared) is what limits mixing copies in one bin
PCU = BinType("pcu", {"stages": 4}, inputs={"vector": 3}, outputs={"vector": 3})


def body(seed: int, n: int) -> tuple[list[Item], list[Link]]:
    """One loop body: n one- or two-stage items, a random forward DAG of vector values from two external
    inputs to one external output; every item reads a value and sends one."""
    rng = random.Random(seed)
    names = [f"n{k}" for k in range(n)]
    items = [Item(name, {"stages": rng.choice([1, 1, 2])}) for name in names]
    links = [Link(f"in{k}", names[k], kind="vector") for k in rng.sample(range(n), 2)]
    for k in range(1, n):
        for p in rng.sample(range(k), min(k, rng.choice([1, 2]))):
            links.append(Link(names[p], names[k], kind="vector"))
    read = {l.dst for l in links}
    links += [Link(f"in{k}", name, kind="vector") for k, name in enumerate(names) if name not in read]
    sent = {l.src for l in links}
    links += [Link(name, "out", kind="vector") for name in names if name not in sent or name == names[-1]]
    return items, links


def replicated(seed: int, copies: int, n: int, retiming: Retiming | None = None,
               shared_input: bool = False) -> PartitionProblem:
    """``copies`` copies of :func:`body` in one cluster (the copies' external values renamed apart unless
    ``shared_input``: then every copy reads ``in0``)."""
    items, links = body(seed, n)
    all_items, all_links = [], []
    for c in range(copies):
        def rename(name: str) -> str:
            if name.startswith("in") and shared_input and name == "in0":
                return name
            return f"{name}@{c}"
        all_items += [Item(rename(i.name), i.demand) for i in items]
        all_links += [Link(rename(l.src), rename(l.dst), l.src_port, l.kind) for l in links]
    return PartitionProblem(tuple(all_items), (PCU,), tuple(all_links), acyclic=True, retiming=retiming,
                            name=f"copies{seed}x{copies}")


def test_copies_are_found_when_they_share_no_value():
    copies = find_copies(replicated(1, 3, 4))
    assert copies is not None and len(copies.names) == 3 and all(len(c) == 4 for c in copies.names)


def test_copies_reading_one_external_value_are_not_replicas():
    assert find_copies(replicated(1, 2, 4, shared_input=True)) is None


def test_copied_solution_passes_the_checker_at_copies_times_the_copy_cost():
    problem = replicated(2, 3, 4, retiming=Retiming(1, 0))
    copies = find_copies(problem)
    one = problem.subproblem(copies.names[0])
    solved = formulation.solve(one, SolverConfig(time_limit_s=10))
    whole = replicate(problem, copies, solved.decision)
    assert check(problem, whole).ok
    assert objective(problem, whole) == pytest.approx(3 * objective(one, solved.decision))


@pytest.mark.parametrize("backend", milp_backends("cpsat", "highs"))
@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_light_relaxation_bound_is_at_most_the_enumerated_optimum(seed, backend):
    problem = replicated(seed, 2, 3)
    copies = find_copies(problem)
    relaxed = light_relaxation(problem, copies)
    assert relaxed is not None
    bound = formulation.solve(relaxed, SolverConfig(backend=backend, time_limit_s=10)).result.bound
    assert 2 * bound <= optimum(problem) + 1e-9


def skip_pair(copies: int) -> PartitionProblem:
    """Copies of a → b where b also reads a's input: apart, b's read of the input waits and needs retiming."""
    items, links = [], []
    for c in range(copies):
        items += [Item(f"a@{c}", {"stages": 3}), Item(f"b@{c}", {"stages": 2})]
        links += [Link(f"in@{c}", f"a@{c}", kind="vector"), Link(f"a@{c}", f"b@{c}", kind="vector"),
                  Link(f"in@{c}", f"b@{c}", kind="vector"), Link(f"b@{c}", f"out@{c}", kind="vector")]
    return PartitionProblem(tuple(items), (PCU,), tuple(links), acyclic=True, retiming=Retiming(1, 0), name="skip")


@pytest.mark.parametrize("backend", milp_backends("cpsat", "highs"))
def test_light_relaxation_bound_holds_with_retiming(backend):
    problem = skip_pair(2)
    copies = find_copies(problem)
    bound = formulation.solve(light_relaxation(problem, copies), SolverConfig(backend=backend, time_limit_s=10))
    assert 2 * bound.result.bound <= optimum(problem) + 1e-9


@pytest.mark.parametrize("backend", milp_backends("cpsat", "highs"))
def test_replicated_solve_is_proven_at_the_enumerated_optimum(backend):
    problem = replicated(3, 2, 3)
    solved = formulation.solve(problem, SolverConfig(backend=backend, time_limit_s=20))
    assert check(problem, solved.decision).ok
    assert solved.result.objective == pytest.approx(optimum(problem))
    assert solved.result.bound <= solved.result.objective + 1e-9


def small_pairs(copies: int) -> PartitionProblem:
    """Copies of in → a → b → out, one stage each: a copy fits one bin, and two copies fit one bin together."""
    items, links = [], []
    for c in range(copies):
        items += [Item(f"a@{c}", {"stages": 1}), Item(f"b@{c}", {"stages": 1})]
        links += [Link(f"in@{c}", f"a@{c}", kind="vector"), Link(f"a@{c}", f"b@{c}", kind="vector"),
                  Link(f"b@{c}", f"out@{c}", kind="vector")]
    return PartitionProblem(tuple(items), (PCU,), tuple(links), acyclic=True, name="pairs")


def test_mixing_copies_beats_copies_times_the_copy_optimum():
    """The instance below checks the bounds where k × the copy's optimum (2) is no bound (the optimum is 1)."""
    problem = small_pairs(2)
    one = problem.subproblem(find_copies(problem).names[0])
    assert optimum(problem) == 1 and 2 * optimum(one) == 2


@pytest.mark.parametrize("backend", milp_backends("cpsat", "highs"))
def test_share_relaxation_bound_is_exact_where_copies_share_a_bin(backend):
    problem = small_pairs(2)
    relaxed = share_relaxation(problem, find_copies(problem))
    bound = formulation.solve(relaxed, SolverConfig(backend=backend, time_limit_s=10)).result.bound
    assert 2 * bound == pytest.approx(optimum(problem))


@pytest.mark.parametrize("backend", milp_backends("cpsat", "highs"))
@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_share_relaxation_bound_is_at_most_the_enumerated_optimum(seed, backend):
    problem = replicated(seed, 2, 3)
    relaxed = share_relaxation(problem, find_copies(problem))
    assert relaxed is not None
    bound = formulation.solve(relaxed, SolverConfig(backend=backend, time_limit_s=10)).result.bound
    assert 2 * bound <= optimum(problem) + 1e-9


@pytest.mark.parametrize("backend", milp_backends("cpsat", "highs"))
def test_share_relaxation_bound_holds_with_retiming(backend):
    problem = skip_pair(2)
    bound = formulation.solve(share_relaxation(problem, find_copies(problem)),
                              SolverConfig(backend=backend, time_limit_s=10))
    assert 2 * bound.result.bound <= optimum(problem) + 1e-9


def test_share_relaxation_charges_a_sharing_part_its_stages():
    """Types: the full PCU at cost 1, then 1 … 3 stages (4 − the least demand 1) at 1/4 each stage, with
    one input and one output fewer than the PCU."""
    relaxed = share_relaxation(small_pairs(2), find_copies(small_pairs(2)))
    shares = relaxed.bin_types[1:]
    assert relaxed.bin_types[0] == PCU
    assert [(t.capacity["stages"], t.cost, t.inputs["vector"], t.outputs["vector"]) for t in shares] == \
        [(1.0, 0.25, 2, 2), (2.0, 0.5, 2, 2), (3.0, 0.75, 2, 2)]


@pytest.mark.parametrize("backend", milp_backends("cpsat", "highs"))
@pytest.mark.parametrize("make", [lambda: skip_pair(1), lambda: replicated(2, 1, 4, retiming=Retiming(1, 0))],
                         ids=["skip-pair", "body"])
def test_needs_retiming_agrees_with_the_enumerated_zero_retiming_optimum(make, backend):
    problem = make()
    least, _ = needs_retiming(problem, SolverConfig(backend=backend, time_limit_s=10), None)
    assert least == (1 if optimum(problem, max_retiming=0) is None else 0)


@pytest.mark.parametrize("backend", milp_backends("cpsat", "highs"))
def test_share_relaxation_counting_the_copy_s_retiming_stays_below_the_optimum(backend):
    """A skip pair needs a retiming bin in every partition (its items never share a PCU); the shares
    relaxation told so (least_retiming = 1) bounds the two copies at most at their enumerated optimum."""
    problem = skip_pair(2)
    copies = find_copies(problem)
    config = SolverConfig(backend=backend, time_limit_s=10)
    least, _ = needs_retiming(problem.subproblem(copies.names[0]), config, None)
    assert least == 1
    bound = strategy.solve_one(share_relaxation(problem, copies), config, None, "ours", False, least_retiming=least)
    assert 2 * bound.result.bound <= optimum(problem) + 1e-9


def singles(copies: int, inputs: int = 1, outputs: int = 1) -> PartitionProblem:
    """Copies of one one-stage item reading ``inputs`` external values and sending ``outputs``."""
    items, links = [], []
    for c in range(copies):
        items.append(Item(f"a@{c}", {"stages": 1}))
        links += [Link(f"in{k}@{c}", f"a@{c}", kind="vector") for k in range(inputs)]
        links += [Link(f"a@{c}", f"out{k}@{c}", src_port=f"p{k}", kind="vector") for k in range(outputs)]
    return PartitionProblem(tuple(items), (PCU,), tuple(links), acyclic=True, name=f"singles{inputs}x{outputs}")


def test_arity_relaxation_charges_a_sharing_part_the_mean_of_its_arity_shares():
    """Types: the full PCU at cost 1, then a = 1, 2 inputs × b = 1, 2 outputs (of 3) at (a/3 + b/3)/2, with
    4 − the least demand 1 stages."""
    relaxed = arity_relaxation(small_pairs(2), find_copies(small_pairs(2)))
    assert relaxed.bin_types[0] == PCU
    assert [(t.inputs["vector"], t.outputs["vector"], t.capacity["stages"], t.cost) for t in relaxed.bin_types[1:]] == \
        [(1, 1, 3.0, pytest.approx(1 / 3)), (1, 2, 3.0, pytest.approx(0.5)), (2, 1, 3.0, pytest.approx(0.5)),
         (2, 2, 3.0, pytest.approx(2 / 3))]


@pytest.mark.parametrize("backend", milp_backends("cpsat", "highs"))
def test_arity_relaxation_bound_is_exact_where_three_copies_share_a_bin(backend):
    """Three one-input, one-output copies fill the PCU's three inputs together: k × ⅓ = the optimum 1, which
    neither the light relaxation (0) nor the shares relaxation (3 × ¼) reaches."""
    problem = singles(3)
    relaxed = arity_relaxation(problem, find_copies(problem))
    bound = formulation.solve(relaxed, SolverConfig(backend=backend, time_limit_s=10)).result.bound
    assert optimum(problem) == 1
    assert 3 * bound == pytest.approx(1.0)


@pytest.mark.parametrize("backend", milp_backends("cpsat", "highs"))
def test_arity_relaxation_prices_arity_where_the_shares_relaxation_prices_stages(backend):
    """One-stage copies with two inputs never share a PCU (3 inputs): the arity relaxation bounds three copies
    at 3 × ½ → 2, the shares relaxation at 3 × ¼ → 1; both at most the enumerated optimum 3."""
    problem = singles(3, inputs=2)
    copies = find_copies(problem)
    config = SolverConfig(backend=backend, time_limit_s=10)
    by_arity = integral(problem, 3 * formulation.solve(arity_relaxation(problem, copies), config).result.bound)
    by_stages = integral(problem, 3 * formulation.solve(share_relaxation(problem, copies), config).result.bound)
    assert (by_arity, by_stages, optimum(problem)) == (2, 1, 3)


@pytest.mark.parametrize("backend", milp_backends("cpsat", "highs"))
@pytest.mark.parametrize("seed,copies,n", [(1, 2, 3), (2, 2, 3), (3, 3, 2), (4, 3, 2)])
def test_arity_relaxation_bound_is_at_most_the_enumerated_optimum(seed, copies, n, backend):
    problem = replicated(seed, copies, n)
    relaxed = arity_relaxation(problem, find_copies(problem))
    assert relaxed is not None
    bound = formulation.solve(relaxed, SolverConfig(backend=backend, time_limit_s=10)).result.bound
    assert copies * bound <= optimum(problem) + 1e-9


@pytest.mark.parametrize("backend", milp_backends("cpsat", "highs"))
def test_arity_relaxation_bound_holds_with_retiming(backend):
    problem = skip_pair(2)
    copies = find_copies(problem)
    config = SolverConfig(backend=backend, time_limit_s=10)
    least, _ = needs_retiming(problem.subproblem(copies.names[0]), config, None)
    bound = strategy.solve_one(arity_relaxation(problem, copies), config, None, "ours", False, least_retiming=least)
    assert 2 * bound.result.bound <= optimum(problem) + 1e-9
