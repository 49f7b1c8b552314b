"""The NoC simulator: router saturation, agreement with the dataflow simulator, flow control, link
sharing, broadcast serialisation, flit width, deadlock detection, ideal network, time scheduling."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solvermap.hardware.plasticine.dataflow_sim import Channel, SimGraph, Unit
from solvermap.hardware.plasticine.dataflow_sim import simulate as dataflow_simulate
from solvermap.hardware.plasticine.noc_sim import (NocConfig, RoutedValue, ideal_key, router_testbench,
                                                   separable_allocate, simulate)

N = 600  # firings: below the window, so no scaling


def row(a: tuple[int, int], b: tuple[int, int]) -> tuple:
    links, (r, c) = [], a
    while c != b[1]:
        links.append(((r, c), (r, c + (1 if b[1] > c else -1))))
        c += 1 if b[1] > c else -1
    while r != b[0]:
        links.append(((r, c), (r + (1 if b[0] > r else -1), c)))
        r += 1 if b[0] > r else -1
    return tuple(links)


def chain(hops: int, network: str = "static") -> tuple[SimGraph, dict, dict]:
    """src → mid → dst, each on its own PB, ``hops`` apart on one row."""
    units = (Unit("src", N, 2, pb="p0"), Unit("mid", N, 6, pb="p1"), Unit("dst", N, 6, pb="p2"))
    chans = (Channel("src", "mid", 4, name="v1"), Channel("mid", "dst", 4, name="v2"))
    nodes = {"src": (0, 0), "mid": (0, hops), "dst": (0, 2 * hops)}
    routes = {"v1": RoutedValue("v1", network, (0, 0), row((0, 0), (0, hops))),
              "v2": RoutedValue("v2", network, (0, hops), row((0, hops), (0, 2 * hops)))}
    return SimGraph(units, chans), nodes, routes


def test_the_router_saturates_near_the_seeds_60_percent_under_uniform_traffic():
    saturated = router_testbench(1.0, vcs=2, cycles=3000)
    assert 0.55 <= saturated <= 0.70  # L364: ~60 % (5-port crossbar, no speedup, input-first allocation)
    assert router_testbench(0.3, vcs=2, cycles=3000) == pytest.approx(0.3, abs=0.03)  # below: accepts all


def test_the_separable_allocator_grants_one_vc_per_input_and_one_input_per_output():
    grants = separable_allocate({0: [(1, 5), (2, 6)], 1: [(3, 5)], 2: [(4, 6)]}, {})
    assert len({g[0] for g in grants}) == len(grants) and len({g[2] for g in grants}) == len(grants)
    assert len(grants) == 2  # input 0 asks for one output only (input first): 5 or 6 go to one input each


def test_static_links_agree_with_the_dataflow_simulator_at_distance_delay():
    graph, nodes, routes = chain(3)
    noc = simulate(graph, nodes, routes, NocConfig())
    reference = dataflow_simulate(graph, lambda ch: 4)  # (3 hops + 1) switch cycles
    assert not noc.deadlock and noc.cycles == pytest.approx(reference.cycles, rel=0.02)


def test_the_ideal_network_is_never_slower():
    for network in ("static", "dynamic"):
        graph, nodes, routes = chain(4, network)
        real = simulate(graph, nodes, routes, NocConfig(flit_bits=128))
        ideal = simulate(graph, nodes, routes, NocConfig(mode="ideal", flit_bits=128))
        assert ideal.cycles <= real.cycles


def fork_join(hops_long: int) -> tuple[SimGraph, dict, dict]:
    """src feeds join directly (short) and through a far-away relay (long): the short path needs
    buffering = throughput × latency difference (L419)."""
    units = (Unit("src", N, 1, pb="p0"), Unit("relay", N, 6, pb="p1"), Unit("join", N, 1, pb="p2"))
    chans = (Channel("src", "join", 4, name="short"), Channel("src", "relay", 4, name="out"),
             Channel("relay", "join", 4, name="back"))
    nodes = {"src": (0, 0), "join": (0, 1), "relay": (0, hops_long)}
    routes = {"short": RoutedValue("short", "static", (0, 0), row((0, 0), (0, 1))),
              "out": RoutedValue("out", "static", (0, 0), row((0, 0), (0, hops_long))),
              "back": RoutedValue("back", "static", (0, hops_long), row((0, hops_long), (0, 1)))}
    return SimGraph(units, chans), nodes, routes


def test_credit_based_flow_control_loses_throughput_on_unbalanced_paths():
    graph, nodes, routes = fork_join(8)
    skid = simulate(graph, nodes, routes, NocConfig(flow_control="db"))
    credit = simulate(graph, nodes, routes, NocConfig(flow_control="cd"))
    assert credit.cycles > 1.5 * skid.cycles  # L419: "significantly impacted"
    assert not skid.deadlock and not credit.deadlock


def two_flows(shared: bool, flit_bits: int = 512) -> tuple[SimGraph, dict, dict]:
    units = (Unit("a", N, 1, pb="pa"), Unit("b", N, 1, pb="pb"), Unit("x", N, 1, pb="px"), Unit("y", N, 1, pb="py"))
    chans = (Channel("a", "x", 4, name="va"), Channel("b", "y", 4, name="vb"))
    if shared:  # both cross (0,1)→(0,2)
        nodes = {"a": (0, 0), "b": (1, 1), "x": (0, 3), "y": (0, 2)}
        routes = {"va": RoutedValue("va", "dynamic", (0, 0), row((0, 0), (0, 3))),
                  "vb": RoutedValue("vb", "dynamic", (1, 1), (((1, 1), (0, 1)), ((0, 1), (0, 2))))}
    else:
        nodes = {"a": (0, 0), "b": (2, 0), "x": (0, 3), "y": (2, 3)}
        routes = {"va": RoutedValue("va", "dynamic", (0, 0), row((0, 0), (0, 3))),
                  "vb": RoutedValue("vb", "dynamic", (2, 0), row((2, 0), (2, 3)))}
    return SimGraph(units, chans), nodes, routes


def test_two_full_rate_paths_on_one_link_share_its_bandwidth():
    alone = simulate(*two_flows(False), NocConfig())
    shared = simulate(*two_flows(True), NocConfig())
    assert shared.cycles > 1.7 * alone.cycles
    assert alone.cycles < 1.1 * N + 50


def test_a_vector_packet_wider_than_the_flit_takes_several_cycles():
    wide = simulate(*two_flows(False), NocConfig(flit_bits=512))
    narrow = simulate(*two_flows(False), NocConfig(flit_bits=128))
    assert narrow.cycles == pytest.approx(4 * wide.cycles, rel=0.1)  # 512 / 128 = 4 flits per packet


def test_a_broadcast_is_sent_to_its_outputs_one_at_a_time():
    units = (Unit("s", N, 1, pb="ps"), *(Unit(f"d{k}", N, 1, pb=f"p{k}") for k in range(3)))
    chans = tuple(Channel("s", f"d{k}", 4, name="bc") for k in range(3))
    nodes = {"s": (1, 0), "d0": (0, 1), "d1": (1, 2), "d2": (2, 1)}  # the tree branches 3 ways at (1,1)
    tree = (((1, 0), (1, 1)), ((1, 1), (0, 1)), ((1, 1), (1, 2)), ((1, 1), (2, 1)))
    result = simulate(SimGraph(units, chans), nodes, {"bc": RoutedValue("bc", "dynamic", (1, 0), tree)}, NocConfig())
    assert result.cycles == pytest.approx(3 * N, rel=0.1) and not result.deadlock


def test_a_cycle_without_initial_tokens_is_reported_as_deadlock():
    units = (Unit("a", N, 1, pb="pa"), Unit("b", N, 1, pb="pb"))
    chans = (Channel("a", "b", 4, name="ab"), Channel("b", "a", 4, name="ba"))
    nodes = {"a": (0, 0), "b": (0, 1)}
    routes = {"ab": RoutedValue("ab", "dynamic", (0, 0), (((0, 0), (0, 1)),)),
              "ba": RoutedValue("ba", "dynamic", (0, 1), (((0, 1), (0, 0)),))}
    result = simulate(SimGraph(units, chans), nodes, routes, NocConfig())
    assert result.deadlock and result.blocked
    live = SimGraph(units, (Channel("a", "b", 4, name="ab"), Channel("b", "a", 4, init_tokens=2, name="ba")))
    assert not simulate(live, nodes, routes, NocConfig()).deadlock


def test_a_time_scheduled_pb_fires_once_per_loop_of_its_instructions():
    graph, nodes, routes = chain(1)
    pipelined = simulate(graph, nodes, routes, NocConfig())
    scheduled = simulate(graph, nodes, routes, NocConfig(), ii={"mid": 6})
    assert scheduled.cycles == pytest.approx(6 * N, rel=0.05) and pipelined.cycles < 1.2 * N


def test_flit_and_hop_counts_scale_with_the_routes():
    graph, nodes, routes = chain(3, "dynamic")
    result = simulate(graph, nodes, routes, NocConfig())
    assert result.dynamic_hops["vector"] == pytest.approx(2 * 3 * N)  # two paths of 3 links
    assert result.packets_delivered == 2 * N


def random_mapped(data) -> tuple[SimGraph, dict, dict, NocConfig, dict | None]:
    """Random DAGs (plus a loop-carried back edge and a DRAM source) placed on a 3×4 mesh, each link
    static or dynamic, skid or credit flow control, flit 128 or 512, optional time scheduling."""
    n = data.draw(st.integers(3, 6))
    units = [Unit("u0", 120, 4, kind="dram", pb="p0", bytes_per_firing=64)]
    units += [Unit(f"u{k}", 120, data.draw(st.integers(1, 6)), pb=f"p{k}") for k in range(1, n)]
    nodes = {f"u{k}": (data.draw(st.integers(0, 2)), data.draw(st.integers(0, 3))) for k in range(n)}
    chans, routes = [], {}
    for k in range(1, n):
        for j in sorted(set(data.draw(st.lists(st.integers(0, k - 1), min_size=1, max_size=2)))):
            name = f"v{j}_{k}"
            chans.append(Channel(f"u{j}", f"u{k}", data.draw(st.integers(2, 8)), name=name))
            routes[name] = RoutedValue(name, data.draw(st.sampled_from(["static", "dynamic"])), nodes[f"u{j}"],
                                       row(nodes[f"u{j}"], nodes[f"u{k}"]), data.draw(st.sampled_from(["vector", "scalar"])))
    if n > 2:
        chans.append(Channel(f"u{n - 1}", "u1", 4, init_tokens=2, name="back"))
        routes["back"] = RoutedValue("back", "static", nodes[f"u{n - 1}"], row(nodes[f"u{n - 1}"], nodes["u1"]))
    graph = SimGraph(tuple(units), tuple(chans), dram_bytes_per_cycle=48.0, dram_latency=20)
    config = NocConfig(flow_control=data.draw(st.sampled_from(["db", "cd"])), flit_bits=data.draw(st.sampled_from([128, 512])))
    ii = {f"u{k}": data.draw(st.integers(1, 3)) for k in range(1, n)} if data.draw(st.booleans()) else None
    return graph, nodes, routes, config, ii


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_the_ideal_network_is_never_slower_on_random_mapped_graphs(data):
    graph, nodes, routes, config, ii = random_mapped(data)
    real = simulate(graph, nodes, routes, config, ii=ii)
    ideal = simulate(graph, nodes, routes, dataclasses.replace(config, mode="ideal"), ii=ii)
    assert not ideal.deadlock
    assert ideal.window_cycles <= real.window_cycles


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_an_ideal_run_reads_only_the_fields_of_its_key(data):
    """simulate_mapping shares one ideal run between designs whose ideal_key agrees: the fields outside the key
    (flit width, static hop latency, value widths) change nothing in ideal mode, deadlocked runs included; a
    field inside it can (the router hop latency sets the deadlock horizon)."""
    graph, nodes, routes, config, ii = random_mapped(data)
    if data.draw(st.booleans()):  # u2 → u1 with no initial token: a deadlock, ideal run too, when u2 reads u1
        graph = dataclasses.replace(graph, channels=graph.channels + (Channel("u2", "u1", 4, name="stuck"),))
        routes = {**routes, "stuck": RoutedValue("stuck", "static", nodes["u2"], row(nodes["u2"], nodes["u1"]))}
    ideal = dataclasses.replace(config, mode="ideal")
    other = dataclasses.replace(ideal, flit_bits=data.draw(st.sampled_from([64, 128, 256, 512])),
                                static_hop_cycles=data.draw(st.integers(1, 3)), vector_bits=1024, scalar_bits=64)
    assert ideal_key(other) == ideal_key(ideal)
    assert simulate(graph, nodes, routes, other, ii=ii) == simulate(graph, nodes, routes, ideal, ii=ii)
    for field, value in (("buffers_per_vc", 6), ("router_hop_cycles", 3), ("flow_control", "cd"), ("skid_entries", 5)):
        if getattr(ideal, field) != value:
            assert ideal_key(dataclasses.replace(ideal, **{field: value})) != ideal_key(ideal)


def test_the_router_hop_latency_is_in_the_ideal_key_because_it_moves_a_deadlocked_ideal_run():
    """Two units waiting on each other with no initial token: the ideal run reports the deadlock after an idle
    horizon that grows with the router hop latency, so two ideal runs differing only in it end apart and may not
    share a memo entry."""
    units = (Unit("a", 100, 2, pb="p0"), Unit("b", 100, 2, pb="p1"))
    chans = (Channel("a", "b", 4, name="x"), Channel("b", "a", 4, name="y"))
    nodes = {"a": (0, 0), "b": (0, 2)}
    routes = {"x": RoutedValue("x", "static", (0, 0), row((0, 0), (0, 2))),
              "y": RoutedValue("y", "static", (0, 2), row((0, 2), (0, 0)))}
    fast, slow = NocConfig(mode="ideal", router_hop_cycles=1), NocConfig(mode="ideal", router_hop_cycles=3)
    one, three = (simulate(SimGraph(units, chans), nodes, routes, c) for c in (fast, slow))
    assert one.deadlock and three.deadlock
    assert one.window_cycles != three.window_cycles
    assert ideal_key(fast) != ideal_key(slow)
