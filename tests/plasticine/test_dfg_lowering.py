"""DFG files from other toolchains on Plasticine: the generic lowering (actors, memories, streams, op
table, trip count), optimal partitions that pass the checker, and full maps that simulate without deadlock."""

from __future__ import annotations

from pathlib import Path

import pytest

from solvermap.errors import InputError
from solvermap.formulations.solver import SolverConfig
from solvermap.hardware.targets import load_target
from solvermap.ir.dfg_dot import loads as dot_loads
from solvermap.ir.graph import NodeKind
from solvermap.ir.workloads import build
from solvermap.mappers.pipeline import Context
from solvermap.mappers.plasticine import PIPELINE, dfg_lowering, lowering

SAMPLES = Path(__file__).parent / "dfg"
CASES = {  # file → workload parameters
    "fir_anonymous_blocks.dot": {},
    "accumulate_red_back_edges.dot": {"back_edge": "color:red"},
    "two_loops_graph_attributes.dot": {},
    "gemm_unroll8.dot": {},
    "saxpy.graphml": {},
    "array_add_morpher.xml": {"trip_count": 20},
    "dot_product.json": {},
}


def _context(name: str, params: dict, target: str = "plasticine", **overrides) -> Context:
    spec = load_target(target, overrides or None)
    workload = build(str(SAMPLES / name), spec.family, params)
    return Context(workload=workload, target=spec, solver=SolverConfig(backend="cpsat", time_limit_s=60, seed=0),
                   options={}, seed=0)


@pytest.mark.parametrize("name", sorted(CASES))
def test_dfg_file_partitions_optimally_and_passes_the_checker(name):
    result = PIPELINE.run(_context(name, CASES[name]), upto="partition")
    record = result.records[-1]
    assert record.solver.status == "optimal" and record.solver.bound == record.solver.objective
    assert record.check.ok and record.solution_source == "solver"
    assert record.solver.objective <= min(b.objective for b in record.baselines)


@pytest.mark.parametrize("name", ["fir_anonymous_blocks.dot", "saxpy.graphml", "array_add_morpher.xml",
                                  "two_loops_graph_attributes.dot", "dot_product.json"])
def test_dfg_file_maps_end_to_end_without_deadlock(name):
    result = PIPELINE.run(_context(name, CASES[name]))
    assert all(r.check.ok for r in result.records)
    assert result.validation["deadlock"] is False and result.validation["cycles"] > 0


def _lowered(text: str, spec_name: str = "plasticine", **params):
    return dfg_lowering.lower(dot_loads(text, "g.dot"), load_target(spec_name), params)


def test_one_actor_per_loop_and_read_level_fires_trip_count_over_lanes():
    g = _lowered("digraph g { trip_count=160; i [opcode=phi]; a [opcode=gep]; l [opcode=load]; m [opcode=mul];"
                 " i -> a -> l -> m }")
    assert g.attrs["actors"] == {"g.r0": {"firings": 10, "loop": "g"}, "g.r1": {"firings": 10, "loop": "g"}}
    assert g.node("m").attrs["actor"] == "g.r1" and g.node("a").attrs["actor"] == "g.r0"


def test_trip_count_parameter_overrides_the_graph_attribute():
    g = _lowered("digraph g { trip_count=160; m [opcode=mul] }", trip_count=64)
    assert g.attrs["actors"]["g"]["firings"] == 4


def test_scalar_loop_fires_once_per_iteration():
    g = _lowered("digraph g { trip_count=100; c [opcode=icmp] }")
    assert g.attrs["actors"]["g"]["firings"] == 100


def test_loop_attribute_makes_one_actor_per_loop():
    g = _lowered('digraph g { "trip_count.outer"=32; trip_count=320; a [opcode=mul, loop=inner];'
                 " b [opcode=add, loop=outer]; a -> b }")
    assert g.attrs["actors"]["inner"]["firings"] == 20 and g.attrs["actors"]["outer"]["firings"] == 2
    edge = g.out_edges("a")[0]
    assert edge.attrs["src_every"] == 10


def test_address_arithmetic_is_scalar_integer_whatever_its_name():
    g = _lowered("digraph g { a [opcode=add]; b [opcode=add]; l [opcode=load]; a -> l; l -> b }")
    assert g.node("a").attrs["lanes"] == 1 and g.node("a").attrs["int"] is True
    assert g.node("b").attrs["lanes"] == 16 and g.node("b").attrs["int"] is False


def test_loads_of_one_array_share_a_memory_of_its_size():
    g = _lowered("digraph g { l1 [opcode=load, array=A, array_bytes=8192]; l2 [opcode=load, array=A];"
                 " m [opcode=mul]; l1 -> m; l2 -> m }")
    memories = [n for n in g.nodes(NodeKind.MEMORY) if n.op == "sram"]
    assert [(m.name, m.resource("sram_bytes")) for m in memories] == [("A", 8192.0)]
    assert sorted(n.name for n in g.nodes(NodeKind.MEMORY) if n.op == "sram_read") == ["A.rd1", "A.rd2"]


def test_store_takes_data_from_operand_0_and_address_from_operand_1():
    g = _lowered("digraph g { v [opcode=mul]; p [opcode=gep]; s [opcode=store, array=C];"
                 " v -> s [operand=0]; p -> s [operand=1] }")
    ports = {e.src: e.dst_port for e in g.in_edges("C.wr1")}
    assert ports == {"v": "wdata", "p": "waddr"}


def test_inputs_and_outputs_are_dram_streams_and_constants_immediates():
    g = _lowered("digraph g { x [opcode=input]; c [opcode=const]; m [opcode=mul]; y [opcode=output];"
                 " x -> m; c -> m; m -> y }")
    assert g.node("x").op == "dram_load" and g.node("y").op == "dram_store" and "c" not in g
    assert [e.src for e in g.in_edges("m")] == ["x"]


def test_op_table_stages_reach_the_partition_problem():
    spec = load_target("plasticine", {"ops.mul": {"stages": 3}})
    g = dfg_lowering.lower(dot_loads("digraph g { m [opcode=MUL]; a [opcode=add]; m -> a }", "g.dot"), spec, {})
    items = {i.name: i.demand["stages"] for i in lowering.partition_problem(g, spec).items}
    assert items == {"m": 3, "a": 1}


def test_back_edge_keeps_at_least_one_initial_token():
    g = _lowered("digraph g { a [opcode=add]; a -> a [loop_carried=true, init_tokens=0] }")
    assert g.edge("a", "a", 0).init_tokens == 1


@pytest.mark.parametrize("text, message", [
    ("digraph g { l [opcode=load]; s [opcode=store]; l -> s }", "no operations"),
    ("digraph g { m [kind=memory, op=sram]; a [opcode=add]; m -> a }", "memory node"),
    ('digraph g { trip_count="lots"; a [opcode=add] }', "graph attribute trip_count"),
    ('digraph g { l [opcode=load, array_bytes="-5"]; a [opcode=add]; l -> a }', "array_bytes"),
])
def test_what_cannot_be_lowered_is_one_line(text, message):
    with pytest.raises(InputError, match=message):
        _lowered(text)


def test_graph_that_names_actors_but_not_on_every_op_is_an_input_error():
    g = dot_loads("digraph g { a [opcode=add] }", "g.dot")
    g.attrs["actors"] = {"main": {"firings": 4, "loop": ""}}
    with pytest.raises(InputError, match=r"node 'a'.attrs.actor"):
        dfg_lowering.check_actors(g)


def test_dot_file_that_names_its_actors_maps_as_a_vbdfg():
    g = dot_loads('digraph v { actors="{\\"main\\": {\\"firings\\": 8, \\"loop\\": \\"\\"}}";'
                  ' a [op=mul, actor=main, lanes=16, int=false]; b [op=add, actor=main, lanes=16];'
                  ' a -> b [kind=vector, src_every=1] }', "v.dot")
    typed = dfg_lowering.check_actors(g)
    assert typed.attrs["actors"]["main"]["firings"] == 8 and typed.node("a").attrs["lanes"] == 16
    problem = lowering.partition_problem(typed, load_target("plasticine"))
    assert sorted(i.name for i in problem.items) == ["a", "b"]
