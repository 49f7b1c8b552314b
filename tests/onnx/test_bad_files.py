"""Bad model and layer-shape files: one stderr line naming the problem, exit code 2, never a traceback.

Property tests (hypothesis) feed the ONNX loader garbage bytes, truncated and byte-flipped models, and the
layer-shape loader random YAML trees (wrong types, huge numbers, unknown keys) and random text; every case
either loads or raises a one-line :class:`SolvermapError` (about 420 generated cases in all)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

from solvermap.errors import SolvermapError
from solvermap.ir.workloads import build

from .models import keras_block

SCRATCH = Path(tempfile.mkdtemp(prefix="solvermap-bad-files-"))
VALID = keras_block().SerializeToString()
FUZZ = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)


def _loads_or_refuses(path: Path, family: str = "puma") -> None:
    try:
        build(str(path), family)
    except SolvermapError as exc:
        message = str(exc)
        assert message and "\n" not in message and "Traceback" not in message


def _write(name: str, data: bytes) -> Path:
    path = SCRATCH / name
    path.write_bytes(data)
    return path


@settings(FUZZ, max_examples=100)
@given(st.binary(min_size=1, max_size=400))
def test_garbage_bytes_as_an_onnx_file_load_or_give_one_line(data):
    _loads_or_refuses(_write("garbage.onnx", data))


@settings(FUZZ, max_examples=80)
@given(st.integers(min_value=1, max_value=len(VALID) - 1))
def test_a_truncated_model_loads_or_gives_one_line(cut):
    _loads_or_refuses(_write("truncated.onnx", VALID[:cut]))


@settings(FUZZ, max_examples=80)
@given(st.lists(st.tuples(st.integers(0, len(VALID) - 1), st.integers(0, 255)), min_size=1, max_size=8))
def test_a_byte_flipped_model_loads_or_gives_one_line(flips):
    data = bytearray(VALID)
    for position, value in flips:
        data[position] = value
    _loads_or_refuses(_write("flipped.onnx", bytes(data)))


_KEYS = st.sampled_from(["C", "K", "M", "R", "S", "P", "Q", "N", "G", "groups", "Wstride", "Hstride", "Wdilation",
                         "Hdilation", "name", "dtypes", "layers", "problem", "instance", "shape", "bogus"])
_SCALARS = st.one_of(st.integers(-10, 10), st.integers(-2**70, 2**70), st.booleans(), st.none(), st.floats(allow_nan=True),
                     st.text(max_size=6), st.sampled_from(["int8", "uint8", "float32", "CNN-Layer", "dw-cnn-layer"]))
_TREES = st.recursive(_SCALARS, lambda children: st.one_of(st.lists(children, max_size=4),
                                                           st.dictionaries(_KEYS, children, max_size=6)), max_leaves=25)


@settings(FUZZ, max_examples=120)
@given(st.one_of(_TREES, st.fixed_dictionaries({"layers": st.lists(st.dictionaries(_KEYS, _SCALARS, max_size=10), max_size=3)}),
                 st.fixed_dictionaries({"problem": st.fixed_dictionaries({"instance": st.dictionaries(_KEYS, _SCALARS, max_size=12)})})))
def test_random_layer_shape_trees_load_or_give_one_line(tree):
    _loads_or_refuses(_write("tree.yaml", yaml.safe_dump(tree).encode()), "cpu")


@settings(FUZZ, max_examples=40)
@given(st.one_of(st.text(max_size=300), st.binary(max_size=300).map(lambda b: b.decode("latin-1"))))
def test_random_text_as_a_layer_shape_file_loads_or_gives_one_line(text):
    _loads_or_refuses(_write("text.yaml", text.encode("utf-8", errors="replace")), "cpu")


# ------------------------------------------------------------------ the command line


def _model(nodes, opset: int = 17, shape=(1, 4)):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]).SerializeToString()


BAD = {
    "garbage": (b"\x13\x37 not an onnx model \xff" * 20, "not a readable ONNX model"),
    "truncated": (VALID[: len(VALID) // 3], ""),
    "empty": (b"", "empty file (0 bytes)"),
    "wrong-opset": (_model([helper.make_node("Relu", ["x"], ["y"])], opset=5), "opset 5 is not supported"),
    "cyclic": (_model([helper.make_node("Relu", ["y"], ["z"], name="a"), helper.make_node("Relu", ["z"], ["y"], name="b")]),
               "cyclic graph"),
    "huge-shape": (_model([helper.make_node("Relu", ["x"], ["y"])], shape=(1, 10**9, 10**9)), "memory cap"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_model_file_on_the_command_line_is_one_line_and_exit_2(case, tmp_path, capsys):
    from solvermap.cli import main

    data, expected = BAD[case]
    path = tmp_path / f"{case}.onnx"
    path.write_bytes(data)
    _exits_2_with_one_line(main, ["map", "--workload", str(path), "--target", "puma", "--out", str(tmp_path / "run")],
                           expected, capsys)
    assert not (tmp_path / "run").exists()


def test_a_directory_named_like_a_model_is_one_line_and_exit_2(tmp_path, capsys):
    from solvermap.cli import main

    (tmp_path / "dir.onnx").mkdir()
    _exits_2_with_one_line(main, ["map", "--workload", str(tmp_path / "dir.onnx"), "--target", "puma"],
                           "is a directory", capsys)


def test_deeply_nested_layer_shape_yaml_is_one_line_and_exit_2(tmp_path, capsys):
    from solvermap.cli import main

    path = tmp_path / "deep.yaml"
    path.write_text("[" * 5000 + "]" * 5000)
    _exits_2_with_one_line(main, ["map", "--workload", str(path), "--target", "x86-vnni"], "", capsys)


def _exits_2_with_one_line(main, argv: list[str], expected: str, capsys) -> None:
    import sys

    saved = sys.argv
    sys.argv = ["solvermap", *argv]
    try:
        with pytest.raises(SystemExit) as exit_info:
            main()
    finally:
        sys.argv = saved
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert exit_info.value.code == 2, err
    assert len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0]
