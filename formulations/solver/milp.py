"""MILP models: :class:`ModelBuilder` (an OR-Tools MathOpt model with named constraint groups), one solve
on every MILP backend (:func:`solve_milp`: CP-SAT, HiGHS, SCIP and Gurobi through MathOpt, CBC through
OR-Tools' linear-solver wrapper), group-level infeasibility explanations, and an LP solve with duals."""

from __future__ import annotations

import contextlib
import datetime as _dt
import math
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from solvermap.errors import ConfigError
from solvermap.formulations.solver.availability import backend_version, require_backend
from solvermap.formulations.solver.config import (
    BACKSTOP_MESSAGE,
    PYOMO_BACKENDS,
    SolveResult,
    SolverConfig,
    Status,
    backstop_fired,
    lp_work,
    relative_gap,
)


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

    def add_row(self, lb: float, ub: float, group: str, name: str = "", terms: Mapping[Any, float] | None = None) -> Any:
        """A row lb ≤ Σ terms ≤ ub of constraint family ``group``; an empty one is filled by :meth:`add_column`
        (column generation: a master problem grows by columns)."""
        members = self.groups.setdefault(group, [])
        con = self.model.add_linear_constraint(lb=lb, ub=ub, name=self._unique(f"{group}[{name if name else len(members)}]"))
        for var, coefficient in (terms or {}).items():
            if coefficient:
                con.set_coefficient(var, coefficient)
        members.append(con)
        return con

    def add_column(self, cost: float, lb: float, ub: float, coefficients: Mapping[Any, float], name: str = "",
                   integer: bool = False) -> Any:
        """A new variable with objective coefficient ``cost`` and the given coefficients in existing rows."""
        var = self.model.add_variable(lb=lb, ub=ub, is_integer=integer, name=self._unique(name))
        if cost:
            self.model.objective.set_linear_coefficient(var, cost)
        for row, coefficient in coefficients.items():
            if coefficient:
                row.set_coefficient(var, coefficient)
        return var

    def set_objective(self, coefficients: Mapping[Any, float], *, maximize: bool = False) -> None:
        """Replace the objective by Σ coefficient × variable (a pricing problem re-solved with new costs)."""
        self.model.objective.clear()
        self.model.objective.is_maximize = maximize
        for var, coefficient in coefficients.items():
            if coefficient:
                self.model.objective.set_linear_coefficient(var, coefficient)

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
    # (see also sigint_survives, which keeps MathOpt from discarding the interrupt).
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


def _stopped_by_clock(backend: str, result: Any) -> bool | None:
    """Whether the wall clock stopped a MathOpt solve, where the backend says which limit did (HiGHS, SCIP:
    a node or iteration limit is reported as such); None where it does not say (CP-SAT's deterministic limit
    is reported as a time limit too)."""
    from ortools.math_opt.python import mathopt

    limit = result.termination.limit
    if backend not in ("highs", "scip") or limit in (None, mathopt.Limit.UNDETERMINED, mathopt.Limit.OTHER):
        return None
    return limit == mathopt.Limit.TIME


@contextlib.contextmanager
def sigint_survives() -> Iterator[Any]:
    """Make a Ctrl-C during a solve raise ``KeyboardInterrupt`` once the solve returns; yields a MathOpt
    ``SolveInterrupter`` (None off the main thread or under a custom handler) for the solve to watch.

    Native solver code loses a ``KeyboardInterrupt`` raised inside it: MathOpt runs Python's pending signal
    handlers and discards the exception (one raised in a Python callback it calls, the CP-SAT log reader,
    aborts the process); Pyomo swallows one raised in its object finalisers, and one raised in a highspy
    callback can leave HiGHS waiting forever. So while the solve runs (main thread, default handler only), a
    handler that only records the interrupt and interrupts the solve is installed; if it fired,
    ``KeyboardInterrupt`` is raised here, after the solve.

    CBC is the exception (a known bug, not fixed): ``CbcMain1`` installs a SIGINT handler of its own for
    each solve, which takes the signal from Python and only ends that solve early. Blocking SIGINT in this
    thread does not help: the kernel then hands the signal to another thread (OpenBLAS starts one per
    core), where CBC's handler takes it just the same.
    """
    import signal
    import threading

    from ortools.util.python.solve_interrupter import SolveInterrupter

    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield None
        return
    fired: list[bool] = []
    interrupter = SolveInterrupter()

    def record(signum: int, frame: Any) -> None:
        fired.append(True)
        interrupter.interrupt()

    signal.signal(signal.SIGINT, record)
    try:
        yield interrupter
    except BaseException:
        if fired:
            raise KeyboardInterrupt from None
        raise
    finally:
        # also puts Python's own C-level handler back where a solver (CBC) replaced it
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if fired:
        raise KeyboardInterrupt


def _cpsat_work_reader() -> tuple[Callable[[list[str]], None], Callable[[], float]]:
    """A MathOpt message callback and a reader of the deterministic time CP-SAT logs in its summary
    (MathOpt reports no work for CP-SAT; its log line ``deterministic_time: X`` is the solver's own count)."""
    seen: list[float] = []

    def read(lines: list[str]) -> None:
        for line in lines:
            if line.startswith("deterministic_time:"):
                seen.append(float(line.split(":", 1)[1]))

    return read, lambda: seen[-1] if seen else 0.0


def solve_milp(builder: ModelBuilder, config: SolverConfig, *, use_hints: bool = True) -> MilpSolution:
    """Solve a MathOpt model with the configured MILP backend; never raises on limits. The result's ``work``
    is the deterministic work the backend reports (CP-SAT deterministic time, else :func:`lp_work`)."""
    backend = config.milp_backend()
    require_backend("milp", backend)
    build_seconds = builder.build_seconds
    for capture in _CAPTURES:
        capture.record(builder)
    if backend in PYOMO_BACKENDS:
        from solvermap.formulations import pyomo_backend

        with sigint_survives():  # a Ctrl-C inside Pyomo's finalisers or a highspy callback would be lost
            return pyomo_backend.solve(builder, config, build_seconds)
    if backend == "cbc":
        return _solve_cbc(builder, config, build_seconds)
    from ortools.math_opt.python import mathopt

    model_params = None
    if use_hints and builder.hints:
        hint = mathopt.SolutionHint(variable_values=dict(builder.hints))
        model_params = mathopt.ModelSolveParameters(solution_hints=[hint])
    read_log, cpsat_work = _cpsat_work_reader()
    start = time.perf_counter()
    try:
        with sigint_survives() as interrupter:
            result = mathopt.solve(
                builder.model,
                _mathopt_solver_type(backend),
                params=_mathopt_params(backend, config),
                model_params=model_params,
                msg_cb=read_log if backend == "cpsat" else None,
                interrupter=interrupter,
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
    stats = result.solve_stats
    work = cpsat_work() if backend == "cpsat" else lp_work(stats.node_count, stats.simplex_iterations)
    fired = backstop_fired(config, seconds, limit, work, by_clock=_stopped_by_clock(backend, result))
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
            message="; ".join(m for m in (detail, BACKSTOP_MESSAGE if fired else "") if m),
            work=work,
            backstop_fired=fired,
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
    if config.wall_limit() is not None:  # CBC has no deterministic limit here: wall clock only (a limit = the backstop)
        solver.SetTimeLimit(int(config.wall_limit() * 1000))
    solver.SetNumThreads(config.threads)
    params = pywraplp.MPSolverParameters()
    params.SetDoubleParam(params.RELATIVE_MIP_GAP, config.rel_gap)
    by_id = {var: var for var in builder.model.variables()}
    start = time.perf_counter()
    with sigint_survives():
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
    limit = status in (Status.FEASIBLE, Status.TIMEOUT_NO_SOLUTION)
    fired = backstop_fired(config, seconds, limit) or (limit and config.work_budget() is not None)
    return MilpSolution(
        SolveResult(status, objective_value, bound, relative_gap(objective_value, bound) if has else None,
                    build_seconds, seconds, "cbc", backend_version("cbc"), limit_reached=limit,
                    message=BACKSTOP_MESSAGE if fired else "",
                    work=lp_work(solver.nodes(), solver.iterations()), backstop_fired=fired),
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




def linear_sum(terms: Iterable[Any]) -> Any:
    """Fast sum of MathOpt terms (``sum()`` builds a deep expression tree)."""
    from ortools.math_opt.python import mathopt

    return mathopt.fast_sum(terms)


def hints_from(mapping: Mapping[Any, float]) -> dict[Any, float]:
    return {var: float(value) for var, value in mapping.items()}


@dataclass
class LpSolution:
    """An LP's record, primal values and the dual value of every constraint (MathOpt's convention: for a
    minimisation, a row at its lower bound has a dual ≥ 0 and a row at its upper bound a dual ≤ 0)."""

    result: SolveResult
    values: dict[Any, float] = field(default_factory=dict)
    duals: dict[Any, float] = field(default_factory=dict)


LP_BACKENDS = ("highs", "gurobi")  # LP solves with duals run on these; any other backend asks HiGHS


def solve_lp(builder: ModelBuilder, config: SolverConfig) -> LpSolution:
    """Solve a continuous model (no integer variables) by simplex and return its duals. The work budget is
    an iteration limit (SIMPLEX_ITERATIONS_PER_WORK × budget, see :func:`lp_work`); ``work`` is reported
    from the iterations the solver counts."""
    from ortools.math_opt.python import mathopt

    from solvermap.formulations.solver.config import SIMPLEX_ITERATIONS_PER_WORK

    backend = config.milp_backend() if config.milp_backend() in LP_BACKENDS else "highs"
    require_backend("milp", backend)
    kwargs: dict[str, Any] = {"enable_output": config.log, "lp_algorithm": mathopt.LPAlgorithm.DUAL_SIMPLEX}
    if config.wall_limit() is not None:
        kwargs["time_limit"] = _dt.timedelta(seconds=config.wall_limit())
    work = config.work_budget()
    if work is not None:
        kwargs["iteration_limit"] = max(1, int(SIMPLEX_ITERATIONS_PER_WORK * work))
    start = time.perf_counter()
    try:
        with sigint_survives() as interrupter:
            result = mathopt.solve(builder.model, _mathopt_solver_type(backend), params=mathopt.SolveParameters(**kwargs),
                                   interrupter=interrupter)
    except Exception as exc:  # noqa: BLE001 - a solver failure is a result, not a crash
        return LpSolution(SolveResult(Status.ERROR, backend=backend, solver_version=backend_version(backend),
                                      solve_seconds=time.perf_counter() - start, message=f"{type(exc).__name__}: {exc}"))
    seconds = time.perf_counter() - start
    status, objective, bound, limit, detail = _normalise_mathopt(result)
    work = lp_work(0, result.solve_stats.simplex_iterations)
    fired = backstop_fired(config, seconds, limit, work, by_clock=_stopped_by_clock(backend, result))
    record = SolveResult(status, objective, bound, relative_gap(objective, bound) if status.has_solution else None,
                         builder.build_seconds, seconds, backend, backend_version(backend), limit,
                         "; ".join(m for m in (detail, BACKSTOP_MESSAGE if fired else "") if m),
                         work=work, backstop_fired=fired)
    values = dict(result.variable_values()) if status.has_solution else {}
    duals = dict(result.dual_values()) if status == Status.OPTIMAL and result.has_dual_feasible_solution() else {}
    return LpSolution(record, values, duals)
