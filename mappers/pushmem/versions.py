"""Which write of a tensor every read sees: versions of a unified buffer with several producers (001:L218).

A tensor written by one statement is one unified buffer, as in the seed. A Halide reduction writes one
tensor from several statements, an init and one or more updates (``f(x) = 0; f(x) += g(x, r)``); each
producer's writes are a *version* of the tensor, and every read sees, element by element, the last write
before it in program order. The push-memory mapping gives each version its own buffer (named
``tensor~producer`` when a tensor has several producers, else just ``tensor``): its input port is its
producer's output, its output ports the reads that see it. Keeping versions apart is exact because the
versions of one element never share a live range in storage that has to be arbitrated: an update reads
the previous version of an element (the *carry*, at its first reduction step, into the PE accumulator,
001:L291) before it writes the next one.

What a program must satisfy (each refusal names the statement and tensor):

* a read sees one version over its whole domain (elements last written by one statement);
* an accumulating statement (``+=``) writes an element that depends on its data-parallel loops only,
  once per point of them, its reduction loops innermost (the PE accumulates in place); the elements it
  accumulates onto were all written by one earlier statement (its carry) or by none (the sum starts
  from zero, the golden model's initial value);
* no statement reads the tensor it writes (an update is written ``+=``) and no statement writes an input;
* every statement has a loop (the array streams loop nests).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from solvermap.errors import InputError
from solvermap.ir.loopnest import Program, Statement
from solvermap.mappers.pushmem.domains import flat, grid

MAX_VERSIONS = 255  # the version field of a value tag (hardware/pushmem/config.py)


@dataclass(frozen=True)
class Version:
    tensor: str
    producer: str  # the statement whose writes this version is
    index: int  # position among the tensor's producers (the tag's version field)
    buffer: str  # unified-buffer name


@dataclass(frozen=True, eq=False)
class Versions:
    """The version each write makes and each read sees, for one program."""

    of_write: dict[str, Version]  # statement → the version it writes
    reads: dict[tuple[str, int], Version]  # (statement, read index) → the version read (non-input tensors)
    carry: dict[str, Version]  # accumulating statement → the version its accumulator starts from
    final: dict[str, np.ndarray] = field(default_factory=dict)  # statement → per point: its write is the last one

    def by_buffer(self) -> dict[str, Version]:
        return {v.buffer: v for v in self.of_write.values()}


def reduction_loops(stmt: Statement) -> list[int]:
    return [j for j, loop in enumerate(stmt.loops) if loop.kind == "reduction"]


def first_step(stmt: Statement, points: list[np.ndarray]) -> np.ndarray:
    """Per point: the first step of its reduction (every point when the statement has no reduction loop)."""
    red = reduction_loops(stmt)
    n = len(points[0]) if points else 1
    if not red:
        return np.ones(n, dtype=bool)
    return np.all([points[j] == stmt.loops[j].lo for j in red], axis=0)


def last_step(stmt: Statement, points: list[np.ndarray]) -> np.ndarray:
    red = reduction_loops(stmt)
    n = len(points[0]) if points else 1
    if not red:
        return np.ones(n, dtype=bool)
    return np.all([points[j] == stmt.loops[j].hi - 1 for j in red], axis=0)


def _check_accumulation(program: Program, stmt: Statement, written: np.ndarray, source: str) -> None:
    red = reduction_loops(stmt)
    if red and red != list(range(len(stmt.loops) - len(red), len(stmt.loops))):
        raise InputError(source, f"statement '{stmt.name}'", "reduction loops must be innermost (the PE accumulates in place)")
    if any(row[j] for row in stmt.write.coeffs for j in red):
        raise InputError(source, f"statement '{stmt.name}'",
                         f"writes {stmt.write.text()}, which moves with a reduction loop; an update writes one element "
                         "per point of its data-parallel loops")
    pure = int(np.prod([stmt.loops[j].extent for j in range(len(stmt.loops)) if j not in red])) if stmt.loops else 1
    if len(np.unique(written)) != pure:
        raise InputError(source, f"statement '{stmt.name}'",
                         f"writes {stmt.write.text()} more than once per point of its data-parallel loops; give the "
                         "accumulation reduction loops instead")


def analyse(program: Program) -> Versions:
    """Versions of every tensor, the version each read sees and each accumulator's carry (see module doc)."""
    source = program.source or program.name
    producers: dict[str, list[Statement]] = {}
    for s in program.statements:
        if not s.loops:
            raise InputError(source, f"statement '{s.name}'", "has no loop; the push-memory array streams loop nests "
                                                               "(give it a loop of extent 1)")
        producers.setdefault(s.write.tensor, []).append(s)
    of_write: dict[str, Version] = {}
    for tensor, stmts in producers.items():
        if program.tensor(tensor).role == "input":
            raise InputError(source, f"statement '{stmts[0].name}'", f"writes input tensor '{tensor}'")
        if len(stmts) > MAX_VERSIONS:
            raise InputError(source, f"tensor '{tensor}'", f"{len(stmts)} producers, more than {MAX_VERSIONS}")
        for i, s in enumerate(stmts):
            of_write[s.name] = Version(tensor, s.name, i, tensor if len(stmts) == 1 else f"{tensor}~{s.name}")
    writer = {t: np.full(program.tensor(t).size, -1, dtype=np.int64) for t in producers}
    order = {s.name: i for i, s in enumerate(program.statements)}
    reads: dict[tuple[str, int], Version] = {}
    carry: dict[str, Version] = {}
    last_point: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for s in program.statements:
        points = grid(s)
        for k, acc in enumerate(s.reads):
            if program.tensor(acc.tensor).role == "input":
                continue
            if acc.tensor == s.write.tensor:
                raise InputError(source, f"statement '{s.name}'",
                                 f"reads '{acc.tensor}', the tensor it writes; write an update as op += (accumulate)")
            seen = writer.get(acc.tensor, np.full(program.tensor(acc.tensor).size, -1))[flat(program, acc, points)]
            if (seen < 0).any():
                raise InputError(source, f"statement '{s.name}'",
                                 f"reads elements of '{acc.tensor}' that no earlier statement writes ({acc.text()})")
            if (seen != seen[0]).any():
                a, b = (program.statements[int(i)].name for i in np.unique(seen)[:2])
                raise InputError(source, f"statement '{s.name}'",
                                 f"reads {acc.text()}, whose elements were last written by '{a}' and '{b}'; a read must "
                                 "see one producer's writes (split it)")
            reads[(s.name, k)] = of_write[program.statements[int(seen[0])].name]
        written = flat(program, s.write, points)
        if s.accumulate:
            _check_accumulation(program, s, written, source)
            before = writer[s.write.tensor][written]
            if (before >= 0).any():
                if (before != before[0]).any():
                    raise InputError(source, f"statement '{s.name}'",
                                     f"accumulates onto elements of '{s.write.tensor}' that were last written by different "
                                     "statements (or partly by none)")
                carry[s.name] = of_write[program.statements[int(before[0])].name]
        writer[s.write.tensor][written] = order[s.name]
        last_point[s.name] = (written, last_step(s, points) if s.accumulate else np.ones(len(written), dtype=bool))
    final = {s.name: (writer[s.write.tensor][last_point[s.name][0]] == order[s.name]) & last_point[s.name][1]
             for s in program.statements}
    return Versions(of_write, reads, carry, final)
