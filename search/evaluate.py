"""Trial evaluation: one configuration of the search space → every workload mapped → metrics.

For each workload of the study a trial

1. builds the target spec from the preset plus the study's fixed overrides plus the sampled
   ``target.*`` values (:func:`solvermap.hardware.targets.load_target`), and the workload with its
   sampled ``workload.*`` parameters (:func:`solvermap.ir.workloads.build`);
2. runs the family's pipeline (``mappers.pipeline_for(family).run``): every decision is solved by the
   configured backend, checked by its independent checker, and the mapping is validated end to end;
   inner solves go through the study's :class:`~solvermap.search.cache.SolveCache`;
3. collects the validation metrics (``cycles``, ``area_mm2``, ... — DEVELOPERS.md) and the solver
   statistics of the decision records.

Per-workload metrics combine into the trial's metrics with each objective's ``aggregate``. Each trial has
an *outcome*:

``complete``    every workload mapped, every cap met;
``infeasible``  a decision is proven infeasible (:class:`~solvermap.errors.InfeasibleError`), a decision
                fails its check, the spec rejects the sampled values, a build would pass the memory
                cap (:mod:`solvermap.limits`, the study's ``limits.memory_gb``), or a cap is exceeded;
``unknown``     an inner solve stopped at its budget with no solution and no proof, also after the study's
                ``unknown.retries`` retries with ``unknown.budget_factor`` times the budget
                (:class:`~solvermap.errors.UnknownError`): the design may be feasible;
``pruned``      never evaluated: its certified lower bounds are dominated by the front
                (:mod:`solvermap.search.pruning`; set by the worker, not here).

An infeasible or unknown trial carries a positive ``mapping`` constraint value (``trial.set_constraint``;
constrained samplers treat both alike, as a design they cannot use) and the worst objective values (±inf),
and the study goes on. A metric an objective names but the pipeline does not report is a study error that
stops the study.

Same answer under load: a solve the wall-clock backstop stopped before its deterministic budget
(``SolveResult.backstop_fired``, or an :class:`~solvermap.errors.InfeasibleError` marked ``load_dependent``)
gave an answer that depends on machine load. The cache does not store it, and the trial is evaluated once
more; when the backstop fires again the trial is not reproducible: :class:`NotReproducibleError` (the
worker fails the trial with that message, so it is never part of the tables), and ``metrics.json`` says
``"reproducible": false`` with the decisions at fault.

Each evaluated trial writes ``trials/<number>/``: ``params.yaml``, ``metrics.json``, ``log.txt`` and
per workload ``<workload>/records.json`` (the decision records, as ``solvermap map --json``).
"""

from __future__ import annotations

import importlib
import math
import time
from collections.abc import Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from solvermap.errors import ConfigError, InfeasibleError, InputError, LimitError, SolvermapError, UnknownError
from solvermap.limits import memory_cap
from solvermap.results import backstop_decisions
from solvermap.runs import LOG
from solvermap.search.cache import SolveCache
from solvermap.search.space import distance, split
from solvermap.search.study_file import Cap, StudyFile, check_imports

DERIVED = ("solver_seconds", "max_gap", "trial_seconds")
DECISION_KEYS = ("objective", "gap", "bound", "solve_seconds", "build_seconds", "baseline_objective")


class StudyError(SolvermapError):
    """The study cannot go on (a metric the pipeline does not report, a broken import): stops the run."""


class NotReproducibleError(SolvermapError):
    """A trial whose solves the wall-clock backstop stopped in two evaluations: its answer depends on load."""


ATTEMPTS = 2  # evaluations of a trial whose backstop fired before it is declared not reproducible


@dataclass
class TrialResult:
    """What one configuration scored: feasibility, metrics, objective values and constraint values."""

    config: dict[str, Any]
    feasible: bool
    reason: str = ""
    metrics: dict[str, float] = field(default_factory=dict)
    per_workload: dict[str, dict[str, float]] = field(default_factory=dict)
    values: list[float] = field(default_factory=list)
    constraints: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    cache: dict[str, int] = field(default_factory=dict)
    run_dir: str | None = None
    outcome: str = "complete"  # complete | infeasible | unknown | pruned (module docstring)
    bounds: dict[str, float] = field(default_factory=dict)  # certified lower bounds of the objectives
    dominated_by: dict[str, Any] | None = None  # pruned: the front trial whose values dominate the bounds
    bound_violations: list[str] = field(default_factory=list)  # evaluated values below their bounds (a bug)


def aggregate(values: list[float], how: str) -> float:
    """Combine one metric over workloads: geomean (the seed's cross-app summary, seed 004 L400), mean,
    sum, max or min. A geomean over values that are not all positive falls back to the mean (0 if any is 0)."""
    if not values:
        return math.nan
    if how != "sum" and len(set(values)) == 1:
        return float(values[0])  # exactly (a geomean through logs would round)
    if how == "geomean":
        if all(v > 0 for v in values):
            return math.exp(sum(math.log(v) for v in values) / len(values))
        if any(v == 0 for v in values) and all(v >= 0 for v in values):
            return 0.0
        how = "mean"
    if how == "mean":
        return sum(values) / len(values)
    if how == "sum":
        return float(sum(values))
    if how == "max":
        return float(max(values))
    return float(min(values))


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    try:
        import numpy as np

        if isinstance(value, np.generic):
            return float(value.item())
    except ImportError:  # pragma: no cover
        pass
    return None


def _flatten(prefix: str, mapping: Mapping[str, Any], out: dict[str, float]) -> None:
    for key, value in mapping.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            _flatten(name + ".", value, out)
            continue
        number = _number(value)
        if number is not None:
            out[name] = number


def record_metrics(records: list[Any], validation: Mapping[str, Any]) -> dict[str, float]:
    """Numeric metrics of one mapped workload: validation keys, solver totals and per-decision values."""
    out: dict[str, float] = {}
    _flatten("", validation, out)
    seconds, gaps = 0.0, []
    for r in records:
        s = r.solver
        seconds += float(s.build_seconds or 0.0) + float(s.solve_seconds or 0.0)
        if s.gap is not None and math.isfinite(s.gap):
            gaps.append(float(s.gap))
        values = {"objective": s.objective, "gap": s.gap, "bound": s.bound, "solve_seconds": s.solve_seconds,
                  "build_seconds": s.build_seconds,
                  "baseline_objective": r.baseline.objective if r.baseline is not None else None}
        for key, value in values.items():
            number = _number(value)
            if number is not None:
                out[f"{r.decision}.{key}"] = number
        _flatten(f"{r.decision}.validation.", r.validation or {}, out)
    out["solver_seconds"] = seconds
    out["max_gap"] = max(gaps) if gaps else 0.0
    return out


def _dotted_exists(data: Mapping[str, Any], dotted: str) -> bool:
    node: Any = data
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return True


class Evaluator:
    """Evaluates configurations of one study (see module docstring). ``root`` is the study directory
    (per-trial folders and the solve cache go there); ``root=None`` keeps everything in memory."""

    def __init__(self, study: StudyFile, root: str | Path | None = None, *, source: str = "",
                 allow_imports: bool = False) -> None:
        from solvermap.hardware.targets import load_target
        from solvermap.ir.workloads import info as workload_info
        from solvermap.mappers import pipeline_for

        self.study = study
        self.source = source or study.name
        self.root = Path(root) if root is not None else None
        check_imports(study, allow_imports, self.source)
        for module in study.imports:
            try:
                importlib.import_module(module)
            except ImportError as exc:
                raise InputError(self.source, "imports", f"cannot import {module!r}: {exc}") from None
        self.base_spec = load_target(study.target.name, study.target.overrides)
        self.family = self.base_spec.family
        self.pipeline = pipeline_for(self.family)
        self.workload_params = {w.name: dict(workload_info(w.name, self.family).params) for w in study.workloads}
        for w in study.workloads:
            for key in w.params:
                if key not in self.workload_params[w.name]:
                    raise InputError(self.source, f"workloads.{w.name}.params.{key}",
                                     f"unknown parameter; known: {', '.join(sorted(self.workload_params[w.name])) or '(none)'}")
        self._check_space()
        self.cache = SolveCache(self.root / "cache" if self.root is not None else None,
                                neighbours=study.cache.neighbours,
                                distance=lambda a, b: distance(study.space, a, b)) if study.cache.enabled else None

    def _check_space(self) -> None:
        """Every parameter name must address something that exists (typos are errors, not new fields)."""
        from solvermap.formulations.solver import SolverConfig
        from solvermap.mappers.pipeline import validate_options

        spec = self.base_spec.model_dump()
        models = self.pipeline.option_models()
        try:
            self.pipeline.check_options(self.study.decisions)
        except ConfigError as exc:
            raise InputError(self.source, "decisions", str(exc)) from None
        names = [(name, f"space.{name}") for name in self.study.space]
        values: dict[str, list[Any]] = {}  # values the search may give a name
        for name, param in self.study.space.items():
            values.setdefault(name, []).extend(checked_values(name, param))
            for choice, settings in getattr(param, "sets", {}).items():
                names += [(key, f"space.{name}.sets.{choice}.{key}") for key in settings]
                for key, value in settings.items():
                    values.setdefault(key, []).append(value)
        for name, where in names:
            root, rest = name.split(".", 1)
            if root == "choice":
                continue
            if root == "target" and not _dotted_exists(spec, rest):
                raise InputError(self.source, where, f"the {self.family} target spec has no field {rest!r}")
            if root == "workload":
                head, _, tail = rest.partition(".")
                if tail:
                    if head not in self.workload_params:
                        raise InputError(self.source, where, f"workload {head!r} is not in this study's workloads")
                    if tail not in self.workload_params[head]:
                        raise InputError(self.source, where, f"workload {head!r} has no parameter {tail!r}")
                elif not any(rest in p for p in self.workload_params.values()):
                    raise InputError(self.source, where, f"no workload of this study has a parameter {rest!r}")
            if root == "decisions":
                decision, _, option = rest.partition(".")
                if decision not in models:
                    raise InputError(self.source, where, f"the {self.family} pipeline has no step {decision!r} that "
                                     f"takes options; its steps with options: {', '.join(models)}")
                if not option:
                    raise InputError(self.source, where, "expected decisions.<decision>.<option>")
                if option.split(".")[0] not in models[decision].model_fields:
                    raise InputError(self.source, where, f"unknown option; {decision} takes: "
                                     f"{', '.join(sorted(models[decision].model_fields))}")
                for value in values.get(name, []) if "." not in option else []:
                    try:
                        validate_options(models[decision], {**self.study.decisions.get(decision, {}), option: value},
                                         f"decisions.{decision}")
                    except ConfigError as exc:
                        raise InputError(self.source, where, str(exc)) from None
            if root == "solver" and rest not in SolverConfig.model_fields:
                raise InputError(self.source, where, f"unknown solver setting; known: {', '.join(SolverConfig.model_fields)}")
        for name, param in self.study.space.items():
            for value in checked_values(name, param):
                self._check_value(name, param, value)

    def _check_value(self, name: str, param: Any, value: Any) -> None:
        """One value of a space parameter, with the settings its ``when`` conditions need (their first allowed
        value) and its ``sets``, against the target spec, the workloads' parameter ranges and the solver
        settings; the other parameters stay at the study's fixed values. One line naming parameter and value."""
        from pydantic import ValidationError

        from solvermap.formulations.solver import SolverConfig
        from solvermap.hardware.targets import set_dotted, validate_spec
        from solvermap.ir.workloads import info as workload_info
        from solvermap.search.study_file import CategoricalParam

        chosen: dict[str, Any] = {}
        for other, wanted in param.when.items():
            chosen[other] = (wanted if isinstance(wanted, list) else [wanted])[0]
        chosen[name] = value
        config = {k: v for k, v in chosen.items()}
        parts = split(self.study, config, self.study.workloads[0].name, {})
        where, shown = f"space.{name}", repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
        try:
            spec = self.base_spec.model_dump()
            for dotted, setting in parts["target"].items():
                set_dotted(spec, dotted, setting, self.source)
            validate_spec(spec, self.source)
            for ref in self.study.workloads:
                params = split(self.study, config, ref.name, self.workload_params[ref.name])["workload"]
                workload_info(ref.name, self.family).checked({**ref.params, **params})
            if parts["solver"]:
                try:
                    SolverConfig.model_validate({**self.study.solver.model_dump(), **parts["solver"]})
                except ValidationError as exc:
                    raise InputError("", "", exc.errors()[0]["msg"].removeprefix("Value error, ")) from None
        except InputError as exc:
            at = f" ({exc.field})" if exc.field and exc.field != name.split(".", 1)[-1] else ""
            kind = "choice" if isinstance(param, CategoricalParam) else "value"
            raise InputError(self.source, where, f"{kind} {shown} is not valid{at}: {exc.problem}") from None

    # -----------------------------------------------------------------------------------------
    def evaluate(self, config: Mapping[str, Any], number: int | None = None, bounds: Any = None) -> TrialResult:
        """Map every workload under ``config``; never raises for an infeasible design point. Given the
        design's certified ``bounds`` (:class:`~solvermap.search.bounds.DesignBounds`), the result keeps them
        and lists any value below its bound (logged as a warning: a bound that does not hold is a bug)."""
        start = time.perf_counter()
        config = dict(config)
        trial_dir = None
        if self.root is not None and number is not None:
            from solvermap.runs import RunDirectory

            trial_dir = RunDirectory(self.root / "trials" / f"{number:06d}")
            trial_dir.path.mkdir(parents=True, exist_ok=True)
            trial_dir.write_yaml("params.yaml", config)
        if self.cache is not None:
            self.cache.begin_trial(number, config)
            before = self.cache.stats()
        per_workload: dict[str, dict[str, float]] = {}
        reason, unknown, fired = "", False, []
        with trial_dir.logging() if trial_dir is not None else nullcontext(), memory_cap(self.study.limits.memory_gb):
            for attempt in range(1, ATTEMPTS + 1):
                per_workload, reason, fired, unknown = self._map_all(config, trial_dir)
                if not fired:
                    break
                LOG.warning("the wall-clock backstop stopped %s before the deterministic budget (evaluation %d of %d): "
                            "the answer may depend on machine load%s", ", ".join(fired), attempt, ATTEMPTS,
                            "; evaluating again" if attempt < ATTEMPTS else "")
        cache = {}
        if self.cache is not None:
            after = self.cache.stats()
            cache = {k: after[k] - before[k] for k in after}
        result = self._score(config, per_workload, reason)
        if unknown:
            result.outcome = "unknown"
        result.seconds = time.perf_counter() - start
        result.metrics["trial_seconds"] = result.seconds
        result.cache = cache
        if bounds is not None:
            from solvermap.search.bounds import violations

            labels = [o.label for o in self.study.objectives]
            result.bounds = {label: b for label, b in zip(labels, bounds.objectives) if b is not None}
            result.bound_violations = violations(bounds, result.values, labels)
            for text in result.bound_violations:
                LOG.warning("trial %s: certified bound violated: %s", number, text)
        if trial_dir is not None:
            result.run_dir = str(trial_dir.path)
            trial_dir.write_json("metrics.json", {"outcome": result.outcome, "feasible": result.feasible,
                                                  "reason": result.reason,
                                                  "metrics": result.metrics, "per_workload": per_workload,
                                                  "values": result.values, "constraints": result.constraints,
                                                  "cache": cache, "seconds": result.seconds,
                                                  "reproducible": not fired, "backstop_fired": fired})
        if fired:
            message = (f"not reproducible: the wall-clock backstop stopped {', '.join(fired)} before the deterministic "
                       f"budget in {ATTEMPTS} evaluations (the machine is too loaded for this budget)")
            if trial_dir is not None:
                with trial_dir.logging():
                    LOG.error(message)
            raise NotReproducibleError(message)
        if trial_dir is not None:
            with trial_dir.logging():
                LOG.info("feasible" if result.feasible else f"{result.outcome}: {result.reason}")
        return result

    def _map_all(self, config: Mapping[str, Any],
                 trial_dir: Any) -> tuple[dict[str, dict[str, float]], str, list[str], bool]:
        """Map every workload: per-workload metrics, the reason the trial is infeasible or unknown ("" if it is
        neither), the ``workload: decision`` names whose solve the wall-clock backstop stopped, and whether the
        trial is unknown (a solve with no solution and no proof, :class:`~solvermap.errors.UnknownError`)."""
        per_workload: dict[str, dict[str, float]] = {}
        fired: list[str] = []
        for ref in self.study.workloads:
            try:
                per_workload[ref.name], stopped = self._map_one(ref, config, trial_dir)
            except UnknownError as exc:
                return per_workload, f"{ref.name}: {exc}", fired, True
            except (InfeasibleError, InputError, ConfigError, LimitError) as exc:
                if isinstance(exc, InfeasibleError) and exc.load_dependent:
                    fired.append(f"{ref.name}: {str(exc).split(':')[0]}")
                return per_workload, f"{ref.name}: {exc}", fired, False
            fired += [f"{ref.name}: {d}" for d in stopped]
        return per_workload, "", fired, False

    def _map_one(self, ref: Any, config: Mapping[str, Any], trial_dir: Any) -> tuple[dict[str, float], list[str]]:
        """One workload's metrics and the decisions whose solve the wall-clock backstop stopped."""
        from solvermap.hardware.targets import load_target
        from solvermap.ir.workloads import build as build_workload
        from solvermap.mappers.pipeline import Context

        parts = split(self.study, config, ref.name, self.workload_params[ref.name])
        spec = load_target(self.study.target.name, parts["target"])
        params = {**ref.params, **parts["workload"]}
        built = build_workload(ref.name, self.family, params)
        solver = self.study.solver
        changes = dict(parts["solver"])
        if "seed" not in self.study.solver.model_fields_set:
            changes.setdefault("seed", self.study.seed)
        try:
            solver = solver.with_(**changes)
            solver = type(solver).model_validate(solver.model_dump())
        except Exception as exc:  # noqa: BLE001 - pydantic error → one line
            raise ConfigError(f"solver settings {changes}: {str(exc).splitlines()[0]}") from None

        def progress(message: str) -> None:
            LOG.info("%s: %s", ref.name, message)

        ctx = Context(workload=built, target=spec, solver=solver, options=parts["decisions"], seed=self.study.seed,
                      progress=progress, solve_cache=self.cache, retries=self.study.unknown.retries,
                      retry_factor=self.study.unknown.budget_factor)
        start = time.perf_counter()
        result = self.pipeline.run(ctx)
        seconds = time.perf_counter() - start
        if trial_dir is not None:
            from solvermap.results import to_jsonable

            folder = trial_dir.path / _safe(ref.name)
            folder.mkdir(exist_ok=True)
            from solvermap.runs import RunDirectory

            RunDirectory(folder).write_json("records.json", to_jsonable({
                "workload": built.name, "params": built.params, "target": spec.model_dump(),
                "decisions": [r.to_json() for r in result.records], "validation": result.validation}))
        stopped = backstop_decisions(result.records)
        failed = [(r.decision, r.check.violations[0]) for r in result.records if not r.check.ok]
        if failed and stopped:
            raise InfeasibleError(f"{failed[0][0]}: failed its check ({failed[0][1].rule}) after the wall-clock backstop "
                                  "stopped a solve", load_dependent=True)
        if failed:
            decision, violation = failed[0]
            raise InfeasibleError(f"decision {decision} failed its check ({violation.rule}: {violation.message})")
        metrics = record_metrics(result.records, result.validation)
        metrics["trial_seconds"] = seconds
        if self.study.metrics:
            self._derive(metrics, spec.model_dump(), built.params)
        return metrics, stopped

    def _derive(self, metrics: dict[str, float], spec: dict[str, Any], params: dict[str, Any]) -> None:
        """Add the study's derived metrics, in file order (a later one may use an earlier one)."""
        from solvermap.search.expressions import ExpressionError, evaluate, parse, resolver

        for name, text in self.study.metrics.items():
            try:
                metrics[name] = evaluate(parse(text), resolver(metrics, spec, params))
            except ExpressionError as exc:
                raise StudyError(f"{self.source}: metrics.{name}: {exc}") from None

    def _score(self, config: dict[str, Any], per_workload: dict[str, dict[str, float]], reason: str) -> TrialResult:
        study = self.study
        caps = {cap.key: 0.0 for cap in study.constraints}
        if reason:
            worst = [math.inf if o.direction == "minimize" else -math.inf for o in study.objectives]
            return TrialResult(config, False, reason, {}, per_workload, worst, {"mapping": 1.0, **caps},
                               outcome="infeasible")
        names = sorted(set().union(*(m.keys() for m in per_workload.values())))
        metrics: dict[str, float] = {}
        for name in names:
            values = [m[name] for m in per_workload.values() if name in m]
            metrics[name] = aggregate(values, "geomean")
        values = []
        for objective in study.objectives:
            values.append(self._aggregate_metric(objective.metric, objective.aggregate, per_workload, "objective"))
            metrics[objective.label] = values[-1]
        for cap in study.constraints:
            how = cap.aggregate or ("max" if cap.max is not None else "min")
            value = self._aggregate_metric(cap.metric, how, per_workload, "constraint")
            caps[cap.key] = _cap_violation(cap, value)
        feasible = all(v <= 0 for v in caps.values())
        over = [k for k, v in caps.items() if v > 0]
        return TrialResult(config, feasible, f"over cap: {', '.join(over)}" if over else "", metrics, per_workload,
                           values, {"mapping": 0.0, **caps}, outcome="complete" if feasible else "infeasible")

    def _aggregate_metric(self, metric: str, how: str, per_workload: dict[str, dict[str, float]], role: str) -> float:
        missing = [w for w, m in per_workload.items() if metric not in m]
        if missing:
            known = sorted(per_workload[missing[0]])
            raise StudyError(f"{self.source}: {role} metric {metric!r} is not reported by the {self.family} "
                             f"pipeline for workload {missing[0]!r}; it reports: {', '.join(known)}")
        value = aggregate([m[metric] for m in per_workload.values()], how)
        if math.isnan(value):
            raise StudyError(f"{self.source}: {role} metric {metric!r} is NaN for this trial")
        return value


MAX_CHECKED = 1000  # values per parameter checked one by one; a wider int range is checked at its ends


def checked_values(name: str, param: Any) -> list[Any]:
    """The values of a space parameter the load-time check tries: every value of a finite parameter of at
    most :data:`MAX_CHECKED` values, else the ends of its range."""
    from solvermap.search.space import values_of
    from solvermap.search.study_file import CategoricalParam, IntParam

    if isinstance(param, CategoricalParam):
        return list(param.choices)
    count = ((param.high - param.low) // param.step + 1 if isinstance(param, IntParam)
             else (param.high - param.low) / param.step + 1 if param.step else math.inf)
    if count <= MAX_CHECKED:
        return values_of(name, param)
    return [param.low, param.high]


def _cap_violation(cap: Cap, value: float) -> float:
    """How far over the cap, relative to the cap (≤ 0 means within)."""
    bound = cap.max if cap.max is not None else cap.min
    scale = abs(bound) if bound else 1.0
    excess = (value - bound) if cap.max is not None else (bound - value)
    return excess / scale


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
