"""The seed-shaped networks, the calibrated cost-model structure and the calibration fit (seed 000 L1246–1275)."""

from __future__ import annotations

import numpy as np
import pytest

from solvermap.hardware.approxhpvm import calibration as cal
from solvermap.hardware.approxhpvm.gpu_cost import transfer_parts
from solvermap.hardware.approxhpvm.soc_sim import schedule_cost, schedule_units
from solvermap.hardware.targets import load_target
from solvermap.ir.workloads.approxhpvm_mnist import digits_28, untrained_network, upscale


@pytest.fixture(scope="module")
def tx2():
    return load_target("promise-soc-tx2")


@pytest.fixture(scope="module")
def lenet28():
    return untrained_network("lenet_mnist")


def test_lenet_has_hpvm_lenet_mnist_shapes(lenet28):
    dots = {op.name: op.dot_length for op in lenet28.ops if op.is_dot}
    assert dots == {"conv1/conv": 25, "conv2/conv": 800, "fc1/gemm": 3136, "fc2/gemm": 1024}
    assert lenet28.params["fc1.W"].shape == (3136, 1024) and lenet28.params["conv2.W"].shape == (800, 64)
    assert [op.op for op in lenet28.layer_ops("conv1")] == ["conv", "add", "tanh", "pool"]  # HPVM: tanh, then pool


def test_digits_are_upscaled_into_a_20_pixel_box_with_a_4_pixel_border():
    img = np.ones((1, 8, 8))
    big = upscale(img)
    assert big.shape == (1, 28, 28) and big[0, 4:24, 4:24].min() == pytest.approx(1.0)
    assert big[0, :4].max() == 0.0 and big[0, :, 24:].max() == 0.0
    data = digits_28()
    assert data.x_train.shape[1:] == (1, 28, 28) and len(data.x_test) == 899


def test_swing_model_gives_table_4_3_energy_at_the_top_swing(tx2):
    p = tx2.promise
    assert p.dot_energy(7) == pytest.approx(61 + 16 + 6)  # aREAD + sign_mult + ADC (Table 4.3)
    energies = [p.dot_energy(k) for k in range(1, 8)]
    assert all(a < b for a, b in zip(energies, energies[1:]))


def test_fp16_round_trip_stores_tensors_between_gpu_ops_in_fp32(tx2):
    kw = dict(elements=1e6, src="fp16", dst="fp16", src_device="gpu", dst_device="gpu")
    round_trip = transfer_parts(tx2, **kw).total
    direct = transfer_parts(tx2.model_copy(update={"gpu": tx2.gpu.model_copy(update={"fp16_round_trip": False})}),
                            **kw).total
    launch = tx2.gpu.launch_us * 1e-6
    # H2F (read 2 B, write 4 B) and F2H (read 4 B, write 2 B) beside the op's own 2 B write and 2 B read
    assert round_trip.time_s - direct.time_s == pytest.approx(
        2 * launch + 12e6 / (tx2.dram.bandwidth_gbs * 1e9 * tx2.gpu.dram_efficiency), rel=1e-9)


def test_layer_totals_add_up_to_the_total(tx2, lenet28):
    report = cal.configuration_cost(lenet28, tx2, "FP16-P4-P6-FP16")
    assert sum(c.time_s for c in report.layer_totals.values()) == pytest.approx(report.total.time_s, rel=1e-12)
    assert sum(c.energy_j for c in report.layer_totals.values()) == pytest.approx(report.total.energy_j, rel=1e-12)


def test_without_pdma_the_gpu_patching_costs_energy_and_hides_under_promise(tx2, lenet28):
    with_pdma = cal.configuration_cost(lenet28, tx2, cal.C3)
    without = cal.configuration_cost(lenet28, cal._without_pdma(tx2), cal.C3)
    assert without.total.energy_j > with_pdma.total.energy_j and without.total.time_s > with_pdma.total.time_s
    conv2 = without.layer_totals["conv2"].time_s
    assert conv2 >= without.by_layer["conv2"].time_s  # at least the PROMISE task itself


def test_short_dot_products_lower_the_gpu_efficiency(tx2, lenet28):
    from solvermap.hardware.approxhpvm.gpu_cost import efficiency

    assert efficiency(tx2, "conv", 25) < efficiency(tx2, "conv", 800) < tx2.gpu.efficiency["conv"]


def test_the_preset_holds_what_the_fit_gives(tx2, lenet28):
    result = cal.fit(tx2, lenet28)
    for p in cal.PARAMETERS:
        value = cal._get(tx2, p.path)
        assert value == pytest.approx(result.values[p.path], rel=1e-4), p.path


def test_no_end_to_end_figure_is_fitted():
    fitted = {f.name for f in cal.SEED_COMPONENTS}
    assert not fitted & {f.name for f in cal.SEED_END_TO_END}
    assert all("mean" not in name and "DNN" not in name for name in fitted)


def test_end_to_end_figures_reduce_the_configurations_as_the_seed_does():
    ratios = {(0.02, "lenet", r): (s, e) for r, (s, e) in enumerate(((2.0, 4.0), (3.0, 5.0), (4.0, 6.0)))}
    lenet_mean = [f for f in cal.SEED_END_TO_END if f.name.startswith("LeNet mean")]
    out = cal.end_to_end_figures(ratios, lenet_mean)
    assert out == {"LeNet mean speedup at 2 %": 3.0, "LeNet mean energy reduction at 2 %": 5.0}
