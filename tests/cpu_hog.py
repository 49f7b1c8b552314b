"""A CPU-hogging process beside a test: one busy-looping child per core (at the test's own priority), so
that a limit counted in wall time would end earlier than on an idle machine, while one counted in
deterministic work must not change. Started and stopped by process id."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator

SPIN = "while True: pass"


@contextlib.contextmanager
def cpu_hog(processes: int | None = None) -> Iterator[list[int]]:
    """Run ``processes`` (default: one per core) busy loops while the block runs; yields their pids."""
    count = processes or os.cpu_count() or 2
    children = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(count)]
    try:
        time.sleep(0.2)  # let them start spinning
        assert all(c.poll() is None for c in children), "a hog process ended at once"
        yield [c.pid for c in children]
    finally:
        for child in children:
            child.kill()
        for child in children:
            child.wait()
