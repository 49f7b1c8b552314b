"""Same answer under load: the first trials of the default study (the README's main job, whose solves are
stopped by their deterministic work limit) give the same tables on an idle machine and beside a process
that keeps every core busy. Only wall-clock columns (seconds) and the run directories may differ."""

from __future__ import annotations

import pandas as pd
import pytest

from solvermap.search.explore import explore, resolve_study
from tests.cpu_hog import cpu_hog

TRIALS = 2  # a cheap infeasible point and a full map of both apps (about 15 s of CPU together)


def _table(out) -> pd.DataFrame:
    frame = pd.read_csv(out / "tables" / "trials.csv")
    clocked = [c for c in frame.columns if "seconds" in c or c == "run_dir"]
    return frame.drop(columns=clocked)


@pytest.mark.slow
def test_the_first_trials_of_the_default_study_are_the_same_beside_a_cpu_hog(tmp_path):
    study = resolve_study("plasticine-dse")
    explore(study, out=tmp_path / "idle", n_trials=TRIALS, progress=False)
    with cpu_hog():
        explore(study, out=tmp_path / "loaded", n_trials=TRIALS, progress=False)
    idle, loaded = _table(tmp_path / "idle"), _table(tmp_path / "loaded")
    assert len(idle) == TRIALS and (idle["state"] == "complete").all()
    assert idle["feasible"].any(), "no trial mapped both apps: the comparison would only cover infeasible points"
    pd.testing.assert_frame_equal(idle, loaded)
