"""Large acyclic clusters in chunks (:func:`solve_chunked`).

Chunks    an acyclic cluster of more than ``settings.chunk_items`` items is cut into consecutive groups of the
          warm start's bins (the best baseline's, or when no baseline packs the constructive
          :func:`~.first_fit.first_fit`'s) (about ``settings.chunk_size`` items, in the order of its schedule), solved one
          after another with the slot model; with retiming, the delays of values read from earlier chunks
          are fixed (``Retiming.fixed_sources``: e[g] fixed), so each chunk pays exactly the retiming of the
          links into it, and values read by later chunks have their readers at the warm start's delays
          (``Retiming.fixed_sinks``: s[src] ≤ D − L, (b_d + L)·r ≥ D − s[src] − L − b_d), so a chunk pays
          an estimate of the links out of it and the warm start stays feasible for every chunk. Kept only
          when better than the warm start; only the combinatorial bound is global. Each chunk gets the
          share of what is left of one :class:`~solvermap.formulations.strategy.Budget` that its items are
          of the items left.
Counts    (merging: PB types of limited count) chunk k may use n_τ − (bins of τ the chunks before it chose)
          − (bins of τ the warm start uses in the chunks after it); chunks hold whole bins of the warm
          start, so by induction the chunks chosen so far plus the warm start's rest stay within n_τ, the
          warm start's part of each chunk fits its counts, and the join keeps every count.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable

from solvermap.formulations.decision import Solved, combine
from solvermap.formulations.partition.bounds import lower_bound
from solvermap.formulations.partition.columns import quotient_acyclic
from solvermap.formulations.partition.settings import SETTINGS
from solvermap.formulations.partition.solves import work_of
from solvermap.formulations.problems.partition import (
    PartitionDecision,
    PartitionProblem,
    _topo,
    complete,
    cross_arcs,
    objective,
    required_retiming,
)
from solvermap.formulations.solver import SolveResult, SolverConfig, Status, relative_gap
from solvermap.formulations.strategy import Budget

SolveOne = Callable[..., Solved[PartitionDecision]]  # strategy.solve_one (passed in: it calls back here)


def restrict(decision: PartitionDecision | None, names: list[str], clusters: set[str]) -> PartitionDecision | None:
    """The part of ``decision`` on items ``names`` (whose clusters are ``clusters``)."""
    if decision is None:
        return None
    keep = set(names)
    bins = sorted({b for n, b in decision.assignment.items() if n in keep})
    return PartitionDecision(
        {n: b for n, b in decision.assignment.items() if n in keep},
        {b: decision.bin_types[b] for b in bins},
        {b: t for b, t in decision.delays.items() if b in bins},
        {k: t for k, t in decision.source_delays.items() if k[2] in clusters},
        {k: v for k, v in decision.retiming.items() if k[2] in bins},
    )



def chunk_groups(problem: PartitionProblem, hint: PartitionDecision) -> list[list[str]] | None:
    """The warm start's bins in a topological order of its quotient graph, cut into consecutive groups
    of about ``settings.chunk_size`` items; every order link runs from a group to the same or a later one."""
    bins = sorted(set(hint.assignment.values()))
    succ: dict[int, set[int]] = {b: set() for b in bins}
    for s, d in problem.order_links():
        p, q = hint.assignment[s], hint.assignment[d]
        if p != q:
            succ[p].add(q)
    try:
        topo = {b: k for k, b in enumerate(_topo(bins, {b: sorted(v) for b, v in succ.items()}))}
    except ValueError:
        return None
    # by the warm start's delay (its schedule is a topological order), so a chunk holds bins that run
    # together and the values it reads from earlier chunks are recent
    order = sorted(bins, key=lambda b: (hint.delays.get(b, 0), topo[b]))
    members: dict[int, list[str]] = {b: [] for b in bins}
    for n in problem.topological_items():
        members[hint.assignment[n]].append(n)
    groups: list[list[str]] = [[]]
    for b in order:
        if groups[-1] and len(groups[-1]) + len(members[b]) > SETTINGS.chunk_size:
            groups.append([])
        groups[-1].extend(members[b])
    return groups if len(groups) > 1 else None


def solve_chunked(problem: PartitionProblem, config: SolverConfig, hint: PartitionDecision,
                  chunks: list[list[str]], explain: bool, solve_one: SolveOne) -> Solved[PartitionDecision]:
    """A large acyclic cluster, chunk by chunk (:func:`chunk_groups`), each chunk solved as its own problem:
    links to other chunks are external, so its capacity and arity rows are those of the whole; chunks
    follow a topological order, so the joined quotient graph is acyclic. With retiming, the delays of the
    values a chunk reads from earlier chunks are fixed (``Retiming.fixed_sources``), so each chunk pays
    exactly the retiming of the links into it; the values it makes for later chunks are read at the warm
    start's delays (``Retiming.fixed_sinks``), so it pays for the links out of it too (the sum of the
    chunks' objectives counts a link between chunks twice); values from outside the actor get one delay at
    the end (as late as their first reader allows), so when several chunks read one such value the join may need
    more retiming than its chunks counted. Candidates: the join on the chunks' delays (when every
    precedence holds, :func:`schedule_holds`) and the join rescheduled as a whole; the best is kept only
    when it beats the warm start. Only the combinatorial lower bound is global: the result is optimal
    only when it meets it."""
    budget = Budget(config)
    assignment: dict[str, int] = {}
    types: dict[int, str] = {}
    delays: dict[int, int] = {}
    sources: dict[tuple[str, str, str], int] = {}  # external values of the whole problem
    known: dict[tuple[str, str, str], int] = {}  # every value's delay so far (items' values: their bin's)
    results: list[SolveResult] = []
    parts = []
    clusters = {i.cluster for i in problem.items}
    cluster = {i.name: i.cluster for i in problem.items}
    left_items = len(problem.items)
    # bins of each counted type the warm start uses in each chunk, and the chunks chosen so far
    counted = {t.name for t in problem.bin_types if t.count is not None}
    hint_use = [Counter(hint.bin_types[b] for b in {hint.assignment[n] for n in names}) for names in chunks]
    chosen_use: Counter[str] = Counter()
    readers_after = [set().union(*chunks[k + 1:]) for k in range(len(chunks))]  # items of later chunks
    for k, names in enumerate(chunks):
        inside = set(names)
        sub = problem.subproblem(names, f"{problem.name}[chunk {k}]")
        if counted:
            later = sum(hint_use[k + 1:], Counter())
            sub = dataclasses.replace(sub, bin_types=tuple(
                dataclasses.replace(t, count=t.count - chosen_use[t.name] - later[t.name]) if t.name in counted
                else t for t in sub.bin_types))
        local_hint = restrict(hint, names, clusters)
        base = 0
        if problem.retiming is not None:
            reads = {(l.src, l.src_port, cluster[l.dst]) for l in sub.links
                     if l.forward and not l.order_only and l.dst in inside and l.src not in inside}
            fixed = {key: known[key] for key in reads if key in known}
            # this chunk's budget starts at its earliest fixed value or warm-start delay, whichever is first,
            # so the warm start's delays fit (the model's delays are ≥ 0)
            own = [hint.delays[hint.assignment[n]] for n in names] if hint.delays else []
            base = min([*fixed.values(), *own], default=0)
            # values read by later chunks: their readers at the warm start's delays
            later = {(l.src, l.src_port, hint.delays[hint.assignment[l.dst]]) for l in problem.links
                     if l.forward and not l.order_only and l.src in inside and l.dst in readers_after[k]} \
                if hint.delays else set()
            retiming = dataclasses.replace(
                problem.retiming, fixed_sources=tuple(sorted((key, t - base) for key, t in fixed.items())),
                fixed_sinks=tuple(sorted(((src, port), t - base) for src, port, t in later)))
            sub = dataclasses.replace(sub, retiming=retiming)
            try:
                local_hint = complete(sub, local_hint.assignment, local_hint.bin_types)  # on the fixed delays
            except ValueError:  # (the warm start's readers fit by construction; a safety net) no readers
                sub = dataclasses.replace(sub, retiming=dataclasses.replace(retiming, fixed_sinks=()))
                local_hint = complete(sub, local_hint.assignment, local_hint.bin_types)
        # the slot model only: a chunk's budget is short, and its proof would not make the join optimal
        solved = solve_one(sub, budget.share(len(names) / left_items), local_hint, "ours", False,
                            use_columns=False)
        budget.charge(work_of(solved))
        left_items -= len(names)
        results.append(solved.result)
        chosen = solved.decision
        if chosen is None or objective(sub, chosen) > objective(sub, local_hint):
            chosen = local_hint
        if problem.retiming is not None:  # the solver's delays are arbitrary where they cost nothing
            compact = complete(sub, chosen.assignment, chosen.bin_types)  # (ASAP meets what the model met)
            if objective(sub, compact) <= objective(sub, chosen):
                chosen = compact
        chosen_use.update(chosen.bin_types[b] for b in set(chosen.assignment.values()))
        offset = len(types)
        renumber = {b: offset + j for j, b in enumerate(sorted(set(chosen.assignment.values())))}
        assignment.update({n: renumber[b] for n, b in chosen.assignment.items()})
        types.update({renumber[b]: chosen.bin_types[b] for b in renumber})
        if problem.retiming is not None:
            fixed_local = dict(sub.retiming.fixed_sources)
            drift = next((chosen.source_delays[key] - t for key, t in fixed_local.items()
                          if key in chosen.source_delays), 0)
            shift = base - drift  # this chunk's delays on the whole problem's budget
            for b, t in chosen.delays.items():
                if b in renumber:
                    delays[renumber[b]] = t + shift
            for n in names:
                for port in {l.src_port for l in sub.links if l.src == n}:
                    known[n, port, cluster[n]] = delays[assignment[n]]
        parts.append({"chunk": k, "items": len(names), "status": str(solved.result.status),
                      "objective": objective(sub, chosen), "bound": solved.result.bound,
                      "warm_start": objective(sub, local_hint)})
    if problem.retiming is not None:
        # a value from outside the problem starts as late as its first reader allows (fewest retiming bins)
        for p, q, _ in cross_arcs(problem, assignment):
            if isinstance(p, tuple):
                start = delays[q] - problem.retiming.hop_latency
                sources[p[1]] = min(sources.get(p[1], start), start)
        joined = PartitionDecision(assignment, types, delays, sources,
                                   required_retiming(problem, assignment, delays, sources))
    else:
        joined = PartitionDecision(assignment, types)
    # an order-only link between chunks carries no value, so no chunk fixed a delay for it: the chunks'
    # own delays are kept only when every precedence holds (the whole-actor reschedule always does)
    candidates = [joined] if quotient_acyclic(problem, assignment) and schedule_holds(problem, joined) else []
    if problem.retiming is not None:
        candidates.append(complete(problem, assignment, types))  # rescheduled as a whole
    best = min([hint] + candidates, key=lambda d: objective(problem, d))
    value = objective(problem, best)
    lb = lower_bound(problem)
    bound = min(problem.weights.bins * lb.cost, value)
    status = Status.OPTIMAL if value <= bound + 1e-9 else Status.FEASIBLE
    final = SolveResult(status, value, bound, relative_gap(value, bound), backend=results[-1].backend,
                        solver_version=results[-1].solver_version,
                        limit_reached=status != Status.OPTIMAL and any(r.limit_reached for r in results),
                        message=f"{len(chunks)} chunks of about {SETTINGS.chunk_size} items solved in turn")
    details = {"variant": "ours", "chunks": parts, "work": budget.elapsed(),
               "lower_bound": {"bins": lb.bins, "reason": lb.reason}, "warm_start": objective(problem, hint),
               "candidates": [objective(problem, d) for d in candidates]}
    return Solved(combine(results, final), best, [], details)


def schedule_holds(problem: PartitionProblem, decision: PartitionDecision) -> bool:
    """Every cross-bin value arrives before its bin starts (L later) and every order-only link between
    bins of one cluster keeps its order; trivially true without retiming (no schedule)."""
    if problem.retiming is None:
        return True
    lat, assign, delays = problem.retiming.hop_latency, decision.assignment, decision.delays
    for p, q, _ in cross_arcs(problem, assign):
        start = decision.source_delays.get(p[1]) if isinstance(p, tuple) else delays.get(p)
        if start is None or q not in delays or delays[q] < start + lat:
            return False
    cluster = {i.name: i.cluster for i in problem.items}
    return all(delays[assign[d]] >= delays[assign[s]] for s, d in problem.order_links()
               if assign[s] != assign[d] and cluster[s] == cluster[d])
