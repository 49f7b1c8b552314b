"""Virtual-channel allocation on the dynamic network (seed 004 L312–316, L324, L433–435): problem,
decision, the lower bound and the objective.

A *path* is one logical link routed on the routers (a broadcast tree is one path: its copies are one
packet stream). The links a path occupies for VC purposes are its tree's mesh links. The PB ↔ router
ports are not VC-constrained: every PB output port has its own buffer at its router's local input and
every PB input port its own buffer at the local output (the PB's input buffers, Table 4.1's b_d), so no
two logical paths share a buffer there; they share only the port's bandwidth of one flit per cycle
(assumption NT10 in the presets, L411).

Rule (L316): "no two logical paths may be allowed to conflict at *any* point in the network": two paths
that share a link get different VCs there. ``mode``:

* ``per_hop`` — the routing table gives "the output port and next VC" (L324), so a path may change VC at
  every router; the VC of (path, link) is chosen per link.
* ``per_path`` — a path keeps one VC end to end (simpler tables; VC allocation becomes the colouring of
  the paths' conflict graph, where the lower bound below may be unreachable).

``joint``: each path has several candidate trees (``candidates[0]`` is the routed one); the allocation
may pick a longer tree to need fewer VCs (L433: too few VCs force "roundabout routing").

Deadlock (L314): PBs propagate backpressure from their outputs to their inputs, so the channel
dependency graph (CDG) has, besides the links along every tree, an edge from the last channel of a path
entering a PB context to the first channel of every path that context's firing waits on
(``backpressure`` = (entering net, leaving net, node)); loop-carried inputs are pre-loaded with tokens
(L535) and add no edge. The CDG must be acyclic. Static trees (hybrid) join the CDG as exclusive
channels (``static_paths``).

Objective: VCs used = 1 + the largest VC index (0 without paths). Lower bound: the largest number of
distinct paths on one link (they pairwise need distinct VCs there); with ``joint``, only links that
every candidate of a path uses count.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from solvermap.formulations.problems.routing import Link, Node

LinkKey = tuple  # a mesh link ((r, c), (r', c'))


@dataclass(frozen=True)
class VcPath:
    name: str
    source: Node
    sinks: tuple[Node, ...]
    candidates: tuple[tuple[Link, ...], ...]  # candidate trees; [0] = the routed tree
    weight: float = 1.0  # hop weight (joint mode's tie-break)


@dataclass(frozen=True)
class VcProblem:
    paths: tuple[VcPath, ...]
    max_vcs: int
    mode: str = "per_hop"  # "per_hop" | "per_path"
    joint: bool = False
    static_paths: tuple[VcPath, ...] = ()
    backpressure: tuple[tuple[str, str, Node], ...] = ()
    name: str = "vc_allocation"


@dataclass(frozen=True)
class VcAssignment:
    """The decision: the tree each path uses and the VC of every (path, link)."""

    routes: Mapping[str, tuple[Link, ...]]
    vcs: Mapping[str, Mapping[LinkKey, int]] = field(default_factory=dict)

    def to_json(self) -> dict:
        def key(link) -> str:
            (a, b) = link
            return f"{a[0]},{a[1]}>{b[0]},{b[1]}"

        return {"routes": {n: [key(lk) for lk in t] for n, t in sorted(self.routes.items())},
                "vcs": {n: {key(lk): v for lk, v in sorted(m.items(), key=lambda kv: key(kv[0]))}
                        for n, m in sorted(self.vcs.items())}}


def path_links(path: VcPath, tree: tuple[Link, ...]) -> list[LinkKey]:
    """The VC-constrained links of a path on a tree: the tree's mesh links (NT10)."""
    return list(tree)


def objective(problem: VcProblem, decision: VcAssignment) -> float:
    used = [v for m in decision.vcs.values() for v in m.values()]
    return float(1 + max(used)) if used else 0.0


def loads(problem: VcProblem, routes: Mapping[str, tuple[Link, ...]]) -> dict[LinkKey, list[str]]:
    out: dict[LinkKey, list[str]] = {}
    for p in problem.paths:
        for link in path_links(p, tuple(routes.get(p.name, p.candidates[0]))):
            out.setdefault(link, []).append(p.name)
    return out


def lower_bound(problem: VcProblem) -> tuple[int, LinkKey | None]:
    """(bound, a link attaining it): distinct paths on one link; with ``joint``, only the links every
    candidate of a path uses."""
    counts: dict[LinkKey, int] = {}
    for p in problem.paths:
        trees = p.candidates if problem.joint else p.candidates[:1]
        common = set(path_links(p, trees[0]))
        for t in trees[1:]:
            common &= set(path_links(p, t))
        for link in common:
            counts[link] = counts.get(link, 0) + 1
    if not counts:
        return 0, None
    link = max(sorted(counts, key=repr), key=lambda k: counts[k])
    return counts[link], link
