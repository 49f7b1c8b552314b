"""Exporter-style models on every target family: each maps, or gets that family's one-line refusal."""

from __future__ import annotations

import numpy as np
import pytest

from solvermap.errors import InputError, SolvermapError
from solvermap.formulations.solver import SolverConfig
from solvermap.hardware.targets import load_target
from solvermap.ir.workloads import build
from solvermap.mappers import pipeline_for
from solvermap.mappers.pipeline import Context

from .models import write

FAST = {  # options that keep each family's validation short
    "puma": {"validate": {"functional_samples": 1, "inferences": 2}},
    "cpu": {"tensorize": {"tuner": "unit-default", "measure": "model", "execute": "emulate", "trials": 0}},
}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("models")
    return {(name, external, weights): write(tmp, name, external=external, weights=weights)
            for name, external, weights in [("pytorch_block", "no", "random"), ("keras_block", "no", "random"),
                                            ("attention", "no", "random"), ("pytorch_block", "present", "random"),
                                            ("pytorch_block", "missing", "random"), ("keras_block", "no", "empty")]}


def run(path, target: str, upto: str | None = None, params=None, time_limit: float = 2.0):
    spec = load_target(target)
    workload = build(str(path), spec.family, params)
    ctx = Context(workload, spec, SolverConfig(time_limit_s=time_limit), options=FAST.get(spec.family, {}))
    return pipeline_for(spec.family).run(ctx, upto=upto)


@pytest.mark.parametrize("model", [("pytorch_block", "no", "random"), ("keras_block", "no", "random"),
                                   ("attention", "no", "random"), ("pytorch_block", "present", "random")])
def test_puma_maps_the_model_and_simulates_it_functionally(files, model):
    result = run(files[model], "puma")
    v = result.validation
    assert v["functional_simulation"] == "run" and v["functional_within_bound"]
    assert v["predicted_hop_weighted_bytes"] == v["simulated_hop_weighted_bytes"]


@pytest.mark.parametrize("model", [("pytorch_block", "missing", "random"), ("keras_block", "no", "empty")])
def test_puma_maps_a_shape_only_model_and_says_why_the_functional_simulation_was_skipped(files, model):
    v = run(files[model], "puma").validation
    assert v["weights"] == "missing" and v["functional_simulation"].startswith("skipped: the model has no weight values")
    assert v["latency_s"] > 0


def test_puma_runs_a_shape_only_model_on_synthetic_weights_when_asked_and_records_it(files):
    v = run(files[("keras_block", "no", "empty")], "puma", params={"weights": "random", "seed": 1}).validation
    assert v["weights"] == "synthetic" and "synthetic" in v["weights_note"] and v["functional_simulation"] == "run"


@pytest.mark.parametrize("model", [("pytorch_block", "no", "random"), ("keras_block", "no", "empty")])
def test_plasticine_lowers_the_model_to_a_vbdfg_and_merges_it(files, model):
    result = run(files[model], "plasticine", time_limit=1.0)
    assert [r.decision for r in result.records] == ["partition", "merge"]
    assert result.validation["pbs_used"] > 0 and result.validation["cycles"] > 0


@pytest.mark.parametrize("model", [("pytorch_block", "no", "random"), ("attention", "no", "random")])
def test_cpu_tensorizes_every_conv_and_matmul_with_a_per_layer_table(files, model):
    result = run(files[model], "x86-vnni")
    v = result.validation
    assert v["layers_tensorized"] == v["layers_total"] and v["bit_exact"]
    assert len(result.records) == v["distinct_problems"]
    assert {r["layer"] for r in v["layers"]} == {r.details["layer"] for r in result.records} | {
        n for r in result.records for n in r.details["layers"]}


def test_pushmem_maps_conv_and_pool_layers_and_names_the_ones_it_cannot(files):
    v = run(files[("keras_block", "no", "random")], "pushmem-cgra").validation
    rows = {r["layer"]: r["status"] for r in v["layers"]}
    assert rows["pointwise/Conv"] == "mapped"
    assert rows["depthwise/Conv"].startswith("not mapped: wide_fetch: infeasible")
    assert rows["dense/MatMul"].startswith("not mapped: output rows of width P = 1")
    assert v["bit_exact"] and v["cycles"] > 0


def test_pushmem_refuses_products_of_two_activations_in_its_table(files):
    from solvermap.ir.onnx_import import import_model
    from solvermap.mappers.pushmem.from_model import layer_programs

    entries = layer_programs("attention", import_model(files[("attention", "no", "random")]))
    refused = [e for e in entries if e.program is None]
    assert refused and all("batch N = 2" in e.refusal for e in refused)


@pytest.mark.parametrize("model, op", [(("pytorch_block", "no", "random"), "BatchNormalization"),
                                       (("keras_block", "no", "random"), "Transpose"),
                                       (("attention", "no", "random"), "Transpose")])
def test_promise_soc_refuses_an_operator_without_an_approxhpvm_tensor_op_in_one_line(files, model, op):
    with pytest.raises(InputError) as err:
        run(files[model], "promise-soc", upto="fuse")
    message = str(err.value)
    assert f"'{op}'" in message and "node '" in message and "approxhpvm" in message and "\n" not in message


def test_every_family_refuses_a_model_file_parameter_it_does_not_know(files):
    with pytest.raises(SolvermapError, match="workload.batch"):
        build(str(files[("keras_block", "no", "random")]), "puma", {"batch": 4})


def test_exported_trained_network_maps_on_promise_soc_with_its_own_accuracy(tmp_path):
    from .hpvm_export import export
    from solvermap.ir.workloads.approxhpvm_networks import trained_network
    from solvermap.mappers.approxhpvm.from_model import network

    path = export("lenet", tmp_path / "lenet.onnx")
    net, reference = network(build(str(path), "approxhpvm").ir), trained_network("lenet")
    assert [op.op for op in net.ops] == [op.op for op in reference.ops]
    assert np.abs(net.forward(net.data.x_test) - reference.forward(reference.data.x_test)).max() < 1e-5
    result = run(path, "promise-soc", upto="fuse")
    assert result.records[-1].check.ok


def test_promise_soc_accuracy_decisions_refuse_a_shape_only_model(tmp_path):
    from .hpvm_export import export

    path = export("dnn1", tmp_path / "dnn1.onnx", weights="empty")
    assert run(path, "promise-soc", upto="fuse").records[-1].check.ok  # costs need shapes only
    with pytest.raises(InputError, match="budget decision measures accuracy .*shape-only"):
        run(path, "promise-soc", upto="budget")


def test_promise_soc_reads_a_labelled_npz_dataset(tmp_path):
    from .hpvm_export import export
    from solvermap.ir.workloads.approxhpvm_tensor_ops import digits
    from solvermap.mappers.approxhpvm.from_model import network

    data = digits()
    np.savez(tmp_path / "data.npz", x=np.vstack([data.x_train, data.x_test]), y=np.concatenate([data.y_train, data.y_test]))
    path = export("dnn1", tmp_path / "dnn1.onnx")
    net = network(build(str(path), "approxhpvm", {"dataset": str(tmp_path / "data.npz")}).ir, str(tmp_path / "data.npz"))
    assert net.golden_accuracy() > 0.9 and net.meta["dataset"].endswith("data.npz")


FIRST = {"puma": "replicate", "plasticine": "partition", "x86-vnni": "tensorize", "pushmem-cgra": "schedule",
         "promise-soc": "fuse"}
VARIANTS = [("pytorch_block", "no", "random"), ("keras_block", "no", "random"), ("attention", "no", "random"),
            ("pytorch_block", "present", "random"), ("pytorch_block", "missing", "random"), ("keras_block", "no", "empty")]
REFUSED = {"promise-soc": {"pytorch_block": "BatchNormalization", "keras_block": "Transpose", "attention": "Transpose"}}


@pytest.mark.parametrize("target", sorted(FIRST))
@pytest.mark.parametrize("model", VARIANTS, ids=["-".join(v) for v in VARIANTS])
def test_every_export_style_reaches_a_decision_or_a_named_refusal_on_every_family(files, model, target):
    refusal = REFUSED.get(target, {}).get(model[0])
    if refusal is None:
        result = run(files[model], target, upto=FIRST[target], time_limit=0.5)
        assert result.records[-1].decision == FIRST[target] and result.records[-1].check.ok
    else:
        with pytest.raises(InputError) as err:
            run(files[model], target, upto=FIRST[target], time_limit=0.5)
        assert f"'{refusal}'" in str(err.value) and "node '" in str(err.value) and "family" in str(err.value)


def test_puma_certified_placement_bound_is_at_least_the_bytes_to_and_from_the_io_tiles(files):
    from solvermap.hardware.puma.placement_problem import hop_weighted_bytes
    from solvermap.mappers.puma.baselines import row_major
    from solvermap.mappers.puma.placement_bounds import io_floor, lower_bound

    spec = load_target("puma")
    ctx = Context(build(str(files[("keras_block", "no", "random")]), "puma"), spec, SolverConfig(time_limit_s=0.5),
                  options=FAST["puma"])
    pipeline_for("puma").run(ctx, upto="place")
    problem = ctx.state["place.problem"]
    floor = io_floor(problem)
    assert floor > 0
    assert floor <= lower_bound(problem, 0.2, row_major(problem)).value <= hop_weighted_bytes(problem, row_major(problem))
