"""Certified pruning: a design whose lower bounds the current front dominates is never fully evaluated.

Before a trial maps its workloads, :func:`prune` computes the design's certified lower bounds
(:mod:`.bounds`) and compares them, in minimisation form, with the feasible complete trials of the study so
far. When a front trial ``p`` satisfies ``p ≤ b`` in every objective and ``p < b`` in one, every value the
design could take is ``≥ b``, so ``p`` strictly dominates it: it cannot join the front, and its evaluation
would only confirm that. Such a trial is recorded as *pruned*, with its bounds and the dominating trial.
A design whose bounds prove it infeasible (more PBs than the array has, a cap below its bound) is pruned
too. Pruning looks at objectives only: a cap never lets a design through that it would otherwise keep, so
no constraint needs a bound for the pruning to be sound. Ties (``p == b``) are kept, so no design on the
exhaustive front (ties included) is ever pruned. The strict part asks ``p < b`` by more than a relative
1e-9 (rounding in aggregates); ``p ≤ b`` is exact, so an exact bound (the chip area) that equals a front
trial's value still prunes.

How Optuna's samplers see a pruned trial (Optuna 5): it is told with ``TrialState.PRUNED``, no values.

* TPE uses COMPLETE and PRUNED trials: a pruned trial without intermediate values ranks after every
  complete one, so it falls into the "bad" group and pulls the density of good designs away from it; a
  certainly infeasible one carries a positive ``mapping`` constraint and sorts with the infeasible trials.
* NSGA-II/III build their populations from COMPLETE trials only, so they ignore pruned trials: an
  offspring that is pruned is simply replaced by the next one the same parents produce (rejection), and a
  generation fills with full evaluations. Multi-objective studies cannot report intermediate values to
  Optuna, and telling the bounds as values would put optimistic numbers into the population; we chose
  rejection and say so here.
* Random, QMC and grid do not learn.

A pruned trial finishes the trial (it counts toward ``n_trials`` like Optuna's own pruned trials); the
study tables keep it apart (state ``pruned``) and count full evaluations separately.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from solvermap.search.bounds import DesignBounds, design_bounds
from solvermap.search.pareto import pareto_mask, to_minimisation

RELATIVE_SLACK = 1e-9


def front_points(study: Any, directions: list[str]) -> list[tuple[int, list[float]]]:
    """The non-dominated feasible complete trials of an Optuna study: (number, values as told)."""
    from optuna.trial import TrialState

    done = [(t.number, list(t.values)) for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
            if (t.user_attrs.get("result") or {}).get("feasible") and t.values is not None
            and all(math.isfinite(v) for v in t.values)]
    if not done:
        return []
    points = to_minimisation(np.array([v for _, v in done], dtype=float), directions)
    return [entry for entry, keep in zip(done, pareto_mask(points)) if keep]


def dominator(bound: list[float], front: list[tuple[int, list[float]]], directions: list[str]) -> tuple[int, list[float]] | None:
    """The first front entry that strictly dominates every design with lower bounds ``bound``
    (minimisation form, −inf where unbounded), or None."""
    b = np.array(bound, dtype=float)
    margin = np.where(np.isfinite(b), np.abs(b) * RELATIVE_SLACK, 0.0)
    for number, values in front:
        p = to_minimisation(np.array(values, dtype=float), directions)
        if np.all(p <= b) and np.any(p < b - margin):
            return number, values
    return None


def prune(evaluator: Any, config: dict[str, Any], front: list[tuple[int, list[float]]]) -> tuple[Any, DesignBounds | None]:
    """``(pruned TrialResult or None to evaluate it, the design's bounds or None)`` for ``config``."""
    from solvermap.search.evaluate import TrialResult

    study = evaluator.study
    bounds: DesignBounds | None = design_bounds(evaluator, config)
    if bounds is None:
        return None, None
    labels = [o.label for o in study.objectives]
    named = {label: value for label, value in zip(labels, bounds.objectives) if value is not None}
    constraints = {"mapping": 0.0, **{cap.key: 0.0 for cap in study.constraints}}
    if bounds.infeasible:
        return TrialResult(config, False, f"certainly infeasible: {bounds.infeasible}",
                           constraints={**constraints, "mapping": 1.0}, outcome="pruned", bounds=named), bounds
    hit = dominator(bounds.minimisation(study.directions), front, study.directions)
    if hit is None:
        return None, bounds
    number, values = hit
    text = ", ".join(f"{label} {v:.4g}" for label, v in zip(labels, values))
    return TrialResult(config, False, f"dominated by trial {number} ({text})", constraints=constraints, outcome="pruned",
                       bounds=named, dominated_by={"number": number, "values": dict(zip(labels, values))}), bounds
