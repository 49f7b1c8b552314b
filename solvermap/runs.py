"""Run records: every run writes a new directory; nothing is overwritten.

Layout::

    runs/<UTC timestamp>-<command>-<label>/
        config.yaml        the resolved configuration
        environment.json   python, platform, package and solver versions, git commit
        records.json       the JSON records the command printed (or would print with --json)
        tables/*.parquet   tabular results (also *.csv for a quick look)
        log.txt            progress messages
"""

from __future__ import annotations

import datetime as _dt
import importlib.metadata
import json
import platform
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from solvermap.errors import InputError
from solvermap.results import to_jsonable

PACKAGES = ("solvermap", "ortools", "highspy", "pyscipopt", "cvxpy", "clarabel", "scs", "ecos", "pyomo", "networkx",
            "numpy", "scipy", "pandas", "pyarrow", "optuna", "pydantic", "onnx", "scikit-learn", "gurobipy", "submitit")
DEFAULT_ROOT = Path("runs")


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

    def log(self, message: str) -> None:
        stamp = _dt.datetime.now(_dt.UTC).strftime("%H:%M:%S")
        with open(self.path / "log.txt", "a") as handle:
            handle.write(f"{stamp} {message}\n")

    def write_environment(self) -> Path:
        return self.write_json("environment.json", environment())


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
