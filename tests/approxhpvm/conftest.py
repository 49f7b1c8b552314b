"""Session fixtures: the promise-soc target, trained networks and their profiles (trained once per session)."""

from __future__ import annotations

import pytest

from solvermap.formulations.solver import SolverConfig
from solvermap.hardware.targets import load_target
from solvermap.ir.workloads.approxhpvm_networks import trained_network
from solvermap.ir.workloads.approxhpvm_tensor_ops import single_threaded_blas
from tests.backends import PYOMO, milp_backends


@pytest.fixture(scope="session", autouse=True)
def _one_blas_thread():
    with single_threaded_blas():
        yield


@pytest.fixture(scope="session")
def spec():
    return load_target("promise-soc")


@pytest.fixture(scope="session")
def dnn1():
    return trained_network("dnn1")


@pytest.fixture(scope="session")
def lenet():
    return trained_network("lenet")


@pytest.fixture(scope="session")
def dnn1_profile(dnn1, spec):
    from solvermap.mappers.approxhpvm.profiling import profile_sensitivity

    return profile_sensitivity(dnn1, spec, repeats=2, seed=0)


@pytest.fixture(scope="session")
def dnn1_errors(dnn1, spec):
    from solvermap.hardware.approxhpvm.soc_sim import op_errors

    return op_errors(dnn1, spec, seed=0)


def config(backend: str = "cpsat", **kw) -> SolverConfig:
    return SolverConfig(backend=backend, time_limit_s=20, **kw)


MILP_BACKENDS = milp_backends("cpsat", "highs", "scip", *PYOMO)  # the enumerated-optimum tests


KNOBS_RUN_ARGS = ("solve", "knobs", "--workload", "dnn1", "--target", "promise-soc", "--time-limit", "20", "--json",
                  "--set", "decisions.budget.optuna_trials=0", "--set", "decisions.budget.top=1",
                  "--set", "decisions.budget.repeats=1", "--set", "decisions.budget.mc_runs=10",
                  "--set", "decisions.knobs.mc_runs=10")


@pytest.fixture(scope="session")
def knobs_run(tmp_path_factory):
    """One ``solvermap solve knobs`` on dnn1 with small Monte Carlo counts that also exports its configuration
    (``export.hpvm_config``): its record (from the run directory) and the exported file. The CLI runs in-process."""
    import json
    import sys

    from solvermap.cli import main

    base = tmp_path_factory.mktemp("knobs_run")
    exported = base / "confs.txt"
    argv = ["solvermap", *KNOBS_RUN_ARGS, "--set", f"export.hpvm_config={exported}", "--out", str(base / "run"), "-q"]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sys, "argv", argv)
        with pytest.raises(SystemExit) as exit_info:
            main()
            raise SystemExit(0)
    assert (exit_info.value.code or 0) == 0
    return json.loads((base / "run" / "records.json").read_text()), exported
