"""A mapper is an ordered list of steps; each decision step runs the same protocol.

:func:`run_decision` is that protocol, shared by every target:

1. run the seed's baselines on the problem, score each with the problem's own objective and check it;
2. solve the formulation (backend from config), warm-started from the best baseline;
3. check the decoded decision with the independent checker;
4. continue with the solver's decision, or with the best baseline when the solver found nothing
   better (recorded as ``solution_source``);
5. validate (simulator) and return a :class:`~solvermap.results.DecisionRecord`.

An infeasible problem stops the pipeline with an :class:`~solvermap.errors.InfeasibleError` whose
message is the formulation's diagnosis or the conflicting constraint groups.

A :class:`Pipeline` lists :class:`Step` s; ``kind='transform'`` steps (deterministic IR rewrites such
as memory decomposition) change ``ctx.state`` and produce no record.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from solvermap.errors import ConfigError, InfeasibleError, UnknownNameError
from solvermap.formulations.solver import SolverConfig, Status
from solvermap.results import BaselineResult, CheckReport, DecisionRecord


@dataclass
class Context:
    """Everything a step reads and writes: the workload, target, solver config, options and state."""

    workload: Any  # solvermap.ir.workloads.Workload
    target: Any  # solvermap.hardware.targets.TargetSpec
    solver: SolverConfig
    options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    seed: int = 0
    state: dict[str, Any] = field(default_factory=dict)
    records: list[DecisionRecord] = field(default_factory=list)
    progress: Callable[[str], None] | None = None
    focus: str | None = None  # the decision the user asked for (``solve DECISION``)
    export: Mapping[str, str] = field(default_factory=dict)  # files to write besides the run (``export.<file>``)
    # Optional cache of inner solves shared across runs (``solvermap.search.cache.SolveCache``): an object
    # with ``solve(ctx, name, problem, formulation, config, hint, *, checker, objective, sense) -> Solved``.
    solve_cache: Any = None

    def option(self, decision: str, key: str, default: Any = None) -> Any:
        return self.options.get(decision, {}).get(key, default)

    def solver_for(self, decision: str) -> SolverConfig:
        """The run's solver config with this decision's ``solver`` overrides applied."""
        overrides = dict(self.options.get(decision, {}).get("solver", {}) or {})
        try:
            return self.solver.with_(**overrides) if overrides else self.solver
        except Exception as exc:  # noqa: BLE001 - pydantic error → one line
            raise ConfigError(f"decisions.{decision}.solver: {exc}") from None

    def say(self, message: str) -> None:
        if self.progress is not None:
            self.progress(message)


@dataclass(frozen=True)
class Step:
    name: str
    summary: str
    run: Callable[[Context], DecisionRecord | None]
    kind: str = "decision"  # "decision" or "transform"
    formulation: str = ""  # module path of the formulation (for `solvermap decisions`)
    model: str = ""  # "milp" | "cpsat" | "convex"
    baselines: tuple[str, ...] = ()


@dataclass(frozen=True)
class Pipeline:
    family: str
    description: str
    steps: tuple[Step, ...]
    validate: Callable[[Context], dict[str, Any]] | None = None  # end-to-end simulation of the mapping
    default_workload: str = ""
    exports: tuple[str, ...] = ()  # the ``export.<file>`` settings this pipeline writes

    @property
    def decisions(self) -> list[str]:
        return [s.name for s in self.steps if s.kind == "decision"]

    def run(self, ctx: Context, upto: str | None = None) -> MapResult:
        if upto is not None and upto not in self.decisions:
            raise UnknownNameError(f"decision {upto!r} is not part of the {self.family} pipeline; "
                                   f"its decisions are: {', '.join(self.decisions)}")
        ctx.focus = upto
        for step in self.steps:
            ctx.say(f"{step.name}: {step.summary}")
            record = step.run(ctx)
            if record is not None:
                ctx.records.append(record)
            if step.name == upto:
                return MapResult(ctx.records, record.validation if record else {})
        validation = self.validate(ctx) if self.validate is not None else {}
        return MapResult(ctx.records, validation)


@dataclass
class MapResult:
    records: list[DecisionRecord]
    validation: dict[str, Any]


def run_decision(
    ctx: Context,
    name: str,
    problem: Any,
    *,
    formulation: Any,
    checker: Callable[[Any, Any], CheckReport],
    objective: Callable[[Any, Any], float],
    baselines: Mapping[str, Callable[[Any], Any]] | None = None,
    validate: Callable[[Any, Any], dict[str, Any]] | None = None,
    hint: Any = None,
    serialize: Callable[[Any], Any] | None = None,
    sense: str = "min",
) -> tuple[Any, DecisionRecord]:
    """Run one decision (see module docstring); returns the decision used downstream and its record."""
    config = ctx.solver_for(name)
    if hasattr(formulation, "diagnose"):
        reason = formulation.diagnose(problem)
        if reason:
            raise InfeasibleError(f"{name}: infeasible: {reason}")
    better = (lambda a, b: a < b) if sense == "min" else (lambda a, b: a > b)

    results: list[BaselineResult] = []
    for label, heuristic in (baselines or {}).items():
        start = time.perf_counter()
        decision = heuristic(problem)
        seconds = time.perf_counter() - start
        if decision is None:
            results.append(BaselineResult(label, None, seconds))
            continue
        report = checker(problem, decision)
        results.append(BaselineResult(label, float(objective(problem, decision)), seconds, decision, report))
    valid = [b for b in results if b.objective is not None and b.check is not None and b.check.ok]
    best = None
    for b in valid:
        if best is None or better(b.objective, best.objective):
            best = b
    warm = hint if hint is not None else (best.decision if best is not None else None)

    ctx.say(f"{name}: solving with {config.milp_backend() if getattr(formulation, 'KIND', 'milp') != 'convex' else config.cvx_backend()}")
    if ctx.solve_cache is not None:
        solved = ctx.solve_cache.solve(ctx, name, problem, formulation, config, warm,
                                       checker=checker, objective=objective, sense=sense)
    else:
        solved = formulation.solve(problem, config, warm)
    result = solved.result
    if result.status in (Status.INFEASIBLE, Status.UNBOUNDED, Status.ERROR) and solved.decision is None:
        if result.status == Status.INFEASIBLE:
            groups = ", ".join(solved.explanation) if solved.explanation else "(no explanation from the backend)"
            raise InfeasibleError(f"{name}: infeasible; conflicting constraint groups: {groups}")
        if best is None:
            raise InfeasibleError(f"{name}: solver {result.backend} ended with {result.status}: {result.message}")

    decision, source = solved.decision, "solver"
    if decision is not None:
        report = checker(problem, decision)
        value = float(objective(problem, decision))
        if best is not None and better(best.objective, value):
            decision, source, report = best.decision, f"baseline:{best.name}", best.check
    elif best is not None:
        decision, source, report = best.decision, f"baseline:{best.name}", best.check
    else:
        raise InfeasibleError(f"{name}: no solution within the time limit ({result.status}) and no baseline")

    details = dict(solved.details)
    validation = validate(problem, decision) if validate is not None else {}
    record = DecisionRecord(
        decision=name,
        workload=ctx.workload.name,
        target=ctx.target.name,
        solver=result,
        baseline=best,
        check=report,
        validation=validation,
        solution=serialize(decision) if serialize is not None else decision,
        details=details,
        baselines=results,
        solution_source=source,
    )
    ctx.state[name] = decision
    ctx.state[f"{name}.problem"] = problem
    return decision, record
