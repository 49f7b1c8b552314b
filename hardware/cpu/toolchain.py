"""The machine's C toolchain: vet the compiler and flags, compile generated C, verify, load and time it.

Nothing in a target file can run code (issue #22):

* **Compiler** — a bare name from :data:`COMPILERS` (``gcc``, ``clang``, ``cc``, optionally with a
  version suffix such as ``gcc-12``), resolved on ``PATH``. Paths and other programs are refused.
* **Flags** — each flag must match :data:`FLAG_RULES`: optimisation levels (``-O*``), ``-march=`` /
  ``-mtune=`` / ``-m<isa feature>``, an allow-list of ``-f`` vectorisation, unrolling and math flags,
  ``-g`` levels and ``-std=``. Everything else is refused; flags that run programs, load plugins or
  read files (``-wrapper``, ``-B``, ``-specs``, ``-fplugin``, ``@file``, ``-Wl,``, ...) say why.
  :func:`check_compiler` / :func:`check_flag` are used by the spec model (so a bad preset is one line
  naming file and field, exit 2, before anything runs) and again by :func:`compile_library`.

Compile cache: ``$XDG_CACHE_HOME/solvermap/cpu-kernels`` (``~/.cache`` when the variable is unset or
not absolute); both directories are created with mode 0700, must be directories (not symlinks) owned
by this user, and are tightened to 0700 if they are more open. Files are keyed by a hash of source,
compiler and flags. A build writes ``<name>-<key>.so`` and a sidecar ``<name>-<key>.json`` with the key
and the SHA-256 of the library. A cached library is loaded only if its sidecar names the key of its
file name and the library's bytes hash to the sidecar's value; the verified bytes are loaded from a
fresh copy (random name, unlinked after loading), so the file cannot change between check and load. Anything else (a
planted or truncated ``.so``, no sidecar) is rebuilt. Libraries built by this process are loaded from
the bytes just hashed.

Kernels are loaded with :mod:`ctypes` and timed inside C by the thread's CPU clock
(``CLOCK_THREAD_CPUTIME_ID``, :func:`time_kernel`), so neither Python overhead nor the time the thread
waits for a core on a loaded machine is measured. Errors are one line: a refused or missing compiler, a CPU without the
instruction, or a compiler failure (with the first error line).
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import json
import logging
import os
import platform
import re
import shutil
import stat
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from solvermap.errors import BackendUnavailable, InputError

log = logging.getLogger(__name__)

CTYPES = {"uint8": ctypes.c_uint8, "int8": ctypes.c_int8, "int16": ctypes.c_int16, "uint16": ctypes.c_uint16,
          "int32": ctypes.c_int32, "float32": ctypes.c_float, "float64": ctypes.c_double}

# ------------------------------------------------------------------ what a target may ask for

COMPILERS = ("gcc", "clang", "cc")
_COMPILER_NAME = re.compile(r"^(gcc|clang|cc)(-[0-9]+(\.[0-9]+)*)?$")

_F_FLAGS = (
    "tree-vectorize", "tree-loop-vectorize", "tree-slp-vectorize", "vect-cost-model", "simd-cost-model",
    "unroll-loops", "unroll-all-loops", "peel-loops", "split-loops", "tree-loop-distribution", "loop-interchange",
    "loop-unroll-and-jam", "prefetch-loop-arrays", "schedule-insns", "schedule-insns2", "inline-functions",
    "omit-frame-pointer", "strict-aliasing", "wrapv", "fast-math", "finite-math-only", "math-errno",
    "associative-math", "reciprocal-math", "signed-zeros", "trapping-math", "rounding-math", "fp-contract",
    "excess-precision", "align-loops", "align-functions", "align-jumps", "openmp-simd", "pic", "PIC",
)
_COST_MODELS = "unlimited|dynamic|cheap|very-cheap"
FLAG_RULES: tuple[tuple[re.Pattern, str], ...] = (
    (re.compile(r"^-O([0-3]|s|z|g|fast)?$"), "-O*"),
    (re.compile(r"^-m(arch|tune|cpu)=[A-Za-z0-9_.+-]+$"), "-march= / -mtune="),
    (re.compile(r"^-mprefer-vector-width=(128|256|512|none)$"), "-mprefer-vector-width="),
    (re.compile(r"^-m(no-)?(avx[a-z0-9_-]*|sse[0-9a-z.]*|ssse3|fma4?|f16c|bmi2?|popcnt|lzcnt|movbe|aes|pclmul|"
                r"gfni|vaes|vpclmulqdq|amx-[a-z0-9]+|vnni|fma)$"), "-m<isa feature>"),
    (re.compile(r"^-f(no-)?(" + "|".join(re.escape(f) for f in _F_FLAGS) + r")$"), "-f<vectorisation/math>"),
    (re.compile(rf"^-f(vect|simd)-cost-model=({_COST_MODELS})$"), "-fvect-cost-model="),
    (re.compile(r"^-ffp-contract=(fast|on|off)$"), "-ffp-contract="),
    (re.compile(r"^-fexcess-precision=(fast|standard)$"), "-fexcess-precision="),
    (re.compile(r"^-falign-(loops|functions|jumps)=[0-9]{1,3}$"), "-falign-*="),
    (re.compile(r"^-g[0-3]?$"), "-g"),
    (re.compile(r"^-std=(c|gnu)(99|11|17|18|2x|23)$"), "-std="),
)
ALLOWED_FLAGS = ", ".join(dict.fromkeys(d for _, d in FLAG_RULES))
_DANGEROUS = (
    ("-wrapper", "it makes the compiler run another program"),
    ("-B", "it makes the compiler take its programs from a directory"),
    ("-specs", "a spec file can make the compiler run programs"),
    ("--specs", "a spec file can make the compiler run programs"),
    ("-fplugin", "it loads a compiler plugin"),
    ("-fprofile", "it reads or writes profile files"),
    ("-fdump", "it writes files"),
    ("-fdebug-prefix-map", "it rewrites paths"),
    ("-Wl,", "it passes options to the linker"),
    ("-Wa,", "it passes options to the assembler"),
    ("-Wp,", "it passes options to the preprocessor"),
    ("-Xlinker", "it passes options to the linker"),
    ("-Xassembler", "it passes options to the assembler"),
    ("-Xpreprocessor", "it passes options to the preprocessor"),
    ("-include", "it reads a file into the source"),
    ("-imacros", "it reads a file into the source"),
    ("-I", "it adds include directories"),
    ("-L", "it adds library directories"),
    ("-l", "it links a library"),
    ("-o", "the output path is solvermap's"),
    ("--sysroot", "it changes where headers and libraries come from"),
    ("-print-prog-name", "it queries programs"),
    ("-x", "it changes the input language"),
    ("-D", "macros are not part of the toolchain spec"),
    ("-U", "macros are not part of the toolchain spec"),
)


def check_compiler(cc: str) -> str | None:
    """None if ``cc`` is an allowed compiler name, else the reason it is refused."""
    if not isinstance(cc, str) or not _COMPILER_NAME.match(cc):
        return (f"compiler {cc!r} is refused: give a compiler name from the allow-list "
                f"({', '.join(COMPILERS)}, optionally with a version suffix like gcc-12), found on PATH")
    return None


def check_flag(flag: str) -> str | None:
    """None if ``flag`` is on the allow-list, else the reason it is refused."""
    if not isinstance(flag, str):
        return f"flag {flag!r} is not a string"
    if flag.startswith("@"):
        return f"flag {flag!r} is refused: it reads more flags from a file"
    if any(rule.match(flag) for rule, _ in FLAG_RULES):
        return None
    for prefix, why in _DANGEROUS:
        if flag == prefix or flag.startswith(prefix):
            return f"flag {flag!r} is refused: {why} (allowed: {ALLOWED_FLAGS})"
    return f"flag {flag!r} is not on the allow-list ({ALLOWED_FLAGS})"


def vet_toolchain(cc: str, flags: list[str], source: str = "toolchain") -> None:
    """Raise an InputError naming the field if the compiler or a flag is refused."""
    reason = check_compiler(cc)
    if reason:
        raise InputError(source, "toolchain.cc", reason)
    for flag in flags:
        reason = check_flag(flag)
        if reason:
            raise InputError(source, "toolchain.flags", reason)


# ------------------------------------------------------------------ machine


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


@functools.lru_cache(maxsize=None)
def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (``platform.processor()`` elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def missing_cpu_flags(flags: list[str]) -> list[str]:
    have = cpu_flags()
    return [f for f in flags if f not in have]


def require_compiler(cc: str) -> str:
    reason = check_compiler(cc)
    if reason:
        raise InputError("toolchain", "toolchain.cc", reason)
    path = shutil.which(cc)
    if path is None:
        raise BackendUnavailable(f"no C compiler {cc!r} on PATH: the generated kernels cannot be built "
                                 "(install gcc, or set target.toolchain.cc to clang or cc; "
                                 "--set target.codegen=emulate runs the NumPy instruction emulator instead)")
    return path


def require_cpu(flags: list[str], target: str) -> None:
    missing = missing_cpu_flags(flags)
    if missing:
        raise BackendUnavailable(f"this CPU ({platform.machine()}) lacks {', '.join(missing)} needed by target "
                                 f"{target!r}; `solvermap targets` lists the targets this CPU runs, and "
                                 "--set target.codegen=emulate validates with the NumPy instruction emulator instead")


def compiler_version(cc: str) -> str:
    if check_compiler(cc) or shutil.which(cc) is None:
        return "?"
    try:
        out = subprocess.run([shutil.which(cc), "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    return out.splitlines()[0] if out else "?"


# ------------------------------------------------------------------ the compile cache


def _private_dir(path: Path) -> Path:
    """Create ``path`` with mode 0700 (parents as needed) and check it: a real directory of ours."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise BackendUnavailable(f"compile cache {path} is not a directory (a symlink or a file is there); "
                                 "remove it or set XDG_CACHE_HOME")
    if info.st_uid != os.getuid():
        raise BackendUnavailable(f"compile cache {path} belongs to uid {info.st_uid}, not to you "
                                 f"(uid {os.getuid()}); remove it or set XDG_CACHE_HOME")
    if stat.S_IMODE(info.st_mode) & 0o077:
        os.chmod(path, 0o700)
    return path


def cache_dir() -> Path:
    """The per-user compile cache (see module docstring)."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    _private_dir(base / "solvermap")
    return _private_dir(base / "solvermap" / "cpu-kernels")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _load_bytes(data: bytes, name: str, directory: Path) -> ctypes.CDLL:
    """dlopen verified bytes: written to a fresh file of a random name in the private cache directory,
    loaded, then unlinked (nothing can swap the bytes between hashing and loading, and no two loads
    share a file name, which dlopen would take for the same library)."""
    fd, path = tempfile.mkstemp(prefix=f"{name}.", suffix=".load.so", dir=directory)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        return ctypes.CDLL(path)
    finally:
        os.unlink(path)


def _verified(lib: Path, sidecar: Path, key: str) -> bytes | None:
    """The library's bytes if its sidecar vouches for them (key in the name, hash of the bytes), else None."""
    try:
        meta = json.loads(sidecar.read_text())
        data = lib.read_bytes()
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or meta.get("key") != key or meta.get("sha256") != _sha256(data):
        return None
    return data


@dataclass
class Library:
    path: Path
    source: Path
    handle: ctypes.CDLL
    compile_seconds: float
    sha256: str = ""

    def function(self, name: str):
        return getattr(self.handle, name)

    def disassembly(self, symbol: str | None = None) -> str:
        """objdump's disassembly of the library (of function ``symbol`` if given).

        Raises BackendUnavailable if objdump is not installed: a disassembly check cannot pass without it.
        """
        objdump = shutil.which("objdump")
        if objdump is None:
            raise BackendUnavailable("objdump is not installed (binutils): the disassembly cannot be inspected")
        cmd = [objdump, "-d", "--no-show-raw-insn"] + ([f"--disassemble={symbol}"] if symbol else []) + [str(self.path)]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120).stdout

    def disassembly_contains(self, mnemonic: str, symbol: str | None = None) -> bool:
        """Whether the compiled code (of function ``symbol`` if given) contains ``mnemonic``."""
        return re.search(rf"\b{re.escape(mnemonic)}\b", self.disassembly(symbol)) is not None


@dataclass(frozen=True)
class CachePaths:
    """Where one build lives in the compile cache: source, library and sidecar, keyed by ``key``."""

    key: str
    compiler: str
    flags: tuple[str, ...]
    source: Path
    library: Path
    sidecar: Path


def cache_paths(source: str, *, cc: str = "gcc", flags: list[str] | None = None, openmp: bool = False,
                name: str = "kernels") -> CachePaths:
    """Vet the toolchain and name the cache files of a build (the key hashes source, compiler, flags)."""
    flags = list(flags or ["-O3", "-march=native"])
    vet_toolchain(cc, flags, f"compile_library({name})")
    if not re.match(r"^[A-Za-z0-9_.-]+$", name):
        raise InputError("compile_library", "name", f"library name {name!r} must be letters, digits, '.', '_' or '-'")
    compiler = require_compiler(cc)
    all_flags = flags + ["-shared", "-fPIC", "-std=gnu11"] + (["-fopenmp"] if openmp else [])
    key = _sha256((source + "\0" + " ".join([compiler] + all_flags)).encode())[:24]
    directory = cache_dir()
    return CachePaths(key, compiler, tuple(all_flags), directory / f"{name}-{key}.c", directory / f"{name}-{key}.so",
                      directory / f"{name}-{key}.json")


def compile_library(source: str, *, cc: str = "gcc", flags: list[str] | None = None, openmp: bool = False,
                    name: str = "kernels") -> Library:
    """Compile ``source`` to a shared object (cached by content, verified before loading) and load it."""
    paths = cache_paths(source, cc=cc, flags=flags, openmp=openmp, name=name)
    key, compiler, all_flags = paths.key, paths.compiler, list(paths.flags)
    src, lib, sidecar = paths.source, paths.library, paths.sidecar
    directory = src.parent
    data = _verified(lib, sidecar, key) if lib.exists() else None
    seconds = 0.0
    if data is None:
        if lib.exists():
            log.warning("ignoring unverified cached library %s (no or mismatching sidecar): rebuilding", lib)
        tmp_src = directory / f"{name}-{key}.{os.getpid()}.c"
        tmp_lib = directory / f"{name}-{key}.{os.getpid()}.so"
        tmp_meta = directory / f"{name}-{key}.{os.getpid()}.json"
        tmp_src.write_text(source)
        os.replace(tmp_src, src)
        start = time.perf_counter()
        proc = subprocess.run([compiler, *all_flags, "-o", str(tmp_lib), str(src)], capture_output=True, text=True,
                              timeout=600)
        seconds = time.perf_counter() - start
        if proc.returncode != 0:
            first = next((l for l in proc.stderr.splitlines() if "error" in l), proc.stderr.strip()[:300])
            raise InputError(str(src), "C compilation", f"{cc} failed: {first}")
        data = tmp_lib.read_bytes()
        tmp_meta.write_text(json.dumps({"key": key, "sha256": _sha256(data), "compiler": compiler, "flags": all_flags}))
        os.replace(tmp_lib, lib)
        os.replace(tmp_meta, sidecar)
    return Library(lib, src, _load_bytes(data, f"{name}-{key}", directory), seconds, _sha256(data))


def pointer(array: np.ndarray):
    return array.ctypes.data_as(ctypes.c_void_p)


SAMPLE_SECONDS = 2e-4  # one sample runs the kernel at least this long (amortises reading the clock)


def time_kernel(bench, args: list[np.ndarray], *, min_seconds: float, min_reps: int) -> list[float]:
    """Per-call seconds of a generated kernel: ``bench(args..., reps, inner, out_times)`` runs ``reps``
    samples of ``inner`` calls each and reports each sample's thread CPU time per call (CPU time, not
    wall time: on a shared machine the time the thread waits for a core is the load's, not the
    kernel's). ``inner`` is chosen so a sample lasts about ``SAMPLE_SECONDS``; samples are added until
    ``min_seconds`` of kernel time and ``min_reps`` samples."""
    bench.restype = ctypes.c_double
    pointers = [pointer(a) for a in args]
    probe = np.zeros(1, dtype=np.float64)
    once = max(bench(*pointers, ctypes.c_int(1), ctypes.c_int(1), pointer(probe)), 1e-9)
    inner = max(1, int(SAMPLE_SECONDS / once))
    reps = max(1, min_reps, int(min_seconds / (once * inner)) + 1 if min_seconds > 0 else 1)
    times = np.zeros(reps, dtype=np.float64)
    bench(*pointers, ctypes.c_int(reps), ctypes.c_int(inner), pointer(times))
    return [float(t) for t in times]
