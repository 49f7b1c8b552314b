"""What SLURM says about a batch's worker jobs, and which ``#SBATCH`` options a user may add.

:func:`job_states` asks ``squeue`` for jobs that are pending or running, then ``sacct`` (when the
cluster keeps accounting) or ``scontrol show job`` (for jobs ended less than ``MinJobAge`` ago) for
the others; a job none of them knows is ``GONE`` (ended, details expired). Job ids are array tasks
(``1234_5``) as submitit names them. When ``squeue`` fails, every job is ``UNKNOWN`` (not ended: a
busy controller must not look like finished workers). Nothing here unpickles or runs anything from a
study directory.

Extra ``#SBATCH`` options come from the study file's ``slurm.sbatch`` mapping or ``--sbatch KEY=VALUE``.
A study file is data, so it may only name options from :data:`STUDY_SBATCH_KEYS` (none of which runs
code or changes the job's environment: ``--export``, ``--container``, ``--chdir``, ``--get-user-env``,
``--bb`` are refused there); the command line may name any option except those solvermap sets itself
(:data:`RESERVED_SBATCH_KEYS`).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass

ACTIVE = ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED", "REQUEUE_HOLD",
          "REQUEUE_FED", "RESIZING", "SIGNALING", "STAGE_OUT", "RESV_DEL_HOLD", "STOPPED", "PREEMPTED")

STUDY_SBATCH_KEYS = frozenset({
    "account", "qos", "constraint", "gres", "gpus", "gpus-per-task", "gpus-per-node", "exclude", "nodelist",
    "reservation", "comment", "wckey", "mail-type", "mail-user", "exclusive", "hint", "licenses", "mem-per-cpu",
    "begin", "deadline", "nice", "priority", "requeue", "no-requeue", "tmp", "clusters", "time-min",
    "cores-per-socket", "sockets-per-node", "threads-per-core", "switches", "spread-job", "oversubscribe",
})
RESERVED_SBATCH_KEYS = {
    "array": "--workers", "output": "", "error": "", "open-mode": "", "signal": "slurm.signal_delay_s",
    "job-name": "", "time": "--time-min / slurm.time_min", "partition": "--partition / slurm.partition",
    "mem": "--mem-gb / slurm.mem_gb", "cpus-per-task": "--cpus / slurm.cpus_per_task", "nodes": "",
    "ntasks": "", "ntasks-per-node": "", "wrap": "",
}
_KEY = re.compile(r"[a-z][a-z0-9-]*")


def sbatch_problem(key: str, value: object, *, from_study: bool) -> str | None:
    """Why ``key: value`` cannot be an extra ``#SBATCH`` option (None when it can). A value is one line:
    a line break would end the ``#SBATCH`` comment and put the rest into the job script as code."""
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in str(value)):
        return "the value holds a line break or another control character"
    if not _KEY.fullmatch(key):
        return "an sbatch option is lower-case letters, digits and dashes, without the leading --"
    if key in RESERVED_SBATCH_KEYS:
        instead = RESERVED_SBATCH_KEYS[key]
        return "solvermap sets this option itself" + (f"; use {instead}" if instead else "")
    if from_study and key not in STUDY_SBATCH_KEYS:
        return (f"not allowed in a study file (it is data); allowed: {', '.join(sorted(STUDY_SBATCH_KEYS))}; "
                "other options go on the command line with --sbatch KEY=VALUE")
    return None


@dataclass(frozen=True)
class JobState:
    """One worker job as SLURM reports it: state (``RUNNING``, ``PENDING``, ``TIMEOUT``, ...), the
    reason it waits or ended, its node, and how often it was requeued."""

    job_id: str
    state: str
    reason: str = ""
    node: str = ""
    restarts: int = 0

    @property
    def active(self) -> bool:
        return self.state in ACTIVE


def _run(command: list[str]) -> str | None:
    if shutil.which(command[0]) is None:
        return None
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def _squeue(job_ids: list[str]) -> dict[str, JobState] | None:
    """What squeue knows of the jobs; None when squeue fails (slurmctld busy or down)."""
    arrays = sorted({j.split("_")[0] for j in job_ids})
    out = _run(["squeue", "--noheader", "--array", "--states=all", "--jobs=" + ",".join(arrays),
                "--Format=JobArrayID:|,State:|,Reason:|,NodeList:|,RestartCnt:"])
    if out is None:
        return None
    states = {}
    for line in out.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) >= 5:
            job, state, reason, node, restarts = parts[:5]
            states[job] = JobState(job, state, "" if reason == "None" else reason, node,
                                   int(restarts) if restarts.isdigit() else 0)
    return states


def _sacct(job_ids: list[str]) -> dict[str, JobState]:
    out = _run(["sacct", "--noheader", "--parsable2", "--allocations", "--jobs=" + ",".join(job_ids),
                "--format=JobID,State,Reason,NodeList"]) or ""
    states = {}
    for line in out.splitlines():
        parts = line.split("|")
        if len(parts) == 4:
            job, state, reason, node = parts
            states[job] = JobState(job, state.split()[0], "" if reason == "None" else reason, node)
    return states


def _scontrol(job_id: str) -> JobState | None:
    out = _run(["scontrol", "--oneliner", "show", "job", job_id])
    if not out:
        return None
    fields = dict(item.split("=", 1) for item in out.split() if "=" in item)
    node = fields.get("NodeList", "")
    restarts = fields.get("Restarts", "0")
    return JobState(job_id, fields.get("JobState", "UNKNOWN"), "" if fields.get("Reason") == "None" else fields.get("Reason", ""),
                    "" if node == "(null)" else node, int(restarts) if restarts.isdigit() else 0)


def job_states(job_ids: list[str]) -> dict[str, JobState]:
    """The state of each job id (see module docstring); ``UNKNOWN`` everywhere when SLURM cannot be asked."""
    if not job_ids:
        return {}
    if shutil.which("squeue") is None:
        return {j: JobState(j, "UNKNOWN", "squeue not found") for j in job_ids}
    queued = _squeue(job_ids)
    if queued is None:
        return {j: JobState(j, "UNKNOWN", "squeue failed") for j in job_ids}
    states = {j: s for j, s in queued.items() if j in job_ids}
    missing = [j for j in job_ids if j not in states]
    if missing:
        states.update({j: s for j, s in _sacct(missing).items() if j in missing})
    for job in [j for j in job_ids if j not in states]:
        states[job] = _scontrol(job) or JobState(job, "GONE", "ended; SLURM no longer reports it")
    return states


def cancel(job_ids: list[str]) -> None:
    """``scancel`` the given jobs (workers that are no longer needed)."""
    if job_ids:
        _run(["scancel", *job_ids])
