"""Tuning the tensorized nest on CPU: UNIT's pair enumeration (baseline) and Optuna over the breakpoints.

The space (002:L203-L205, L245, L308-L312, Fig. 7): the data-parallel outer loops, their order, and two
breakpoints (level, factor) — loops before the first are fused and parallelised, loops after the
second are moved below the innermost reduction loop and unrolled. :func:`schedule_space` enumerates it
(factors dividing their loop: perfect tiling; UNIT's residue handling with ``likely`` guards, L312, is
not generated).

* ``unit-default`` — UNIT's first tuning pair (3000, 8) only (the "Parallel + Unroll" ablation bar).
* ``unit`` — UNIT's tuner: profile the first ``unit_pairs`` pairs of its enumeration (L310).
* ``optuna`` — the above plus Optuna TPE (seeded) over (dp loop order, unroll limit, parallel limit),
  each sample turned into breakpoints by UNIT's rule; the analytical latency model pre-filters: a
  sample predicted slower than ``prefilter`` × the best prediction over the whole space is pruned
  without compiling. Reordering the data-parallel loops is our extension of UNIT's space (it lets a
  layer whose output width is prime, #1 and #4 of L312, unroll along another loop).
* register tiles (``tiles`` > 0, with ``unit`` and ``optuna``) — our extension: two-dimensional register
  tiles, a divisor of one dp loop × any factor of another (its residue becomes a partial block), that
  fit the register file (live accumulators + operand registers ≤ ``tuning.register_budget``, by default
  ``core.vector_registers``), ranked by the
  latency model; the best ``tiles`` of them are measured (:func:`register_tiles`), each also with its
  outermost reduction loop blocked so that one block's operands fit in half of L1 (when they do not
  already).

``measure(schedule) -> seconds`` is supplied by the caller: compiled-and-timed kernels, or the latency
model (``measure: model``, deterministic, for tests and machines without the instruction).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field

from solvermap.hardware.cpu import CpuTarget
from solvermap.hardware.cpu.latency_model import distinct_registers, estimate, live_registers
from solvermap.hardware.cpu.nest import RewrittenNest, Schedule, split_dp_loops
from solvermap.mappers.cpu.baselines import schedule_for_limits, unit_pairs, unit_schedule


@dataclass
class Trial:
    index: int
    source: str  # unit-default | unit-pair | register-tile | optuna
    params: dict
    schedule: Schedule
    predicted_s: float
    measured_s: float | None  # None when pruned by the latency model

    def to_json(self) -> dict:
        return {"index": self.index, "source": self.source, "params": self.params, "schedule": self.schedule.to_json(),
                "predicted_s": self.predicted_s, "measured_s": self.measured_s}


@dataclass
class TuningResult:
    tuner: str
    default: Schedule
    default_seconds: float
    best: Schedule
    best_seconds: float
    trials: list[Trial] = field(default_factory=list)
    space_size: int = 0
    best_predicted_s: float = 0.0

    @property
    def measured(self) -> int:
        return len({t.schedule for t in self.trials if t.measured_s is not None})

    def unit_pair_reaching_best(self, tolerance: float = 0.03) -> int | None:
        """1-based index of the first UNIT pair within ``tolerance`` of the best UNIT pair (None without pairs)."""
        pairs = [t for t in self.trials if t.source in ("unit-default", "unit-pair") and t.measured_s is not None]
        if not pairs:
            return None
        best = min(t.measured_s for t in pairs)
        for k, t in enumerate(pairs, start=1):
            if t.measured_s <= best * (1 + tolerance):
                return k
        return None

    def summary(self) -> dict:
        return {"tuner": self.tuner, "default_schedule": self.default.to_json(), "default_seconds": self.default_seconds,
                "best_schedule": self.best.to_json(), "best_seconds": self.best_seconds,
                "tuned_vs_default": self.default_seconds / self.best_seconds if self.best_seconds else None,
                "space_size": self.space_size, "trials": len(self.trials), "schedules_measured": self.measured,
                "pruned": sum(1 for t in self.trials if t.measured_s is None),
                "unit_pair_reaching_best": self.unit_pair_reaching_best()}


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def schedule_space(nest: RewrittenNest, *, reorder: bool = True) -> list[Schedule]:
    """Every valid (order, breakpoint 1, breakpoint 2) with factors dividing their loops."""
    extents = {l.var: l.extent for l in nest.dp_loops}
    names = [l.var for l in nest.dp_loops]
    orders = list(itertools.permutations(names)) if reorder else [tuple(names)]
    out = []
    for order in orders:
        points = [(k, f) for k, v in enumerate(order) for f in _divisors(extents[v])]
        for bp1, bp2 in itertools.product(points, points):
            schedule = Schedule(tuple(order), bp1, bp2)
            try:
                split_dp_loops(extents, schedule)
            except ValueError:
                continue
            out.append(schedule)
    return out


def register_tiles(nest: RewrittenNest, core, count: int, budget: int | None = None) -> list[Schedule]:
    """The ``count`` register tiles the latency model ranks best (see module docstring): for dp loops
    (C, A, B) in that order, A split by a divisor t_A, B by any factor u_B ≤ its extent; nothing fused
    in parallel beyond C; tiles whose accumulators and operand registers exceed the register file are
    skipped."""
    extents = {l.var: l.extent for l in nest.dp_loops}
    if count <= 0 or len(extents) < 2:
        return []
    budget = min(budget or core.vector_registers, core.vector_registers)
    scored: dict[Schedule, float] = {}
    for order in itertools.permutations(extents):
        *outer, a, b = order
        level_a, level_b = len(order) - 2, len(order) - 1
        parallel = (level_a, extents[a]) if outer else (0, extents[a])
        for t in _divisors(extents[a]):
            for u in range(1, extents[b] + 1):
                if t * u > budget:
                    break
                schedule = Schedule(order, parallel, (level_b, u), ((a, t),) if t > 1 else ())
                try:
                    U, counts = distinct_registers(nest, schedule)
                except ValueError:
                    continue
                if live_registers(U, counts) > budget:
                    continue
                scored[schedule] = estimate(nest, schedule, core).seconds
    ranked = sorted(scored, key=lambda s: (scored[s], str(s.to_json())))[:count]
    blocked = [_with_reduction_block(nest, s, core) for s in ranked]
    return ranked + [s for s in blocked if s is not None]


def _with_reduction_block(nest: RewrittenNest, schedule: Schedule, core) -> Schedule | None:
    """The schedule with the outermost reduction loop blocked so that one block's operands fill at most
    half of L1 (None if the whole reduction already fits or there is no reduction loop)."""
    if not nest.reduction_loops:
        return None
    first = nest.reduction_loops[0].extent
    inner = math.prod(l.extent for l in nest.reduction_loops[1:])
    U, counts = distinct_registers(nest, schedule)
    step = 0
    for plan in nest.sources:
        item = 2 if plan.layout.dtype in ("int16", "uint16") else 1
        per_register = plan.group * item if plan.action == "broadcast" else len(plan.lane_offsets) * item
        step += counts[plan.operand] * per_register
    fit = core.l1_bytes // 2 // max(1, step * inner)
    if fit >= first or fit < 1:
        return None
    size = 1 << (fit.bit_length() - 1)  # a power of two: block starts stay aligned
    return Schedule(schedule.dp_order, schedule.parallel, schedule.unroll, schedule.tile, size)


def tune(nest: RewrittenNest, target: CpuTarget, measure: Callable[[Schedule], float], *, tuner: str = "optuna",
         trials: int = 12, pairs: int = 8, seed: int = 0, prefilter: float = 2.0, reorder: bool = True,
         tiles: int = 0, prepare: Callable[[list[Schedule]], None] | None = None) -> TuningResult:
    """Tune the schedule; ``prepare(schedules)``, if given, is told the candidates known before any is
    measured (UNIT's pairs and the register tiles), so a caller can compile them together."""
    if tuner not in ("unit-default", "unit", "optuna"):
        raise ValueError(f"unknown tuner {tuner!r}; choose unit-default, unit or optuna")
    core = target.core
    cache: dict[Schedule, float] = {}
    records: list[Trial] = []

    def run(schedule: Schedule, source: str, params: dict) -> float:
        if schedule not in cache:
            cache[schedule] = float(measure(schedule))
        predicted = estimate(nest, schedule, core).seconds
        records.append(Trial(len(records), source, params, schedule, predicted, cache[schedule]))
        return cache[schedule]

    tuning = target.tuning
    default = unit_schedule(nest, tuning.parallel_limit, tuning.unroll_limit)
    pair_list = unit_pairs(tuning.parallel_limits, tuning.unroll_limits)[1:pairs] if tuner != "unit-default" else []
    tile_list = register_tiles(nest, core, tiles, tuning.register_budget) if tuner != "unit-default" else []
    if prepare is not None:
        prepare(list(dict.fromkeys([default] + [unit_schedule(nest, p, u) for p, u in pair_list] + tile_list)))
    default_seconds = run(default, "unit-default", {"parallel_limit": tuning.parallel_limit,
                                                    "unroll_limit": tuning.unroll_limit})
    space = schedule_space(nest, reorder=reorder)
    best_predicted = min(estimate(nest, s, core).seconds for s in space) if space else 0.0
    for p, u in pair_list:
        run(unit_schedule(nest, p, u), "unit-pair", {"parallel_limit": p, "unroll_limit": u})
    for schedule in tile_list:
        run(schedule, "register-tile", schedule.to_json())
    if tuner == "optuna" and trials > 0:
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        names = tuple(l.var for l in nest.dp_loops)
        orders = [" ".join(o) for o in (itertools.permutations(names) if reorder else [names])]
        max_fused = math.prod(l.extent for l in nest.dp_loops)
        study = optuna.create_study(direction="minimize", sampler=optuna.samplers.TPESampler(seed=seed))
        study.enqueue_trial({"order": " ".join(names), "unroll_limit": min(tuning.unroll_limit, 64),
                             "parallel_limit": min(tuning.parallel_limit, max_fused)})
        for _ in range(trials):
            trial = study.ask()
            order = tuple(trial.suggest_categorical("order", orders).split())
            u = trial.suggest_int("unroll_limit", 1, 64, log=True)
            p = trial.suggest_int("parallel_limit", 1, max(1, max_fused), log=True)
            schedule = schedule_for_limits(nest, order, p, u)
            predicted = estimate(nest, schedule, core).seconds
            params = {"order": list(order), "unroll_limit": u, "parallel_limit": p}
            if schedule not in cache and predicted > prefilter * best_predicted:
                records.append(Trial(len(records), "optuna", params, schedule, predicted, None))
                study.tell(trial, state=optuna.trial.TrialState.PRUNED)
                continue
            study.tell(trial, run(schedule, "optuna", params))
    measured = [(t.measured_s, t.index, t.schedule) for t in records if t.measured_s is not None]
    best_seconds, _, best = min(measured, key=lambda t: (t[0], t[1]))
    return TuningResult(tuner, default, default_seconds, best, best_seconds, records, len(space), best_predicted)
