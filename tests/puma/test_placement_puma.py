"""PUMA tile placement: the solver beats the PUMA compiler's baselines; checkers reject every broken rule."""

from __future__ import annotations

import dataclasses

import pytest

from solvermap.formulations.solver import SolverConfig
from solvermap.hardware.checks.puma_communication import check as check_comm
from solvermap.hardware.checks.puma_placement import check
from solvermap.hardware.puma.placement_problem import make_problem, objective
from solvermap.hardware.puma.program import Communication, PumaPlacement, Slot
from solvermap.mappers.puma import hierarchical_placement
from solvermap.mappers.puma.baselines import BASELINES
from solvermap.mappers.puma.communication import insert


@pytest.fixture(scope="module")
def lenet_problem(puma):
    from .conftest import prepared

    return make_problem(prepared("lenet", puma, calibrate=False)[2], puma)


def test_min_cut_above_its_part_limit_is_recorded_unavailable_with_the_reason(lenet_problem, puma, monkeypatch):
    from solvermap.mappers.decisions import PUMA_PLACE
    from solvermap.mappers.pipeline import Context, run_baselines
    from solvermap.mappers.puma import baselines

    monkeypatch.setattr(baselines, "MIN_CUT_MAX_PARTS", 1)
    ctx = Context(workload=None, target=puma, solver=SolverConfig(time_limit_s=5))
    results = {r.name: r for r in run_baselines(ctx, PUMA_PLACE, lenet_problem, PUMA_PLACE.options())}
    assert results["min_cut"].objective is None
    assert "KaHIP (no work limit) is run up to 1 parts" in results["min_cut"].to_json()["unavailable"]
    assert results["row_major"].objective is not None and "unavailable" not in results["row_major"].to_json()


def test_every_baseline_passes_the_checker(lenet_problem):
    for name, fn in BASELINES.items():
        decision = fn(lenet_problem)
        assert check(lenet_problem, decision).ok, name


@pytest.mark.parametrize("backend", ["cpsat", "highs"])
def test_solver_moves_fewer_hop_weighted_bytes_than_every_baseline(lenet_problem, backend):
    scores = {name: objective(lenet_problem, fn(lenet_problem)) for name, fn in BASELINES.items()}
    best = min(scores, key=scores.get)
    solved = hierarchical_placement.solve(lenet_problem, SolverConfig(backend=backend, time_limit_s=8), BASELINES[best](lenet_problem))
    assert check(lenet_problem, solved.decision).ok
    assert objective(lenet_problem, solved.decision) < min(scores.values())
    assert solved.result.bound <= solved.result.objective + 1e-9


def test_joint_variant_is_valid_and_no_worse_than_its_hint(lenet_problem):
    hint = BASELINES["row_major"](lenet_problem)
    problem = dataclasses.replace(lenet_problem, variant="joint")
    solved = hierarchical_placement.solve(problem, SolverConfig(backend="cpsat", time_limit_s=8), hint)
    assert check(problem, solved.decision).ok
    assert objective(problem, solved.decision) <= objective(problem, hint)


def test_too_many_blocks_for_the_node_is_diagnosed_by_group(small_models, puma_small):
    tiny = puma_small.model_copy(update={"noc": puma_small.noc.model_copy(update={"router_rows": 1, "router_cols": 2, "concentration": 2})})
    problem = make_problem(small_models["vgg"][2], tiny)
    reason = hierarchical_placement.diagnose(problem)
    assert reason is not None and "capacity" in reason


# --------------------------------------------------------------------------- placement checker mutations


def mutate(decision: PumaPlacement, name: str, **changes) -> PumaPlacement:
    slots = dict(decision.slots)
    slots[name] = dataclasses.replace(slots[name], **changes)
    return PumaPlacement(slots)


@pytest.fixture(scope="module")
def valid(lenet_problem):
    return lenet_problem, BASELINES["row_major"](lenet_problem)


def test_checker_rejects_an_unplaced_block(valid):
    problem, decision = valid
    slots = dict(decision.slots)
    slots.pop(next(iter(slots)))
    assert check(problem, PumaPlacement(slots)).rules() == {"block-placed"}


def test_checker_rejects_an_unknown_block(valid):
    problem, decision = valid
    assert check(problem, PumaPlacement({**decision.slots, "ghost": Slot(5, 0, 0)})).rules() >= {"unknown-block"}


def test_checker_rejects_a_block_on_an_io_tile(valid):
    problem, decision = valid
    name = next(iter(decision.slots))
    assert "tile-position" in check(problem, mutate(decision, name, tile=0)).rules()


def test_checker_rejects_a_core_index_out_of_range(valid):
    problem, decision = valid
    name = next(iter(decision.slots))
    assert "core-range" in check(problem, mutate(decision, name, core=problem.spec.tile.cores)).rules()


def test_checker_rejects_an_mvmu_index_out_of_range(valid):
    problem, decision = valid
    name = next(iter(decision.slots))
    assert "mvmu-range" in check(problem, mutate(decision, name, mvmu=problem.spec.core.mvmus)).rules()


def test_checker_rejects_two_blocks_on_one_mvmu(valid):
    problem, decision = valid
    a, b = list(decision.slots)[:2]
    assert "slot-unique" in check(problem, mutate(decision, b, **dataclasses.asdict(decision.slots[a]))).rules()


def test_checker_rejects_an_over_full_core_and_tile(valid):
    problem, decision = valid
    names = list(decision.slots)
    first = decision.slots[names[0]]
    slots = {n: Slot(first.tile, first.core, k) for k, n in enumerate(names)}
    rules = check(problem, PumaPlacement(slots)).rules()
    assert {"core-capacity", "tile-capacity"} <= rules


# --------------------------------------------------------------------------- communication checker mutations


@pytest.fixture(scope="module")
def communication(valid):
    problem, decision = valid
    comm = insert(problem, decision)
    assert check_comm(problem, decision, comm).ok
    return problem, decision, comm


@pytest.mark.parametrize("op", ["store", "load", "send", "receive"])
def test_communication_checker_rejects_a_missing_operation(communication, op):
    problem, decision, comm = communication
    victim = next(t for t in comm.transfers if t.op == op)
    broken = Communication([t for t in comm.transfers if t is not victim])
    assert f"{op}-missing" in check_comm(problem, decision, broken).rules()


def test_communication_checker_rejects_a_duplicate(communication):
    problem, decision, comm = communication
    assert "duplicate" in check_comm(problem, decision, Communication(comm.transfers + comm.transfers[:1])).rules()


def test_communication_checker_rejects_a_spurious_load(communication):
    problem, decision, comm = communication
    load = next(t for t in comm.transfers if t.op == "load")
    extra = dataclasses.replace(load, core=(load.core + 1) % problem.spec.tile.cores, tile=load.tile)
    broken = Communication([t for t in comm.transfers] + [dataclasses.replace(extra, value="not-a-value")])
    assert "spurious" in check_comm(problem, decision, broken).rules()


def test_communication_checker_rejects_wrong_bytes_and_hops(communication):
    problem, decision, comm = communication
    send = next(t for t in comm.transfers if t.op == "send")
    broken = Communication([dataclasses.replace(t, bytes=t.bytes + 2, hops=t.hops + 1) if t is send else t for t in comm.transfers])
    assert {"bytes", "hops"} <= check_comm(problem, decision, broken).rules()


def test_dedup_inserts_one_send_per_destination_tile(communication):
    problem, decision, comm = communication
    sends = [(t.value, t.peer_tile) for t in comm.transfers if t.op == "send"]
    assert len(sends) == len(set(sends))


def test_checker_rejects_a_placement_on_more_tiles_than_the_budget(valid):
    problem, decision = valid
    name = next(iter(decision.slots))
    spare = next(p for p in problem.compute_positions if p not in {s.tile for s in decision.slots.values()})
    assert check(problem, mutate(decision, name, tile=spare, core=0, mvmu=0)).rules() == {"tile-budget"}
