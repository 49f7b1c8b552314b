"""UNIT tensorization for CPUs (seed 002): the ``cpu`` family pipeline.

    inspect    (transform)  Algorithm 1 + applicability; a non-applicable instruction is an InputError
                            naming the rule (dtype-mismatch, compute-mismatch, reduction-structure,
                            no-access-mapping, indivisible-extent) and the reason
    tensorize  (decision)   loop mapping f: instruction loops → program loops (formulations/tensorize.py,
                            MILP on any backend), UNIT's greedy innermost mapping as baseline, checked by
                            hardware/checks/tensorize.py; validation = rewrite, tune (UNIT pairs +
                            Optuna), bit-exact checks, compiled kernels (AVX-512 VNNI, AVX-VNNI, AVX2)
                            timed against the untensorized nest, the naive nest, NumPy and onnxruntime
                            (mappers/cpu/execution.py, peers.py)

Options (``--set decisions.tensorize.<key>=v``): :class:`~solvermap.mappers.decisions.TensorizeOptions`
(tuner, trials, unit_pairs, tiles, tune_untensorized, measure, rounds, min_seconds, min_reps, emulate_max_calls,
reorder, execute, allow_padding, commutative; ``solvermap decisions --json`` shows their types, ranges and defaults).
"""

from __future__ import annotations

from solvermap.errors import InputError
from solvermap.formulations import tensorize as tensorize_model
from solvermap.formulations.problems.tensorize import objective
from solvermap.hardware.cpu.instructions import descriptor
from solvermap.ir.loopnest import Program
from solvermap.mappers.cpu.execution import ValidationOptions, validate
from solvermap.mappers.cpu.inspector import inspect
from solvermap.mappers.decisions import TENSORIZE
from solvermap.mappers.pipeline import Context, Pipeline, decide, run_decision, transform


def _options(ctx: Context) -> ValidationOptions:
    timing, options = ctx.target.timing, ctx.options_for(TENSORIZE)

    def either(value, default):
        return default if value is None else value

    return ValidationOptions(
        tuner=options.tuner, trials=options.trials, unit_pairs=options.unit_pairs, tiles=options.tiles,
        tune_untensorized=options.tune_untensorized, measure=options.measure,
        rounds=either(options.rounds, timing.rounds), min_seconds=either(options.min_seconds, timing.min_seconds),
        min_reps=either(options.min_reps, timing.min_reps), emulate_max_calls=options.emulate_max_calls,
        reorder=options.reorder, seed=int(ctx.seed), execute=options.execute,
    )


def _inspect(ctx: Context) -> None:
    from solvermap.mappers.cpu import from_model

    if from_model.is_model(ctx.workload.ir):  # an ONNX model or a layer-shape file: one nest per layer
        ctx.state["inspect"] = from_model.inspect_layers(ctx)
        return None
    program = ctx.workload.ir
    source = f"workload {ctx.workload.name}"
    if not isinstance(program, Program):
        raise InputError(source, "workload", "the cpu family tensorizes loop-nest programs, not graphs")
    instruction = descriptor(ctx.target.instruction, ctx.target.name)
    options = ctx.options_for(TENSORIZE)
    allow_padding = ctx.target.allow_padding if options.allow_padding is None else options.allow_padding
    verdict = inspect(program, instruction, allow_padding=allow_padding, commutative=options.commutative,
                      workload=ctx.workload.name)
    ctx.state["inspect"] = verdict
    if not verdict.applicable:
        raise InputError(source, "instruction", f"{instruction.name} is not applicable ({verdict.rule}): {verdict.reason}")
    return None


def _tensorize(ctx: Context):
    from solvermap.mappers.cpu import from_model

    verdict = ctx.state["inspect"]
    instruction = descriptor(ctx.target.instruction, ctx.target.name)
    options = _options(ctx)
    if isinstance(verdict, from_model.LayerVerdicts):
        return from_model.tensorize_layers(ctx, lambda p, d: validate(p, d, instruction, ctx.target, options))
    problem = verdict.problem
    _, record = run_decision(ctx, TENSORIZE, problem, validate=lambda p, d: validate(p, d, instruction, ctx.target, options))
    feasible = tensorize_model.enumerate_mappings(problem, ctx.solver_for("tensorize"))
    record.details["feasible_mappings"] = len(feasible)
    record.details["binding"] = dict(problem.binding)
    record.details["mappings"] = [{"loop_map": dict(m.loop_map), "objective": objective(problem, m)} for m in feasible]
    return record


def _validate(ctx: Context) -> dict:
    from solvermap.mappers.cpu import from_model

    if isinstance(ctx.state.get("inspect"), from_model.LayerVerdicts):
        return from_model.validation(ctx)
    record = next((r for r in ctx.records if r.decision == "tensorize"), None)
    return dict(record.validation) if record is not None else {}


PIPELINE = Pipeline(
    family="cpu",
    description="UNIT tensorized-instruction compilation (seed 002): inspect, map loops, rewrite, tune, run",
    steps=(
        transform("inspect", "Algorithm 1 expression isomorphism and applicability", _inspect, provides=("inspect",)),
        decide(TENSORIZE, _tensorize, needs=("inspect",)),
    ),
    validate=_validate,
    default_workload="conv_table1_3",
)
