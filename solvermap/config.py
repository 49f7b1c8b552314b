"""Run configuration: what to map, on which target, with which solver — from YAML, flags and ``--set``.

YAML (all keys optional except ``workload`` and ``target``)::

    workload: {name: dotproduct, params: {par: 16}}     # or just: workload: dotproduct
    target: {name: plasticine, overrides: {pcu.stages: 4}}   # or just: target: plasticine
    solver: {backend: cpsat, time_limit_s: 30, threads: 1, rel_gap: 0.0}
    decisions: {partition: {variant: table42, solver: {backend: highs}}}
    limits: {memory_gb: 8}      # memory cap of the run's size estimates (default: half of memory, solvermap.limits)
    export: {hpvm_config: confs.txt}        # files a pipeline writes besides the run directory
    seed: 0

``--set key=value`` (value parsed as YAML) addresses the same tree: ``workload.par=16`` sets a
workload parameter, ``target.pcu.stages=4`` a target field, ``solver.time_limit_s=5``,
``decisions.partition.variant=table42``, ``limits.memory_gb=8``, ``export.hpvm_config=confs.txt``, ``seed=3``.
The run seed is the solver seed unless ``solver.seed`` is set explicitly. ``export`` names files a pipeline writes
besides its run directory (:class:`ExportConfig`); a pipeline that does not write one refuses it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from solvermap.errors import InputError
from solvermap.formulations.solver import SolverConfig
from solvermap.inputs import MAX_DEPTH, YamlSyntaxError, load_yaml, parse_yaml


class WorkloadRef(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    params: dict[str, Any] = Field(default_factory=dict)


class TargetRef(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    overrides: dict[str, Any] = Field(default_factory=dict)


class Limits(BaseModel):
    """Caps of a run (``solvermap.limits``): ``memory_gb`` bounds what a pipeline may plan to build."""

    model_config = ConfigDict(extra="forbid")
    memory_gb: float | None = Field(None, gt=0, allow_inf_nan=False,
                                    description="memory cap in GB (default: half of this machine's memory)")


class ExportConfig(BaseModel):
    """Files a pipeline writes besides the run directory (each pipeline lists the ones it writes)."""

    model_config = ConfigDict(extra="forbid")
    hpvm_config: str | None = None  # approxhpvm: the chosen configurations in HPVM's tuner format


class RunConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    workload: WorkloadRef
    target: TargetRef
    solver: SolverConfig = Field(default_factory=SolverConfig)
    decisions: dict[str, dict[str, Any]] = Field(default_factory=dict)
    limits: Limits = Field(default_factory=Limits)
    export: ExportConfig = Field(default_factory=ExportConfig)
    seed: int = Field(0, ge=0)

    @field_validator("workload", mode="before")
    @classmethod
    def _workload_shorthand(cls, value: Any) -> Any:
        return {"name": value} if isinstance(value, str) else value

    @field_validator("target", mode="before")
    @classmethod
    def _target_shorthand(cls, value: Any) -> Any:
        return {"name": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _seed_solver(self) -> RunConfig:
        if "seed" not in self.solver.model_fields_set:
            object.__setattr__(self, "solver", self.solver.with_(seed=self.seed))
        return self


def parse_set(items: list[str]) -> list[tuple[str, Any]]:
    """``key=value`` pairs; a value is YAML (``16``, ``[1, 2]``, ``{a: 1}``), or the plain string when it
    does not parse (``--set workload.name=model.onnx``). A value nested too deep is refused."""
    out = []
    for item in items:
        if "=" not in item:
            raise InputError("--set", item, "expected key=value")
        key, raw = item.split("=", 1)
        if key.count(".") >= MAX_DEPTH:
            raise InputError("--set", key[:60] + "...", f"more than {MAX_DEPTH} dotted parts")
        try:
            value = parse_yaml(raw, f"--set {key}") if raw != "" else ""
        except YamlSyntaxError:
            value = raw
        out.append((key.strip(), value))
    return out


def build_config(
    *,
    config_file: str | Path | Mapping[str, Any] | None = None,
    workload: str | None = None,
    target: str | None = None,
    solver: str | None = None,
    time_limit: float | None = None,
    sets: list[str] | None = None,
    defaults: dict[str, Any] | None = None,
    overrides: list[tuple[str, Any]] | None = None,
) -> RunConfig:
    """Merge (defaults ← config file ← flags ← ``--set`` items ← ``overrides``, parsed ``--set`` pairs) into a
    validated :class:`RunConfig`. ``config_file`` is a YAML file or a mapping of the same shape."""
    data: dict[str, Any] = {"workload": {"name": ""}, "target": {"name": ""}, "solver": {}, "decisions": {}}
    for key, value in (defaults or {}).items():
        data[key] = value
    source = "command line"
    if isinstance(config_file, Mapping):
        source, loaded = "config", dict(config_file)
    elif config_file:
        source = str(config_file)
        loaded = load_yaml(config_file) or {}
    if config_file:
        if not isinstance(loaded, dict):
            raise InputError(source, "", "expected a YAML mapping")
        for key, value in loaded.items():
            if key in ("workload", "target") and isinstance(value, str):
                value = {"name": value}
            data[key] = value
    for key in ("workload", "target"):
        if not isinstance(data[key], dict):
            data[key] = {"name": data[key]}
        data[key] = dict(data[key])
    for key, inner in (("workload", "params"), ("target", "overrides")):
        if inner in data[key]:
            data[key][inner] = _mapping(data[key][inner], source, f"{key}.{inner}")
    for key in ("solver", "decisions", "limits", "export"):
        data[key] = _mapping(data.get(key), source, key)
    if workload:
        data["workload"]["name"] = workload
    if target:
        data["target"]["name"] = target
    if solver:
        data["solver"]["backend"] = solver
    if time_limit is not None:
        try:
            time_limit = float(time_limit)
        except (TypeError, ValueError):
            raise InputError("--time-limit", "", f"{time_limit!r} is not a number of seconds") from None
        if not math.isfinite(time_limit) or time_limit <= 0:
            raise InputError("--time-limit", "", f"{time_limit:g} is not a positive number of seconds")
        data["solver"]["time_limit_s"] = time_limit
    for key, value in [*parse_set(sets or []), *(overrides or [])]:
        _apply_set(data, str(key), value)
    if not data["workload"].get("name"):
        raise InputError(source, "workload", "missing (pass --workload or set it in the config file)")
    if not data["target"].get("name"):
        raise InputError(source, "target", "missing (pass --target or set it in the config file)")
    try:
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"])
        msg = "unknown field" if err["type"] == "extra_forbidden" else err["msg"]
        raise InputError(source, loc, msg) from None


def _mapping(value: Any, source: str, field: str) -> dict[str, Any]:
    """A copy of a section that must be a mapping (absent: empty)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InputError(source, field, f"expected a mapping, got {type(value).__name__}")
    return dict(value)


def _apply_set(data: dict[str, Any], key: str, value: Any) -> None:
    head, _, rest = key.partition(".")
    if head == "workload" and rest and rest != "name":
        data["workload"].setdefault("params", {})[rest] = value
    elif head == "target" and rest and rest != "name":
        data["target"].setdefault("overrides", {})[rest] = value
    elif head == "solver" and rest:
        data["solver"][rest] = value
    elif head == "limits" and rest:
        data["limits"][rest] = value
    elif head == "decisions" and rest:
        name, _, option = rest.partition(".")
        if not option:
            raise InputError("--set", key, "expected decisions.<decision>.<option>=value")
        node = data["decisions"]
        parts = [name, *option.split(".")]
        for depth, part in enumerate(parts[:-1]):
            node[part] = _mapping(node.get(part), "--set", "decisions." + ".".join(parts[: depth + 1]))
            node = node[part]
        node[parts[-1]] = value
    elif head == "export" and rest:
        data["export"][rest] = value
    elif head in ("workload", "target") and rest == "name":
        data[head]["name"] = value
    elif head == "seed" and not rest:
        data["seed"] = value
    else:
        raise InputError("--set", key, "unknown key; use workload.<param>, target.<field>, solver.<field>, "
                         "decisions.<decision>.<option>, limits.memory_gb, export.<file> or seed")
