"""``solvermap`` command line (typer): a thin layer over the public API (:mod:`solvermap.api`).

Commands: ``map`` (the whole pipeline), ``solve DECISION`` (the pipeline up to DECISION), ``rerun DIR``,
``hpvm-config FILE`` (evaluate an HPVM tuner configuration file),
``explore STUDY``, ``batch STUDY``, ``status DIR``, and the listings ``workloads``, ``targets``,
``decisions``, ``studies``. Each command calls one API function and
prints its result: ``--json`` prints the result's ``to_dict()``, otherwise tables. Every command takes
``-v/--verbose`` (debug messages too) and ``-q/--quiet`` (no progress messages).

Output: progress goes to stderr — on a terminal with a live status line showing the running phase and its
elapsed time, on a pipe as plain lines (a phase running long gets a line every minute). Tables go to
stdout; on a pipe they print in full (no width cut, no ellipsis), on a terminal long cells fold.
User errors print one line to stderr and exit with 2 (``--strict`` fallbacks: 3).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stdout
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from solvermap.errors import InputError, SolvermapError

PIPE_WIDTH = 100_000  # a pipe's console: never wrap or cut

app = typer.Typer(
    name="solvermap",
    help="Mapping compiler and design-space explorer for accelerators: every decision an explicit solver model.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def stdout_console() -> Console:
    """Standard output: a terminal's width there, else wide enough that nothing is folded or cut."""
    return Console() if sys.stdout.isatty() else Console(width=PIPE_WIDTH, no_color=True)


def stderr_console() -> Console:
    return Console(stderr=True, soft_wrap=True) if sys.stderr.isatty() else Console(stderr=True, width=PIPE_WIDTH)


TIME_LIMIT_HELP = (
    "budget of each solve in seconds, a positive finite number (default 30). It is spent as deterministic "
    "solver work (CP-SAT deterministic time; HiGHS/SCIP 1000 branch-and-bound nodes per second; CBC and convex "
    "backends: wall seconds), so a run gives the same answer under any load, and a wall-clock backstop (a safety net "
    "far above the work) stops a solve at 20 x the budget + 60 s. A decision may run several solves: partitioning and placement split one "
    "budget, the ApproxHPVM budget and knob steps give each candidate the whole budget. Baselines, checks, "
    "Monte Carlo tests and simulation are not limited (the table's total s shows each step's time).")

WorkloadOpt = Annotated[str | None, typer.Option("--workload", "-w", help="built-in workload name or graph file")]
TargetOpt = Annotated[str | None, typer.Option("--target", "-t", help="target preset name or YAML file")]
SolverOpt = Annotated[str | None, typer.Option("--solver", "-s", help="backend: cpsat|highs|scip|gurobi|cbc|pyomo-highs|pyomo-cbc|pyomo-glpk|pyomo-gurobi|pyomo-cplex|pyomo-xpress (MILP), clarabel|scs|ecos|highs|scip (convex)")]
TimeOpt = Annotated[float | None, typer.Option("--time-limit", help=TIME_LIMIT_HELP)]
JsonOpt = Annotated[bool, typer.Option("--json", help="print one JSON object to stdout")]
OutOpt = Annotated[str | None, typer.Option("--out", help="run directory (default: a new one under runs/)")]
ConfigOpt = Annotated[str | None, typer.Option("--config", "-c", help="YAML run configuration")]
SetOpt = Annotated[list[str] | None, typer.Option("--set", help="override: workload.<p>=v, target.<field>=v, solver.<f>=v, decisions.<d>.<o>=v, export.<file>=path, seed=v")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="no progress messages")]
VerboseOpt = Annotated[bool, typer.Option("--verbose", "-v", help="more progress messages (each baseline, debug detail)")]
StrictOpt = Annotated[bool, typer.Option("--strict", help="exit with status 3 when a decision falls back to a baseline "
                                         "because the solver's answer failed its check (after writing the run directory)")]
WriteModelOpt = Annotated[str | None, typer.Option(
    "--write-model", help="write DECISION's MILP model to PATH (.lp or .mps, by suffix) for any other solver; "
    "the largest one when the decision solves several")]


def _version(value: bool) -> None:
    if value:
        from solvermap import __version__

        stdout_console().print(f"solvermap {__version__}", highlight=False)
        raise typer.Exit()


@app.callback()
def _main(version: Annotated[bool, typer.Option("--version", help="print the version and exit", callback=_version,
                                                is_eager=True)] = False) -> None:
    """Mapping compiler and design-space explorer for accelerators: every decision an explicit solver model."""


@contextmanager
def progress(quiet: bool, verbose: bool, *, console: Console | None = None, live: bool = True) -> Iterator[None]:
    """Progress messages on stderr for the duration (none with ``quiet``); a live status on a terminal unless
    the command draws its own live display (``live=False``)."""
    if quiet:
        yield
        return
    from solvermap.runs import console_logging

    console = console or stderr_console()
    with console_logging(console, live=live and console.is_terminal, verbose=verbose):
        yield


@contextmanager
def stdout_for_json_only(as_json: bool) -> Iterator[None]:
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
        # a stream of its own on descriptor 1 (now stderr), not sys.stderr itself: Pyomo's output capture
        # redirects the descriptors of sys.stdout and sys.stderr and deadlocks when both are descriptor 2
        with open(1, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False) as stream, \
                redirect_stdout(stream):
            yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


_stdout_for_json_only = stdout_for_json_only  # the name tests and older callers use


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def _run(decision: str | None, *, workload, target, solver, time_limit, as_json, out, config, sets, quiet, verbose,
         strict, write_model: str | None = None) -> None:
    from solvermap import api
    from solvermap.config import parse_set
    from solvermap.errors import StrictError
    from solvermap.results import backstop_decisions

    options = dict(parse_set(sets or []))
    strict_error = None
    with progress(quiet, verbose), stdout_for_json_only(as_json):
        try:
            if decision is None:
                result = api.map(workload, target, solver=solver, time_limit=time_limit, options=options, out=out,
                                 config=config, strict=strict)
            else:
                result = api.solve(decision, workload, target, solver=solver, time_limit=time_limit, options=options,
                                   out=out, config=config, strict=strict, write_model=write_model)
        except StrictError as exc:
            result, strict_error = exc.result, exc  # type: ignore[attr-defined]
    fired = backstop_decisions(result.records)
    if fired and quiet:  # otherwise the progress messages showed the warning already
        stderr_console().print(f"warning: not reproducible: the wall-clock backstop stopped {', '.join(fired)} before "
                               "its deterministic budget", highlight=False, markup=False, soft_wrap=True)
    if as_json:
        print_json(result.to_dict())
    else:
        print_records(result.records, result.validation if decision is None else None)
    stderr_console().print(f"run directory: {result.run_dir}", highlight=False)
    if strict_error is not None:
        raise strict_error


# ============================================================================================ tables


_LINE = r"(?:\d{3}:)?L\d+(?:\s*[-–]\s*L?\d+)?"


def without_line_citations(text: str) -> str:
    """A description without the seed documents' line numbers (``(002:L326-L333)``, ``, L251``), which a user
    cannot look up; sections and tables (``§3.3.2``, ``Table 5.3``) stay."""
    import re

    text = re.sub(rf"\s*\(\s*{_LINE}(?:\s*,\s*{_LINE})*\s*\)", "", text)
    text = re.sub(rf"(?:[,;]\s*)?(?:seed \d{{3}}\s+)?{_LINE}(?:\s*,\s*{_LINE})*", "", text)
    text = re.sub(r"\(\s*[,;]?\s*\)", "", text)
    text = re.sub(r"\(\s*[,;]\s*", "(", text)
    return re.sub(r"\s{2,}", " ", text).strip()


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def table(title: str, columns: list[str], *, show_header: bool = True, right: tuple[str, ...] = ()) -> Table:
    """A table whose cells fold rather than end in an ellipsis when a terminal is narrow."""
    out = Table(title=title, header_style="bold", show_header=show_header)
    for column in columns:
        out.add_column(column, overflow="fold", justify="right" if column in right else "left")
    return out


def print_records(records, validation) -> None:
    console = stdout_console()
    numbers = ("objective", "bound", "gap", "baseline obj", "solve s", "total s")
    grid = table("decisions", ["decision", "backend", "status", "objective", "bound", "gap", "baseline", "baseline obj",
                               "check", "solve s", "total s"], right=numbers)
    for r in records:
        s = r.solver
        grid.add_row(r.decision, s.backend, str(s.status), _fmt(s.objective), _fmt(s.bound), _fmt(s.gap),
                     r.baseline.name if r.baseline else "-", _fmt(r.baseline.objective if r.baseline else None),
                     "ok" if r.check.ok else f"FAIL ({len(r.check.violations)})", _seconds(s.solve_seconds),
                     _seconds(r.seconds))
    console.print(grid)
    console.print("solve s: the solver's own time (build + solve of every model the decision ran); total s: the "
                  "whole step (baselines, checks, Monte Carlo tests, simulation)", style="dim", highlight=False)
    for r in records:
        for v in r.check.violations[:5]:
            console.print(f"  [red]{r.decision}: {v.rule}[/red]: {v.message}", highlight=False)
        if r.validation:
            print_mapping(f"{r.decision} validation", r.validation, console)
    if validation:
        print_mapping("end-to-end validation", validation, console)


def print_mapping(title: str, mapping: dict, console: Console) -> None:
    grid = table(title, ["key", "value"], show_header=False)
    for key, value in mapping.items():
        if isinstance(value, (dict, list)):
            value = json.dumps(value)
        grid.add_row(str(key), _fmt(value))
    console.print(grid)


# ============================================================================================ commands


@app.command("map", short_help="map a workload onto a target: the whole pipeline, simulated")
def map_command(
    workload: WorkloadOpt = None, target: TargetOpt = None, solver: SolverOpt = None, time_limit: TimeOpt = None,
    as_json: JsonOpt = False, out: OutOpt = None, config: ConfigOpt = None, set_: SetOpt = None, quiet: QuietOpt = False,
    verbose: VerboseOpt = False, strict: StrictOpt = False,
) -> None:
    """Run the whole pipeline of a target on a workload and validate the mapping by simulation."""
    _run(None, workload=workload, target=target, solver=solver, time_limit=time_limit, as_json=as_json, out=out,
         config=config, sets=set_, quiet=quiet, verbose=verbose, strict=strict)


@app.command("solve", short_help="run the pipeline up to one decision and report it")
def solve_command(
    decision: Annotated[str, typer.Argument(help="decision to stop at (see `solvermap decisions`)")],
    workload: WorkloadOpt = None, target: TargetOpt = None, solver: SolverOpt = None, time_limit: TimeOpt = None,
    as_json: JsonOpt = False, out: OutOpt = None, config: ConfigOpt = None, set_: SetOpt = None, quiet: QuietOpt = False,
    verbose: VerboseOpt = False, strict: StrictOpt = False, write_model: WriteModelOpt = None,
) -> None:
    """Run the pipeline up to DECISION and report that decision's solve, baseline, check and validation."""
    _run(decision, workload=workload, target=target, solver=solver, time_limit=time_limit, as_json=as_json, out=out,
         config=config, sets=set_, quiet=quiet, verbose=verbose, strict=strict, write_model=write_model)


RERUN_DIFFERS = 4  # exit status of a rerun whose records differ from the original's


@app.command("rerun", short_help="repeat a map/solve run from its record, compare the records")
def rerun_command(
    directory: Annotated[str, typer.Argument(help="run directory of a `map` or `solve` run")],
    out: OutOpt = None, as_json: JsonOpt = False, quiet: QuietOpt = False, verbose: VerboseOpt = False,
) -> None:
    """Repeat a map/solve run from its record (resolved config, resolved target spec, workload parameters) in a
    new run directory and report every difference of the records, timings and paths excluded (exit status 4
    when they differ)."""
    from solvermap import api

    with progress(quiet, verbose), stdout_for_json_only(as_json):
        rerun = api.rerun(directory, out=out)
    err = stderr_console()
    if as_json:
        print_json(rerun.to_dict())
    else:
        from solvermap.results import MapResult

        result = rerun.result
        print_records(result.records, result.validation if isinstance(result, MapResult) else None)
    for note in rerun.notes:
        err.print(f"note: {note}", highlight=False, markup=False)
    err.print(f"run directory: {rerun.result.run_dir}", highlight=False)
    if rerun.identical:
        err.print(f"the records equal those of {directory} (timings and paths excluded)", highlight=False)
        return
    err.print(f"{len(rerun.differences)} difference(s) from {directory}:", highlight=False)
    for line in rerun.differences:
        err.print(f"  {line}", highlight=False, markup=False)
    raise typer.Exit(RERUN_DIFFERS)


def print_listing(items: list[dict[str, Any]], as_json: bool, title: str, columns: list[str], row: Any) -> None:
    """A listing: the API's list as JSON, or a table of ``row(item)`` cells (seed line citations left out)."""
    if as_json:
        return print_json(items)
    grid = table(title, columns)
    for item in items:
        grid.add_row(*(without_line_citations(cell) for cell in row(item)))
    stdout_console().print(grid)


@app.command("workloads", short_help="list the built-in workloads, or export one as a program file")
def workloads_command(
    as_json: JsonOpt = False,
    export: Annotated[str | None, typer.Option("--export", help="write built-in loop-nest workload NAME as a program "
                                               "file to stdout (an example of the format; --workload takes it back)")] = None,
    family: Annotated[str | None, typer.Option("--family", help="with --export: the family of NAME")] = None,
    fmt: Annotated[str, typer.Option("--format", help="with --export: yaml or json")] = "yaml",
    set_: SetOpt = None,
    quiet: QuietOpt = False, verbose: VerboseOpt = False,
) -> None:
    """List built-in workloads (name, target family, parameters with their ranges, description), or --export one as
    a program file."""
    from solvermap import api

    if export is not None:
        from solvermap.config import parse_set
        from solvermap.errors import InputError
        from solvermap.ir.program_file import export_workload

        params = {}
        for key, value in parse_set(set_ or []):
            if not key.startswith("workload.") or key == "workload.name":
                raise InputError("--set", key, "with --export only workload.<param>=value applies")
            params[key.removeprefix("workload.")] = value
        sys.stdout.write(export_workload(export, family, params, fmt))
        return
    print_listing(api.workloads(), as_json, "workloads", ["name", "family", "params", "description"], lambda w: (
        w["name"], w["family"], ", ".join(f"{k}={v} ({w['ranges'][k]['span']})" for k, v in w["params"].items()),
        w["description"]))


@app.command("targets", short_help="list the target presets")
def targets_command(as_json: JsonOpt = False, quiet: QuietOpt = False, verbose: VerboseOpt = False) -> None:
    """List target presets (pass a name, or a YAML file path, to --target) and whether this machine runs
    each natively (code-generating targets: the CPU flags and compiler they need)."""
    from solvermap import api

    print_listing(api.targets(), as_json, "targets", ["name", "family", "runs here", "description"],
                  lambda p: (p["name"], p["family"], "-" if p["runs_here"] is None else
                             ("yes" if p["runs_here"] else f"no: {p['why_not']}"), p["description"]))


@app.command("decisions", short_help="list the decisions: models, options, baselines, checkers")
def decisions_command(as_json: JsonOpt = False, quiet: QuietOpt = False, verbose: VerboseOpt = False) -> None:
    """List decisions from their descriptors: targets using them, model kind, backends, checker, baselines, options."""
    from solvermap import api

    print_listing(api.decisions(), as_json, "decisions", ["decision", "families", "kind", "baselines", "options",
                                                          "summary"], lambda r: (
        r["name"], ", ".join(r["families"]), r["kind"], ", ".join(b["name"] for b in r["baselines"]),
        ", ".join(k for k in r["options"].get("properties", {}) if k != "solver") or "-", r["summary"]))


@app.command("studies", short_help="list the shipped design-space studies")
def studies_command(as_json: JsonOpt = False, quiet: QuietOpt = False, verbose: VerboseOpt = False) -> None:
    """List the studies shipped with solvermap (pass a name to `solvermap explore` or `batch`)."""
    from solvermap import api

    print_listing(api.studies(), as_json, "studies", ["name", "description"], lambda s: (s["name"], s["description"]))


# ============================================================================================ studies


StudyArg = Annotated[str, typer.Argument(help="study YAML file, or the name of a shipped study (see `solvermap studies`)")]
StorageOpt = Annotated[str | None, typer.Option("--storage", help="journal file (*.journal) or database URL, e.g. postgresql://user@host:5432/db (default: study.journal in the study directory)")]
TrialsOpt = Annotated[int | None, typer.Option("--n-trials", "-n", min=1, help="finished trials to reach (default: the study's budget)")]
StudyOutOpt = Annotated[str | None, typer.Option("--out", help="study directory (default: a new one under runs/); an existing one with the same study resumes")]
StudyQuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="no progress bar or messages")]
StudyVerboseOpt = Annotated[bool, typer.Option("--verbose", "-v", help="every trial's progress messages too")]
AllowImportsOpt = Annotated[bool, typer.Option("--allow-imports", help="import the modules the study's `imports:` "
                                               "names (they run as Python code: only for studies you trust)")]


def _finish(results: Any, as_json: bool) -> None:
    from solvermap.search.report import print_summary

    err = stderr_console()
    if as_json:
        print_json(results.to_dict())
    else:
        print_summary(results, stdout_console())
    front = results.files.get("front_csv")
    figures = [v for k, v in results.files.items() if k.startswith("front_") and k.endswith(("_png", "_html"))]
    err.print(f"front: {front}", highlight=False)
    for f in figures:
        err.print(f"figure: {f}", highlight=False)
    err.print(f"study directory: {results.directory}  (resume or extend: --out {results.directory})", highlight=False)


@app.command("explore", short_help="run or resume a design-space study on this machine")
def explore_command(
    study: StudyArg,
    storage: StorageOpt = None,
    n_trials: TrialsOpt = None,
    out: StudyOutOpt = None,
    timeout: Annotated[float | None, typer.Option("--timeout", help="stop starting trials after this many seconds")] = None,
    as_json: JsonOpt = False,
    quiet: StudyQuietOpt = False,
    verbose: StudyVerboseOpt = False,
    allow_imports: AllowImportsOpt = False,
    workers: Annotated[int | None, typer.Option("--workers", "-k", min=1, help="worker processes on this machine (default: budget.workers of the study, else 1)")] = None,
) -> None:
    """Run (or resume) a design-space study on this machine; print the Pareto front and write tables and figures.
    STUDY is a study file or a shipped study's name (`solvermap studies`)."""
    from solvermap import api

    err = stderr_console()
    with progress(quiet or not verbose, verbose, console=err, live=False):  # the trial bar is the live display
        results = api.explore(study, storage=storage, n_trials=n_trials, out=out, timeout=timeout, workers=workers,
                              allow_imports=allow_imports, progress=not quiet and not as_json, console=err)
    for line in results.errors[:5]:
        err.print(f"failed {line}", highlight=False, markup=False)
    _finish(results, as_json)


@app.command("batch", short_help="run a study with K workers (SLURM job array or local)")
def batch_command(
    study: StudyArg,
    executor: Annotated[str, typer.Option("--executor", "-e", help="slurm (one job array) or local (processes)")] = "local",
    workers: Annotated[int | None, typer.Option("--workers", "-k", min=1, help="number of workers, SLURM array tasks (default: slurm.workers of the study, else 2)")] = None,
    storage: Annotated[str | None, typer.Option("--storage", help="database URL every worker reaches, e.g. postgresql://user@host:5432/db, or a journal file on a shared file system (default: slurm.storage of the study for slurm; study.journal in the study directory for local)")] = None,
    n_trials: TrialsOpt = None,
    out: StudyOutOpt = None,
    wait: Annotated[bool, typer.Option("--wait/--no-wait", help="wait for the workers, then write the results")] = True,
    partition: Annotated[str | None, typer.Option("--partition", help="SLURM partition (default: slurm.partition)")] = None,
    time_min: Annotated[int | None, typer.Option("--time-min", min=1, help="time limit of each worker job in minutes (default: slurm.time_min, 1440)")] = None,
    cpus: Annotated[int | None, typer.Option("--cpus", min=1, help="CPUs per worker (default: slurm.cpus_per_task, 1)")] = None,
    mem_gb: Annotated[float | None, typer.Option("--mem-gb", min=0.001, help="memory per worker in GB (default: slurm.mem_gb)")] = None,
    sbatch: Annotated[list[str] | None, typer.Option("--sbatch", help="one more #SBATCH option, KEY=VALUE or KEY (repeatable), e.g. --sbatch account=lab")] = None,
    setup: Annotated[list[str] | None, typer.Option("--setup", help="a shell line the job runs before the worker (repeatable), e.g. 'module load python'")] = None,
    as_json: JsonOpt = False,
    quiet: StudyQuietOpt = False,
    verbose: StudyVerboseOpt = False,
    allow_imports: AllowImportsOpt = False,
) -> None:
    """Run a study with K workers sharing one storage: a SLURM job array or local processes (submitit; extra
    `cluster`)."""
    from solvermap import api

    err = stderr_console()
    with progress(quiet, verbose, console=err, live=False):  # the submission line and warnings; the bar is live
        results = api.batch(study, executor=executor, workers=workers, storage=storage, n_trials=n_trials, out=out,
                            wait=wait, partition=partition, time_min=time_min, cpus=cpus, mem_gb=mem_gb, sbatch=sbatch,
                            setup=setup, allow_imports=allow_imports, progress=not quiet and not as_json, console=err)
    if isinstance(results, api.Submission):
        err.print(f"follow with: solvermap status {results.directory}   (results: solvermap status "
                  f"{results.directory} --write)", highlight=False)
        if as_json:
            print_json(results.to_dict())
        return
    _finish(results, as_json)


@app.command("status", short_help="show a study's progress, or a run's state")
def status_command(
    target: Annotated[str, typer.Argument(help="study directory, a study name with --storage, or a map/solve run directory")],
    storage: StorageOpt = None,
    write: Annotated[bool, typer.Option("--write", help="also write tables and figures into the study directory")] = False,
    as_json: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Show a study's progress: trials finished, running, queued and failed, worker jobs and the current Pareto
    front; for a map/solve run directory, whether the run finished or failed (and why)."""
    from solvermap import api
    from solvermap.search.report import write_results
    from solvermap.search.status import print_status

    path = Path(target)
    if path.is_dir() and not (path / "study.json").exists() and (path / "run.json").exists():
        state = api.run_state(path)
        if as_json:
            return print_json(state.to_json())
        line = f"{state.command} run {path}: {state.state}" + (f" (exit status {state.exit_code}): {state.error}"
                                                                  if state.error else "")
        return stdout_console().print(line, highlight=False, markup=False)
    status = api.status(target, storage=storage)
    if write:
        if not path.is_dir():
            raise InputError(target, "--write", "needs a study directory")
        write_results(status.results, target)
    if as_json:
        print_json(status.to_dict())
    else:
        print_status(status, stdout_console())


def _register_extensions() -> None:
    """Commands contributed by modules that may be absent (``register(app)`` adds them), once per process: a
    second registration would add the commands again to every later ``main()`` in this process."""
    import importlib

    if any(c.name == "hpvm-config" for c in app.registered_commands):
        return
    for module in ("solvermap.hpvm_config_command",):
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name == module:
                continue
            raise
        mod.register(app)


def main() -> None:
    _register_extensions()
    err_console = stderr_console()
    try:
        code = app(standalone_mode=False)
        if isinstance(code, int) and not isinstance(code, bool) and code:
            sys.exit(code)  # typer returns the code of an Exit, e.g. 130 after Ctrl-C, instead of exiting
    except SolvermapError as exc:
        where = getattr(exc, "run_dir", None)
        err_console.print(f"error: {exc}" + (f" (run directory {where}, marked failed)" if where else ""),
                          highlight=False, markup=False, soft_wrap=True)
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
            stdout_console().print(exc.format_message(), highlight=False, markup=False)
            sys.exit(0)
        if hasattr(exc, "format_message") and hasattr(exc, "exit_code"):
            err_console.print(f"error: {exc.format_message()} (see solvermap --help)", highlight=False, markup=False,
                              soft_wrap=True)
            sys.exit(exc.exit_code)
        raise
    if isinstance(code, int) and code:
        sys.exit(code)


if __name__ == "__main__":
    main()
