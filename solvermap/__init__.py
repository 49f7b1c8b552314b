"""solvermap: a mapping compiler and design-space explorer for accelerators.

Every compilation decision is an explicit, solver-backed model. The root package holds the public API,
CLI, configuration, errors, run records and result types; the work lives in the subpackages
``solvermap.ir``, ``solvermap.formulations``, ``solvermap.mappers``, ``solvermap.hardware``,
``solvermap.search`` and ``solvermap.studies``.

The public API (:mod:`solvermap.api`, the same functions the command line calls)::

    import solvermap

    result = solvermap.map("dotproduct", "plasticine")      # MapResult: .records, .validation
    result.to_frame()                                       # one row per decision (pandas)
    study = solvermap.explore("plasticine-dse", n_trials=8) # StudyResults: .trials, .front, .figure()

Importing the package imports nothing else: each public name loads :mod:`solvermap.api` on first use.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

#: the public names, all defined in :mod:`solvermap.api` (or re-exported by it)
PUBLIC = ("map", "solve", "explore", "batch", "status", "run_state", "rerun", "load_workload", "load_target",
          "workloads", "targets", "decisions", "studies", "MapResult", "DecisionResult", "StudyResults", "Rerun",
          "SolvermapError", "InputError", "ConfigError", "InfeasibleError", "BackendUnavailable", "StrictError",
          "UnknownNameError")
__all__ = ["__version__", *PUBLIC]

def __getattr__(name: str) -> Any:
    """A public name, loaded from :mod:`solvermap.api` on first use (so ``import solvermap`` stays light)."""
    if name in PUBLIC:
        from solvermap import api

        value = getattr(api, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'solvermap' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *PUBLIC})
