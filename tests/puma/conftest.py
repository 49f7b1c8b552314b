"""Shared fixtures for the PUMA tests: small networks lowered, optimised and partitioned once per session."""

from __future__ import annotations

import numpy as np
import pytest

from solvermap.hardware.targets import load_target
from solvermap.ir.workloads import build
from solvermap.mappers.puma import application_optimizer as ao
from solvermap.mappers.puma.crossbar_partition import partition
from solvermap.mappers.puma.frontend import lower

SMALL = {
    "mlp": {"sizes": [96, 80, 10]},
    "lenet": {},
    "vgg": {"width": 4},
    "lstm_lm": {"hidden": 24, "embed": 16, "vocab": 12, "seq_len": 3},
    "digits_mlp": {},
}


@pytest.fixture(scope="session")
def puma():
    return load_target("puma")


@pytest.fixture(scope="session")
def puma_small():
    return load_target("puma_small")


def prepared(name: str, spec, calibrate: bool = True):
    workload = build(name, "puma", SMALL.get(name, {}))
    net = ao.fold_bias(ao.fold_batchnorm(lower(workload.ir)), spec.crossbar.rows)
    if calibrate:
        rng = np.random.default_rng(0)
        net = ao.quantize(net, 2.0 ** (spec.data.int_bits - 1), rng.random((4,) + tuple(net.input_shape)))
    return workload, net, partition(net, spec.crossbar.rows, spec.crossbar.cols)


@pytest.fixture(scope="session")
def small_models(puma_small):
    return {name: prepared(name, puma_small) for name in SMALL}
