"""Virtual-channel allocation (seed 004 L312–316, L324, L433–435) as an ILP, optionally joint with routing.

Problem, decision, lower bound and objective: :mod:`solvermap.formulations.problems.vc_allocation`.

Sets      P dynamic paths (logical links on the routers); J_p candidate trees of p (one unless ``joint``);
          L_pj the VC-constrained links of p on tree j: the tree's mesh links (PB ports need none, NT10);
          K = {0, …, v#−1} the router's VCs
Vars      u[k] ∈ {0,1}        VC k is used
          r[p,j] ∈ {0,1}      p takes tree j (fixed to the routed tree unless ``joint``)
          per_path:  c[p,k] ∈ {0,1}  p uses VC k on every link;  w[p,j,k] ≥ r[p,j] + c[p,k] − 1 (joint)
          per_hop:   x[p,ℓ,k] ∈ {0,1}  p uses VC k on link ℓ (the table's "next VC", L324)
Minimise  Σ_k u[k]  (+ ε Σ_{p,j} weight_p |tree_pj| r[p,j] when ``joint``: among fewest VCs, shortest trees)
s.t.      route       Σ_j r[p,j] = 1
          assignment  per_path: Σ_k c[p,k] = 1;   per_hop: Σ_k x[p,ℓ,k] = Σ_{j: ℓ ∈ L_pj} r[p,j]
          conflict    Σ_{p ∋ ℓ} (c[p,k] | w[p,j,k] | x[p,ℓ,k]) ≤ u[k]     ∀ ℓ, k   — no two logical paths
                      on one (link, VC) (L316); a row per link, so a link's paths form a clique
          use         c[p,k] ≤ u[k] (per_path);  symmetry  u[k] ≥ u[k+1]; the paths of the most loaded
                      link take VCs 0, 1, … in order (non-joint)
          deadlock    the channel dependency graph, with PB backpressure from outputs to inputs (L314), is
                      acyclic. With one path per (link, VC) every channel belongs to one path, so a CDG cycle
                      can only run through PB contexts: it exists iff the nets' backpressure graph has a cycle,
                      whatever the VCs and trees. ``diagnose`` checks that graph and names the cycle, so the
                      ILP needs no rows for it (the checker re-derives the full CDG).

Lower bound (reported as the solve's ``bound``; ``details.proven_lower_bound`` adds the solver's own
proof): the largest number of distinct paths on one link (with ``joint``, on links every candidate uses). ``per_hop`` always reaches it (each link is coloured on its
own); ``per_path`` can need more — then :func:`certificate` shrinks the paths to a minimal set that still
needs more VCs than the bound (a deletion filter over solver calls), the certificate in ``details``.
One ModelBuilder model runs on every MILP backend (cpsat, highs, scip, cbc).
"""

from __future__ import annotations

import math
import dataclasses
from dataclasses import dataclass
from typing import Any

import networkx as nx

from solvermap.formulations.decision import Solved, solve_model
from solvermap.formulations.problems.vc_allocation import (
    VcAssignment,
    VcPath,
    VcProblem,
    lower_bound,
    objective,
    path_links,
)
from solvermap.formulations.solver import ModelBuilder, SolveResult, SolverConfig, Status, linear_sum, relative_gap

NAME = "vc_allocation"
KIND = "milp"


@dataclass
class VcModel:
    builder: ModelBuilder
    u: list[Any]
    r: dict[tuple[str, int], Any]
    c: dict[tuple[str, int], Any]
    x: dict[tuple[str, Any, int], Any]
    big: float


def _trees(problem: VcProblem, p: VcPath) -> tuple:
    return p.candidates if problem.joint else p.candidates[:1]


def build(problem: VcProblem, config: SolverConfig, hint: VcAssignment | None = None) -> VcModel:
    m = ModelBuilder(name=problem.name)
    vcs = range(problem.max_vcs)
    u = [m.binary(f"u[{k}]") for k in vcs]
    r: dict[tuple[str, int], Any] = {}
    c: dict[tuple[str, int], Any] = {}
    x: dict[tuple[str, Any, int], Any] = {}
    conflict: dict[tuple[Any, int], list[Any]] = {}
    hop_terms = []
    max_hops = 0.0
    for p in problem.paths:
        trees = _trees(problem, p)
        for j in range(len(trees)):
            r[p.name, j] = 1.0 if len(trees) == 1 else m.binary(f"r[{p.name},{j}]")
        if len(trees) > 1:
            m.add(linear_sum(r[p.name, j] for j in range(len(trees))) == 1, group="route", name=p.name)
            hop_terms += [p.weight * len(t) * r[p.name, j] for j, t in enumerate(trees)]
            max_hops += p.weight * max(len(t) for t in trees)
        if problem.mode == "per_path":
            for k in vcs:
                c[p.name, k] = m.binary(f"c[{p.name},{k}]")
                m.add(c[p.name, k] <= u[k], group="use", name=f"{p.name},{k}")
            m.add(linear_sum(c[p.name, k] for k in vcs) == 1, group="assignment", name=p.name)
            for j, t in enumerate(trees):
                for k in vcs:
                    if len(trees) == 1:
                        w = c[p.name, k]
                    else:
                        w = m.binary(f"w[{p.name},{j},{k}]")
                        m.add(w >= r[p.name, j] + c[p.name, k] - 1, group="assignment", name=f"{p.name},{j},{k}")
                    for link in path_links(p, t):
                        conflict.setdefault((link, k), []).append(w)
        else:
            uses: dict[Any, list[Any]] = {}
            for j, t in enumerate(trees):
                for link in path_links(p, t):
                    uses.setdefault(link, []).append(r[p.name, j])
            for link, routes in uses.items():
                for k in vcs:
                    x[p.name, link, k] = m.binary(f"x[{p.name},{link},{k}]")
                    conflict.setdefault((link, k), []).append(x[p.name, link, k])
                m.add(linear_sum(x[p.name, link, k] for k in vcs) == linear_sum(routes), group="assignment",
                      name=f"{p.name},{link}")
    for (link, k), terms in conflict.items():
        m.add(linear_sum(terms) <= u[k], group="conflict", name=f"{link},{k}")
    for k in range(1, problem.max_vcs):
        m.add(u[k - 1] >= u[k], group="symmetry", name=str(k))
    if not problem.joint and problem.mode == "per_path":
        bound, link = lower_bound(problem)
        if link is not None and bound <= problem.max_vcs:
            users = [p.name for p in problem.paths if link in path_links(p, p.candidates[0])]
            for k, name in enumerate(sorted(users)):
                m.add(c[name, k] == 1, group="symmetry", name=f"clique,{name}")
    big = max_hops + 1.0
    if hop_terms:
        m.minimize(big * linear_sum(u) + linear_sum(hop_terms))
    else:
        m.minimize(linear_sum(u))
    if hint is not None:
        _hint(problem, m, u, r, c, x, hint)
    return VcModel(m, u, r, c, x, big if hop_terms else 1.0)


def _hint(problem: VcProblem, m: ModelBuilder, u, r, c, x, hint: VcAssignment) -> None:
    used = {v for mp in hint.vcs.values() for v in mp.values()}
    if any(v >= problem.max_vcs for v in used):
        return
    for k, var in enumerate(u):
        m.hint(var, 1.0 if k in used else 0.0)
    for p in problem.paths:
        trees = _trees(problem, p)
        chosen = tuple(hint.routes.get(p.name, trees[0]))
        j = next((j for j, t in enumerate(trees) if tuple(t) == chosen), None)
        if j is None:
            return
        for jj in range(len(trees)):
            if not isinstance(r[p.name, jj], float):
                m.hint(r[p.name, jj], 1.0 if jj == j else 0.0)
        mp = hint.vcs.get(p.name, {})
        if problem.mode == "per_path":
            v = next(iter(mp.values()), 0)
            for k in range(problem.max_vcs):
                m.hint(c[p.name, k], 1.0 if k == v else 0.0)
        else:
            for (name, link, k), var in x.items():
                if name == p.name:
                    m.hint(var, 1.0 if mp.get(link) == k else 0.0)


def decode(problem: VcProblem, built: VcModel, solution: Any) -> VcAssignment:
    routes = {}
    vcs = {}
    for p in problem.paths:
        trees = _trees(problem, p)
        j = next(j for j in range(len(trees))
                 if isinstance(built.r[p.name, j], float) or solution.is_one(built.r[p.name, j]))
        tree = tuple(trees[j])
        routes[p.name] = tree
        if problem.mode == "per_path":
            k = next(k for k in range(problem.max_vcs) if solution.is_one(built.c[p.name, k]))
            vcs[p.name] = {link: k for link in path_links(p, tree)}
        else:
            vcs[p.name] = {link: next(k for k in range(problem.max_vcs) if solution.is_one(built.x[p.name, link, k]))
                           for link in path_links(p, tree)}
    return VcAssignment(routes, vcs)


def backpressure_cycle(problem: VcProblem) -> list[str] | None:
    """A cycle of nets in the PB backpressure graph (net a → net b when a enters the PB context whose
    firing waits on b), or None."""
    g = nx.DiGraph()
    g.add_edges_from((a, b) for a, b, _ in problem.backpressure)
    try:
        cycle = nx.find_cycle(g)
    except nx.NetworkXNoCycle:
        return None
    return [a for a, _ in cycle]


def diagnose(problem: VcProblem) -> str | None:
    cycle = backpressure_cycle(problem)
    if cycle:
        return f"deadlock: the PB backpressure graph has the cycle {' -> '.join(cycle + cycle[:1])} (L314)"
    bound, link = lower_bound(problem)
    if bound > problem.max_vcs:
        return f"{bound} logical paths share link {link}; the routers have {problem.max_vcs} VCs (L316)"
    return None


def solve(problem: VcProblem, config: SolverConfig, hint: VcAssignment | None = None) -> Solved[VcAssignment]:
    bound, link = lower_bound(problem)
    details: dict[str, Any] = {"load_bound": bound, "load_bound_link": repr(link), "paths": len(problem.paths),
                               "mode": problem.mode, "joint": problem.joint}
    if not problem.paths:
        result = SolveResult(Status.OPTIMAL, 0.0, 0.0, 0.0, backend=config.milp_backend(), message="no dynamic paths")
        return Solved(result, VcAssignment({}, {}), [], details)
    built = build(problem, config, hint)
    result, solution = solve_model(built.builder, config)
    details["model_size"] = built.builder.size()
    decision = decode(problem, built, solution) if result.status.has_solution else None
    if result.status == Status.INFEASIBLE:
        return Solved(result, None, [f"conflict: more than {problem.max_vcs} VCs needed"], details)
    if decision is not None:
        value = objective(problem, decision)
        solver_bound = math.floor((result.bound or 0.0) / built.big + 1e-9) if result.bound is not None else 0
        proven = max(bound, min(solver_bound, value))  # what the solve certifies
        status = Status.OPTIMAL if proven >= value else result.status
        details["hops"] = sum(len(t) for t in decision.routes.values())
        details["proven_lower_bound"] = proven
        # ``bound`` is the load bound (the definition); ``proven_lower_bound`` adds the solver's proof
        result = dataclasses.replace(result, status=status, objective=value, bound=float(bound),
                                     gap=relative_gap(value, bound))
        if value > bound and status == Status.OPTIMAL and problem.mode == "per_path" and not problem.joint:
            details["certificate"] = certificate(problem, config, int(value))
    return Solved(result, decision, [], details)


def certificate(problem: VcProblem, config: SolverConfig, needed: int, *, max_paths: int = 60) -> dict[str, Any]:
    """A minimal set of paths that cannot share ``needed − 1`` VCs (deletion filter over feasibility
    solves), with the links each pair shares: why the VC count exceeds the load bound."""
    conflict = _conflict_graph(problem)
    # start from the connected component(s) that need ``needed`` colours, smallest first
    keep = sorted({p.name for p in problem.paths}, key=lambda n: (-conflict.degree(n), n))
    if len(keep) > max_paths:
        keep = keep[:max_paths]
        if _colourable(problem, keep, needed - 1, config):
            return {"paths": [], "note": f"more than {max_paths} paths; no certificate searched"}
    for name in list(keep):
        trial = [n for n in keep if n != name]
        if trial and not _colourable(problem, trial, needed - 1, config):
            keep = trial
    sub = conflict.subgraph(keep)
    return {"paths": keep, "vcs_needed": needed,
            "conflicts": [{"paths": [a, b], "links": [repr(lk) for lk in sorted(sub.edges[a, b]["links"], key=repr)]}
                          for a, b in sorted(sub.edges)]}


def _conflict_graph(problem: VcProblem) -> nx.Graph:
    g = nx.Graph()
    on_link: dict[Any, list[str]] = {}
    for p in problem.paths:
        g.add_node(p.name)
        for link in path_links(p, p.candidates[0]):
            on_link.setdefault(link, []).append(p.name)
    for link, users in on_link.items():
        for i, a in enumerate(users):
            for b in users[i + 1:]:
                if g.has_edge(a, b):
                    g.edges[a, b]["links"].append(link)
                else:
                    g.add_edge(a, b, links=[link])
    return g


def _colourable(problem: VcProblem, names: list[str], vcs: int, config: SolverConfig) -> bool:
    keep = set(names)
    sub = VcProblem(tuple(p for p in problem.paths if p.name in keep), vcs, problem.mode, False, name=problem.name)
    if lower_bound(sub)[0] > vcs:
        return False
    result, _ = solve_model(build(sub, config).builder, config.with_(rel_gap=1.0))
    return result.status.has_solution
