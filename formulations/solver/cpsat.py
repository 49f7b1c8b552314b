"""Native CP-SAT models (``cp_model.CpModel``), for formulations that need global constraints."""

from __future__ import annotations

import time
from typing import Any

from solvermap.formulations.solver.availability import backend_version
from solvermap.formulations.solver.config import BACKSTOP_MESSAGE, SolveResult, SolverConfig, Status, backstop_fired, relative_gap


def solve_cpsat(model: Any, config: SolverConfig, *, build_seconds: float = 0.0,
                callback: Any = None) -> tuple[SolveResult, Any]:
    """Solve a native CP-SAT model; returns the record (``work``: CP-SAT's deterministic time) and the
    ``CpSolver`` (for values). ``callback``: a ``CpSolverSolutionCallback`` called at every solution."""
    from ortools.sat.python import cp_model

    solver = cp_model.CpSolver()
    if config.wall_limit() is not None:
        solver.parameters.max_time_in_seconds = config.wall_limit()
    solver.parameters.num_workers = config.threads
    solver.parameters.random_seed = config.seed
    solver.parameters.relative_gap_limit = config.rel_gap
    solver.parameters.log_search_progress = config.log
    solver.parameters.catch_sigint_signal = False  # Ctrl-C raises KeyboardInterrupt instead of ending one solve
    if config.work_budget() is not None:
        solver.parameters.max_deterministic_time = config.work_budget()
    start = time.perf_counter()
    code = solver.Solve(model, callback) if callback is not None else solver.Solve(model)
    seconds = time.perf_counter() - start
    has_objective = model.HasObjective()
    status = {
        cp_model.OPTIMAL: Status.OPTIMAL,
        cp_model.FEASIBLE: Status.FEASIBLE,
        cp_model.INFEASIBLE: Status.INFEASIBLE,
        cp_model.MODEL_INVALID: Status.ERROR,
        cp_model.UNKNOWN: Status.TIMEOUT_NO_SOLUTION,
    }[code]
    objective = solver.ObjectiveValue() if status.has_solution and has_objective else (0.0 if status.has_solution else None)
    bound = solver.BestObjectiveBound() if status.has_solution and has_objective else objective
    limit = status in (Status.FEASIBLE, Status.TIMEOUT_NO_SOLUTION)
    work = float(solver.deterministic_time)
    fired = backstop_fired(config, seconds, limit, work)
    return (
        SolveResult(status, objective, bound, relative_gap(objective, bound) if status.has_solution else None,
                    build_seconds, seconds, "cpsat", backend_version("cpsat"), limit_reached=limit,
                    message=model.Validate() if code == cp_model.MODEL_INVALID else (BACKSTOP_MESSAGE if fired else ""),
                    work=work, backstop_fired=fired),
        solver,
    )


