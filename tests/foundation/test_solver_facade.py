"""The solver facade: every available backend agrees on known optima; limits never crash."""

import math

import cvxpy as cp
import pytest

from solvermap.errors import BackendUnavailable
from solvermap.formulations.solver import (
    CONVEX_BACKENDS,
    MILP_BACKENDS,
    PYOMO_BACKENDS,
    ModelBuilder,
    SolverConfig,
    Status,
    available_backends,
    explain_infeasible,
    linear_sum,
    require_backend,
    solve_convex,
    solve_cpsat,
    solve_milp,
)

MILP = available_backends("milp")
CONVEX = available_backends("convex")


def knapsack() -> tuple[ModelBuilder, list]:
    """max 3a + 4b + 6c  s.t. 2a + 3b + 4c <= 17, 0 <= a,b,c <= 10 integer; optimum 25 (enumerated below)."""
    m = ModelBuilder("knapsack")
    x = [m.integer(0, 10, f"x{i}") for i in range(3)]
    m.add(2 * x[0] + 3 * x[1] + 4 * x[2] <= 17, "capacity")
    m.maximize(3 * x[0] + 4 * x[1] + 6 * x[2])
    return m, x


def test_knapsack_optimum_is_25_by_enumeration():
    best = max(3 * a + 4 * b + 6 * c for a in range(11) for b in range(11) for c in range(11) if 2 * a + 3 * b + 4 * c <= 17)
    assert best == 25


def test_default_backends_are_available():
    assert {"cpsat", "highs", "scip"} <= set(MILP)
    assert {"clarabel", "scs"} <= set(CONVEX)


@pytest.mark.parametrize("backend", MILP)
def test_every_milp_backend_finds_the_known_optimum(backend):
    m, x = knapsack()
    solution = solve_milp(m, SolverConfig(backend=backend, time_limit_s=20))
    result = solution.result
    assert result.status == Status.OPTIMAL
    assert result.objective == pytest.approx(25)
    assert result.bound == pytest.approx(25)
    assert result.gap == pytest.approx(0)
    assert result.backend == backend and result.solver_version
    a, b, c = (solution.rounded(v) for v in x)
    assert 2 * a + 3 * b + 4 * c <= 17 and 3 * a + 4 * b + 6 * c == 25


def convex_problem():
    """min ||x - (1, 2)||² s.t. x1 + x2 <= 2: optimum x = (0.5, 1.5), value 0.5 (KKT by hand)."""
    x = cp.Variable(2)
    return cp.Problem(cp.Minimize(cp.sum_squares(x - [1, 2])), [cp.sum(x) <= 2]), x


@pytest.mark.parametrize("backend", [b for b in CONVEX if b not in ("highs", "scip")])
def test_every_convex_backend_finds_the_known_optimum(backend):
    problem, x = convex_problem()
    result = solve_convex(problem, SolverConfig(convex_backend=backend))
    assert result.status in (Status.OPTIMAL, Status.FEASIBLE)
    assert result.objective == pytest.approx(0.5, abs=1e-4)
    assert x.value == pytest.approx([0.5, 1.5], abs=1e-3)


@pytest.mark.parametrize("backend", [b for b in CONVEX if b in ("highs", "scip")])
def test_lp_capable_convex_backends_agree_on_an_lp(backend):
    x = cp.Variable(2, nonneg=True)
    problem = cp.Problem(cp.Maximize(x[0] + 2 * x[1]), [x[0] + x[1] <= 4, x[1] <= 3])
    result = solve_convex(problem, SolverConfig(convex_backend=backend))
    assert result.status == Status.OPTIMAL and result.objective == pytest.approx(7)


def hard_instance() -> ModelBuilder:
    """A 120-item multi-constraint knapsack: a solution at once (all zero, hinted), no proof in 0.05 s."""
    import random

    rng = random.Random(7)
    m = ModelBuilder("hard")
    n = 120
    x = [m.binary(f"x{i}") for i in range(n)]
    for _ in range(6):
        a = [rng.randint(20, 99) for _ in range(n)]
        m.add(linear_sum(a[i] * x[i] for i in range(n)) <= sum(a) // 3, "capacity")
    m.maximize(linear_sum(rng.randint(10**4, 10**5) * x[i] for i in range(n)))
    for v in x:
        m.hint(v, 0)
    return m


@pytest.mark.parametrize("backend", [b for b in MILP if b in ("cpsat", "scip", "highs")])
def test_a_forced_time_limit_returns_the_incumbent_with_its_gap(backend):
    result = solve_milp(hard_instance(), SolverConfig(backend=backend, time_limit_s=0.05)).result
    assert result.status in (Status.FEASIBLE, Status.TIMEOUT_NO_SOLUTION)
    assert result.limit_reached
    if result.status == Status.FEASIBLE:
        assert result.objective is not None and result.bound is not None
        assert result.gap is not None and result.gap > 0


def test_cpsat_reports_feasible_with_gap_under_a_time_limit():
    result = solve_milp(hard_instance(), SolverConfig(backend="cpsat", time_limit_s=0.05)).result
    assert result.status == Status.FEASIBLE and result.gap > 0 and result.bound > result.objective


def test_infeasible_model_is_explained_by_its_constraint_groups():
    m = ModelBuilder("infeasible")
    y, z = m.integer(0, 10, "y"), m.integer(0, 10, "z")
    m.add(y + z >= 15, "demand")
    m.add(y <= 3, "cap_y")
    m.add(z <= 4, "cap_z")
    m.add(y - z <= 100, "loose")
    m.minimize(y + z)
    config = SolverConfig(backend="cpsat")
    assert solve_milp(m, config).result.status == Status.INFEASIBLE
    assert explain_infeasible(m, config) == ["demand", "cap_z"]
    assert solve_milp(m, config).result.status == Status.INFEASIBLE  # model restored


def test_native_cpsat_model_solves_through_the_facade():
    from ortools.sat.python import cp_model

    model = cp_model.CpModel()
    x = [model.NewIntVar(0, 10, f"x{i}") for i in range(3)]
    model.AddAllDifferent(x)
    model.Add(sum(x) <= 5)
    model.Maximize(x[0] * 3 + x[1] * 2 + x[2])
    result, solver = solve_cpsat(model, SolverConfig())
    best = max(3 * a + 2 * b + c for a in range(11) for b in range(11) for c in range(11)
               if len({a, b, c}) == 3 and a + b + c <= 5)
    assert result.status == Status.OPTIMAL and result.objective == pytest.approx(best) == 14
    assert [solver.Value(v) for v in x] == [4, 1, 0]


def test_duplicate_names_are_made_unique():
    m = ModelBuilder("dup")
    a, b = m.binary("v"), m.binary("v")
    m.add(a + b <= 1, "c", "same")
    m.add(a - b <= 0, "c", "same")
    m.maximize(a + b)
    assert solve_milp(m, SolverConfig()).result.objective == pytest.approx(1)


def test_missing_backend_names_the_extra_to_install():
    if "gurobi" in MILP:
        pytest.skip("gurobi is installed here")
    with pytest.raises(BackendUnavailable, match=r"solvermap\[gurobi\]"):
        require_backend("milp", "gurobi")


def test_unknown_backend_is_a_config_error():
    with pytest.raises(ValueError, match="unknown backend"):
        SolverConfig(backend="cplexx")


def test_solve_result_json_has_documented_keys():
    m, _ = knapsack()
    data = solve_milp(m, SolverConfig()).result.to_json()
    for key in ("backend", "status", "objective", "bound", "gap", "build_seconds", "solve_seconds"):
        assert key in data
    assert data["status"] == "optimal" and not math.isnan(data["objective"])


def test_backend_lists_are_documented():
    assert PYOMO_BACKENDS == ("pyomo-highs", "pyomo-cbc", "pyomo-glpk", "pyomo-gurobi", "pyomo-cplex", "pyomo-xpress")
    assert MILP_BACKENDS == ("cpsat", "highs", "scip", "gurobi", "cbc") + PYOMO_BACKENDS
    assert CONVEX_BACKENDS == ("clarabel", "scs", "ecos", "highs", "scip")


@pytest.mark.parametrize("backend", [b for b in MILP if b in ("cpsat", "scip", "highs")])
def test_a_work_limit_gives_the_same_answer_whatever_the_wall_clock(backend):
    """A deterministic budget stops the solve at the same point on every run: same incumbent, same bound."""
    config = SolverConfig(backend=backend, time_limit_s=60, work_limit=0.05)
    first = solve_milp(hard_instance(), config).result
    second = solve_milp(hard_instance(), config).result
    assert first.status.has_solution and first.limit_reached
    assert (first.status, first.objective, first.bound) == (second.status, second.objective, second.bound)


def test_the_default_time_limit_is_spent_as_deterministic_work():
    config = SolverConfig(time_limit_s=10)
    assert config.deterministic and config.work_budget() == 10 and config.wall_limit() == 260  # 20 x + 60 s
    plain = SolverConfig(time_limit_s=10, deterministic=False)
    assert plain.work_budget() is None and plain.wall_limit() == 10
    assert SolverConfig(time_limit_s=10, work_limit=2).wall_limit() == 10


@pytest.mark.parametrize("backend", [b for b in MILP if b in ("cpsat", "scip", "highs")])
def test_a_default_time_limit_gives_the_same_answer_twice(backend):
    config = SolverConfig(backend=backend, time_limit_s=0.05)
    first = solve_milp(hard_instance(), config).result
    second = solve_milp(hard_instance(), config).result
    assert first.limit_reached and (first.objective, first.bound) == (second.objective, second.bound)


_SOLVE_FOREVER = """
import sys
from solvermap.formulations.solver import ModelBuilder, SolverConfig, solve_cpsat, solve_milp
backend = sys.argv[1]
first = True
try:
    while True:
        if backend == "native-cpsat":
            from ortools.sat.python import cp_model
            m = cp_model.CpModel()
            x = [m.NewIntVar(0, 10, f"x{i}") for i in range(3)]
            m.Add(2 * x[0] + 3 * x[1] + 4 * x[2] <= 17)
            m.Maximize(3 * x[0] + 4 * x[1] + 6 * x[2])
            solve_cpsat(m, SolverConfig(backend="cpsat", time_limit_s=1))
        else:
            m = ModelBuilder("k")
            x = [m.integer(0, 10, f"x{i}") for i in range(3)]
            m.add(2 * x[0] + 3 * x[1] + 4 * x[2] <= 17, "capacity")
            m.maximize(3 * x[0] + 4 * x[1] + 6 * x[2])
            solve_milp(m, SolverConfig(backend=backend, time_limit_s=1))
        if first:  # the solver libraries are loaded (a Ctrl-C while importing them is another matter)
            print("ready", flush=True)
            first = False
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(3)
"""


CBC_SIGINT = ("known bug, not fixed: CBC (CbcMain1) installs its own SIGINT handler for each solve, so a Ctrl-C that "
              "lands inside a CBC solve only ends that solve, and a loop of CBC solves then runs on (blocking SIGINT "
              "does not help: the kernel hands it to OpenBLAS's thread, where CBC's handler takes it)")


@pytest.mark.parametrize("backend", ["native-cpsat"] + [
    pytest.param(b, marks=pytest.mark.skip(reason=CBC_SIGINT)) if b == "cbc" else b
    for b in MILP if b in ("cpsat", "highs", "scip", "cbc", "pyomo-highs")])
def test_ctrl_c_during_solves_raises_keyboard_interrupt_instead_of_being_swallowed(backend):
    """A Ctrl-C'd study must stop: CP-SAT catches SIGINT by default and only ends the current solve, and
    MathOpt's native code runs the pending Python handler and discards its KeyboardInterrupt (Pyomo loses one
    raised in its finalisers or a highspy callback, sometimes hanging: 3 of 20 runs); the facade turns the
    first off and re-raises the others after the solve."""
    import signal
    import subprocess
    import sys
    import time

    # SIG_DFL in the child: a test run started in the background (``cmd &``) inherits SIGINT ignored, and
    # Python then installs no KeyboardInterrupt handler at all
    child = subprocess.Popen([sys.executable, "-c", _SOLVE_FOREVER, backend], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert child.stdout.readline().strip() == "ready"
        time.sleep(1.5)  # many solves have run by now
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=120)  # a hang guard only: under load the interrupted solve may finish slowly
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 3 and "interrupted" in out, err[-500:]
