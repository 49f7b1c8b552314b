"""UNIT's CPU tuning space and rules, the Optuna tuner (model-measured: deterministic), the latency model."""

from __future__ import annotations

import math

import pytest

from solvermap.formulations.problems.tensorize import mapping_from_pairs
from solvermap.hardware.cpu.instructions import VNNI_VPDPBUSD
from solvermap.hardware.cpu.latency_model import distinct_registers, estimate, live_registers
from solvermap.hardware.cpu.nest import Schedule, blocks, fused_extent, split_dp_loops, unroll_extent
from solvermap.hardware.targets import load_target
from solvermap.mappers.cpu.baselines import unit_greedy_mapping, unit_pairs, unit_schedule
from solvermap.mappers.cpu.rewriter import rewrite
from solvermap.mappers.cpu.tuner import register_tiles, schedule_space, tune

from .conftest import problem_for

TARGET = load_target("x86-vnni")


def _nest(name: str, params: dict | None = None):
    problem = problem_for(name, params)
    return rewrite(problem, mapping_from_pairs(problem, {"i": "k", "j": "c"}), VNNI_VPDPBUSD)


def _parts(nest, schedule):
    return split_dp_loops({l.var: l.extent for l in nest.dp_loops}, schedule)


def test_default_pair_respects_the_seed_limits():
    for name in ("conv_table1_2", "conv_table1_5", "conv_table1_15", "resnet18_conv2"):
        nest = _nest(name)
        parts = _parts(nest, unit_schedule(nest, 3000, 8))
        assert fused_extent(parts) <= 3000 and unroll_extent(parts) <= 8
        assert unroll_extent(parts) > 1  # a 7/14/28-wide output unrolls by 7


def test_prime_output_width_cannot_be_unrolled_by_unit_rule():
    # 002:L312: #1 (OHW 17) and #4 (OHW 71) can neither be perfectly tiled nor fully unrolled
    for name in ("conv_table1_1", "conv_table1_4"):
        nest = _nest(name)
        assert unroll_extent(_parts(nest, unit_schedule(nest, 3000, 8))) == 1


def test_reordering_lets_a_prime_width_layer_unroll():
    nest = _nest("conv_table1_1")
    result = tune(nest, TARGET, lambda s: estimate(nest, s, TARGET.core).seconds, tuner="optuna", trials=15, seed=0)
    assert unroll_extent(_parts(nest, result.best)) > 1
    assert result.best_seconds < result.default_seconds


def test_pairs_start_with_the_default_and_cover_the_grid():
    pairs = unit_pairs([3000, 1500, 6000], [8, 4, 16])
    assert pairs[0] == (3000, 8) and len(set(pairs)) == 9


def test_schedule_space_contains_only_valid_schedules():
    nest = _nest("conv_table1_3", {"C": 8, "K": 32})
    space = schedule_space(nest)
    assert len(space) == len(set(space)) > 0
    for schedule in space:
        parts = _parts(nest, schedule)
        assert math.prod(p.extent for p in parts) == math.prod(l.extent for l in nest.dp_loops)


def test_ill_formed_schedules_are_rejected():
    nest = _nest("conv_table1_3", {"C": 8, "K": 32})
    dp = tuple(l.var for l in nest.dp_loops)
    extents = {l.var: l.extent for l in nest.dp_loops}
    for bad in (Schedule(dp, (2, 1), (0, 1)), Schedule(dp, (0, 3), (2, 1)), Schedule(dp[:2], (0, 1), (1, 1))):
        with pytest.raises(ValueError):
            split_dp_loops(extents, bad)


def test_model_measured_tuning_is_deterministic_and_never_worse_than_default():
    nest = _nest("conv_table1_6")
    measure = lambda s: estimate(nest, s, TARGET.core).seconds  # noqa: E731
    a = tune(nest, TARGET, measure, tuner="optuna", trials=10, seed=3)
    b = tune(nest, TARGET, measure, tuner="optuna", trials=10, seed=3)
    assert a.best == b.best and [t.params for t in a.trials] == [t.params for t in b.trials]
    assert a.best_seconds <= a.default_seconds
    assert a.summary()["pruned"] + a.summary()["trials"] >= 10


def test_unit_tuner_profiles_its_first_pairs_only():
    nest = _nest("conv_table1_6")
    calls = []
    result = tune(nest, TARGET, lambda s: calls.append(s) or 1.0, tuner="unit", pairs=8)
    assert [t.source for t in result.trials].count("unit-pair") == 7
    assert len(calls) == len(set(calls))  # a schedule reached by two pairs is measured once
    assert result.unit_pair_reaching_best() == 1


def test_latency_model_prefers_unrolling_to_hide_the_accumulation_latency():
    nest = _nest("conv_table1_6")
    one = estimate(nest, unit_schedule(nest, 3000, 1), TARGET.core)
    seven = estimate(nest, unit_schedule(nest, 3000, 8), TARGET.core)
    assert one.bound == "latency" and seven.seconds < one.seconds


def test_latency_model_charges_spills_beyond_the_register_file():
    nest = _nest("conv_table1_6")
    dp = tuple(l.var for l in nest.dp_loops)
    many = Schedule(dp, (0, 12), (1, 14))  # 14 x 14 = 196 accumulators
    est = estimate(nest, many, TARGET.core)
    assert est.registers > TARGET.core.vector_registers and est.bound == "operands"


def test_greedy_baseline_prefers_the_innermost_eligible_loops():
    problem = problem_for("resnet18_conv1")  # OW = 112 tiles by 16; no reduction loop tiles by 4
    assert dict(unit_greedy_mapping(problem).loop_map) == {"i": "x", "j": "s"}
    assert dict(unit_greedy_mapping(problem_for("conv_table1_3")).loop_map) == {"i": "k", "j": "c"}


def test_an_unroll_factor_with_a_residue_adds_one_partial_block_per_enclosing_iteration():
    extents = {"k_o": 2, "y": 5, "x": 7}
    parts = split_dp_loops(extents, Schedule(("k_o", "y", "x"), (1, 5), (2, 3)))  # x = 2 blocks of 3 + 1
    assert blocks(parts) == [(2 * 5 * 2, 3), (2 * 5, 1)]
    assert sum(n * u for n, u in blocks(parts)) == 2 * 5 * 7


def test_a_tile_splits_a_loop_between_the_breakpoints_by_a_divisor():
    extents = {"k_o": 4, "y": 5, "x": 7}
    parts = split_dp_loops(extents, Schedule(("y", "k_o", "x"), (1, 4), (2, 4), (("k_o", 2),)))
    assert unroll_extent(parts) == 2 * 4
    for bad in ((("k_o", 3),), (("x", 1),), (("y", 5),)):  # not a divisor; after, before the breakpoints
        with pytest.raises(ValueError, match="tile"):
            split_dp_loops(extents, Schedule(("y", "k_o", "x"), (1, 4), (2, 4), bad))


def test_register_tiles_fit_the_register_file_and_include_reduction_blocks():
    nest = _nest("conv_table1_3")  # 1x1, 1056 channels: one reduction pass overflows L1
    tiles = register_tiles(nest, TARGET.core, 4)
    assert len(tiles) > 4 and any(t.reduction_block for t in tiles)
    for schedule in tiles:
        U, counts = distinct_registers(nest, schedule)
        assert live_registers(U, counts) <= TARGET.core.vector_registers


def test_reduction_blocks_reload_the_partial_sums_in_the_latency_model():
    nest = _nest("conv_table1_3")
    dp = tuple(l.var for l in nest.dp_loops)
    whole = estimate(nest, Schedule(dp, (1, 1), (1, 1)), TARGET.core)
    tiny = estimate(nest, Schedule(dp, (1, 1), (1, 1), (), 1), TARGET.core)
    assert tiny.cycles > whole.cycles  # 264 passes over the accumulators cost more than they save
