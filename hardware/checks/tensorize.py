"""Independent checker of a tensorize decision and of its rewrite (UNIT applicability rules, seed 002).

Re-derives every rule from the operation, the instruction descriptor and the decision; it imports
neither the formulation nor the inspector (only IR and problem/decision types).

Mapping rules (:func:`check`):

* ``instruction``          the decision names the problem's instruction
* ``binding-isomorphic``   walking both expression trees under the decision's binding, node types and
                           opcodes agree and every instruction leaf meets the array or constant it is
                           bound to (Algorithm 1, 002:L143-L167; operand swap of add/mul accepted)
* ``binding-one-source``   every register operand is bound exactly once, the accumulator to the written
                           array (002:L167)
* ``reduction``            the operation accumulates (+=) like the instruction (002:L71, L133)
* ``loop-cover``           every instruction loop is mapped exactly once
* ``loop-unknown``         every mapped program loop exists
* ``loop-injective``       no program loop is mapped twice
* ``annotation``           mapped loops have the same annotation (002:L177)
* ``access-subset``        S'(u) ⊆ S(v) for every bound access pair (002:L183)
* ``accumulator-lanes``    distinct accumulator lanes write distinct elements: no two mapped
                           data-parallel loops share a dim of the written access (our addition)
* ``padded-extent``        the padded extent of each mapped loop is ⌈e_a/e_b⌉·e_b, for mapped loops only
* ``divisibility``         without padding, every mapped extent is a multiple of its instruction extent
* ``padding-safety``       a padded reduction loop indexes some source through a dim of its own; a
                           padded data-parallel loop indexes the written array through a dim of its own

Rewrite rules (:func:`check_rewrite`, on a :class:`~solvermap.hardware.cpu.nest.RewrittenNest`):

* ``rewrite-tiles``        each mapped loop a became ``a_o`` with extent P_a / e_b, others unchanged
* ``rewrite-innermost``    the rewritten statement's innermost loops are the instruction's loops, in
                           the instruction's order and extents (002:L191-L193)
* ``rewrite-coverage``     outer iterations × instruction MACs = padded MACs
* ``rewrite-operand-bounds`` every register lane read or written stays inside its packed tensor at
                           the first and last outer iteration (affine offsets: corners suffice)
"""

from __future__ import annotations

import itertools
import math

from solvermap.formulations.problems.tensorize import TensorizeMapping, TensorizeProblem
from solvermap.ir.loopnest import Access, Cast, Const, Load, Program
from solvermap.results import CheckReport


def _vars(access: Access) -> set[str]:
    return {v for j, v in enumerate(access.loop_vars) if any(row[j] for row in access.coeffs)}


def _own_dim(access: Access, var: str) -> bool:
    j = access.loop_vars.index(var)
    dims = [d for d, row in enumerate(access.coeffs) if row[j]]
    if len(dims) != 1:
        return False
    d = dims[0]
    row = access.coeffs[d]
    return row[j] == 1 and all(c == 0 for k, c in enumerate(row) if k != j) and access.offsets[d] == 0 \
        and access.divisors[d] == 1


def _walk(a, b, instr: Program, prog: Program, binding: dict[str, str], a_type: str, b_type: str,
          pairs: list[tuple[Access, Access]]) -> str | None:
    """None if the trees match under ``binding`` (pairs collected), else why not."""
    def node_type(node, program, ctx):
        if isinstance(node, Load):
            return program.tensor(node.access.tensor).dtype
        if isinstance(node, Cast):
            return node.dtype
        return ctx

    ta, tb = node_type(a, instr, a_type), node_type(b, prog, b_type)
    if ta != tb:
        return f"type {ta} of the instruction node faces {tb}"
    if isinstance(a, (Load, Const)) or isinstance(b, (Load, Const)):
        if not (isinstance(a, (Load, Const)) and isinstance(b, (Load, Const))):
            return "a leaf faces an operator"
        key = a.access.tensor if isinstance(a, Load) else f"const:{a.value}"
        value = b.access.tensor if isinstance(b, Load) else f"const:{b.value}"
        if binding.get(key) != value:
            return f"register {key} is bound to {binding.get(key)!r} but meets {value!r}"
        if isinstance(a, Load) and isinstance(b, Load):
            pairs.append((a.access, b.access))
        return None
    if isinstance(a, Cast) != isinstance(b, Cast):
        return "a cast faces an operator"
    if isinstance(a, Cast):
        return _walk(a.arg, b.arg, instr, prog, binding, a.dtype, b.dtype, pairs)
    if a.op != b.op or len(a.args) != len(b.args):
        return f"opcode {a.op} faces {b.op}"
    attempt: list = []
    why = None
    for x, y in zip(a.args, b.args):
        why = why or _walk(x, y, instr, prog, binding, ta, tb, attempt)
    if why is None:
        pairs.extend(attempt)
        return None
    if a.op in ("add", "mul") and len(a.args) == 2:
        attempt, why2 = [], None
        for x, y in zip(a.args, reversed(b.args)):
            why2 = why2 or _walk(x, y, instr, prog, binding, ta, tb, attempt)
        if why2 is None:
            pairs.extend(attempt)
            return None
    return why


def check(problem: TensorizeProblem, decision: TensorizeMapping) -> CheckReport:
    report = CheckReport()
    stmt, istmt = problem.statement, problem.instruction_program.statements[0]
    prog, instr = problem.program, problem.instruction_program
    if decision.instruction != problem.instruction:
        report.add("instruction", f"decision is for {decision.instruction}, problem for {problem.instruction}")
    # binding
    binding: dict[str, str] = {}
    for reg, source in decision.binding:
        if reg in binding:
            report.add("binding-one-source", f"register {reg} bound twice ({binding[reg]}, {source})")
        binding[reg] = source
    registers = [t.name for t in instr.tensors.values()]
    for reg in registers:
        if reg not in binding:
            report.add("binding-one-source", f"register {reg} is not bound")
    if binding.get(istmt.write.tensor) != stmt.write.tensor:
        report.add("binding-one-source", f"accumulator {istmt.write.tensor} must bind the written array "
                                         f"{stmt.write.tensor}, not {binding.get(istmt.write.tensor)!r}")
    if istmt.accumulate and not stmt.accumulate:
        report.add("reduction", f"the instruction accumulates but statement {stmt.name} does not")
    pairs: list[tuple[Access, Access]] = []
    if prog.tensor(stmt.write.tensor).dtype != instr.tensor(istmt.write.tensor).dtype:
        report.add("binding-isomorphic", "accumulator dtypes differ")
    why = _walk(istmt.expr, stmt.expr, instr, prog, binding, istmt.dtype, stmt.dtype, pairs)
    if why is not None:
        report.add("binding-isomorphic", why)
    pairs.append((istmt.write, stmt.write))
    # loops
    prog_loops = {l.var: l for l in stmt.loops}
    instr_loops = {l.var: l for l in istmt.loops}
    mapped_b = [b for b, _ in decision.loop_map]
    for b in instr_loops:
        if mapped_b.count(b) != 1:
            report.add("loop-cover", f"instruction loop {b} is mapped {mapped_b.count(b)} times")
    for b in mapped_b:
        if b not in instr_loops:
            report.add("loop-cover", f"{b} is not an instruction loop")
    mapped_a = [a for _, a in decision.loop_map]
    for a in mapped_a:
        if a not in prog_loops:
            report.add("loop-unknown", f"program loop {a} does not exist")
    for a in set(mapped_a):
        if mapped_a.count(a) > 1:
            report.add("loop-injective", f"program loop {a} is mapped to {mapped_a.count(a)} instruction loops")
    f = {a: b for b, a in decision.loop_map if a in prog_loops and b in instr_loops}
    for a, b in f.items():
        if prog_loops[a].kind != instr_loops[b].kind:
            report.add("annotation", f"{a} ({prog_loops[a].kind}) mapped to {b} ({instr_loops[b].kind})")
    for v, u in pairs:
        s_prime = {f[x] for x in _vars(u) if x in f}
        extra = s_prime - _vars(v)
        if extra:
            report.add("access-subset", f"S'({u.text()}) = {sorted(s_prime)} is not within S({v.text()}) = "
                                        f"{sorted(_vars(v))}: {sorted(extra)} would need several addresses per lane")
    write_dims = {a: {d for d, row in enumerate(stmt.write.coeffs) if row[stmt.write.loop_vars.index(a)]}
                  for a in f if prog_loops[a].kind == "data_parallel"}
    for a1, a2 in itertools.combinations(sorted(write_dims), 2):
        if write_dims[a1] & write_dims[a2]:
            report.add("accumulator-lanes", f"{a1} and {a2} share a dim of {stmt.write.text()}: two lanes "
                                            "could write one element")
    padded = dict(decision.padded)
    for a, b in f.items():
        e_a, e_b = prog_loops[a].extent, instr_loops[b].extent
        want = -(-e_a // e_b) * e_b
        if padded.get(a) != want:
            report.add("padded-extent", f"{a}: padded extent {padded.get(a)} should be {want}")
        if e_a % e_b and not problem.allow_padding:
            report.add("divisibility", f"{a} extent {e_a} is not a multiple of {b} extent {e_b}, padding disabled")
        if e_a % e_b:
            kind = prog_loops[a].kind
            if kind == "reduction":
                safe = any(a in _vars(u) and _own_dim(u, a) for v, u in pairs if u is not stmt.write)
            else:
                safe = a in _vars(stmt.write) and _own_dim(stmt.write, a)
            if not safe:
                report.add("padding-safety", f"padding {a} to {want} would read or write real data")
    for a in padded:
        if a not in f:
            report.add("padded-extent", f"{a} is padded but not mapped")
    return report


def check_rewrite(problem: TensorizeProblem, decision: TensorizeMapping, nest) -> CheckReport:
    """Rules of the rewritten nest (see module docstring)."""
    report = CheckReport()
    stmt, istmt = problem.statement, problem.instruction_program.statements[0]
    f = {a: b for b, a in decision.loop_map}
    instr_ext = {l.var: l.extent for l in istmt.loops}
    outer = {l.source: l for l in nest.outer}
    for loop in stmt.loops:
        o = outer.get(loop.var)
        if o is None:
            report.add("rewrite-tiles", f"program loop {loop.var} disappeared")
            continue
        if loop.var in f:
            want = -(-loop.extent // instr_ext[f[loop.var]])
            if o.extent != want:
                report.add("rewrite-tiles", f"{loop.var}: outer tile extent {o.extent}, expected {want}")
        elif o.extent != loop.extent:
            report.add("rewrite-tiles", f"{loop.var}: extent changed from {loop.extent} to {o.extent}")
        if o.kind != loop.kind:
            report.add("rewrite-tiles", f"{loop.var}: annotation changed")
    loops = nest.program.statements[0].loops
    inner = loops[len(loops) - len(istmt.loops):]
    for got, want in zip(inner, istmt.loops):
        if got.extent != want.extent or got.kind != want.kind:
            report.add("rewrite-innermost", f"innermost loop {got.var} ({got.extent}, {got.kind}) does not match "
                                            f"instruction loop {want.var} ({want.extent}, {want.kind})")
    if len(loops) != len(nest.outer) + len(istmt.loops):
        report.add("rewrite-innermost", "the rewritten nest has extra or missing loops")
    padded_macs = math.prod(dict(decision.padded).get(l.var, l.extent) for l in stmt.loops)
    instr_macs = math.prod(l.extent for l in istmt.loops)
    if math.prod(l.extent for l in nest.outer) * instr_macs != padded_macs:
        report.add("rewrite-coverage", f"{math.prod(l.extent for l in nest.outer)} calls x {instr_macs} MACs "
                                       f"!= {padded_macs} padded MACs")
    names = [l.var for l in nest.outer]
    for plan in nest.operands.values():
        size = plan.layout.size
        lanes = [o for o in plan.lane_offsets if o >= 0]
        for corner in itertools.product(*((0, l.extent - 1) for l in nest.outer)):
            base = plan.base_const + sum(plan.base_stride(v) * c for v, c in zip(names, corner))
            if base + min(lanes) < 0 or base + max(lanes) >= size:
                report.add("rewrite-operand-bounds", f"register {plan.operand} reads {plan.tensor} outside "
                                                     f"[0, {size}) at outer point {corner}")
                break
    return report
