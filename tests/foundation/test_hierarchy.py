"""HPVM hierarchy: binds resolve through internal nodes; replication expands one-to-one or all-to-all."""

import pytest

from solvermap.errors import InputError
from solvermap.ir.graph import DataflowGraph, NodeKind
from solvermap.ir.hierarchy import add_internal_node, bind, flatten


def layer(name: str) -> DataflowGraph:
    """conv → relu, with the parent's input bound to conv and its output bound from relu."""
    child = DataflowGraph(name)
    child.add_node("conv", op="Conv", resources={"macs": 100})
    child.add_node("relu", op="Relu", resources={"flops": 10})
    child.add_edge("conv", "relu")
    bind(child, "in", "x", "conv")
    bind(child, "out", "y", "relu", "out")
    return child


def two_layer_net(rep1=(), rep2=(), pattern="one_to_one") -> DataflowGraph:
    root = DataflowGraph("net")
    root.add_node("input", NodeKind.IO)
    add_internal_node(root, "l1", layer("l1"), replication=rep1)
    add_internal_node(root, "l2", layer("l2"), replication=rep2)
    root.add_node("output", NodeKind.IO)
    root.add_edge("input", "l1", dst_port="x")
    root.add_edge("l1", "l2", src_port="y", dst_port="x", pattern=pattern)
    root.add_edge("l2", "output", src_port="y")
    return root


def test_flatten_resolves_binds_to_leaf_nodes():
    flat = flatten(two_layer_net())
    assert sorted(flat.node_names()) == ["input", "l1/conv", "l1/relu", "l2/conv", "l2/relu", "output"]
    pairs = sorted((e.src, e.dst) for e in flat.edges())
    assert pairs == [("input", "l1/conv"), ("l1/conv", "l1/relu"), ("l1/relu", "l2/conv"),
                     ("l2/conv", "l2/relu"), ("l2/relu", "output")]
    assert flat.total("macs") == 200


def test_replication_multiplies_through_the_hierarchy():
    root = DataflowGraph("net")
    add_internal_node(root, "outer", DataflowGraph("c"), replication=(2,))
    inner = root.node("outer").child
    inner.add_node("leaf", replication=(3,))
    flat = flatten(root)
    assert flat.node("outer/leaf").replication == (6,)


def test_one_to_one_edges_connect_matching_instances():
    flat = flatten(two_layer_net((2,), (2,)), expand_instances=True)
    cross = sorted((e.src, e.dst) for e in flat.edges() if e.src.startswith("l1/relu"))
    assert cross == [("l1/relu[0]", "l2/conv[0]"), ("l1/relu[1]", "l2/conv[1]")]


def test_all_to_all_edges_connect_every_pair():
    flat = flatten(two_layer_net((2,), (3,), pattern="all_to_all"), expand_instances=True)
    cross = [(e.src, e.dst) for e in flat.edges() if e.src.startswith("l1/relu")]
    assert len(cross) == 2 * 3


def test_one_to_one_between_different_replications_is_rejected():
    with pytest.raises(InputError, match="one_to_one edge between different replications"):
        flatten(two_layer_net((2,), (3,)), expand_instances=True)


def test_edge_into_an_unbound_port_is_rejected():
    root = two_layer_net()
    root.add_node("extra")
    root.add_edge("extra", "l1", dst_port="nope")
    with pytest.raises(InputError, match="no bind for input port 'nope'"):
        flatten(root)


def test_bind_to_unknown_child_node_is_rejected():
    with pytest.raises(InputError, match="binds to unknown node 'ghost'"):
        bind(DataflowGraph(), "in", "x", "ghost")
