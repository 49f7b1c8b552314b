"""Large-neighbourhood search over the placement model (:func:`improve`): each round re-solves the items of
a few sites with every other item fixed (:func:`neighbourhood_problem`, an instance of the same model with
the full traffic objective restricted to the nets that can change)."""

from __future__ import annotations

import time

from solvermap.formulations.decision import Solved
from solvermap.formulations.problems.placement import Placement, PlacementProblem, combinatorial_bound, distance, objective
from solvermap.formulations.solver import SolverConfig
from solvermap.formulations.strategy import Budget, LnsState, Step, lns, lns_result


def neighbourhood_problem(problem: PlacementProblem, current: Placement, free_sites: list[str],
                          free_items: list[str] | None = None) -> tuple[PlacementProblem, float]:
    """The sub-problem of moving ``free_items`` (default: every movable item on ``free_sites``) among
    ``free_sites`` with every other item fixed where ``current`` puts it.

    Items sharing a net with a free item stay as fixed *context* items (no demand) on *context* sites
    (their own sites, typed so that no free item may enter); nets without a free member are dropped —
    their cost does not change. The sub-problem's traffic + the dropped nets' traffic = the traffic of
    the whole placement, so improving the sub-problem improves the whole. Balance and link terms are
    global maxima and are left out (the caller compares full objectives). Returns the sub-problem and
    the dropped nets' traffic (a constant)."""
    from solvermap.formulations.problems.placement import Item, Site

    index = problem.site_index()
    chosen = set(free_sites)
    if free_items is None:
        free_items = [it.name for it in problem.items
                      if current.assignment[it.name] in chosen and it.name not in problem.fixed
                      and sum(1 for s in free_sites if problem.compatible(it, problem.sites[index[s]])) > 1]
    free = set(free_items)
    items = {it.name: it for it in problem.items}
    nets, constant = [], 0.0
    context: dict[str, str] = {}
    for net in problem.nets:
        members = (net.source, *net.sinks)
        if any(m in free for m in members):
            nets.append(net)
            context.update({m: current.assignment[m] for m in members if m not in free})
        else:
            constant += _net_traffic(problem, current, net)
    # non-free items on the free sites keep their demand there (fixed); other context items need nothing
    for it in problem.items:
        if it.name not in free and current.assignment[it.name] in chosen:
            context[it.name] = current.assignment[it.name]
    sub_items = [items[n] for n in free_items]
    for name, site in context.items():
        it = items[name]
        sub_items.append(it if site in chosen else Item(it.name, {}, "__context__", 0.0))
    sites = []
    used = sorted(set(context.values()) | chosen, key=index.get)
    for name in used:
        site = problem.sites[index[name]]
        sites.append(site if name in chosen else Site(site.name, {}, site.coord, ("__context__",)))
    distances = None
    if problem.distances is not None or problem.broadcast != "tree":  # a table: one distance row per message
        distances = tuple(tuple(distance(problem, index[a], index[b]) for b in used) for a in used)
    sub = PlacementProblem(tuple(sub_items), tuple(sites), tuple(nets), problem.hop_offset, distances, problem.broadcast,
                           fixed=context, name=f"{problem.name}-neighbourhood")
    return sub, constant


def _net_traffic(problem: PlacementProblem, placement: Placement, net) -> float:
    one = PlacementProblem(problem.items, problem.sites, (net,), problem.hop_offset, problem.distances, problem.broadcast)
    return objective(one, placement)


def improve(problem: PlacementProblem, config: SolverConfig, start: Placement, *, sites_per_round: int = 3,
            max_free_items: int = 160, max_sites_used: int | None = None, rounds: int | None = None,
            neighbourhoods=None, sub_time_limit_s: float = 5.0, sweep_pairs: bool = False) -> Solved[Placement]:
    """Large-neighbourhood search over this model with the full objective (LNS, warm-started), run by the
    strategy layer's :func:`~solvermap.formulations.strategy.lns`.

    Each round frees the items of a few sites — a seed site drawn with probability ∝ the traffic it
    shares with other sites, then sites drawn ∝ the weight of the nets they share with the chosen ones
    (one time in five uniformly among the sites in use), up to ``sites_per_round`` sites or
    ``max_free_items`` items; after as many fruitless rounds as sites in use, neighbourhoods grow by one
    site, up to three more, with proportionally more items and work — and re-solves their placement among
    those sites with every other item fixed (:func:`neighbourhood_problem`), warm-started from the current
    placement (``sub_time_limit_s`` of work each); a strictly better whole placement replaces the current
    one. With ``sweep_pairs`` the search first re-solves every pair of sites in use that share traffic, the
    heaviest pair first, and sweeps again while a sweep improves (a pair exchange that no single-site draw
    pairs up reliably, e.g. re-cutting the blocks of two tiles), then continues as above.
    ``neighbourhoods`` (an iterator of site-name lists) replaces the built-in choice. Empty sites join
    a neighbourhood only while fewer than ``max_sites_used`` sites are in use (None: no limit). Stops when
    the budget ``config.time_limit_s`` is spent (a :class:`~solvermap.formulations.strategy.Budget` of
    deterministic work, so the same config and seed give the same answer on any machine load), after
    ``rounds`` rounds, or when a full sweep of seed sites finds nothing. The result has no dual bound of its
    own (``bound`` = the combinatorial bound); ``details`` has the trajectory (work spent, objective) and
    ``work`` (budget spent)."""
    import random

    from solvermap.formulations.placement import solve

    rng = random.Random(config.seed)
    t0 = time.perf_counter()
    budget = Budget(config)
    index = problem.site_index()
    movable = [it for it in problem.items if it.name not in problem.fixed
               and sum(1 for s in problem.sites if problem.compatible(it, s)) > 1]
    size = [sites_per_round]  # grows while rounds find nothing (up to sites_per_round + 3), back after a success
    last_improvement = [0]

    def site_traffic(current: Placement) -> dict[tuple[str, str], float]:
        """Weight of the nets two sites take part in together (source–destination and sibling
        destinations alike: moving items between siblings can merge or split a broadcast)."""
        pairs: dict[tuple[str, str], float] = {}
        for net in problem.nets:
            names = sorted({current.assignment[m] for m in (net.source, *net.sinks)})
            if len(names) > 12:  # a very wide net relates everything a little; skip it
                continue
            for i, a in enumerate(names):
                for b in names[i + 1:]:
                    pairs[a, b] = pairs.get((a, b), 0.0) + net.weight
        return pairs

    def after_round(state: LnsState[Placement]) -> bool:
        """Grow the neighbourhoods after a fruitless sweep; False when they cannot grow any more."""
        if state.outcome == "improved":
            last_improvement[0] = state.rounds
            stale[0] = 0
            size[0] = sites_per_round
        elif state.outcome == "kept":
            stale[0] += 1
        else:
            return True
        used_count = len({state.best.assignment[it.name] for it in movable})
        if stale[0] >= max(4, used_count):
            if size[0] >= min(used_count, sites_per_round + 3):
                return False
            size[0] += 1
            stale[0] = 0
        return True

    stale = [0]

    def pair_sweeps(state: LnsState[Placement]):
        """Every pair of sites in use sharing traffic, heaviest first; again while a sweep improves."""
        while True:
            used = {state.best.assignment[it.name] for it in movable}
            ranked = sorted(((w, a, b) for (a, b), w in site_traffic(state.best).items() if a in used and b in used),
                            key=lambda t: (-t[0], index[t[1]], index[t[2]]))
            improved = False
            for _, a, b in ranked:
                yield [a, b]
                improved = improved or state.outcome == "improved"
            if not improved:
                return

    def default_neighbourhoods(state: LnsState[Placement]):
        if sweep_pairs:
            yield from pair_sweeps(state)
        while True:
            pairs = site_traffic(state.best)
            used = sorted({state.best.assignment[it.name] for it in movable}, key=index.get)
            outward = {s: 0.0 for s in used}
            for (a, b), w in pairs.items():
                for s in (a, b):
                    if s in outward:
                        outward[s] += w
            seeds = [s for s in used if outward[s] > 0] or used
            rng.shuffle(seeds)
            seeds.sort(key=lambda s: -outward[s] * rng.random())
            for seed_site in seeds:
                chosen = [seed_site]
                while len(chosen) < size[0]:
                    links = {}
                    for (a, b), w in pairs.items():
                        for x, y in ((a, b), (b, a)):
                            if x in chosen and y not in chosen and y in outward:
                                links[y] = links.get(y, 0.0) + w
                    candidates = list(links) if links and rng.random() < 0.8 else [s for s in used if s not in chosen]
                    if not candidates:
                        break
                    weights = [links.get(c, 0.0) + 1e-9 for c in candidates]
                    chosen.append(rng.choices(candidates, weights)[0])
                if max_sites_used is None or len(used) < max_sites_used:
                    empty = [s.name for s in problem.sites if s.name not in used and not s.types]
                    if empty:
                        chosen.append(rng.choice(empty[: max(1, sites_per_round)]))
                yield chosen
                if not after_round(state):
                    return

    def given_neighbourhoods(state: LnsState[Placement]):
        yield from neighbourhoods

    state_ref: list[LnsState[Placement]] = []

    def solve_neighbourhood(free_sites: list[str], step: SolverConfig) -> Step[Placement] | None:
        current = state_ref[0].best
        growth = size[0] / max(1, sites_per_round)
        free = [it.name for it in movable if current.assignment[it.name] in set(free_sites)]
        if len(free) > max_free_items * growth:
            free = rng.sample(free, int(max_free_items * growth))
        if not free:
            return None
        sub, _ = neighbourhood_problem(problem, current, list(free_sites), free)
        solved = solve(sub, step, current)
        if solved.decision is None:
            return Step(None, solved.result)
        return Step(Placement({**current.assignment, **{n: solved.decision.assignment[n] for n in free}}), solved.result)

    def step_cap(free_sites: list[str]) -> float:
        return sub_time_limit_s * size[0] / max(1, sites_per_round)

    def generator(state: LnsState[Placement]):
        state_ref.append(state)
        return (default_neighbourhoods if neighbourhoods is None else given_neighbourhoods)(state)

    state = lns(budget, start, lambda p: objective(problem, p), generator, solve_neighbourhood, step_cap=step_cap,
                floor=0.2, rounds=rounds)
    comb = combinatorial_bound(problem)
    result = lns_result(state, budget, min(comb, state.value), "lns", rel_tol=1e-6)
    result.build_seconds = time.perf_counter() - t0 - result.solve_seconds
    details = {"rounds": state.rounds, "solves": len(state.results), "trajectory": state.trajectory,
               "last_improvement_round": last_improvement[0], "combinatorial_bound": comb, "work": budget.elapsed()}
    return Solved(result, state.best, [], details)
