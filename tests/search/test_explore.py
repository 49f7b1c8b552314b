"""Running studies in process: outputs, determinism, resume, constraints seen by the samplers, status."""

from __future__ import annotations

import json
import math

import optuna
import pandas as pd
import pytest

from solvermap.errors import InputError
from solvermap.search.explore import explore
from solvermap.search.status import load_status, status_json
from solvermap.search.storage import Heartbeat, claim, fail_stale, open_storage
from solvermap.search.study_file import StorageSettings
from tests.search.conftest import write_study


def _params(out) -> list[dict]:
    frame = pd.read_csv(out / "tables" / "trials.csv")
    cols = [c for c in frame.columns if c.startswith("target.")]
    return [{c: row[c] for c in cols if pd.notna(row[c])} for _, row in frame.sort_values("number").iterrows()]


def test_study_writes_front_tables_and_figures(tmp_path, study_file):
    sdir, results, report = explore(study_file, out=tmp_path / "run", progress=False, allow_imports=True)
    assert report.completed == 8 and results.counts["complete"] == 8
    for name in ("tables/trials.csv", "tables/trials.parquet", "tables/front.csv", "tables/front.parquet",
                 "tables/hypervolume.csv", "figures/front_cycles__area_mm2.png", "figures/front_cycles__area_mm2.html",
                 "figures/plotly.min.js", "study.yaml", "study.json", "environment.json", "study.journal"):
        assert (sdir.path / name).exists(), name
    front = pd.read_csv(sdir.path / "tables" / "front.csv")
    assert len(front) == len(results.front) >= 1 and front["feasible"].all()
    assert 0 < results.hypervolume <= 1.21
    assert len(list((sdir.path / "trials").iterdir())) == 8


@pytest.mark.parametrize("sampler", ["random", "tpe", "nsga2"])
def test_same_study_and_seed_give_the_same_trials(tmp_path, sampler):
    path = write_study(tmp_path / "s.yaml", sampler={"name": sampler}, budget={"n_trials": 6})
    explore(path, out=tmp_path / "a", progress=False, allow_imports=True)
    explore(path, out=tmp_path / "b", progress=False, allow_imports=True)
    assert _params(tmp_path / "a") == _params(tmp_path / "b")


def test_resume_in_the_same_directory_extends_without_repeating(tmp_path, study_file):
    explore(study_file, out=tmp_path / "run", n_trials=4, progress=False, allow_imports=True)
    first = _params(tmp_path / "run")
    _, results, report = explore(study_file, out=tmp_path / "run", n_trials=7, progress=False, allow_imports=True)
    assert report.completed == 3 and results.counts["complete"] == 7
    assert _params(tmp_path / "run")[:4] == first


@pytest.mark.parametrize("sampler", ["random", "nsga2"])
def test_an_extended_study_proposes_what_an_uninterrupted_one_does(tmp_path, sampler):
    path = write_study(tmp_path / "s.yaml", sampler={"name": sampler})
    explore(path, out=tmp_path / "parts", n_trials=3, progress=False, allow_imports=True)
    explore(path, out=tmp_path / "parts", n_trials=7, progress=False, allow_imports=True)
    explore(path, out=tmp_path / "whole", n_trials=7, progress=False, allow_imports=True)
    assert _params(tmp_path / "parts") == _params(tmp_path / "whole")


def test_a_proposal_of_a_finished_configuration_is_not_evaluated_and_the_space_caps_the_trials(tmp_path):
    space = {"target.pes": {"type": "int", "low": 1, "high": 3}, "target.lanes": {"type": "categorical", "choices": [4, 8]}}
    path = write_study(tmp_path / "s.yaml", space=space, budget={"n_trials": 10})
    _, results, report = explore(path, out=tmp_path / "run", progress=False, allow_imports=True)
    configs = [json.dumps(p, sort_keys=True) for p in _params(tmp_path / "run")]
    assert report.completed == results.counts["complete"] == len(configs) == len(set(configs)) == 6
    assert report.repeats == results.counts["repeats"] > 0  # six random draws from six points repeat


def test_a_different_study_in_the_same_directory_is_refused(tmp_path, study_file):
    explore(study_file, out=tmp_path / "run", n_trials=2, progress=False, allow_imports=True)
    other = write_study(tmp_path / "other.yaml", seed=5)
    with pytest.raises(InputError, match="different study"):
        explore(other, out=tmp_path / "run", progress=False, allow_imports=True)


def test_grid_sweeps_every_configuration_once(tmp_path):
    path = write_study(tmp_path / "g.yaml", sampler={"name": "grid"}, budget={})
    _, results, _ = explore(path, out=tmp_path / "run", progress=False, allow_imports=True)
    params = _params(tmp_path / "run")
    assert results.counts["complete"] == 36
    assert len({json.dumps(p, sort_keys=True) for p in params}) == 36


def test_infeasible_trials_carry_constraints_that_nsga2_sees(tmp_path):
    path = write_study(tmp_path / "c.yaml", sampler={"name": "nsga2", "options": {"population_size": 4}},
                       constraints=[{"metric": "area_mm2", "max": 0.6}], budget={"n_trials": 10})
    sdir, results, _ = explore(path, out=tmp_path / "run", progress=False, allow_imports=True)
    storage = open_storage(sdir.url, StorageSettings())
    study = optuna.load_study(study_name="toy", storage=storage)
    trials = study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
    assert all(set(t.constraints) == {"mapping", "area_mm2<=0.6"} for t in trials)
    infeasible = [t for t in trials if any(v > 0 for v in t.constraints.values())]
    assert infeasible, "the space has configurations over the cap and unmappable ones"
    assert {t.number for t in study.best_trials}.isdisjoint({t.number for t in infeasible})
    assert all(row.feasible for row in results.front.itertuples())
    unmappable = [t for t in infeasible if t.constraints["mapping"] > 0]
    assert all(v == math.inf for t in unmappable for v in t.values)


def test_status_counts_trials_and_reports_the_front(tmp_path, study_file):
    explore(study_file, out=tmp_path / "run", n_trials=5, progress=False, allow_imports=True)
    payload = status_json(load_status(str(tmp_path / "run")))
    assert payload["counts"]["complete"] == 5 and payload["n_trials"] == 5
    assert payload["finished_by_worker"] == {"explore": 5}
    assert payload["front"] and set(payload["front"][0]["objectives"]) == {"cycles", "area_mm2"}


def test_silent_journal_trial_is_failed_and_requeued_after_the_grace_period(tmp_path):
    settings = StorageSettings(heartbeat_s=1, grace_s=1, max_retry=1)
    storage = open_storage(str(tmp_path / "s.journal"), settings)
    study = optuna.create_study(storage=storage, study_name="hb")
    trial = study.ask()
    trial.suggest_int("x", 0, 9)
    claim(storage, trial._trial_id, "elsewhere")
    storage.set_trial_system_attr(trial._trial_id, "solvermap:owner", {"host": "another-host/boot", "pid": 1})
    assert fail_stale(study, settings) == []  # still within the grace period
    with Heartbeat(storage, trial._trial_id, 1):
        pass  # a beat now
    storage.set_trial_system_attr(trial._trial_id, "solvermap:heartbeat", 0.0)  # ... and then long silence
    assert fail_stale(study, settings) == [trial.number]
    states = [t.state.name for t in study.get_trials()]
    assert states == ["FAIL", "WAITING"]
    assert study.get_trials()[1].params == trial.params


def test_cli_explore_then_status_print_json_and_show_the_figures(tmp_path, study_file):
    import subprocess

    from tests.search.conftest import SOLVERMAP, subprocess_env

    out = tmp_path / "run"
    run = subprocess.run([SOLVERMAP, "explore", str(study_file), "--out", str(out), "-n", "4", "--json", "--allow-imports"],
                         capture_output=True, text=True, env=subprocess_env(), timeout=120)
    assert run.returncode == 0, run.stderr
    payload = json.loads(run.stdout)
    assert payload["counts"]["complete"] == 4 and payload["directory"] == str(out)
    assert f"figure: {out / 'figures' / 'front_cycles__area_mm2.png'}" in run.stderr
    status = subprocess.run([SOLVERMAP, "status", str(out), "--json"], capture_output=True, text=True,
                            env=subprocess_env(), timeout=120)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["front"] == payload["front"]
