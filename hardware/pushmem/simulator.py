"""Cycle-level simulator of a configured push-memory CGRA (seed 001 Sec. IV, 001:L138, L150-L190, L299-L301).

It executes a :class:`~solvermap.hardware.pushmem.config.Configuration` — the programs of every kernel,
global-buffer stream, shift register, AGG, SRAM port and TB — cycle by cycle, moves every value through the
simulated wires, registers and SRAM rows, and checks the output tensors bit-exactly against the NumPy
golden model (001:L331 validates output images across backends). It never sees the schedule: the cycle
count is the simulation's own clock.

Timing. Two clocks: the *array cycle* advances only when the array runs; the *wall cycle* counts every
cycle. Inside the accelerator nothing stalls — "stalls and variable-latency execution are not permitted"
(001:L138) — so every unit fires at its programmed array cycle, and a resource used beyond its limit or a
value that is not there is an error (a hazard), not a wait. The one place the hardware waits is the
boundary to the global buffer: "If the computation on the current tile completes before the next tile is
brought into the global buffer, the whole CGRA is stalled until the data tile becomes available"
(001:L301). The global buffer holds ``glb_slots`` tiles of every tiled input tensor (double-buffered,
001:L301); tile 0 and untiled inputs are loaded before reset (001:L138); tile k is loaded from DRAM at
``dram_words_per_cycle`` once tile k−1 is loaded and tile k−slots has been streamed out, and is available
when complete. An array cycle whose global-buffer reads need a tile that is not available is not
executed: the whole array (pipelines, shift registers, controllers) holds and the wall clock advances.
Outputs drain into the global buffer without back-pressure (assumption: the seed names no output stall).
``cycles`` is the wall cycle in which the last output value is written, stalls included (the schedule's
completion convention: 0-based cycle of the last result).

Hazards (stable names; each is an error of a statically scheduled design, 001:L138):

* ``read-before-write``: a kernel operand, an AGG capture or a TB lane needs an element whose producer
  has not produced it yet.
* ``operand-mismatch``: a kernel operand wire carries another element than the kernel's access map
  requires at that firing (wrong tap delay, wrong start, wrong route).
* ``capture-mismatch``: an AGG or a global-buffer output stream captures another element than programmed.
* ``stale-read``: a TB lane holds another element than programmed although it was produced: the SRAM row
  was overwritten or aliased.
* ``pe-conflict``: a kernel programmed to fire twice in one cycle.
* ``sram-port-conflict``: more than one SRAM access (AGG write or TB fetch) on one single-port tile in a
  cycle (001:L160-L164).
* ``tile-bandwidth``: more word accesses (AGG lane captures + TB lane emits) on one MEM tile in a cycle
  than ``tile_accesses_per_cycle`` (001:L248).
* ``tile-ports``: more AGG or TB streams on one MEM tile than its input/output ports (001:L164, Fig. 4).
* ``tile-overflow``: a buffer's addresses run past its chained tiles, or fragments exceed a tile's words.
* ``overwrite-live``: an SRAM write replaces a word that still has reads to come (a circular buffer too
  small, 001:L280).
* ``agg-overflow`` / ``tb-overflow``: an AGG or TB holds more words than its capacity (001:L160).
* ``agg-incomplete``: a wide word written to SRAM before all its lanes reached the AGG.
* ``tb-underflow``: a TB lane emitted from a word the TB does not hold (not fetched yet, or released).
* ``sr-too-long``: a shift register longer than ``max_shift_register`` stages.
* ``missing-output``: an output element never captured.
* ``glb-slots``: the array needs a tile while more than ``glb_slots`` tiles are still being read.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from solvermap.hardware.pushmem.config import TAG_SHIFT, VERSION_BITS, Configuration, Memory
from solvermap.ir.loopnest import NUMPY_DTYPES, Cast, Const, Load, evaluate

HAZARDS = ("read-before-write", "operand-mismatch", "capture-mismatch", "stale-read", "pe-conflict",
           "sram-port-conflict", "tile-bandwidth", "tile-ports", "tile-overflow", "overwrite-live", "agg-overflow",
           "tb-overflow", "agg-incomplete", "tb-underflow", "sr-too-long", "missing-output", "glb-slots")
_PORT = ("sram-port-conflict", "tile-bandwidth", "tile-ports", "pe-conflict")
_CAPACITY = ("tile-overflow", "overwrite-live", "agg-overflow", "tb-overflow", "sr-too-long", "glb-slots")
_DATA = ("read-before-write", "operand-mismatch", "capture-mismatch", "stale-read", "agg-incomplete", "tb-underflow",
         "missing-output")


@dataclass
class SimulationResult:
    cycles: int  # wall cycle of the last output write, stalls included
    array_cycles: int  # array cycle of the last output write (the cycles the array ran)
    stall_cycles: int  # wall cycles the whole array waited for the global buffer
    bit_exact: bool
    mismatches: int
    hazards: dict[str, int]  # name → occurrences (names in HAZARDS)
    peak_words: dict[str, int]  # memory → peak live SRAM words
    agg_peak: int
    tb_peak: int
    counts: dict[str, int] = field(default_factory=dict)  # pe_ops, sram_accesses, word_accesses, sr_shifts
    hazard_log: list[str] = field(default_factory=list)  # the first occurrences of each hazard

    @property
    def sram_words(self) -> int:
        return int(sum(self.peak_words.values()))

    @property
    def port_conflicts(self) -> int:
        return sum(self.hazards.get(k, 0) for k in _PORT)

    @property
    def capacity_violations(self) -> int:
        return sum(self.hazards.get(k, 0) for k in _CAPACITY)

    @property
    def data_hazards(self) -> int:
        return sum(self.hazards.get(k, 0) for k in _DATA)

    def to_json(self) -> dict[str, Any]:
        return {"cycles": self.cycles, "array_cycles": self.array_cycles, "stall_cycles": self.stall_cycles,
                "bit_exact": self.bit_exact, "mismatches": self.mismatches,
                "hazards": {k: v for k, v in self.hazards.items() if v}, "peak_words": self.peak_words,
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


_OPS = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "and": lambda a, b: a & b, "or": lambda a, b: a | b,
}


def compile_expr(expr, dtype: str):
    """A function of the operand values (in ``loads`` order) that reproduces ``loopnest.evaluate``."""

    def build(e, context: str):
        wrap = _wrap_fn(context)
        np_dtype = np.dtype(NUMPY_DTYPES[context])
        integer, bits = bool(np.issubdtype(np_dtype, np.integer)), np_dtype.itemsize * 8
        if isinstance(e, Const):
            c = wrap(e.value)
            return lambda ops: c
        if isinstance(e, Load):
            return lambda ops: wrap(next(ops))
        if isinstance(e, Cast):
            inner, w2 = build(e.arg, e.dtype), _wrap_fn(e.dtype)
            return lambda ops: w2(inner(ops))
        args = [build(a, context) for a in e.args]
        op = e.op
        if op in _OPS:
            f, a0, a1 = _OPS[op], args[0], args[1]
            return lambda ops: wrap(f(a0(ops), a1(ops)))
        if op == "div" and not integer:
            def true_div(ops):
                with np.errstate(divide="ignore", invalid="ignore"):
                    return wrap(np.divide(np.float64(args[0](ops)), np.float64(args[1](ops))))
            return true_div
        if op == "div":
            def div(ops):
                a, b = args[0](ops), args[1](ops)
                return wrap(a // b) if b != 0 else 0
            return div
        if op in ("shr", "shl"):  # NumPy's shifts: a count outside [0, bits) shifts every bit out
            a0, a1, right = args[0], args[1], op == "shr"

            def shift(ops):
                a, b = a0(ops), a1(ops)
                if 0 <= b < bits:
                    return wrap(a >> b if right else a << b)
                return -1 if right and a < 0 else 0
            return shift
        if op == "max":
            return lambda ops: max(args[0](ops), args[1](ops))
        if op == "min":
            return lambda ops: min(args[0](ops), args[1](ops))
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

    fn = build(expr, dtype)
    return lambda values: fn(iter(values))


# ------------------------------------------------------------------ the simulator


class _Timeline:
    """Firings of several units merged by cycle — (unit, firing index) — handed out cycle by cycle.

    The merged arrays stay NumPy; only a window of them is turned into Python lists at a time, so a run of
    millions of firings keeps few Python objects alive."""

    WINDOW = 1 << 15

    def __init__(self, streams: list[tuple[np.ndarray, int]]):
        if streams:
            times = np.concatenate([t for t, _ in streams])
            order = np.argsort(times, kind="stable")
            self.times = times[order]
            self.unit = np.concatenate([np.full(len(t), u, dtype=np.int32) for t, u in streams])[order]
            self.index = np.concatenate([np.arange(len(t), dtype=np.int64) for t, _ in streams])[order]
        else:
            self.times = np.zeros(0, dtype=np.int64)
            self.unit = self.index = self.times
        self._start, self._cursor = 0, 0
        self._t: list[int] = []
        self._u: list[int] = []
        self._i: list[int] = []

    @property
    def first(self) -> int | None:
        return int(self.times[0]) if len(self.times) else None

    @property
    def last(self) -> int | None:
        return int(self.times[-1]) if len(self.times) else None

    def at(self, cycle: int):
        """The (unit, index) pairs firing at ``cycle``; cycles must be asked in increasing order."""
        while True:
            if self._cursor == len(self._t):
                start = self._start + len(self._t)
                if start >= len(self.times):
                    return
                end = start + self.WINDOW
                self._start, self._cursor = start, 0
                self._t, self._u, self._i = (self.times[start:end].tolist(), self.unit[start:end].tolist(),
                                             self.index[start:end].tolist())
            if self._t[self._cursor] != cycle:
                return
            yield self._u[self._cursor], self._i[self._cursor]
            self._cursor += 1


class _Hazards:
    def __init__(self, log_per_kind: int = 3):
        self.counts = {k: 0 for k in HAZARDS}
        self.log: list[str] = []
        self._logged = {k: 0 for k in HAZARDS}
        self._limit = log_per_kind

    def __call__(self, kind: str, cycle: int, unit: str, detail: str, n: int = 1) -> None:
        self.counts[kind] += n
        if self._logged[kind] < self._limit:
            self._logged[kind] += 1
            self.log.append(f"{kind} at array cycle {cycle} in {unit}: {detail}")


class _Addresses:
    """The AG of a memory: wide word → (tile, row) by the circular modulus and chaining (001:L280-L287)."""

    def __init__(self, mem: Memory, rows_per_tile: int):
        self.mem, self.rows = mem, rows_per_tile

    def of(self, words: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        slot = np.mod(words, max(1, self.mem.modulus))
        frag = slot // self.rows
        ok = frag < len(self.mem.fragments)
        frag_c = np.minimum(frag, len(self.mem.fragments) - 1)
        tiles = np.array([t for t, _ in self.mem.fragments], dtype=np.int64)[frag_c]
        base = np.array([b for _, b in self.mem.fragments], dtype=np.int64)[frag_c]
        row = base + slot % self.rows
        return tiles, row, ok & (row < self.rows)


def _load_checks(config: Configuration, hazard: _Hazards) -> None:
    lim = config.limits
    rows = lim.tile_words // max(1, config.memories[0].fetch_width) if config.memories else 0
    used: dict[int, int] = {}
    agg: dict[int, int] = {}
    tb: dict[int, int] = {}
    for mem in config.memories:
        for f, (tile, base) in enumerate(mem.fragments):
            n = min(rows, mem.modulus - f * rows)
            used[tile] = max(used.get(tile, 0), base + n)
            agg[tile] = agg.get(tile, 0) + len(mem.writes)
            tb[tile] = tb.get(tile, 0) + len(mem.reads)
        if mem.modulus > rows * len(mem.fragments):
            hazard("tile-overflow", 0, mem.name, f"{mem.modulus} wide words on {len(mem.fragments)} tile(s) of {rows}")
    for tile, n in used.items():
        if n > rows:
            hazard("tile-overflow", 0, f"tile {tile}", f"fragments reach row {n} of {rows}")
    for tile in agg:
        if agg[tile] > lim.tile_write_ports or tb[tile] > lim.tile_read_ports:
            hazard("tile-ports", 0, f"tile {tile}", f"{agg[tile]} AGG / {tb[tile]} TB streams on "
                   f"{lim.tile_write_ports} input / {lim.tile_read_ports} output ports")
    for tap in config.taps:
        if tap.kind == "sr" and tap.delay > lim.max_shift_register:
            hazard("sr-too-long", 0, tap.name, f"{tap.delay} stages > {lim.max_shift_register}")


class _GlobalBuffer:
    """Tiles of the input tensors in the double-buffered global buffer, loaded from DRAM (001:L299-L301)."""

    def __init__(self, config: Configuration, hazard: _Hazards):
        lim = config.limits
        self.slots = max(1, lim.glb_slots)
        program = config.program
        words, self.tiles = 0.0, 1
        tile_of_firing: dict[str, np.ndarray] = {}
        for gi in config.inputs:
            if gi.tile_dim is None:
                continue
            shape = program.tensor(gi.tensor).shape
            tile_of_firing[gi.name] = np.unravel_index(gi.program.elements, shape)[gi.tile_dim]
            self.tiles = max(self.tiles, shape[gi.tile_dim])
        seen = set()
        for gi in config.inputs:
            if gi.tile_dim is not None and gi.tensor not in seen:
                seen.add(gi.tensor)
                shape = program.tensor(gi.tensor).shape
                words += int(np.prod(shape)) / shape[gi.tile_dim]
        rate = lim.dram_words_per_cycle
        self.load_cycles = math.ceil(words / rate) if rate > 0 and words else 0
        # per array cycle: the highest tile read; per tile: its last array cycle
        need: dict[int, int] = {}
        self.last_read = [-1] * self.tiles
        for gi in config.inputs:
            tiles = tile_of_firing.get(gi.name)
            if tiles is None:
                continue
            for t, k in zip(gi.program.times.tolist(), tiles.tolist()):
                if need.get(t, -1) < k:
                    need[t] = k
                if self.last_read[k] < t:
                    self.last_read[k] = t
        self.need = need
        self.ends: dict[int, list[int]] = {}
        for k, last in enumerate(self.last_read):
            self.ends.setdefault(last, []).append(k)
        self.available = [0] + [None] * (self.tiles - 1)  # wall cycle each tile is complete
        self.freed: list[int | None] = [None] * self.tiles  # wall cycle after its last read
        self.hazard = hazard

    def ready_at(self, k: int, cycle: int) -> int:
        """Wall cycle at which tile k is available (computing the DRAM loads up to k)."""
        for j in range(1, k + 1):
            if self.available[j] is not None:
                continue
            start = self.available[j - 1]
            if j - self.slots >= 0:
                freed = self.freed[j - self.slots]
                if freed is None:  # tile j needed while an older tile still occupies its slot: deadlock
                    self.hazard("glb-slots", cycle, "global buffer",
                                f"tile {j} needed before tile {j - self.slots} was streamed out ({self.slots} slots)")
                    freed = start
                start = max(start, freed)
            self.available[j] = start + self.load_cycles
        return self.available[k]

    def read(self, array_cycle: int, wall: int) -> None:
        for k in self.ends.get(array_cycle, ()):
            self.freed[k] = wall + 1


def simulate(config: Configuration, inputs: dict[str, np.ndarray],
             reference: dict[str, np.ndarray] | None = None) -> SimulationResult:
    """Run ``config`` on ``inputs``; outputs are compared with ``reference`` (default: the golden model of the
    configured program; a mapper that rewrote the program passes the outputs of the program as written)."""
    program, lim = config.program, config.limits
    hazard = _Hazards()
    _load_checks(config, hazard)
    golden = reference if reference is not None else evaluate(program, inputs)
    tid = config.tensor_ids()
    names = sorted(program.tensors)
    input_ids = {tid[t.name] for t in program.inputs}

    tensor_shift = TAG_SHIFT + VERSION_BITS

    def tags(tensor: str, elements: np.ndarray, version: int = 0) -> np.ndarray:
        return ((tid[tensor] << tensor_shift) + (int(version) << TAG_SHIFT)) + np.asarray(elements, dtype=np.int64)

    def name_of(tag: int) -> str:
        version = (tag >> TAG_SHIFT) & ((1 << VERSION_BITS) - 1)
        return f"{names[tag >> tensor_shift]}[{tag & ((1 << TAG_SHIFT) - 1)}]" + (f" (write {version + 1})" if version else "")

    produced: dict[int, int] = {}  # tag → array cycle its kernel drove it onto a wire

    def missing(tag: int, cycle: int) -> bool:
        """True when the element has not been produced yet (inputs are always there)."""
        if tag >> tensor_shift in input_ids:
            return False
        t = produced.get(tag)
        return t is None or t > cycle

    # ---- kernels: per firing, the operand tags (one row) and the output tag
    kernels = config.kernels
    k_fn = [compile_expr(k.expr, k.dtype) for k in kernels]
    k_wrap = [_wrap_fn(k.dtype) for k in kernels]
    k_wires = [[op.wire for op in k.operands] for k in kernels]
    k_want = [np.stack([tags(op.tensor, op.elements, op.version) for op in k.operands], axis=1) if k.operands
              else np.zeros((len(k.issue), 0), dtype=np.int64) for k in kernels]
    k_out = [tags(k.output, k.out_elements, k.version) for k in kernels]
    k_store = [_wrap_fn(program.tensor(k.output).dtype) for k in kernels]  # the written tensor's dtype
    k_carry = [(k.carry.wire, tags(k.carry.tensor, k.carry.elements, k.carry.version)) if k.carry is not None else None
               for k in kernels]
    k_acc: list[int] = [0] * len(kernels)
    k_prev: list[int | None] = [None] * len(kernels)
    issue = _Timeline([(k.issue, i) for i, k in enumerate(kernels)])

    # ---- global-buffer streams
    gin = config.inputs
    gin_tags = [tags(g.tensor, g.program.elements) for g in gin]
    gin_vals = [np.asarray(inputs[g.tensor]).astype(NUMPY_DTYPES[program.tensor(g.tensor).dtype]).ravel()[g.program.elements]
                for g in gin]  # in the input's dtype; .item() gives the Python int or float a wire carries
    gin_ev = _Timeline([(g.program.times, i) for i, g in enumerate(gin)])
    outputs = {t.name: np.zeros(t.shape, dtype=NUMPY_DTYPES[t.dtype]) for t in program.outputs}
    gout = config.outputs
    gout_tags = [tags(g.tensor, g.program.elements, g.version) for g in gout]
    gout_ev = _Timeline([(g.program.times, i) for i, g in enumerate(gout)])
    captured = {g.tensor: np.zeros(program.tensor(g.tensor).size, dtype=bool) for g in gout}

    # ---- taps
    sr = {t.name: deque([None] * t.delay) for t in config.taps if t.kind == "sr"}
    sr_stages = sum(t.delay for t in config.taps if t.kind == "sr")
    taps = [(t.name, t.source, t.kind == "sr") for t in config.taps]

    # ---- memories: per stream, the tile of every lane access and the (tile, row) of every SRAM access
    fw = config.memories[0].fetch_width if config.memories else 1
    rows = lim.tile_words // fw
    mems = config.memories
    writes, reads = [], []  # (memory index, stream, lane tiles, lane tags, sram tiles, sram rows, sram ok)
    sram_programs = []  # (cycles, unit): unit ≥ 0 a write stream, < 0 a read stream
    last_fetch: list[np.ndarray] = []  # per memory and word: the last SRAM → TB fetch (−1: never read)
    lanes_per_word: list[np.ndarray] = []
    for m, mem in enumerate(mems):
        ag = _Addresses(mem, rows)
        top = max([int(x.max()) for st in (*mem.writes, *mem.reads) for x in (st.words, st.sram_words) if len(x)] + [0])
        last = np.full(top + 1, -1, dtype=np.int64)
        for ws in mem.writes:
            s_tile, s_row, s_ok = ag.of(ws.sram_words)
            writes.append((m, ws, ag.of(ws.words)[0], tags(mem.tensor, ws.lanes.elements, mem.version), s_tile, s_row, s_ok))
            lanes_per_word.append(np.bincount(ws.words, minlength=top + 1))
            sram_programs.append((ws.sram_times, len(writes) - 1))
        for rs in mem.reads:
            s_tile, s_row, s_ok = ag.of(rs.sram_words)
            reads.append((m, rs, ag.of(rs.words)[0], tags(mem.tensor, rs.lanes.elements, mem.version), s_tile, s_row, s_ok))
            sram_programs.append((rs.sram_times, -len(reads)))
            np.maximum.at(last, rs.sram_words, rs.sram_times)
        last_fetch.append(last)
    agg_ev = _Timeline([(w[1].lanes.times, i) for i, w in enumerate(writes)])
    tb_ev = _Timeline([(r[1].lanes.times, i) for i, r in enumerate(reads)])
    sram_ev = _Timeline(sram_programs)
    agg: list[dict[int, dict[int, tuple[int, int]]]] = [dict() for _ in writes]
    agg_held = [0] * len(writes)
    tb: list[dict[int, tuple[int, list, list]]] = [dict() for _ in reads]
    sram: dict[tuple[int, int], tuple[list, list, int, int]] = {}  # (tile, row) → data, tags, memory, word
    live: list[set] = [set() for _ in mems]
    peak_words = {mem.name: 0 for mem in mems}
    agg_peak = tb_peak = 0
    counts = {"pe_ops": 0, "sram_accesses": 0, "word_accesses": 0, "sr_shifts": 0}

    glb = _GlobalBuffer(config, hazard)
    pipe: dict[int, list] = {}
    stalls = 0
    last_out_array = last_out_wall = -1
    timelines = (issue, gin_ev, gout_ev, agg_ev, tb_ev, sram_ev)
    begin = min([0] + [tl.first for tl in timelines if tl.first is not None])  # a broken program may fire before reset
    horizon = max([0] + [int(k.issue.max()) + k.latency for k in kernels if len(k.issue)]
                  + [tl.last for tl in timelines if tl.last is not None])

    for t in range(begin, horizon + 1):
        # 0. global buffer: the whole array waits until the tiles this cycle reads are loaded (001:L301)
        need = glb.need.get(t)
        if need is not None and need > 0:
            ready = glb.ready_at(need, t)
            if ready > t + stalls:
                stalls = ready - t
        wall = t + stalls
        wires: dict[str, tuple[int, int]] = {}
        # 1. kernel pipelines deliver
        for wire, tag, value in pipe.pop(t, ()):
            wires[wire] = (tag, value)
            produced[tag] = t
        # 2. global-buffer output streams capture
        for g, i in gout_ev.at(t):
            got, want = wires.get(gout[g].wire), int(gout_tags[g][i])
            last_out_array, last_out_wall = t, wall
            if got is None or got[0] != want:
                hazard("read-before-write" if missing(want, t) else "capture-mismatch", t, f"output {gout[g].tensor}",
                       f"wants {name_of(want)}, wire carries {name_of(got[0]) if got else 'nothing'}")
                continue
            element = int(gout[g].program.elements[i])
            outputs[gout[g].tensor].flat[element] = got[1]
            captured[gout[g].tensor][element] = True
        # 3. global-buffer input streams drive their wires
        for g, i in gin_ev.at(t):
            wires[gin[g].name] = (int(gin_tags[g][i]), gin_vals[g][i].item())
        glb.read(t, wall)
        # 4. SRAM port: AGG → SRAM writes, SRAM → TB fetches; one access per tile per cycle
        per_tile: dict[int, int] = {}
        fetched: list[int] = []
        for unit, i in sram_ev.at(t):
            counts["sram_accesses"] += 1
            if unit >= 0:
                m, ws, _, _, s_tile, s_row, s_ok = writes[unit]
                tile, row, word = int(s_tile[i]), int(s_row[i]), int(ws.sram_words[i])
                per_tile[tile] = per_tile.get(tile, 0) + 1
                lanes = agg[unit].pop(word, {})
                agg_held[unit] -= len(lanes)
                if len(lanes) < lanes_per_word[unit][word]:
                    hazard("agg-incomplete", t, ws.name, f"word {word} written with {len(lanes)} of "
                           f"{lanes_per_word[unit][word]} lanes")
                if not s_ok[i]:
                    hazard("tile-overflow", t, mems[m].name, f"word {word} has no row on the chained tiles")
                    continue
                old = sram.get((tile, row))
                if old is not None and (old[2], old[3]) != (m, word) and old[3] in live[old[2]]:
                    hazard("overwrite-live", t, mems[m].name, f"word {word} overwrites word {old[3]} of "
                           f"{mems[old[2]].name} (tile {tile} row {row}), still fetched at cycle "
                           f"{last_fetch[old[2]][old[3]]}")
                    live[old[2]].discard(old[3])
                data, tg = [0] * fw, [-1] * fw
                for lane, (tag, value) in lanes.items():
                    data[lane], tg[lane] = value, tag
                sram[(tile, row)] = (data, tg, m, word)
                if last_fetch[m][word] > t:
                    live[m].add(word)
                    peak_words[mems[m].name] = max(peak_words[mems[m].name], fw * len(live[m]))
            else:
                r = -unit - 1
                m, rs, _, _, s_tile, s_row, s_ok = reads[r]
                tile, row, word = int(s_tile[i]), int(s_row[i]), int(rs.sram_words[i])
                per_tile[tile] = per_tile.get(tile, 0) + 1
                entry = sram.get((tile, row)) if s_ok[i] else None
                if entry is None or entry[2] != m or entry[3] != word:
                    tb[r][word] = (t + lim.sram_read_latency, [0] * fw, [-1] * fw)
                else:
                    tb[r][word] = (t + lim.sram_read_latency, list(entry[0]), list(entry[1]))
                fetched.append(r)
                if last_fetch[m][word] == t:
                    live[m].discard(word)
        for tile, n in per_tile.items():
            if n > 1:
                hazard("sram-port-conflict", t, f"tile {tile}", f"{n} SRAM accesses in one cycle", n - 1)
        # 5. TB lanes drive their wires
        word_access: dict[int, int] = {}
        for r, i in tb_ev.at(t):
            m, rs, lane_tiles, want_tags = reads[r][:4]
            tile, word, lane, want = int(lane_tiles[i]), int(rs.words[i]), int(rs.lane[i]), int(want_tags[i])
            word_access[tile] = word_access.get(tile, 0) + 1
            entry = tb[r].get(word)
            if entry is None or entry[0] > t:
                hazard("tb-underflow", t, rs.name, f"lane {lane} of word {word} ({name_of(want)}) not in the TB")
            elif entry[2][lane] != want:
                hazard("read-before-write" if missing(want, t) else "stale-read", t, rs.name,
                       f"wants {name_of(want)}, TB lane holds {name_of(entry[2][lane]) if entry[2][lane] >= 0 else 'nothing'}")
            else:
                wires[rs.name] = (want, entry[1][lane])
            if rs.release[i]:
                tb[r].pop(word, None)
        for r in fetched:  # TB occupancy after this cycle's releases
            held = fw * len(tb[r])
            tb_peak = max(tb_peak, held)
            if held > lim.tb_words:
                hazard("tb-overflow", t, f"TB of {reads[r][1].name}", f"{held} words > {lim.tb_words}")
        # 6. wires and shift registers (each shifts every array cycle)
        for name, source, is_sr in taps:
            value = wires.get(source)
            if is_sr:
                q = sr[name]
                q.append(value)
                value = q.popleft()
            if value is not None:
                wires[name] = value
        counts["sr_shifts"] += sr_stages
        # 7. AGG captures
        for unit, i in agg_ev.at(t):
            m, ws, lane_tiles, want_tags = writes[unit][:4]
            tile, word, lane, want = int(lane_tiles[i]), int(ws.words[i]), int(ws.lane[i]), int(want_tags[i])
            word_access[tile] = word_access.get(tile, 0) + 1
            got = wires.get(ws.source)
            if got is None or got[0] != want:
                hazard("read-before-write" if missing(want, t) else "capture-mismatch", t, f"AGG of {ws.name}",
                       f"wants {name_of(want)}, wire carries {name_of(got[0]) if got else 'nothing'}")
                got = (-1, 0)
            slot = agg[unit].setdefault(word, {})
            agg_held[unit] += lane not in slot
            slot[lane] = got
            if agg_held[unit] > lim.agg_words:
                hazard("agg-overflow", t, f"AGG of {ws.name}", f"{agg_held[unit]} words held > {lim.agg_words}")
            agg_peak = max(agg_peak, agg_held[unit])
        # 8. kernels fire
        for k, i in issue.at(t):
            kern = kernels[k]
            if k_prev[k] == t:
                hazard("pe-conflict", t, kern.name, "two firings in one cycle")
            k_prev[k] = t
            values = []
            for wire, want in zip(k_wires[k], k_want[k][i].tolist()):
                got = wires.get(wire)
                if got is None or got[0] != want:
                    hazard("read-before-write" if missing(want, t) else "operand-mismatch", t, kern.name,
                           f"wants {name_of(want)} on {wire}, it carries {name_of(got[0]) if got else 'nothing'}")
                    values.append(0)
                else:
                    values.append(got[1])
            result = k_fn[k](values)
            counts["pe_ops"] += 1
            if kern.last is not None:
                if kern.first[i]:
                    start = 0
                    if k_carry[k] is not None:  # the accumulator starts from the element's previous value
                        wire, want = k_carry[k][0], int(k_carry[k][1][i])
                        got = wires.get(wire)
                        if got is None or got[0] != want:
                            hazard("read-before-write" if missing(want, t) else "operand-mismatch", t, kern.name,
                                   f"carry wants {name_of(want)} on {wire}, it carries {name_of(got[0]) if got else 'nothing'}")
                        else:
                            start = k_wrap[k](got[1])
                    k_acc[k] = k_wrap[k](start + result)
                else:
                    k_acc[k] = k_wrap[k](k_acc[k] + result)
                if not kern.last[i]:
                    continue
                result = k_acc[k]
            pipe.setdefault(t + kern.latency, []).append((kern.wire, int(k_out[k][i]), k_store[k](result)))
        # 9. word accesses per tile
        for tile, n in word_access.items():
            counts["word_accesses"] += n
            if n > lim.tile_accesses_per_cycle:
                hazard("tile-bandwidth", t, f"tile {tile}", f"{n} word accesses > {lim.tile_accesses_per_cycle}",
                       n - lim.tile_accesses_per_cycle)

    for g in gout:
        lost = int(len(g.program)) - int(captured[g.tensor][g.program.elements].sum())
        if lost:
            hazard("missing-output", last_out_array, f"output {g.tensor}", f"{lost} elements never captured", lost)
    mismatches = sum(int(np.count_nonzero(arr != golden[name])) for name, arr in outputs.items())
    return SimulationResult(
        cycles=int(last_out_wall), array_cycles=int(last_out_array), stall_cycles=int(last_out_wall - last_out_array),
        bit_exact=mismatches == 0, mismatches=mismatches, hazards=hazard.counts, peak_words=peak_words,
        agg_peak=int(agg_peak), tb_peak=int(tb_peak), counts=counts, hazard_log=hazard.log)
