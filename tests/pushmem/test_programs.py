"""Programs written in the program-file format, as Halide writes them (init + update reductions), mapped end to end.

Each is bit-exact against the golden model of the file, runs no more simulated cycles than the same
program under the sequential baseline schedule (simulated too), and passes every checker.
"""

from pathlib import Path

import pytest

from tests.pushmem.conftest import mapped, mapped_sequentially

PROGRAMS = Path(__file__).parent / "programs"
NOT_UNROLLED = {"unroll": {"max_taps": 0}}
CASES = [("blur5x5", None), ("downsample", None), ("strided_conv", None), ("pointwise_chain", None),
         ("tiled_conv", None), ("downsample", NOT_UNROLLED)]
IDS = ["blur5x5", "downsample", "strided_conv", "pointwise_chain", "tiled_conv", "downsample-reduction-loop-in-the-pe"]


def _clean(validation: dict) -> bool:
    return (validation["bit_exact"] and validation["mismatches"] == 0 and not validation["hazards"]
            and validation["storage_check_ok"])


@pytest.fixture(scope="module", params=CASES, ids=IDS)
def case(request):
    name, options = request.param
    path = str(PROGRAMS / f"{name}.yaml")
    ctx, result = mapped(path, options=options)
    seq_ctx, seq_records, seq_validation = mapped_sequentially(path, options=options)
    return ctx, result, seq_records, seq_validation


def test_program_is_bit_exact_without_hazards(case):
    _, result, _, _ = case
    assert _clean(result.validation)
    assert result.validation["cycles"] == result.validation["predicted_cycles"]


def test_program_passes_every_checker(case):
    _, result, seq_records, seq_validation = case
    assert all(r.check.ok and r.solution_source == "solver" for r in result.records)
    assert all(r.check.ok for r in seq_records) and _clean(seq_validation)


def test_program_is_never_slower_than_the_sequential_schedule(case):
    _, result, _, seq_validation = case
    assert result.validation["simulated_cycles"] <= seq_validation["simulated_cycles"]


def test_an_unrolled_reduction_streams_one_pixel_per_cycle():
    ctx, result = mapped(str(PROGRAMS / "blur5x5.yaml"))
    update = next(s for s in ctx.state["program"].statements if s.name == "blur_update")
    assert update.attrs["unrolled"] == ["ry", "rx"] and ctx.state["schedule"].rates["blur_update"] == (16, 1)
    assert result.validation["cycles"] < 2 * 16 * 16  # the 256-pixel input streams in once, plus the fill


def test_a_reduction_loop_left_in_the_pe_takes_one_step_per_cycle():
    ctx, _ = mapped(str(PROGRAMS / "downsample.yaml"), options=NOT_UNROLLED)
    assert ctx.state["schedule"].rates["down_update"][-2:] == (2, 1)  # rx innermost, then ry: 4 steps per output
