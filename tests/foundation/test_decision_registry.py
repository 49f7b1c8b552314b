"""The decision registry: every pipeline decision has a complete descriptor, listed by `solvermap decisions --json`,
and every decision type round-trips through its descriptor's serializer (the solve cache's format)."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvermap.cli import main
from solvermap.codec import CodecError, decode, encode
from solvermap.formulations.problems.partition import PartitionDecision
from solvermap.formulations.problems.routing import Routes
from solvermap.mappers import all_pipelines
from solvermap.mappers.decisions import DECISIONS
from solvermap.mappers.pipeline import Decision, resolve


def _pipeline_decisions() -> dict[str, list[Decision]]:
    out: dict[str, list[Decision]] = {}
    for pipeline in all_pipelines():
        for step in pipeline.steps:
            if step.decision is not None:
                out.setdefault(pipeline.family, []).append(step.decision)
    return out


def _cli(monkeypatch, capsys, *args):
    monkeypatch.setattr("sys.argv", ["solvermap", *args])
    with pytest.raises(SystemExit) as exc:
        main()
        raise SystemExit(0)
    out = capsys.readouterr()
    return exc.value.code or 0, out.out, out.err


def test_every_pipeline_decision_of_a_shipped_family_is_in_the_registry():
    for family in ("plasticine", "pushmem", "approxhpvm", "puma", "cpu"):
        for decision in _pipeline_decisions()[family]:
            assert any(decision is d for d in DECISIONS), (family, decision.name)


def test_every_reference_of_every_descriptor_resolves():
    for d in DECISIONS:
        assert isinstance(resolve(d.problem_type), type) and dataclasses.is_dataclass(resolve(d.decision_type)), d.name
        for part in (d.solve, d.objective, d.checker, d.diagnose, *(b.run for b in d.baselines)):
            if part is not None:
                target = resolve(part)
                assert callable(target) or hasattr(target, "solve"), (d.name, part)
        assert d.modules and all(m.startswith("solvermap.") for m in d.modules), d.name


def test_decisions_json_lists_every_decision_from_its_descriptor(monkeypatch, capsys):
    code, out, _ = _cli(monkeypatch, capsys, "decisions", "--json")
    assert code == 0
    rows = json.loads(out)
    for family, decisions in _pipeline_decisions().items():
        for decision in decisions:
            row = next(r for r in rows if r["name"] == decision.name and family in r["families"])
            assert row["kind"] == decision.kind and row["backends"] and row["sense"] in ("min", "max")
            assert row["checker"].count(":") == 1 and row["formulation"] == list(decision.modules)
            assert [b["name"] for b in row["baselines"]] == [b.name for b in decision.baselines]
            assert all(":" in b["function"] for b in row["baselines"])
            assert "solver" in row["options"]["properties"]


def test_decisions_json_shows_option_ranges_and_choices(monkeypatch, capsys):
    _, out, _ = _cli(monkeypatch, capsys, "decisions", "--json")
    vc = next(r for r in json.loads(out) if r["name"] == "vc")
    assert vc["options"]["properties"]["candidates"]["minimum"] == 1
    assert vc["options"]["properties"]["mode"]["enum"] == ["per_hop", "per_path"]


def test_the_two_place_decisions_are_listed_apart(monkeypatch, capsys):
    _, out, _ = _cli(monkeypatch, capsys, "decisions", "--json")
    places = {tuple(r["families"]): r["checker"] for r in json.loads(out) if r["name"] == "place"}
    assert places == {("plasticine",): "solvermap.hardware.checks.placement:check",
                      ("puma",): "solvermap.hardware.checks.puma_placement:check"}


def test_codec_keeps_tuple_keys_nested_mappings_and_frozensets():
    decision = PartitionDecision({"a": 0, "b": 1}, {0: "pcu", 1: "pmu"}, {0: 0, 1: 3}, {("x", "out", ""): 2},
                                 {("x", "out", 1): 1})
    assert decode(json.loads(json.dumps(encode(decision))), PartitionDecision) == decision
    routes = Routes({"n": (((0, 0), (0, 1)),)}, {("n", ((0, 0), (0, 1))): 2})
    assert decode(json.loads(json.dumps(encode(routes))), Routes) == routes


def test_codec_refuses_data_that_does_not_fit_the_declared_type():
    with pytest.raises(CodecError):
        decode([["a", "zero"]], dict[str, int])
    with pytest.raises(CodecError, match="no field"):
        decode({"assignment": [], "bin_types": [], "__class__": "os.system"}, PartitionDecision)


def _same(a, b) -> bool:  # equality up to NaN (the codec keeps NaN; NaN != NaN)
    return json.dumps(encode(a), sort_keys=True) == json.dumps(encode(b), sort_keys=True) and type(a) is type(b)


@pytest.mark.parametrize("decision", DECISIONS, ids=lambda d: f"{d.name}-{resolve(d.decision_type).__name__}")
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_decision_type_round_trips_through_its_descriptor(decision, data):
    kind = resolve(decision.decision_type)
    value = data.draw(st.from_type(kind))
    loaded = decision.load(json.loads(json.dumps(decision.dump(value))))
    assert _same(loaded, value)
