"""The registry of decisions: one :class:`~solvermap.mappers.pipeline.Decision` descriptor per kind of decision.

Each entry binds a formulation (``formulations/``), its problem and decision types and objective
(``formulations/problems/``), its independent checker (``hardware/checks/``), the seed baselines
(``mappers/<family>``, by :class:`~solvermap.mappers.pipeline.Ref` because those packages import this
registry for their step lists) and its typed options. Binding them here, outside ``formulations/`` and
``hardware/checks/``, keeps a formulation from ever importing its checker.

``run_decision``, ``solvermap decisions [--json]``, the design-space cache (its digest covers
``modules`` and what they import) and the documentation read these descriptors. A pipeline step
refers to one: ``decide(PARTITION, partition_step, needs=(...), provides=(...))``.

Options are ``--set decisions.<decision>.<key>=value`` (or ``decisions:`` in a config or study file);
every model forbids unknown keys, and ``solver:`` holds per-decision solver settings. An option that
defaults to ``None`` takes the target's value.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from solvermap.formulations import accuracy_budget, banking, fusion, knob_mapping, link_split, partition, placement
from solvermap.formulations import replication, routing, scheduling, shift_registers, swing, tensorize
from solvermap.formulations import vc_allocation, wide_fetch
from solvermap.formulations.problems import accuracy_budget as budget_problems
from solvermap.formulations.problems import banking as banking_problems
from solvermap.formulations.problems import fusion as fusion_problems
from solvermap.formulations.problems import knob_mapping as knob_problems
from solvermap.formulations.problems import link_split as split_problems
from solvermap.formulations.problems import partition as partition_problems
from solvermap.formulations.problems import placement as placement_problems
from solvermap.formulations.problems import replication as replication_problems
from solvermap.formulations.problems import routing as routing_problems
from solvermap.formulations.problems import scheduling as schedule_problems
from solvermap.formulations.problems import shift_registers as sr_problems
from solvermap.formulations.problems import swing as swing_problems
from solvermap.formulations.problems import tensorize as tensorize_problems
from solvermap.formulations.problems import vc_allocation as vc_problems
from solvermap.formulations.problems import wide_fetch as fetch_problems
from solvermap.hardware.approxhpvm import KNOBS
from solvermap.hardware.checks import accuracy_budget as budget_check
from solvermap.hardware.checks import banking as banking_check
from solvermap.hardware.checks import fusion as fusion_check
from solvermap.hardware.checks import knob_mapping as knob_check
from solvermap.hardware.checks import link_split as split_check
from solvermap.hardware.checks import partition as partition_check
from solvermap.hardware.checks import placement as placement_check
from solvermap.hardware.checks import puma_replication as replication_check
from solvermap.hardware.checks import routing as routing_check
from solvermap.hardware.checks import schedule as schedule_check
from solvermap.hardware.checks import shift_registers as sr_check
from solvermap.hardware.checks import swing as swing_check
from solvermap.hardware.checks import tensorize as tensorize_check
from solvermap.hardware.checks import vc_allocation as vc_check
from solvermap.hardware.checks import wide_fetch as fetch_check
from solvermap.hardware.puma.program import PumaPlacement
from solvermap.mappers.pipeline import Baseline, Decision, DecisionOptions, ModuleSolve, Ref

PLASTICINE = "solvermap.mappers.plasticine"
PUSHMEM = "solvermap.mappers.pushmem"
APPROXHPVM = "solvermap.mappers.approxhpvm"
PUMA = "solvermap.mappers.puma"

# =========================================================================== Plasticine (seed 004)


class PartitionOptions(DecisionOptions):
    variant: Literal[partition.VARIANTS] = Field("ours", description="ours (the shared model) or table42 (the "
                                                 "seed's literal Table 4.2 formulation, for comparison)")
    retiming_search: Literal[partition.RETIMING_SEARCHES] = Field(
        "auto", description="phase B of retiming problems: auto (columns on LP-based backends, slots on CP-SAT), "
        "slots or columns")
    retiming: bool = Field(True, description="model retiming buffers (seed §4.3.2); false drops the retiming terms")


def _solve_partition(problem: Any, config: Any, hint: Any, options: PartitionOptions) -> Any:
    return partition.solve(problem, config, hint, variant=options.variant, retiming_search=options.retiming_search)


def _traversal(name: str, function: str, **kwargs: Any) -> Baseline:
    return Baseline(name, Ref(f"{PLASTICINE}.traversal:{function}"), kwargs)


PARTITION = Decision(
    name="partition", summary="split actors into PCU partitions (stages, broadcast-aware I/O, acyclic, retiming)",
    kind="milp", problem_type=partition_problems.PartitionProblem, decision_type=partition_problems.PartitionDecision,
    options=PartitionOptions, solve=_solve_partition, objective=partition_problems.objective,
    checker=partition_check.check, modules=("solvermap.formulations.partition", "solvermap.formulations.problems.partition"),
    baselines=(_traversal("dfs-forward", "traversal_partition", strategy="dfs", backward=False),
               _traversal("dfs-backward", "traversal_partition", strategy="dfs", backward=True),
               _traversal("bfs-forward", "traversal_partition", strategy="bfs", backward=False),
               _traversal("bfs-backward", "traversal_partition", strategy="bfs", backward=True)),
    diagnose=partition.diagnose,
)

MERGE = Decision(
    name="merge", summary="pack VBs onto PCU/PMU/DAG jointly with the PB type (counts, I/O, acyclic)",
    kind="milp", problem_type=partition_problems.PartitionProblem, decision_type=partition_problems.PartitionDecision,
    options=DecisionOptions, solve=ModuleSolve(partition), objective=partition_problems.objective,
    checker=partition_check.check, modules=PARTITION.modules,
    baselines=(_traversal("traversal-bfs", "traversal_merge", strategy="bfs"),
               _traversal("traversal-dfs", "traversal_merge", strategy="dfs"),
               Baseline("unmerged", Ref(f"{PLASTICINE}.traversal:unmerged"))),
    diagnose=partition.diagnose,
)


class PlaceOptions(DecisionOptions):
    moves_per_item: int = Field(300, ge=1, description="simulated-annealing baseline: moves per placed PB")


PLACE = Decision(
    name="place", summary="PBs onto the typed PCU/PMU/DAG sites: Σ activation × broadcast-tree length",  # seed 004 L320, L447
    kind="milp", problem_type=placement_problems.PlacementProblem, decision_type=placement_problems.Placement,
    options=PlaceOptions, solve=ModuleSolve(placement), objective=placement_problems.objective,
    checker=placement_check.check, modules=("solvermap.formulations.placement", "solvermap.formulations.problems.placement"),
    baselines=(Baseline("greedy", Ref(f"{PLASTICINE}.network:greedy_placement")),
               Baseline("annealing", Ref(f"{PLASTICINE}.network:annealing_placement"), seed=True,
                        options=("moves_per_item",))),
    diagnose=placement.diagnose,
)


class FlowOptions(DecisionOptions):
    margin: int = Field(2, ge=0, description="mesh rows/columns around the placed PBs that trees may use")


FLOW_BACKEND = "highs"  # the flow models' LP relaxations are near tight: HiGHS proves them where CP-SAT stalls

SPLIT = Decision(
    name="split", summary="hybrid split: activation × fanout carried by the static tracks; all static / dynamic on S / D",  # L320
    kind="milp", problem_type=split_problems.SplitProblem, decision_type=split_problems.Split, options=FlowOptions,
    solve=ModuleSolve(link_split), objective=split_problems.objective, checker=split_check.check, sense="max",
    modules=("solvermap.formulations.link_split", "solvermap.formulations.problems.link_split"),
    baselines=(Baseline("greedy-activation", Ref(f"{PLASTICINE}.network:greedy_split")),  # the seed's greedy (L320)
               Baseline("all-dynamic", Ref(f"{PLASTICINE}.network:all_dynamic_split"))),
    diagnose=link_split.diagnose, preferred_backend=FLOW_BACKEND,
)

ROUTE = Decision(
    name="route", summary="multi-commodity flow broadcast trees: exclusive static tracks, ≤ v# paths per dynamic link",  # L302
    kind="milp", problem_type=routing_problems.RoutingProblem, decision_type=routing_problems.Routes, options=FlowOptions,
    solve=ModuleSolve(routing), objective=routing_problems.objective, checker=routing_check.check,
    modules=("solvermap.formulations.routing", "solvermap.formulations.problems.routing"),
    baselines=(Baseline("split+greedy", Ref(f"{PLASTICINE}.network:split_greedy_routes"), context=True),
               Baseline("greedy-steiner", Ref(f"{PLASTICINE}.network:greedy_routes")),
               Baseline("xy", Ref(f"{PLASTICINE}.network:xy_routes"))),
    diagnose=routing.diagnose, preferred_backend=FLOW_BACKEND,
)


class VcOptions(DecisionOptions):
    mode: Literal["per_hop", "per_path"] = Field("per_hop", description="per_hop: the routing table gives the next "
                                                 "VC; per_path: one VC for a whole path")  # per_hop: seed 004 L324
    joint: bool = Field(False, description="pick each link's tree among `candidates` trees jointly with the VCs")  # L433
    candidates: int = Field(4, ge=1, description="candidate trees per logical link when joint")
    sim_window: int = Field(2048, ge=1, description="NoC co-simulation window (cycles) of the validation")


VC = Decision(
    name="vc", summary="VC allocation: one logical path per (link, VC), acyclic CDG with PB backpressure",  # L312-316
    kind="milp", problem_type=vc_problems.VcProblem, decision_type=vc_problems.VcAssignment, options=VcOptions,
    solve=ModuleSolve(vc_allocation), objective=vc_problems.objective, checker=vc_check.check,
    modules=("solvermap.formulations.vc_allocation", "solvermap.formulations.problems.vc_allocation"),
    baselines=(Baseline("greedy-colouring", Ref(f"{PLASTICINE}.network:greedy_colouring")),),
    diagnose=vc_allocation.diagnose,
)

# =========================================================================== push memory (seed 001)

SCHEDULE = Decision(
    name="schedule", summary="cycle-accurate affine schedule (rates + delay ILP; DNN: binary search on II)",
    kind="milp", problem_type=schedule_problems.ScheduleProblem, decision_type=schedule_problems.Schedule,
    options=DecisionOptions, solve=ModuleSolve(scheduling), objective=schedule_problems.objective,
    checker=schedule_check.check, modules=("solvermap.formulations.scheduling", "solvermap.formulations.problems.scheduling"),
    baselines=(Baseline("sequential", Ref(f"{PUSHMEM}.baselines:sequential_schedule")),),
)

SHIFT_REGISTERS = Decision(
    name="shift_registers", summary="taps as wires / shift registers / memory delay lines (arborescence ILP)",
    kind="milp", problem_type=sr_problems.ShiftRegisterProblem, decision_type=sr_problems.ShiftRegisterPlan,
    options=DecisionOptions, solve=ModuleSolve(shift_registers), objective=sr_problems.objective, checker=sr_check.check,
    modules=("solvermap.formulations.shift_registers", "solvermap.formulations.problems.shift_registers"),
    baselines=(Baseline("all-memory", Ref(f"{PUSHMEM}.baselines:all_memory")),
               Baseline("sr-chain", Ref(f"{PUSHMEM}.baselines:sr_chain"))),
)


class BankOptions(DecisionOptions):
    max_banks: int = Field(16, ge=1, description="banks per memory at most")


BANK = Decision(
    name="bank", summary="bank functions: at most 4 accesses per bank per cycle (CP-SAT / MILP)",
    kind="cpsat", problem_type=banking_problems.BankingProblem, decision_type=banking_problems.Banking,
    options=BankOptions, solve=ModuleSolve(banking), objective=banking_problems.objective, checker=banking_check.check,
    modules=("solvermap.formulations.banking", "solvermap.formulations.problems.banking"),
    baselines=(Baseline("cyclic", Ref(f"{PUSHMEM}.banking_adapter:cyclic")),
               Baseline("embarrassing", Ref(f"{PUSHMEM}.banking_adapter:embarrassing"))),
)

MEMTILE = Decision(
    name="memtile", summary="buffer fragments packed onto MEM tiles (shared bin packing)",
    kind="milp", problem_type=partition_problems.PartitionProblem, decision_type=partition_problems.PartitionDecision,
    options=DecisionOptions, solve=ModuleSolve(partition), objective=partition_problems.objective,
    checker=partition_check.check, modules=PARTITION.modules,
    baselines=(Baseline("one-per-tile", Ref(f"{PUSHMEM}.physical:one_per_tile")),
               Baseline("first-fit", Ref(f"{PUSHMEM}.physical:first_fit"))),
    diagnose=partition.diagnose,
)

WIDE_FETCH = Decision(
    name="wide_fetch", summary="AGG/SRAM/TB shifts: single SRAM port per tile",
    kind="cpsat", problem_type=fetch_problems.WideFetchProblem, decision_type=fetch_problems.WideFetch,
    options=DecisionOptions, solve=ModuleSolve(wide_fetch), objective=fetch_problems.objective, checker=fetch_check.check,
    modules=("solvermap.formulations.wide_fetch", "solvermap.formulations.problems.wide_fetch"),
    baselines=(Baseline("no-shift", Ref(f"{PUSHMEM}.fetch_adapter:no_shift")),),
)

# =========================================================================== ApproxHPVM (seed 000)


class FuseOptions(DecisionOptions):
    objective: Literal["time", "energy"] = Field("time", description="what fusion minimises")


FUSE = Decision(
    name="fuse", summary="node fusion and device per layer (HPVM legality, PROMISE layer patterns)",
    kind="milp", problem_type=fusion_problems.FusionProblem, decision_type=fusion_problems.FusionDecision,
    options=FuseOptions, solve=ModuleSolve(fusion), objective=fusion_problems.objective, checker=fusion_check.check,
    modules=("solvermap.formulations.fusion", "solvermap.formulations.problems.fusion"),
    baselines=(Baseline("seed-promise-patterns", Ref(f"{APPROXHPVM}.baselines:seed_promise_patterns")),
               Baseline("gpu-unfused", Ref(f"{APPROXHPVM}.baselines:gpu_unfused"))),
)


class BudgetOptions(DecisionOptions):
    loss_limit: float | None = Field(None, gt=0, lt=1, description="end-to-end accuracy loss limit in (0, 1); "
                                     "default: the target's")
    cost_function: Literal[budget_problems.ALL_COST_FUNCTIONS] = Field(
        budget_problems.HARDWARE, description="energy (the knob MILP's energy or time inside the level search) or "
        "the seed's proxies C1..C3")
    explore: int = Field(6, ge=0, description="candidates the energy search may verify after its first acceptance")
    top: int = Field(2, ge=1, description="accepted configurations kept per cost function")
    mc_runs: int | None = Field(None, ge=1, description="Monte Carlo runs per verification; default: the target's")
    method: Literal["milp", "convex"] = Field("milp", description="level search by MILP over E levels or by the "
                                              "convex relaxation")
    repeats: int = Field(3, ge=1, description="error injections per op and level when profiling")
    optuna_trials: int = Field(20, ge=0, description="configurations the Optuna baseline may evaluate (0: no Optuna)")


BUDGET = Decision(
    name="budget", summary="per-op L1/L2 error budgets from the end-to-end loss limit (Monte Carlo verified)",
    kind="convex", problem_type=budget_problems.BudgetProblem, decision_type=budget_problems.BudgetDecision,
    options=BudgetOptions, solve=ModuleSolve(accuracy_budget), objective=budget_problems.objective,
    checker=budget_check.check,
    modules=("solvermap.formulations.accuracy_budget", "solvermap.formulations.problems.accuracy_budget"),
    baselines=(Baseline("uniform-level", Ref(f"{APPROXHPVM}.baselines:uniform_level")),
               Baseline("optuna", Ref(f"{APPROXHPVM}:optuna_budget"), context=True,
                        when=lambda options: options.optuna_trials > 0)),
)


class KnobsOptions(DecisionOptions):
    objective: Literal["energy", "time"] = Field("energy", description="what the knob mapping minimises")
    allowed: list[Literal[KNOBS]] | None = Field(None, description="knobs the mapping may use; default: all")
    mc_runs: int | None = Field(None, ge=1, description="Monte Carlo runs of the end-to-end test; default: the target's")
    max_validations: int = Field(6, ge=1, description="mappings simulated at most before the fallback")
    layer_screen: bool = Field(False, description="after a mapping fails the Monte Carlo test, test each approximated "
                               "layer alone and cut the ones that fail on their own")

    @field_validator("allowed", mode="before")
    @classmethod
    def _known_knobs(cls, value: Any) -> Any:
        if isinstance(value, (list, tuple)):
            for name in value:
                if str(name) not in KNOBS:
                    raise ValueError(f"unknown knob {name!r}; known: {', '.join(KNOBS)}")
            if not value:
                raise ValueError("no knob allowed")
        return value


def _knob_solution(problem: knob_problems.KnobProblem, decision: knob_problems.KnobDecision) -> dict[str, Any]:
    return {"knobs": dict(decision.knobs), "layer_settings": decision.layer_settings(problem)}


KNOB_MAPPING = Decision(
    name="knobs", summary="FP32 / FP16 / PROMISE P1..P7 per op under the budgets",
    kind="milp", problem_type=knob_problems.KnobProblem, decision_type=knob_problems.KnobDecision,
    options=KnobsOptions, solve=ModuleSolve(knob_mapping), objective=knob_problems.objective,
    checker=knob_check.check, serialize=_knob_solution, diagnose=knob_mapping.diagnose,
    modules=("solvermap.formulations.knob_mapping", "solvermap.formulations.problems.knob_mapping"),
    baselines=(Baseline("seed-least-accurate", Ref(f"{APPROXHPVM}.baselines:seed_least_accurate")),),
)


class SwingOptions(DecisionOptions):
    p_m: float | None = Field(None, gt=0, lt=1, description="mismatch probability budget in (0, 1); default: the target's")
    bound: Literal["measured", "sakr"] = Field("measured", description="mismatch model of a network: measured or "
                                               "Sakr's analytic bound")
    runs: int = Field(5, ge=1, description="Monte Carlo runs per measured level")


SWING = Decision(
    name="swing", summary="PROMISE swing per task under the mismatch budget p_m",
    kind="milp", problem_type=swing_problems.SwingProblem, decision_type=swing_problems.SwingDecision,
    options=SwingOptions, solve=ModuleSolve(swing), objective=swing_problems.objective, checker=swing_check.check,
    modules=("solvermap.formulations.swing", "solvermap.formulations.problems.swing"),
    baselines=(Baseline("seed-uniform-bits", Ref(f"{APPROXHPVM}.baselines:seed_uniform_bits")),
               Baseline("brute-force", Ref(f"{APPROXHPVM}.baselines:brute_force"))),
    diagnose=swing.diagnose,
)

# =========================================================================== PUMA (seed 003)


class ReplicateOptions(DecisionOptions):
    spare: float = Field(0.25, ge=0, description="MVMU budget = (1 + spare) × unreplicated MVMUs")
    budget: int | None = Field(None, ge=1, description="MVMU budget (overrides spare)")


REPLICATE = Decision(
    name="replicate", summary="per-layer replication degrees under an MVMU budget",
    kind="milp", problem_type=replication_problems.ReplicationProblem, decision_type=replication_problems.Replication,
    options=ReplicateOptions, solve=ModuleSolve(replication), objective=replication_problems.objective,
    checker=replication_check.check,
    modules=("solvermap.formulations.replication", "solvermap.formulations.problems.replication"),
    baselines=(Baseline("none", Ref(f"{PUMA}.replication_baselines:no_replication")),
               Baseline("greedy_bottleneck", Ref(f"{PUMA}.replication_baselines:greedy_bottleneck"))),
    diagnose=replication.diagnose,
)


class PumaPlaceOptions(DecisionOptions):
    variant: Literal["hierarchical", "joint"] = Field("hierarchical", description="exact stages then LNS, or one joint model")
    extra_tiles: int = Field(0, ge=0, description="virtual tiles beyond the minimum the solver may use")
    balance_weight: float = Field(0.0, ge=0, description="core level: weight of the largest core work term")
    link_weight: float = Field(0.0, ge=0, description="tile level: weight of the largest link load term")
    lns_share: float = Field(0.45, ge=0, le=1, description="share of the time limit for large-neighbourhood search")
    bound_share: float = Field(0.3, ge=0, le=1, description="share of the time limit for the certified lower bound")
    selection_share: float = Field(0.25, ge=0, le=1, description="work of the final selection by simulation among placements "
                                   "with no more hop-weighted bytes, as a share of the time limit, on top of it (0 = off)")


PUMA_PLACE = Decision(
    name="place", summary="hierarchical tile placement: blocks → MVMUs → cores → tiles → node positions (hop-weighted bytes)",
    kind="milp", problem_type=Ref("solvermap.hardware.puma.placement_problem:PumaPlacementProblem"), decision_type=PumaPlacement,
    options=PumaPlaceOptions, solve=ModuleSolve(Ref(f"{PUMA}.hierarchical_placement")),
    objective=Ref("solvermap.hardware.puma.placement_problem:objective"), checker=Ref("solvermap.hardware.checks.puma_placement:check"),
    modules=(f"{PUMA}.hierarchical_placement", "solvermap.hardware.puma.placement_problem"),
    baselines=(Baseline("row_major", Ref(f"{PUMA}.baselines:row_major")),
               Baseline("col_major", Ref(f"{PUMA}.baselines:col_major")),
               Baseline("random", Ref(f"{PUMA}.baselines:random_order"), seed=True),
               Baseline("min_cut", Ref(f"{PUMA}.baselines:min_cut"), seed=True)),
    diagnose=Ref(f"{PUMA}.hierarchical_placement:diagnose"),
)

# =========================================================================== UNIT on CPUs (seed 002)


class TensorizeOptions(DecisionOptions):
    tuner: Literal["unit-default", "unit", "optuna"] = Field("optuna", description="schedule tuner of the validation")
    trials: int = Field(12, ge=0, description="Optuna samples")
    unit_pairs: int = Field(8, ge=1, description="UNIT (parallel, unroll) pairs profiled")
    tiles: int = Field(8, ge=1, description="register tiles measured")
    tune_untensorized: bool = Field(True, description="tune the untensorized peer for itself")
    measure: Literal["time", "model"] = Field("time", description="time compiled kernels or use the cost model")
    rounds: int | None = Field(None, ge=1, description="timing rounds; default: the target's")
    min_seconds: float | None = Field(None, gt=0, description="seconds per timing round at least; default: the target's")
    min_reps: int | None = Field(None, ge=1, description="repetitions per timing round at least; default: the target's")
    emulate_max_calls: int = Field(20000, ge=1, description="instruction calls the emulator runs at most")
    reorder: bool = Field(True, description="tune the data-parallel loop order")
    execute: Literal["auto", "compile", "emulate"] = Field("auto", description="auto: from the target's codegen")
    allow_padding: bool | None = Field(None, description="pad indivisible extents; default: the target's")
    commutative: bool = Field(False, description="inspect expressions up to commutativity")


TENSORIZE = Decision(
    name="tensorize", summary="map instruction loops onto program loops (S'(u) ⊆ S(v)), then rewrite, tune and run",
    kind="milp", problem_type=tensorize_problems.TensorizeProblem, decision_type=tensorize_problems.TensorizeMapping,
    options=TensorizeOptions, solve=ModuleSolve(tensorize), objective=tensorize_problems.objective,
    checker=tensorize_check.check,
    modules=("solvermap.formulations.tensorize", "solvermap.formulations.problems.tensorize"),
    baselines=(Baseline("unit-greedy-innermost", Ref("solvermap.mappers.cpu.baselines:unit_greedy_mapping")),),
    diagnose=tensorize.diagnose,
)

DECISIONS: tuple[Decision, ...] = (
    PARTITION, MERGE, PLACE, SPLIT, ROUTE, VC,
    SCHEDULE, SHIFT_REGISTERS, BANK, MEMTILE, WIDE_FETCH,
    FUSE, BUDGET, KNOB_MAPPING, SWING,
    REPLICATE, PUMA_PLACE,
    TENSORIZE,
)
