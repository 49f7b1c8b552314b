"""The typed dataflow graph: JSON round trip, broadcast groups, and every validation error path."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solvermap.errors import InputError
from solvermap.ir.graph import Accuracy, DataflowGraph, EdgeKind, NodeKind
from solvermap.ir.serialize import dumps, from_json, load, loads, read_dot, read_graphml, to_json

NAMES = st.text(alphabet="abcdefghij_0123456789", min_size=1, max_size=6)


@st.composite
def graphs(draw):
    """Random valid graphs: forward edges go from lower to higher index; back edges are loop-carried."""
    names = draw(st.lists(NAMES, min_size=1, max_size=8, unique=True))
    g = DataflowGraph(draw(NAMES), {"seed": draw(st.integers(0, 9))})
    for name in names:
        g.add_node(
            name,
            draw(st.sampled_from([k for k in NodeKind if k != NodeKind.HIERARCHY])),
            op=draw(st.sampled_from(["add", "mul", "sram", "Conv", ""])),
            resources=draw(st.dictionaries(st.sampled_from(["ops", "lanes", "sram_bytes", "macs"]),
                                           st.floats(0, 1e6, allow_nan=False), max_size=3)),
            shape=draw(st.none() | st.lists(st.integers(0, 64), max_size=3)),
            dtype=draw(st.none() | st.sampled_from(["int8", "float32", "fixed16"])),
            accuracy=draw(st.none() | st.builds(Accuracy, st.floats(0, 1), st.floats(0, 1))),
            replication=draw(st.lists(st.integers(1, 4), max_size=3)),
            attrs=draw(st.dictionaries(st.sampled_from(["note", "k"]), st.integers(-5, 5) | st.text(max_size=4), max_size=2)),
        )
    for _ in range(draw(st.integers(0, 12))):
        i, j = sorted(draw(st.tuples(st.integers(0, len(names) - 1), st.integers(0, len(names) - 1))))
        back = i == j or draw(st.booleans())
        src, dst = (names[j], names[i]) if back else (names[i], names[j])
        g.add_edge(src, dst, draw(st.sampled_from(list(EdgeKind))), width_bits=draw(st.integers(1, 512)),
                   activation=draw(st.floats(0, 1)), src_port=draw(st.sampled_from(["out", "o1"])),
                   loop_carried=back, init_tokens=draw(st.integers(0, 3)) if back else 0)
    return g


@settings(max_examples=60, deadline=None)
@given(graphs())
def test_json_round_trip_preserves_every_attribute(graph):
    again = loads(dumps(graph))
    assert to_json(again) == to_json(graph)
    assert again.summary() == graph.summary()


def test_nested_hierarchy_round_trips():
    child = DataflowGraph("child")
    child.add_node("a", "op", op="mul")
    parent = DataflowGraph("parent")
    parent.add_node("h", "hierarchy", child=child, replication=(2, 2))
    again = loads(dumps(parent))
    assert again.node("h").child.node("a").op == "mul"
    assert again.node("h").replication == (2, 2)


def test_broadcast_counts_one_logical_link_per_produced_value():
    g = DataflowGraph()
    for n in "abcd":
        g.add_node(n)
    g.add_edge("a", "b", "vector")
    g.add_edge("a", "c", "vector")
    g.add_edge("a", "d", "scalar", src_port="count")
    groups = g.broadcast_groups()
    assert sorted(groups) == [("a", "count"), ("a", "out")]
    assert sorted(e.dst for e in groups[("a", "out")]) == ["b", "c"]


def test_loop_carried_back_edge_may_close_a_cycle():
    g = DataflowGraph()
    g.add_node("a")
    g.add_node("b")
    g.add_edge("a", "b")
    g.add_edge("b", "a", loop_carried=True, init_tokens=1)
    assert g.validate().topological_order() == ["a", "b"]


# --------------------------------------------------------------------------- error paths


def two_nodes():
    g = DataflowGraph(source="g.json")
    g.add_node("a")
    g.add_node("b")
    return g


def test_cycle_not_marked_loop_carried_is_rejected_naming_the_cycle():
    g = two_nodes()
    g.add_edge("a", "b")
    g.add_edge("b", "a")
    with pytest.raises(InputError, match=r"g\.json: field 'cycle a -> b -> a'.*loop_carried"):
        g.validate()


def test_dangling_edge_names_the_missing_node():
    with pytest.raises(InputError, match="dangling edge: no node named 'zz'"):
        two_nodes().add_edge("a", "zz")


@pytest.mark.parametrize("kind", ["operator", "", None])
def test_unknown_node_kind_is_rejected(kind):
    with pytest.raises(InputError, match=r"node 'x'\.kind.*unknown kind"):
        DataflowGraph().add_node("x", kind)


def test_unknown_edge_kind_is_rejected():
    with pytest.raises(InputError, match=r"edge 'a'->'b'\.kind.*unknown kind 'wire'"):
        two_nodes().add_edge("a", "b", "wire")


def test_negative_resource_is_rejected():
    with pytest.raises(InputError, match=r"node 'x'\.resources\.ops.*negative size -3"):
        DataflowGraph().add_node("x", resources={"ops": -3})


def test_negative_shape_is_rejected():
    with pytest.raises(InputError, match=r"node 'x'\.shape.*negative dimension"):
        DataflowGraph().add_node("x", shape=(2, -1))


def test_non_positive_width_is_rejected():
    with pytest.raises(InputError, match=r"width_bits.*positive"):
        two_nodes().add_edge("a", "b", width_bits=0)


def test_activation_outside_unit_interval_is_rejected():
    with pytest.raises(InputError, match=r"activation.*\[0, 1\]"):
        two_nodes().add_edge("a", "b", activation=1.5)


def test_initial_tokens_only_on_loop_carried_edges():
    with pytest.raises(InputError, match="only loop-carried edges carry initial tokens"):
        two_nodes().add_edge("a", "b", init_tokens=1)


def test_duplicate_node_is_rejected():
    with pytest.raises(InputError, match="duplicate node name"):
        two_nodes().add_node("a")


def test_unknown_dtype_is_rejected():
    with pytest.raises(InputError, match="unknown dtype 'float7'"):
        DataflowGraph().add_node("x", dtype="float7")


def test_replication_beyond_three_dimensions_is_rejected():
    with pytest.raises(InputError, match="replication"):
        DataflowGraph().add_node("x", replication=(2, 2, 2, 2))


def test_negative_accuracy_budget_is_rejected():
    with pytest.raises(InputError, match=r"accuracy\.l1_budget"):
        DataflowGraph().add_node("x", accuracy=Accuracy(l1_budget=-0.1))


def test_hierarchy_node_needs_a_child_graph():
    with pytest.raises(InputError, match="hierarchy node without a child graph"):
        DataflowGraph().add_node("h", "hierarchy")


# --------------------------------------------------------------------------- loaders


def test_json_loader_names_unknown_field():
    data = to_json(two_nodes())
    data["nodes"][1]["colour"] = "red"
    with pytest.raises(InputError, match=r"x\.json: field 'nodes\[1\]\.colour': unknown field"):
        from_json(data, "x.json")


def test_json_loader_names_missing_field():
    data = to_json(two_nodes())
    del data["nodes"][0]["kind"]
    with pytest.raises(InputError, match=r"nodes\[0\]\.kind': missing required field"):
        from_json(data, "x.json")


def test_json_loader_rejects_other_versions():
    data = to_json(two_nodes())
    data["version"] = 99
    with pytest.raises(InputError, match="unsupported version 99"):
        from_json(data, "x.json")


def test_json_loader_reports_syntax_errors_with_line():
    with pytest.raises(InputError, match=r"field 'line 1': invalid JSON"):
        loads("{nodes: ", "x.json")


def test_json_loader_validates_edges_after_nodes():
    data = to_json(two_nodes())
    data["edges"] = [{"src": "a", "dst": "q"}]
    with pytest.raises(InputError, match="dangling edge"):
        from_json(data, "x.json")


def test_dot_import_reads_kinds_resources_and_loop_carried_edges(tmp_path):
    path = tmp_path / "g.dot"
    path.write_text('''digraph app {
      ld [kind=memory, op=sram, "resource.sram_bytes"=4096];
      mul [op=mul, res_ops=2];
      acc [op=add, res_ops=1];
      ld -> mul [kind=vector, width_bits=512];
      mul -> acc [kind=vector, activation=0.5];
      acc -> acc [kind=scalar, loop_carried=true, init_tokens=1];
    }''')
    g = read_dot(path)
    assert g.node("ld").kind == NodeKind.MEMORY and g.node("ld").resource("sram_bytes") == 4096
    assert g.node("mul").resource("ops") == 2
    assert g.edge("mul", "acc", 0).activation == 0.5
    assert g.edge("acc", "acc", 0).loop_carried


def test_dot_import_rejects_cycles_without_loop_carried(tmp_path):
    path = tmp_path / "c.dot"
    path.write_text("digraph c { a -> b; b -> a; }")
    with pytest.raises(InputError, match="cycle"):
        load(path)


def test_graphml_round_trip_through_networkx(tmp_path):
    import networkx as nx

    g = nx.MultiDiGraph()
    g.add_node("x", kind="io", op="input")
    g.add_node("y", kind="op", op="relu", **{"res_flops": 10.0})
    g.add_edge("x", "y", kind="tensor", width_bits=256)
    path = tmp_path / "g.graphml"
    nx.write_graphml(g, path)
    ir = read_graphml(path)
    assert ir.node("y").resource("flops") == 10 and ir.edge("x", "y", 0).width_bits == 256


def test_unknown_graph_format_is_rejected(tmp_path):
    path = tmp_path / "g.txt"
    path.write_text("")
    with pytest.raises(InputError, match="unknown graph format"):
        load(path)


def test_json_file_round_trip(tmp_path):
    from solvermap.ir.serialize import save

    g = two_nodes()
    g.add_edge("a", "b", "vector", activation=0.25)
    save(g, tmp_path / "g.json")
    assert json.loads((tmp_path / "g.json").read_text())["format"] == "solvermap.graph"
    assert load(tmp_path / "g.json").edge("a", "b", 0).activation == 0.25
