"""Where a study's trials live, and how a dead worker's trial is detected and retried.

Storages:

* default — an Optuna **journal file** ``study.journal`` in the study directory: no server, safe for
  several processes on one machine or on a shared file system (``journal:///path`` or a path ending
  in ``.journal`` / ``.log`` picks another file);
* ``postgresql://user@host:port/db`` (or ``postgresql+psycopg2://``, ``sqlite:///file.db``, any
  SQLAlchemy URL) — Optuna's **RDB storage**, with Optuna's heartbeats: every running trial beats
  every ``heartbeat_s``; a trial silent for ``grace_s`` is failed by the next worker that looks and
  re-queued by :class:`RetryStaleTrial`.

The journal storage has no heartbeat of its own in Optuna, so workers write one as the trial system
attribute ``solvermap:heartbeat`` and apply the same rule. On either storage a running trial whose
owner process (same host, recorded at start) no longer exists is failed and re-queued at once, which
is what makes resuming a killed ``solvermap explore`` immediate. Likewise the journal's file lock
(:class:`OwnedJournalLock`) records its holder and is broken at once when that process is dead.

:class:`SlotLock` serialises "count the trials, then ask for a new one" across workers (a file lock
beside a journal or SQLite file, a PostgreSQL advisory lock), so K workers stop at exactly the
requested number of finished trials. Other RDB back ends run without it and may overshoot by up to
K − 1 trials.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from optuna.storages.journal import JournalFileOpenLock

from solvermap.errors import InputError
from solvermap.search.study_file import StorageSettings

HEARTBEAT_ATTR = "solvermap:heartbeat"
OWNER_ATTR = "solvermap:owner"
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
    """This machine: host name plus boot id (a pid means nothing on another host or after a reboot)."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        boot = ""
    return f"{socket.gethostname()}/{boot}"


def optuna_heartbeat(storage: Any) -> bool:
    """Whether the storage (possibly wrapped in Optuna's cache) runs Optuna's own heartbeat (RDB)."""
    interval = getattr(storage, "get_heartbeat_interval", None)
    return callable(interval) and interval() is not None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class OwnedJournalLock(JournalFileOpenLock):
    """The journal file's lock (an ``O_EXCL`` lock file, as Optuna's ``JournalFileOpenLock``) that records
    its holder, so that a process killed while appending does not block the others: a lock whose holder
    is a dead process on this host is broken at once; any other lock is broken after ``grace_s``
    without change (the holder may be on another machine)."""

    def __init__(self, journal: str | Path, grace_s: float = 5.0) -> None:  # noqa: D107 - replaces the parent's
        self.path = f"{journal}.lock"
        self.grace_s = grace_s

    def acquire(self) -> bool:
        import errno

        delay, seen, since = 0.001, None, time.monotonic()
        while True:
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except OSError as exc:
                if exc.errno != errno.EEXIST:
                    raise
                holder = self._holder()
                if holder is not None and holder != seen:
                    seen, since = holder, time.monotonic()
                host, _, pid = (holder or "").rpartition(" ")
                dead = host == host_id() and pid.isdigit() and int(pid) != os.getpid() and not _pid_alive(int(pid))
                if dead or time.monotonic() - since > self.grace_s:
                    self._break()
                    delay = 0.001
                    continue
                time.sleep(delay)
                delay = min(delay * 2, 0.1)
                continue
            with os.fdopen(fd, "w") as handle:
                handle.write(f"{host_id()} {os.getpid()}")
            return True

    def _holder(self) -> str | None:
        try:
            with open(self.path) as handle:
                return handle.read() or None
        except OSError:
            return None

    def _break(self) -> None:
        """Remove a stale lock; renaming first makes sure only one waiter removes it."""
        broken = f"{self.path}.broken-{os.getpid()}-{time.monotonic_ns()}"
        try:
            os.rename(self.path, broken)
            os.unlink(broken)
        except OSError:
            pass

    def release(self) -> None:
        try:
            os.unlink(self.path)
        except OSError as exc:
            raise RuntimeError(f"failed to release the journal lock {self.path}: {exc}") from exc


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


def open_storage(url: str, settings: StorageSettings) -> Any:
    """An Optuna storage for ``url`` (see module docstring); connection problems are one-line errors."""
    import optuna

    path = journal_path(url)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        from optuna.storages.journal import JournalFileBackend

        return optuna.storages.JournalStorage(JournalFileBackend(str(path), lock_obj=OwnedJournalLock(path)))
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
                with open(self.file, "a+") as handle:
                    fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
                    try:
                        yield
                    finally:
                        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
            elif self.advisory:
                from sqlalchemy import text

                with self.storage.engine.connect() as connection:
                    connection.execute(text("SELECT pg_advisory_lock(:k)"), {"k": self.key})
                    connection.commit()
                    try:
                        yield
                    finally:
                        connection.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": self.key})
                        connection.commit()
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
    """Record this process as the owner of a trial that just started, with a first heartbeat."""
    storage.set_trial_system_attr(trial_id, OWNER_ATTR, {"host": host_id(), "pid": os.getpid(), "worker": worker})
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
                and not _pid_alive(pid))
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
