"""Independent checker of an affine schedule against its loop-nest program (never imports the model).

Re-derives every rule from the program itself: iteration points by enumerating each statement's box,
the element each read touches from its access map, and the producing operation of that element.

Rules
    negative-time       every operation issues at a cycle ≥ 0
    statement-overlap   a statement issues at most one operation per cycle (II ≥ 1, 001:L232)
    dependence          a read issues no earlier than the result of the write it sees (the element's last write
                        before the reader in program order): t_c ≥ t_p + L_p (for a reduction, after the last
                        accumulation of that element); an update's first step of an element reads its previous
                        value (an init's write) the same way
    accumulator-order   a reduction's operations on one element are not interleaved with other elements
                        (the PE accumulates in place)
    buffer-slots        coarse pipelines with k slots: element e of tile n+k is written no earlier than
                        the last read of e in tile n (double buffering, 001:L224), per version: a tiled
                        statement's writes against the reads that see them
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


def _first_step(stmt, pts):
    red = [j for j, loop in enumerate(stmt.loops) if loop.kind == "reduction"]
    if not red:
        return np.ones(len(pts[0]) if pts else 1, dtype=bool)
    return np.all([pts[j] == stmt.loops[j].lo for j in red], axis=0)


def check(problem, schedule) -> CheckReport:
    report = CheckReport()
    program, latency = problem.program, problem.latency
    done: dict[str, np.ndarray] = {}  # per tensor and element: when its latest write (in program order) is there
    writer: dict[str, np.ndarray] = {}  # per tensor and element: index of the statement that wrote it last
    own: dict[int, np.ndarray] = {}  # per statement: when each element it writes is there (its own version)
    seen: dict[int, list] = {}  # per producer: (elements, read times) of every read of its version
    finish = _MIN
    for i, stmt in enumerate(program.statements):
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
            _accumulator_order(stmt, tensor, flat, t, report)
        reads = [(acc, acc.text(), np.ones(len(t), dtype=bool)) for acc in stmt.reads]
        if stmt.accumulate:  # the accumulator starts from the element's previous value
            reads.append((stmt.write, f"the previous value of {stmt.write.text()}", _first_step(stmt, pts)))
        for acc, what, sel in reads:
            if acc.tensor not in done:
                continue
            el = np.ravel_multi_index(_index(acc, [g[sel] for g in pts]), program.tensor(acc.tensor).shape)
            ready, when, who = done[acc.tensor][el], t[sel], writer[acc.tensor][el]
            for p in np.unique(who[who >= 0]).tolist():
                seen.setdefault(p, []).append((el[who == p], when[who == p]))
            bad = when < ready
            if bad.any():
                j = int(np.argmax(ready - when))
                report.add("dependence", f"'{stmt.name}' reads {what} at cycle {int(when[j])} but "
                                         f"'{program.statements[int(who[j])].name}' writes it at cycle {int(ready[j])} "
                                         f"({int(bad.sum())} reads early)")
        mine = np.full(tensor.size, _MIN, dtype=np.int64)
        np.maximum.at(mine, flat, t + latency[stmt.name])
        own[i] = mine
        if tensor.role != "input":
            written = mine > _MIN
            done.setdefault(tensor.name, np.full(tensor.size, _MIN, dtype=np.int64))[written] = mine[written]
            writer.setdefault(tensor.name, np.full(tensor.size, -1, dtype=np.int64))[written] = i
    if getattr(schedule, "slots", 0) and problem.program.attrs.get("coarse_loops"):
        _slots(problem, schedule, own, seen, report)
    if finish != _MIN and schedule.completion != finish:
        report.add("completion", f"reported completion {schedule.completion} but the last result is written at cycle {finish}")
    return report


def _accumulator_order(stmt, tensor, flat, t, report) -> None:
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


def _slots(problem, schedule, own, seen, report) -> None:
    """Each tiled statement's writes (one version of its tensor) against the reads of that version."""
    program, k = problem.program, schedule.slots
    last = program.statements[-1]
    tile = (last.loops[0].var, last.loops[0].lo, last.loops[0].hi) if last.loops else None
    for i, stmt in enumerate(program.statements):
        if i not in own or not stmt.loops or (stmt.loops[0].var, stmt.loops[0].lo, stmt.loops[0].hi) != tile:
            continue
        row = stmt.write.coeffs[0]
        if row[0] != 1 or any(row[1:]) or stmt.write.offsets[0] != 0:
            continue  # not tile-indexed data: the schedule problem refuses such programs
        shape = program.tensor(stmt.write.tensor).shape
        last_read = np.full(program.tensor(stmt.write.tensor).size, _MIN, dtype=np.int64)
        for el, when in seen.get(i, []):
            np.maximum.at(last_read, el, when)
        if shape[0] <= k:
            continue
        w = own[i].reshape(shape[0], -1)
        r = last_read.reshape(shape[0], -1)
        early = (w[k:] < r[:-k]) & (w[k:] > _MIN)
        if early.any():
            n, e = (int(v[0]) for v in np.nonzero(early))
            report.add("buffer-slots", f"'{stmt.write.tensor}' ({stmt.name}) tile {n + k} overwrites slot {(n + k) % k} at "
                                       f"cycle {int(w[n + k, e])} before tile {n} reads it at cycle {int(r[n, e])}")
