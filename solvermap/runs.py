"""Run records: every run writes a new directory; nothing is overwritten.

Layout::

    runs/<UTC timestamp>-<command>-<label>/
        config.yaml        the resolved configuration
        environment.json   python, platform, package and solver versions, git commit
        records.json       the JSON records the command printed (or would print with --json)
        tables/*.parquet   tabular results (also *.csv for a quick look)
        log.txt            progress messages ("HH:MM:SS message", UTC)

Progress messages are stdlib ``logging`` records of the ``solvermap`` logger (:data:`LOG`, level INFO).
While :meth:`RunDirectory.logging` is open a plain ``FileHandler`` appends them to the run's ``log.txt``;
while :func:`console_logging` is open rich's ``RichHandler`` (:class:`ProgressHandler`) draws each as a dim
``· message`` line on the console (the CLI's stderr, unless ``--quiet``).
"""

from __future__ import annotations

import datetime as _dt
import importlib.metadata
import json
import logging
import platform
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.highlighter import NullHighlighter
from rich.logging import RichHandler
from rich.text import Text

from solvermap.errors import InputError
from solvermap.results import to_jsonable

PACKAGES = ("solvermap", "ortools", "highspy", "pyscipopt", "cvxpy", "clarabel", "scs", "ecos", "pyomo", "networkx",
            "numpy", "scipy", "pandas", "pyarrow", "optuna", "pydantic", "onnx", "scikit-learn", "gurobipy", "submitit")
DEFAULT_ROOT = Path("runs")
LOG = logging.getLogger("solvermap")
LOG_FILE = "log.txt"


class RunDirectory:
    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def create(cls, out: str | Path | None, command: str, label: str = "", *, reuse: bool = False) -> RunDirectory:
        """A new run directory: ``out`` if given (must be new or empty unless ``reuse``), else under runs/."""
        if out is not None:
            path = Path(out)
            if path.exists() and not path.is_dir():
                raise InputError(str(path), "--out", "exists and is not a directory")
            if path.exists() and any(path.iterdir()) and not reuse:
                raise InputError(str(path), "--out", "directory exists and is not empty; choose a new one (runs are never overwritten)")
            path.mkdir(parents=True, exist_ok=True)
            return cls(path)
        stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%d-%H%M%S")
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{command}-{label}".strip("-"))[:80]
        base = DEFAULT_ROOT / f"{stamp}-{slug}"
        path, n = base, 1
        while path.exists():
            n += 1
            path = Path(f"{base}-{n}")
        path.mkdir(parents=True)
        return cls(path)

    def write_json(self, name: str, data: Any) -> Path:
        target = self.path / name
        target.write_text(json.dumps(to_jsonable(data), indent=2))
        return target

    def write_yaml(self, name: str, data: Any) -> Path:
        target = self.path / name
        target.write_text(yaml.safe_dump(to_jsonable(data), sort_keys=False))
        return target

    def write_table(self, name: str, frame: Any) -> Path:
        """Write a pandas DataFrame as ``tables/<name>.parquet`` and ``.csv``."""
        tables = self.path / "tables"
        tables.mkdir(exist_ok=True)
        frame.to_parquet(tables / f"{name}.parquet", index=False)
        frame.to_csv(tables / f"{name}.csv", index=False)
        return tables / f"{name}.parquet"

    @contextmanager
    def logging(self) -> Iterator[None]:
        """While open, every message of the ``solvermap`` logger is appended to this run's ``log.txt``."""
        handler = logging.FileHandler(self.path / LOG_FILE, encoding="utf-8", delay=True)
        formatter = logging.Formatter("%(asctime)s %(message)s", datefmt="%H:%M:%S")
        formatter.converter = time.gmtime
        handler.setFormatter(formatter)
        with _attached(handler):
            yield

    def write_environment(self) -> Path:
        return self.write_json("environment.json", environment())


class ProgressHandler(RichHandler):
    """rich's logging handler, drawing each record as one dim ``· message`` line (no time, level or path
    columns, no markup or highlighting of the message) and wrapped as the console wraps its prints."""

    def __init__(self, console: Console) -> None:
        super().__init__(console=console, show_time=False, show_level=False, show_path=False, markup=False,
                         highlighter=NullHighlighter(), keywords=[])
        self.setFormatter(logging.Formatter("· %(message)s"))

    def render(self, *, record: logging.LogRecord, traceback: Any, message_renderable: Text) -> Text:
        message_renderable.stylize("dim")
        return message_renderable


@contextmanager
def console_logging(console: Console) -> Iterator[None]:
    """While open, every message of the ``solvermap`` logger is drawn on ``console``."""
    with _attached(ProgressHandler(console)):
        yield


@contextmanager
def _attached(handler: logging.Handler) -> Iterator[None]:
    level = LOG.level
    if LOG.getEffectiveLevel() > logging.INFO:
        LOG.setLevel(logging.INFO)
    LOG.addHandler(handler)
    try:
        yield
    finally:
        LOG.removeHandler(handler)
        handler.close()
        LOG.setLevel(level)


def environment() -> dict[str, Any]:
    from solvermap.formulations.solver import CONVEX_BACKENDS, MILP_BACKENDS, backend_version, unavailable_reason

    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    backends = {}
    for kind, names in (("milp", MILP_BACKENDS), ("convex", CONVEX_BACKENDS)):
        for name in names:
            reason = unavailable_reason(kind, name)
            backends[f"{kind}:{name}"] = {"available": reason is None,
                                          "version": backend_version(name) if reason is None else None,
                                          "reason": reason}
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "machine": platform.machine(),
        "packages": versions,
        "backends": backends,
        "git_commit": _git_commit(),
        "argv": sys.argv,
    }


def _git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
                             cwd=Path(__file__).resolve().parent)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None
