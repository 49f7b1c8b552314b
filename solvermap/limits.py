"""Size caps: how much memory a run may plan to use before it builds anything large.

Before a pipeline builds a large table, array, tensor or model it estimates the bytes it needs and calls
:func:`check_estimate`; over the cap it stops with one line (:class:`~solvermap.errors.LimitError`, exit 2)
naming the parameter, the estimate and the cap, instead of swapping or being killed by the kernel::

    check_estimate("target.grid rows x columns = 400 x 400: site-to-site distances (160000² entries)",
                   estimate_bytes=8 * 160_000**2, source="plasticine-hybrid")

The cap, first that applies:

1. the run config's ``limits.memory_gb`` (``--set limits.memory_gb=4``; the CLI calls :func:`use_memory_cap`)
   or a study file's ``limits: {memory_gb: 4}`` (each trial runs inside :func:`memory_cap`);
2. the environment variable ``SOLVERMAP_MEMORY_GB`` (e.g. for batch workers);
3. :data:`DEFAULT_FRACTION` (one half) of the memory this process may use: physical memory, or less when a
   cgroup limit (``memory.max``) or ``RLIMIT_AS`` says so. Half, because an estimate counts the largest
   structures only, not the interpreter, the solver's own copy of a model or the structures beside them.

An estimate is a lower bound of what the build would allocate (the biggest arrays and tables, at their
element sizes), so a refusal is never a false alarm; the checks sit where a parameter makes a size grow
faster than linearly, or where one number (a hidden size, a grid side) scales the whole build.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import os
import resource
from collections.abc import Iterator
from pathlib import Path

from solvermap.errors import InputError, LimitError

DEFAULT_FRACTION = 0.5
ENV_VAR = "SOLVERMAP_MEMORY_GB"
GB = 1e9
_CAP: contextvars.ContextVar[float | None] = contextvars.ContextVar("solvermap_memory_cap", default=None)


def available_bytes() -> int:
    """Memory this process may use: physical memory, lowered by a cgroup limit or ``RLIMIT_AS``."""
    sizes = [os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")]
    for cgroup in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(cgroup).read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            sizes.append(int(text))
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        sizes.append(soft)
    return min(sizes)


def memory_cap_bytes() -> float:
    """The cap in force (module docstring)."""
    cap = _CAP.get()
    if cap is not None:
        return cap
    env = os.environ.get(ENV_VAR)
    if env:
        return parse_memory_gb(env, ENV_VAR) * GB
    return DEFAULT_FRACTION * available_bytes()


def parse_memory_gb(value: object, source: str) -> float:
    """A cap in GB from a config value or the environment: a positive finite number."""
    try:
        gb = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InputError(source, "limits.memory_gb", f"expected a number of GB, got {value!r}") from None
    if not (math.isfinite(gb) and gb > 0):
        raise InputError(source, "limits.memory_gb", f"expected a positive finite number of GB, got {value!r}")
    return gb


@contextlib.contextmanager
def memory_cap(gb: float | None) -> Iterator[None]:
    """While open, the cap is ``gb`` gigabytes (``None`` keeps the environment's or the default)."""
    token = _CAP.set(None if gb is None else gb * GB)
    try:
        yield
    finally:
        _CAP.reset(token)


def use_memory_cap(gb: float | None) -> None:
    """The cap is ``gb`` gigabytes (``None``: the environment's or the default) for the rest of this context:
    the CLI calls it once per command, from the run config's ``limits.memory_gb``."""
    _CAP.set(None if gb is None else gb * GB)


def format_bytes(n: float) -> str:
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.0f} B"


def check_estimate(what: str, estimate_bytes: float, source: str = "") -> None:
    """Refuse (one line, :class:`LimitError`) when a build of ``estimate_bytes`` would pass the memory cap.

    ``what`` names the parameter(s) and what they size (``"workload.hidden=65536: LSTM weights"``);
    ``source`` the workload, target or file it comes from."""
    cap = memory_cap_bytes()
    if not estimate_bytes <= cap:  # also refuses NaN
        where = f"{source}: " if source else ""
        raise LimitError(f"{where}{what} needs about {format_bytes(estimate_bytes)}, over the memory cap of "
                         f"{format_bytes(cap)} (limits.memory_gb; raise it with --set limits.memory_gb=N "
                         f"or {ENV_VAR})")
