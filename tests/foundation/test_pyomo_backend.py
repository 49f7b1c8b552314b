"""The Pyomo backends and model files: limits, warm starts, bounds, availability, LP/MPS files highspy re-solves."""

import highspy
import pytest

from solvermap.errors import ConfigError, InputError
from solvermap.formulations import pyomo_backend
from solvermap.formulations.solver import (
    PYOMO_BACKENDS,
    ModelBuilder,
    ModelCapture,
    SolverConfig,
    Status,
    capturing_models,
    explain_infeasible,
    linear_sum,
    solve_milp,
)
from tests.backends import PYOMO, milp_backends

from .test_solver_facade import hard_instance, knapsack

# the Pyomo backends with a deterministic work limit
NODE_LIMITED = milp_backends("pyomo-highs", "pyomo-cbc", "pyomo-gurobi", "pyomo-cplex", "pyomo-xpress")


def test_pyomo_highs_needs_nothing_beyond_the_dependencies():
    assert pyomo_backend.unavailable_reason("pyomo-highs") is None


def test_every_pyomo_backend_has_a_solver_entry_in_the_facade_order():
    assert tuple(pyomo_backend.SOLVERS) == PYOMO_BACKENDS


@pytest.mark.parametrize("backend, package", [("pyomo-glpk", "apt-get install glpk-utils"),
                                              ("pyomo-cbc", "apt-get install coinor-cbc")])
def test_a_missing_executable_names_the_debian_package(monkeypatch, backend, package):
    monkeypatch.setattr(pyomo_backend.shutil, "which", lambda name: None)
    reason = pyomo_backend.unavailable_reason(backend)
    assert package in reason and backend in reason


def test_a_missing_python_api_names_what_to_install(monkeypatch):
    real = pyomo_backend.importlib.util.find_spec
    monkeypatch.setattr(pyomo_backend.importlib.util, "find_spec",
                        lambda name: None if name == "xpress" else real(name))
    assert "pip install xpress" in pyomo_backend.unavailable_reason("pyomo-xpress")


@pytest.mark.parametrize("backend", NODE_LIMITED)
def test_a_node_limit_gives_the_same_incumbent_and_bound_twice(backend):
    config = SolverConfig(backend=backend, time_limit_s=60, work_limit=0.05)
    first = solve_milp(hard_instance(), config).result
    second = solve_milp(hard_instance(), config).result
    assert first.status == Status.FEASIBLE and first.limit_reached
    assert (first.objective, first.bound) == (second.objective, second.bound)


@pytest.mark.parametrize("backend", NODE_LIMITED)
def test_a_stopped_maximisation_reports_its_bound_above_its_incumbent(backend):
    result = solve_milp(hard_instance(), SolverConfig(backend=backend, work_limit=0.05)).result
    assert result.bound > result.objective and result.gap > 0


@pytest.fixture(scope="module")
def hard_optimum():
    solution = solve_milp(hard_instance(), SolverConfig(backend="highs", time_limit_s=60))
    assert solution.result.status == Status.OPTIMAL
    return solution.result.objective, {var.name: solution.rounded(var) for var in solution.values}


# Xpress finds this instance's optimum at the root without a hint, so the one-node search cannot show the hint.
@pytest.mark.parametrize("backend", milp_backends("pyomo-highs", "pyomo-cbc", "pyomo-gurobi", "pyomo-cplex"))
def test_a_warm_start_reaches_the_solver(backend, hard_optimum):
    """One node: from the all-zero hint the search ends below the optimum, from the optimum as hint at it."""
    value, point = hard_optimum
    config = SolverConfig(backend=backend, work_limit=0.001)
    assert solve_milp(hard_instance(), config).result.objective < value
    m = hard_instance()
    for var in m.model.variables():
        m.hint(var, point[var.name])
    assert solve_milp(m, config).result.objective == pytest.approx(value)


@pytest.mark.parametrize("backend", milp_backends("pyomo-glpk"))
def test_glpk_says_it_ignores_the_hints(backend):
    result = solve_milp(hard_instance(), SolverConfig(backend=backend)).result
    assert "hints ignored" in result.message


@pytest.mark.parametrize("backend", milp_backends(*PYOMO))
def test_objective_offset_equality_and_range_rows_survive_the_translation(backend):
    """min 2a + b + 7 s.t. a + b = 4, 1 <= a - b <= 2, a, b integer in [0, 10]: a = 3, b = 1 → 14 (only point)."""
    m = ModelBuilder("offset")
    a, b = m.integer(0, 10, "a"), m.integer(0, 10, "b")
    m.add(a + b == 4, "sum")
    m.add((1 <= a - b) <= 2, "range")
    m.minimize(2 * a + b + 7)
    solution = solve_milp(m, SolverConfig(backend=backend))
    assert solution.result.status == Status.OPTIMAL and solution.result.objective == pytest.approx(14)
    assert (solution.rounded(a), solution.rounded(b)) == (3, 1)


@pytest.mark.parametrize("backend", milp_backends(*PYOMO))
def test_a_variable_no_row_mentions_gets_a_value_inside_its_bounds(backend):
    m, x = knapsack()
    loose = m.integer(3, 5, "loose")
    solution = solve_milp(m, SolverConfig(backend=backend))
    assert 3 <= solution.value(loose) <= 5


@pytest.mark.parametrize("backend", milp_backends(*PYOMO))
def test_infeasible_model_is_explained_by_its_constraint_groups_on_pyomo(backend):
    m = ModelBuilder("infeasible")
    y, z = m.integer(0, 10, "y"), m.integer(0, 10, "z")
    m.add(y + z >= 15, "demand")
    m.add(y <= 3, "cap_y")
    m.add(z <= 4, "cap_z")
    m.minimize(y + z)
    config = SolverConfig(backend=backend)
    assert solve_milp(m, config).result.status == Status.INFEASIBLE
    assert explain_infeasible(m, config) == ["demand", "cap_z"]


def test_a_row_without_terms_that_excludes_zero_is_infeasible():
    m, _ = knapsack()
    m.model.add_linear_constraint(lb=1.0, ub=2.0, name="empty")
    result = solve_milp(m, SolverConfig(backend="pyomo-highs")).result
    assert result.status == Status.INFEASIBLE and "'empty' has no terms" in result.message


def test_a_quadratic_objective_is_refused_in_one_line():
    m, x = knapsack()
    m.minimize(x[0] * x[1])
    with pytest.raises(ConfigError, match="quadratic objective"):
        solve_milp(m, SolverConfig(backend="pyomo-highs"))


# --------------------------------------------------------------------------- model files


def mixed_model() -> ModelBuilder:
    """max 3a + 4b + 6c + 5 − d with an equality, a range, a continuous d and names LP forbids ([], ',')."""
    m = ModelBuilder("mixed")
    a, b, c = (m.integer(0, 10, f"x[{k},0]") for k in "abc")
    d = m.continuous(0.5, 8.0, "d[slack]")
    m.add(2 * a + 3 * b + 4 * c <= 17, "capacity", "main")
    m.add(a - b + d == 2.5, "balance")
    m.add((1 <= b + c) <= 4, "window")
    m.maximize(3 * a + 4 * b + 6 * c + 5 - d)
    return m


def highspy_objective(path) -> float:
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    assert h.readModel(str(path)) == highspy.HighsStatus.kOk
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    return h.getInfo().objective_function_value


@pytest.mark.parametrize("suffix", [".lp", ".mps"])
def test_a_written_model_resolves_with_highspy_alone_to_the_same_objective(tmp_path, suffix):
    m = mixed_model()
    expected = solve_milp(m, SolverConfig(backend="scip")).result.objective
    path = tmp_path / f"mixed{suffix}"
    size = pyomo_backend.write_model(m.model.export_model(), path)
    assert size == {"variables": 4, "constraints": 3, "nonzeros": 8}
    assert highspy_objective(path) == pytest.approx(expected)


def test_a_written_model_names_its_variables_and_rows_after_the_model(tmp_path):
    path = tmp_path / "mixed.lp"
    pyomo_backend.write_model(mixed_model().model.export_model(), path)
    text = path.read_text()
    for name in ("x(a_0)", "d(slack)", "capacity(main)", "balance(0)", "window(0)"):
        assert name in text


def test_a_model_file_suffix_other_than_lp_or_mps_is_one_input_error():
    with pytest.raises(InputError, match=r"must end in \.lp or \.mps"):
        pyomo_backend.model_format("model.txt")


def test_a_capture_keeps_the_largest_model_and_counts_every_solve():
    small, _ = knapsack()
    large = hard_instance()
    capture = ModelCapture()
    with capturing_models(capture):
        solve_milp(small, SolverConfig())
        solve_milp(large, SolverConfig(work_limit=0.01))
        solve_milp(small, SolverConfig())
    assert capture.solves == 3 and capture.name == "hard" and len(capture.proto.variables.ids) == 120


def test_a_capture_leaves_out_the_infeasibility_probes():
    m = ModelBuilder("infeasible")
    y = m.integer(0, 10, "y")
    m.add(y >= 15, "demand")
    m.minimize(y + linear_sum([]))
    capture = ModelCapture()
    with capturing_models(capture):
        solve_milp(m, SolverConfig())
        explain_infeasible(m, SolverConfig())
    assert capture.solves == 1


def test_a_pyomo_solve_under_json_output_prints_one_object_and_does_not_hang(tmp_path):
    """``--json`` points descriptor 1 at stderr while the pipeline runs; Pyomo's output capture then redirects
    the descriptors of sys.stdout and sys.stderr, which deadlocked when both were descriptor 2."""
    import json
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "solvermap.cli", "solve", "partition", "--workload", "dotproduct",
                          "--target", "plasticine", "--solver", "pyomo-highs", "--json", "-q", "--out",
                          str(tmp_path / "run")], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["solver"]["backend"] == "pyomo-highs" and "deadlock" not in out.stderr
