import pytest

from solvermap.formulations.solver import SolverConfig
from solvermap.hardware.targets import load_target
from solvermap.ir.workloads import build
from solvermap.mappers.pipeline import Context
from solvermap.mappers.pushmem import PIPELINE


@pytest.fixture(scope="session")
def spec():
    return load_target("pushmem-cgra")


def mapped(name: str, params: dict | None = None, backend: str = "cpsat", options: dict | None = None):
    """The whole pipeline on a built-in (or a program file: ``name`` a path, ``params`` None)."""
    ctx = Context(workload=build(name, "pushmem", params), target=load_target("pushmem-cgra"),
                  solver=SolverConfig(backend=backend, time_limit_s=20), options=options or {})
    result = PIPELINE.run(ctx)
    return ctx, result


def mapped_sequentially(name: str, params: dict | None = None, options: dict | None = None):
    """The pipeline with the sequential baseline schedule in place of the schedule decision (each statement
    to completion before the next, 001:L372), on an array with as many MEM tiles as its buffers need."""
    ctx = Context(workload=build(name, "pushmem", params),
                  target=load_target("pushmem-cgra").model_copy(update={"mem_tiles": 10_000}),
                  solver=SolverConfig(backend="cpsat", time_limit_s=20), options=options or {})
    ctx._typed.update(PIPELINE.check_options(ctx.options))
    records = []
    for step in PIPELINE.steps:
        record = step.run(ctx)
        if record is not None:
            records.append(record)
        if step.name == "schedule":
            ctx.state["schedule"] = ctx.state["sequential_schedule"]
    return ctx, records, PIPELINE.validate(ctx)


@pytest.fixture(scope="session")
def gaussian16():
    return mapped("gaussian", {"size": 24})  # rows longer than the 16-stage SR limit: a memory is needed
