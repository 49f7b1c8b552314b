"""The dataflow simulator: firing rule, backpressure, retiming effect, rates, DRAM, deadlock."""

from __future__ import annotations

import pytest

from solvermap.formulations.problems.partition import BinType, Item, Link, PartitionProblem, Retiming, complete
from solvermap.hardware.checks.partition import check
from solvermap.hardware.plasticine.dataflow_sim import Channel, SimGraph, Unit, simulate

STAGES, DEPTH, HOP = 6, 16, 1


def skip_chain(retimers: int, length: int = 5, firings: int = 1000) -> SimGraph:
    """A → B → C → D → E with a skip link A → E through ``retimers`` forwarding units."""
    names = [chr(ord("A") + k) for k in range(length)]
    units = [Unit(n, firings, STAGES) for n in names]
    chans = [Channel(a, b, DEPTH) for a, b in zip(names, names[1:])]
    prev = names[0]
    for k in range(retimers):
        units.append(Unit(f"R{k}", firings, STAGES))
        chans.append(Channel(prev, f"R{k}", DEPTH))
        prev = f"R{k}"
    chans.append(Channel(prev, names[-1], DEPTH))
    return SimGraph(tuple(units), tuple(chans))


def chain_problem() -> PartitionProblem:
    """The same chain as a partition problem: one op per bin forces 5 bins; the skip needs retiming."""
    items = tuple(Item(n, {"stages": 1}) for n in "ABCDE")
    links = tuple(Link(a, b, kind="vector") for a, b in zip("ABCD", "BCDE")) + (Link("A", "E", "skip", "vector"),)
    pcu = BinType("pcu", {"stages": 1}, inputs={"vector": 2}, outputs={"vector": 2})
    return PartitionProblem(items, (pcu,), links, acyclic=True, retiming=Retiming(STAGES + HOP, DEPTH))


def test_the_model_says_the_skip_link_needs_one_retiming_bin():
    problem = chain_problem()
    decision = complete(problem, {n: k for k, n in enumerate("ABCDE")}, {k: "pcu" for k in range(5)})
    assert check(problem, decision).ok and decision.retiming_bins == 1


def test_a_partition_whose_retiming_holds_runs_at_full_throughput():
    result = simulate(skip_chain(retimers=1), HOP)
    assert not result.deadlock and result.throughput > 0.95


def test_a_partition_that_ignores_retiming_loses_throughput():
    ignored = simulate(skip_chain(retimers=0), HOP)
    retimed = simulate(skip_chain(retimers=1), HOP)
    assert ignored.throughput < 0.85 < retimed.throughput
    assert ignored.cycles > retimed.cycles


def test_a_short_skip_within_the_buffer_needs_no_retiming():
    result = simulate(skip_chain(retimers=0, length=3), HOP)
    assert result.throughput > 0.95


def test_a_cycle_without_initial_tokens_deadlocks_and_names_the_units():
    units = (Unit("A", 10, 1), Unit("B", 10, 1))
    chans = (Channel("A", "B", 4), Channel("B", "A", 4))
    result = simulate(SimGraph(units, chans), 1)
    assert result.deadlock and any(b.startswith("A") for b in result.blocked)


def test_a_loop_carried_initial_token_breaks_the_deadlock():
    units = (Unit("A", 10, 1), Unit("B", 10, 1))
    chans = (Channel("A", "B", 4), Channel("B", "A", 4, init_tokens=1))
    result = simulate(SimGraph(units, chans), 1)
    assert not result.deadlock and result.firings == {"A": 10, "B": 10}


def test_per_tile_results_follow_the_channel_rates():
    units = (Unit("inner", 64, 1), Unit("outer", 4, 1))
    result = simulate(SimGraph(units, (Channel("inner", "outer", 4, src_every=16),)), 1)
    assert not result.deadlock and result.firings["outer"] == 4


def test_dram_bandwidth_bounds_a_stream():
    units = (Unit("load", 1000, 1, kind="dram", bytes_per_firing=64), Unit("use", 1000, 1))
    fast = simulate(SimGraph(units, (Channel("load", "use", 16),)), 1)
    slow = simulate(SimGraph(units, (Channel("load", "use", 16),), dram_bytes_per_cycle=32.0), 1)
    assert slow.cycles == pytest.approx(2 * 1000, rel=0.1)
    assert fast.cycles < 0.7 * slow.cycles


def test_units_on_one_pb_talk_in_one_cycle():
    far = (Unit("A", 100, 1, pb="x"), Unit("B", 100, 1, pb="y"))
    near = (Unit("A", 100, 1, pb="x"), Unit("B", 100, 1, pb="x"))
    chan = (Channel("A", "B", 4),)
    assert simulate(SimGraph(near, chan), 20).cycles < simulate(SimGraph(far, chan), 20).cycles


def test_a_window_scales_the_cycles_back():
    units = (Unit("A", 100_000, 1), Unit("B", 100_000, 1))
    result = simulate(SimGraph(units, (Channel("A", "B", 4),)), 1, window=1000)
    assert result.scale == pytest.approx(0.01)
    assert result.cycles == pytest.approx(100_000, rel=0.02)
