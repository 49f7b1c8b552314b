"""Row-band placement (the large instances' start): valid within the tile budget, deterministic, and the
hierarchical solve on the large-instance path never returns more hop-weighted bytes than it."""

from __future__ import annotations

import pytest

from solvermap.formulations.solver import SolverConfig
from solvermap.hardware.checks.puma_placement import check
from solvermap.hardware.puma.placement_problem import hop_weighted_bytes, make_problem
from solvermap.mappers.puma import band_placement as bands
from solvermap.mappers.puma import hierarchical_placement
from solvermap.mappers.puma.baselines import BASELINES

FAST = {"screen": 6, "moves": 3_000}


@pytest.fixture(scope="module")
def problems(puma_small):
    from .conftest import prepared

    return {name: make_problem(prepared(name, puma_small)[2], puma_small) for name in ("mlp", "lstm_lm")}


@pytest.mark.parametrize("name", ["mlp", "lstm_lm"])
def test_band_placement_passes_the_checker_and_uses_at_most_k_tiles(problems, name):
    problem = problems[name]
    placement, heights = bands.band_placement(problem, **FAST)
    report = check(problem, placement)
    assert report.ok, report.violations
    assert placement.tiles_used() <= problem.min_tiles() + problem.extra_tiles
    assert set(placement.slots) == {b.name for b in problem.partition.blocks}
    assert all(h in bands.HEIGHTS for h in heights)


def test_band_placement_is_deterministic(problems):
    problem = problems["lstm_lm"]
    first = bands.band_placement(problem, **FAST)
    second = bands.band_placement(problem, **FAST)
    assert first == second


def test_checker_rejects_a_band_placement_with_two_blocks_on_one_slot(problems):
    problem = problems["mlp"]
    placement, _ = bands.band_placement(problem, **FAST)
    names = sorted(placement.slots)
    slots = dict(placement.slots)
    slots[names[0]] = slots[names[1]]
    broken = type(placement)(slots)
    assert not check(problem, broken).ok


@pytest.fixture()
def large_path(monkeypatch):
    """Every instance takes the large-instance path (no stages A/B; band start), with a small band work."""
    monkeypatch.setattr(hierarchical_placement, "EXACT_STAGES_MAX_BLOCKS", 0)
    monkeypatch.setattr(bands, "SCREEN", FAST["screen"])
    monkeypatch.setattr(bands, "MOVES", FAST["moves"])


@pytest.mark.parametrize("name", ["mlp", "lstm_lm"])
def test_large_path_solve_is_never_worse_than_its_band_start(problems, name, large_path):
    problem = problems[name]
    hint = BASELINES["row_major"](problem)
    solved = hierarchical_placement.solve(problem, SolverConfig(backend="cpsat", time_limit_s=3), hint)
    assert check(problem, solved.decision).ok
    band = solved.details["band_start"]
    expected, heights = bands.band_placement(problem, **FAST)
    assert band["used"] and band["heights"] == list(heights)
    assert band["hop_bytes"] == hop_weighted_bytes(problem, expected)
    assert solved.details["lns"]["start_hop_bytes"] <= band["hop_bytes"] + 1e-9  # the LNS starts from the best start
    assert hop_weighted_bytes(problem, solved.decision) <= band["hop_bytes"] + 1e-9
    assert "stage_a" not in solved.details  # the exact stages were skipped


def test_small_path_has_no_band_start(problems):
    problem = problems["mlp"]
    solved = hierarchical_placement.solve(problem, SolverConfig(backend="cpsat", time_limit_s=3), BASELINES["row_major"](problem))
    assert "band_start" not in solved.details and "stage_a" in solved.details


def test_deep_networks_rank_only_the_combinations_the_per_layer_descent_meets(problems, monkeypatch):
    """Above MAX_COMBINATIONS the heights are not enumerated (8^20 for 20 layers of 16 block rows): the
    descent evaluates at most passes x sum of heights per layer, and the result is still a valid placement."""
    problem = problems["lstm_lm"]
    choices = [[1, 2, 4, 8]] * 20
    evaluated = []
    seen = bands._ranked_heights(choices, lambda h: evaluated.append(h) or float(sum((g + 1) * abs(x - 4) for g, x in enumerate(h))))
    assert len(evaluated) == len(set(evaluated)) == len(seen) <= bands.DESCENT_PASSES * sum(map(len, choices))
    assert min(seen, key=seen.get) == (4,) * 20  # the descent reaches the separable minimum
    monkeypatch.setattr(bands, "MAX_COMBINATIONS", 1)
    placement, heights = bands.band_placement(problem, **FAST)
    assert check(problem, placement).ok
    assert placement.tiles_used() <= problem.min_tiles() + problem.extra_tiles
