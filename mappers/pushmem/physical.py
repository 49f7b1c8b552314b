"""Physical buffers: memories split by banking, sized by storage minimisation, cut into tile fragments.

A *physical buffer* is one (memory, copy, bank): its write stream is the memory's write stream
restricted to the bank, its read streams the reads of the ports assigned to the copy, restricted to the
bank. Element e lives at bank-local address ``a(e) = lin(e) // N`` (row-major layout padded to
fw·N on the innermost dimension, :mod:`.storage`), in wide word ``w = a // fw`` and lane ``a mod fw``; the
circular buffer stores wide word ``w`` at ``w mod M`` with the smallest collision-free M (001:L280).
Chaining (001:L282-L287, Eqs. 5/6): ``tile = (w mod M) // C``, ``row = (w mod M) mod C`` with C the
tile's capacity in wide words. Memory-tile mapping packs the fragments with the shared bin-packing model.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from solvermap.formulations.problems.banking import Banking
from solvermap.formulations.problems.partition import BinType, Item, PartitionProblem
from solvermap.mappers.pushmem.ports import Memory, Stream
from solvermap.mappers.pushmem.storage import circular_modulus, linear_address, word_lifetimes


PORT_WINDOW = 16  # cycles over which SRAM port use is counted when packing buffers onto a tile


@dataclass(eq=False)
class PhysicalBuffer:
    name: str
    memory: str
    buffer: str
    shape: tuple[int, ...]
    banks: int
    alpha: tuple[int, ...]
    copy: int
    bank: int
    write: Stream
    reads: list[Stream]
    fw: int
    modulus: int = 0  # wide words
    fragments: list[str] = field(default_factory=list)
    source: str = ""  # the wire its AGG listens to: ROOT (the buffer's input) or the tap port feeding the memory
    tensor: str = ""  # the tensor whose values it holds
    version: int = 0  # which of the tensor's producers wrote them

    def address(self, elements: np.ndarray) -> np.ndarray:
        """Bank-local word address (before the circular modulus)."""
        return linear_address(self.shape, elements, self.fw, self.banks) // self.banks

    def word(self, elements: np.ndarray) -> np.ndarray:
        return self.address(elements) // self.fw

    def lane(self, elements: np.ndarray) -> np.ndarray:
        return self.address(elements) % self.fw

    @property
    def words(self) -> int:
        return self.modulus * self.fw

    def lifetimes(self):
        r_el = np.concatenate([r.elements for r in self.reads]) if self.reads else np.zeros(0, np.int64)
        r_t = np.concatenate([r.times for r in self.reads]) if self.reads else np.zeros(0, np.int64)
        return word_lifetimes(self.word(self.write.elements), self.write.times, self.word(r_el), r_t)

    def peak_accesses(self) -> int:
        t = np.concatenate([s.times for s in [self.write, *self.reads]])
        return int(np.unique(t, return_counts=True)[1].max()) if len(t) else 0


def _residue(shape, elements, alpha, n):
    idx = np.stack(np.unravel_index(elements, shape), axis=1)
    return np.mod(idx @ np.asarray(alpha, dtype=np.int64), n)


def physical_buffers(mems: list[Memory], banking: Banking, fw: int) -> list[PhysicalBuffer]:
    out = []
    for mem in mems:
        fn = banking.functions[mem.name]
        w_res = _residue(mem.shape, mem.write.elements, fn.alpha, fn.modulus)
        for c in range(fn.copies):
            for b in range(fn.modulus):
                sel = w_res == b
                write = Stream(mem.write.name, "write", mem.write.times[sel], mem.write.elements[sel])
                reads = []
                for i, r in enumerate(mem.reads, start=1):
                    if fn.port_copy.get(i, 0) != c:
                        continue
                    rs = _residue(mem.shape, r.elements, fn.alpha, fn.modulus) == b
                    if rs.any():
                        reads.append(Stream(r.name, "read", r.times[rs], r.elements[rs]))
                if not len(write.times):
                    continue
                suffix = ("" if fn.copies == 1 else f".c{c}") + ("" if fn.modulus == 1 else f".b{b}")
                out.append(PhysicalBuffer(mem.name + suffix, mem.name, mem.buffer, mem.shape, fn.modulus, fn.alpha, c, b,
                                          write, reads, fw, source=mem.source, tensor=mem.tensor or mem.buffer,
                                          version=mem.version))
    return out


def minimise_storage(buffers: list[PhysicalBuffer]) -> dict[str, int]:
    """Circular-buffer modulus (wide words) of every physical buffer (001:L280)."""
    out = {}
    for pb in buffers:
        ids, start, end = pb.lifetimes()
        pb.modulus = circular_modulus(ids, start, end)
        out[pb.name] = pb.modulus
    return out


def sram_accesses(pb: PhysicalBuffer) -> np.ndarray:
    """Cycles (before wide-fetch shifts) of a physical buffer's SRAM accesses: one write per wide word when
    its last lane has arrived, one fetch per visit (a run of reads of one word) of each read stream."""
    words = pb.word(pb.write.elements)
    ids, pos = np.unique(words, return_inverse=True)
    ready = np.full(len(ids), np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(ready, pos, pb.write.times)
    events = [ready + 1]
    for r in pb.reads:
        order = np.argsort(r.times, kind="stable")
        t, w = r.times[order], pb.word(r.elements[order])
        if len(t):
            events.append(t[np.r_[True, w[1:] != w[:-1]]])
    return np.sort(np.concatenate(events))


def port_duty(times: np.ndarray, window: int) -> float:
    """Most SRAM accesses in any ``window`` consecutive cycles, per cycle (1.0: the single port is full)."""
    if not len(times):
        return 0.0
    return float(np.max(np.searchsorted(times, times + window, side="left") - np.arange(len(times)))) / window


def memtile_problem(buffers: list[PhysicalBuffer], spec) -> PartitionProblem:
    """Fragments (chaining, Eqs. 5/6) as items; MEM tiles as bins (words, AGG/TB ports, accesses/cycle, and
    the single SRAM port: the fragments of one tile use it at most once per cycle over any window of
    :data:`PORT_WINDOW` cycles — the wide-fetch shifts can move an access only a few cycles, so two buffers
    that each keep the port busy cannot share it; assumption, the seed packs one buffer per tile, 001:L282).
    A buffer chained over several tiles counts its whole port use on each."""
    cap = spec.tile_words // spec.fetch_width
    items = []
    for pb in buffers:
        pb.fragments = []
        count = max(1, -(-pb.modulus // cap))
        duty = min(1.0, round(port_duty(sram_accesses(pb), PORT_WINDOW), 6))
        for f in range(count):
            rows = min(cap, pb.modulus - f * cap) if pb.modulus else 0
            name = pb.name if count == 1 else f"{pb.name}#{f}"
            pb.fragments.append(name)
            items.append(Item(name, {"words": float(rows * spec.fetch_width), "agg": 1.0, "tb": float(len(pb.reads)),
                                     "accesses": float(pb.peak_accesses()), "sram_port": duty}))
    tile = BinType("mem_tile", {"words": float(spec.tile_words), "agg": float(spec.tile_write_ports),
                                "tb": float(spec.tile_read_ports), "accesses": float(spec.tile_accesses_per_cycle),
                                "sram_port": 1.0},
                   count=spec.mem_tiles, cost=1.0)
    return PartitionProblem(tuple(items), (tile,), name="memtile")


def first_fit(problem: PartitionProblem):
    """Baseline: one tile per fragment in order, first fit on every resource (the seed maps each PUB to
    its own tiles and chains, 001:L282)."""
    from solvermap.formulations.problems.partition import PartitionDecision

    tile = problem.bin_types[0]
    loads: list[dict[str, float]] = []
    assignment = {}
    for item in problem.items:
        for b, load in enumerate(loads):
            if all(load.get(r, 0.0) + v <= tile.cap(r) for r, v in item.demand.items()):
                for r, v in item.demand.items():
                    load[r] = load.get(r, 0.0) + v
                assignment[item.name] = b
                break
        else:
            loads.append(dict(item.demand))
            assignment[item.name] = len(loads) - 1
    return PartitionDecision(assignment, {b: tile.name for b in range(len(loads))})


def one_per_tile(problem: PartitionProblem):
    from solvermap.formulations.problems.partition import PartitionDecision

    return PartitionDecision({it.name: i for i, it in enumerate(problem.items)},
                             {i: problem.bin_types[0].name for i in range(len(problem.items))})
