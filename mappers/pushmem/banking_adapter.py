"""Memories after shift-register introduction → the shared banking problem; banking baselines.

Baselines (001:L258 and the digest's D7): ``cyclic`` partitions on the innermost dimension
(bank = x mod N, smallest valid N) and ``embarrassing`` replicates the memory so that every copy takes
all writes and a share of the read ports (bank = copy of the port).
"""

from __future__ import annotations

import math

import numpy as np

from solvermap.formulations.problems.banking import Banking, BankAccess, BankFunction, BankingProblem, MemoryBanking, peak_bank_load
from solvermap.mappers.pushmem.ports import Memory


def memory_banking(mem: Memory, port_limit: int, max_banks: int, read_ports: int | None = None) -> MemoryBanking:
    streams = mem.streams
    times = np.concatenate([s.times for s in streams])
    elements = np.concatenate([s.elements for s in streams])
    port = np.concatenate([np.full(len(s.times), i, dtype=np.int64) for i, s in enumerate(streams)])
    is_write = np.concatenate([np.full(len(s.times), s.kind == "write") for s in streams])
    order = np.lexsort((port, times))
    times, elements, port, is_write = times[order], elements[order], port[order], is_write[order]
    idx = np.stack(np.unravel_index(elements, mem.shape), axis=1) if len(elements) else np.zeros((0, len(mem.shape)), int)
    uniq, start, counts = np.unique(times, return_index=True, return_counts=True)
    patterns = set()
    busy = counts > port_limit
    for n in np.unique(counts[busy]).tolist():  # cycles with n accesses: their distinct offset patterns
        at = start[busy & (counts == n)][:, None] + np.arange(n)
        rows = idx[at]
        key = np.concatenate([port[at][..., None], is_write[at][..., None].astype(np.int64),
                              rows - rows.min(axis=1, keepdims=True)], axis=2).reshape(len(at), -1)
        distinct = {row.tobytes(): row for row in np.ascontiguousarray(key)}
        for u in np.array(list(distinct.values())).reshape(-1, n, 2 + idx.shape[1]).tolist():
            patterns.add(tuple(sorted((BankAccess(p, bool(w), tuple(off)) for p, w, *off in u),
                                      key=lambda a: (a.port, a.offset))))
    groups = tuple(sorted(patterns, key=lambda g: [(a.port, a.offset) for a in g]))
    return MemoryBanking(mem.name, tuple(mem.shape), tuple(s.name for s in streams), groups, port_limit, max_banks,
                         len(mem.shape) - 1, read_ports, times, elements, port, is_write)


def banking_problem(mems: list[Memory], spec, max_banks: int = 16) -> BankingProblem:
    return BankingProblem(tuple(memory_banking(m, spec.tile_accesses_per_cycle, max_banks, spec.tile_read_ports) for m in mems))


def cyclic(problem: BankingProblem) -> Banking | None:
    """bank = x mod N on the innermost dimension, smallest valid N; copies only when a copy would have more
    read ports than the tile's transpose buffers."""
    out = {}
    for mem in problem.memories:
        reads = mem.read_ports
        copies = math.ceil(len(reads) / mem.read_port_limit) if mem.read_port_limit and reads else 1
        assign = {p: i % copies for i, p in enumerate(reads)}
        for n in range(1, mem.max_banks // copies + 1):
            alpha = (0,) * (mem.rank - 1) + ((1,) if n > 1 else (0,))
            fn = BankFunction(n, alpha, copies, assign)
            if peak_bank_load(mem, fn) <= mem.port_limit:
                out[mem.name] = fn
                break
        else:
            return None
    return Banking(out, source="cyclic")


def embarrassing(problem: BankingProblem) -> Banking | None:
    out = {}
    for mem in problem.memories:
        reads = mem.read_ports
        writes_per_cycle = max([sum(a.write for a in g) for g in mem.groups] + [1])
        share = mem.port_limit - writes_per_cycle
        if mem.read_port_limit:
            share = min(share, mem.read_port_limit)
        if share < 1:
            return None
        copies = max(1, math.ceil(len(reads) / share))
        fn = BankFunction(1, (0,) * mem.rank, copies, {p: i % copies for i, p in enumerate(reads)})
        if copies > mem.max_banks or peak_bank_load(mem, fn) > mem.port_limit:
            return None
        out[mem.name] = fn
    return Banking(out, source="embarrassing")
