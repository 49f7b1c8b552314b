"""Fuzzing ``solvermap explore``'s inputs: study files (garbage, truncation, nesting, fields of wrong types,
space values no target takes, metric expressions of unbounded cost) and the journal storage and output
paths. Each generated case is bad by construction and must end with exit code 2, one stderr line, no
traceback, and no study directory (tests/cli_errors.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import optuna
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvermap.inputs import MAX_DEPTH
from solvermap.search import expressions
from tests.cli_errors import run_refused
from tests.search.conftest import toy_study

STUDY = toy_study()


def fuzz(cases: int) -> settings:
    return settings(max_examples=cases, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def place(tmp_path_factory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("bad_studies")
    (base / "in").mkdir()
    (base / "work").mkdir()
    return base / "in", base / "work"


def _explore(place, text: str | bytes, *extra: str):
    inputs, work = place
    path = inputs / "study.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return run_refused(work, "explore", str(path), "--allow-imports", "-q", "--out", str(work / "run"), *extra)


def _with(**changes) -> str:
    return yaml.safe_dump({**STUDY, **changes}, sort_keys=False)


INT = {"type": "int", "low": 1, "high": 4}
STUDY_MUTATIONS = [
    {"name": [1]}, {"name": {"a": 1}}, {"target": 5}, {"target": "nonesuch"}, {"target": [1]},
    {"workloads": 5}, {"workloads": []}, {"workloads": [{"name": 5}]}, {"workloads": [{"bogus": 1}]},
    {"workloads": ["nonesuch"]}, {"workloads": [{"name": "tasks", "params": {"zz": 1}}]},
    {"space": {}}, {"space": 5}, {"space": None}, {"space": {"bogus.x": INT}}, {"space": {"pes": INT}},
    {"space": {"target.pes": {**INT, "low": 5, "high": 1}}}, {"space": {"target.pes": {"type": "weird"}}},
    {"space": {"target.pes": {"type": "int"}}}, {"space": {"target.nonesuch": INT}},
    {"space": {"target.pes": {**INT, "low": 0}}}, {"space": {"target.pes": {**INT, "high": 10**9}}},
    {"space": {"target.pes": {**INT, "step": 0}}}, {"space": {"target.pes": {**INT, "log": True, "low": 0}}},
    {"space": {"target.lanes": {"type": "categorical", "choices": []}}},
    {"space": {"target.lanes": {"type": "categorical", "choices": [2, 2]}}},
    {"space": {"target.lanes": {"type": "categorical", "choices": [2, 0]}}},
    {"space": {"target.network": {"type": "categorical", "choices": ["static", "mesh"]}}},
    {"space": {"target.clock_ghz": {"type": "float", "low": 0.0, "high": 2.0}}},
    {"space": {"target.clock_ghz": {"type": "float", "low": float("nan"), "high": 2.0}}},
    {"space": {"target.vcs": {**INT, "when": {"target.network": "dynamic"}}}},
    {"space": {"workload.zz": INT}}, {"space": {"workload.tasks.zz": INT}}, {"space": {"workload.other.n": INT}},
    {"space": {"decisions.nonesuch.x": INT}}, {"space": {"decisions.pack.zz": INT}},
    {"space": {"solver.backend": {"type": "categorical", "choices": ["cpsat", "nope"]}}},
    {"space": {"solver.time_limit_s": {"type": "float", "low": -1.0, "high": 2.0}}},
    {"space": {"solver.zz": INT}},
    {"space": {"choice.a": {"type": "categorical", "choices": ["x", "y"], "sets": {"x": {"target.pes": 2},
                                                                                   "y": {"target.pes": 99}}}}},
    {"space": {"choice.a": {"type": "categorical", "choices": ["x"]}}},
    {"objectives": []}, {"objectives": [{"metric": "cycles", "direction": "up"}]},
    {"objectives": [{"metric": "cycles", "direction": "minimize"}, {"metric": "cycles", "direction": "maximize"}]},
    {"objectives": 5}, {"constraints": [{"metric": "cycles"}]}, {"constraints": [{"metric": "cycles", "max": 1, "min": 0}]},
    {"sampler": {"name": "foo"}}, {"sampler": {"name": "nsga2", "options": {"bogus": 1}}},
    {"sampler": {"name": "grid", "options": {"a": 1}}}, {"sampler": 5},
    {"seed": -1}, {"seed": "x"}, {"budget": {"n_trials": 0}}, {"budget": {"timeout_s": -1}},
    {"solver": {"backend": "nope"}}, {"solver": {"time_limit_s": float("inf")}}, {"decisions": {"nonesuch": {}}},
    {"decisions": {"pack": {"zz": 1}}}, {"decisions": 5}, {"storage": {"heartbeat_s": 0}},
    {"cache": {"neighbours": -1}}, {"limits": {"memory_gb": 0}}, {"limits": {"memory_gb": "x"}},
    {"imports": 5}, {"imports": ["tests.search.nonesuch_module"]}, {"zz_unknown": 1},
]


@st.composite
def bad_expression(draw) -> str:
    """A metric expression refused when the study loads: too long or deep, a non-constant or large exponent,
    or a construct that is not arithmetic."""
    n = draw(st.integers(1, 300_000))
    kind = draw(st.sampled_from(["sum", "minus", "parens", "tower", "variable_power", "big_power", "construct"]))
    if kind == "sum":
        return "+".join(["cycles"] * max(n, expressions.MAX_CHARS // 6 + 1))
    if kind == "minus":
        return "-" * max(n, expressions.MAX_DEPTH + 1) + "1"
    if kind == "parens":
        depth = max(n % 2000, expressions.MAX_DEPTH + 1)
        return "(" * depth + "cycles" + ")" * depth
    if kind == "tower":
        return "**".join(["9"] * draw(st.integers(3, 12)))
    if kind == "variable_power":
        return f"cycles ** {draw(st.sampled_from(['cycles', 'target.pes', '(1 + 1)', 'area_mm2']))}"
    if kind == "big_power":
        return f"cycles ** {draw(st.integers(expressions.MAX_EXPONENT + 1, 10**12))}"
    return draw(st.sampled_from([
        "__import__('os').system('true')", "open('/etc/passwd')", "eval('1')", "(lambda: 1)()", "cycles.real()",
        "[1][0]", "'a'", "[x for x in (1, 2)]", "(y := 1)", "cycles and 1", "not cycles", "f'{cycles}'",
        "cycles\x00", "min(*[1])", "min(a=1)", "{1: 2}[1]", "cycles if", "",
    ]))


@fuzz(30)
@given(data=st.binary(min_size=1, max_size=400))
def test_binary_study_file_is_one_line(place, data):
    _explore(place, data)


@fuzz(30)
@given(cut=st.floats(0.0, 0.999))
def test_truncated_study_file_is_one_line(place, cut):
    text = yaml.safe_dump(STUDY, default_flow_style=True).rstrip()  # a proper prefix leaves a mapping open
    _explore(place, text[: max(1, min(len(text) - 1, int(cut * len(text))))])


@fuzz(15)
@given(depth=st.integers(MAX_DEPTH + 1, 20_000), opener=st.sampled_from(["[", "{a: "]))
def test_deeply_nested_study_file_is_one_line(place, depth, opener):
    _explore(place, _with(description="d") + "extra: " + opener * depth)


@fuzz(80)
@given(mutation=st.sampled_from(STUDY_MUTATIONS))
def test_study_field_of_a_wrong_type_or_value_is_one_line(place, mutation):
    _explore(place, _with(**mutation))


@fuzz(50)
@given(expression=bad_expression())
def test_metric_expression_of_unbounded_cost_is_refused_at_load(place, expression):
    outcome = _explore(place, _with(metrics={"derived": expression}))
    assert "metrics" in outcome.lines[0]


# --------------------------------------------------------------------------- journal storage and paths


def _journal_lines(folder: Path) -> list[bytes]:
    """The lines of a real Optuna journal holding one study with two finished trials."""
    path = folder / "real.journal"
    if not path.exists():
        from optuna.storages.journal import JournalFileBackend

        storage = optuna.storages.JournalStorage(JournalFileBackend(str(path)))
        study = optuna.create_study(study_name="other", storage=storage)
        for x in (1.0, 2.0):
            study.add_trial(optuna.trial.create_trial(params={"x": x}, distributions={
                "x": optuna.distributions.FloatDistribution(0, 3)}, value=x))
    return path.read_bytes().splitlines(keepends=True)


@st.composite
def damaged_journal(draw, lines: list[bytes]) -> bytes:
    """A journal that cannot be replayed: garbage bytes, a line cut short before the next one, or lines that
    are JSON but not journal operations."""
    kind = draw(st.sampled_from(["garbage", "cut_line", "not_operations"]))
    if kind == "garbage":
        return b"\xff" + draw(st.binary(max_size=300)) + b"\n"
    if kind == "cut_line":
        k = draw(st.integers(0, len(lines) - 2))
        line = lines[k]
        cut = draw(st.integers(1, len(line) - 2))
        return b"".join(lines[:k]) + line[:cut] + b"\n" + b"".join(lines[k + 1:])
    values = st.one_of(st.integers(), st.text(max_size=20), st.lists(st.integers(), max_size=3),
                       st.dictionaries(st.text("abc", max_size=5), st.integers(), max_size=3),
                       st.fixed_dictionaries({"op_code": st.integers(-5, 20)}))
    return b"".join(json.dumps(v).encode() + b"\n" for v in draw(st.lists(values, min_size=1, max_size=4)))


@fuzz(40)
@given(data=st.data())
def test_damaged_journal_storage_is_one_line(place, data):
    inputs, _ = place
    journal = inputs / "damaged.journal"
    journal.write_bytes(data.draw(damaged_journal(_journal_lines(inputs))))
    outcome = _explore(place, _with(), "--storage", str(journal))
    assert "--storage" in outcome.lines[0]


def _path(kind: str, folder: Path) -> str:
    target = folder / f"{kind}.journal"
    if kind == "directory":
        target.mkdir(exist_ok=True)
    elif kind == "fifo" and not target.exists():
        os.mkfifo(target)
    elif kind == "under_a_file":
        (folder / "plain.txt").write_text("x")
        return str(folder / "plain.txt" / "s.journal")
    elif kind == "proc":
        return "/proc/solvermap-test/s.journal"
    elif kind == "device":
        return "/dev/null"
    return str(target)


@pytest.mark.parametrize("kind", ["directory", "fifo", "under_a_file", "proc", "device"])
def test_journal_path_that_is_not_a_writable_file_is_one_line(place, kind):
    inputs, _ = place
    _explore(place, _with(), "--storage", _path(kind, inputs))


@pytest.mark.parametrize("url", ["nothing", "sqlite:////proc/solvermap-test/s.db", "postgresql://nobody@127.0.0.1:1/x"])
def test_storage_url_that_does_not_open_is_one_line(place, url):
    _explore(place, _with(), "--storage", url)


@pytest.mark.parametrize("kind", ["existing_file", "proc", "under_a_file"])
def test_unwritable_study_directory_is_one_line(place, kind):
    inputs, work = place
    (inputs / "file.txt").write_text("x")
    out = {"existing_file": str(inputs / "file.txt"), "proc": "/proc/solvermap-test/run",
           "under_a_file": str(inputs / "file.txt" / "run")}[kind]
    path = inputs / "study.yaml"
    path.write_text(_with())
    run_refused(work, "explore", str(path), "--allow-imports", "-q", "--out", out)


@pytest.mark.parametrize("kind", ["directory", "fifo", "missing", "binary_yaml"])
def test_study_path_that_is_not_a_study_file_is_one_line(place, kind):
    inputs, work = place
    path = {"directory": str(inputs), "fifo": _path("fifo", inputs), "missing": str(inputs / "nonesuch.yaml"),
            "binary_yaml": str(inputs / "b.yaml")}[kind]
    (inputs / "b.yaml").write_bytes(b"\x00\xff\xfe" * 10)
    run_refused(work, "explore", path, "--allow-imports", "-q", "--out", str(work / "run"))
