"""PUMA analog-digital accelerator (seed 003): the target spec of family ``puma``.

Hierarchy (seed 003 L57): crossbar (MVMU) → core (N MVMUs, register file, vector ALU) → tile (M cores,
shared tile memory, receive buffer) → node (T tiles on a network-on-chip). The seed gives the hierarchy
only as symbols; every number here is a default taken from the public PUMA compiler and simulator
(digest §1a, [EXTERNAL]) and is listed in the preset's ``assumptions:``. Every field is configurable
(``--set target.core.mvmus=4``).

Also here: :mod:`.network` (the model the machine runs: layers with weights), :mod:`.program` (the mapped
program: blocks, placement, communication), :mod:`.functional_sim` (bit-sliced crossbar arithmetic)
and :mod:`.performance_sim` (event-based timing and energy).
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field, model_validator

from solvermap.hardware.targets import TargetSpec, register_family


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Crossbar(_Part):
    """One MVMU: a logical rows × cols matrix of ``data.bits`` weights, bit-sliced over physical crossbars."""

    rows: int = Field(128, ge=1)
    cols: int = Field(128, ge=1)
    bits_per_cell: int = Field(2, ge=1, le=8)
    dac_bits: int = Field(1, ge=1, le=16)
    adc_bits: int = Field(8, ge=1, le=16)
    adcs_per_mvmu: int = Field(2, ge=1)
    flipped_encoding: bool = True  # ISAAC's encoding: a column whose slice sum exceeds half range is stored complemented
    noise_sigma: float = Field(0.0, ge=0.0)  # device conductance noise, in conductance levels (functional sim)


class DataFormat(_Part):
    bits: int = Field(16, ge=2, le=32)
    frac_bits: int = Field(12, ge=0)

    @property
    def int_bits(self) -> int:
        return self.bits - self.frac_bits


class Core(_Part):
    mvmus: int = Field(6, ge=1)
    vector_lanes: int = Field(4, ge=1)
    register_file_words: int = Field(1536, ge=1)


class Tile(_Part):
    cores: int = Field(8, ge=1)
    memory_bytes: int = Field(65536, ge=1)
    memory_bus_bits: int = Field(256, ge=8)
    receive_buffer_depth: int = Field(16, ge=1)


class Noc(_Part):
    topology: str = Field("cmesh", pattern="^(cmesh|mesh)$")
    router_rows: int = Field(4, ge=1)
    router_cols: int = Field(4, ge=1)
    concentration: int = Field(4, ge=1)  # tiles per router (1 for a plain mesh)
    flit_bits: int = Field(32, ge=1)
    router_latency_cycles: int = Field(3, ge=0)
    io_tiles: int = Field(2, ge=0)  # tiles 0..io_tiles-1 are the input and output tiles (reserved)


class Timing(_Part):
    cycle_ns: float = Field(1.0, gt=0)
    xbar_step_cycles: float = Field(100.0, gt=0)  # one bit-step of a 128×128 MVM incl. 8-bit ADC conversions
    alu_cycles_per_op: float = Field(1.0, gt=0)
    lut_cycles_per_op: float = Field(1.0, gt=0)
    memory_access_cycles: float = Field(2.0, gt=0)  # per bus-width access of tile memory


class Energy(_Part):
    """Energies in pJ, powers in mW."""

    xbar_step_pj_per_physical: float = Field(274.0, ge=0)  # 2.74 mW × 100 ns per physical crossbar bit-step
    adc_conversion_pj: float = Field(1.40625, ge=0)  # 1.8 mW × (100 ns / 128 conversions)
    alu_op_pj: float = Field(1.707, ge=0)
    lut_op_pj: float = Field(0.234, ge=0)
    memory_access_pj: float = Field(20.2, ge=0)  # eDRAM 17.2 pJ + bus 3 pJ per 256-bit access
    flit_hop_pj: float = Field(16.13, ge=0)  # router dynamic 16.13 mW × 1 ns per flit
    tile_leakage_mw: float = Field(27.2, ge=0)
    tile_area_mm2: float = Field(0.45, ge=0)
    router_area_mm2: float = Field(0.047, ge=0)


@register_family("puma")
class PumaSpec(TargetSpec):
    crossbar: Crossbar = Crossbar()
    data: DataFormat = DataFormat()
    core: Core = Core()
    tile: Tile = Tile()
    noc: Noc = Noc()
    timing: Timing = Timing()
    energy: Energy = Energy()

    @model_validator(mode="after")
    def _consistent(self) -> PumaSpec:
        if self.data.frac_bits >= self.data.bits:
            raise ValueError("data.frac_bits must be smaller than data.bits")
        if self.noc.io_tiles >= self.tile_positions:
            raise ValueError("noc.io_tiles leaves no compute tile")
        return self

    # derived quantities -------------------------------------------------------------------
    @property
    def tile_positions(self) -> int:
        return self.noc.router_rows * self.noc.router_cols * self.noc.concentration

    @property
    def compute_tiles(self) -> int:
        return self.tile_positions - self.noc.io_tiles

    @property
    def mvmus_per_tile(self) -> int:
        return self.core.mvmus * self.tile.cores

    @property
    def weight_slices(self) -> int:
        """Physical crossbars per MVMU: ⌈data bits / bits per cell⌉ (digest §1a phy2log_ratio)."""
        return math.ceil(self.data.bits / self.crossbar.bits_per_cell)

    @property
    def input_steps(self) -> int:
        """Bit-streaming steps per MVM: ⌈data bits / DAC bits⌉."""
        return math.ceil(self.data.bits / self.crossbar.dac_bits)

    def router_of(self, position: int) -> tuple[int, int]:
        """(row, col) of the router a tile position hangs off (positions fill a router, then the next)."""
        router = position // self.noc.concentration
        return (router // self.noc.router_cols, router % self.noc.router_cols)

    def hops(self, a: int, b: int) -> int:
        """Routers a message from tile ``a`` to tile ``b`` traverses (0 for the same tile)."""
        if a == b:
            return 0
        ra, rb = self.router_of(a), self.router_of(b)
        return 1 + abs(ra[0] - rb[0]) + abs(ra[1] - rb[1])

    def mvm_cycles(self) -> float:
        """Cycles of one MVM: input bit-steps × step time, the ADC part scaled with its resolution
        (a SAR ADC converts one bit per step; assumption) and the number of ADCs per MVMU."""
        adc_scale = (self.crossbar.adc_bits / 8.0) * (2.0 / self.crossbar.adcs_per_mvmu) * (self.crossbar.cols / 128.0)
        return self.input_steps * self.timing.xbar_step_cycles * adc_scale
