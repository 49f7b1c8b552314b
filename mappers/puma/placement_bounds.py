"""Certified lower bounds on the hop-weighted bytes of a PUMA tile placement (relaxations, no placement).

On PUMA's concentrated mesh a message between two distinct tiles crosses ``1 + manhattan`` routers
(:meth:`PumaSpec.hops`), so for every placement

    hop-weighted bytes = Σ_messages w  +  Σ_messages w · manhattan(router(src), router(dst))
                       =  *message bytes*  +  *crossing bytes*.

Two relaxations bound the two parts separately — each one's optimum is at most its part for every
placement on at most K tiles — so the sum of their dual bounds bounds the hop-weighted bytes
(:func:`lower_bound`). Nothing here places anything; the placement model stays the shared one.

Structure read from the partition (:func:`structure`)
    A *grid* is one layer replica: R rows, each a reduction chain of J blocks (positions j = 0..J−1);
    a row's chain ends on its *home*. Traffic: chain links (``partial``), *column values* (one value
    read by every row's block at one position: from a row home, from the input tile, or other),
    *home links* (row home → one row home: LSTM gate values), *outputs* (row home → output tile),
    other values from/to an I/O tile (≥ 1 message each) and the rest (left out: cost ≥ 0). Rows are
    split into classes by the roles their homes play.

Units and patterns
    A *unit* is a tile slot (message relaxation; K interchangeable slots) or a router (crossing
    relaxation; a router holds ≤ its compute tiles, Σ tiles ≤ K). A unit's *pattern* gives per grid g:
    n blocks, a positions touched (a_γ of them carrying values of column group γ), b rows touched,
    e_κ homes of row class κ, st row starts, and per group its savings s_γ (values read in the unit
    whose source home is in the unit), per home-link group its co-located links c. Constraints:
    n ≤ a·b (blocks of a unit occupy distinct (row, position) pairs — the isoperimetric constraint that
    makes splitting a layer cost messages), a ≤ n, b ≤ n, Σ_g n ≤ capacity, Σ e ≤ b, st ≤ b, a unit
    with a home (a start) touches position J−1 (0), s_γ ≤ a_γ, s_γ ≤ p_γ·e_source (p_γ: most values
    one source home sends), c ≤ p·e_source, c ≤ q·e_sink.
Pattern costs
    messages: Σ_g w_chain·b + Σ_γ w_γ·(a_γ − s_γ) − Σ w·c, plus Σ(w·count) of home links, outputs and
        forced I/O values, minus Σ_g w_chain·R (a row touching m units is cut ≥ m − 1 times)
    crossings: the same with routers as units (a value read in a router other than its source's
        crosses ≥ 1 link), input-tile values × distance of the router from the input router, outputs ×
        distance to the output router (routers other than the I/O router counted at distance 1).
Master LP (column generation, HiGHS)
    min Σ cost·λ  s.t.  Σ n·λ = |g|, Σ b·λ ≥ R, Σ a_γ·λ ≥ |γ|, Σ e_κ·λ = |κ|, Σ st·λ = R,
    Σ s_γ·λ ≤ |γ|, Σ c·λ ≤ count, Σ tiles·λ ≤ K, Σ_{patterns of a kind} λ ≤ #units of that kind,
    and per grid the isoperimetric cuts Σ (α·a + β·b)·λ ≥ D_g(α, β) (a DP over ≤ K parts of ≤ one
    unit's capacity: valid for every placement).
    Pricing is exact: the pattern model as a MILP with a one-hot (a, b) choice per grid (its LP is the
    convex hull of each grid's points), HiGHS; CP-SAT finds extra columns fast.
Bound
    at every iteration, for the LP's duals π (clamped to their valid signs), the Lagrangian bound
    π·rhs + Σ_kinds count · min(0, pricing's proven lower bound) is valid; the best one is kept,
    rounded down. The reported bound is at least :func:`io_floor` (bytes to and from the I/O tiles). When the
    column generation has converged with ``COMPACT_MIN_WORK`` or more work left, the rest goes to the
    *whole-unit* relaxation (:func:`_compact_bound`): the same master with integral λ written compactly
    (min(count, K) copies of each unit type's pattern rows, identical units ordered by load), whose MILP dual
    bound replaces the LP's when higher. :func:`message_bound` / :func:`crossing_bound` with ``evaluate=True``
    return a relaxation's value at a real placement's own patterns — never above that placement's part (tested).
Whole messages
    each group's term counts whole messages (chain cuts, column values sent, home links apart) times its
    weight, so over the groups whose weight is a multiple of the *grain* (:func:`message_grain`: the weight
    carrying the most bytes, 256 B on the MLPs) the message bytes of every placement are a whole number of
    grains. The message relaxation restricted to those groups (the others count 0; a second column
    generation, warm-started with the first one's columns, when there are others) is rounded up to whole
    grains (:func:`_whole_grains`); the message bound is the larger of it and the unrestricted relaxation.
Work
    the column generation builds its models once (the master, per unit type the pricing MILP and the CP-SAT
    pattern model) and re-solves them with new duals or columns: a model's first solve is charged at least
    ``MIN_SOLVE_WORK``, every re-solve its reported work, at least ``RESOLVE_MIN_WORK`` (a tenth), so that
    hundreds of small re-solves do not use up the budget their reported work leaves.
Wall clock
    every solve has the wall-clock backstop of the whole bound's work (the facade's 20 × work + 60 s), not
    that of its own share: a HiGHS root node is not bounded by a node limit, and a share's backstop (61 s
    for 0.05 units) could stop it under load and change the bound. A solve the backstop stops sets the
    bound's ``backstop_fired``, which the placement's record carries.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

from solvermap.formulations.solver import ModelBuilder, SolveResult, SolverConfig, solve_cpsat, solve_lp, solve_milp
from solvermap.formulations.strategy import MIN_SOLVE_WORK, Budget
from solvermap.hardware.puma.placement_problem import PumaPlacementProblem
from solvermap.hardware.puma.program import IO_INPUT, IO_OUTPUT, PumaPlacement


# --------------------------------------------------------------------------- structure


@dataclass
class Grid:
    key: tuple[str, int]
    rows: list[list[str]]  # reduction chain of every row, position order
    chain_weight: float = 0.0  # smallest chain-link weight (0: no links)
    row_class: list[int] = field(default_factory=list)
    classes: list[list[int]] = field(default_factory=list)

    @property
    def size(self) -> int:
        return sum(len(r) for r in self.rows)

    @property
    def positions(self) -> int:
        return max(len(r) for r in self.rows)


@dataclass
class ColumnGroup:
    grid: int
    source: str  # "io" | "grid" | "other"
    source_grid: int
    weight: float
    count: int
    per_source: int  # most values of the group one source home sends
    positions: list[int]  # chain positions carrying one of its values
    source_classes: list[int] = field(default_factory=list)
    sources: dict[int, str] = field(default_factory=dict)  # position → source block (or I/O)


@dataclass
class HomeLink:
    src_grid: int
    sink_grid: int
    weight: float
    count: int
    per_source: int  # max values per source home
    per_sink_min: int  # min values per sink home of the sink classes
    per_sink: int  # max values per sink home
    src_classes: list[int] = field(default_factory=list)
    sink_classes: list[int] = field(default_factory=list)
    pairs: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class Output:
    src_grid: int
    weight: float
    count: int
    per_source_min: int
    src_classes: list[int] = field(default_factory=list)


@dataclass
class Structure:
    grids: list[Grid]
    columns: list[ColumnGroup]
    links: list[HomeLink]
    outputs: list[Output]
    forced: float  # bytes of other values from or to an I/O tile: ≥ 1 hop each
    ignored: float  # bytes of values the relaxations leave out (cost ≥ 0)


def structure(problem: PumaPlacementProblem) -> Structure:
    part = problem.partition
    by_grid: dict[tuple[str, int], dict[int, list]] = {}
    for b in part.blocks:
        by_grid.setdefault((b.layer, b.replica), {}).setdefault(b.row_block, []).append(b)
    grids: list[Grid] = []
    where: dict[str, tuple[int, int, int]] = {}  # block → (grid, row index, position)
    home: dict[str, tuple[int, int]] = {}  # home block → (grid, row index)
    for key in sorted(by_grid):
        rows = []
        for r in sorted(by_grid[key]):
            chain = [b.name for b in sorted(by_grid[key][r], key=lambda b: (b.position, b.col_block))]
            rows.append(chain)
        g = len(grids)
        grids.append(Grid(key, rows))
        for i, chain in enumerate(rows):
            for j, name in enumerate(chain):
                where[name] = (g, i, j)
            home[chain[-1]] = (g, i)
    # chain links
    link_weight: dict[int, float] = {}
    values = list(part.values)
    rest = []
    for v in values:
        if v.kind == "partial" and v.source in where and len(v.sinks) == 1 and v.sinks[0] in where:
            g, i, j = where[v.source]
            g2, i2, j2 = where[v.sinks[0]]
            if (g, i, j + 1) == (g2, i2, j2):
                link_weight[g] = min(link_weight.get(g, math.inf), v.bytes)
                continue
        rest.append(v)
    for g, grid in enumerate(grids):
        if any(len(r) > 1 for r in grid.rows):
            grid.chain_weight = link_weight.get(g, 0.0) if g in link_weight else 0.0
    # column values: one chain position, every row of the grid
    column_at: dict[tuple[int, int], Any] = {}
    leftovers = []
    for v in rest:
        if v.source == IO_OUTPUT or not v.sinks or any(s not in where for s in v.sinks):
            leftovers.append(v)
            continue
        g = where[v.sinks[0]][0]
        spots = {where[s] for s in v.sinks}
        positions = {j for gg, _, j in spots}
        if len(positions) == 1 and all(gg == g for gg, _, _ in spots):
            j = next(iter(positions))
            if spots == {(g, i, j) for i, row in enumerate(grids[g].rows) if j < len(row)}:
                if (g, j) not in column_at or column_at[g, j].bytes < v.bytes:
                    if (g, j) in column_at:
                        leftovers.append(column_at[g, j])
                    column_at[g, j] = v
                    continue
        leftovers.append(v)
    groups: dict[tuple, list] = {}
    for (g, j), v in column_at.items():
        if v.source == IO_INPUT:
            src = ("io", -1)
        elif v.source in home:
            src = ("grid", home[v.source][0])
        else:
            src = ("other", -1)
        groups.setdefault((g, src, v.bytes), []).append((j, v))
    columns = []
    for (g, (kind, sg), weight), members in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2])):
        per: dict[str, int] = {}
        for _, v in members:
            per[v.source] = per.get(v.source, 0) + 1
        columns.append(ColumnGroup(g, kind, sg, weight, len(members), max(per.values()), sorted(j for j, _ in members),
                                   sources={j: v.source for j, v in members}))
    # home links, outputs, forced
    hl: dict[tuple, list] = {}
    outs: dict[tuple, list] = {}
    forced = ignored = 0.0
    for v in leftovers:
        if v.source in home and v.sinks == (IO_OUTPUT,):
            outs.setdefault((home[v.source][0], v.bytes), []).append(v)
        elif v.source in home and len(v.sinks) == 1 and v.sinks[0] in home and v.sinks[0] != v.source:
            hl.setdefault((home[v.source][0], home[v.sinks[0]][0], v.bytes), []).append(v)
        elif v.source in (IO_INPUT,) or IO_OUTPUT in v.sinks:
            forced += v.bytes
        else:
            ignored += v.bytes
    # row classes: rows whose homes play the same roles
    roles: dict[str, set] = {}
    for (g, j), v in column_at.items():
        c = next(k for k, col in enumerate(columns) if col.grid == g and j in col.positions)
        if v.source in home:
            roles.setdefault(v.source, set()).add(("col", c))
    links = []
    for k, ((sg, tg, weight), members) in enumerate(sorted(hl.items())):
        for v in members:
            roles.setdefault(v.source, set()).add(("src", k))
            roles.setdefault(v.sinks[0], set()).add(("sink", k))
        out_deg: dict[str, int] = {}
        in_deg: dict[str, int] = {}
        for v in members:
            out_deg[v.source] = out_deg.get(v.source, 0) + 1
            in_deg[v.sinks[0]] = in_deg.get(v.sinks[0], 0) + 1
        links.append(HomeLink(sg, tg, weight, len(members), max(out_deg.values()), min(in_deg.values()), max(in_deg.values()),
                              pairs=[(v.source, v.sinks[0]) for v in members]))
    outputs = []
    for k, ((sg, weight), members) in enumerate(sorted(outs.items())):
        deg: dict[str, int] = {}
        for v in members:
            roles.setdefault(v.source, set()).add(("out", k))
            deg[v.source] = deg.get(v.source, 0) + 1
        outputs.append(Output(sg, weight, len(members), min(deg.values())))
    for g, grid in enumerate(grids):
        signature: dict[frozenset, int] = {}
        grid.row_class = []
        for chain in grid.rows:
            sig = frozenset(roles.get(chain[-1], set()))
            if sig not in signature:
                signature[sig] = len(signature)
                grid.classes.append([])
            grid.row_class.append(signature[sig])
            grid.classes[signature[sig]].append(len(grid.row_class) - 1)
    # classes each group's sources / sinks lie in
    for c, col in enumerate(columns):
        if col.source == "grid":
            grid = grids[col.source_grid]
            col.source_classes = sorted({grid.row_class[i] for i, chain in enumerate(grid.rows)
                                         if ("col", c) in roles.get(chain[-1], set())})
    for k, link in enumerate(links):
        src, sink = grids[link.src_grid], grids[link.sink_grid]
        link.src_classes = sorted({src.row_class[i] for i, ch in enumerate(src.rows) if ("src", k) in roles.get(ch[-1], set())})
        link.sink_classes = sorted({sink.row_class[i] for i, ch in enumerate(sink.rows) if ("sink", k) in roles.get(ch[-1], set())})
        # every home of a sink class receives ≥ per_sink_min values (homes of those classes all play the role)
    for k, out in enumerate(outputs):
        grid = grids[out.src_grid]
        out.src_classes = sorted({grid.row_class[i] for i, ch in enumerate(grid.rows) if ("out", k) in roles.get(ch[-1], set())})
    return Structure(grids, columns, links, outputs, forced, ignored)


# --------------------------------------------------------------------------- aggregation of a placement


def aggregate(problem: PumaPlacementProblem, st: Structure, placement: PumaPlacement, by_router: bool) -> dict[str, Any]:
    """Relaxation variables of a real placement: per unit (tile slot or router) and grid."""
    spec = problem.spec

    def unit(name: str):
        tile = placement.slots[name].tile
        return spec.router_of(tile) if by_router else tile

    units = sorted({unit(n) for n in placement.slots})
    index = {u: k for k, u in enumerate(units)}
    agg: dict[str, Any] = {"units": units, "grid": {}, "col": {}}
    for g, grid in enumerate(st.grids):
        for u in range(len(units)):
            agg["grid"][g, u] = {"n": 0, "pos": set(), "rows": set(), "e": [0] * len(grid.classes), "st": 0}
        for i, chain in enumerate(grid.rows):
            for j, name in enumerate(chain):
                cell = agg["grid"][g, index[unit(name)]]
                cell["n"] += 1
                cell["pos"].add(j)
                cell["rows"].add(i)
            agg["grid"][g, index[unit(chain[-1])]]["e"][grid.row_class[i]] += 1
            agg["grid"][g, index[unit(chain[0])]]["st"] += 1
    for c, col in enumerate(st.columns):
        for u in range(len(units)):
            agg["col"][c, u] = len(agg["grid"][col.grid, u]["pos"] & set(col.positions))
    return agg


def unit_counts(problem: PumaPlacementProblem, st: Structure, placement: PumaPlacement, by_router: bool) -> list[dict]:
    """Every unit's pattern quantities (see :func:`_unit_model`) for a real placement, with the savings and
    co-locations it actually has — a feasible point of both relaxations (used as their first columns)."""
    agg = aggregate(problem, st, placement, by_router)
    spec = problem.spec
    units = agg["units"]

    def unit_of(name: str):
        if name in problem.io_positions:
            tile = problem.io_positions[name]
            return ("io", spec.router_of(tile) if by_router else tile)
        tile = placement.slots[name].tile
        return spec.router_of(tile) if by_router else tile

    out = []
    for u, unit in enumerate(units):
        q: dict[tuple, int] = {("one",): 1}
        if by_router:
            q[("T",)] = len({s.tile for s in placement.slots.values() if spec.router_of(s.tile) == unit})
        for g, grid in enumerate(st.grids):
            cell = agg["grid"][g, u]
            q[("n", g)], q[("a", g)], q[("b", g)], q[("st", g)] = cell["n"], len(cell["pos"]), len(cell["rows"]), cell["st"]
            q[("y", g)] = int(cell["n"] > 0)
            for kk, e in enumerate(cell["e"]):
                q[("e", g, kk)] = e
        for c, col in enumerate(st.columns):
            q[("ac", c)] = agg["col"][c, u]
            saved = 0
            if col.source == "grid":
                grid = st.grids[col.grid]
                for j in col.positions:
                    read_here = any(unit_of(row[j]) == unit for row in grid.rows if j < len(row))
                    if read_here and unit_of(col.sources[j]) == unit:
                        saved += 1
            q[("s", c)] = saved
        for k, link in enumerate(st.links):
            q[("c", k)] = sum(1 for a, b in link.pairs if unit_of(a) == unit and unit_of(b) == unit)
        out.append({"unit": unit, "q": q})
    return out


# --------------------------------------------------------------------------- per-unit pattern model (pricing)


def _unit_model(st: Structure, cap_per_tile: int, max_tiles: int | None):
    """CP-SAT model of one unit's pattern (a tile slot when ``max_tiles`` is None, else a router with
    up to ``max_tiles`` tiles): the intra-unit constraints of the module docstring. Returns the model
    and the variable of every quantity key (those of :func:`unit_counts`) with its upper bound."""
    from ortools.sat.python import cp_model

    model = cp_model.CpModel()
    var: dict[tuple, Any] = {}
    ub: dict[tuple, int] = {}

    def new(key, hi):
        var[key] = model.NewIntVar(0, int(hi), str(key))
        ub[key] = int(hi)
        return var[key]

    var[("one",)] = model.NewConstant(1)
    ub[("one",)] = 1
    if max_tiles is None:
        capacity = cap_per_tile
    else:
        tiles = new(("T",), max_tiles)
        capacity = cap_per_tile * max_tiles
    cols_of = {g: [c for c, col in enumerate(st.columns) if col.grid == g] for g in range(len(st.grids))}
    loads = []
    for g, grid in enumerate(st.grids):
        R, J, size = len(grid.rows), grid.positions, grid.size
        n, a, b = new(("n", g), min(size, capacity)), new(("a", g), J), new(("b", g), R)
        s0 = new(("st", g), R)
        y = new(("y", g), 1)
        prod = model.NewIntVar(0, J * R, "")
        model.AddMultiplicationEquality(prod, [a, b])
        model.Add(n <= prod)
        model.Add(a <= n)
        model.Add(b <= n)
        model.Add(n >= y)
        model.Add(n <= min(size, capacity) * y)
        es = [new(("e", g, kk), len(cls)) for kk, cls in enumerate(grid.classes)]
        model.Add(sum(es) <= b)
        model.Add(s0 <= b)
        acs = [new(("ac", c), len(st.columns[c].positions)) for c in cols_of[g]]
        covered = sum(len(st.columns[c].positions) for c in cols_of[g])
        free = model.NewIntVar(0, J - covered, "")
        model.Add(a == sum(acs) + free)
        last = next((c for c in cols_of[g] if J - 1 in st.columns[c].positions), None)
        first = next((c for c in cols_of[g] if 0 in st.columns[c].positions), None)
        flags = []
        for count, group in ((sum(es), last), (s0, first)):
            has = model.NewBoolVar("")
            model.Add(count >= 1).OnlyEnforceIf(has)
            model.Add(count == 0).OnlyEnforceIf(has.Not())
            model.Add((var[("ac", group)] if group is not None else free) >= 1).OnlyEnforceIf(has)
            flags.append(has)
        if J >= 2 and first is not None and first == last:
            model.Add(var[("ac", first)] >= flags[0] + flags[1])
        loads.append(n)
    model.Add(sum(loads) <= (cap_per_tile if max_tiles is None else cap_per_tile * tiles))
    if max_tiles is not None:
        model.Add(tiles <= sum(loads))  # no empty tiles (harmless: tiles only count against K)
    for c, col in enumerate(st.columns):
        s = new(("s", c), len(col.positions))
        model.Add(s <= var[("ac", c)])
        if col.source == "grid":
            model.Add(s <= col.per_source * sum(var[("e", col.source_grid, kk)] for kk in col.source_classes))
        elif col.source == "io":
            model.Add(s == 0)
    for k, link in enumerate(st.links):
        cvar = new(("c", k), link.count)
        model.Add(cvar <= link.per_source * sum(var[("e", link.src_grid, kk)] for kk in link.src_classes))
        model.Add(cvar <= link.per_sink * sum(var[("e", link.sink_grid, kk)] for kk in link.sink_classes))
    return model, var, ub


# --------------------------------------------------------------------------- column generation


@dataclass
class _Master:
    """Restricted master LP of a pattern relaxation (solved through the facade's :func:`solve_lp`): rows by
    name, λ columns, fixed extra columns."""

    rows: dict[Any, int]
    sense: dict[Any, str]  # ">=", "<=", "="
    rhs: dict[Any, float]
    builder: Any = None
    row_of: dict[Any, Any] = field(default_factory=dict)

    def build(self, extra: list[tuple[float, float, dict[Any, float]]], penalty: float = 1e7) -> None:
        self.builder = ModelBuilder("puma-bound-master")
        for key in self.rows:
            r = self.rhs[key]
            s = self.sense[key]
            self.row_of[key] = self.builder.add_row(r if s in (">=", "=") else -math.inf,
                                                    r if s in ("<=", "=") else math.inf, "cover", str(key))
        for cost, upper, coefs in extra:
            self.add(cost, upper, coefs)
        # artificial columns keep the LP feasible whatever the columns (cost far above any real bound)
        for key in self.rows:
            if self.sense[key] in (">=", "="):
                self.add(penalty, math.inf, {key: 1.0})
            if self.sense[key] in ("<=", "="):
                self.add(penalty, math.inf, {key: -1.0})

    def add(self, cost: float, upper: float, coefs: dict[Any, float], lower: float = 0.0) -> None:
        self.builder.add_column(float(cost), float(lower), float(upper),
                                {self.row_of[k]: v for k, v in coefs.items() if v and k in self.rows})

    def solve(self, config: SolverConfig) -> tuple[float, dict[Any, float], SolveResult]:
        """LP value, row duals clamped to their valid signs (≥ rows ≥ 0, ≤ rows ≤ 0, so that every Lagrangian
        bound computed from them is valid whatever the LP's numerical noise; 0 when the LP stopped unsolved)
        and the solve's record."""
        lp = solve_lp(self.builder, config)
        value = lp.result.objective if lp.result.objective is not None else math.inf
        duals = {}
        for key, row in self.row_of.items():
            y = lp.duals.get(row, 0.0)
            if self.sense[key] == ">=":
                y = max(0.0, y)
            elif self.sense[key] == "<=":
                y = min(0.0, y)
            duals[key] = y
        return value, duals, lp.result


def _price(pricer: "_PricingMilp", cost: dict, rows: dict, duals: dict,
           config: SolverConfig) -> tuple[float, list[dict], SolveResult]:
    """min over patterns of cost − Σ dual × row coefficient: a valid lower bound on it and the improving
    pattern found (exact MILP, :class:`_PricingMilp`)."""
    f: dict[tuple, float] = dict(cost)
    for row, coefs in rows.items():
        y = duals.get(row, 0.0)
        if not y:
            continue
        for key, c in coefs.items():
            f[key] = f.get(key, 0.0) - y * c
    return pricer.price(f, config)


def _heuristic_columns(unit_model: tuple, f: dict[tuple, float], config: SolverConfig) -> tuple[list[dict], SolveResult]:
    """Improving patterns found fast by CP-SAT on ``unit_model`` (:func:`_unit_model`'s model and variables,
    built once per unit type; each call replaces its objective), no bound claimed from it."""
    from ortools.sat.python import cp_model

    model, var, _ = unit_model
    f = {k: v for k, v in f.items() if k in var and abs(v) > 1e-12}
    top = max((abs(v) for v in f.values()), default=1.0)
    scale = 1e6 / top
    model.Minimize(sum(int(round(v * scale)) * var[k] for k, v in f.items()))
    found: list[dict] = []

    class Collector(cp_model.CpSolverSolutionCallback):
        def on_solution_callback(self) -> None:
            q = {k: self.Value(x) for k, x in var.items()}
            if sum(v * q[k] for k, v in f.items()) < -1e-7 and len(found) < 40:
                found.append(q)

    result, _ = solve_cpsat(model, config.with_(backend="cpsat", threads=1), callback=Collector())
    return found, result


def _reduced_costs(cost: dict, rows: dict, duals: dict) -> dict[tuple, float]:
    f: dict[tuple, float] = dict(cost)
    for row, coefs in rows.items():
        y = duals.get(row, 0.0)
        if not y:
            continue
        for key, c in coefs.items():
            f[key] = f.get(key, 0.0) - y * c
    return f


class _PricingMilp:
    """The pattern model of :func:`_unit_model` as a HiGHS MILP with the isoperimetric constraint written
    exactly: per grid a one-hot choice of (positions a, rows b) — the LP relaxation is then the convex
    hull of each grid's (a, b, n ≤ a·b) points, which proves pricing optima fast. Built once per unit
    type; each pricing round only changes the objective."""

    def __init__(self, st: Structure, cap_per_tile: int, max_tiles: int | None) -> None:
        inf = math.inf
        cols_lo: list[float] = []
        cols_hi: list[float] = []
        integer: list[int] = []
        self.index: dict[tuple, int] = {}
        rows: list[tuple[float, float, list[tuple[int, float]]]] = []

        def var(key, lo, hi, is_int=True):
            k = len(cols_lo)
            cols_lo.append(float(lo))
            cols_hi.append(float(hi))
            integer.append(1 if is_int else 0)
            if key is not None:
                self.index[key] = k
            return k

        def row(lo, hi, entries):
            rows.append((float(lo), float(hi), [(i, float(v)) for i, v in entries if v]))

        one = var(("one",), 1, 1)
        capacity = cap_per_tile * (max_tiles or 1)
        tiles = var(("T",), 0, max_tiles) if max_tiles is not None else None
        cols_of = {g: [c for c, col in enumerate(st.columns) if col.grid == g] for g in range(len(st.grids))}
        loads = []
        for g, grid in enumerate(st.grids):
            R, J, size = len(grid.rows), grid.positions, grid.size
            top = min(size, capacity)
            n, a, b = var(("n", g), 0, top), var(("a", g), 0, J), var(("b", g), 0, R)
            s0, y = var(("st", g), 0, R), var(("y", g), 0, 1)
            pairs = [(aa, bb) for aa in range(1, J + 1) for bb in range(1, R + 1)]
            z = [var(None, 0, 1) for _ in pairs]
            row(0, 0, [(y, 1)] + [(zi, -1) for zi in z])  # y = Σ z (one pair, or none)
            row(0, 0, [(a, 1)] + [(zi, -aa) for zi, (aa, bb) in zip(z, pairs)])
            row(0, 0, [(b, 1)] + [(zi, -bb) for zi, (aa, bb) in zip(z, pairs)])
            row(-inf, 0, [(n, 1)] + [(zi, -min(aa * bb, top)) for zi, (aa, bb) in zip(z, pairs)])  # n ≤ a·b
            row(0, inf, [(n, 1)] + [(zi, -max(aa, bb)) for zi, (aa, bb) in zip(z, pairs)])  # a ≤ n, b ≤ n
            es = [var(("e", g, kk), 0, len(cls)) for kk, cls in enumerate(grid.classes)]
            row(-inf, 0, [(e, 1) for e in es] + [(b, -1)])
            row(-inf, 0, [(s0, 1), (b, -1)])
            acs = [var(("ac", c), 0, len(st.columns[c].positions)) for c in cols_of[g]]
            covered = sum(len(st.columns[c].positions) for c in cols_of[g])
            free = var(None, 0, J - covered)
            row(0, 0, [(a, 1), (free, -1)] + [(x, -1) for x in acs])
            last = next((c for c in cols_of[g] if J - 1 in st.columns[c].positions), None)
            first = next((c for c in cols_of[g] if 0 in st.columns[c].positions), None)
            flags = []
            for counts, group, hi in ((es, last, R), ([s0], first, R)):
                h = var(None, 0, 1)
                row(-inf, 0, [(x, 1) for x in counts] + [(h, -hi)])  # count ≤ R·h
                target = self.index[("ac", group)] if group is not None else free
                row(0, inf, [(target, 1), (h, -1)])  # h ⇒ the position is touched
                flags.append(h)
            if J >= 2 and first is not None and first == last:
                row(0, inf, [(self.index[("ac", first)], 1), (flags[0], -1), (flags[1], -1)])
            loads.append(n)
        if tiles is None:
            row(-inf, cap_per_tile, [(n, 1) for n in loads])
        else:
            row(-inf, 0, [(n, 1) for n in loads] + [(tiles, -cap_per_tile)])
            row(-inf, 0, [(tiles, 1)] + [(n, -1) for n in loads])
        for c, col in enumerate(st.columns):
            sv = var(("s", c), 0, len(col.positions))
            row(-inf, 0, [(sv, 1), (self.index[("ac", c)], -1)])
            if col.source == "grid":
                row(-inf, 0, [(sv, 1)] + [(self.index[("e", col.source_grid, kk)], -col.per_source) for kk in col.source_classes])
            elif col.source == "io":
                row(0, 0, [(sv, 1)])
        for k, link in enumerate(st.links):
            cv = var(("c", k), 0, link.count)
            row(-inf, 0, [(cv, 1)] + [(self.index[("e", link.src_grid, kk)], -link.per_source) for kk in link.src_classes])
            row(-inf, 0, [(cv, 1)] + [(self.index[("e", link.sink_grid, kk)], -link.per_sink) for kk in link.sink_classes])
        self.data = (cols_lo, cols_hi, integer, rows)
        self.builder = ModelBuilder("puma-bound-pricing")
        self.columns = self.add_to(self.builder)

    def add_to(self, m: ModelBuilder, unit: str = "") -> list[Any]:
        """This pattern model's variables and rows added to ``m`` (one more unit of a compact model);
        returns its variables in :attr:`index` order."""
        cols_lo, cols_hi, integer, rows = self.data
        columns = [m.add_column(0.0, lo, hi, {}, name=f"{unit}q{k}", integer=bool(i))
                   for k, (lo, hi, i) in enumerate(zip(cols_lo, cols_hi, integer))]
        for lo, hi, entries in rows:
            terms: dict[Any, float] = {}
            for i, v in entries:
                terms[columns[i]] = terms.get(columns[i], 0.0) + v
            m.add_row(lo, hi, "pattern", terms=terms)
        return columns

    def price(self, f: dict[tuple, float], config: SolverConfig) -> tuple[float, list[dict], SolveResult]:
        """min Σ f·q over the patterns: a valid lower bound, the improving pattern found, the solve's record
        (HiGHS through the facade, relative gap 1e-6, the work of ``config``)."""
        cost: dict[Any, float] = {}
        for key, v in f.items():
            if key in self.index:
                var = self.columns[self.index[key]]
                cost[var] = cost.get(var, 0.0) + v
        self.builder.set_objective(cost)
        solution = solve_milp(self.builder, config.with_(backend="highs", threads=1, rel_gap=1e-6), use_hints=False)
        result = solution.result
        bound = result.bound if result.bound is not None else -math.inf
        found = []
        if result.status.has_solution:
            q = {key: int(round(solution.values[self.columns[i]])) for key, i in self.index.items()}
            if sum(v * q.get(k, 0) for k, v in f.items()) < -1e-7:
                found.append(q)
        if not math.isfinite(bound):
            bound = -math.inf
        # integral data, the solver's tolerances: a margin keeps the bound valid
        return bound - 1e-6 * max(1.0, abs(bound)), found, result


def _value(coefs: dict, q: dict) -> float:
    return sum(c * q.get(k, 0) for k, c in coefs.items())


def _dp_cut(grid: Grid, cap: int, parts: int, alpha: float, beta: float) -> float:
    """min Σ_parts (α a + β b) over ≤ ``parts`` parts of ≤ ``cap`` blocks covering the grid, a part of n
    blocks touching a positions and b rows with a·b ≥ n (a ≤ J, b ≤ R): valid for every placement."""
    R, J, size = len(grid.rows), grid.positions, grid.size
    cap = min(cap, size)
    part_cost = [0.0] + [min(alpha * a + beta * math.ceil(n / a) for a in range(1, J + 1) if math.ceil(n / a) <= R)
                         for n in range(1, cap + 1)]
    import numpy as np

    best = np.full(size + 1, np.inf)
    best[0] = 0.0
    for _ in range(parts):
        nxt = best.copy()
        for n in range(1, cap + 1):
            np.minimum(nxt[n:], best[: size + 1 - n] + part_cost[n], out=nxt[n:])
        best = nxt
    return float(best[size])


def _covering_rows(st: Structure) -> tuple[dict, dict, dict]:
    """Rows shared by both relaxations: every block, row, column value, home and start covered."""
    rows, sense, rhs = {}, {}, {}

    def row(key, s, r, coefs):
        rows[key] = coefs
        sense[key] = s
        rhs[key] = float(r)

    for g, grid in enumerate(st.grids):
        row(("n", g), "=", grid.size, {("n", g): 1})
        row(("b", g), ">=", len(grid.rows), {("b", g): 1})
        row(("st", g), "=", len(grid.rows), {("st", g): 1})
        for kk, cls in enumerate(grid.classes):
            row(("e", g, kk), "=", len(cls), {("e", g, kk): 1})
    for c, col in enumerate(st.columns):
        row(("ac", c), ">=", len(col.positions), {("ac", c): 1})
        row(("scap", c), "<=", len(col.positions), {("s", c): 1})
    return rows, sense, rhs


@dataclass
class UnitType:
    """Units of one kind in a pattern relaxation: tile slots (``max_tiles`` None) or routers with up to
    ``max_tiles`` tiles, ``count`` of them, their pattern cost coefficients and the routers they stand for."""

    name: str
    max_tiles: int | None
    count: int
    cost: dict
    routers: tuple = ()


def _typed_bound(problem: PumaPlacementProblem, st: Structure, k_tiles: int, starts: list[PumaPlacement],
                 types: list[UnitType], constant: float, budget: Budget, evaluate: bool,
                 pool: list[tuple[str, dict]] | None = None, backstop_s: float | None = None) -> tuple[float, dict]:
    """Column generation over unit patterns: master LP min Σ cost·λ s.t. covering rows, Σ tiles·λ ≤ K,
    Σ_patterns of a type λ ≤ its count, isoperimetric (DP) cuts; columns found by CP-SAT, priced exactly per
    type by a HiGHS MILP; every solve through the facade, charged to ``budget`` (deterministic work).
    ``pool``: (type name, pattern) columns of an earlier run over the same rows, added first; the columns
    this run generates are appended to it. ``backstop_s``: the wall-clock backstop of every solve (default:
    the facade's backstop of this relaxation's whole budget); a solve it stops sets ``backstop_fired``.
    Returns the best Lagrangian bound (valid at every iteration, any duals) + ``constant``."""
    t0 = time.perf_counter()
    spent_before = budget.elapsed()
    cap = problem.spec.mvmus_per_tile
    rows, sense, rhs = _covering_rows(st)
    by_router = types[0].max_tiles is not None
    tiles_key = ("T",) if by_router else ("one",)
    rows["K"], sense["K"], rhs["K"] = {tiles_key: 1}, "<=", float(k_tiles)
    for k, link in enumerate(st.links):
        rows[("ccap", k)], sense[("ccap", k)], rhs[("ccap", k)] = {("c", k): 1}, "<=", float(link.count)
    part_cap = cap * max(t.max_tiles or 1 for t in types)
    parts = sum(t.count for t in types) if by_router else k_tiles
    for g, grid in enumerate(st.grids):
        for alpha, beta in ((1, 1), (1, 2), (2, 1), (1, 4), (4, 1)):
            key = ("dp", g, alpha, beta)
            rows[key], sense[key] = {("a", g): alpha, ("b", g): beta}, ">="
            rhs[key] = _dp_cut(grid, part_cap, parts, alpha, beta)
    for t in types:
        sense[("conv", t.name)], rhs[("conv", t.name)] = "<=", float(t.count)
    order = list(rows) + [("conv", t.name) for t in types]
    master = _Master({key: i for i, key in enumerate(order)}, sense, rhs)
    master.build([], penalty=_penalty(problem))

    def coefs_of(t: UnitType, q: dict) -> dict:
        out = {row: _value(c, q) for row, c in rows.items()}
        out[("conv", t.name)] = 1.0
        return out

    generated: list[tuple[str, dict]] = []

    def add(t: UnitType, q: dict, pin: bool = False, fresh: bool = True) -> None:
        master.add(_value(t.cost, q), 1.0 if pin else math.inf, coefs_of(t, q), 1.0 if pin else 0.0)
        if fresh and not pin:
            generated.append((t.name, q))

    type_of_router = {r: t for t in types for r in t.routers}
    pricers = {t.name: _PricingMilp(st, cap, t.max_tiles) for t in types}
    unit_models = {t.name: _unit_model(st, cap, t.max_tiles) for t in types}
    solved_once: set = set()

    def charge(record: SolveResult, config: SolverConfig, model: Any) -> None:
        """Charge one solve of a model built once here: its first solve at least ``MIN_SOLVE_WORK`` (building
        and loading it), every re-solve (new duals, new columns) its reported work, at least ``RESOLVE_MIN_WORK``."""
        budget.charge_solve(record, config, RESOLVE_MIN_WORK if model in solved_once else MIN_SOLVE_WORK)
        solved_once.add(model)
    for placement in starts:
        for unit in unit_counts(problem, st, placement, by_router):
            add(type_of_router[unit["unit"]] if by_router else types[0], unit["q"], evaluate, fresh=False)
    type_named = {t.name: t for t in types}
    for name, q in pool or []:
        if name in type_named:
            add(type_named[name], q, fresh=False)
    backstop = backstop_s
    if backstop is None and budget.total is not None:
        backstop = budget.config.with_budget(budget.total).wall_limit()

    def limited(work: float | None) -> SolverConfig:
        """``work`` units of deterministic work under the wall-clock ``backstop``: the facade's backstop of a
        share alone (20 × share + 60 s: 61 s for 0.05 units) is reached under load by solves whose work budget
        does not bound their time (a HiGHS root node beyond its node limit), and a solve the wall clock stops
        changes the bound. None: unlimited."""
        if work is None:
            return budget.config
        config = budget.config.with_budget(max(MIN_SOLVE_WORK, work))
        if backstop is None or not config.deterministic:
            return config
        return config.with_(work_limit=config.time_limit_s, time_limit_s=max(backstop, config.wall_limit() or 0.0))

    def master_solve() -> tuple[float, dict[Any, float]]:
        config = limited(budget.left())
        value, duals, record = master.solve(config)
        charge(record, config, "master")
        return value, duals

    def left_now() -> float:
        left = budget.left()
        return math.inf if left is None else left

    if evaluate:  # the relaxation's value at the starts' own aggregates (validity check)
        return master_solve()[0] + constant, {}
    best, iterations, lp, exact_every = -math.inf, 0, None, 0
    while True:
        iterations += 1
        lp, duals = master_solve()
        left = left_now()
        added = 0
        # fast columns first; the exact pricing (which proves the bound) when they run dry
        for t in types:
            f = _reduced_costs(t.cost, rows, duals)
            f[("one",)] = f.get(("one",), 0.0) - duals[("conv", t.name)]
            config = limited(min(1.0, max(0.05, left / (8 * len(types)))))
            columns, record = _heuristic_columns(unit_models[t.name], f, config)
            charge(record, config, ("heuristic", t.name))
            for q in columns:
                add(t, q)
                added += 1
        exact_every += 1
        if added and exact_every < 6 and left > 1.0:
            continue
        exact_every = 0
        lagrangian = sum(duals[r] * rhs[r] for r in rows)
        for t in types:
            config = limited(min(20.0, max(0.2, left / (2 * len(types)))))
            price, found, record = _price(pricers[t.name], t.cost, rows, duals, config)
            charge(record, config, ("pricing", t.name))
            lagrangian += t.count * min(0.0, price)
            for q in found:
                if _value(t.cost, q) - sum(duals[r] * v for r, v in coefs_of(t, q).items()) < -1e-7:
                    add(t, q)
                    added += 1
        best = max(best, lagrangian)
        if left_now() <= 0.5 or not added or lp - best <= 1e-4 * max(1.0, abs(lp)):
            break
    if pool is not None:
        pool.extend(generated)
    info = {"iterations": iterations, "lp": lp + constant, "lagrangian": best + constant, "models": len(solved_once)}
    if left_now() >= COMPACT_MIN_WORK:
        config = limited(budget.left())
        compact, record = _compact_bound(st, k_tiles, types, pricers, rows, sense, rhs, config)
        budget.charge_solve(record, config)
        info["compact"] = compact + constant
        info["compact_status"] = str(record.status)
        best = max(best, compact)
    info.update(work=budget.elapsed() - spent_before, seconds=time.perf_counter() - t0, backstop_fired=budget.backstop_fired)
    return max(0.0, best + constant), info


RESOLVE_MIN_WORK = MIN_SOLVE_WORK / 10  # a re-solve of a model the column generation built once: its reported
# work, at least this (the transformer's crossing relaxation made ~160 small re-solves reporting 1.6 units in all;
# charged 0.05 each they took 8.5 units and stopped its column generation early)

COMPACT_MIN_WORK = 10.0  # the whole-unit MILP runs only on this much work left: below it HiGHS's dual bound
# stayed under the column generation's LP on mlp_l4 (4.7 and 6.9 units: 11,796 and 2,144 bytes against
# 15,984 and 3,380); with 16 units the crossing bound rose from 3,380 to 4,016 bytes


def _compact_bound(st: Structure, k_tiles: int, types: list[UnitType], pricers: dict, rows: dict, sense: dict,
                   rhs: dict, config: SolverConfig) -> tuple[float, SolveResult]:
    """The pattern relaxation with whole units (the master with integral λ, written compactly): per type
    min(count, K) units — a unit holding blocks holds ≥ 1 tile and Σ tiles ≤ K — each a pattern (the rows of
    :class:`_PricingMilp`; the empty pattern is one), the covering, K, co-location and isoperimetric rows
    over the units' summed quantities, identical units ordered by load (symmetry breaking);
    min Σ_units cost·q. Every placement gives such units (its own patterns), so the MILP's dual bound —
    HiGHS through the facade, work of ``config`` — is a valid bound (margin for the tolerances); it is at
    least the LP the column generation solves once the MILP closes, and often well above it: the LP mixes
    fractions of patterns no set of whole units can realise."""
    m = ModelBuilder("puma-bound-compact")
    objective: dict[Any, float] = {}
    totals: dict[Any, dict[Any, float]] = {row: {} for row in rows}
    for t in types:
        pricer = pricers[t.name]
        previous = None
        for u in range(min(t.count, k_tiles)):
            columns = pricer.add_to(m, f"{t.name}.{u}.")
            q = {key: columns[i] for key, i in pricer.index.items()}
            for key, c in t.cost.items():
                if key in q and c:
                    objective[q[key]] = objective.get(q[key], 0.0) + c
            for row, coefs in rows.items():
                for key, c in coefs.items():
                    if key in q and c:
                        totals[row][q[key]] = totals[row].get(q[key], 0.0) + c
            load = {q[("n", g)]: 1.0 for g in range(len(st.grids))}
            if previous is not None:
                m.add_row(0.0, math.inf, "symmetry", terms={**previous, **{v: -1.0 for v in load}})
            previous = load
    for row, terms in totals.items():
        r = rhs[row]
        m.add_row(r if sense[row] in (">=", "=") else -math.inf, r if sense[row] in ("<=", "=") else math.inf,
                  "cover", str(row), terms=terms)
    m.set_objective(objective)
    solution = solve_milp(m, config.with_(backend="highs", threads=1, rel_gap=1e-6), use_hints=False)
    bound = solution.result.bound
    if bound is None or not math.isfinite(bound):
        return -math.inf, solution.result
    return bound - 1e-6 * max(1.0, abs(bound)), solution.result


def message_bound(problem: PumaPlacementProblem, st: Structure, k_tiles: int, start, work: float | Budget,
                  evaluate: bool = False, grain: float | None = None,
                  pool: list[tuple[str, dict]] | None = None, backstop_s: float | None = None) -> tuple[float, dict]:
    """Lower bound on message bytes (every message between two tiles, ≥ 1 router each), spending ``work``
    (deterministic work units, or a :class:`Budget`). With ``grain`` (bytes): the relaxation of only the
    message groups whose weight is a multiple of it — their bytes are then a whole number of grains in
    every placement — rounded up to whole grains (:func:`_whole_grains`); the other groups count 0. ``pool``,
    ``backstop_s``: see :func:`_typed_bound`."""
    cost: dict[tuple, float] = {}
    fixed = st.forced + sum(o.weight * o.count for o in st.outputs)  # exact: one message each
    constant = fixed

    def kept(weight: float) -> bool:
        return grain is None or _multiple(weight, grain)

    for g, grid in enumerate(st.grids):
        if grid.chain_weight > 0 and kept(grid.chain_weight):
            cost[("b", g)] = grid.chain_weight
            constant -= grid.chain_weight * len(grid.rows)
    for c, col in enumerate(st.columns):
        if col.source in ("io", "grid") and kept(col.weight):
            cost[("ac", c)] = col.weight
            cost[("s", c)] = -col.weight
    for k, link in enumerate(st.links):
        if kept(link.weight):
            cost[("c", k)] = -link.weight
            constant += link.weight * link.count
    types = [UnitType("tile", None, k_tiles, cost)]
    value, info = _typed_bound(problem, st, k_tiles, _starts(start, k_tiles), types, constant, _budget(work), evaluate,
                               pool, backstop_s)
    if grain is None:
        return value, info
    info.update(grain=grain, relaxation=value)
    return _whole_grains(value, fixed, grain), info


def message_grain(st: Structure) -> tuple[float | None, bool]:
    """The message weight (bytes) carrying the most traffic in the message relaxation's groups, when a whole
    number ≥ 2, and whether every group's weight is a multiple of it (then one relaxation, rounded, bounds
    all messages; else the rounded one drops the other groups)."""
    traffic: dict[float, float] = {}
    weights = [(grid.chain_weight, grid.chain_weight * grid.size) for grid in st.grids if grid.chain_weight > 0]
    weights += [(col.weight, col.weight * col.count) for col in st.columns if col.source in ("io", "grid")]
    weights += [(link.weight, link.weight * link.count) for link in st.links]
    for weight, total in weights:
        traffic[float(weight)] = traffic.get(float(weight), 0.0) + total
    if not traffic:
        return None, True
    grain = max(sorted(traffic), key=lambda w: traffic[w])
    if grain < 2 or not grain.is_integer():
        return None, True
    return grain, all(_multiple(w, grain) for w in traffic)


def _multiple(weight: float, grain: float) -> bool:
    return float(weight).is_integer() and int(weight) % int(grain) == 0


def _whole_grains(value: float, fixed: float, grain: float) -> float:
    """A bound ``value`` = ``fixed`` + a bound on bytes that are a whole number ≥ 0 of ``grain``-byte messages
    in every placement, rounded up to the next whole number of them (a margin of 1e-6 grain against the
    LP's rounding noise)."""
    return fixed + grain * max(0, math.ceil((value - fixed) / grain - 1e-6))


def crossing_bound(problem: PumaPlacementProblem, st: Structure, k_tiles: int, start, work: float | Budget,
                   evaluate: bool = False, backstop_s: float | None = None) -> tuple[float, dict]:
    """Lower bound on router-crossing bytes: the same relaxation with routers as units (a message leaving
    a router crosses ≥ 1 more link; from the input router or to the output router exactly the manhattan
    distance), routers grouped by their compute tiles and distances to the I/O routers."""
    spec = problem.spec
    routers = sorted({spec.router_of(p) for p in problem.compute_positions})
    tiles_on = {r: sum(1 for p in problem.compute_positions if spec.router_of(p) == r) for r in routers}
    io_in = spec.router_of(problem.io_positions.get(IO_INPUT, problem.compute_positions[0]))
    io_out = spec.router_of(problem.io_positions.get(IO_OUTPUT, problem.compute_positions[0]))

    def man(a, b):
        return abs(a[0] - b[0]) + abs(a[1] - b[1])

    # routers of one kind are interchangeable in the relaxation: the I/O routers, the others (as if at
    # distance 1 from the I/O routers — a lower bound on their distance; fewer kinds price faster)
    groups: dict[tuple, list] = {}
    for r in routers:
        groups.setdefault((tiles_on[r], min(1, man(io_in, r)), min(1, man(r, io_out))), []).append(r)
    constant = 0.0
    base: dict[tuple, float] = {}
    for g, grid in enumerate(st.grids):
        if grid.chain_weight > 0:
            base[("b", g)] = grid.chain_weight
            constant -= grid.chain_weight * len(grid.rows)
    for c, col in enumerate(st.columns):
        if col.source == "grid":
            base[("ac", c)] = col.weight
            base[("s", c)] = -col.weight
    for k, link in enumerate(st.links):
        base[("c", k)] = -link.weight
        constant += link.weight * link.count
    types = []
    for (tiles, d_in, d_out), members in sorted(groups.items()):
        cost = dict(base)
        for c, col in enumerate(st.columns):
            if col.source == "io" and d_in:
                cost[("ac", c)] = col.weight * d_in
        for out in st.outputs:
            for kk in out.src_classes:
                key = ("e", out.src_grid, kk)
                cost[key] = cost.get(key, 0.0) + out.weight * out.per_source_min * d_out
        types.append(UnitType(f"router{tiles}/{d_in}/{d_out}", tiles, len(members), cost, tuple(members)))
    return _typed_bound(problem, st, k_tiles, _starts(start, k_tiles), types, constant, _budget(work), evaluate,
                        backstop_s=backstop_s)


def _budget(work: float | Budget) -> Budget:
    """``work`` as a budget: a number is that many deterministic work units (HiGHS and CP-SAT, one thread)."""
    return work if isinstance(work, Budget) else Budget(SolverConfig(backend="highs", time_limit_s=work, threads=1))


def _penalty(problem: PumaPlacementProblem) -> float:
    """Cost of an artificial column: more than moving every byte across the whole node."""
    spec = problem.spec
    return 2.0 * (1 + spec.noc.router_rows + spec.noc.router_cols) * max(v.bytes for v in problem.partition.values)


def _starts(start, k_tiles: int) -> list[PumaPlacement]:
    """Known placements on ≤ K tiles whose aggregates seed the column pool (the first is required)."""
    starts = start if isinstance(start, list) else [start]
    return [p for p in starts if p is not None and len({s.tile for s in p.slots.values()}) <= k_tiles]


# --------------------------------------------------------------------------- the certified bound


@dataclass
class Bound:
    value: float  # certified lower bound on hop-weighted bytes (placements on ≤ K tiles)
    messages: float  # bound on message bytes
    crossings: float  # bound on router-crossing bytes
    k_tiles: int
    seconds: float
    ignored_bytes: float  # traffic the relaxations leave out
    details: dict = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def lower_bound(problem: PumaPlacementProblem, work: float, start: PumaPlacement | list[PumaPlacement],
                k_tiles: int | None = None, config: SolverConfig | None = None) -> Bound:
    """Certified lower bound on the hop-weighted bytes of every placement on at most ``k_tiles`` tiles
    (default: the problem's minimum + ``extra_tiles``): message bound + crossing bound, never below
    :func:`io_floor`, rounded down to a whole byte. The crossing bound runs first on 85 % of ``work`` (its
    whole-unit MILP is what lifts it), the message bound on what is left (its column generation converges
    quickly; the whole-unit MILP runs only with ``COMPACT_MIN_WORK`` more), rounded up to whole messages
    (module docstring).
    ``work`` is deterministic work (:mod:`solvermap.formulations.strategy`), so the bound — which decides
    whether a placement is reported optimal — does not depend on machine load; ``config`` gives the seed
    and the deterministic switch. ``start`` (valid placements; those on ≤ K tiles are used) seeds the columns."""
    t0 = time.perf_counter()
    k = k_tiles or min(problem.min_tiles() + problem.extra_tiles, len(problem.compute_positions))
    st = structure(problem)
    floor = io_floor(problem)
    if not _starts(start, k):
        return Bound(floor, 0.0, 0.0, k, 0.0, st.ignored, {"skipped": "no start placement on at most K tiles",
                                                          "io_floor": floor})
    base = (config or SolverConfig()).with_(backend="highs", threads=1).with_budget(work)
    budget = Budget(base)
    backstop = base.wall_limit()  # every solve's: the facade's backstop of the whole bound's work
    c_value, c_info = crossing_bound(problem, st, k, start, Budget(base.with_budget(0.85 * work)), backstop_s=backstop)
    budget.charge(c_info.get("work", 0.0))
    grain, every = message_grain(st)
    pool: list[tuple[str, dict]] = []
    m_value, m_info = message_bound(problem, st, k, start, Budget(base.with_budget(max(0.5, budget.left()))),
                                    grain=grain if every else None, pool=pool, backstop_s=backstop)
    if grain is not None and not every:  # the groups of other weights dropped: a second relaxation, rounded,
        budget.charge(m_info.get("work", 0.0))  # warm-started with the first one's columns
        whole, w_info = message_bound(problem, st, k, start, Budget(base.with_budget(max(0.5, budget.left()))),
                                      grain=grain, pool=pool, backstop_s=backstop)
        m_info["whole_messages"] = {"value": whole, **w_info}
        m_value = max(m_value, whole)
        m_info["backstop_fired"] = bool(m_info.get("backstop_fired") or w_info.get("backstop_fired"))
    value = float(math.floor(max(m_value + c_value, floor) + 1e-6))
    fired = bool(m_info.get("backstop_fired") or c_info.get("backstop_fired"))
    return Bound(value, float(m_value), float(c_value), k, time.perf_counter() - t0, st.ignored,
                 {"messages": m_info, "crossings": c_info, "io_floor": floor, "backstop_fired": fired})


def io_floor(problem: PumaPlacementProblem) -> float:
    """Bytes of every value from or to an I/O tile: the I/O tiles hold no block, so each such value is at
    least one message of ≥ 1 router. Valid with no solve at all; it keeps the bound above zero on models
    whose relaxations the work budget leaves unconverged (their Lagrangian bounds are then negative)."""
    return float(sum(v.bytes for v in problem.partition.values if v.source == IO_INPUT or IO_OUTPUT in v.sinks))
