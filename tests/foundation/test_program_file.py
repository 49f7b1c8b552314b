"""Loop-nest program files: round trips of every built-in, input generators, and a loader fuzzed with bad files."""

import copy
import dataclasses
import json
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvermap.errors import InputError
from solvermap.ir import program_file as pf
from solvermap.ir.loopnest import Program, evaluate, random_inputs
from solvermap.ir.workloads import all_workloads, build

PROGRAMS = [(w.name, w.family) for w in all_workloads() if w.family in ("pushmem", "cpu")]
SMALL = {"gaussian": {"size": 8}, "harris": {"size": 10}, "upsample": {"size": 4}, "unsharp": {"size": 6},
         "camera": {"size": 12}, "brighten_blur": {"size": 6}, "mobilenet": {"size": 4, "channels": 2, "filters": 2},
         "resnet": {"size": 4, "channels": 2, "filters": 2, "tile": 2}}
CPU_SMALL = {"C": 2, "K": 2, "IHW": 5}

BLUR = """\
solvermap-program: 1
name: blur5
description: 5x5 box blur written as a Halide init and update
buffers:
  input: {shape: [9, 9], dtype: int16, role: input, data: {generator: uniform, low: 0, high: 255, seed: 7}}
  sum: {shape: [5, 5], dtype: int16}
  output: {shape: [5, 5], dtype: int16, role: output}
statements:
- name: init
  loops: [{var: y, hi: 5}, {var: x, hi: 5}]
  write: sum[y, x]
  expr: 0
- name: update
  loops: [{var: y, hi: 5}, {var: x, hi: 5}, {var: ry, hi: 5, kind: reduction}, {var: rx, hi: 5, kind: reduction}]
  write: sum[y, x]
  op: +=
  expr: input[y + ry, x + rx]
- name: hw_output
  loops: [{var: y, hi: 5}, {var: x, hi: 5}]
  write: output[y, x]
  expr: sum[y, x] >> 5
"""


def _program(name: str, family: str, small: bool = False) -> Program:
    params = (SMALL.get(name, {}) if family == "pushmem" else CPU_SMALL) if small else None
    return build(name, family, params).ir


def _same(loaded: Program, original: Program) -> bool:
    return dataclasses.replace(loaded, source=original.source) == original


# ------------------------------------------------------------------ round trips


@pytest.mark.parametrize("fmt", ["yaml", "json"])
@pytest.mark.parametrize("name,family", PROGRAMS, ids=[f"{f}:{n}" for n, f in PROGRAMS])
def test_every_built_in_program_exports_and_reimports_to_an_equal_program(name, family, fmt):
    program = _program(name, family)
    assert _same(pf.loads(pf.dumps(program, fmt), "file", fmt), program)


@pytest.mark.parametrize("name,family", [p for p in PROGRAMS if p[1] == "pushmem"] + [("conv2d", "cpu")],
                         ids=[f"{f}:{n}" for n, f in PROGRAMS if f == "pushmem"] + ["cpu:conv2d"])
def test_a_reimported_program_evaluates_identically(name, family):
    program = _program(name, family, small=True)
    loaded = pf.loads(pf.dumps(program), "file")
    inputs = random_inputs(program, 3)
    ours, theirs = evaluate(program, inputs), evaluate(loaded, random_inputs(loaded, 3))
    assert all(np.array_equal(ours[t.name], theirs[t.name]) for t in program.outputs)


def test_an_update_accumulates_onto_its_init_like_halide():
    program = pf.loads(BLUR, "blur.yaml")
    inputs = random_inputs(program, 0)
    window = np.lib.stride_tricks.sliding_window_view(inputs["input"].astype(np.int64), (5, 5)).sum(axis=(2, 3))
    assert np.array_equal(evaluate(program, inputs)["output"], (window >> 5).astype(np.int16))
    assert [s.accumulate for s in program.statements] == [False, True, False]


def test_a_program_file_round_trips_with_its_generator_and_description():
    program = pf.loads(BLUR, "blur.yaml")
    again = pf.loads(pf.dumps(program), "again.yaml")
    assert _same(again, program) and again.attrs["description"].startswith("5x5")


# ------------------------------------------------------------------ input generators


def _with_data(data: str, dtype: str = "int16", shape: str = "[2, 3]") -> Program:
    return pf.loads(f"""\
solvermap-program: 1
name: g
buffers:
  a: {{shape: {shape}, dtype: {dtype}, role: input, data: {data}}}
  b: {{shape: {shape}, dtype: {dtype}, role: output}}
statements:
- {{name: s, loops: [{{var: i, hi: 2}}, {{var: j, hi: 3}}], write: "b[i, j]", expr: "a[i, j]"}}
""", "g.yaml")


def test_a_seeded_generator_ignores_the_run_seed():
    program = _with_data("{generator: uniform, low: -5, high: 5, seed: 11}")
    a, b = random_inputs(program, 0)["a"], random_inputs(program, 99)["a"]
    assert np.array_equal(a, b) and a.min() >= -5 and a.max() <= 5


def test_an_unseeded_generator_follows_the_run_seed():
    program = _with_data("{generator: normal, mean: 0, std: 50}", dtype="float32")
    assert not np.array_equal(random_inputs(program, 0)["a"], random_inputs(program, 1)["a"])


@pytest.mark.parametrize("data,values", [
    ("{generator: values, values: [[1, 2, 3], [4, 5, 6]]}", [1, 2, 3, 4, 5, 6]),
    ("{generator: ramp, start: 10, step: -2}", [10, 8, 6, 4, 2, 0]),
    ("{generator: constant, value: 7}", [7] * 6),
], ids=["values", "ramp", "constant"])
def test_a_deterministic_generator_makes_the_data_it_names(data, values):
    assert random_inputs(_with_data(data), 0)["a"].ravel().tolist() == values


@pytest.mark.parametrize("data,field", [
    ("{generator: uniform, low: 0, high: 99999}", "buffers.a.data.high"),
    ("{generator: values, values: [[1, 2], [3, 4]]}", "buffers.a.data.values"),
    ("{generator: constant, value: 1, low: 0}", "buffers.a.data"),
    ("{generator: dice}", "buffers.a.data.generator"),
], ids=["out-of-dtype-range", "wrong-shape", "parameter-of-another-generator", "unknown-generator"])
def test_a_bad_generator_names_its_field(data, field):
    with pytest.raises(InputError) as err:
        _with_data(data)
    assert err.value.field == field


def test_a_generator_on_a_non_input_buffer_is_refused():
    text = BLUR.replace("sum: {shape: [5, 5], dtype: int16}", "sum: {shape: [5, 5], dtype: int16, data: {generator: constant, value: 0}}")
    with pytest.raises(InputError, match="only input buffers"):
        pf.loads(text, "blur.yaml")


# ------------------------------------------------------------------ refusals that name the field


@pytest.mark.parametrize("old,new,field", [
    ("expr: input[y + ry, x + rx]", "expr: input[y + ry + 5, x + rx]", "statement 'update' access input[y + ry + 5, x + rx]"),
    ("expr: input[y + ry, x + rx]", "expr: input[y * ry, x]", "statements[1].access"),
    ("expr: input[y + ry, x + rx]", "expr: __import__('os')", "statements[1].expr"),
    ("expr: sum[y, x] >> 5", "expr: sum[y, x] >> 99999", "statements[2].expr"),
    ("write: sum[y, x]\n  expr: 0", "write: nope[y, x]\n  expr: 0", "statements[0].write"),
    ("{var: ry, hi: 5, kind: reduction}", "{var: ry, hi: 5, kind: sideways}", "statements[1].loops[2].kind"),
    ("{var: y, hi: 5}, {var: x, hi: 5}]\n  write: output", "{var: y, hi: 5}, {var: y, hi: 5}]\n  write: output", "statements[2].loops"),
    ("solvermap-program: 1", "solvermap-program: 2", "solvermap-program"),
    ("dtype: int16, role: input", "dtype: int17, role: input", "buffers.input.dtype"),
    ("expr: sum[y, x] >> 5", "expr: float32(sum[y, x]) >> 5", "statements[2].expr"),
    ("name: blur5", "name: blur5\nextra: 1", "extra"),
], ids=["out-of-bounds", "non-affine", "code-in-expression", "constant-outside-dtype", "unknown-buffer", "bad-loop-kind",
        "repeated-loop-variable", "unknown-version", "unknown-dtype", "shift-of-a-float", "unknown-field"])
def test_a_bad_program_file_is_one_error_naming_the_field(old, new, field):
    assert old in BLUR
    with pytest.raises(InputError) as err:
        pf.loads(BLUR.replace(old, new, 1), "blur.yaml")
    assert err.value.field == field and "\n" not in str(err.value)


def test_buffers_beyond_the_memory_cap_are_refused_before_any_allocation():
    text = BLUR.replace("input: {shape: [9, 9]", "input: {shape: [2000000000, 2000000000]")
    tracemalloc.start()
    try:
        with pytest.raises(InputError, match="GiB") as err:
            pf.loads(text, "huge.yaml")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert err.value.field == "buffers" and peak < 8 << 20


def test_a_statement_with_more_than_two_to_the_32_operations_is_refused():
    text = BLUR.replace("{var: ry, hi: 5, kind: reduction}", "{var: ry, hi: 2000000000, kind: reduction}")
    with pytest.raises(InputError, match="operations") as err:
        pf.loads(text, "huge.yaml")
    assert err.value.field == "statements[1].loops"


@pytest.mark.parametrize("text", [
    "[" * 100_000 + "]" * 100_000,
    "a: &x [1]\nb: *x\n",
    f"solvermap-program: 1\nname: {'9' * 5000}\n",
], ids=["deep-yaml", "yaml-alias", "huge-integer"])
def test_hostile_yaml_is_one_error(text):
    with pytest.raises(InputError):
        pf.loads(text, "bad.yaml")


@pytest.mark.parametrize("expr", ["(" * 300 + "input[y, x]" + ")" * 300, "-" * 5000 + "input[y, x]",
                                  " + ".join(["input[y, x]"] * 250), "max(" * 400 + "input[y, x]" + ", 1)" * 400],
                         ids=["parentheses", "unary-chain", "long-sum", "nested-calls"])
def test_a_deeply_nested_expression_is_one_error(expr):
    text = BLUR.replace("expr: sum[y, x] >> 5", f"expr: \"{expr}\"".replace("input[", "sum["))
    with pytest.raises(InputError) as err:
        pf.loads(text, "deep.yaml")
    assert err.value.field.startswith("statements[2]")


def test_deeply_nested_json_is_one_error():
    with pytest.raises(InputError, match="nested too deeply"):
        pf.loads('{"a": ' * 100_000 + "1" + "}" * 100_000, "deep.json", "json")


# ------------------------------------------------------------------ properties


def _outcome(call) -> str:
    """'ok' or 'error' for a load; anything else (a traceback) fails the property."""
    try:
        call()
    except InputError as exc:
        assert "\n" not in str(exc)
        return "error"
    return "ok"


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400), st.sampled_from(["yaml", "json"]))
def test_garbage_bytes_are_one_error(raw, fmt):
    assert _outcome(lambda: pf.loads_bytes(raw, "garbage", fmt)) == "error"


@settings(max_examples=150, deadline=None)
@given(st.integers(min_value=0, max_value=len(BLUR.encode())), st.sampled_from(["yaml", "json"]))
def test_a_truncated_file_loads_or_is_one_error(cut, fmt):
    raw = (BLUR if fmt == "yaml" else pf.dumps(pf.loads(BLUR, "b"), "json")).encode()
    _outcome(lambda: pf.loads_bytes(raw[:cut], "truncated", fmt))


def _paths(data, prefix=()):
    yield prefix
    if isinstance(data, dict):
        for k, v in data.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from _paths(v, prefix + (i,))


BLUR_DATA = yaml.safe_load(BLUR)
BLUR_PATHS = [p for p in _paths(BLUR_DATA) if p]
JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers(min_value=-(10 ** 30), max_value=10 ** 30)
                           | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=30),
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                           max_leaves=12)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(BLUR_PATHS), JSON_VALUES)
def test_a_field_of_the_wrong_type_loads_or_is_one_error(path, value):
    data = copy.deepcopy(BLUR_DATA)
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    _outcome(lambda: pf.from_data(data, "mutated"))


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(["shape", "hi", "lo", "coefficient", "offset"]), st.integers(min_value=-(10 ** 40), max_value=10 ** 40))
def test_huge_extents_and_numbers_are_one_error_or_a_valid_program(where, number):
    data = copy.deepcopy(BLUR_DATA)
    if where == "shape":
        data["buffers"]["sum"]["shape"] = [number, 5]
    elif where in ("hi", "lo"):
        data["statements"][1]["loops"][2][where] = number
    elif where == "coefficient":
        data["statements"][1]["expr"] = f"input[{number}*y + ry, x + rx]"
    else:
        data["statements"][1]["expr"] = f"input[y + ry + {number}, x + rx]"
    _outcome(lambda: pf.from_data(data, "numbers"))


# ------------------------------------------------------------------ command line


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "solvermap.cli", *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def test_workloads_export_writes_a_program_file_of_the_built_in():
    out = _cli("workloads", "--export", "upsample", "--set", "workload.size=4", "--format", "json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["solvermap-program"] == 1
    assert _same(pf.loads(out.stdout, "upsample.json", "json"), build("upsample", "pushmem", {"size": 4}).ir)


def test_exporting_a_dataflow_graph_is_one_line():
    out = _cli("workloads", "--export", "dotproduct")
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "not a loop-nest program" in out.stderr


@pytest.mark.parametrize("content,suffix", [(b"", ".yaml"), (b"\xff\xfe\x00garbage", ".yaml"), (b"\xff\xfe\x00garbage", ".json"),
                                            (b"solvermap-program: 1\nname: [", ".yaml"), (b"- 1\n- 2\n", ".yml"),
                                            (b'{"solvermap-program": 1}', ".json")],
                         ids=["empty", "binary", "binary-json", "broken-yaml", "a-list", "json-without-fields"])
def test_a_bad_program_file_on_the_command_line_exits_2_with_one_line(tmp_path, content, suffix):
    path = tmp_path / f"prog{suffix}"
    path.write_bytes(content)
    out = _cli("map", "--workload", str(path), "--target", "pushmem-cgra", "-q", "--out", str(tmp_path / "run"))
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and path.name in out.stderr
    assert "Traceback" not in out.stderr


def test_an_exported_cpu_program_tensorizes_like_the_built_in(tmp_path):
    from solvermap.formulations.solver import SolverConfig
    from solvermap.hardware.targets import load_target
    from solvermap.mappers import pipeline_for
    from solvermap.mappers.pipeline import Context

    params = {"C": 8, "K": 32, "IHW": 6}
    path = tmp_path / "conv.yaml"
    path.write_text(pf.export_workload("conv2d", params=params))
    options = {"tensorize": {"trials": 2, "unit_pairs": 2, "rounds": 2, "min_seconds": 0.002, "min_reps": 1,
                             "measure": "model", "execute": "emulate"}}

    def run(name, params):
        ctx = Context(workload=build(name, "cpu", params), target=load_target("x86-vnni"),
                      solver=SolverConfig(time_limit_s=10), options=options)
        record = pipeline_for("cpu").run(ctx, upto="tensorize").records[-1]
        return record.solution["loop_map"], record.validation["instructions"], record.validation["bit_exact"]

    assert run(str(path), None) == run("conv2d", params)
