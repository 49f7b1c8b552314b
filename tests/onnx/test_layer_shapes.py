"""Layer-shape files (our YAML and Timeloop/CoSA problems) and the loop nests they stand for."""

from __future__ import annotations

import numpy as np
import pytest

from solvermap.errors import InputError
from solvermap.formulations.solver import SolverConfig
from solvermap.hardware.targets import load_target
from solvermap.ir.layer_shapes import conv_program, conv_reference, load, shape_of
from solvermap.ir.loopnest import evaluate
from solvermap.ir.workloads import build
from solvermap.mappers import pipeline_for
from solvermap.mappers.pipeline import Context

OURS = """
name: tiny
layers:
  - {name: conv1, C: 3, K: 8, R: 3, S: 5, P: 6, Q: 4, Wstride: 2, dtypes: {input: uint8, weight: int8}}
  - {name: dw, C: 8, K: 8, G: 8, R: 3, S: 3, P: 4, Q: 4, Hdilation: 2}
"""

# the layout of Timeloop problem files (problem.instance + problem.shape, output channels as M)
TIMELOOP = """
problem:
  instance: {C: 64, Hdilation: 1, Hstride: 2, M: 128, N: 1, P: 28, Q: 28, R: 3, S: 3, Wdilation: 1, Wstride: 2}
  shape:
    coefficients:
    - {default: 1, name: Wstride}
    - {default: 1, name: Hstride}
    dimensions: [C, M, R, S, N, P, Q]
    name: conv_layer
---
problem:
  shape: {name: dw-cnn-layer, dimensions: [R, S, P, Q, C, N]}
  instance: {C: 32, R: 3, S: 3, P: 14, Q: 14, N: 1}
"""


def test_our_format_reads_every_dimension_and_derives_the_padded_input(tmp_path):
    (tmp_path / "l.yaml").write_text(OURS)
    shapes = load(tmp_path / "l.yaml")
    conv1, dw = shapes.layers
    assert (conv1.W, conv1.H) == ((6 - 1) * 2 + 3, 4 - 1 + 5) and conv1.Wstride == 2 and conv1.input_dtype == "uint8"
    assert dw.G == 8 and dw.H == (4 - 1) + (3 - 1) * 2 + 1 and dw.macs == 8 * 16 * 9


def test_timeloop_problem_documents_read_as_layers_and_dw_cnn_layer_is_depthwise(tmp_path):
    (tmp_path / "t.yaml").write_text(TIMELOOP)
    first, second = load(tmp_path / "t.yaml").layers
    assert (first.C, first.K, first.P, first.Hstride) == (64, 128, 28, 2) and first.W == 57
    assert (second.C, second.K, second.G, second.name) == (32, 32, 32, "dw-cnn-layer")


def test_cosa_style_problem_with_bare_dimensions_reads(tmp_path):
    (tmp_path / "c.yaml").write_text("problem: {C: 3, K: 64, R: 7, S: 7, P: 112, Q: 112, N: 1, Wstride: 2, Hstride: 2}\n")
    layer = load(tmp_path / "c.yaml").layers[0]
    assert (layer.K, layer.W, layer.macs) == (64, 229, 64 * 112 * 112 * 3 * 49)


@pytest.mark.parametrize("text, field, problem", [
    ("layers: [{C: 4, K: 4, Rr: 3}]", "layers[0].Rr", "unknown dimension"),
    ("layers: [{C: 6, K: 4, G: 4}]", "layers[0].G", "do not divide"),
    ("layers: [{C: 4, K: 99999999999}]", "layers[0].K", "expected an integer in [1, 1048576]"),
    ("layers: [{C: 4, K: 4, M: 4}]", "layers[0].M", "not both"),
    ("layers: [{C: 4, K: 4, dtypes: {input: float32}}]", "layers[0].dtypes.input", "unknown dtype"),
    ("layers: [{K: 4}]", "layers[0].C", "missing required dimension"),
])
def test_a_bad_layer_is_one_line_naming_its_field(tmp_path, text, field, problem):
    (tmp_path / "bad.yaml").write_text(text)
    with pytest.raises(InputError) as err:
        load(tmp_path / "bad.yaml")
    assert err.value.field == field and problem in err.value.problem


def test_layers_whose_tensors_exceed_the_memory_cap_are_refused_before_allocation(tmp_path):
    (tmp_path / "big.yaml").write_text("layers: [{C: 1024, K: 1024, P: 100000, Q: 100000}]\n")
    with pytest.raises(InputError) as err:
        load(tmp_path / "big.yaml", memory_limit=1 << 30)
    assert err.value.field == "workload.memory_limit_mb" and "MB" in err.value.problem


@pytest.mark.parametrize("dims", [
    {"C": 4, "K": 6, "R": 3, "S": 2, "P": 3, "Q": 4, "Wstride": 2, "Hdilation": 2},
    {"C": 6, "K": 4, "G": 2, "R": 3, "S": 3, "P": 3, "Q": 3},
    {"C": 4, "K": 4, "G": 4, "R": 3, "S": 3, "P": 2, "Q": 2, "N": 2, "Hstride": 2},
])
def test_the_fast_reference_equals_the_golden_executor(dims):
    program = conv_program(shape_of(dims))
    rng = np.random.default_rng(0)
    inputs = {t.name: rng.integers(-8, 8, size=t.shape).astype(t.dtype) if t.dtype == "int8" else
              rng.integers(0, 16, size=t.shape).astype(t.dtype) for t in program.inputs}
    assert np.array_equal(conv_reference(inputs["data"], inputs["weight"], program.attrs["conv"]),
                          evaluate(program, inputs)["out"])


def test_conv2d_takes_every_layer_shape_parameter():
    program = build("conv2d", "cpu", {"C": 8, "K": 16, "IHW": 9, "R": 3, "S": 1, "G": 2, "N": 2, "Wstride": 2,
                                      "Hdilation": 2, "stride": 1}).ir
    conv = program.attrs["conv"]
    assert (conv["S"], conv["G"], conv["N"], conv["Wstride"], conv["Hdilation"]) == (1, 2, 2, 2, 2)
    assert program.tensors["out"].shape == (2, 16, 9, 4) and "conv2d" not in program.attrs


def test_conv2d_defaults_are_the_square_table_i_nest():
    from solvermap.ir.workloads.cpu_conv import conv2d_program

    program, square = build("conv2d", "cpu").ir, conv2d_program("conv2d", 64, 64, 16, 3, 1)
    assert program.statements == square.statements and program.tensors == square.tensors


def _run(path, target: str, options=None):
    spec = load_target(target)
    ctx = Context(build(str(path), spec.family), spec, SolverConfig(time_limit_s=2.0), options=options or {})
    return pipeline_for(spec.family).run(ctx)


def test_a_layer_shape_file_maps_on_puma_with_one_input_per_layer(tmp_path):
    (tmp_path / "l.yaml").write_text(OURS)
    v = _run(tmp_path / "l.yaml", "puma").validation
    assert v["functional_simulation"].startswith("skipped") and v["tiles_used"] >= 1
    assert v["predicted_hop_weighted_bytes"] == v["simulated_hop_weighted_bytes"]


def test_a_layer_shape_file_tensorizes_on_the_cpu(tmp_path):
    (tmp_path / "l.yaml").write_text(OURS)
    v = _run(tmp_path / "l.yaml", "x86-vnni", {"tensorize": {"tuner": "unit-default", "measure": "model",
                                                             "execute": "emulate", "trials": 0}}).validation
    assert v["layers_tensorized"] == 2 and v["bit_exact"]


def test_a_layer_shape_file_maps_on_push_memory(tmp_path):
    (tmp_path / "l.yaml").write_text("layers: [{name: c, C: 4, K: 4, R: 3, S: 3, P: 4, Q: 4}]\n")
    v = _run(tmp_path / "l.yaml", "pushmem-cgra").validation
    assert v["layers_mapped"] == 1 and v["bit_exact"]
