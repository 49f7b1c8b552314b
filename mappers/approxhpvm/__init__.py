"""ApproxHPVM pipeline for the promise-soc target (seed 000 Ch. 3–5).

    fuse    node fusion + device per layer (MILP; baselines: seed PROMISE patterns, unfused GPU)
    budget  per-op L1/L2 error budgets from the loss limit (convex cvxpy + MILP over E levels, Monte Carlo
            verification with no-good cuts; baselines: uniform level, Optuna)
    knobs   FP32 / FP16 / P1..P7 per op under the budgets, fusion groups and conversion costs (MILP;
            baseline: the seed's least-accurate-setting rule); validated by Monte Carlo on the PROMISE functional
            simulator plus the SoC time/energy model
    swing   PROMISE swing per task under p_m (MILP multiple-choice knapsack; baselines: seed uniform bits,
            brute-force sweep)

Workloads: ``lenet``, ``dnn1``, ``dnn2``, ``dnn3``, ``promise_mlp`` (trained networks; every step) and the PROMISE
kernels ``matched_filter``, ``template_l1/l2``, ``svm``, ``knn_l1/l2``, ``linreg`` (``swing`` only).

Options (``--set decisions.<step>.<key>=v``): the descriptors' ``FuseOptions``, ``BudgetOptions``,
``KnobsOptions`` and ``SwingOptions`` in :mod:`solvermap.mappers.decisions` (``solvermap decisions --json``
shows types, ranges and defaults). budget.cost_function "energy" (default) is the knob MILP's energy or time,
per knobs.objective, inside the level search (formulations/accuracy_budget.py); the seed's proxies C1..C3 run
beside it, ``top`` accepted configurations each; knobs.layer_screen (true: after a failed mapping,
cut its layers that fail alone, :mod:`.layer_screen`).

Export (``--set export.hpvm_config=PATH``): the knobs step writes the all-FP32 baseline and the chosen mapping in
HPVM's tuner configuration format (:mod:`.hpvm_config`); ``solvermap hpvm-config PATH --workload W``
(``solvermap/hpvm_config_command.py``) reads such a file (HPVM's own GPU-only files included) and evaluates every
configuration.
"""

from __future__ import annotations

from dataclasses import dataclass

from solvermap.errors import InfeasibleError, InputError
from solvermap.formulations import knob_mapping
from solvermap.formulations.problems import accuracy_budget as budget_types
from solvermap.formulations.problems import fusion as fusion_types
from solvermap.formulations.problems import knob_mapping as knob_types
from solvermap.formulations.problems import swing as swing_types
from solvermap.hardware.approxhpvm import KNOBS, PROMISE_KNOBS, check_supported, parse_knobs
from solvermap.hardware.approxhpvm.soc_sim import all_fp32, monte_carlo, op_errors, schedule_cost, schedule_units, Schedule
from solvermap.hardware.checks import knob_mapping as knob_check
from solvermap.ir.graph import DataflowGraph
from solvermap.ir.workloads.approxhpvm_kernels import PromiseKernel
from solvermap.ir.workloads.approxhpvm_tensor_ops import TensorNetwork, single_threaded_blas
from solvermap.mappers.approxhpvm import hpvm_config
from solvermap.mappers.approxhpvm.layer_screen import layer_screen
from solvermap.mappers.approxhpvm.optuna_search import optuna_baseline
from solvermap.mappers.approxhpvm.problems import (
    budget_problem,
    fusion_problem,
    gpu_groups_for,
    hardware_cost,
    knob_problem,
    max_swing_energy,
    swing_problem_kernel,
    swing_problem_network,
)
from solvermap.mappers.approxhpvm.profiling import injection_monte_carlo, profile_sensitivity
from solvermap.mappers.decisions import BUDGET, FUSE, KNOB_MAPPING, SWING
from solvermap.mappers.pipeline import Context, Pipeline, decide, run_decision


# ---------------------------------------------------------------------- workload access


def _workload(ctx: Context):
    from solvermap.mappers.approxhpvm import from_model

    ir = ctx.workload.ir
    if from_model.is_model(ir):  # an ONNX model with a dataset (from_model.py)
        ir = from_model.network(ir, str(ctx.workload.params.get("dataset", "digits")))
    if isinstance(ir, (TensorNetwork, PromiseKernel)):
        if isinstance(ir, TensorNetwork):
            check_supported(ir.graph, ctx.workload.name)
        return ir
    if isinstance(ir, DataflowGraph) and str(ir.source).lower().endswith(".onnx"):
        if "onnx_network" not in ctx.state:
            ctx.state["onnx_network"] = onnx_network(ir.source)
        return ctx.state["onnx_network"]
    if isinstance(ir, DataflowGraph):
        check_supported(ir, ctx.workload.name)
        raise InputError(ctx.workload.name, "workload", "a graph file carries no trained weights; the approxhpvm "
                         "pipeline runs the built-in networks (lenet, dnn1, dnn2, dnn3, promise_mlp, *_mnist), ONNX "
                         "models with weights and PROMISE kernels")
    raise InputError(ctx.workload.name, "workload", f"unsupported workload type {type(ir).__name__}")


def onnx_network(path: str) -> TensorNetwork:
    """An ONNX model with trained weights, evaluated on the built-in digits of its input shape (8×8 or 28×28)."""
    from solvermap.ir.workloads.approxhpvm_mnist import digits_28
    from solvermap.ir.workloads.approxhpvm_onnx import network_from_onnx
    from solvermap.ir.workloads.approxhpvm_tensor_ops import digits

    net = network_from_onnx(path)
    datasets = {(1, 8, 8): lambda: digits(image=True), (64,): digits, (1, 28, 28): digits_28,
                (784,): lambda: digits_28(image=False)}
    if tuple(net.input_shape) not in datasets:
        raise InputError(path, "input", f"no built-in dataset has inputs of shape {tuple(net.input_shape)} (digits: "
                         "(1, 8, 8), (64,), (1, 28, 28), (784,)); the approxhpvm pipeline needs one to test accuracy")
    net.data = datasets[tuple(net.input_shape)]()
    check_supported(net.graph, path)
    return net


def _network(ctx: Context, step: str) -> TensorNetwork | None:
    from solvermap.mappers.approxhpvm.from_model import require_weights

    ir = _workload(ctx)
    if isinstance(ir, PromiseKernel):
        if ctx.focus == step:
            raise InputError(ctx.workload.name, "decision", f"{ctx.workload.name} is a PROMISE kernel, not a network; "
                             "only the swing decision applies to it")
        return None
    if step != "fuse":
        require_weights(ir, step, ctx.workload.name)
    return ir


def _loss_limit(ctx: Context) -> float:
    limit = ctx.options_for(BUDGET).loss_limit
    return ctx.target.loss_limit if limit is None else limit


def _allowed_knobs(ctx: Context) -> tuple[str, ...]:
    return parse_knobs(ctx.options_for(KNOB_MAPPING).allowed or KNOBS)


# ---------------------------------------------------------------------- fuse


def _fusion_schedule(decision: fusion_types.FusionDecision, problem: fusion_types.FusionProblem) -> Schedule:
    knobs = {op.name: "P7" if decision.device.get(op.parent) == fusion_types.PROMISE else "FP32" for op in problem.ops}
    return Schedule(knobs, tuple(decision.groups))


def step_fuse(ctx: Context):
    if ctx.export.get("hpvm_config"):  # an unwritable export path fails before any expensive step
        hpvm_config.check_writable(ctx.export["hpvm_config"])
    net = _network(ctx, "fuse")
    if net is None:
        return None
    objective = ctx.options_for(FUSE).objective
    problem = fusion_problem(net, ctx.target, objective)

    def validate(problem, decision):
        report = schedule_cost(net, ctx.target, _fusion_schedule(decision, problem))
        predicted = fusion_types.objective(problem, decision)
        simulated = report.total.time_s if objective == "time" else report.total.energy_j
        internal = sum(1 for e in problem.edges if decision.group_of()[e.src] == decision.group_of()[e.dst])
        return {"objective": objective, "predicted": predicted, "simulated": simulated,
                "relative_difference": abs(predicted - simulated) / max(abs(simulated), 1e-30),
                "gpu_kernels": report.launches, "promise_tasks": sum(1 for d in decision.device.values() if d == "promise"),
                "edges_internalized": internal, "edges": len(problem.edges), "latency_s": report.total.time_s,
                "energy_j": report.total.energy_j}

    decision, record = run_decision(ctx, FUSE, problem, validate=validate)
    ctx.state["network"] = net
    return record


# ---------------------------------------------------------------------- budget


def _profile(ctx: Context, net: TensorNetwork):
    if "profile" not in ctx.state:
        repeats = ctx.options_for(BUDGET).repeats
        ctx.say(f"budget: profiling {len(net.ops)} ops × {ctx.target.noise.levels} levels × {repeats} injections")
        ctx.state["profile"] = profile_sensitivity(net, ctx.target, repeats=repeats, seed=ctx.seed)
    return ctx.state["profile"]


def new_ledger() -> dict:
    """What a search over the levels spent: the distinct configurations it measured and its injected runs."""
    return {"configurations": set(), "runs": 0}


def make_budget_problem(ctx: Context, net: TensorNetwork, ledger: dict | None = None):
    """The budget problem with its Monte Carlo oracle (cached per configuration and seed). Every measurement is
    recorded in ``ledger`` (default: the context's ``budget.ledger``), so the budget record can report the
    evaluations the solver path made and a competing search can be given the same number."""
    limit, options = _loss_limit(ctx), ctx.options_for(BUDGET)
    profile = _profile(ctx, net)
    runs = ctx.target.mc_runs if options.mc_runs is None else options.mc_runs
    ledger = ledger if ledger is not None else ctx.state.setdefault("budget.ledger", new_ledger())
    cache: dict = {}

    def verify(levels, seed):
        config = tuple(sorted(levels.items()))
        key = (config, seed)
        if key not in cache:
            ctx.say(f"budget: Monte Carlo test {len(cache) + 1} of a candidate ({runs} noisy runs)")
            cache[key] = injection_monte_carlo(net, ctx.target, levels, runs=runs, loss_limit=limit, seed=seed,
                                               pass_rate=ctx.target.pass_rate)
            ledger["configurations"].add(config)
            ledger["runs"] += cache[key]["runs"]
        return cache[key]

    cost_function = options.cost_function
    hardware = None
    if cost_function == budget_types.HARDWARE:
        if "budget.hardware" not in ctx.state:
            fuse = ctx.state.get("fuse")
            groups = gpu_groups_for(net, ctx.target, fuse.groups, fuse.device) if fuse is not None else ()
            ctx.state["budget.hardware"] = hardware_cost(
                net, ctx.target, profile, errors=_op_errors(ctx, net), gpu_groups=groups,
                allowed=_allowed_knobs(ctx), objective=ctx.options_for(KNOB_MAPPING).objective,
                config=ctx.solver_for("knobs"))
        hardware = ctx.state["budget.hardware"]
    return budget_problem(
        net, ctx.target, profile, loss_limit=limit, cost_function=cost_function,
        top=options.top, mc_runs=runs, method=options.method, seed=ctx.seed, verify=verify,
        hardware=hardware, explore=options.explore)


def _op_errors(ctx: Context, net: TensorNetwork):
    if "op_errors" not in ctx.state:
        ctx.state["op_errors"] = op_errors(net, ctx.target, seed=ctx.seed)
    return ctx.state["op_errors"]


def optuna_budget(problem: budget_types.BudgetProblem, ctx: Context):
    """The Optuna baseline: ``budget.optuna_trials`` distinct configurations, each screened by one injection run
    as the seed's tuner evaluates a configuration (L1078); its runs count in the budget step's ledger."""
    net, ledger = _workload(ctx), ctx.state["budget.ledger"]

    ctx.say(f"budget: Optuna baseline, {ctx.options_for(BUDGET).optuna_trials} configurations, one noisy run each")

    def screen(levels):
        ledger["configurations"].add(tuple(sorted(levels.items())))
        ledger["runs"] += 1
        return injection_monte_carlo(net, ctx.target, levels, runs=1, loss_limit=problem.loss_limit,
                                     seed=ctx.seed + 1)["loss_mean"]

    return optuna_baseline(problem, ctx.options_for(BUDGET).optuna_trials, screen)


def step_budget(ctx: Context):
    net = _network(ctx, "budget")
    if net is None:
        return None
    problem = make_budget_problem(ctx, net)
    ledger = ctx.state["budget.ledger"]
    profile = ctx.state["profile"]

    def validate(problem, decision):
        mc = problem.verify(dict(decision.levels), problem.seed)
        return {"loss_limit": problem.loss_limit, "pass_rate": mc["pass_rate"], "mc_runs": mc["runs"],
                "accuracy_mean": mc["accuracy_mean"], "accuracy_std": mc["accuracy_std"],
                "golden_accuracy": mc["golden_accuracy"], "meets_loss_limit": mc["pass_rate"] >= problem.pass_rate,
                "configurations_shipped": len(decision.configurations), "candidates_rejected": len(decision.rejected),
                "monte_carlo_evaluations": decision.evaluations, "profiling_runs": profile.evaluations,
                "profiling_configurations": profile.configurations, "profiling_seconds": profile.seconds,
                # everything the step measured (profiling, baselines, candidates), in distinct configurations
                # and in injected runs
                "configurations_measured": profile.configurations + len(ledger["configurations"]),
                "injection_runs": profile.evaluations + ledger["runs"], "levels": dict(decision.levels)}

    decision, record = run_decision(ctx, BUDGET, problem, validate=validate)
    return record


# ---------------------------------------------------------------------- knobs


def _budget_configurations(ctx: Context, net: TensorNetwork):
    if "budget" not in ctx.state:
        raise InputError(ctx.workload.name, "decision", "knobs needs the budget step")
    decision = ctx.state["budget"]
    problem = ctx.state["budget.problem"]
    configs = list(decision.configurations) or [None]
    out = []
    for c in configs:
        levels = dict(c.levels) if c is not None else dict(decision.levels)
        out.append(({op: problem.l1[levels[op] - 1] for op in problem.ops},
                    {op: problem.sigma[levels[op] - 1] for op in problem.ops}, levels))
    seen, unique = set(), []
    for item in out:
        key = tuple(sorted(item[2].items()))
        if key not in seen:
            seen.add(key)
            unique.append(item)
    return unique


def knob_validation(ctx: Context, net: TensorNetwork, decision, problem, runs: int, limit: float) -> dict:
    spec = ctx.target
    fusion_decision = ctx.state.get("fuse")
    groups = problem.gpu_groups
    schedule = schedule_units(net, decision.knobs, groups)
    report = schedule_cost(net, spec, schedule)
    base = schedule_cost(net, spec, schedule_units(net, all_fp32(net), ()))
    ctx.say(f"knobs: Monte Carlo test of the mapping ({runs} noisy runs)")
    mc = monte_carlo(net, spec, decision.knobs, runs=runs, loss_limit=limit, seed=ctx.seed)
    predicted = knob_types.objective(problem, decision)
    simulated = report.total.energy_j if problem.objective_name == "energy" else report.total.time_s
    summary = mc.summary()
    return {
        "pass_rate": summary["pass_rate"], "accuracy_mean": summary["accuracy_mean"],
        "accuracy_std": summary["accuracy_std"], "golden_accuracy": summary["golden_accuracy"],
        "loss_limit": limit, "mc_runs": runs, "meets_loss_limit": summary["pass_rate"] >= spec.pass_rate,
        "speedup": base.total.time_s / report.total.time_s,
        "energy_reduction": base.total.energy_j / report.total.energy_j,
        "latency_s": report.total.time_s, "energy_j": report.total.energy_j,
        "baseline_fp32_latency_s": base.total.time_s, "baseline_fp32_energy_j": base.total.energy_j,
        "accuracy_loss": summary["loss_mean"], f"predicted_{problem.objective_name}": predicted,
        f"simulated_{problem.objective_name}": simulated,
        "relative_difference": abs(predicted - simulated) / max(abs(simulated), 1e-30),
        "layer_settings": knob_types.KnobDecision(decision.knobs).layer_settings(problem),
        "fused_with": "fuse" if fusion_decision is not None else "none",
    }


def step_knobs(ctx: Context):
    net = _network(ctx, "knobs")
    if net is None:
        return None
    spec = ctx.target
    options = ctx.options_for(KNOB_MAPPING)
    objective, allowed = options.objective, _allowed_knobs(ctx)
    runs = spec.mc_runs if options.mc_runs is None else options.mc_runs
    limit = _loss_limit(ctx)
    _op_errors(ctx, net)
    fuse = ctx.state.get("fuse")
    groups = gpu_groups_for(net, spec, fuse.groups, fuse.device) if fuse is not None else ()
    max_validations = options.max_validations

    def solve_one(index, l1, l2, levels, failed):
        problem = knob_problem(net, spec, errors=ctx.state["op_errors"], l1_budget=l1, l2_budget=l2,
                               gpu_groups=groups, allowed=allowed, objective=objective, failed=failed)
        if knob_mapping.diagnose(problem):
            return None
        try:
            decision, record = run_decision(ctx, KNOB_MAPPING, problem)
        except InfeasibleError:
            if failed:  # the failure cuts removed every mapping these budgets allow
                return None
            raise
        return MappingCandidate(knob_types.objective(problem, decision), index, decision, problem, (l1, l2, levels),
                                record)

    candidates = [c for index, (l1, l2, levels) in enumerate(_budget_configurations(ctx, net))
                  if (c := solve_one(index, l1, l2, levels, ())) is not None]
    if not candidates:
        raise InfeasibleError("knobs: no budget configuration can be met by the allowed knobs "
                              f"({', '.join(allowed)})")
    first = min(candidates, key=lambda c: (c.value, c.index))
    safe = most_accurate_mapping(first.problem)
    fallback = MappingCandidate(knob_types.objective(first.problem, safe), -1, safe, first.problem, first.budgets,
                                first.extra)
    screen = None
    if ctx.options_for(KNOB_MAPPING).layer_screen:
        screen = layer_screen(net, spec, runs=runs, loss_limit=limit, seed=ctx.seed, pass_rate=spec.pass_rate)
    selection = select_mapping(candidates, resolve=lambda c, failed: solve_one(c.index, *c.budgets, failed),
                               validate=lambda c: knob_validation(ctx, net, c.decision, c.problem, runs, limit),
                               max_validations=max_validations, fallback=fallback, screen=screen)
    chosen, record = selection.chosen, selection.chosen.extra
    if selection.status == "fallback" or chosen.index < 0:
        # every solver mapping failed the end-to-end test: ship the most accurate mapping instead
        record.solution = {"knobs": dict(chosen.decision.knobs),
                           "layer_settings": chosen.decision.layer_settings(chosen.problem)}
        record.check = knob_check.check(chosen.problem, chosen.decision)
        record.solution_source = "fallback:most-accurate"
    if selection.status != "meets-loss-limit":
        ctx.say(f"knobs: {selection.validations} mappings failed the Monte Carlo test; status {selection.status}")
    record.validation = dict(selection.validation)
    record.validation["status"] = selection.status
    record.validation["budget_configuration"] = chosen.index
    record.validation["budget_levels"] = chosen.budgets[2]
    record.validation["knob_validations"] = selection.validations  # mappings simulated until one met the limit
    record.validation["failed_mappings"] = [dict(f) for f in selection.failed]
    if screen is not None:
        record.validation["layer_screens"] = len(screen.tested)
    record.details["configurations_mapped"] = len(candidates)
    decision, problem = chosen.decision, chosen.problem
    ctx.state["knobs"], ctx.state["knobs.problem"], ctx.state["knobs.validation"] = decision, problem, record.validation
    if ctx.export.get("hpvm_config"):
        record.validation["hpvm_config"] = export_hpvm_config(ctx, net, decision, problem, record.validation, limit)
    return record


def export_hpvm_config(ctx: Context, net: TensorNetwork, decision, problem, validation: dict, limit: float) -> str:
    """Write the chosen mapping (when it met its limit) after the all-FP32 baseline in HPVM's tuner format."""
    chosen = []
    if validation["meets_loss_limit"]:
        chosen.append(hpvm_config.Chosen(schedule_units(net, decision.knobs, problem.gpu_groups),
                                         validation["speedup"], validation["energy_reduction"],
                                         validation["accuracy_mean"], limit))
    else:
        ctx.say("knobs: no mapping met the loss limit; the HPVM configuration file holds the FP32 baseline only")
    path = hpvm_config.check_writable(ctx.export["hpvm_config"])
    path.write_text(hpvm_config.render(net, ctx.target, chosen))
    return str(path)


@dataclass
class MappingCandidate:
    """One knob mapping of one budget configuration: its objective value, the budget configuration's index,
    the decision and problem, the budgets ``(l1, l2, levels)`` and whatever the caller attaches (a record)."""

    value: float
    index: int
    decision: knob_types.KnobDecision
    problem: knob_types.KnobProblem
    budgets: tuple
    extra: object = None


@dataclass
class MappingSelection:
    chosen: MappingCandidate
    validation: dict
    validations: int
    failed: list
    # "meets-loss-limit": the chosen mapping passed; "fallback": every solver mapping tried failed and the
    # fallback (the most accurate mapping) passed; "loss-limit-not-met": nothing validated passed
    status: str = "meets-loss-limit"


def _dominated(knobs, failed) -> bool:
    return any(all(knob_types.at_most_as_accurate(knobs[o], f[o]) for o in knobs) for f in failed)


def select_mapping(candidates: list[MappingCandidate], *, resolve, validate, max_validations: int,
                   fallback: MappingCandidate | None = None, screen=None) -> MappingSelection:
    """Validate the cheapest mapping on the functional simulator; on failure, cut it (and every mapping at least as
    inaccurate on every op) from every candidate it dominates, re-solve those, and validate the new cheapest.

    A mapping meets per-op budgets, but the budgets come from the injection model, not from PROMISE's own
    noise; when the two disagree the end-to-end test is the arbiter (seed L1163). ``resolve(candidate, failed)``
    re-solves a candidate's budgets with the failure cuts (None when nothing is left); ``validate(candidate)``
    returns a validation dict with ``meets_loss_limit``. Identical mappings are simulated once. Stops at the
    first mapping that meets the limit. When the pool is exhausted or ``max_validations`` simulations have
    failed, the ``fallback`` candidate (the most accurate mapping) is validated and shipped if it passes
    (status "fallback"); otherwise the last mapping validated is returned with its failing validation and status
    "loss-limit-not-met": a mapping is never reported as meeting the limit unless its own validation passed.
    ``screen(knobs)``, when given, returns extra cuts after a failure (:mod:`.layer_screen`).
    """
    pool = list(candidates)
    failed: list[dict] = []
    seen: dict[tuple, dict] = {}
    chosen, validation, validations = None, None, 0
    while pool:
        pool.sort(key=lambda c: (c.value, c.index))
        best = pool[0]
        key = tuple(sorted(best.decision.knobs.items()))
        if key not in seen:
            if validations >= max_validations:
                break
            seen[key] = validate(best)
            validations += 1
        chosen, validation = best, seen[key]
        if validation["meets_loss_limit"]:
            return MappingSelection(chosen, validation, validations, failed)
        failed.append(dict(best.decision.knobs))
        if screen is not None:
            failed += [cut for cut in screen(best.decision.knobs) if cut not in failed]
        pool = [resolve(c, tuple(failed)) if _dominated(c.decision.knobs, failed) else c for c in pool]
        # a re-solved mapping obeys the cuts; the filter only guards against a resolver that ignores them
        pool = [c for c in pool if c is not None and not _dominated(c.decision.knobs, failed)]
    if fallback is not None:
        key = tuple(sorted(fallback.decision.knobs.items()))
        if key not in seen:
            seen[key] = validate(fallback)
            validations += 1
        if seen[key]["meets_loss_limit"] or chosen is None:
            status = "fallback" if seen[key]["meets_loss_limit"] else "loss-limit-not-met"
            return MappingSelection(fallback, seen[key], validations, failed, status)
    if chosen is None:
        raise ValueError("select_mapping needs at least one candidate or a fallback")
    return MappingSelection(chosen, validation, validations, failed, "loss-limit-not-met")


def most_accurate_mapping(problem: knob_types.KnobProblem) -> knob_types.KnobDecision:
    """Every op at its most accurate allowed knob (FP32 when allowed): the mapping shipped when every solver
    mapping failed the end-to-end test. It meets any budget its errors fit; the checker says whether it does."""
    best = [h for h in knob_types.ALL_KNOBS if h in problem.allowed and h not in PROMISE_KNOBS] or \
        [h for h in knob_types.ALL_KNOBS if h in problem.allowed]
    knob = best[-1]
    return knob_types.KnobDecision({o: knob for o in problem.ops})


# ---------------------------------------------------------------------- swing


def step_swing(ctx: Context):
    ir, spec, options = _workload(ctx), ctx.target, ctx.options_for(SWING)
    p_m = spec.mismatch_probability if options.p_m is None else options.p_m
    if isinstance(ir, PromiseKernel):
        problem = swing_problem_kernel(ir, spec, p_m=p_m, runs=options.runs, seed=ctx.seed)
    else:
        problem = swing_problem_network(ir, spec, p_m=p_m, source=options.bound, runs=options.runs, seed=ctx.seed)

    def validate(problem, decision):
        energy = swing_types.objective(problem, decision)
        top = max_swing_energy(problem)
        measured = decision.measured_mismatch
        if measured is None and problem.verify is not None:
            measured = problem.verify(dict(decision.levels))
        return {"p_m": problem.p_m, "bound": problem.source, "levels": dict(decision.levels),
                "energy_per_decision_j": energy, "max_swing_energy_j": top,
                "energy_saving": 1.0 - energy / top, "accuracy_loss": measured,
                "meets_p_m": measured is None or measured <= problem.p_m + 1e-12,
                "mismatch_bound": swing_types.bound(problem, decision.levels)}

    decision, record = run_decision(ctx, SWING, problem, validate=validate)
    ctx.state["swing.validation"] = record.validation
    return record


def validate_end_to_end(ctx: Context) -> dict:
    if "knobs.validation" in ctx.state:
        v = ctx.state["knobs.validation"]
        keys = ("latency_s", "energy_j", "accuracy_loss", "pass_rate", "accuracy_mean", "accuracy_std", "speedup",
                "energy_reduction", "relative_difference", "meets_loss_limit")
        out = {k: v[k] for k in keys if k in v}
        for k, value in v.items():
            if k.startswith(("predicted_", "simulated_")):
                out[k] = value
        return out
    if "swing.validation" in ctx.state:
        v = ctx.state["swing.validation"]
        return {"energy_j": v["energy_per_decision_j"], "accuracy_loss": v["accuracy_loss"],
                "energy_saving": v["energy_saving"]}
    return {}


def _blas1(step):
    def run(ctx: Context):
        with single_threaded_blas():
            return step(ctx)

    run.__name__ = step.__name__
    return run


PIPELINE = Pipeline(
    family="approxhpvm",
    description="ApproxHPVM on a GPU + PROMISE SoC: fusion, accuracy budgets, knob mapping, swing selection",
    steps=(
        decide(FUSE, _blas1(step_fuse), provides=("network", "onnx_network")),
        decide(BUDGET, _blas1(step_budget), needs=("fuse", "onnx_network"),
               provides=("profile", "op_errors", "budget.ledger", "budget.hardware")),
        decide(KNOB_MAPPING, _blas1(step_knobs), needs=("fuse", "budget", "budget.problem", "op_errors", "onnx_network"),
               provides=("op_errors", "knobs.validation")),
        decide(SWING, _blas1(step_swing), needs=("onnx_network",), provides=("swing.validation",)),
    ),
    validate=validate_end_to_end,
    default_workload="dnn3",
    exports=("hpvm_config",),  # export.hpvm_config=PATH: the chosen configurations in HPVM's tuner format
)

__all__ = ["PIPELINE", "PROMISE_KNOBS"]
