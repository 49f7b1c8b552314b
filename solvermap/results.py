"""Result types shared by every decision: checks, baselines, the per-decision record and the results of
:func:`solvermap.map` and :func:`solvermap.solve`.

``DecisionRecord.to_json()`` is the ``--json`` contract of ``solvermap solve``::

    {decision, workload, target,
     solver{backend, status, objective, bound, gap, build_seconds, solve_seconds, ...},
     seconds,                      # the whole step: baselines, every solve, checks, simulation
     baseline{name, objective, all[...]}, check{ok, violations[{rule, message}]},
     validation{...}, solution{...}, details{...}, solution_source}

:class:`MapResult` (``solvermap map``) and :class:`DecisionResult` (``solvermap solve``) hold the records
of one run; their ``to_dict()`` is exactly the command's ``--json`` object and ``to_frame()`` the run's
``tables/decisions`` table.

``check`` describes the solver's answer when there is one; when that answer failed its check and a
baseline was used instead (``solution_source`` = ``fallback:<baseline>``), ``check_used`` is the
used baseline's report.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
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


class BaselineUnavailable(Exception):
    """Raised by a baseline that does not run on this problem (say, larger than its method handles within a
    deterministic size limit); the pipeline records the message as the baseline's ``unavailable`` reason."""


@dataclass
class BaselineResult:
    """A seed heuristic run on the same problem, scored by the same objective as the solver; ``unavailable``:
    why it did not run (:class:`BaselineUnavailable`), empty when it ran."""

    name: str
    objective: float | None
    seconds: float
    decision: Any = None
    check: CheckReport | None = None
    unavailable: str = ""

    def to_json(self) -> dict[str, Any]:
        out = {"name": self.name, "objective": _finite(self.objective), "seconds": self.seconds,
               "check_ok": None if self.check is None else self.check.ok}
        if self.unavailable:
            out["unavailable"] = self.unavailable
        return out


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
    seconds: float | None = None  # wall time of the whole step (set by the pipeline)

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
            "seconds": self.seconds,
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


    def to_row(self) -> dict[str, Any]:
        """One row of the ``decisions`` table: the solver's fields (``solver_*``), baseline, check, times."""
        row: dict[str, Any] = {"decision": self.decision, "workload": self.workload, "target": self.target,
                               **{f"solver_{k}": v for k, v in self.solver.to_json().items()}}
        row["seconds"] = self.seconds
        row["baseline_name"] = self.baseline.name if self.baseline else None
        row["baseline_objective"] = _finite(self.baseline.objective) if self.baseline else None
        row["check_ok"] = self.check.ok
        row["solution_source"] = self.solution_source
        return row


def decisions_frame(records: list[DecisionRecord]) -> Any:
    """The ``decisions`` table (pandas) of a run: one :meth:`DecisionRecord.to_row` per decision."""
    import pandas as pd

    return pd.DataFrame([r.to_row() for r in records])


@dataclass
class MapResult:
    """What :func:`solvermap.map` returns (``solvermap map``): every decision's record, in pipeline order,
    and the end-to-end validation (the simulator's metrics) of the mapping."""

    workload: str
    target: str
    family: str
    records: list[DecisionRecord]
    validation: dict[str, Any]
    run_dir: Path | None = None

    def __getitem__(self, decision: str) -> DecisionRecord:
        for record in self.records:
            if record.decision == decision:
                return record
        raise KeyError(f"no decision {decision!r} in this run; its decisions: {', '.join(self.decisions)}")

    @property
    def decisions(self) -> list[str]:
        return [r.decision for r in self.records]

    def to_dict(self) -> dict[str, Any]:
        """Exactly what ``solvermap map --json`` prints (and the run's ``records.json``)."""
        fired = backstop_decisions(self.records)
        return to_jsonable({"workload": self.workload, "target": self.target, "family": self.family,
                            "decisions": [r.to_json() for r in self.records], "validation": self.validation,
                            "reproducible": not fired, "backstop_fired": fired})

    def to_frame(self) -> Any:
        """One row per decision (pandas): backend, status, objective, bound, gap, times, baseline, check."""
        return decisions_frame(self.records)


@dataclass
class DecisionResult:
    """What :func:`solvermap.solve` returns (``solvermap solve DECISION``): the record of that decision after
    the pipeline ran up to it; ``records`` holds every decision that ran."""

    record: DecisionRecord
    records: list[DecisionRecord]
    family: str
    run_dir: Path | None = None
    model_file: dict[str, Any] | None = None  # solve(write_model=...): the file written and the model's size

    @property
    def decision(self) -> str:
        return self.record.decision

    @property
    def status(self) -> str:
        return str(self.record.solver.status)

    @property
    def objective(self) -> float | None:
        return self.record.solver.objective

    @property
    def solution(self) -> Any:
        return self.record.solution

    @property
    def validation(self) -> dict[str, Any]:
        return self.record.validation

    @property
    def check(self) -> CheckReport:
        return self.record.check

    def to_dict(self) -> dict[str, Any]:
        """Exactly what ``solvermap solve DECISION --json`` prints (and the run's ``records.json``)."""
        fired = backstop_decisions(self.records)
        out = {**self.record.to_json(), "reproducible": not fired, "backstop_fired": fired}
        if self.model_file is not None:
            out["model_file"] = self.model_file
        return to_jsonable(out)

    def to_frame(self) -> Any:
        """The ``decisions`` table of the run (pandas): one row per decision that ran, this one last."""
        return decisions_frame(self.records)


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
