"""Solves of one partition model each (slot model, column model with its cut rounds, a level of the delay
relaxation, the layered model), and the sequence slot model → column model → slot model for problems
without retiming (:func:`solve_model`). Each returns a :class:`Solved` whose ``details["work"]`` is the
deterministic work it spent (:func:`~solvermap.formulations.strategy.spent_by`), so that callers split
their budget by work, never by the wall clock."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Collection
from typing import Any

from solvermap.formulations.decision import Solved, combine
from solvermap.formulations.partition import layers
from solvermap.formulations.partition.columns import (
    Column,
    add_cycle_cut,
    build_columns,
    decode_columns,
    quotient_cycles,
    together_of,
)
from solvermap.formulations.partition.delay_relaxation import build_delay_relaxation, decode_tied
from solvermap.formulations.partition.settings import SETTINGS
from solvermap.formulations.partition.slots import build, decode, slot_count
from solvermap.formulations.partition.table42 import build_table42
from solvermap.formulations.problems.partition import PartitionDecision, PartitionProblem, complete, objective
from solvermap.formulations.solver import SolveResult, SolverConfig, Status, explain_infeasible, relative_gap, solve_milp
from solvermap.formulations.strategy import MIN_SOLVE_WORK, Budget, sequence, spent_by


def work_of(solved: Solved[PartitionDecision]) -> float:
    """The work a solve (or a sequence of solves) of this package reported in its details."""
    return float(solved.details.get("work", 0.0))


def solve_level(problem: PartitionProblem, config: SolverConfig, hint: PartitionDecision, columns: list[Column],
                 bins_floor: int | None, level: float | None, *, tie: bool = False) -> Solved[PartitionDecision]:
    """The delay relaxation at ``level`` (None: minimised; ``tie``: every bin at one delay). Its decision,
    when its cover is acyclic, is that cover rescheduled exactly (:func:`complete`), a candidate (with
    ``tie``, or the cover at the relaxation's delays when that needs less retiming, :func:`decode_tied`);
    its status and bound are the relaxation's."""
    built = build_delay_relaxation(problem, config, hint, columns=columns, min_bins=bins_floor, level=level,
                                   tie=tie)
    solution = solve_milp(built.columns.builder, config)
    decision = None
    if solution.result.status.has_solution:
        decision = decode_columns(problem, built.columns, solution)
        tied = decode_tied(problem, built, solution) if tie else None
        if tied is not None and (decision is None or objective(problem, tied) < objective(problem, decision) - 1e-9):
            decision = tied
    details = {"model_size": built.columns.builder.size(), "columns": len(columns), "level": level,
               "work": spent_by(solution.result, config)}
    return Solved(solution.result, decision, [], details)



def solve_layers(problem: PartitionProblem, config: SolverConfig, T: int, bins_floor: int | None,
                  columns: list[Column]) -> Solved[PartitionDecision] | None:
    """The layered column model with ``T`` layers (:mod:`.layers`), a
    primal model: its answer is a solution, its status says how the T-layer search ended, and its result
    carries no bound (the solver's bound holds for T layers only). None when the model would exceed
    ``settings.layer_pairs`` column × layer pairs."""
    if layers.layer_windows(problem, columns, T).pairs > SETTINGS.layer_pairs:
        return None
    built = layers.build_layers(problem, columns=columns, layers=T, min_bins=bins_floor)
    solution = solve_milp(built.builder, config)
    decision = layers.decode_layers(problem, built, solution) if solution.result.status.has_solution else None
    found = objective(problem, decision) if decision is not None else None
    status = solution.result.status
    status = Status.FEASIBLE if status == Status.OPTIMAL else status  # optimal for T layers only
    result = dataclasses.replace(solution.result, status=status, objective=found, bound=None, gap=None,
                                 message=f"layered T={T}: " + (f"{found:g}" if found is not None else str(status)))
    details = {"model_size": built.builder.size(), "layers": T, "work": spent_by(solution.result, config)}
    return Solved(result, decision, [], details)



def slot_window(problem: PartitionProblem, hint: PartitionDecision | None, slots: int | None = None) -> int | None:
    if hint is None:
        return None
    slots = slots if slots is not None else slot_count(problem, hint)
    n = len(problem.items)
    if n * slots <= SETTINGS.variable_budget:
        return None
    return max(2, SETTINGS.variable_budget // (2 * n))



def solve_slots(problem: PartitionProblem, config: SolverConfig, hint: PartitionDecision | None, variant: str,
                 explain: bool, *, min_bins: int | None = None, max_retiming: int | None = None,
                 min_retiming: int = 0, slots: int | None = None,
                 free: Collection[str] | None = None) -> Solved[PartitionDecision]:
    window = slot_window(problem, hint, slots) if variant == "ours" and free is None else None
    if variant == "ours":
        built = build(problem, config, hint, min_bins=min_bins, window=window, max_retiming=max_retiming,
                      min_retiming=min_retiming, slots=slots, free=free)
    else:
        built = build_table42(problem, config, hint)
    solution = solve_milp(built.builder, config)
    result = solution.result
    work = spent_by(result, config)  # the solver's own outcome (the status is relabelled below)
    restricted = window is not None or free is not None
    decision = decode(problem, built, solution) if result.status.has_solution else None
    if decision is not None:
        result.objective = objective(problem, decision)  # the shared objective, also for table42
        if variant == "ours":
            certified = problem.weights.bins * built.bound.cost
            if restricted:  # a restricted search: only the combinatorial bound is global
                result.bound = certified
                result.status = Status.OPTIMAL if result.objective <= certified + 1e-9 else Status.FEASIBLE
            else:
                result.bound = max(result.bound if result.bound is not None else certified, certified)
                if result.status == Status.OPTIMAL:
                    result.bound = result.objective
        if result.bound is not None:
            result.bound = min(result.bound, result.objective)
        result.gap = relative_gap(result.objective, result.bound)
    if restricted and result.status == Status.INFEASIBLE:  # only the window is empty, not the problem
        result.status = Status.TIMEOUT_NO_SOLUTION
        result.message = "no solution in the window around the warm start"
    if decision is None and variant == "ours" and result.status != Status.INFEASIBLE:
        result.bound = problem.weights.bins * built.bound.cost  # the certified bound still holds
    explanation = []
    if result.status == Status.INFEASIBLE and explain:
        explanation = explain_infeasible(built.builder, config)
    details = {"model_size": built.builder.size(), "slots": built.slots, "variant": variant, "window": window,
               "work": work}
    if built.bound is not None:
        details["lower_bound"] = {"bins": built.bound.bins, "reason": built.bound.reason, "parts": built.bound.parts}
    return Solved(result, decision, explanation, details)


def solve_columns(problem: PartitionProblem, config: SolverConfig, hint: PartitionDecision | None, explain: bool,
                   columns: list[Column], min_bins: int | None) -> Solved[PartitionDecision]:
    """The column model with lazy cycle cuts: its bound is certified at every round; its decision is None
    unless a cover is acyclic (then it is optimal when the round was solved to optimality). Rounds share
    the budget (:class:`~solvermap.formulations.strategy.Budget`)."""
    budget = Budget(config)
    built = build_columns(problem, config, hint, columns=columns, min_bins=min_bins)
    certified = problem.weights.bins * built.bound.cost
    together = together_of(built)
    rounds: list[dict[str, Any]] = []
    results: list[SolveResult] = []
    decision = None
    lower = certified
    while True:
        round_config = budget.share()
        solution = solve_milp(built.builder, round_config)
        result = solution.result
        budget.charge_solve(result, round_config)
        results.append(result)
        if result.status == Status.INFEASIBLE or not result.status.has_solution:
            if result.status != Status.INFEASIBLE and result.bound is not None:
                lower = max(lower, result.bound)
            break
        if result.status == Status.OPTIMAL:
            lower = max(lower, result.objective)
        elif result.bound is not None:
            lower = max(lower, result.bound)
        chosen = [key for key, var in built.x.items() if solution.is_one(var)]
        assignment = {n: b for b, (c, _) in enumerate(chosen) for n in built.columns[c].members}
        cycles = quotient_cycles(problem, assignment)
        rounds.append({"objective": result.objective, "bound": result.bound, "cycles": len(cycles),
                       "seconds": result.solve_seconds})
        if not cycles:
            types = {b: problem.bin_types[k].name for b, (_, k) in enumerate(chosen)}
            decision = complete(problem, assignment, types)
            break
        for cycle in cycles:
            add_cycle_cut(built, together, cycle)
        if hint is not None and lower >= objective(problem, hint) - 1e-9:
            break  # the warm start is proven optimal
        left = budget.left()
        if left is not None and left < MIN_SOLVE_WORK:
            break
    last = results[-1]
    final = dataclasses.replace(last)
    final.solve_seconds = sum(r.solve_seconds for r in results)
    if final.status != Status.INFEASIBLE:
        final.bound = lower
    if decision is not None:
        value = objective(problem, decision)
        final.status = Status.OPTIMAL if value <= lower + 1e-9 else Status.FEASIBLE
        final.objective = value
        final.bound = min(lower, value)
        final.gap = relative_gap(value, final.bound)
    elif hint is not None and lower >= objective(problem, hint) - 1e-9 and final.status != Status.INFEASIBLE:
        decision = hint
        final.status, final.objective, final.bound, final.gap = Status.OPTIMAL, lower, lower, 0.0
    elif final.status.has_solution:  # only cyclic covers: only the bound counts
        final.status, final.objective, final.gap = Status.TIMEOUT_NO_SOLUTION, None, None
        final.limit_reached = True
    explanation = []
    if final.status == Status.INFEASIBLE and explain:
        explanation = explain_infeasible(built.builder, config)
    details = {"model_size": built.builder.size(), "columns": len(columns), "cut_rounds": rounds, "work": budget.elapsed()}
    return Solved(final, decision, explanation, details)


def solve_model(problem: PartitionProblem, config: SolverConfig, hint: PartitionDecision | None, variant: str,
                 explain: bool, *, min_bins: int | None = None,
                 columns: Callable[[], list[Column] | None] | None = None) -> Solved[PartitionDecision]:
    """One model of ``variant``; without retiming, ``ours`` follows an unproven slot model with the column
    model and its cycle cuts (its bound, and its cover when acyclic) and, if the gap remains, the slot
    model again."""
    if variant != "ours" or columns is None or problem.retiming is not None:
        return solve_slots(problem, config, hint, variant, explain, min_bins=min_bins)
    budget = Budget(config)
    # a short slot-model solve first (it proves most actors at once), then the column model with cycle
    # cuts (exact on small convex-bin sets), then the slot model again with the proven bin count
    quick = budget.share(SETTINGS.quick_slot_share)
    if quick.time_limit_s is not None and len(problem.items) <= SETTINGS.quick_slot_items:
        quick = quick.with_(time_limit_s=min(quick.time_limit_s, SETTINGS.quick_slot_work))
    first = solve_slots(problem, quick, hint, variant, explain, min_bins=min_bins)
    budget.charge(work_of(first))
    if first.result.status in (Status.OPTIMAL, Status.INFEASIBLE):
        return first
    cols = columns()
    if cols is None:
        first.details["columns"] = "over budget"
        return first
    cover = solve_columns(problem, budget.share(SETTINGS.cover_share), first.decision or hint, explain, cols, min_bins)
    budget.charge(work_of(cover))
    if cover.result.status in (Status.OPTIMAL, Status.INFEASIBLE):
        cover.details.update({"variant": variant, "slots": None, "work": budget.elapsed()})
        return cover
    results = [first.result, cover.result]
    candidates = [d for d in (first.decision, cover.decision) if d is not None]
    best = min(candidates, key=lambda d: objective(problem, d)) if candidates else None
    lower = max([r.bound for r in results if r.bound is not None] or [0.0])
    details = {**first.details, "columns": len(cols), "column_relaxation": {
        "status": str(cover.result.status), "bound": cover.result.bound, "objective": cover.result.objective,
        "acyclic": cover.decision is not None, "solve_seconds": cover.result.solve_seconds,
        "cut_rounds": cover.details.get("cut_rounds", [])}}
    # (details["work"] is set below, after the last solve)
    if best is not None and objective(problem, best) > lower + 1e-9 and config.time_limit_s is not None \
            and budget.share().time_limit_s > SETTINGS.repeat_floor:
        dearest = max(t.cost for t in problem.bin_types) * problem.weights.bins  # a bin costs at most this
        proven = math.ceil(lower / dearest - 1e-9) if dearest > 0 and problem.weights.traffic == 0 else None
        again = solve_slots(problem, budget.share(), best, variant, explain,
                             min_bins=max(proven or 0, min_bins or 0) or None)
        budget.charge(work_of(again))
        results.append(again.result)
        if again.decision is not None and objective(problem, again.decision) < objective(problem, best):
            best = again.decision
        lower = max(lower, again.result.bound if again.result.bound is not None else 0.0)
    details["work"] = budget.elapsed()
    if best is None:
        return Solved(combine(results, cover.result), None, cover.explanation or first.explanation, details)
    final = sequence(results, objective(problem, best), lower,
                     "column model with cycle cuts, slot model" + (", slot model" if len(results) > 2 else ""))
    return Solved(final, best, [], details)
