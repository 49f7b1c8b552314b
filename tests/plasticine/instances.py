"""Small partition problems with optima known by enumeration (see ``enumeration.py``)."""

from __future__ import annotations

import random

from solvermap.formulations.problems.partition import (
    BinType,
    Item,
    Link,
    PartitionProblem,
    Retiming,
    Weights,
)

PCU = BinType("pcu", {"stages": 4}, inputs={"vector": 2, "scalar": 3}, outputs={"vector": 1, "scalar": 2})


def plain_packing() -> PartitionProblem:
    """Sizes 4,3,3,2,2,2 into bins of 6: optimum 3 (e.g. {4,2} {3,3} {2,2})."""
    sizes = [4, 3, 3, 2, 2, 2]
    items = tuple(Item(f"i{k}", {"size": s}) for k, s in enumerate(sizes))
    return PartitionProblem(items, (BinType("bin", {"size": 6}),), name="plain")


def broadcast_dag() -> PartitionProblem:
    """One external vector value read by three items; a broadcast counts once toward input arity."""
    items = tuple(Item(n, {"stages": s}) for n, s in [("a", 2), ("b", 1), ("c", 1), ("d", 2), ("e", 1)])
    links = (
        Link("x", "a", kind="vector"), Link("x", "b", kind="vector"), Link("x", "c", kind="vector"),
        Link("y", "a", kind="vector"),
        Link("a", "d", kind="scalar"), Link("b", "d", kind="scalar"), Link("c", "e", kind="scalar"),
        Link("d", "e", kind="scalar"), Link("e", "out", kind="scalar"),
    )
    return PartitionProblem(items, (PCU,), links, acyclic=True, name="broadcast")


def random_dag(seed: int, n: int = 6, retiming: Retiming | None = None) -> PartitionProblem:
    rng = random.Random(seed)
    names = [f"n{k}" for k in range(n)]
    items = tuple(Item(name, {"stages": rng.choice([1, 1, 2, 3])}) for name in names)
    links = []
    for k in range(1, n):
        for p in rng.sample(range(k), min(k, rng.choice([1, 1, 2]))):
            kind = rng.choice(["vector", "scalar"])
            links.append(Link(names[p], names[k], src_port="out" if kind == "vector" else "s", kind=kind))
    # keep one kind per produced value
    fixed, seen = [], {}
    for link in links:
        kind = seen.setdefault((link.src, link.src_port), link.kind)
        fixed.append(Link(link.src, link.dst, link.src_port, kind))
    for k in rng.sample(range(n), 2):
        fixed.append(Link(f"ext{k}", names[k], kind="vector"))
    fixed.append(Link(names[-1], "out", kind="scalar"))
    return PartitionProblem(items, (PCU,), tuple(fixed), acyclic=True, retiming=retiming, name=f"random{seed}")


def retiming_chain() -> PartitionProblem:
    """A chain of four one-slot items with a skip link a→d: the skip waits and needs retiming."""
    items = tuple(Item(n, {"stages": 1}) for n in "abcd")
    links = (Link("a", "b", kind="scalar"), Link("b", "c", kind="scalar"), Link("c", "d", kind="scalar"),
             Link("a", "d", src_port="skip", kind="scalar"), Link("d", "out", kind="scalar"))
    bin_type = BinType("pcu", {"stages": 1}, inputs={"scalar": 2}, outputs={"scalar": 2})
    return PartitionProblem(items, (bin_type,), links, acyclic=True, retiming=Retiming(1, 0), name="retime-chain")


def two_skips() -> PartitionProblem:
    """A chain a→…→f of one-stage items in two-stage bins, with skip links a→f and b→f: three bins at
    least ({ab}{cd}{ef} is the only three-bin partition) and each skip waits one cycle beyond its hop
    (buffer depth 0): 3 + 2; a fourth bin only adds crossings."""
    names = "abcdef"
    items = tuple(Item(n, {"stages": 1}) for n in names)
    links = tuple(Link(u, v, kind="scalar") for u, v in zip(names, names[1:])) + (
        Link("a", "f", src_port="skip", kind="scalar"), Link("b", "f", kind="scalar"),
        Link("x", "a", kind="scalar"), Link("f", "out", kind="scalar"))
    pcu = BinType("pcu", {"stages": 2}, inputs={"scalar": 3}, outputs={"scalar": 2})
    return PartitionProblem(items, (pcu,), links, acyclic=True, retiming=Retiming(1, 0), name="two-skips")


def drifting_reader() -> PartitionProblem:
    """A chain p→q→r→s (p two stages, the others one) in two-stage bins, and an item a that reads the
    external value x with p: six stages, so three bins need a beside q or s, late for x (buffer depth 0:
    one retiming bin beside q, two beside s), or a fourth bin; the optimum is 4 either way. A relaxation
    that lets a bin's unlinked items run at different delays puts a beside q at p's delay: 3."""
    items = (Item("p", {"stages": 2}),) + tuple(Item(n, {"stages": 1}) for n in "qrsa")
    links = (Link("x", "p", kind="scalar"), Link("x", "a", kind="scalar"), Link("p", "q", kind="scalar"),
             Link("q", "r", kind="scalar"), Link("r", "s", kind="scalar"), Link("s", "out", kind="scalar"),
             Link("a", "out", src_port="a", kind="scalar"))
    pcu = BinType("pcu", {"stages": 2}, inputs={"scalar": 3}, outputs={"scalar": 2})
    return PartitionProblem(items, (pcu,), links, acyclic=True, retiming=Retiming(1, 0), name="drifting-reader")


def merge_types() -> PartitionProblem:
    """Two bin types with counts, a max-reduced resource and a feasibility relation (Tables 4.3/4.4)."""
    items = (
        Item("m0", {"sram": 3, "lanes": 16}), Item("m1", {"sram": 2, "lanes": 16}),
        Item("c0", {"stages": 2, "lanes": 16}), Item("c1", {"stages": 3, "lanes": 8}),
        Item("c2", {"stages": 1, "lanes": 16}), Item("a0", {"stages": 1, "lanes": 1}),
    )
    big = BinType("pcu", {"stages": 4, "lanes": 16}, {"lanes": "max"}, inputs={"vector": 2}, outputs={"vector": 2},
                  count=3, cost=1.0)
    mem = BinType("pmu", {"sram": 4, "stages": 1, "lanes": 16}, {"lanes": "max"}, inputs={"vector": 2},
                  outputs={"vector": 2}, count=2, cost=1.0)
    links = (Link("m0", "c0"), Link("m1", "c1"), Link("c0", "c2"), Link("c1", "c2"), Link("a0", "m0", kind="scalar"),
             Link("c2", "out"))
    feasible = frozenset({("m0", "pmu"), ("m1", "pmu"), ("c0", "pcu"), ("c1", "pcu"), ("c2", "pcu"),
                          ("a0", "pcu"), ("a0", "pmu")})
    return PartitionProblem(items, (big, mem), links, feasible, acyclic=True, name="merge")


def traffic_packing() -> PartitionProblem:
    """No acyclicity: group items into cores of capacity 3 minimising bins + 0.5 · cut traffic (PUMA-like)."""
    items = tuple(Item(f"b{k}", {"xbars": 1}) for k in range(6))
    links = (Link("b0", "b1", traffic=4), Link("b1", "b2", traffic=1), Link("b2", "b3", traffic=4),
             Link("b3", "b4", traffic=1), Link("b4", "b5", traffic=4), Link("b0", "b5", src_port="o2", traffic=2))
    core = BinType("core", {"xbars": 3})
    return PartitionProblem(items, (core,), links, weights=Weights(bins=1.0, retiming=0.0, traffic=0.5), name="traffic")


def crossing_pairs() -> PartitionProblem:
    """a1 → b1 and b2 → a2; a1, a2 share input x and b1, b2 share y, one vector input per bin: the only
    two-bin cover {a1, a2} {b1, b2} is cyclic, the acyclic optimum is 3 bins."""
    items = tuple(Item(n, {"stages": 1}) for n in ("a1", "a2", "b1", "b2"))
    links = (Link("x", "a1", kind="vector"), Link("x", "a2", kind="vector"), Link("y", "b1", kind="vector"),
             Link("y", "b2", kind="vector"), Link("a1", "b1", kind="scalar"), Link("b2", "a2", kind="scalar"),
             Link("a2", "out", kind="scalar"), Link("b1", "out", src_port="o", kind="scalar"))
    bin_type = BinType("pcu", {"stages": 2}, inputs={"vector": 1, "scalar": 2}, outputs={"scalar": 2})
    return PartitionProblem(items, (bin_type,), links, acyclic=True, name="crossing")
