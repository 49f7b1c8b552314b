"""Search space enumeration and sampling; Pareto masks and exact hypervolume."""

from __future__ import annotations

import itertools

import numpy as np
import optuna
from hypothesis import given, settings
from hypothesis import strategies as st

from solvermap.search.pareto import hypervolume, pareto_mask
from solvermap.search.space import distance, enumerate_space, suggest
from solvermap.search.study_file import parse_study
from tests.search.conftest import toy_study


def _space():
    return parse_study(toy_study(), "toy").space


def test_enumeration_respects_conditions():
    configs = enumerate_space(_space())
    # 4 pes x 3 lanes x (static + dynamic with 2 vcs) = 36 distinct configurations
    assert len(configs) == 36
    assert len({tuple(sorted(c.items())) for c in configs}) == 36
    assert all(("target.vcs" in c) == (c["target.network"] == "dynamic") for c in configs)


def test_float_with_step_enumerates_inclusive_range():
    study = parse_study(toy_study(space={"target.clock_ghz": {"type": "float", "low": 0.5, "high": 1.5, "step": 0.25}}), "s")
    assert [c["target.clock_ghz"] for c in enumerate_space(study.space)] == [0.5, 0.75, 1.0, 1.25, 1.5]


def test_suggest_samples_conditional_parameter_only_when_active():
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=3))
    seen = []
    for _ in range(30):
        trial = study.ask()
        config = suggest(_space(), trial)
        seen.append(config)
        study.tell(trial, 0.0)
    assert all(("target.vcs" in c) == (c["target.network"] == "dynamic") for c in seen)
    assert {c["target.network"] for c in seen} == {"static", "dynamic"}


def test_distance_is_zero_to_itself_and_counts_categorical_changes():
    space = _space()
    a = {"target.pes": 1, "target.lanes": 2, "target.network": "static"}
    b = {"target.pes": 4, "target.lanes": 2, "target.network": "dynamic", "target.vcs": 1}
    assert distance(space, a, a) == 0
    assert distance(space, a, b) == 1.0 + 1.0 + 1.0  # pes full range, network differs, vcs only in b


def test_hypervolume_2d_known_value():
    # union of [1,4]x[3,4], [2,4]x[2,4], [3,4]x[1,4]: rows y in [3,4], [2,3], [1,2] are 3 + 2 + 1 wide
    points = np.array([[1.0, 3.0], [2.0, 2.0], [3.0, 1.0]])
    assert hypervolume(points, [4.0, 4.0]) == 6.0


def _grid_volume(points: np.ndarray, ref: np.ndarray, steps: int = 12) -> float:
    """Count unit cells of a lattice that some point dominates (points lie on the lattice)."""
    cells = 0
    for cell in itertools.product(*(range(steps) for _ in range(len(ref)))):
        centre = np.array(cell) + 0.5
        if np.all(centre < ref) and np.any(np.all(points <= centre, axis=1)):
            cells += 1
    return float(cells)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(*(st.integers(0, 7) for _ in range(3))), min_size=1, max_size=7))
def test_hypervolume_3d_matches_lattice_count(raw):
    points = np.array(raw, dtype=float)
    ref = np.array([8.0, 8.0, 8.0])
    assert hypervolume(points, ref) == _grid_volume(points, ref, 8)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), min_size=1, max_size=12))
def test_pareto_mask_keeps_exactly_the_non_dominated(raw):
    points = np.array(raw, dtype=float)
    mask = pareto_mask(points)
    for i, p in enumerate(points):
        dominated = any(np.all(q <= p) and np.any(q < p) for q in points)
        assert mask[i] == (not dominated)


@settings(max_examples=15, deadline=None)
@given(st.lists(st.tuples(*(st.integers(0, 4) for _ in range(4))), min_size=1, max_size=6))
def test_hypervolume_4d_matches_lattice_count(raw):
    points = np.array(raw, dtype=float)
    ref = np.array([5.0, 5.0, 5.0, 5.0])
    assert hypervolume(points, ref) == _grid_volume(points, ref, 5)


def test_hypervolume_counts_only_points_inside_the_reference_box():
    inside = np.array([[1.0, 1.0]])
    outside = np.array([[0.0, 5.0], [4.0, 0.0], [np.inf, 0.0]])  # on or beyond the reference in one objective
    assert hypervolume(np.vstack([inside, outside]), [4.0, 4.0]) == hypervolume(inside, [4.0, 4.0]) == 9.0


def test_pareto_mask_keeps_duplicates_and_drops_a_point_dominated_through_infinity():
    points = np.array([[1.0, 2.0], [1.0, 2.0], [2.0, 1.0], [np.inf, 2.0]])
    assert pareto_mask(points).tolist() == [True, True, True, False]
