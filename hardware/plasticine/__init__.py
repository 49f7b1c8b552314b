"""Plasticine targets (seed 004, Zhang 2020 §1.1, §3.2): the ``plasticine`` family spec.

A checkerboard array of physical blocks (PBs) with DRAM address generators on two sides:

PCU   pattern compute unit: a ``stages``-deep SIMD pipeline of ``lanes`` lanes (6 × 16, L473, L251),
      vector (16-word, 512-bit) / scalar (32-bit) / control (1-bit) input and output ports (three
      networks, L473), input buffers of ``buffer_depth`` entries (Table 4.1's b_d).
PMU   pattern memory unit: ``banks`` SRAM banks (16, L481) of ``bank_kib`` each (256 KB total per the
      issue), a scalar integer address pipeline of ``stages`` stages (L481) split into read and write
      contexts (L481–483).
DAG   DRAM address generator: integer-only, not vectorized (L489); one column on each of two sides.

The RNN-serving variant (``plasticine-rnn``) uses 2 PMUs per PCU and 4-stage PCUs (L251) with the folded
cross-lane reduction tree (L244–247). Every number that is not in the seed is listed in the preset's
``assumptions`` with the seed line that is silent.

``ops`` is the op table a dataflow graph without actors is lowered with (stages, vector or scalar lanes,
integer) — defaults and their sources in ``presets/plasticine.yaml``.

Modules beside this one: :mod:`~solvermap.hardware.plasticine.dataflow_sim` (dataflow simulator of a
partitioned/merged VB graph) and :mod:`~solvermap.hardware.plasticine.cost` (area/power of used PBs).
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from solvermap.hardware.targets import TargetSpec, register_family
from solvermap.hardware.plasticine.network import NetworkDesign


class Ports(BaseModel):
    """Per-network port counts of one PB: vector (512-bit), scalar (32-bit), control (1-bit token)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    vector: int = Field(ge=0)
    scalar: int = Field(ge=0)
    control: int = Field(ge=0)

    def by_kind(self) -> dict[str, int]:
        """Limits keyed by IR edge kind (``token`` edges use the control network)."""
        return {"vector": self.vector, "scalar": self.scalar, "token": self.control}


class PCU(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    count: int = Field(ge=0)
    stages: int = Field(ge=1, description="SIMD pipeline stages = operations per partition (L473)")
    lanes: int = Field(ge=1, description="SIMD lanes (L473)")
    reduce_stages: int = Field(ge=1, description="stages a cross-lane reduction occupies")
    inputs: Ports
    outputs: Ports
    buffer_depth: int = Field(ge=1, description="input buffer depth b_d (Table 4.1, L591)")
    area_mm2: float = Field(ge=0)
    power_w: float = Field(ge=0)


class PMU(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    count: int = Field(ge=0)
    banks: int = Field(ge=1, description="SRAM banks (L481)")
    bank_kib: int = Field(ge=1, description="capacity of one bank in KiB")
    stages: int = Field(ge=1, description="scalar integer address-pipeline stages (L481)")
    inputs: Ports
    outputs: Ports
    area_mm2: float = Field(ge=0)
    power_w: float = Field(ge=0)

    @property
    def capacity_bytes(self) -> int:
        return self.banks * self.bank_kib * 1024


class DAG(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    count: int = Field(ge=0)
    stages: int = Field(ge=1, description="scalar integer stages (L489: integer-only, not vectorized)")
    inputs: Ports
    outputs: Ports
    area_mm2: float = Field(ge=0)
    power_w: float = Field(ge=0)


class DRAM(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    channels: int = Field(ge=1, description="DDR4 channels (L489)")
    channel_gbps: float = Field(gt=0, description="GB/s per channel")
    latency_cycles: int = Field(ge=0)

    def bytes_per_cycle(self, clock_ghz: float) -> float:
        return self.channels * self.channel_gbps / clock_ghz


class OpCost(BaseModel):
    """What one operation of a dataflow graph costs on a PCU (the op table of a generic DFG lowering)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    stages: int = Field(1, ge=1, le=64, description="PCU pipeline stages the operation occupies (L473, L637)")
    lanes: Literal["vector", "scalar"] = Field(
        "vector", description="vector: the operation runs on every SIMD lane; scalar: on one lane")
    integer: bool = Field(False, description="integer scalar arithmetic (address, counter, compare): also fits "
                                             "the PMU and DAG scalar integer pipelines (L481, L489)")


class Network(NetworkDesign):  # + the network design of §3.3 (network.py): type, static, dynamic, cost
    model_config = ConfigDict(extra="forbid", frozen=True)

    hop_cycles: int = Field(ge=0, description="cycles per network hop")
    default_hops: int = Field(ge=0, description="hops assumed per link before placement (placement-free default)")

    @property
    def link_cycles(self) -> int:
        return self.hop_cycles * self.default_hops


class Grid(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    columns: int = Field(ge=1)
    rows: int = Field(ge=1)
    pattern: Literal["checkerboard", "two_pmu_per_pcu"]


@register_family("plasticine")
class PlasticineSpec(TargetSpec):
    """A Plasticine array: PCU/PMU/DAG parameters, DRAM, network, clock."""

    clock_ghz: float = Field(gt=0, description="clock (28 nm at 1 GHz, L345)")
    grid: Grid
    pcu: PCU
    pmu: PMU
    dag: DAG
    dram: DRAM
    network: Network
    ops: dict[str, OpCost] = Field(default_factory=dict, description=(
        "op table: operation name (case-insensitive) -> stages, lanes, integer; key 'default' for the rest. "
        "Used when a dataflow graph without actors is lowered (mappers/plasticine/dfg_lowering.py); "
        "'reduce' always takes pcu.reduce_stages"))

    @field_validator("ops", mode="before")
    @classmethod
    def _lower_case_ops(cls, value):
        if isinstance(value, dict):
            return {str(k).strip().lower(): v for k, v in value.items()}
        return value

    @model_validator(mode="after")
    def _grid_holds_the_units(self) -> PlasticineSpec:
        sites = self.grid.columns * self.grid.rows
        if self.pcu.count + self.pmu.count != sites:
            raise ValueError(f"grid {self.grid.columns}x{self.grid.rows} has {sites} sites but pcu.count + pmu.count = "
                             f"{self.pcu.count + self.pmu.count}")
        return self

    @property
    def hop_latency(self) -> int:
        """L of the partition model: a PCU's pipeline depth plus one link's network delay."""
        return self.pcu.stages + self.network.link_cycles

    def op_cost(self, op: str) -> OpCost:
        """The op table's entry for ``op`` (case-insensitive), else its ``default``, else one vector stage."""
        return self.ops.get(op.strip().lower()) or self.ops.get("default") or OpCost()

    def op_stages(self, op: str) -> int:
        """Pipeline stages of one operation: a cross-lane reduction takes ``reduce_stages``, others the table's."""
        return self.reduction_stages() if op == "reduce" else self.op_cost(op).stages

    def reduction_stages(self) -> int:
        return max(1, min(self.pcu.reduce_stages, self.pcu.stages))

    def lane_log(self) -> int:
        return int(math.log2(self.pcu.lanes)) if self.pcu.lanes > 1 else 0
