"""Iteration domains as NumPy arrays: the points of a statement's box and the elements its accesses touch."""

from __future__ import annotations

import numpy as np

from solvermap.ir.loopnest import Access, Program, Statement, access_indices


def grid(stmt: Statement) -> list[np.ndarray]:
    """Every point of a statement's box, one array per loop (row-major order of the loops)."""
    axes = [np.arange(loop.lo, loop.hi, dtype=np.int64) for loop in stmt.loops]
    return [g.ravel() for g in np.meshgrid(*axes, indexing="ij")] if axes else []


def indices(access: Access, points: list[np.ndarray]) -> tuple[np.ndarray, ...]:
    """The index, per dimension, that ``access`` touches at each point."""
    return access_indices(access, points, len(points[0]) if points else 1)


def flat(program: Program, access: Access, points: list[np.ndarray]) -> np.ndarray:
    """The flat (row-major) element that ``access`` touches at each point."""
    return np.ravel_multi_index(indices(access, points), program.tensor(access.tensor).shape)
