"""Replication baselines: none, and ISAAC's greedy bottleneck replication (seed 003 L156 cites ISAAC [24])."""

from __future__ import annotations

from solvermap.formulations.problems.replication import Replication, ReplicationProblem, crossbars_used


def no_replication(problem: ReplicationProblem) -> Replication:
    return Replication({l: 1 for l in problem.layers})


def greedy_bottleneck(problem: ReplicationProblem) -> Replication:
    """Repeatedly add a replica to the layer with the largest work per replica while the budget allows."""
    degrees = {l: 1 for l in problem.layers}
    while True:
        layer = max(problem.layers, key=lambda l: (problem.work[l] / degrees[l], l))
        trial = Replication({**degrees, layer: degrees[layer] + 1})
        if degrees[layer] + 1 > problem.max_degree or crossbars_used(problem, trial) > problem.budget:
            return Replication(degrees)
        degrees = dict(trial.degrees)

