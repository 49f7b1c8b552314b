"""Fuzzing the run's own inputs through the CLI: target YAML, run config (--config), --set values and every
path argument. Each generated case is bad by construction; each must end with exit code 2, one stderr line
and no traceback, having written nothing (tests/cli_errors.py)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvermap.hardware.targets import PRESET_DIR
from solvermap.inputs import MAX_DEPTH, MAX_TEXT_BYTES
from tests.cli_errors import run_refused

def fuzz(cases: int) -> settings:
    """``cases`` generated cases, the same ones on every run (derandomised), no deadline."""
    return settings(max_examples=cases, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
PRESET = yaml.safe_load((PRESET_DIR / "plasticine.yaml").read_text())
CONFIG = {"workload": {"name": "dotproduct", "params": {"par": 2}}, "target": {"name": "plasticine"},
          "solver": {"backend": "cpsat", "time_limit_s": 5}, "decisions": {"partition": {"variant": "table42"}},
          "limits": {"memory_gb": 4}, "seed": 0}


@pytest.fixture(scope="module")
def place(tmp_path_factory) -> tuple[Path, Path]:
    """(inputs folder, working folder): the cases write their files to the first and run in the second."""
    base = tmp_path_factory.mktemp("bad_inputs")
    (base / "in").mkdir()
    (base / "work").mkdir()
    return base / "in", base / "work"


def _paths(data, prefix=()):
    """Every (path, is_mapping) of a nested mapping, lists as leaves."""
    for key, value in data.items():
        yield prefix + (key,), isinstance(value, dict)
        if isinstance(value, dict):
            yield from _paths(value, prefix + (key,))


def _replaced(data: dict, path: tuple, value) -> dict:
    out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in data.items()}
    node = out
    for key in path[:-1]:
        node[key] = dict(node[key])
        node = node[key]
    node[path[-1]] = value
    return out


NOT_A_SCALAR = st.sampled_from([{"k": 1}, {"nested": {"deeper": [1, 2]}}])
NOT_A_MAPPING = st.sampled_from([5, "text", [1, 2], True])
PRESET_PATHS = list(_paths(PRESET))


@st.composite
def wrong_target(draw) -> str:
    """The plasticine preset with one field of a wrong type, an unknown field, or a number no spec takes."""
    path, is_mapping = draw(st.sampled_from(PRESET_PATHS))
    how = draw(st.sampled_from(["type", "unknown", "number"]))
    if how == "unknown":
        section = path[:-1] if not is_mapping else path
        data = _replaced(PRESET, section + ("zz_" + draw(st.text("abcxyz", min_size=1, max_size=8)),), 1)
        return yaml.safe_dump(data)
    if how == "number" and not is_mapping and isinstance(_get(PRESET, path), (int, float)) \
            and not isinstance(_get(PRESET, path), bool):
        text = yaml.safe_dump(_replaced(PRESET, path, "NUMBER"))
        return text.replace("NUMBER", draw(st.sampled_from([".inf", "-.inf", ".nan", "1" * 5000, "1.0e+400"])))
    return yaml.safe_dump(_replaced(PRESET, path, draw(NOT_A_MAPPING if is_mapping else NOT_A_SCALAR)))


def _get(data, path):
    for key in path:
        data = data[key]
    return data


@st.composite
def deep_yaml(draw, head: str) -> str:
    depth = draw(st.integers(MAX_DEPTH + 1, 20_000))
    kind = draw(st.sampled_from(["flow_list", "flow_map", "block_list", "indented_map"]))
    if kind == "flow_list":
        return head + "x: " + "[" * depth
    if kind == "flow_map":
        return head + "x: " + "{a: " * depth
    if kind == "block_list":
        return "- " * depth + "x\n"
    return head + "".join("  " * i + f"k{i}:\n" for i in range(min(depth, 400)))


def _truncated(data: dict, cut: float) -> str:
    """``data`` in YAML flow style cut at the fraction ``cut`` of its length, before its closing brace: every
    such prefix leaves a mapping open."""
    text = yaml.safe_dump(data, default_flow_style=True).rstrip()
    return text[: max(1, min(len(text) - 1, int(cut * len(text))))]


def _write(folder: Path, name: str, content: str | bytes) -> Path:
    path = folder / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


# --------------------------------------------------------------------------- target YAML


@fuzz(40)
@given(data=st.binary(min_size=1, max_size=400))
def test_binary_target_file_is_one_line(place, data):
    inputs, work = place
    run_refused(work, "map", "-q", "-w", "dotproduct", "--target", str(_write(inputs, "t.yaml", data)))


@fuzz(40)
@given(cut=st.floats(0.0, 0.999))
def test_truncated_target_file_is_one_line(place, cut):
    inputs, work = place
    run_refused(work, "map", "-q", "-w", "dotproduct", "--target", str(_write(inputs, "t.yaml", _truncated(PRESET, cut))))


@fuzz(30)
@given(text=deep_yaml("name: deep\nfamily: plasticine\n"))
def test_deeply_nested_target_file_is_refused_with_the_limit(place, text):
    inputs, work = place
    outcome = run_refused(work, "map", "-q", "-w", "dotproduct", "--target", str(_write(inputs, "t.yaml", text)))
    assert f"more than {MAX_DEPTH} levels" in outcome.lines[0] or "invalid YAML" in outcome.lines[0]


@fuzz(60)
@given(text=wrong_target())
def test_target_field_of_a_wrong_type_is_one_line(place, text):
    inputs, work = place
    run_refused(work, "map", "-q", "-w", "dotproduct", "--target", str(_write(inputs, "t.yaml", text)))


@pytest.mark.parametrize("extends", ["5", "[plasticine]", "''", "nonesuch", "t", "./t.yaml", "../in/t.yaml"])
def test_bad_extends_is_one_line(place, extends):
    inputs, work = place
    target = _write(inputs, "t.yaml", f"extends: {extends}\nname: t\n")
    run_refused(work, "map", "-q", "-w", "dotproduct", "--target", str(target))


# --------------------------------------------------------------------------- run config


CONFIG_MUTATIONS = [
    ("workload", 5), ("workload", [1]), ("workload", {"name": 5}), ("workload", {"name": "dotproduct", "params": 3}),
    ("workload", {"name": "dotproduct", "params": {"par": "x"}}), ("workload", {"name": "dotproduct", "bogus": 1}),
    ("workload", {"name": "dotproduct", "params": {"par": 17}}), ("workload", {"name": "nonesuch"}),
    ("target", 5), ("target", {"name": "plasticine", "overrides": [1]}),
    ("target", {"name": "plasticine", "overrides": {"pcu.count": "x"}}), ("target", {"name": "nonesuch"}),
    ("solver", "x"), ("solver", [1]), ("solver", {"backend": "nope"}), ("solver", {"time_limit_s": -1}),
    ("solver", {"time_limit_s": float("inf")}), ("solver", {"threads": 0}), ("solver", {"bogus": 1}),
    ("decisions", 5), ("decisions", {"partition": 3}), ("decisions", {"partition": {"bogus": 1}}),
    ("decisions", {"nonesuch": {}}), ("decisions", {"partition": {"variant": 5}}),
    ("limits", 5), ("limits", {"memory_gb": 0}), ("limits", {"memory_gb": float("nan")}),
    ("limits", {"memory_gb": "x"}), ("limits", {"bogus": 1}),
    ("seed", -1), ("seed", "x"), ("seed", 1.5), ("seed", [1]), ("bogus", 1),
]


@fuzz(30)
@given(data=st.binary(min_size=1, max_size=300))
def test_binary_config_file_is_one_line(place, data):
    inputs, work = place
    run_refused(work, "map", "-q", "--config", str(_write(inputs, "c.yaml", b"\xff" + data)))


@fuzz(25)
@given(cut=st.floats(0.0, 0.999))
def test_truncated_config_file_is_one_line(place, cut):
    inputs, work = place
    run_refused(work, "map", "-q", "--config", str(_write(inputs, "c.yaml", _truncated(CONFIG, cut))))


@fuzz(40)
@given(mutation=st.sampled_from(CONFIG_MUTATIONS), extra=st.sampled_from(list(CONFIG)))
def test_config_section_of_a_wrong_type_is_one_line(place, mutation, extra):
    inputs, work = place
    key, value = mutation
    data = {k: v for k, v in CONFIG.items() if k in (extra, "workload", "target")}
    data[key] = value
    run_refused(work, "map", "-q", "--config", str(_write(inputs, "c.yaml", yaml.safe_dump(data))))


@fuzz(15)
@given(text=deep_yaml("workload: dotproduct\n"))
def test_deeply_nested_config_is_one_line(place, text):
    inputs, work = place
    run_refused(work, "map", "-q", "--config", str(_write(inputs, "c.yaml", text)))


# --------------------------------------------------------------------------- --set


LEAVES = [".".join(p) for p, is_mapping in PRESET_PATHS if not is_mapping]
SET_CASES = st.one_of(
    st.tuples(st.text("abcdefgxyz_", min_size=1, max_size=10).filter(
        lambda k: k not in ("workload", "target", "solver", "decisions", "limits", "seed")), st.just("1")),
    st.tuples(st.just("solver.backend"), st.text("abcxyz-", min_size=1, max_size=8).filter(lambda v: v not in ("cbc", "scs"))),
    st.tuples(st.sampled_from(["solver.time_limit_s", "solver.rel_gap", "solver.work_limit"]),
              st.sampled_from([".inf", "-1", "abc", "[1]", "{a: 1}", ".nan"])),
    st.tuples(st.just("solver.threads"), st.sampled_from(["0", "-3", "x", "[2]"])),
    st.tuples(st.just("seed"), st.sampled_from(["-1", "x", "1.5", "[1]", "9" * 5000])),
    st.tuples(st.just("workload.par"), st.sampled_from(["0", "17", "99", "x", "true", "[1]", "1.5", "9" * 5000])),
    st.tuples(st.text("abcxyz", min_size=1, max_size=8).map(lambda k: f"workload.zz{k}"), st.just("1")),
    st.tuples(st.sampled_from(LEAVES).map(lambda k: f"target.{k}"), st.sampled_from(["{a: 1}", "{b: [1, 2]}"])),
    st.tuples(st.text("abcxyz", min_size=1, max_size=8).map(lambda k: f"target.zz{k}.x"), st.just("1")),
    st.tuples(st.just("limits.memory_gb"), st.sampled_from(["0", "-1", "x", ".inf", "[1]"])),
    st.tuples(st.text("abcxyz", min_size=1, max_size=8).map(lambda k: f"limits.{k}"), st.just("1")),
    st.tuples(st.text("abcxyz", min_size=1, max_size=8).map(lambda k: f"decisions.partition.zz{k}"), st.just("1")),
    st.tuples(st.text("abcxyz", min_size=1, max_size=8).map(lambda k: f"decisions.zz{k}.x"), st.just("1")),
    st.tuples(st.just("decisions.partition.variant"), st.text("abcxyz", min_size=1, max_size=8)),
    st.tuples(st.sampled_from(["target.x", "workload.par", "solver.seed"]),
              st.integers(MAX_DEPTH + 1, 20_000).map(lambda n: "[" * n)),
    st.tuples(st.integers(MAX_DEPTH, 5_000).map(lambda n: "decisions.partition." + "a." * n + "b"), st.just("1")),
)


@fuzz(70)
@given(case=SET_CASES)
def test_bad_set_value_is_one_line(place, case):
    _, work = place
    key, value = case
    run_refused(work, "map", "-q", "-w", "dotproduct", "--set", f"{key}={value}")


# --------------------------------------------------------------------------- path arguments


def _make(kind: str, folder: Path, suffix: str = ".yaml") -> str:
    """A path of the given kind (ending in ``suffix``), made fresh in ``folder``."""
    path = folder / f"{kind}{suffix}"
    if path.is_symlink() or path.exists():
        shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
    if kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "under_a_file":
        _write(folder, "plain.txt", "name: x\n")
        return str(folder / "plain.txt" / f"x{suffix}")
    elif kind == "device":
        return "/dev/null"
    elif kind == "huge":
        with path.open("wb") as handle:
            handle.truncate(MAX_TEXT_BYTES + 1)
    elif kind == "binary":
        path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff" * 64)
    elif kind == "dangling_symlink":
        path.symlink_to(folder / f"nowhere{suffix}")
    elif kind == "symlink_loop":
        path.symlink_to(path)
    return str(path)  # "missing": nothing made


INPUT_KINDS = ["missing", "directory", "fifo", "under_a_file", "device", "huge", "binary", "dangling_symlink",
               "symlink_loop"]


@pytest.mark.parametrize("kind", INPUT_KINDS)
@pytest.mark.parametrize("flag", ["--config", "--target"])
def test_unreadable_input_path_is_one_line(place, flag, kind):
    inputs, work = place
    args = ["map", "-q", flag, _make(kind, inputs)] + (["-w", "dotproduct"] if flag == "--target" else [])
    run_refused(work, *args)


@pytest.mark.parametrize("kind", ["missing", "directory", "fifo", "under_a_file", "device", "symlink_loop"])
def test_workload_path_that_is_not_a_file_is_one_line(place, kind):
    inputs, work = place
    path = _make(kind, inputs, ".json")
    run_refused(work, "map", "-q", "--target", "plasticine", "--workload", path)


@pytest.mark.parametrize("kind", ["existing_file", "proc", "under_a_file", "nonempty_directory"])
def test_unwritable_out_directory_is_one_line(place, kind):
    inputs, work = place
    path = {"existing_file": str(_write(inputs, "file.txt", "x")), "proc": "/proc/solvermap-test/run",
            "under_a_file": str(_write(inputs, "file.txt", "x")) + "/run", "nonempty_directory": str(inputs)}[kind]
    run_refused(work, "map", "-q", "-w", "dotproduct", "--out", path)


@pytest.mark.parametrize("kind", ["directory", "fifo", "proc", "under_a_file", "trailing_slash"])
def test_unwritable_model_file_is_one_line(place, kind):
    inputs, work = place
    path = {"directory": str(inputs), "fifo": _make("fifo", inputs), "proc": "/proc/solvermap-test/model.lp",
            "under_a_file": str(_write(inputs, "file.txt", "x")) + "/model.lp",
            "trailing_slash": str(inputs / "model.lp") + "/"}[kind]
    run_refused(work, "solve", "partition", "-q", "-w", "dotproduct", "--write-model", path)
