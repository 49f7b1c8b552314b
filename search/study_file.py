"""Study files: the YAML a user writes to describe a design-space exploration, validated by pydantic.

A study names a target preset (or YAML file), one or more workloads, a search space over target
fields, workload parameters, per-decision options and solver settings, the objectives with their
directions, optional caps, the sampler, a seed and a budget::

    name: plasticine-network
    target: plasticine                       # preset name or YAML path (relative to this file)
    workloads: [dotproduct, {name: gemm, params: {par: 2}}]
    space:
      target.pcu.stages: {type: int, low: 2, high: 8, step: 2}
      target.network.kind: {type: categorical, choices: [static, hybrid, dynamic]}
      target.network.vcs: {type: int, low: 1, high: 4, when: {target.network.kind: [hybrid, dynamic]}}
      workload.par: {type: int, low: 1, high: 16, log: true}      # every workload with a `par`
      workload.gemm.par: {type: int, low: 1, high: 8}             # one workload only
      decisions.partition.variant: {type: categorical, choices: [table42, traversal]}
      solver.backend: {type: categorical, choices: [cpsat, highs]}
      choice.array:                                               # coupled fields move together
        type: categorical
        choices: [16x8, 8x8]
        sets:
          16x8: {target.grid.columns: 16, target.pcu.count: 64, target.pmu.count: 64}
          8x8: {target.grid.columns: 8, target.pcu.count: 32, target.pmu.count: 32}
    objectives:
      - {metric: cycles, direction: minimize}                     # aggregate over workloads: geomean
      - {metric: area_mm2, direction: minimize, aggregate: max}
    metrics:                                                      # derived metrics (search.expressions)
      chip_area_mm2: target.pcu.count * target.pcu.area_mm2 + target.pmu.count * target.pmu.area_mm2
    constraints:
      - {metric: area_mm2, max: 400}                              # a cap: over it, the trial is infeasible
    sampler: {name: nsga2, options: {population_size: 16}}        # nsga2 | tpe | random | grid | gp | qmc
    seed: 0
    budget: {n_trials: 40, timeout_s: 600, workers: 2}   # workers: local processes of `explore`
    solver: {backend: cpsat, time_limit_s: 10}                    # every inner solve (SolverConfig)
    decisions: {partition: {variant: table42}}                    # fixed per-decision options
    storage: {heartbeat_s: 5, grace_s: 20, max_retry: 2}
    slurm:                                                        # solvermap batch --executor slurm
      storage: postgresql://me@db.cluster:5432/studies            # the database every worker shares
      workers: 16
      partition: cpu
      time_min: 240                                               # per-worker time limit
      mem_gb: 4
      cpus_per_task: 1
      sbatch: {account: mylab, qos: normal, constraint: avx2}     # more #SBATCH options (allow-listed)
    cache: {enabled: true, neighbours: 3}
    unknown: {retries: 1, budget_factor: 4}   # a solve with no solution and no proof: retried, then "unknown"
    pruning: {enabled: true}                  # skip designs whose certified bounds the front dominates
    limits: {memory_gb: 8}             # memory cap of each trial's size estimates (default: half of memory)
    imports: [my_lab.targets]          # modules that register extra families, pipelines or workloads:
                                       # trusted code, imported only with --allow-imports

Metrics an objective or cap may name: any key of the pipeline's end-to-end validation (``cycles``,
``throughput``, ``latency_s``, ``energy_j``, ``area_mm2``, ``power_w``, ``accuracy_loss``, ``pbs_used``,
... see DEVELOPERS.md), the solver statistics ``solver_seconds`` (build + solve, summed over decisions),
``max_gap``, ``trial_seconds``, per-decision values ``<decision>.objective`` / ``.gap`` /
``.solve_seconds`` / ``.baseline_objective`` / ``.validation.<key>``, and the study's own derived
``metrics:`` (expressions over those, ``target.<field>`` and ``workload.<param>``).

Every error is one line naming the file and the field (``InputError``).
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from solvermap.config import Limits
from solvermap.errors import InputError
from solvermap.formulations.solver import SolverConfig
from solvermap.inputs import load_yaml

AGGREGATES = ("geomean", "mean", "sum", "max", "min")
SAMPLERS = ("nsga2", "nsga3", "tpe", "random", "grid", "gp", "qmc")
SPACE_ROOTS = ("target", "workload", "decisions", "solver", "choice")
Scalar = bool | int | float | str


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Param(_Strict):
    """Common to every parameter: an optional condition ``when: {other_param: value or [values]}``."""

    when: dict[str, Scalar | list[Scalar]] = Field(default_factory=dict)

    def active(self, chosen: dict[str, Any]) -> bool:
        """Whether this parameter is sampled, given the values chosen so far for earlier parameters."""
        for other, wanted in self.when.items():
            if other not in chosen:
                return False
            allowed = wanted if isinstance(wanted, list) else [wanted]
            if chosen[other] not in allowed:
                return False
        return True


class IntParam(_Param):
    type: Literal["int"]
    low: int
    high: int
    step: int = Field(1, ge=1)
    log: bool = False

    @model_validator(mode="after")
    def _range(self) -> IntParam:
        if self.high < self.low:
            raise ValueError(f"high ({self.high}) is below low ({self.low})")
        if self.log and (self.low < 1 or self.step != 1):
            raise ValueError("log scale needs low >= 1 and step 1")
        return self


class FloatParam(_Param):
    type: Literal["float"]
    low: float
    high: float
    step: float | None = Field(None, gt=0)
    log: bool = False

    @model_validator(mode="after")
    def _range(self) -> FloatParam:
        if not (math.isfinite(self.low) and math.isfinite(self.high)):
            raise ValueError("low and high must be finite")
        if self.high < self.low:
            raise ValueError(f"high ({self.high}) is below low ({self.low})")
        if self.log and (self.low <= 0 or self.step is not None):
            raise ValueError("log scale needs low > 0 and no step")
        return self


class CategoricalParam(_Param):
    """A choice among values. ``sets`` maps a choice to more settings it implies (dotted names under
    ``target.``, ``workload.``, ``decisions.``, ``solver.``), so coupled fields move together — e.g. an
    array size that fixes the grid and the unit counts. A parameter named ``choice.<label>`` sets nothing
    itself, only its ``sets``."""

    type: Literal["categorical"]
    choices: list[Scalar] = Field(min_length=1)
    sets: dict[str, dict[str, Any]] = Field(default_factory=dict)

    @field_validator("choices")
    @classmethod
    def _distinct(cls, value: list[Scalar]) -> list[Scalar]:
        if len({(type(v).__name__, v) for v in value}) != len(value):
            raise ValueError("choices must be distinct")
        return value

    @model_validator(mode="after")
    def _sets_name_choices(self) -> CategoricalParam:
        names = {str(c) for c in self.choices}
        for choice, settings in self.sets.items():
            if str(choice) not in names:
                raise ValueError(f"sets: {choice!r} is not one of the choices")
            for key in settings:
                if key.split(".", 1)[0] not in SPACE_ROOTS[:4] or "." not in key:
                    raise ValueError(f"sets.{choice}: {key!r} must start with target., workload., decisions. or solver.")
        return self

    def implied(self, value: Any) -> dict[str, Any]:
        """The settings a chosen value implies (empty without ``sets``)."""
        return dict(self.sets.get(str(value), {}))


Param = Annotated[IntParam | FloatParam | CategoricalParam, Field(discriminator="type")]


class Objective(_Strict):
    """One objective: a metric, its direction and how per-workload values combine."""

    metric: str
    direction: Literal["minimize", "maximize"]
    aggregate: Literal["geomean", "mean", "sum", "max", "min"] = "geomean"
    name: str = ""

    @property
    def label(self) -> str:
        return self.name or self.metric


class Cap(_Strict):
    """A constraint on a metric: a trial with the metric above ``max`` (or below ``min``) is infeasible.

    The per-workload values combine with ``aggregate`` (default: the worst workload — ``max`` for a
    ``max`` cap, ``min`` for a ``min`` cap), so a cap holds on every workload.
    """

    metric: str
    max: float | None = None
    min: float | None = None
    aggregate: Literal["geomean", "mean", "sum", "max", "min"] | None = None

    @model_validator(mode="after")
    def _one_bound(self) -> Cap:
        if (self.max is None) == (self.min is None):
            raise ValueError("give exactly one of max or min")
        return self

    @property
    def key(self) -> str:
        return f"{self.metric}<={self.max:g}" if self.max is not None else f"{self.metric}>={self.min:g}"


class SamplerSpec(_Strict):
    name: Literal["nsga2", "nsga3", "tpe", "random", "grid", "gp", "qmc"] = "nsga2"
    options: dict[str, Any] = Field(default_factory=dict)


class Budget(_Strict):
    n_trials: int | None = Field(None, ge=1, description="finished trials to reach (evaluated or pruned); default 20 "
                                 "(grid: its size)")
    timeout_s: float | None = Field(None, gt=0, description="stop starting new trials after this many seconds")
    workers: int = Field(1, ge=1, description="worker processes `explore` runs on this machine (--workers overrides)")


class StorageSettings(_Strict):
    """Failure detection: a running trial whose worker stopped beating for ``grace_s`` is failed and retried."""

    heartbeat_s: int = Field(5, ge=1)
    grace_s: int | None = Field(None, ge=1, description="default: 4 × heartbeat_s")
    max_retry: int = Field(2, ge=0)

    @property
    def grace(self) -> int:
        return self.grace_s if self.grace_s is not None else 4 * self.heartbeat_s


class SlurmSettings(_Strict):
    """How ``solvermap batch --executor slurm`` submits the workers; each ``batch`` option overrides its
    field. No field holds shell code: setup commands go on the command line (``--setup``)."""

    storage: str | None = Field(None, description="database URL the workers share (the default storage for slurm)")
    workers: int | None = Field(None, ge=1, description="array tasks (default 2)")
    partition: str | None = None
    time_min: int = Field(24 * 60, ge=1, description="time limit of each worker job, minutes")
    mem_gb: float | None = Field(None, gt=0)
    cpus_per_task: int = Field(1, ge=1)
    signal_delay_s: int = Field(90, ge=10, description="SLURM warns a worker this long before its time limit")
    max_requeue: int = Field(3, ge=0, description="times a worker's job requeues itself at its time limit")
    sbatch: dict[str, str | int | bool] = Field(default_factory=dict, description="more #SBATCH options")

    @field_validator("sbatch")
    @classmethod
    def _allowed(cls, value: dict[str, Any]) -> dict[str, Any]:
        from solvermap.search.slurm import sbatch_problem

        for key, option in value.items():
            problem = sbatch_problem(key, option, from_study=True)
            if problem:
                raise ValueError(f"{key!r}: {problem}")
        return value


class CacheSettings(_Strict):
    enabled: bool = True
    neighbours: int = Field(3, ge=0, description="solutions of the nearest earlier trials tried as warm starts")


class UnknownSettings(_Strict):
    """An inner solve that stops at its budget with no solution and no proof is solved again with
    ``budget_factor`` times the budget, at most ``retries`` times; then the trial is *unknown*."""

    retries: int = Field(1, ge=0, description="retries of an unknown solve, each with a larger budget")
    budget_factor: float = Field(4.0, gt=1.0, description="budget multiplier of each retry")


class PruningSettings(_Strict):
    """Certified pruning (:mod:`solvermap.search.pruning`): before a full evaluation, the design's certified
    lower bounds are compared with the front; a design they show dominated is recorded as pruned."""

    enabled: bool = True


class Ref(_Strict):
    name: str
    params: dict[str, Any] = Field(default_factory=dict)


class TargetRef(_Strict):
    name: str
    overrides: dict[str, Any] = Field(default_factory=dict)


class StudyFile(_Strict):
    """A validated study (see the module docstring for the YAML)."""

    name: str
    description: str = ""
    target: TargetRef
    workloads: list[Ref] = Field(min_length=1)
    space: dict[str, Param]
    metrics: dict[str, str] = Field(default_factory=dict)
    objectives: list[Objective] = Field(min_length=1)
    constraints: list[Cap] = Field(default_factory=list)
    sampler: SamplerSpec = Field(default_factory=SamplerSpec)
    seed: int = Field(0, ge=0)
    budget: Budget = Field(default_factory=Budget)
    solver: SolverConfig = Field(default_factory=lambda: SolverConfig(time_limit_s=10.0))
    decisions: dict[str, dict[str, Any]] = Field(default_factory=dict)
    storage: StorageSettings = Field(default_factory=StorageSettings)
    slurm: SlurmSettings = Field(default_factory=SlurmSettings)
    cache: CacheSettings = Field(default_factory=CacheSettings)
    unknown: UnknownSettings = Field(default_factory=UnknownSettings)
    pruning: PruningSettings = Field(default_factory=PruningSettings)
    limits: Limits = Field(default_factory=Limits)
    imports: list[str] = Field(default_factory=list)

    @field_validator("target", mode="before")
    @classmethod
    def _target_shorthand(cls, value: Any) -> Any:
        return {"name": value} if isinstance(value, str) else value

    @field_validator("workloads", mode="before")
    @classmethod
    def _workload_shorthand(cls, value: Any) -> Any:
        if isinstance(value, (str, dict)):
            value = [value]
        return [{"name": v} if isinstance(v, str) else v for v in value] if isinstance(value, list) else value

    @field_validator("space")
    @classmethod
    def _space(cls, value: dict[str, Any]) -> dict[str, Any]:
        if not value:
            raise ValueError("empty search space: give at least one parameter")
        names = list(value)
        for position, (name, param) in enumerate(value.items()):
            root = name.split(".", 1)[0]
            if root not in SPACE_ROOTS or "." not in name:
                raise ValueError(f"parameter {name!r}: the name must start with one of "
                                 f"{', '.join(r + '.' for r in SPACE_ROOTS)}")
            if root == "choice" and not (isinstance(param, CategoricalParam) and param.sets):
                raise ValueError(f"parameter {name!r}: a choice.* parameter must be categorical with `sets`")
            for other in param.when:
                if other not in names[:position]:
                    raise ValueError(f"parameter {name!r}: condition on {other!r}, which is not an earlier parameter")
        return value

    @field_validator("metrics")
    @classmethod
    def _expressions(cls, value: dict[str, str]) -> dict[str, str]:
        from solvermap.search.expressions import ExpressionError, parse

        for name, text in value.items():
            try:
                parse(text)
            except ExpressionError as exc:
                raise ValueError(f"metric {name!r}: {exc}") from None
        return value

    @model_validator(mode="after")
    def _consistent(self) -> StudyFile:
        labels = [o.label for o in self.objectives]
        if len(set(labels)) != len(labels):
            raise ValueError("objectives: two objectives share a label; give one a `name`")
        names = [w.name for w in self.workloads]
        if len(set(names)) != len(names):
            raise ValueError("workloads: a workload is listed twice")
        if self.sampler.name == "gp" and len(self.objectives) > 1:
            raise ValueError("sampler gp: optimises one objective here; use nsga2 or tpe for several")
        return self

    @property
    def directions(self) -> list[str]:
        return [o.direction for o in self.objectives]

    def n_trials(self, grid_size: int | None = None) -> int:
        if self.budget.n_trials is not None:
            return self.budget.n_trials
        return grid_size if grid_size is not None else 20


def _format_error(exc: ValidationError) -> tuple[str, str]:
    errors = exc.errors()
    # an unknown field usually explains the rest (a misspelt `high` is also a missing `high`)
    err = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    loc = [str(p) for p in err["loc"]]
    # a discriminated union puts the tag ("int", "float", "categorical") into the location
    if len(loc) >= 3 and loc[0] == "space" and loc[2] in ("int", "float", "categorical"):
        loc = loc[:2] + loc[3:]
    field = ".".join(loc)
    if err["type"] == "extra_forbidden":
        return field, "unknown field"
    if err["type"] == "missing":
        return field, "missing required field"
    message = err["msg"]
    if message.startswith("Value error, "):
        message = message[len("Value error, "):]
    if err["type"] == "union_tag_invalid":
        message = "type must be one of int, float, categorical"
    if err["type"] == "union_tag_not_found":
        message = "missing `type` (int, float or categorical)"
    return field, message


def parse_study(data: Any, source: str) -> StudyFile:
    """Validate a study mapping; ``source`` names it in errors."""
    if not isinstance(data, dict):
        raise InputError(source, "", "expected a YAML mapping")
    data = dict(data)
    data.setdefault("name", Path(source).stem if source else "study")
    if "space" in data and data["space"] is None:
        raise InputError(source, "space", "empty search space: give at least one parameter")
    for key in ("workloads", "objectives"):
        if key in data and not data[key]:
            raise InputError(source, key, "empty: give at least one")
    try:
        return StudyFile.model_validate(data)
    except ValidationError as exc:
        raise InputError(source, *_format_error(exc)) from None


def load_study(path: str | Path) -> StudyFile:
    """Read and validate a study file; a relative target YAML path resolves against the file's folder."""
    path = Path(path)
    study = parse_study(load_yaml(path), str(path))
    target = study.target.name
    if target.endswith((".yaml", ".yml")) and not Path(target).is_absolute():
        local = path.parent / target
        if local.exists():
            study = study.model_copy(update={"target": study.target.model_copy(update={"name": str(local.resolve())})})
    return study


def study_digest(study: StudyFile) -> str:
    """Content hash of everything that defines the trials (used to refuse resuming a different study)."""
    data = study.model_dump(mode="json", exclude={"budget", "storage", "slurm", "description", "limits"})
    text = yaml.safe_dump(data, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def check_imports(study: StudyFile, allowed: bool, source: str) -> None:
    """``imports:`` runs Python code: refused (one line) unless the user passed ``--allow-imports``."""
    if study.imports and not allowed:
        raise InputError(source, "imports", f"the study imports {', '.join(study.imports)}, which runs their code; "
                         "pass --allow-imports if you trust these modules")
