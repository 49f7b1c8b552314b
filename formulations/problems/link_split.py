"""The hybrid static/dynamic split of logical links (seed 004 L318–320): problem, decision, objective.

Every logical link (a net of :mod:`~solvermap.formulations.problems.routing`) goes either on the static
network (a tree of exclusive switch tracks) or on the dynamic network (routers). The seed's compiler
maps "the highest-bandwidth logical links onto the static network; once the static network is full,
further links are mapped to the dynamic network", ranking links by "link fanout and activation factor"
(L320). ``importance`` = activation × fanout is that rank.

``mandatory``: ``static`` (a pure static network: every link must be static — the split is then a
static routability check, and S-x1 fails for some apps as in L443), ``dynamic`` (a pure dynamic
network: nothing may be static), or None (hybrid).

Objective (maximised by the formulation, the greedy rule and the checker alike): the activation × fanout
carried statically, Σ_{n static} importance_n.
"""

from __future__ import annotations

from dataclasses import dataclass

from solvermap.formulations.problems.routing import STATIC, Routes, RoutingProblem


@dataclass(frozen=True)
class SplitProblem:
    routing: RoutingProblem  # nets (their ``network`` field is ignored), mesh, static tracks
    mandatory: str | None = None  # "static" | "dynamic" | None
    name: str = "link_split"


@dataclass(frozen=True)
class Split:
    """The decision: the nets on the static network and their static trees (with tracks)."""

    static: frozenset[str]
    routes: Routes

    def network_of(self, net: str) -> str:
        return STATIC if net in self.static else "dynamic"

    def to_json(self) -> dict:
        return {"static": sorted(self.static), "routes": self.routes.to_json()}


def objective(problem: SplitProblem, decision: Split) -> float:
    return float(sum(n.importance for n in problem.routing.nets if n.name in decision.static))


def upper_bound(problem: SplitProblem) -> float:
    """Everything static: no split carries more."""
    if problem.mandatory == "dynamic":
        return 0.0
    return float(sum(n.importance for n in problem.routing.nets if n.sinks))
