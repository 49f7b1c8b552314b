"""Killed studies resume with no lost or duplicated trials (journal file, PostgreSQL); K local workers
share one storage through submitit and stop at exactly the requested number of trials."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest

from solvermap.search.batch import submit, wait
from solvermap.search.explore import explore
from solvermap.search.storage import claim, fail_stale, open_storage
from solvermap.search.study_file import StorageSettings
from tests.search.conftest import SOLVERMAP, subprocess_env, write_study

# pes x 3 lanes x (static + 2 dynamic vcs) = 9·pes grid points, every one a real solve (no cache) holding 0.25 s
KILL_STUDY = {
    "sampler": {"name": "grid"},
    "budget": {},
    "cache": {"enabled": False},
    "workloads": [{"name": "tasks", "params": {"n": 40, "hold_s": 0.25}}],
    "space": {
        "target.pes": {"type": "int", "low": 1, "high": 8},
        "target.lanes": {"type": "categorical", "choices": [2, 4, 8]},
        "target.network": {"type": "categorical", "choices": ["static", "dynamic"]},
        "target.vcs": {"type": "int", "low": 1, "high": 2, "when": {"target.network": "dynamic"}},
    },
}


MARGIN = 6  # trials that must remain when the signal goes out
ATTEMPTS = 3


def _kill_study(pes: int) -> dict:
    """The kill study with ``pes`` PE counts: pes x 9 grid points."""
    space = dict(KILL_STUDY["space"], **{"target.pes": {"type": "int", "low": 1, "high": pes}})
    return dict(KILL_STUDY, space=space)


def _complete(study) -> list:
    return study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))


def _kill_mid_run(tmp_path: Path, storage: str | None, grid: int, sig: int = signal.SIGKILL,
                  study: dict | None = None) -> tuple[Path, dict[int, tuple]]:
    """Start `solvermap explore` in a child process, send it ``sig`` (SIGKILL) after a few trials; return
    what had finished. A SIGINT must end it with exit code 130 and the partial tables written.

    The signal must reach the child while trials remain: each trial holds 0.25 s, and an observer that first
    sees the count when fewer than ``MARGIN`` trials remain (starved by machine load: trials without the hold
    finished in 2.6 s from the fifth to the last, and once a CI run's observer first looked after the child
    had finished) signals nothing and starts the run again, at most ``ATTEMPTS`` times. Every signal sent is
    checked in full."""
    path = write_study(tmp_path / "kill.yaml", **(study or _kill_study(grid // 9)))
    out = tmp_path / "run"
    url = storage or f"journal:///{(out / 'study.journal').as_posix().lstrip('/')}"
    for _ in range(ATTEMPTS):
        if _signal_mid_run(path, out, storage, url, grid, sig):
            break
        shutil.rmtree(out)
        if storage:
            optuna.delete_study(study_name="toy", storage=open_storage(url, StorageSettings()))
    else:
        pytest.fail(f"the observer saw fewer than {MARGIN} trials left in each of {ATTEMPTS} runs")
    study = optuna.load_study(study_name="toy", storage=open_storage(url, StorageSettings()))
    finished = {t.number: (json.dumps(t.params, sort_keys=True), tuple(t.values)) for t in _complete(study)}
    assert 5 <= len(finished) < grid
    return path, finished


def _signal_mid_run(path: Path, out: Path, storage: str | None, url: str, grid: int, sig: int) -> bool:
    """One run of `solvermap explore` sent ``sig`` once 5 trials finished; False (no signal sent) when the
    observer first saw fewer than MARGIN trials left (the child is killed) or the child had already finished
    with exit 0. A child that ends early with any other code fails the test."""
    command = [SOLVERMAP, "explore", str(path), "--out", str(out), "--quiet", "--allow-imports"]
    if storage:
        command += ["--storage", storage]
    # SIG_DFL in the child: a test run started in the background (``cmd &``) inherits SIGINT ignored
    child = subprocess.Popen(command, env=subprocess_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if child.poll() is not None:
                if child.returncode == 0:
                    return False  # it finished every trial before the observer looked: no signal was sent
                pytest.fail(f"explore ended before it could be killed: {child.stderr.read().decode()[-500:]}")
            if (out / "study.json").exists():
                try:
                    study = optuna.load_study(study_name="toy", storage=open_storage(url, StorageSettings()))
                except KeyError:
                    time.sleep(0.05)
                    continue
                done = len(_complete(study))
                if done > grid - MARGIN:
                    return False
                if done >= 5:
                    break
            time.sleep(0.02)
        else:
            pytest.fail("no trial finished within 60 s")
        child.send_signal(sig)
        code = child.wait(timeout=30)
        if sig == signal.SIGINT:
            assert code == 130, child.stderr.read().decode()[-500:]
            assert (out / "tables" / "trials.csv").exists()
        return True
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def _assert_resumed(path: Path, out: Path, before: dict[int, tuple], storage: str | None, grid: int) -> None:
    _, results, report = explore(path, out=out, storage=storage, progress=False, allow_imports=True)
    url = storage or f"journal:///{(out / 'study.journal').as_posix().lstrip('/')}"
    study = optuna.load_study(study_name="toy", storage=open_storage(url, StorageSettings()))
    complete = _complete(study)
    configs = [json.dumps(t.params, sort_keys=True) for t in complete]
    assert len(complete) == grid == results.counts["complete"]
    assert len(set(configs)) == grid, "a configuration finished twice"
    for number, (params, values) in before.items():  # nothing finished before the kill was lost or changed
        trial = study.trials[number]
        assert trial.state.name == "COMPLETE" and json.dumps(trial.params, sort_keys=True) == params
        assert tuple(trial.values) == values
    orphans = [t for t in study.trials if t.state.name == "FAIL" and "repeat_of" not in t.user_attrs]
    assert len(orphans) <= 1
    for orphan in orphans:  # the trial running at the kill was failed and re-run with the same parameters
        retries = [t for t in study.trials if t.user_attrs.get("retry_of") == orphan.number]
        # (a trial killed while sampling holds part of its parameters; the grid queue restores the rest)
        assert len(retries) == 1 and orphan.params.items() <= retries[0].params.items()
        # (a trial interrupted after it had proposed a finished configuration is not re-run: its retry is a repeat)
        assert retries[0].state.name == "COMPLETE" or "repeat_of" in retries[0].user_attrs
    assert report.completed == grid - len(before), (report, sorted(before), [(t.number, t.state.name) for t in study.trials])


def test_killed_journal_study_resumes_without_lost_or_duplicated_trials(tmp_path):
    path, before = _kill_mid_run(tmp_path, None, 36)
    _assert_resumed(path, tmp_path / "run", before, None, 36)


def test_interrupted_study_writes_partial_results_and_resumes(tmp_path):
    path, before = _kill_mid_run(tmp_path, None, 36, signal.SIGINT)
    assert (tmp_path / "run" / "tables" / "front.csv").exists()
    _assert_resumed(path, tmp_path / "run", before, None, 36)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["sigkill", "sigint"])
def test_killed_nsga2_study_resumes_to_n_distinct_finished_configurations(tmp_path, sig):
    """The default sampler (NSGA-II, random first generation) on the 36-point space, 20 trials: the resumed
    process does not replay the proposals of the first one. (With 12, a fast machine finished them all between
    the poll that saw 5 and the signal.)"""
    study = dict(_kill_study(4), sampler={"name": "nsga2"}, budget={"n_trials": 20})
    path, before = _kill_mid_run(tmp_path, None, 20, sig, study)
    _assert_resumed(path, tmp_path / "run", before, None, 20)


def test_trial_of_a_dead_process_on_this_host_is_requeued_at_once(tmp_path):
    settings = StorageSettings(heartbeat_s=60, grace_s=600, max_retry=1)
    storage = open_storage(str(tmp_path / "s.journal"), settings)
    study = optuna.create_study(storage=storage, study_name="dead")
    trial = study.ask()
    trial.suggest_int("x", 0, 9)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    claim(storage, trial._trial_id, "gone")
    owner = dict(study.trials[0].system_attrs["solvermap:owner"], pid=gone.pid)
    storage.set_trial_system_attr(trial._trial_id, "solvermap:owner", owner)
    assert fail_stale(study, settings) == [trial.number]
    assert [t.state.name for t in study.get_trials()] == ["FAIL", "WAITING"]


# ------------------------------------------------------------------------------- PostgreSQL


def test_killed_postgres_study_resumes_without_lost_or_duplicated_trials(tmp_path, postgres):
    path, before = _kill_mid_run(tmp_path, postgres, 18)  # database round trips make trials slower
    _assert_resumed(path, tmp_path / "run", before, postgres, 18)


@pytest.mark.filterwarnings("ignore:Heartbeat of storage is supposed to be used")
def test_postgres_heartbeat_fails_and_requeues_a_silent_trial(postgres):
    settings = StorageSettings(heartbeat_s=1, grace_s=1, max_retry=1)
    storage = open_storage(postgres, settings)
    study = optuna.create_study(storage=storage, study_name="heartbeat")
    trial = study.ask()
    trial.suggest_int("x", 0, 9)
    storage.record_heartbeat(trial._trial_id)  # a worker on another machine beat once, then went silent
    time.sleep(1.6)  # > grace_s
    fail_stale(study, settings)
    assert [t.state.name for t in study.get_trials()] == ["FAIL", "WAITING"]
    assert study.get_trials()[1].params == trial.params


@pytest.mark.filterwarnings("ignore:Heartbeat of storage is supposed to be used")
def test_postgres_trial_of_a_worker_killed_before_its_first_beat_is_requeued(postgres):
    """A worker killed between ask and claim leaves a RUNNING trial with no owner and no heartbeat row:
    Optuna's heartbeat rule never sees it, so the start time counts as its last beat."""
    settings = StorageSettings(heartbeat_s=1, grace_s=1, max_retry=1)
    study = optuna.create_study(storage=open_storage(postgres, settings), study_name="unclaimed")
    trial = study.ask()
    trial.suggest_int("x", 0, 9)
    time.sleep(1.6)  # > grace_s
    fail_stale(study, settings)
    assert [t.state.name for t in study.get_trials()] == ["FAIL", "WAITING"]
    assert study.get_trials()[1].params == trial.params


# ------------------------------------------------------------------------------- batch


def test_four_local_submitit_workers_share_one_storage_and_finish_the_requested_trials(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", subprocess_env()["PYTHONPATH"])
    # 150 tasks, no cache: each trial is a real solve of a few tenths of a second, so that workers that
    # start a moment apart all get trials; 16 configurations for 12 distinct trials
    space = {"target.pes": {"type": "int", "low": 1, "high": 8}, "target.lanes": {"type": "categorical", "choices": [4, 8]}}
    path = write_study(tmp_path / "batch.yaml", sampler={"name": "tpe"}, budget={"n_trials": 12}, space=space,
                       workloads=[{"name": "tasks", "params": {"n": 150}}], cache={"enabled": False})
    sdir, handle, jobs = submit(path, executor="local", workers=4, out=tmp_path / "run", time_min=5, allow_imports=True)
    reports = wait(handle, jobs, progress=False, console=None, poll_s=0.2)
    assert all("error" not in r for r in reports), reports
    complete = _complete(handle.study)
    assert len(complete) == 12 == sum(r["completed"] for r in reports)
    assert len({t.number for t in complete}) == 12
    owners = {t.system_attrs["solvermap:owner"]["worker"] for t in complete}
    assert len(owners) >= 2, f"one worker did everything: {owners}"
    assert {r["label"] for r in reports} == {f"worker-{k}" for k in range(4)}
    logs = sorted(p.name for p in (sdir.path / "workers").glob("worker-*.log"))
    assert logs == [f"worker-{k}.log" for k in range(4)]


def test_a_sampler_stuck_on_finished_configurations_is_relieved_by_a_seeded_random_draw():
    from solvermap.search.worker import RANDOM_AFTER, _unstuck_sampler

    stuck = optuna.samplers.PartialFixedSampler({"x": 3}, optuna.samplers.RandomSampler(seed=0))
    study = optuna.create_study(sampler=stuck)

    def draw(repeats: int) -> int:
        study.sampler = _unstuck_sampler(study, 0, repeats)
        trial = study.ask()
        value = trial.suggest_int("x", 0, 1000)
        study.tell(trial, 0.0)
        study.sampler = stuck
        return value

    assert {draw(0) for _ in range(5)} == {3}
    assert len({draw(RANDOM_AFTER) for _ in range(5)}) > 1


def test_a_journal_record_cut_by_a_killed_writer_is_dropped_before_the_next_append(tmp_path):
    path = tmp_path / "s.journal"
    study = optuna.create_study(storage=open_storage(str(path), StorageSettings()), study_name="cut")
    study.enqueue_trial({"x": 1})
    whole = path.read_bytes()
    path.write_bytes(whole + b'{"op_code":8,"worker_id":"dead","trial_id":0,"user_a')  # SIGKILL mid-append
    again = optuna.load_study(storage=open_storage(str(path), StorageSettings()), study_name="cut")
    again.enqueue_trial({"x": 2})  # appended after the repair: every line parses
    assert path.read_bytes().startswith(whole) and len(again.get_trials()) == 2
    reread = optuna.load_study(storage=open_storage(str(path), StorageSettings()), study_name="cut")
    assert len(reread.get_trials()) == 2
