"""Running ``solvermap`` in this process and asserting the bad-input contract: exit code 2, one line on
stderr, no traceback, nothing written.

:func:`run_main` calls :func:`solvermap.cli.main` with ``argv`` in a copy of the current context (so a
``limits.memory_gb`` a case sets does not leak into the next one) and captured streams; a case that
raises instead of exiting is returned with its traceback, so the assertion shows it.
"""

from __future__ import annotations

import contextlib
import contextvars
import io
import os
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

from solvermap import cli


@dataclass
class Outcome:
    code: int | str
    out: str
    err: str

    @property
    def lines(self) -> list[str]:
        return [line for line in self.err.splitlines() if line.strip()]


def run_main(*args: str) -> Outcome:
    out, err = io.StringIO(), io.StringIO()
    saved = sys.argv
    sys.argv = ["solvermap", *args]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            contextvars.copy_context().run(cli.main)
        code: int | str = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: BLE001 - reported by the assertion, with its traceback
        code = "raised"
        err.write(traceback.format_exc())
    finally:
        sys.argv = saved
    return Outcome(code, out.getvalue(), err.getvalue())


def listing(folder: Path) -> set[str]:
    """Every path under ``folder`` (to prove that a refused command wrote nothing)."""
    return {str(p.relative_to(folder)) for p in folder.rglob("*")} if folder.exists() else set()


def assert_one_line_error(outcome: Outcome, *args: str) -> None:
    """Exit code 2, exactly one non-empty stderr line starting ``error:``, and no traceback."""
    shown = " ".join(repr(a) if len(a) < 80 else repr(a[:77] + "...") for a in args)
    assert outcome.code == 2, f"{shown}: exit {outcome.code}\n{outcome.err[-3000:]}"
    assert len(outcome.lines) == 1, f"{shown}: {len(outcome.lines)} stderr lines\n{outcome.err[-3000:]}"
    assert outcome.lines[0].startswith("error: "), f"{shown}: {outcome.lines[0]}"
    assert "Traceback" not in outcome.err


def run_refused(workdir: Path, *args: str) -> Outcome:
    """Run ``args`` in ``workdir``; assert the contract and that nothing new appeared there."""
    before = listing(workdir)
    cwd = os.getcwd()
    os.chdir(workdir)
    try:
        outcome = run_main(*args)
    finally:
        os.chdir(cwd)
    assert_one_line_error(outcome, *args)
    created = listing(workdir) - before
    assert not created, f"{args}: wrote {sorted(created)[:5]}"
    return outcome
