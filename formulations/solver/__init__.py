"""Solver facade: one configuration, one result record, every backend.

A formulation builds its model once and the backend is a configuration choice:

* MILP models are OR-Tools MathOpt models (built through :class:`ModelBuilder`, :mod:`.milp`). They run on
  ``cpsat`` (CP-SAT), ``highs`` (HiGHS 1.12, bundled with OR-Tools), ``scip`` (SCIP 10, bundled with
  OR-Tools), ``gurobi`` (MathOpt's Gurobi interface; needs the ``gurobi`` extra and a licence) and ``cbc``
  (COIN-OR CBC through OR-Tools' linear-solver wrapper), and on ``pyomo-<solver>``: the model copied into Pyomo
  and solved by HiGHS, CBC, GLPK, Gurobi, CPLEX or Xpress (``formulations/pyomo_backend.py``). :func:`solve_lp` solves a continuous model and
  returns its duals.
* Native CP-SAT models (:class:`ortools.sat.python.cp_model.CpModel`, :mod:`.cpsat`), for formulations that
  need global constraints, run on ``cpsat`` only; such a formulation also ships a MILP build so that it
  still runs on two backends.
* Convex models are cvxpy problems (:mod:`.convex`); backends ``clarabel``, ``scs``, ``ecos``, ``highs``
  (LP/QP) and ``scip``. ``solver=`` is always passed explicitly.

Every solve returns a :class:`SolveResult` (:mod:`.config`) with a normalised status and the deterministic
work it spent. A limit that stops a solve with an incumbent yields status ``feasible`` with its bound and
gap, never an exception; with no incumbent the status is ``timeout-no-solution``. Budgets split over many
solves, sequences of solves with one certified bound and the large-neighbourhood search live in
:mod:`solvermap.formulations.strategy`. Backend availability: :mod:`.availability`.
"""

from solvermap.formulations.solver.availability import (
    available_backends,
    backend_version,
    require_backend,
    unavailable_reason,
)
from solvermap.formulations.solver.config import (
    BACKSTOP_MESSAGE,
    CONVEX_BACKENDS,
    CPSAT_BACKENDS,
    MILP_BACKENDS,
    NODES_PER_WORK,
    PYOMO_BACKENDS,
    SIMPLEX_ITERATIONS_PER_WORK,
    WALL_BACKSTOP,
    WALL_BACKSTOP_FLOOR_S,
    SolveResult,
    SolverConfig,
    Status,
    backstop_fired,
    backstop_note,
    lp_work,
    relative_gap,
)
from solvermap.formulations.solver.convex import solve_convex
from solvermap.formulations.solver.cpsat import solve_cpsat
from solvermap.formulations.solver.milp import (
    LpSolution,
    MilpSolution,
    ModelBuilder,
    ModelCapture,
    capturing_models,
    explain_infeasible,
    hints_from,
    linear_sum,
    solve_lp,
    solve_milp,
)

__all__ = [
    "BACKSTOP_MESSAGE", "CONVEX_BACKENDS", "CPSAT_BACKENDS", "MILP_BACKENDS", "NODES_PER_WORK",
    "SIMPLEX_ITERATIONS_PER_WORK", "WALL_BACKSTOP", "WALL_BACKSTOP_FLOOR_S", "LpSolution", "MilpSolution",
    "ModelBuilder", "ModelCapture", "PYOMO_BACKENDS", "SolveResult", "SolverConfig", "Status", "available_backends", "backend_version",
    "backstop_fired", "backstop_note", "capturing_models", "explain_infeasible", "hints_from", "linear_sum", "lp_work",
    "relative_gap", "require_backend", "solve_convex", "solve_cpsat", "solve_lp", "solve_milp",
    "unavailable_reason",
]
