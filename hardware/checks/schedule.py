"""Independent checker of an affine schedule against its loop-nest program (never imports the model).

Re-derives every rule from the program itself: iteration points by enumerating each statement's box,
the element each read touches from its access map, and the producing operation of that element.

Rules
    negative-time       every operation issues at a cycle ≥ 0
    statement-overlap   a statement issues at most one operation per cycle (II ≥ 1, 001:L232)
    dependence          a read issues no earlier than the producing write's result: t_c ≥ t_p + L_p
                        (for a reduction, after the last accumulation of that element)
    accumulator-order   a reduction's operations on one element are not interleaved with other elements
                        (the PE accumulates in place)
    buffer-slots        coarse pipelines with k slots: element e of tile n+k is written no earlier than
                        the last read of e in tile n (double buffering, 001:L224)
    completion          the reported completion equals max over operations of t + L
"""

from __future__ import annotations

import numpy as np

from solvermap.results import CheckReport

_MIN = np.iinfo(np.int64).min


def _grid(stmt):
    axes = [np.arange(l.lo, l.hi, dtype=np.int64) for l in stmt.loops]
    return [g.ravel() for g in np.meshgrid(*axes, indexing="ij")]


def _index(access, pts):
    out = []
    for row, off, div in zip(access.coeffs, access.offsets, access.divisors):
        v = np.full(len(pts[0]), off, dtype=np.int64)
        for c, g in zip(row, pts):
            v = v + c * g
        out.append(np.floor_divide(v, div))
    return tuple(out)


def _times(schedule, stmt, pts):
    t = np.full(len(pts[0]), int(schedule.delays[stmt.name]), dtype=np.int64)
    for r, g in zip(schedule.rates[stmt.name], pts):
        t = t + int(r) * g
    return t


def check(problem, schedule) -> CheckReport:
    report = CheckReport()
    program, latency = problem.program, problem.latency
    last_write: dict[str, np.ndarray] = {}
    written_by: dict[str, str] = {}
    finish = _MIN
    for stmt in program.statements:
        if stmt.name not in schedule.rates or stmt.name not in schedule.delays:
            report.add("dependence", f"statement '{stmt.name}' has no schedule")
            continue
        if len(schedule.rates[stmt.name]) != len(stmt.loops):
            report.add("statement-overlap", f"'{stmt.name}': {len(schedule.rates[stmt.name])} rates for {len(stmt.loops)} loops")
            continue
        pts = _grid(stmt)
        t = _times(schedule, stmt, pts)
        if t.min() < 0:
            report.add("negative-time", f"'{stmt.name}' issues at cycle {int(t.min())}")
        uniq, counts = np.unique(t, return_counts=True)
        if (counts > 1).any():
            report.add("statement-overlap", f"'{stmt.name}' issues {int(counts.max())} operations at cycle {int(uniq[counts.argmax()])}")
        finish = max(finish, int(t.max()) + latency[stmt.name])
        tensor = program.tensor(stmt.write.tensor)
        flat = np.ravel_multi_index(_index(stmt.write, pts), tensor.shape)
        if stmt.accumulate:
            rank = np.empty(len(t), dtype=np.int64)
            rank[np.argsort(t, kind="stable")] = np.arange(len(t))
            lo = np.full(tensor.size, np.iinfo(np.int64).max, dtype=np.int64)
            hi = np.full(tensor.size, _MIN, dtype=np.int64)
            np.minimum.at(lo, flat, rank)
            np.maximum.at(hi, flat, rank)
            count = np.bincount(flat, minlength=tensor.size)
            sel = count > 0
            if (hi[sel] - lo[sel] + 1 != count[sel]).any():
                e = int(np.nonzero(sel & (hi - lo + 1 != count))[0][0])
                report.add("accumulator-order", f"'{stmt.name}' accumulates element {np.unravel_index(e, tensor.shape)} "
                                                f"in {int(count[e])} operations interleaved with other elements")
        # reads of this statement
        for acc in stmt.reads:
            if acc.tensor not in last_write:
                continue
            el = np.ravel_multi_index(_index(acc, pts), program.tensor(acc.tensor).shape)
            ready = last_write[acc.tensor][el]
            bad = t < ready
            if bad.any():
                i = int(np.argmax(ready - t))
                report.add("dependence", f"'{stmt.name}' reads {acc.text()} at cycle {int(t[i])} but "
                                         f"'{written_by[acc.tensor]}' writes it at cycle {int(ready[i])} ({int(bad.sum())} reads early)")
        if tensor.role != "output":
            done = np.full(tensor.size, _MIN, dtype=np.int64)
            np.maximum.at(done, flat, t + latency[stmt.name])
            last_write[tensor.name] = done
            written_by[tensor.name] = stmt.name
    if getattr(schedule, "slots", 0) and problem.program.attrs.get("coarse_loops"):
        _slots(problem, schedule, last_write, report)
    if finish != _MIN and schedule.completion != finish:
        report.add("completion", f"reported completion {schedule.completion} but the last result is written at cycle {finish}")
    return report


def _slots(problem, schedule, last_write, report) -> None:
    program, k = problem.program, schedule.slots
    for name, done in last_write.items():
        shape = program.tensor(name).shape
        last_read = np.full(program.tensor(name).size, _MIN, dtype=np.int64)
        for stmt in program.statements:
            for acc in stmt.reads:
                if acc.tensor == name:
                    pts = _grid(stmt)
                    el = np.ravel_multi_index(_index(acc, pts), shape)
                    np.maximum.at(last_read, el, _times(schedule, stmt, pts))
        w = done.reshape(shape[0], -1)
        r = last_read.reshape(shape[0], -1)
        if shape[0] <= k:
            continue
        early = w[k:] < r[:-k]
        if early.any():
            n, e = (int(v[0]) for v in np.nonzero(early))
            report.add("buffer-slots", f"'{name}' tile {n + k} overwrites slot {(n + k) % k} at cycle {int(w[n + k, e])} "
                                       f"before tile {n} reads it at cycle {int(r[n, e])}")
