"""``solvermap`` command line (typer).

Commands: ``map`` (the whole pipeline), ``solve DECISION`` (the pipeline up to DECISION), ``hpvm-config FILE``
(evaluate an HPVM tuner configuration file, ``solvermap.hpvm_config_command``),
``workloads``, ``targets``, ``decisions``; the design-space commands register themselves from
``solvermap.search.cli`` when present. User errors print one line to stderr and exit with 2.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext, redirect_stdout
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from solvermap.errors import SolvermapError

app = typer.Typer(
    name="solvermap",
    help="Mapping compiler and design-space explorer for accelerators: every decision an explicit solver model.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
out_console = Console()
err_console = Console(stderr=True)

WorkloadOpt = Annotated[str | None, typer.Option("--workload", "-w", help="built-in workload name or graph file")]
TargetOpt = Annotated[str | None, typer.Option("--target", "-t", help="target preset name or YAML file")]
SolverOpt = Annotated[str | None, typer.Option("--solver", "-s", help="backend: cpsat|highs|scip|gurobi|cbc|pyomo-highs|pyomo-cbc|pyomo-glpk|pyomo-gurobi|pyomo-cplex|pyomo-xpress (MILP), clarabel|scs|ecos|highs|scip (convex)")]
TimeOpt = Annotated[float | None, typer.Option("--time-limit", help="seconds per solve")]
JsonOpt = Annotated[bool, typer.Option("--json", help="print one JSON object to stdout")]
OutOpt = Annotated[str | None, typer.Option("--out", help="run directory (default: a new one under runs/)")]
ConfigOpt = Annotated[str | None, typer.Option("--config", "-c", help="YAML run configuration")]
SetOpt = Annotated[list[str] | None, typer.Option("--set", help="override: workload.<p>=v, target.<field>=v, solver.<f>=v, decisions.<d>.<o>=v, export.<file>=path, seed=v")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="no progress messages")]
StrictOpt = Annotated[bool, typer.Option("--strict", help="exit with status 3 when a decision falls back to a baseline "
                                         "because the solver's answer failed its check (after writing the run directory)")]
WriteModelOpt = Annotated[str | None, typer.Option(
    "--write-model", help="write DECISION's MILP model to PATH (.lp or .mps, by suffix) for any other solver; "
    "the largest one when the decision solves several")]


def _prepare(config_file, workload, target, solver, time_limit, sets):
    from solvermap.config import build_config
    from solvermap.hardware.targets import load_target
    from solvermap.ir.workloads import build as build_workload
    from solvermap.mappers import pipeline_for

    from solvermap.limits import use_memory_cap

    config = build_config(config_file=config_file, workload=workload, target=target, solver=solver,
                          time_limit=time_limit, sets=sets or [], defaults=_defaults(workload, target))
    use_memory_cap(config.limits.memory_gb)
    spec = load_target(config.target.name, config.target.overrides)
    pipeline = pipeline_for(spec.family)
    pipeline.check_options(config.decisions)  # every decisions.<step>.<key>, before anything is written or solved
    built = build_workload(config.workload.name, spec.family, config.workload.params)
    return config, spec, pipeline, built


def _defaults(workload: str | None, target: str | None) -> dict[str, Any]:
    """Embedded defaults: the Plasticine target and its pipeline's default workload."""
    out: dict[str, Any] = {}
    if target is None:
        out["target"] = {"name": "plasticine"}
    if workload is None:  # a target that does not load is reported as such, not as a missing workload
        from solvermap.hardware.targets import load_target
        from solvermap.mappers import pipeline_for

        default = pipeline_for(load_target(target or "plasticine").family).default_workload
        if default:
            out["workload"] = {"name": default}
    return out


@contextmanager
def _stdout_for_json_only(as_json: bool) -> Iterator[None]:
    """With ``--json`` stdout holds the JSON object alone, but solver libraries print from native code
    (HiGHS 1.12 writes a debug line to the process's stdout in some MIP solves), so while the pipeline
    runs file descriptor 1 points at stderr, and so does ``sys.stdout``."""
    if not as_json:
        yield
        return
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        with redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _execute(command: str, upto: str | None, config_file, workload, target, solver, time_limit, sets, as_json, out, quiet,
             strict: bool = False, write_model: str | None = None):
    from solvermap.errors import InputError
    from solvermap.inputs import output_dir, output_file
    from solvermap.mappers.pipeline import Context
    from solvermap.runs import LOG, RunDirectory, console_logging

    if out is not None:
        output_dir(out, "--out")
    if write_model is not None:
        output_file(write_model, "--write-model")
    config, spec, pipeline, built = _prepare(config_file, workload, target, solver, time_limit, sets)
    pipeline.check_size(spec, built, upto)  # memory the steps will need (solvermap.limits), before the run directory
    export = {key: value for key, value in config.export.model_dump().items() if value is not None}
    for key in export:
        if key not in pipeline.exports:
            raise InputError("--set", f"export.{key}", f"the {spec.family} pipeline does not write {key}")
    if write_model is not None:
        pipeline, capture = _capturing_focus(pipeline, upto, write_model)
    run = RunDirectory.create(out, command, f"{upto + '-' if upto else ''}{built.name}-{spec.name}")
    run.write_yaml("config.yaml", config.model_dump())
    run.write_environment()

    ctx = Context(workload=built, target=spec, solver=config.solver, options=config.decisions, seed=config.seed,
                  progress=LOG.info, export=export)
    with run.logging(), nullcontext() if quiet else console_logging(err_console), _stdout_for_json_only(as_json):
        result = pipeline.run(ctx, upto=upto)
    if upto is not None:
        payload = result.records[-1].to_json()
        if write_model is not None:
            payload["model_file"] = _write_model(write_model, capture, upto, ctx.solver_for(upto).backend)
    else:
        payload = {"workload": built.name, "target": spec.name, "family": spec.family,
                   "decisions": [r.to_json() for r in result.records], "validation": result.validation}
    from solvermap.results import backstop_decisions, to_jsonable

    fired = backstop_decisions(result.records)
    payload = {**to_jsonable(payload), "reproducible": not fired, "backstop_fired": fired}
    if fired:
        warning = (f"warning: not reproducible: the wall-clock backstop stopped {', '.join(fired)} before its "
                   "deterministic budget, so this answer may depend on machine load (raise solver.time_limit_s or "
                   "run on a less loaded machine)")
        with run.logging():
            LOG.warning(warning)
        err_console.print(warning, highlight=False, markup=False, soft_wrap=True)
    run.write_json("records.json", payload)
    _write_tables(run, result.records)
    if as_json:
        sys.stdout.write(json.dumps(payload, indent=2) + "\n")
    else:
        _print_records(result.records, result.validation if upto is None else None)
    err_console.print(f"run directory: {run.path}", highlight=False)
    fallbacks = [r for r in result.records if r.solution_source.startswith("fallback:")]
    if strict and fallbacks:
        from solvermap.errors import StrictError

        first = fallbacks[0]
        why = (f"the solver's decision failed its check ({first.check.violations[0].rule})" if not first.check.ok
               else "the solver's decisions failed validation")
        message = f"--strict: {first.decision} used {first.solution_source.removeprefix('fallback:')} because {why}"
        with run.logging():
            LOG.error(f"error: {message}")
        raise StrictError(message)


def _capturing_focus(pipeline, upto: str | None, path: str):
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


def _write_model(path: str, capture, decision: str, backend: str) -> dict[str, Any]:
    """Write the largest MILP model the decision solved to ``path``; one line when it solved none."""
    from solvermap.errors import ConfigError
    from solvermap.formulations.pyomo_backend import write_model

    if capture.proto is None:
        why = "its model is convex or it needed no solve"
        if backend == "cpsat":
            why = ("native CP-SAT and convex models have no LP/MPS form; a decision with a MILP build too uses it "
                   "on a MILP backend, e.g. --solver highs")
        raise ConfigError(f"--write-model: decision {decision!r} solved no MILP model with backend {backend!r}: {why}")
    size = write_model(capture.proto, path)
    err_console.print(f"model: {path} ({capture.name}: {size['variables']} variables, {size['constraints']} "
                      f"constraints, {size['nonzeros']} nonzeros; the largest of {capture.solves} MILP solves of "
                      f"{decision})", highlight=False, markup=False, soft_wrap=True)
    return {"path": path, "name": capture.name, **size, "solves": capture.solves}


def _write_tables(run, records) -> None:
    import pandas as pd

    rows = []
    for r in records:
        row = {"decision": r.decision, "workload": r.workload, "target": r.target, **{
            f"solver_{k}": v for k, v in r.solver.to_json().items()}}
        row["baseline_name"] = r.baseline.name if r.baseline else None
        row["baseline_objective"] = r.baseline.objective if r.baseline else None
        row["check_ok"] = r.check.ok
        row["solution_source"] = r.solution_source
        rows.append(row)
    if rows:
        run.write_table("decisions", pd.DataFrame(rows))


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _print_records(records, validation) -> None:
    table = Table(title="decisions", header_style="bold")
    for col in ("decision", "backend", "status", "objective", "bound", "gap", "baseline", "baseline obj", "check", "solve s"):
        table.add_column(col)
    for r in records:
        s = r.solver
        table.add_row(r.decision, s.backend, str(s.status), _fmt(s.objective), _fmt(s.bound), _fmt(s.gap),
                      r.baseline.name if r.baseline else "-", _fmt(r.baseline.objective if r.baseline else None),
                      "ok" if r.check.ok else f"FAIL ({len(r.check.violations)})", _fmt(s.solve_seconds))
    out_console.print(table)
    for r in records:
        for v in r.check.violations[:5]:
            out_console.print(f"  [red]{r.decision}: {v.rule}[/red]: {v.message}", highlight=False)
        if r.validation:
            _print_mapping(f"{r.decision} validation", r.validation)
    if validation:
        _print_mapping("end-to-end validation", validation)


def _print_mapping(title: str, mapping: dict) -> None:
    table = Table(title=title, header_style="bold", show_header=False)
    table.add_column("key")
    table.add_column("value")
    for key, value in mapping.items():
        if isinstance(value, (dict, list)):
            value = json.dumps(value)[:100]
        table.add_row(str(key), _fmt(value))
    out_console.print(table)


@app.command("map")
def map_command(
    workload: WorkloadOpt = None, target: TargetOpt = None, solver: SolverOpt = None, time_limit: TimeOpt = None,
    as_json: JsonOpt = False, out: OutOpt = None, config: ConfigOpt = None, set_: SetOpt = None, quiet: QuietOpt = False,
    strict: StrictOpt = False,
) -> None:
    """Run the whole pipeline of a target on a workload and validate the mapping by simulation."""
    _execute("map", None, config, workload, target, solver, time_limit, set_, as_json, out, quiet, strict)


@app.command("solve")
def solve_command(
    decision: Annotated[str, typer.Argument(help="decision to stop at (see `solvermap decisions`)")],
    workload: WorkloadOpt = None, target: TargetOpt = None, solver: SolverOpt = None, time_limit: TimeOpt = None,
    as_json: JsonOpt = False, out: OutOpt = None, config: ConfigOpt = None, set_: SetOpt = None, quiet: QuietOpt = False,
    strict: StrictOpt = False,
    write_model: WriteModelOpt = None,
) -> None:
    """Run the pipeline up to DECISION and report that decision's solve, baseline, check and validation."""
    _execute("solve", decision, config, workload, target, solver, time_limit, set_, as_json, out, quiet, strict,
             write_model)


@app.command("workloads")
def workloads_command(as_json: JsonOpt = False) -> None:
    """List built-in workloads (name, target family, parameters with their ranges, description)."""
    from solvermap.ir.workloads import all_workloads

    items = all_workloads()
    if as_json:
        sys.stdout.write(json.dumps([{"name": w.name, "family": w.family, "params": dict(w.params),
                                      "ranges": {k: {"range": s.describe(), "doc": s.doc} for k, s in w.specs.items()},
                                      "description": w.description} for w in items], indent=2) + "\n")
        return
    table = Table(title="workloads", header_style="bold")
    for col in ("name", "family", "params", "description"):
        table.add_column(col)
    for w in items:
        table.add_row(w.name, w.family, ", ".join(f"{k}={v} ({w.specs[k].span()})" for k, v in w.params.items()),
                      w.description)
    out_console.print(table)


@app.command("targets")
def targets_command(as_json: JsonOpt = False) -> None:
    """List target presets (pass a name, or a YAML file path, to --target)."""
    from solvermap.hardware.targets import presets

    items = presets()
    if as_json:
        sys.stdout.write(json.dumps([{"name": p.name, "family": p.family, "description": p.description,
                                      "path": str(p.path)} for p in items], indent=2) + "\n")
        return
    table = Table(title="targets", header_style="bold")
    for col in ("name", "family", "description"):
        table.add_column(col)
    for p in items:
        table.add_row(p.name, p.family, p.description)
    out_console.print(table)


@app.command("decisions")
def decisions_command(as_json: JsonOpt = False) -> None:
    """List decisions from their descriptors: targets using them, model kind, backends, checker, baselines, options."""
    from solvermap.mappers import all_pipelines

    rows: dict[int, dict[str, Any]] = {}
    for pipeline in all_pipelines():
        for step in pipeline.steps:
            if step.decision is None:
                continue
            row = rows.setdefault(id(step.decision), {**step.decision.to_json(), "families": []})
            row["families"].append(pipeline.family)
    items = sorted(rows.values(), key=lambda r: (r["name"], r["families"]))
    if as_json:
        sys.stdout.write(json.dumps(items, indent=2) + "\n")
        return
    table = Table(title="decisions", header_style="bold")
    for col in ("decision", "families", "kind", "baselines", "options", "summary"):
        table.add_column(col)
    for r in items:
        options = [k for k in r["options"].get("properties", {}) if k != "solver"]
        table.add_row(r["name"], ", ".join(r["families"]), r["kind"], ", ".join(b["name"] for b in r["baselines"]),
                      ", ".join(options) or "-", r["summary"])
    out_console.print(table)


def _register_extensions() -> None:
    """Commands contributed by subpackages (e.g. ``explore``/``batch`` from ``solvermap.search.cli``), once per
    process: a second registration would add the commands again to every later ``main()`` in this process."""
    import importlib

    if any(c.name == "explore" for c in app.registered_commands):
        return
    for module in ("solvermap.search.cli", "solvermap.hpvm_config_command"):
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name == module:
                continue
            raise
        mod.register(app)


def main() -> None:
    _register_extensions()
    try:
        code = app(standalone_mode=False)
        if isinstance(code, int) and not isinstance(code, bool) and code:
            sys.exit(code)  # typer returns the code of an Exit, e.g. 130 after Ctrl-C, instead of exiting
    except SolvermapError as exc:
        err_console.print(f"error: {exc}", highlight=False, markup=False, soft_wrap=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)
    except Exception as exc:  # noqa: BLE001 - click's own errors (typer vendors click) by duck typing
        name = type(exc).__name__
        if name == "Exit":
            sys.exit(getattr(exc, "exit_code", 0))
        if name == "Abort":
            sys.exit(1)
        if name == "NoArgsIsHelpError":
            out_console.print(exc.format_message(), highlight=False, markup=False)
            sys.exit(0)
        if hasattr(exc, "format_message") and hasattr(exc, "exit_code"):
            err_console.print(f"error: {exc.format_message()} (see solvermap --help)", highlight=False, markup=False,
                              soft_wrap=True)
            sys.exit(exc.exit_code)
        raise


if __name__ == "__main__":
    main()
