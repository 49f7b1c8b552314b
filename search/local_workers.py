"""``explore --workers K``: K − 1 worker processes beside the one that shows the progress bar.

Each extra worker is a fresh interpreter (``multiprocessing`` spawn: no solver state is forked) that runs
the same :class:`~solvermap.search.batch.BatchWorker` a ``batch`` job runs — open the study directory, seed
its sampler with ``seed + k``, run trials from the shared storage until the study holds ``n_trials``
finished trials — and logs to ``workers/worker-<k>.log``. The storage (by default the study's journal file,
locked with filelock) is what the processes share, so nothing else needs to be coordinated. On exit, a
worker still running is sent SIGTERM, which makes it give its running trial back to the study.
"""

from __future__ import annotations

import sys
from typing import Any


def start(sdir: Any, handle: Any, workers: int, timeout_s: float | None, allow_imports: bool) -> list[Any]:
    """Start workers 1 .. K−1 of the study in ``sdir`` (worker 0 is the calling process)."""
    import multiprocessing

    from solvermap.search.batch import BatchWorker, WorkerJob

    context = multiprocessing.get_context("spawn")
    processes = []
    for index in range(1, workers):
        job = WorkerJob(str(sdir.path), handle.url, handle.n_trials, index, workers, timeout_s, tuple(sys.path),
                        allow_imports)
        process = context.Process(target=BatchWorker(), args=(job,), name=f"worker-{index}")
        process.start()
        processes.append(process)
    return processes


def stop(processes: list[Any], wait_s: float = 30.0) -> None:
    """Wait for the workers to finish; one still running after ``wait_s`` is terminated (it gives back its trial)."""
    for process in processes:
        process.join(wait_s)
        if process.is_alive():
            process.terminate()
            process.join(wait_s)
