"""Run records: every run writes a new directory; nothing is overwritten.

Layout::

    runs/<UTC timestamp>-<command>-<label>/
        run.json           the command, its state (running | ok | failed | interrupted), and on failure the
                           error and the exit code
        config.yaml        the resolved configuration (map/solve)
        target.yaml        the resolved target spec: after ``extends`` and every override (map/solve)
        workload.json      the workload's name, family and every parameter, defaults included (map/solve)
        environment.json   python, platform, package and solver versions, git commit
        records.json       the JSON records the command printed (or would print with --json)
        tables/*.parquet   tabular results (also *.csv for a quick look)
        log.txt            progress messages ("HH:MM:SS message", UTC), and the error of a failed run

Progress messages are stdlib ``logging`` records of the ``solvermap`` logger (:data:`LOG`, level INFO;
DEBUG with ``--verbose``). While :meth:`RunDirectory.logging` is open a plain ``FileHandler`` appends them
to the run's ``log.txt``; while :func:`console_logging` is open rich's ``RichHandler``
(:class:`ProgressHandler`) draws each as a dim ``· message`` line on the console (the CLI's stderr, unless
``--quiet``). Each message starts a *phase* that lasts until the next one: on a terminal a live status line
below the messages shows the running phase and its elapsed time once it has run for
:data:`STATUS_AFTER_S`; on a pipe (a batch job's log) a phase still running after every
:data:`HEARTBEAT_S` seconds gets one more plain line saying so.

:meth:`RunDirectory.recording` marks the run in ``run.json``: ``running`` while the command runs, then
``ok``, or ``failed`` with the error (also the last line of ``log.txt``) and the exit code, or
``interrupted``. :func:`read_run` reads it back (``solvermap status``, ``solvermap rerun`` and the API).
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
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console, Group
from rich.highlighter import NullHighlighter
from rich.live import Live
from rich.logging import RichHandler
from rich.spinner import Spinner
from rich.text import Text

from solvermap.errors import InputError, SolvermapError
from solvermap.results import to_jsonable

PACKAGES = ("solvermap", "ortools", "highspy", "pyscipopt", "cvxpy", "clarabel", "scs", "ecos", "pyomo", "networkx",
            "numpy", "scipy", "pandas", "pyarrow", "optuna", "pydantic", "onnx", "scikit-learn", "gurobipy", "submitit")
DEFAULT_ROOT = Path("runs")
LOG = logging.getLogger("solvermap")
LOG_FILE = "log.txt"
RUN_FILE = "run.json"
STATUS_AFTER_S = 2.0  # a phase shorter than this shows no live status
HEARTBEAT_S = 60.0  # on a pipe, a phase running this long gets another line (and again every HEARTBEAT_S)


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class RunState:
    """What ``run.json`` says about a run directory."""

    path: Path
    command: str
    state: str  # running | ok | failed | interrupted
    error: str | None = None
    exit_code: int | None = None
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        """The command did not finish (an error, Ctrl-C, or a process that died while ``running``)."""
        return self.state in ("failed", "interrupted")

    def to_json(self) -> dict[str, Any]:
        return {"directory": str(self.path), "command": self.command, "state": self.state, "error": self.error,
                "exit_code": self.exit_code, **self.info}


def read_run(path: str | Path) -> RunState:
    """The state of a run or study directory (``run.json``); one-line error when there is none."""
    path = Path(path)
    if not path.is_dir():
        raise InputError(str(path), "", "no such run directory")
    try:
        data = json.loads((path / RUN_FILE).read_text())
    except FileNotFoundError:
        raise InputError(str(path), "", f"not a run directory (no {RUN_FILE})") from None
    except (OSError, ValueError) as exc:
        raise InputError(str(path / RUN_FILE), "", f"unreadable run record: {exc}") from None
    if not isinstance(data, dict) or "state" not in data:
        raise InputError(str(path / RUN_FILE), "state", "missing")
    info = {k: v for k, v in data.items() if k not in ("command", "state", "error", "exit_code")}
    return RunState(path, str(data.get("command", "")), str(data["state"]), data.get("error"), data.get("exit_code"), info)


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

    def append_log(self, message: str) -> None:
        """One line of ``log.txt`` written directly (as :meth:`logging` would write it)."""
        with (self.path / LOG_FILE).open("a", encoding="utf-8") as log:
            log.write(f"{time.strftime('%H:%M:%S', time.gmtime())} {message}\n")

    def write_environment(self) -> Path:
        return self.write_json("environment.json", environment())

    def mark(self, **fields: Any) -> None:
        """Update ``run.json`` with ``fields`` (state, error, exit_code, ...)."""
        path = self.path / RUN_FILE
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            data = {}
        data.update(fields)
        path.write_text(json.dumps(to_jsonable(data), indent=2))

    @contextmanager
    def recording(self, command: str, **info: Any) -> Iterator[RunDirectory]:
        """While open the run is ``running``; it ends ``ok``, or, on an exception, ``failed`` (the error is
        appended to ``log.txt`` and kept in ``run.json`` with the exit code) or ``interrupted``, and the
        exception goes on. (Progress messages reach ``log.txt`` through :meth:`logging`.)"""
        self.mark(command=command, state="running", error=None, exit_code=None, started=_now(), finished=None, **info)
        try:
            yield self
        except KeyboardInterrupt:
            self.append_log("interrupted")
            self.mark(state="interrupted", exit_code=130, finished=_now())
            raise
        except SolvermapError as exc:
            exc.run_dir = str(self.path)  # type: ignore[attr-defined]  # the CLI's error line names it
            self.append_log(f"error: {exc}")
            self.mark(state="failed", error=str(exc), exit_code=exc.exit_code, finished=_now())
            raise
        except Exception as exc:
            message = f"internal error: {type(exc).__name__}: {exc}"
            self.append_log(message + "\n" + traceback.format_exc().rstrip())
            self.mark(state="failed", error=message, exit_code=1, finished=_now())
            raise
        self.mark(state="ok", exit_code=0, finished=_now())


def elapsed_text(seconds: float) -> str:
    """``7 s``, ``1 min 27 s``, ``2 h 03 min``."""
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


class ProgressHandler(RichHandler):
    """rich's logging handler, drawing each record as one dim ``· message`` line (no time, level or path
    columns, no markup or highlighting of the message) and wrapped as the console wraps its prints.

    Each message starts a phase, and a message ``"<step>: ..."`` whose step differs from the last one's starts
    a step; :meth:`status` is the live line of the running phase (its message and elapsed time, and the
    step's elapsed time, once either has run :data:`STATUS_AFTER_S`) and :meth:`beat` prints a plain line for a
    phase still running after every ``heartbeat_s``. ``clock`` is a monotonic clock in seconds (a test passes
    its own).
    """

    def __init__(self, console: Console, *, clock: Callable[[], float] = time.monotonic,
                 heartbeat_s: float = HEARTBEAT_S) -> None:
        super().__init__(console=console, show_time=False, show_level=False, show_path=False, markup=False,
                         highlighter=NullHighlighter(), keywords=[])
        self.setFormatter(logging.Formatter("· %(message)s"))
        self.clock = clock
        self.heartbeat_s = heartbeat_s
        self.phase: str | None = None
        self.since = clock()
        self.step: str | None = None
        self.step_since = self.since
        self.beats = 0
        self.spinner = Spinner("dots", style="cyan")

    def emit(self, record: logging.LogRecord) -> None:
        self.phase, self.since, self.beats = record.getMessage(), self.clock(), 0
        step = self.phase.partition(":")[0] if ":" in self.phase else None
        if step != self.step:
            self.step, self.step_since = step, self.since
        super().emit(record)

    def render(self, *, record: logging.LogRecord, traceback: Any, message_renderable: Text) -> Text:
        message_renderable.stylize("dim")
        return message_renderable

    def elapsed(self) -> float:
        return self.clock() - self.since

    def status(self) -> Text | None:
        """The live status: the running phase and its elapsed time, and its step's (``· budget step 1 min 27 s``)
        when the step began earlier; None while both are younger than :data:`STATUS_AFTER_S`."""
        step_elapsed = self.clock() - self.step_since
        if self.phase is None or max(self.elapsed(), step_elapsed) < STATUS_AFTER_S:
            return None
        text = Text.assemble((self.phase, ""), ("  " + elapsed_text(self.elapsed()), "bold"))
        if self.step is not None and self.step_since < self.since:
            text.append(f"  · {self.step} step {elapsed_text(step_elapsed)}", style="bold")
        return text

    def beat(self) -> None:
        """On a pipe: one line for a phase that has run another ``heartbeat_s`` since its message."""
        if self.phase is None or self.elapsed() < self.heartbeat_s * (self.beats + 1):
            return
        self.beats = int(self.elapsed() // self.heartbeat_s)
        self.console.print(Text(f"· {self.phase} (still running after {elapsed_text(self.elapsed())})", style="dim"),
                           highlight=False, soft_wrap=self.console.soft_wrap)

    def __rich_console__(self, console: Console, options: Any) -> Any:
        """The live display: a spinner and :meth:`status` (nothing for a young phase)."""
        status = self.status()
        if status is None:
            yield Group()
            return
        self.spinner.update(text=status)
        yield self.spinner


@contextmanager
def console_logging(console: Console, *, live: bool = False, verbose: bool = False,
                    heartbeat_s: float = HEARTBEAT_S) -> Iterator[ProgressHandler]:
    """While open, every message of the ``solvermap`` logger is drawn on ``console`` (DEBUG ones too when
    ``verbose``); with ``live`` (a terminal) a live status shows the running phase and its elapsed time,
    without it a phase running longer than ``heartbeat_s`` gets a line every ``heartbeat_s``."""
    handler = ProgressHandler(console, heartbeat_s=heartbeat_s)
    with _attached(handler, logging.DEBUG if verbose else logging.INFO):
        if live:
            with Live(handler, console=console, transient=True, refresh_per_second=4, redirect_stdout=False,
                      redirect_stderr=False):
                yield handler
            return
        stop = threading.Event()

        def heartbeat() -> None:
            while not stop.wait(min(5.0, heartbeat_s)):
                handler.beat()

        thread = threading.Thread(target=heartbeat, name="solvermap-heartbeat", daemon=True)
        thread.start()
        try:
            yield handler
        finally:
            stop.set()
            thread.join()


@contextmanager
def _attached(handler: logging.Handler, at: int = logging.INFO) -> Iterator[None]:
    level = LOG.level
    if LOG.getEffectiveLevel() > at:
        LOG.setLevel(at)
    handler.setLevel(at)
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
