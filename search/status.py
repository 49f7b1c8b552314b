"""``solvermap status``: where a study stands — trials done, running, queued, failed — and its current front.

Reads a study directory (its ``study.json`` names the storage), or any storage URL plus a study name
(objective labels and directions come from the study's own attributes). Running trials are listed
with their worker and age; failed trials with their error. For a study run by ``solvermap batch``,
each worker of the last submission is listed with its job's state as SLURM reports it (``PENDING``
and why, ``RUNNING`` and where, ``TIMEOUT``, ``CANCELLED``, ...; :mod:`.slurm`) beside the trials it
finished and the trial it runs. ``--write`` also (re)writes the tables and
figures into the study directory, which is how a batch submitted without ``--wait`` gets its results.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from solvermap.errors import InputError


@dataclass
class StudyStatus:
    name: str
    url: str
    n_trials: int | None
    results: Any
    running: list[dict[str, Any]] = field(default_factory=list)
    failed: list[dict[str, Any]] = field(default_factory=list)
    workers: dict[str, int] = field(default_factory=dict)
    jobs: list[dict[str, Any]] = field(default_factory=list)
    executor: str | None = None
    run: Any = None  # solvermap.runs.RunState of the study directory: did its last command fail?

    def to_dict(self) -> dict[str, Any]:
        """Exactly what ``solvermap status --json`` prints."""
        return status_json(self)


def load_status(target: str, *, storage: str | None = None, study_name: str | None = None) -> StudyStatus:
    """Status of the study in directory ``target``, or of ``study_name`` in ``storage``."""
    import json

    import optuna

    from solvermap.search.report import analyse
    from solvermap.search.storage import OWNER_ATTR, open_storage
    from solvermap.search.study_file import StorageSettings
    from solvermap.search.worker import META_ATTR, quiet_optuna

    quiet_optuna()
    n_trials = None
    settings = StorageSettings()
    if Path(target).is_dir():
        from solvermap.search.explore import open_dir

        sdir = open_dir(target)
        url, name, settings = storage or sdir.url, study_name or sdir.spec.name, sdir.spec.storage
        n_trials = json.loads((Path(target) / "study.json").read_text()).get("n_trials")
    else:
        if storage is None:
            raise InputError(target, "", "not a study directory; pass a study directory, or --storage URL with a study name")
        url, name = storage, study_name or target
    opened = open_storage(url, settings)
    try:
        study = optuna.load_study(study_name=name, storage=opened)
    except KeyError:
        raise InputError("--storage", url, f"no study named {name!r}") from None
    meta = study.user_attrs.get(META_ATTR) or {}
    labels = meta.get("objectives") or [f"objective_{i}" for i in range(len(study.directions))]
    directions = meta.get("directions") or [d.name.lower() for d in study.directions]
    results = analyse(study, labels, directions)
    status = StudyStatus(name, url, n_trials, results)
    now = _dt.datetime.now()
    for t in study.get_trials(deepcopy=False):
        owner = (t.system_attrs.get(OWNER_ATTR) or {}).get("worker", "?")
        if t.state.name == "RUNNING":
            age = (now - t.datetime_start).total_seconds() if t.datetime_start else None
            status.running.append({"number": t.number, "worker": owner, "seconds": age, "params": t.params})
        elif t.state.name == "FAIL":
            status.failed.append({"number": t.number, "worker": owner, "error": t.user_attrs.get("error", "stale (worker lost)")})
        elif t.state.name == "COMPLETE":
            status.workers[owner] = status.workers.get(owner, 0) + 1
    if Path(target).is_dir():
        _worker_jobs(status, target)
        if (Path(target) / "run.json").exists():
            from solvermap.runs import read_run

            status.run = read_run(target)
    return status


def _worker_jobs(status: StudyStatus, study_dir: str) -> None:
    """Each worker job of the study's last batch submission, with its state and trials."""
    from solvermap.search.batch import last_submission, worker_states

    submission = last_submission(study_dir)
    if submission is None:
        return
    status.executor = submission.get("executor")
    states = worker_states(submission)
    for k, job in enumerate(str(j) for j in submission.get("job_ids", [])):
        label = f"worker-{k}"
        state = states.get(job)
        status.jobs.append({"worker": label, "job": job, "state": state.state if state else "UNKNOWN",
                            "reason": state.reason if state else "", "node": state.node if state else "",
                            "restarts": state.restarts if state else 0, "finished": status.workers.get(label, 0),
                            "running": [r["number"] for r in status.running if r["worker"] == label]})


def status_json(status: StudyStatus) -> dict[str, Any]:
    from solvermap.search.report import summary_json
    from solvermap.search.storage import redact

    return summary_json(status.results, {"study": status.name, "storage": redact(status.url), "n_trials": status.n_trials,
                                         "running": status.running, "failed": status.failed,
                                         "finished_by_worker": status.workers, "executor": status.executor,
                                         "jobs": status.jobs, "run": status.run.to_json() if status.run else None})


def print_status(status: StudyStatus, console: Any) -> None:
    from rich.table import Table

    from solvermap.search.report import print_summary
    from solvermap.search.storage import redact

    target = f" of {status.n_trials}" if status.n_trials else ""
    console.print(f"study {status.name!r} in {redact(status.url)}: {status.results.counts.get('finished', status.results.counts['complete'])}{target} trials finished",
                  highlight=False, soft_wrap=True)
    if status.run is not None and status.run.failed:
        console.print(f"the last {status.run.command} {status.run.state}" + (f": {status.run.error}" if status.run.error else ""),
                      style="red", highlight=False, markup=False, soft_wrap=True)
    if status.jobs:
        table = Table(title=f"{status.executor} workers", header_style="bold")
        for col in ("worker", "job", "state", "reason", "node", "requeued", "finished", "running trial"):
            table.add_column(col)
        for j in status.jobs:
            table.add_row(j["worker"], j["job"], j["state"], j["reason"], j["node"], str(j["restarts"]),
                          str(j["finished"]), ", ".join(str(n) for n in j["running"]) or "-")
        console.print(table)
    elif status.workers:
        console.print("finished by worker: " + ", ".join(f"{w} {n}" for w, n in sorted(status.workers.items())),
                      highlight=False)
    if status.running:
        table = Table(title="running", header_style="bold")
        for col in ("trial", "worker", "for (s)", "params"):
            table.add_column(col)
        for r in status.running:
            table.add_row(str(r["number"]), str(r["worker"]), f"{r['seconds']:.0f}" if r["seconds"] is not None else "-",
                          ", ".join(f"{k}={v}" for k, v in r["params"].items()))
        console.print(table)
    for f in status.failed[:10]:
        console.print(f"failed trial {f['number']} ({f['worker']}): {f['error']}", highlight=False, markup=False)
    print_summary(status.results, console, title="current Pareto front")
