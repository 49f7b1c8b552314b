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

Sampler state from the storage: every sampler is wrapped in :class:`TrialSeeded`, which reseeds the
sampler's random streams before each trial from (seed, trial number, stream). What a sampler proposes
for trial ``n`` then depends on the study's seed and the trials in its storage only — not on how many
trials this process has asked for — so a resumed or extended study goes on where it stopped instead of
replaying its first proposals (which made trials 4-6 of a resumed study repeat trials 0, 1 and 3).
The worker's guard (:mod:`.worker`) catches what remains: a sampler that proposes a finished
configuration again.
"""

from __future__ import annotations

import hashlib
import inspect
from typing import Any

from optuna.samplers import BaseSampler

from solvermap.errors import InputError
from solvermap.search.study_file import StudyFile


def _check_options(cls: type, options: dict[str, Any], source: str) -> None:
    accepted = set(inspect.signature(cls.__init__).parameters) - {"self", "seed", "constraints_func"}
    for key in options:
        if key not in accepted:
            raise InputError(source, f"sampler.options.{key}",
                             f"unknown option for {cls.__name__}; known: {', '.join(sorted(accepted))}")


def make_sampler(study: StudyFile, *, worker: int = 0, source: str = "") -> Any:
    """The Optuna sampler a study asks for, seeded with ``study.seed + worker``, reseeded per trial (:class:`TrialSeeded`)."""
    return TrialSeeded(_sampler(study, worker, source), study.seed + worker)


def _sampler(study: StudyFile, worker: int, source: str) -> Any:
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


def _random_states(sampler: Any) -> list[Any]:
    """The random streams (Optuna's ``LazyRandomState``) a sampler and the samplers and strategies it holds
    draw from, each once, in a fixed order (attribute order)."""
    from optuna.samplers._lazy_random_state import LazyRandomState

    found: dict[int, Any] = {}

    def walk(obj: Any, depth: int) -> None:
        for value in vars(obj).values() if hasattr(obj, "__dict__") else ():
            if isinstance(value, LazyRandomState):
                found.setdefault(id(value), value)
            elif depth < 3 and type(value).__module__.startswith("optuna.samplers"):
                walk(value, depth + 1)

    walk(sampler, 0)
    return list(found.values())


def trial_seed(seed: int, number: int, stream: int) -> int:
    """The 32-bit seed of random stream ``stream`` for trial ``number`` of a study seeded ``seed``."""
    return int.from_bytes(hashlib.sha256(f"{seed}:{number}:{stream}".encode()).digest()[:4], "little")


class TrialSeeded(BaseSampler):
    """A sampler whose random streams are reseeded before each trial from (seed, trial number, stream);
    everything else is the wrapped sampler's (module docstring)."""

    def __init__(self, sampler: Any, seed: int) -> None:
        self.sampler = sampler
        self.seed = seed
        self._streams = _random_states(sampler)

    def infer_relative_search_space(self, study: Any, trial: Any) -> Any:
        return self.sampler.infer_relative_search_space(study, trial)

    def sample_relative(self, study: Any, trial: Any, search_space: Any) -> Any:
        return self.sampler.sample_relative(study, trial, search_space)

    def sample_independent(self, study: Any, trial: Any, param_name: str, param_distribution: Any) -> Any:
        return self.sampler.sample_independent(study, trial, param_name, param_distribution)

    def before_trial(self, study: Any, trial: Any) -> None:
        for stream, state in enumerate(self._streams):
            state.rng.seed(trial_seed(self.seed, trial.number, stream))
        self.sampler.before_trial(study, trial)

    def after_trial(self, study: Any, trial: Any, state: Any, values: Any) -> None:
        self.sampler.after_trial(study, trial, state, values)

    def reseed_rng(self) -> None:
        self.sampler.reseed_rng()
