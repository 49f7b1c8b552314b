"""Tensorize: map the instruction's loops onto the operation's loops (UNIT array-access isomorphism).

Seed 002:L171-L185 (definitions A, B, f, S(u), S'(u)), L185 (several feasible mappings form a tuning
dimension), L220 (the implementation greedily takes the innermost eligible one), L87 (padding so loops
tile by the instruction extents). Digest 002 §U2 suggests this assignment model.

Sets      A  program loops (the operation's loop variables), B  instruction loops,
          U  access pairs (u, v) bound by Algorithm 1 (operation access u, instruction access v),
             the accumulator pair included
Params    kind(a), kind(b) ∈ {data_parallel, reduction};  e_a, e_b extents;  P_ab = ⌈e_a/e_b⌉·e_b;
          S(u), S(v) loop variables of each index expression;  allow_padding;
          pad[a,b] = round(1000·log2(P_ab/e_a)),  prep1[u,a,b], prep2[u,(a,b),(a',b')] operand-
          preparation costs and rank(a) — all from ``formulations/problems/tensorize.py``
Vars      m[a,b] ∈ {0,1}  program loop a is tiled by, and mapped to, instruction loop b (f(a) = b)
          g[u,(a,b),(a',b')] ∈ {0,1}  both pairs chosen (only where prep2 > 0)
Minimise  Σ m[a,b]·(pad[a,b] + rank(a) + Σ_u prep1[u,a,b]) + Σ g·prep2
s.t.      cover          Σ_a m[a,b] = 1                        ∀ b       (every instruction loop is fed)
          injective      Σ_b m[a,b] ≤ 1                        ∀ a       (f is a function on A)
          annotation     m[a,b] = 0   if kind(a) ≠ kind(b)                (002:L177)
          divisibility   m[a,b] = 0   if e_b ∤ e_a and not allow_padding (002:L87)
          padding        m[a,b] = 0   if e_b ∤ e_a and padding a is unsafe: a padded reduction loop must
                         index some source through a dim of its own (padded reads are zeros), a padded
                         data-parallel loop the written array (padded writes land in cropped padding)
          access-subset  m[a,b] = 0   ∀ (u,v) ∈ U, a ∈ S(u), b ∉ S(v)    (S'(u) ⊆ S(v), 002:L183)
          accumulator-lanes  m[a,b] + m[a',b'] ≤ 1  for data-parallel a ≠ a' that share a dim of the
                         written access (two lanes could write one element: our addition — S'(u) ⊆ S(v)
                         alone admits out[m + n] for a 2-D accumulator)
          operand-preparation  g ≥ m[a,b] + m[a',b'] − 1

The subset rule is exactly S'(u) ⊆ S(v): S'(u) = {f(a) | a ∈ S(u) ∩ A} leaves S(v) iff some
a ∈ S(u) is mapped to some b ∉ S(v). Instruction loops b ∈ S(v) with no mapped a ∈ S(u) are lanes the
data is broadcast along (002:L183).

One MathOpt model runs on every MILP backend (cpsat, highs, scip, cbc); :func:`build_cpsat` is the same
model in native CP-SAT, used to optimise and, without objective, to enumerate every feasible mapping
(:func:`enumerate_mappings`, the tuning dimension of 002:L185). :func:`applicability` names the rule
that empties the feasible set before any model is built.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from solvermap.formulations.decision import CpSatModel, Solved, one_shot, solve_model
from solvermap.formulations.problems.tensorize import (
    RANK_WEIGHT,
    TensorizeMapping,
    TensorizeProblem,
    dims_of,
    mapping_from_pairs,
    objective,
    pad_cost,
    padding_is_safe,
    pair_prep_cost,
    unary_prep_cost,
)
from solvermap.formulations.solver import ModelBuilder, SolverConfig, linear_sum

NAME = "tensorize"
KIND = "milp"


# ------------------------------------------------------------------ rule tables


def forbidden(problem: TensorizeProblem) -> dict[tuple[str, str], tuple[str, str]]:
    """(a, b) → (constraint group, reason) for every pair a rule forbids."""
    out: dict[tuple[str, str], tuple[str, str]] = {}
    for a in problem.loops:
        for b in problem.instruction_loops:
            if a.kind != b.kind:
                out[(a.name, b.name)] = ("annotation", f"{a.name} is {a.kind}, {b.name} is {b.kind}")
                continue
            for pair in problem.operands:
                if a.name in pair.s_program and b.name not in pair.s_instr:
                    out[(a.name, b.name)] = (
                        "access-subset",
                        f"{a.name} indexes {pair.program_access.text()} but {b.name} does not index "
                        f"{pair.instr_access.text()} (S'(u) ⊄ S(v))")
                    break
            else:
                if a.extent % b.extent and not problem.allow_padding:
                    out[(a.name, b.name)] = ("divisibility", f"{a.name} extent {a.extent} is not a multiple of "
                                                             f"{b.name} extent {b.extent} and padding is disabled")
                elif a.extent % b.extent and not padding_is_safe(problem, a.name):
                    out[(a.name, b.name)] = ("padding", f"padding {a.name} would touch real data: no "
                                                        f"{'source' if a.kind == 'reduction' else 'written'} access "
                                                        f"indexes {a.name} through a dimension of its own")
    return out


def conflicts(problem: TensorizeProblem) -> list[tuple[tuple[str, str], tuple[str, str], str]]:
    """Pairs of (a, b) choices that cannot both hold: two data-parallel program loops sharing a dim of
    the written access, mapped to two different instruction lanes (group ``accumulator-lanes``)."""
    write = next(p for p in problem.operands if p.is_accumulator)
    out = []
    dp = [a for a in problem.loops if a.kind == "data_parallel" and a.name in write.s_program]
    for a1, a2 in itertools.combinations(dp, 2):
        if set(dims_of(write.program_access, a1.name)) & set(dims_of(write.program_access, a2.name)):
            for b1, b2 in itertools.permutations([b.name for b in problem.instruction_loops], 2):
                out.append(((a1.name, b1), (a2.name, b2),
                            f"{a1.name} and {a2.name} share a dim of {write.program_access.text()}"))
    return out


def _has_matching(problem: TensorizeProblem, allowed: dict[str, list[str]], pairwise=()) -> bool:
    order = sorted(problem.instruction_loops, key=lambda b: len(allowed[b.name]))
    banned = {(p1, p2) for p1, p2, _ in pairwise} | {(p2, p1) for p1, p2, _ in pairwise}

    def extend(k: int, chosen: list[tuple[str, str]]) -> bool:
        if k == len(order):
            return True
        b = order[k].name
        return any(extend(k + 1, chosen + [(a, b)]) for a in allowed[b]
                   if all(a != c[0] for c in chosen) and all(((a, b), c) not in banned for c in chosen))

    return extend(0, [])


def applicability(problem: TensorizeProblem) -> tuple[str, str] | None:
    """None if a feasible mapping exists, else (rule, reason) for the first rule that empties the set."""
    table = forbidden(problem)
    names = [a.name for a in problem.loops]
    stages = (("reduction-structure", {"annotation"}),
              ("no-access-mapping", {"annotation", "access-subset"}),
              ("indivisible-extent", {"annotation", "access-subset", "divisibility", "padding"}))
    for rule, groups in stages:
        allowed = {b.name: [a for a in names if table.get((a, b.name), ("", ""))[0] not in groups]
                   for b in problem.instruction_loops}
        if not _has_matching(problem, allowed, conflicts(problem) if rule == "no-access-mapping" else ()):
            lines = []
            for b in problem.instruction_loops:
                why = [f"{a}: {table[(a, b.name)][1]}" for a in names
                       if (a, b.name) in table and table[(a, b.name)][0] in groups - {"annotation"}]
                if not allowed[b.name]:
                    lines.append(f"instruction loop {b.name} ({b.kind}, extent {b.extent}) has no candidate"
                                 + (" (" + "; ".join(why) + ")" if why and rule != "reduction-structure" else ""))
            pairwise = sorted({why for _, _, why in conflicts(problem)}) if rule == "no-access-mapping" else []
            if lines:
                detail = "; ".join(lines)
            elif pairwise:
                detail = "; ".join(pairwise) + " (two accumulator lanes would write one element)"
            else:
                detail = "the candidate loops cannot be matched one-to-one"
            if rule == "reduction-structure":
                detail = f"{problem.instruction} loops cannot be matched to loops of the same annotation: {detail}"
            return rule, detail
    return None


def diagnose(problem: TensorizeProblem) -> str | None:
    verdict = applicability(problem)
    return None if verdict is None else f"{verdict[0]}: {verdict[1]}"


# ------------------------------------------------------------------ cost terms


def _terms(problem: TensorizeProblem) -> tuple[dict[tuple[str, str], int], dict[tuple, int]]:
    """Linear cost per pair (a, b) and pairwise costs per (operand, (a,b), (a',b'))."""
    linear: dict[tuple[str, str], int] = {}
    pairs = [(a.name, b.name) for a in problem.loops for b in problem.instruction_loops]
    for a, b in pairs:
        linear[(a, b)] = pad_cost(problem, a, b) + RANK_WEIGHT * problem.loop(a).rank + sum(
            unary_prep_cost(problem, op, a, b) for op in problem.operands)
    quadratic: dict[tuple, int] = {}
    for k, op in enumerate(problem.operands):
        for (a1, b1), (a2, b2) in itertools.combinations(pairs, 2):
            cost = pair_prep_cost(problem, op, a1, b1, a2, b2)
            if cost:
                key = (k, (a1, b1), (a2, b2))
                quadratic[key] = quadratic.get(key, 0) + cost
    return linear, quadratic


# ------------------------------------------------------------------ MILP (MathOpt: every MILP backend)


@dataclass
class MilpBuild:
    builder: ModelBuilder
    m: dict[tuple[str, str], Any]


def build(problem: TensorizeProblem, config: SolverConfig | None = None, hint: TensorizeMapping | None = None) -> MilpBuild:
    mb = ModelBuilder(f"tensorize[{problem.workload}/{problem.instruction}]")
    m = {(a.name, b.name): mb.binary(f"m[{a.name},{b.name}]") for a in problem.loops for b in problem.instruction_loops}
    A = [a.name for a in problem.loops]
    B = [b.name for b in problem.instruction_loops]
    # cover
    for b in B:
        mb.add(linear_sum(m[(a, b)] for a in A) == 1, "cover", b)
    # injective
    for a in A:
        mb.add(linear_sum(m[(a, b)] for b in B) <= 1, "injective", a)
    # annotation, access-subset, divisibility
    for (a, b), (group, _reason) in forbidden(problem).items():
        mb.add(m[(a, b)] == 0, group, f"{a},{b}")
    # accumulator-lanes
    for p1, p2, _ in conflicts(problem):
        mb.add(m[p1] + m[p2] <= 1, "accumulator-lanes", f"{p1},{p2}")
    # operand-preparation (pairwise products) and objective
    linear, quadratic = _terms(problem)
    g_terms = []
    for (k, p1, p2), cost in quadratic.items():
        g = mb.binary(f"g[{k},{p1},{p2}]")
        mb.add(g >= m[p1] + m[p2] - 1, "operand-preparation", f"{k},{p1},{p2}")
        g_terms.append(cost * g)
    mb.minimize(linear_sum([linear[p] * m[p] for p in m] + g_terms))
    if hint is not None:
        chosen = {(a, b) for b, a in hint.loop_map}
        for p, var in m.items():
            mb.hint(var, 1.0 if p in chosen else 0.0)
    return MilpBuild(mb, m)


def decode(problem: TensorizeProblem, built: MilpBuild, solution: Any) -> TensorizeMapping:
    pairs = {b: a for (a, b), var in built.m.items() if solution.is_one(var)}
    return mapping_from_pairs(problem, pairs)


def solve(problem: TensorizeProblem, config: SolverConfig, hint: TensorizeMapping | None = None) -> Solved[TensorizeMapping]:
    solved = one_shot(build, decode, problem, config, hint)
    if solved.decision is not None:
        solved.details["objective_check"] = objective(problem, solved.decision)
    return solved


# ------------------------------------------------------------------ native CP-SAT (optimise / enumerate)


def build_cpsat(problem: TensorizeProblem, *, with_objective: bool = True) -> CpSatModel:
    from ortools.sat.python import cp_model

    model = cp_model.CpModel()
    A = [a.name for a in problem.loops]
    B = [b.name for b in problem.instruction_loops]
    m = {(a, b): model.NewBoolVar(f"m[{a},{b}]") for a in A for b in B}
    for b in B:  # cover
        model.AddExactlyOne(m[(a, b)] for a in A)
    for a in A:  # injective
        model.AddAtMostOne(m[(a, b)] for b in B)
    for (a, b) in forbidden(problem):  # annotation, access-subset, divisibility, padding
        model.Add(m[(a, b)] == 0)
    for p1, p2, _ in conflicts(problem):  # accumulator-lanes
        model.AddBoolOr([m[p1].Not(), m[p2].Not()])
    if with_objective:
        linear, quadratic = _terms(problem)
        terms = [linear[p] * m[p] for p in m]
        for (k, p1, p2), cost in quadratic.items():  # operand-preparation: g = m1 ∧ m2
            g = model.NewBoolVar(f"g[{k},{p1},{p2}]")
            model.AddBoolOr([m[p1].Not(), m[p2].Not(), g])
            terms.append(cost * g)
        model.Minimize(sum(terms))
    return CpSatModel(model, m)


def solve_native(problem: TensorizeProblem, config: SolverConfig, hint: TensorizeMapping | None = None) -> Solved[TensorizeMapping]:
    built = build_cpsat(problem)
    if hint is not None:
        chosen = {(a, b) for b, a in hint.loop_map}
        for p, var in built.vars.items():
            built.model.AddHint(var, p in chosen)
    result, solver = solve_model(built, config.with_(backend="cpsat"))
    decision = None
    if result.status.has_solution:
        decision = mapping_from_pairs(problem, {b: a for (a, b), v in built.vars.items() if solver.Value(v)})
    return Solved(result, decision)


def enumerate_mappings(problem: TensorizeProblem, config: SolverConfig | None = None) -> list[TensorizeMapping]:
    """Every feasible mapping (CP-SAT ``enumerate_all_solutions``), best objective first (002:L185)."""
    from ortools.sat.python import cp_model

    config = config or SolverConfig()
    built = build_cpsat(problem, with_objective=False)
    found: list[dict[str, str]] = []

    class Collect(cp_model.CpSolverSolutionCallback):
        def __init__(self) -> None:
            super().__init__()

        def on_solution_callback(self) -> None:
            found.append({b: a for (a, b), v in built.vars.items() if self.Value(v)})

    solver = cp_model.CpSolver()
    solver.parameters.enumerate_all_solutions = True
    solver.parameters.catch_sigint_signal = False  # Ctrl-C must reach Python
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = config.seed
    if config.time_limit_s is not None:
        solver.parameters.max_time_in_seconds = config.time_limit_s
    solver.Solve(built.model, Collect())
    mappings = [mapping_from_pairs(problem, pairs) for pairs in found]
    return sorted(mappings, key=lambda d: (objective(problem, d), d.loop_map))


def brute_force(problem: TensorizeProblem) -> Iterator[TensorizeMapping]:
    """All injective maps B → A passing the rules, by plain enumeration (for tests and small checks)."""
    table = forbidden(problem)
    banned = {(p1, p2) for p1, p2, _ in conflicts(problem)}
    B = [b.name for b in problem.instruction_loops]
    for combo in itertools.permutations([a.name for a in problem.loops], len(B)):
        chosen = list(zip(combo, B))
        if all(p not in table for p in chosen) and not any((p1, p2) in banned for p1 in chosen for p2 in chosen):
            yield mapping_from_pairs(problem, dict(zip(B, combo)))
