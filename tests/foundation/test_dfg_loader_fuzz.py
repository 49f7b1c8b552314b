"""Property tests of every graph loader (JSON, DOT, GraphML, XML DFG): whatever the bytes — garbage,
truncated files, deep nesting, wrong types, huge numbers — loading gives a graph or one InputError line,
never another exception; on the command line that is one stderr line and exit code 2, no run directory."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvermap.errors import InputError
from solvermap.ir.graph import DataflowGraph
from solvermap.ir.serialize import load, to_json

from .test_cli import run_cli  # the CLI in-process: (exit code, stdout, stderr)

SAMPLES = Path(__file__).parents[1] / "plasticine" / "dfg"
SAMPLE_FILES = sorted(SAMPLES.glob("*.*"))
SUFFIXES = (".json", ".dot", ".graphml", ".xml")
FUZZ = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _load_text(data: bytes | str, suffix: str) -> DataflowGraph | InputError:
    """Load ``data`` as a file with ``suffix``: the graph, or the InputError (any other exception fails)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"g{suffix}"
        path.write_bytes(data.encode() if isinstance(data, str) else data)
        try:
            return load(path)
        except InputError as exc:
            assert "\n" not in str(exc), str(exc)
            return exc


def _sample_json() -> str:
    return json.dumps(to_json(load(SAMPLES / "saxpy.graphml")))


@pytest.mark.parametrize("suffix", SUFFIXES)
@FUZZ
@given(data=st.binary(max_size=600))
def test_garbage_bytes_are_one_line(suffix, data):
    _load_text(data, suffix)


@pytest.mark.parametrize("sample", [*SAMPLE_FILES, "json"], ids=lambda s: getattr(s, "name", s))
@settings(max_examples=12, deadline=None)
@given(cut=st.floats(0.0, 1.0))
def test_truncated_files_are_one_line(sample, cut):
    text = _sample_json() if sample == "json" else sample.read_text()
    suffix = ".json" if sample == "json" else sample.suffix
    _load_text(text[: int(len(text) * cut)], suffix)


NESTINGS = {
    ".json": lambda n: "[" * n + "]" * n,
    ".dot": lambda n: "digraph g { a; " + "subgraph s { " * n + "b " + "} " * n + "}",
    ".graphml": lambda n: '<graphml><graph edgedefault="directed">' + "<data>" * n + "</data>" * n + "</graph></graphml>",
    ".xml": lambda n: '<DFG count="1"><Node idx="1"><OP>ADD</OP>' + "<x>" * n + "</x>" * n + "</Node></DFG>",
}


@pytest.mark.parametrize("suffix", SUFFIXES)
@settings(max_examples=10, deadline=None)
@given(depth=st.integers(1, 30000))
def test_deep_nesting_is_one_line(suffix, depth):
    _load_text(NESTINGS[suffix](depth), suffix)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for k, item in enumerate(value):
            yield from _paths(item, (*prefix, k))


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_wrong_types_anywhere_in_a_json_graph_are_one_line(data):
    graph = json.loads(_sample_json())
    paths = [p for p in _paths(graph) if p]
    path = data.draw(st.sampled_from(paths))
    target = graph
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = data.draw(JSON_VALUES)
    _load_text(json.dumps(graph), ".json")


HUGE = st.sampled_from(["1e400", "-1e400", "9" * 400, "1e18", "4294967297", "-1", "nan", "inf", "0x10"])


@settings(max_examples=40, deadline=None)
@given(field=st.sampled_from(["width_bits", "init_tokens", "distance", "activation", "res_ops", "operand"]),
       value=HUGE, back=st.booleans())
def test_huge_numbers_in_dot_attributes_are_one_line(field, value, back):
    where = "node" if field == "res_ops" else "edge"
    attr = f'{field}="{value}"'
    text = (f"digraph g {{ a [{attr if where == 'node' else ''}]; b; a -> b [{attr if where == 'edge' else ''}]; "
            f"b -> a [loop_carried={'true' if back else 'false'}] }}")
    _load_text(text, ".dot")


@settings(max_examples=20, deadline=None)
@given(value=HUGE, key=st.sampled_from(["nextiter", "idx", "size"]))
def test_huge_numbers_in_xml_dfgs_are_one_line(value, key):
    output = f'<Output idx="2" nextiter="{value if key == "nextiter" else 1}"/>'
    idx = value if key == "idx" else "2"
    size = value if key == "size" else "80"
    text = (f'<DFG count="2"><Node idx="1"><OP>ADD</OP><BasePointerName size="{size}">A</BasePointerName>'
            f"<Outputs>{output}</Outputs></Node><Node idx=\"{idx}\"><OP>MUL</OP></Node></DFG>")
    _load_text(text, ".xml")


DOT_SOUP = st.text(alphabet='digraph{}[];=->" abc01\n,:+<>/*#\\', max_size=80)


@settings(max_examples=40, deadline=None)
@given(text=DOT_SOUP)
def test_dot_token_soup_is_one_line(text):
    _load_text(text, ".dot")


# --------------------------------------------------------------------------- the command line


BAD_FILES = {
    "garbage.dot": b"\x89PNG\r\n\x1a\n\x00\x00",
    "empty.dot": b"",
    "empty_graph.dot": b"digraph g { }",
    "truncated.graphml": b'<graphml><graph edgedefault="directed"><node id="a"/>',
    "truncated.xml": b'<DFG count="1"><Node idx="1"><OP>ADD</OP>',
    "types.json": b'{"format": "solvermap.graph", "version": 1, "nodes": [{"name": "a", "kind": "op"}], "binds": 5}',
    "deep.json": b"[" * 100_000,
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_bad_graph_file_on_plasticine_is_one_line_exit_2_and_no_run_directory(monkeypatch, capsys, tmp_path, name):
    path = tmp_path / name
    path.write_bytes(BAD_FILES[name])
    code, _, err = run_cli(monkeypatch, capsys, "map", "--workload", str(path), "--target", "plasticine",
                           "--out", str(tmp_path / "run"), "-q")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert not (tmp_path / "run").exists()


def test_a_directory_as_workload_is_one_line_exit_2(monkeypatch, capsys, tmp_path):
    (tmp_path / "graph.dot").mkdir()
    code, _, err = run_cli(monkeypatch, capsys, "map", "--workload", str(tmp_path / "graph.dot"), "--target",
                           "plasticine", "--out", str(tmp_path / "run"), "-q")
    assert code == 2 and "is a directory" in err and len(err.strip().splitlines()) == 1
