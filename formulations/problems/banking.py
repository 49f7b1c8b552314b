"""Banking of parallel accesses: problem, decision and objective (shared by every target).

A *memory* is accessed by ports; in some cycles several accesses hit it at once. A bank function
splits it into ``N`` banks (``bank(e) = (α · e) mod N`` over the element's multi-index, the cyclic /
block-cyclic family of optimal stencil banking, 001:L258 citing Escobedo & Lin) and optionally
replicates it into ``C`` copies, each read port reading one copy and every write going to all copies
("embarrassing" banking). A physical bank (copy c, residue r) serves at most ``port_limit`` accesses per
cycle (the MEM tile's 4 word operations per cycle, 001:L248).

``groups`` are the distinct *patterns* of same-cycle accesses (offsets relative to the group's
component-wise minimum, so non-negative): a linear bank function maps a translated group to a cyclic
shift of the same residues, so one constraint per pattern covers every cycle. The raw accesses
(``times``, ``elements``, ``port``, ``is_write``) stay in the problem for the independent checker.

``read_port_limit`` (when set) bounds the read ports of one copy (each needs its own transpose buffer on the
tile, 001:L164); partitioning cannot lower it (a port sweeping the memory touches every bank), only
replication can. ``coprime_dim`` (when set) requires gcd(α[coprime_dim], N) = 1 so that the bank-local address
``lin(e) // N`` of a row-major layout padded to N words is collision-free.

Objective: total physical banks Σ_memories N · C.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class BankAccess:
    port: int  # index into MemoryBanking.ports
    write: bool
    offset: tuple[int, ...]


@dataclass(frozen=True, eq=False)
class MemoryBanking:
    name: str
    shape: tuple[int, ...]
    ports: tuple[str, ...]
    groups: tuple[tuple[BankAccess, ...], ...]
    port_limit: int
    max_banks: int
    coprime_dim: int | None = None
    read_port_limit: int | None = None  # distinct read ports (transpose buffers) per copy
    times: np.ndarray = field(default=None, repr=False)
    elements: np.ndarray = field(default=None, repr=False)  # flat element index
    port: np.ndarray = field(default=None, repr=False)
    is_write: np.ndarray = field(default=None, repr=False)

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def write_ports(self) -> tuple[int, ...]:
        return tuple(sorted({a.port for g in self.groups for a in g if a.write} |
                            ({int(p) for p in np.unique(self.port[self.is_write])} if self.port is not None else set())))

    @property
    def read_ports(self) -> tuple[int, ...]:
        return tuple(i for i in range(len(self.ports)) if i not in self.write_ports)

    def lower_bound(self) -> int:
        copies = math.ceil(len(self.read_ports) / self.read_port_limit) if self.read_port_limit else 1
        return max([1, copies] + [math.ceil(len(g) / self.port_limit) for g in self.groups])


@dataclass(frozen=True)
class BankingProblem:
    memories: tuple[MemoryBanking, ...]
    name: str = "bank"


@dataclass(frozen=True)
class BankFunction:
    modulus: int  # N banks per copy
    alpha: tuple[int, ...]
    copies: int = 1
    port_copy: Mapping[int, int] = field(default_factory=dict)  # read port index → copy

    @property
    def banks(self) -> int:
        return self.modulus * self.copies


@dataclass(frozen=True)
class Banking:
    functions: Mapping[str, BankFunction]
    source: str = ""

    def to_json(self) -> dict[str, Any]:
        return {m: {"N": f.modulus, "alpha": list(f.alpha), "copies": f.copies, "banks": f.banks,
                    "port_copy": {str(k): v for k, v in f.port_copy.items()}} for m, f in self.functions.items()}


def objective(problem: BankingProblem, banking: Banking) -> float:
    return float(sum(banking.functions[m.name].banks for m in problem.memories))


def peak_bank_load(memory: MemoryBanking, fn: BankFunction) -> int:
    """Largest number of same-cycle accesses on one physical bank (used by the baselines)."""
    idx = np.stack(np.unravel_index(memory.elements, memory.shape), axis=1)
    residue = (idx @ np.asarray(fn.alpha, dtype=np.int64)) % fn.modulus
    rows_t, rows_b = [memory.times[memory.is_write]], []
    for c in range(fn.copies):
        rows_b.append(c * fn.modulus + residue[memory.is_write])
    rows_t = [memory.times[memory.is_write]] * fn.copies
    reads = ~memory.is_write
    copy = np.array([fn.port_copy.get(int(p), 0) for p in memory.port[reads]], dtype=np.int64)
    rows_t.append(memory.times[reads])
    rows_b.append(copy * fn.modulus + residue[reads])
    key = np.concatenate(rows_t) * (fn.banks + 1) + np.concatenate(rows_b)
    return int(np.unique(key, return_counts=True)[1].max()) if len(key) else 0
