"""What K workers sharing one PostgreSQL database cost the database: one ``solvermap batch`` of fast
toy trials (local submitit workers), measured on the server itself.

* throughput: finished trials per second of wall clock from submission to the last worker's end, and
  over the busy span (first trial started to last trial finished);
* storage round trips: every statement the run sent, counted by ``pg_stat_statements`` (with
  ``track_utility`` on, so BEGIN/COMMIT/ROLLBACK and the pool's ``SELECT 1`` pre-ping count too),
  split by kind, and the time the slot lock's statement spent waiting;
* failed transactions: ``ERROR`` lines in the server log during the run (a statement that failed
  rolls its transaction back) and the database's ``xact_rollback`` count;
* connections: the most backends the database had open at once (sampled every 0.2 s);
* exactness: finished trials, lost and duplicated ones (a failed trial whose retry did not finish
  exactly once is lost; a trial origin finished twice is duplicated).

Used by ``bench/batch_storage_bench.py`` (CSV) and by the 16-worker test.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import yaml

from tests.search.conftest import subprocess_env, toy_study

KINDS = {"begin": ("BEGIN",), "commit": ("COMMIT",), "rollback": ("ROLLBACK",), "pre_ping": ("SELECT $1", "SELECT 1"),
         "insert": ("INSERT",), "update": ("UPDATE",), "delete": ("DELETE",), "select": ("SELECT",)}
LOCK_STATEMENT = "pg_advisory_xact_lock"


def _kind(query: str) -> str:
    text = " ".join(query.split()).upper()
    if LOCK_STATEMENT.upper() in text:
        return "lock"
    for kind, prefixes in KINDS.items():
        if any(text == p or (kind != "pre_ping" and text.startswith(p)) for p in prefixes):
            return kind
    return "other"


def _database_stats(engine: Any, name: str) -> dict[str, int]:
    from sqlalchemy import text

    with engine.connect() as connection:
        row = connection.execute(text("SELECT xact_commit, xact_rollback, deadlocks FROM pg_stat_database "
                                      "WHERE datname = :d"), {"d": name}).one()
    return {"xact_commit": int(row[0]), "xact_rollback": int(row[1]), "deadlocks": int(row[2])}


def _statements(engine: Any, name: str) -> list[tuple[str, int, float]]:
    from sqlalchemy import text

    with engine.connect() as connection:
        rows = connection.execute(text(
            "SELECT s.query, s.calls, s.total_exec_time FROM pg_stat_statements s "
            "JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = :d AND s.toplevel"), {"d": name}).all()
    return [(str(q), int(c), float(t)) for q, c, t in rows]


class _ConnectionSampler:
    """The most connections one database has open at once, sampled in a thread while a run goes on,
    through ``engine`` — a connection to another database, so that sampling adds nothing to the counts."""

    def __init__(self, engine: Any, name: str) -> None:
        self.engine, self.name, self.most = engine, name, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        from sqlalchemy import text

        with self.engine.connect() as connection:
            while not self._stop.wait(0.2):
                count = connection.execute(text("SELECT count(*) FROM pg_stat_activity WHERE datname = :d"),
                                           {"d": self.name}).scalar_one()
                connection.rollback()
                self.most = max(self.most, int(count))

    def __enter__(self) -> _ConnectionSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def heartbeat_round_trips(server: Any, beats: int = 50) -> float:
    """Statements one Optuna RDB heartbeat sends (measured over ``beats`` beats of one trial)."""
    import optuna
    import sqlalchemy
    from sqlalchemy import text

    from solvermap.search.storage import open_storage
    from solvermap.search.study_file import StorageSettings

    url = server.new_database("beat")
    name = url.rsplit("/", 1)[1]
    storage = open_storage(url, StorageSettings())
    study = optuna.create_study(storage=storage, study_name="beat")
    trial = study.ask()
    admin = sqlalchemy.create_engine(url, poolclass=sqlalchemy.pool.NullPool)
    with admin.connect() as connection:
        connection.execute(text("SELECT pg_stat_statements_reset()"))
        connection.commit()
    for _ in range(beats):
        storage.record_heartbeat(trial._trial_id)
    storage.engine.dispose()
    time.sleep(1.5)
    calls = sum(c for q, c, _ in _statements(admin, name) if "pg_stat_statements" not in q)
    admin.dispose()
    return calls / beats


def exactness(study: Any, n_trials: int) -> dict[str, int]:
    """Finished, lost and duplicated trials of a study that should hold ``n_trials`` finished ones."""
    trials = study.get_trials(deepcopy=False)
    complete = [t for t in trials if t.state.name == "COMPLETE"]
    origins = [t.system_attrs.get("failed_trial", t.number) for t in complete]
    lost = 0
    repeats = [t for t in trials if "repeat_of" in t.user_attrs]  # proposals of a finished configuration: not trials
    for trial in (t for t in trials if t.state.name == "FAIL" and "repeat_of" not in t.user_attrs):
        if sum(1 for t in complete if t.user_attrs.get("retry_of") == trial.number) != 1:
            lost += 1
    return {"finished": len(complete), "lost": lost + sum(1 for t in trials if t.state.name in ("RUNNING", "WAITING")),
            "duplicated": len(origins) - len(set(origins)),
            "failed_trials": sum(1 for t in trials if t.state.name == "FAIL") - len(repeats), "repeats": len(repeats)}


def measure(server: Any, folder: Path, *, workers: int, n_trials: int, sampler: str = "random") -> dict[str, Any]:
    """Run one batch of ``n_trials`` toy trials with ``workers`` local workers on a new database of
    ``server`` (a :class:`tests.search.postgres_server.PostgresServer`); returns one row of figures."""
    import sqlalchemy
    from sqlalchemy import text

    from solvermap.search.batch import submit, wait

    url = server.new_database("load")
    name = url.rsplit("/", 1)[1]
    # 16 x 3 x 3 x 2 = 288 configurations: room for the benchmark's 200 distinct trials
    space = dict(toy_study()["space"], **{"target.pes": {"type": "int", "low": 1, "high": 16},
                                          "target.clock_ghz": {"type": "categorical", "choices": [1.0, 2.0]}})
    study = toy_study(name="load", sampler={"name": sampler}, budget={"n_trials": n_trials}, cache={"enabled": False},
                      space=space,
                      storage={"heartbeat_s": 5, "grace_s": 20, "max_retry": 2})
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "load.yaml"
    path.write_text(yaml.safe_dump(study, sort_keys=False))
    admin = sqlalchemy.create_engine(url, poolclass=sqlalchemy.pool.NullPool)  # holds no idle connection
    with admin.connect() as connection:
        connection.execute(text("SELECT pg_stat_statements_reset()"))
        connection.commit()
    before = _database_stats(admin, name)
    log_offset = server.log.stat().st_size
    old_path = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = subprocess_env()["PYTHONPATH"]  # the workers import the toy family
    try:
        start = time.perf_counter()
        server_engine = sqlalchemy.create_engine(server.url, poolclass=sqlalchemy.pool.NullPool)
        with _ConnectionSampler(server_engine, name) as connections:
            sdir, handle, jobs = submit(path, executor="local", workers=workers, storage=url, out=folder / "run",
                                        allow_imports=True)
            reports = wait(handle, jobs, executor="local", progress=False, console=None, poll_s=0.2)
        wall = time.perf_counter() - start
        server_engine.dispose()
    finally:
        if old_path is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old_path
    trials = handle.study.get_trials(deepcopy=False)
    exact = exactness(handle.study, n_trials)
    handle.study._storage._backend.engine.dispose()  # the submitter's connections end, so their counters flush
    jobs.clear()
    time.sleep(1.5)  # backends flush their statistics at exit or at most once a second
    after = _database_stats(admin, name)
    statements = _statements(admin, name)
    admin.dispose()
    with open(server.log, "rb") as log:
        log.seek(log_offset)
        errors = sum(1 for line in log.read().decode(errors="replace").splitlines() if " ERROR: " in line)
    kinds: dict[str, int] = {}
    lock_wait_ms = 0.0
    for query, calls, total_ms in statements:
        if "pg_stat_statements" in query or "pg_stat_database" in query:
            continue  # this function's own queries
        kind = _kind(query)
        kinds[kind] = kinds.get(kind, 0) + calls
        if kind == "lock":
            lock_wait_ms += total_ms
    round_trips = sum(kinds.values())
    complete = [t for t in trials if t.state.name == "COMPLETE"]
    span = (max(t.datetime_complete for t in complete) - min(t.datetime_start for t in complete)).total_seconds()
    row: dict[str, Any] = {
        "workers": workers, "n_trials": n_trials, "sampler": sampler, **exact,
        "wall_s": round(wall, 2), "trials_per_s": round(exact["finished"] / wall, 2),
        "busy_span_s": round(span, 2), "trials_per_s_busy": round(exact["finished"] / span, 2) if span else None,
        "round_trips": round_trips, "round_trips_per_trial": round(round_trips / max(1, exact["finished"]), 1),
        **{f"rt_{k}": kinds.get(k, 0) for k in ("begin", "commit", "rollback", "pre_ping", "select", "insert",
                                                 "update", "delete", "lock", "other")},
        "lock_wait_s": round(lock_wait_ms / 1000, 2), "max_connections": connections.most,
        "xact_commit": after["xact_commit"] - before["xact_commit"],
        "xact_rollback": after["xact_rollback"] - before["xact_rollback"],
        "deadlocks": after["deadlocks"] - before["deadlocks"], "failed_transactions": errors,
        "worker_errors": sum(1 for r in reports if "error" in r),
    }
    return row
