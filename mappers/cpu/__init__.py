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

Options (``--set decisions.tensorize.<key>=v``): ``tuner`` (unit-default | unit | optuna, default optuna),
``trials`` (Optuna samples, 12), ``unit_pairs`` (8), ``tiles`` (register tiles measured, 8),
``tune_untensorized`` (tune the untensorized peer for itself, true), ``measure`` (time | model), ``rounds``,
``min_seconds``, ``allow_padding``, ``commutative``, ``reorder`` (tune the dp loop order, true),
``execute`` (auto | compile | emulate), ``emulate_max_calls``.
"""

from __future__ import annotations

from solvermap.errors import InputError
from solvermap.formulations import tensorize as tensorize_model
from solvermap.formulations.problems.tensorize import objective
from solvermap.hardware.checks.tensorize import check
from solvermap.hardware.cpu.instructions import descriptor
from solvermap.ir.loopnest import Program
from solvermap.mappers.cpu.baselines import unit_greedy_mapping
from solvermap.mappers.cpu.execution import ValidationOptions, validate
from solvermap.mappers.cpu.inspector import inspect
from solvermap.mappers.pipeline import Context, Pipeline, Step, run_decision


def _options(ctx: Context) -> ValidationOptions:
    timing = ctx.target.timing
    get = lambda key, default: ctx.option("tensorize", key, default)  # noqa: E731
    return ValidationOptions(
        tuner=str(get("tuner", "optuna")), trials=int(get("trials", 12)), unit_pairs=int(get("unit_pairs", 8)),
        tiles=int(get("tiles", 8)), tune_untensorized=bool(get("tune_untensorized", True)),
        measure=str(get("measure", "time")), rounds=int(get("rounds", timing.rounds)),
        min_seconds=float(get("min_seconds", timing.min_seconds)), min_reps=int(get("min_reps", timing.min_reps)),
        emulate_max_calls=int(get("emulate_max_calls", 20000)), reorder=bool(get("reorder", True)),
        seed=int(ctx.seed), execute=str(get("execute", "auto")),
    )


def _inspect(ctx: Context) -> None:
    program = ctx.workload.ir
    source = f"workload {ctx.workload.name}"
    if not isinstance(program, Program):
        raise InputError(source, "workload", "the cpu family tensorizes loop-nest programs, not graphs")
    instruction = descriptor(ctx.target.instruction, ctx.target.name)
    verdict = inspect(program, instruction, allow_padding=bool(ctx.option("tensorize", "allow_padding",
                                                                           ctx.target.allow_padding)),
                      commutative=bool(ctx.option("tensorize", "commutative", False)), workload=ctx.workload.name)
    ctx.state["inspect"] = verdict
    if not verdict.applicable:
        raise InputError(source, "instruction", f"{instruction.name} is not applicable ({verdict.rule}): {verdict.reason}")
    return None


def _tensorize(ctx: Context):
    verdict = ctx.state["inspect"]
    problem = verdict.problem
    instruction = descriptor(ctx.target.instruction, ctx.target.name)
    options = _options(ctx)
    _, record = run_decision(
        ctx, "tensorize", problem,
        formulation=tensorize_model, checker=check, objective=objective,
        baselines={"unit-greedy-innermost": unit_greedy_mapping},
        validate=lambda p, d: validate(p, d, instruction, ctx.target, options),
        serialize=lambda d: d.to_json(),
    )
    feasible = tensorize_model.enumerate_mappings(problem, ctx.solver_for("tensorize"))
    record.details["feasible_mappings"] = len(feasible)
    record.details["binding"] = dict(problem.binding)
    record.details["mappings"] = [{"loop_map": dict(m.loop_map), "objective": objective(problem, m)} for m in feasible]
    return record


def _validate(ctx: Context) -> dict:
    record = next((r for r in ctx.records if r.decision == "tensorize"), None)
    return dict(record.validation) if record is not None else {}


PIPELINE = Pipeline(
    family="cpu",
    description="UNIT tensorized-instruction compilation (seed 002): inspect, map loops, rewrite, tune, run",
    steps=(
        Step("inspect", "Algorithm 1 expression isomorphism and applicability", _inspect, kind="transform"),
        Step("tensorize", "map instruction loops onto program loops (S'(u) ⊆ S(v)), then rewrite, tune and run",
             _tensorize, formulation="solvermap.formulations.tensorize", model="milp",
             baselines=("unit-greedy-innermost",)),
    ),
    validate=_validate,
    default_workload="conv_table1_3",
)
