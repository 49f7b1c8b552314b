"""A one-node SLURM cluster on loopback for the batch tests: munged, slurmctld and slurmd, each started in
the foreground by this process (so it stops exactly the processes it started), with every file in a
temporary folder and free ports.

The configuration is a real cluster's, scaled down: one node with this machine's CPUs and memory (from
``slurmd -C``), ``select/cons_tres`` on cores with up to 4 jobs per core (tiny test workers mostly
wait on the database), no cgroups (``proctrack/linuxproc``, ``task/none``: a sandbox has none), no
accounting database (``sacct`` is unavailable, as on some clusters), and short timers so that the
failure tests are quick: ``MinJobAge=30`` (ended jobs stay visible to ``scontrol`` for 30 s),
``KillWait=2`` (SIGTERM to SIGKILL), ``cred_expire=5`` (a requeued job may start again 6 s later) and
a scheduler pass every 2 s. ``SLURM_CONF`` in the environment points the clients at it.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

from tests.search.postgres_server import free_port

BINARIES = ("munged", "mungekey", "slurmctld", "slurmd", "sbatch", "srun", "squeue", "scontrol", "scancel")


def missing_binaries() -> list[str]:
    return [b for b in BINARIES if shutil.which(b) is None and not Path("/usr/sbin", b).exists()]


def _which(name: str) -> str:
    return shutil.which(name) or str(Path("/usr/sbin", name))


def _hardware() -> tuple[str, int, int]:
    """(node name, CPUs, real memory in MB) as slurmd sees this machine."""
    out = subprocess.run([_which("slurmd"), "-C"], capture_output=True, text=True, timeout=30).stdout
    fields = dict(item.split("=", 1) for item in out.split() if "=" in item)
    name = fields.get("NodeName") or socket.gethostname().split(".")[0]
    return name, int(fields.get("CPUs", os.cpu_count() or 1)), int(fields.get("RealMemory", 1024))


class SlurmCluster:
    """Start with :meth:`start`, stop with :meth:`stop`; ``env`` is what clients need (``SLURM_CONF``)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.conf = root / "slurm.conf"
        self.processes: list[subprocess.Popen] = []
        self.node = ""

    @property
    def env(self) -> dict[str, str]:
        return {"SLURM_CONF": str(self.conf)}

    def _spawn(self, *command: str, log: str) -> None:
        with open(self.root / log, "ab") as out:
            self.processes.append(subprocess.Popen(list(command), stdout=out, stderr=subprocess.STDOUT,
                                                   env={**os.environ, **self.env}, start_new_session=True))

    def start(self) -> None:
        """Start munged, slurmctld and slurmd; raise RuntimeError (with the daemon's log) if the node
        does not come up within 30 s."""
        munge = self.root / "munge"
        munge.mkdir(mode=0o700)
        os.chmod(munge, 0o711)  # munged wants its socket folder traversable
        subprocess.run([_which("mungekey"), "--create", f"--keyfile={munge / 'munge.key'}"], check=True,
                       capture_output=True, timeout=30)
        socket_path = munge / "munge.sock"
        self._spawn(_which("munged"), "--foreground", "--force", f"--socket={socket_path}",
                    f"--key-file={munge / 'munge.key'}", f"--pid-file={munge / 'munged.pid'}",
                    f"--seed-file={munge / 'munged.seed'}", f"--log-file={munge / 'munged.log'}", log="munged.out")
        self._wait(lambda: socket_path.exists(), "munged", "munged.out")
        self.node, cpus, memory = _hardware()
        for folder in ("state", "spool"):
            (self.root / folder).mkdir()
        self.conf.write_text(f"""\
ClusterName=solvermap-test
SlurmctldHost={self.node}(127.0.0.1)
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={socket_path},cred_expire=5
StateSaveLocation={self.root / 'state'}
SlurmdSpoolDir={self.root / 'spool'}
SlurmctldPidFile={self.root / 'slurmctld.pid'}
SlurmdPidFile={self.root / 'slurmd.pid'}
SlurmctldLogFile={self.root / 'slurmctld.log'}
SlurmdLogFile={self.root / 'slurmd.log'}
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2,bf_interval=2
MinJobAge=30
KillWait=2
MessageTimeout=10
ReturnToService=2
JobRequeue=1
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SwitchType=switch/none
NodeName={self.node} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory} State=UNKNOWN
PartitionName=debug Nodes={self.node} Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
""")
        self._spawn(_which("slurmctld"), "-D", "-i", "-f", str(self.conf), log="slurmctld.out")
        self._spawn(_which("slurmd"), "-D", "-f", str(self.conf), log="slurmd.out")
        self._wait(self._node_idle, "the SLURM node", "slurmctld.log")

    def _node_idle(self) -> bool:
        out = subprocess.run(["sinfo", "--noheader", "--format=%T"], capture_output=True, text=True, timeout=10,
                             env={**os.environ, **self.env})
        return out.returncode == 0 and out.stdout.strip().rstrip("*") == "idle"

    def _wait(self, ready, what: str, log: str, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if ready():
                return
            if any(p.poll() is not None for p in self.processes):
                break
            time.sleep(0.2)
        text = (self.root / log).read_text(errors="replace") if (self.root / log).exists() else ""
        raise RuntimeError(f"{what} did not start: {text.strip().splitlines()[-3:] if text.strip() else 'no log'}")

    def scontrol(self, *args: str) -> str:
        return subprocess.run(["scontrol", *args], check=True, capture_output=True, text=True, timeout=30,
                              env={**os.environ, **self.env}).stdout

    def scancel(self, *args: str) -> None:
        subprocess.run(["scancel", *args], check=True, capture_output=True, timeout=30, env={**os.environ, **self.env})

    def stop(self) -> None:
        """Cancel every job, then stop the daemons this object started (by their process ids)."""
        if self.processes:
            env = {**os.environ, **self.env}
            subprocess.run(["scancel", "--user", str(os.getuid())], capture_output=True, timeout=30, env=env)
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:  # let slurmd end the job steps before it stops
                out = subprocess.run(["squeue", "--noheader", "--states=RUNNING,COMPLETING,PENDING"],
                                     capture_output=True, text=True, timeout=10, env=env)
                if out.returncode != 0 or not out.stdout.strip():
                    break
                time.sleep(0.5)
        for process in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
        for process in reversed(self.processes):
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.processes.clear()
