"""``solvermap batch``: K workers of one study, as a SLURM job array (or local processes) via submitit.

The submitting process prepares the study directory (as ``explore`` does), validates the study,
creates it in the storage (so the grid queue exists once) and submits ``K`` copies of
:class:`BatchWorker` with ``executor.map_array`` — one SLURM array job with ``K`` tasks, or ``K``
local processes with submitit's local executor. Every worker opens the same storage and runs
:func:`~solvermap.search.worker.run_worker` until the study holds ``n_trials`` finished trials;
worker ``k`` seeds its sampler with ``seed + k`` (``seed + k + K·r`` after its job's ``r``-th requeue,
so a requeued worker does not propose its first run's points again).

On SLURM the storage is a database every node reaches (PostgreSQL: ``--storage`` or the study file's
``slurm.storage``), or a journal file on a shared file system. The sbatch options come from the study
file's ``slurm:`` section, each overridden by its ``batch`` option (:class:`SlurmOptions`).

How a worker ends, and what happens to the trial it was running:

* the study is complete: it returns its report;
* SIGTERM (``scancel``, a node going down, preemption): it fails its running trial, re-queues it for
  the other workers, and returns (a signal that arrives inside native solver code is seen when the
  solve returns: the worker then finishes and tells that trial, and stops);
* SLURM's time-limit warning (submitit's ``USR2``, ``slurm.signal_delay_s`` before the limit): it
  gives its trial back the same way, then submitit requeues the job (at most ``slurm.max_requeue``
  times); the restarted job joins the study again;
* SIGKILL, or a node that dies: its trial stays RUNNING until its heartbeat is ``grace_s`` old (or at
  once when its process is seen dead on the same host); the next worker that looks fails it and
  re-queues it (:func:`~solvermap.search.storage.fail_stale`).

So the study ends with exactly ``n_trials`` finished trials whatever happens to single workers.

Logs, under ``<study>/workers/``: submitit's ``<array job>_<task>_0_log.{out,err}`` (the worker's
stdout and stderr, one pair per array task, appended to across requeues), ``worker-<k>.log`` (one line per trial, every start and stop) and
``worker-<k>.json`` (the worker's last report). ``jobs.json`` records each submission's job ids;
``solvermap status DIR`` shows each worker job's state. With ``--wait`` the submitter shows a progress
bar over the shared storage, cancels workers still pending once the study is complete, and writes
the results; without it, ``solvermap status DIR --write`` writes them at any time.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import shutil
import signal
import socket
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from solvermap.errors import ConfigError, InputError, SolvermapError
from solvermap.search.slurm import JobState, sbatch_problem
from solvermap.search.worker import WorkerStopped


@dataclass(frozen=True)
class WorkerJob:
    """What one worker needs: the study directory, the storage, the target count, its index among ``workers``."""

    study_dir: str
    url: str
    n_trials: int
    index: int
    workers: int = 1
    timeout_s: float | None = None
    sys_path: tuple[str, ...] = ()
    allow_imports: bool = False  # the submitter's --allow-imports (the study's imports: run in every worker)


def _warning_signal() -> int:
    """The signal submitit asks SLURM to send before the time limit (``SUBMITIT_PREEMPT_SIGNAL``, default USR2)."""
    return getattr(signal, "SIG" + os.environ.get("SUBMITIT_PREEMPT_SIGNAL", "USR2"), signal.SIGUSR2)


class _StopSignals:
    """While active, the first SIGTERM or time-limit signal raises :class:`WorkerStopped` in the main
    thread and is remembered, so that :meth:`check` stops the worker between trials if native code
    swallowed the exception. ``previous`` holds the handlers it replaced (submitit's)."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.previous: dict[int, Any] = {}

    def _handler(self, signum: int, frame: Any) -> None:
        if self.signum is None:
            self.signum = signum
            raise WorkerStopped(signum)

    def check(self) -> None:
        if self.signum is not None:
            raise WorkerStopped(self.signum)

    @contextmanager
    def active(self) -> Iterator[_StopSignals]:
        watched = (signal.SIGTERM, _warning_signal())
        self.previous = {s: signal.getsignal(s) for s in watched}
        for s in watched:
            signal.signal(s, self._handler)
        try:
            yield self
        finally:
            for s, handler in self.previous.items():
                signal.signal(s, handler)


class BatchWorker:
    """The callable each array task runs (submitit pickles it). ``checkpoint`` makes submitit requeue
    the job at its time limit; the storage holds all state, so the restarted job simply starts again."""

    def __call__(self, job: WorkerJob) -> dict[str, Any]:
        restarts = int(os.environ.get("SLURM_RESTART_COUNT", "0") or 0)
        log = _WorkerLog(Path(job.study_dir) / "workers", job.index)
        with _StopSignals().active() as signals:
            try:
                report = _work(job, restarts, log, signals.check)
            except Exception as exc:
                message = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
                log.write(f"worker {job.index} failed: {message}")
                log.report({"label": f"worker-{job.index}", "error": message, "restarts": restarts})
                raise
            except WorkerStopped as stopped:
                log.write(f"worker {job.index} stopped by {stopped}; any trial it ran was given back")
                log.report({"label": f"worker-{job.index}", "stopped": str(stopped), "restarts": restarts})
                handler = signals.previous.get(stopped.signum)
                if stopped.signum == _warning_signal() and callable(handler):
                    handler(stopped.signum, None)  # submitit: requeue this job (or give up) and exit
                return {"label": f"worker-{job.index}", "stopped": str(stopped)}
        return report

    def checkpoint(self, job: WorkerJob) -> Any:
        import submitit

        return submitit.helpers.DelayedSubmission(self, job)


class _WorkerLog:
    """``worker-<k>.log`` (one line per event) and ``worker-<k>.json`` (the last report)."""

    def __init__(self, folder: Path, index: int) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.lines, self.json = folder / f"worker-{index}.log", folder / f"worker-{index}.json"

    def write(self, message: str) -> None:
        with open(self.lines, "a") as handle:
            handle.write(f"{_dt.datetime.now().strftime('%H:%M:%S')} {message}\n")

    def report(self, report: dict[str, Any]) -> None:
        self.json.write_text(json.dumps(report, indent=2))


def _work(job: WorkerJob, restarts: int, log: _WorkerLog, stop_check: Any) -> dict[str, Any]:
    for entry in reversed(job.sys_path):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    from solvermap.search.evaluate import Evaluator
    from solvermap.search.explore import open_dir
    from solvermap.search.storage import slurm_job
    from solvermap.search.worker import open_study, run_worker

    sdir = open_dir(job.study_dir)
    where = f"job {slurm_job()} " if slurm_job() else ""
    log.write(f"worker {job.index} pid {os.getpid()} on {socket.gethostname()} {where}starts"
              + (f" (restart {restarts})" if restarts else ""))
    evaluator = Evaluator(sdir.spec, sdir.path, source=sdir.source, allow_imports=job.allow_imports)
    seed_offset = job.index + job.workers * restarts
    handle = open_study(sdir.spec, job.url, n_trials=job.n_trials, worker=seed_offset, create=False, source=sdir.source)

    def on_trial(number: int, result: Any, finished: int) -> None:
        if result is None:
            log.write(f"trial {number} failed")
        else:
            state = "feasible" if result.feasible else f"{result.outcome} ({result.reason[:100]})"
            log.write(f"trial {number} {state} in {result.seconds:.2f} s, cache {result.cache}")

    report = run_worker(handle, evaluator, timeout_s=job.timeout_s, label=f"worker-{job.index}", on_trial=on_trial,
                        stop_check=stop_check)
    log.write(f"worker {job.index} done: {report}")
    out = dict(asdict(report), restarts=restarts)
    log.report(out)
    return out


@dataclass(frozen=True)
class SlurmOptions:
    """The sbatch options of the worker jobs: the study file's ``slurm:`` section, overridden by the CLI."""

    partition: str | None = None
    time_min: int = 24 * 60
    mem_gb: float | None = None
    cpus_per_task: int = 1
    signal_delay_s: int = 90
    max_requeue: int = 3
    sbatch: dict[str, Any] = field(default_factory=dict)
    setup: tuple[str, ...] = ()

    @classmethod
    def resolve(cls, settings: Any, *, partition: str | None = None, time_min: int | None = None,
                mem_gb: float | None = None, cpus: int | None = None, sbatch: list[str] | None = None,
                setup: list[str] | None = None) -> SlurmOptions:
        """``settings`` (a study's :class:`~solvermap.search.study_file.SlurmSettings`) with CLI values on top;
        ``sbatch`` entries are ``KEY=VALUE`` (or ``KEY`` for a flag)."""
        extra = dict(settings.sbatch)
        for item in sbatch or []:
            key, has_value, value = item.partition("=")
            key = key.strip().lstrip("-")
            problem = sbatch_problem(key, value, from_study=False)
            if problem:
                raise InputError("--sbatch", repr(item)[1:-1], problem)
            extra[key] = value if has_value else True
        for line in setup or []:
            if "\n" in line or "\r" in line:
                raise InputError("--setup", repr(line)[1:41], "one shell line per --setup")
        return cls(partition=partition or settings.partition, time_min=time_min or settings.time_min,
                   mem_gb=mem_gb or settings.mem_gb, cpus_per_task=cpus or settings.cpus_per_task,
                   signal_delay_s=settings.signal_delay_s, max_requeue=settings.max_requeue,
                   sbatch={k: v for k, v in extra.items() if v is not False}, setup=tuple(setup or ()))


def make_executor(kind: str, folder: Path, workers: int, options: SlurmOptions, name: str) -> Any:
    """A submitit executor: ``slurm`` (one array job, ``workers`` tasks in parallel) or ``local`` processes."""
    import submitit

    if kind == "local":
        executor = submitit.LocalExecutor(folder=str(folder))
        executor.update_parameters(timeout_min=options.time_min)
        return executor
    if kind != "slurm":
        raise ConfigError(f"--executor {kind!r}: choose slurm or local")
    if shutil.which("sbatch") is None or shutil.which("srun") is None:
        raise ConfigError("--executor slurm: sbatch/srun are not on PATH (run on a SLURM login node, or use --executor local)")
    executor = submitit.SlurmExecutor(folder=str(folder), max_num_timeout=options.max_requeue)
    params: dict[str, Any] = {"time": options.time_min, "array_parallelism": workers,
                              "cpus_per_task": options.cpus_per_task, "signal_delay_s": options.signal_delay_s,
                              "job_name": "solvermap-" + re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:60]}
    if options.partition:
        params["partition"] = options.partition
    if options.mem_gb:
        params["mem"] = f"{int(options.mem_gb * 1024)}M"
    if options.sbatch:
        params["additional_parameters"] = dict(options.sbatch)
    if options.setup:
        params["setup"] = list(options.setup)
    executor.update_parameters(**params)
    return executor


def _batch_storage(study_path: str | Path, executor: str, storage: str | None, out: str | Path | None) -> str | None:
    """The storage URL the workers share: ``--storage``, else (for slurm) the study file's ``slurm.storage``."""
    from solvermap.search.study_file import load_study

    if storage or executor != "slurm" or (out is not None and (Path(out) / "study.json").exists()):
        return storage
    url = load_study(study_path).slurm.storage
    if url is None:
        raise ConfigError("--executor slurm: the workers need a storage every node reaches; give --storage "
                          "postgresql://user@host:5432/db (or `slurm: {storage: ...}` in the study file), or a "
                          "journal file on a shared file system, --storage journal:///shared/dir/study.journal")
    return url


def submit(study_path: str | Path, *, executor: str, workers: int | None = None, storage: str | None = None,
           n_trials: int | None = None, out: str | Path | None = None, partition: str | None = None,
           time_min: int | None = None, cpus: int | None = None, mem_gb: float | None = None,
           sbatch: list[str] | None = None, setup: list[str] | None = None,
           allow_imports: bool = False) -> tuple[Any, Any, list[Any]]:
    """Prepare the study and submit the workers; returns (study dir, study handle, jobs)."""
    from solvermap.runs import RunDirectory
    from solvermap.search.evaluate import Evaluator
    from solvermap.search.explore import prepare_dir
    from solvermap.search.study_file import load_study
    from solvermap.search.worker import open_study

    if workers is not None and workers < 1:
        raise ConfigError("--workers must be at least 1")
    url = _batch_storage(study_path, executor, storage, out)
    options = SlurmOptions.resolve(load_study(study_path).slurm, partition=partition, time_min=time_min, mem_gb=mem_gb,
                                   cpus=cpus, sbatch=sbatch, setup=setup)  # before the storage opens or a file is written
    sdir = prepare_dir(study_path, out, url, "batch", allow_imports)
    with RunDirectory(sdir.path).recording("batch-submit", executor=executor):  # an error from here on: marked failed
        spec = sdir.spec
        workers = workers or spec.slurm.workers or 2
        Evaluator(spec, None, source=str(study_path), allow_imports=allow_imports)  # fail here, not in K workers, on a bad study
        handle = open_study(spec, sdir.url, n_trials=n_trials, source=str(study_path))
        record = json.loads((sdir.path / "study.json").read_text())
        record["n_trials"] = handle.n_trials
        (sdir.path / "study.json").write_text(json.dumps(record, indent=2))
        folder = sdir.path / "workers"
        folder.mkdir(exist_ok=True)
        for old in folder.glob("worker-*.json"):  # a resumed batch: the last run's reports are not this run's
            old.unlink()
        ex = make_executor(executor, folder, workers, options, spec.name)
        paths = tuple(p for p in sys.path if p and os.path.isdir(p))
        cwd = os.getcwd()
        paths = (cwd,) + tuple(p for p in paths if p != cwd)
        jobs = ex.map_array(BatchWorker(), [WorkerJob(str(sdir.path.resolve()), sdir.url, handle.n_trials, k, workers,
                                                      spec.budget.timeout_s, paths, allow_imports)
                                            for k in range(workers)])
        _record_submission(folder, executor, [str(j.job_id) for j in jobs])
    return sdir, handle, jobs


def _record_submission(folder: Path, executor: str, job_ids: list[str]) -> None:
    """Append this submission to ``jobs.json`` (a resumed batch submits again)."""
    path = folder / "jobs.json"
    try:
        submissions = json.loads(path.read_text()).get("submissions", [])
    except (OSError, ValueError, AttributeError):
        submissions = []
    submissions.append({"executor": executor, "host": socket.gethostname(), "job_ids": job_ids,
                        "submitted": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
    path.write_text(json.dumps({"submissions": submissions}, indent=2))


def last_submission(study_dir: str | Path) -> dict[str, Any] | None:
    """The newest entry of ``<study>/workers/jobs.json``, or None (no batch ran there)."""
    try:
        submissions = json.loads((Path(study_dir) / "workers" / "jobs.json").read_text()).get("submissions") or []
    except (OSError, ValueError, AttributeError):
        return None
    return submissions[-1] if submissions else None


def worker_states(submission: dict[str, Any]) -> dict[str, JobState]:
    """Each worker job's state: SLURM's word for a slurm batch; for local workers, whether the process lives."""
    from solvermap.search.slurm import job_states
    from solvermap.search.storage import pid_alive

    ids = [str(j) for j in submission.get("job_ids", [])]
    if submission.get("executor") == "slurm":
        return job_states(ids)
    here = submission.get("host") == socket.gethostname()
    out = {}
    for job in ids:
        alive = here and job.isdigit() and pid_alive(int(job))
        out[job] = JobState(job, "RUNNING" if alive else ("ENDED" if here else "UNKNOWN"))
    return out


def _active(executor: str, jobs: list[Any]) -> tuple[list[str], list[str]]:
    """(ids of jobs that still run or wait, or whose state is unknown; ids of those that wait for resources)."""
    if executor != "slurm":
        return [str(j.job_id) for j in jobs if not j.done()], []
    states = worker_states({"executor": "slurm", "job_ids": [str(j.job_id) for j in jobs]})
    return ([j for j, s in states.items() if s.active or s.state == "UNKNOWN"],
            [j for j, s in states.items() if s.state == "PENDING"])


def wait(handle: Any, jobs: list[Any], *, executor: str = "local", progress: bool, console: Any,
         poll_s: float = 1.0, linger_s: float = 60.0) -> list[dict[str, Any]]:
    """Progress bar until every worker job has ended; once the study is complete, workers still
    pending are cancelled (they would only start to stop), and jobs that have not ended ``linger_s``
    later (or whose state SLURM does not tell) are left to end on their own. Returns each worker's report."""
    from solvermap.search.explore import TrialProgress
    from solvermap.search.slurm import cancel
    from solvermap.search.worker import counts, finished

    def refresh(bar: TrialProgress) -> dict[str, int]:
        trials = handle.study.get_trials(deepcopy=False)
        results = [t.user_attrs.get("result") or {} for t in trials if t.state.name == "COMPLETE"]
        bar.feasible = sum(1 for r in results if r.get("feasible"))
        bar.hits = sum((r.get("cache") or {}).get("hits", 0) for r in results)
        bar.failed = sum(1 for t in trials if t.state.name == "FAIL")
        bar.pruned = sum(1 for t in trials if t.state.name == "PRUNED")
        bar.unknown = sum(1 for r in results if r.get("outcome") == "unknown")
        c = counts(handle.study)
        bar.show(finished(c))
        return c

    with TrialProgress(handle.n_trials, finished(counts(handle.study)), progress, console) as bar:
        complete_since = None
        while True:
            c = refresh(bar)
            active, pending = _active(executor, jobs)
            if not active:
                break
            if finished(c) >= handle.n_trials and not c["running"]:
                complete_since = complete_since or time.monotonic()
                if time.monotonic() - complete_since > linger_s:
                    break
                if pending:
                    cancel(pending)
            time.sleep(poll_s)
        refresh(bar)
    if not jobs:
        return []
    folder = Path(jobs[0].paths.folder)
    return [_report(folder, k, str(job.job_id)) for k, job in enumerate(jobs)]


def _report(folder: Path, index: int, job_id: str) -> dict[str, Any]:
    try:
        return json.loads((folder / f"worker-{index}.json").read_text())
    except (OSError, ValueError):
        return {"label": f"worker-{index}", "error": f"no report from job {job_id} (see {folder}/{job_id}_0_log.err)"}


def worker_error(reports: list[dict[str, Any]]) -> SolvermapError | None:
    errors = [r for r in reports if "error" in r]
    if errors and len(errors) == len(reports):
        return SolvermapError(f"every worker failed; first: {errors[0]['label']}: {errors[0]['error']}")
    return None
