"""Iteration domains as NumPy arrays: the points of a statement's box and the elements its accesses touch."""

from __future__ import annotations

import numpy as np

from solvermap.ir.loopnest import Access, Program, Statement


def grid(stmt: Statement) -> list[np.ndarray]:
    """Every point of a statement's box, one array per loop (row-major order of the loops)."""
    axes = [np.arange(loop.lo, loop.hi, dtype=np.int64) for loop in stmt.loops]
    return [g.ravel() for g in np.meshgrid(*axes, indexing="ij")] if axes else []


def indices(access: Access, points: list[np.ndarray]) -> tuple[np.ndarray, ...]:
    """The index, per dimension, that ``access`` touches at each point."""
    n = len(points[0]) if points else 1
    out = []
    for row, off, div in zip(access.coeffs, access.offsets, access.divisors):
        v = np.full(n, off, dtype=np.int64)
        for c, g in zip(row, points):
            if c:
                v = v + c * g
        out.append(np.floor_divide(v, div))
    return tuple(out)


def flat(program: Program, access: Access, points: list[np.ndarray]) -> np.ndarray:
    """The flat (row-major) element that ``access`` touches at each point."""
    return np.ravel_multi_index(indices(access, points), program.tensor(access.tensor).shape)
