"""Target presets and run configuration: extends, overrides, and one-line errors naming file and field."""

import pytest

from solvermap.config import build_config
from solvermap.errors import InputError, UnknownNameError
from solvermap.hardware.targets import load_target, presets

from . import toy_family  # noqa: F401 - registers the "toy" family


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_yaml_target_loads_and_validates(tmp_path):
    spec = load_target(write(tmp_path, "t.yaml", "name: t\nfamily: toy\ncapacity: 7\n"))
    assert spec.capacity == 7 and spec.family == "toy"


def test_extends_inherits_and_overrides(tmp_path):
    write(tmp_path, "base.yaml", "name: base\nfamily: toy\ncapacity: 7\ndescription: base target\n")
    spec = load_target(write(tmp_path, "child.yaml", "extends: base\nname: child\ncapacity: 9\n"))
    assert (spec.name, spec.capacity, spec.description) == ("child", 9, "base target")


def test_overrides_apply_after_loading(tmp_path):
    spec = load_target(write(tmp_path, "t.yaml", "name: t\nfamily: toy\n"), {"capacity": 3})
    assert spec.capacity == 3


def test_unknown_field_is_one_line_naming_file_and_field(tmp_path):
    path = write(tmp_path, "t.yaml", "name: t\nfamily: toy\ncapactiy: 3\n")
    with pytest.raises(InputError) as err:
        load_target(path)
    assert str(err.value) == f"{path}: field 'capactiy': unknown field"


def test_invalid_value_names_the_field(tmp_path):
    with pytest.raises(InputError, match=r"t\.yaml: field 'capacity': Input should be greater than or equal to 0"):
        load_target(write(tmp_path, "t.yaml", "name: t\nfamily: toy\ncapacity: -1\n"))


def test_unknown_family_is_rejected(tmp_path):
    with pytest.raises(InputError, match=r"field 'family': unknown target family 'warp'"):
        load_target(write(tmp_path, "t.yaml", "name: t\nfamily: warp\n"))


def test_invalid_yaml_is_rejected(tmp_path):
    with pytest.raises(InputError, match="invalid YAML"):
        load_target(write(tmp_path, "t.yaml", "name: [unclosed\n"))


def test_unknown_preset_lists_the_known_ones():
    with pytest.raises(UnknownNameError, match="unknown target 'nonesuch'"):
        load_target("nonesuch")


def test_every_shipped_preset_validates():
    for preset in presets():
        spec = load_target(preset.name)
        assert spec.name == preset.name and spec.family == preset.family


def test_config_merges_file_flags_and_set(tmp_path):
    path = write(tmp_path, "run.yaml", "workload: toy_items\ntarget: t.yaml\nsolver: {backend: highs}\nseed: 4\n")
    config = build_config(config_file=str(path), time_limit=5, sets=["workload.n=9", "target.capacity=3",
                                                                      "decisions.select.solver.backend=scip"])
    assert config.workload.params == {"n": 9} and config.target.overrides == {"capacity": 3}
    assert config.solver.backend == "highs" and config.solver.time_limit_s == 5 and config.solver.seed == 4
    assert config.decisions == {"select": {"solver": {"backend": "scip"}}}


def test_config_rejects_unknown_set_key():
    with pytest.raises(InputError, match="unknown key"):
        build_config(workload="w", target="t", sets=["colour=blue"])


def test_config_rejects_unknown_backend():
    with pytest.raises(InputError, match=r"field 'solver\.backend'.*unknown backend 'glpk'"):
        build_config(workload="w", target="t", solver="glpk")


def test_config_requires_a_workload():
    with pytest.raises(InputError, match="field 'workload': missing"):
        build_config(target="t")
