"""A tensorized loop nest as plain data: what the rewriter produces and the emulator, the C generator
and the latency model consume (UNIT's Rewriter output, 002:L189-L197, L224-L236).

* ``outer``: the loops left after tiling every mapped program loop a by its instruction loop b into
  ``a_o`` (extent P_a / e_b) and ``a_i`` (= b, moved innermost), in program order;
* ``operands``: per instruction register operand, the program tensor it is fed from, that tensor's
  packed layout (padding + blocking, e.g. NCHW[4]c, KCRS[16]k[4]c, 002:L276), the affine base offset of
  the register's first lane in the packed tensor (element stride per outer loop) and the offset of
  every register lane relative to that base; ``action`` is the operand preparation the offsets admit
  (002:L195-L197): ``contiguous`` vector load, ``broadcast`` of one contiguous 32-bit group, ``gather``
  of contiguous 32-bit groups at strided places (lane concatenation), or ``lanewise`` element by element.
* :class:`Schedule`: UNIT's CPU tuning point (002:L203-L205, L245, Fig. 7): the data-parallel outer loops
  in ``dp_order``; breakpoint 1 ``parallel = (level, factor)`` — loops before it are fused and
  parallelised; breakpoint 2 ``unroll = (level, factor)`` — loops after it are moved below the innermost
  reduction loop and unrolled (register blocking). A breakpoint (ℓ, f) splits loop ℓ of ``dp_order`` as
  (extent/f | f): the outer part lies before the breakpoint, the inner part f after it.
  Two extensions of UNIT's space (ours): the unroll factor need not divide its loop (the last, partial
  block is generated once more with fewer points: UNIT's residue, 002:L312, without ``likely`` guards),
  and ``tile`` splits more loops between the breakpoints (factor dividing the loop) whose inner parts
  are unrolled with the rest — a two-dimensional register tile such as 2 output-channel blocks × 12
  output columns. ``reduction_block`` (ours too) runs the outermost reduction loop in blocks outside
  all dp loops, so the operands one block reads stay in L1; each block after the first starts its
  accumulators from the partial sums the previous block stored.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from solvermap.ir.loopnest import NUMPY_DTYPES, Program


@dataclass(frozen=True)
class OuterLoop:
    var: str
    extent: int
    kind: str  # data_parallel | reduction
    source: str  # the program loop it comes from


@dataclass(frozen=True)
class LayoutPart:
    """One packed dimension: ``whole`` original dim, or the ``outer`` / ``inner`` part of a dim split by ``block``."""

    dim: int
    part: str  # whole | outer | inner
    size: int
    block: int = 1


@dataclass(frozen=True)
class PackedLayout:
    tensor: str
    dtype: str
    original_shape: tuple[int, ...]
    padded_shape: tuple[int, ...]  # per original dim, after zero padding
    parts: tuple[LayoutPart, ...]  # packed dims, outermost first

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(p.size for p in self.parts)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def strides(self) -> tuple[int, ...]:
        out = [1] * len(self.parts)
        for k in range(len(self.parts) - 2, -1, -1):
            out[k] = out[k + 1] * self.parts[k + 1].size
        return tuple(out)

    def name(self) -> str:
        """Layout in the seed's notation, e.g. ``C/4 H W 4c`` (dims by position)."""
        labels = []
        for p in self.parts:
            d = f"d{p.dim}"
            labels.append(f"{d}/{p.block}" if p.part == "outer" else (f"{p.size}{d}" if p.part == "inner" else d))
        return " ".join(labels)

    def pack(self, array: np.ndarray) -> np.ndarray:
        """Zero-pad to ``padded_shape`` and rearrange into the packed layout."""
        array = np.asarray(array)
        pad = [(0, p - s) for s, p in zip(array.shape, self.padded_shape)]
        padded = np.pad(array, pad).astype(NUMPY_DTYPES[self.dtype], copy=False)
        split_shape, axes_of = [], {}
        for d, extent in enumerate(self.padded_shape):
            blocks = [p for p in self.parts if p.dim == d and p.part == "inner"]
            if blocks:
                axes_of[(d, "outer")] = len(split_shape)
                split_shape.append(extent // blocks[0].size)
                axes_of[(d, "inner")] = len(split_shape)
                split_shape.append(blocks[0].size)
            else:
                axes_of[(d, "whole")] = len(split_shape)
                split_shape.append(extent)
        order = [axes_of[(p.dim, p.part)] for p in self.parts]
        return np.ascontiguousarray(padded.reshape(split_shape).transpose(order))

    def unpack(self, packed: np.ndarray) -> np.ndarray:
        """Inverse of :meth:`pack`, cropped to ``original_shape``."""
        inverse_parts = sorted(range(len(self.parts)), key=lambda k: (self.parts[k].dim, self.parts[k].part != "outer"))
        arranged = np.asarray(packed).reshape(self.shape).transpose(inverse_parts)
        padded = arranged.reshape(self.padded_shape)
        return np.ascontiguousarray(padded[tuple(slice(0, s) for s in self.original_shape)])


@dataclass(frozen=True)
class OperandPlan:
    operand: str  # instruction register
    tensor: str  # program tensor
    layout: PackedLayout
    base: tuple[tuple[str, int], ...]  # outer loop var → element stride in the packed tensor
    base_const: int
    lane_offsets: tuple[int, ...]  # per register lane, element offset from the base (-1: lane unused)
    lane_strides: tuple[tuple[str, int], ...]  # instruction loop → element stride (0 = broadcast along it)
    action: str  # contiguous | broadcast | gather | lanewise
    group: int  # elements per 32-bit group
    is_accumulator: bool = False

    def base_stride(self, var: str) -> int:
        return dict(self.base).get(var, 0)

    def group_offsets(self) -> tuple[int, ...]:
        """Element offset of each 32-bit group's first element (gather / broadcast forms)."""
        return tuple(self.lane_offsets[g * self.group] for g in range(len(self.lane_offsets) // self.group))


@dataclass
class RewrittenNest:
    """The tensorized nest: outer loops, operand plans, the instruction and the rewritten program."""

    workload: str
    instruction: Any  # InstructionDescriptor
    mapping: Any  # TensorizeMapping
    original: Program
    outer: tuple[OuterLoop, ...]
    operands: dict[str, OperandPlan]
    program: Program  # the same nest as a loop-nest program over packed tensors (for the golden executor)
    padded_extents: dict[str, int] = field(default_factory=dict)

    @property
    def dp_loops(self) -> list[OuterLoop]:
        return [l for l in self.outer if l.kind == "data_parallel"]

    @property
    def reduction_loops(self) -> list[OuterLoop]:
        return [l for l in self.outer if l.kind == "reduction"]

    @property
    def calls(self) -> int:
        return math.prod(l.extent for l in self.outer)

    @property
    def accumulator(self) -> OperandPlan:
        return next(p for p in self.operands.values() if p.is_accumulator)

    @property
    def sources(self) -> list[OperandPlan]:
        return [p for p in self.operands.values() if not p.is_accumulator]

    def layouts(self) -> dict[str, PackedLayout]:
        return {p.tensor: p.layout for p in self.operands.values()}

    def pack_inputs(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        layouts = self.layouts()
        return {name: layouts[name].pack(array) for name, array in inputs.items()}


@dataclass(frozen=True)
class Schedule:
    """UNIT's CPU tuning point: dp loop order and the two breakpoints, plus an optional register tile
    (see module docstring)."""

    dp_order: tuple[str, ...]
    parallel: tuple[int, int]  # (level, factor): fused-parallel part = loops before, outer part of loop `level`
    unroll: tuple[int, int]  # (level, factor): unrolled part = inner `factor` of loop `level` and loops after
    tile: tuple[tuple[str, int], ...] = ()  # loops between the breakpoints whose inner `factor` is unrolled too
    reduction_block: int = 0  # > 0: the outermost reduction loop runs in blocks of this size, outside the dp loops

    def to_json(self) -> dict:
        out = {"dp_order": list(self.dp_order), "parallel": list(self.parallel), "unroll": list(self.unroll)}
        if self.tile:
            out["tile"] = {var: factor for var, factor in self.tile}
        if self.reduction_block:
            out["reduction_block"] = self.reduction_block
        return out

    @classmethod
    def from_json(cls, data: dict) -> Schedule:
        return cls(tuple(data["dp_order"]), tuple(data["parallel"]), tuple(data["unroll"]),
                   tuple((data.get("tile") or {}).items()), int(data.get("reduction_block", 0)))


@dataclass(frozen=True)
class ScheduledLoop:
    var: str  # the outer loop this part belongs to
    extent: int
    weight: int  # value of one step of this part in units of the loop variable
    role: str  # parallel | serial | unroll
    tail: int = 0  # unroll part of a loop its factor does not divide: points of the last, partial block


def split_dp_loops(extents: dict[str, int], schedule: Schedule) -> list[ScheduledLoop]:
    """The data-parallel loop parts in nest order with their role; raises ValueError if ill-formed."""
    order = schedule.dp_order
    (l1, f1), (l2, f2) = schedule.parallel, schedule.unroll
    n = len(order)
    if sorted(order) != sorted(extents):
        raise ValueError(f"dp_order {order} is not a permutation of {sorted(extents)}")
    if not (0 <= l1 < n and 0 <= l2 < n):
        raise ValueError("breakpoint level out of range")
    if f1 < 1 or f2 < 1 or extents[order[l1]] % f1 or f2 > extents[order[l2]]:
        raise ValueError("breakpoint factor does not divide its loop")
    if l1 > l2 or (l1 == l2 and f1 % f2):
        raise ValueError("the parallel breakpoint must precede the unroll breakpoint")
    tail = extents[order[l2]] % f2  # (when l1 == l2, f2 | f1 | extent: no residue)
    tile = dict(schedule.tile)
    if len(tile) != len(schedule.tile):
        raise ValueError("a loop is tiled twice")
    for var, t in tile.items():
        k = order.index(var) if var in order else -1
        if not (l1 <= k < l2) or t < 1 or (f1 if k == l1 else extents[var]) % t:
            raise ValueError(f"tile {var}:{t} must split a loop between the breakpoints by a divisor")
    parts: list[ScheduledLoop] = []
    for k, var in enumerate(order):
        e = extents[var]
        t = tile.get(var, 1)
        if k < l1:
            parts.append(ScheduledLoop(var, e, 1, "parallel"))
        elif k == l1 == l2:
            parts.append(ScheduledLoop(var, e // f1, f1, "parallel"))
            parts.append(ScheduledLoop(var, f1 // f2, f2, "serial"))
            parts.append(ScheduledLoop(var, f2, 1, "unroll"))
        elif k == l1:
            parts.append(ScheduledLoop(var, e // f1, f1, "parallel"))
            parts.append(ScheduledLoop(var, f1 // t, t, "serial"))
            if t > 1:
                parts.append(ScheduledLoop(var, t, 1, "unroll"))
        elif k < l2:
            parts.append(ScheduledLoop(var, e // t, t, "serial"))
            if t > 1:
                parts.append(ScheduledLoop(var, t, 1, "unroll"))
        elif k == l2:
            parts.append(ScheduledLoop(var, e // f2, f2, "serial"))
            parts.append(ScheduledLoop(var, f2, 1, "unroll", tail))
        else:
            parts.append(ScheduledLoop(var, e, 1, "unroll"))
    return parts


def fused_extent(parts: list[ScheduledLoop]) -> int:
    return math.prod(p.extent for p in parts if p.role == "parallel")


def unroll_extent(parts: list[ScheduledLoop]) -> int:
    """Points of one full unrolled block (the register tile)."""
    return math.prod(p.extent for p in parts if p.role == "unroll")


def blocks(parts: list[ScheduledLoop]) -> list[tuple[int, int]]:
    """(number of blocks, points per block): the full blocks, then the partial ones of a tail if any."""
    outer = math.prod(p.extent for p in parts if p.role in ("parallel", "serial"))
    full = unroll_extent(parts)
    out = [(outer, full)]
    tail = next((p for p in parts if p.tail), None)
    if tail is not None:
        serial = next(p for p in parts if p.var == tail.var and p.role == "serial")
        out.append((outer // serial.extent, full // tail.extent * tail.tail))
    return out
