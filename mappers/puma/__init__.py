"""PUMA analog-digital accelerator pipeline (seed 003): ONNX model → placed, communicating crossbar program.

convert      transform  ONNX converter (L104–L110): imported graph + weights → PUMA network
optimize     transform  application optimiser (L112–L150): batch-norm folding, bias folding [W|b]·[x;1],
                        quantisation by inserted normalize/clip ops and power-of-two layer scales
replicate    decision   per-layer replication degrees under an MVMU budget (L152–L160) — MILP
                        (formulations/replication.py); baselines: none, ISAAC greedy bottleneck
partition    transform  crossbar partitioning into virtual crossbars with affinity (L171)
place        decision   hierarchical tile placement (L171–L189): blocks → MVMUs → cores → tiles → node
                        positions on the shared placement model (CP-SAT / MILP; exact stages, LNS) with a
                        certified lower bound; objective = hop-weighted bytes; baselines: row-major,
                        col-major, random, KaHIP min-cut, each with identity placement (public PUMA compiler)
communicate  transform  load/store/send/receive insertion with dedup (L183), checked independently

Validation: event-based performance/energy simulation (latency, throughput, energy, area, tiles,
predicted vs simulated hop-weighted bytes) and, when the model has weights, the functional simulation
(fixed point, bit-sliced crossbars) against the float reference with its error bound; for
``digits_mlp`` the test-set accuracy loss.

Options (``--set decisions.<step>.<key>=v``): :class:`OptimizeOptions` (optimize.*), :class:`ValidateOptions`
(validate.*), and the descriptors' ``ReplicateOptions`` (replicate.spare or replicate.budget) and
``PumaPlaceOptions`` (place.variant, extra_tiles, balance_weight, link_weight, lns_share, bound_share,
selection_share) in :mod:`solvermap.mappers.decisions`; ``solvermap decisions --json`` shows types, ranges and defaults.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
from pydantic import Field

from solvermap.errors import InfeasibleError
from solvermap.mappers.decisions import PUMA_PLACE, REPLICATE
from solvermap.mappers.pipeline import Context, Pipeline, StepOptions, decide, run_decision, transform


class OptimizeOptions(StepOptions):
    """Options of the application optimiser (``decisions.optimize.<key>``)."""

    unroll: Literal["per_position", "im2col"] = Field("per_position", description="how a convolution unrolls onto crossbars")
    fold_bias: Literal["auto", "always", "never"] = Field("auto", description="fold biases into the weights [W|b]·[x;1]")
    calibration_samples: int = Field(8, ge=1, le=4096, description="inputs that calibrate the quantisation scales "
                                     "(at most what calibration_memory_mb holds)")
    calibration_memory_mb: int = Field(1024, ge=16, le=1 << 20, description="memory the streamed calibration pass may "
                                       "use; bounds the calibration samples of large models")
    input_normalization: tuple[float, float] | None = Field(None, description="[shift, scale] of the inputs")


class ValidateOptions(StepOptions):
    """Options of the end-to-end validation (``decisions.validate.<key>``)."""

    inferences: int = Field(4, ge=1, description="inferences the performance simulator pipelines")
    chunks: int = Field(8, ge=1, description="chunks per transfer in the performance simulator")
    functional_samples: int = Field(4, ge=1, description="inputs run through the functional simulator")
    functional_max_macs: float = Field(5e7, ge=0, description="the functional simulation runs when samples × MACs "
                                       "per inference stay below this (bit-sliced crossbars are slow); else skipped")


def _spec(ctx: Context):
    return ctx.target


def _convert(ctx: Context) -> None:
    from solvermap.mappers.puma.frontend import lower

    net = lower(ctx.workload.ir)
    check_size(net, _spec(ctx), ctx.workload)
    check_blocks(net, _spec(ctx), ctx.workload.name)
    ctx.state["network.original"] = net


def check_size(net, spec, workload) -> None:
    """Before anything is built: the crossbar blocks against the target's MVMUs, and the bytes of the
    partition's owner arrays (4 per element of every layer) against the memory cap — one line each."""
    from solvermap.errors import InputError
    from solvermap.hardware.puma.network import crossbar_blocks
    from solvermap.ir.onnx_import import default_memory_limit

    blocks = sum(crossbar_blocks(layer, spec.crossbar.rows, spec.crossbar.cols) for layer in net.mvm_layers())
    mvmus = spec.compute_tiles * spec.mvmus_per_tile
    if blocks > mvmus:
        raise InputError(workload.name, "model", f"needs {blocks} crossbar blocks of {spec.crossbar.rows}x{spec.crossbar.cols}; "
                         f"target {spec.name} has {mvmus} MVMUs on {spec.compute_tiles} compute tiles (a larger "
                         "target.noc or a smaller model)")
    limit_mb = (workload.params or {}).get("memory_limit_mb")
    limit = int(limit_mb * 2**20) if limit_mb else default_memory_limit()
    elements = sum(math.prod(layer.shape) for layer in net.layers)
    if 4 * elements > limit:
        raise InputError(workload.name, "workload.memory_limit_mb", f"mapping needs about {4 * elements / 2**20:.0f} MB "
                         f"of owner arrays ({elements} elements over {len(net.layers)} layers), over the memory cap of "
                         f"{limit / 2**20:.0f} MB")


def calibration_samples(network, requested: int, memory_mb: int) -> int:
    """Samples the streamed calibration may use: each holds about four float64 copies of the largest layer
    value (its input, its output, a conv's patch slice and a temporary) at once."""
    largest = max([math.prod(network.input_shape)] + [math.prod(layer.shape) for layer in network.layers])
    per_sample = 4 * 8 * largest
    return max(1, min(requested, int(memory_mb * 2**20 // per_sample)))


def check_blocks(network, spec, source: str) -> None:
    """Refuse a network whose crossbar blocks pass the memory cap before any later step tiles them: the
    partitioning and the functional simulation hold each block's cells (at least one int64 per cell)."""
    from solvermap.hardware.puma.network import matrix_shapes
    from solvermap.limits import check_estimate

    rows, cols = spec.crossbar.rows, spec.crossbar.cols
    blocks = sum(math.ceil(o / cols) * math.ceil(i / rows) for layer in network.mvm_layers() for o, i in matrix_shapes(layer))
    check_estimate(f"{blocks:,} crossbar blocks of {rows}x{cols} cells", 8.0 * blocks * rows * cols, source)


def _calibration(ctx: Context, network, samples: int) -> np.ndarray:
    if ctx.workload.name == "digits_mlp":
        from solvermap.ir.workloads.puma_digits import digits_split

        return digits_split(int(ctx.workload.params.get("seed", 0)))[0][:max(samples, 64)].astype(np.float64)
    rng = np.random.default_rng(ctx.seed)
    return rng.random((samples,) + tuple(network.input_shape))


def _optimize(ctx: Context) -> None:
    from solvermap.mappers.puma import application_optimizer as ao

    spec, options = _spec(ctx), ctx.options_for("optimize", OptimizeOptions)
    net = ao.fold_batchnorm(ctx.state["network.original"])
    net = ao.set_unroll(net, options.unroll)
    net = ao.fold_bias(net, spec.crossbar.rows, options.fold_bias)
    limit = 2.0 ** (spec.data.int_bits - 1)
    calibration = None
    if net.has_weights:
        samples = calibration_samples(net, options.calibration_samples, options.calibration_memory_mb)
        if samples < options.calibration_samples:
            ctx.say(f"optimize: calibrating on {samples} of {options.calibration_samples} samples "
                    f"(decisions.optimize.calibration_memory_mb={options.calibration_memory_mb})")
            net.notes.append(f"calibration on {samples} samples (memory bound)")
        ctx.say(f"optimize: calibrating the layer scales on {samples} inputs")
        calibration = _calibration(ctx, net, samples)
    net = ao.quantize(net, limit, calibration, options.input_normalization)
    ctx.state["network"] = net


def replication_problem(network, spec, budget: int | None = None, spare: float = 0.25):
    from solvermap.formulations.problems.replication import ReplicationProblem
    from solvermap.hardware.puma.network import crossbar_blocks

    layers, work, crossbars = [], {}, {}
    for layer in network.mvm_layers():
        blocks = crossbar_blocks(layer, spec.crossbar.rows, spec.crossbar.cols)
        layers.append(layer.name)
        work[layer.name] = float(layer.steps())
        crossbars[layer.name] = blocks
    base = sum(crossbars.values())
    chip = spec.compute_tiles * spec.mvmus_per_tile
    if budget is None:
        budget = int(math.floor(base * (1.0 + spare)))
    return ReplicationProblem(tuple(layers), work, crossbars, min(int(budget), chip))


def _replicate(ctx: Context):
    from solvermap.formulations.problems.replication import crossbars_used, objective

    net, options = ctx.state["network"], ctx.options_for(REPLICATE)
    problem = replication_problem(net, _spec(ctx), options.budget, options.spare)

    def validate(p, decision):
        return {"interval_mvm_steps": objective(p, decision), "mvmus_used": crossbars_used(p, decision), "budget_mvmus": p.budget,
                "degrees": dict(decision.degrees)}

    decision, record = run_decision(ctx, REPLICATE, problem, validate=validate)
    for layer in net.mvm_layers():
        layer.attrs["replicas"] = int(decision.degrees.get(layer.name, 1))
    return record


def _partition(ctx: Context) -> None:
    from solvermap.mappers.puma.crossbar_partition import partition

    spec = _spec(ctx)
    ctx.state["partition"] = partition(ctx.state["network"], spec.crossbar.rows, spec.crossbar.cols, spec.data.bits / 8)


def make_placement_problem(ctx: Context):
    from solvermap.hardware.puma.placement_problem import make_problem

    options = ctx.options_for(PUMA_PLACE)
    return make_problem(ctx.state["partition"], _spec(ctx), variant=options.variant, extra_tiles=options.extra_tiles,
                        balance_weight=options.balance_weight, link_weight=options.link_weight,
                        lns_share=options.lns_share, bound_share=options.bound_share, selection_share=options.selection_share)


def placement_metrics(problem, decision, inferences: int = 4, chunks: int = 8) -> dict[str, Any]:
    """Simulated performance and bytes of one placement (used by the pipeline and the study)."""
    from solvermap.hardware.puma.performance_sim import simulate
    from solvermap.mappers.puma.communication import insert, summary
    from solvermap.hardware.puma.placement_problem import hop_weighted_bytes, level_bytes, link_loads

    comm = insert(problem, decision)
    perf = simulate(problem.partition, decision, comm, problem.spec, dict(problem.io_positions), inferences=inferences, chunks=chunks)
    predicted = hop_weighted_bytes(problem, decision)
    levels = level_bytes(problem, decision)
    out: dict[str, Any] = {
        "latency_s": perf.latency_s, "throughput": perf.throughput, "energy_j": perf.energy_j, "area_mm2": perf.area_mm2,
        "tiles_used": perf.tiles_used, "power_w": perf.energy_j * perf.throughput, "mvmu_utilisation": perf.mvmu_utilisation,
        "predicted_hop_weighted_bytes": predicted, "simulated_hop_weighted_bytes": perf.hop_weighted_bytes,
        "hop_weighted_bytes_rel_diff": abs(perf.hop_weighted_bytes - predicted) / max(1.0, predicted),
        "store_bytes": float(levels["store"]), "load_bytes": float(levels["load"]), "send_bytes": float(levels["send"]),
        "max_link_load_bytes": max(link_loads(problem, decision).values(), default=0.0),
        "sync_stall_s": perf.sync_stall_s, "energy_breakdown_j": {k: float(v) for k, v in perf.energy_breakdown_j.items()},
        "interval_s": float(perf.extra["interval_s"]), "load_model_interval_s": float(perf.extra["busiest_resource_s"]),
        "load_model_rel_error": float(1.0 - perf.extra["busiest_resource_s"] / perf.extra["interval_s"]),
        "busiest_resource": perf.busiest_resource,
    }
    out.update({f"comm_{k}": v for k, v in summary(comm).items() if k.endswith("_count")})
    return out


def _place(ctx: Context):
    problem = make_placement_problem(ctx)
    options = ctx.options_for("validate", ValidateOptions)
    decision, record = run_decision(ctx, PUMA_PLACE, problem,
                                    validate=lambda p, d: placement_metrics(p, d, options.inferences, options.chunks))
    if record.baseline is not None and record.baseline.objective:
        record.details["ratio_to_best_baseline"] = record.validation["predicted_hop_weighted_bytes"] / record.baseline.objective
    return record


def _communicate(ctx: Context) -> None:
    from solvermap.hardware.checks.puma_communication import check
    from solvermap.mappers.puma.communication import insert

    problem = ctx.state["place.problem"]
    comm = insert(problem, ctx.state["place"])
    report = check(problem, ctx.state["place"], comm)
    if not report.ok:
        raise InfeasibleError(f"communicate: inserted communication fails its check: {report.violations[0].rule}: {report.violations[0].message}")
    ctx.state["communication"] = comm


def _validate(ctx: Context) -> dict[str, Any]:
    from solvermap.hardware.puma.functional_sim import simulate

    problem, options = ctx.state["place.problem"], ctx.options_for("validate", ValidateOptions)
    metrics = placement_metrics(problem, ctx.state["place"], options.inferences, options.chunks)
    net = ctx.state["network"]
    metrics["communication_check_ok"] = True
    weights = getattr(ctx.workload.ir, "weights", "file")
    metrics["weights"] = weights
    if weights == "synthetic":
        metrics["weights_note"] = (f"missing weights replaced by deterministic synthetic values (workload.weights=random, "
                                   f"seed {ctx.workload.params.get('seed', 0)}): functional figures describe those values")
    macs = sum(layer.steps() * sum(o * i for o, i in _matrix_shapes(layer)) for layer in net.mvm_layers())
    if not net.has_weights:
        metrics["functional_simulation"] = ("skipped: the model has no weight values (shape-only); "
                                            "--set workload.weights=random runs it on deterministic synthetic weights")
    elif macs * options.functional_samples > options.functional_max_macs:
        metrics["functional_simulation"] = (f"skipped: {options.functional_samples} samples x {macs:.3g} MACs exceed "
                                            f"decisions.validate.functional_max_macs={options.functional_max_macs:g}")
    else:
        metrics["functional_simulation"] = "run"
        samples = options.functional_samples
        x = _calibration(ctx, net, samples)[:samples]
        result = simulate(net, ctx.state["partition"], _spec(ctx), x)
        metrics.update({"functional_max_error": result.max_error, "functional_bound_max": float(result.bound.max()),
                        "functional_within_bound": result.within_bound, "functional_bound_applies": result.bound_applies,
                        "functional_saturations": result.saturations})
        if ctx.workload.name == "digits_mlp":
            metrics.update(digits_accuracy(ctx, net))
    return metrics


def _matrix_shapes(layer):
    from solvermap.hardware.puma.network import matrix_shapes

    return matrix_shapes(layer)


def digits_accuracy(ctx: Context, net) -> dict[str, float]:
    from solvermap.hardware.puma.functional_sim import simulate
    from solvermap.hardware.puma.network import forward_float
    from solvermap.ir.workloads.puma_digits import digits_split

    _, x_test, _, y_test = digits_split(int(ctx.workload.params.get("seed", 0)))
    float_pred = forward_float(ctx.state["network.original"], x_test.astype(np.float64)).argmax(axis=1)
    result = simulate(net, ctx.state["partition"], _spec(ctx), x_test.astype(np.float64))
    fixed_pred = result.output.argmax(axis=1)
    acc_float = float((float_pred == y_test).mean())
    acc_fixed = float((fixed_pred == y_test).mean())
    return {"accuracy_float": acc_float, "accuracy_fixed": acc_fixed, "accuracy_loss": acc_float - acc_fixed}


PIPELINE = Pipeline(
    family="puma",
    description="PUMA analog-digital accelerator: ONNX → optimiser → replication → crossbar partitioning → tile placement → communication",
    steps=(
        transform("convert", "ONNX converter: imported graph + weights → PUMA network", _convert,
                  provides=("network.original",)),
        transform("optimize", "application optimiser: batch-norm and bias folding, quantisation (normalize/clip)",
                  _optimize, options=OptimizeOptions, needs=("network.original",), provides=("network",)),
        decide(REPLICATE, _replicate, needs=("network",)),
        transform("partition", "crossbar partitioning into virtual crossbars (affinity for vector ops)", _partition,
                  needs=("network",), provides=("partition",)),
        decide(PUMA_PLACE, _place, needs=("partition",)),
        transform("communicate", "load/store/send/receive insertion with dedup, independently checked", _communicate,
                  needs=("place", "place.problem"), provides=("communication",)),
    ),
    validate=_validate,
    validate_options=ValidateOptions,
    default_workload="mlp_l4",
)
