"""MILP backends through Pyomo, and model files: any ``ModelBuilder`` model on any solver Pyomo drives.

A MathOpt model (its ``ModelProto``) is copied into a Pyomo ``ConcreteModel``:

    x[k]        one variable per MathOpt variable: its bounds; Binary for an integer in [0, 1], else Integers
                or Reals
    c[r]        one constraint per linear constraint, lb <= Σ a·x <= ub (an infinite side is dropped; a row
                with both sides infinite, as :func:`~solvermap.formulations.solver.explain_infeasible` leaves
                a relaxed group, is skipped)
    objective   the linear terms plus the offset

No solvermap model has a quadratic objective, quadratic or indicator constraints; a model with one is
refused with a one-line error rather than half translated. To solve, the Pyomo model always minimises (a
maximisation is negated, and its objective and bound negated back): Pyomo's CBC log reader reports the
bound of a maximisation with the wrong sign, and one sense keeps every interface's bound comparable.

``SolverConfig.backend = "pyomo-<solver>"`` (the facade's ``solve_milp`` dispatches here):

=============  ======================  ====================  ==================  ==========================  ==========
backend        Pyomo interface         needs                 wall-clock limit    deterministic work limit    warm start
=============  ======================  ====================  ==================  ==========================  ==========
pyomo-highs    ``appsi_highs``         highspy (dependency)  ``time_limit``      ``mip_max_nodes``           yes
pyomo-cbc      ``cbc`` (executable)    coinor-cbc            ``sec``             ``maxNodes``                yes
pyomo-glpk     ``glpk`` (``glpsol``)   glpk-utils            ``tmlim`` (whole s) none                        no
pyomo-gurobi   ``gurobi_direct``       gurobipy + licence    ``TimeLimit``       ``NodeLimit``               yes
pyomo-cplex    ``cplex_direct``        cplex                 ``timelimit``       ``dettimelimit`` (ticks)    yes
pyomo-xpress   ``xpress_direct``       xpress                ``timelimit``       ``maxnode``                 yes
=============  ======================  ====================  ==================  ==========================  ==========

The work limit is ``1000 × config.work_budget()`` branch-and-bound nodes, as the facade gives native HiGHS
and SCIP (CPLEX: as many deterministic ticks, because Pyomo reads CPLEX's node-limit status as an error), so
the same config gives the same answer under any load; the wall-clock limit is ``config.wall_limit()`` (a
backstop when the budget is deterministic). GLPK has no node limit: only the wall clock stops it, and a
stopped solve says so in its message. CPLEX and Xpress stopped without any solution come back as ``error``
(their Pyomo interfaces do not tell that case from a failure), the others as ``timeout-no-solution``.

A warm start passes the hinted values (appsi's HiGHS interface sets the unhinted ones to zero); GLPK takes
none, and its message says the hints were ignored. The bound is the solver's dual bound where its interface
reports one (GLPK: only at optimality). Gurobi, CPLEX and Xpress were checked with their size-limited pip
editions (gurobipy 13.0.3, cplex 22.2.0.1, xpress 9.9.1): every MILP agreement test passes on them.

:func:`write_model` writes a model as ``.lp`` or ``.mps`` with Pyomo's writers, each variable and
constraint named after its MathOpt name (``place[a,b]`` → ``place(a_b)``; Pyomo's LP writer prefixes
constraint rows with ``c_u_``, ``c_l_``, ``c_e_`` or ``r_l_``/``r_u_`` for the two rows of a range), so that a
user can run the decision's model on any solver elsewhere.
"""

from __future__ import annotations

import functools
import importlib.util
import math
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from solvermap.errors import ConfigError, InputError
from solvermap.formulations.solver import (
    PYOMO_BACKENDS,
    MilpSolution,
    ModelBuilder,
    SolveResult,
    SolverConfig,
    Status,
    backstop_note,
    relative_gap,
)

MODEL_SUFFIXES = {".lp": "lp", ".mps": "mps"}
NODES_PER_WORK = 1000  # branch-and-bound nodes per unit of deterministic work, as for native HiGHS and SCIP


@dataclass(frozen=True)
class PyomoSolver:
    """How one solver is reached through Pyomo and which of its options carry solvermap's limits."""

    interface: str  # name for pyomo.environ.SolverFactory
    label: str  # the solver's own name (versions, messages)
    needs: str  # what to install when it is missing
    time_limit: str  # option taking wall-clock seconds
    node_limit: str | None  # option taking branch-and-bound nodes (the deterministic work limit); None: none
    rel_gap: str
    threads: str | None = None  # None: the interface runs one thread
    seed: str | None = None
    warm_start: bool = True
    whole_seconds: bool = False  # the time limit takes whole seconds
    module: str | None = None  # Python module the interface imports
    executable: str | None = None  # executable the interface runs


SOLVERS: dict[str, PyomoSolver] = {
    # HiGHS's MIP search is serial; its `threads` option only takes effect before the first HiGHS instance.
    "pyomo-highs": PyomoSolver("appsi_highs", "HiGHS", "highspy (pip install highspy==1.12.0)", "time_limit",
                               "mip_max_nodes", "mip_rel_gap", seed="random_seed", module="highspy"),
    # CBC's randomCbcSeed=0 means "time of day": its fixed default seed is kept.
    "pyomo-cbc": PyomoSolver("cbc", "CBC", "the cbc executable (apt-get install coinor-cbc)", "sec", "maxNodes",
                             "ratioGap", threads="threads", executable="cbc"),
    "pyomo-glpk": PyomoSolver("glpk", "GLPK", "the glpsol executable (apt-get install glpk-utils)", "tmlim", None,
                              "mipgap", warm_start=False, whole_seconds=True, executable="glpsol"),
    "pyomo-gurobi": PyomoSolver("gurobi_direct", "Gurobi", "gurobipy and a licence (pip install 'solvermap[gurobi]')",
                                "TimeLimit", "NodeLimit", "MIPGap", threads="Threads", seed="Seed", module="gurobipy"),
    # CPLEX's own deterministic time (ticks) rather than a node limit: Pyomo's cplex_direct reads CPLEX's
    # node-limit status as an error, its deterministic-time status as a time limit with the incumbent.
    "pyomo-cplex": PyomoSolver("cplex_direct", "CPLEX",
                               "IBM CPLEX's Python API (pip install cplex, or a CPLEX install)", "timelimit", "dettimelimit", "mip_tolerances_mipgap", threads="threads",
                               seed="randomseed", module="cplex"),
    "pyomo-xpress": PyomoSolver("xpress_direct", "Xpress", "FICO Xpress's Python API (pip install xpress)",
                                "timelimit", "maxnode", "miprelstop", threads="threads", seed="randomseed",
                                module="xpress"),
}
assert tuple(SOLVERS) == PYOMO_BACKENDS, "formulations/solver.py lists the Pyomo backends in this order"


# --------------------------------------------------------------------------- availability


def unavailable_reason(backend: str) -> str | None:
    """None when ``backend`` can solve here, else one line naming what to install."""
    spec = SOLVERS[backend]
    if importlib.util.find_spec("pyomo") is None:
        return f"backend {backend!r} needs Pyomo (pip install pyomo)"
    if spec.module is not None and importlib.util.find_spec(spec.module) is None:
        return f"backend {backend!r} needs {spec.needs}"
    if spec.executable is not None and shutil.which(spec.executable) is None:
        return f"backend {backend!r} needs {spec.needs}"
    if not _factory(spec).available(exception_flag=False):
        return f"backend {backend!r}: Pyomo's {spec.interface} interface is not usable here (it needs {spec.needs})"
    return None


@functools.lru_cache(maxsize=None)
def version(backend: str) -> str:
    """``"<solver> <version> (Pyomo <version>, <interface>)"``."""
    import pyomo.version

    spec = SOLVERS[backend]
    try:
        found = _factory(spec).version()
    except Exception:  # noqa: BLE001 - a version is a label, never a failure
        found = None
    number = ".".join(str(part) for part in found) if found else "?"
    return f"{spec.label} {number} (Pyomo {pyomo.version.version}, {spec.interface})"


def _factory(spec: PyomoSolver) -> Any:
    import pyomo.environ as pyo

    return pyo.SolverFactory(spec.interface)


# --------------------------------------------------------------------------- translation


class TriviallyInfeasible(Exception):
    """A constraint without terms whose bounds exclude zero."""


@dataclass
class Translated:
    """A Pyomo copy of a MathOpt model: ``variables[k]`` is the Pyomo variable of MathOpt variable
    ``variable_ids[k]``; ``negated`` when the objective was negated to minimise."""

    model: Any
    variables: list[Any]
    variable_ids: list[int]
    negated: bool


def _refuse_nonlinear(proto: Any, name: str) -> None:
    extras = {
        "a quadratic objective": len(proto.objective.quadratic_coefficients.row_ids),
        "quadratic constraints": len(proto.quadratic_constraints),
        "indicator constraints": len(proto.indicator_constraints),
        "SOS constraints": len(proto.sos1_constraints) + len(proto.sos2_constraints),
        "second-order cone constraints": len(proto.second_order_cone_constraints),
        "auxiliary objectives": len(proto.auxiliary_objectives),
    }
    found = [what for what, count in extras.items() if count]
    if found:
        raise ConfigError(f"model {name!r} has {', '.join(found)}: the Pyomo translation takes linear MILP models only")


def translate(proto: Any, *, minimise: bool) -> Translated:
    """Copy a MathOpt ``ModelProto`` into a Pyomo ``ConcreteModel`` (see the module docstring).

    ``minimise``: negate a maximisation so that the Pyomo model minimises (for solving); otherwise keep the
    sense (for model files). Raises :class:`TriviallyInfeasible` for a violated constraint without terms.
    """
    import pyomo.environ as pyo
    from pyomo.core.expr.numeric_expr import LinearExpression, MonomialTermExpression

    _refuse_nonlinear(proto, proto.name)
    variables = proto.variables
    ids = list(variables.ids)
    position = {vid: k for k, vid in enumerate(ids)}
    model = pyo.ConcreteModel(name=_label(proto.name) if proto.name else "model")
    model.x = pyo.Var(range(len(ids)), dense=True)
    x = [model.x[k] for k in range(len(ids))]
    for k, var in enumerate(x):
        lb, ub = variables.lower_bounds[k], variables.upper_bounds[k]
        if variables.integers[k]:
            var.domain = pyo.Binary if (lb, ub) == (0.0, 1.0) else pyo.Integers
        var.setlb(None if lb == -math.inf else lb)
        var.setub(None if ub == math.inf else ub)

    rows = proto.linear_constraints
    row_position = {cid: r for r, cid in enumerate(rows.ids)}
    terms: list[list[Any]] = [[] for _ in row_position]
    matrix = proto.linear_constraint_matrix
    for r, c, a in zip(matrix.row_ids, matrix.column_ids, matrix.coefficients):
        terms[row_position[r]].append(MonomialTermExpression((a, x[position[c]])))

    def row(_model: Any, r: int) -> Any:
        lb, ub = rows.lower_bounds[r], rows.upper_bounds[r]
        if lb == -math.inf and ub == math.inf:
            return pyo.Constraint.Skip
        if not terms[r]:
            if lb <= 0.0 <= ub:
                return pyo.Constraint.Skip
            raise TriviallyInfeasible(f"constraint {rows.names[r] if rows.names else r!r} has no terms and "
                                      f"bounds [{lb}, {ub}] that exclude 0")
        body = LinearExpression(terms[r])
        if lb == ub:
            return body == lb
        return (None if lb == -math.inf else lb, body, None if ub == math.inf else ub)

    model.c = pyo.Constraint(range(len(terms)), rule=row)
    objective = proto.objective
    negated = minimise and objective.maximize
    sign = -1.0 if negated else 1.0
    linear = objective.linear_coefficients
    expr = LinearExpression([MonomialTermExpression((sign * a, x[position[vid]]))
                             for vid, a in zip(linear.ids, linear.values)])
    if objective.offset:
        expr = expr + sign * objective.offset
    sense = pyo.maximize if objective.maximize and not negated else pyo.minimize
    model.objective = pyo.Objective(expr=expr, sense=sense)
    return Translated(model, x, ids, negated)


# --------------------------------------------------------------------------- solving


def _options(spec: PyomoSolver, config: SolverConfig) -> dict[str, Any]:
    options: dict[str, Any] = {spec.rel_gap: config.rel_gap}
    wall = config.wall_limit()
    if wall is not None:
        options[spec.time_limit] = max(1, math.ceil(wall)) if spec.whole_seconds else wall
    work = config.work_budget()
    if work is not None and spec.node_limit is not None:
        options[spec.node_limit] = max(1, int(NODES_PER_WORK * work))
    if spec.threads is not None:
        options[spec.threads] = config.threads
    if spec.seed is not None:
        options[spec.seed] = config.seed
    return options


def _status(termination: Any, has_solution: bool) -> tuple[Status, bool, str]:
    """(status, limit reached, detail) of a Pyomo termination condition. A search that ended with a solution
    but no proof stopped at a limit, whatever the interface calls it (Xpress: ``other``)."""
    from pyomo.opt import TerminationCondition as T

    if termination in (T.optimal, T.globallyOptimal) and has_solution:
        return Status.OPTIMAL, False, ""
    if termination == T.infeasible:
        return Status.INFEASIBLE, False, ""
    if termination == T.infeasibleOrUnbounded:
        return Status.INFEASIBLE, False, "infeasible or unbounded"
    if termination == T.unbounded:
        return Status.UNBOUNDED, False, ""
    if has_solution:
        return Status.FEASIBLE, True, f"stopped by a limit ({termination})"
    if termination in (T.maxTimeLimit, T.maxIterations, T.maxEvaluations, T.feasible, T.minFunctionValue,
                       T.userInterrupt, T.resourceInterrupt, T.noSolution, T.intermediateNonInteger):
        return Status.TIMEOUT_NO_SOLUTION, True, f"stopped by a limit ({termination})"
    return Status.ERROR, False, f"termination condition {termination}"


def solve(builder: ModelBuilder, config: SolverConfig, build_seconds: float) -> MilpSolution:
    """Solve ``builder``'s model with ``config.backend`` (a ``pyomo-<solver>`` backend); never raises on
    limits or solver failures. ``build_seconds`` includes the translation to Pyomo."""
    from pyomo.opt import SolutionStatus, SolverStatus

    backend = config.backend
    spec = SOLVERS[backend]
    start = time.perf_counter()

    def failed(status: Status, message: str, seconds: float = 0.0) -> MilpSolution:
        return MilpSolution(SolveResult(status, build_seconds=build_seconds, solve_seconds=seconds, backend=backend,
                                        solver_version=version(backend), message=message))

    try:
        translated = translate(builder.model.export_model(), minimise=True)
    except TriviallyInfeasible as exc:
        return failed(Status.INFEASIBLE, str(exc))
    notes = []
    if builder.hints:
        if spec.warm_start:
            ids = {vid: k for k, vid in enumerate(translated.variable_ids)}
            for var, value in builder.hints.items():
                translated.variables[ids[var.id]].set_value(value, skip_validation=True)
        else:
            notes.append(f"{spec.label} takes no warm start: {len(builder.hints)} hints ignored")
    build_seconds += time.perf_counter() - start
    solver = _factory(spec)
    kwargs: dict[str, Any] = {"load_solutions": False, "tee": config.log, "options": _options(spec, config)}
    if builder.hints and spec.warm_start:
        kwargs["warmstart"] = True
    start = time.perf_counter()
    try:
        results = solver.solve(translated.model, **kwargs)
    except Exception as exc:  # noqa: BLE001 - a solver failure is a result, not a crash
        return failed(Status.ERROR, f"{spec.label} through Pyomo: {type(exc).__name__}: {exc}",
                      time.perf_counter() - start)
    seconds = time.perf_counter() - start
    solutions = len(results.solution)
    has = solutions > 0 and results.solution(0).status in (
        SolutionStatus.optimal, SolutionStatus.feasible, SolutionStatus.stoppedByLimit, SolutionStatus.bestSoFar,
        SolutionStatus.globallyOptimal, SolutionStatus.locallyOptimal)
    status, limit, detail = _status(results.solver.termination_condition, has)
    values: dict[Any, float] = {}
    objective = bound = None
    if status.has_solution:
        for var in translated.variables:
            var.set_value(None, skip_validation=True)  # a warm start must not stand in for a missing value
        results.solver.status = SolverStatus.ok  # the termination is recorded above; load without Pyomo's warning
        translated.model.solutions.load_from(results)
        sign = -1.0 if translated.negated else 1.0
        by_id = {var.id: var for var in builder.model.variables()}
        for vid, var in zip(translated.variable_ids, translated.variables):
            values[by_id[vid]] = float(var.value) if var.value is not None else _inside(0.0, var.lb, var.ub)
        objective = sign * float(translated.model.objective.expr())
        lower = results.problem.lower_bound
        lower = float(lower) if lower is not None and math.isfinite(float(lower)) else None
        if status == Status.OPTIMAL and lower is None:
            lower = sign * objective
        bound = sign * lower if lower is not None else None
    message = "; ".join(m for m in (detail, *notes, backstop_note(config, seconds, limit)) if m)
    return MilpSolution(
        SolveResult(status, objective, bound, relative_gap(objective, bound) if status.has_solution else None,
                    build_seconds, seconds, backend, version(backend), limit_reached=limit, message=message),
        values,
    )


def _inside(value: float, lb: float | None, ub: float | None) -> float:
    """``value`` moved into [lb, ub]: the value of a variable no constraint or objective mentions."""
    if lb is not None and value < lb:
        return float(lb)
    if ub is not None and value > ub:
        return float(ub)
    return value


# --------------------------------------------------------------------------- model files


def model_format(path: str | Path) -> str:
    """``"lp"`` or ``"mps"`` from the suffix of ``path``; anything else is an :class:`InputError`."""
    suffix = Path(path).suffix.lower()
    if suffix not in MODEL_SUFFIXES:
        raise InputError("--write-model", "", f"{str(path)!r} must end in .lp or .mps (got {suffix or 'no suffix'!r})")
    return MODEL_SUFFIXES[suffix]


def _label(name: str) -> str:
    """A MathOpt name as an LP/MPS name: ``[``/``]`` become parentheses, anything but letters, digits and
    ``()_`` an underscore, and a name may not start with a digit."""
    from pyomo.core.base.label import cpxlp_label_from_name

    label = cpxlp_label_from_name(name)
    return f"_{label}" if label[:1].isdigit() else label


def _labeler(translated: Translated, proto: Any) -> Any:
    """Pyomo labeler naming every variable and constraint after its (unique) MathOpt name."""
    from pyomo.common.collections import ComponentMap

    names: ComponentMap = ComponentMap()
    taken: set[str] = set()

    def claim(component: Any, name: str, fallback: str) -> None:
        label = _label(name) if name else fallback
        unique, k = label, 1
        while unique in taken:
            unique, k = f"{label}_{k}", k + 1
        taken.add(unique)
        names[component] = unique

    for k, var in enumerate(translated.variables):
        claim(var, proto.variables.names[k] if proto.variables.names else "", f"x{k}")
    for r, con in translated.model.c.items():
        claim(con, proto.linear_constraints.names[r] if proto.linear_constraints.names else "", f"c{r}")
    claim(translated.model.objective, "objective", "objective")

    def labeler(component: Any) -> str:
        return names[component] if component in names else _label(component.getname(fully_qualified=True))

    return labeler


def write_model(proto: Any, path: str | Path) -> dict[str, int]:
    """Write a MathOpt ``ModelProto`` to ``path`` as LP or MPS (by suffix) with readable names; returns
    its size (variables, constraints, nonzeros). A model with a constraint no point satisfies (no terms,
    bounds excluding 0) cannot be written and says so."""
    from pyomo.opt import ProblemFormat

    fmt = model_format(path)
    try:
        translated = translate(proto, minimise=False)
    except TriviallyInfeasible as exc:
        raise ConfigError(f"--write-model: the model is infeasible before any solve: {exc}") from None
    problem_format = ProblemFormat.cpxlp if fmt == "lp" else ProblemFormat.mps
    try:
        translated.model.write(str(path), format=problem_format,
                               io_options={"labeler": _labeler(translated, proto)})
    except OSError as exc:
        raise InputError(str(path), "", f"cannot write the model file: {exc.strerror or exc}") from None
    return {"variables": len(proto.variables.ids), "constraints": len(proto.linear_constraints.ids),
            "nonzeros": len(proto.linear_constraint_matrix.coefficients)}
