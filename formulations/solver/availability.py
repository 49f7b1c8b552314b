"""Which backends can run here (probed once per process) and their versions."""

from __future__ import annotations

import functools
import importlib.metadata
from collections.abc import Callable

from solvermap.errors import BackendUnavailable
from solvermap.formulations.solver.config import CONVEX_BACKENDS, MILP_BACKENDS, PYOMO_BACKENDS

_EXTRA_FOR = {"gurobi": "gurobi", "ecos": "ecos"}


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

