"""Cache of inner solves across trials, keyed by content, with warm starts from neighbouring trials.

Key. A decision's solve depends on its problem object, its code, its options and the solver config — and
on nothing else (a formulation does no I/O). The key is a SHA-256 over a canonical encoding of
``(decision name, source digest, problem, solver config, options)``. The source digest
(:func:`source_digest`) covers every module the solve reaches: the modules its
:class:`~solvermap.mappers.pipeline.Decision` descriptor lists (formulation and problem module; every
module of a formulation package), everything they import inside ``solvermap`` (found by reading their
import statements), the descriptor's own solve function, and the versions of the solver libraries. So an
edit to any part of a model, or a solver upgrade, invalidates its entries. The problem is the
projection of (workload, target spec) onto what that decision sees, so two trials that differ only in
spec fields a decision ignores (say the network's flit width for the partition decision) hit the same
entry. Objects the encoder cannot describe by content (functions, open files, objects without fields)
make the problem uncacheable: that decision is solved every time, never wrongly shared.

Warm starts. On a miss, the decisions stored by the ``neighbours`` nearest earlier trials (L1
distance in the normalised search space) are checked against the new problem with the decision's
own checker; a neighbour's decision that passes and scores better than the pipeline's warm start
(the best baseline) is passed to the formulation as its hint. Checker or objective errors on a
foreign decision just disqualify that neighbour.

Entries are JSON, never pickles: ``<study dir>/cache/<decision>/<key>.json`` holds the solve record,
the decision (the descriptor's ``dump``, read back by its ``load``, which rebuilds only the declared
decision type), the explanation and the details; ``<key>.meta.json`` beside it holds the trial
parameters (for the neighbour search). Both are written atomically, so parallel workers share the
cache; an unreadable entry is a miss; other files (a ``.pkl`` someone left there) are never opened.

Only answers that depend on the key alone are stored: a solve the wall-clock backstop stopped before its
deterministic budget (``SolveResult.backstop_fired``) depends on machine load, so it is never stored, and
an entry that says so (written by an older version) is a miss.
``root=None`` keeps the cache in this process only. Each solve's record gets ``details['cache']`` =
``hit`` / ``miss`` / ``off`` and, on a miss, ``details['warm_start']`` naming where the hint came from.
"""

from __future__ import annotations

import ast
import dataclasses
import enum
import hashlib
import importlib.metadata
import importlib.util
import inspect
import json
import math
import os
import struct
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from solvermap.codec import CodecError, decode, encode
from solvermap.results import to_jsonable

MAX_NEIGHBOUR_SCAN = 400
FORMAT = 1  # version of the entry layout
SOLVER_LIBRARIES = ("ortools", "highspy", "pyscipopt", "cvxpy", "clarabel", "scs", "ecos", "gurobipy")


class Uncacheable(Exception):
    """The object has no content-based description."""


def _module_path(name: str) -> tuple[Path, bool] | None:
    """The source file of module ``name`` and whether it is a package (None: not a module)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError, AttributeError):
        return None
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        return None
    return Path(spec.origin), spec.submodule_search_locations is not None


def _imported(name: str, path: Path, package: bool, tops: set[str]) -> set[str]:
    """Names under the top-level packages ``tops`` that a module's import statements name (at any depth)."""
    base = name if package else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_bytes())):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = base.split(".")
                origin = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            out.add(origin)
            out.update(f"{origin}.{alias.name}" for alias in node.names)
    return {m for m in out if m.split(".")[0] in tops}


def module_files(roots: Iterable[str]) -> dict[str, Path]:
    """Every module the ``roots`` reach inside ``solvermap`` (and inside the roots' own top-level packages):
    the roots (all modules of a package root), then what their import statements name, transitively.
    Module name → source file."""
    found: dict[str, Path] = {}
    queue = list(roots)
    first = set(queue)
    tops = {"solvermap"} | {name.split(".")[0] for name in queue}
    while queue:
        name = queue.pop()
        if name in found:
            continue
        located = _module_path(name)
        if located is None:
            continue
        path, package = located
        found[name] = path
        if package and name in first:  # a package root: every module in it
            for file in sorted(path.parent.rglob("*.py")):
                relative = file.relative_to(path.parent).with_suffix("")
                parts = [p for p in relative.parts if p != "__init__"]
                queue.append(".".join([name, *parts]))
                first.add(queue[-1])
        queue.extend(sorted(_imported(name, path, package, tops) - set(found)))
    return found


def _library_versions() -> list[str]:
    out = []
    for name in SOLVER_LIBRARIES:
        try:
            out.append(f"{name}=={importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def source_digest(modules: Iterable[str], extra: Iterable[str] = ()) -> str:
    """SHA-256 (16 hex digits) of the sources of ``modules`` and what they import (:func:`module_files`),
    of the ``extra`` source texts and of the solver libraries' versions."""
    digest = hashlib.sha256()
    for name, path in sorted(module_files(modules).items()):
        digest.update(name.encode() + b"\x00" + path.read_bytes() + b"\x00")
    for text in extra:
        digest.update(text.encode() + b"\x00")
    digest.update(" ".join(_library_versions()).encode())
    return digest.hexdigest()[:16]


def decision_digest(decision: Any) -> str:
    """:func:`source_digest` of a descriptor: its ``modules`` plus the source of its solve function when that is a
    plain function (a registry adapter such as the partition variant's)."""
    extra = []
    if inspect.isfunction(decision.solve):
        try:
            extra.append(inspect.getsource(decision.solve))
        except (OSError, TypeError):
            extra.append(decision.solve.__qualname__)
    return source_digest(decision.modules, extra)


class _Encoder:
    """Feeds a canonical, type-tagged byte encoding of a value into a hash."""

    def __init__(self) -> None:
        self.hash = hashlib.sha256()
        self._stack: set[int] = set()

    def put(self, tag: str, payload: bytes = b"") -> None:
        self.hash.update(tag.encode() + b"\x00" + struct.pack("<Q", len(payload)) + payload)

    def encode(self, value: Any) -> None:  # noqa: C901 - one branch per kind of value
        if value is None or isinstance(value, (bool, int, str, bytes)):
            self.put(type(value).__name__, repr(value).encode())
            return
        if isinstance(value, float):
            self.put("float", (value.hex() if math.isfinite(value) else repr(value)).encode())
            return
        if isinstance(value, enum.Enum):
            self.put("enum", f"{type(value).__qualname__}.{value.name}".encode())
            return
        key = id(value)
        if key in self._stack:
            raise Uncacheable("cyclic object")
        self._stack.add(key)
        try:
            self._encode_container(value)
        finally:
            self._stack.discard(key)

    def _encode_container(self, value: Any) -> None:
        try:
            import numpy as np
        except ImportError:  # pragma: no cover
            np = None
        if np is not None and isinstance(value, np.generic):
            self.encode(value.item())
            return
        if np is not None and isinstance(value, np.ndarray):
            if value.dtype == object:
                self.put("ndarray-object", str(value.shape).encode())
                for item in value.ravel():
                    self.encode(item)
                return
            self.put("ndarray", f"{value.dtype.str}{value.shape}".encode() + np.ascontiguousarray(value).tobytes())
            return
        if isinstance(value, (list, tuple)):
            self.put(type(value).__name__, str(len(value)).encode())
            for item in value:
                self.encode(item)
            return
        if isinstance(value, (set, frozenset)):
            self.put("set", str(len(value)).encode())
            for digest in sorted(_digest(item) for item in value):
                self.put("item", digest.encode())
            return
        if isinstance(value, Mapping):
            self.put("map", str(len(value)).encode())
            for kd, item in sorted(((_digest(k), v) for k, v in value.items()), key=lambda p: p[0]):
                self.put("key", kd.encode())
                self.encode(item)
            return
        try:
            import networkx as nx
        except ImportError:  # pragma: no cover
            nx = None
        if nx is not None and isinstance(value, nx.Graph):
            self.put("graph", f"{type(value).__name__}".encode())
            self.encode(dict(value.graph))
            self.encode({n: dict(attrs) for n, attrs in value.nodes(data=True)})
            if value.is_multigraph():
                edges = sorted(((_digest((u, v, k)), dict(d)) for u, v, k, d in value.edges(keys=True, data=True)),
                               key=lambda p: p[0])
            else:
                edges = sorted(((_digest((u, v)), dict(d)) for u, v, d in value.edges(data=True)), key=lambda p: p[0])
            self.put("edges", str(len(edges)).encode())
            for ed, data in edges:
                self.put("edge", ed.encode())
                self.encode(data)
            return
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            self.put("dataclass", type(value).__qualname__.encode())
            for f in dataclasses.fields(value):
                self.put("field", f.name.encode())
                self.encode(getattr(value, f.name))
            return
        if hasattr(value, "model_dump") and hasattr(type(value), "model_fields"):
            self.put("model", type(value).__qualname__.encode())
            self.encode(value.model_dump())
            return
        if callable(value) or inspect.ismodule(value):
            raise Uncacheable(f"a {type(value).__name__} has no content description")
        attrs = getattr(value, "__dict__", None)
        slots = getattr(type(value), "__slots__", None)
        if attrs is None and slots:
            attrs = {s: getattr(value, s) for s in slots if hasattr(value, s)}
        if attrs:
            self.put("object", f"{type(value).__module__}.{type(value).__qualname__}".encode())
            self.encode({k: v for k, v in attrs.items() if not k.startswith("__")})
            return
        raise Uncacheable(f"a {type(value).__name__} has no content description")


def _digest(value: Any) -> str:
    encoder = _Encoder()
    encoder.encode(value)
    return encoder.hash.hexdigest()


def content_hash(value: Any) -> str:
    """SHA-256 (hex) of a canonical encoding of ``value``; raises :class:`Uncacheable`."""
    return _digest(value)


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


class SolveCache:
    """The ``ctx.solve_cache`` hook of :func:`solvermap.mappers.pipeline.run_decision` (see module docstring).

    ``distance(a, b)`` compares two trials' parameter dicts; :meth:`begin_trial` tells the cache which
    trial (number and parameters) the following solves belong to.
    """

    def __init__(self, root: str | Path | None, *, neighbours: int = 3,
                 distance: Callable[[Mapping[str, Any], Mapping[str, Any]], float] | None = None) -> None:
        self.root = Path(root) if root is not None else None  # None: this process only, nothing on disk
        self.neighbours = neighbours
        self.distance = distance
        self.trial: int | None = None
        self.params: dict[str, Any] = {}
        self.hits = 0
        self.misses = 0
        self.uncached = 0
        self.warm_from_neighbour = 0
        self._memory: dict[str, Any] = {}
        self._index: dict[str, dict[str, dict[str, Any]]] = {}  # decision → key → {trial, params}
        self._digests: dict[int, str] = {}

    def begin_trial(self, number: int | None, params: Mapping[str, Any]) -> None:
        self.trial, self.params = number, dict(params)

    def stats(self) -> dict[str, int]:
        return {"hits": self.hits, "misses": self.misses, "uncached": self.uncached,
                "warm_from_neighbour": self.warm_from_neighbour}

    # keys -----------------------------------------------------------------------------------
    def digest(self, decision: Any) -> str:
        if id(decision) not in self._digests:
            self._digests[id(decision)] = decision_digest(decision)
        return self._digests[id(decision)]

    def key(self, decision: Any, problem: Any, config: Any, options: Any = None) -> str | None:
        solver = config.model_dump(exclude={"log"}) if hasattr(config, "model_dump") else config
        settings = options.model_dump(exclude={"solver"}) if hasattr(options, "model_dump") else options
        try:
            return content_hash((decision.name, self.digest(decision), problem, solver, settings))
        except Uncacheable:
            return None

    def _path(self, name: str, key: str) -> Path | None:
        if self.root is None:
            return None
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
        return self.root / safe / f"{key}.json"

    def lookup(self, decision: Any, key: str) -> dict[str, Any] | None:
        """The entry ``{solved, trial, params}`` under ``key``: from memory, else from its JSON file."""
        if key in self._memory:
            return self._memory[key]
        path = self._path(decision.name, key)
        if path is None or not path.is_file():
            return None
        try:
            data = json.loads(path.read_text())
            entry = {"solved": _load_solved(decision, data), "trial": data.get("trial"), "params": data.get("params", {})}
        except (OSError, ValueError, TypeError, KeyError, AttributeError, CodecError):
            return None
        if entry["solved"].result.backstop_fired:
            return None
        self._memory[key] = entry
        return entry

    def store(self, decision: Any, key: str, solved: Any) -> None:
        """Keep ``solved`` under ``key`` (in memory and, with a root, on disk) unless its backstop fired."""
        if solved.result.backstop_fired:
            return
        self._memory[key] = {"solved": solved, "trial": self.trial, "params": self.params}
        self._index.setdefault(decision.name, {})[key] = {"trial": self.trial, "params": self.params}
        path = self._path(decision.name, key)
        if path is None:
            return
        meta = {"trial": self.trial, "params": self.params}
        try:
            payload = json.dumps({**_dump_solved(decision, solved), **meta, "format": FORMAT, "decision": decision.name},
                                 default=str)
        except (CodecError, TypeError, ValueError):
            return  # a decision the codec cannot write stays in memory only
        _atomic_write(path, payload.encode())
        _atomic_write(path.with_suffix(".meta.json"), json.dumps(meta, default=str).encode())

    # warm starts ----------------------------------------------------------------------------
    def _known(self, name: str) -> dict[str, dict[str, Any]]:
        """Stored entries of a decision (key → trial and parameters): this process's and, on disk, everyone's."""
        known = dict(self._index.get(name, {}))
        path = self._path(name, "x")
        if path is not None and path.parent.exists():
            metas = sorted(path.parent.glob("*.meta.json"), key=lambda p: p.stat().st_mtime, reverse=True)
            for meta in metas[:MAX_NEIGHBOUR_SCAN]:
                key = meta.name.removesuffix(".meta.json")
                if key in known:
                    continue
                try:
                    known[key] = json.loads(meta.read_text())
                except (OSError, ValueError):
                    continue
        return known

    def _neighbour_entries(self, name: str) -> list[tuple[float, str]]:
        if self.neighbours <= 0 or self.distance is None:
            return []
        scored = [(self.distance(self.params, info.get("params", {})), key)
                  for key, info in self._known(name).items() if info.get("trial") != self.trial]
        scored.sort()
        return scored[: self.neighbours]

    def _warm_start(self, decision: Any, problem: Any, hint: Any):
        better = (lambda a, b: a < b) if decision.sense == "min" else (lambda a, b: a > b)
        best, best_value, source = hint, None, "baseline" if hint is not None else None
        if hint is not None:
            try:
                best_value = float(decision.objective(problem, hint))
            except Exception:  # noqa: BLE001 - a baseline the objective cannot score keeps no value
                best_value = None
        for dist, key in self._neighbour_entries(decision.name):
            entry = self.lookup(decision, key)
            candidate = getattr(entry.get("solved"), "decision", None) if entry else None
            if candidate is None:
                continue
            try:
                if not decision.checker(problem, candidate).ok:
                    continue
                value = float(decision.objective(problem, candidate))
            except Exception:  # noqa: BLE001 - a foreign decision that does not fit this problem
                continue
            if best_value is None or better(value, best_value):
                best, best_value, source = candidate, value, f"trial {entry.get('trial')} (distance {dist:.3g})"
        return best, {"source": source, "objective": best_value}

    # the hook -------------------------------------------------------------------------------
    def solve(self, ctx: Any, decision: Any, problem: Any, config: Any, hint: Any, options: Any = None) -> Any:
        """Return a cached solve of the same problem, or solve warm-started and store the result."""
        if options is None:
            options = decision.options()
        key = self.key(decision, problem, config, options)
        if key is None:
            self.uncached += 1
            solved = decision.solve(problem, config, hint, options)
            solved.details = {**solved.details, "cache": "off"}
            return solved
        entry = self.lookup(decision, key)
        if entry is not None:
            self.hits += 1
            cached = entry["solved"]
            details = {**cached.details, "cache": "hit", "cache_key": key[:16], "cached_from_trial": entry.get("trial")}
            return dataclasses.replace(cached, details=details)
        self.misses += 1
        warm, warm_info = self._warm_start(decision, problem, hint)
        if warm_info["source"] and warm_info["source"].startswith("trial"):
            self.warm_from_neighbour += 1
        solved = decision.solve(problem, config, warm, options)
        solved.details = {**solved.details, "cache": "miss", "cache_key": key[:16], "warm_start": warm_info}
        if solved.result.status.has_solution or str(solved.result.status) == "infeasible" or _settled_timeout(solved, config):
            self.store(decision, key, solved)
        return solved


def _settled_timeout(solved: Any, config: Any) -> bool:
    """A solve that spent its whole deterministic work budget without a solution gives the same answer
    again under the same key, so it is stored too (a larger budget is another key); one stopped by the
    wall-clock backstop depends on the machine's load and is not."""
    budget = config.work_budget() if hasattr(config, "work_budget") else None
    return (str(solved.result.status) == "timeout-no-solution" and budget is not None
            and not getattr(solved.result, "backstop_fired", False))


def _dump_solved(decision: Any, solved: Any) -> dict[str, Any]:
    return {"result": encode(solved.result),
            "solution": None if solved.decision is None else decision.dump(solved.decision),
            "explanation": list(solved.explanation), "details": to_jsonable(solved.details)}


def _load_solved(decision: Any, data: Mapping[str, Any]) -> Any:
    from solvermap.formulations.decision import Solved
    from solvermap.formulations.solver import SolveResult

    if data.get("format") != FORMAT or data.get("decision") != decision.name:
        raise CodecError("an entry of another format or decision")
    solution = data["solution"]
    return Solved(decode(data["result"], SolveResult), None if solution is None else decision.load(solution),
                  decode(data["explanation"], list[str]), dict(data["details"]))
