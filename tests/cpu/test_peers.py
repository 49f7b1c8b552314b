"""Peers of the tensorized kernels: onnxruntime's ConvInteger / QLinearConv and TVM run the same data and
are checked against the same reference; the peak microkernel keeps every chain's instruction."""

from __future__ import annotations

import re

import numpy as np
import pytest

from solvermap.hardware.cpu import codegen, toolchain
from solvermap.hardware.cpu.instructions import descriptor
from solvermap.hardware.targets import load_target
from solvermap.ir.workloads.cpu_conv import conv2d_reference
from solvermap.mappers.cpu import peers
from solvermap.mappers.cpu.execution import EXTRA_FLAGS

from .conftest import needs_objdump, x86_target_params

needs_onnxruntime = pytest.mark.skipif(peers.onnxruntime_unavailable() is not None,
                                       reason=str(peers.onnxruntime_unavailable()))
needs_tvm = pytest.mark.skipif(peers.tvm_unavailable() is not None, reason=str(peers.tvm_unavailable()))


def _layer(seed=0, C=16, K=24, IHW=9, R=3):
    rng = np.random.default_rng(seed)
    data = rng.integers(0, 256, (C, IHW, IHW)).astype(np.uint8)
    weight = rng.integers(-128, 128, (K, C, R, R)).astype(np.int8)
    return data, weight


@needs_onnxruntime
def test_onnxruntime_convinteger_matches_the_reference_and_is_profiled_per_round():
    data, weight = _layer()
    ref = conv2d_reference(data, weight, 1)
    session = peers.OnnxRuntimeConv("ConvInteger", data.shape, weight, 1)
    assert peers.check_output("ConvInteger", session.run(data), ref, 1.0) == (True, 0.0, 0.0)
    session.timed_round(data, 0.0, 3)
    session.timed_round(data, 0.0, 2)
    kernel_rounds, run_rounds = session.profile(warmup_calls=0)
    assert len(kernel_rounds) == len(run_rounds) == 2


@needs_onnxruntime
def test_onnxruntime_qlinearconv_output_is_checked_against_the_exact_requantization():
    data, weight = _layer(1)
    ref = conv2d_reference(data // 2, weight, 1)  # 7-bit activations: every onnxruntime path is exact here
    scale = peers.output_scale(ref)
    session = peers.OnnxRuntimeConv("QLinearConv", data.shape, weight, 1, scale)
    assert peers.check_output("QLinearConv", session.run(data // 2), ref, scale)[0]


def test_qlinearconv_check_counts_outputs_off_by_more_than_one_level():
    ref = np.array([[[0, 1000], [-1000, 500]]], dtype=np.int32)
    exact = peers.requantize(ref, 10.0)
    assert peers.check_output("QLinearConv", exact + 1, ref, 10.0) == (True, 0.0, 1.0)
    off = exact.copy()
    off[0, 0, 1] += 29
    assert peers.check_output("QLinearConv", off, ref, 10.0) == (False, 0.25, 29.0)


@needs_tvm
def test_tvm_relax_build_of_the_convolution_matches_the_reference():
    data, weight = _layer(2, C=8, K=8, IHW=7)
    assert np.array_equal(peers.TvmConv(data.shape, weight, 2).run(data), conv2d_reference(data, weight, 2))


@needs_objdump
@pytest.mark.parametrize("target", x86_target_params())
def test_peak_microkernel_keeps_one_instruction_per_chain_in_its_loop(target):
    spec = load_target(target)
    instruction = descriptor(spec.instruction)
    source = codegen.translation_unit([codegen.peak_kernel(instruction, "peak", 8)])
    lib = toolchain.compile_library(source, flags=list(spec.toolchain.flags) + EXTRA_FLAGS, name=f"test-peak-{target}")
    mnemonic = instruction.x86.mnemonics[0]
    assert len(re.findall(rf"\b{mnemonic}\b", lib.disassembly("peak"))) >= 8  # nothing hoisted or merged
