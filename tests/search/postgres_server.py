"""A throw-away PostgreSQL server on loopback for the storage tests and benchmarks: ``initdb`` in a
temporary folder, ``pg_ctl start`` on a free port (as ``nobody`` when run as root, since the server
refuses root), ``fsync=off``, 200 connections and ``pg_stat_statements`` loaded so that a benchmark can
count the statements a run sends; :meth:`PostgresServer.stop` stops exactly this server.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import signal
import socket
import subprocess
from pathlib import Path


def server_binaries() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl`` (Debian: /usr/lib/postgresql/<version>/bin), or None."""
    for candidate in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (candidate / "initdb").exists() and (candidate / "pg_ctl").exists():
            return candidate
    found = shutil.which("pg_ctl")
    return Path(found).parent if found and (Path(found).parent / "initdb").exists() else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    """``url`` is the server's ``postgres`` database; :meth:`new_database` makes another."""

    def __init__(self, root: Path) -> None:
        self.root, self.data, self.log = root, root / "data", root / "log"
        self.port = 0
        self.url = ""
        self._names = itertools.count()
        self._user = "nobody" if os.geteuid() == 0 else None

    def _run(self, *args: str) -> None:
        command = [str(server_binaries() / args[0]), *args[1:]]
        if self._user:
            command = ["su", self._user, "-s", "/bin/sh", "-c", " ".join(f"'{c}'" for c in command)]
        subprocess.run(command, check=True, capture_output=True, timeout=120)

    def start(self) -> None:
        sockets = self.root / "sock"
        sockets.mkdir(parents=True)
        if self._user:
            os.chmod(self.root, 0o777)
            shutil.chown(sockets, user=self._user)
            os.chmod(sockets, 0o777)
            for parent in list(self.root.parents)[:-1]:  # let `nobody` traverse to its folder
                os.chmod(parent, os.stat(parent).st_mode | 0o011)
        self.port = free_port()
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "solvermap", "--no-sync")
        options = (f"-p {self.port} -k {sockets} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200 "
                   "-c shared_preload_libraries=pg_stat_statements")
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-o", options, "start")
        self._pid = int((self.data / "postmaster.pid").read_text().split()[0])
        self.url = f"postgresql+psycopg2://solvermap@127.0.0.1:{self.port}/postgres"

    def stop(self) -> None:
        if self.url:
            try:
                self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
            except subprocess.CalledProcessError:  # its folder is gone (another pytest run pruned old basetemps)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self._pid, signal.SIGQUIT)  # the postmaster's immediate shutdown
            self.url = ""

    def new_database(self, stem: str = "db") -> str:
        """A new empty database with pg_stat_statements, as a URL."""
        import sqlalchemy

        name = f"{stem}_{next(self._names)}"
        engine = sqlalchemy.create_engine(self.url, isolation_level="AUTOCOMMIT")
        with engine.connect() as connection:
            connection.execute(sqlalchemy.text(f"CREATE DATABASE {name}"))
        engine.dispose()
        url = self.url.rsplit("/", 1)[0] + f"/{name}"
        engine = sqlalchemy.create_engine(url, isolation_level="AUTOCOMMIT")
        with engine.connect() as connection:
            connection.execute(sqlalchemy.text("CREATE EXTENSION IF NOT EXISTS pg_stat_statements"))
        engine.dispose()
        return url
