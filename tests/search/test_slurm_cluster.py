"""``solvermap batch --executor slurm`` against a real one-node SLURM cluster (tests/search/slurm_cluster.py)
and a real PostgreSQL server: a job array of workers completes a study, ``status`` shows the jobs, and
each failure a cluster produces — a cancelled worker, a frozen worker, a job at its time limit, a
drained node with workers pending, a requeued (preempted) job — still ends with exactly the requested
number of finished trials, none lost and none run twice.

Trials are tiny (the toy array family) but hold their validation for a moment (``hold_s``), so that a
worker can be stopped while it runs one.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import optuna
import pytest

from solvermap.search.batch import submit, wait
from tests.search.conftest import SOLVERMAP, subprocess_env, write_study

pytestmark = pytest.mark.filterwarnings("ignore:Heartbeat of storage is supposed to be used")


@pytest.fixture
def study_db(postgres_server) -> str:
    return postgres_server.new_database("slurm")


@pytest.fixture(autouse=True)
def _workers_environment(monkeypatch, slurm_cluster):
    """Workers import the toy family from the repository (sbatch passes the environment on); a test's
    jobs do not outlive it."""
    monkeypatch.setenv("PYTHONPATH", subprocess_env()["PYTHONPATH"])
    yield
    slurm_cluster.scancel("--user", "root")


# every configuration feasible (a PE holds 8 or more lanes x stages), so that every trial holds
SPACE = {"target.pes": {"type": "int", "low": 1, "high": 4},
         "target.lanes": {"type": "categorical", "choices": [4, 8]},
         "target.network": {"type": "categorical", "choices": ["static", "dynamic"]}}


def _study(tmp_path: Path, n_trials: int, hold_s: float, grace_s: int) -> Path:
    return write_study(tmp_path / "study.yaml", budget={"n_trials": n_trials}, space=SPACE,
                       workloads=[{"name": "tasks", "params": {"n": 6, "hold_s": hold_s}}],
                       storage={"heartbeat_s": 1, "grace_s": grace_s, "max_retry": 2})


def _submit(tmp_path: Path, url: str, *, workers: int = 3, n_trials: int = 8, hold_s: float = 1.5,
            grace_s: int = 3, **options) -> tuple:
    return submit(_study(tmp_path, n_trials, hold_s, grace_s), executor="slurm", workers=workers, storage=url,
                  out=tmp_path / "run", time_min=10, allow_imports=True, **options)


def _wait(handle, jobs) -> list[dict]:
    return wait(handle, jobs, executor="slurm", progress=False, console=None, poll_s=0.5)


def _until(condition, what: str, timeout_s: float = 60.0, poll_s: float = 0.1):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(poll_s)
    pytest.fail(f"timed out waiting for {what}")


def _running_trial(handle, worker: str | None = None, min_age_s: float = 0.0):
    """A trial that a worker (any, or the given one) is running, claimed at least ``min_age_s`` ago,
    with its owner record; None if there is none."""
    now = time.time()
    for trial in handle.study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        owner = trial.system_attrs.get("solvermap:owner") or {}
        age = now - trial.datetime_start.timestamp() if trial.datetime_start else 0.0
        if owner.get("job") and (worker is None or owner.get("worker") == worker) and age >= min_age_s:
            return trial, owner
    return None


def _assert_exact(handle, n: int) -> list:
    """Exactly ``n`` finished trials; every failed trial was given back and finished once by its retry;
    nothing left running or queued."""
    trials = handle.study.get_trials(deepcopy=False)
    complete = [t for t in trials if t.state.name == "COMPLETE"]
    failed = [t for t in trials if t.state.name == "FAIL" and "repeat_of" not in t.user_attrs]  # (a repeat: not a trial)
    assert len(complete) == n, [(t.number, t.state.name) for t in trials]
    assert not [t for t in trials if t.state.name in ("RUNNING", "WAITING")], [(t.number, t.state.name) for t in trials]
    for trial in failed:
        retries = [t for t in complete if t.user_attrs.get("retry_of") == trial.number]
        assert len(retries) == 1, f"trial {trial.number} ({trial.user_attrs.get('error')}) retried {len(retries)} times"
        assert retries[0].params == trial.params
    origins = [t.system_attrs.get("failed_trial", t.number) for t in complete]
    assert len(set(origins)) == len(origins), "a trial finished twice"
    return failed


def _status(sdir) -> dict:
    shown = subprocess.run([SOLVERMAP, "status", str(sdir.path), "--json"], capture_output=True, text=True,
                           env=subprocess_env(), timeout=60)
    assert shown.returncode == 0, shown.stderr
    return json.loads(shown.stdout)


def test_job_array_of_three_workers_completes_eight_trials_and_status_shows_the_jobs(slurm_cluster, study_db, tmp_path):
    sdir, handle, jobs = _submit(tmp_path, study_db, sbatch=["comment=solvermap test"],
                                 setup=["export SOLVERMAP_SETUP_RAN=1"])
    assert len({str(j.job_id).split("_")[0] for j in jobs}) == 1, "one array job"
    script = next((sdir.path / "workers").glob("*_submission.sh")).read_text()
    assert "#SBATCH --comment='solvermap test'" in script and "#SBATCH --array=0-2%3" in script
    assert "export SOLVERMAP_SETUP_RAN=1" in script.split("# command")[0]
    _until(lambda: _running_trial(handle), "a running trial")
    status = _status(sdir)
    assert status["executor"] == "slurm"
    assert [j["job"] for j in status["jobs"]] == [str(j.job_id) for j in jobs]
    assert "RUNNING" in {j["state"] for j in status["jobs"]}
    assert any(j["running"] for j in status["jobs"]), status["jobs"]
    reports = _wait(handle, jobs)
    _assert_exact(handle, 8)
    assert sum(r.get("completed", 0) for r in reports) == 8
    owners = {t.system_attrs["solvermap:owner"]["job"] for t in handle.study.get_trials() if t.state.name == "COMPLETE"}
    assert owners <= {str(j.job_id) for j in jobs}
    after = _status(sdir)
    assert {j["state"] for j in after["jobs"]} == {"COMPLETED"}
    assert sum(j["finished"] for j in after["jobs"]) == 8


def _warm_running_trial(handle):
    """A running trial some way into its hold (not talking to the database) whose worker has finished
    a trial before (the first trial of a process also imports the solvers, in native code that can
    swallow the exception a signal raises: the worker then finishes that trial and stops after it)."""
    found = _running_trial(handle, min_age_s=0.3)
    if found is None:
        return None
    done = {(t.system_attrs.get("solvermap:owner") or {}).get("worker")
            for t in handle.study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))}
    return found if found[1]["worker"] in done else None


def _freeze_mid_trial(cluster, handle) -> tuple:
    """SIGSTOP the job of a worker that is some way into a trial; returns (job id, that trial's number)."""
    while True:
        trial, owner = _until(lambda: _warm_running_trial(handle), "a running trial", poll_s=0.05)
        cluster.scancel("--signal=STOP", owner["job"])
        time.sleep(0.2)
        if handle.study.get_trials(deepcopy=False)[trial.number].state.name == "RUNNING":
            return owner["job"], trial.number
        cluster.scancel("--signal=CONT", owner["job"])  # it had just finished; try again


def _job_state(cluster, job: str) -> str:
    fields = dict(item.split("=", 1) for item in cluster.scontrol("--oneliner", "show", "job", job).split() if "=" in item)
    return fields["JobState"]


def test_cancelled_worker_gives_back_its_trial_and_the_study_completes(slurm_cluster, study_db, tmp_path):
    sdir, handle, jobs = _submit(tmp_path, study_db, grace_s=120)  # only the worker itself can fail its trial
    job, number = _freeze_mid_trial(slurm_cluster, handle)  # so that it is still mid-trial when cancelled
    slurm_cluster.scancel(job)  # SIGCONT, SIGTERM, and 2 s later SIGKILL
    _wait(handle, jobs)
    failed = _assert_exact(handle, 8)
    assert [t.number for t in failed] == [number]
    assert failed[0].user_attrs["error"] == "worker stopped: signal SIGTERM"
    assert _job_state(slurm_cluster, job) == "CANCELLED"


def test_frozen_worker_trial_is_failed_by_heartbeat_and_its_late_result_dropped(slurm_cluster, study_db, tmp_path):
    sdir, handle, jobs = _submit(tmp_path, study_db, grace_s=3)
    job, number = _freeze_mid_trial(slurm_cluster, handle)
    _until(lambda: handle.study.get_trials(deepcopy=False)[number].state.name == "FAIL", "the heartbeat rule",
           timeout_s=30)
    slurm_cluster.scancel("--signal=CONT", job)  # it wakes, finishes the trial, and finds it failed
    reports = _wait(handle, jobs)
    failed = _assert_exact(handle, 8)
    assert [t.number for t in failed] == [number]
    assert "error" not in failed[0].user_attrs  # failed by another worker, not given back
    woken = next(r for r in reports if r["label"] == f"worker-{job.split('_')[1]}")
    assert woken["lost"] == 1


def test_job_at_its_time_limit_gives_back_its_trial_and_the_study_completes(slurm_cluster, study_db, tmp_path):
    """The worker is frozen mid-trial (a trial longer than the time left), then its job's time limit is
    set to zero: SLURM ends the job at its next time-limit check (within 30 s)."""
    sdir, handle, jobs = _submit(tmp_path, study_db, grace_s=120)
    job, number = _freeze_mid_trial(slurm_cluster, handle)
    slurm_cluster.scontrol("update", f"JobId={job}", "TimeLimit=0")
    _until(lambda: handle.study.get_trials(deepcopy=False)[number].state.name == "FAIL", "the time limit",
           timeout_s=60, poll_s=0.5)
    _wait(handle, jobs)
    failed = _assert_exact(handle, 8)
    assert [t.number for t in failed] == [number]
    assert failed[0].user_attrs["error"].startswith("worker stopped: signal")
    log = (sdir.path / "workers" / f"worker-{job.split('_')[1]}.log").read_text()
    assert "any trial it ran was given back" in log


def test_workers_pending_on_a_drained_node_run_once_it_resumes(slurm_cluster, study_db, tmp_path):
    node = slurm_cluster.node
    slurm_cluster.scontrol("update", f"NodeName={node}", "State=DRAIN", "Reason=test")
    try:
        sdir, handle, jobs = _submit(tmp_path, study_db, hold_s=0.5)
        status = _until(lambda: (lambda s: s if {j["state"] for j in s["jobs"]} == {"PENDING"} else None)(_status(sdir)),
                        "pending workers")
        assert all(j["reason"] for j in status["jobs"]), status["jobs"]
        assert status["n_complete"] == 0 if "n_complete" in status else True
    finally:
        slurm_cluster.scontrol("update", f"NodeName={node}", "State=RESUME")
    _wait(handle, jobs)
    _assert_exact(handle, 8)


def test_requeued_worker_gives_back_its_trial_and_rejoins_the_study(slurm_cluster, study_db, tmp_path):
    sdir, handle, jobs = _submit(tmp_path, study_db, n_trials=10, grace_s=120)
    job, number = _freeze_mid_trial(slurm_cluster, handle)
    slurm_cluster.scontrol("requeue", job)
    _until(lambda: _job_state(slurm_cluster, job) == "PENDING", "the requeued job to pend")
    slurm_cluster.scontrol("update", f"JobId={job}", "StartTime=now")  # no wait before it may start again
    _wait(handle, jobs)
    failed = _assert_exact(handle, 10)
    assert [t.number for t in failed] == [number]
    log = (sdir.path / "workers" / f"worker-{job.split('_')[1]}.log").read_text()
    assert "(restart 1)" in log
