"""A small real target family for the design-space tests: pack tasks onto processing elements (PEs).

Target ``toyarray``: ``pes`` PEs, each a SIMD pipeline of ``lanes`` lanes × ``stages`` stages, a clock, a
network kind (``static`` | ``dynamic``, with ``vcs`` virtual channels when dynamic). Workload ``tasks``:
``n`` tasks with deterministic op counts (scaled by ``par``) and widths; ``hold_s`` makes each
validation wait that long (a stand-in for a slow simulator, so batch tests can stop a worker mid-trial). Decision ``pack`` is a real
MILP (makespan bin packing) solved by the configured backend, checked, with an LPT baseline:

    Sets     T tasks, P PEs          Params  d[t] = ceil(ops[t] / lanes) cycles, w[t] width, C = lanes·stages
    Vars     x[t,p] ∈ {0,1}, M ≥ 0   Minimise M
    s.t.     assignment Σ_p x[t,p] = 1;  load Σ_t d[t] x[t,p] ≤ M;  width w[t] ≤ C (else infeasible)

The pack problem depends on (tasks, pes, lanes, stages) only, so trials that differ in ``clock_ghz``,
``network`` or ``vcs`` share its cache entry. Validation: cycles = makespan × network slowdown,
latency_s, area_mm2, power_w, pbs_used.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from solvermap.formulations.decision import one_shot
from solvermap.formulations.solver import ModelBuilder, linear_sum
from solvermap.hardware.targets import TargetSpec, register_family
from solvermap.ir.workloads import _REGISTRY, register
from solvermap.mappers import register_pipeline
from solvermap.mappers.pipeline import Baseline, Decision, DecisionOptions, ModuleSolve, Pipeline, decide, run_decision
from solvermap.results import CheckReport


@register_family("toyarray")
class ToyArraySpec(TargetSpec):
    pes: int = Field(2, ge=1, le=16)
    lanes: int = Field(4, ge=1)
    stages: int = Field(2, ge=1)
    clock_ghz: float = Field(1.0, gt=0)
    network: Literal["static", "dynamic"] = "static"
    vcs: int = Field(1, ge=1)


@dataclass(frozen=True)
class Tasks:
    ops: tuple[int, ...]
    widths: tuple[int, ...]
    hold_s: float = 0.0


def build_tasks(n: int = 6, par: int = 1, seed: int = 0, hold_s: float = 0.0) -> Tasks:
    ops = tuple(par * (8 + (13 * i + 7 * seed) % 29) for i in range(n))
    widths = tuple(1 + (5 * i + seed) % 7 for i in range(n))
    return Tasks(ops, widths, float(hold_s))


if ("tasks", "toyarray") not in _REGISTRY:
    register("tasks", "toyarray", "n tasks with deterministic ops and widths",
             params={"n": 6, "par": 1, "seed": 0, "hold_s": 0.0})(build_tasks)


@dataclass(frozen=True)
class PackProblem:
    durations: tuple[int, ...]
    widths: tuple[int, ...]
    pes: int
    capacity: int


def objective(problem: PackProblem, assignment: tuple[int, ...]) -> float:
    loads = [0] * problem.pes
    for t, p in enumerate(assignment):
        loads[p] += problem.durations[t]
    return float(max(loads))


class Pack:
    """Makespan packing (see module docstring)."""

    NAME = "pack"
    KIND = "milp"

    @staticmethod
    def diagnose(problem: PackProblem) -> str | None:
        for t, w in enumerate(problem.widths):
            if w > problem.capacity:
                return f"task {t} needs width {w}, a PE holds {problem.capacity} (lanes x stages)"
        return None

    @staticmethod
    def build(problem: PackProblem, config, hint):
        m = ModelBuilder("pack")
        T, P = range(len(problem.durations)), range(problem.pes)
        x = {(t, p): m.binary(f"x[{t},{p}]") for t in T for p in P}
        makespan = m.continuous(0, sum(problem.durations), "M")
        for t in T:
            m.add(linear_sum(x[t, p] for p in P) == 1, "assignment", f"t{t}")
        for p in P:
            m.add(linear_sum(problem.durations[t] * x[t, p] for t in T) <= makespan, "load", f"p{p}")
        for p in range(1, problem.pes):  # symmetry: PE p opens only after PE p-1 (task order)
            m.add(linear_sum(x[t, p] for t in T) <= linear_sum(x[t, p - 1] for t in T) * len(problem.durations), "symmetry", f"p{p}")
        m.minimize(makespan)
        if hint is not None and len(hint) == len(problem.durations) and all(0 <= p < problem.pes for p in hint):
            for t in T:
                for p in P:
                    m.hint(x[t, p], 1 if hint[t] == p else 0)
        m.x = x
        return m

    @staticmethod
    def decode(problem: PackProblem, built, solution) -> tuple[int, ...]:
        return tuple(next(p for p in range(problem.pes) if solution.is_one(built.x[t, p])) for t in range(len(problem.durations)))

    @classmethod
    def solve(cls, problem, config, hint=None):
        return one_shot(cls.build, cls.decode, problem, config, hint)


def check(problem: PackProblem, assignment: tuple[int, ...]) -> CheckReport:
    report = CheckReport()
    if len(assignment) != len(problem.durations):
        report.add("assignment", f"{len(assignment)} assignments for {len(problem.durations)} tasks")
        return report
    for t, p in enumerate(assignment):
        if not 0 <= p < problem.pes:
            report.add("pe-range", f"task {t} on PE {p}, only {problem.pes} PEs")
        if problem.widths[t] > problem.capacity:
            report.add("width", f"task {t} width {problem.widths[t]} > {problem.capacity}")
    return report


def lpt(problem: PackProblem) -> tuple[int, ...]:
    """Longest processing time first onto the least-loaded PE."""
    loads = [0] * problem.pes
    out = [0] * len(problem.durations)
    for t in sorted(range(len(problem.durations)), key=lambda t: -problem.durations[t]):
        p = min(range(problem.pes), key=lambda q: (loads[q], q))
        out[t] = p
        loads[p] += problem.durations[t]
    return tuple(out)


def pack_step(ctx):
    spec, tasks = ctx.target, ctx.workload.ir
    problem = PackProblem(tuple(math.ceil(o / spec.lanes) for o in tasks.ops), tasks.widths, spec.pes,
                          spec.lanes * spec.stages)
    _, record = run_decision(ctx, PACK, problem)
    return record


def validate(ctx) -> dict:
    time.sleep(ctx.workload.ir.hold_s)
    spec = ctx.target
    problem, assignment = ctx.state["pack.problem"], ctx.state["pack"]
    slowdown = 1.0 if spec.network == "static" else 1.0 + 0.5 / spec.vcs
    cycles = objective(problem, assignment) * slowdown
    area = spec.pes * (0.02 * spec.lanes * spec.stages + 0.1) + (0.05 * spec.vcs if spec.network == "dynamic" else 0.02)
    return {"cycles": cycles, "latency_s": cycles / (spec.clock_ghz * 1e9), "area_mm2": area,
            "power_w": area * spec.clock_ghz * 0.5, "pbs_used": len(set(assignment))}


PACK = Decision(
    name="pack", summary="assign tasks to PEs, minimise makespan", kind="milp", problem_type=PackProblem,
    decision_type=tuple[int, ...], options=DecisionOptions, solve=ModuleSolve(Pack), objective=objective, checker=check,
    modules=("tests.search.toy_family",), baselines=(Baseline("lpt", lpt),), diagnose=Pack.diagnose,
    serialize=lambda problem, decision: list(decision),
)

PIPELINE = Pipeline("toyarray", "pack tasks onto PEs (design-space tests)", (decide(PACK, pack_step),),
                    validate=validate, default_workload="tasks")
register_pipeline(PIPELINE)
