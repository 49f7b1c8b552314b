"""Push-memory CGRA targets (seed 001, Liu et al. 2021): the ``pushmem`` family spec.

An island-style CGRA of 16-bit PE tiles and MEM tiles (one in four tiles is a MEM, 001:L293) clocked at
900 MHz (001:L331). Each MEM tile holds one physical unified buffer (PUB): a single-port SRAM fetching
``fetch_width`` 16-bit words per access (001:L250), an aggregator (AGG) per input port and a transpose
buffer (TB) per output port of 4–8 words each (001:L160), and ID/AG/SG address and schedule generators.
A tile serves at most ``tile_accesses_per_cycle`` word accesses per cycle (001:L248: "up to 4 memory
operations per cycle"). Shift registers (SR) are PE-side registers (001:L256). Input tiles reach the
array through a double-buffered global buffer loaded from DRAM; the whole array stalls when a tile is late
(001:L299-L301).

Modules beside this one: :mod:`~solvermap.hardware.pushmem.cost` (Table II energy/area model) and
:mod:`~solvermap.hardware.pushmem.config` (what the mapper programs into each unit) and
:mod:`~solvermap.hardware.pushmem.simulator` (cycle-level simulator of a configuration).
Numbers that are not in the seed are listed in the preset's ``assumptions`` with the seed line that is
silent or damaged.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from solvermap.hardware.targets import TargetSpec, register_family

MemoryVariant = Literal["dp_pe", "dp_ag", "sp_wide"]


class MemoryDesign(BaseModel):
    """One row of Table II (001:L305-L309): a physical unified buffer implementation."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mem_area_um2: float = Field(gt=0, description="MEM tile area (Table II column 1; unit lost at L305, µm² assumed)")
    sram_area_pct: float = Field(gt=0, le=100, description="share of the tile area that is SRAM array")
    total_ub_area_um2: float = Field(gt=0, description="total UB area incl. PEs used for addressing")
    energy_pj_per_access: float = Field(gt=0, description="energy per word access at a UB port")


class CostModel(BaseModel):
    """Costs used by the shift-register model and the energy/area report (assumptions: see preset)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    register_area_um2: float = Field(gt=0, description="area of one 16-bit shift-register stage")
    register_energy_pj: float = Field(ge=0, description="energy of one register stage per cycle it shifts a value")
    pe_area_um2: float = Field(gt=0, description="area of one PE tile")
    pe_energy_pj_per_op: float = Field(ge=0, description="energy of one 16-bit PE operation")
    sram_word_area_um2: float = Field(gt=0, description="SRAM area per 16-bit word (for the SR-vs-memory model)")


@register_family("pushmem")
class PushMemTarget(TargetSpec):
    """A push-memory CGRA: clock, MEM-tile geometry, AGG/TB sizes, SR limits and the Table II cost model."""

    clock_mhz: float = Field(900.0, gt=0, description="CGRA clock (001:L331)")
    word_bits: int = Field(16, description="PE/MEM data width (001:L250, L299)")
    fetch_width: int = Field(4, ge=1, description="words per SRAM access (001:L250)")
    tile_words: int = Field(gt=0, description="SRAM capacity of one MEM tile in words (not in the seed)")
    tile_accesses_per_cycle: int = Field(4, ge=1, description="word accesses per MEM tile per cycle (001:L248)")
    tile_write_ports: int = Field(2, ge=1, description="AGG (input) ports per MEM tile (001:L164, Fig. 4)")
    tile_read_ports: int = Field(2, ge=1, description="TB (output) ports per MEM tile (001:L164, Fig. 4)")
    sram_read_latency: int = Field(1, ge=1, description="cycles from an SRAM read to data in the TB (001:L176)")
    agg_words: int = Field(8, ge=1, description="aggregator capacity per input port (001:L160: 4-8 words)")
    tb_words: int = Field(8, ge=1, description="transpose buffer capacity per output port (001:L160: 4-8 words)")
    fetch_slack: int = Field(4, ge=0, description="cycles of AGG/TB slack the schedule reserves per memory path")
    max_shift_register: int = Field(ge=0, description="longest shift-register chain edge, in stages")
    pe_op_latency: int = Field(1, ge=1, description="cycles per PE operation (registered output)")
    mem_tiles: int = Field(gt=0, description="MEM tiles on the array (1/4 of the tiles, 001:L293)")
    pe_tiles: int = Field(gt=0, description="PE tiles on the array")
    dram_words_per_cycle: float = Field(4.0, gt=0, description="DRAM → global buffer words per CGRA cycle (not in the seed)")
    glb_slots: int = Field(2, ge=1, description="tiles of each input tensor the global buffer holds (double-buffered, 001:L301)")
    memory: MemoryVariant = Field("sp_wide", description="which Table II design the MEM tiles implement")
    designs: dict[str, MemoryDesign]
    costs: CostModel
    sequential_ii_is_latency: bool = Field(True, description="sequential baseline does not pipeline loops (001:L372)")

    def design(self) -> MemoryDesign:
        return self.designs[self.memory]
