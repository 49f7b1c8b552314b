"""Functional simulator (bit-sliced crossbars, fixed point) and performance/energy simulator."""

from __future__ import annotations

import numpy as np
import pytest

from solvermap.hardware.puma import PumaSpec
from solvermap.hardware.puma.functional_sim import Crossbar, simulate
from solvermap.hardware.puma.performance_sim import simulate as perf_simulate
from solvermap.hardware.puma.placement_problem import hop_weighted_bytes, make_problem
from solvermap.mappers.puma.baselines import row_major
from solvermap.mappers.puma.communication import insert

from .conftest import SMALL


def inputs(net, n=3, seed=1):
    return np.random.default_rng(seed).random((n,) + tuple(net.input_shape))


@pytest.mark.parametrize("name", sorted(SMALL))
def test_functional_simulation_stays_within_the_quantisation_bound(name, small_models, puma_small):
    _, net, part = small_models[name]
    result = simulate(net, part, puma_small, inputs(net))
    assert result.bound_applies, "no saturation, lossless ADC, no noise"
    assert result.within_bound
    assert result.max_error < 0.05


def test_bit_sliced_crossbar_equals_the_exact_product_when_the_adc_is_lossless(puma):
    rng = np.random.default_rng(0)
    w = rng.integers(-2**15, 2**15, size=(128, 16))
    x = rng.integers(-2**15, 2**15, size=(5, 128))
    xbar = Crossbar(puma, None)
    assert xbar.needed_bits(128) == 8
    assert np.array_equal(xbar.mvm(w, x), x.astype(float) @ w.astype(float))


def test_without_flipped_encoding_an_8_bit_adc_is_lossy(puma):
    spec = puma.model_copy(update={"crossbar": puma.crossbar.model_copy(update={"flipped_encoding": False})})
    rng = np.random.default_rng(0)
    w = rng.integers(-2**15, 2**15, size=(128, 8))
    x = rng.integers(-2**15, 2**15, size=(4, 128))
    xbar = Crossbar(spec, None)
    out = xbar.mvm(w, x)
    assert not xbar.lossless and not np.array_equal(out, x.astype(float) @ w.astype(float))


def test_device_noise_is_reported_and_perturbs_the_output(small_models, puma_small):
    _, net, part = small_models["mlp"]
    noisy = puma_small.model_copy(update={"crossbar": puma_small.crossbar.model_copy(update={"noise_sigma": 0.3})})
    clean = simulate(net, part, puma_small, inputs(net))
    result = simulate(net, part, noisy, inputs(net), seed=5)
    assert not result.bound_applies
    assert not np.array_equal(result.output, clean.output)


def test_digits_classifier_loses_little_accuracy_at_16_bit_fixed_point_and_8_bit_adc(puma):
    from solvermap.hardware.puma.network import forward_float
    from solvermap.ir.workloads.puma_digits import digits_split

    from .conftest import prepared

    _, net, part = prepared("digits_mlp", puma, calibrate=False)
    from solvermap.mappers.puma import application_optimizer as ao

    x_train, x_test, _, y_test = digits_split(0)
    quant = ao.quantize(net, 8.0, x_train[:64].astype(float))
    from solvermap.mappers.puma.crossbar_partition import partition

    part = partition(quant, 128, 128)
    acc_float = (forward_float(net, x_test.astype(float)).argmax(1) == y_test).mean()
    result = simulate(quant, part, puma, x_test.astype(float))
    acc_fixed = (result.output.argmax(1) == y_test).mean()
    assert acc_float > 0.9
    assert acc_float - acc_fixed <= 0.002  # seed L123: < 0.1 % at 8 bits on a GRU-MLP


def test_simulated_hop_weighted_bytes_equal_the_placement_objective(small_models, puma_small):
    _, net, part = small_models["lstm_lm"]
    problem = make_problem(part, puma_small)
    placement = row_major(problem)
    perf = perf_simulate(part, placement, insert(problem, placement), puma_small, dict(problem.io_positions))
    assert perf.hop_weighted_bytes == pytest.approx(hop_weighted_bytes(problem, placement))
    assert perf.latency_s > 0 and perf.throughput > 0 and perf.energy_j > 0


def test_replicating_the_bottleneck_conv_raises_throughput(puma):
    from solvermap.mappers.puma.crossbar_partition import partition

    from .conftest import prepared

    _, net, _ = prepared("lenet", puma, calibrate=False)
    results = []
    for degree in (1, 4):
        net.layer("conv1").attrs["replicas"] = degree
        part = partition(net, 128, 128)
        problem = make_problem(part, puma)
        placement = row_major(problem)
        results.append(perf_simulate(part, placement, insert(problem, placement), puma, dict(problem.io_positions)))
    assert results[1].throughput > 1.5 * results[0].throughput


def test_performance_simulation_is_deterministic(small_models, puma_small):
    _, net, part = small_models["lstm_lm"]
    problem = make_problem(part, puma_small)
    placement = row_major(problem)
    runs = [perf_simulate(part, placement, insert(problem, placement), puma_small, dict(problem.io_positions)) for _ in range(2)]
    assert runs[0].latency_s == runs[1].latency_s and runs[0].energy_j == runs[1].energy_j


def test_mvm_time_follows_input_bits_and_adc_resolution(puma):
    base = puma.mvm_cycles()
    fewer_bits = PumaSpec.model_validate({**puma.model_dump(), "data": {"bits": 8, "frac_bits": 4}}).mvm_cycles()
    assert fewer_bits == pytest.approx(base / 2)
