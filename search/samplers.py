"""Optuna samplers from a study's ``sampler:`` section, seeded for reproducibility.

``nsga2`` (default; multi-objective genetic search with constrained domination), ``nsga3``, ``tpe``
(multi-objective TPE), ``random``, ``qmc`` (scrambled Sobol), ``gp`` (Gaussian-process BO, one
objective; needs torch) and ``grid``. The grid is a full sweep of :func:`~solvermap.search.space.enumerate_space`
— every distinct configuration, conditions respected, as SARA's own DSE scripts sweep — enqueued in
the storage when the study is created, so resumed and distributed runs share one queue; its Optuna
sampler is a seeded random sampler that never runs while the queue has work.

Infeasible trials carry ``trial.set_constraint`` values, which NSGA-II/III, TPE and GP read as
constraints (Optuna 5); random, QMC and the grid ignore them.

Worker ``k`` of a batch uses seed ``seed + k``, so that parallel workers do not propose the same points.
"""

from __future__ import annotations

import inspect
from typing import Any

from solvermap.errors import InputError
from solvermap.search.study_file import StudyFile


def _check_options(cls: type, options: dict[str, Any], source: str) -> None:
    accepted = set(inspect.signature(cls.__init__).parameters) - {"self", "seed", "constraints_func"}
    for key in options:
        if key not in accepted:
            raise InputError(source, f"sampler.options.{key}",
                             f"unknown option for {cls.__name__}; known: {', '.join(sorted(accepted))}")


def make_sampler(study: StudyFile, *, worker: int = 0, source: str = "") -> Any:
    """The Optuna sampler a study asks for, seeded with ``study.seed + worker``."""
    import optuna

    name = study.sampler.name
    options = dict(study.sampler.options)
    seed = study.seed + worker
    if name == "grid":
        if options:
            raise InputError(source, "sampler.options", "the grid sampler takes no options")
        return optuna.samplers.RandomSampler(seed=seed)
    if name == "gp":
        try:
            import torch  # noqa: F401
        except ImportError:
            raise InputError(source, "sampler.name", "sampler 'gp' needs torch (pip install torch)") from None
        cls = optuna.samplers.GPSampler
    else:
        cls = {
            "nsga2": optuna.samplers.NSGAIISampler,
            "nsga3": optuna.samplers.NSGAIIISampler,
            "tpe": optuna.samplers.TPESampler,
            "random": optuna.samplers.RandomSampler,
            "qmc": optuna.samplers.QMCSampler,
        }[name]
    _check_options(cls, options, source)
    if name == "tpe":
        options.setdefault("multivariate", True)
    if name == "qmc":
        options.setdefault("scramble", True)
    try:
        return cls(seed=seed, **options)
    except (TypeError, ValueError) as exc:
        raise InputError(source, "sampler.options", str(exc).splitlines()[0]) from None
