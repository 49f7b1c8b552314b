"""A network decision's record keeps the solve's ``work`` and ``backstop_fired``: a solve that the wall-clock
backstop stopped stays marked after the formulation rewrites objective and bound (the split, routing and VC
records used to rebuild the record and drop both, so study rows stopped by the clock looked deterministic)."""

from __future__ import annotations

import dataclasses

import pytest

from solvermap.formulations import link_split, routing, vc_allocation
from solvermap.formulations.solver import SolverConfig

from . import instances

CASES = [
    (link_split, instances.hybrid_split),
    (routing, instances.mixed),
    (vc_allocation, instances.shared_link),
]


@pytest.mark.parametrize("module, instance", CASES, ids=[m.__name__.rsplit(".", 1)[-1] for m, _ in CASES])
def test_a_clock_stopped_solve_stays_marked_in_the_decision_record(module, instance, monkeypatch):
    real = module.solve_model

    def clock_stopped(model, config):
        result, solution = real(model, config)
        return dataclasses.replace(result, limit_reached=True, work=0.25, backstop_fired=True), solution

    monkeypatch.setattr(module, "solve_model", clock_stopped)
    solved = module.solve(instance(), SolverConfig(backend="cpsat", time_limit_s=5))
    assert solved.decision is not None
    assert solved.result.backstop_fired and solved.result.work == 0.25
