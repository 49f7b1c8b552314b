"""HPVM tuner configuration files: our export reads back to the run that wrote it, HPVM's own layout is read and
evaluated, and malformed files or export settings are one-line errors."""

from __future__ import annotations

import json
import re
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solvermap.cli import main
from solvermap.errors import InputError
from solvermap.hardware.approxhpvm.soc_sim import schedule_units
from solvermap.mappers.approxhpvm import hpvm_config

# HPVM's published layout (alexnet_cifar10/data/tuner_confs.txt): baseline time, then +++++ / conf header / one line
# per node with (op, approximation, knob) triples / -----. Here for our 8×8 LeNet (Conv, Conv, FC, FC): HPVM's
# op order within a conv node (tanh before pool_max) is kept, knobs 11/12 on conv and mul, 1 elsewhere.
HPVM_LENET = """\
81.422
+++++
conf1 1 1 97.78 0.0
1 gpu conv fp32 11 add fp32 1 tanh fp32 1 pool_max fp32 1
2 gpu conv fp32 11 add fp32 1 tanh fp32 1 pool_max fp32 1
3 gpu mul fp32 11 add fp32 1 tanh fp32 1
4 gpu mul fp32 11 add fp32 1
-----
+++++
conf2 1.7593976485873195 1.6193399031642917 97.7 2.0
1 gpu conv fp16 12 add fp16 1 tanh fp16 1 pool_max fp16 1
2 gpu conv fp16 12 add fp16 1 tanh fp16 1 pool_max fp16 1
3 gpu mul fp16 12 add fp16 1 tanh fp16 1
4 gpu mul fp32 11 add fp32 1
-----
+++++
conf3 2.092625440752526 1.9139078015388271 97.5 0.32
1 gpu conv samp_fp16 263 add fp16 1 tanh fp16 1 pool_max fp16 1
2 gpu conv fp16 12 add fp16 1 tanh fp16 1 pool_max fp16 1
3 gpu mul fp16 12 add fp16 1 tanh fp16 1
4 gpu mul fp16 12 add fp16 1
-----
"""


def test_a_file_in_hpvm_published_layout_is_read_and_evaluated(lenet, spec):
    results = hpvm_config.evaluate(hpvm_config.parse(HPVM_LENET, "tuner_confs.txt"), lenet, spec, runs=3)
    by_name = {r.name: r for r in results}
    assert by_name["conf1"].pass_rate == 1.0 and by_name["conf1"].meets_stated_loss  # FP32 loses nothing
    assert by_name["conf2"].settings == "FP16-FP16-FP16-FP32"
    assert by_name["conf2"].speedup > by_name["conf1"].speedup and by_name["conf2"].energy_reduction > 1.0
    assert by_name["conf2"].stated_loss == 2.0 and by_name["conf2"].runs == 3


def test_hpvm_sampling_knobs_are_reported_not_evaluated(lenet, spec):
    conf3 = hpvm_config.evaluate(hpvm_config.parse(HPVM_LENET), lenet, spec, runs=2)[2]
    assert conf3.speedup is None and "samp_fp16 263" in conf3.not_evaluated


def test_export_round_trip_gives_the_run_speedup_energy_and_pass_rate(knobs_run, dnn1, spec):
    record, exported = knobs_run
    v = record["validation"]
    assert v["hpvm_config"] == str(exported)
    configs = hpvm_config.read(exported)
    assert [c.name for c in configs.configurations] == ["conf1", "conf2"]  # the FP32 baseline, then the mapping
    chosen = hpvm_config.evaluate(configs, dnn1, spec, runs=v["mc_runs"], seed=0)[1]
    assert chosen.speedup == pytest.approx(v["speedup"], rel=1e-12)
    assert chosen.energy_reduction == pytest.approx(v["energy_reduction"], rel=1e-12)
    assert chosen.pass_rate == v["pass_rate"] and chosen.meets_stated_loss == v["meets_loss_limit"]
    assert chosen.settings == "-".join(record["solution"]["layer_settings"][l] for l in ("fc1", "fc2"))


def test_written_nodes_are_the_execution_units_in_program_order(lenet, spec):
    knobs = {op.name: "FP16" if op.layer == "conv1" else ("P5" if op.layer == "fc1" else "FP32") for op in lenet.ops}
    groups = (("conv1/conv", "conv1/add", "conv1/pool"), ("conv1/tanh",))
    text = hpvm_config.render(lenet, spec, [hpvm_config.Chosen(schedule_units(lenet, knobs, groups), 2.0, 3.0,
                                                               0.97, 0.01)])
    assert "3 gpu conv fp32 11 add fp32 1 pool_max fp32 1 tanh fp32 1" not in text
    conf2 = text.split("+++++")[2].splitlines()
    assert conf2[1] == "conf2 2.0 3.0 97.0000 1.0"
    assert conf2[2] == "1 gpu conv fp16 12 add fp16 1 pool_max fp16 1" and conf2[3] == "2 gpu tanh fp16 1"
    assert "promise swing_level 5" in text
    mapped = hpvm_config.to_schedule(hpvm_config.parse(text).configurations[1], lenet, spec)
    assert mapped.knobs == knobs and groups[0] in mapped.gpu_groups


@pytest.mark.parametrize("text, problem", [
    ("", "line 1"),
    ("x\n+++++\n", "baseline time must be a number"),
    ("1\nconf1 1 1 90 0\n", "expected '+++++'"),
    ("1\n+++++\nconf1 1 1 90\n-----\n", "expected 'conf<N>"),
    ("1\n+++++\nconf1 1 1 90 0\n1 gpu lstm fp32 1\n-----\n", "unknown op 'lstm'"),
    ("1\n+++++\nconf1 1 1 90 0\n1 gpu mul fp8 1\n-----\n", "unknown approximation 'fp8'"),
    ("1\n+++++\nconf1 1 1 90 0\n1 promise swing_level 9\n-----\n", "swing_level <1..7>"),
    ("1\n+++++\nconf1 1 1 90 0\n1 gpu mul fp32\n-----\n", "needs '<approximation> <knob>'"),
    ("1\n+++++\nconf1 1 1 90 0\n1 gpu mul fp32 11\n", "no closing '-----'"),
])
def test_malformed_files_are_one_line_errors(text, problem):
    with pytest.raises(InputError, match=re.escape(problem)) as err:
        hpvm_config.parse(text, "bad.txt")
    assert "\n" not in str(err.value) and str(err.value).startswith("bad.txt")


def test_nodes_that_do_not_match_the_network_are_named(dnn1, spec):
    text = "1\n+++++\nconf1 1 1 90 0\n1 gpu conv fp32 11 add fp32 1 tanh fp32 1\n2 gpu mul fp32 11 add fp32 1\n-----\n"
    with pytest.raises(InputError, match="line 4.*lists conv, add, tanh but the network's next ops are gemm, add, tanh"):
        hpvm_config.to_schedule(hpvm_config.parse(text).configurations[0], dnn1, spec, "f.txt")


def _cli(monkeypatch, capsys, *args):
    monkeypatch.setattr(sys, "argv", ["solvermap", *args])
    with pytest.raises(SystemExit) as exit_info:
        main()
        raise SystemExit(0)
    return exit_info.value.code or 0, *capsys.readouterr()


def test_hpvm_config_command_evaluates_every_configuration(monkeypatch, capsys, tmp_path):
    path = tmp_path / "tuner_confs.txt"
    text = "1.0\n+++++\nconf1 1 1 96 0.0\n1 gpu mul fp32 11 add fp32 1 tanh fp32 1\n2 gpu mul fp16 12 add fp16 1\n-----\n"
    path.write_text(text)
    code, out, err = _cli(monkeypatch, capsys, "hpvm-config", str(path), "--workload", "dnn1", "--runs", "2", "--json")
    assert code == 0, err
    result = json.loads(out)["configurations"][0]
    assert result["settings"] == "FP32-FP16" and result["runs"] == 2 and result["pass_rate"] is not None


@pytest.mark.parametrize("args, problem", [
    (("--workload", "gemm", "--target", "plasticine", "--set", "export.hpvm_config=x.txt"),
     "the plasticine pipeline does not write hpvm_config"),
    (("--workload", "dnn1", "--target", "promise-soc", "--set", "export.tuner=x.txt"), "export.tuner"),
    (("--workload", "dnn1", "--target", "promise-soc", "--set", "export.hpvm_config=/no/such/dir/c.txt"),
     "does not exist"),
])
def test_bad_export_settings_are_one_line_errors(monkeypatch, capsys, tmp_path, args, problem):
    code, _, err = _cli(monkeypatch, capsys, "map", *args, "--out", str(tmp_path / "run"), "-q")
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 2 and len(lines) == 1 and problem in lines[0] and "Traceback" not in err


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(["+++++", "-----", "conf1 1 1 90 0", "conf2 x 1 90 0", "1 gpu mul fp32 11",
                                 "1 gpu add fp16 1 tanh", "2 promise swing_level 3", "1 cpu conv fp32 11", "", "7.5",
                                 "1 gpu samp_fp16 263"]), max_size=12) | st.text(max_size=80))
def test_any_text_parses_or_is_a_one_line_error(text):
    if isinstance(text, list):
        text = "\n".join(text)
    try:
        hpvm_config.parse(text, "fuzz.txt")
    except InputError as err:
        assert "\n" not in str(err)
