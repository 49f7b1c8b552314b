"""A small real target family used by the foundation tests: choose items under a capacity (knapsack).

Registered programmatically (spec family, workload, pipeline), so the CLI and run-record contract is
tested without depending on any seed target. The model is a real MILP solved by the configured backend.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field

from solvermap.formulations.decision import one_shot
from solvermap.formulations.solver import ModelBuilder, linear_sum
from solvermap.hardware.targets import TargetSpec, register_family
from solvermap.ir.workloads import register
from solvermap.mappers import register_pipeline
from solvermap.mappers.pipeline import Baseline, Decision, DecisionOptions, ModuleSolve, Pipeline, decide, run_decision
from solvermap.results import CheckReport


@register_family("toy")
class ToySpec(TargetSpec):
    capacity: int = Field(10, ge=0)


@dataclass(frozen=True)
class Items:
    weights: tuple[int, ...]
    values: tuple[int, ...]


@register("toy_items", "toy", "n items with deterministic weights and values", params={"n": 6})
def toy_items(n: int) -> Items:
    return Items(tuple(2 + (3 * i) % 5 for i in range(n)), tuple(3 + (7 * i) % 6 for i in range(n)))


@dataclass(frozen=True)
class Problem:
    items: Items
    capacity: int


def objective(problem: Problem, chosen: frozenset[int]) -> float:
    return float(sum(problem.items.values[i] for i in chosen))


class Knapsack:
    """max Σ v_i x_i  s.t.  Σ w_i x_i ≤ C  (group ``capacity``), x binary."""

    NAME = "select"
    KIND = "milp"

    @staticmethod
    def build(problem: Problem, config, hint):
        m = ModelBuilder("knapsack")
        x = [m.binary(f"x{i}") for i in range(len(problem.items.weights))]
        m.add(linear_sum(w * v for w, v in zip(problem.items.weights, x)) <= problem.capacity, "capacity")
        m.maximize(linear_sum(v * xi for v, xi in zip(problem.items.values, x)))
        for i, var in enumerate(x):
            m.hint(var, 1 if hint and i in hint else 0)
        m.x = x
        return m

    @staticmethod
    def decode(problem, built, solution) -> frozenset[int]:
        return frozenset(i for i, v in enumerate(built.x) if solution.is_one(v))

    @classmethod
    def solve(cls, problem, config, hint=None):
        return one_shot(cls.build, cls.decode, problem, config, hint)


def check(problem: Problem, chosen: frozenset[int]) -> CheckReport:
    report = CheckReport()
    weight = sum(problem.items.weights[i] for i in chosen)
    if weight > problem.capacity:
        report.add("capacity", f"weight {weight} > capacity {problem.capacity}")
    return report


def greedy(problem: Problem) -> frozenset[int]:
    order = sorted(range(len(problem.items.weights)), key=lambda i: -problem.items.values[i] / problem.items.weights[i])
    chosen, weight = set(), 0
    for i in order:
        if weight + problem.items.weights[i] <= problem.capacity:
            chosen.add(i)
            weight += problem.items.weights[i]
    return frozenset(chosen)


SELECT = Decision(
    name="select", summary="choose items under capacity", kind="milp", problem_type=Problem,
    decision_type=frozenset[int], options=DecisionOptions, solve=ModuleSolve(Knapsack), objective=objective,
    checker=check, modules=("tests.foundation.toy_family",), sense="max", baselines=(Baseline("greedy-ratio", greedy),),
    serialize=lambda problem, decision: sorted(decision),
)


def select_step(ctx):
    problem = Problem(ctx.workload.ir, ctx.target.capacity)
    _, record = run_decision(ctx, SELECT, problem, validate=lambda p, d: {"weight": sum(p.items.weights[i] for i in d)})
    return record


PIPELINE = Pipeline("toy", "knapsack test family", (decide(SELECT, select_step),),
                    validate=lambda ctx: {"value": objective(ctx.state["select.problem"], ctx.state["select"])},
                    default_workload="toy_items")
register_pipeline(PIPELINE)
