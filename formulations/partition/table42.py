"""The seed's literal Table 4.2 formulation (variant ``table42``, seed 004 L599–608), for comparison on the
same backend; single bin type only (partitioning).

Vars      B[i,j] ∈ {0,1} item i in column j, for every item and every one of P = (warm start's bin count)
          columns; u_j = proj_B(Σ_i B[i,j]) by big-M; node delays d_n and partition delays d_p.
Minimise  w_bins κ Σ_j u_j + α Σ_edges proj_B(max{d_n(j) − d_n(i) − L − b_d, 0})
s.t.      proj-partitions, assignment, capacity (Table 4.4 reducible, r = sum), feasibility,
          delay-consistency (big-M), dependency d_n(j) ≥ d_n(i) + L·1[p_i ≠ p_j] (also its only cycle
          constraint), output arity Σ and(B[s,p], proj_B(Σ_dest (1 − B[d,p]))), input arity
          Σ max{proj_B(Σ_dest(i) B[·,p]) − B[i,p], 0}, retiming flags, constant validity d ≤ K.
No symmetry breaking, no lower bounds, no variable fixing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from solvermap.errors import ConfigError
from solvermap.formulations.partition.slots import PartitionModel
from solvermap.formulations.problems.partition import PartitionDecision, PartitionProblem
from solvermap.formulations.solver import ModelBuilder, SolverConfig, linear_sum


@dataclass
class _Table42:
    """The literal model's parameters and variables while it is built."""

    builder: ModelBuilder
    problem: PartitionProblem
    bin_type: Any
    order: list[str]
    columns: int  # P
    proj: int  # K, the proj_B constant
    hop: int  # L
    depth: int  # b_d
    delay_cap: int  # KD
    B: dict[tuple[str, int], Any]
    u: dict[int, Any]
    dn: dict[str, Any] = field(default_factory=dict)
    dp: dict[int, Any] = field(default_factory=dict)
    ext_delay: dict[tuple[str, str, str], Any] = field(default_factory=dict)


def build_table42(problem: PartitionProblem, config: SolverConfig, hint: PartitionDecision | None = None) -> PartitionModel:
    """The seed's Table 4.2 as written (see the module docstring); single bin type only."""
    if len(problem.bin_types) != 1:
        raise ConfigError("variant 'table42' is the seed's partitioning model and takes one bin type; "
                          "use variant 'ours' for merging")
    m = ModelBuilder(f"table42:{problem.name}")
    bt = problem.bin_types[0]
    order = problem.item_names
    N = len(order)
    P = len(set(hint.assignment.values())) if hint is not None else N
    L = problem.retiming.hop_latency if problem.retiming else 1
    depth = problem.retiming.buffer_depth if problem.retiming else 0
    KD = 2 * P * L + depth + L  # delay constant (the authors' code: 2·P·delay_per_partition)
    B = {(n, j): m.binary(f"B[{n},{j}]") for n in order for j in range(P)}
    u = {j: m.binary(f"u[{j}]") for j in range(P)}
    t = _Table42(m, problem, bt, order, P, N, L, depth, KD, B, u)  # K = N: a count never exceeds N
    _add_proj_partitions(t)
    _add_assignment(t)
    _add_capacity(t)
    _add_feasibility(t)
    _add_delay_consistency(t)
    _add_dependency(t)
    _add_output_arity(t)
    _add_input_arity(t)
    _add_retiming_objective(t)
    model = PartitionModel(m, problem, order, P, [bt], B, {(j, 0): u[j] for j in range(P)}, variant="table42")
    model.t, model.e = t.dp, t.ext_delay
    if hint is not None:
        _hint_table42(model, t.dn, hint)
    return model


def _add_proj_partitions(t: _Table42) -> None:
    """proj-partitions: u_j = proj_B(Σ_i B[i,j])."""
    m, order, P, K, B, u = t.builder, t.order, t.columns, t.proj, t.B, t.u
    for j in range(P):
        m.add(linear_sum(B[n, j] for n in order) <= K * u[j], "proj-partitions", str(j))


def _add_assignment(t: _Table42) -> None:
    """assignment: Σ_j B[i,j] = 1."""
    m, order, P, B = t.builder, t.order, t.columns, t.B
    for n in order:
        m.add(linear_sum(B[n, j] for j in range(P)) == 1, "assignment", n)


def _add_capacity(t: _Table42) -> None:
    """capacity (prose L637; Table 4.4 reducible constraint with r = sum)."""
    m, problem, bt, order, P, B = t.builder, t.problem, t.bin_type, t.order, t.columns, t.B
    for r in sorted({r for i in problem.items for r in i.demand}):
        if bt.reduce_of(r) == "max":
            for n in order:
                if problem.item(n).demand.get(r, 0) > bt.cap(r):
                    m.add(linear_sum(B[n, j] for j in range(P)) <= 0, "capacity", f"{r},{n}")
            continue
        for j in range(P):
            m.add(linear_sum(problem.item(n).demand.get(r, 0.0) * B[n, j] for n in order) <= bt.cap(r), "capacity", f"{r},{j}")


def _add_feasibility(t: _Table42) -> None:
    """feasibility: an item that fits no partition."""
    m, problem, bt, order, P, B = t.builder, t.problem, t.bin_type, t.order, t.columns, t.B
    if problem.feasible is not None:
        for n in order:
            if (n, bt.name) not in problem.feasible:
                m.add(linear_sum(B[n, j] for j in range(P)) <= 0, "feasibility", n)


def _add_delay_consistency(t: _Table42) -> None:
    """delay-consistency: d_n = d_p of its partition (big-M), constant validity d ≤ K."""
    m, order, P, KD, B = t.builder, t.order, t.columns, t.delay_cap, t.B
    dn = {n: m.integer(0, KD, f"dn[{n}]") for n in order}
    dp = {j: m.integer(0, KD, f"dp[{j}]") for j in range(P)}
    for n in order:
        for j in range(P):
            m.add(dn[n] <= dp[j] + KD * (1 - B[n, j]), "delay-consistency", f"{n}<={j}")
            m.add(dn[n] >= dp[j] - KD * (1 - B[n, j]), "delay-consistency", f"{n}>={j}")
    t.dn, t.dp = dn, dp


def _add_dependency(t: _Table42) -> None:
    """dependency: d_n(j) ≥ d_n(i) + L·1[p_i ≠ p_j] on forward edges (also the cycle constraint)."""
    m, problem, P, L, B = t.builder, t.problem, t.columns, t.hop, t.B
    dn = t.dn
    if problem.acyclic:
        for s, d in problem.order_links():
            neq = m.binary(f"neq[{s},{d}]")
            for j in range(P):
                m.add(neq >= B[d, j] - B[s, j], "dependency", f"{s}->{d},{j}")
            m.add(dn[d] >= dn[s] + L * neq, "dependency", f"{s}->{d}")


def _add_output_arity(t: _Table42) -> None:
    """output-arity: Σ_s and(B[s,p], proj_B(Σ_dest (1 − B[d,p]) [+ external])) ≤ limit."""
    m, K, B = t.builder, t.proj, t.B

    def leaves(g, j: int) -> Any:
        if not g.source_is_item:
            return None
        s = g.key[0]
        leave = m.binary(f"leave[{s}.{g.key[1]},{j}]")
        outside = linear_sum((1 - B[d, j]) for d in g.consumers) + (1 if g.external_consumer else 0)
        m.add(outside <= K * leave, "proj-output", f"{s},{j}")
        both = m.binary(f"and[{s}.{g.key[1]},{j}]")
        m.add(both >= B[s, j] + leave - 1, "and-output", f"{s},{j}")
        return both

    _add_arity_limit(t, t.bin_type.outputs, leaves, "output-arity")


def _add_input_arity(t: _Table42) -> None:
    """input-arity: Σ_i max{proj_B(Σ_{dest(i)} B[·,p]) − B[i,p], 0} ≤ limit."""
    m, K, B = t.builder, t.proj, t.B

    def enters(g, j: int) -> Any:
        enter = m.binary(f"proj-in[{g.key[0]}.{g.key[1]},{j}]")
        m.add(linear_sum(B[d, j] for d in g.consumers) <= K * enter, "proj-input", f"{g.key[0]},{j}")
        gain = m.binary(f"in[{g.key[0]}.{g.key[1]},{j}]")
        src = B[g.key[0], j] if g.source_is_item else 0
        m.add(gain >= enter - src, "input-arity-max", f"{g.key[0]},{j}")
        return gain

    _add_arity_limit(t, t.bin_type.inputs, enters, "input-arity")


def _add_arity_limit(t: _Table42, limits: dict[str, int], crossing: Any, group: str) -> None:
    """Per link kind with a limit and per column j: Σ_g crossing(g, j) ≤ limit (values of that kind)."""
    groups = t.problem.groups()
    for kind, limit in sorted(limits.items()):
        for j in range(t.columns):
            terms = [term for g in groups if g.kind == kind for term in [crossing(g, j)] if term is not None]
            if terms:
                t.builder.add(linear_sum(terms) <= limit, group, f"{kind},{j}")


def _add_retiming_objective(t: _Table42) -> None:
    """proj-retiming flags and the objective: allocated partitions + α · Σ retiming flags."""
    m, problem, bt, L, depth, KD, u = t.builder, t.problem, t.bin_type, t.hop, t.depth, t.delay_cap, t.u
    groups, dn = problem.groups(), t.dn
    retime = []
    ext_delay: dict[tuple[str, str, str], Any] = {}
    cluster = {i.name: i.cluster for i in problem.items}
    if problem.retiming is not None:
        for g in groups:
            for d in g.forward_consumers:
                if g.source_is_item and cluster[g.key[0]] == cluster[d]:
                    start = dn[g.key[0]]
                else:
                    key = (g.key[0], g.key[1], cluster[d])
                    if key not in ext_delay:
                        ext_delay[key] = m.integer(0, KD, f"e[{key[0]}.{key[1]}@{key[2]}]")
                    start = ext_delay[key]
                    m.add(dn[d] >= start + L, "dependency", f"ext {g.key[0]}->{d}")
                flag = m.binary(f"retime[{g.key[0]}->{d}]")
                m.add(dn[d] - start - L - depth <= KD * flag, "proj-retiming", f"{g.key[0]}->{d}")
                retime.append(flag)
    alpha = problem.weights.retiming
    m.minimize(problem.weights.bins * bt.cost * linear_sum(u.values()) + alpha * linear_sum(retime))
    t.ext_delay = ext_delay


def _hint_table42(model: PartitionModel, dn, hint: PartitionDecision) -> None:
    m = model.builder
    if any(b >= model.slots for b in hint.assignment.values()):
        return
    for (n, j), var in model.x.items():
        m.hint(var, 1 if hint.assignment[n] == j else 0)
    for (j, _), var in model.w.items():
        m.hint(var, 1 if j in hint.bin_types else 0)
    if hint.delays:
        for j, var in model.t.items():
            m.hint(var, hint.delays.get(j, 0))
        for n, var in dn.items():
            m.hint(var, hint.delays[hint.assignment[n]])

