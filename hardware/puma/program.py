"""The mapped PUMA program: crossbar blocks, the values they exchange, their placement and communication.

Vocabulary (seed 003 Sec. V):

Block      a *virtual crossbar* (L171): one crossbar-sized piece (``rows`` inputs × ``cols`` outputs) of a
           layer's matrix M_p, plus the vector (ALU) work that has affinity to it — adding its partial to
           the running sum of its row's sequential reduction chain (the public compiler's
           ``accum[w] = ADD(mvm_w, accum[w−1])`` on ``mvm_w``'s crossbar), and, on the row's *home* (the
           last block of the chain, where the sum ends), the bias, activations, pooling and LSTM cell
           arithmetic of the elements it owns.
Value      one produced segment and the blocks that read it (a broadcast group): an input segment read
           by every block of a matrix column, a running partial sum passed to the next block of its
           row's chain, an activation segment
           read by the next layer's blocks, the model input (from the input tile) and output (to the
           output tile). ``bytes`` is per inference (16-bit words × uses).
Placement  block → (tile position, core, MVMU slot). Tile positions index the node's tiles; positions
           below ``noc.io_tiles`` are the input and output tiles.
Traffic    per value with dedup (L183): one store on the source core if any reader is on another core;
           one load per *consumer core* other than the source core; one send/receive pair per
           *destination tile* other than the source tile. Hop-weighted bytes = Σ send bytes × routers
           traversed (:meth:`PumaSpec.hops`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

IO_INPUT = "io:input"
IO_OUTPUT = "io:output"


@dataclass(frozen=True)
class Block:
    name: str
    layer: str
    replica: int
    position: int  # index p of the matrix M_p
    row_block: int  # output block index (crossbar columns)
    col_block: int  # input block index (crossbar rows)
    out_range: tuple[int, int]  # outputs [lo, hi) of M_p held by this block
    in_range: tuple[int, int]  # inputs [lo, hi) of M_p held by this block
    steps: float  # MVMs per inference (this replica's share)
    alu_ops: float = 0.0  # vector element operations per inference with affinity to this block
    is_home: bool = False

    @property
    def rows_used(self) -> int:
        return self.in_range[1] - self.in_range[0]

    @property
    def cols_used(self) -> int:
        return self.out_range[1] - self.out_range[0]


@dataclass(frozen=True)
class Value:
    name: str
    source: str  # block name or IO_INPUT
    sinks: tuple[str, ...]  # block names or IO_OUTPUT
    bytes: float  # per inference
    kind: str = "activation"  # activation | partial | gate | input | output | recurrent | operand
    layer: str = ""  # consuming layer


@dataclass(frozen=True)
class Partition:
    """Result of crossbar partitioning: the blocks and values of one model copy."""

    network: str
    blocks: tuple[Block, ...]
    values: tuple[Value, ...]
    layer_order: tuple[str, ...]  # MVM layers in program order
    replicas: Mapping[str, int] = field(default_factory=dict)
    crossbar: tuple[int, int] = (128, 128)  # (rows, cols)

    def block(self, name: str) -> Block:
        return self._index()[name]

    def _index(self) -> dict[str, Block]:
        cache = self.__dict__.get("_cache")
        if cache is None:
            cache = {b.name: b for b in self.blocks}
            object.__setattr__(self, "_cache", cache)
        return cache

    def blocks_of(self, layer: str) -> list[Block]:
        return [b for b in self.blocks if b.layer == layer]


@dataclass(frozen=True)
class Slot:
    tile: int  # tile position in the node
    core: int  # core within the tile
    mvmu: int  # MVMU within the core


@dataclass(frozen=True)
class PumaPlacement:
    """The hierarchical placement decision: every block's tile position, core and MVMU."""

    slots: Mapping[str, Slot]

    def tile_of(self, name: str, io_positions: Mapping[str, int]) -> int:
        return io_positions[name] if name in io_positions else self.slots[name].tile

    def core_of(self, name: str, io_positions: Mapping[str, int]) -> tuple[int, int]:
        if name in io_positions:
            return (io_positions[name], -1)
        slot = self.slots[name]
        return (slot.tile, slot.core)

    def tiles_used(self) -> int:
        return len({s.tile for s in self.slots.values()})

    def to_json(self) -> dict[str, list[int]]:
        return {k: [s.tile, s.core, s.mvmu] for k, s in sorted(self.slots.items())}


@dataclass(frozen=True)
class Transfer:
    """One inserted communication operation (seed L183)."""

    op: str  # store | load | send | receive
    value: str
    bytes: float
    tile: int
    core: int = -1  # -1 for tile-level operations (send/receive)
    peer_tile: int = -1  # send: destination tile; receive: source tile
    hops: int = 0


@dataclass
class Communication:
    """Inserted loads/stores/sends/receives and the byte counts per level."""

    transfers: list[Transfer]

    def bytes_by_op(self) -> dict[str, float]:
        out = {"store": 0.0, "load": 0.0, "send": 0.0, "receive": 0.0}
        for t in self.transfers:
            out[t.op] += t.bytes
        return out

    def hop_weighted_bytes(self) -> float:
        return sum(t.bytes * t.hops for t in self.transfers if t.op == "send")

    def counts(self) -> dict[str, int]:
        out = {"store": 0, "load": 0, "send": 0, "receive": 0}
        for t in self.transfers:
            out[t.op] += 1
        return out
