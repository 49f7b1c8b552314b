"""``solvermap explore``: run a study in this process, with a progress bar, then write its results.

The study directory (``--out``, default a new run directory under ``runs/``) holds::

    study.yaml        the validated study, every default filled in (what workers read)
    study.json        study name, storage URL, digest, the original study file
    environment.json  versions, backends, git commit
    study.journal     the default storage (Optuna journal file)
    trials/<n>/       one folder per trial (params, per-workload records, metrics, log)
    cache/            the solve cache shared by the study's trials
    tables/, figures/ results (see solvermap.search.report)

Giving ``--out`` a directory that already holds the same study (same digest) resumes it: finished
trials are kept, a trial that was running when the previous process died is failed and re-run, and
new trials start until ``--n-trials`` trials have finished. A different study there is an error.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from solvermap.errors import InputError
from solvermap.search.study_file import StudyFile, load_study, parse_study, study_digest


STUDIES_DIR = Path(__file__).parent / "studies"


def shipped_studies() -> dict[str, Path]:
    """Studies shipped with the package, by their ``name`` (and by file stem)."""
    out = {}
    for path in sorted(STUDIES_DIR.glob("*.yaml")):
        try:
            name = (yaml.safe_load(path.read_text()) or {}).get("name", path.stem)
        except yaml.YAMLError:
            name = path.stem
        out[str(name)] = path
        out.setdefault(path.stem, path)
    return out


def resolve_study(study: str | Path) -> Path:
    """A study file, or the file of a shipped study named ``study``."""
    text = str(study)
    path = Path(text)
    if path.exists() or text.endswith((".yaml", ".yml")):
        return path
    known = shipped_studies()
    if text in known:
        return known[text]
    raise InputError(text, "", f"no such study file or shipped study; shipped: {', '.join(sorted(set(known))) or '(none)'}")


@dataclass
class StudyDir:
    """An opened study directory and what ``study.json`` says about it."""

    path: Path
    spec: StudyFile
    url: str
    resumed: bool

    @property
    def source(self) -> str:
        return str(self.path / "study.yaml")


def _read_record(path: Path) -> dict[str, Any]:
    from solvermap.inputs import read_text

    source = str(path / "study.json")
    try:
        record = json.loads(read_text(path / "study.json"))
    except ValueError as exc:
        raise InputError(source, "", f"unreadable study record: {exc}") from None
    if not isinstance(record, dict) or not isinstance(record.get("storage"), str):
        raise InputError(source, "storage", "unreadable study record: expected an object with the storage URL")
    return record


def prepare_dir(study_path: str | Path, out: str | Path | None, storage: str | None, command: str,
                allow_imports: bool = False) -> StudyDir:
    """Create the study directory, or reopen it to resume (module docstring). The study (its names, every
    value its space can take, its sampler options, ``imports:`` only with ``allow_imports``), ``out`` and
    ``storage`` are checked before anything is written."""
    from solvermap.inputs import output_dir
    from solvermap.runs import RunDirectory
    from solvermap.search.evaluate import Evaluator
    from solvermap.search.samplers import make_sampler
    from solvermap.search.storage import default_url, open_storage
    from solvermap.search.study_file import check_imports

    spec = load_study(study_path)
    check_imports(spec, allow_imports, str(study_path))
    if out is not None:
        output_dir(out, "--out")
    Evaluator(spec, None, source=str(study_path), allow_imports=allow_imports)  # every check of the study
    make_sampler(spec, source=str(study_path))  # sampler options are checked by building the sampler
    if storage is not None:
        open_storage(storage, spec.storage)  # a storage that does not open fails before anything is written
    digest = study_digest(spec)
    if out is not None and (Path(out) / "study.json").exists():
        path = Path(out)
        record = _read_record(path)
        if record.get("digest") != digest:
            raise InputError(str(out), "--out", f"holds a different study ({record.get('study_name')!r}, digest "
                             f"{record.get('digest')}); choose a new directory")
        url = storage or record["storage"]
        return StudyDir(path, spec, url, True)
    run = RunDirectory.create(out, command, spec.name)
    url = storage or default_url(run.path)
    (run.path / "study.yaml").write_text(yaml.safe_dump(spec.model_dump(mode="json"), sort_keys=False))
    run.write_json("study.json", {"study_name": spec.name, "storage": url, "digest": digest,
                                  "study_file": str(Path(study_path).resolve()),
                                  "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
    run.write_environment()
    return StudyDir(run.path, spec, url, False)


def open_dir(path: str | Path) -> StudyDir:
    """Reopen an existing study directory (for workers and ``status``)."""
    path = Path(path)
    if not (path / "study.json").exists():
        raise InputError(str(path), "", "not a study directory (no study.json)")
    from solvermap.inputs import load_yaml

    record = _read_record(path)
    source = str(path / "study.yaml")
    spec = parse_study(load_yaml(path / "study.yaml"), source)
    return StudyDir(path, spec, record["storage"], True)


@contextmanager
def _stopping(helpers: list[Any]) -> Iterator[None]:
    from solvermap.search import local_workers

    try:
        yield
    finally:
        local_workers.stop(helpers)


class TrialProgress:
    """A rich progress bar over finished trials (this worker's and everyone else's)."""

    def __init__(self, total: int, done: int, enabled: bool, console: Any) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        self.enabled = enabled
        self.feasible = 0
        self.pruned = 0
        self.unknown = 0
        self.hits = 0
        self.failed = 0
        self.progress = Progress(TextColumn("[bold]trials"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                 TextColumn("eta"), TimeRemainingColumn(), TextColumn("{task.fields[note]}"),
                                 console=console, disable=not enabled, transient=False)
        self.task = self.progress.add_task("trials", total=total, completed=done, note="")

    def __enter__(self) -> TrialProgress:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.progress.__exit__(*exc)

    def record(self, result: Any) -> None:
        """Count one finished trial of this process (None: a trial that failed)."""
        if result is None:
            self.failed += 1
            return
        self.feasible += 1 if result.feasible else 0
        self.pruned += 1 if result.outcome == "pruned" else 0
        self.unknown += 1 if result.outcome == "unknown" else 0
        self.hits += result.cache.get("hits", 0) if result.cache else 0

    def show(self, completed: int) -> None:
        note = (f"feasible {self.feasible}, pruned {self.pruned}" + (f", unknown {self.unknown}" if self.unknown else "")
                + f", cache hits {self.hits}" + (f", failed {self.failed}" if self.failed else ""))
        self.progress.update(self.task, completed=completed, note=note)


def explore(study_path: str | Path, *, storage: str | None = None, n_trials: int | None = None,
            out: str | Path | None = None, timeout_s: float | None = None, progress: bool = True,
            console: Any = None, allow_imports: bool = False, workers: int | None = None) -> tuple[StudyDir, Any, Any]:
    """Run (or resume) a study in this process, with ``workers − 1`` more local worker processes (default: the
    study's ``budget.workers``; :mod:`.local_workers`); returns the directory, the results and this process's
    report. ``study_path`` is a study file or a shipped study's name. The directory's ``run.json`` says whether
    the run ended ``ok``, ``failed`` (with the error) or ``interrupted``."""
    from rich.console import Console

    from solvermap.runs import RunDirectory

    console = console or Console(stderr=True, soft_wrap=True)
    study_path = resolve_study(study_path)
    sdir = prepare_dir(study_path, out, storage, "explore", allow_imports)
    with RunDirectory(sdir.path).recording("explore"):
        results, report = _run(sdir, study_path, n_trials, timeout_s, progress, console, allow_imports, workers)
    return sdir, results, report


def _run(sdir: StudyDir, study_path: Path, n_trials: int | None, timeout_s: float | None, progress: bool,
         console: Any, allow_imports: bool, workers: int | None) -> tuple[Any, Any]:
    from solvermap.search import local_workers
    from solvermap.search.evaluate import Evaluator
    from solvermap.search.report import analyse, write_results
    from solvermap.search.worker import counts, finished, open_study, run_worker

    evaluator = Evaluator(sdir.spec, sdir.path, source=str(study_path), allow_imports=allow_imports)
    handle = open_study(sdir.spec, sdir.url, n_trials=n_trials, source=str(study_path))
    record = json.loads((sdir.path / "study.json").read_text())
    record["n_trials"] = handle.n_trials
    (sdir.path / "study.json").write_text(json.dumps(record, indent=2))
    done = finished(counts(handle.study))
    if sdir.resumed:
        console.print(f"resuming study {sdir.spec.name!r}: {done} of {handle.n_trials} trials finished", highlight=False)
    timeout = timeout_s if timeout_s is not None else sdir.spec.budget.timeout_s
    helpers = local_workers.start(sdir, handle, workers or sdir.spec.budget.workers, timeout, allow_imports)
    with TrialProgress(handle.n_trials, done, progress, console) as bar, _stopping(helpers):
        def on_trial(number: int, result: Any, finished: int) -> None:
            bar.record(result)
            bar.show(finished)

        try:
            report = run_worker(handle, evaluator, timeout_s=timeout, label="explore", on_trial=on_trial)
        except KeyboardInterrupt:
            write_results(analyse(handle.study, [o.label for o in sdir.spec.objectives], sdir.spec.directions), sdir.path)
            console.print(f"interrupted: results so far in {sdir.path}; resume with --out {sdir.path}", highlight=False)
            raise
    results = analyse(handle.study, [o.label for o in sdir.spec.objectives], sdir.spec.directions)
    write_results(results, sdir.path)
    return results, report
