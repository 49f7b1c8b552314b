"""The machine's C toolchain: find the compiler, check the CPU, compile generated C, load it, time it.

Generated sources and shared objects go to a per-user cache directory under the system temp dir
(``$TMPDIR/solvermap-cpu-<uid>/``, keyed by a hash of source and flags), never into the repository.
Kernels are loaded with :mod:`ctypes` and timed inside C (``clock_gettime``), one call per sample, so
Python overhead is not measured. Errors are one line: no compiler, a CPU without the instruction, or
a compiler failure (with the first error line).
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from solvermap.errors import BackendUnavailable, InputError

CTYPES = {"uint8": ctypes.c_uint8, "int8": ctypes.c_int8, "int16": ctypes.c_int16, "uint16": ctypes.c_uint16,
          "int32": ctypes.c_int32, "float32": ctypes.c_float, "float64": ctypes.c_double}


def cache_dir() -> Path:
    path = Path(tempfile.gettempdir()) / f"solvermap-cpu-{os.getuid()}"
    path.mkdir(parents=True, exist_ok=True)
    return path


@functools.lru_cache(maxsize=None)
def cpu_flags() -> frozenset[str]:
    """Feature flags of this CPU from /proc/cpuinfo (empty where that file does not exist)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return frozenset()
    for line in text.splitlines():
        if line.startswith(("flags", "Features")):
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


def require_compiler(cc: str) -> str:
    path = shutil.which(cc)
    if path is None:
        raise BackendUnavailable(f"no C compiler {cc!r} on PATH: the generated kernels cannot be built "
                                 "(install gcc, or set target.toolchain.cc; --set target.codegen=emulate runs "
                                 "the NumPy instruction emulator instead)")
    return path


def require_cpu(flags: list[str], target: str) -> None:
    missing = [f for f in flags if f not in cpu_flags()]
    if missing:
        raise BackendUnavailable(f"this CPU ({platform.machine()}) lacks {', '.join(missing)} needed by target "
                                 f"{target!r}; run with --set target.codegen=emulate to validate with the NumPy "
                                 "instruction emulator instead")


def compiler_version(cc: str) -> str:
    try:
        out = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    return out.splitlines()[0] if out else "?"


@dataclass
class Library:
    path: Path
    source: Path
    handle: ctypes.CDLL
    compile_seconds: float

    def function(self, name: str):
        return getattr(self.handle, name)

    def disassembly_contains(self, mnemonic: str, symbol: str | None = None) -> bool | None:
        """Whether the compiled code (of function ``symbol`` if given) contains ``mnemonic``
        (None if objdump is unavailable)."""
        objdump = shutil.which("objdump")
        if objdump is None:
            return None
        cmd = [objdump, "-d"] + ([f"--disassemble={symbol}"] if symbol else []) + [str(self.path)]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120).stdout
        return mnemonic in out


def compile_library(source: str, *, cc: str = "gcc", flags: list[str] | None = None, openmp: bool = False,
                    name: str = "kernels") -> Library:
    """Compile ``source`` to a shared object (cached by content) and load it."""
    import time

    compiler = require_compiler(cc)
    flags = list(flags or ["-O3", "-march=native"])
    all_flags = flags + ["-shared", "-fPIC", "-std=gnu11"] + (["-fopenmp"] if openmp else [])
    key = hashlib.sha256((source + "\0" + " ".join([compiler] + all_flags)).encode()).hexdigest()[:20]
    directory = cache_dir()
    src = directory / f"{name}-{key}.c"
    lib = directory / f"{name}-{key}.so"
    seconds = 0.0
    if not lib.exists():
        src.write_text(source)
        tmp = directory / f"{name}-{key}.{os.getpid()}.so"
        start = time.perf_counter()
        proc = subprocess.run([compiler, *all_flags, "-o", str(tmp), str(src)], capture_output=True, text=True,
                              timeout=600)
        seconds = time.perf_counter() - start
        if proc.returncode != 0:
            first = next((l for l in proc.stderr.splitlines() if "error" in l), proc.stderr.strip()[:300])
            raise InputError(str(src), "C compilation", f"{cc} failed: {first}")
        os.replace(tmp, lib)
    return Library(lib, src, ctypes.CDLL(str(lib)), seconds)


def pointer(array: np.ndarray):
    return array.ctypes.data_as(ctypes.c_void_p)


def time_kernel(bench, args: list[np.ndarray], *, min_seconds: float, min_reps: int) -> list[float]:
    """Call ``bench(args..., reps, out_times)`` adaptively until ``min_seconds`` elapsed; per-call seconds."""
    reps = max(1, min_reps)
    times = np.zeros(reps, dtype=np.float64)
    bench.restype = ctypes.c_double
    total = bench(*[pointer(a) for a in args], ctypes.c_int(reps), pointer(times))
    if total < min_seconds:
        per = max(total / reps, 1e-7)
        reps = max(min_reps, int(min_seconds / per) + 1)
        times = np.zeros(reps, dtype=np.float64)
        bench(*[pointer(a) for a in args], ctypes.c_int(reps), pointer(times))
    return [float(t) for t in times]
