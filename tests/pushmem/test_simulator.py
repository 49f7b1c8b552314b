"""The cycle simulator against broken designs, and its clock against the schedule's claim."""

import dataclasses
import math

import numpy as np
import pytest

from solvermap.formulations import wide_fetch
from solvermap.formulations.problems.banking import BankFunction, Banking
from solvermap.formulations.solver import SolverConfig
from solvermap.hardware.pushmem.simulator import SimulationResult, simulate
from solvermap.ir.loopnest import random_inputs
from solvermap.mappers.pushmem import PIPELINE, mapping_of
from solvermap.mappers.pushmem.configure import configure
from solvermap.mappers.pushmem.fetch_adapter import no_shift, wide_fetch_problem
from solvermap.mappers.pushmem.physical import memtile_problem, minimise_storage, one_per_tile, physical_buffers
from tests.pushmem.conftest import mapped

RESNET = {"size": 8, "channels": 4, "filters": 2, "tile": 4}


@pytest.fixture(scope="module")
def gaussian():
    ctx, _ = mapped("gaussian", {"size": 24})
    mapping = mapping_of(ctx)
    return ctx, mapping, random_inputs(mapping.program, 0)


@pytest.fixture(scope="module")
def resnet():
    ctx, _ = mapped("resnet", RESNET)
    mapping = mapping_of(ctx)
    return ctx, mapping, random_inputs(mapping.program, 0)


def _hazards(result: SimulationResult) -> set[str]:
    return {k for k, v in result.hazards.items() if v}


def _with_banking(ctx, banking: Banking):
    """The mapping with physical buffers, tiles (one fragment each) and wide-fetch shifts rebuilt for ``banking``."""
    spec = ctx.target
    physical = physical_buffers(ctx.state["memories"], banking, spec.fetch_width)
    minimise_storage(physical)
    problem = memtile_problem(physical, spec)
    tile_of = dict(one_per_tile(problem).assignment)
    fetch_problem = wide_fetch_problem(physical, tile_of, spec)
    solved = wide_fetch.solve(fetch_problem, SolverConfig(backend="cpsat", time_limit_s=10))
    shifts = (solved.decision or no_shift(fetch_problem)).shifts
    return dataclasses.replace(mapping_of(ctx), physical=physical, tile_of_fragment=tile_of,
                               row_base={f: 0 for f in tile_of}, shifts=dict(shifts))


def _in_buf_on(ctx, copies: int) -> Banking:
    banking = ctx.state["bank"]
    fn = banking.functions["in_buf"]
    return Banking({**banking.functions, "in_buf": BankFunction(fn.modulus, fn.alpha, copies,
                                                                {p: (p - 1) % copies for p in fn.port_copy})})


# ------------------------------------------------------------------ broken designs


def test_the_mapped_design_runs_without_hazards(gaussian):
    _, mapping, inputs = gaussian
    result = simulate(configure(mapping), inputs)
    assert result.bit_exact and not _hazards(result)


def test_a_statement_started_one_cycle_early_reads_before_the_write(gaussian):
    _, mapping, inputs = gaussian
    s = mapping.schedule
    early = dataclasses.replace(s, delays={**s.delays, "blur": s.delays["blur"] - 1})
    result = simulate(configure(dataclasses.replace(mapping, schedule=early)), inputs)
    assert "read-before-write" in _hazards(result) and not result.bit_exact


def test_a_shift_register_one_stage_short_delivers_the_wrong_operand(gaussian):
    _, mapping, inputs = gaussian
    config = configure(mapping)
    i, tap = next((i, t) for i, t in enumerate(config.taps) if t.kind == "sr")
    taps = list(config.taps)
    taps[i] = dataclasses.replace(tap, delay=tap.delay - 1)
    result = simulate(dataclasses.replace(config, taps=tuple(taps)), inputs)
    assert "operand-mismatch" in _hazards(result) and not result.bit_exact


def test_a_circular_buffer_one_word_below_the_live_words_overwrites_live_data(gaussian):
    _, mapping, inputs = gaussian
    config = configure(mapping)
    peak = simulate(config, inputs).peak_words
    mem = config.memories[0]
    short = dataclasses.replace(mem, modulus=(peak[mem.name] - 1) // mem.fetch_width)
    result = simulate(dataclasses.replace(config, memories=(short, *config.memories[1:])), inputs)
    assert "overwrite-live" in _hazards(result) and not result.bit_exact


@pytest.mark.parametrize("limit,peak,hazard", [("agg_words", "agg_peak", "agg-overflow"), ("tb_words", "tb_peak", "tb-overflow")],
                         ids=["aggregator", "transpose-buffer"])
def test_a_register_file_one_word_short_overflows(gaussian, limit, peak, hazard):
    _, mapping, inputs = gaussian
    config = configure(mapping)
    words = getattr(simulate(config, inputs), peak)
    result = simulate(dataclasses.replace(config, limits=dataclasses.replace(config.limits, **{limit: words - 1})), inputs)
    assert _hazards(result) == {hazard}


def test_unshifted_wide_fetch_collides_on_the_single_sram_port(gaussian):
    _, mapping, inputs = gaussian
    assert any(mapping.shifts.values())  # the wide-fetch step had to move an SRAM access
    result = simulate(configure(dataclasses.replace(mapping, shifts={})), inputs)
    assert "sram-port-conflict" in _hazards(result)


def test_the_design_rebuilt_with_the_solvers_banking_has_no_hazards(resnet):
    ctx, _, inputs = resnet
    result = simulate(configure(_with_banking(ctx, ctx.state["bank"])), inputs)
    assert result.bit_exact and not _hazards(result)


def test_one_bank_fewer_puts_more_transpose_buffers_on_a_tile_than_it_has_ports(resnet):
    ctx, _, inputs = resnet
    copies = ctx.state["bank"].functions["in_buf"].copies
    result = simulate(configure(_with_banking(ctx, _in_buf_on(ctx, copies - 1))), inputs)
    assert "tile-ports" in _hazards(result)


def test_two_banks_for_nine_window_reads_exceed_the_tile_bandwidth(resnet):
    ctx, _, inputs = resnet
    result = simulate(configure(_with_banking(ctx, _in_buf_on(ctx, 2))), inputs)
    assert "tile-bandwidth" in _hazards(result)


# ------------------------------------------------------------------ the simulator's clock


def _check_stalls_on_late_tiles(simulator, mapping, inputs) -> None:
    """With DRAM far slower than the array, tile k reaches the global buffer at k·⌈W/B⌉ (tile 0 is there at
    reset, 001:L138) and the whole array stalls at each tile's first read (001:L301), so it finishes
    ⌈W/B⌉·(T−1) + (completion − first read of the last tile) cycles after reset. A simulator that reports
    the schedule's completion cannot pass."""
    rate = 0.01
    spec = mapping.spec.model_copy(update={"dram_words_per_cycle": rate})
    slow = dataclasses.replace(mapping, spec=spec)
    program, schedule = mapping.program, mapping.schedule
    tiles, words = program.tensor("input").shape[0], int(np.prod(program.tensor("input").shape[1:]))
    load = next(s for s in program.statements if s.name == "load_input")
    last_tile_first_read = schedule.delays[load.name] + schedule.rates[load.name][0] * (tiles - 1)
    expected = (tiles - 1) * math.ceil(words / rate) + schedule.completion - last_tile_first_read
    result = simulator(configure(slow), inputs)
    assert result.cycles == expected
    assert result.stall_cycles == expected - schedule.completion
    assert result.bit_exact and not _hazards(result)


def test_late_global_buffer_tiles_stall_the_whole_array(resnet):
    _, mapping, inputs = resnet
    _check_stalls_on_late_tiles(simulate, mapping, inputs)


def test_a_simulator_that_echoes_the_schedule_fails_the_stall_check(resnet):
    _, mapping, inputs = resnet

    def echo(config, inputs):
        done = max(int(k.issue.max()) + k.latency for k in config.kernels)
        return SimulationResult(done, done, 0, True, 0, {}, {}, 0, 0)

    with pytest.raises(AssertionError):
        _check_stalls_on_late_tiles(echo, mapping, inputs)


def test_simulated_cycles_ignore_the_completion_the_schedule_claims(resnet):
    ctx, _, _ = resnet
    honest = PIPELINE.validate(ctx)
    schedule = ctx.state["schedule"]
    ctx.state["schedule"] = dataclasses.replace(schedule, completion=schedule.completion - 100)
    try:
        claimed = PIPELINE.validate(ctx)
    finally:
        ctx.state["schedule"] = schedule
    assert claimed["simulated_cycles"] == honest["simulated_cycles"] == schedule.completion
    assert claimed["predicted_cycles"] == schedule.completion - 100 and claimed["cycles_rel_diff"] > 0
