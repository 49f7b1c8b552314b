"""What a cluster batch needs from its storage and its options: 16 workers on one PostgreSQL finish
exactly the requested trials with no failed transaction; the journal's lock does not outlive a killed
holder (a journal on a shared file system is the alternative to PostgreSQL); sbatch options from a
study file or the command line cannot put code into the job script; a SLURM batch without a shared
storage is refused before anything is submitted. No SLURM needed here."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from solvermap.search.storage import JournalFileLock
from tests.search.conftest import SOLVERMAP, subprocess_env, write_study


@pytest.mark.slow
def test_sixteen_workers_share_one_postgres_without_lost_duplicated_or_failed_transactions(postgres_server, tmp_path):
    from tests.search.storage_load import measure

    row = measure(postgres_server, tmp_path, workers=16, n_trials=48)  # the benchmark runs 200
    assert (row["finished"], row["lost"], row["duplicated"]) == (48, 0, 0), row
    assert row["failed_transactions"] == 0 and row["deadlocks"] == 0 and row["worker_errors"] == 0, row
    assert row["rt_lock"] >= 48, "every trial was asked for under the slot lock"


def test_journal_lock_of_a_killed_holder_does_not_block_the_next_writer(tmp_path):
    journal = tmp_path / "s.journal"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; sys.path.insert(0, sys.argv[2]); "
         "from solvermap.search.storage import JournalFileLock; "
         "JournalFileLock(sys.argv[1]).acquire(); print('held', flush=True); time.sleep(60)",
         str(journal), os.getcwd()], stdout=subprocess.PIPE, text=True, env=subprocess_env())
    assert holder.stdout.readline().strip() == "held"
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    lock = JournalFileLock(journal)
    start = time.monotonic()
    assert lock.acquire() and time.monotonic() - start < 1
    lock.release()


def _batch(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([SOLVERMAP, "batch", "--allow-imports", *args], capture_output=True, text=True, env=subprocess_env(),
                          cwd=cwd, timeout=120)


def test_study_file_sbatch_option_that_sets_the_environment_is_refused(tmp_path):
    path = write_study(tmp_path / "s.yaml", slurm={"sbatch": {"export": "LD_PRELOAD=/tmp/x.so"}})
    done = _batch(str(path), "--executor", "slurm", cwd=tmp_path)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "slurm.sbatch" in done.stderr and "'export': not allowed in a study file" in done.stderr


def test_sbatch_value_with_a_line_break_is_refused(tmp_path):
    path = write_study(tmp_path / "s.yaml", slurm={"storage": "postgresql://u@h/db"})
    done = _batch(str(path), "--executor", "slurm", "--sbatch", "comment=x\nrm -rf ~", "--out", str(tmp_path / "run"),
                  cwd=tmp_path)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "line break" in done.stderr


def test_sbatch_option_that_solvermap_sets_names_the_option_to_use(tmp_path):
    path = write_study(tmp_path / "s.yaml", slurm={"sbatch": {"partition": "gpu"}})
    done = _batch(str(path), "--executor", "slurm", cwd=tmp_path)
    assert done.returncode == 2 and "use --partition / slurm.partition" in done.stderr, done.stderr


def test_slurm_batch_without_a_shared_storage_is_refused_before_submitting(tmp_path):
    path = write_study(tmp_path / "s.yaml")
    done = _batch(str(path), "--executor", "slurm", "--out", str(tmp_path / "run"), cwd=tmp_path)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "--storage postgresql://" in done.stderr
    assert not (tmp_path / "run").exists()


def test_worker_jobs_are_unknown_not_ended_when_squeue_fails(tmp_path, monkeypatch):
    from solvermap.search.slurm import job_states

    fake = tmp_path / "squeue"
    fake.write_text("#!/bin/sh\necho 'slurm_load_jobs error: Socket timed out' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    states = job_states(["41_0", "41_1"])
    assert {s.state for s in states.values()} == {"UNKNOWN"}  # not GONE: wait() keeps waiting for them
