"""ONNX models on Plasticine: the partitioned VB graph runs to completion in the dataflow simulator (issue #24).

Both models deadlocked before: ``two_readers`` because the two Convs' reads of one activation were merged
into one request stream (one access name ``x``), which fired at the 3×3 Conv's rate and waited for requests
the 1×1 Conv never sent; ``late_weights`` because the shared weight stream fed both loaders in proportion
while the Gemm's loader could run ahead of the Gemm only by a channel buffer, so the Conv's weights never
arrived (each MAC now waits for its whole weight memory: one token per inference, L545).
"""

from __future__ import annotations

import pytest

from solvermap.formulations.solver import SolverConfig
from solvermap.hardware.targets import load_target
from solvermap.ir.workloads import build
from solvermap.mappers import pipeline_for
from solvermap.mappers.pipeline import Context
from solvermap.mappers.plasticine import simulation
from solvermap.mappers.plasticine.from_model import lower

from .models import write


def partitioned(path):
    spec = load_target("plasticine")
    ctx = Context(build(str(path), spec.family), spec, SolverConfig(time_limit_s=2.0))
    pipeline_for(spec.family).run(ctx, upto="partition")
    return ctx.state["vbgraph"], spec


@pytest.mark.parametrize("model", ["two_readers", "late_weights"])
def test_the_partitioned_vb_graph_of_the_model_simulates_without_deadlock(tmp_path, model):
    vbg, spec = partitioned(write(tmp_path, model))
    result = simulation.run(vbg, spec)
    assert not result.deadlock, result.blocked[:5]


def test_each_reader_of_a_shared_activation_declares_its_own_access(tmp_path):
    workload = build(str(write(tmp_path, "two_readers")), "plasticine")
    graph = lower(workload)
    accesses = {}
    for node in graph.nodes():
        if node.op == "sram_read" and node.attrs["memory"] == "conv0_Conv_act_out":
            accesses.setdefault(node.attrs["access"], set()).add(node.attrs["firings"])
    assert len(accesses) == 2 and all(len(firings) == 1 for firings in accesses.values())
