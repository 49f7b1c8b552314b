"""Certified lower bounds of a design's objectives, before it is evaluated.

For each workload of the study, the family's pipeline says what it can certify without solving
(``Pipeline.bounds`` → :class:`~solvermap.mappers.pipeline.LowerBounds`; Plasticine: cycles from firings
and DRAM bandwidth, PBs, area and power from the merge's type-exclusive capacity bounds,
:mod:`solvermap.mappers.plasticine.bounds`). A derived metric (``metrics:``) whose expression names only
``target.*``, ``workload.*`` and metrics the pipeline knows exactly before the run (``LowerBounds.exact``,
e.g. Plasticine's ``network_area_mm2``) is *exact* (the chip area of the default study) and is its own
bound; one that names another metric has none.

An objective's bound aggregates the per-workload bounds the way the objective aggregates values (geomean,
mean, sum, max, min are non-decreasing in every argument, so the aggregate of lower bounds is a lower
bound of the aggregate). Only minimised objectives get a bound; a maximised one would need an upper bound,
so its entry in minimisation form is −inf, which nothing dominates. A ``max`` cap whose metric's bound is
already above the cap, or a pipeline's own proof (more PCUs needed than the array has), makes the design
certainly infeasible.

:func:`violations` re-checks the bounds after a full evaluation: a value below its certified bound is a
bug in a bound, logged and recorded with the trial, never silently used.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from solvermap.errors import ConfigError, InputError


@dataclass
class DesignBounds:
    """Lower bounds of one configuration: per objective (the objectives' own units and directions; None
    where there is none), per workload and metric, and the reason it is certainly infeasible, if any."""

    objectives: list[float | None]
    per_workload: dict[str, dict[str, float]] = field(default_factory=dict)
    infeasible: str = ""

    def minimisation(self, directions: list[str]) -> list[float]:
        """The objective bounds in minimisation form; −inf where there is no bound."""
        return [b if b is not None and d == "minimize" else -math.inf for b, d in zip(self.objectives, directions)]

    def to_json(self) -> dict[str, Any]:
        return {"objectives": self.objectives, "per_workload": self.per_workload, "infeasible": self.infeasible}


def _exact_metrics(evaluator: Any, exact: Mapping[str, float], spec: Mapping[str, Any],
                   params: Mapping[str, Any]) -> dict[str, float]:
    """The study's derived metrics that name no pipeline metric but the ``exact`` ones, in file order."""
    from solvermap.search.expressions import ExpressionError, evaluate, parse, resolver

    out: dict[str, float] = dict(exact)
    for name, text in evaluator.study.metrics.items():
        try:
            out[name] = float(evaluate(parse(text), resolver(out, spec, params)))
        except (ExpressionError, ArithmeticError, TypeError, ValueError):
            continue
    return out


def design_bounds(evaluator: Any, config: Mapping[str, Any]) -> DesignBounds | None:
    """Bounds of ``config`` under the study of ``evaluator`` (a :class:`~solvermap.search.evaluate.Evaluator`),
    or None when its pipeline certifies nothing or the configuration is rejected (the evaluation says why)."""
    from solvermap.formulations.solver import SolverConfig
    from solvermap.hardware.targets import load_target
    from solvermap.ir.workloads import build as build_workload
    from solvermap.mappers.pipeline import Context
    from solvermap.search.evaluate import aggregate
    from solvermap.search.space import split

    study = evaluator.study
    if evaluator.pipeline.bounds is None:
        return None
    per_workload: dict[str, dict[str, float]] = {}
    infeasible = []
    try:
        for ref in study.workloads:
            parts = split(study, config, ref.name, evaluator.workload_params[ref.name])
            spec = load_target(study.target.name, parts["target"])
            built = build_workload(ref.name, evaluator.family, {**ref.params, **parts["workload"]})
            ctx = Context(workload=built, target=spec, solver=SolverConfig(), options=parts["decisions"],
                          seed=study.seed)
            bounds = evaluator.pipeline.bounds(ctx)
            exact = {name: bounds.metrics[name] for name in bounds.exact}
            metrics = {**bounds.metrics, **_exact_metrics(evaluator, exact, spec.model_dump(), built.params)}
            per_workload[ref.name] = metrics
            if bounds.infeasible:
                infeasible.append(f"{ref.name}: {bounds.infeasible}")
    except (InputError, ConfigError):
        return None
    objectives: list[float | None] = []
    for objective in study.objectives:
        values = [m.get(objective.metric) for m in per_workload.values()]
        ok = objective.direction == "minimize" and all(v is not None and math.isfinite(v) for v in values)
        objectives.append(aggregate(values, objective.aggregate) if ok else None)
    for cap in study.constraints:
        values = [m.get(cap.metric) for m in per_workload.values()]
        if cap.max is None or any(v is None for v in values):
            continue
        value = aggregate(values, cap.aggregate or "max")
        if value > cap.max * (1 + 1e-9):
            infeasible.append(f"{cap.metric} is at least {value:.4g}, over the cap {cap.max:g}")
    return DesignBounds(objectives, per_workload, "; ".join(infeasible))


def violations(bounds: DesignBounds, values: list[float], labels: list[str]) -> list[str]:
    """Objectives whose evaluated value is below their certified bound (a bug in a bound)."""
    out = []
    for label, bound, value in zip(labels, bounds.objectives, values):
        if bound is not None and math.isfinite(value) and value < bound * (1 - 1e-9) - 1e-12:
            out.append(f"{label} {value:.6g} < bound {bound:.6g}")
    return out
