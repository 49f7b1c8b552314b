"""The tensor ops HPVM's DNN benchmarks need beyond Table 5.1: strided and grouped convolution, batch normalisation,
mean pooling and softmax, against direct loop references, with gradients checked numerically."""

from __future__ import annotations

import numpy as np
import pytest

from solvermap.errors import InputError
from solvermap.ir.workloads.approxhpvm_tensor_ops import (
    Dataset,
    LayerSpec,
    TensorOp,
    Window,
    apply_op,
    backward,
    build_network,
    conv2d,
)


def direct_conv(x, w_patch, window: Window):
    """Convolution by loops over output positions; ``w_patch`` is the (C/g·k², K) operand."""
    n, c, h, wd = x.shape
    k, s, p, g = window.kernel, window.stride, window.padding, window.groups
    out_c = w_patch.shape[1]
    cg, kg = c // g, out_c // g
    w = w_patch.T.reshape(out_c, cg, k, k)
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    ho, wo = (h + 2 * p - k) // s + 1, (wd + 2 * p - k) // s + 1
    out = np.zeros((n, out_c, ho, wo))
    for o in range(out_c):
        group = o // kg
        for i in range(ho):
            for j in range(wo):
                patch = xp[:, group * cg:(group + 1) * cg, i * s:i * s + k, j * s:j * s + k]
                out[:, o, i, j] = np.einsum("nckl,ckl->n", patch, w[o])
    return out


@pytest.mark.parametrize("window", [Window(5, 1, 2, 1), Window(3, 2, 1, 1), Window(3, 1, 1, 4), Window(3, 2, 0, 2)])
def test_convolution_matches_direct_loops_for_strides_padding_and_groups(window):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4, 7, 7))
    w = rng.standard_normal((4 // window.groups * window.kernel ** 2, 8))
    assert np.allclose(conv2d(x, w, window), direct_conv(x, w, window))


def test_depthwise_convolution_keeps_channels_apart():
    x = np.zeros((1, 3, 4, 4))
    x[0, 1] = 1.0  # only channel 1 is non-zero
    w = np.ones((9, 3))  # one 3×3 filter per channel
    out = conv2d(x, w, Window(3, 1, 1, 3))
    assert np.all(out[0, 0] == 0) and np.all(out[0, 2] == 0) and out[0, 1, 1, 1] == 9.0


def test_mean_pooling_averages_each_window():
    x = np.arange(16, dtype=float).reshape(1, 1, 4, 4)
    op = TensorOp("l/avgpool", "avgpool", "l", ("input",), window=Window(2, 2, 0))
    assert np.array_equal(apply_op(op, [x], {}), [[[[2.5, 4.5], [10.5, 12.5]]]])
    glob = TensorOp("l/avgpool", "avgpool", "l", ("input",), window=Window(4, 4, 0))
    assert apply_op(glob, [x], {})[0, 0, 0, 0] == pytest.approx(7.5)


def test_batchnorm_is_a_per_channel_affine_map():
    x = np.ones((2, 2, 3, 3))
    op = TensorOp("l/batchnorm", "batchnorm", "l", ("input",), param="bn")
    out = apply_op(op, [x], {"bn": np.array([[2.0, 3.0], [0.5, -1.0]])})
    assert np.all(out[:, 0] == 2.5) and np.all(out[:, 1] == 2.0)


def test_softmax_rows_sum_to_one():
    op = TensorOp("s/softmax", "softmax", "s", ("input",))
    out = apply_op(op, [np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]])], {})
    assert np.allclose(out.sum(axis=1), 1.0) and np.allclose(out[1], 1 / 3)


def _tiny_data(shape):
    x = np.random.default_rng(1).random((4,) + shape)
    return Dataset(x, np.arange(4) % 3, x, np.arange(4) % 3)


def test_backward_matches_numerical_gradient_through_the_new_ops():
    layers = [LayerSpec("c1", "conv", 4, "relu", pool=True, kernel=3, stride=1, groups=2, batchnorm=True,
                        pool_kind="avg"),
              LayerSpec("f", "fc", 3, None), LayerSpec("s", "softmax")]
    net = build_network("g", layers, _tiny_data((2, 6, 6)), seed=2, input_shape=(2, 6, 6))
    x = net.data.x_train
    values = net.forward(x, keep=True)
    seed = np.random.default_rng(0).standard_normal(values[net.output_op].shape)
    _, grads = backward(net, values, seed)
    eps = 1e-6
    for key, index in (("c1.W", (5, 3)), ("c1.bn", (0, 1)), ("f.W", (7, 2))):
        p = net.params[key]
        p[index] += eps
        up = float(np.sum(net.forward(x) * seed))
        p[index] -= 2 * eps
        down = float(np.sum(net.forward(x) * seed))
        p[index] += eps
        assert grads[key][index] == pytest.approx((up - down) / (2 * eps), rel=1e-4, abs=1e-9), key


def test_training_through_overlapping_pooling_is_a_named_error():
    net = build_network("o", [LayerSpec("c", "conv", 2, None, pool=True, pool_window=2), LayerSpec("f", "fc", 3, None)],
                        _tiny_data((1, 5, 5)), input_shape=(1, 5, 5))  # 5×5 is not tiled by 2×2 windows
    values = net.forward(net.data.x_train, keep=True)
    with pytest.raises(InputError, match="non-overlapping windows"):
        backward(net, values, np.ones_like(values[net.output_op]))
