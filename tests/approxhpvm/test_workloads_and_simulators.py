"""Trained workloads, HPVM graph structure, and the PROMISE / GPU models against the seed's figures."""

from __future__ import annotations

import math

import numpy as np
import pytest

from solvermap.errors import InputError
from solvermap.hardware.approxhpvm import check_supported
from solvermap.hardware.approxhpvm.gpu_cost import gpu_op_cost
from solvermap.hardware.approxhpvm.promise_sim import (
    kernel_decisions,
    kernel_energy,
    network_kernel_energy,
    noisy_dot,
    task_cost,
)
from solvermap.ir.graph import DataflowGraph, NodeKind
from solvermap.ir.hierarchy import flatten
from solvermap.ir.workloads import build
from solvermap.ir.workloads.approxhpvm_kernels import build_kernel
from solvermap.ir.workloads.approxhpvm_tensor_ops import LayerSpec, backward, build_network, digits, train


def test_trained_networks_classify_digits(dnn1, lenet):
    assert dnn1.golden_accuracy() > 0.93
    assert lenet.golden_accuracy() > 0.95


def test_network_is_a_hierarchical_hpvm_graph_with_tensor_op_leaves(lenet):
    internal = [n.name for n in lenet.graph.nodes(NodeKind.HIERARCHY)]
    assert internal == ["conv1", "conv2", "fc1", "fc2"]
    assert [n.op for n in lenet.graph.node("conv1").child.nodes()] == ["conv", "add", "pool", "tanh"]
    flat = flatten(lenet.graph)
    assert "conv1/conv" in flat and flat.nx.has_edge("conv1/tanh", "conv2/conv")
    assert lenet.op("conv1/conv").dot_length == 9 and lenet.op("conv2/conv").dot_length == 72


def test_training_is_deterministic_for_a_seed():
    data = digits()
    nets = [build_network("t", [LayerSpec("fc1", "fc", 16), LayerSpec("fc2", "fc", 10, None)], data, seed=3,
                          input_shape=(64,)) for _ in range(2)]
    for net in nets:
        train(net, epochs=1, seed=3)
    assert all(np.array_equal(nets[0].params[k], nets[1].params[k]) for k in nets[0].params)


def test_backward_matches_numerical_gradient_of_a_conv_net():
    data = digits(image=True)
    net = build_network("g", [LayerSpec("c1", "conv", 2, "tanh", pool=True), LayerSpec("f", "fc", 10, None)],
                        data, seed=1, input_shape=(1, 8, 8))
    x = data.x_train[:3]
    values = net.forward(x, keep=True)
    seed = np.random.default_rng(0).standard_normal(values[net.output_op].shape)
    _, grads = backward(net, values, seed)
    w = net.params["c1.W"]
    i, j = 4, 1
    eps = 1e-6
    w[i, j] += eps
    up = float(np.sum(net.forward(x) * seed))
    w[i, j] -= 2 * eps
    down = float(np.sum(net.forward(x) * seed))
    w[i, j] += eps
    assert grads["c1.W"][i, j] == pytest.approx((up - down) / (2 * eps), rel=1e-4)


def test_unsupported_op_is_a_one_line_input_error():
    g = DataflowGraph("bad")
    g.add_node("sm", op="lstm")
    with pytest.raises(InputError, match="unsupported tensor op 'lstm'") as err:
        check_supported(g, "bad.json")
    assert "\n" not in str(err.value)


def test_registry_builds_networks_and_kernels_for_the_approxhpvm_family():
    assert build("dnn1", "approxhpvm").ir.name == "dnn1"
    assert build("svm", "approxhpvm").ir.tasks[0].dot_length == 256


def test_promise_noise_follows_eq_4_2():
    # |x| = |w| = 1: the aggregated mean has sigma f/sqrt(N)
    n, f = 128, 0.2
    x = np.ones((4000, n))
    w = np.ones((n, 1))
    rng = np.random.default_rng(0)
    mean = noisy_dot(x, w, f, rng)[:, 0] / n
    assert np.std(mean) == pytest.approx(f / math.sqrt(n), rel=0.05)


def test_a_kernel_on_promise_loses_more_accuracy_at_a_larger_swing_factor():
    kernel = build_kernel("svm")
    loss = {f: np.mean([kernel.mismatch(kernel_decisions(kernel, f, np.random.default_rng(seed))) for seed in range(3)])
            for f in (0.0, 0.5)}
    assert loss[0.0] < loss[0.5]


def test_knn_one_bank_matches_seed_energy_and_throughput(spec):
    # seed L878: 18 nJ (L1) at 1.12M decisions/s, 22.9 nJ (L2) at 0.98M decisions/s; digest §3.3 model 20.8 / 24.9 nJ
    l1 = kernel_energy(spec, kind="l1", dot_length=128, rows=128, level=7)
    l2 = kernel_energy(spec, kind="l2", dot_length=128, rows=128, level=7)
    assert l1.energy_j == pytest.approx(18e-9, rel=0.2) and l2.energy_j == pytest.approx(22.9e-9, rel=0.2)
    assert 1 / l1.time_s == pytest.approx(1.12e6, rel=0.02) and 1 / l2.time_s == pytest.approx(0.98e6, rel=0.03)


def test_promise_dnn_on_36_banks_matches_seed_energy(spec):
    # seed L880: 784-512-256-128-10 in 36 banks, 0.49 uJ per decision
    shapes = [(784, 512), (512, 256), (256, 128), (128, 10)]
    e = network_kernel_energy(spec, shapes, [7, 7, 7, 7], banks=36)
    assert e.vector_ops == 4874
    assert e.energy_j == pytest.approx(0.49e-6, rel=0.15)


def test_promise_time_does_not_depend_on_swing_but_energy_does(spec):
    kw = dict(dot_length=512, outputs_per_image=256, weight_cols=256, batch=5000, in_bytes=0, out_bytes=0)
    p1, p7 = task_cost(spec, level=1, **kw), task_cost(spec, level=7, **kw)
    assert p1.time_s == p7.time_s  # L1121: P7 and P1 execution times overlap
    assert p1.energy_j < p7.energy_j


def test_fp16_is_between_1_5_and_4_times_cheaper_than_fp32(spec):
    for op, flops, params in (("gemm", 2 * 512 * 256, 512 * 256), ("conv", 2 * 72 * 16 * 16, 72 * 16)):
        a = gpu_op_cost(spec, op=op, flops_per_image=flops, param_elements=params, precision="fp32", batch=5000)
        b = gpu_op_cost(spec, op=op, flops_per_image=flops, param_elements=params, precision="fp16", batch=5000)
        assert 1.5 <= a.time_s / b.time_s <= 4 and 1.5 <= a.energy_j / b.energy_j <= 4
