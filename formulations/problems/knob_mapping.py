"""Hardware knob mapping under per-op error budgets (seed 000 §5.2.2, L1102–1123): problem, decision, objective.

Every op takes one of the knobs FP32 or FP16 (GPU) or P1..P7 (PROMISE swing levels). The problem holds:

* ``errors[op][knob]`` — the measured relative (L1e, L2e) of the op under that knob (the lookup table of L1123,
  measured per op). A knob missing from an op's row is impossible there (PROMISE on an ineligible layer);
* ``l1_budget``/``l2_budget`` — the per-op budgets of stage 1;
* ``gpu_groups`` — the fused GPU kernels from the fusion step. The ops of a group share one precision;
* ``gpu_cost[op][knob]`` (FP32/FP16), ``launch`` per GPU kernel, ``promise_cost[layer][level]`` per layer task;
* ``transfer[(u, v)][(cu, cv)]`` — the cost of edge u → v by the format classes of its ends (``fp32``, ``fp16``,
  ``int8`` for PROMISE, ``host`` for the network input and output). An edge inside a PROMISE task or a GPU
  group costs nothing.

The objective is energy (J) or time (s), depending on which tables the pipeline built. ``failed`` lists mappings
that failed the end-to-end Monte Carlo test of the pipeline; no mapping at least as inaccurate as one of them on
every op may be chosen again.

Joint budget variant (the hardware-aware budget search of the budget step). ``loss[op][knob]`` is the modelled
end-to-end loss of the op under that knob: the profiled single-op injection loss at the tightest error level whose
L1/L2 budgets admit the knob's measured errors. With ``loss_budget`` set, Σ_op loss[op][knob_op] ≤ loss_budget.
``excluded`` lists knob-set combinations: an entry maps every op to a set of knobs, and a mapping in which every
op takes a knob from its set is excluded (the budget search's no-good cuts on level configurations).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

PROMISE_KNOBS = tuple(f"P{k}" for k in range(1, 8))
ALL_KNOBS = PROMISE_KNOBS + ("FP16", "FP32")  # least → most accurate (L1119)
INPUT, OUTPUT = "input", "output"


def at_most_as_accurate(knob: str, other: str) -> bool:
    return ALL_KNOBS.index(knob) <= ALL_KNOBS.index(other)


def knob_class(knob: str) -> str:
    return {"FP32": "fp32", "FP16": "fp16"}.get(knob, "int8")


@dataclass(frozen=True)
class KnobProblem:
    ops: tuple[str, ...]
    layer_of: Mapping[str, str]
    layers: tuple[str, ...]
    allowed: tuple[str, ...]
    errors: Mapping[str, Mapping[str, tuple[float, float]]]
    l1_budget: Mapping[str, float]
    l2_budget: Mapping[str, float]
    promise_eligible: Mapping[str, bool]
    gpu_groups: tuple[tuple[str, ...], ...]
    gpu_cost: Mapping[str, Mapping[str, float]]
    launch: float
    promise_cost: Mapping[str, Mapping[int, float]]
    edges: tuple[tuple[str, str], ...]
    transfer: Mapping[tuple[str, str], Mapping[tuple[str, str], float]]
    objective_name: str = "energy"
    # mappings that failed the end-to-end Monte Carlo test; a mapping at least as inaccurate as one of them on
    # every op is excluded (the no-good cut of the budget loop, on the knob order of ALL_KNOBS)
    failed: tuple[Mapping[str, str], ...] = ()
    # joint budget variant (module docstring): modelled loss per (op, knob), its budget, excluded combinations
    loss: Mapping[str, Mapping[str, float]] | None = None
    loss_budget: float | None = None
    excluded: tuple[Mapping[str, frozenset[str]], ...] = ()

    def layer_ops(self, layer: str) -> list[str]:
        return [o for o in self.ops if self.layer_of[o] == layer]

    def feasible(self, op: str, knob: str) -> bool:
        """The knob is allowed, possible on this op and within both budgets."""
        if knob not in self.allowed or knob not in self.errors[op]:
            return False
        if self.loss is not None and knob not in self.loss[op]:
            return False  # no error level admits the knob
        l1, l2 = self.errors[op][knob]
        return l1 <= self.l1_budget[op] + 1e-12 and l2 <= self.l2_budget[op] + 1e-12

    def dominating_failure(self, knobs: Mapping[str, str]) -> Mapping[str, str] | None:
        """The failed mapping that ``knobs`` is at least as inaccurate as on every op, if any."""
        return next((f for f in self.failed if all(at_most_as_accurate(knobs[o], f[o]) for o in self.ops)), None)

    def modelled_loss(self, knobs: Mapping[str, str]) -> float:
        """Σ_op loss[op][knob_op] (0 without a loss model)."""
        return sum(self.loss[o][knobs[o]] for o in self.ops) if self.loss is not None else 0.0

    def excluding(self, knobs: Mapping[str, str]) -> Mapping[str, frozenset[str]] | None:
        """The ``excluded`` combination that contains ``knobs``, if any."""
        return next((e for e in self.excluded if all(knobs[o] in e[o] for o in self.ops)), None)

    def group_of(self) -> dict[str, int]:
        return {o: i for i, g in enumerate(self.gpu_groups) for o in g}


@dataclass(frozen=True)
class KnobDecision:
    knobs: Mapping[str, str]

    def layer_settings(self, problem: KnobProblem) -> dict[str, str]:
        """One label per layer as in Fig. 5.9: the swing, or the GPU precision of the layer's main op."""
        return {layer: self.knobs[problem.layer_ops(layer)[0]] for layer in problem.layers}


def _class(problem: KnobProblem, knobs: Mapping[str, str], node: str) -> str:
    return "host" if node in (INPUT, OUTPUT) else knob_class(knobs[node])


def internal(problem: KnobProblem, knobs: Mapping[str, str], u: str, v: str) -> bool:
    if u in (INPUT, OUTPUT) or v in (INPUT, OUTPUT):
        return False
    if knobs[u] in PROMISE_KNOBS and knobs[v] in PROMISE_KNOBS and problem.layer_of[u] == problem.layer_of[v]:
        return True
    group = problem.group_of()
    return knobs[u] not in PROMISE_KNOBS and knobs[v] not in PROMISE_KNOBS and group.get(u) == group.get(v)


def objective(problem: KnobProblem, decision: KnobDecision) -> float:
    knobs = decision.knobs
    total = 0.0
    for layer in problem.layers:
        ops = problem.layer_ops(layer)
        if knobs[ops[0]] in PROMISE_KNOBS:
            total += problem.promise_cost[layer][int(knobs[ops[0]][1:])]
        else:
            total += sum(problem.gpu_cost[o][knobs[o]] for o in ops)
    for group in problem.gpu_groups:
        if knobs[group[0]] not in PROMISE_KNOBS:
            total += problem.launch
    for u, v in problem.edges:
        if not internal(problem, knobs, u, v):
            total += problem.transfer[(u, v)][(_class(problem, knobs, u), _class(problem, knobs, v))]
    return total
