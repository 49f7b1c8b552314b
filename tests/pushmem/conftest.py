import pytest

from solvermap.formulations.solver import SolverConfig
from solvermap.hardware.targets import load_target
from solvermap.ir.workloads import build
from solvermap.mappers.pipeline import Context
from solvermap.mappers.pushmem import PIPELINE


@pytest.fixture(scope="session")
def spec():
    return load_target("pushmem-cgra")


def mapped(name: str, params: dict, backend: str = "cpsat"):
    ctx = Context(workload=build(name, "pushmem", params), target=load_target("pushmem-cgra"),
                  solver=SolverConfig(backend=backend, time_limit_s=20))
    result = PIPELINE.run(ctx)
    return ctx, result


@pytest.fixture(scope="session")
def gaussian16():
    return mapped("gaussian", {"size": 24})  # rows longer than the 16-stage SR limit: a memory is needed
