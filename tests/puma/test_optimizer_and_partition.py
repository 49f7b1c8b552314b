"""Application optimiser passes keep the function; crossbar partitioning covers every matrix."""

from __future__ import annotations

import numpy as np
import pytest

from solvermap.hardware.puma.network import forward_float, matrix_shapes
from solvermap.ir.workloads import build
from solvermap.mappers.puma import application_optimizer as ao
from solvermap.mappers.puma.crossbar_partition import partition
from solvermap.mappers.puma.frontend import lower

from .conftest import SMALL


def test_batchnorm_folding_removes_the_affine_layers_and_keeps_the_output():
    net = lower(build("vgg", "puma", SMALL["vgg"]).ir)
    folded = ao.fold_batchnorm(net)
    x = np.random.default_rng(0).random((2, 3, 32, 32))
    assert not any(layer.kind == "affine" for layer in folded.layers)
    assert np.allclose(forward_float(folded, x), forward_float(net, x), atol=1e-10)


@pytest.mark.parametrize("policy", ["always", "never", "auto"])
def test_bias_folding_keeps_the_output(policy):
    net = lower(build("mlp", "puma", {"sizes": [128, 50, 10]}).ir)
    folded = ao.fold_bias(net, 128, policy)
    x = np.random.default_rng(0).random((3, 128))
    assert np.allclose(forward_float(folded, x), forward_float(net, x), atol=1e-10)


def test_auto_bias_folding_avoids_a_new_block_column():
    net = ao.fold_bias(lower(build("mlp", "puma", {"sizes": [128, 50, 10]}).ir), 128, "auto")
    assert [layer.bias_folded for layer in net.mvm_layers()] == [False, True]


def test_quantize_scales_an_overflowing_layer_and_keeps_the_argmax():
    net = ao.fold_bias(lower(build("digits_mlp", "puma").ir), 128)
    from solvermap.ir.workloads.puma_digits import digits_split

    x = digits_split(0)[1].astype(np.float64)
    quant = ao.quantize(net, 8.0, x[:64])
    assert quant.output_scale < 1.0
    assert np.abs(forward_float(quant, x)).max() < 8.0
    assert np.array_equal(forward_float(quant, x).argmax(1), forward_float(net, x).argmax(1))


def test_input_normalization_inserts_a_normalize_layer():
    net = lower(build("mlp", "puma", {"sizes": [16, 8]}).ir)
    quant = ao.quantize(net, 8.0, None, (0.5, 2.0))
    assert quant.layers[0].kind == "normalize"


def test_mlp_l4_partitions_into_328_crossbar_blocks():
    net = ao.fold_bias(lower(build("mlp_l4", "puma").ir), 128)
    assert len(partition(net, 128, 128).blocks) == 8 * 8 + 16 * 8 + 8 * 16 + 1 * 8


@pytest.mark.parametrize("name", sorted(SMALL))
def test_blocks_tile_every_matrix_exactly_once(name, small_models, puma_small):
    _, net, part = small_models[name]
    for layer in net.mvm_layers():
        for p, (n_out, n_in) in enumerate(matrix_shapes(layer)):
            cover = np.zeros((n_out, n_in), dtype=int)
            for b in part.blocks_of(layer.name):
                if b.position == p:
                    assert b.rows_used <= puma_small.crossbar.rows and b.cols_used <= puma_small.crossbar.cols
                    cover[b.out_range[0]:b.out_range[1], b.in_range[0]:b.in_range[1]] += 1
            assert np.all(cover == 1)


def test_conv_is_cut_per_kernel_position():
    net = ao.fold_bias(lower(build("lenet", "puma").ir), 128)
    part = partition(net, 128, 128)
    assert len(part.blocks_of("conv1")) == 25 and len(part.blocks_of("conv2")) == 25


def test_input_bytes_equal_the_model_input_once_per_reading_tile_group():
    _, net, part = prepared_mlp()
    sent = sum(v.bytes for v in part.values if v.kind == "input")
    assert sent == 96 * 2  # one 16-bit word per input element, one column of blocks per element


def prepared_mlp():
    from .conftest import prepared
    from solvermap.hardware.targets import load_target

    return prepared("mlp", load_target("puma_small"), calibrate=False)


def test_replicas_multiply_blocks_and_split_steps():
    net = ao.fold_bias(lower(build("lenet", "puma").ir), 128)
    net.layer("conv1").attrs["replicas"] = 3
    part = partition(net, 128, 128)
    blocks = part.blocks_of("conv1")
    assert len(blocks) == 75 and all(b.steps == pytest.approx(784 / 3) for b in blocks)


def test_partial_sums_run_along_each_row_chain_and_end_on_the_last_block():
    """The public compiler's sequential reduction: one running sum per chain link, home = last block."""
    net = ao.fold_bias(lower(build("mlp", "puma", {"sizes": [300, 200, 10]}).ir), 128)
    part = partition(net, 128, 128)
    for layer in net.mvm_layers():
        for row in {b.row_block for b in part.blocks_of(layer.name)}:
            chain = sorted((b for b in part.blocks_of(layer.name) if b.row_block == row), key=lambda b: (b.position, b.col_block))
            links = {(v.source, v.sinks) for v in part.values if v.kind == "partial" and v.layer == layer.name}
            mine = {link for link in links if link[0] in {b.name for b in chain}}
            assert mine == {(a.name, (b.name,)) for a, b in zip(chain, chain[1:])}
            assert [b.is_home for b in chain] == [False] * (len(chain) - 1) + [True]
