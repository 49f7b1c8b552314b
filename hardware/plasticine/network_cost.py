"""Area and energy of a Plasticine network (seed 004 §3.3.3, Eq 3.1/3.2, L345–368).

The seed synthesises switches and routers at 28 nm / 1 GHz and tabulates, per resource, the area, the
zero-load power P_inactive and the energy per flit E_flit = (P − P_inactive) T / #flit (Eq 3.1); the
network energy of a run is E_net = Σ_allocated P_inactive T_sim + E_flit · #flit (Eq 3.2), with
unallocated switches and routers perfectly power-gated (L357). Its tables are lost (figures only), so the
per-resource numbers here come from a parametric model whose constants are the ``NetworkCost`` fields
(assumptions NT5–NT9 in the presets). The model reproduces the seed's qualitative findings (L364–368):

switch (static, per node and network class of width w bits; inputs = outputs = 4·x + pb_ports)
    area   = fixed + crossbar · in · out · w + register · in · w · entries   (entries = skid 2 for db,
             1 register for cd, L304–308): roughly quadratic in the links x (Fig 3.10a)
    E_flit = w · (wire + crossbar_e · in · wire_load(w))   with wire_load(w) = 1 + log2(w / 32) / 4,
             so a vector switch has a higher per-bit energy than a scalar one (crossbar wire load)
router (dynamic, per node; P = 5 ports, flit f, v VCs, b entries per VC)
    area   = fixed + register · P·v·b·f + crossbar · P²·f + allocator · P·v·P
             (more VCs or deeper buffers: much more area; narrower flits: much smaller router)
    E_flit = bits · (wire + buffer + crossbar_e · P · wire_load(f)) + allocation
             (buffer write/read makes a router cost more per bit than a switch; the allocation energy is
             amortised over the flit, so a vector router has a lower per-bit energy than a scalar one;
             scalar data on a wide router clock-gates the high bits, bits = min(f, 32), Fig 3.10f)
P_inactive = inactive density × area (clock + leakage at zero load)

Every switch and router of the array counts toward area; a run's energy counts only the allocated ones
(nodes its routes use) for P_inactive, and every flit traversal for E_flit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from solvermap.hardware.plasticine.network import NetworkDesign

VECTOR_BITS = 512  # 16 words × 32 bits (L400)
SCALAR_BITS = 32
ROUTER_PORTS = 5  # N, E, S, W, local


def _wire_load(bits: int) -> float:
    return 1.0 + math.log2(max(bits, SCALAR_BITS) / SCALAR_BITS) / 4.0


@dataclass(frozen=True)
class Resource:
    """One switch or router type: area (mm²), zero-load power (W) and energy per flit traversal (J)."""

    name: str
    area_mm2: float
    inactive_w: float
    flit_j: float
    flit_bits: int


def switch(design: NetworkDesign, width: int, links: int) -> Resource | None:
    if links <= 0:
        return None
    c = design.cost
    ports = 4 * links + c.pb_ports
    entries = design.static.skid_entries if design.static.flow_control == "db" else 1
    area_um2 = (c.switch_fixed_um2 + c.crossbar_um2_per_bit * ports * ports * width
                + c.register_um2_per_bit * ports * width * entries)
    flit_fj = width * (c.wire_fj_per_bit + c.crossbar_fj_per_bit_port * ports * _wire_load(width))
    area = area_um2 * 1e-6
    return Resource(f"{'vector' if width > SCALAR_BITS else 'scalar'}-switch-x{links}", area,
                    c.inactive_w_per_mm2 * area, flit_fj * 1e-15, width)


def router(design: NetworkDesign) -> Resource:
    c = design.cost
    d = design.dynamic
    f = d.flit_bits
    area_um2 = (c.router_fixed_um2 + c.register_um2_per_bit * ROUTER_PORTS * d.vcs * d.buffers_per_vc * f
                + c.crossbar_um2_per_bit * ROUTER_PORTS * ROUTER_PORTS * f
                + c.allocator_um2 * ROUTER_PORTS * d.vcs * ROUTER_PORTS)
    area = area_um2 * 1e-6
    return Resource(f"router-v{d.vcs}-b{d.buffers_per_vc}-f{f}", area, c.inactive_w_per_mm2 * area,
                    router_flit_j(design, f), f)


def router_flit_j(design: NetworkDesign, bits: int) -> float:
    """Energy of one flit carrying ``bits`` useful bits through a router (unused bits clock-gated)."""
    c = design.cost
    f = design.dynamic.flit_bits
    bits = min(bits, f)
    per_bit = c.wire_fj_per_bit + c.buffer_fj_per_bit + c.crossbar_fj_per_bit_port * ROUTER_PORTS * _wire_load(f)
    return (bits * per_bit + c.allocation_fj_per_flit) * 1e-15


def resources(design: NetworkDesign) -> dict[str, Resource]:
    """The per-node resources of a design: vector / scalar switch and router, those that exist."""
    out: dict[str, Resource] = {}
    if design.has_static:
        vs = switch(design, VECTOR_BITS, design.static.vector_links)
        if vs is not None:
            out["vector_switch"] = vs
        ss = switch(design, SCALAR_BITS, design.static.scalar_links)
        if ss is not None:
            out["scalar_switch"] = ss
    if design.has_dynamic:
        out["router"] = router(design)
    return out


def area_mm2(design: NetworkDesign, nodes: int) -> dict[str, float]:
    """Network area of an array with ``nodes`` switch/router sites, by resource, and the total."""
    parts = {name: r.area_mm2 * nodes for name, r in resources(design).items()}
    parts["total"] = sum(parts.values())
    return parts


def energy_j(design: NetworkDesign, seconds: float, allocated: Mapping[str, int],
             switch_flits: Mapping[str, float], router_flits: Mapping[str, float]) -> dict[str, float]:
    """Eq 3.2: Σ_allocated P_inactive · T + Σ E_flit · #flit, by resource, and the total.

    ``allocated``: resource name → allocated nodes; ``switch_flits``: class (vector|scalar) → switch
    traversals; ``router_flits``: class → router traversals."""
    res = resources(design)
    out: dict[str, float] = {}
    for name, r in res.items():
        out[name] = r.inactive_w * seconds * allocated.get(name, 0)
    if "vector_switch" in res:
        out["vector_switch"] += res["vector_switch"].flit_j * switch_flits.get("vector", 0.0)
    if "scalar_switch" in res:
        out["scalar_switch"] += res["scalar_switch"].flit_j * switch_flits.get("scalar", 0.0)
    if "router" in res:
        d = design.dynamic
        vector_flits_per_packet = math.ceil(VECTOR_BITS / d.flit_bits)
        out["router"] += router_flit_j(design, VECTOR_BITS / vector_flits_per_packet) * router_flits.get("vector", 0.0)
        out["router"] += router_flit_j(design, SCALAR_BITS) * router_flits.get("scalar", 0.0)
    out["total"] = sum(out.values())
    return out
