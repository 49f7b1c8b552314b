"""Merging at network sizes: a graph too large for the array is refused by counting before partitioning, and
a large VB graph is merged chunk by chunk within the PB counts."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from solvermap.errors import InfeasibleError
from solvermap.formulations import partition as formulation
from solvermap.formulations.partition.first_fit import first_fit
from solvermap.formulations.problems.partition import BinType, Item, Link, PartitionProblem, objective
from solvermap.formulations.solver import SolverConfig, Status
from solvermap.hardware.checks.partition import check
from solvermap.hardware.targets import load_target
from solvermap.ir.workloads import build
from solvermap.mappers.pipeline import Context
from solvermap.mappers.plasticine import PIPELINE, lowering, traversal

from ..backends import milp_backends


def layered_merge(layers: int, width: int, seed: int, pcus: int | None = None) -> PartitionProblem:
    """A feed-forward VB graph as partitioning leaves it: ``layers`` layers of ``width`` compute VBs (1–4
    stages, vector or integer scalar), each reading two VBs of the layer before, a memory VB (PMU only) per
    layer written by its last VB; PCUs of 6 stages (``pcus`` of them, None: one per compute VB), PMUs."""
    rng = random.Random(seed)
    items, links, feasible = [], [], set()
    for l in range(layers):
        for k in range(width):
            name = f"l{l}v{k}"
            integer = rng.random() < 0.2
            items.append(Item(name, {"stages": float(rng.randint(1, 4)), "lanes": 1.0 if integer else 16.0}))
            feasible.update({(name, "pcu"), (name, "pmu")} if integer else {(name, "pcu")})
            for src in (rng.sample(range(width), 2) if l else []):
                links.append(Link(f"l{l - 1}v{src}", name, "out", "vector"))
        memory = f"mem{l}"
        items.append(Item(memory, {"sram_bytes": 1024.0}))
        feasible.add((memory, "pmu"))
        links.append(Link(f"l{l}v{width - 1}", memory, "out", "vector"))
    pcu = BinType("pcu", {"stages": 6, "lanes": 16}, {"lanes": "max"}, inputs={"vector": 4}, outputs={"vector": 3},
                  count=pcus if pcus is not None else layers * width)
    pmu = BinType("pmu", {"stages": 4, "lanes": 1, "sram_bytes": 4096}, {"lanes": "max"}, inputs={"vector": 4},
                  outputs={"vector": 3}, count=layers * (width + 1))
    return PartitionProblem(tuple(items), (pcu, pmu), tuple(links), frozenset(feasible), acyclic=True,
                            name=f"layered{layers}x{width}")


def tight_merge(layers: int, width: int, seed: int) -> PartitionProblem:
    """:func:`layered_merge` with exactly the PCUs the first fit uses: both traversal mergers find no packing."""
    packed = first_fit(layered_merge(layers, width, seed))
    return layered_merge(layers, width, seed, pcus=Counter(packed.bin_types[b] for b in packed.bins)["pcu"])


SMALL = {"grid.columns": 1, "pcu.count": 4, "pmu.count": 4}  # a 1 x 8 array


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(formulation.SETTINGS, "chunk_items", 40)
    monkeypatch.setattr(formulation.SETTINGS, "chunk_size", 20)


def test_a_graph_too_large_for_the_array_is_refused_before_any_partition_model_is_built(monkeypatch):
    built = []
    monkeypatch.setattr(lowering, "partition_problem", lambda *a, **k: built.append("partition") or None)
    spec = load_target("plasticine", SMALL)
    workload = build("gemm", "plasticine", {"par": 16})
    ctx = Context(workload=workload, target=spec, solver=SolverConfig(time_limit_s=5))
    with pytest.raises(InfeasibleError, match=r"merge: infeasible: \d+ items fit only a pcu and need at least \d+ "
                                              r"of them .*the target has 4 \(counted before partitioning"):
        PIPELINE.run(ctx)
    assert built == []


def test_a_run_that_stops_after_partitioning_is_not_refused_for_the_merge(monkeypatch):
    spec = load_target("plasticine", SMALL)
    ctx = Context(workload=build("dotproduct", "plasticine"), target=spec, solver=SolverConfig(time_limit_s=5))
    result = PIPELINE.run(ctx, upto="partition")
    assert [r.decision for r in result.records] == ["partition"]


def test_the_relaxation_bound_is_never_above_the_pcus_a_merge_uses():
    spec = load_target("plasticine")
    from solvermap.mappers.plasticine import decomposition

    graph, _ = decomposition.decompose(build("gemm", "plasticine").ir, spec)
    problem = lowering.partition_problem(graph, spec)
    merge = lowering.merge_problem(lowering.vb_graph(graph, spec, traversal.traversal_partition(problem)), spec)
    merged = traversal.traversal_merge(merge)
    need = {t.name: n for t, _, n in formulation.exclusive_needs(lowering.merge_relaxation(graph, spec))}
    used = Counter(merged.bin_types[b] for b in merged.bins)
    assert 0 < need["pcu"] <= used["pcu"] and need["pmu"] <= used["pmu"]


def test_a_large_merge_is_solved_in_chunks_within_the_counts_and_passes_the_checker(small_chunks):
    loose = layered_merge(6, 12, seed=3)
    hint = traversal.traversal_merge(loose)
    pcus = Counter(hint.bin_types[b] for b in hint.bins)["pcu"]
    problem = layered_merge(6, 12, seed=3, pcus=pcus)  # exactly the PCUs the warm start uses
    solved = formulation.solve(problem, SolverConfig(backend="cpsat", time_limit_s=10), hint)
    assert len(solved.details["chunks"]) > 2
    report = check(problem, solved.decision)
    assert report.ok, report.violations
    assert solved.result.objective == pytest.approx(objective(problem, solved.decision))
    assert solved.result.bound <= solved.result.objective <= objective(problem, hint)
    assert solved.result.bound == pytest.approx(formulation.lower_bound(problem).cost)


@pytest.mark.parametrize("start", ["traversal", "first-fit"])
@pytest.mark.parametrize("backend", milp_backends("highs", "scip"))
def test_chunked_merge_agrees_between_cpsat_and_an_lp_backend(small_chunks, backend, start):
    # from the traversal merger's warm start, and (PCUs too few for either traversal) from the first fit
    problem = layered_merge(4, 10, seed=5) if start == "traversal" else tight_merge(4, 10, seed=5)
    hint = traversal.traversal_merge(problem)
    assert (hint is None) == (start == "first-fit")
    answers = {}
    for name in ("cpsat", backend):
        solved = formulation.solve(problem, SolverConfig(backend=name, time_limit_s=20), hint)
        assert all(c["status"] == str(Status.OPTIMAL) for c in solved.details["chunks"]), solved.details["chunks"]
        assert check(problem, solved.decision).ok
        answers[name] = solved.result.objective
    assert answers["cpsat"] == pytest.approx(answers[backend])


def test_a_slot_model_over_the_memory_cap_is_refused_before_any_variable_is_made(monkeypatch):
    from solvermap.errors import LimitError
    from solvermap.formulations.partition import slots
    from solvermap.limits import memory_cap

    made = []
    monkeypatch.setattr(slots, "_add_variables", lambda model: made.append(model))
    problem = layered_merge(6, 12, seed=3)
    with memory_cap(1e-6), pytest.raises(LimitError, match=r"slot model of 78 items x \d+ slots"):
        slots.build(problem, SolverConfig(), traversal.traversal_merge(problem))
    assert made == []


def test_the_traversal_mergers_find_no_packing_where_the_first_fit_finds_one():
    problem = tight_merge(6, 12, seed=3)
    assert traversal.traversal_merge(problem, "dfs") is None and traversal.traversal_merge(problem, "bfs") is None
    packed = first_fit(problem)
    assert check(problem, packed).ok, check(problem, packed).violations


def test_a_large_merge_without_a_warm_start_is_chunked_from_the_first_fit_and_passes_the_checker(small_chunks):
    problem = tight_merge(6, 12, seed=3)
    solved = formulation.solve(problem, SolverConfig(backend="cpsat", time_limit_s=5), None)
    assert solved.details["warm_start_source"] == "first fit" and len(solved.details["chunks"]) > 2
    assert check(problem, solved.decision).ok, check(problem, solved.decision).violations
    assert solved.result.objective == pytest.approx(objective(problem, solved.decision))
    assert solved.result.bound == pytest.approx(formulation.lower_bound(problem).cost)  # of the whole problem
    assert solved.result.bound <= solved.result.objective <= objective(problem, first_fit(problem))


def test_the_first_fit_never_joins_a_bin_that_would_close_a_quotient_cycle():
    # a → m → c: a and c fit one PCU, m only a PMU; c joining a's bin would make a cycle a|c → m → a|c
    pcu = BinType("pcu", {"stages": 6}, inputs={"vector": 4}, outputs={"vector": 4}, count=2)
    pmu = BinType("pmu", {"stages": 4}, inputs={"vector": 4}, outputs={"vector": 4}, count=1)
    items = (Item("a", {"stages": 1.0}), Item("m", {"stages": 1.0}), Item("c", {"stages": 1.0}))
    links = (Link("a", "m"), Link("m", "c"))
    problem = PartitionProblem(items, (pcu, pmu), links, frozenset({("a", "pcu"), ("m", "pmu"), ("c", "pcu")}),
                               acyclic=True, name="cycle")
    packed = first_fit(problem)
    assert packed.assignment["a"] != packed.assignment["c"] and check(problem, packed).ok


def test_the_first_fit_gives_up_when_a_type_runs_out():
    problem = layered_merge(3, 6, seed=1, pcus=2)  # far fewer PCUs than the compute VBs need
    assert first_fit(problem) is None
