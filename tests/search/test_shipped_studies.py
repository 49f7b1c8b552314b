"""The studies shipped with solvermap load, and every name in their spaces exists in their target."""

from __future__ import annotations

from pathlib import Path

import pytest

from solvermap.search.explore import STUDIES_DIR, resolve_study, shipped_studies
from solvermap.search.evaluate import Evaluator
from solvermap.search.space import enumerate_space
from solvermap.search.study_file import load_study

REPO = Path(__file__).resolve().parents[2]
STUDIES = sorted(STUDIES_DIR.glob("*.yaml")) + [REPO / "studies" / "dse_methods" / "study.yaml"]


@pytest.mark.parametrize("path", STUDIES, ids=lambda p: p.stem)
def test_shipped_study_validates_against_its_target(path):
    study = load_study(path)
    Evaluator(study, None, source=str(path))  # checks every space name, set and workload parameter
    assert enumerate_space(study.space)


def test_default_study_is_found_by_name():
    assert "plasticine-dse" in shipped_studies()
    assert resolve_study("plasticine-dse") == STUDIES_DIR / "plasticine_dse.yaml"


def test_method_comparison_space_is_small_enough_to_enumerate():
    assert len(enumerate_space(load_study(REPO / "studies" / "dse_methods" / "study.yaml").space)) == 96
