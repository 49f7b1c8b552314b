"""Opening a study in its storage and running trials from it (the loop every worker runs).

:func:`open_study` creates the Optuna study (directions from the objectives, the seeded sampler,
the study file's digest and objective labels as study attributes) or loads it when it exists — which
is how an interrupted study resumes. A study of the same name with a different digest is refused.
For the grid sampler it enqueues the whole sweep once, at creation.

:func:`run_worker` repeats, until the study holds ``n_trials`` finished (COMPLETE) trials or the time
budget is spent: under the :class:`~solvermap.search.storage.SlotLock`, fail stale trials and count;
if finished + running trials already reach the target, wait for the others; else ask a trial (a
re-queued retry first); then, with the lock released, claim it and start its heartbeat; evaluate; set
constraints and user attributes; tell. An exception inside a trial fails that trial (its message in the user attribute
``error``) and the loop goes on; a :class:`~solvermap.search.evaluate.StudyError` or Ctrl-C fails the
trial and stops the worker; after Ctrl-C, or :class:`WorkerStopped` (how a batch worker stops on
SLURM's SIGTERM or time-limit signal, :mod:`.batch`), the interrupted trial is failed and re-queued at
once, under the slot lock, so another worker or a resumed study runs it — unless it finished meanwhile.
Native solver code may swallow an exception raised by a signal handler, so ``stop_check`` is also
called between trials: a stop that arrived during a solve ends the worker after that trial is told.

No repeats: a proposal whose configuration a finished (or another running) trial already has is not
evaluated: the trial is failed with the user attribute ``repeat_of`` (the report leaves such proposals
out of the tables) and the worker asks again. The samplers' streams are reseeded per trial
(:class:`~solvermap.search.samplers.TrialSeeded`), so the next proposal differs. A finite space caps
``n_trials`` at its number of configurations, and :data:`MAX_REPEATS` proposals in a row that all
repeat end the worker (the sampler finds nothing new).
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from solvermap.errors import InputError
from solvermap.search.evaluate import Evaluator, StudyError, TrialResult
from solvermap.search.pruning import front_points, prune
from solvermap.search.samplers import make_sampler
from solvermap.search.space import enumerate_space, suggest
from solvermap.search.storage import (
    REPEAT_ATTR,
    Heartbeat,
    RetryStaleTrial,
    SlotLock,
    claim,
    fail_stale,
    open_storage,
    redact,
)
from solvermap.search.study_file import StudyFile, study_digest

META_ATTR = "solvermap"
MAX_REPEATS = 200  # proposals in a row that repeat a finished configuration before a worker gives up
RANDOM_AFTER = 8  # repeats in a row after which the next proposal is drawn at random (seeded by the trial count)


class WorkerStopped(BaseException):
    """A worker told to stop by a signal (a batch job's SIGTERM or time-limit warning); not an
    ``Exception``, so that no trial handler mistakes it for a broken trial, and not a ``SystemExit``,
    which native code that swallows it would turn into an immediate exit."""

    def __init__(self, signum: int) -> None:
        import signal

        super().__init__(f"signal {signal.Signals(signum).name}")
        self.signum = signum


def quiet_optuna() -> None:
    """Optuna's per-trial INFO lines and experimental-feature warnings would drown the progress bar."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    warnings.filterwarnings("ignore", message=".*constraint value is ignored.*")
    # we run Optuna's RDB heartbeat ourselves around ask/tell (search.storage.Heartbeat)
    warnings.filterwarnings("ignore", message="Heartbeat of storage is supposed to be used with Study.optimize")


@dataclass
class StudyHandle:
    """An open study: the Optuna study, its storage URL, the slot lock and the study file."""

    study: Any
    url: str
    lock: SlotLock
    spec: StudyFile
    n_trials: int
    grid_size: int | None = None


def grid_configs(spec: StudyFile) -> list[dict[str, Any]]:
    """The grid sampler's sweep: every configuration, shuffled by the study seed (early trials spread out)."""
    import random

    configs = enumerate_space(spec.space)
    random.Random(spec.seed).shuffle(configs)
    return configs


def open_study(spec: StudyFile, url: str, *, n_trials: int | None = None, worker: int = 0,
               create: bool = True, source: str = "") -> StudyHandle:
    """Create or load the study ``spec.name`` in ``url`` (see module docstring)."""
    import optuna

    quiet_optuna()
    storage = open_storage(url, spec.storage)
    sampler = make_sampler(spec, worker=worker, source=source)
    digest = study_digest(spec)
    lock = SlotLock(storage, url, spec.name)
    grid = grid_configs(spec) if spec.sampler.name == "grid" else None
    with lock.hold():
        names = {s.study_name for s in optuna.get_all_study_summaries(storage, include_best_trial=False)}
        if spec.name not in names and not create:
            raise InputError("--storage", redact(url), f"no study named {spec.name!r} in this storage")
        if spec.name in names:  # loading, not create_study(load_if_exists): no failed INSERT per worker
            study = optuna.load_study(study_name=spec.name, storage=storage, sampler=sampler)
        else:
            study = optuna.create_study(study_name=spec.name, storage=storage, sampler=sampler,
                                        directions=spec.directions)
        meta = study.user_attrs.get(META_ATTR)
        if meta is None:
            study.set_user_attr(META_ATTR, {"digest": digest, "objectives": [o.label for o in spec.objectives],
                                            "directions": spec.directions, "sampler": spec.sampler.name,
                                            "seed": spec.seed})
            if grid is not None:
                for config in grid:
                    study.enqueue_trial(config)
        elif meta.get("digest") != digest:
            raise InputError("--storage", redact(url),
                             f"study {spec.name!r} already exists there with different contents (digest "
                             f"{meta.get('digest')} ≠ {digest}); give the study another `name` or use another storage")
    target = n_trials if n_trials is not None else spec.n_trials(len(grid) if grid is not None else None)
    size = len(grid) if grid is not None else _finite_size(spec)
    if size is not None:
        target = min(target, size)  # no more distinct configurations than the space has
    return StudyHandle(study, url, lock, spec, target, len(grid) if grid is not None else None)


def _finite_size(spec: StudyFile) -> int | None:
    """The number of configurations of a space that can be enumerated, else None (floats, too many)."""
    from solvermap.search.space import space_size

    try:
        return space_size(spec.space)
    except InputError:
        return None


def config_key(params: Any) -> str:
    """A configuration as a comparable text (parameter order does not matter)."""
    import json

    return json.dumps(dict(params), sort_keys=True, default=str)


def _repeated(study: Any, trial: Any, config: dict[str, Any]) -> int | None:
    """The number of a finished trial, or of another running one, with the configuration ``config``."""
    from optuna.trial import TrialState

    key = config_key(config)
    for other in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.RUNNING)):
        if other.number != trial.number and REPEAT_ATTR not in other.user_attrs and config_key(other.params) == key:
            if other.state == TrialState.COMPLETE or set(other.params) == set(config):
                return other.number
    return None


@dataclass
class WorkerReport:
    """What one worker did."""

    label: str
    started: int = 0
    completed: int = 0  # full evaluations
    infeasible: int = 0
    unknown: int = 0
    pruned: int = 0
    failed: int = 0
    lost: int = 0  # trials failed as stale by another worker while this one still ran them
    errors: list[str] = field(default_factory=list)
    repeats: int = 0  # proposals of a configuration a finished trial already had (not evaluated)


def counts(study: Any) -> dict[str, int]:
    from optuna.trial import TrialState

    out = {s.name.lower(): 0 for s in TrialState}
    for t in study.get_trials(deepcopy=False):
        out[t.state.name.lower()] += 1
    return out


def finished(c: dict[str, int]) -> int:
    """Trials that count toward ``n_trials``: full evaluations (COMPLETE) and pruned ones (Optuna's rule)."""
    return c["complete"] + c["pruned"]


def result_attr(result: TrialResult) -> dict[str, Any]:
    """The trial's user attribute ``result`` (one write): outcome, feasibility, metrics, certified bounds,
    cache use, run directory."""
    finite = {k: (v if math.isfinite(v) else None) for k, v in result.metrics.items()}
    return {"outcome": result.outcome, "feasible": result.feasible, "reason": result.reason[:500], "metrics": finite,
            "per_workload": {w: {k: (v if math.isfinite(v) else None) for k, v in m.items()}
                             for w, m in result.per_workload.items()},
            "bounds": result.bounds, "dominated_by": result.dominated_by, "bound_violations": result.bound_violations,
            "cache": result.cache, "seconds": result.seconds, "run_dir": result.run_dir}


def run_worker(handle: StudyHandle, evaluator: Evaluator, *, timeout_s: float | None = None, label: str = "main",
               on_trial: Callable[[int, TrialResult | None, int], None] | None = None,
               poll_s: float = 0.5, stop_check: Callable[[], None] | None = None) -> WorkerReport:
    """Run trials until the study holds ``handle.n_trials`` finished trials (module docstring).

    ``on_trial(number, result or None if the trial failed, finished trials in the study)`` follows each
    trial; ``stop_check()`` runs before each trial is asked for and may raise :class:`WorkerStopped`."""
    study, spec = handle.study, handle.spec
    report = WorkerReport(label)
    start = time.monotonic()
    checked = -math.inf  # when stale trials were last looked for
    in_a_row = 0  # proposals in a row that repeated a finished configuration
    while True:
        if stop_check is not None:
            stop_check()
        if timeout_s is not None and time.monotonic() - start > timeout_s:
            break
        with handle.lock.hold():
            if time.monotonic() - checked >= spec.storage.heartbeat_s:
                fail_stale(study, spec.storage)
                checked = time.monotonic()
            c = counts(study)
            if finished(c) >= handle.n_trials:
                break
            trial = None
            if finished(c) + c["running"] >= handle.n_trials and c["running"] and checked < time.monotonic() - poll_s:
                fail_stale(study, spec.storage)  # about to wait: make sure the running trials are alive
                checked = time.monotonic()
                c = counts(study)
            if finished(c) + c["running"] < handle.n_trials:
                with warnings.catch_warnings():
                    quiet_optuna()
                    own, study.sampler = study.sampler, _unstuck_sampler(study, spec.seed, in_a_row)
                    trial = study.ask()
        if trial is None:
            time.sleep(poll_s)  # the remaining trials run elsewhere; wait for them (or for them to go stale)
            continue
        try:
            claim(study._storage, trial._trial_id, label)  # outside the lock: it is held as briefly as possible
            result = _run_trial(study, trial, spec, evaluator, report, on_trial, finished(c))
        except (KeyboardInterrupt, WorkerStopped, SystemExit) as exc:  # Ctrl-C, or a batch job told to stop
            _give_back(handle, trial, "interrupted" if isinstance(exc, KeyboardInterrupt) else f"worker stopped: {exc}")
            raise
        finally:
            study.sampler = own  # the parameters are drawn lazily, in _run_trial: only then is the draw done
        if result is REPEAT:
            in_a_row += 1
            if in_a_row >= MAX_REPEATS:
                report.errors.append(f"the sampler proposed only finished configurations {MAX_REPEATS} times in a "
                                     "row; stopping (the space is nearly exhausted)")
                break
            continue
        in_a_row = 0
        report.started += 1
        if result is not None and on_trial is not None:
            on_trial(trial.number, result, finished(c) + 1)
    return report


def _unstuck_sampler(study: Any, seed: int, repeats: int) -> Any:
    """The sampler the next trial draws its parameters from: the study's own, or after ``RANDOM_AFTER``
    proposals in a row that repeated a finished configuration (a model-based sampler keeps proposing its
    optimum once a small space is nearly exhausted) a random sampler seeded by the study's seed and trial
    count, so the run stays reproducible and still reaches its unexplored configurations."""
    if repeats < RANDOM_AFTER:
        return study.sampler
    import optuna

    return optuna.samplers.RandomSampler(seed=(seed * 1_000_003 + len(study.get_trials(deepcopy=False))) % 2**32)


REPEAT: Any = object()  # what _run_trial returns for a proposal that repeats a finished configuration


def _run_trial(study: Any, trial: Any, spec: StudyFile, evaluator: Evaluator, report: WorkerReport,
               on_trial: Callable[[int, TrialResult | None, int], None] | None, finished: int) -> TrialResult | None:
    """Evaluate one claimed trial and tell the storage; the result, None when the trial failed or was lost,
    or :data:`REPEAT` when it proposed a finished configuration (told failed, not evaluated)."""
    import optuna

    try:
        with Heartbeat(study._storage, trial._trial_id, spec.storage.heartbeat_s):
            config = suggest(spec.space, trial)
            repeat_of = _repeated(study, trial, config)
            if repeat_of is not None:
                report.repeats += 1
                trial.set_user_attr(REPEAT_ATTR, repeat_of)
                _tell_failed(study, trial, f"repeats the configuration of trial {repeat_of}: not evaluated")
                return REPEAT
            result, bounds = None, None
            if spec.pruning.enabled:
                result, bounds = prune(evaluator, config, front_points(study, spec.directions))
            if result is None:
                result = evaluator.evaluate(config, number=trial.number, bounds=bounds)
    except (StudyError, InputError):
        _tell_failed(study, trial, "stopped")
        raise
    except Exception as exc:  # noqa: BLE001 - a broken trial must not end the study
        message = f"{type(exc).__name__}: {exc}".splitlines()[0][:500]
        report.failed += 1
        report.errors.append(f"trial {trial.number}: {message}")
        _tell_failed(study, trial, message)
        if on_trial is not None:
            on_trial(trial.number, None, finished)
        return None
    try:
        for key, value in result.constraints.items():
            trial.set_constraint(key, value)
        trial.set_user_attr("result", result_attr(result))
        if result.outcome == "pruned":
            study.tell(trial, state=optuna.trial.TrialState.PRUNED)
        else:
            study.tell(trial, result.values)
    except optuna.exceptions.UpdateFinishedTrialError:
        report.lost += 1  # declared stale meanwhile; its retry re-runs it
        return None
    if result.outcome == "pruned":
        report.pruned += 1
        return result
    report.completed += 1
    report.infeasible += 1 if result.outcome == "infeasible" else 0
    report.unknown += 1 if result.outcome == "unknown" else 0
    return result


def _give_back(handle: StudyHandle, trial: Any, message: str) -> None:
    """Fail a trial this worker cannot finish and queue it again, so that another worker (or a resumed
    study) runs it; a trial that finished meanwhile is left alone, so nothing runs twice. Under the slot
    lock: a worker counting trials in between would see one trial fewer and start a new one."""
    import optuna
    from optuna.trial import TrialState

    study = handle.study
    storage = study._storage
    with handle.lock.hold():
        try:
            storage.set_trial_user_attr(trial._trial_id, "error", message)
            if storage.set_trial_state_values(trial._trial_id, state=TrialState.FAIL):
                RetryStaleTrial(handle.spec.storage.max_retry)(study, storage.get_trial(trial._trial_id))
        except optuna.exceptions.UpdateFinishedTrialError:
            pass


def _tell_failed(study: Any, trial: Any, message: str) -> None:
    import optuna
    from optuna.trial import TrialState

    try:
        trial.set_user_attr("error", message)
        study.tell(trial, state=TrialState.FAIL)
    except (optuna.exceptions.UpdateFinishedTrialError, RuntimeError):
        pass
