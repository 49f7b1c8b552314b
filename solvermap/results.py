"""Result types shared by every decision: checks, baselines and the per-decision record.

``DecisionRecord.to_json()`` is the ``--json`` contract of ``solvermap solve``::

    {decision, workload, target,
     solver{backend, status, objective, bound, gap, build_seconds, solve_seconds, ...},
     baseline{name, objective, all[...]}, check{ok, violations[{rule, message}]},
     validation{...}, solution{...}, details{...}, solution_source}

``check`` describes the solver's answer when there is one; when that answer failed its check and a
baseline was used instead (``solution_source`` = ``fallback:<baseline>``), ``check_used`` is the
used baseline's report.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from enum import Enum
from typing import Any


@dataclass(frozen=True)
class Violation:
    """One broken rule: ``rule`` is the rule's stable name, ``message`` says where and by how much."""

    rule: str
    message: str


@dataclass
class CheckReport:
    violations: list[Violation] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations

    def rules(self) -> set[str]:
        return {v.rule for v in self.violations}

    def add(self, rule: str, message: str) -> None:
        self.violations.append(Violation(rule, message))

    def to_json(self, limit: int = 50) -> dict[str, Any]:
        shown = [{"rule": v.rule, "message": v.message} for v in self.violations[:limit]]
        out: dict[str, Any] = {"ok": self.ok, "violations": shown}
        if len(self.violations) > limit:
            out["violations_omitted"] = len(self.violations) - limit
        return out


@dataclass
class BaselineResult:
    """A seed heuristic run on the same problem, scored by the same objective as the solver."""

    name: str
    objective: float | None
    seconds: float
    decision: Any = None
    check: CheckReport | None = None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "objective": _finite(self.objective), "seconds": self.seconds,
                "check_ok": None if self.check is None else self.check.ok}


@dataclass
class DecisionRecord:
    decision: str
    workload: str
    target: str
    solver: Any  # SolveResult (formulations.solver), kept untyped here to keep the root package light
    baseline: BaselineResult | None
    check: CheckReport
    validation: dict[str, Any] = field(default_factory=dict)
    solution: Any = None
    details: dict[str, Any] = field(default_factory=dict)
    baselines: list[BaselineResult] = field(default_factory=list)
    # "solver"; "baseline:<name>" when the solver found nothing better; "fallback:<name>" when the solver's
    # decision failed its check (``check`` is then the solver's report, ``check_used`` the baseline's)
    solution_source: str = "solver"
    check_used: CheckReport | None = None

    def to_json(self, *, with_solution: bool = True) -> dict[str, Any]:
        baseline = None
        if self.baseline is not None:
            baseline = {"name": self.baseline.name, "objective": _finite(self.baseline.objective),
                        "all": [b.to_json() for b in self.baselines]}
        out = {
            "decision": self.decision,
            "workload": self.workload,
            "target": self.target,
            "solver": self.solver.to_json(),
            "baseline": baseline,
            "check": self.check.to_json(),
            "validation": to_jsonable(self.validation),
            "solution_source": self.solution_source,
            **({"check_used": self.check_used.to_json()} if self.check_used is not None else {}),
            "details": to_jsonable(self.details),
        }
        if with_solution:
            out["solution"] = to_jsonable(self.solution)
        return out


def backstop_decisions(records: list[DecisionRecord]) -> list[str]:
    """The decisions whose solve the wall-clock backstop stopped before its deterministic budget: their answer
    may depend on machine load (``SolveResult.backstop_fired``), so a run that has any is not reproducible."""
    return [r.decision for r in records if getattr(r.solver, "backstop_fired", False)]


def _finite(value: float | None) -> float | None:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return None
    return value


def to_jsonable(value: Any) -> Any:
    """Plain JSON types from dataclasses, enums, tuples, numpy scalars/arrays and objects with to_json()."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if hasattr(value, "to_json") and callable(value.to_json):
        return to_jsonable(value.to_json())
    if isinstance(value, Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k) if not isinstance(k, tuple) else "|".join(map(str, k)): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else value
        return [to_jsonable(v) for v in items]
    try:
        import numpy as np

        if isinstance(value, np.generic):
            return to_jsonable(value.item())
        if isinstance(value, np.ndarray):
            return to_jsonable(value.tolist())
    except ImportError:  # pragma: no cover
        pass
    if hasattr(value, "model_dump"):
        return to_jsonable(value.model_dump())
    return str(value)
