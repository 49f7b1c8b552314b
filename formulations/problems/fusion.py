"""Node fusion with device choice on an HPVM graph (seed 000 L464–472, L1131–1136): problem, decision, objective.

Ops are the leaves of an HPVM graph. Each has a parent (its layer's internal node), a replication (the grid of
dynamic instances) and a kind. Edges carry a replication pattern: ``one_to_one`` or ``all_to_all``. A layer
runs either on the GPU, as one or more fused kernels, or on PROMISE, as one task (the f(X·W+B) / f(X⊛W+B)
pattern, L1133–1136). Costs are in the problem's objective unit (seconds by default):

* ``gpu_cost[op]`` — the op's compute and parameter reads on the GPU;
* ``promise_cost[layer]`` — the whole layer as one PROMISE task;
* ``launch`` — once per GPU kernel (fused group);
* ``gpu_transfer[(u, v)]`` — a GPU → GPU edge inside a layer that fusion does not internalize;
* ``cross[(u, v)][(dev_u, dev_v)]`` — an edge between layers, by device pair;
* ``boundary[op][dev]`` — the network input or output edge of ``op``, by its device.

The decision gives a device per layer and a partition of all ops into groups. A PROMISE layer is exactly one
group (its task). Each group of a GPU layer is one kernel.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

GPU, PROMISE = "gpu", "promise"


@dataclass(frozen=True)
class FusionOp:
    name: str
    parent: str  # the layer's internal node
    kind: str
    replication: tuple[int, ...] = ()


@dataclass(frozen=True)
class FusionEdge:
    src: str
    dst: str
    pattern: str = "one_to_one"  # or "all_to_all"


@dataclass(frozen=True)
class FusionProblem:
    ops: tuple[FusionOp, ...]  # in topological order
    edges: tuple[FusionEdge, ...]
    promise_eligible: Mapping[str, bool]  # per parent (layer)
    gpu_cost: Mapping[str, float]
    promise_cost: Mapping[str, float]
    launch: float
    gpu_transfer: Mapping[tuple[str, str], float]
    cross: Mapping[tuple[str, str], Mapping[tuple[str, str], float]]
    boundary: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    max_group_ops: int = 3
    unit: str = "s"

    @property
    def parents(self) -> tuple[str, ...]:
        seen: list[str] = []
        for op in self.ops:
            if op.parent not in seen:
                seen.append(op.parent)
        return tuple(seen)

    def members(self, parent: str) -> list[FusionOp]:
        return [op for op in self.ops if op.parent == parent]

    def op(self, name: str) -> FusionOp:
        return next(op for op in self.ops if op.name == name)


@dataclass(frozen=True)
class FusionDecision:
    device: Mapping[str, str]  # parent → "gpu" | "promise"
    groups: tuple[tuple[str, ...], ...]

    def group_of(self) -> dict[str, int]:
        return {op: i for i, g in enumerate(self.groups) for op in g}


def objective(problem: FusionProblem, decision: FusionDecision) -> float:
    """Σ device costs + GPU launches + transfers that fusion does not internalize (the model's objective)."""
    ops = {op.name: op for op in problem.ops}
    dev = {op.name: decision.device.get(op.parent, GPU) for op in problem.ops}
    group = decision.group_of()
    total = 0.0
    for parent in problem.parents:
        if decision.device.get(parent, GPU) == PROMISE:
            total += problem.promise_cost[parent]
        else:
            total += sum(problem.gpu_cost[op.name] for op in problem.members(parent))
    total += problem.launch * sum(1 for g in decision.groups if g and dev[g[0]] == GPU)
    for e in problem.edges:
        same_parent = ops[e.src].parent == ops[e.dst].parent
        if same_parent:
            if dev[e.src] == GPU and group.get(e.src) != group.get(e.dst):
                total += problem.gpu_transfer[(e.src, e.dst)]
        else:
            total += problem.cross[(e.src, e.dst)][(dev[e.src], dev[e.dst])]
    for name, costs in problem.boundary.items():
        total += costs[dev[name]]
    return total
