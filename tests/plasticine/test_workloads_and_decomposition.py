"""Table 3.1 workloads as VBDFGs, and memory decomposition (seed 004 §4.2, §4.3.1)."""

from __future__ import annotations

import collections

import pytest

from solvermap.errors import InputError
from solvermap.hardware.targets import load_target
from solvermap.ir.graph import NodeKind
from solvermap.ir.workloads import build, info
from solvermap.ir.workloads.plasticine_apps import APPS
from solvermap.mappers.plasticine import decomposition

SPEC = load_target("plasticine")


def test_all_thirteen_table_3_1_apps_are_registered_lower_case():
    assert len(APPS) == 13
    for app in APPS:
        assert app == app.lower()
        assert "par" in info(app, "plasticine").params


@pytest.mark.parametrize("app", APPS)
def test_app_builds_a_valid_vbdfg_with_actors_and_streams(app):
    graph = build(app, "plasticine").ir
    graph.validate()
    assert graph.attrs["actors"]
    assert any(n.kind == NodeKind.IO for n in graph.nodes())
    for node in graph.nodes(NodeKind.OP):
        assert node.attrs["actor"] in graph.attrs["actors"]


def test_parallelization_factor_grows_the_loop_body():
    small = collections.Counter(n.attrs["actor"] for n in build("dotproduct", "plasticine", {"par": 2}).ir.nodes("op"))
    large = collections.Counter(n.attrs["actor"] for n in build("dotproduct", "plasticine", {"par": 8}).ir.nodes("op"))
    assert large["dot"] > small["dot"]


def test_bad_parallelization_factor_is_an_input_error():
    with pytest.raises(InputError, match="workload.par"):
        build("gemm", "plasticine", {"par": 0})


def test_shared_memory_accesses_are_ordered_by_tokens():
    graph = build("gemm", "plasticine").ir
    tokens = [e for e in graph.edges() if str(e.kind) == "token"]
    assert tokens, "p2p tokens order the tile writes before the reads"


def test_recurrent_apps_carry_a_loop_carried_token_with_an_initial_value():
    graph = build("lstm", "plasticine").ir
    carried = [e for e in graph.edges() if e.loop_carried and str(e.kind) == "token"]
    assert carried and all(e.init_tokens >= 1 for e in carried)


@pytest.mark.parametrize("app", APPS)
def test_after_decomposition_every_memory_fits_a_pmu(app):
    graph, _ = decomposition.decompose(build(app, "plasticine").ir, SPEC)
    for node in graph.nodes(NodeKind.MEMORY):
        if node.op == "sram":
            assert node.resource("sram_bytes") <= SPEC.pmu.capacity_bytes
            assert node.resource("banks", 1) <= SPEC.pmu.banks


def test_lstm_weights_are_sharded_into_pmu_sized_partitions():
    graph = build("lstm", "plasticine").ir
    size = graph.node("w_0").resource("sram_bytes")
    plan = {s.memory: s for s in decomposition.plan(graph, SPEC)}
    assert plan["w_0"].partitions == -(-int(size) // SPEC.pmu.capacity_bytes) == 8
    out, _ = decomposition.decompose(graph, SPEC)
    shards = [n for n in out.nodes(NodeKind.MEMORY) if n.attrs.get("shard_of") == "w_0"]
    assert len(shards) == 8
    merges = [a for a in out.attrs["actors"] if a.startswith("w_0#") or ".merge" in a]
    assert merges, "request-merge actors are inserted per memory partition"
    ors = [n for n in out.nodes(NodeKind.OP) if n.op == "or"]
    assert ors, "the receiver ORs the partitions' responses"


def test_unrolled_copies_of_one_access_become_one_request_stream():
    graph = build("gemm", "plasticine", {"par": 4}).ir
    before = [n for n in graph.nodes(NodeKind.MEMORY) if n.op == "sram_read" and n.attrs.get("access") == "c_old"]
    out, _ = decomposition.decompose(graph, SPEC)
    after = [n for n in out.nodes(NodeKind.MEMORY) if n.op == "sram_read" and n.attrs.get("access") == "c_old"]
    assert len(before) == 4 and len(after) == 1


def test_a_memory_that_fits_is_left_alone():
    graph = build("dotproduct", "plasticine").ir
    out, shards = decomposition.decompose(graph, SPEC)
    assert shards == [] and out is graph


def test_merging_the_copies_of_an_access_refuses_copies_that_fire_at_different_rates():
    from solvermap.ir.workloads.plasticine_vbdfg import AppBuilder

    app = AppBuilder("two_readers", 1, "test")
    mem = app.sram("m", 64)
    load = app.actor("load", 4)
    done = app.write(mem, load, load.op("mov", app.dram_load("m_in", 64)))
    for name, firings in (("big", 36), ("small", 4)):  # two readers, one access name: a lowering bug
        reader = app.actor(name, firings)
        app.dram_store(f"{name}_out", reader.op("mov", app.read(mem, reader, after=done, access="x")), 16 * firings)
    with pytest.raises(ValueError, match="access 'x' of memory 'm'.*fire \\[4, 36\\]"):
        decomposition.merge_parallel_accesses(app.finish())


def test_a_memory_both_replicated_and_sharded_gets_one_ack_tree_per_write_copy():
    """Many readers replicate a memory, its size shards every copy: the writer's actor ANDs the acks of
    every copy's shards (a transformer's input buffer after per-reader accesses; it raised a duplicate
    node name)."""
    from solvermap.ir.workloads.plasticine_vbdfg import AppBuilder

    app = AppBuilder("wide", 1, "test")
    words = 2 * SPEC.pmu.capacity_bytes // 4  # two PMUs' worth of 32-bit words
    mem = app.sram("m", words)
    load = app.actor("load", 4)
    done = app.write(mem, load, load.op("mov", app.dram_load("m_in", words)))
    readers = SPEC.pmu.inputs.scalar + 1  # one more read than a PMU has address inputs
    for r in range(readers):
        reader = app.actor(f"r{r}", 4)
        app.dram_store(f"r{r}_out", reader.op("mov", app.read(mem, reader, after=done, per=1)), 64)
    graph = app.finish()
    assert decomposition.replicas_needed(graph, "m", SPEC) > 1
    out, shards = decomposition.decompose(graph, SPEC)
    kinds = {s.how for s in shards if s.memory.startswith("m")}
    assert "duplicate" in kinds and len(kinds) == 2
    ands = [n for n in out.nodes(NodeKind.OP) if ".ackand." in n.name]
    assert len(ands) == len({n.name for n in ands}) >= 2
    assert all(n.attrs["actor"] == ands[0].attrs["actor"] for n in ands)
