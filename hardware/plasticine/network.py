"""The Plasticine network design (seed 004 §3.3.2, Table 3.2, L300–320, L388–396): the sub-model of
``PlasticineSpec.network``.

Design space (Table 3.2)

``type``            S / H / D: static (circuit-switched switches), hybrid (both in parallel, L320),
                    dynamic (packet-switched routers with table-based source routing, L312–316); None (the
                    base ``plasticine`` preset): no network model, links cost ``hop_cycles × default_hops``.
``static.vector_links``  x#: links per direction between adjacent switches on the 512-bit vector network;
                    a switch output carries one logical link for the whole program (L302).
``static.scalar_links``  links per direction of the separate 32-bit scalar network (4, L368; 0 in the pure
                    dynamic network, where scalars use the routers).
``static.flow_control``  ``db``: per-hop backpressure with a 2-entry skid buffer per switch input (L306–308);
                    ``cd``: end-to-end credits, one register per switch input, no backpressure between
                    switches (L304–306).
``dynamic.flit_bits``    f#: router flit width; a packet wider than a flit takes several cycles (L312).
``dynamic.vcs``          v#: virtual channels per router input port (L433–435).
``dynamic.buffers_per_vc``  b#: entries per VC (3, "just large enough to avoid credit stalls", L312).

Topology (assumption, ``NT1`` in the presets): one switch and one router per end-point site of the
array, in a 2-D mesh with the DRAM address generators in one extra column on each side (L489), so a
16×8 checkerboard becomes an 18×8 mesh; one hop = one switch or router plus its link.

``execution`` is the CGRA class of the network study (L257–259): ``pipelined`` PBs start one firing per
cycle; ``time_scheduled`` PBs repeat a loop of at most ``schedule_instructions`` instructions (6, L259),
one per cycle, so a PB with k operations fires once every k cycles. It lives here because the study
varies it together with the network.

The area / energy parameters (``cost``) feed :mod:`~solvermap.hardware.plasticine.network_cost` (Eq 3.1 /
3.2, L345–368); the seed gives the form of the model but not one number, so every default below is an
assumption that the presets list in ``assumptions:``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class StaticNetwork(BaseModel):
    """Switches (circuit-switched): tracks per direction and flow control."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    vector_links: int = Field(2, ge=0, description="x#: vector links per direction between adjacent switches")
    scalar_links: int = Field(4, ge=0, description="scalar links per direction (4, L368)")
    flow_control: Literal["db", "cd"] = Field("db", description="db: per-hop skid buffers; cd: end-to-end credits")
    skid_entries: int = Field(2, ge=1, description="skid-buffer entries per switch input (2, L306-308)")
    hop_cycles: int = Field(1, ge=1, description="cycles per switch hop (assumption NT2)")


class DynamicNetwork(BaseModel):
    """Routers (packet-switched, per-hop VC flow control, table-based source routing)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    flit_bits: int = Field(512, ge=1, description="f#: flit width in bits")
    vcs: int = Field(4, ge=1, description="v#: virtual channels per input port")
    buffers_per_vc: int = Field(3, ge=1, description="b#: entries per VC (3, L312)")
    hop_cycles: int = Field(2, ge=1, description="cycles per router hop: allocation + traversal (assumption NT3)")
    injection_buffer: int = Field(2, ge=1, description="packets a PB output holds before its router (assumption NT4)")


class NetworkCost(BaseModel):
    """Parameters of the area / energy model (Eq 3.1/3.2 form); all are assumptions (NT5–NT9)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    register_um2_per_bit: float = Field(2.5, gt=0, description="area of one buffered bit (flip-flop + mux), um^2")
    crossbar_um2_per_bit: float = Field(0.5, gt=0, description="crossbar area per (input, output, bit), um^2")
    allocator_um2: float = Field(40.0, ge=0, description="VC/switch allocator area per (input VC, output) pair, um^2")
    router_fixed_um2: float = Field(3000.0, ge=0, description="routing table + control of one router, um^2")
    switch_fixed_um2: float = Field(500.0, ge=0, description="configuration + control of one switch, um^2")
    pb_ports: int = Field(4, ge=1, description="links between a PB and its switch, each way (LINKS_CU = 4)")
    wire_fj_per_bit: float = Field(12.0, ge=0, description="energy of one bit over one inter-switch link, fJ")
    crossbar_fj_per_bit_port: float = Field(0.7, ge=0, description="crossbar energy per bit per port of radix, fJ")
    buffer_fj_per_bit: float = Field(20.0, ge=0, description="router buffer write + read per bit, fJ")
    allocation_fj_per_flit: float = Field(700.0, ge=0, description="router route lookup + allocation per flit, fJ")
    inactive_w_per_mm2: float = Field(0.1, ge=0, description="zero-load power (clock + leakage) per mm^2")


class NetworkDesign(BaseModel):
    """Hop model of the partitioner (``hop_cycles``, ``default_hops``) plus the network design."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["static", "hybrid", "dynamic"] | None = Field(
        None, description="S / H / D (Table 3.2); None: no network model, the pipeline stops after merge")
    static: StaticNetwork = Field(default_factory=StaticNetwork)
    dynamic: DynamicNetwork = Field(default_factory=DynamicNetwork)
    cost: NetworkCost = Field(default_factory=NetworkCost)
    execution: Literal["pipelined", "time_scheduled"] = Field("pipelined", description="CGRA class (L257-259)")
    schedule_instructions: int = Field(6, ge=1, description="loop length of a time-scheduled PB (6, L259)")

    @model_validator(mode="after")
    def _has_a_network(self) -> NetworkDesign:
        if self.type == "static" and self.static.vector_links == 0:
            raise ValueError("a static network needs static.vector_links >= 1")
        return self

    @property
    def has_static(self) -> bool:
        return self.type in ("static", "hybrid")

    @property
    def has_dynamic(self) -> bool:
        return self.type in ("hybrid", "dynamic")

    @property
    def modelled(self) -> bool:
        return self.type is not None

    def label(self) -> str:
        """The seed's configuration name, e.g. ``H-x2-v2-f128-b3-db`` (L443–445 naming)."""
        if self.type is None:
            return "unmodelled"
        kind = {"static": "S", "hybrid": "H", "dynamic": "D"}[self.type]
        parts = [kind, f"x{self.static.vector_links if self.has_static else 0}"]
        if self.has_dynamic:
            parts += [f"v{self.dynamic.vcs}", f"f{self.dynamic.flit_bits}", f"b{self.dynamic.buffers_per_vc}"]
        if self.has_static:
            parts.append(self.static.flow_control)
        return "-".join(parts)
