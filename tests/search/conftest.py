"""Shared fixtures: study files over the ``toyarray`` test family (tests/search/toy_family.py), a
throw-away PostgreSQL server, and a one-node SLURM cluster (tests/search/slurm_cluster.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import tests.search.toy_family  # noqa: F401 - registers the toyarray family, workload and pipeline

REPO = Path(__file__).resolve().parents[2]
TOY_TARGET = Path(__file__).with_name("toyarray.yaml")
SOLVERMAP = str(Path(sys.executable).with_name("solvermap"))


def toy_study(**changes) -> dict:
    """A small two-objective study over the toy array (36 configurations when enumerated)."""
    study = {
        "name": "toy",
        "target": str(TOY_TARGET),
        "imports": ["tests.search.toy_family"],
        "workloads": [{"name": "tasks", "params": {"n": 6}}],
        "space": {
            "target.pes": {"type": "int", "low": 1, "high": 4},
            "target.lanes": {"type": "categorical", "choices": [2, 4, 8]},
            "target.network": {"type": "categorical", "choices": ["static", "dynamic"]},
            "target.vcs": {"type": "int", "low": 1, "high": 2, "when": {"target.network": "dynamic"}},
        },
        "objectives": [{"metric": "cycles", "direction": "minimize"}, {"metric": "area_mm2", "direction": "minimize"}],
        "sampler": {"name": "random"},
        "seed": 0,
        "budget": {"n_trials": 8},
        "solver": {"backend": "cpsat", "time_limit_s": 10},
        "storage": {"heartbeat_s": 1, "grace_s": 3, "max_retry": 2},
    }
    study.update(changes)
    return study


def write_study(path: Path, **changes) -> Path:
    path.write_text(yaml.safe_dump(toy_study(**changes), sort_keys=False))
    return path


@pytest.fixture
def study_file(tmp_path: Path) -> Path:
    return write_study(tmp_path / "toy.yaml")


def subprocess_env() -> dict[str, str]:
    """Environment for a child `solvermap`: the repository on PYTHONPATH (for the test family)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory):
    """A throw-away PostgreSQL server on loopback (tests/search/postgres_server.py)."""
    from tests.search.postgres_server import PostgresServer, server_binaries

    if server_binaries() is None:
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl) not installed: apt-get install postgresql")
    server = PostgresServer(tmp_path_factory.mktemp("pg"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def postgres(postgres_server) -> str:
    """The URL of the throw-away server's ``postgres`` database."""
    return postgres_server.url


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory):
    """A one-node SLURM cluster on loopback (tests/search/slurm_cluster.py), with ``SLURM_CONF`` set for
    the session so that submitit's ``sbatch`` and the tests' ``scontrol`` reach it."""
    from tests.search.slurm_cluster import SlurmCluster, missing_binaries

    missing = missing_binaries()
    if missing:
        pytest.skip(f"SLURM not installed ({', '.join(missing)} missing): apt-get install slurm-wlm munge")
    if os.geteuid() != 0:
        pytest.skip("the test cluster runs slurmd, which launches jobs, as root; run the tests as root (as CI does)")
    cluster = SlurmCluster(tmp_path_factory.mktemp("slurm"))
    with pytest.MonkeyPatch.context() as patch:
        try:
            cluster.start()
        except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
            cluster.stop()
            pytest.skip(f"the SLURM daemons could not start here: {exc}")
        patch.setenv("SLURM_CONF", str(cluster.conf))
        try:
            yield cluster
        finally:
            cluster.stop()
