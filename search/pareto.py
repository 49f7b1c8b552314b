"""Pareto fronts and hypervolume, exact, for the handful of objectives a design study has.

Points are in *minimisation form* (a maximised objective is negated first, :func:`to_minimisation`).
:func:`pareto_mask` marks the non-dominated points. :func:`hypervolume` is the exact volume dominated
by a set of points and bounded by a reference point, computed by slicing along the last objective
(HSO: Zitzler's hypervolume by slicing objectives); with n points and d objectives it costs
O(n^(d-1) log n), fine for fronts of hundreds of points and d ≤ 4.

:func:`normaliser` maps each objective to [0, 1] over a reference set of points (the study's feasible
trials, or an exhaustive enumeration) so that objectives of different units weigh alike; the
reference point is then 1.1 in every objective (the usual 10 % margin, so extreme points count).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

REFERENCE = 1.1


def to_minimisation(values: np.ndarray, directions: Sequence[str]) -> np.ndarray:
    signs = np.array([1.0 if d == "minimize" else -1.0 for d in directions])
    return np.asarray(values, dtype=float) * signs


def pareto_mask(points: np.ndarray) -> np.ndarray:
    """True for each point no other point dominates (≤ in all objectives, < in one); ties all stay."""
    points = np.asarray(points, dtype=float)
    n = len(points)
    mask = np.ones(n, dtype=bool)
    for i in range(n):
        if not mask[i]:
            continue
        dominated_by = np.all(points <= points[i], axis=1) & np.any(points < points[i], axis=1)
        if dominated_by.any():
            mask[i] = False
    return mask


def _hv2(points: np.ndarray, ref: np.ndarray) -> float:
    order = np.argsort(points[:, 0], kind="stable")
    volume, best_y = 0.0, ref[1]
    for x, y in points[order]:
        if y < best_y:
            volume += (ref[0] - x) * (best_y - y)
            best_y = y
    return float(volume)


def hypervolume(points: np.ndarray, ref: Sequence[float]) -> float:
    """Exact volume of the region dominated by ``points`` and dominating ``ref`` (minimisation)."""
    ref = np.asarray(ref, dtype=float)
    points = np.asarray(points, dtype=float).reshape(-1, len(ref))
    points = points[np.all(points < ref, axis=1)]
    if len(points) == 0:
        return 0.0
    points = points[pareto_mask(points)]
    d = len(ref)
    if d == 1:
        return float(ref[0] - points[:, 0].min())
    if d == 2:
        return _hv2(points, ref)
    order = np.argsort(points[:, -1], kind="stable")
    points = points[order]
    volume = 0.0
    for k in range(len(points)):
        upper = points[k + 1, -1] if k + 1 < len(points) else ref[-1]
        depth = upper - points[k, -1]
        if depth > 0:
            volume += depth * hypervolume(points[: k + 1, :-1], ref[:-1])
    return float(volume)


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
