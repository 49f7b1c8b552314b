import itertools
import math

import numpy as np
import pytest

from solvermap.formulations import banking, shift_registers, wide_fetch
from solvermap.formulations.problems.banking import BankAccess, BankFunction, Banking, BankingProblem, MemoryBanking
from solvermap.formulations.problems.shift_registers import Edge, ShiftRegisterPlan, counts
from solvermap.formulations.problems.wide_fetch import WideFetch
from solvermap.formulations.solver import SolverConfig
from solvermap.hardware.checks import banking as bank_check
from solvermap.hardware.checks import shift_registers as sr_check
from solvermap.hardware.checks import storage as storage_check
from solvermap.hardware.checks import wide_fetch as fetch_check
from solvermap.mappers.pushmem.banking_adapter import cyclic, embarrassing
from tests.backends import PYOMO, milp_backends


def _window_memory(port_limit=4):
    """A 3x3 window (9 reads) plus one write per cycle on an 8x8 image: the seed's 9R+1W case (001:L248)."""
    times, elements, port, is_write = [], [], [], []
    for t, (y, x) in enumerate(itertools.product(range(6), range(6))):
        for k, (ry, rx) in enumerate(itertools.product(range(3), range(3))):
            times.append(t); elements.append((y + ry) * 8 + x + rx); port.append(k + 1); is_write.append(False)
        times.append(t); elements.append(min(63, (y + 2) * 8 + x + 2)); port.append(0); is_write.append(True)
    times, elements, port, is_write = map(np.array, (times, elements, port, is_write))
    groups = set()
    for t in np.unique(times):
        sel = times == t
        rows = np.stack(np.unravel_index(elements[sel], (8, 8)), axis=1)
        base = rows.min(axis=0)
        groups.add(tuple(sorted((BankAccess(int(p), bool(w), tuple(int(v) for v in r - base))
                                 for p, w, r in zip(port[sel], is_write[sel], rows)), key=lambda a: (a.port, a.offset))))
    return MemoryBanking("win", (8, 8), tuple(f"p{i}" for i in range(10)), tuple(sorted(groups, key=str)), port_limit, 12,
                         1, None, times, elements, port, is_write)


def _brute_min_banks(mem):
    for n in range(1, 8):
        for alpha in itertools.product(range(n), repeat=2):
            if n > 1 and math.gcd(alpha[1], n) != 1:
                continue
            fn = BankFunction(n, alpha, 1, {p: 0 for p in mem.read_ports})
            if bank_check.check(BankingProblem((mem,)), Banking({"win": fn})).ok:
                return n
    return None


@pytest.mark.parametrize("backend", milp_backends("cpsat", "highs", "scip", *PYOMO))
def test_banking_backends_reach_the_enumerated_minimum(backend):
    mem = _window_memory()
    solved = banking.solve(BankingProblem((mem,)), SolverConfig(backend=backend, time_limit_s=20))
    assert solved.decision.functions["win"].banks == _brute_min_banks(mem) == 3
    assert bank_check.check(BankingProblem((mem,)), solved.decision).ok


def test_banking_baselines_are_valid_and_not_better():
    problem = BankingProblem((_window_memory(),))
    for base in (cyclic(problem), embarrassing(problem)):
        assert bank_check.check(problem, base).ok
        assert base.functions["win"].banks >= 3


def test_bank_checker_rejects_a_bank_over_its_port_limit():
    problem = BankingProblem((_window_memory(),))
    bad = Banking({"win": BankFunction(1, (0, 0), 1, {p: 0 for p in range(1, 10)})})
    assert "bank-port-limit" in bank_check.check(problem, bad).rules()


def test_bank_checker_rejects_a_non_unit_inner_coefficient():
    problem = BankingProblem((_window_memory(),))
    bad = Banking({"win": BankFunction(4, (1, 2), 1, {p: 0 for p in range(1, 10)})})
    assert "bank-address" in bank_check.check(problem, bad).rules()


def test_shift_registers_reproduce_the_seed_example(gaussian16):
    # brighten/blur at 64 wide: 2 SRs and one 64-cycle memory (001:L256, Fig. 8a)
    from tests.pushmem.conftest import mapped

    ctx, _ = mapped("brighten_blur", {"size": 64})
    plan = ctx.state["shift_registers"]
    edges = plan.edges["brighten"]
    assert counts(plan)["sr_edges"] == 2 and sorted(e.kind for e in edges.values()) == ["mem", "sr", "sr", "wire"]
    # the memory delays 63 cycles from the 1-stage SR tap (one word less than the seed's 64 from the input)
    assert [e.delay for e in edges.values() if e.kind == "mem"] in ([63], [64])


@pytest.mark.parametrize("backend", milp_backends("cpsat", "highs", "scip", *PYOMO))
def test_shift_register_backends_agree(backend, gaussian16):
    ctx, _ = gaussian16
    problem = ctx.state["shift_registers.problem"]
    from solvermap.formulations.problems.shift_registers import objective

    reference = objective(problem, ctx.state["shift_registers"])
    solved = shift_registers.solve(problem, SolverConfig(backend=backend, time_limit_s=20))
    assert objective(problem, solved.decision) == pytest.approx(reference)


def test_sr_checker_rejects_a_tap_at_the_wrong_distance(gaussian16):
    ctx, _ = gaussian16
    problem, plan = ctx.state["shift_registers.problem"], ctx.state["shift_registers"]
    buf, ports = next((b, p) for b, p in plan.edges.items() if any(e.kind == "sr" for e in p.values()))
    port, edge = next((k, e) for k, e in ports.items() if e.kind == "sr")
    bad = ShiftRegisterPlan({**plan.edges, buf: {**ports, port: Edge(edge.source, "sr", edge.delay + 1)}})
    assert "tap-distance" in sr_check.check(problem, bad).rules()


def test_storage_checker_rejects_two_live_words_at_one_address(gaussian16):
    ctx, _ = gaussian16
    physical, moduli = ctx.state["physical"], ctx.state["moduli"]
    assert storage_check.check(physical, moduli).ok
    bad = {k: max(1, v - 2) for k, v in moduli.items()}
    assert "address-collision" in storage_check.check(physical, bad).rules()


@pytest.mark.parametrize("backend", milp_backends("cpsat", "highs", *PYOMO))
def test_wide_fetch_backends_agree(backend, gaussian16):
    ctx, _ = gaussian16
    problem = ctx.state["wide_fetch.problem"]
    from solvermap.formulations.problems.wide_fetch import objective

    ref = objective(problem, ctx.state["wide_fetch"])
    solved = wide_fetch.solve(problem, SolverConfig(backend=backend, time_limit_s=20))
    assert objective(problem, solved.decision) == ref
    assert fetch_check.check(problem, solved.decision).ok


def test_wide_fetch_checker_rejects_two_sram_accesses_in_a_cycle(gaussian16):
    ctx, _ = gaussian16
    problem = ctx.state["wide_fetch.problem"]
    streams = [s for s in problem.streams]
    a, b = streams[0], streams[1]
    # shift b so that its first event lands on a's first event
    tile = next(iter(set(a.events) & set(b.events)))
    delta = int(a.events[tile][0] - b.events[tile][0])
    shifts = {s.name: 0 for s in streams}
    shifts[b.name] = -delta if not b.write else delta
    report = fetch_check.check(problem, WideFetch(shifts))
    assert "sram-port-conflict" in report.rules()
