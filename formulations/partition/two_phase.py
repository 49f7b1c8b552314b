"""Retiming problems in two phases (seed 004 Table 4.2's objective: partitions + α · retiming partitions).

(A) the slot model without retiming: its optimum P* bins is a lower bound of the joint objective
(retiming bins ≥ 0) and its solution, scheduled, a candidate — optimal when it needs no retiming. Else (B):

Slots (CP-SAT, ``retiming_search`` "auto" or "slots") the joint slot model with Σ bins ≥ P*, warm-started:
    first uncapped on a short share of the budget (``settings.joint_first_share``; an actor it proves there
    gets the partition the joint model alone would give), then, when phase A proved P* (else the joint model
    keeps the whole budget), with the retiming capped: Σ r ≤ 0 (the zero-retiming model), then Σ r ≤ k =
    ⌈(incumbent − P*) / w_ret⌉ − 1 (more cannot beat the incumbent), first on P* slots, then on the
    incumbent's slots. After cap k, min(bound of the capped model, P* + w_ret (k + 1)) is a certified joint
    lower bound; on P* slots also min(·, (P* + 1) cheapest + w_ret r_min), r_min the retiming every solution
    needs (1 when the zero-retiming model is infeasible): the optimum often keeps P* bins.
Columns (LP-based backends, "auto" or "columns"; acyclic problems with enumerable convex bins and no fixed
    delays) alternates (1) answers from the layered column model (:mod:`.layers`: a convex bin at a layer t
    runs at delay L·t, a primal model whose time-indexed LP suits LP-based branch and bound) with T₀, T₀ + 1,
    …, T₀ + ``settings.layer_extra`` layers, T₀ the fewest its windows allow, at most ``settings.layer_share``
    of what is left each; and (2) levels "relaxed cost ≤ v" of the delay relaxation
    (:mod:`.delay_relaxation`), v from the bound upwards in steps of the objective's granularity q: a refuted
    level lifts the bound to v + q, the first level not refuted ends the levels (a satisfiable level is slow
    to solve: never more than ``settings.level_share`` of what is left). So an optimal incumbent is proven
    without search. (3) With the gap still open, a large-neighbourhood search on the exact slot model from
    phase A's candidate (:func:`neighbourhood_search`) on what is left.
Every step gets a share of one :class:`~solvermap.formulations.strategy.Budget` of deterministic work and
the steps' results are combined into one record with the certified bound (``sequence``).
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Callable
from typing import Any

from solvermap.errors import ConfigError
from solvermap.formulations.decision import Solved, combine
from solvermap.formulations.partition import layers
from solvermap.formulations.partition.columns import Column
from solvermap.formulations.partition.settings import SETTINGS
from solvermap.formulations.partition.slots import canonical_hint, item_order, slot_count
from solvermap.formulations.partition.solves import (
    slot_window,
    solve_layers,
    solve_level,
    solve_model,
    solve_slots,
    work_of,
)
from solvermap.formulations.problems.partition import PartitionDecision, PartitionProblem, complete, objective
from solvermap.formulations.solver import PYOMO_BACKENDS, SolveResult, SolverConfig, Status, relative_gap
from solvermap.formulations.strategy import MIN_SOLVE_WORK, Budget, LnsState, Step, lns, lns_result, sequence

LP_BACKENDS = ("highs", "scip", "gurobi", "cbc") + PYOMO_BACKENDS  # LP-based branch and bound: phase B by columns ("auto")
RETIMING_SEARCHES = ("auto", "slots", "columns")


def by_columns(search: str, config: SolverConfig) -> bool:
    """Phase B by the delay relaxation (``columns``) or by the slot model's retiming caps (``slots``);
    ``auto``: columns on LP-based backends, whose bounds need a small, big-M-free LP, slots on CP-SAT,
    whose propagation proves the capped slot models fastest (``bench/`` compares them)."""
    if search not in RETIMING_SEARCHES:
        raise ConfigError(f"unknown retiming search {search!r}; choose one of {', '.join(RETIMING_SEARCHES)}")
    return search == "columns" or (search == "auto" and config.milp_backend() in LP_BACKENDS)


def solve_two_phase(problem: PartitionProblem, config: SolverConfig, hint: PartitionDecision | None,
                     explain: bool, columns: Callable[[], list[Column] | None] | None = None,
                     search: str = "auto", least_retiming: int = 0) -> Solved[PartitionDecision]:
    """Retiming problems: (A) the model without retiming gives the fewest bins P* — a lower bound of the
    joint objective, since retiming bins are ≥ 0; its solution, scheduled, is a joint candidate. If the
    best candidate has no retiming it is optimal. Otherwise (B) joint models with Σ bins ≥ P* and the best
    candidate as warm start: uncapped on a short share of the budget, then (when phase A is proven) with
    the retiming capped at 0, then at what can still beat the incumbent (see below). The budget is split
    by a :class:`~solvermap.formulations.strategy.Budget` of deterministic work. ``least_retiming``: retiming
    bins every solution is known to need (:func:`needs_retiming`), so P + w_ret · least_retiming bounds it."""
    budget = Budget(config)
    relaxed = dataclasses.replace(problem, retiming=None, weights=dataclasses.replace(problem.weights, retiming=0.0))
    relaxed_hint = PartitionDecision(dict(hint.assignment), dict(hint.bin_types)) if hint is not None else None
    # phase A gets a larger share when the column model (and its cycle cuts) can prove it
    a = solve_model(relaxed, budget.share(SETTINGS.phase_a_share_columns if columns is not None else SETTINGS.phase_a_share), relaxed_hint, "ours",
                     explain, columns=columns)
    budget.charge(work_of(a))
    a.details["phase"] = "A"
    candidate = None
    if a.decision is not None:
        try:
            candidate = complete(problem, a.decision.assignment, a.decision.bin_types)
        except ValueError:  # fixed delays (a chunk of a larger problem) that this partition cannot meet
            candidate = None
    if a.decision is None or (candidate is None and hint is None):
        if a.result.status == Status.INFEASIBLE:
            return a
        joint = solve_model(problem, budget.share(), hint, "ours", explain, columns=columns)
        budget.charge(work_of(joint))
        joint.details["work"] = budget.elapsed()
        if joint.decision is None and hint is not None:  # nothing new found: the warm start is the incumbent
            value = objective(problem, hint)
            lower = max([r for r in (a.result.bound, joint.result.bound) if r is not None] or [0.0])
            lower = min(lower, value)
            status = Status.OPTIMAL if value <= lower + 1e-9 else Status.FEASIBLE
            final = SolveResult(status, value, lower, relative_gap(value, lower), backend=joint.result.backend,
                                solver_version=joint.result.solver_version, limit_reached=True,
                                message="no solver solution within the limit: the warm start, with the bound")
            return Solved(combine([a.result, joint.result], final), hint, [], joint.details)
        return joint
    # on a tie the warm start (equal-cost partitions merge and simulate differently: keep what was shipped)
    best = min([d for d in (hint, candidate) if d is not None], key=lambda d: objective(problem, d))
    lower = a.result.bound if a.result.bound is not None else 0.0
    cheapest = min(t.cost for t in problem.bin_types) * problem.weights.bins
    # every bin costs at most the dearest type: a bins' cost ≥ P needs ≥ P / dearest bins
    dearest = max(t.cost for t in problem.bin_types) * problem.weights.bins
    min_bins = math.ceil(lower / dearest - 1e-9) if dearest > 0 and problem.weights.traffic == 0 else None
    value = objective(problem, best)
    details = {"phases": [{"phase": "A", "status": str(a.result.status), "objective": a.result.objective,
                           "bound": a.result.bound, "solve_seconds": a.result.solve_seconds}],
               **{k: v for k, v in a.details.items() if k != "phase"}}
    if a.result.status == Status.OPTIMAL and value <= lower + 1e-9:
        final = SolveResult(Status.OPTIMAL, value, value, 0.0, a.result.build_seconds, a.result.solve_seconds,
                            a.result.backend, a.result.solver_version, False,
                            "phase A optimum needs no retiming")
        return Solved(final, best, [], details)
    # (B) retiming-capped joint models. Phase A's bound P (bins cost) holds for every solution, so one with
    # more than k retiming bins costs ≥ P + w_ret (k + 1): the cap k_max = ⌈(incumbent − P) / w_ret⌉ − 1 loses
    # nothing. Cap 0 (no retiming variables, no big-M: every skew within the buffers) runs first: a
    # solution with at most k retiming bins costs ≥ the capped model's bound, so after cap k
    # min(bound_k, P + w_ret (k + 1)) is a joint lower bound — often the incumbent's value; an infeasible
    # cap k adds Σ r ≥ k + 1 to the next model (the slot space only shrinks as the incumbent improves).
    base, w_ret = lower, problem.weights.retiming
    lower = base + w_ret * least_retiming
    bins_floor = min_bins if a.result.status == Status.OPTIMAL else None
    messages, results, last = ["two-phase: no-retiming optimum"], [a.result], None
    fixed = problem.retiming.fixed_sources or problem.retiming.fixed_sinks  # (chunks; the relaxation has none)
    cols = columns() if columns is not None and not fixed and by_columns(search, config) else None
    if cols is not None:  # LP-based backends: the delay relaxation and the neighbourhood search
        best, lower, more = _phase_b_columns(problem, config, budget, best, candidate, lower, bins_floor, cols,
                                             details, results)
        details["work"] = budget.elapsed()
        final = sequence(results, objective(problem, best), lower, ", then ".join(messages + more))
        return Solved(final, best, [], details)
    # (least_retiming: every solution needs at least this many retiming bins; a cap proven infeasible raises it)
    # the uncapped joint model first, on a share of the budget: most actors are proven here, and their
    # partition does not depend on the caps below. The caps need phase A's proven bin count (a floor for
    # every capped model): without it, the joint model gets the whole budget (kmeans x4, actor
    # "distance", phase A 20 / bound 17: the caps reach 19, the joint model alone 18)
    capped_after = bins_floor is not None
    joint = solve_slots(problem, budget.share(SETTINGS.joint_first_share if capped_after else 1.0), best, "ours",
                         explain, min_bins=bins_floor)
    budget.charge(work_of(joint))
    results.append(joint.result)
    last = joint
    details["phases"].append({"phase": "B (joint)", "status": str(joint.result.status),
                              "objective": joint.result.objective, "bound": joint.result.bound,
                              "solve_seconds": joint.result.solve_seconds})
    messages.append("joint")
    details.update({k: v for k, v in joint.details.items() if k in ("model_size", "slots", "lower_bound")})
    if joint.decision is not None and objective(problem, joint.decision) < value - 1e-9:
        best, value = joint.decision, objective(problem, joint.decision)
    if joint.result.bound is not None:
        lower = max(lower, joint.result.bound)
    # the caps, then (before the last cap, when phase A's bin count is below the incumbent's) the same cap
    # on phase A's bin count of slots: the optimum often keeps P* bins (blackscholes: 14 + 2 retiming,
    # proven in this small model) and solutions with more bins cost ≥ (P* + 1) cheapest + least retiming
    steps = [(cap, None) for cap in SETTINGS.retiming_caps] + [(None, bins_floor), (None, None)]
    for cap_step, slots in steps:
        if value <= lower + 1e-9 or not capped_after:
            break
        cap_max = math.ceil((value - base) / w_ret - 1e-9) - 1
        if cap_max < 0:
            break
        cap = min(cap_step, cap_max) if cap_step is not None else cap_max
        if cap < least_retiming:
            continue  # proven infeasible already
        if slots is not None and (slots >= slot_count(problem, best)
                                  or slot_window(problem, best, slots) is not None):
            continue  # the last step's slot space already, or too large for the whole slot space
        final_step = cap == cap_max and slots is None
        # warm start: phase A's candidate when it ties the incumbent (its P* bins are closer to a partition
        # with little retiming: lattice's zero-retiming model finds 18 from it far sooner than from the
        # heuristic's 19 bins); the incumbent itself stays the answer unless a step improves it
        warm = candidate if candidate is not None and objective(problem, candidate) <= value + 1e-9 else best
        if slots is not None and candidate is not None and len(set(warm.assignment.values())) > slots:
            warm = candidate  # P* slots: the incumbent does not fit, phase A's partition does
        capped = solve_slots(problem, budget.share(1.0 if final_step else SETTINGS.capped_share), warm, "ours",
                              explain and final_step, min_bins=bins_floor, max_retiming=cap,
                              min_retiming=least_retiming, slots=slots)
        budget.charge(work_of(capped))
        results.append(capped.result)
        last = capped
        name = f"B (retiming <= {cap}" + (f", {slots} bins)" if slots is not None else ")")
        details["phases"].append({"phase": name, "status": str(capped.result.status),
                                  "objective": capped.result.objective, "bound": capped.result.bound,
                                  "solve_seconds": capped.result.solve_seconds})
        messages.append(f"at most {cap} retiming" + (f" on {slots} bins" if slots is not None else ""))
        details.update({k: v for k, v in capped.details.items() if k in ("model_size", "slots", "lower_bound")})
        if capped.decision is not None and objective(problem, capped.decision) < value - 1e-9:
            best, value = capped.decision, objective(problem, capped.decision)
        capped_bound = math.inf if capped.result.status == Status.INFEASIBLE else (
            capped.result.bound if capped.result.bound is not None else base)
        if slots is None and capped.result.status == Status.INFEASIBLE:
            least_retiming = cap + 1
        # a solution outside this model has more retiming than the cap, or (fewer slots) more bins
        outside = base + w_ret * (cap + 1)
        if slots is not None:
            more_bins = max(base, (slots + 1) * cheapest) + w_ret * least_retiming
            outside = min(outside, more_bins)
        lower = max(lower, min(capped_bound, outside))
        if value <= lower + 1e-9 or final_step:
            break
    details["work"] = budget.elapsed()
    lower = min(lower, value)
    status = Status.OPTIMAL if value <= lower + 1e-9 else Status.FEASIBLE
    tail = last.result if last is not None else a.result
    final = SolveResult(status, value, lower, relative_gap(value, lower), backend=tail.backend,
                        solver_version=tail.solver_version,
                        limit_reached=status != Status.OPTIMAL and tail.limit_reached, message=", then ".join(messages))
    return Solved(combine(results, final), best, last.explanation if last is not None else [], details)



def _objective_step(problem: PartitionProblem) -> int | None:
    """q such that every objective value is a multiple of q (integral costs and weights, no traffic), else None."""
    if problem.weights.traffic > 0:
        return None
    coefficients = [problem.weights.bins * t.cost for t in problem.bin_types] + [problem.weights.retiming]
    if any(abs(c - round(c)) > 1e-9 or c < 0 for c in coefficients):
        return None
    return math.gcd(*(int(round(c)) for c in coefficients)) or None


def neighbourhood_search(problem: PartitionProblem, config: SolverConfig, start: PartitionDecision, lower: float,
                         bins_floor: int | None) -> Solved[PartitionDecision]:
    """A large-neighbourhood search on the exact slot model (fix and optimise, the strategy layer's
    :func:`~solvermap.formulations.strategy.lns`): with the incumbent's bins sorted by delay, the items of
    ``size`` consecutive bins are freed and every other item stays in its bin (``build(free=…)``); a better
    answer becomes the incumbent. Windows are visited in an order drawn from ``config.seed``; a pass that
    finds nothing widens them by ``settings.neighbourhood_growth``. Stops at ``lower``, when the windows cover
    every bin, or when the budget is spent. The neighbourhood solves prove nothing globally: the result has
    no bound."""
    budget = Budget(config)
    rng = random.Random(config.seed)
    order = item_order(problem)
    steps: list[dict[str, Any]] = []

    def neighbourhoods(state: LnsState[PartitionDecision]):
        size = SETTINGS.neighbourhood_slots
        while True:
            canonical = canonical_hint(problem, state.best, order)
            slots = len(canonical.bins)
            if size >= slots:
                return
            windows = [set(range(first, first + size)) for first in range(slots - size + 1)]
            rng.shuffle(windows)
            for bins in _retimed_neighbourhoods(problem, canonical, size) + windows:
                yield canonical, slots, bins
                if state.outcome == "improved":
                    break
            else:
                size += SETTINGS.neighbourhood_growth

    def solve_neighbourhood(hood: tuple[PartitionDecision, int, set[int]], step: SolverConfig) -> Step[PartitionDecision]:
        canonical, slots, bins = hood
        free = {n for n, b in canonical.assignment.items() if b in bins}
        sub = solve_slots(problem, step, canonical, "ours", False, min_bins=bins_floor, slots=slots, free=free)
        found = objective(problem, sub.decision) if sub.decision is not None else None
        steps.append({"bins": sorted(bins), "items": len(free), "status": str(sub.result.status),
                      "objective": found, "solve_seconds": round(sub.result.solve_seconds, 2)})
        return Step(sub.decision, sub.result)

    state = lns(budget, start, lambda d: objective(problem, d), neighbourhoods, solve_neighbourhood,
                step_cap=SETTINGS.neighbourhood_work, floor=MIN_SOLVE_WORK, lower=lower)
    final = lns_result(state, budget, None, f"neighbourhood search: {len(steps)} neighbourhoods, "
                                            f"{objective(problem, start):g} -> {state.value:g}")
    return Solved(final, state.best, [], {"steps": steps, "work": budget.elapsed()})


def _retimed_neighbourhoods(problem: PartitionProblem, canonical: PartitionDecision, size: int) -> list[set[int]]:
    """Per retimed value of ``canonical`` (slots by delay), in order: the bins of its producer and of its
    retimed reader, each with its neighbours by delay, up to ``size`` bins (a value that waits joins bins far
    apart, which a window of consecutive bins rarely frees together)."""
    slots = len(canonical.bins)
    out: list[set[int]] = []
    for (src, _, q) in sorted(canonical.retiming, key=lambda k: (k[2], k[0], k[1])):
        if q < 0:
            continue
        ends = [q] + ([canonical.assignment[src]] if src in canonical.assignment else [])
        bins = set(ends)
        reach = 1
        while len(bins) < size and reach < slots:
            for end in ends:
                for b in (end - reach, end + reach):
                    if 0 <= b < slots and len(bins) < size:
                        bins.add(b)
            reach += 1
        if bins not in out:
            out.append(bins)
    return out



def _phase_b_columns(problem: PartitionProblem, config: SolverConfig, budget: Budget, best: PartitionDecision,
                     candidate: PartitionDecision | None, lower: float, bins_floor: int | None,
                     columns: list[Column], details: dict[str, Any], results: list[SolveResult]
                     ) -> tuple[PartitionDecision, float, list[str]]:
    """Phase B for LP-based backends (module docstring, "Columns"): answers from the layered column
    model and the neighbourhood search, bounds from the delay relaxation. (1) In turn, while the gap is
    open: the layered model with the next layer count (T₀ … T₀ + ``settings.layer_extra``; none after a solve stopped
    by its limit), and the lowest level of the relaxation not yet refuted: a refuted level v lifts the
    bound to v + q (q = :func:`_objective_step`), the first level not refuted ends the levels (without a
    step: the relaxation minimised once, its bound, before the turns) — an optimal incumbent is proven
    here; (2) the neighbourhood search from phase A's candidate (its P* bins are what the optimum often
    keeps) on what is left. Returns the best answer, the bound and the phases' messages."""
    value = objective(problem, best)
    messages = []
    step = _objective_step(problem)
    if step is None and value > lower + 1e-9:
        relaxed = solve_level(problem, budget.share(SETTINGS.relaxation_share), best, columns, bins_floor, None)
        budget.charge(work_of(relaxed))
        results.append(relaxed.result)
        if relaxed.result.status == Status.INFEASIBLE:
            lower = value  # no solution with fewer bins than the incumbent's slot count: the incumbent
        elif relaxed.result.bound is not None:
            lower = max(lower, relaxed.result.bound)
        details["phases"].append({"phase": "B (delay relaxation)", "status": str(relaxed.result.status),
                                  "objective": relaxed.result.objective, "bound": relaxed.result.bound,
                                  "solve_seconds": relaxed.result.solve_seconds})
        messages.append("delay relaxation")
    # answers from the layered model (T₀, T₀ + 1, …), bounds from the levels, one of each in turn
    T = layers.fewest_layers(problem, columns) if layers.applicable(problem) is None else None
    last_layers = T + SETTINGS.layer_extra if T is not None else None
    levels = step is not None
    while value > lower + 1e-9 and (T is not None or levels):
        left = budget.left()
        if left is not None and left < MIN_SOLVE_WORK:
            break
        if T is not None:
            found = solve_layers(problem, budget.share(SETTINGS.layer_share), T, bins_floor, columns)
            if found is not None:
                budget.charge(work_of(found))
                results.append(found.result)
                details["phases"].append({"phase": f"B (layered, T = {T})", "status": str(found.result.status),
                                          "objective": found.result.objective, "bound": None,
                                          "solve_seconds": found.result.solve_seconds})
                messages.append(found.result.message)
                if found.decision is not None and objective(problem, found.decision) < value - 1e-9:
                    best, value = found.decision, objective(problem, found.decision)
            # a larger T is a larger model: not after a solve stopped by its limit
            T = T + 1 if found is not None and not found.result.limit_reached and T < last_layers else None
        if levels and value > lower + 1e-9:
            level = math.ceil(lower / step - 1e-9) * step
            checked = solve_level(problem, budget.share(SETTINGS.level_share), best, columns, bins_floor, level)
            budget.charge(work_of(checked))
            results.append(checked.result)
            details["phases"].append({"phase": f"B (level <= {level:g})", "status": str(checked.result.status),
                                      "objective": None, "bound": None, "solve_seconds": checked.result.solve_seconds})
            messages.append(f"level {level:g} " + ("refuted" if checked.result.status == Status.INFEASIBLE else "open"))
            if checked.result.status == Status.INFEASIBLE:
                lower = level + step
            else:  # the first level not refuted ends the levels (a satisfiable level is slow to solve)
                levels = False
                if checked.decision is not None and objective(problem, checked.decision) < value - 1e-9:
                    best, value = checked.decision, objective(problem, checked.decision)
    if value > lower + 1e-9:
        start = candidate if candidate is not None else best
        found = neighbourhood_search(problem, budget.share(), start, lower, bins_floor)
        budget.charge(work_of(found))
        results.append(found.result)
        details["phases"].append({"phase": "B (neighbourhood search)", "status": str(found.result.status),
                                  "objective": found.result.objective, "bound": None,
                                  "solve_seconds": found.result.solve_seconds,
                                  "neighbourhoods": len(found.details["steps"])})
        messages.append(found.result.message)
        if objective(problem, found.decision) < value - 1e-9:
            best = found.decision
    return best, lower, messages


def needs_retiming(problem: PartitionProblem, config: SolverConfig,
                   hint: PartitionDecision | None) -> tuple[int, float]:
    """(1 when no partition of ``problem`` — with any number of bins: one slot per item — runs without
    retiming, the zero-retiming slot model proven infeasible within ``config``'s budget, else 0: a
    partition without retiming found, or nothing proven; the work spent)."""
    probe = solve_slots(problem, config, hint, "ours", False, max_retiming=0, slots=len(problem.items))
    return (1 if probe.result.status == Status.INFEASIBLE else 0), work_of(probe)
