"""Pareto fronts and hypervolume of a design study's objectives: moocore does the computing.

Points are in *minimisation form* (a maximised objective is negated first, :func:`to_minimisation`).
:func:`pareto_mask` marks the non-dominated points (``moocore.is_nondominated``; ties all stay).
:func:`hypervolume` is the exact volume dominated by a set of points and bounded by a reference point
(``moocore.hypervolume``); only points strictly inside the reference box count.

What is this tool's own: :func:`normaliser` maps each objective to [0, 1] over a reference set of points
(the study's feasible trials, or an exhaustive enumeration) so that objectives of different units weigh
alike; the reference point is then 1.1 in every objective (the usual 10 % margin, so extreme points
count); non-finite points (failed or infeasible trials) never enter a front or a volume.
"""

from __future__ import annotations

from collections.abc import Sequence

import moocore
import numpy as np

REFERENCE = 1.1


def to_minimisation(values: np.ndarray, directions: Sequence[str]) -> np.ndarray:
    signs = np.array([1.0 if d == "minimize" else -1.0 for d in directions])
    return np.asarray(values, dtype=float) * signs


def pareto_mask(points: np.ndarray) -> np.ndarray:
    """True for each point no other point dominates (≤ in all objectives, < in one); ties all stay."""
    points = np.asarray(points, dtype=float)
    if len(points) == 0:
        return np.zeros(0, dtype=bool)
    return np.asarray(moocore.is_nondominated(points, keep_weakly=True), dtype=bool)


def hypervolume(points: np.ndarray, ref: Sequence[float]) -> float:
    """Exact volume of the region dominated by ``points`` and dominating ``ref`` (minimisation)."""
    ref = np.asarray(ref, dtype=float)
    points = np.asarray(points, dtype=float).reshape(-1, len(ref))
    points = points[np.all(points < ref, axis=1)]
    if len(points) == 0:
        return 0.0
    return float(moocore.hypervolume(points, ref=ref))


class Normaliser:
    """Affine map of minimisation-form points to [0, 1] per objective over a reference set."""

    def __init__(self, low: np.ndarray, high: np.ndarray) -> None:
        self.low = np.asarray(low, dtype=float)
        span = np.asarray(high, dtype=float) - self.low
        self.span = np.where(span > 0, span, 1.0)

    def __call__(self, points: np.ndarray) -> np.ndarray:
        return (np.asarray(points, dtype=float) - self.low) / self.span

    @property
    def ref(self) -> np.ndarray:
        return np.full(len(self.low), REFERENCE)


def normaliser(points: np.ndarray) -> Normaliser:
    points = np.asarray(points, dtype=float)
    finite = points[np.all(np.isfinite(points), axis=1)]
    if len(finite) == 0:
        return Normaliser(np.zeros(points.shape[1]), np.ones(points.shape[1]))
    return Normaliser(finite.min(axis=0), finite.max(axis=0))


def hypervolume_history(points: np.ndarray, feasible: Sequence[bool], norm: Normaliser) -> list[float]:
    """Normalised hypervolume of the feasible points among the first k, for k = 1..n (trial order)."""
    out, seen = [], []
    current = 0.0
    for point, ok in zip(np.asarray(points, dtype=float), feasible):
        if ok and np.all(np.isfinite(point)):
            seen.append(norm(point))
            current = hypervolume(np.array(seen), norm.ref)
        out.append(current)
    return out
