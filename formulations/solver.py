"""Solver facade: one configuration, one result record, every backend.

A formulation builds its model once and the backend is a configuration choice:

* MILP models are OR-Tools MathOpt models (built through :class:`ModelBuilder`). They run on
  ``cpsat`` (CP-SAT), ``highs`` (HiGHS 1.12, bundled with OR-Tools), ``scip`` (SCIP 10, bundled with
  OR-Tools), ``gurobi`` (MathOpt's Gurobi interface; needs the ``gurobi`` extra and a licence) and ``cbc``
  (COIN-OR CBC through OR-Tools' linear-solver wrapper), and on ``pyomo-<solver>``: the model copied into
  Pyomo and solved by HiGHS, CBC, GLPK, Gurobi, CPLEX or Xpress (``formulations/pyomo_backend.py``).
* Native CP-SAT models (:class:`ortools.sat.python.cp_model.CpModel`), for formulations that need
  global constraints, run on ``cpsat`` only; such a formulation also ships a MILP build so that it still
  runs on two backends.
* Convex models are cvxpy problems; backends ``clarabel``, ``scs``, ``ecos``, ``highs`` (LP/QP) and
  ``scip``. ``solver=`` is always passed explicitly.

Every solve returns a :class:`SolveResult` with a normalised status. A time limit that stops a solve
with an incumbent yields status ``feasible`` with its bound and gap, never an exception; with no
incumbent the status is ``timeout-no-solution``.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import functools
import importlib.metadata
import math
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from solvermap.errors import BackendUnavailable, ConfigError

# MILP models through Pyomo (formulations/pyomo_backend.py); pyomo-highs always, the others where installed
PYOMO_BACKENDS = ("pyomo-highs", "pyomo-cbc", "pyomo-glpk", "pyomo-gurobi", "pyomo-cplex", "pyomo-xpress")
MILP_BACKENDS = ("cpsat", "highs", "scip", "gurobi", "cbc") + PYOMO_BACKENDS
CONVEX_BACKENDS = ("clarabel", "scs", "ecos", "highs", "scip")
CPSAT_BACKENDS = ("cpsat",)

_EXTRA_FOR = {"gurobi": "gurobi", "ecos": "ecos"}
WALL_BACKSTOP = 4.0  # wall-clock backstop of a deterministic budget, as a multiple of time_limit_s ...
WALL_BACKSTOP_FLOOR_S = 2.0  # ... plus this, so that short budgets survive a loaded machine


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
        "1000 x work_limit (also pyomo-highs/cbc/gurobi/cplex/xpress). Defaults to time_limit_s when deterministic. "
        "CBC, pyomo-glpk and convex backends ignore it.")
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

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["status"] = str(self.status)
        for key in ("objective", "bound", "gap"):
            value = data[key]
            if value is not None and not math.isfinite(value):
                data[key] = None
        return data


def backstop_note(config: SolverConfig, seconds: float, limit_reached: bool) -> str:
    """A warning when a deterministic solve was stopped by the wall clock instead of its work budget."""
    wall = config.wall_limit()
    if limit_reached and config.work_budget() is not None and wall is not None and seconds >= 0.98 * wall:
        return "stopped by the wall-clock backstop before the deterministic budget: the result may depend on machine load"
    return ""


class WorkClock:
    """One budget (``config.time_limit_s``; None = unlimited) split over many solves. Deterministic
    configs count only the work the solves report (:func:`work_spent`, charged with :meth:`charge`), so
    the split — and the answer — does not depend on machine load; the wall clock only backs it up at
    ``WALL_BACKSTOP`` × the budget (as the facade does for one solve). Non-deterministic configs count
    wall seconds."""

    def __init__(self, config: SolverConfig) -> None:
        self.total = config.time_limit_s
        self.deterministic = config.deterministic
        self.start = time.perf_counter()
        self.spent = 0.0

    def charge(self, work: float) -> None:
        self.spent += max(0.0, float(work))

    def elapsed(self) -> float:
        return self.spent if self.deterministic else time.perf_counter() - self.start

    def left(self) -> float | None:
        if self.total is None:
            return None
        if self.deterministic and time.perf_counter() - self.start > WALL_BACKSTOP * self.total:
            return 0.0
        return self.total - self.elapsed()

    def share(self, config: SolverConfig, fraction: float) -> SolverConfig:
        """``config`` limited to ``fraction`` of the total, never more than is left (at least 0.2 s)."""
        if self.total is None:
            return config
        return config.with_(time_limit_s=max(0.2, min(self.total * fraction, self.left())))


def relative_gap(objective: float | None, bound: float | None) -> float | None:
    if objective is None or bound is None or not math.isfinite(objective) or not math.isfinite(bound):
        return None
    return abs(objective - bound) / max(1.0, abs(objective))


# --------------------------------------------------------------------------- availability


@functools.lru_cache(maxsize=None)
def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "?"


def _probe_gurobi() -> str | None:
    try:
        import gurobipy  # noqa: F401
    except ImportError:
        return "backend 'gurobi' needs gurobipy: pip install 'solvermap[gurobi]' (and a Gurobi licence)"
    try:
        from ortools.math_opt.python import mathopt

        m = mathopt.Model()
        x = m.add_binary_variable()
        m.maximize(x)
        mathopt.solve(m, mathopt.SolverType.GUROBI)
    except Exception as exc:  # noqa: BLE001 - any failure means "not usable here"
        return f"backend 'gurobi' is installed but not usable by OR-Tools here ({type(exc).__name__}: {exc})"
    return None


def _probe_pyomo(backend: str) -> str | None:
    from solvermap.formulations import pyomo_backend

    return pyomo_backend.unavailable_reason(backend)


def _probe_cvxpy(name: str) -> str | None:
    import cvxpy as cp

    if name.upper() not in cp.installed_solvers():
        extra = _EXTRA_FOR.get(name)
        hint = f"pip install 'solvermap[{extra}]'" if extra else f"pip install {name}"
        return f"convex backend {name!r} is not installed for cvxpy ({hint})"
    return None


_PROBES: dict[tuple[str, str], Callable[[], str | None]] = {
    ("milp", "cpsat"): lambda: None,
    ("milp", "highs"): lambda: None,
    ("milp", "scip"): lambda: None,
    ("milp", "cbc"): lambda: None,
    ("milp", "gurobi"): _probe_gurobi,
    **{("milp", name): (lambda name=name: _probe_pyomo(name)) for name in PYOMO_BACKENDS},
    **{("convex", name): (lambda name=name: _probe_cvxpy(name)) for name in CONVEX_BACKENDS},
}
_PROBE_CACHE: dict[tuple[str, str], str | None] = {}


def unavailable_reason(kind: str, backend: str) -> str | None:
    """None when ``backend`` can solve ``kind`` ('milp' or 'convex') models here, else why not."""
    key = (kind, backend)
    if key not in _PROBES:
        known = MILP_BACKENDS if kind == "milp" else CONVEX_BACKENDS
        return f"unknown {kind} backend {backend!r}; choose one of {', '.join(known)}"
    if key not in _PROBE_CACHE:
        _PROBE_CACHE[key] = _PROBES[key]()
    return _PROBE_CACHE[key]


def available_backends(kind: str) -> list[str]:
    names = MILP_BACKENDS if kind == "milp" else CONVEX_BACKENDS
    return [b for b in names if unavailable_reason(kind, b) is None]


def require_backend(kind: str, backend: str) -> None:
    reason = unavailable_reason(kind, backend)
    if reason is not None:
        raise BackendUnavailable(reason)


@functools.lru_cache(maxsize=None)
def backend_version(backend: str) -> str:
    if backend in PYOMO_BACKENDS:
        from solvermap.formulations import pyomo_backend

        return pyomo_backend.version(backend)
    ortools = _version("ortools")
    return {
        "cpsat": f"CP-SAT (OR-Tools {ortools})",
        "highs": f"HiGHS 1.12 (OR-Tools {ortools})",
        "scip": f"SCIP 10 (OR-Tools {ortools})",
        "cbc": f"CBC 2.10 (OR-Tools {ortools})",
        "gurobi": f"Gurobi (gurobipy {_version('gurobipy')})",
        "clarabel": f"Clarabel {_version('clarabel')} (cvxpy {_version('cvxpy')})",
        "scs": f"SCS {_version('scs')} (cvxpy {_version('cvxpy')})",
        "ecos": f"ECOS {_version('ecos')} (cvxpy {_version('cvxpy')})",
    }.get(backend, backend)


# --------------------------------------------------------------------------- MILP models


@dataclass
class ModelBuilder:
    """A MathOpt model plus the names of its constraint groups (for infeasibility explanations).

    Thin on purpose: variables and constraints are MathOpt's own; ``add`` only tags each constraint
    with the group (constraint family) it belongs to, ``hint`` records a warm start.
    """

    name: str = "model"
    model: Any = None
    groups: dict[str, list[Any]] = field(default_factory=dict)
    hints: dict[Any, float] = field(default_factory=dict)
    created: float = field(default_factory=time.perf_counter)
    _names: dict[str, int] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        from ortools.math_opt.python import mathopt

        if self.model is None:
            self.model = mathopt.Model(name=self.name)

    def _unique(self, name: str) -> str:
        """MathOpt rejects duplicate names; repeated names get a ``#k`` suffix."""
        if not name:
            return name
        count = self._names.get(name, 0)
        self._names[name] = count + 1
        return name if count == 0 else f"{name}#{count}"

    # variables -----------------------------------------------------------------------------
    def binary(self, name: str = "") -> Any:
        return self.model.add_binary_variable(name=self._unique(name))

    def integer(self, lb: float = 0.0, ub: float = math.inf, name: str = "") -> Any:
        return self.model.add_integer_variable(lb=lb, ub=ub, name=self._unique(name))

    def continuous(self, lb: float = 0.0, ub: float = math.inf, name: str = "") -> Any:
        return self.model.add_variable(lb=lb, ub=ub, name=self._unique(name))

    # constraints ---------------------------------------------------------------------------
    def add(self, constraint: Any, group: str, name: str = "") -> Any:
        """Add one linear constraint (``expr <= rhs`` etc.) belonging to constraint family ``group``."""
        members = self.groups.setdefault(group, [])
        label = self._unique(f"{group}[{name if name else len(members)}]")
        con = self.model.add_linear_constraint(constraint, name=label)
        members.append(con)
        return con

    def minimize(self, expr: Any) -> None:
        self.model.minimize(expr)

    def maximize(self, expr: Any) -> None:
        self.model.maximize(expr)

    def hint(self, var: Any, value: float) -> None:
        self.hints[var] = float(value)

    @property
    def build_seconds(self) -> float:
        return time.perf_counter() - self.created

    def size(self) -> dict[str, int]:
        proto = self.model.export_model()
        return {
            "variables": len(proto.variables.ids),
            "constraints": len(proto.linear_constraints.ids),
            "nonzeros": len(proto.linear_constraint_matrix.coefficients),
        }


@dataclass
class MilpSolution:
    """Result record plus variable values (empty when no solution was found)."""

    result: SolveResult
    values: dict[Any, float] = field(default_factory=dict)

    def value(self, var: Any) -> float:
        return self.values[var]

    def is_one(self, var: Any) -> bool:
        return self.values[var] > 0.5

    def rounded(self, var: Any) -> int:
        return int(round(self.values[var]))


def _mathopt_solver_type(backend: str) -> Any:
    from ortools.math_opt.python import mathopt

    return {
        "cpsat": mathopt.SolverType.CP_SAT,
        "highs": mathopt.SolverType.HIGHS,
        "scip": mathopt.SolverType.GSCIP,
        "gurobi": mathopt.SolverType.GUROBI,
    }[backend]


def _mathopt_params(backend: str, config: SolverConfig) -> Any:
    from ortools.math_opt.python import mathopt

    kwargs: dict[str, Any] = {"enable_output": config.log, "random_seed": config.seed}
    if config.wall_limit() is not None:
        kwargs["time_limit"] = _dt.timedelta(seconds=config.wall_limit())
    if backend != "highs":  # OR-Tools' HiGHS interface rejects the threads parameter
        kwargs["threads"] = config.threads
    kwargs["relative_gap_tolerance"] = config.rel_gap
    if backend == "cpsat":
        kwargs["absolute_gap_tolerance"] = 0.0
    work = config.work_budget()
    if work is not None and backend in ("highs", "scip"):
        kwargs["node_limit"] = max(1, int(1000 * work))
    params = mathopt.SolveParameters(**kwargs)
    if work is not None and backend == "cpsat":
        params.cp_sat.max_deterministic_time = work
    # Ctrl-C must reach Python (KeyboardInterrupt) rather than silently end only the current solve
    # (see also _sigint_survives, which keeps MathOpt from discarding the interrupt).
    if backend == "cpsat":
        params.cp_sat.catch_sigint_signal = False
    elif backend == "scip":
        params.gscip.bool_params["misc/catchctrlc"] = False
    return params


def _normalise_mathopt(result: Any) -> tuple[Status, float | None, float | None, bool, str]:
    from ortools.math_opt.python import mathopt

    reason = result.termination.reason
    has = result.has_primal_feasible_solution()
    objective = result.objective_value() if has else None
    bound = result.termination.objective_bounds.dual_bound
    if bound is not None and not math.isfinite(bound):
        bound = None
    detail = result.termination.detail or ""
    limit = False
    if reason == mathopt.TerminationReason.OPTIMAL:
        status = Status.OPTIMAL
        if bound is None:
            bound = objective
    elif reason == mathopt.TerminationReason.INFEASIBLE:
        status = Status.INFEASIBLE
    elif reason in (mathopt.TerminationReason.UNBOUNDED, mathopt.TerminationReason.INFEASIBLE_OR_UNBOUNDED):
        status = Status.UNBOUNDED if reason == mathopt.TerminationReason.UNBOUNDED else Status.INFEASIBLE
        if reason == mathopt.TerminationReason.INFEASIBLE_OR_UNBOUNDED:
            detail = "infeasible or unbounded: " + detail
    elif reason in (mathopt.TerminationReason.FEASIBLE, mathopt.TerminationReason.NO_SOLUTION_FOUND):
        limit = True
        status = Status.FEASIBLE if has else Status.TIMEOUT_NO_SOLUTION
    else:
        status = Status.ERROR
    return status, objective, bound, limit, detail


@contextlib.contextmanager
def _sigint_survives() -> Iterator[None]:
    """Make a Ctrl-C during a MathOpt solve raise ``KeyboardInterrupt`` once the solve returns.

    MathOpt's native code runs Python's pending signal handlers and then discards the
    ``KeyboardInterrupt`` they raise, so an interrupted study would run on. While the solve runs (main
    thread, default handler only), a handler that also records the interrupt is installed; if it fired,
    the interrupt is raised again here.
    """
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield
        return
    fired: list[bool] = []

    def record(signum: int, frame: Any) -> None:
        fired.append(True)
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, record)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if fired:
        raise KeyboardInterrupt


def solve_milp(builder: ModelBuilder, config: SolverConfig, *, use_hints: bool = True) -> MilpSolution:
    """Solve a MathOpt model with the configured MILP backend; never raises on limits."""
    backend = config.milp_backend()
    require_backend("milp", backend)
    build_seconds = builder.build_seconds
    for capture in _CAPTURES:
        capture.record(builder)
    if backend in PYOMO_BACKENDS:
        from solvermap.formulations import pyomo_backend

        return pyomo_backend.solve(builder, config, build_seconds)
    if backend == "cbc":
        return _solve_cbc(builder, config, build_seconds)
    from ortools.math_opt.python import mathopt

    model_params = None
    if use_hints and builder.hints:
        hint = mathopt.SolutionHint(variable_values=dict(builder.hints))
        model_params = mathopt.ModelSolveParameters(solution_hints=[hint])
    start = time.perf_counter()
    try:
        with _sigint_survives():
            result = mathopt.solve(
                builder.model,
                _mathopt_solver_type(backend),
                params=_mathopt_params(backend, config),
                model_params=model_params,
            )
    except Exception as exc:  # noqa: BLE001 - a solver failure is a result, not a crash
        return MilpSolution(
            SolveResult(Status.ERROR, build_seconds=build_seconds, solve_seconds=time.perf_counter() - start,
                        backend=backend, solver_version=backend_version(backend), message=f"{type(exc).__name__}: {exc}")
        )
    seconds = time.perf_counter() - start
    status, objective, bound, limit, detail = _normalise_mathopt(result)
    values: dict[Any, float] = {}
    if status.has_solution:
        values = dict(result.variable_values())
    if status == Status.OPTIMAL and objective is not None and bound is None:
        bound = objective
    return MilpSolution(
        SolveResult(
            status=status,
            objective=objective,
            bound=bound,
            gap=relative_gap(objective, bound) if status.has_solution else None,
            build_seconds=build_seconds,
            solve_seconds=seconds,
            backend=backend,
            solver_version=backend_version(backend),
            limit_reached=limit,
            message="; ".join(m for m in (detail, backstop_note(config, seconds, limit)) if m),
        ),
        values,
    )


def _solve_cbc(builder: ModelBuilder, config: SolverConfig, build_seconds: float) -> MilpSolution:
    """CBC through OR-Tools' pywraplp: the MathOpt model is copied column by column."""
    from ortools.linear_solver import pywraplp

    proto = builder.model.export_model()
    solver = pywraplp.Solver.CreateSolver("CBC")
    inf = solver.infinity()

    def clip(value: float) -> float:
        return inf if value == math.inf else (-inf if value == -math.inf else value)

    ids = list(proto.variables.ids)
    column = {}
    for k, vid in enumerate(ids):
        lb, ub = clip(proto.variables.lower_bounds[k]), clip(proto.variables.upper_bounds[k])
        column[vid] = solver.IntVar(lb, ub, str(vid)) if proto.variables.integers[k] else solver.NumVar(lb, ub, str(vid))
    rows = {}
    for k, cid in enumerate(proto.linear_constraints.ids):
        rows[cid] = solver.Constraint(clip(proto.linear_constraints.lower_bounds[k]), clip(proto.linear_constraints.upper_bounds[k]))
    matrix = proto.linear_constraint_matrix
    for r, c, a in zip(matrix.row_ids, matrix.column_ids, matrix.coefficients):
        rows[r].SetCoefficient(column[c], a)
    objective = solver.Objective()
    for vid, coef in zip(proto.objective.linear_coefficients.ids, proto.objective.linear_coefficients.values):
        objective.SetCoefficient(column[vid], coef)
    objective.SetOffset(proto.objective.offset)
    if proto.objective.quadratic_coefficients.row_ids:
        raise ConfigError("backend 'cbc' cannot solve a quadratic objective")
    objective.SetMaximization() if proto.objective.maximize else objective.SetMinimization()
    if config.wall_limit() is not None:  # CBC has no deterministic limit here: wall clock only
        solver.SetTimeLimit(int(config.wall_limit() * 1000))
    solver.SetNumThreads(config.threads)
    params = pywraplp.MPSolverParameters()
    params.SetDoubleParam(params.RELATIVE_MIP_GAP, config.rel_gap)
    by_id = {var: var for var in builder.model.variables()}
    start = time.perf_counter()
    with _sigint_survives():
        code = solver.Solve(params)
    seconds = time.perf_counter() - start
    has = code in (pywraplp.Solver.OPTIMAL, pywraplp.Solver.FEASIBLE)
    status = {
        pywraplp.Solver.OPTIMAL: Status.OPTIMAL,
        pywraplp.Solver.FEASIBLE: Status.FEASIBLE,
        pywraplp.Solver.INFEASIBLE: Status.INFEASIBLE,
        pywraplp.Solver.UNBOUNDED: Status.UNBOUNDED,
    }.get(code, Status.TIMEOUT_NO_SOLUTION if code == pywraplp.Solver.NOT_SOLVED else Status.ERROR)
    objective_value = objective.Value() if has else None
    bound = objective.BestBound() if has else None
    if status == Status.OPTIMAL:
        bound = objective_value if bound is None else bound
    values = {}
    if has:
        values = {var: column[var.id].solution_value() for var in by_id}
    return MilpSolution(
        SolveResult(status, objective_value, bound, relative_gap(objective_value, bound) if has else None,
                    build_seconds, seconds, "cbc", backend_version("cbc"),
                    limit_reached=status in (Status.FEASIBLE, Status.TIMEOUT_NO_SOLUTION)),
        values,
    )


@dataclass
class ModelCapture:
    """The largest MILP model (most nonzeros, then most variables; the first of equals) that
    :func:`solve_milp` solved while this capture was open, as a MathOpt ``ModelProto``, and how many
    MILP solves there were (``solvermap solve --write-model``)."""

    name: str = ""
    proto: Any = None
    solves: int = 0
    _size: tuple[int, int] = (-1, -1)

    def record(self, builder: ModelBuilder) -> None:
        self.solves += 1
        proto = builder.model.export_model()
        size = (len(proto.linear_constraint_matrix.coefficients), len(proto.variables.ids))
        if size > self._size:
            self.name, self.proto, self._size = builder.name, proto, size


_CAPTURES: list[ModelCapture] = []


@contextlib.contextmanager
def capturing_models(capture: ModelCapture) -> Iterator[ModelCapture]:
    """Record the MILP models solved inside the block in ``capture`` (infeasibility probes excluded)."""
    _CAPTURES.append(capture)
    try:
        yield capture
    finally:
        _CAPTURES.remove(capture)


def explain_infeasible(builder: ModelBuilder, config: SolverConfig, *, max_solves: int = 64) -> list[str]:
    """The constraint groups that together make ``builder``'s model infeasible (group-level IIS).

    Deletion filter over the groups: relax one group at a time (bounds to ±∞); if the rest is still
    infeasible the group is not needed. The result is a minimal set of groups whose constraints cannot
    all hold. Each probe is a feasibility solve (objective dropped) with the same backend and limits;
    the model is restored afterwards.
    """
    names = list(builder.groups)
    saved_bounds = {con: (con.lower_bound, con.upper_bound) for group in names for con in builder.groups[group]}
    saved_objective = list(builder.model.objective.linear_terms())
    saved_offset, saved_max = builder.model.objective.offset, builder.model.objective.is_maximize
    probe = ModelBuilder(name=builder.name, model=builder.model)
    probe_config = config.with_(rel_gap=1.0)  # any feasible point answers the question
    needed: list[str] = []
    dropped: set[str] = set()
    captures = _CAPTURES[:]
    _CAPTURES.clear()  # a probe is not a model of the decision
    try:
        builder.model.objective.clear()
        for solves, group in enumerate(names):
            if solves >= max_solves:
                needed += [g for g in names[solves:] if g not in needed]
                break
            for con in builder.groups[group]:
                con.lower_bound, con.upper_bound = -math.inf, math.inf
            status = solve_milp(probe, probe_config, use_hints=False).result.status
            if status == Status.INFEASIBLE:
                dropped.add(group)
            else:
                needed.append(group)
                for con in builder.groups[group]:
                    con.lower_bound, con.upper_bound = saved_bounds[con]
    finally:
        _CAPTURES[:] = captures
        for con, (lb, ub) in saved_bounds.items():
            con.lower_bound, con.upper_bound = lb, ub
        builder.model.objective.clear()
        for term in saved_objective:
            builder.model.objective.set_linear_coefficient(term.variable, term.coefficient)
        builder.model.objective.offset = saved_offset
        builder.model.objective.is_maximize = saved_max
    return needed or names


# --------------------------------------------------------------------------- native CP-SAT


def solve_cpsat(model: Any, config: SolverConfig, *, build_seconds: float = 0.0) -> tuple[SolveResult, Any]:
    """Solve a native CP-SAT model; returns the record and the ``CpSolver`` (for values)."""
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
    code = solver.Solve(model)
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
    return (
        SolveResult(status, objective, bound, relative_gap(objective, bound) if status.has_solution else None,
                    build_seconds, seconds, "cpsat", backend_version("cpsat"),
                    limit_reached=status in (Status.FEASIBLE, Status.TIMEOUT_NO_SOLUTION),
                    message=model.Validate() if code == cp_model.MODEL_INVALID
                    else backstop_note(config, seconds, status in (Status.FEASIBLE, Status.TIMEOUT_NO_SOLUTION))),
        solver,
    )


# --------------------------------------------------------------------------- convex (cvxpy)


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
    return SolveResult(status, objective, bound, 0.0 if status == Status.OPTIMAL else None, build_seconds, seconds,
                       backend, backend_version(backend), limit_reached=raw == getattr(cp, "USER_LIMIT", None),
                       message="" if status != Status.ERROR else str(raw))


def linear_sum(terms: Iterable[Any]) -> Any:
    """Fast sum of MathOpt terms (``sum()`` builds a deep expression tree)."""
    from ortools.math_opt.python import mathopt

    return mathopt.fast_sum(terms)


def hints_from(mapping: Mapping[Any, float]) -> dict[Any, float]:
    return {var: float(value) for var, value in mapping.items()}
