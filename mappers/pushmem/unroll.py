"""Unrolling reduction loops into the PE expression: the Halide schedule ``unroll(r)`` of seed 001 (001:L210).

The seed's stencil applications reach the push-memory backend with every reduction fully unrolled into
one expression ("reductions fully unrolled into the expression and constant kernels inlined", 001:L210;
the D2 rule of 001:L222 schedules such programs as stencil pipelines). A program written as Halide writes
it — ``blur(x, y) = 0; blur(x, y) += in(x + r.x, y + r.y)`` — gets the same treatment here: an
accumulating statement of a program without a tile loop whose reduction loops run at most ``max_taps``
iterations becomes one statement over its data-parallel loops that adds all of them at once,
``blur(x, y) += in(x, y) + in(x + 1, y) + ... + in(x + 4, y + 4)``, still accumulating onto its init. Its
PE then produces one result per cycle instead of one reduction step per cycle, and every access becomes
a constant-offset tap that shift registers and line buffers can serve (001:L256).

Only integer statements are unrolled: wrapping integer addition is associative, so the sum in any order
is the value the program's own order gives (a float sum would round differently). Tiled programs (DNN
pipelines) keep their reduction loops: there the PE accumulates in place by design (001:L224).
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np

from solvermap.ir.loopnest import NUMPY_DTYPES, Access, Call, Cast, Expr, Load, Program, Statement


def _substitute(access: Access, keep: list[int], fixed: dict[int, int]) -> Access:
    coeffs = tuple(tuple(row[j] for j in keep) for row in access.coeffs)
    offsets = tuple(off + sum(row[j] * v for j, v in fixed.items()) for row, off in zip(access.coeffs, access.offsets))
    return Access(access.tensor, coeffs, offsets, access.divisors, tuple(access.loop_vars[j] for j in keep))


def _instance(expr: Expr, keep: list[int], fixed: dict[int, int]) -> Expr:
    if isinstance(expr, Load):
        return Load(_substitute(expr.access, keep, fixed))
    if isinstance(expr, Cast):
        return Cast(expr.dtype, _instance(expr.arg, keep, fixed))
    if isinstance(expr, Call):
        return Call(expr.op, tuple(_instance(a, keep, fixed) for a in expr.args))
    return expr


def unrollable(stmt: Statement, max_taps: int) -> bool:
    red = [j for j, loop in enumerate(stmt.loops) if loop.kind == "reduction"]
    if not stmt.accumulate or not red or red != list(range(len(stmt.loops) - len(red), len(stmt.loops))):
        return False
    if any(row[j] for row in stmt.write.coeffs for j in red):
        return False
    taps = int(np.prod([stmt.loops[j].extent for j in red]))
    return taps <= max_taps and bool(np.issubdtype(NUMPY_DTYPES[stmt.dtype], np.integer))


def unroll_statement(stmt: Statement) -> Statement:
    red = [j for j, loop in enumerate(stmt.loops) if loop.kind == "reduction"]
    keep = [j for j in range(len(stmt.loops)) if j not in red]
    terms = [_instance(stmt.expr, keep, dict(zip(red, point)))
             for point in itertools.product(*(range(stmt.loops[j].lo, stmt.loops[j].hi) for j in red))]
    total = terms[0]
    for term in terms[1:]:
        total = Call("add", (total, term))
    loops = tuple(stmt.loops[j] for j in keep)
    attrs = {**stmt.attrs, "unrolled": [stmt.loops[j].var for j in red]}
    return Statement(stmt.name, loops, _substitute(stmt.write, keep, {}), total, stmt.dtype, True, attrs)


def unroll_reductions(program: Program, max_taps: int) -> Program:
    """``program`` with every reduction of at most ``max_taps`` iterations unrolled (untiled programs only)."""
    if max_taps <= 0 or program.attrs.get("coarse_loops"):
        return program
    statements = [unroll_statement(s) if unrollable(s, max_taps) else s for s in program.statements]
    if all(a is b for a, b in zip(statements, program.statements)):
        return program
    return replace(program, statements=statements)

