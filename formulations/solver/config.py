"""Solver configuration and the normalised result record every backend returns.

Work: every backend reports the deterministic work it spent (``SolveResult.work``) in one unit — CP-SAT
deterministic seconds; LP-based branch and bound by :func:`lp_work` — so that a budget split over many
solves (:mod:`solvermap.formulations.strategy`) depends on the config alone. The wall clock only backs a
deterministic budget up (``WALL_BACKSTOP`` × the budget + ``WALL_BACKSTOP_FLOOR_S``); a solve it stops says
so (``backstop_fired`` and the message), and callers that store results (the design-space cache) refuse it.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

# MILP models through Pyomo (formulations/pyomo_backend.py); pyomo-highs always, the others where installed
PYOMO_BACKENDS = ("pyomo-highs", "pyomo-cbc", "pyomo-glpk", "pyomo-gurobi", "pyomo-cplex", "pyomo-xpress")
MILP_BACKENDS = ("cpsat", "highs", "scip", "gurobi", "cbc") + PYOMO_BACKENDS
CONVEX_BACKENDS = ("clarabel", "scs", "ecos", "highs", "scip")
CPSAT_BACKENDS = ("cpsat",)

WALL_BACKSTOP = 20.0  # wall-clock backstop of a deterministic budget, as a multiple of time_limit_s ...
WALL_BACKSTOP_FLOOR_S = 60.0  # ... plus this: a safety net far above the work, never what normally ends a solve
# (a 10-unit CP-SAT placement of the network study took over 110 s of wall clock with 14 jobs on 2 cores)

# Deterministic work, the unit every budget is counted in (one unit = one CP-SAT deterministic second):
NODES_PER_WORK = 1000  # LP-based branch and bound (HiGHS, SCIP, Gurobi, CBC): nodes per unit of work ...
SIMPLEX_ITERATIONS_PER_WORK = 25_000  # ... or simplex iterations per unit, whichever count is larger


def lp_work(nodes: float, iterations: float) -> float:
    """Work of an LP-based solve from the counts it reports: max(nodes / NODES_PER_WORK, simplex iterations /
    SIMPLEX_ITERATIONS_PER_WORK). The node limit of a work budget B is NODES_PER_WORK × B, so a solve stopped
    by it reports at least B; the iteration term charges root-node work (a big LP solved without branching).
    25,000 iterations per unit: HiGHS and SCIP spend 7,000–25,000 simplex iterations per 1,000 nodes on a
    120-item knapsack, so on branching solves the node count decides and a node-limited solve reports
    about its budget."""
    return max(nodes / NODES_PER_WORK, iterations / SIMPLEX_ITERATIONS_PER_WORK)


class Status(StrEnum):
    OPTIMAL = "optimal"
    FEASIBLE = "feasible"
    INFEASIBLE = "infeasible"
    UNBOUNDED = "unbounded"
    TIMEOUT_NO_SOLUTION = "timeout-no-solution"
    ERROR = "error"

    @property
    def has_solution(self) -> bool:
        return self in (Status.OPTIMAL, Status.FEASIBLE)


class SolverConfig(BaseModel):
    """Which backend solves a model and under which limits (same config, same answer)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: str = Field("cpsat", description="MILP / CP-SAT backend: " + " | ".join(MILP_BACKENDS))
    convex_backend: str = Field("clarabel", description="cvxpy backend: " + " | ".join(CONVEX_BACKENDS))
    time_limit_s: float | None = Field(
        30.0, gt=0, allow_inf_nan=False,
        description="budget per solve in seconds; None = no limit. With deterministic=True (default) it is spent "
        "as deterministic work (see work_limit) and the wall clock only backs it up at "
        f"{WALL_BACKSTOP:g} x time_limit_s + {WALL_BACKSTOP_FLOOR_S:g} s; with deterministic=False it is a plain wall-clock limit")
    work_limit: float | None = Field(
        None, gt=0, allow_inf_nan=False,
        description="explicit deterministic work budget per solve, so that the answer does not depend on machine "
        "load: CP-SAT deterministic seconds (max_deterministic_time); HiGHS and SCIP branch-and-bound nodes = "
        f"{NODES_PER_WORK} x work_limit (also pyomo-highs/cbc/gurobi/cplex/xpress). Defaults to time_limit_s when "
        "deterministic. CBC, pyomo-glpk and convex backends ignore it as a limit (CBC and convex report their work "
        "all the same).")
    deterministic: bool = Field(True, description="spend time_limit_s as deterministic work (same config, same answer)")
    threads: int = Field(1, ge=1)
    rel_gap: float = Field(0.0, ge=0.0, allow_inf_nan=False, description="relative optimality gap at which a solve may stop")
    seed: int = Field(0, ge=0)
    log: bool = False

    @field_validator("backend")
    @classmethod
    def _known_milp(cls, value: str) -> str:
        if value not in MILP_BACKENDS and value not in CONVEX_BACKENDS:
            raise ValueError(f"unknown backend {value!r}; choose one of {', '.join(sorted(set(MILP_BACKENDS + CONVEX_BACKENDS)))}")
        return value

    @field_validator("convex_backend")
    @classmethod
    def _known_convex(cls, value: str) -> str:
        if value not in CONVEX_BACKENDS:
            raise ValueError(f"unknown convex backend {value!r}; choose one of {', '.join(CONVEX_BACKENDS)}")
        return value

    def work_budget(self) -> float | None:
        """Deterministic work per solve: ``work_limit``, else ``time_limit_s`` when deterministic, else None."""
        if self.work_limit is not None:
            return self.work_limit
        return self.time_limit_s if self.deterministic else None

    def wall_limit(self) -> float | None:
        """Wall-clock seconds per solve: a backstop of a deterministic budget, else ``time_limit_s``."""
        if self.time_limit_s is None:
            return None
        if self.deterministic and self.work_limit is None:
            return self.time_limit_s * WALL_BACKSTOP + WALL_BACKSTOP_FLOOR_S
        return self.time_limit_s

    def milp_backend(self) -> str:
        """The backend a MILP solve uses: ``backend`` when it is a MILP backend, else CP-SAT."""
        return self.backend if self.backend in MILP_BACKENDS else "cpsat"

    def cvx_backend(self) -> str:
        """The backend a convex solve uses: ``backend`` when it is a convex backend, else ``convex_backend``."""
        return self.backend if self.backend in CONVEX_BACKENDS else self.convex_backend

    def with_(self, **changes: Any) -> SolverConfig:
        return self.model_copy(update=changes)

    def budget(self) -> float | None:
        """The budget of one solve in its own unit: :meth:`work_budget` when deterministic, else wall seconds."""
        return self.work_budget() if self.deterministic else self.time_limit_s

    def with_budget(self, amount: float | None) -> SolverConfig:
        """This config with ``amount`` as the budget of one solve (a share of a strategy's budget):
        ``time_limit_s = amount`` and no explicit ``work_limit``, so a deterministic share is ``amount`` units of
        work under the facade's own backstop. (Setting only ``time_limit_s`` on a config with an explicit
        ``work_limit`` would keep the whole work limit and make the share a wall-clock limit: load-dependent.)"""
        return self.model_copy(update={"time_limit_s": amount, "work_limit": None})


@dataclass
class SolveResult:
    """Normalised record of one solve; ``gap`` is |objective − bound| / max(1, |objective|)."""

    status: Status
    objective: float | None = None
    bound: float | None = None
    gap: float | None = None
    build_seconds: float = 0.0
    solve_seconds: float = 0.0
    backend: str = ""
    solver_version: str = ""
    limit_reached: bool = False
    message: str = ""
    work: float = 0.0  # deterministic work the solve reported (units: see lp_work; CP-SAT deterministic seconds)
    backstop_fired: bool = False  # stopped by the wall-clock backstop, not its work budget: depends on load

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["status"] = str(self.status)
        for key in ("objective", "bound", "gap"):
            value = data[key]
            if value is not None and not math.isfinite(value):
                data[key] = None
        return data


BACKSTOP_MESSAGE = "stopped by the wall-clock backstop before the deterministic budget: the result may depend on machine load"


def backstop_fired(config: SolverConfig, seconds: float, limit_reached: bool, work: float | None = None,
                   *, by_clock: bool | None = None) -> bool:
    """A deterministic solve stopped by the wall clock (its backstop) instead of its work budget: ``by_clock``
    when the backend names the limit that stopped it (HiGHS and SCIP: a MILP's root node can report more
    work than its node-limit budget and still be stopped by the clock), else stopped by a limit with less
    than its budget of reported ``work`` (a work limit that stops a solve is reached), or, for a backend
    that reports no work, at the wall limit."""
    budget = config.work_budget()
    if not limit_reached or budget is None:
        return False
    if by_clock is not None:
        return by_clock
    if work is not None:
        return work < 0.99 * budget
    wall = config.wall_limit()
    return wall is not None and seconds >= 0.98 * wall


def backstop_note(config: SolverConfig, seconds: float, limit_reached: bool) -> str:
    """:data:`BACKSTOP_MESSAGE` when :func:`backstop_fired`, else ""."""
    return BACKSTOP_MESSAGE if backstop_fired(config, seconds, limit_reached) else ""


def relative_gap(objective: float | None, bound: float | None) -> float | None:
    if objective is None or bound is None or not math.isfinite(objective) or not math.isfinite(bound):
        return None
    return abs(objective - bound) / max(1.0, abs(objective))

