"""Network design-space study (seed 004 §3.3.4, L372–449, Fig 3.16): static / hybrid / dynamic networks
on pipelined and time-scheduled CGRAs over the 13 Table 3.1 apps.

For every app and parallelization ``par`` ∈ {default, 2 × default} (capped by the app's limit; the seed
picks "the parallelization that fits each network", L445), the app is partitioned and merged once per
PB I/O variant (static ports; router ports +2, assumption NT14), placed once per CGRA class (the shared
placement model, CP-SAT warm-started from annealing), then for every network design: split (ILP vs the
L320 greedy rule), route (MCF ILP vs greedy Steiner / XY), VC allocation (ILP vs greedy colouring; bound
= most distinct paths on one link; the per-path variant beside it), and the NoC co-simulation of the
real and of the ideal network (zero latency, unlimited bandwidth, same buffering), plus area and energy
(Eq 3.1/3.2). Per (app, design) the par with the fewest cycles among those that map without deadlock and stay
within 10 % of their ideal network is kept (the fastest par that maps, if none does; ``best_par``).

Metrics (L372–400): perf = 1 / cycles, perf/area = perf / network area, perf/W = perf / network power;
per app normalised to the worst design of that CGRA class, geomean over apps; a design point more than
10 % slower than the ideal network on the same mapping is dropped (L398) before a design's par is chosen.
The Fig 3.16 summary (best hybrid / static per metric among kept designs) is written beside the seed's
numbers; sensitivity.csv gives it under other readings of L398/L400/L449 and normalised to the seed's named
designs, ceiling.csv the perf ratio the ideal network would reach, hybrid_vs_static.csv the PBs, hops and power behind
the perf/W ordering (L447) (``sensitivity``, ``ceiling``, ``hybrid_vs_static``).

Reductions (documented, for 2 shared cores): 13 designs rather than the seed's full grid (which the seed
does not list), pars {default, 2x}, the 16×8 array (18×8 mesh) rather than 14×14, solver time limits of
10 s, simulation window 1024 firings of the busiest unit (window scaling as in the dataflow simulator).

    nice .venv/bin/python -m solvermap.studies.network_dse.run [--apps a,b] [--time-limit 10] [--out DIR]

Rows are appended to ``runs.csv`` as they finish (a rerun skips finished rows); ``--cache`` keeps the
partition/merge solves as JSON (``SolveCache``, never pickles; default runs/network_dse_cache). Writes
runs.csv (every run), chosen.csv (the par kept per app and design, normalised metrics, filter), summary.csv
(geomeans per design, VCs), fig316.csv (ours beside the seed), vcs.csv (VCs per app and design),
solver_vs_baseline.csv, sensitivity.csv, ceiling.csv, hybrid_vs_static.csv, network_dse.png.
``runs.csv``'s ``backstop_fired`` names the decisions of a row whose solve the wall-clock backstop stopped
(``failed-step``: the step that failed); empty, every solve of the row ended on its deterministic work budget,
so the row repeats on any machine load.

Seed scale (``--scale seed``, issue 28; default output ``results_seed/``; without the flag nothing above
changes):

- array NT15: 14×14 end-point PBs (L400) in the presets' 1:1 PCU/PMU checkerboard (L251, assumption A1),
  i.e. 98 PCUs and 98 PMUs; the DAGs sit in one column on each side (L489, as NT1 and A8), 14 per side, so the
  mesh is 14×16. The seed gives no PCU/PMU counts for its 14×14 array (digest §0). Partition and merge run
  against this array (the cache keys on each decision's problem, so the two arrays' entries never mix).
- designs: the Table 3.2 grid (L388–396), per CGRA class, ``SEED_GRID``:
  S × x ∈ {1, 2, 3, 4} × {db, cd}: flow control and static bandwidth are the static axes (L304–310, Fig 3.14,
  L417–419); S-x1 and S-x2 are named (L443–445), x3 is the static peer of the 3× hybrid (L435, L447 compares
  hybrids with "the corresponding pure static networks"), x4 the top of the bandwidth sweep ("linear
  performance, superlinear area", L417; NT5 calibrates S-x4 at ~21 % of the array, the top of the 10–20 %
  of L398); cd is studied on switches only (L304–306, L419).
  H × x ∈ {1, 2, 3} × v ∈ {2, 4} × f ∈ {128, 256, 512} × b ∈ {3, 6} (flow control db): hybrids with 2× and 3×
  static bandwidth (L435) and 1× (the S-x1 peer); v2 is what the best hybrids need, v4 what the pure dynamic
  network needs (L435), more VCs add little (L433); f512 is one flit per 512-bit vector (L400), narrower flits
  trade bandwidth for area (L312, L437), 128 is the preset's (NT13), 256 between; b3 is the seed's
  "just large enough" (L312), b6 the doubled depth whose area and energy L366 charges (the seed gives no
  second value: assumption NT16).
  D × x0 × v ∈ {2, 4} × f ∈ {128, 256, 512} × b ∈ {3, 6}: D-x0-v4-f512 is named (L445), v2 is the count
  too few for it (L433–435).
  That is 8 + 36 + 12 = 56 designs per class, 112 per app and par; labels are ``NetworkDesign.label()``
  (e.g. ``H-x2-v2-f128-b3-db``). split, route and VC depend on the network type, x#, the scalar links and
  v# only (not on f#, b# or the flow control), so designs that agree on those share one solve and are each
  simulated on their own (``solved_with`` names the design whose solve a row reuses; solver_vs_baseline.csv
  counts every solve once).
- ``--normalise worst`` (default): per app to the worst configuration of its CGRA class, geomean over apps
  (L400), as above; ``--normalise LABEL`` divides by that design's metric instead (apps where it does not
  map drop out of the geomeans).
- ``--window-check``: every row is simulated at ``--window`` W and again at 2W (same solves) into
  ``runs_2w.csv``; ``window_check.csv`` gives each Fig 3.16 ratio at W and 2W and the relative change over the
  rows solved alike at both (``same_solves``; ``window_left_out.csv`` lists the others); W is long enough when
  no ratio moves by more than 2 %.
- window: 4096 firings (``--window`` sets another). The window check of a two-app pilot (dotproduct, tpchq6)
  at 1024 moved the perf ratios by 6 %: the congested dynamic designs, which are the per-app worst, gain 6–7 %
  cycles from 1024 to 2048 firings, and the gain halves with each doubling (below 2 % from 4096 to 8192).
- ``--par-factors``: pars = factor × the app's default par, capped by ``PAR_LIMIT`` (``--par-cap N``: by N
  instead, within the app's own par range; for experiments beyond the study's pars); default 1,2, and 1,2,4 at
  seed scale, where the seed lets each network take the parallelization that fits it (L445: "low-bandwidth
  networks perform best with small unrolling factors"; L443: "more bandwidth permits a higher parallelization
  factor"). A gemm pilot at seed scale (7 named designs, pars 4/8/16, study README) shows what two pars cut
  off: on the time-scheduled CGRA every static and hybrid design runs 4× faster at par 16 than at par 4 with
  under 1 % overhead, while D-x0-v2-f128-b3, the app's worst, maps only at par 4;
  ``--designs L1,L2``: only these designs of the scale (a subset for a window check or a split run).
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import math
import time
import traceback
from pathlib import Path

import pandas as pd

from solvermap.errors import SolvermapError
from solvermap.formulations import vc_allocation as vc_model
from solvermap.formulations.solver import SolverConfig
from solvermap.hardware.targets import load_target
from solvermap.ir.workloads import build
from solvermap.ir.workloads import info as workload_info
from solvermap.mappers.pipeline import Context
from solvermap.mappers.plasticine import PIPELINE
from solvermap.mappers.plasticine import network as net
from solvermap.search.cache import SolveCache

HERE = Path(__file__).parent
README = HERE.parents[1] / "README.md"
BEGIN, END = "<!-- network-fig316:begin (written by studies/network_dse/run.py) -->", "<!-- network-fig316:end -->"
SEED_README = HERE / "README.md"  # the seed-scale block: written once every row of the scale is in
SEED_BEGIN = "<!-- network-fig316-seed:begin (written by studies/network_dse/run.py) -->"
SEED_END = "<!-- network-fig316-seed:end -->"
APPS = ["dotproduct", "outerproduct", "blackscholes", "tpchq6", "lattice", "gda", "gemm", "kmeans", "logreg",
        "sgd", "lstm", "gru", "lenet"]
PAR_LIMIT = {"dotproduct": 16, "outerproduct": 8, "blackscholes": 4, "tpchq6": 4, "lattice": 3, "gda": 8,
             "gemm": 16, "kmeans": 8, "logreg": 8, "sgd": 4, "lstm": 8, "gru": 8, "lenet": 8}

# (label, execution, preset, overrides); labels follow Table 3.2 (L388–396)
PIPELINED = [
    ("S-x1-db", "static", {"network.static.vector_links": 1}),
    ("S-x2-db", "static", {"network.static.vector_links": 2}),
    ("S-x3-db", "static", {"network.static.vector_links": 3}),
    ("S-x2-cd", "static", {"network.static.vector_links": 2, "network.static.flow_control": "cd"}),
    ("H-x1-v2-f128", "hybrid", {"network.static.vector_links": 1}),
    ("H-x2-v2-f128", "hybrid", {"network.static.vector_links": 2}),
    ("H-x3-v2-f128", "hybrid", {"network.static.vector_links": 3}),
    ("H-x2-v4-f512", "hybrid", {"network.static.vector_links": 2, "network.dynamic.vcs": 4,
                                "network.dynamic.flit_bits": 512}),
    ("D-x0-v4-f512", "dynamic", {}),
]
SCHEDULED = [
    ("S-x1-db", "static", {"network.static.vector_links": 1}),
    ("S-x2-db", "static", {"network.static.vector_links": 2}),
    ("H-x1-v2-f128", "hybrid", {"network.static.vector_links": 1}),
    ("H-x2-v2-f128", "hybrid", {"network.static.vector_links": 2}),
]
DESIGNS = [(label, "pipelined", preset, o) for label, preset, o in PIPELINED] + \
          [(label, "time_scheduled", preset, o) for label, preset, o in SCHEDULED]
SEED_FIG316 = [  # L449 (Fig 3.16): relative to the worst configuration, among designs with < 10 % overhead
    {"cgra": "pipelined", "network": "hybrid", "perf": 6.4, "perf_per_w": 2.3, "perf_per_area": 6.9},
    {"cgra": "pipelined", "network": "static", "perf": 7.0, "perf_per_w": 1.2, "perf_per_area": 6.3},
    {"cgra": "time_scheduled", "network": "hybrid", "perf": 8.6, "perf_per_w": 2.2, "perf_per_area": None},
    {"cgra": "time_scheduled", "network": "static", "perf": 8.6, "perf_per_w": None, "perf_per_area": 2.6},
]

SEED_ARRAY = {"grid.columns": 14, "grid.rows": 14, "pcu.count": 98, "pmu.count": 98, "dag.count": 28}  # NT15, L400
SEED_GRID = {  # Table 3.2 axes at seed scale; the module docstring gives each value's seed line
    "static": {"x": (1, 2, 3, 4), "flow_control": ("db", "cd")},
    "hybrid": {"x": (1, 2, 3), "vcs": (2, 4), "flit_bits": (128, 256, 512), "buffers_per_vc": (3, 6)},
    "dynamic": {"vcs": (2, 4), "flit_bits": (128, 256, 512), "buffers_per_vc": (3, 6)},
}
SEED_NAMED = ["S-x1-db", "S-x2-db", "D-x0-v4-f512-b3", "H-x2-v2-f128-b3-db", "H-x3-v2-f128-b3-db"]  # L435, L443-445
WINDOW_TOLERANCE = 0.02  # a window is long enough when doubling it moves no Fig 3.16 ratio by more than this


@dataclasses.dataclass(frozen=True)
class Scale:
    """What one study scale runs: the array, the designs, and whether designs share split/route/VC solves."""

    name: str
    array: dict
    designs: list  # (label, execution, preset, overrides)
    share_solves: bool
    out: Path
    window: int  # simulation window: firings of the busiest unit
    par_factors: tuple[int, ...] = (1, 2)  # pars = factor x the app's default par, capped by PAR_LIMIT
    par_cap: int | None = None  # --par-cap: this cap instead of PAR_LIMIT (within the app's own limit)

    @property
    def tag(self) -> str:
        """The array's name in cache and memo keys: empty on the presets' 16x8 array."""
        return f"-{self.array['grid.columns']}x{self.array['grid.rows']}" if self.array else ""


def seed_grid() -> list[tuple[str, str, dict]]:
    """The SEED_GRID designs as (label, preset, overrides), labelled by the spec itself (Table 3.2 naming)."""
    out = []
    for preset, axes in SEED_GRID.items():
        for values in itertools.product(*axes.values()):
            chosen = dict(zip(axes, values))
            overrides = {}
            if "x" in chosen:
                overrides["network.static.vector_links"] = chosen["x"]
            if "flow_control" in chosen:
                overrides["network.static.flow_control"] = chosen["flow_control"]
            for key in ("vcs", "flit_bits", "buffers_per_vc"):
                if key in chosen:
                    overrides[f"network.dynamic.{key}"] = chosen[key]
            label = spec_for(preset, overrides, "pipelined", SEED_ARRAY).network.label()
            out.append((label, preset, overrides))
    return out


def scale_of(name: str) -> Scale:
    if name == "default":
        return Scale("default", {}, DESIGNS, False, HERE / "results", 1024)
    grid = seed_grid()
    designs = [(label, execution, preset, o) for execution in ("pipelined", "time_scheduled")
               for label, preset, o in grid]
    return Scale("seed", SEED_ARRAY, designs, True, HERE / "results_seed", 4096, (1, 2, 4))


COLUMNS = [  # one fixed order for every appended row, whatever the row's outcome
    'app', 'par', 'design', 'execution', 'network', 'place_obj', 'place_bound', 'place_baseline',
    'place_source', 'split_s', 'split_status', 'split_obj', 'split_bound', 'split_baseline',
    'split_baseline_name', 'split_source', 'split_check', 'route_s', 'route_status', 'route_obj',
    'route_bound', 'route_baseline', 'route_baseline_name', 'route_source', 'route_check', 'vc_s',
    'vc_status', 'vc_obj', 'vc_bound', 'vc_baseline', 'vc_baseline_name', 'vc_source', 'vc_check', 'vcs',
    'dynamic_paths', 'vcs_per_path', 'vc_certificate_paths', 'static_links', 'cycles', 'ideal_cycles',
    'overhead', 'deadlock', 'network_area_mm2', 'network_energy_j', 'network_power_w', 'static_hops',
    'dynamic_hops', 'hops', 'pbs_used', 'max_dynamic_link_utilization', 'backstop_fired', 'status', 'seconds',
    'error',
]
SHARED_COLUMNS = COLUMNS + ['solved_with']  # seed scale: the design whose split/route/VC solve a row reuses
SIM_COLUMNS = {  # row column -> key of the simulation's result (mappers/plasticine/network.simulate_mapping)
    "cycles": "cycles", "ideal_cycles": "ideal_cycles", "overhead": "network_overhead", "deadlock": "deadlock",
    "network_area_mm2": "network_area_mm2", "network_energy_j": "network_energy_j",
    "network_power_w": "network_power_w", "static_hops": "static_hops", "dynamic_hops": "dynamic_hops",
    "hops": "hops", "max_dynamic_link_utilization": "max_dynamic_link_utilization",
}


def spec_for(preset: str, overrides: dict, execution: str, array: dict | None = None):
    return load_target(f"plasticine-{preset}", {**(array or {}), **overrides, "network.execution": execution})


def pars(app: str, factors: tuple[int, ...] = (1, 2), cap: int | None = None) -> list[int]:
    """factor × the app's default par for each factor, capped by ``PAR_LIMIT`` (or by ``cap``, itself capped
    by the app's own limit: the workload's ``par`` range)."""
    default = int(build(app, "plasticine", {}).params.get("par", 1))
    limit = PAR_LIMIT[app] if cap is None else min(cap, int(workload_info(app, "plasticine").specs["par"].high))
    return sorted({min(limit, f * default) if f > 1 else default for f in factors})


def checked(parser: argparse.ArgumentParser, args: argparse.Namespace) -> tuple[Scale, tuple[int, ...], str | None]:
    """The scale (its designs cut to ``--designs``, its window set by ``--window``), par factors and normalisation
    reference of the command line; a bad flag exits 2 naming it."""
    unknown = [a for a in args.apps.split(",") if a not in PAR_LIMIT]
    if unknown:
        parser.error(f"--apps: unknown app {unknown[0]!r}; choose from {', '.join(APPS)}")
    scale = scale_of(args.scale)
    factors = scale.par_factors
    if args.par_factors is not None:
        try:
            factors = tuple(int(f) for f in args.par_factors.split(","))
        except ValueError:
            factors = ()
        if not factors or min(factors) < 1:
            parser.error(f"--par-factors: {args.par_factors!r} is not a comma-separated list of integers >= 1")
    if args.par_cap is not None:
        if args.par_cap < 1:
            parser.error(f"--par-cap: {args.par_cap} is not a positive parallelization factor")
        scale = dataclasses.replace(scale, par_cap=args.par_cap)
    if args.window is not None and args.window < 1:
        parser.error(f"--window: {args.window} is not a positive number of firings")
    if args.window is not None:
        scale = dataclasses.replace(scale, window=args.window)
    if args.designs:
        wanted = args.designs.split(",")
        missing = [label for label in wanted if label not in {label for label, *_ in scale.designs}]
        if missing:
            parser.error(f"--designs: {missing[0]!r} is not a design of --scale {scale.name}")
        scale = dataclasses.replace(scale, designs=[d for d in scale.designs if d[0] in wanted])
    reference = None if args.normalise == "worst" else args.normalise
    if reference is not None and reference not in {label for label, *_ in scale.designs}:
        parser.error(f"--normalise: {reference!r} is not a design of --scale {scale.name}")
    return scale, factors, reference


def solve_key(spec) -> tuple:
    """What split, route and VC allocation read of a design: type, static tracks, VCs (not f#, b#, flow control)."""
    n = spec.network
    return (n.type, n.static.vector_links if n.has_static else 0, n.static.scalar_links if n.has_static else 0,
            n.dynamic.vcs if n.has_dynamic else 0)


def io_variant(preset: str) -> str:
    return "static-ports" if preset == "static" else "router-ports"


_MAPPED: dict[tuple, object] = {}


def mapped(app: str, par: int, io: str, cache: Path, config: SolverConfig, array: dict | None = None, tag: str = ""):
    """Partition + merge: (workload, vbgraph, merge, decisions the wall-clock backstop stopped) or an error string.

    Kept for this process in memory and across runs in ``cache`` (the search's :class:`SolveCache`: JSON
    entries keyed by the decision's problem, code and solver config, never pickles; a solve the backstop
    stopped is not stored, so another run solves it again)."""
    memo = (app, par, io, tag, repr(sorted((array or {}).items())), str(cache), config.model_dump_json())
    if memo in _MAPPED:
        return _MAPPED[memo]
    spec = load_target("plasticine-static" if io == "static-ports" else "plasticine-hybrid", array or {})
    workload = build(app, "plasticine", {"par": par})
    ctx = Context(workload=workload, target=spec, solver=config, solve_cache=SolveCache(cache, neighbours=0))
    try:
        records = PIPELINE.run(ctx, upto="merge").records
        result = (workload, ctx.state["vbgraph"], ctx.state["merge"], fired(records))
    except SolvermapError as exc:
        result = f"{type(exc).__name__}: {exc}"[:300]
    _MAPPED[memo] = result
    return result


def fired(records) -> list[str]:
    """The decisions among ``records`` whose solve the wall-clock backstop stopped (their result depends on load)."""
    return [rec.decision for rec in records if rec.solver is not None and rec.solver.backstop_fired]


def place(workload, vbgraph, merge, spec, config: SolverConfig) -> dict:
    ctx = Context(workload=workload, target=spec, solver=config, options={"place": {"moves_per_item": 200}})
    ctx.state.update({"vbgraph": vbgraph, "merge": merge})
    record = net.place_step(ctx)
    return {"state": {k: ctx.state[k] for k in ("vbgraph", "merge", "network.view", "place", "place.problem")},
            "record": record}


def run_design(workload, placed: dict, spec, config: SolverConfig, window: int) -> tuple[dict, Context]:
    """Split, route and VC allocation of one design on a placement, simulated at ``window``: (row, solved context)."""
    ctx = Context(workload=workload, target=spec, solver=config,
                  options={"vc": {"sim_window": window}})
    ctx.state.update(placed["state"])
    # the view's activations depend on the CGRA class only, so it is shared by the designs of one class
    row: dict = {}
    place_rec = placed["record"]
    row.update(place_obj=place_rec.solver.objective, place_bound=place_rec.solver.bound,
               place_baseline=place_rec.baseline.objective if place_rec.baseline else None,
               place_source=place_rec.solution_source)
    records = [place_rec]
    for step in (net.split_step, net.route_step, net.vc_step):
        start = time.perf_counter()
        rec = step(ctx)
        records.append(rec)
        row[f"{rec.decision}_s"] = round(time.perf_counter() - start, 2)
        row[f"{rec.decision}_status"] = str(rec.solver.status)
        row[f"{rec.decision}_obj"] = rec.solver.objective
        row[f"{rec.decision}_bound"] = rec.solver.bound
        row[f"{rec.decision}_baseline"] = rec.baseline.objective if rec.baseline else None
        row[f"{rec.decision}_baseline_name"] = rec.baseline.name if rec.baseline else None
        row[f"{rec.decision}_source"] = rec.solution_source
        row[f"{rec.decision}_check"] = rec.check.ok
    vc_problem = ctx.state["vc.problem"]
    bound = rec.details["lower_bound"]
    per_path = vc_model.solve(dataclasses.replace(vc_problem, max_vcs=bound + 4, mode="per_path", joint=False), config)
    row.update(
        vcs=rec.solver.objective, vc_bound=rec.details["lower_bound"], dynamic_paths=rec.details["dynamic_paths"],
        vcs_per_path=per_path.result.objective if per_path.decision is not None else None,
        vc_certificate_paths=len(per_path.details.get("certificate", {}).get("paths", [])) or None,
        static_links=ctx.state["split"] and len(ctx.state["split"].static),
        pbs_used=len(set(ctx.state["merge"].assignment.values())),
        backstop_fired=";".join(fired(records) + (["vc_per_path"] if per_path.result.backstop_fired else [])))
    row.update(sim_columns(rec.validation))
    return row, ctx


def sim_columns(sim: dict) -> dict:
    return {column: sim[key] for column, key in SIM_COLUMNS.items()}


def resimulate(ctx: Context, spec, window: int) -> dict:
    """The simulation columns of ``ctx``'s split, routes and VCs on ``spec`` (same placement) at ``window``."""
    s = ctx.state  # one solve: its designs share the ideal network's runs where they read the same buffering
    return sim_columns(net.simulate_mapping(s["network.view"], spec, s["place"], s["route.problem"], s["route"],
                                            s.get("vc"), window=window, ideal_runs=s.setdefault("sim.ideal_runs", {})))


def finished(csv: Path) -> set[tuple]:
    done = pd.read_csv(csv) if csv.exists() else pd.DataFrame()
    return set(zip(done.get("app", []), done.get("par", []), done.get("design", []), done.get("execution", [])))


def collect(apps: list[str], out: Path, cache: Path, time_limit: float, window: int, scale: Scale | None = None,
            factors: tuple[int, ...] = (1, 2), window_check: bool = False) -> pd.DataFrame:
    scale = scale or scale_of("default")
    columns = SHARED_COLUMNS if scale.share_solves else COLUMNS
    csv, csv_2w = out / "runs.csv", out / "runs_2w.csv"
    keys, keys_2w = finished(csv), finished(csv_2w)
    config = SolverConfig(time_limit_s=time_limit)
    for app in apps:
        for par in pars(app, factors, scale.par_cap):
            placements: dict = {}
            solved: dict = {}  # (io, execution, solve_key) -> (design, its solver columns, solved context | None)
            for label, execution, preset, overrides in scale.designs:
                key = (app, par, label, execution)
                if key in keys and (not window_check or key in keys_2w):
                    continue
                row = {"app": app, "par": par, "design": label, "execution": execution, "network": preset}
                row_2w = None
                start = time.perf_counter()
                io = io_variant(preset)
                m = mapped(app, par, io, cache, config, scale.array, scale.tag)
                if isinstance(m, str):
                    row.update(status="unmapped", error=m)
                else:
                    workload, vbgraph, merge, mapping_fired = m
                    spec = spec_for(preset, overrides, execution, scale.array)
                    shared = (io, execution, solve_key(spec)) if scale.share_solves else None
                    try:
                        if (io, execution) not in placements:
                            placements[(io, execution)] = place(workload, vbgraph, merge, spec, config)
                        if shared in solved:
                            first, columns_of_solve, ctx = solved[shared]
                            row.update(columns_of_solve, solved_with=first)
                            if ctx is not None:
                                row.update(resimulate(ctx, spec, window))
                        else:
                            design_row, ctx = run_design(workload, placements[(io, execution)], spec, config, window)
                            row.update(design_row)
                            row["backstop_fired"] = ";".join(filter(None, [*mapping_fired, row["backstop_fired"]]))
                            if shared is not None:
                                solved[shared] = (label, {k: row[k] for k in design_row}, ctx)
                        if ctx is not None:
                            row["status"] = "deadlock" if row["deadlock"] else "ok"
                            if window_check:
                                row_2w = {**row, **resimulate(ctx, spec, 2 * window)}
                                row_2w["status"] = "deadlock" if row_2w["deadlock"] else "ok"
                    except SolvermapError as exc:
                        placed = placements.get((io, execution))
                        stopped = [*mapping_fired, *(fired([placed["record"]]) if placed else []),
                                   *(["failed-step"] if getattr(exc, "load_dependent", False) else [])]
                        row.update(status="par-failed", error=f"{type(exc).__name__}: {exc}"[:300],
                                   backstop_fired=";".join(stopped))
                        if shared is not None and placed is not None and shared not in solved:
                            solved[shared] = (label, {k: row[k] for k in ("status", "error", "backstop_fired")}, None)
                    except Exception as exc:  # noqa: BLE001 - a study records and continues
                        row.update(status="error", error=f"{type(exc).__name__}: {exc}"[:300])
                        traceback.print_exc()
                row["seconds"] = round(time.perf_counter() - start, 1)
                print({k: row.get(k) for k in ("app", "par", "design", "execution", "status", "cycles", "overhead",
                                                "vcs", "vc_bound", "seconds", "error")}, flush=True)
                if key not in keys:
                    pd.DataFrame([row]).reindex(columns=columns).to_csv(csv, mode="a", header=not csv.exists(),
                                                                        index=False)
                if window_check and key not in keys_2w:
                    pd.DataFrame([{**(row_2w or row), "seconds": row["seconds"]}]).reindex(columns=columns).to_csv(
                        csv_2w, mode="a", header=not csv_2w.exists(), index=False)
    return pd.read_csv(csv)


# ============================================================================ analysis


SELECTS = ("points", "designs", "default-par")
PAR_TIE = 0.01  # pars within 1 % of a design's fastest run it equally fast: the smallest is taken
BASES = ("worst", "worst-perf", "worst-static-hybrid", "worst-kept")


def best_par(runs: pd.DataFrame, threshold: float = 0.10, select: str = "points") -> pd.DataFrame:
    """One row per (app, design, execution): the par the design runs the app at.

    ``points`` (default): a design point (design at one par) more than ``threshold`` slower than its ideal
    network is filtered out first (L398), then the design takes its fastest remaining par (L445: "low-bandwidth
    networks perform best with small unrolling factors"); a design none of whose pars passes takes its fastest
    par and is not kept. Pars whose cycles are within ``PAR_TIE`` (1 %) of the fastest count as equally fast and
    the smallest of them is taken: a larger par that gains less than the window's own measurement noise (about
    1 % of cycles between 4,096 and 8,192 firings) does not fit the network better, and it would otherwise flip
    with the window (lattice ×2 and ×3 at 273,199 and 273,233 cycles). ``designs``: the fastest par whatever its
    overhead, then the filter (the study's reading until 27 Nov, which drops a design whose fastest par is
    congested even when a smaller par is not). ``default-par``: the app's default par only. Rows that failed or
    deadlocked never count."""
    if select not in SELECTS:
        raise ValueError(f"select: {select!r} is not one of {', '.join(SELECTS)}")
    ok = runs[runs["status"] == "ok"].copy()
    if select == "default-par":
        ok = ok[ok["par"] == ok.groupby("app")["par"].transform("min")]
    keys = ["app", "design", "execution"]
    if select == "designs":
        return ok.loc[ok.groupby(keys)["cycles"].idxmin()].reset_index(drop=True)
    ok["_late"] = ok["overhead"] > threshold
    fastest = ok.sort_values([*keys, "_late", "cycles"], kind="stable").groupby(keys).head(1)
    fastest = fastest[[*keys, "_late", "cycles"]].rename(columns={"_late": "_late_f", "cycles": "_fastest"})
    ok = ok.merge(fastest, on=keys)
    ties = ok[(ok["_late"] == ok["_late_f"]) & (ok["cycles"] <= ok["_fastest"] * (1 + PAR_TIE))]
    chosen = ties.sort_values([*keys, "par"], kind="stable").groupby(keys).head(1)
    return chosen.drop(columns=["_late", "_late_f", "_fastest"]).reset_index(drop=True)


def geomean(values) -> float:
    values = [v for v in values if v and v > 0 and math.isfinite(v)]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def _base(chosen: pd.DataFrame, metric: str, base: str, reference: str | None) -> pd.Series:
    """Per chosen row, what its ``metric`` is divided by (see ``summarise``)."""
    group = [chosen["app"], chosen["execution"]]
    if reference is not None:
        of_reference = chosen[chosen["design"] == reference].set_index(["app", "execution"])[metric]
        return pd.Series([of_reference.get((app, execution), float("nan"))
                          for app, execution in zip(chosen["app"], chosen["execution"])], index=chosen.index)
    if base == "worst":
        return chosen.groupby(group)[metric].transform("min")
    if base == "worst-perf":
        slowest = chosen.groupby(group)["perf"].transform("idxmin")
        return pd.Series(chosen.loc[slowest, metric].to_numpy(), index=chosen.index)
    if base == "worst-static-hybrid":
        return chosen[metric].where(chosen["network"] != "dynamic").groupby(group).transform("min")
    if base == "worst-kept":
        return chosen[metric].where(chosen["kept"]).groupby(group).transform("min")
    raise ValueError(f"base: {base!r} is not one of {', '.join(BASES)}")


def summarise(runs: pd.DataFrame, threshold: float = 0.10, reference: str | None = None,
              select: str = "points", base: str = "worst") -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Per app and CGRA class, each metric of each design (at the par ``best_par(select)`` gives it) over that of
    the app's worst design (L400), geomeans over apps per design, and the Fig 3.16 summary: per CGRA class and
    network, the best geomean among designs kept by the 10 % overhead filter (L398, L449).

    ``base`` reads L400's "the worst network configuration for that application": ``worst`` (default), each
    metric over its own worst design; ``worst-perf``, every metric over the slowest design's; ``worst-static-hybrid``,
    the worst among static and hybrid designs (Fig 3.16 leaves pure dynamic networks out, L449); ``worst-kept``,
    the worst among kept designs. ``reference``: divide by that design's metric instead (an app where it does
    not map has no normalised metric). ``sensitivity`` puts these readings side by side."""
    chosen = best_par(runs, threshold, select)
    chosen["perf"] = 1.0 / chosen["cycles"]
    chosen["perf_per_area"] = chosen["perf"] / chosen["network_area_mm2"]
    chosen["perf_per_w"] = chosen["perf"] / chosen["network_power_w"]
    chosen["kept"] = chosen["overhead"] <= threshold
    # an app on which no design stays within 10 % of its ideal network keeps its least-overhead designs
    # (within 10 % of that least overhead) so that it still counts: recorded in ``filter``
    chosen["filter"] = "overhead<=10%"
    for (app, execution), group in chosen.groupby(["app", "execution"]):
        if not group["kept"].any():
            best = group["overhead"].min()
            relaxed = group.index[group["overhead"] <= best + threshold]
            chosen.loc[relaxed, "kept"] = True
            chosen.loc[group.index, "filter"] = f"relaxed: least overhead {best:.2f}"
    for metric in ("perf", "perf_per_area", "perf_per_w"):
        chosen[f"norm_{metric}"] = chosen[metric] / _base(chosen, metric, base, reference)
    rows = []
    for (design, execution), group in chosen.groupby(["design", "execution"]):
        kept = group[group["kept"]]
        rows.append({"design": design, "execution": execution, "network": group["network"].iloc[0],
                     "apps_mapped": len(group), "apps_kept": len(kept),
                     "geo_perf": geomean(kept["norm_perf"]), "geo_perf_per_w": geomean(kept["norm_perf_per_w"]),
                     "geo_perf_per_area": geomean(kept["norm_perf_per_area"]),
                     "max_vcs": group["vcs"].max(), "max_vc_bound": group["vc_bound"].max(),
                     "max_vcs_per_path": group["vcs_per_path"].max(),
                     "geo_overhead": geomean(1 + group["overhead"]) - 1,
                     "network_area_mm2": group["network_area_mm2"].iloc[0]})
    summary = pd.DataFrame(rows).sort_values(["execution", "network", "design"])
    fig = []
    for seed in SEED_FIG316:
        mine = summary[(summary["execution"] == seed["cgra"]) & (summary["network"] == seed["network"])]
        row = {"cgra": seed["cgra"], "network": seed["network"]}
        for metric in ("perf", "perf_per_w", "perf_per_area"):
            col = f"geo_{metric}"
            best = mine.loc[mine[col].idxmax()] if len(mine) and mine[col].notna().any() else None
            row[f"seed_{metric}"] = seed[metric]
            row[f"ours_{metric}"] = None if best is None else round(float(best[col]), 2)
            row[f"ours_{metric}_design"] = None if best is None else best["design"]
        fig.append(row)
    return chosen, summary, pd.DataFrame(fig)


READINGS = [  # (name, select, base or design label, designs left out (regex) or None): what ``sensitivity`` compares
    ("default", "points", "worst", None),
    ("fastest par, then filter", "designs", "worst", None),
    ("default par only", "default-par", "worst", None),
    ("worst = slowest design", "points", "worst-perf", None),
    ("worst among static and hybrid", "points", "worst-static-hybrid", None),
    ("worst among kept", "points", "worst-kept", None),
    # the grid's values the seed does not state: x4 (the top of our bandwidth sweep) and b6 (NT16)
    ("grid without x4 and b6", "points", "worst", r"-x4-|-b6"),
]
SEED_TOLERANCE = 0.25  # issue 28: every Fig 3.16 ratio within 25 % of the seed's


def sensitivity(runs: pd.DataFrame, designs: set[str] | None = None) -> pd.DataFrame:
    """Each Fig 3.16 ratio under every reading of ``READINGS`` and normalised to each of the seed's named designs
    (L435, L443–445) among ``designs``: one row per reading, CGRA class, network and metric, with the seed's
    ratio, ours, our best design and whether ours is within 25 % of the seed's. The seed defines its ratios in
    one sentence each (L400, L449) and does not list its grid; where a ratio is off under the default reading,
    this table shows how much of the distance each reading of those sentences, or the grid values the seed does
    not state, accounts for."""
    designs = set(runs["design"]) if designs is None else designs
    readings = [*READINGS, *((f"normalised to {label}", "points", label, None) for label in SEED_NAMED
                             if label in designs)]
    rows = []
    for name, select, base, left_out in readings:
        named = base not in BASES
        kept = runs if left_out is None else runs[~runs["design"].str.contains(left_out)]
        _, _, fig = summarise(kept, select=select, base="worst" if named else base, reference=base if named else None)
        for _, r in fig.iterrows():
            for metric in ("perf", "perf_per_w", "perf_per_area"):
                seed, ours = r[f"seed_{metric}"], r[f"ours_{metric}"]
                off = ours / seed - 1 if pd.notna(seed) and pd.notna(ours) else None
                rows.append({"reading": name, "select": select, "base": base, "left_out": left_out,
                             "cgra": r["cgra"], "network": r["network"], "metric": metric, "seed": seed, "ours": ours,
                             "design": r[f"ours_{metric}_design"], "off": None if off is None else round(off, 3),
                             "within_25pct": None if off is None else abs(off) <= SEED_TOLERANCE})
    return pd.DataFrame(rows)


def ceiling(runs: pd.DataFrame, chosen: pd.DataFrame, by_pars: bool = True) -> pd.DataFrame:
    """How far any network could take each perf ratio: per app and CGRA class, the worst design's cycles (the
    default normalisation, ``chosen`` from ``summarise``) over the fewest cycles of the ideal network (zero
    latency, unlimited bandwidth, same mapping) at any par and design of the study, beside the best kept
    design's ratio, and the worst design's par and its own overhead over its ideal network; a ``geomean`` row
    per class. No design runs faster than its ideal network, so no design's perf ratio, nor its geomean,
    exceeds ``cap``: where the seed's ratio is above it, the shortfall is in how much slower than the compute
    the worst network runs, not in the better network designs. With ``by_pars``, further geomean rows
    (``pars`` = k) give the same over each app's k smallest pars only: whether the par range sets the cap."""
    ok = runs[runs["status"] == "ok"]
    ideal = ok.groupby(["app", "execution"])["ideal_cycles"].min()
    rows = []
    for (app, execution), group in chosen.groupby(["app", "execution"]):
        worst = group.loc[group["cycles"].idxmax()]
        kept = group[group["kept"]]
        best = kept.loc[kept["cycles"].idxmin()]
        rows.append({"pars": "all", "app": app, "execution": execution, "worst_design": worst["design"],
                     "worst_par": worst["par"], "worst_overhead": worst["overhead"], "worst_cycles": worst["cycles"],
                     "best_kept_design": best["design"], "best_kept_par": best["par"],
                     "best_kept_cycles": best["cycles"], "ideal_cycles": ideal[(app, execution)],
                     "ratio": worst["cycles"] / best["cycles"], "cap": worst["cycles"] / ideal[(app, execution)]})
    table = pd.DataFrame(rows)
    for execution, group in table.groupby("execution"):
        rows.append({"pars": "all", "app": "geomean", "execution": execution, "ratio": geomean(group["ratio"]),
                     "cap": geomean(group["cap"])})
    if by_pars and len(ok):
        rank = runs.groupby("app")["par"].rank(method="dense")
        for k in range(1, int(rank.max())):
            fewer = runs[rank <= k]
            part = ceiling(fewer, summarise(fewer)[0], by_pars=False)
            rows += part[part["app"] == "geomean"].assign(pars=str(k)).to_dict("records")
    return pd.DataFrame(rows)


PAIRED = {"static": r"^S-x(\d)-db$", "hybrid": r"^H-x(\d)-v2-f128(?:-b3-db)?$"}  # same x: the preset's hybrid


def hybrid_vs_static(chosen: pd.DataFrame) -> pd.DataFrame:
    """The seed's account of its perf/W ordering (L447: with the same static bandwidth, hybrids use fewer PBs and
    fewer hops and so are more energy-efficient) measured on ``chosen`` (``summarise``): per app, CGRA class and
    static bandwidth x, the static design S-x#-db beside the preset's hybrid H-x#-v2-f128 (b3, db), each at its
    chosen par: PBs used, hops, network power and perf/W; a ``geomean`` row per class and x gives hybrid over
    static for each."""
    sides = []
    for network, pattern in PAIRED.items():
        side = chosen[chosen["design"].str.match(pattern)].copy()
        side["x"] = side["design"].str.extract(pattern)[0].astype(int)
        sides.append(side.set_index(["app", "execution", "x"])[
            ["design", "par", "pbs_used", "hops", "network_power_w", "perf_per_w"]].add_suffix(f"_{network}"))
    table = sides[0].join(sides[1], how="inner").reset_index()
    rows = table.to_dict("records")
    for (execution, x), group in table.groupby(["execution", "x"]):
        row = {"app": "geomean", "execution": execution, "x": x}
        for column in ("pbs_used", "hops", "network_power_w", "perf_per_w"):
            row[f"{column}_hybrid_over_static"] = geomean(group[f"{column}_hybrid"] / group[f"{column}_static"])
        rows.append(row)
    return pd.DataFrame(rows)


def solver_vs_baseline(runs: pd.DataFrame) -> pd.DataFrame:
    """Per decision: how often the solver's decision beat the best seed baseline, tied, or fell back. A row that
    reuses another design's solve (``solved_with``, seed scale) is not counted again."""
    ok = runs[runs["status"] == "ok"]
    if "solved_with" in ok:
        ok = ok[ok["solved_with"].isna()]
    rows = []
    for decision, sense in (("place", "min"), ("split", "max"), ("route", "min"), ("vc", "min")):
        obj, base = ok[f"{decision}_obj"], ok[f"{decision}_baseline"]
        has = base.notna()
        better = (obj < base - 1e-9) if sense == "min" else (obj > base + 1e-9)
        ratio = (obj[has & (base > 0)] / base[has & (base > 0)])
        source = ok.get(f"{decision}_source", pd.Series(dtype=str))
        if f"{decision}_status" in ok:
            status = ok[f"{decision}_status"]
        else:  # placement rows keep objective and bound only: optimal when they meet
            status = ((ok[f"{decision}_obj"] - ok[f"{decision}_bound"]).abs() <= 1e-6).map({True: "optimal", False: "feasible"})
        rows.append({"decision": decision, "sense": sense, "runs": len(ok), "with_baseline": int(has.sum()),
                     "solver_better": int((better & has).sum()), "tie": int(((obj - base).abs() <= 1e-9).sum()),
                     "no_valid_baseline": int((~has).sum()),
                     "fell_back_to_baseline": int(source.astype(str).str.startswith("baseline").sum()),
                     "geomean_solver_over_baseline": geomean(ratio) if len(ratio) else None,
                     "optimal": int((status == "optimal").sum()), "feasible_at_limit": int((status == "feasible").sum())})
    return pd.DataFrame(rows)


SOLVER_COLUMNS = ["place_obj", "split_status", "split_obj", "route_status", "route_obj", "vc_status", "vc_obj",
                  "vcs", "pbs_used"]
KEYS = ["app", "par", "design", "execution"]


def same_solves(runs: pd.DataFrame, runs_2w: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The rows of ``runs`` and ``runs_2w`` the window check may compare: those in both whose solves agree in
    every ``SOLVER_COLUMNS`` value (a row solved again for its 2W simulation, rather than simulated twice from
    one solve, can differ where a wall-clock backstop stopped a solve). Returns (runs, runs_2w, the rows left
    out with the reason: ``differs: <columns>`` or ``missing at 2W``)."""
    joined = runs.merge(runs_2w, on=KEYS, how="left", suffixes=("", "_2w"), indicator=True)
    reasons = pd.Series("", index=joined.index)
    for column in SOLVER_COLUMNS:
        w, w2 = joined[column], joined[f"{column}_2w"]
        same = (w == w2) | (w.isna() & w2.isna())
        if w.dtype.kind == "f" and w2.dtype.kind == "f":
            same |= (w - w2).abs() <= 1e-9 * (1 + w.abs())
        reasons[~same] += column + " "
    reasons = ("differs: " + reasons.str.strip()).where(reasons != "", "")
    reasons[joined["_merge"] == "left_only"] = "missing at 2W"
    agree = joined.loc[reasons == "", KEYS]

    def keep(frame: pd.DataFrame) -> pd.DataFrame:
        return frame.merge(agree, on=KEYS, how="inner")[list(frame.columns)]

    left_out = joined.loc[reasons != "", [*KEYS, "backstop_fired", "backstop_fired_2w"]]
    return keep(runs), keep(runs_2w), left_out.assign(reason=reasons[reasons != ""])


def window_check(fig_w: pd.DataFrame, fig_2w: pd.DataFrame, window: int) -> pd.DataFrame:
    """Each Fig 3.16 ratio (best design per CGRA class and network, per metric) at ``window`` and at twice it."""
    rows = []
    for (_, w), (_, w2) in zip(fig_w.iterrows(), fig_2w.iterrows()):
        for metric in ("perf", "perf_per_w", "perf_per_area"):
            a, b = w[f"ours_{metric}"], w2[f"ours_{metric}"]
            change = abs(b - a) / a if pd.notna(a) and pd.notna(b) and a else None
            rows.append({"cgra": w["cgra"], "network": w["network"], "metric": metric, "window": window,
                         "ratio": a, "design": w[f"ours_{metric}_design"], "window_2x": 2 * window, "ratio_2x": b,
                         "design_2x": w2[f"ours_{metric}_design"], "rel_change": change,
                         "within_tolerance": None if change is None else change <= WINDOW_TOLERANCE})
    return pd.DataFrame(rows)


def plot(summary: pd.DataFrame, fig316: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    execs = ["pipelined", "time_scheduled"]
    per_class = summary.groupby("execution").size()
    # the 13 default designs keep their figure; a larger grid widens its bar panels and lengthens the VC panel
    wide = [min(4.0, max(1.0, per_class.get(e, 0) / n)) for e, n in zip(execs, (9, 4))]
    tall = min(4.0, max(1.0, (summary["network"] != "static").sum() / 18))
    fig, axes = plt.subplots(1, 4, figsize=(20 + 3 * (wide[0] - 1) + 1.5 * (wide[1] - 1), 4.8 * tall),
                             gridspec_kw={"width_ratios": [3 * wide[0], 1.5 * wide[1], 1.6, 1.6]})
    for ax, execution in zip(axes[:2], execs):
        part = summary[summary["execution"] == execution]
        x = range(len(part))
        width = 0.27
        for k, (metric, label) in enumerate((("geo_perf", "perf"), ("geo_perf_per_w", "perf/W"),
                                              ("geo_perf_per_area", "perf/area"))):
            ax.bar([i + (k - 1) * width for i in x], part[metric], width, label=label)
        ax.set_xticks(list(x))
        ax.set_xticklabels(part["design"], rotation=45, ha="right", fontsize=8)
        ax.set_title(f"{execution}: geomean, normalised to worst design per app")
        ax.set_yscale("log")
        ax.legend(fontsize=8)
    ax = axes[2]
    labels, seed, ours = [], [], []
    for _, r in fig316.iterrows():
        for metric in ("perf", "perf_per_w", "perf_per_area"):
            if pd.notna(r[f"seed_{metric}"]):
                labels.append(f"{r['cgra'][:4]} {r['network'][0].upper()} {metric.replace('_per_', '/')}")
                seed.append(r[f"seed_{metric}"])
                ours.append(r[f"ours_{metric}"] if pd.notna(r[f"ours_{metric}"]) else 0)
    y = range(len(labels))
    ax.barh([i - 0.2 for i in y], seed, 0.4, label="seed Fig 3.16 (L449)")
    ax.barh([i + 0.2 for i in y], ours, 0.4, label="ours")
    ax.set_yticks(list(y))
    ax.set_yticklabels(labels, fontsize=7)
    ax.set_title("best per class vs worst design")
    ax.legend(fontsize=7)
    ax = axes[3]
    part = summary[summary["network"] != "static"]
    names = [f"{d} ({e[:4]})" for d, e in zip(part["design"], part["execution"])]
    y = range(len(part))
    ax.barh([i - 0.27 for i in y], part["max_vc_bound"], 0.27, label="bound: most paths on a link")
    ax.barh(list(y), part["max_vcs"], 0.27, label="VCs (per hop, the solve)")
    ax.barh([i + 0.27 for i in y], part["max_vcs_per_path"], 0.27, label="VCs if fixed per path")
    ax.set_yticks(list(y))
    ax.set_yticklabels(names, fontsize=7)
    ax.set_title("VCs needed (max over apps)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def fig316_block(fig316: pd.DataFrame) -> str:
    """The README's Fig 3.16 table: per CGRA class and network, the seed's ratio beside ours (best design)."""
    def cell(row, metric: str) -> str:
        seed, ours, design = row[f"seed_{metric}"], row[f"ours_{metric}"], row[f"ours_{metric}_design"]
        seed_text = "—" if pd.isna(seed) else f"{seed:.1f}"
        ours_text = "—" if pd.isna(ours) else f"{ours:.2f} ({design})"
        return f"{seed_text} / {ours_text}"

    lines = [BEGIN, "", "| CGRA | network | perf: seed / ours (design) | perf/W | perf/area |", "|---|---|---|---|---|"]
    for _, row in fig316.iterrows():
        lines.append(f"| {row['cgra'].replace('_', '-')} | {row['network']} | {cell(row, 'perf')} | "
                     f"{cell(row, 'perf_per_w')} | {cell(row, 'perf_per_area')} |")
    return "\n".join([*lines, "", END])


def write_readme(fig316: pd.DataFrame) -> None:
    """Replace the README's Fig 3.16 block (between its markers) with the table of ``fig316``."""
    replace_block(README, BEGIN, END, fig316_block(fig316))


def replace_block(path: Path, begin: str, end: str, block: str) -> None:
    """Replace the text between ``begin`` and ``end`` in ``path`` (markers included) by ``block``."""
    text = path.read_text()
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        path.write_text(head + block + rest.split(end, 1)[1])


def missing_rows(runs: pd.DataFrame, scale: Scale, factors: tuple[int, ...], apps: list[str] = APPS) -> int:
    """How many (app, par, design, execution) rows of the scale ``runs`` does not hold yet."""
    done = set(map(tuple, runs[KEYS].itertuples(index=False)))
    return sum((app, par, label, execution) not in done for app in apps
               for par in pars(app, factors, scale.par_cap) for label, execution, *_ in scale.designs)


def seed_block(fig316: pd.DataFrame, sensitivity_table: pd.DataFrame, ceiling_table: pd.DataFrame,
               check: pd.DataFrame | None) -> str:
    """The study README's seed-scale block: the Fig 3.16 table, each seed ratio under every reading of
    ``sensitivity`` (within 25 % marked), the ideal network's perf caps and the window check's largest move."""
    table = fig316_block(fig316).replace(BEGIN, SEED_BEGIN).replace(END, SEED_END)
    given = sensitivity_table[sensitivity_table["seed"].notna()]
    cells = list(dict.fromkeys(zip(given["cgra"], given["network"], given["metric"])))
    short = {"pipelined": "pipe", "time_scheduled": "t-s", "perf": "perf", "perf_per_w": "perf/W",
             "perf_per_area": "perf/area"}
    head = [f"{short[c]} {n[0].upper()} {short[m]} ({seed:.1f})" for (c, n, m), seed in
            zip(cells, given.drop_duplicates(["cgra", "network", "metric"])["seed"])]
    lines = ["", "Each seed ratio under other readings (`sensitivity.csv`; ours, ✓ within 25 % of the seed's, "
             "seed in brackets):", "", "| reading | " + " | ".join(head) + " |", "|---|" + "--:|" * len(cells)]
    for reading, group in given.groupby("reading", sort=False):
        by_cell = group.set_index(["cgra", "network", "metric"])
        row = []
        for cell_key in cells:
            ours, ok = by_cell.loc[cell_key, "ours"], by_cell.loc[cell_key, "within_25pct"]
            row.append("—" if pd.isna(ours) else f"{ours:.2f}{' ✓' if ok is True else ''}")
        lines.append(f"| {reading} | " + " | ".join(row) + " |")
    caps = ceiling_table[(ceiling_table["app"] == "geomean") & (ceiling_table["pars"] == "all")]
    caps = caps.set_index("execution")["cap"]
    lines += ["", "The ideal network caps the perf ratio (`ceiling.csv`, geomean over apps): "
              + ", ".join(f"{e.replace('_', '-')} {cap:.2f}" for e, cap in caps.items()) + "."]
    if check is not None:
        worst = check.loc[check["rel_change"].idxmax()]
        lines += ["", f"Window check (`window_check.csv`): from {int(worst['window']):,} to "
                  f"{int(worst['window_2x']):,} firings no ratio moves by more than "
                  f"{100 * worst['rel_change']:.1f} % ({worst['cgra']} {worst['network']} {worst['metric']}), over "
                  f"{int(worst['rows']):,} rows solved alike at both "
                  f"({int(worst['rows_left_out']):,} left out, `window_left_out.csv`)."]
    body = table.split(SEED_END)[0].rstrip("\n") + "\n" + "\n".join(lines) + "\n\n" + SEED_END
    return body


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--apps", default=",".join(APPS))
    parser.add_argument("--time-limit", type=float, default=10.0)
    parser.add_argument("--window", type=int, default=None, help="default: 1024 (seed scale: 4096)")
    parser.add_argument("--out", default=None, help="default: results/ (seed scale: results_seed/)")
    parser.add_argument("--cache", default="runs/network_dse_cache")
    parser.add_argument("--analyse-only", action="store_true")
    parser.add_argument("--scale", choices=("default", "seed"), default="default",
                        help="seed: the 14x14 array and the Table 3.2 grid (module docstring)")
    parser.add_argument("--par-factors", default=None,
                        help="pars = factor x the app's default par (capped); default 1,2 (seed scale: 1,2,4)")
    parser.add_argument("--par-cap", type=int, default=None,
                        help="cap pars here instead of the study's PAR_LIMIT (within each app's own par range)")
    parser.add_argument("--normalise", default="worst", help="worst (L400) or a design label to divide by")
    parser.add_argument("--window-check", action="store_true", help="also simulate at 2 x --window; window_check.csv")
    parser.add_argument("--designs", default=None, help="only these design labels of the scale (comma-separated)")
    args = parser.parse_args()
    scale, factors, reference = checked(parser, args)
    out, cache = Path(args.out) if args.out else scale.out, Path(args.cache)
    out.mkdir(parents=True, exist_ok=True)
    cache.mkdir(parents=True, exist_ok=True)
    if args.analyse_only:
        if not (out / "runs.csv").exists():
            parser.error(f"--analyse-only: {out / 'runs.csv'} does not exist")
        runs = pd.read_csv(out / "runs.csv")
    else:
        runs = collect(args.apps.split(","), out, cache, args.time_limit, scale.window, scale, factors,
                       args.window_check)
    chosen, summary, fig316 = summarise(runs, reference=reference)
    chosen.to_csv(out / "chosen.csv", index=False)
    summary.to_csv(out / "summary.csv", index=False)
    fig316.to_csv(out / "fig316.csv", index=False)
    vcs = chosen.pivot_table(index="app", columns=["execution", "design"], values="vcs", aggfunc="first")
    vcs.to_csv(out / "vcs.csv")
    versus = solver_vs_baseline(runs)
    versus.to_csv(out / "solver_vs_baseline.csv", index=False)
    sensitivity_table = sensitivity(runs, {label for label, *_ in scale.designs})
    sensitivity_table.to_csv(out / "sensitivity.csv", index=False)
    ceiling_table = ceiling(runs, chosen)
    ceiling_table.to_csv(out / "ceiling.csv", index=False)
    hybrid_vs_static(chosen).to_csv(out / "hybrid_vs_static.csv", index=False)
    plot(summary, fig316, out / "network_dse.png")
    if out.resolve() == (HERE / "results").resolve():
        write_readme(fig316)
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(summary.to_string(index=False))
        print(fig316.to_string(index=False))
        print(versus.to_string(index=False))

    if args.window_check:
        runs_w, runs_2w, left_out = same_solves(runs, pd.read_csv(out / "runs_2w.csv"))
        left_out.to_csv(out / "window_left_out.csv", index=False)
        _, _, fig316_w = summarise(runs_w, reference=reference)
        _, _, fig316_2w = summarise(runs_2w, reference=reference)
        check = window_check(fig316_w, fig316_2w, scale.window).assign(rows=len(runs_w), rows_left_out=len(left_out))
        check.to_csv(out / "window_check.csv", index=False)
        with pd.option_context("display.width", 200, "display.max_columns", 30):
            print(check.to_string(index=False))
    if out.resolve() == (HERE / "results_seed").resolve() and scale.name == "seed":
        left = missing_rows(runs, scale, factors)
        if left:
            print(f"results_seed: {left} rows of the scale are not in yet; the README's seed block is not written")
        else:
            replace_block(SEED_README, SEED_BEGIN, SEED_END,
                          seed_block(fig316, sensitivity_table, ceiling_table, check if args.window_check else None))


if __name__ == "__main__":
    main()
