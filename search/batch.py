"""``solvermap batch``: K workers of one study, as a SLURM array job (or local processes) via submitit.

The submitting process prepares the study directory (as ``explore`` does), validates the study,
creates it in the storage (so the grid queue exists once) and submits ``K`` copies of
:func:`batch_worker` with ``executor.map_array`` — one SLURM array job with ``K`` tasks, or ``K``
local processes with submitit's local executor. Every worker opens the same storage and runs
:func:`~solvermap.search.worker.run_worker` until the study holds ``n_trials`` finished trials;
worker ``k`` seeds its sampler with ``seed + k``.

Logs: submitit's per-task ``workers/<job>_<task>_log.{out,err}`` plus ``workers/worker-<k>.log``
(one line per trial). ``workers/jobs.json`` records the job ids. With ``--wait`` the submitter shows
a progress bar over the shared storage and writes the results when the workers are done; without it,
``solvermap status DIR`` shows progress and writes the results at any time.
The journal storage needs a file system all workers see; on a cluster prefer PostgreSQL.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import shutil
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from solvermap.errors import ConfigError, SolvermapError


@dataclass(frozen=True)
class WorkerJob:
    """What one worker needs: the study directory, the storage, the target count and its index."""

    study_dir: str
    url: str
    n_trials: int
    index: int
    timeout_s: float | None = None
    sys_path: tuple[str, ...] = ()
    allow_imports: bool = False  # the submitter's --allow-imports (the study's imports: run in every worker)


def batch_worker(job: WorkerJob) -> dict[str, Any]:
    """Entry point of one submitted worker (runs in the SLURM task or local process)."""
    for entry in reversed(job.sys_path):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    from solvermap.search.evaluate import Evaluator
    from solvermap.search.explore import open_dir
    from solvermap.search.worker import open_study, run_worker

    sdir = open_dir(job.study_dir)
    log = Path(job.study_dir) / "workers" / f"worker-{job.index}.log"
    log.parent.mkdir(parents=True, exist_ok=True)

    def write(message: str) -> None:
        with open(log, "a") as handle:
            handle.write(f"{_dt.datetime.now().strftime('%H:%M:%S')} {message}\n")

    write(f"worker {job.index} pid {os.getpid()} on {os.uname().nodename} starts")
    evaluator = Evaluator(sdir.spec, sdir.path, source=sdir.source, allow_imports=job.allow_imports)
    handle = open_study(sdir.spec, job.url, n_trials=job.n_trials, worker=job.index, create=False, source=sdir.source)

    def on_trial(number: int, result: Any, finished: int) -> None:
        if result is None:
            write(f"trial {number} failed")
        else:
            state = "feasible" if result.feasible else f"infeasible ({result.reason[:100]})"
            write(f"trial {number} {state} in {result.seconds:.2f} s, cache {result.cache}")

    report = run_worker(handle, evaluator, timeout_s=job.timeout_s, label=f"worker-{job.index}", on_trial=on_trial)
    write(f"worker {job.index} done: {report}")
    return asdict(report)


def make_executor(kind: str, folder: Path, workers: int, *, timeout_min: int, partition: str | None,
                  cpus: int, mem_gb: float | None) -> Any:
    """A submitit executor: ``slurm`` (array job, ``workers`` tasks in parallel) or ``local`` processes."""
    import submitit

    if kind == "local":
        executor = submitit.LocalExecutor(folder=str(folder))
        executor.update_parameters(timeout_min=timeout_min)
        return executor
    if kind != "slurm":
        raise ConfigError(f"--executor {kind!r}: choose slurm or local")
    if shutil.which("sbatch") is None:
        raise ConfigError("--executor slurm: sbatch is not on PATH (run on a SLURM login node, or use --executor local)")
    executor = submitit.SlurmExecutor(folder=str(folder))
    params: dict[str, Any] = {"time": timeout_min, "array_parallelism": workers, "cpus_per_task": cpus,
                              "job_name": "solvermap-batch"}
    if partition:
        params["partition"] = partition
    if mem_gb:
        params["mem"] = f"{int(mem_gb * 1024)}M"
    executor.update_parameters(**params)
    return executor


def submit(study_path: str | Path, *, executor: str, workers: int, storage: str | None = None,
           n_trials: int | None = None, out: str | Path | None = None, timeout_min: int = 24 * 60,
           partition: str | None = None, cpus: int = 1, mem_gb: float | None = None,
           allow_imports: bool = False) -> tuple[Any, Any, list[Any]]:
    """Prepare the study and submit the workers; returns (study dir, study handle, jobs)."""
    from solvermap.search.evaluate import Evaluator
    from solvermap.search.explore import prepare_dir
    from solvermap.search.worker import open_study

    if workers < 1:
        raise ConfigError("--workers must be at least 1")
    sdir = prepare_dir(study_path, out, storage, "batch", allow_imports)
    Evaluator(sdir.spec, None, source=str(study_path), allow_imports=allow_imports)  # fail here, not in K workers
    handle = open_study(sdir.spec, sdir.url, n_trials=n_trials, source=str(study_path))
    record = json.loads((sdir.path / "study.json").read_text())
    record["n_trials"] = handle.n_trials
    (sdir.path / "study.json").write_text(json.dumps(record, indent=2))
    folder = sdir.path / "workers"
    folder.mkdir(exist_ok=True)
    ex = make_executor(executor, folder, workers, timeout_min=timeout_min, partition=partition, cpus=cpus, mem_gb=mem_gb)
    paths = tuple(p for p in sys.path if p and os.path.isdir(p))
    cwd = os.getcwd()
    paths = (cwd,) + tuple(p for p in paths if p != cwd)
    jobs = ex.map_array(batch_worker, [WorkerJob(str(sdir.path.resolve()), sdir.url, handle.n_trials, k,
                                                 sdir.spec.budget.timeout_s, paths, allow_imports)
                                       for k in range(workers)])
    (folder / "jobs.json").write_text(json.dumps({"executor": executor, "workers": workers,
                                                  "job_ids": [str(j.job_id) for j in jobs]}, indent=2))
    return sdir, handle, jobs


def wait(handle: Any, jobs: list[Any], *, progress: bool, console: Any, poll_s: float = 1.0) -> list[dict[str, Any]]:
    """Progress bar until every job ends; returns each worker's report (or its error)."""
    from solvermap.search.explore import TrialProgress
    from solvermap.search.worker import counts

    def refresh(bar: TrialProgress) -> None:
        trials = handle.study.get_trials(deepcopy=False)
        results = [t.user_attrs.get("result") or {} for t in trials if t.state.name == "COMPLETE"]
        bar.feasible = sum(1 for r in results if r.get("feasible"))
        bar.hits = sum((r.get("cache") or {}).get("hits", 0) for r in results)
        bar.failed = sum(1 for t in trials if t.state.name == "FAIL")
        bar.show(counts(handle.study)["complete"])

    with TrialProgress(handle.n_trials, counts(handle.study)["complete"], progress, console) as bar:
        while not all(j.done() for j in jobs):
            refresh(bar)
            time.sleep(poll_s)
        refresh(bar)
    reports = []
    for k, job in enumerate(jobs):
        try:
            reports.append(job.result())
        except Exception as exc:  # noqa: BLE001 - a worker's failure is reported, not re-raised
            text = str(exc).strip().splitlines()
            reports.append({"label": f"worker-{k}", "error": text[-1] if text else type(exc).__name__})
    return reports


def worker_error(reports: list[dict[str, Any]]) -> SolvermapError | None:
    errors = [r for r in reports if "error" in r]
    if errors and len(errors) == len(reports):
        return SolvermapError(f"every worker failed; first: {errors[0]['label']}: {errors[0]['error']}")
    return None
