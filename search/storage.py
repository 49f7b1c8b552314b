"""Where a study's trials live, and how a dead worker's trial is detected and retried.

Storages:

* default — an Optuna **journal file** ``study.journal`` in the study directory: no server, safe for
  several processes on one machine or on a shared file system (``journal:///path`` or a path ending
  in ``.journal`` / ``.log`` picks another file);
* ``postgresql://user@host:port/db`` (or ``postgresql+psycopg2://``, ``sqlite:///file.db``, any
  SQLAlchemy URL) — Optuna's **RDB storage**, with Optuna's heartbeats: every running trial beats
  every ``heartbeat_s``; a trial silent for ``grace_s`` is failed by the next worker that looks and
  re-queued by :class:`RetryStaleTrial`.

The journal storage has no heartbeat of its own in Optuna (5.0 gives heartbeats to the RDB storage
only), so workers write one as the trial system attribute ``solvermap:heartbeat`` and apply the same
rule. On either storage a running trial whose owner process (same host and PID namespace, recorded at
start) no longer exists is failed and re-queued at once, which is what makes resuming a killed
``solvermap explore`` immediate. The journal's append lock (:class:`JournalFileLock`) is an OS file
lock, which the kernel releases when its holder dies.

:class:`SlotLock` serialises "count the trials, then ask for a new one" across workers (a file lock
beside a journal or SQLite file, a PostgreSQL transaction-level advisory lock), so K workers stop at
exactly the requested number of finished trials. Other RDB back ends run without it and may overshoot by up to
K − 1 trials.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import filelock

from solvermap.errors import InputError
from solvermap.inputs import output_file
from solvermap.limits import check_estimate, format_bytes
from solvermap.search.study_file import StorageSettings
from solvermap.runs import LOG

HEARTBEAT_ATTR = "solvermap:heartbeat"
JOURNAL_MEMORY_FACTOR = 4
OWNER_ATTR = "solvermap:owner"
REPEAT_ATTR = "repeat_of"  # user attribute of a proposal that repeated a finished configuration (search.worker)
JOURNAL_NAME = "study.journal"


def default_url(study_dir: str | Path) -> str:
    return f"journal:///{Path(study_dir).resolve().as_posix().lstrip('/')}/{JOURNAL_NAME}"


def journal_path(url: str) -> Path | None:
    """The journal file a URL names, or None for an RDB URL."""
    if url.startswith("journal://"):
        return Path("/" + url[len("journal://"):].lstrip("/"))
    if "://" not in url and url.endswith((".journal", ".log")):
        return Path(url).resolve()
    return None


def redact(url: str) -> str:
    """The URL with any password replaced by ``***`` (for printing)."""
    if "://" not in url or "@" not in url:
        return url
    scheme, rest = url.split("://", 1)
    credentials, host = rest.rsplit("@", 1)
    if ":" in credentials:
        credentials = credentials.split(":", 1)[0] + ":***"
    return f"{scheme}://{credentials}@{host}"


@functools.lru_cache(maxsize=1)
def host_id() -> str:
    """This machine and PID namespace: host name, boot id and PID namespace (a pid means nothing on
    another host, after a reboot, or from inside another container on the same node)."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        boot = ""
    try:
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        namespace = ""
    return f"{socket.gethostname()}/{boot}/{namespace}"


def slurm_job() -> str | None:
    """The SLURM job this process runs in (``<array job>_<task>`` for an array task), or None."""
    array, task = os.environ.get("SLURM_ARRAY_JOB_ID"), os.environ.get("SLURM_ARRAY_TASK_ID")
    if array and task:
        return f"{array}_{task}"
    return os.environ.get("SLURM_JOB_ID")


def optuna_heartbeat(storage: Any) -> bool:
    """Whether the storage (possibly wrapped in Optuna's cache) runs Optuna's own heartbeat (RDB)."""
    interval = getattr(storage, "get_heartbeat_interval", None)
    return callable(interval) and interval() is not None


def pid_alive(pid: int) -> bool:
    """Whether a process of this host (and PID namespace) with this id exists."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class JournalFileLock:
    """The journal's append lock: an OS file lock (``filelock``, ``flock`` on the file ``<journal>.lock``).

    The kernel drops the lock when its holder dies, so a worker killed while appending blocks no one;
    on NFS, Linux maps ``flock`` to NFS byte-range locks, which the server drops when the client's
    lease ends. One lock object per thread (``filelock``'s default), so the heartbeat thread and the
    main thread of one worker exclude each other too. (Optuna's ``JournalFileBackend`` only calls
    ``acquire`` and ``release``.)"""

    def __init__(self, journal: str | Path) -> None:
        self.path = f"{journal}.lock"
        self._lock = filelock.FileLock(self.path)

    def acquire(self) -> bool:
        self._lock.acquire()
        return True

    def release(self) -> None:
        self._lock.release()


class RetryStaleTrial:
    """Re-queue a failed stale trial with the same parameters (at most ``max_retry`` times per original).

    Like Optuna's ``RetryHeartbeatStaleTrialCallback``, but the copy drops the dead attempt's
    constraint values, heartbeat and owner, so the retry records only its own.
    """

    def __init__(self, max_retry: int) -> None:
        self.max_retry = max_retry

    def __call__(self, study: Any, trial: Any) -> None:
        import optuna

        history = list(trial.system_attrs.get("retry_history", [])) + [trial.number]
        if len(history) > self.max_retry:
            return
        system = {k: v for k, v in trial.system_attrs.items()
                  if not k.startswith(("constraints", "solvermap:")) and k not in ("retry_history", "failed_trial")}
        system["failed_trial"] = trial.system_attrs.get("failed_trial", trial.number)
        system["retry_history"] = history
        study.add_trial(optuna.trial.create_trial(
            state=optuna.trial.TrialState.WAITING, params=trial.params, distributions=trial.distributions,
            user_attrs={"retry_of": trial.number}, system_attrs=system))


def check_journal(path: Path) -> None:
    """A journal file we may append to (not a directory, FIFO or device; its folder writable), small enough
    to replay: the parsed operations take several times the file's text (counted as
    :data:`JOURNAL_MEMORY_FACTOR` times)."""
    output_file(path, "--storage")
    if path.exists():
        size = path.stat().st_size
        check_estimate(f"--storage {path}: replaying a journal of {format_bytes(size)}", JOURNAL_MEMORY_FACTOR * size)


def repair_journal(path: Path, lock: JournalFileLock) -> int:
    """Drop a partial last record of the journal at ``path``: a process killed (SIGKILL) while appending
    leaves a line without its newline, and the next append would run into it, making a line no replay can
    read. Appends hold ``lock``, so a partial line seen under it is a dead writer's. Returns the bytes dropped."""
    if not path.is_file() or path.stat().st_size == 0:
        return 0
    lock.acquire()
    try:
        with open(path, "rb+") as journal:
            size = journal.seek(0, 2)
            journal.seek(size - 1)
            if journal.read(1) == b"\n":
                return 0
            keep, step = 0, 1 << 16
            end = size
            while end > 0:  # the last newline, read backwards in blocks
                start = max(0, end - step)
                journal.seek(start)
                block = journal.read(end - start)
                at = block.rfind(b"\n")
                if at >= 0:
                    keep = start + at + 1
                    break
                end = start
            journal.truncate(keep)
            return size - keep
    finally:
        lock.release()


def open_storage(url: str, settings: StorageSettings) -> Any:
    """An Optuna storage for ``url`` (see module docstring); connection problems are one-line errors."""
    import optuna

    path = journal_path(url)
    if path is not None:
        check_journal(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        from optuna.storages.journal import JournalFileBackend

        try:  # the storage replays the whole journal here; later reads see only what workers appended
            lock = JournalFileLock(path)
            dropped = repair_journal(path, lock)
            if dropped:
                LOG.warning(f"{path}: dropped a partial last record of {dropped} bytes (a process killed while writing it)")
            return optuna.storages.JournalStorage(JournalFileBackend(str(path), lock_obj=lock))
        except Exception as exc:  # noqa: BLE001 - whatever a damaged or foreign file makes the replay raise
            detail = str(exc).strip().splitlines()[0][:120] if str(exc).strip() else ""
            raise InputError("--storage", str(path), f"not an Optuna journal file ({type(exc).__name__}"
                             f"{': ' + detail if detail else ''})") from None
    if "://" not in url:
        raise InputError("--storage", url, "expected a journal file (*.journal), journal:///path or a database URL "
                                          "such as postgresql://user@host:5432/db")
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return optuna.storages.RDBStorage(
                url, heartbeat_interval=settings.heartbeat_s, grace_period=settings.grace,
                heartbeat_stale_trial_callback=RetryStaleTrial(settings.max_retry),
                engine_kwargs={"pool_pre_ping": True})
    except Exception as exc:  # noqa: BLE001 - SQLAlchemy/driver errors → one line
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError("--storage", redact(url), f"cannot open storage: {message}") from None


class SlotLock:
    """Mutual exclusion for "count trials, then ask" across every worker of a study (module docstring)."""

    def __init__(self, storage: Any, url: str, study_name: str) -> None:
        self.storage, self.url, self.study_name = storage, url, study_name
        path = journal_path(url)
        if path is None and url.startswith("sqlite:///"):
            path = Path(url[len("sqlite:///"):])
        self.file = Path(f"{path}.slots.lock") if path is not None else None
        self.advisory = self.file is None and url.startswith("postgresql")
        self.key = int.from_bytes(hashlib.sha256(study_name.encode()).digest()[:8], "big", signed=True)
        self._thread = threading.Lock()

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        with self._thread:
            if self.file is not None:
                self.file.parent.mkdir(parents=True, exist_ok=True)
                with filelock.FileLock(self.file):
                    yield
            elif self.advisory:
                from sqlalchemy import text

                # a transaction-level lock: it works through a transaction-pooling pgbouncer, and a holder
                # whose node died is released by the server once its session has idled for a minute
                with self.storage.engine.connect() as connection, connection.begin():
                    connection.execute(text("SELECT set_config('idle_in_transaction_session_timeout', '60s', true), "
                                            "pg_advisory_xact_lock(:k)"), {"k": self.key})
                    yield
            else:
                yield


class Heartbeat:
    """Background thread proving a running trial's worker is alive (Optuna's RDB heartbeat, or the
    journal attribute ``solvermap:heartbeat``)."""

    def __init__(self, storage: Any, trial_id: int, interval_s: float) -> None:
        self.storage, self.trial_id, self.interval = storage, trial_id, interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"heartbeat-{trial_id}", daemon=True)

    def beat(self) -> None:
        try:
            if optuna_heartbeat(self.storage):
                self.storage.record_heartbeat(self.trial_id)
            else:
                self.storage.set_trial_system_attr(self.trial_id, HEARTBEAT_ATTR, time.time())
        except Exception:  # noqa: BLE001 - a finished or failed trial needs no more beats
            self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.beat()

    def __enter__(self) -> Heartbeat:
        self.beat()
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(timeout=max(5.0, self.interval * 2))


def claim(storage: Any, trial_id: int, worker: str) -> None:
    """Record this process (and its SLURM job) as the owner of a trial that just started, with a first heartbeat."""
    owner = {"host": host_id(), "pid": os.getpid(), "worker": worker}
    if slurm_job():
        owner["job"] = slurm_job()
    storage.set_trial_system_attr(trial_id, OWNER_ATTR, owner)
    if optuna_heartbeat(storage):
        storage.record_heartbeat(trial_id)
    else:
        storage.set_trial_system_attr(trial_id, HEARTBEAT_ATTR, time.time())


def fail_stale(study: Any, settings: StorageSettings) -> list[int]:
    """Fail (and re-queue) running trials whose worker is gone; returns the numbers this rule failed
    (trials failed by Optuna's own RDB heartbeat rule are re-queued too but not listed)."""
    import optuna
    from optuna.trial import TrialState

    storage = study._storage
    failed: list[int] = []
    if optuna_heartbeat(storage):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            optuna.storages.fail_stale_trials(study)  # Optuna's RDB heartbeat rule, re-queued by RetryStaleTrial
    me, now = host_id(), time.time()
    retry = RetryStaleTrial(settings.max_retry)
    for trial in storage.get_all_trials(study._study_id, deepcopy=False, states=(TrialState.RUNNING,)):
        if trial.state != TrialState.RUNNING:
            continue
        owner = trial.system_attrs.get(OWNER_ATTR) or {}
        pid = owner.get("pid")
        dead = (owner.get("host") == me and isinstance(pid, int) and pid > 0 and pid != os.getpid()
                and not pid_alive(pid))
        beat = trial.system_attrs.get(HEARTBEAT_ATTR)
        if beat is None and trial.datetime_start is not None and (not optuna_heartbeat(storage) or not owner):
            # died between ask and its first beat; with Optuna's RDB heartbeat, before claiming the trial
            # (Optuna's rule only sees trials with a heartbeat row, so such a trial would run forever)
            beat = trial.datetime_start.timestamp()
        silent = beat is not None and now - float(beat) > settings.grace
        if not (dead or silent):
            continue
        try:
            if storage.set_trial_state_values(trial._trial_id, state=TrialState.FAIL):
                failed.append(trial.number)
                retry(study, storage.get_trial(trial._trial_id))
        except optuna.exceptions.UpdateFinishedTrialError:
            pass
    return failed
