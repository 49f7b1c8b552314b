"""Per-layer replication degrees under a crossbar budget (seed 003 L152–L160): problem, decision, objective.

A layer l needs ``crossbars[l]`` MVMUs per replica and keeps one replica busy ``work[l]`` time units
per inference (MVM steps); r replicas share the work, so the pipeline's initiation interval is
max_l work[l] / r[l]. The objective is that interval; among equal intervals fewer crossbars are better
(:func:`crossbars_used`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class ReplicationProblem:
    layers: tuple[str, ...]
    work: Mapping[str, float]
    crossbars: Mapping[str, int]
    budget: int  # total MVMUs the replicated model may use
    max_degree: int = 64
    name: str = "replication"


@dataclass(frozen=True)
class Replication:
    degrees: Mapping[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, int]:
        return dict(self.degrees)


def interval(problem: ReplicationProblem, decision: Replication) -> float:
    return max((problem.work[l] / decision.degrees[l] for l in problem.layers), default=0.0)


def crossbars_used(problem: ReplicationProblem, decision: Replication) -> int:
    return sum(problem.crossbars[l] * decision.degrees[l] for l in problem.layers)


def objective(problem: ReplicationProblem, decision: Replication) -> float:
    return interval(problem, decision)
