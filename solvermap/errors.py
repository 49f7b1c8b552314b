"""Errors a user can cause; the CLI prints each as one line and exits with status 2."""

from __future__ import annotations


class SolvermapError(Exception):
    """Base class: an error whose message is complete enough to print on its own line (control characters
    from user data, such as a line break in a YAML key, are shown escaped so it stays one line)."""

    exit_code = 2

    def __str__(self) -> str:
        return "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in super().__str__())


class InputError(SolvermapError):
    """Bad input: names the file (or source), the field and the problem."""

    def __init__(self, source: str, field: str, problem: str) -> None:
        self.source, self.field, self.problem = source, field, problem
        where = f"{_clip(source)}: " if source else ""
        at = f"field '{_clip(field)}': " if field else ""
        super().__init__(f"{where}{at}{problem}")


def _clip(text: str, limit: int = 160) -> str:
    """A name from user data, shortened when it is longer than a line."""
    text = str(text)
    return text if len(text) <= limit else f"{text[: limit - 20]}...({len(text):,} characters)"


class ConfigError(SolvermapError):
    """An invalid combination of options."""


class BackendUnavailable(SolvermapError):
    """A solver backend is not installed or not usable here; the message names the extra to install."""


class InfeasibleError(SolvermapError):
    """A decision has no feasible solution; the message names the constraint group (or node) at fault.
    ``load_dependent``: no solution was found because the wall-clock backstop stopped the solve before its
    deterministic budget, so another run may find one (the search re-evaluates such a trial)."""

    load_dependent = False

    def __init__(self, message: str, *, load_dependent: bool = False) -> None:
        super().__init__(message)
        self.load_dependent = load_dependent


class UnknownError(SolvermapError):
    """A decision's solve stopped at its budget with neither a solution nor a proof that none exists (and no
    baseline gave one): the design point is *unknown*, not infeasible. A larger budget may settle it."""


class UnknownNameError(SolvermapError):
    """An unknown workload, target, decision or option name."""


class StrictError(SolvermapError):
    """``--strict``: a decision fell back to a baseline (its solver answer failed the check); exit status 3."""

    exit_code = 3


class LimitError(SolvermapError):
    """An input, or a structure a pipeline would build, over a size cap (``solvermap.limits``); the message
    names the parameter, the estimate and the cap."""
