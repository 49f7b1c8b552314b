"""Design-space commands for the ``solvermap`` CLI: ``explore``, ``batch``, ``status``.

``solvermap.cli`` imports this module and calls :func:`register`. STUDY is a study YAML file or the
name of a study shipped in ``solvermap/search/studies/`` (e.g. ``plasticine-network``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from solvermap.errors import InputError

STUDIES_DIR = Path(__file__).parent / "studies"

StudyArg = Annotated[str, typer.Argument(help="study YAML file, or the name of a shipped study (see `solvermap explore --help`)")]
StorageOpt = Annotated[str | None, typer.Option("--storage", help="journal file (*.journal) or database URL, e.g. postgresql://user@host:5432/db (default: study.journal in the study directory)")]
TrialsOpt = Annotated[int | None, typer.Option("--n-trials", "-n", min=1, help="finished trials to reach (default: the study's budget)")]
OutOpt = Annotated[str | None, typer.Option("--out", help="study directory (default: a new one under runs/); an existing one with the same study resumes")]
JsonOpt = Annotated[bool, typer.Option("--json", help="print one JSON object to stdout")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="no progress bar")]
AllowImportsOpt = Annotated[bool, typer.Option("--allow-imports", help="import the modules the study's `imports:` "
                                               "names (they run as Python code: only for studies you trust)")]


def _out_console() -> Console:
    """Standard output; when it is not a terminal, wide enough that tables are not folded."""
    return Console() if sys.stdout.isatty() else Console(width=160)


def shipped_studies() -> dict[str, Path]:
    """Studies shipped with the package, by their ``name``."""
    import yaml

    out = {}
    for path in sorted(STUDIES_DIR.glob("*.yaml")):
        try:
            name = (yaml.safe_load(path.read_text()) or {}).get("name", path.stem)
        except yaml.YAMLError:
            name = path.stem
        out[str(name)] = path
        out.setdefault(path.stem, path)
    return out


def resolve_study(study: str) -> Path:
    path = Path(study)
    if path.exists() or study.endswith((".yaml", ".yml")):
        return path
    known = shipped_studies()
    if study in known:
        return known[study]
    raise InputError(study, "", f"no such study file or shipped study; shipped: {', '.join(sorted(set(known))) or '(none)'}")


def _finish(sdir: Any, results: Any, as_json: bool, extra: dict[str, Any]) -> None:
    from solvermap.search.report import print_summary, summary_json

    out, err = _out_console(), Console(stderr=True, soft_wrap=True)
    if as_json:
        payload = summary_json(results, {"study": sdir.spec.name, "directory": str(sdir.path), **extra})
        sys.stdout.write(json.dumps(payload, indent=2, default=str) + "\n")
    else:
        print_summary(results, out)
    front = results.files.get("front_csv")
    figures = [v for k, v in results.files.items() if k.startswith("front_") and k.endswith(("_png", "_html"))]
    err.print(f"front: {front}", highlight=False)
    for f in figures:
        err.print(f"figure: {f}", highlight=False)
    err.print(f"study directory: {sdir.path}  (resume or extend: --out {sdir.path})", highlight=False)


def explore_command(
    study: StudyArg,
    storage: StorageOpt = None,
    n_trials: TrialsOpt = None,
    out: OutOpt = None,
    timeout: Annotated[float | None, typer.Option("--timeout", help="stop starting trials after this many seconds")] = None,
    as_json: JsonOpt = False,
    quiet: QuietOpt = False,
    allow_imports: AllowImportsOpt = False,
    workers: Annotated[int | None, typer.Option("--workers", "-k", min=1, help="worker processes on this machine (default: budget.workers of the study, else 1)")] = None,
) -> None:
    """Run (or resume) a design-space study on this machine; print the Pareto front and write tables and figures."""
    from solvermap.search.explore import explore

    path = resolve_study(study)
    sdir, results, report = explore(path, storage=storage, n_trials=n_trials, out=out, timeout_s=timeout,
                                    progress=not quiet and not as_json, allow_imports=allow_imports, workers=workers)
    for line in report.errors[:5]:
        Console(stderr=True, soft_wrap=True).print(f"failed {line}", highlight=False, markup=False)
    _finish(sdir, results, as_json, {"worker": {"completed": report.completed, "failed": report.failed}})


def batch_command(
    study: StudyArg,
    executor: Annotated[str, typer.Option("--executor", "-e", help="slurm (one job array) or local (processes)")] = "local",
    workers: Annotated[int | None, typer.Option("--workers", "-k", min=1, help="number of workers, SLURM array tasks (default: slurm.workers of the study, else 2)")] = None,
    storage: Annotated[str | None, typer.Option("--storage", help="database URL every worker reaches, e.g. postgresql://user@host:5432/db, or a journal file on a shared file system (default: slurm.storage of the study for slurm; study.journal in the study directory for local)")] = None,
    n_trials: TrialsOpt = None,
    out: OutOpt = None,
    wait: Annotated[bool, typer.Option("--wait/--no-wait", help="wait for the workers, then write the results")] = True,
    partition: Annotated[str | None, typer.Option("--partition", help="SLURM partition (default: slurm.partition)")] = None,
    time_min: Annotated[int | None, typer.Option("--time-min", min=1, help="time limit of each worker job in minutes (default: slurm.time_min, 1440)")] = None,
    cpus: Annotated[int | None, typer.Option("--cpus", min=1, help="CPUs per worker (default: slurm.cpus_per_task, 1)")] = None,
    mem_gb: Annotated[float | None, typer.Option("--mem-gb", min=0.001, help="memory per worker in GB (default: slurm.mem_gb)")] = None,
    sbatch: Annotated[list[str] | None, typer.Option("--sbatch", help="one more #SBATCH option, KEY=VALUE or KEY (repeatable), e.g. --sbatch account=lab")] = None,
    setup: Annotated[list[str] | None, typer.Option("--setup", help="a shell line the job runs before the worker (repeatable), e.g. 'module load python'")] = None,
    as_json: JsonOpt = False,
    quiet: QuietOpt = False,
    allow_imports: AllowImportsOpt = False,
) -> None:
    """Run a study with K workers sharing one storage: a SLURM job array or local processes (submitit)."""
    try:
        import submitit  # noqa: F401
    except ImportError:
        raise InputError("--executor", executor, "batch runs need submitit: pip install 'solvermap[cluster]'") from None
    from solvermap.search.batch import submit, wait as wait_for, worker_error
    from solvermap.search.report import analyse, write_results
    from solvermap.search.worker import counts, finished

    path = resolve_study(study)
    sdir, handle, jobs = submit(path, executor=executor, workers=workers, storage=storage, n_trials=n_trials, out=out,
                                partition=partition, time_min=time_min, cpus=cpus, mem_gb=mem_gb, sbatch=sbatch,
                                setup=setup, allow_imports=allow_imports)
    err = Console(stderr=True, soft_wrap=True)
    err.print(f"submitted {len(jobs)} {executor} worker(s): {', '.join(str(j.job_id) for j in jobs)}; "
              f"logs in {sdir.path / 'workers'}", highlight=False)
    if not wait:
        err.print(f"follow with: solvermap status {sdir.path}   (results: solvermap status {sdir.path} --write)",
                  highlight=False)
        if as_json:
            sys.stdout.write(json.dumps({"study": sdir.spec.name, "directory": str(sdir.path),
                                         "jobs": [str(j.job_id) for j in jobs]}, indent=2) + "\n")
        _release(jobs)
        return
    reports = wait_for(handle, jobs, executor=executor, progress=not quiet and not as_json, console=err)
    _release(jobs)
    error = worker_error(reports)
    if error is not None:
        raise error
    for r in reports:
        if "error" in r:
            err.print(f"{r['label']} failed: {r['error']}", highlight=False, markup=False)
    done = finished(counts(handle.study))
    if done < handle.n_trials:
        err.print(f"the workers ended with {done} of {handle.n_trials} trials finished; "
                  f"continue with: solvermap batch {study} --out {sdir.path}", highlight=False)
    results = analyse(handle.study, [o.label for o in sdir.spec.objectives], sdir.spec.directions)
    write_results(results, sdir.path)
    _finish(sdir, results, as_json, {"workers": reports})


def _release(jobs: list[Any]) -> None:
    """Drop submitit's job handles now: their finalisers fail if they run during interpreter shutdown."""
    import gc

    jobs.clear()
    gc.collect()


def status_command(
    target: Annotated[str, typer.Argument(help="study directory, or a study name with --storage")],
    storage: StorageOpt = None,
    write: Annotated[bool, typer.Option("--write", help="also write tables and figures into the study directory")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Show a study's progress: trials finished, running, queued and failed, and the current Pareto front."""
    from solvermap.search.report import write_results
    from solvermap.search.status import load_status, print_status, status_json

    status = load_status(target, storage=storage)
    if write:
        if not Path(target).is_dir():
            raise InputError(target, "--write", "needs a study directory")
        write_results(status.results, target)
    if as_json:
        sys.stdout.write(json.dumps(status_json(status), indent=2, default=str) + "\n")
    else:
        print_status(status, _out_console())


def register(app: typer.Typer) -> None:
    """Add ``explore``, ``batch`` and ``status`` to the ``solvermap`` app."""
    names = ", ".join(sorted({p.stem for p in STUDIES_DIR.glob("*.yaml")})) or "none yet"
    app.command("explore", help=f"{explore_command.__doc__} Shipped studies: {names}.")(explore_command)
    app.command("batch")(batch_command)
    app.command("status")(status_command)
