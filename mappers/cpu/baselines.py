"""UNIT's own heuristics, run beside the solver as baselines.

* :func:`unit_greedy_mapping` — the Inspector as implemented (002:L220): "enumerate the loops from the
  tensor's innermost dimension to outermost dimension, and greedily return the first eligible one".
  Candidates for each instruction loop (in the instruction's loop order) are the program loops of the
  same annotation, innermost first; eligible = S'(u) ⊆ S(v) for every bound access pair and perfect
  tiling (UNIT pads at the graph level so loops tile, 002:L87). If no perfectly tiling mapping exists
  and padding is allowed, the first eligible mapping with padding is returned (our reading; the seed
  does not say what the greedy does then).
* :func:`unit_schedule` — UNIT's CPU rule for one tuning pair (parallel limit, unroll limit)
  (002:L203-L205, L308-L310): unroll the innermost data-parallel loops up to the unroll limit (tiling
  the next loop by its largest fitting divisor), then fuse the outermost remaining loops up to the
  parallel limit. The seed writes "< 3000" and "< 8" but names the pair (3000, 8); we read the limits
  as inclusive. The seed fuses first; we unroll first so that a small layer whose whole nest is under
  3000 is still unrolled (fusing first would leave nothing to unroll) — an assumption.
* :func:`unit_pairs` — UNIT's enumeration of tuning pairs starting at (3000, 8) (002:L310); the later
  pairs walk the target's ``parallel_limits`` × ``unroll_limits`` lists by increasing index sum (our
  order; the seed does not print it).
"""

from __future__ import annotations

import itertools

from solvermap.formulations.problems.tensorize import (
    TensorizeMapping,
    TensorizeProblem,
    dims_of,
    mapping_from_pairs,
    padding_is_safe,
)
from solvermap.hardware.cpu.nest import RewrittenNest, Schedule


def _eligible(problem: TensorizeProblem, a: str, b: str, *, perfect: bool) -> bool:
    la, lb = problem.loop(a), problem.instruction_loop(b)
    if la.kind != lb.kind:
        return False
    if la.extent % lb.extent and (perfect or not problem.allow_padding):
        return False
    for pair in problem.operands:
        if a in pair.s_program and b not in pair.s_instr:
            return False
    if la.extent % lb.extent:
        return padding_is_safe(problem, a)
    return True


def _shares_output_dim(problem: TensorizeProblem, combo: tuple[str, ...]) -> bool:
    write = next(p for p in problem.operands if p.is_accumulator).program_access
    dims = [set(dims_of(write, a)) for a in combo if problem.loop(a).kind == "data_parallel" and a in write.loop_vars]
    return any(d1 & d2 for d1, d2 in itertools.combinations(dims, 2))


def unit_greedy_mapping(problem: TensorizeProblem) -> TensorizeMapping | None:
    """First eligible mapping, innermost loops first (002:L220)."""
    order = sorted(problem.loops, key=lambda l: l.rank)  # innermost first
    B = [b.name for b in problem.instruction_loops]
    for perfect in (True, False):
        candidates = [[a.name for a in order if _eligible(problem, a.name, b, perfect=perfect)] for b in B]
        for combo in itertools.product(*candidates):
            if len(set(combo)) == len(combo) and not _shares_output_dim(problem, combo):
                return mapping_from_pairs(problem, dict(zip(B, combo)))
    return None


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def schedule_for_limits(nest: RewrittenNest, order: tuple[str, ...], parallel_limit: int, unroll_limit: int) -> Schedule:
    """UNIT's rule for one (parallel, unroll) pair on a given dp loop order (see module docstring)."""
    extents = {l.var: l.extent for l in nest.dp_loops}
    n = len(order)
    # breakpoint 2 (unroll) from the innermost loop outwards
    unroll, level2, factor2 = 1, n - 1, 1
    for k in range(n - 1, -1, -1):
        e = extents[order[k]]
        if unroll * e <= unroll_limit:
            unroll *= e
            level2, factor2 = k, e
            continue
        f = max(d for d in _divisors(e) if unroll * d <= unroll_limit)
        level2, factor2 = k, f
        unroll *= f
        break
    # breakpoint 1 (fused parallel) from the outermost loop inwards, before breakpoint 2
    fused, level1, factor1 = 1, 0, extents[order[0]]  # default: nothing fused
    for k in range(0, level2 + 1):
        e = extents[order[k]]
        avail = e // factor2 if k == level2 else e  # the part of loop k above breakpoint 2
        if k < level2 and fused * e <= parallel_limit:
            fused *= e
            level1, factor1 = k + 1, extents[order[k + 1]] if k + 1 < n else 1
            continue
        options = [d for d in _divisors(avail) if fused * d <= parallel_limit]
        q = max(options)
        level1 = k
        factor1 = e // q  # inner part below the breakpoint
        fused *= q
        break
    if level1 > level2:
        level1, factor1 = level2, extents[order[level2]] // (extents[order[level2]] // factor2)
    return Schedule(tuple(order), (level1, factor1), (level2, factor2))


def unit_schedule(nest: RewrittenNest, parallel_limit: int = 3000, unroll_limit: int = 8) -> Schedule:
    """UNIT's schedule for one tuning pair on the program's own loop order."""
    return schedule_for_limits(nest, tuple(l.var for l in nest.dp_loops), parallel_limit, unroll_limit)


def unit_pairs(parallel_limits: list[int], unroll_limits: list[int]) -> list[tuple[int, int]]:
    """Tuning pairs in UNIT's enumeration order: the default pair first, then by increasing index sum."""
    pairs = [(p, u, i + j) for i, p in enumerate(parallel_limits) for j, u in enumerate(unroll_limits)]
    return [(p, u) for p, u, _ in sorted(pairs, key=lambda t: (t[2], unroll_limits.index(t[1])))]
