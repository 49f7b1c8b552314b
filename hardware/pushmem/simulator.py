"""Cycle-level simulator of a program mapped onto push memories (seed 001 Sec. IV, 001:L150-L190).

It executes the scheduled program cycle by cycle on the mapped hardware and checks the result image
bit-exactly against the NumPy golden model (001:L331 validates output images across backends):

* PE operations issue at their scheduled cycle and write their result L cycles later (accumulations
  stay in the PE until the element's last reduction step).
* Every unified buffer's input stream enters its root tap; taps are wires, shift registers (real
  register chains that shift every cycle) or memory delay lines; random ports read their memory.
* Memories are physical buffers on MEM tiles: an aggregator (AGG) gathers the fw lanes of a wide word,
  writes it to the tile's single-port SRAM at its scheduled cycle, at the address given by the layout,
  bank function, circular modulus and chaining (tile, row); a transpose buffer (TB) per output stream
  fetches a wide word at its scheduled cycle, receives it ``sram_read_latency`` cycles later and
  serves the port's lanes.

Every stored value carries the element it belongs to, so a value read from the wrong place is counted as
a *data hazard* (and shows up as a mismatch against the golden image). *Port conflicts* count SRAM
accesses beyond one per tile per cycle and word accesses beyond the tile's per-cycle limit on a physical
buffer; AGG/TB overflows are counted as *capacity violations*. The simulator knows nothing about the
solvers: it only executes the configuration (schedule, SR plan, bank functions, moduli, tiles, shifts).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from solvermap.ir.loopnest import NUMPY_DTYPES, Call, Cast, Const, Load, Program, evaluate


@dataclass
class SimulationResult:
    cycles: int  # cycle in which the last result is written (equals the schedule's completion)
    bit_exact: bool
    mismatches: int
    port_conflicts: int
    data_hazards: int
    capacity_violations: int
    peak_words: dict[str, int]  # physical buffer → peak live SRAM words
    agg_peak: int
    tb_peak: int
    counts: dict[str, int] = field(default_factory=dict)  # pe_ops, sram_accesses, word_accesses, sr_shifts
    hazard_log: list[str] = field(default_factory=list)  # the first hazards, for diagnosis

    @property
    def sram_words(self) -> int:
        return int(sum(self.peak_words.values()))

    def to_json(self) -> dict[str, Any]:
        return {"cycles": self.cycles, "bit_exact": self.bit_exact, "mismatches": self.mismatches,
                "port_conflicts": self.port_conflicts, "data_hazards": self.data_hazards,
                "capacity_violations": self.capacity_violations, "peak_words": self.peak_words,
                "agg_peak": self.agg_peak, "tb_peak": self.tb_peak, "counts": self.counts}


# ------------------------------------------------------------------ scalar evaluation (NumPy semantics)


def _wrap_fn(dtype: str):
    np_dtype = np.dtype(NUMPY_DTYPES[dtype])
    if not np.issubdtype(np_dtype, np.integer):
        return lambda v: np_dtype.type(v).item()
    bits = np_dtype.itemsize * 8
    mask = (1 << bits) - 1
    if np.issubdtype(np_dtype, np.signedinteger):
        lo = -(1 << (bits - 1))
        return lambda v: ((int(v) - lo) & mask) + lo
    return lambda v: int(v) & mask


def compile_expr(expr, dtype: str):
    """A function of the operand values (in ``loads`` order) that reproduces ``loopnest.evaluate``."""
    wrap = _wrap_fn(dtype)

    def build(e, wrap):
        if isinstance(e, Const):
            c = wrap(e.value)
            return lambda ops: c
        if isinstance(e, Load):
            return lambda ops: wrap(next(ops))
        if isinstance(e, Cast):
            inner = build(e.arg, _wrap_fn(e.dtype))
            w2 = _wrap_fn(e.dtype)
            return lambda ops: w2(inner(ops))
        args = [build(a, wrap) for a in e.args]
        op = e.op
        if op == "add":
            return lambda ops: wrap(args[0](ops) + args[1](ops))
        if op == "sub":
            return lambda ops: wrap(args[0](ops) - args[1](ops))
        if op == "mul":
            return lambda ops: wrap(args[0](ops) * args[1](ops))
        if op == "div":
            def div(ops):
                a, b = args[0](ops), args[1](ops)
                return wrap(a // b) if b != 0 else 0
            return div
        if op == "max":
            return lambda ops: max(args[0](ops), args[1](ops))
        if op == "min":
            return lambda ops: min(args[0](ops), args[1](ops))
        if op == "shr":
            return lambda ops: wrap(args[0](ops) >> args[1](ops))
        if op == "shl":
            return lambda ops: wrap(args[0](ops) << args[1](ops))
        if op == "and":
            return lambda ops: wrap(args[0](ops) & args[1](ops))
        if op == "or":
            return lambda ops: wrap(args[0](ops) | args[1](ops))
        if op == "neg":
            return lambda ops: wrap(-args[0](ops))
        if op == "abs":
            return lambda ops: wrap(abs(args[0](ops)))
        if op == "select":
            def select(ops):
                c, a, b = args[0](ops), args[1](ops), args[2](ops)
                return a if c != 0 else b
            return select
        if op == "clamp":
            def clamp(ops):
                a, lo, hi = args[0](ops), args[1](ops), args[2](ops)
                return min(max(a, lo), hi)
            return clamp
        raise ValueError(f"unknown operator {op!r}")

    fn = build(expr, wrap)
    return lambda values: fn(iter(values))


# ------------------------------------------------------------------ the design the simulator executes


@dataclass
class Design:
    program: Program
    schedule: Any  # Schedule
    latency: dict[str, int]
    buffers: list  # UnifiedBuffer
    edges: dict  # buffer → port → Edge (shift-register plan)
    distances: dict  # (buffer, port) → distance of taps
    physical: list  # PhysicalBuffer (with modulus and fragments)
    tile_of_fragment: dict[str, int]
    row_base: dict[str, int]  # fragment → first row on its tile
    shifts: dict[str, int]  # wide-fetch stream shift
    spec: Any


def simulate(design: Design, inputs: dict[str, np.ndarray]) -> SimulationResult:
    program, sched, spec = design.program, design.schedule, design.spec
    fw, lat_r, cap = spec.fetch_width, spec.sram_read_latency, spec.tile_words // spec.fetch_width
    golden = evaluate(program, inputs)
    env_in = {t.name: np.asarray(inputs[t.name]) for t in program.inputs}
    outputs = {t.name: np.zeros(t.shape, dtype=NUMPY_DTYPES[t.dtype]) for t in program.outputs}
    ub_of = {ub.tensor: ub for ub in design.buffers}
    hazards = conflicts = capacity = 0
    log: list[str] = []
    counts = {"pe_ops": 0, "sram_accesses": 0, "word_accesses": 0, "sr_shifts": 0}

    # ---- operations by cycle
    ops: dict[int, list] = {}
    last_acc: dict[str, np.ndarray] = {}
    for stmt in program.statements:
        axes = [np.arange(l.lo, l.hi, dtype=np.int64) for l in stmt.loops]
        pts = [g.ravel() for g in np.meshgrid(*axes, indexing="ij")]
        times = sched.times(stmt.name, pts)
        reads = stmt.reads
        elems = []
        for acc in reads:
            shape = program.tensor(acc.tensor).shape
            idx = []
            for row, off, div in zip(acc.coeffs, acc.offsets, acc.divisors):
                v = np.full(len(times), off, dtype=np.int64)
                for c, g in zip(row, pts):
                    v = v + c * g
                idx.append(np.floor_divide(v, div))
            elems.append(np.ravel_multi_index(tuple(idx), shape))
        widx = []
        for row, off, div in zip(stmt.write.coeffs, stmt.write.offsets, stmt.write.divisors):
            v = np.full(len(times), off, dtype=np.int64)
            for c, g in zip(row, pts):
                v = v + c * g
            widx.append(np.floor_divide(v, div))
        wflat = np.ravel_multi_index(tuple(widx), program.tensor(stmt.write.tensor).shape)
        if stmt.accumulate:
            last = np.full(program.tensor(stmt.write.tensor).size, -1, dtype=np.int64)
            np.maximum.at(last, wflat, times)
            last_acc[stmt.name] = last
        fn = compile_expr(stmt.expr, stmt.dtype)
        for i in range(len(times)):
            ops.setdefault(int(times[i]), []).append((stmt, fn, [int(e[i]) for e in elems], int(wflat[i])))

    # ---- taps in topological order per buffer
    tap_order: dict[str, list[str]] = {}
    for ub in design.buffers:
        edges = design.edges.get(ub.tensor, {})
        taps = [p for p, e in edges.items() if e.kind != "random"]
        position = {r.name: i for i, r in enumerate(ub.reads)}
        taps.sort(key=lambda p: (design.distances[(ub.tensor, p)], position[p]))  # the SR model's order
        tap_order[ub.tensor] = taps
    sr_regs = {(b, p): deque([None] * e.delay) for b, es in design.edges.items() for p, e in es.items() if e.kind == "sr"}

    # ---- physical buffers: element → (pb, word, lane) per stream; SRAM events
    phys_by_mem: dict[str, list] = {}
    for pb in design.physical:
        phys_by_mem.setdefault(pb.memory, []).append(pb)
    tiles: dict[int, np.ndarray] = {}
    tags: dict[int, np.ndarray] = {}
    for f, t in design.tile_of_fragment.items():
        tiles.setdefault(t, np.zeros((cap, fw), dtype=np.int64))
        tags.setdefault(t, np.full((cap, fw), -1, dtype=np.int64))
    lane_writes: dict[int, list] = {}  # cycle → [(pb, element, source tap)]
    sram_events: dict[int, list] = {}  # cycle → [("w", pb, word) | ("r", pb, stream, word)]
    tb_reads: dict[tuple[str, str], dict[int, int]] = {}  # (pb, stream) → cycle → element (read lanes)
    stream_pb: dict[tuple[str, int], Any] = {}  # (stream name, element) → pb serving that read
    word_last: dict[str, dict[int, int]] = {}
    tb_evict: dict[tuple[str, str], dict[int, int]] = {}
    for pb in design.physical:
        for t, e in zip(pb.write.times.tolist(), pb.write.elements.tolist()):
            lane_writes.setdefault(t, []).append((pb, e))
        words = pb.word(pb.write.elements)
        ready: dict[int, int] = {}
        for w, t in zip(words.tolist(), pb.write.times.tolist()):
            ready[w] = max(ready.get(w, -1), t + 1)
        sigma = design.shifts.get(f"{pb.name}|agg", 0)
        for w, t in ready.items():
            sram_events.setdefault(t + sigma, []).append(("w", pb, w, None))
        wl: dict[int, int] = {}
        for r in pb.reads:
            sig = design.shifts.get(f"{pb.name}|{r.name}", 0)
            order = np.argsort(r.times, kind="stable")
            rt, re_ = r.times[order], r.elements[order]
            rw = pb.word(re_)
            prev = None
            ends = tb_evict.setdefault((pb.name, r.name), {})
            for i, (t, e, w) in enumerate(zip(rt.tolist(), re_.tolist(), rw.tolist())):
                if w != prev:
                    sram_events.setdefault(t - lat_r - sig, []).append(("r", pb, w, r.name))
                    wl[w] = max(wl.get(w, -1), t - lat_r - sig)
                prev = w
                if i + 1 == len(rw) or rw[i + 1] != w:
                    ends[t] = w
                tb_reads.setdefault((pb.name, r.name), {})[t] = e
                stream_pb[(r.name, e)] = pb
        word_last[pb.name] = wl

    def phys_addr(pb, w):
        slot = w % pb.modulus
        frag = pb.fragments[min(slot // cap, len(pb.fragments) - 1)]
        return design.tile_of_fragment[frag], design.row_base.get(frag, 0) + slot % cap

    agg: dict[str, dict[int, dict[int, tuple[int, int]]]] = {pb.name: {} for pb in design.physical}
    tb: dict[tuple[str, str], dict[int, tuple[int, np.ndarray, np.ndarray]]] = {}
    live_words: dict[str, set] = {pb.name: set() for pb in design.physical}
    peak_words = {pb.name: 0 for pb in design.physical}
    agg_peak = tb_peak = 0
    landing: dict[int, list] = {}
    accum: dict[tuple[str, int], int] = {}
    last_cycle = -1
    end = max(list(ops) + list(sram_events) + list(lane_writes) + [0]) + max(design.latency.values()) + 2

    for t in range(end + 1):
        # 1. results land
        root_now: dict[str, tuple[int, int]] = {}
        for tensor, e, v in landing.pop(t, []):
            last_cycle = max(last_cycle, t)
            if tensor in outputs:
                outputs[tensor].flat[e] = v
            else:
                root_now[tensor] = (e, v)
        # 2. SRAM events (single port per tile)
        per_tile: dict[int, int] = {}
        for kind, pb, w, stream in sram_events.pop(t, []):
            tile, row = phys_addr(pb, w)
            per_tile[tile] = per_tile.get(tile, 0) + 1
            counts["sram_accesses"] += 1
            if kind == "w":
                lanes = agg[pb.name].pop(w, {})
                data = np.zeros(fw, dtype=np.int64)
                tg = np.full(fw, -1, dtype=np.int64)
                for lane, (e, v) in lanes.items():
                    data[lane], tg[lane] = v, e
                tiles[tile][row], tags[tile][row] = data, tg
                if w in word_last[pb.name]:  # a word no stream of this buffer reads is dead on arrival
                    live_words[pb.name].add(w)
            else:
                tb.setdefault((pb.name, stream), {})[w] = (t + lat_r, tiles[tile][row].copy(), tags[tile][row].copy())
                if word_last[pb.name].get(w) == t:
                    live_words[pb.name].discard(w)
        conflicts += sum(c - 1 for c in per_tile.values() if c > 1)
        for pb in design.physical:
            peak_words[pb.name] = max(peak_words[pb.name], fw * len(live_words[pb.name]))
        # 3. taps at cycle t, in (distance, name) order: wires, shift registers, memory delay lines
        word_access: dict[str, int] = {}

        def tb_lane(pbname, stream, e, pb):
            nonlocal hazards
            w = int(pb.word(np.array([e]))[0])
            lane = int(pb.lane(np.array([e]))[0])
            entry = tb.get((pbname, stream), {}).get(w)
            word_access[pbname] = word_access.get(pbname, 0) + 1
            if entry is None or entry[0] > t or entry[2][lane] != e:
                hazards += 1
                if len(log) < 20:
                    log.append(f"cycle {t}: {stream} on {pbname} wants element {e} (word {w} lane {lane}); TB has "
                               f"{'nothing' if entry is None else ('it from cycle ' + str(entry[0]) + ' with tag ' + str(int(entry[2][lane])))}")
                return 0
            return int(entry[1][lane])

        tap_now: dict[tuple[str, str], tuple[int, int] | None] = {}
        for b, taps in tap_order.items():
            for p in taps:
                e = design.edges[b][p]
                src = root_now.get(b) if e.source == "" else tap_now.get((b, e.source))
                if e.kind == "wire":
                    tap_now[(b, p)] = src
                elif e.kind == "sr":
                    q = sr_regs[(b, p)]
                    tap_now[(b, p)] = q.popleft()
                    q.append(src)
                    counts["sr_shifts"] += e.delay
                else:  # memory delay line: this stream's TB lane, when the delayed stream carries a value
                    tap_now[(b, p)] = None
                    for pb in phys_by_mem.get(_memory_name(b, e.source), []):
                        el = tb_reads.get((pb.name, p), {}).get(t)
                        if el is not None:
                            tap_now[(b, p)] = (el, tb_lane(pb.name, p, el, pb))
        # 4. AGG lane writes (values arriving on the memory's source tap)
        for pb, e in lane_writes.pop(t, []):
            mem_src = _memory_source(design, pb)
            val = root_now.get(pb.buffer) if mem_src == "" else tap_now.get((pb.buffer, mem_src))
            word_access[pb.name] = word_access.get(pb.name, 0) + 1
            if val is None or val[0] != e:
                hazards += 1
                if len(log) < 20:
                    log.append(f"cycle {t}: AGG of {pb.name} expects element {e}, its source carries {val}")
                val = (e, 0)
            w = int(pb.word(np.array([e]))[0])
            lane = int(pb.lane(np.array([e]))[0])
            agg[pb.name].setdefault(w, {})[lane] = val
        # 5. operations issue
        for stmt, fn, elems, wflat in ops.pop(t, []):
            values = []
            for k, (acc, e) in enumerate(zip(stmt.reads, elems)):
                tname = acc.tensor
                if tname in env_in:
                    values.append(int(env_in[tname].flat[e]))
                    continue
                port = f"{tname}.{stmt.name}.{k}"
                edge = design.edges[tname][port]
                if edge.kind == "random":
                    pb = stream_pb.get((port, e))
                    values.append(tb_lane(pb.name, port, e, pb) if pb is not None else 0)
                    if pb is None:
                        hazards += 1
                else:
                    v = tap_now.get((tname, port))
                    if v is None or v[0] != e:
                        hazards += 1
                        if len(log) < 20:
                            log.append(f"cycle {t}: {stmt.name} reads element {e} of {tname} on tap {port}, tap carries {v}")
                        values.append(0)
                    else:
                        values.append(int(v[1]))
            result = fn(values)
            counts["pe_ops"] += 1
            out_tensor = stmt.write.tensor
            if stmt.accumulate:
                key = (stmt.name, wflat)
                accum[key] = _wrap(accum.get(key, 0) + result, stmt.dtype)
                if last_acc[stmt.name][wflat] != t:
                    continue
                result = accum.pop(key)
            landing.setdefault(t + design.latency[stmt.name], []).append((out_tensor, wflat, result))
        for name, n in word_access.items():
            counts["word_accesses"] += n
            if n > spec.tile_accesses_per_cycle:
                conflicts += n - spec.tile_accesses_per_cycle
        occ = [sum(len(l) for l in a.values()) for a in agg.values()]
        agg_peak = max([agg_peak] + occ)
        if any(o > spec.agg_words for o in occ):
            capacity += 1
        # TB occupancy, then drop the word of every visit that ended this cycle
        for key, words in tb.items():
            held = sum(1 for entry in words.values() if entry[0] <= t + lat_r)
            tb_peak = max(tb_peak, fw * held)
            if fw * held > spec.tb_words:
                capacity += 1
            w_end = tb_evict.get(key, {}).get(t)
            if w_end is not None:
                words.pop(w_end, None)
    mismatches = 0
    for name, arr in outputs.items():
        mismatches += int(np.count_nonzero(arr != golden[name]))
    return SimulationResult(last_cycle + 0, mismatches == 0, mismatches, int(conflicts), int(hazards), int(capacity),
                            peak_words, int(agg_peak), int(tb_peak), counts, log)


def _wrap(v: int, dtype: str) -> int:
    return _wrap_fn(dtype)(v)


def _memory_name(buffer: str, source: str) -> str:
    return buffer if source == "" else f"{buffer}@{source.split('.', 1)[1]}"


def _memory_source(design: Design, pb) -> str:
    if pb.memory == pb.buffer:
        return ""
    suffix = pb.memory.split("@", 1)[1]
    return f"{pb.buffer}.{suffix}"
