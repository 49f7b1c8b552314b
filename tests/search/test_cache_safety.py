"""The solve cache keys on all the code a solve reaches, stores JSON only, never unpickles; study imports need consent."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys

import pytest

from solvermap.errors import InputError
from solvermap.formulations.solver import SolverConfig
from solvermap.mappers.decisions import DECISIONS, PARTITION
from solvermap.mappers.pipeline import Decision
from solvermap.search.cache import SolveCache, decision_digest, module_files, source_digest
from solvermap.search.explore import explore
from solvermap.search.study_file import parse_study
from tests.search.conftest import SOLVERMAP, subprocess_env, toy_study, write_study
from tests.search.toy_family import PACK, PackProblem, lpt

FORMULATION = {
    "fakeform/__init__.py": "from fakeform.models import build\n",
    "fakeform/models.py": "from fakeform import helpers\n\ndef build():\n    return helpers.ROWS\n",
    "fakeform/helpers.py": "ROWS = 3\n",
    "fakeform/bounds.py": "BOUND = 1  # imported by nobody\n",
}


@pytest.fixture()
def fakeform(tmp_path, monkeypatch):
    for name, text in FORMULATION.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m.split(".")[0] == "fakeform"]:
        monkeypatch.delitem(sys.modules, name)  # an earlier test's copy
    return tmp_path / "fakeform"


@pytest.mark.parametrize("module", ["models.py", "helpers.py", "bounds.py", "__init__.py"])
def test_editing_any_module_of_a_formulation_package_changes_its_digest(fakeform, module):
    before = source_digest(["fakeform"])
    path = fakeform / module
    path.write_text(path.read_text() + "\n# edited\n")
    assert source_digest(["fakeform"]) != before


def test_digest_follows_imports_out_of_a_single_module(fakeform):
    before = source_digest(["fakeform.models"])
    (fakeform / "helpers.py").write_text("ROWS = 4\n")
    assert source_digest(["fakeform.models"]) != before


def test_every_descriptor_digest_covers_its_formulation_problem_and_solver_modules():
    for decision in DECISIONS:
        files = module_files(decision.modules)
        for module in decision.modules:
            assert module in files, (decision.name, module)
        if decision.name in ("partition", "merge", "memtile"):
            assert {"solvermap.formulations.solver", "solvermap.formulations.decision"} <= set(files)
            covered = {str(p) for p in files.values()}
            package = files["solvermap.formulations.partition"]
            if package.name == "__init__.py":  # a package: every module in it
                assert all(str(p) in covered for p in package.parent.rglob("*.py"))
            else:  # a module: what it imports, e.g. the layered model
                assert any("partition_layers" in p for p in covered)


def test_the_partition_variant_is_part_of_the_cache_key():
    cache = SolveCache(None)
    problem = PackProblem((3, 2), (1, 1), 2, 8)
    ours = PARTITION.options(variant="ours")
    table42 = PARTITION.options(variant="table42")
    assert cache.key(PARTITION, problem, SolverConfig(), ours) != cache.key(PARTITION, problem, SolverConfig(), table42)
    assert decision_digest(PARTITION) != "?"


def _fake_pack(tmp_path, monkeypatch, text: str) -> Decision:
    (tmp_path / "fakepack.py").write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    import dataclasses

    return dataclasses.replace(PACK, modules=("fakepack",))


def test_an_edited_formulation_misses_the_cache_a_new_process_shares(tmp_path, monkeypatch):
    decision = _fake_pack(tmp_path, monkeypatch, "VERSION = 1\n")
    problem, config = PackProblem((3, 3, 2, 2, 2), (1,) * 5, 2, 8), SolverConfig(time_limit_s=10)
    SolveCache(tmp_path / "cache").solve(None, decision, problem, config, lpt(problem))
    assert SolveCache(tmp_path / "cache").solve(None, decision, problem, config, None).details["cache"] == "hit"
    (tmp_path / "fakepack.py").write_text("VERSION = 2\n")
    assert SolveCache(tmp_path / "cache").solve(None, decision, problem, config, None).details["cache"] == "miss"


def test_cache_entries_are_json_and_read_back_as_the_decision_type(tmp_path):
    problem, config = PackProblem((3, 3, 2, 2, 2), (1,) * 5, 2, 8), SolverConfig(time_limit_s=10)
    solved = SolveCache(tmp_path).solve(None, PACK, problem, config, lpt(problem))
    files = sorted(p.name for p in (tmp_path / "pack").iterdir())
    assert len(files) == 2 and all(f.endswith(".json") for f in files)
    entry = json.loads(next(p for p in (tmp_path / "pack").glob("*.json") if not p.name.endswith(".meta.json")).read_text())
    assert entry["decision"] == "pack" and entry["result"]["status"] == "optimal"
    again = SolveCache(tmp_path).solve(None, PACK, problem, config, None)
    assert again.decision == solved.decision and isinstance(again.decision, tuple)


class _Trap:
    """Unpickling this creates the marker file."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_a_planted_pickle_in_the_study_cache_is_never_unpickled(tmp_path):
    marker = tmp_path / "unpickled"
    problem, config = PackProblem((3, 2, 2), (1,) * 3, 2, 8), SolverConfig(time_limit_s=10)
    cache = SolveCache(tmp_path / "cache")
    key = cache.key(PACK, problem, config, PACK.options())
    (tmp_path / "cache" / "pack").mkdir(parents=True)
    for name in (f"{key}.pkl", f"{key}.pickle"):
        (tmp_path / "cache" / "pack" / name).write_bytes(pickle.dumps(_Trap(str(marker))))
    (tmp_path / "cache" / "pack" / f"{key}.json").write_bytes(pickle.dumps(_Trap(str(marker))))  # pickle bytes as .json
    solved = cache.solve(None, PACK, problem, config, None)
    assert solved.details["cache"] == "miss" and solved.result.objective == 4
    assert not marker.exists()


def test_study_imports_without_allow_imports_are_refused_before_anything_is_written(study_file, tmp_path):
    with pytest.raises(InputError, match="imports.*--allow-imports"):
        explore(study_file, out=tmp_path / "run", progress=False)
    assert not (tmp_path / "run").exists()


def test_cli_refuses_study_imports_in_one_line_without_allow_imports(tmp_path):
    path = write_study(tmp_path / "toy.yaml")
    run = subprocess.run([SOLVERMAP, "explore", str(path), "--out", str(tmp_path / "out"), "-n", "1"],
                         capture_output=True, text=True, env=subprocess_env(), timeout=120)
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert run.returncode == 2 and len(lines) == 1 and "--allow-imports" in lines[0]


def test_a_study_option_the_decision_does_not_take_is_refused_at_load():
    from solvermap.search.evaluate import Evaluator

    study = parse_study(toy_study(decisions={"pack": {"varient": 1}}), "typo.yaml")
    with pytest.raises(InputError, match="decisions.pack.varient: unknown option"):
        Evaluator(study, None, source="typo.yaml", allow_imports=True)
