"""Dependence analysis of an affine program for the push-memory scheduler (seed 001 D2-D4).

* :func:`statement_latency` — PE pipeline depth of a statement (preset assumption A4).
* :func:`pipeline_class` — the D2 rule (001:L222) as a schedule shape: a program with a coarse tile loop
  (``attrs.coarse_loops: 1``) is a ``dnn`` pipeline (double-buffered tiles, II by binary search); any other
  program is a ``stencil`` pipeline scheduled by rate matching. The seed ties the two to whether every
  reduction loop is unrolled; here a reduction loop that is not unrolled and not tiled is also rate
  matched (its PE accumulates one step per cycle) — an extension the seed does not describe.
* :func:`tile_loop` — the coarse tile loop: the first loop of the last statement (the stage that streams
  results out). A statement that starts with it is *tiled* and writes tile-indexed data (its write's first
  dimension is the tile variable); a statement without it runs once, before the tiles that read its data
  (weights loaded once); it must not read tiled data.
* :func:`rate_matching` — the SDF-style rate solve of the stencil scheduler (001:L232): loop levels linked
  through access maps form classes with fixed rational rate ratios (an access ``in[y/2]`` halves, a
  stride ``in[2*y]`` doubles); each class takes the smallest integer scale that keeps every statement
  injective (one operation per cycle, II = 1 for the fastest statement), innermost classes first. The
  class just outside the innermost loops takes a multiple of the fetch width, so every row starts a new
  wide word in time as in space (the strip-mining x = fw·x_o + x_i of 001:L264, Eq. 2). Assumption: the
  seed's examples have 64-pixel rows; with a row of 66 (a padded 64-pixel map) and one write plus two
  delay-line reads on one single-port SRAM, constant AGG/TB shifts find no conflict-free interleaving, so
  a 66-pixel row takes 68 cycles.
* :func:`schedule_problem` — the :class:`ScheduleProblem` of a program: exact dependence offsets by
  enumerating each consumer's domain, for every read of a version (:mod:`.versions`: init and update
  statements of one tensor are versions; an update's accumulator reads the previous version at its first
  reduction step, the *carry*) (islpy-free: domains are boxes, maps affine with floor divisors),
  extra SRAM-path latency for dependences whose distance is not constant (they cannot be shift
  registers and must pass AGG → SRAM → TB), buffer terms, stage ends, and for DNN pipelines the coarse
  tile loop with double-buffer slot constraints.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from solvermap.errors import InfeasibleError, InputError
from solvermap.formulations.problems.scheduling import BufferTerm, Precedence, ScheduleProblem, StageEnd
from solvermap.ir.loopnest import Call, Cast, Const, Load, Program, Statement
from solvermap.mappers.pushmem.domains import grid, indices
from solvermap.mappers.pushmem.versions import Versions, analyse, first_step, reduction_loops

ASSOCIATIVE = ("add", "mul", "max", "min", "and", "or")


# ------------------------------------------------------------------ latency


def _depth(expr, op_latency: int) -> int:
    if isinstance(expr, (Load, Const)):
        return 0
    if isinstance(expr, Cast):
        return _depth(expr.arg, op_latency)
    if expr.op == "neg" and isinstance(expr.args[0], Const):
        return 0  # a negative literal
    if expr.op in ASSOCIATIVE:
        leaves = _flatten(expr, expr.op)
        inner = max(_depth(a, op_latency) for a in leaves)
        return inner + op_latency * math.ceil(math.log2(len(leaves)))
    return op_latency + max(_depth(a, op_latency) for a in expr.args)


def _flatten(expr, op: str) -> list:
    if isinstance(expr, Call) and expr.op == op:
        return [leaf for a in expr.args for leaf in _flatten(a, op)]
    return [expr]


def statement_latency(stmt: Statement, op_latency: int = 1) -> int:
    """Cycles from issue to the written result: balanced trees of 1-cycle PE ops; a copy takes 1 cycle."""
    return max(1, _depth(stmt.expr, op_latency))


def pipeline_class(program: Program) -> str:
    return "dnn" if tile_loop(program) is not None else "stencil"


# ------------------------------------------------------------------ grids and maps


def _single(row: tuple[int, ...]) -> tuple[int, int] | None:
    nz = [(j, c) for j, c in enumerate(row) if c]
    return nz[0] if len(nz) == 1 else None


def version_reads(program: Program, versions: Versions):
    """Every read of a version: (consumer, label, access, point mask or None, version), carries included."""
    for c in program.statements:
        for k, acc in enumerate(c.reads):
            if (c.name, k) in versions.reads:
                yield c, f"#{k}", acc, None, versions.reads[(c.name, k)]
        if c.name in versions.carry:
            yield c, "#carry", c.write, "first", versions.carry[c.name]


# ------------------------------------------------------------------ rate matching (stencil pipelines)


@dataclass
class _UnionFind:
    parent: dict
    ratio: dict  # q[node] = ratio[node] * q[root]

    def find(self, x):
        if self.parent[x] == x:
            return x, Fraction(1)
        root, r = self.find(self.parent[x])
        self.parent[x] = root
        self.ratio[x] = self.ratio[x] * r
        return root, self.ratio[x]

    def union(self, a, b, r_ab: Fraction) -> bool:
        """Impose q[a] = r_ab * q[b]; False when it contradicts earlier relations."""
        ra, fa = self.find(a)
        rb, fb = self.find(b)
        if ra == rb:
            return fa == r_ab * fb
        # q[a] = fa q[ra], q[b] = fb q[rb]; q[ra] = r_ab fb / fa q[rb]
        self.parent[ra] = rb
        self.ratio[ra] = r_ab * fb / fa
        return True


def rate_matching(program: Program, fetch_width: int = 1) -> dict[str, tuple[int, ...]]:
    """Integer rates per statement and loop (see module docstring); raises when ratios conflict."""
    versions = analyse(program)
    stmt = {s.name: s for s in program.statements}
    nodes = [(s.name, j) for s in program.statements for j in range(len(s.loops))]
    uf = _UnionFind({n: n for n in nodes}, {n: Fraction(1) for n in nodes})
    for c, _, acc, _, version in version_reads(program, versions):
        p = stmt[version.producer]
        for row_r, row_w, div in zip(acc.coeffs, p.write.coeffs, acc.divisors):
            r, w = _single(row_r), _single(row_w)
            if r is None or w is None:
                continue
            (jc, a_r), (jp, a_w) = r, w
            # one step of consumer loop jc moves the element by a_r/div = a_r/(div*a_w) producer steps
            if not uf.union((c.name, jc), (p.name, jp), Fraction(a_r, div * a_w)):
                raise InfeasibleError(f"schedule: rate matching: loop '{c.loops[jc].var}' of '{c.name}' needs "
                                      f"conflicting rates relative to '{p.name}'")
    classes: dict = {}
    for n in nodes:
        root, r = uf.find(n)
        classes.setdefault(root, []).append((n, r))
    pure = {s.name: len(s.loops) - len(reduction_loops(s)) for s in program.statements}
    q: dict[tuple[str, int], int] = {}
    pending = dict(classes)
    while pending:
        progressed = False
        for root, members in list(pending.items()):
            inner = [(s, jj) for (s, j), _ in members for jj in range(j + 1, len(stmt[s].loops))]
            if any(node not in q for node in inner):
                continue
            den = math.lcm(*(r.denominator for _, r in members))
            ints = [int(r * den) for _, r in members]
            g = math.gcd(*ints)
            base = [v // g for v in ints]
            k = 1
            for ((s, j), _), b in zip(members, base):
                need = 1 + sum(q[(s, jj)] * (stmt[s].loops[jj].extent - 1) for jj in range(j + 1, len(stmt[s].loops)))
                k = max(k, -(-need // b))
            if all(j == pure[s] - 2 for (s, j), _ in members):  # rows (outside the innermost data loop): whole wide words
                while any(b * k % fetch_width for b in base):
                    k += 1
            for ((s, j), _), b in zip(members, base):
                q[(s, j)] = b * k
            del pending[root]
            progressed = True
        if not progressed:
            raise InfeasibleError("schedule: rate matching: loop levels are nested inconsistently across statements")
    return {s.name: tuple(q[(s.name, j)] for j in range(len(s.loops))) for s in program.statements}


def dense_rates(stmt: Statement, scale: int = 1) -> tuple[int, ...]:
    """Row-major rates of a statement's own loops (II = ``scale``)."""
    out, stride = [], scale
    for loop in reversed(stmt.loops):
        out.append(stride)
        stride *= loop.extent
    return tuple(reversed(out))


# ------------------------------------------------------------------ the scheduling problem


@dataclass
class _Writes:
    rest: np.ndarray  # per flat element: producer issue time without d and without the coarse term
    coarse: np.ndarray  # per flat element: coarse (tile) index of its last write
    written: np.ndarray  # bool per flat element
    fill: int  # largest span of issue times within one wide word (fw lanes along the innermost dim)


def _time_parts(stmt: Statement, rates: tuple[int | None, ...], points: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    n = len(points[0]) if points else 1
    rest = np.zeros(n, dtype=np.int64)
    coarse = np.zeros(n, dtype=np.int64)
    for r, g in zip(rates, points):
        if r is None:
            coarse = coarse + g
        else:
            rest = rest + int(r) * g
    return rest, coarse


def wide_word(shape: tuple[int, ...], idx: tuple[np.ndarray, ...], fw: int) -> np.ndarray:
    """Wide-word id of each element in the padded row-major layout (inner dim padded to ``fw``)."""
    padded = list(shape)
    padded[-1] = -(-shape[-1] // fw) * fw
    lin = np.ravel_multi_index(idx, tuple(padded))
    return lin // fw


def _writes(program: Program, stmt: Statement, rates, fw: int) -> _Writes:
    t = program.tensor(stmt.write.tensor)
    pts = grid(stmt)
    rest, coarse = _time_parts(stmt, rates, pts)
    idx = indices(stmt.write, pts)
    flat = np.ravel_multi_index(idx, t.shape)
    last_rest = np.full(t.size, np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(last_rest, flat, rest)
    last_coarse = np.zeros(t.size, dtype=np.int64)
    last_coarse[flat] = coarse
    written = np.zeros(t.size, dtype=bool)
    written[flat] = True
    # SRAM fill span: one value per element (the final write), grouped by wide word
    el = np.nonzero(written)[0]
    words = wide_word(t.shape, np.unravel_index(el, t.shape), fw)
    times = last_rest[el]
    order = np.lexsort((times, words))
    w_sorted, t_sorted = words[order], times[order]
    starts = np.r_[0, np.nonzero(np.diff(w_sorted))[0] + 1]
    ends = np.r_[starts[1:], len(w_sorted)]
    fill = int(np.max(t_sorted[ends - 1] - t_sorted[starts])) if len(starts) else 0
    return _Writes(last_rest, last_coarse, written, fill)


def tile_loop(program: Program) -> tuple[str, int, int] | None:
    """The coarse tile loop ``(var, lo, hi)`` of a program with ``attrs.coarse_loops: 1`` (see module doc)."""
    source = program.source or program.name
    try:
        n = int(program.attrs.get("coarse_loops", 0))
    except (TypeError, ValueError):
        raise InputError(source, "attrs.coarse_loops", "must be 0 or 1") from None
    if n not in (0, 1):
        raise InputError(source, "attrs.coarse_loops", "at most one coarse (tile) loop is supported")
    if not n:
        return None
    last = program.statements[-1]
    if not last.loops:
        raise InputError(source, "attrs.coarse_loops", f"the last statement '{last.name}' has no loop to tile")
    return (last.loops[0].var, last.loops[0].lo, last.loops[0].hi)


def tiled(program: Program, loop: tuple[str, int, int] | None) -> set[str]:
    """Statements that start with the tile loop; each must write tile-indexed data (first index = the tile)."""
    if loop is None:
        return set()
    out = set()
    for s in program.statements:
        if not s.loops or (s.loops[0].var, s.loops[0].lo, s.loops[0].hi) != loop:
            continue
        row, off, div = s.write.coeffs[0], s.write.offsets[0], s.write.divisors[0]
        if row[0] != 1 or any(row[1:]) or off != 0 or div != 1:
            raise InputError(program.source or program.name, f"statement '{s.name}'",
                             f"is inside the tile loop '{loop[0]}' but writes {s.write.text()}; a tiled statement "
                             f"writes tile-indexed data ({s.write.tensor}[{loop[0]}, ...])")
        out.add(s.name)
    return out


def schedule_problem(program: Program, *, fetch_width: int = 4, sram_read_latency: int = 1, fetch_slack: int = 4,
                     op_latency: int = 1, slots: int = 2) -> ScheduleProblem:
    """The ScheduleProblem of ``program`` (stencil: matched rates; dnn: coarse tile loop + dense stages)."""
    source = program.source or program.name
    versions = analyse(program)
    loop = tile_loop(program)
    inside = tiled(program, loop)
    kind = pipeline_class(program)
    stmt = {s.name: s for s in program.statements}
    latency = {s.name: statement_latency(s, op_latency) for s in program.statements}
    if loop is None:
        rates: dict[str, tuple[int | None, ...]] = {k: tuple(v) for k, v in rate_matching(program, fetch_width).items()}
    else:
        rates = {s.name: ((None,) + dense_rates(Statement(s.name, s.loops[1:], s.write, s.expr)) if s.name in inside
                          else dense_rates(s)) for s in program.statements}
    reads = list(version_reads(program, versions))
    for c, _, _, _, version in reads:
        if loop is not None and c.name not in inside and version.producer in inside:
            raise InputError(source, f"statement '{c.name}'", f"runs once (outside the tile loop '{loop[0]}') but reads "
                                                               f"'{version.tensor}', which '{version.producer}' writes per tile")
    producers = {v.producer for *_, v in reads}
    writes = {p: _writes(program, stmt[p], rates[p], fetch_width) for p in producers}
    precedences: list[Precedence] = []
    buffers: list[BufferTerm] = []
    ends: list[StageEnd] = []
    spans: dict[str, int] = {}
    tiles = loop[2] - loop[1] if loop is not None else 1
    mem_latency: dict[str, int] = {}
    times = {}
    for c in program.statements:
        pts = grid(c)
        c_rest, c_coarse = _time_parts(c, rates[c.name], pts)
        times[c.name] = (pts, c_rest)
        spans[c.name] = int(c_rest.max() - c_rest.min() + 1)
        ends.append(StageEnd(c.name, int(c_rest.max()) + latency[c.name], int(c_coarse.max())))
    for c, label, acc, mask, version in reads:
        p = stmt[version.producer]
        pts, _ = times[c.name]
        c_rest, c_coarse = _time_parts(c, rates[c.name], pts)
        if mask is not None:
            sel = first_step(c, pts)
            pts, c_rest, c_coarse = [g[sel] for g in pts], c_rest[sel], c_coarse[sel]
        flat = np.ravel_multi_index(indices(acc, pts), program.tensor(acc.tensor).shape)
        w = writes[p.name]
        p_rest, p_coarse = w.rest[flat], w.coarse[flat]
        dk = p_coarse - c_coarse
        wait = c_rest - p_rest  # consumer time − producer issue time, without delays and II
        constant = bool(np.all(dk == dk[0]) and np.all(wait == wait[0]))
        path = w.fill + 1 + sram_read_latency + 1 + fetch_slack
        extra = 0 if constant else path
        mem_latency[version.buffer] = path
        for delta in np.unique(dk):
            sel = dk == delta
            precedences.append(Precedence(p.name, c.name, int((-wait[sel]).max()) + latency[p.name] + extra, int(delta),
                                          "dependence", f"{p.name}->{c.name}{label}"))
            buffers.append(BufferTerm(version.buffer, p.name, c.name, int(wait[sel].max()) - latency[p.name], -int(delta)))
    # buffer weights: values written per cycle by the producer
    weights = {}
    for *_, version in reads:
        per_tile = tiles if version.producer in inside else 1
        weights[version.buffer] = int(writes[version.producer].written.sum()) / per_tile / max(1, spans[version.producer])
    buffers = [BufferTerm(b.tensor, b.producer, b.consumer, b.const, b.ii_coef, round(weights[b.tensor], 6)) for b in buffers]
    ii_bounds = None
    if loop is not None:
        # double buffering: element e of tile n+slots is written after the last read of e in tile n
        minimum = np.iinfo(np.int64).min
        last_read: dict[tuple[str, str], np.ndarray] = {}
        for c, _, acc, mask, version in reads:
            if version.producer not in inside:
                continue  # data written once lives for the whole run
            pts, c_rest = times[c.name]
            if mask is not None:
                sel = first_step(c, pts)
                pts, c_rest = [g[sel] for g in pts], c_rest[sel]
            shape = program.tensor(acc.tensor).shape
            per = last_read.setdefault((version.buffer, c.name), np.full(int(np.prod(shape)), minimum, dtype=np.int64))
            np.maximum.at(per, np.ravel_multi_index(indices(acc, pts), shape), c_rest)
        by_buffer = versions.by_buffer()
        for (buffer, cname), per in last_read.items():
            p = by_buffer[buffer].producer
            sel = per > minimum
            const = int((per[sel] - writes[p].rest[sel]).max()) - latency[p]
            precedences.append(Precedence(cname, p, const, -slots, "buffer-slots", f"{buffer}:{cname}->{p}"))
        tiled_spans = [spans[s] for s in inside] or [1]
        lower = max(tiled_spans)
        upper = sum(spans[s] + latency[s] for s in spans) + sum(mem_latency.values()) + max(spans.values())
        ii_bounds = (lower, max(lower, upper))
    seq = sum(s.points * latency[s.name] for s in program.statements)
    horizon = 4 * seq + 4 * sum(spans.values()) + 10_000
    return ScheduleProblem(
        stages=tuple(s.name for s in program.statements), rates=rates, latency=latency,
        precedences=tuple(precedences), ends=tuple(ends), buffers=tuple(buffers), ii_bounds=ii_bounds,
        horizon=horizon, pipeline=kind, slots=slots if loop is not None else 0, program=program,
        name=f"schedule:{program.name}", notes={"tiles": tiles, "mem_latency": mem_latency, "spans": spans},
    )
