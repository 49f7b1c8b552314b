"""The layered column model: a primal search for retiming partition problems (seed 004 Table 4.2, L599–608).

Part of the partition formulation (:mod:`.two_phase` calls it in phase B on LP-based backends). A bin is a convex column placed at a layer t ∈ 1..T and runs at delay L·t; an external
value sits at a layer 0..T−1. Delays that are multiples of the hop latency L are a subset of all schedules,
so every solution of this model is a solution of the problem: a *primal* model. Its optimum is an upper
bound; its solver bound bounds only the layered solutions with T layers, never the problem. Within it
the cover, the schedule and the retiming per reading bin are the problem's own, and the LP is a
time-indexed set partition (no big-M), so an LP-based branch and bound does well on it where the slot
model's big-M schedule does not.

Sets      columns c (convex item sets that fit a bin, :func:`~solvermap.formulations.partition.columns.convex_bins`)
          with their types k; layers t ∈ [a_c, b_c] ⊆ 1..T (:func:`layer_windows`); external values v
          (source keys) at layers 0..T−1; retiming steps K = {k ≥ 1 : f(k) > f(k−1)}, f(k) the retiming
          bins a link needs across k layers (skew L·k − L, ``Retiming.required``).
Vars      x[c,k,t] ∈ {0,1} column c as a bin of type k at layer t; e[v,t] ∈ {0,1} value v at layer t;
          q[g,d,t,k] ∈ [0,1] the bin of d at layer t pays step k of value g's retiming (d the first
          reader of g in that bin, so a bin pays once however many of its items read g).
Minimise  w_bins Σ κ_k x + w_ret Σ (f(k) − f(k−1)) q
s.t.      assignment  Σ_{c∋i,k,t} x[c,k,t] = 1 ∀ items i;  Σ_t e[v,t] = 1 ∀ external values v
          type-count  Σ_{c,t} x[c,k,t] ≤ n_k
          precedence  (s→d a forward link inside a cluster; t' ∈ 1..T) Σ_{c∋d, c∌s, t≤t'} x ≤ Σ_{c∋s, c∌d, t≤t'−1} x:
                      d in a bin without s by layer t' ⇒ s at an earlier layer, so layers strictly increase
                      along every link between bins and the quotient graph is acyclic; external values:
                      Σ_{c∋d, t≤t'} x ≤ Σ_{t''≤t'−1} e[v,t'']. (Order-only links, which the schedule lets
                      share a delay, are treated as data links here: a restriction, never a violation.)
          retiming    q[g,d,t,k] ≥ Σ_{c∋d, c∌src g, c∌earlier readers of g} x[c,·,t] + Σ_{t''≤t−k} ℓ[src,t''] − 1,
                      ℓ[src,t''] = Σ_{c∋src} x[c,·,t''] (or e[v,t''] for an external value): the McCormick
                      row of "the bin reads g from outside and g's source is ≥ k layers earlier"
          cutoff      (optional) objective ≤ cutoff: only answers better than an incumbent
          lower bound (optional) Σ x ≥ a proven bin count
Windows   lo(i) = 1 and hi(i) = T, then to a fixpoint over the columns: a_c = max(lo(i) for i ∈ c, lo(s) + 1
          for predecessors s outside c), b_c = min(hi(i) for i ∈ c, hi(d) − 1 for successors d outside c);
          lo(i) = min a_c and hi(i) = max b_c over the columns c ∋ i with a_c ≤ b_c. Only (c, t) with
          a_c ≤ t ≤ b_c get a variable (blackscholes, T = 9: 11,761 of 142,362 pairs).
Scope     acyclic problems with retiming, no fixed delays (``fixed_sources`` / ``fixed_sinks``) and no
          traffic weight; else :func:`applicable` says why not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from solvermap.formulations.problems.partition import (
    PartitionDecision,
    PartitionProblem,
    SourceKey,
    required_retiming,
)
from solvermap.formulations.solver import ModelBuilder, linear_sum


class ColumnLike(Protocol):
    members: tuple[str, ...]
    types: tuple[int, ...]


def applicable(problem: PartitionProblem) -> str | None:
    """None when the layered model applies to ``problem``, else the reason it does not."""
    if not problem.acyclic:
        return "the problem is not acyclic"
    if problem.retiming is None:
        return "the problem has no retiming"
    if problem.retiming.fixed_sources or problem.retiming.fixed_sinks:
        return "the problem has fixed delays"
    if problem.weights.traffic > 0:
        return "the problem weighs traffic"
    return None


@dataclass(frozen=True)
class Windows:
    """The layers each column (``columns[c]``) may take with ``layers`` layers: ``[first[c], last[c]]``
    (empty when first > last), and each item's window ``low[i]``..``high[i]``."""

    layers: int
    first: list[int]
    last: list[int]
    low: dict[str, int]
    high: dict[str, int]

    @property
    def feasible(self) -> bool:
        return all(self.low[n] <= self.high[n] for n in self.low)

    @property
    def pairs(self) -> int:
        return sum(max(0, b - a + 1) for a, b in zip(self.first, self.last))


def _neighbours(problem: PartitionProblem, columns: Sequence[ColumnLike]) -> tuple[list[list[str]], list[list[str]]]:
    """Per column, the predecessors and successors outside it (forward links inside one cluster)."""
    cluster = {i.name: i.cluster for i in problem.items}
    pred: dict[str, list[str]] = {i.name: [] for i in problem.items}
    succ: dict[str, list[str]] = {i.name: [] for i in problem.items}
    for s, d in problem.order_links():
        if cluster[s] == cluster[d]:
            pred[d].append(s)
            succ[s].append(d)
    before, after = [], []
    for col in columns:
        inside = set(col.members)
        before.append(sorted({s for n in col.members for s in pred[n]} - inside))
        after.append(sorted({d for n in col.members for d in succ[n]} - inside))
    return before, after


def layer_windows(problem: PartitionProblem, columns: Sequence[ColumnLike], layers: int | None) -> Windows:
    """The column and item windows with ``layers`` layers (module docstring); ``layers`` None: without an
    upper end, so ``max(low)`` is the fewest layers any layered solution needs."""
    cache = problem.__dict__.setdefault("_layer_neighbours", {})
    if id(columns) not in cache:
        cache.clear()
        cache[id(columns)] = (columns, _neighbours(problem, columns))
    before, after = cache[id(columns)][1]
    top = layers if layers is not None else len(problem.items) + 1
    low = {i.name: 1 for i in problem.items}
    high = {i.name: top for i in problem.items}
    while True:
        first = [max([low[n] for n in col.members] + [low[s] + 1 for s in before[c]]) for c, col in enumerate(columns)]
        last = [min([high[n] for n in col.members] + [high[d] - 1 for d in after[c]]) if layers is not None
                else top for c, col in enumerate(columns)]
        new_low = {n: top + 1 for n in low}
        new_high = {n: 0 for n in high}
        for c, col in enumerate(columns):
            if first[c] > last[c]:
                continue
            for n in col.members:
                new_low[n] = min(new_low[n], first[c])
                new_high[n] = max(new_high[n], last[c])
        if new_low == low and new_high == high:
            return Windows(top, first, last, low, high)
        low, high = new_low, new_high
        if any(low[n] > high[n] for n in low):
            return Windows(top, first, last, low, high)


def fewest_layers(problem: PartitionProblem, columns: Sequence[ColumnLike]) -> int:
    """The fewest layers a layered solution can have (a window argument, not a proof that it exists)."""
    return max(layer_windows(problem, columns, None).low.values(), default=1)


@dataclass
class LayerModel:
    builder: ModelBuilder
    problem: PartitionProblem
    columns: Sequence[ColumnLike]
    layers: int
    x: dict[tuple[int, int, int], Any]  # (column, type, layer) -> chosen
    source: dict[tuple[SourceKey, int], Any]  # (external value, layer) -> chosen
    cost: Any = None
    placed: dict[str, list[tuple[int, int, Any]]] = field(default_factory=dict)  # item -> (column, layer, var)
    members: list[frozenset[str]] = field(default_factory=list)


def retiming_steps(problem: PartitionProblem, layers: int) -> dict[int, int]:
    """{k: f(k) − f(k−1)} for the layer gaps k ≤ ``layers`` where the retiming a link needs grows."""
    timing = problem.retiming
    assert timing is not None
    L = timing.hop_latency

    def need(k: int) -> int:
        return timing.required(L * k - L) if k > 0 else 0

    return {k: need(k) - need(k - 1) for k in range(1, layers + 1) if need(k) > need(k - 1)}


def build_layers(problem: PartitionProblem, *, columns: Sequence[ColumnLike], layers: int,
                 cutoff: float | None = None, min_bins: int | None = None) -> LayerModel:
    """The layered column model with ``layers`` layers (module docstring); ``cutoff`` keeps only answers that
    cost at most it, ``min_bins`` is a proven bin count."""
    reason = applicable(problem)
    if reason is not None:
        raise ValueError(f"the layered model does not apply: {reason}")
    model = LayerModel(ModelBuilder(f"partition-layers:{problem.name}"), problem, columns, layers, {}, {})
    _add_variables(model, layer_windows(problem, columns, layers))
    _add_assignment(model)
    _add_type_count(model)
    _add_precedence(model)
    pays = _add_retiming(model)
    bins = linear_sum(problem.bin_types[k].cost * var for (c, k, t), var in model.x.items())
    model.cost = problem.weights.bins * bins + problem.weights.retiming * linear_sum(pays)
    _add_cutoff(model, cutoff)
    _add_lower_bound(model, min_bins)
    model.builder.minimize(model.cost)
    return model


def _add_variables(model: LayerModel, win: Windows) -> None:
    """x per (column, type, layer) inside the window; e per (external value, layer)."""
    m, types, T = model.builder, model.problem.bin_types, model.layers
    model.placed = {i.name: [] for i in model.problem.items}
    for c, col in enumerate(model.columns):
        for t in range(win.first[c], win.last[c] + 1):
            for k in col.types:
                var = model.x[c, k, t] = m.binary(f"x[{c},{types[k].name},{t}]")
                for n in col.members:
                    model.placed[n].append((c, t, var))
    model.members = [frozenset(col.members) for col in model.columns]
    model.source = {(v, t): m.binary(f"e[{v[0]}.{v[1]}@{v[2]},{t}]")
                    for v in model.problem.external_sources() for t in range(T)}


def _add_assignment(model: LayerModel) -> None:
    """Σ_{c∋i,k,t} x[c,k,t] = 1 per item; Σ_t e[v,t] = 1 per external value."""
    m, T = model.builder, model.layers
    for n, terms in model.placed.items():
        m.add(linear_sum(var for _, _, var in terms) == 1, "assignment", n)
    for v in model.problem.external_sources():
        m.add(linear_sum(model.source[v, t] for t in range(T)) == 1, "assignment", f"external {v[0]}.{v[1]}@{v[2]}")


def _add_type_count(model: LayerModel) -> None:
    """Σ_{c,t} x[c,k,t] ≤ n_k."""
    for k, t_ in enumerate(model.problem.bin_types):
        if t_.count is not None:
            model.builder.add(linear_sum(var for (c, kk, t), var in model.x.items() if kk == k) <= t_.count,
                              "type-count", t_.name)


def _by_layer(terms: list[tuple[int, Any]]) -> dict[int, list[Any]]:
    out: dict[int, list[Any]] = {}
    for t, var in terms:
        out.setdefault(t, []).append(var)
    return out


def _cumulative(layered: dict[int, list[Any]], upto: int) -> list[Any]:
    return [var for t, vs in layered.items() if t <= upto for var in vs]


def _add_precedence(model: LayerModel) -> None:
    """Layers strictly increase along every link between bins (and after an external value's layer)."""
    m, problem, placed, members, T = model.builder, model.problem, model.placed, model.members, model.layers
    cluster = {i.name: i.cluster for i in problem.items}
    for s, d in problem.order_links():
        if cluster[s] != cluster[d]:
            continue
        later = _by_layer([(t, var) for c, t, var in placed[d] if s not in members[c]])
        earlier = _by_layer([(t, var) for c, t, var in placed[s] if d not in members[c]])
        for t in range(min(later, default=T + 1), T + 1):
            lhs = _cumulative(later, t)
            if lhs:
                m.add(linear_sum(lhs) <= linear_sum(_cumulative(earlier, t - 1)), "precedence", f"{s}->{d},{t}")
    for g in problem.groups():
        for d in g.forward_consumers:
            v = problem.external_source(g, d)
            if v is None:
                continue
            reader = _by_layer([(t, var) for c, t, var in placed[d]])
            for t in range(min(reader, default=T + 1), T + 1):
                m.add(linear_sum(_cumulative(reader, t)) <= linear_sum(model.source[v, u] for u in range(t)),
                      "precedence", f"ext {v[0]}->{d},{t}")


def _add_retiming(model: LayerModel) -> list[Any]:
    """McCormick rows per reading bin (its first reader of g) and step k of the need; returns the weighted q."""
    m, problem, placed, members, T = model.builder, model.problem, model.placed, model.members, model.layers
    steps = retiming_steps(problem, T)
    pays = []
    for g in problem.groups():
        readers = list(g.forward_consumers)
        for i, d in enumerate(readers):
            v = problem.external_source(g, d)
            src = g.key[0] if v is None else None
            earlier_readers = frozenset(readers[:i])
            first = _by_layer([(t, var) for c, t, var in placed[d]
                               if (src is None or src not in members[c]) and not (members[c] & earlier_readers)])
            origin = (_by_layer([(t, var) for c, t, var in placed[src]]) if src is not None
                      else {u: [model.source[v, u]] for u in range(T)})
            for t, reading in sorted(first.items()):
                for k, weight in steps.items():
                    early = _cumulative(origin, t - k)
                    if not early:
                        continue
                    q = m.continuous(0.0, 1.0, f"q[{g.key[0]}.{g.key[1]},{d},{t},{k}]")
                    m.add(q >= linear_sum(reading) + linear_sum(early) - 1, "retiming", f"{g.key[0]}->{d},{t},{k}")
                    pays.append(weight * q)
    return pays


def _add_cutoff(model: LayerModel, cutoff: float | None) -> None:
    """objective ≤ cutoff: only answers better than an incumbent."""
    if cutoff is not None:
        model.builder.add(model.cost <= cutoff, "cutoff", f"objective <= {cutoff:g} (better than the incumbent)")


def _add_lower_bound(model: LayerModel, min_bins: int | None) -> None:
    """Σ x ≥ a proven bin count."""
    if min_bins is not None and min_bins > 1:
        model.builder.add(linear_sum(model.x.values()) >= min_bins, "lower-bound", f"proven: {min_bins} bins")


def decode_layers(problem: PartitionProblem, built: LayerModel, solution: Any) -> PartitionDecision:
    """The chosen bins, numbered by layer, at delay L·t; external values at L·(their layer); the retiming
    each reading bin needs under these delays (``required_retiming``, the problem's own count)."""
    timing = problem.retiming
    assert timing is not None
    L = timing.hop_latency
    chosen = sorted((t, c, k) for (c, k, t), var in built.x.items() if solution.is_one(var))
    assignment: dict[str, int] = {}
    types: dict[int, str] = {}
    delays: dict[int, int] = {}
    for b, (t, c, k) in enumerate(chosen):
        types[b] = problem.bin_types[k].name
        delays[b] = L * t
        for n in built.columns[c].members:
            assignment[n] = b
    sources = {v: L * t for (v, t), var in built.source.items() if solution.is_one(var)}
    return PartitionDecision(assignment, types, delays, sources, required_retiming(problem, assignment, delays, sources))
