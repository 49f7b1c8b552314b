"""The configuration of a push-memory CGRA: what the mapper programs into every unit (seed 001 Sec. IV).

The cycle simulator (:mod:`.simulator`) executes this and nothing else: it never sees the schedule,
the unified buffers or the solvers' decisions, only the hardware they configure.

Units and their controllers. A controller is the seed's IterationDomain + ScheduleGenerator +
AddressGenerator (001:L150-L152); its :class:`Firings` are the sequence it generates — one entry per firing,
in array cycles (cycles during which the array is not stalled) — stored expanded rather than as the
affine coefficients / recurrence deltas of Fig. 5, which generate the same sequence.

* :class:`Kernel` — a PE pipeline (001:L291, L299): fires at its program's cycles, reads one value from
  each operand wire, applies its expression, and ``latency`` array cycles later drives its output wire
  with the result in the written tensor's dtype. A reduction kernel keeps one accumulator, started at the
  first reduction step — from zero, or from its *carry* operand, the previous version of the element (an
  init's value) — and emitted at the last.
* :class:`GlobalInput` / :class:`GlobalOutput` — streams between the global buffer and the array
  (001:L299-L301): an input stream drives a wire with the programmed elements of an input tensor; an
  output stream captures a kernel's output wire into an output tensor.
* :class:`Tap` — a wire or a shift register of ``delay`` stages (001:L256) from another wire.
* :class:`Memory` — one physical buffer (a bank of a memory, 001:L258) on one or more MEM tiles
  (chaining, Eqs. 5/6, 001:L282-L287): per input port an aggregator (AGG) that captures lanes from a
  wire, a single-port wide SRAM written and read at programmed cycles, and per output stream a transpose
  buffer (TB) that drives a wire lane by lane (001:L160-L176). ``writes`` is a tuple so that a buffer
  with several producers (an init and an update statement) gets one AGG stream per producer.

Element tags: every value on a wire carries the element it is and which write of it (``tag = tensor id ·
2^48 + version · 2^40 + flat index``; the version is the producer's position among the statements writing
the tensor), so the simulator can name a read of the wrong value — also of the right element written by
the wrong statement; the hardware carries only the value.

Several producers of one tensor (an init and its update statements). The mapper gives every version its
own unified buffer (``mappers/pushmem/versions.py``): each producer kernel drives its own input wire
(``<tensor>~<producer>.in``), its memories hold that version only, and a read names the version it
expects. Sharing one SRAM between versions would save storage only where a version outlives the next
one's first write; an update reads the previous version into its accumulator before it writes, so the
carry is mostly a wire or a shift register. ``Memory.writes`` stays a tuple (one AGG stream per input port
of a physical buffer); the mapper gives each memory one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

TAG_SHIFT = 40  # element bits of a value tag
VERSION_BITS = 8  # version bits above them; the tensor id above those


@dataclass(frozen=True, eq=False)
class Firings:
    """A controller's firings: the array cycle of each and the flat element (of ``tensor``) it handles."""

    times: np.ndarray
    elements: np.ndarray

    def __len__(self) -> int:
        return len(self.times)


@dataclass(frozen=True, eq=False)
class Operand:
    tensor: str
    wire: str  # the wire the kernel's input is connected to
    elements: np.ndarray  # per firing of the kernel: the element its access map requires (for the tag check)
    version: int = 0  # which producer's write of the element it requires


@dataclass(frozen=True, eq=False)
class Kernel:
    name: str
    expr: Any  # loop-nest expression tree (the PE configuration)
    dtype: str
    latency: int  # pipeline stages from issue to the output wire
    issue: np.ndarray  # array cycles of the firings (ID + SG)
    operands: tuple[Operand, ...]
    output: str  # tensor written
    out_elements: np.ndarray  # per firing: element written
    first: np.ndarray | None = None  # per firing: accumulator started (reduction kernels only)
    last: np.ndarray | None = None  # per firing: accumulator emitted
    version: int = 0  # which producer of ``output`` this kernel is
    carry: Operand | None = None  # the previous value of the element, read when the accumulator starts

    @property
    def wire(self) -> str:
        return f"{self.name}.out"


@dataclass(frozen=True, eq=False)
class GlobalInput:
    name: str  # the wire it drives
    tensor: str
    program: Firings
    tile_dim: int | None = None  # dimension of the tensor that indexes global-buffer tiles (None: one tile)


@dataclass(frozen=True, eq=False)
class GlobalOutput:
    tensor: str
    wire: str
    program: Firings
    version: int = 0  # the producer whose writes are the output's last ones


@dataclass(frozen=True)
class Tap:
    name: str  # the wire it drives
    source: str  # the wire it copies
    kind: str  # wire | sr
    delay: int = 0  # shift-register stages


@dataclass(frozen=True, eq=False)
class WriteStream:
    """One input port of a physical buffer: its AGG lane captures and the AGG → SRAM writes."""

    name: str
    source: str  # wire the AGG listens to
    lanes: Firings  # capture cycles and elements
    words: np.ndarray  # per capture: wide word (AG output)
    lane: np.ndarray  # per capture: lane within the word
    sram_times: np.ndarray  # AGG → SRAM write cycles
    sram_words: np.ndarray  # the word written at each


@dataclass(frozen=True, eq=False)
class ReadStream:
    """One output port of a physical buffer: SRAM → TB fetches and TB lanes onto a wire."""

    name: str  # the wire it drives
    lanes: Firings  # lane emit cycles and elements
    words: np.ndarray
    lane: np.ndarray
    sram_times: np.ndarray  # SRAM → TB fetch cycles (the word arrives sram_read_latency later)
    sram_words: np.ndarray
    release: np.ndarray  # per lane emit: True when the TB drops the word after it (end of a visit)


@dataclass(frozen=True, eq=False)
class Memory:
    name: str
    tensor: str
    fetch_width: int
    modulus: int  # circular buffer capacity in wide words (001:L280)
    fragments: tuple[tuple[int, int], ...]  # chained pieces: (tile, first row) each, in address order
    writes: tuple[WriteStream, ...]
    reads: tuple[ReadStream, ...]
    version: int = 0  # which producer of ``tensor`` wrote the values it holds

    @property
    def words(self) -> int:
        return self.modulus * self.fetch_width


@dataclass(frozen=True)
class Limits:
    """Per-unit limits of the target (see :class:`~solvermap.hardware.pushmem.PushMemTarget`)."""

    tile_words: int
    tile_accesses_per_cycle: int
    tile_write_ports: int
    tile_read_ports: int
    sram_read_latency: int
    agg_words: int
    tb_words: int
    max_shift_register: int
    dram_words_per_cycle: float
    glb_slots: int


@dataclass(frozen=True, eq=False)
class Configuration:
    program: Any  # the loop-nest Program: tensor shapes/dtypes and the golden model
    kernels: tuple[Kernel, ...]
    inputs: tuple[GlobalInput, ...]
    outputs: tuple[GlobalOutput, ...]
    taps: tuple[Tap, ...]  # in an order where every tap's source is driven before it
    memories: tuple[Memory, ...]
    limits: Limits

    def tensor_ids(self) -> dict[str, int]:
        return {name: i for i, name in enumerate(sorted(self.program.tensors))}
