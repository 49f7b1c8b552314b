"""Tensorize (UNIT, seed 002): the loop-mapping problem, its decision and the shared scoring.

The inspector (``mappers/cpu/inspector.py``) runs Algorithm 1 (expression-tree isomorphism with operand
binding, 002:L143-L167) and builds a :class:`TensorizeProblem`; the formulation
(``formulations/tensorize.py``) chooses a :class:`TensorizeMapping` f: B → A of instruction loops onto
program loops; the checker (``hardware/checks/tensorize.py``) re-derives the applicability rules.

Scoring (one integer, lower is better; shared by the formulation, UNIT's greedy baseline and reports):

* **padding** — ``PAD_SCALE · log2(P_a / e_a)`` per mapped program loop a, with ``P_a`` the extent
  padded to a multiple of the instruction extent (002:L87). The product of the ratios is the padded /
  useful MAC ratio, so the sum of logs ranks mappings by padded MACs (rounded to 1/PAD_SCALE bit).
* **operand preparation** — ``GATHER_COST`` for each operand lane dimension that cannot be fed by a
  contiguous vector load or a broadcast of a contiguous group after the layout transformation
  (002:L195-L197, L236, L276): a mapped loop with stride ≠ ±1 or spread over several tensor dims, a
  broadcast inside the innermost lane group, two mapped loops in one tensor dim (``x + s``), or an
  innermost lane loop in a compound dim (``y + r``) when an outer lane loop also varies the address.
* **locality** — the loop's innermost-first rank (UNIT enumerates from the innermost dimension
  outwards for locality, 002:L220), weight 1: a tie-break only.

Assumptions (not in the seed): PAD_SCALE = 1000 per bit; GATHER_COST = 1000, i.e. one gathered
operand dimension is charged like doubling the MACs (a 16-lane gather costs ~8 cycles against a
0.5-cycle vpdpbusd issue, so even amortised over an unrolled block it is at least one extra
instruction-equivalent per instruction).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from solvermap.ir.loopnest import Access, Program, Statement

PAD_SCALE = 1000
GATHER_COST = 1000
RANK_WEIGHT = 1


@dataclass(frozen=True)
class LoopInfo:
    name: str
    extent: int
    kind: str  # data_parallel | reduction
    rank: int = 0  # innermost-first position among the statement's loops (0 = innermost)


@dataclass(frozen=True)
class OperandPair:
    """A register operand v of the instruction bound (Algorithm 1) to an access u of the operation."""

    instr_operand: str
    program_tensor: str
    instr_access: Access
    program_access: Access
    is_accumulator: bool = False

    @property
    def s_instr(self) -> frozenset[str]:
        return access_vars(self.instr_access)

    @property
    def s_program(self) -> frozenset[str]:
        return access_vars(self.program_access)


@dataclass(frozen=True)
class TensorizeProblem:
    workload: str
    instruction: str
    program: Program
    statement: Statement
    instruction_program: Program
    loops: tuple[LoopInfo, ...]  # program loops, nest order (outermost first)
    instruction_loops: tuple[LoopInfo, ...]
    operands: tuple[OperandPair, ...]  # every access pair bound by Algorithm 1, accumulator included
    binding: tuple[tuple[str, str], ...]  # (instruction operand, program tensor or "const:<v>")
    allow_padding: bool = True

    def loop(self, name: str) -> LoopInfo:
        return next(l for l in self.loops if l.name == name)

    def instruction_loop(self, name: str) -> LoopInfo:
        return next(l for l in self.instruction_loops if l.name == name)

    def lane_strides(self, operand: str) -> dict[str, int]:
        """Per instruction loop, its stride along the operand's flattened register lanes."""
        tensor = self.instruction_program.tensor(operand)
        pair = next(p for p in self.operands if p.instr_operand == operand)
        access = pair.instr_access
        flat = [1] * len(tensor.shape)
        for d in range(len(tensor.shape) - 2, -1, -1):
            flat[d] = flat[d + 1] * tensor.shape[d + 1]
        return {var: sum(flat[d] * access.coeffs[d][j] for d in range(access.rank))
                for j, var in enumerate(access.loop_vars)}


@dataclass(frozen=True)
class TensorizeMapping:
    """f: instruction loop → program loop, the padded extents it implies, and Algorithm 1's binding."""

    instruction: str
    loop_map: tuple[tuple[str, str], ...]  # (instruction loop, program loop)
    padded: tuple[tuple[str, int], ...]  # (program loop, padded extent) for every mapped loop
    binding: tuple[tuple[str, str], ...] = ()

    def program_loop(self, instr_loop: str) -> str:
        return dict(self.loop_map)[instr_loop]

    def inverse(self) -> dict[str, str]:
        return {a: b for b, a in self.loop_map}

    def padded_extent(self, program_loop: str) -> int:
        return dict(self.padded)[program_loop]

    def to_json(self) -> dict:
        return {"instruction": self.instruction, "loop_map": dict(self.loop_map), "padded": dict(self.padded),
                "binding": dict(self.binding)}


# ------------------------------------------------------------------ access helpers


def access_vars(access: Access) -> frozenset[str]:
    """S(u): the loop variables with a non-zero coefficient in the index expression (002:L179)."""
    return frozenset(var for j, var in enumerate(access.loop_vars) if any(row[j] for row in access.coeffs))


def dims_of(access: Access, var: str) -> list[int]:
    j = access.loop_vars.index(var)
    return [d for d, row in enumerate(access.coeffs) if row[j]]


def coefficient(access: Access, dim: int, var: str) -> int:
    return access.coeffs[dim][access.loop_vars.index(var)]


def pure_dim(access: Access, dim: int, var: str) -> bool:
    """Dimension ``dim`` is indexed by exactly ``var`` (coefficient 1, no other loop, no offset or divisor)."""
    row = access.coeffs[dim]
    j = access.loop_vars.index(var)
    return row[j] == 1 and all(c == 0 for k, c in enumerate(row) if k != j) \
        and access.offsets[dim] == 0 and access.divisors[dim] == 1


def padding_is_safe(problem: TensorizeProblem, a: str) -> bool:
    """Padding loop a cannot change real results: a reduction loop indexes some source operand through a
    dim of its own (padded iterations multiply by a zero), a data-parallel loop indexes the written array
    through a dim of its own (padded iterations write only padding, cropped afterwards)."""
    kind = problem.loop(a).kind
    for pair in problem.operands:
        if pair.is_accumulator != (kind == "data_parallel"):
            continue
        u = pair.program_access
        if a in pair.s_program and len(dims_of(u, a)) == 1 and pure_dim(u, dims_of(u, a)[0], a):
            return True
    return False


def padded_extent(extent: int, instr_extent: int) -> int:
    return -(-extent // instr_extent) * instr_extent


# ------------------------------------------------------------------ cost tables (shared scoring)


def pad_cost(problem: TensorizeProblem, a: str, b: str) -> int:
    e = problem.loop(a).extent
    p = padded_extent(e, problem.instruction_loop(b).extent)
    return int(round(PAD_SCALE * math.log2(p / e)))


def innermost_lane_loop(problem: TensorizeProblem, operand: str) -> str | None:
    strides = problem.lane_strides(operand)
    inner = [b for b, s in strides.items() if abs(s) == 1]
    return inner[0] if inner else None


def unary_prep_cost(problem: TensorizeProblem, pair: OperandPair, a: str, b: str) -> int:
    """Cost of feeding lane dimension b of operand ``pair`` from program loop a alone."""
    if b not in pair.s_instr:
        return 0
    u = pair.program_access
    if a not in pair.s_program:  # broadcast along b
        return GATHER_COST if b == innermost_lane_loop(problem, pair.instr_operand) else 0
    dims = dims_of(u, a)
    if len(dims) != 1 or abs(coefficient(u, dims[0], a)) != 1:
        return GATHER_COST  # strided or spread over dims: gather / concatenate
    return 0


def pair_prep_cost(problem: TensorizeProblem, pair: OperandPair, a1: str, b1: str, a2: str, b2: str) -> int:
    """Extra cost when a1→b1 and a2→b2 are both chosen (interactions inside one operand's layout)."""
    if b1 == b2 or a1 == a2 or b1 not in pair.s_instr or b2 not in pair.s_instr:
        return 0
    u = pair.program_access
    s_u = pair.s_program
    if a1 not in s_u or a2 not in s_u:
        return 0
    d1, d2 = set(dims_of(u, a1)), set(dims_of(u, a2))
    if d1 & d2:
        return GATHER_COST  # two lane loops in one tensor dimension (x + s): overlapping lanes
    inner = innermost_lane_loop(problem, pair.instr_operand)
    for (ai, bi) in ((a1, b1), (a2, b2)):
        if bi == inner and len(dims_of(u, ai)) == 1 and not pure_dim(u, dims_of(u, ai)[0], ai):
            return GATHER_COST  # compound innermost dim cannot be blocked by the lane extent
    return 0


def objective(problem: TensorizeProblem, decision: TensorizeMapping) -> float:
    """The model's objective evaluated on a decision (padding + operand preparation + locality)."""
    chosen = [(a, b) for b, a in decision.loop_map]
    total = 0
    for a, b in chosen:
        total += pad_cost(problem, a, b) + RANK_WEIGHT * problem.loop(a).rank
        for pair in problem.operands:
            total += unary_prep_cost(problem, pair, a, b)
    for pair in problem.operands:
        for k, (a1, b1) in enumerate(chosen):
            for a2, b2 in chosen[k + 1:]:
                total += pair_prep_cost(problem, pair, a1, b1, a2, b2)
    return float(total)


def useful_macs(problem: TensorizeProblem) -> int:
    return math.prod(l.extent for l in problem.loops)


def padded_macs(problem: TensorizeProblem, decision: TensorizeMapping) -> int:
    padded = dict(decision.padded)
    return math.prod(padded.get(l.name, l.extent) for l in problem.loops)


def extra_macs(problem: TensorizeProblem, decision: TensorizeMapping) -> int:
    """Padding overhead: MACs executed on padded (zero) elements."""
    return padded_macs(problem, decision) - useful_macs(problem)


def mapping_from_pairs(problem: TensorizeProblem, pairs: dict[str, str]) -> TensorizeMapping:
    """A decision from {instruction loop: program loop} (padded extents derived)."""
    loop_map = tuple((b.name, pairs[b.name]) for b in problem.instruction_loops)
    padded = tuple((a, padded_extent(problem.loop(a).extent, problem.instruction_loop(b).extent)) for b, a in loop_map)
    return TensorizeMapping(problem.instruction, loop_map, padded, problem.binding)
