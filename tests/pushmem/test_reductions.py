"""Reductions as Halide writes them: versions of one buffer, the accumulator's carry, tiles, and what is refused."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from solvermap.errors import InputError
from solvermap.formulations import scheduling
from solvermap.formulations.problems.scheduling import Schedule
from solvermap.formulations.solver import SolverConfig
from solvermap.hardware.checks.schedule import check
from solvermap.hardware.pushmem.simulator import simulate
from solvermap.ir import program_file
from solvermap.ir.loopnest import evaluate, random_inputs, statement
from solvermap.mappers.pushmem import mapping_of
from solvermap.mappers.pushmem.configure import configure
from solvermap.mappers.pushmem.dependences import schedule_problem
from solvermap.mappers.pushmem.versions import analyse
from tests.backends import PYOMO, milp_backends
from tests.pushmem.conftest import mapped

PROGRAMS = Path(__file__).parent / "programs"
IN_THE_PE = {"unroll": {"max_taps": 0}}


@pytest.fixture(scope="module")
def downsample():
    """The downsample reduction with its loop kept in the PE: init, update (carry) and the consumer of the sum."""
    ctx, _ = mapped(str(PROGRAMS / "downsample.yaml"), options=IN_THE_PE)
    mapping = mapping_of(ctx)
    return ctx, mapping, random_inputs(mapping.program, 0)


def _hazards(result) -> set[str]:
    return {k for k, v in result.hazards.items() if v}


# ------------------------------------------------------------------ versions


def test_init_and_update_are_two_versions_with_their_own_buffers(downsample):
    ctx, _, _ = downsample
    versions = analyse(ctx.state["program"])
    assert versions.carry["down_update"].producer == "down_init"
    assert versions.reads[("hw_output", 0)].producer == "down_update"
    assert {ub.name for ub in ctx.state["buffers"]} >= {"down~down_init", "down~down_update"}


def test_a_consumer_expecting_the_init_value_is_told_it_got_the_update(downsample):
    _, mapping, inputs = downsample
    config = configure(mapping)
    k = next(i for i, kern in enumerate(config.kernels) if kern.name == "hw_output")
    kern = config.kernels[k]
    stale = dataclasses.replace(kern, operands=(dataclasses.replace(kern.operands[0], version=0),))
    result = simulate(dataclasses.replace(config, kernels=config.kernels[:k] + (stale,) + config.kernels[k + 1:]), inputs)
    assert _hazards(result) == {"operand-mismatch"} and not result.bit_exact
    assert any("(write 2)" in line and "hw_output" in line for line in result.hazard_log)


def test_an_init_one_cycle_late_starves_the_accumulator(downsample):
    _, mapping, inputs = downsample
    s = mapping.schedule
    late = dataclasses.replace(s, delays={**s.delays, "down_init": s.delays["down_init"] + 1})
    result = simulate(configure(dataclasses.replace(mapping, schedule=late)), inputs)
    assert "read-before-write" in _hazards(result) and not result.bit_exact
    assert any("carry" in line for line in result.hazard_log)


def test_the_checker_rejects_an_update_that_starts_before_its_init(downsample):
    ctx, _, _ = downsample
    problem, s = ctx.state["schedule.problem"], ctx.state["schedule"]
    bad = Schedule(s.rates, {**s.delays, "down_init": s.delays["down_init"] + 1}, s.completion)
    violations = [v.message for v in check(problem, bad).violations if v.rule == "dependence"]
    assert any("previous value of down[y, x]" in m and "'down_init'" in m for m in violations)


@pytest.mark.parametrize("backend", milp_backends("cpsat", "highs", "scip", *PYOMO))
def test_schedule_backends_agree_on_a_program_with_an_init_and_an_update(backend, downsample):
    ctx, _, _ = downsample
    problem = ctx.state["schedule.problem"]
    solved = scheduling.solve(problem, SolverConfig(backend=backend, time_limit_s=20))
    assert solved.decision.completion == ctx.state["schedule"].completion
    assert check(problem, solved.decision).ok


# ------------------------------------------------------------------ tiles


def test_weights_loaded_once_outside_the_tile_loop_are_read_by_every_tile():
    ctx, result = mapped(str(PROGRAMS / "tiled_conv.yaml"))
    rates = ctx.state["schedule"].rates
    assert ctx.state["schedule.problem"].pipeline == "dnn"
    assert len(rates["load_weights"]) == 4 and rates["load_input"][0] == ctx.state["schedule"].ii
    assert result.validation["bit_exact"] and not result.validation["hazards"]


def test_the_checker_rejects_an_init_that_overwrites_a_slot_still_being_accumulated():
    ctx, _ = mapped(str(PROGRAMS / "tiled_conv.yaml"))
    problem, s = ctx.state["schedule.problem"], ctx.state["schedule"]
    # the init of tile n+2 at the update's pace of tile n: it rewrites a double-buffer slot before the update reads it
    bad = Schedule({**s.rates, "conv_init": (s.ii // 2,) + tuple(s.rates["conv_init"][1:])}, s.delays, s.completion,
                   s.ii, slots=2)
    assert "buffer-slots" in check(problem, bad).rules()


# ------------------------------------------------------------------ refused programs


def _program(statements: str, buffers: str = "", attrs: str = ""):
    return program_file.loads(f"""\
solvermap-program: 1
name: p
{attrs}
buffers:
  input: {{shape: [8, 8], dtype: int16, role: input}}
  f: {{shape: [4, 4], dtype: int16}}
  output: {{shape: [4, 4], dtype: int16, role: output}}
{buffers}
statements:
{statements}
""", "p.yaml")


INIT = "- {name: init, loops: [{var: y, hi: 4}, {var: x, hi: 4}], write: 'f[y, x]', expr: 0}\n"
OUT = "- {name: out, loops: [{var: y, hi: 4}, {var: x, hi: 4}], write: 'output[y, x]', expr: 'f[y, x]'}\n"
RED = "{var: r, hi: 2, kind: reduction}"


@pytest.mark.parametrize("statements,problem", [
    ("- {name: half, loops: [{var: y, hi: 2}, {var: x, hi: 4}], write: 'f[y, x]', expr: 1}\n" + INIT.replace("hi: 4}, {var: x", "hi: 4}, {var: x") +
     "- {name: up, loops: [{var: y, hi: 2}, {var: x, hi: 4}], write: 'f[y, x]', expr: 2}\n" + OUT,
     "last written by 'init' and 'up'"),
    (INIT + f"- {{name: up, loops: [{{var: y, hi: 4}}, {RED}, {{var: x, hi: 4}}], write: 'f[y, x]', op: +=, expr: 'input[y, x + r]'}}\n" + OUT,
     "reduction loops must be innermost"),
    (INIT + f"- {{name: up, loops: [{{var: y, hi: 2}}, {{var: x, hi: 4}}, {RED}], write: 'f[y + 2*r, x]', op: +=, expr: 'input[y, x]'}}\n" + OUT,
     "moves with a reduction loop"),
    (INIT + "- {name: up, loops: [{var: y, hi: 8}, {var: x, hi: 4}], write: 'f[y/2, x]', op: +=, expr: 'input[y, x]'}\n" + OUT,
     "more than once per point"),
    ("- {name: half, loops: [{var: y, hi: 2}, {var: x, hi: 4}], write: 'f[y, x]', expr: 1}\n"
     f"- {{name: up, loops: [{{var: y, hi: 4}}, {{var: x, hi: 4}}, {RED}], write: 'f[y, x]', op: +=, expr: 'input[y, x + r]'}}\n" + OUT,
     "partly by none"),
    (INIT + "- {name: again, loops: [{var: y, hi: 4}, {var: x, hi: 4}], write: 'f[y, x]', expr: 'f[y, x] + 1'}\n" + OUT,
     "the tensor it writes"),
    ("- {name: early, loops: [{var: y, hi: 4}, {var: x, hi: 4}], write: 'output[y, x]', expr: 'f[y, x]'}\n" + INIT,
     "no earlier statement writes"),
], ids=["read-sees-two-producers", "reduction-loop-not-innermost", "update-writes-along-its-reduction",
        "update-writes-an-element-twice", "accumulates-onto-partly-unwritten", "reads-what-it-writes", "reads-before-any-write"])
def test_a_reduction_the_push_memory_cannot_implement_is_refused_with_its_reason(statements, problem):
    with pytest.raises(InputError, match=problem):
        schedule_problem(_program(statements))


def test_a_statement_outside_the_tile_loop_may_not_read_tiled_data():
    program = program_file.load(PROGRAMS / "tiled_conv.yaml")
    weights, load_input, *rest = program.statements
    from_tile = statement("load_weights", [(l.var, l.lo, l.hi) for l in weights.loops], "w_buf[k, ry, rx, c]",
                          "in_buf[0, ry, rx, c]", dtype="int16")
    with pytest.raises(InputError, match="runs once"):
        schedule_problem(dataclasses.replace(program, statements=[load_input, from_tile, *rest]))


def test_a_tiled_statement_must_write_tile_indexed_data():
    text = (PROGRAMS / "tiled_conv.yaml").read_text()
    program = program_file.loads(text.replace("write: in_buf[n, y, x, c]", "write: in_buf[3 - n, y, x, c]"), "t.yaml")
    with pytest.raises(InputError, match="tile-indexed"):
        schedule_problem(program)


def test_unrolling_keeps_the_value_of_the_program_as_written():
    ctx, result = mapped(str(PROGRAMS / "strided_conv.yaml"))
    written, lowered = ctx.workload.ir, ctx.state["program"]
    inputs = random_inputs(written, 0)
    assert np.array_equal(evaluate(written, inputs)["output"], evaluate(lowered, inputs)["output"])
    assert result.validation["bit_exact"]
