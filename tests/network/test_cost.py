"""The network area / energy model reproduces the seed's qualitative findings (L345–368, Eq 3.1/3.2)."""

from __future__ import annotations

import pytest

from solvermap.hardware.plasticine import network_cost as cost
from solvermap.hardware.plasticine.network import NetworkDesign
from solvermap.hardware.targets import load_target


def design(**kw) -> NetworkDesign:
    return NetworkDesign(**kw)


def per_bit(resource: cost.Resource) -> float:
    return resource.flit_j / resource.flit_bits


def test_switch_area_grows_roughly_quadratically_with_links():
    areas = [cost.switch(design(type="static"), 512, x).area_mm2 for x in (1, 2, 4, 8)]
    ratios = [areas[k + 1] / areas[k] for k in range(3)]
    assert all(r > 1.6 for r in ratios) and ratios[-1] > ratios[0]  # superlinear, approaching 4x per doubling


def test_more_vcs_or_deeper_buffers_cost_router_area_and_narrow_flits_save_it():
    base = cost.router(design(type="dynamic", dynamic={"vcs": 2, "flit_bits": 512})).area_mm2
    assert cost.router(design(type="dynamic", dynamic={"vcs": 4, "flit_bits": 512})).area_mm2 > 1.6 * base
    assert cost.router(design(type="dynamic", dynamic={"vcs": 2, "buffers_per_vc": 6, "flit_bits": 512})).area_mm2 > 1.6 * base
    assert cost.router(design(type="dynamic", dynamic={"vcs": 2, "flit_bits": 128})).area_mm2 < 0.4 * base


def test_per_bit_energies_order_as_in_the_seed():
    d = design(type="hybrid", static={"vector_links": 2}, dynamic={"flit_bits": 512, "vcs": 4})
    res = cost.resources(d)
    assert per_bit(res["router"]) > per_bit(res["vector_switch"])  # router > switch at one granularity
    assert per_bit(res["vector_switch"]) > per_bit(res["scalar_switch"])  # crossbar wire load
    scalar_router = cost.router(design(type="dynamic", dynamic={"flit_bits": 32, "vcs": 4}))
    assert per_bit(res["router"]) < per_bit(scalar_router)  # allocation amortised over a wide flit


def test_the_scalar_network_adds_little_area_and_the_network_is_10_to_20_percent():
    spec = load_target("plasticine-static")
    nodes = 8 * 18
    area = cost.area_mm2(spec.network, nodes)
    assert area["scalar_switch"] < 0.2 * area["vector_switch"]
    pbs = spec.pcu.count * spec.pcu.area_mm2 + spec.pmu.count * spec.pmu.area_mm2
    assert 0.08 < area["total"] / (area["total"] + pbs) < 0.2


def test_eq_3_2_power_gates_unallocated_resources():
    d = load_target("plasticine-hybrid").network
    idle = cost.energy_j(d, 1e-3, {}, {}, {})
    assert idle["total"] == 0.0
    busy = cost.energy_j(d, 1e-3, {"router": 10}, {}, {"vector": 1000.0})
    res = cost.resources(d)
    expected = 10 * res["router"].inactive_w * 1e-3 + 1000 * cost.router_flit_j(d, 128)
    assert busy["router"] == pytest.approx(expected)
