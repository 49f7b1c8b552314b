"""Convex models: cvxpy problems on Clarabel, SCS, ECOS, HiGHS (LP/QP) or SCIP, ``solver=`` always explicit.

Convex solves are one-shot (no budget is split over them); their time limit is wall clock, and their work
is reported as iterations / ``CONVEX_ITERATIONS_PER_WORK`` (interior-point and first-order iterations)."""

from __future__ import annotations

import time
from typing import Any

from solvermap.formulations.solver.availability import backend_version, require_backend
from solvermap.formulations.solver.config import SolveResult, SolverConfig, Status

CONVEX_ITERATIONS_PER_WORK = 100  # iterations per unit of work (reported only)


def _cvxpy_solver_options(backend: str, config: SolverConfig) -> dict[str, Any]:
    limit = config.time_limit_s
    options: dict[str, Any] = {}
    if backend == "clarabel" and limit is not None:
        options["time_limit"] = limit
    elif backend == "scs" and limit is not None:
        options["time_limit_secs"] = limit
    elif backend == "highs" and limit is not None:
        options["time_limit"] = limit
    elif backend == "scip" and limit is not None:
        options["scip_params"] = {"limits/time": limit}
    return options


def solve_convex(problem: Any, config: SolverConfig, *, build_seconds: float = 0.0) -> SolveResult:
    """Solve a cvxpy problem with the configured convex backend (``solver=`` always explicit)."""
    import cvxpy as cp

    backend = config.cvx_backend()
    require_backend("convex", backend)
    start = time.perf_counter()
    try:
        problem.solve(solver=backend.upper(), verbose=config.log, **_cvxpy_solver_options(backend, config))
    except cp.error.SolverError as exc:
        return SolveResult(Status.ERROR, build_seconds=build_seconds, solve_seconds=time.perf_counter() - start,
                           backend=backend, solver_version=backend_version(backend), message=str(exc))
    seconds = time.perf_counter() - start
    raw = problem.status
    status = {
        cp.OPTIMAL: Status.OPTIMAL,
        cp.OPTIMAL_INACCURATE: Status.FEASIBLE,
        cp.INFEASIBLE: Status.INFEASIBLE,
        cp.INFEASIBLE_INACCURATE: Status.INFEASIBLE,
        cp.UNBOUNDED: Status.UNBOUNDED,
        cp.UNBOUNDED_INACCURATE: Status.UNBOUNDED,
        getattr(cp, "USER_LIMIT", "user_limit"): Status.FEASIBLE if problem.value is not None else Status.TIMEOUT_NO_SOLUTION,
    }.get(raw, Status.ERROR)
    objective = float(problem.value) if status.has_solution and problem.value is not None else None
    bound = objective if status == Status.OPTIMAL else None
    stats = getattr(problem, "solver_stats", None)
    iterations = getattr(stats, "num_iters", None) or 0
    return SolveResult(status, objective, bound, 0.0 if status == Status.OPTIMAL else None, build_seconds, seconds,
                       backend, backend_version(backend), limit_reached=raw == getattr(cp, "USER_LIMIT", None),
                       message="" if status != Status.ERROR else str(raw),
                       work=iterations / CONVEX_ITERATIONS_PER_WORK)

