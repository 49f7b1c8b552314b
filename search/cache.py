"""Cache of inner solves across trials, keyed by content, with warm starts from neighbouring trials.

Key. A decision's solve depends on its problem object, its formulation and the solver config — and on
nothing else (a formulation does no I/O). The key is a SHA-256 over a canonical encoding of
``(decision name, formulation module and source text, problem, solver config)``. The problem is the
projection of (workload, target spec) onto what that decision sees, so two trials that differ only
in spec fields a decision ignores (say the network's flit width for the partition decision) hit the
same entry. Objects the encoder cannot describe by content (functions, open files, objects without
fields) make the problem uncacheable: that decision is solved every time, never wrongly shared.

Warm starts. On a miss, the decisions stored by the ``neighbours`` nearest earlier trials (L1
distance in the normalised search space) are checked against the new problem with the decision's
own checker; a neighbour's decision that passes and scores better than the pipeline's warm start
(the best baseline) is passed to the formulation as its hint. Checker or objective errors on a
foreign decision just disqualify that neighbour.

Entries are pickles under ``<study dir>/cache/<decision>/<key>.pkl`` beside a small JSON of the trial
parameters (for the neighbour search), written atomically, so parallel workers share the cache
(``root=None`` keeps the cache in this process only).
Each solve's record gets ``details['cache']`` = ``hit`` / ``miss`` / ``off`` and, on a miss,
``details['warm_start']`` naming where the hint came from.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import inspect
import json
import math
import os
import pickle
import struct
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

MAX_NEIGHBOUR_SCAN = 400


class Uncacheable(Exception):
    """The object has no content-based description."""


def _source_digest(module: Any) -> str:
    try:
        source = inspect.getsource(module)
    except (OSError, TypeError):
        return "?"
    return hashlib.sha256(source.encode()).hexdigest()[:16]


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
        self._formulation_digest: dict[str, str] = {}

    def begin_trial(self, number: int | None, params: Mapping[str, Any]) -> None:
        self.trial, self.params = number, dict(params)

    def stats(self) -> dict[str, int]:
        return {"hits": self.hits, "misses": self.misses, "uncached": self.uncached,
                "warm_from_neighbour": self.warm_from_neighbour}

    # keys -----------------------------------------------------------------------------------
    def key(self, name: str, problem: Any, formulation: Any, config: Any) -> str | None:
        module = getattr(formulation, "__name__", type(formulation).__qualname__)
        if module not in self._formulation_digest:
            self._formulation_digest[module] = _source_digest(formulation)
        solver = config.model_dump(exclude={"log"}) if hasattr(config, "model_dump") else config
        try:
            return content_hash((name, module, self._formulation_digest[module], problem, solver))
        except Uncacheable:
            return None

    def _path(self, name: str, key: str) -> Path | None:
        if self.root is None:
            return None
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
        return self.root / safe / f"{key}.pkl"

    def lookup(self, name: str, key: str) -> Any | None:
        if key in self._memory:
            return self._memory[key]
        path = self._path(name, key)
        if path is None or not path.exists():
            return None
        try:
            entry = pickle.loads(path.read_bytes())
        except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError):
            return None
        self._memory[key] = entry
        return entry

    def store(self, name: str, key: str, solved: Any) -> None:
        entry = {"solved": solved, "trial": self.trial, "params": self.params}
        self._memory[key] = entry
        self._index.setdefault(name, {})[key] = {"trial": self.trial, "params": self.params}
        path = self._path(name, key)
        if path is None:
            return
        try:
            _atomic_write(path, pickle.dumps(entry, protocol=pickle.HIGHEST_PROTOCOL))
            _atomic_write(path.with_suffix(".json"),
                          json.dumps({"trial": self.trial, "params": self.params}, default=str).encode())
        except (pickle.PicklingError, TypeError, AttributeError):
            path.unlink(missing_ok=True)  # an unpicklable decision stays in memory only

    # warm starts ----------------------------------------------------------------------------
    def _known(self, name: str) -> dict[str, dict[str, Any]]:
        """Stored entries of a decision (key → trial and parameters): this process's and, on disk, everyone's."""
        known = dict(self._index.get(name, {}))
        path = self._path(name, "x")
        if path is not None and path.parent.exists():
            metas = sorted(path.parent.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
            for meta in metas[:MAX_NEIGHBOUR_SCAN]:
                if meta.stem in known:
                    continue
                try:
                    known[meta.stem] = json.loads(meta.read_text())
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

    def _warm_start(self, name: str, problem: Any, hint: Any, checker: Any, objective: Any, sense: str):
        better = (lambda a, b: a < b) if sense == "min" else (lambda a, b: a > b)
        best, best_value, source = hint, None, "baseline" if hint is not None else None
        if hint is not None:
            try:
                best_value = float(objective(problem, hint))
            except Exception:  # noqa: BLE001 - a baseline the objective cannot score keeps no value
                best_value = None
        for dist, key in self._neighbour_entries(name):
            entry = self.lookup(name, key)
            decision = getattr(entry.get("solved"), "decision", None) if entry else None
            if decision is None:
                continue
            try:
                if not checker(problem, decision).ok:
                    continue
                value = float(objective(problem, decision))
            except Exception:  # noqa: BLE001 - a foreign decision that does not fit this problem
                continue
            if best_value is None or better(value, best_value):
                best, best_value, source = decision, value, f"trial {entry.get('trial')} (distance {dist:.3g})"
        return best, {"source": source, "objective": best_value}

    # the hook -------------------------------------------------------------------------------
    def solve(self, ctx: Any, name: str, problem: Any, formulation: Any, config: Any, hint: Any, *,
              checker: Any, objective: Any, sense: str = "min") -> Any:
        """Return a cached solve of the same problem, or solve warm-started and store the result."""
        key = self.key(name, problem, formulation, config)
        if key is None:
            self.uncached += 1
            solved = formulation.solve(problem, config, hint)
            solved.details = {**solved.details, "cache": "off"}
            return solved
        entry = self.lookup(name, key)
        if entry is not None:
            self.hits += 1
            cached = entry["solved"]
            details = {**cached.details, "cache": "hit", "cache_key": key[:16], "cached_from_trial": entry.get("trial")}
            return dataclasses.replace(cached, details=details)
        self.misses += 1
        warm, warm_info = self._warm_start(name, problem, hint, checker, objective, sense)
        if warm_info["source"] and warm_info["source"].startswith("trial"):
            self.warm_from_neighbour += 1
        solved = formulation.solve(problem, config, warm)
        solved.details = {**solved.details, "cache": "miss", "cache_key": key[:16], "warm_start": warm_info}
        if solved.result.status.has_solution or str(solved.result.status) == "infeasible":
            self.store(name, key, solved)
        return solved
