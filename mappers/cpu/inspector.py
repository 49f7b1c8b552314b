"""UNIT's Inspector (002:L137-L185, L218-L220): is an instruction applicable to an operation, and how?

Step 1, compute isomorphism — Algorithm 1 (002:L143-L165), quoted::

    function Inspect(a, b)        # a: instruction expression tree, b: operation expression tree
      if a.type = b.type then
        if isleaf(a) ∧ isleaf(b) then
          if a is not bound then bind[a] := b
          else if bind[a] ≠ b then return False
          return True
        else if isarith(a), isarith(b) then
          return a.opcode = b.opcode ∧ Inspect(a.lhs, b.lhs) ∧ Inspect(a.rhs, b.rhs)
      return False

Node types on our IR: a load has its tensor's dtype, a cast its target dtype, an operator and a
constant the dtype they are computed in (the statement's, or the enclosing cast's). Leaves are loads
and constants; a cast is a unary arithmetic node with opcode ``cast``. ``bind`` maps each register
operand of the instruction to exactly one array or constant of the operation (002:L167). The
accumulator register binds to the written array, and the instruction's ``+=`` requires the operation to
be a reduction into that array (the horizontal accumulation, 002:L71, L133).

Extension (documented, off by default): ``commutative=True`` also tries the swapped operands of ``add``
and ``mul`` when the written order fails (Algorithm 1 as printed matches lhs with lhs only).

Step 2, array-access isomorphism (002:L171-L185) is the loop-mapping model of
``formulations/tensorize.py``; this module builds its :class:`TensorizeProblem` and returns an
explicit not-applicable :class:`Applicability` with a stable rule name and reason when:

* ``dtype-mismatch`` — Algorithm 1 fails on a node type (e.g. int8 data for vpdpbusd's uint8 ``a``);
* ``compute-mismatch`` — an opcode or tree shape differs, or a register would bind two sources;
* ``reduction-structure`` — the instruction accumulates but the operation does not, or the
  operation lacks a loop of an annotation the instruction needs;
* ``no-access-mapping`` — no mapping satisfies S'(u) ⊆ S(v) for every bound access pair;
* ``indivisible-extent`` — mappings exist only with padding and padding is disabled.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from solvermap.errors import InputError
from solvermap.formulations import tensorize as tensorize_model
from solvermap.formulations.problems.tensorize import LoopInfo, OperandPair, TensorizeProblem
from solvermap.hardware.cpu.instructions import InstructionDescriptor
from solvermap.ir.loopnest import Access, Cast, Const, Load, Program, Statement


@dataclass
class Applicability:
    """The inspector's answer: applicable with a problem, or not applicable with a rule and a reason."""

    applicable: bool
    rule: str = ""
    reason: str = ""
    problem: TensorizeProblem | None = None
    binding: dict[str, str] = field(default_factory=dict)

    def raise_if_not(self, source: str = "") -> TensorizeProblem:
        if not self.applicable:
            raise InputError(source, "instruction", f"not applicable ({self.rule}): {self.reason}")
        assert self.problem is not None
        return self.problem


class _Mismatch(Exception):
    def __init__(self, rule: str, reason: str) -> None:
        super().__init__(reason)
        self.rule, self.reason = rule, reason


@dataclass
class _Matcher:
    """Algorithm 1 with its ``bind`` table (plus the access pairs it meets, for step 2)."""

    instr: Program
    prog: Program
    commutative: bool = False
    bind: dict[str, Any] = field(default_factory=dict)
    pairs: list[tuple[Access, Any]] = field(default_factory=list)

    def node_type(self, node: Any, program: Program, context: str) -> str:
        if isinstance(node, Load):
            return program.tensor(node.access.tensor).dtype
        if isinstance(node, Cast):
            return node.dtype
        return context

    def describe(self, node: Any) -> str:
        if isinstance(node, Load):
            return f"load {node.access.text()}"
        if isinstance(node, Const):
            return f"constant {node.value}"
        if isinstance(node, Cast):
            return f"cast to {node.dtype}"
        return f"operator {node.op}"

    def inspect(self, a: Any, b: Any, a_ctx: str, b_ctx: str) -> None:
        ta, tb = self.node_type(a, self.instr, a_ctx), self.node_type(b, self.prog, b_ctx)
        if ta != tb:
            raise _Mismatch("dtype-mismatch", f"instruction {self.describe(a)} is {ta} but operation "
                                              f"{self.describe(b)} is {tb}")
        a_leaf, b_leaf = isinstance(a, (Load, Const)), isinstance(b, (Load, Const))
        if a_leaf and b_leaf:
            self._bind(a, b)
            return
        if a_leaf or b_leaf:
            raise _Mismatch("compute-mismatch", f"instruction {self.describe(a)} faces operation {self.describe(b)}")
        if isinstance(a, Cast) or isinstance(b, Cast):
            if not (isinstance(a, Cast) and isinstance(b, Cast)):
                raise _Mismatch("compute-mismatch", f"instruction {self.describe(a)} faces operation {self.describe(b)}")
            self.inspect(a.arg, b.arg, a.dtype, b.dtype)
            return
        if a.op != b.op or len(a.args) != len(b.args):
            raise _Mismatch("compute-mismatch", f"instruction opcode {a.op} faces operation opcode {b.op}")
        try:
            saved = (dict(self.bind), list(self.pairs))
            for x, y in zip(a.args, b.args):
                self.inspect(x, y, ta, tb)
        except _Mismatch:
            if not (self.commutative and a.op in ("add", "mul") and len(a.args) == 2):
                raise
            self.bind, self.pairs = saved[0], saved[1]
            for x, y in zip(a.args, reversed(b.args)):
                self.inspect(x, y, ta, tb)

    def _bind(self, a: Any, b: Any) -> None:
        key = a.access.tensor if isinstance(a, Load) else f"const:{a.value}"
        value = b.access.tensor if isinstance(b, Load) else f"const:{b.value}"
        if isinstance(a, Const) and value != key:
            raise _Mismatch("compute-mismatch", f"instruction constant {a.value} faces {self.describe(b)}")
        if key in self.bind and self.bind[key] != value:
            raise _Mismatch("compute-mismatch", f"register {key} would hold both {self.bind[key]} and {value} "
                                                "(one register, one data source: 002:L167)")
        self.bind[key] = value
        if isinstance(a, Load) and isinstance(b, Load):
            self.pairs.append((a.access, b.access))


def _loops(stmt: Statement) -> tuple[LoopInfo, ...]:
    n = len(stmt.loops)
    return tuple(LoopInfo(l.var, l.extent, l.kind, rank=n - 1 - k) for k, l in enumerate(stmt.loops))


def inspect(program: Program, instruction: InstructionDescriptor, *, allow_padding: bool = True,
            statement: str | None = None, commutative: bool = False, workload: str = "") -> Applicability:
    """Run both inspector steps; never raises for a non-applicable case (see :class:`Applicability`)."""
    stmts = [s for s in program.statements if statement is None or s.name == statement]
    if not stmts:
        raise InputError(program.source, "statement", f"no statement named {statement!r}")
    if len(stmts) > 1:
        raise InputError(program.source, "statement", "the program has several statements; name the one to tensorize")
    stmt = stmts[0]
    istmt = instruction.statement
    # The instruction's += : the operation must be a reduction into its written array.
    if istmt.accumulate and not stmt.accumulate:
        return Applicability(False, "reduction-structure",
                             f"{instruction.name} accumulates (+=) but statement '{stmt.name}' assigns (no reduction)")
    for kind in ("data_parallel", "reduction"):
        need = sum(1 for l in istmt.loops if l.kind == kind)
        have = sum(1 for l in stmt.loops if l.kind == kind)
        if have < need:
            return Applicability(False, "reduction-structure",
                                 f"{instruction.name} needs {need} {kind} loop(s); statement '{stmt.name}' has {have}")
    written = set(v for v in stmt.write.loop_vars if any(row[stmt.write.loop_vars.index(v)] for row in stmt.write.coeffs))
    bad = [l.var for l in stmt.loops if l.kind == "reduction" and l.var in written]
    if bad:
        return Applicability(False, "reduction-structure",
                             f"reduction loop(s) {bad} index the written array {stmt.write.text()}")
    bad = [l.var for l in stmt.loops if l.kind == "data_parallel" and l.var not in written]
    if bad:
        return Applicability(False, "reduction-structure",
                             f"data-parallel loop(s) {bad} do not index the written array {stmt.write.text()} "
                             "(they are reductions)")
    # Step 1: Algorithm 1 over the expression trees and the written (accumulator) operand.
    matcher = _Matcher(instruction.program, program, commutative=commutative)
    try:
        acc_t, out_t = instruction.program.tensor(istmt.write.tensor), program.tensor(stmt.write.tensor)
        if acc_t.dtype != out_t.dtype or istmt.dtype != stmt.dtype:
            raise _Mismatch("dtype-mismatch", f"instruction accumulator {istmt.write.tensor} is {acc_t.dtype} "
                                              f"but operation writes {stmt.write.tensor} as {out_t.dtype}")
        matcher.inspect(istmt.expr, stmt.expr, istmt.dtype, stmt.dtype)
    except _Mismatch as exc:
        return Applicability(False, exc.rule, exc.reason)
    binding = {istmt.write.tensor: stmt.write.tensor, **matcher.bind}
    operands = [OperandPair(istmt.write.tensor, stmt.write.tensor, istmt.write, stmt.write, is_accumulator=True)]
    seen = set()
    for ia, pa in matcher.pairs:
        key = (ia.tensor, pa.text())
        if key not in seen:
            seen.add(key)
            operands.append(OperandPair(ia.tensor, pa.tensor, ia, pa))
    problem = TensorizeProblem(
        workload=workload or program.name, instruction=instruction.name, program=program, statement=stmt,
        instruction_program=instruction.program, loops=_loops(stmt), instruction_loops=_loops(istmt),
        operands=tuple(operands), binding=tuple(sorted(binding.items())), allow_padding=allow_padding,
    )
    # Step 2 feasibility (which rule empties the mapping set), from the loop-mapping model's rules.
    verdict = tensorize_model.applicability(problem)
    if verdict is not None:
        rule, reason = verdict
        return Applicability(False, rule, reason, None, binding)
    return Applicability(True, problem=problem, binding=binding)
