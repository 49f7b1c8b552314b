"""DFG files as CGRA tools write them: DOT (anonymous blocks, clusters, default attributes, red back edges,
graph attributes), GraphML with graph data, Morpher's XML DFG dialect, and the JSON format's type checks."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from solvermap.errors import InputError
from solvermap.ir.dfg_dot import loads as dot_loads
from solvermap.ir.serialize import load, loads
from solvermap.ir.workloads import build

SAMPLES = Path(__file__).parents[1] / "plasticine" / "dfg"


# --------------------------------------------------------------------------- DOT


def test_dot_nodes_inside_anonymous_blocks_and_clusters_are_read():
    g = load(SAMPLES / "fir_anonymous_blocks.dot")
    assert len(g) == 19 and g.nx.number_of_edges() == 23
    assert g.node("Op_10").attrs["subgraph"] == "cluster_taps"


def test_dot_graph_attributes_are_kept():
    g = load(SAMPLES / "fir_anonymous_blocks.dot")
    assert g.name == "fir_INNERMOST_LN1"
    assert g.attrs["trip_count"] == "512" and g.attrs["label"] == "fir inner loop"
    assert g.attrs["nslimit"] == "1000.0" and g.attrs["subgraphs"]["cluster_taps"]["label"] == "taps"


def test_dot_operation_comes_from_the_label_when_no_opcode_is_given():
    g = dot_loads('digraph g { a [label=" add inc  C=0x1BB=for.body HyIns=ADD,\\n1, ASAP=3"]; '
                  'b [label="(3) mul"]; c [label="%x = fadd fast float %a, %b"]; d [opcode=load, label=ignored]; '
                  'a -> b -> c -> d }')
    assert [g.node(n).op for n in "abcd"] == ["add", "mul", "fadd", "load"]


def test_dot_edge_defaults_apply_in_statement_order():
    g = dot_loads("digraph g { edge [color=blue] a -> b  edge [color=red] b -> c  { edge [color=green] c -> d } d -> e }")
    colors = {(e.src, e.dst): e.attrs["color"] for e in g.edges()}
    assert colors == {("a", "b"): "blue", ("b", "c"): "red", ("c", "d"): "green", ("d", "e"): "red"}


def test_dot_node_defaults_of_a_cluster_end_with_the_cluster():
    g = dot_loads("digraph g { subgraph cluster_l { node [loop=inner]; a; b } c; a -> b -> c }")
    assert g.node("a").attrs["loop"] == "inner" and "loop" not in g.node("c").attrs


def test_dot_edge_chains_and_edges_to_blocks_expand():
    g = dot_loads("digraph g { a -> b -> {c d} }")
    assert sorted((e.src, e.dst) for e in g.edges()) == [("a", "b"), ("b", "c"), ("b", "d")]


def test_dot_red_back_edges_follow_the_back_edge_rule():
    g = load(SAMPLES / "accumulate_red_back_edges.dot", back_edge="color:red")
    back = {(e.src, e.dst): e.init_tokens for e in g.edges() if e.loop_carried}
    assert back == {("add5", "add5"): 1, ("add6", "phi3"): 1}


def test_dot_red_back_edges_without_the_rule_are_a_cycle():
    with pytest.raises(InputError, match="cycle"):
        load(SAMPLES / "accumulate_red_back_edges.dot")


def test_back_edge_rule_matches_one_item_of_a_list_attribute():
    g = dot_loads('digraph g { a -> b; b -> a [style="dashed,bold"] }', back_edge="style:dashed")
    assert g.edge("b", "a", 0).loop_carried and not g.edge("a", "b", 0).loop_carried


def test_dot_drawing_shape_is_an_attribute_not_a_tensor_shape():
    g = dot_loads("digraph g { a [shape=box]; b [shape=\"2x3\"] }")
    assert g.node("a").shape is None and g.node("a").attrs["shape"] == "box" and g.node("b").shape == (2, 3)


def test_dot_quoted_strings_concatenate_and_unescape():
    g = dot_loads('digraph g { "a b" [label="say \\"hi\\"" + " there"] }')
    assert g.node("a b").attrs["label"] == 'say "hi" there'


@pytest.mark.parametrize("text, message", [
    ("graph g { a -- b }", "undirected"),
    ("digraph a { x } digraph b { y }", "more than one graph"),
    ("digraph g {\n a -> \n}", r"line 3.*expected a node"),
    ('digraph g { a [label="open] }', "unterminated string"),
    ("digraph g { }", "no nodes"),
    ("", "empty file"),
    ("digraph g { a -- b }", "'--' edge in a digraph"),
])
def test_bad_dot_is_one_line(text, message):
    with pytest.raises(InputError, match=message) as info:
        dot_loads(text, "x.dot")
    assert "\n" not in str(info.value)


# --------------------------------------------------------------------------- GraphML and XML


def test_graphml_keeps_graph_data_and_marks_distance_back_edges():
    g = load(SAMPLES / "saxpy.graphml")
    assert g.attrs["trip_count"] == 2048 and g.attrs["kernel"] == "saxpy"
    assert [(e.src, e.dst, e.init_tokens) for e in g.edges() if e.loop_carried] == [("inc", "i", 1)]
    assert g.edge("lx", "mul", 0).dst_port == "1"


def test_morpher_xml_with_glued_attributes_and_two_top_level_elements_is_read():
    g = load(SAMPLES / "array_add_morpher.xml")
    assert len(g) == 11 and g.node("8").op == "ADD" and g.node("5").op == "STORE"
    assert g.node("14").attrs["BB"] == "for.body" and g.node("14").attrs["CONST"] == "2048"
    assert g.node("10").attrs["array"] == "A" and g.node("10").attrs["array_bytes"] == "80"
    assert g.attrs["mutex_bb"]["for.body_0_0"] == ["for.body_0_1"]


def test_morpher_xml_nextiter_is_a_back_edge_with_that_many_tokens():
    g = load(SAMPLES / "array_add_morpher.xml")
    assert [(e.src, e.dst, e.init_tokens) for e in g.edges() if e.loop_carried] == [("1", "0", 1)]
    assert g.edge("15", "7", 0).dst_port == "I2"


def test_morpher_xml_renamed_to_graphml_is_read_as_xml(tmp_path):
    shutil.copy(SAMPLES / "array_add_morpher.xml", tmp_path / "array_add.graphml")
    assert len(load(tmp_path / "array_add.graphml")) == 11


@pytest.mark.parametrize("body, message", [
    ('<Node idx="1"><OP>ADD</OP><Outputs><Output idx="9" nextiter="0"/></Outputs></Node>', "refers to node 9"),
    ('<Node idx="1"><OP>ADD</OP></Node><Node idx="1"><OP>MUL</OP></Node>', "duplicate node idx"),
    ('<Node idx="1"></Node>', "missing operation"),
    ('<Node idx="x"><OP>ADD</OP></Node>', "expected a number"),
    ('<Node idx="1"><OP>ADD</OP><Outputs><Output idx="1" nextiter="-2"/></Outputs></Node>', "at least 0"),
])
def test_bad_xml_dfg_names_the_node(tmp_path, body, message):
    path = tmp_path / "bad.xml"
    path.write_text(f"<DFG count=\"1\">{body}</DFG>")
    with pytest.raises(InputError, match=message):
        load(path)


def test_xml_entity_declarations_are_refused(tmp_path):
    path = tmp_path / "bomb.graphml"
    path.write_text('<?xml version="1.0"?><!DOCTYPE g [<!ENTITY a "aaaa">]><graphml><graph>&a;</graph></graphml>')
    with pytest.raises(InputError, match="DOCTYPE declarations are not allowed"):
        load(path)


# --------------------------------------------------------------------------- JSON, files, parameters


def _graph(**extra) -> str:
    return json.dumps({"format": "solvermap.graph", "version": 1, "nodes": [{"name": "a", "kind": "op"}], **extra})


@pytest.mark.parametrize("text, where", [
    (_graph(binds=5), "'binds'"),
    (_graph(edges=[{"src": "a", "dst": "a", "width_bits": "wide"}]), r"'edges\[0\]\.width_bits'"),
    (_graph(edges=[{"src": "a", "dst": "a", "init_tokens": 2**40, "loop_carried": True}]), r"init_tokens"),
    (_graph(attrs=[1, 2]), "'attrs'"),
    (json.dumps({"format": "solvermap.graph", "version": 1, "nodes": [{"name": 5, "kind": "op"}]}),
     r"'nodes\[0\]\.name'"),
    ('{"format": "solvermap.graph", "version": 1, "nodes": [{"name": "a", "kind": "op", "resources": {"ops": 1e999}}]}',
     "finite"),
    (_graph(nodes=[]), "no nodes"),
    ("[" * 5000, "nested deeper"),
    ('{"format": "solvermap.graph", "version": 1, "name": ' + "9" * 5000 + "}", "invalid JSON"),
])
def test_wrong_types_in_json_are_one_line_naming_the_field(text, where):
    with pytest.raises(InputError, match=where) as info:
        loads(text, "g.json")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("content, message", [
    (b"\x00\x01\x02binary", "binary data"),
    (b"digraph g { a [label=\"\xff\xfe\"] }", "not UTF-8"),
])
def test_unreadable_text_is_refused(tmp_path, content, message):
    path = tmp_path / "g.dot"
    path.write_bytes(content)
    with pytest.raises(InputError, match=message):
        load(path)


def test_a_directory_is_not_a_graph_file(tmp_path):
    (tmp_path / "g.dot").mkdir()
    with pytest.raises(InputError, match="is a directory"):
        load(tmp_path / "g.dot")


def test_a_graph_file_takes_only_its_parameters():
    with pytest.raises(InputError, match=r"workload\.par.*known: back_edge, trip_count"):
        build(str(SAMPLES / "saxpy.graphml"), "plasticine", {"par": 4})


@pytest.mark.parametrize("params, message", [
    ({"back_edge": "red"}, "ATTRIBUTE:VALUE"),
    ({"trip_count": 0}, r"workload\.trip_count"),
    ({"trip_count": "many"}, r"workload\.trip_count"),
])
def test_bad_graph_file_parameters_are_refused(params, message):
    with pytest.raises(InputError, match=message):
        build(str(SAMPLES / "saxpy.graphml"), "plasticine", params)


def test_a_file_over_the_size_limit_is_refused_before_it_is_read(tmp_path, monkeypatch):
    from solvermap.ir import dfg_files

    monkeypatch.setattr(dfg_files, "MAX_FILE_BYTES", 1024)
    path = tmp_path / "big.dot"
    path.write_text("digraph g { " + "a; " * 400 + "}")
    with pytest.raises(InputError, match=r"bytes is over the 1,024-byte limit"):
        load(path)
