"""A mapper is an ordered list of steps; each decision step runs the same protocol on a :class:`Decision`.

A :class:`Decision` descriptor is everything about one kind of decision: its problem and decision
types, typed options, solve, objective and sense, independent checker, seed baselines, serializer
and the modules its solve reaches. The descriptors live in one registry, :mod:`.decisions`;
a pipeline step refers to one (``decide(PARTITION, partition_step, ...)``).

:func:`run_decision` is the protocol, shared by every target:

1. run the descriptor's baselines on the problem, score each with the problem's own objective and
   check it;
2. solve (backend from config and the decision's ``solver`` options), warm-started from the best
   valid baseline;
3. check the decoded decision with the independent checker;
4. a decision that fails its check never goes downstream: the best valid baseline is used instead
   (``solution_source`` ``fallback:<baseline>``, the record keeps the solver's violations in ``check``
   and the used baseline's report in ``check_used``); with no valid baseline the pipeline stops.
   A valid decision is used unless the best baseline is strictly better (``baseline:<name>``);
5. validate (simulator) and return a :class:`~solvermap.results.DecisionRecord`.

An infeasible problem stops the pipeline with an :class:`~solvermap.errors.InfeasibleError` whose
message is the formulation's diagnosis or the conflicting constraint groups. A solve that stops at its
budget with no solution and no proof (``timeout-no-solution``) while no baseline gives a decision is
*unknown*, not infeasible: it is solved again with ``ctx.retry_factor`` times the budget, up to
``ctx.retries`` times, and then stops the pipeline with an :class:`~solvermap.errors.UnknownError`.

Options and state are declared and checked before anything runs. Each step has an options model
(a decision's comes from its descriptor; ``--set decisions.<step>.<key>=value``), and
:meth:`Pipeline.check_options` validates every option of a run before the first step: an unknown
step or key, or a value out of range, is one line naming the valid ones. Steps read the validated
model with ``ctx.options_for(DECISION)``. Each step declares the ``ctx.state`` keys it ``needs`` and
``provides`` (a decision step also provides ``<name>`` and ``<name>.problem``); the pipeline checks
at construction that every need is provided by an earlier step, and while it runs a step, reading a
key another step provides without declaring it, or writing an undeclared key, is a programming error.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from solvermap.codec import decode, encode
from solvermap.errors import ConfigError, InfeasibleError, UnknownError, UnknownNameError
from solvermap.formulations.solver import CONVEX_BACKENDS, MILP_BACKENDS, SolverConfig, Status
from solvermap.limits import check_estimate
from solvermap.results import BaselineResult, BaselineUnavailable, CheckReport, DecisionRecord, to_jsonable

O = TypeVar("O", bound="StepOptions")
LOG = logging.getLogger("solvermap")


# =========================================================================== options


class StepOptions(BaseModel):
    """Options of a step (``--set decisions.<step>.<key>=value``); subclasses declare typed fields."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class DecisionOptions(StepOptions):
    """Options of a decision step: its own fields plus per-decision solver settings."""

    solver: dict[str, Any] = Field(default_factory=dict, description="SolverConfig fields for this decision only, "
                                   "e.g. {backend: highs, time_limit_s: 60}")

    @field_validator("solver")
    @classmethod
    def _solver_fields(cls, value: dict[str, Any]) -> dict[str, Any]:
        try:
            SolverConfig.model_validate(value)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"])
            raise ValueError(f"{where}: {'unknown solver setting' if err['type'] == 'extra_forbidden' else err['msg']}") from None
        return value


def describe_schema(schema: Mapping[str, Any]) -> str:
    """What a JSON-schema fragment allows, in words: "an integer ≥ 1", "one of auto, slots"."""
    if "anyOf" in schema:
        return " or ".join(describe_schema(s) for s in schema["anyOf"])
    if "enum" in schema:
        return "one of " + ", ".join(map(str, schema["enum"]))
    kind = schema.get("type")
    if kind in ("integer", "number"):
        word = "an integer" if kind == "integer" else "a number"
        low, low_open = schema.get("minimum", schema.get("exclusiveMinimum")), "exclusiveMinimum" in schema
        high, high_open = schema.get("maximum", schema.get("exclusiveMaximum")), "exclusiveMaximum" in schema
        if low is not None and high is not None:
            return f"{word} in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
        if low is not None:
            return f"{word} {'>' if low_open else '≥'} {low:g}"
        if high is not None:
            return f"{word} {'<' if high_open else '≤'} {high:g}"
        return word
    if kind == "array":
        if "prefixItems" in schema:
            return "a list [" + ", ".join(describe_schema(s) for s in schema["prefixItems"]) + "]"
        return f"a list of ({describe_schema(schema.get('items', {}))})"
    return {"boolean": "true or false", "string": "a string", "object": "a mapping", "null": "null (the default)"}.get(
        kind, "a value")


def validate_options(model: type[O], values: Mapping[str, Any] | None, where: str) -> O:
    """``values`` as ``model``; an unknown key or a bad value is one :class:`ConfigError` line."""
    values = dict(values or {})
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = str(err["loc"][0]) if err["loc"] else ""
        if err["type"] == "extra_forbidden":
            raise ConfigError(f"{where}.{key}: unknown option; valid: {', '.join(sorted(model.model_fields))}") from None
        schema = model.model_json_schema(mode="validation").get("properties", {}).get(key, {})
        message = err["msg"].removeprefix("Value error, ")
        raise ConfigError(f"{where}.{key}: {values.get(key)!r} is not allowed ({message}); "
                          f"expected {describe_schema(schema)}") from None


# =========================================================================== the descriptor


def _import(path: str) -> Any:
    module, _, attribute = path.partition(":")
    value: Any = importlib.import_module(module)
    for part in attribute.split(".") if attribute else ():
        value = getattr(value, part)
    return value


@dataclass(frozen=True)
class Ref:
    """A function or type named ``"module:attribute"``, imported on first use. Descriptors refer to code in
    ``mappers/<family>`` this way, because those packages import the registry for their step lists."""

    path: str

    def get(self) -> Any:
        return _import(self.path)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.get()(*args, **kwargs)

    def __str__(self) -> str:
        return self.path


def resolve(value: Any) -> Any:
    """``value`` itself, or what a :class:`Ref` names."""
    return value.get() if isinstance(value, Ref) else value


def qualified_name(value: Any) -> str:
    """``module:qualname`` of a function, type or :class:`Ref`."""
    if isinstance(value, (Ref, ModuleSolve)):
        return str(value)
    if isinstance(value, functools.partial):
        return qualified_name(value.func)
    module = getattr(value, "__module__", None) or type(value).__module__
    return f"{module}:{getattr(value, '__qualname__', type(value).__qualname__)}"


@dataclass(frozen=True)
class Baseline:
    """A seed heuristic run beside the solver: ``run(problem, **kwargs)``. With ``seed`` it also receives
    ``seed=ctx.seed``; with ``options`` those options of its decision, by name; with ``context`` the
    :class:`Context` as second argument (for state such as an earlier decision). ``when(options)`` false
    leaves it out (Optuna with 0 trials). It returns a decision, or None when it finds none."""

    name: str
    run: Callable[..., Any]
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    seed: bool = False
    options: tuple[str, ...] = ()
    context: bool = False
    when: Callable[[Any], bool] | None = None

    def applies(self, options: Any) -> bool:
        return self.when is None or bool(self.when(options))

    def __call__(self, problem: Any, ctx: Context, options: Any) -> Any:
        kwargs = dict(self.kwargs)
        if self.seed:
            kwargs["seed"] = ctx.seed
        for name in self.options:
            kwargs[name] = getattr(options, name)
        return self.run(problem, ctx, **kwargs) if self.context else self.run(problem, **kwargs)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "function": qualified_name(self.run)}
        if self.kwargs:
            out["kwargs"] = dict(self.kwargs)
        if self.seed:
            out["seed"] = True
        if self.options:
            out["options"] = list(self.options)
        if self.context:
            out["context"] = True
        return out


@dataclass(frozen=True)
class ModuleSolve:
    """``solve(problem, config, hint, options)`` of a formulation module whose ``solve(problem, config, hint)``
    takes no options."""

    module: Any  # a module or a Ref to one

    def __call__(self, problem: Any, config: SolverConfig, hint: Any, options: Any) -> Any:
        return resolve(self.module).solve(problem, config, hint)

    def __str__(self) -> str:
        module = self.module
        if isinstance(module, Ref):
            return f"{module.path}:solve"
        if inspect.ismodule(module):
            return f"{module.__name__}:solve"
        return f"{module.__module__}:{module.__qualname__}.solve"


@dataclass(frozen=True, eq=False)
class Decision:
    """One kind of decision, everything about it in one place (see the module docstring).

    ``solve(problem, config, hint, options) -> Solved``; ``objective(problem, decision) -> float``
    (``sense`` "min" | "max"); ``checker(problem, decision) -> CheckReport``; ``serialize(problem,
    decision)`` gives the record's ``solution`` (default: the decision's plain JSON); ``modules`` are the
    formulation module(s) and the problem module: the design-space cache's digest covers them and what
    they import. ``preferred_backend`` replaces the global default backend (``cpsat``) for this decision
    unless the user names one for it. Types and functions may be :class:`Ref` s.
    """

    name: str
    summary: str
    kind: str  # "milp" | "cpsat" | "convex": which backends apply
    problem_type: Any
    decision_type: Any
    options: type[DecisionOptions]
    solve: Callable[[Any, SolverConfig, Any, Any], Any]
    objective: Callable[[Any, Any], float]
    checker: Callable[[Any, Any], CheckReport]
    modules: tuple[str, ...]
    sense: str = "min"
    baselines: tuple[Baseline, ...] = ()
    serialize: Callable[[Any, Any], Any] | None = None
    diagnose: Callable[[Any], str | None] | None = None
    preferred_backend: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("milp", "cpsat", "convex"):
            raise ValueError(f"decision {self.name}: kind must be milp, cpsat or convex, not {self.kind!r}")
        if self.sense not in ("min", "max"):
            raise ValueError(f"decision {self.name}: sense must be min or max, not {self.sense!r}")

    @property
    def backends(self) -> tuple[str, ...]:
        return CONVEX_BACKENDS if self.kind == "convex" else MILP_BACKENDS

    def dump(self, decision: Any) -> Any:
        """The decision as plain JSON, read back exactly by :meth:`load` (the solve cache's format)."""
        return encode(decision)

    def load(self, data: Any) -> Any:
        return decode(data, resolve(self.decision_type))

    def solution(self, problem: Any, decision: Any) -> Any:
        """The record's ``solution`` for a decision."""
        return self.serialize(problem, decision) if self.serialize is not None else to_jsonable(decision)

    def to_json(self) -> dict[str, Any]:
        """What ``solvermap decisions --json`` shows."""
        return {"name": self.name, "summary": self.summary, "kind": self.kind, "backends": list(self.backends),
                **({"preferred_backend": self.preferred_backend} if self.preferred_backend else {}),
                "sense": self.sense, "problem": qualified_name(self.problem_type),
                "decision": qualified_name(self.decision_type), "solve": qualified_name(self.solve),
                "formulation": list(self.modules), "objective": qualified_name(self.objective),
                "checker": qualified_name(self.checker), "baselines": [b.to_json() for b in self.baselines],
                "options": self.options.model_json_schema()}


# =========================================================================== context and state


class StateError(RuntimeError):
    """A step read or wrote a ``ctx.state`` key it does not declare (a programming error)."""


class State(dict):
    """``ctx.state``: artifacts passed between steps. While :meth:`Pipeline.run` runs a step, reading a key
    that some step of the pipeline provides but this step does not declare, or writing an undeclared key,
    raises :class:`StateError`."""

    _guard: tuple[str, frozenset[str], frozenset[str], frozenset[str]] | None = None  # step, reads, writes, known

    @contextmanager
    def guarded(self, step: str, reads: frozenset[str], writes: frozenset[str], known: frozenset[str]) -> Iterator[None]:
        self._guard = (step, reads, writes, known)
        try:
            yield
        finally:
            self._guard = None

    def _read(self, key: Any) -> None:
        if self._guard is not None:
            step, reads, _, known = self._guard
            if key in known and key not in reads:
                raise StateError(f"step {step!r} reads ctx.state[{key!r}] without declaring it in needs")

    def _write(self, key: Any) -> None:
        if self._guard is not None:
            step, _, writes, _ = self._guard
            if key not in writes:
                raise StateError(f"step {step!r} writes ctx.state[{key!r}] without declaring it in provides")

    def __getitem__(self, key: Any) -> Any:
        self._read(key)
        return super().__getitem__(key)

    def __contains__(self, key: Any) -> bool:
        self._read(key)
        return super().__contains__(key)

    def get(self, key: Any, default: Any = None) -> Any:
        self._read(key)
        return super().get(key, default)

    def __setitem__(self, key: Any, value: Any) -> None:
        self._write(key)
        super().__setitem__(key, value)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        self._read(key)
        if not super().__contains__(key):
            self._write(key)
        return super().setdefault(key, default)

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key in dict(*args, **kwargs):
            self._write(key)
        super().update(*args, **kwargs)


@dataclass
class Context:
    """Everything a step reads and writes: the workload, target, solver config, options and state."""

    workload: Any  # solvermap.ir.workloads.Workload
    target: Any  # solvermap.hardware.targets.TargetSpec
    solver: SolverConfig
    options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # raw: decisions.<step>.<key>
    seed: int = 0
    state: State = field(default_factory=State)
    records: list[DecisionRecord] = field(default_factory=list)
    progress: Callable[[str], None] | None = None
    focus: str | None = None  # the decision the user asked for (``solve DECISION``)
    export: Mapping[str, str] = field(default_factory=dict)  # files to write besides the run (``export.<file>``)
    # Optional cache of inner solves shared across runs (``solvermap.search.cache.SolveCache``): an object
    # with ``solve(ctx, decision, problem, config, hint, options) -> Solved``.
    solve_cache: Any = None
    # A solve that ends with neither a solution nor a proof, and no baseline, is solved again with
    # ``retry_factor`` times the budget, at most ``retries`` times, before the decision is reported unknown.
    retries: int = 0
    retry_factor: float = 4.0
    _typed: dict[str, StepOptions] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.state, State):
            self.state = State(self.state)

    def options_for(self, owner: Decision | str, model: type[O] | None = None) -> Any:
        """The validated options of a decision (``ctx.options_for(PARTITION)``), or of a transform step
        or the validation by name and model (``ctx.options_for("optimize", OptimizeOptions)``)."""
        name = owner if isinstance(owner, str) else owner.name
        model = model if model is not None else owner.options  # type: ignore[union-attr]
        typed = self._typed.get(name)
        if not isinstance(typed, model):
            typed = validate_options(model, self.options.get(name), f"decisions.{name}")
            self._typed[name] = typed
        return typed

    def solver_for(self, decision: str, preferred: str | None = None) -> SolverConfig:
        """The run's solver config with this decision's ``solver`` overrides applied; ``preferred`` replaces
        the global default backend (``cpsat``) when the decision names no backend of its own."""
        overrides = dict(self.options.get(decision, {}).get("solver", {}) or {})
        if preferred is not None and self.solver.backend == "cpsat" and "backend" not in overrides:
            overrides["backend"] = preferred
        if not overrides:
            return self.solver
        try:
            return SolverConfig.model_validate({**self.solver.model_dump(), **overrides})
        except ValidationError as exc:
            err = exc.errors()[0]
            raise ConfigError(f"decisions.{decision}.solver.{'.'.join(map(str, err['loc']))}: {err['msg']}") from None

    def say(self, message: str) -> None:
        if self.progress is not None:
            self.progress(message)


# =========================================================================== steps and pipelines


@dataclass(frozen=True)
class Step:
    """One step: a decision (``decision`` set; it records) or a transform (a deterministic rewrite).
    ``needs``/``provides`` are the ``ctx.state`` keys it reads and writes."""

    name: str
    summary: str
    run: Callable[[Context], DecisionRecord | None]
    decision: Decision | None = None
    options: type[StepOptions] | None = None  # a transform's options; a decision's come from its descriptor
    needs: tuple[str, ...] = ()
    provides: tuple[str, ...] = ()

    @property
    def kind(self) -> str:
        return "decision" if self.decision is not None else "transform"

    @property
    def options_model(self) -> type[StepOptions] | None:
        return self.decision.options if self.decision is not None else self.options

    @property
    def writes(self) -> tuple[str, ...]:
        auto = (self.name, f"{self.name}.problem") if self.decision is not None else ()
        return auto + self.provides


def decide(decision: Decision, run: Callable[[Context], DecisionRecord | None], *, needs: tuple[str, ...] = (),
           provides: tuple[str, ...] = (), summary: str = "") -> Step:
    """A decision step (its name, options and summary from the descriptor)."""
    return Step(decision.name, summary or decision.summary, run, decision, None, needs, provides)


def transform(name: str, summary: str, run: Callable[[Context], None], *, options: type[StepOptions] | None = None,
              needs: tuple[str, ...] = (), provides: tuple[str, ...] = ()) -> Step:
    """A transform step: a deterministic rewrite of ``ctx.state`` that produces no record."""
    return Step(name, summary, run, None, options, needs, provides)


@dataclass(frozen=True)
class LowerBounds:
    """What a pipeline can certify about a mapping before it solves anything: a lower bound of each named
    validation metric (every mapping the pipeline could return validates to at least that value), and,
    when the bounds already exceed the target (say more PCUs than the array has), why no mapping exists."""

    metrics: dict[str, float]
    infeasible: str = ""
    exact: frozenset[str] = frozenset()  # metrics whose bound is their value (a function of the target alone)


@dataclass(frozen=True)
class Pipeline:
    family: str
    description: str
    steps: tuple[Step, ...]
    validate: Callable[[Context], dict[str, Any]] | None = None  # end-to-end simulation of the mapping
    default_workload: str = ""
    exports: tuple[str, ...] = ()  # the ``export.<file>`` settings this pipeline writes
    validate_options: type[StepOptions] | None = None  # options of the validation (``decisions.validate.<key>``)
    # certified lower bounds of the validation metrics from the workload and target alone, no solve
    # (``search.pruning`` skips a design they show dominated)
    bounds: Callable[[Context], LowerBounds] | None = None
    # (spec, workload) → (step, what, bytes): memory a step will need at least, known before anything runs
    estimate: Callable[[Any, Any], Iterable[tuple[str, str, float]]] | None = None

    def __post_init__(self) -> None:
        provided: set[str] = set()
        for step in self.steps:
            missing = [key for key in step.needs if key not in provided]
            if missing:
                raise StateError(f"{self.family} pipeline: step {step.name!r} needs ctx.state "
                                 f"{', '.join(map(repr, missing))}, which no earlier step provides")
            provided.update(step.writes)

    @property
    def decisions(self) -> list[str]:
        return [s.name for s in self.steps if s.kind == "decision"]

    def option_models(self) -> dict[str, type[StepOptions]]:
        """Step name → options model, for every step that takes options (``validate``: the validation's)."""
        out = {s.name: s.options_model for s in self.steps if s.options_model is not None}
        if self.validate_options is not None:
            out["validate"] = self.validate_options
        return out

    def check_options(self, options: Mapping[str, Any]) -> dict[str, StepOptions]:
        """Validate every ``decisions.<step>.<key>`` of a run against the steps' models (one line on error)."""
        models = self.option_models()
        out: dict[str, StepOptions] = {}
        for name, values in options.items():
            if name not in models:
                raise ConfigError(f"decisions.{name}: the {self.family} pipeline has no step {name!r} that takes "
                                  f"options; its steps with options: {', '.join(models)}")
            if values is not None and not isinstance(values, Mapping):
                raise ConfigError(f"decisions.{name}: expected a mapping of options, got {values!r}")
            out[name] = validate_options(models[name], values, f"decisions.{name}")
        return out

    def check_size(self, spec: Any, workload: Any, upto: str | None = None) -> None:
        """Refuse, before anything runs, a run in which a step that will run needs more memory than the cap
        (:func:`solvermap.limits.check_estimate`: one line naming the parameter and the estimate)."""
        if self.estimate is None:
            return
        names = [s.name for s in self.steps]
        running = set(names[: names.index(upto) + 1] if upto in names else names)
        for step, what, size in self.estimate(spec, workload):
            if step in running:
                check_estimate(f"{step}: {what}", size, getattr(spec, "name", ""))

    def run(self, ctx: Context, upto: str | None = None) -> PipelineResult:
        if upto is not None and upto not in self.decisions:
            raise UnknownNameError(f"decision {upto!r} is not part of the {self.family} pipeline; "
                                   f"its decisions are: {', '.join(self.decisions)}")
        ctx._typed.update(self.check_options(ctx.options))
        self.check_size(ctx.target, ctx.workload, upto)
        ctx.focus = upto
        known = frozenset(key for step in self.steps for key in step.writes)
        for step in self.steps:
            ctx.say(f"{step.name}: {step.summary}")
            start = time.perf_counter()
            with ctx.state.guarded(step.name, frozenset(step.needs + step.writes), frozenset(step.writes), known):
                record = step.run(ctx)
            if record is not None:
                record.seconds = time.perf_counter() - start
                ctx.records.append(record)
            if step.name == upto:
                return PipelineResult(ctx.records, record.validation if record else {})
        validation = {}
        if self.validate is not None:
            ctx.say("validate: simulating the whole mapping")
            validation = self.validate(ctx)
        return PipelineResult(ctx.records, validation)


@dataclass
class PipelineResult:
    """The records of the decisions that ran and the end-to-end validation (empty after ``upto``)."""

    records: list[DecisionRecord]
    validation: dict[str, Any]


# =========================================================================== the protocol


def _better(sense: str) -> Callable[[float, float], bool]:
    return (lambda a, b: a < b) if sense == "min" else (lambda a, b: a > b)


def run_baselines(ctx: Context, decision: Decision, problem: Any, options: Any) -> list[BaselineResult]:
    """Every applicable baseline of ``decision`` on ``problem``, scored and checked."""
    results: list[BaselineResult] = []
    applicable = [b for b in decision.baselines if b.applies(options)]
    if applicable:
        ctx.say(f"{decision.name}: baselines {', '.join(b.name for b in applicable)}")
    for baseline in applicable:
        start = time.perf_counter()
        try:
            answer = baseline(problem, ctx, options)
        except BaselineUnavailable as exc:
            results.append(BaselineResult(baseline.name, None, time.perf_counter() - start, unavailable=str(exc)))
            ctx.say(f"{decision.name}: baseline {baseline.name} unavailable: {exc}")
            continue
        seconds = time.perf_counter() - start
        if answer is None:
            results.append(BaselineResult(baseline.name, None, seconds))
            LOG.debug(f"{decision.name}: baseline {baseline.name} found nothing ({seconds:.2f} s)")
            continue
        report = decision.checker(problem, answer)
        results.append(BaselineResult(baseline.name, float(decision.objective(problem, answer)), seconds, answer, report))
        LOG.debug(f"{decision.name}: baseline {baseline.name}: objective {results[-1].objective:.6g}, "
                  f"check {'ok' if report.ok else 'FAIL'} ({seconds:.2f} s)")
    return results


def best_valid(results: list[BaselineResult], sense: str) -> BaselineResult | None:
    better = _better(sense)
    best = None
    for b in results:
        if b.objective is not None and b.check is not None and b.check.ok:
            if best is None or better(b.objective, best.objective):
                best = b
    return best


def _solve(ctx: Context, decision: Decision, problem: Any, config: SolverConfig, warm: Any, options: Any) -> Any:
    if ctx.solve_cache is not None:
        return ctx.solve_cache.solve(ctx, decision, problem, config, warm, options)
    return decision.solve(problem, config, warm, options)


def _unknown(solved: Any, best: BaselineResult | None) -> bool:
    """No decision from the solve (stopped at its budget, nothing proven) and none from a baseline."""
    return solved.decision is None and solved.result.status == Status.TIMEOUT_NO_SOLUTION and best is None


def _budget(config: SolverConfig) -> float | None:
    """The budget a solve spends: deterministic work when set, else the wall-clock limit."""
    return config.work_budget() if config.work_budget() is not None else config.time_limit_s


def _larger(config: SolverConfig, factor: float) -> SolverConfig:
    """``config`` with its time limit and deterministic work budget multiplied by ``factor``."""
    work = config.work_limit * factor if config.work_limit is not None else None
    limit = config.time_limit_s * factor if config.time_limit_s is not None else None
    return config.with_(time_limit_s=limit, work_limit=work)


def run_decision(ctx: Context, decision: Decision, problem: Any, *, validate: Callable[[Any, Any], dict[str, Any]] | None = None,
                 hint: Any = None) -> tuple[Any, DecisionRecord]:
    """Run one decision (see module docstring); returns the decision used downstream and its record."""
    name = decision.name
    options = ctx.options_for(decision)
    config = ctx.solver_for(name, decision.preferred_backend)
    if decision.diagnose is not None:
        reason = decision.diagnose(problem)
        if reason:
            raise InfeasibleError(f"{name}: infeasible: {reason}")
    results = run_baselines(ctx, decision, problem, options)
    best = best_valid(results, decision.sense)
    warm = hint if hint is not None else (best.decision if best is not None else None)

    ctx.say(f"{name}: solving")
    solved = _solve(ctx, decision, problem, config, warm, options)
    retries = 0
    while _unknown(solved, best) and retries < ctx.retries and _budget(config) is not None:
        retries += 1
        config = _larger(config, ctx.retry_factor)
        ctx.say(f"{name}: no solution and no proof within the budget; retry {retries} of {ctx.retries} "
                f"with {_budget(config):g}")
        solved = _solve(ctx, decision, problem, config, warm, options)
    result = solved.result
    # the backend the record names (a convex-kind decision may solve MILPs: the budget's level MILP)
    ctx.say(f"{name}: {result.backend or 'no backend'} {result.status}"
            + (f", objective {result.objective:.6g}" if result.objective is not None else "")
            + f" ({result.solve_seconds:.2f} s solving)")
    if result.status in (Status.INFEASIBLE, Status.UNBOUNDED, Status.ERROR) and solved.decision is None:
        if result.status == Status.INFEASIBLE:
            groups = ", ".join(solved.explanation) if solved.explanation else "(no explanation from the backend)"
            raise InfeasibleError(f"{name}: infeasible; conflicting constraint groups: {groups}")
        if best is None:
            raise InfeasibleError(f"{name}: solver {result.backend} ended with {result.status}: {result.message}",
                                  load_dependent=result.backstop_fired)

    used, source, report, used_check = solved.decision, "solver", None, None
    if used is not None:
        report = decision.checker(problem, used)
        if not report.ok:
            first = report.violations[0]
            if best is None:
                raise InfeasibleError(f"{name}: the solver's decision fails its check ({first.rule}: {first.message}) "
                                      "and no baseline passes it")
            ctx.say(f"{name}: the solver's decision fails its check ({first.rule}); using baseline {best.name}")
            used, source, used_check = best.decision, f"fallback:{best.name}", best.check
        elif best is not None and _better(decision.sense)(best.objective, float(decision.objective(problem, used))):
            used, source, report = best.decision, f"baseline:{best.name}", best.check
    elif best is not None:
        used, source, report = best.decision, f"baseline:{best.name}", best.check
    else:
        tried = f" (and {retries} {'retry' if retries == 1 else 'retries'} up to it)" if retries else ""
        raise UnknownError(f"{name}: no solution within the budget of {_budget(config):g}{tried} ({result.status}), "
                           "none proven impossible, and no baseline")

    if validate is not None:
        ctx.say(f"{name}: validating the decision (simulation)")
    record = DecisionRecord(
        decision=name,
        workload=ctx.workload.name,
        target=ctx.target.name,
        solver=result,
        baseline=best,
        check=report,
        validation=validate(problem, used) if validate is not None else {},
        solution=decision.solution(problem, used),
        details=dict(solved.details) | ({"retries": retries, "budget": _budget(config)} if retries else {}),
        baselines=results,
        solution_source=source,
        check_used=used_check,
    )
    ctx.state[name] = used
    ctx.state[f"{name}.problem"] = problem
    return used, record
