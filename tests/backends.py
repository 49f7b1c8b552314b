"""Backends of the agreement tests: a backend that cannot run here is skipped with the reason (what to install)."""

from __future__ import annotations

import pytest

from solvermap.formulations.solver import unavailable_reason

# The Pyomo backends of every MILP agreement test: pyomo-highs always (highspy is a dependency), pyomo-cbc
# and pyomo-glpk when the Debian executables are installed (.ci/run installs them), Gurobi, CPLEX and Xpress
# where their Python APIs are (their size-limited pip editions solve these small instances).
PYOMO = ("pyomo-highs", "pyomo-cbc", "pyomo-glpk", "pyomo-gurobi", "pyomo-cplex", "pyomo-xpress")


def milp_backends(*names: str) -> list:
    """``pytest.param`` per MILP backend, skipped with the reason where it is not usable here."""
    params = []
    for name in names:
        reason = unavailable_reason("milp", name)
        params.append(pytest.param(name, id=name, marks=pytest.mark.skipif(reason is not None, reason=str(reason))))
    return params
