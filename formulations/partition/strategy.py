"""How a partition problem is solved (the strategy; the models are in :mod:`.slots`, :mod:`.columns`,
:mod:`.delay_relaxation`, :mod:`.layers`, :mod:`.table42`).

Decomposition  clusters solve independently when no bin type has a finite count (each gets an equal share
               of what is left of the budget); a cluster of isomorphic copies that share no value (a
               parallelization factor) by one copy and the light relaxation (:func:`solve_copies`,
               :mod:`.replicas`); a large acyclic cluster in chunks (:mod:`.chunks`) of the warm start, or
               without one of the constructive first fit (:mod:`.first_fit`); a retiming
               problem in two phases (:mod:`.two_phase`); else the slot model, then (acyclic, at most
               ``settings.column_budget`` convex bins) the column model with cycle cuts, then the slot model
               with the proven bin count (:func:`~.solves.solve_model`).
Large          above ``settings.variable_budget`` item × slot pairs each item is restricted to slots within a
               window of its warm-start slot; only the combinatorial lower bound is then reported.
Budget         ``time_limit_s`` is one :class:`~solvermap.formulations.strategy.Budget` of deterministic work
               split between clusters, phases, models and cut rounds; every solve is charged the work its
               backend reports, never the wall clock, so the same config gives the same partition on any load.
"""

from __future__ import annotations

import time
from typing import Any

from solvermap.errors import ConfigError
from solvermap.formulations.decision import Solved, combine
from solvermap.formulations.partition.bounds import diagnose, lower_bound
from solvermap.formulations.partition.chunks import chunk_groups, restrict, solve_chunked
from solvermap.formulations.partition.columns import convex_bins
from solvermap.formulations.partition.first_fit import first_fit
from solvermap.formulations.partition.replicas import (
    Copies,
    find_copies,
    integral,
    light_relaxation,
    replicate,
    retyped,
    share_relaxation,
)
from solvermap.formulations.partition.settings import SETTINGS
from solvermap.formulations.partition.solves import solve_model, work_of
from solvermap.formulations.partition.two_phase import RETIMING_SEARCHES, by_columns, needs_retiming, solve_two_phase
from solvermap.formulations.problems.partition import PartitionDecision, PartitionProblem, objective
from solvermap.formulations.solver import SolveResult, SolverConfig, Status, relative_gap
from solvermap.formulations.strategy import Budget, sequence

NAME = "partition"
KIND = "milp"
VARIANTS = ("ours", "table42")


def solve_one(problem: PartitionProblem, config: SolverConfig, hint: PartitionDecision | None, variant: str,
              explain: bool, *, use_columns: bool = True, search: str = "auto",
              use_copies: bool = True, least_retiming: int = 0) -> Solved[PartitionDecision]:
    """One cluster: by its copies when replicated (:func:`solve_copies`), in chunks when large, in two
    phases with retiming, else :func:`~.solves.solve_model`."""
    if variant == "ours" and use_copies:
        copies = find_copies(problem)
        if copies is not None:
            return solve_copies(problem, config, hint, copies, explain, search)
    if variant == "ours" and problem.acyclic and len(problem.items) > SETTINGS.chunk_items \
            and len(problem.clusters()) == 1:
        # without a warm start (no baseline packs it), the constructive first fit gives the chunks theirs
        start = hint if hint is not None else first_fit(problem)
        chunks = chunk_groups(problem, start) if start is not None else None
        if chunks is not None:
            solved = solve_chunked(problem, config, start, chunks, explain, solve_one)
            solved.details["warm_start_source"] = "hint" if hint is not None else "first fit"
            return solved
    # the enumeration is bounded by settings.column_nodes (deterministic); the wall clock only backs it up
    wall = config.wall_limit()
    deadline = time.perf_counter() + wall if wall is not None else None
    columns = (lambda: convex_bins(problem, deadline=deadline)) \
        if variant == "ours" and problem.acyclic and use_columns else None
    if variant == "ours" and problem.retiming is not None and problem.weights.retiming > 0 and problem.weights.bins > 0:
        return solve_two_phase(problem, config, hint, explain, columns, search, least_retiming)
    return solve_model(problem, config, hint, variant, explain, columns=columns)


def solve(problem: PartitionProblem, config: SolverConfig, hint: PartitionDecision | None = None, *,
          variant: str = "ours", explain: bool = True, retiming_search: str = "auto") -> Solved[PartitionDecision]:
    """Solve ``problem``; clusters are solved one by one when no bin type has a finite count, and an
    acyclic cluster of more than ``settings.chunk_items`` items in chunks (:func:`solve_chunked`). ``retiming_search``
    picks phase B of retiming problems (:func:`by_columns`)."""
    if variant not in VARIANTS:
        raise ConfigError(f"unknown partition variant {variant!r}; choose one of {', '.join(VARIANTS)}")
    by_columns(retiming_search, config)  # (validates the name)
    clusters = problem.clusters()
    separable = len(clusters) > 1 and all(t.count is None for t in problem.bin_types)
    if not separable:
        return solve_one(problem, config, hint, variant, explain, search=retiming_search)
    budget = Budget(config)
    names = sorted(clusters, key=lambda c: (len(clusters[c]), c))
    results: list[SolveResult] = []
    parts: list[tuple[list[str], PartitionDecision]] = []
    details: dict[str, Any] = {"components": [], "variant": variant, "work": 0.0}
    lower = 0.0
    for k, c in enumerate(names):
        members = clusters[c]
        sub = problem.subproblem(members, f"{problem.name}/{c}")
        sub_config = config
        if config.time_limit_s is not None:
            sub_config = budget.share(1.0 / (len(names) - k))
        solved = solve_one(sub, sub_config, restrict(hint, members, {c}), variant, explain, search=retiming_search)
        budget.charge(work_of(solved))
        results.append(solved.result)
        details["components"].append({"cluster": c, "items": len(members), "status": str(solved.result.status),
                                      "objective": solved.result.objective, "bound": solved.result.bound,
                                      "solve_seconds": solved.result.solve_seconds,
                                      "lower_bound": solved.details.get("lower_bound", {}).get("bins")})
        certified = problem.weights.bins * lower_bound(sub).cost
        if solved.decision is None:
            fallback = restrict(hint, members, {c})
            if fallback is None or solved.result.status == Status.INFEASIBLE:
                result = combine(results, solved.result)
                return Solved(result, None, [f"cluster {c}: {g}" for g in solved.explanation], details)
            solved_decision, bound = fallback, certified
        else:
            solved_decision = solved.decision
            bound = solved.result.bound if solved.result.bound is not None else certified
        parts.append((members, solved_decision))
        lower += bound
        details["work"] = budget.elapsed()
    decision = _join(problem, parts)
    value = objective(problem, decision)
    statuses = [r.status for r in results]
    status = Status.OPTIMAL if all(s == Status.OPTIMAL for s in statuses) else Status.FEASIBLE
    final = SolveResult(status, value, min(lower, value), relative_gap(value, min(lower, value)),
                        backend=results[-1].backend, solver_version=results[-1].solver_version,
                        limit_reached=any(r.limit_reached for r in results),
                        message=f"{len(names)} clusters solved separately")
    return Solved(combine(results, final), decision, [], details)


def solve_copies(problem: PartitionProblem, config: SolverConfig, hint: PartitionDecision | None, copies: Copies,
                 explain: bool, search: str) -> Solved[PartitionDecision]:
    """A replicated cluster (:mod:`.replicas`): copy 0 solved alone (``settings.copy_share`` of the budget)
    and mapped onto every copy, a candidate; k × the certified bound of the light relaxation
    (``settings.light_share`` of what is left), a bound of the whole, then with the gap open that of the
    shares relaxation (``settings.share_share``), warm-started from the copy's partition, each bin of the
    cheapest type it fits, after a probe (``settings.retiming_probe_share``) whether every partition of a
    copy needs retiming (then the relaxation counts one retiming bin on top of its bins); then, with the
    gap open, the whole
    cluster warm-started from the best candidate on what is left, whose bound also counts."""
    budget = Budget(config)
    clusters = {i.cluster for i in problem.items}
    one = problem.subproblem(copies.names[0], f"{problem.name}[copy 0]")
    first = solve_one(one, budget.share(SETTINGS.copy_share), restrict(hint, copies.names[0], clusters), "ours",
                      explain, search=search)
    budget.charge(work_of(first))
    results = [first.result]
    details: dict[str, Any] = {"copies": len(copies.names), "copy_items": len(copies.names[0]),
                               "copy": {"status": str(first.result.status), "objective": first.result.objective,
                                        "bound": first.result.bound}}
    candidates = [d for d in (hint, replicate(problem, copies, first.decision) if first.decision else None)
                  if d is not None]
    if not candidates:
        whole = solve_one(problem, budget.share(), hint, "ours", explain, search=search, use_copies=False)
        whole.details["work"] = budget.elapsed() + work_of(whole)
        return whole
    best = min(candidates, key=lambda d: objective(problem, d))  # on a tie the warm start
    combinatorial = lower_bound(problem)
    lower = problem.weights.bins * combinatorial.cost
    value = objective(problem, best)
    messages = [f"{len(copies.names)} copies of {len(copies.names[0])} items: one solved and copied"]
    # the light relaxation, then (gap still open) the shares relaxation: each bound k × its certified bound;
    # before the second, whether every partition of a copy needs retiming: a relaxation's partitions are
    # partitions of the copy (its bin types fit inside the PCU) with the same retiming, so its two phases
    # may count that retiming on top of their bins (the shares relaxation's bins alone are cheap)
    least = None
    for k, (name, relax, share) in enumerate((("light", light_relaxation, SETTINGS.light_share),
                                              ("share", share_relaxation, SETTINGS.share_share))):
        relaxed = relax(problem, copies)
        if relaxed is None or value <= lower + 1e-9 or budget.exhausted():
            continue
        if k > 0 and least is None and problem.retiming is not None and problem.weights.retiming > 0:
            least, work = needs_retiming(one, budget.share(SETTINGS.retiming_probe_share), first.decision)
            budget.charge(work)
            details["copy_needs_retiming"] = bool(least)
        warm = retyped(relaxed, first.decision) if first.decision is not None else None
        solved = solve_one(relaxed, budget.share(share), warm, "ours", False, search=search,
                           least_retiming=least or 0)
        budget.charge(work_of(solved))
        results.append(solved.result)
        details[f"{name}_relaxation"] = {"status": str(solved.result.status), "objective": solved.result.objective,
                                         "bound": solved.result.bound}
        if solved.result.bound is not None and solved.result.status != Status.INFEASIBLE:
            lower = max(lower, integral(problem, len(copies.names) * solved.result.bound))
            messages.append(f"{name} relaxation")
    if value > lower + 1e-9 and not budget.exhausted():
        whole = solve_one(problem, budget.share(), best, "ours", explain, search=search, use_copies=False)
        budget.charge(work_of(whole))
        results.append(whole.result)
        details["whole"] = {"status": str(whole.result.status), "objective": whole.result.objective,
                            "bound": whole.result.bound}
        if whole.decision is not None and objective(problem, whole.decision) < value - 1e-9:
            best, value = whole.decision, objective(problem, whole.decision)
        if whole.result.bound is not None and whole.result.status != Status.INFEASIBLE:
            lower = max(lower, whole.result.bound)
        messages.append("whole cluster")
    details["work"] = budget.elapsed()
    details["lower_bound"] = {"bins": combinatorial.bins, "reason": combinatorial.reason}
    return Solved(sequence(results, value, lower, ", then ".join(messages)), best, [], details)


def _join(problem: PartitionProblem, parts: list[tuple[list[str], PartitionDecision]]) -> PartitionDecision:
    """Concatenate per-cluster decisions into one numbering (bins of cluster k after those of k−1)."""
    assignment: dict[str, int] = {}
    types: dict[int, str] = {}
    delays: dict[int, int] = {}
    sources: dict[tuple[str, str], int] = {}
    retiming: dict[tuple[str, str, int], int] = {}
    offset = 0
    position = {n: k for k, n in enumerate(problem.item_names)}
    for members, d in sorted(parts, key=lambda p: min(position[n] for n in p[0])):
        bins = sorted(set(d.assignment.values()))
        renumber = {b: offset + k for k, b in enumerate(bins)}
        for n, b in d.assignment.items():
            assignment[n] = renumber[b]
        for b in bins:
            types[renumber[b]] = d.bin_types[b]
            if b in d.delays:
                delays[renumber[b]] = d.delays[b]
        home = {problem.item(n).cluster for n in members}
        sources.update({k: t for k, t in d.source_delays.items() if k[2] in home})
        for (s, p, b), v in d.retiming.items():
            retiming[s, p, renumber[b]] = v
        offset += len(bins)
    if problem.retiming is None:
        return PartitionDecision(assignment, types)
    return PartitionDecision(assignment, types, delays, sources, retiming)


class Variant:
    """The formulation with a fixed variant, for :func:`~solvermap.mappers.pipeline.run_decision`."""

    NAME = NAME
    KIND = KIND

    def __init__(self, variant: str = "ours", retiming_search: str = "auto") -> None:
        if variant not in VARIANTS:
            raise ConfigError(f"unknown partition variant {variant!r}; choose one of {', '.join(VARIANTS)}")
        if retiming_search not in RETIMING_SEARCHES:
            raise ConfigError(f"unknown retiming search {retiming_search!r}; "
                              f"choose one of {', '.join(RETIMING_SEARCHES)}")
        self.variant = variant
        self.retiming_search = retiming_search

    def solve(self, problem: PartitionProblem, config: SolverConfig, hint: PartitionDecision | None = None) -> Solved:
        return solve(problem, config, hint, variant=self.variant, retiming_search=self.retiming_search)

    @staticmethod
    def diagnose(problem: PartitionProblem) -> str | None:
        return diagnose(problem)
