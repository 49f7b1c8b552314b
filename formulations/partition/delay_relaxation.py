"""The delay relaxation of a retiming partition problem (phase B on LP-based backends, :mod:`.two_phase`):
the column model's cover with a delay per item, tied only across links (seed 004 Table 4.2, L599–608).

Sets      columns c (:func:`~.columns.convex_bins`) with types k; items i; broadcast groups g; external
          values k (source keys); forward links src → d.
Params    hop latency L, buffer depth b_d, horizon H = L·(S + #external values) (a schedule compresses so
          that consecutive delays are ≤ L apart).
Vars      x[c,k] ∈ {0,1} the cover; s[i] ∈ [0, H] ∩ Z item delay; e[k] ∈ [0, H] ∩ Z external value delay;
          R[g] ∈ Z≥0 retiming bins of value g, counted once.
Minimise  w_bins Σ κ x + w_ret Σ R + w_traf (traffic of the cover)   — or, with a ``level`` v, the
          feasibility model "relaxed cost ≤ v"
s.t.      assignment, type-count  (the column model's)
          schedule    s[d] − s[src] ≥ L(1 − together(src, d)), s[d] − s[src] ≤ H(1 − together(src, d)) per
                      link; s[d] ≥ e[k] + L per external value; s[d] ≥ s[src] per order link
          retiming    (b_d + L)·R[g] ≥ s[d] − s[src] − L − b_d over the readers d of g
          tie         (optional, ``tie``) |s[a] − s[b]| ≤ H(1 − together(a, b)) for every unlinked pair
                      that shares a column: every bin runs at one delay
          lower-bound (optional) Σ x ≥ a proven bin count
          level       (optional) relaxed cost ≤ v
A relaxation: items of a bin are tied only where linked (a bin's unlinked items may drift apart, the
cover may be cyclic) and a value's retiming is counted once, not per reading bin; so a refuted level v is
a certified bound (every solution with at most the warm start's slot count of bins costs more). With
``tie`` every bin has one delay (a quotient cycle over data links is then infeasible: each crossing adds
L); what stays relaxed is mainly the retiming, counted once per value (the exact models count it per
reading bin). The tie rows cost
one pair of big-M rows per unlinked pair of items that some column holds together (off by default: the
two-phase strategy's levels are built without them). Untied it is small and
big-M-light, so its LP bounds well where the slot model's does not. Acyclic retiming problems with
enumerable convex bins and no fixed delays only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from solvermap.errors import ConfigError
from solvermap.formulations.partition.columns import (
    Column,
    ColumnModel,
    build_columns,
    column_traffic,
    quotient_acyclic,
    together_of,
)
from solvermap.formulations.problems.partition import (
    GroupKey,
    PartitionDecision,
    PartitionProblem,
    SourceKey,
    complete,
)
from solvermap.formulations.solver import SolverConfig, linear_sum


@dataclass
class DelayRelaxation:
    """The column model with item delays (:func:`build_delay_relaxation`)."""

    columns: ColumnModel
    delay: dict[str, Any]  # s[i]: the delay of item i's bin
    source: dict[SourceKey, Any]  # e[k]: the delay of external value k
    retiming: dict[GroupKey, Any]  # R[g]: retiming bins of value g, counted once
    horizon: int
    cost: Any  # the relaxed objective (an expression)


def build_delay_relaxation(problem: PartitionProblem, config: SolverConfig, hint: PartitionDecision | None = None,
                           *, columns: list[Column], min_bins: int | None = None,
                           level: float | None = None, tie: bool = False) -> DelayRelaxation:
    """The delay relaxation of a retiming problem (module docstring): the exact cover by convex bins with a
    delay per item, tied only across links. Minimises the relaxed objective; with ``level`` it is a
    feasibility model "relaxed objective ≤ level" (a refuted level bounds the problem: every solution with
    at most the warm start's slot count of bins, the ones that can beat it, costs more). ``tie``: every bin
    at one delay (module docstring)."""
    retiming = problem.retiming
    if retiming is None or retiming.fixed_sources or retiming.fixed_sinks:
        raise ConfigError("the delay relaxation takes a retiming problem without fixed delays")
    cover = build_columns(problem, config, hint, columns=columns)  # assignment, type-count
    m = cover.builder
    keys = problem.external_sources()
    horizon = retiming.hop_latency * (cover.slots + len(keys))  # compressed schedules: consecutive delays ≤ L apart
    built = DelayRelaxation(cover, {n: m.integer(0, horizon, f"s[{n}]") for n in problem.item_names},
                            {k: m.integer(0, horizon, f"e[{k[0]}.{k[1]}@{k[2]}]") for k in keys}, {}, horizon, None)
    linked = _add_schedule_and_retiming(problem, built)
    if tie:
        _add_ties(built, linked)
    built.cost = _relaxed_cost(problem, built)
    _add_lower_bound(built, min_bins)
    _set_objective_or_level(built, level)
    if hint is not None and cover.builder.hints:  # the warm start's bins are columns: its delays too
        _hint_delays(built, hint)
    return built


def _add_schedule_and_retiming(problem: PartitionProblem, built: DelayRelaxation) -> set[tuple[str, str]]:
    """schedule rows per link (and per external value, per order link) and, per value, its retiming row
    over each reader, in the order the links are read (one pass, so that the rows interleave as they did).
    Returns the linked pairs (src, d), whose schedule rows already tie them when together."""
    m, s, e, r, horizon = built.columns.builder, built.delay, built.source, built.retiming, built.horizon
    L, depth = problem.retiming.hop_latency, problem.retiming.buffer_depth
    together = together_of(built.columns)
    cluster = {i.name: i.cluster for i in problem.items}
    external = problem.external_source
    linked: set[tuple[str, str]] = set()
    for g in problem.groups():
        for d in g.forward_consumers:
            key = external(g, d)
            if key is None:
                src = g.key[0]
                both = together(src, d)
                m.add(s[d] - s[src] >= L * (1 - both), "schedule", f"{src}->{d}")
                m.add(s[d] - s[src] <= horizon * (1 - both), "schedule", f"{src}={d}")
                start = s[src]
                linked.add((src, d))
            else:
                start = e[key]
                m.add(s[d] - start >= L, "schedule", f"ext {key[0]}->{d}")
            if g.key not in r:
                r[g.key] = m.integer(0, math.ceil(horizon / (depth + L)) + 1, f"R[{g.key[0]}.{g.key[1]}]")
            m.add((depth + L) * r[g.key] >= s[d] - start - L - depth, "retiming", f"{g.key[0]}->{d}")
    for src, d in problem.order_links():
        if (src, d) not in linked and cluster[src] == cluster[d]:
            m.add(s[d] >= s[src], "schedule", f"order {src}->{d}")
    return linked


def _add_ties(built: DelayRelaxation, linked: set[tuple[str, str]]) -> None:
    """|s[a] − s[b]| ≤ H(1 − together(a, b)) per unlinked pair of items some column holds together."""
    m, s, horizon = built.columns.builder, built.delay, built.horizon
    together = together_of(built.columns)
    pairs = {(a, b) for col in built.columns.columns for a in col.members for b in col.members
             if a < b and (a, b) not in linked and (b, a) not in linked}
    for a, b in sorted(pairs):
        both = together(a, b)
        m.add(s[a] - s[b] <= horizon * (1 - both), "tie", f"{a}={b}")
        m.add(s[b] - s[a] <= horizon * (1 - both), "tie", f"{b}={a}")


def _relaxed_cost(problem: PartitionProblem, built: DelayRelaxation) -> Any:
    """w_bins Σ κ x + w_ret Σ R + w_traf (traffic of the cover)."""
    x, types = built.columns.x, problem.bin_types
    cost = problem.weights.bins * linear_sum(types[k].cost * v for (c, k), v in x.items())
    cost = cost + problem.weights.retiming * linear_sum(built.retiming.values())
    if problem.weights.traffic > 0:
        cost = cost + problem.weights.traffic * column_traffic(problem, built.columns.columns, x)
    return cost


def _add_lower_bound(built: DelayRelaxation, min_bins: int | None) -> None:
    """Σ x ≥ a proven bin count."""
    if min_bins is not None and min_bins > 1:
        built.columns.builder.add(linear_sum(built.columns.x.values()) >= min_bins, "lower-bound",
                                  f"phase A optimum: {min_bins} bins")


def _set_objective_or_level(built: DelayRelaxation, level: float | None) -> None:
    """Minimise the relaxed cost, or (``level``) require cost ≤ level with no objective."""
    m = built.columns.builder
    if level is None:
        m.minimize(built.cost)
    else:
        m.add(built.cost <= level, "level", f"relaxed objective <= {level:g}")
        m.minimize(linear_sum([]))


def _hint_delays(built: DelayRelaxation, hint: PartitionDecision) -> None:
    m = built.columns.builder
    for n, var in built.delay.items():
        m.hint(var, hint.delays.get(hint.assignment[n], 0))
    for k, var in built.source.items():
        m.hint(var, hint.source_delays.get(k, 0))
    most: dict[GroupKey, int] = {}
    for (src, port, _), v in hint.retiming.items():
        most[src, port] = max(most.get((src, port), 0), v)
    for key, var in built.retiming.items():
        m.hint(var, most.get(key, 0))


def decode_tied(problem: PartitionProblem, built: DelayRelaxation, solution: Any) -> PartitionDecision | None:
    """A tied relaxation's cover (``tie``: one delay per bin) at the relaxation's own delays, with the
    retiming those delays need counted per reading bin: a solution of the problem (every cross link already
    waits at least L there), which the ASAP/ALAP schedule of ``complete`` may not reach. None when a
    bin's members disagree on their delay (rows built without ``tie``) or the quotient graph has a cycle."""
    chosen = [key for key, var in built.columns.x.items() if solution.is_one(var)]
    assignment = {n: b for b, (c, _) in enumerate(chosen) for n in built.columns.columns[c].members}
    if not quotient_acyclic(problem, assignment):
        return None
    delays: dict[int, int] = {}
    for b, (c, _) in enumerate(chosen):
        found = {round(solution.value(built.delay[n])) for n in built.columns.columns[c].members}
        if len(found) != 1:
            return None
        delays[b] = found.pop()
    types = {b: problem.bin_types[k].name for b, (_, k) in enumerate(chosen)}
    sources = {key: round(solution.value(var)) for key, var in built.source.items()}
    return complete(problem, assignment, types, delays=delays, source_delays=sources)
