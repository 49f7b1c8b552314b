"""The public Python API: what the command line does, as functions that return typed results.

The functions are re-exported by the package (``import solvermap; solvermap.map(...)``); the command line
(:mod:`solvermap.cli`) is a thin layer over them, so a function's result ``.to_dict()`` is exactly what the
command prints with ``--json``. They accept everything the command line accepts by name — built-in
workload and target names, graph and YAML files, shipped study names, backend names — and raise the same
:class:`~solvermap.errors.SolvermapError` subclasses the command line prints as one line (never
``sys.exit``). Progress messages go to the ``solvermap`` logger (``logging.basicConfig(level="INFO")``
shows them).

=======================================================================  ==============================
function                                                                 command line
=======================================================================  ==============================
``map(workload, target, *, solver, time_limit, options, out) -> MapResult``         ``solvermap map``
``solve(decision, workload, target, ...) -> DecisionResult``             ``solvermap solve DECISION``
``explore(study, *, n_trials, storage, out, workers) -> StudyResults``   ``solvermap explore`` (``workers``
                                                                         local processes)
``batch(study, *, executor, workers, ...) -> StudyResults | Submission``  ``solvermap batch``
``status(directory) -> StudyStatus``, ``run_state(directory) -> RunState``  ``solvermap status``
``rerun(directory, *, out) -> Rerun``                                     ``solvermap rerun``
``load_workload(name_or_path, family=None, **params)``,                  ``--workload``, ``--set workload.*``
``load_target(name_or_path, **overrides)``                               ``--target``, ``--set target.*``
``workloads()``, ``targets()``, ``decisions()``                          the listings' ``--json``
=======================================================================  ==============================

``options`` takes the keys of ``--set`` (``{"decisions.partition.variant": "table42", "workload.par": 16,
"target.pcu.stages": 4, "solver.rel_gap": 0.01, "seed": 3}``); ``config`` a run configuration file (or
mapping) as ``--config``. ``workload`` and ``target`` may also be objects from :func:`load_workload` and
:func:`load_target`.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from solvermap.errors import (BackendUnavailable, ConfigError, InfeasibleError, InputError, SolvermapError, StrictError,
                              UnknownNameError)
from solvermap.results import DecisionResult, MapResult, backstop_decisions

__all__ = ["map", "solve", "explore", "batch", "status", "run_state", "rerun", "load_workload", "load_target",
           "workloads", "targets", "decisions", "studies", "MapResult", "DecisionResult", "StudyResults", "Rerun",
           "SolvermapError", "InputError", "ConfigError", "InfeasibleError", "BackendUnavailable", "StrictError",
           "UnknownNameError"]


def __getattr__(name: str) -> Any:
    """``StudyResults`` (defined with the study reports, :mod:`solvermap.search.report`), loaded on first use."""
    if name == "StudyResults":
        from solvermap.search.report import StudyResults

        return StudyResults
    raise AttributeError(f"module 'solvermap.api' has no attribute {name!r}")

# ============================================================================================ listings


def workloads() -> list[dict[str, Any]]:
    """Built-in workloads: ``name, family, params`` (defaults), ``ranges`` (per parameter: its documented range,
    short span and doc), ``description`` (``solvermap workloads --json``)."""
    from solvermap.ir.workloads import all_workloads

    return [{"name": w.name, "family": w.family, "params": dict(w.params),
             "ranges": {k: {"range": s.describe(), "span": s.span(), "doc": s.doc} for k, s in w.specs.items()},
             "description": w.description} for w in all_workloads()]


def targets() -> list[dict[str, Any]]:
    """Target presets: ``name, family, description, path``, and ``runs_here`` (None for targets that generate
    no code; else whether this machine's CPU flags and compiler run it) with ``why_not`` (``solvermap targets
    --json``)."""
    from solvermap.hardware.targets import load_target, presets

    out = []
    for p in presets():
        ok, why = load_target(p.path).runs_here()
        out.append({"name": p.name, "family": p.family, "description": p.description, "path": str(p.path),
                    "runs_here": ok, "why_not": why or None})
    return out


def decisions() -> list[dict[str, Any]]:
    """Every decision's descriptor with the target families that use it (``solvermap decisions --json``)."""
    from solvermap.mappers import all_pipelines

    rows: dict[int, dict[str, Any]] = {}
    for pipeline in all_pipelines():
        for step in pipeline.steps:
            if step.decision is None:
                continue
            row = rows.setdefault(id(step.decision), {**step.decision.to_json(), "families": []})
            row["families"].append(pipeline.family)
    return sorted(rows.values(), key=lambda r: (r["name"], r["families"]))


def studies() -> list[dict[str, Any]]:
    """Studies shipped with the package: ``name, path, description`` (what :func:`explore` takes by name)."""
    import yaml

    from solvermap.search.explore import shipped_studies

    out, seen = [], set()
    for name, path in shipped_studies().items():  # by name first, then by file stem: one entry per file
        if path in seen:
            continue
        seen.add(path)
        data = yaml.safe_load(path.read_text()) or {}
        out.append({"name": name, "path": str(path), "description": " ".join(str(data.get("description", "")).split())})
    return out


# ============================================================================================ loading


def load_workload(name_or_path: str | Path, family: str | None = None, **params: Any) -> Any:
    """A workload built with ``params`` (its defaults for the rest): a built-in name, or a graph file
    (``.json``, ``.dot``, ``.graphml``, ``.onnx``). ``family`` picks among workloads of the same name for
    several target families (``lenet``); a name that exists for one family needs none."""
    from solvermap.ir.workloads import build, families_of

    name = str(name_or_path)
    if family is None:
        found = families_of(name)
        if len(found) > 1:
            raise ConfigError(f"workload {name!r} exists for several target families ({', '.join(found)}); "
                              "pass family=...")
        if not found and not Path(name).is_file():
            raise UnknownNameError(f"unknown workload {name!r} and no such graph file; solvermap.workloads() lists "
                                   "the built-in ones")
        family = found[0] if found else "graph"
    return build(name, family, params)


def load_target(name_or_path: str | Path, **overrides: Any) -> Any:
    """A target spec: a preset name or a YAML file, after ``extends`` and ``overrides`` — dotted field names
    as ``--set target.<field>`` takes them (``**{"pcu.stages": 4}``) or nested mappings (``pcu={"stages": 4}``)."""
    from solvermap.hardware.targets import load_target as load

    return load(str(name_or_path), _dotted(overrides))


def _dotted(values: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, Mapping) and value:
            out.update(_dotted(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


# ============================================================================================ map / solve


def map(workload: Any = None, target: Any = None, *, solver: str | None = None, time_limit: float | None = None,
        options: Mapping[str, Any] | None = None, out: str | Path | None = None, config: str | Path | None = None,
        strict: bool = False) -> MapResult:
    """Run the whole pipeline of ``target`` on ``workload`` and validate the mapping by simulation.

    ``solver`` names the backend (``cpsat``, ``highs``, ``scip``, ``cbc``, ``gurobi``; convex ``clarabel``,
    ``scs``, ``ecos``); ``time_limit`` is each solve's budget in seconds (see ``solvermap map --help``);
    ``options`` the ``--set`` keys; ``out`` the run directory (default: a new one under ``runs/``);
    ``strict`` raises :class:`~solvermap.errors.StrictError` (its ``result`` attribute holds the result) when a
    decision fell back to a baseline. Defaults: the ``plasticine`` target and its pipeline's default workload.
    """
    return _run("map", None, workload, target, solver, time_limit, options, out, config, strict)


def solve(decision: str, workload: Any = None, target: Any = None, *, solver: str | None = None,
          time_limit: float | None = None, options: Mapping[str, Any] | None = None, out: str | Path | None = None,
          config: str | Path | None = None, strict: bool = False, write_model: str | Path | None = None) -> DecisionResult:
    """Run the pipeline up to ``decision`` (see :func:`decisions`) and return that decision's record:
    solver result, baselines, check and validation. Arguments as :func:`map`; ``write_model`` (``.lp`` or
    ``.mps``) writes the largest MILP model the decision solved there (``result.model_file`` describes it)."""
    return _run("solve", decision, workload, target, solver, time_limit, options, out, config, strict,
                None if write_model is None else str(write_model))


@dataclass
class _Prepared:
    config: Any  # RunConfig
    spec: Any  # TargetSpec
    pipeline: Any
    workload: Any  # Workload
    export: dict[str, Any]  # the export.* files the run writes


def _prepare(workload: Any, target: Any, solver: str | None, time_limit: float | None,
             options: Mapping[str, Any] | None, config: str | Path | Mapping[str, Any] | None,
             upto: str | None = None) -> _Prepared:
    """Resolve everything a run needs, checking it all before a directory is made or a model built."""
    from solvermap.config import build_config
    from solvermap.limits import use_memory_cap
    from solvermap.hardware.targets import TargetSpec, load_target as load
    from solvermap.ir.workloads import Workload, build
    from solvermap.mappers import pipeline_for

    spec = target if isinstance(target, TargetSpec) else None
    built = workload if isinstance(workload, Workload) else None
    workload_name = built.name if built is not None else (str(workload) if workload is not None else None)
    target_name = spec.name if spec is not None else (str(target) if target is not None else None)
    run_config = build_config(config_file=config, workload=workload_name, target=target_name, solver=solver,
                              time_limit=time_limit, overrides=list((options or {}).items()),
                              defaults=_defaults(workload_name, target_name))
    if built is not None and run_config.workload.params:
        raise ConfigError("workload parameters go to load_workload() when a loaded workload is passed")
    if spec is None:
        spec = load(run_config.target.name, run_config.target.overrides)
    elif run_config.target.overrides:
        spec = _override_spec(spec, run_config.target.overrides)
    pipeline = pipeline_for(spec.family)
    if upto is not None and upto not in pipeline.decisions:
        raise UnknownNameError(f"decision {upto!r} is not part of the {pipeline.family} pipeline; "
                               f"its decisions are: {', '.join(pipeline.decisions)}")
    use_memory_cap(run_config.limits.memory_gb)
    pipeline.check_options(run_config.decisions)  # every decisions.<step>.<key>, before anything is written or solved
    export = {key: value for key, value in run_config.export.model_dump().items() if value is not None}
    for key in export:
        if key not in pipeline.exports:
            raise ConfigError(f"--set export.{key}: the {spec.family} pipeline does not write {key}")
    require_backends(run_config)
    if built is None:
        built = build(run_config.workload.name, spec.family, run_config.workload.params)
    elif built.family not in (spec.family, "graph"):
        raise ConfigError(f"workload {built.name!r} was loaded for the {built.family} family; target {spec.name!r} "
                          f"is {spec.family}")
    pipeline.check_size(spec, built, upto)  # memory the steps will need (solvermap.limits), before the run directory
    return _Prepared(run_config, spec, pipeline, built, export)


def _override_spec(spec: Any, overrides: Mapping[str, Any]) -> Any:
    from solvermap.hardware.targets import set_dotted, validate_spec

    data = spec.model_dump(mode="json")
    for dotted, value in overrides.items():
        set_dotted(data, dotted, value, f"--set target.{dotted}={value}")
    return validate_spec(data, f"target {spec.name}")


def _defaults(workload: str | None, target: str | None) -> dict[str, Any]:
    """Embedded defaults: the Plasticine target and its pipeline's default workload."""
    out: dict[str, Any] = {}
    if target is None:
        out["target"] = {"name": "plasticine"}
    if workload is None:
        try:
            from solvermap.hardware.targets import load_target as load
            from solvermap.mappers import pipeline_for

            default = pipeline_for(load(target or "plasticine").family).default_workload
            if default:
                out["workload"] = {"name": default}
        except SolvermapError:
            pass
    return out


def require_backends(run_config: Any) -> None:
    """Every solver backend a run names (``--solver``, ``solver.*``, ``decisions.<d>.solver.backend``) is
    usable here, else one line naming the extra to install — before any work."""
    from solvermap.formulations.solver import MILP_BACKENDS, SolverConfig, unavailable_reason

    named = [run_config.solver.backend]
    if "convex_backend" in run_config.solver.model_fields_set:
        named.append(run_config.solver.convex_backend)
    for options in run_config.decisions.values():
        solver = (options or {}).get("solver") or {}
        named += [solver[k] for k in ("backend", "convex_backend") if isinstance(solver, Mapping) and k in solver]
    for name in dict.fromkeys(named):
        if not isinstance(name, str):
            continue
        if name == SolverConfig.model_fields["backend"].default:
            continue
        reason = unavailable_reason("milp" if name in MILP_BACKENDS else "convex", name)
        if reason is not None:
            raise BackendUnavailable(reason)


def require_extra(module: str, extra: str, purpose: str) -> None:
    """``module`` imports, else one line: which extra to install for ``purpose``."""
    try:
        importlib.import_module(module)
    except ImportError:
        raise BackendUnavailable(f"{purpose} needs {module}: pip install 'solvermap[{extra}]'") from None


def require_storage(url: str | None) -> None:
    """The database driver a storage URL needs (psycopg2 for ``postgresql://``) is installed."""
    if url and url.startswith("postgresql"):
        scheme = url.split("://", 1)[0]
        driver = scheme.split("+", 1)[1] if "+" in scheme else "psycopg2"
        require_extra(driver, "cluster", f"storage {scheme}://")


def _run(command: str, upto: str | None, workload: Any, target: Any, solver: str | None, time_limit: float | None,
         options: Mapping[str, Any] | None, out: str | Path | None, config: Any, strict: bool,
         write_model: str | None = None) -> Any:
    from solvermap.inputs import output_dir, output_file
    from solvermap.runs import RunDirectory

    if out is not None:
        output_dir(out, "--out")
    if write_model is not None:
        output_file(write_model, "--write-model")
    prepared = _prepare(workload, target, solver, time_limit, options, config, upto)
    capture = None
    if write_model is not None:
        prepared.pipeline, capture = _capturing_focus(prepared.pipeline, upto, write_model)
    label = f"{upto + '-' if upto else ''}{prepared.workload.name}-{prepared.spec.name}"
    run = RunDirectory.create(out, command, label)
    result = _execute(run, command, upto, prepared, strict)
    if capture is not None:
        result.model_file = _write_model(write_model, capture, upto, prepared.config.solver.backend)
    return result


def _capturing_focus(pipeline: Any, upto: str | None, path: str) -> tuple[Any, Any]:
    """``pipeline`` whose step ``upto`` records the MILP models it solves, and the capture that holds them;
    a ``path`` that is not ``.lp`` or ``.mps`` fails here, before any solve."""
    from dataclasses import replace

    from solvermap.formulations.pyomo_backend import model_format
    from solvermap.formulations.solver import ModelCapture, capturing_models

    model_format(path)
    capture = ModelCapture()

    def captured(run):
        def step(ctx):
            with capturing_models(capture):
                return run(ctx)
        return step

    steps = tuple(replace(s, run=captured(s.run)) if s.name == upto else s for s in pipeline.steps)
    return replace(pipeline, steps=steps), capture


def _write_model(path: str, capture: Any, decision: str | None, backend: str) -> dict[str, Any]:
    """Write the largest MILP model the decision solved to ``path``; one line when it solved none."""
    from solvermap.formulations.pyomo_backend import write_model
    from solvermap.runs import LOG

    if capture.proto is None:
        why = "its model is convex or it needed no solve"
        if backend == "cpsat":
            why = ("native CP-SAT and convex models have no LP/MPS form; a decision with a MILP build too uses it "
                   "on a MILP backend, e.g. --solver highs")
        raise ConfigError(f"--write-model: decision {decision!r} solved no MILP model with backend {backend!r}: {why}")
    size = write_model(capture.proto, path)
    LOG.info(f"model: {path} ({capture.name}: {size['variables']} variables, {size['constraints']} constraints, "
             f"{size['nonzeros']} nonzeros; the largest of {capture.solves} MILP solves of {decision})")
    return {"path": path, "name": capture.name, **size, "solves": capture.solves}


def _execute(run: Any, command: str, upto: str | None, prepared: _Prepared, strict: bool) -> Any:
    from solvermap.mappers.pipeline import Context
    from solvermap.runs import LOG

    spec, built = prepared.spec, prepared.workload
    with run.recording(command, decision=upto, workload=built.name, target=spec.name):
        run.write_yaml("config.yaml", prepared.config.model_dump())
        run.write_yaml("target.yaml", spec.model_dump(mode="json"))
        run.write_json("workload.json", {"name": built.name, "family": built.family, "params": built.params,
                                         "source": _workload_source(prepared.config.workload.name)})
        run.write_environment()
        ctx = Context(workload=built, target=spec, solver=prepared.config.solver, options=prepared.config.decisions,
                      seed=prepared.config.seed, progress=LOG.info, export=prepared.export)
        with run.logging():
            ran = prepared.pipeline.run(ctx, upto=upto)
        if upto is None:
            result: Any = MapResult(built.name, spec.name, spec.family, ran.records, ran.validation, run.path)
        else:
            result = DecisionResult(ran.records[-1], ran.records, spec.family, run.path)
        fired = backstop_decisions(ran.records)
        if fired:
            with run.logging():
                LOG.warning(f"warning: not reproducible: the wall-clock backstop stopped {', '.join(fired)} before "
                            "its deterministic budget, so this answer may depend on machine load (raise "
                            "solver.time_limit_s or run on a less loaded machine)")
        run.write_json("records.json", result.to_dict())
        if ran.records:
            run.write_table("decisions", result.to_frame())
        _check_strict(result, ran.records, strict)
    return result


def _workload_source(name: str) -> dict[str, Any]:
    """Where a workload came from: the registry, or a file and its SHA-256 (a rerun notices a changed file)."""
    import hashlib

    path = Path(name)
    if path.is_file():
        return {"file": str(path.resolve()), "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
    return {"registry": name}


def _check_strict(result: Any, records: list[Any], strict: bool) -> None:
    fallbacks = [r for r in records if r.solution_source.startswith("fallback:")]
    if not strict or not fallbacks:
        return
    first = fallbacks[0]
    why = (f"the solver's decision failed its check ({first.check.violations[0].rule})" if not first.check.ok
           else "the solver's decisions failed validation")
    error = StrictError(f"--strict: {first.decision} used {first.solution_source.removeprefix('fallback:')} because {why}")
    error.result = result  # type: ignore[attr-defined]
    raise error


# ============================================================================================ rerun


TIMING_KEYS = ("seconds",)  # a key ending in "seconds" (solve_seconds, profiling_seconds, ...) is a timing


@dataclass
class Rerun:
    """:func:`rerun`'s answer: the new run's result and every difference of its records from the old ones
    (timings and paths excluded)."""

    original: Path
    result: Any  # MapResult | DecisionResult
    differences: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return not self.differences

    def to_dict(self) -> dict[str, Any]:
        return {"original": str(self.original), "directory": str(self.result.run_dir), "identical": self.identical,
                "differences": self.differences, "notes": self.notes}


def rerun(directory: str | Path, *, out: str | Path | None = None) -> Rerun:
    """Repeat the ``map``/``solve`` run recorded in ``directory`` — its resolved configuration, its resolved
    target spec (``target.yaml``, so a changed preset file does not matter) and its workload parameters — in a
    new run directory, and compare the records (timings and paths excluded)."""
    import json

    import yaml

    from solvermap.config import RunConfig
    from solvermap.hardware.targets import validate_spec
    from solvermap.ir.workloads import build
    from solvermap.mappers import pipeline_for
    from solvermap.runs import RunDirectory, read_run

    directory = Path(directory)
    state = read_run(directory)
    if state.command not in ("map", "solve"):
        raise InputError(str(directory), "command", f"rerun repeats map and solve runs, not {state.command!r}")
    files = {name: directory / name for name in ("config.yaml", "target.yaml", "workload.json")}
    for name, path in files.items():
        if not path.is_file():
            raise InputError(str(directory), name, "missing: this run directory cannot be repeated")
    try:
        run_config = RunConfig.model_validate(yaml.safe_load(files["config.yaml"].read_text()))
        spec_data = yaml.safe_load(files["target.yaml"].read_text())
        workload = json.loads(files["workload.json"].read_text())
    except (ValueError, yaml.YAMLError) as exc:
        raise InputError(str(directory), "", f"unreadable run record: {str(exc).splitlines()[0]}") from None
    spec = validate_spec(spec_data, str(files["target.yaml"]))
    notes = []
    source = workload.get("source") or {}
    if "file" in source and _workload_source(source["file"]).get("sha256") != source.get("sha256"):
        notes.append(f"workload file {source['file']} changed since the run (or is gone)")
    pipeline = pipeline_for(spec.family)
    pipeline.check_options(run_config.decisions)
    require_backends(run_config)
    built = build(source.get("file", workload["name"]), spec.family, workload.get("params") or {})
    prepared = _Prepared(run_config, spec, pipeline, built, export={})  # a rerun leaves the export.* files alone
    upto = state.info.get("decision")
    run = RunDirectory.create(out, "rerun", f"{upto + '-' if upto else ''}{built.name}-{spec.name}")
    command = state.command
    result = _execute(run, command, upto, prepared, strict=False)
    old = _records(directory)
    new = _comparable(result.to_dict())
    differences = [] if old is None else _differences(old, new)
    if old is None:
        notes.append(f"the original run has no records.json ({state.state}: {state.error})")
    return Rerun(directory, result, differences, notes)


def _records(directory: Path) -> Any:
    import json

    try:
        return _comparable(json.loads((directory / "records.json").read_text()))
    except (OSError, ValueError):
        return None


def _comparable(value: Any) -> Any:
    """Records without timings (keys ending in ``seconds``) and paths (``run_dir``)."""
    if isinstance(value, dict):
        return {k: _comparable(v) for k, v in value.items() if not k.endswith(TIMING_KEYS) and k != "run_dir"}
    if isinstance(value, list):
        return [_comparable(v) for v in value]
    return value


def _differences(old: Any, new: Any, path: str = "") -> list[str]:
    """Every place where two JSON values differ, as ``path: old → new``."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for key in dict.fromkeys([*old, *new]):
            where = f"{path}.{key}" if path else str(key)
            if key not in new:
                out.append(f"{where}: only in the original")
            elif key not in old:
                out.append(f"{where}: only in the rerun")
            else:
                out += _differences(old[key], new[key], where)
        return out
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [d for i, (a, b) in enumerate(zip(old, new)) for d in _differences(a, b, f"{path}[{i}]")]
    if old != new and not (_number(old) and _number(new) and math.isclose(old, new, rel_tol=0, abs_tol=0)):
        return [f"{path}: {_short(old)} → {_short(new)}"]
    return []


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _short(value: Any) -> str:
    import json

    text = json.dumps(value)
    return text if len(text) <= 80 else text[:77] + "..."


# ============================================================================================ studies


def explore(study: str | Path | Mapping[str, Any], *, n_trials: int | None = None, storage: str | None = None,
            out: str | Path | None = None, workers: int | None = None, timeout: float | None = None,
            allow_imports: bool = False, progress: bool = False, console: Any = None) -> Any:
    """Run (or resume: ``out`` holding the same study) a design-space study and return its
    :class:`~solvermap.search.report.StudyResults` (``.trials``, ``.front``, ``.figure()``, ``.to_dict()``).

    ``study`` is a study YAML file, a shipped study's name (:func:`studies`) or the study itself as a mapping
    (the YAML's content; a target or workload file in it is taken relative to the current directory). ``workers``
    processes on this machine run the trials on one storage: this one and ``workers`` − 1 spawned ones
    (:mod:`solvermap.search.local_workers`; default: the study's ``budget.workers``, else 1). ``allow_imports``
    lets the study's ``imports:`` run (trusted code only); ``progress`` draws a progress bar over the trials on
    ``console`` (a rich console; default stderr)."""
    if workers is not None and workers < 1:
        raise ConfigError(f"workers must be at least 1, not {workers}")
    from solvermap.search.explore import explore as run_explore

    path = _study_path(study)
    require_storage(storage)
    _require_study_backends(path)
    sdir, results, report = run_explore(path, storage=storage, n_trials=n_trials, out=out, timeout_s=timeout,
                                        progress=progress, console=console, allow_imports=allow_imports,
                                        workers=workers)
    results.meta = {"study": sdir.spec.name, "directory": str(sdir.path),
                    "worker": {"completed": report.completed, "failed": report.failed}}
    results.errors = list(report.errors)
    return results


def _study_path(study: str | Path | Mapping[str, Any]) -> Path:
    """The file of a study: a path, a shipped study's name, or a mapping written to a file first (relative
    paths in it made absolute against the current directory, so the study file can live elsewhere)."""
    import tempfile

    import yaml

    from solvermap.search.explore import resolve_study

    if not isinstance(study, Mapping):
        return resolve_study(str(study))
    data = dict(study)
    target = data.get("target")
    name = target.get("name") if isinstance(target, Mapping) else target
    if isinstance(name, str) and name.endswith((".yaml", ".yml")) and not Path(name).is_absolute():
        absolute = str(Path(name).resolve())
        data["target"] = {**target, "name": absolute} if isinstance(target, Mapping) else absolute
    folder = Path(tempfile.mkdtemp(prefix="solvermap-study-"))
    path = folder / f"{data.get('name', 'study')}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@dataclass
class Submission:
    """A batch submitted without waiting: its study directory and job ids."""

    study: str
    directory: Path
    jobs: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {"study": self.study, "directory": str(self.directory), "jobs": self.jobs}


def batch(study: str | Path | Mapping[str, Any], *, executor: str = "local", workers: int | None = None, storage: str | None = None,
          n_trials: int | None = None, out: str | Path | None = None, wait: bool = True,
          partition: str | None = None, time_min: int | None = None, cpus: int | None = None,
          mem_gb: float | None = None, sbatch: list[str] | None = None, setup: list[str] | None = None,
          allow_imports: bool = False, progress: bool = False, console: Any = None) -> Any:
    """Run a study with K workers sharing one storage (``solvermap batch``): a SLURM job array or local
    processes, through submitit (extra ``cluster``). With ``wait`` the study's results
    (:class:`~solvermap.search.report.StudyResults`), else a :class:`Submission`."""
    require_extra("submitit", "cluster", "solvermap batch")
    from solvermap.search.batch import submit, wait as wait_for, worker_error
    from solvermap.search.report import analyse, write_results
    from solvermap.search.worker import counts, finished

    path = _study_path(study)
    require_storage(storage or _study_slurm_storage(path))
    _require_study_backends(path)
    sdir, handle, jobs = submit(path, executor=executor, workers=workers, storage=storage, n_trials=n_trials, out=out,
                                partition=partition, time_min=time_min, cpus=cpus, mem_gb=mem_gb, sbatch=sbatch,
                                setup=setup, allow_imports=allow_imports)
    ids = [str(j.job_id) for j in jobs]
    from solvermap.runs import LOG

    LOG.info(f"submitted {len(jobs)} {executor} worker(s): {', '.join(ids)}; logs in {sdir.path / 'workers'}")
    if not wait:
        _release(jobs)
        return Submission(sdir.spec.name, sdir.path, ids)
    from solvermap.runs import RunDirectory

    with RunDirectory(sdir.path).recording("batch", executor=executor, jobs=ids):
        reports = wait_for(handle, jobs, executor=executor, progress=progress, console=console)
        _release(jobs)
        error = worker_error(reports)
        if error is not None:
            raise error
        for r in reports:
            if "error" in r:
                LOG.warning(f"{r['label']} failed: {r['error']}")
        done = finished(counts(handle.study))
        if done < handle.n_trials:
            LOG.warning(f"the workers ended with {done} of {handle.n_trials} trials finished; "
                        f"continue with: solvermap batch {study} --out {sdir.path}")
        results = analyse(handle.study, [o.label for o in sdir.spec.objectives], sdir.spec.directions)
        write_results(results, sdir.path)
    results.meta = {"study": sdir.spec.name, "directory": str(sdir.path), "workers": reports}
    return results


def _release(jobs: list[Any]) -> None:
    """Drop submitit's job handles now: their finalisers fail if they run during interpreter shutdown."""
    import gc

    jobs.clear()
    gc.collect()


def _study_slurm_storage(path: Path) -> str | None:
    from solvermap.search.study_file import load_study

    return load_study(path).slurm.storage


def _require_study_backends(path: Path) -> None:
    """The backends a study names — its solver settings and every backend its space can choose."""
    from solvermap.formulations.solver import MILP_BACKENDS, unavailable_reason
    from solvermap.search.study_file import load_study

    spec = load_study(path)
    named = [spec.solver.backend]
    for key, param in spec.space.items():
        if key.endswith(("solver.backend", "solver.convex_backend")):
            named += list(getattr(param, "choices", []) or [])
    for name in dict.fromkeys(n for n in named if isinstance(n, str)):
        reason = unavailable_reason("milp" if name in MILP_BACKENDS else "convex", name)
        if reason is not None:
            raise BackendUnavailable(f"{path}: {reason}")


def status(directory: str | Path, *, storage: str | None = None) -> Any:
    """Where a study stands (``solvermap status``): trials finished, running, queued, failed, worker jobs,
    the current front, and the directory's run state. ``.to_dict()`` is ``solvermap status --json``."""
    from solvermap.search.status import load_status

    require_storage(storage)
    return load_status(str(directory), storage=storage)


def run_state(directory: str | Path) -> Any:
    """What ``run.json`` says about a run or study directory: its command and state (``running``, ``ok``,
    ``failed`` with the error and exit code, ``interrupted``)."""
    from solvermap.runs import read_run

    return read_run(directory)
