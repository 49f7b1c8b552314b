"""UNIT's Rewriter, loop reorganisation and operand preparation (002:L189-L197, L224-L236, L276).

Given the inspector's problem and a loop mapping f (instruction loop b ← program loop a):

1. **tile** every mapped loop a by e_b into ``a_o`` (extent P_a / e_b) and ``a_i`` (extent e_b), after
   padding a to P_a = ⌈e_a / e_b⌉·e_b (002:L87);
2. **reorder** the ``a_i`` loops innermost, in the instruction's loop order, so the innermost nest is the
   instruction's semantics (002:L191-L193, L226-L228); the other loops keep program order outside;
3. **pack** each operand tensor (002:L276's NCHW[x]c / KCRS[y]k[x]c generalised): walking the
   register's lane loops from the fastest (stride 1) outwards, a mapped loop a that is the whole index
   of one tensor dim splits that dim by e_b and puts the block innermost (``c`` → ``C/4 … 4c``); a loop
   that appears with coefficient 1 in a compound dim (``x + s``) moves that dim innermost unsplit; any
   other case leaves the layout alone. Zero padding covers every index the padded domain reaches.
   Lanes are stored in the instruction's storage type (``x86.storage``: e.g. uint8 data widened to
   int16 for ``vpmaddwd``), so widening happens once, when the tensor is packed;
4. **operand preparation** (002:L195-L197): from the lane offsets in the packed tensor, each register is
   a contiguous load, a broadcast of one 32-bit group, a gather of 32-bit groups (concatenation), or a
   lane-by-lane build; per instruction loop the stride says vectorise (1), broadcast (0) or strided —
   UNIT's "each replaced loop variable and its coefficient" interface (002:L197).

The result is a :class:`~solvermap.hardware.cpu.nest.RewrittenNest`, including the rewritten nest as an
ordinary loop-nest program over the packed tensors, which the golden executor runs for the bit-exact
check independently of the instruction emulator and of the generated C.
"""

from __future__ import annotations

import itertools

from solvermap.errors import InputError
from solvermap.formulations.problems.tensorize import (
    TensorizeMapping,
    TensorizeProblem,
    access_vars,
    dims_of,
    pure_dim,
)
from solvermap.hardware.cpu.instructions import InstructionDescriptor
from solvermap.hardware.cpu.nest import LayoutPart, OperandPlan, OuterLoop, PackedLayout, RewrittenNest
from solvermap.ir.loopnest import Access, Call, Cast, Load, Loop, Program, Statement, Tensor


def outer_var(a: str) -> str:
    return f"{a}_o"


def inner_var(a: str) -> str:
    return f"{a}_i"


def _element_bits(dtype: str) -> int:
    return {"int8": 8, "uint8": 8, "int16": 16, "uint16": 16, "float16": 16, "int32": 32, "float32": 32,
            "int64": 64, "float64": 64}[dtype]


def _layout(problem: TensorizeProblem, mapping: TensorizeMapping, instruction: InstructionDescriptor,
            operand: str, access: Access, tensor: Tensor) -> PackedLayout:
    forward = dict(mapping.loop_map)  # instruction loop -> program loop
    padded = dict(mapping.padded)
    strides = instruction.lane_strides(operand)
    inner_parts: list[LayoutPart] = []  # innermost first
    used_dims: set[int] = set()
    for b, stride in sorted(((b, s) for b, s in strides.items() if s != 0), key=lambda t: abs(t[1])):
        a = forward[b]
        if a not in access_vars(access):
            continue  # broadcast along b
        dims = dims_of(access, a)
        if len(dims) != 1 or dims[0] in used_dims:
            break
        d = dims[0]
        if access.coeffs[d][access.loop_vars.index(a)] != 1 or access.divisors[d] != 1:
            break
        used_dims.add(d)
        if pure_dim(access, d, a):
            inner_parts.append(LayoutPart(d, "inner", instruction.extent(b), instruction.extent(b)))
        else:
            inner_parts.append(LayoutPart(d, "whole", 0))
            break
    # padded extent of every dim: the largest index the padded domain reaches (at least the original)
    extents = {l.name: padded.get(l.name, l.extent) for l in problem.loops}
    padded_shape = []
    for d, size in enumerate(tensor.shape):
        if access.divisors[d] != 1:
            raise InputError(problem.workload, f"access {access.text()}", "the rewriter needs divisor-free indices")
        hi = access.offsets[d] + sum(max(c * (extents[v] - 1), 0) for c, v in zip(access.coeffs[d], access.loop_vars))
        lo = access.offsets[d] + sum(min(c * (extents[v] - 1), 0) for c, v in zip(access.coeffs[d], access.loop_vars))
        if lo < 0:
            raise InputError(problem.workload, f"access {access.text()}", "negative indices after padding")
        extent = max(size, hi + 1)
        for p in inner_parts:
            if p.dim == d and p.part == "inner":
                extent = -(-extent // p.block) * p.block
        padded_shape.append(extent)
    parts: list[LayoutPart] = []
    inner_dims = {p.dim for p in inner_parts}
    for d in range(len(tensor.shape)):
        block = next((p.block for p in inner_parts if p.dim == d and p.part == "inner"), None)
        if block is not None:
            parts.append(LayoutPart(d, "outer", padded_shape[d] // block, block))
        elif d not in inner_dims:
            parts.append(LayoutPart(d, "whole", padded_shape[d]))
    for p in reversed(inner_parts):
        size = padded_shape[p.dim] if p.part == "whole" else p.size
        parts.append(LayoutPart(p.dim, p.part, size, p.block))
    storage = instruction.x86.storage_dtype(operand, tensor.dtype) if instruction.x86 else tensor.dtype
    return PackedLayout(tensor.name, storage, tuple(tensor.shape), tuple(padded_shape), tuple(parts))


def _packed_index(layout: PackedLayout, access: Access, tile: dict[str, int],
                  new_vars: list[str]) -> tuple[list[list[int]], list[int]]:
    """Coefficients (over ``new_vars``) and offsets of every packed dim of ``access``;
    ``tile[a] = e_b`` for each mapped program loop a (a = a_o·e_b + a_i)."""
    coeffs, offsets = [], []
    for part in layout.parts:
        row = [0] * len(new_vars)
        off = 0
        if part.part in ("outer", "inner"):
            a = access.loop_vars[next(j for j, c in enumerate(access.coeffs[part.dim]) if c)]
            row[new_vars.index(outer_var(a) if part.part == "outer" else inner_var(a))] = 1
        else:
            for j, a in enumerate(access.loop_vars):
                c = access.coeffs[part.dim][j]
                if not c:
                    continue
                if a in tile:
                    row[new_vars.index(outer_var(a))] += c * tile[a]
                    row[new_vars.index(inner_var(a))] += c
                else:
                    row[new_vars.index(a)] += c
            off = access.offsets[part.dim]
        coeffs.append(row)
        offsets.append(off)
    return coeffs, offsets


def _rewrite_expr(expr, replace):
    if isinstance(expr, Load):
        return Load(replace(expr.access))
    if isinstance(expr, Cast):
        return Cast(expr.dtype, _rewrite_expr(expr.arg, replace))
    if isinstance(expr, Call):
        return Call(expr.op, tuple(_rewrite_expr(a, replace) for a in expr.args))
    return expr


def _classify(offsets: list[int], group: int) -> str:
    n = len(offsets)
    if offsets == list(range(n)):
        return "contiguous"
    if any(o < 0 for o in offsets) or n % group:
        return "lanewise"
    groups = [offsets[g * group:(g + 1) * group] for g in range(n // group)]
    if all(g == list(range(g[0], g[0] + group)) for g in groups):
        if all(g[0] == groups[0][0] for g in groups):
            return "broadcast"
        return "gather"
    return "lanewise"


def rewrite(problem: TensorizeProblem, mapping: TensorizeMapping, instruction: InstructionDescriptor) -> RewrittenNest:
    """Tile, reorder, pad and pack (see module docstring)."""
    stmt = problem.statement
    program = problem.program
    forward = dict(mapping.loop_map)  # b -> a
    inverse = mapping.inverse()  # a -> b
    padded = dict(mapping.padded)
    tile = {a: instruction.extent(b) for b, a in mapping.loop_map}
    # 1-2. tile and reorder
    outer = []
    for loop in stmt.loops:
        if loop.var in inverse:
            e_b = instruction.extent(inverse[loop.var])
            outer.append(OuterLoop(outer_var(loop.var), padded[loop.var] // e_b, loop.kind, loop.var))
        else:
            outer.append(OuterLoop(loop.var, loop.extent, loop.kind, loop.var))
    lanes = [(inner_var(forward[b.var]), b) for b in instruction.statement.loops]
    new_vars = [l.var for l in outer] + [v for v, _ in lanes]
    # 3. layouts, from the operand pairs Algorithm 1 bound
    plans: dict[str, OperandPlan] = {}
    layouts: dict[str, PackedLayout] = {}
    access_of: dict[str, Access] = {}
    for pair in problem.operands:
        tensor = program.tensor(pair.program_tensor)
        layout = _layout(problem, mapping, instruction, pair.instr_operand, pair.program_access, tensor)
        if tensor.name in layouts and layouts[tensor.name] != layout:
            raise InputError(problem.workload, f"tensor {tensor.name}", "read through two different register layouts")
        layouts[tensor.name] = layout
        access_of[pair.instr_operand] = pair.program_access
    # the rewritten program: packed tensors, tiled loops, lanes innermost
    def packed_access(access: Access) -> Access:
        layout = layouts[access.tensor]
        coeffs, offsets = _packed_index(layout, access, tile, new_vars)
        return Access(access.tensor, tuple(tuple(r) for r in coeffs), tuple(offsets), (1,) * len(offsets), tuple(new_vars))

    loops = tuple(Loop(l.var, 0, l.extent, l.kind) for l in outer) + tuple(
        Loop(v, 0, b.extent, b.kind) for v, b in lanes)
    new_stmt = Statement(stmt.name, loops, packed_access(stmt.write), _rewrite_expr(stmt.expr, packed_access),
                         stmt.dtype, stmt.accumulate, dict(stmt.attrs))
    tensors = {name: Tensor(name, layouts[name].shape if name in layouts else t.shape, t.dtype, t.role)
               for name, t in program.tensors.items()}
    rewritten = Program(f"{program.name}@{instruction.name}", tensors, [new_stmt], dict(program.attrs),
                        source=f"rewritten {program.name}")
    # 4. operand preparation from the lane offsets in the packed tensors
    lane_vars = [v for v, _ in lanes]
    for pair in problem.operands:
        access = packed_access(pair.program_access)
        layout = layouts[pair.program_tensor]
        strides = layout.strides()

        def flat(point: dict[str, int]) -> int:
            idx = [sum(c * point.get(v, 0) for c, v in zip(row, new_vars)) + off
                   for row, off in zip(access.coeffs, access.offsets)]
            return sum(s * i for s, i in zip(strides, idx))

        base = tuple((v, flat({v: 1}) - flat({})) for v in new_vars if v not in lane_vars and flat({v: 1}) != flat({}))
        reg = instruction.program.tensor(pair.instr_operand)
        reg_access = pair.instr_access
        n_lanes = reg.size
        lane_off = [-1] * n_lanes
        reg_flat = [1] * len(reg.shape)
        for d in range(len(reg.shape) - 2, -1, -1):
            reg_flat[d] = reg_flat[d + 1] * reg.shape[d + 1]
        for values in itertools.product(*(range(b.extent) for _, b in lanes)):
            point = dict(zip(lane_vars, values))
            ipoint = {b.var: v for (_, b), v in zip(lanes, values)}
            lane = sum(reg_flat[d] * (sum(c * ipoint[v] for c, v in zip(reg_access.coeffs[d], reg_access.loop_vars))
                                      + reg_access.offsets[d]) for d in range(reg_access.rank))
            lane_off[lane] = flat(point) - flat({})
        lane_strides = tuple((b.var, flat({v: 1}) - flat({})) for v, b in lanes)
        group = max(1, 32 // _element_bits(layout.dtype))  # elements of one 32-bit group as stored
        plans[pair.instr_operand] = OperandPlan(
            pair.instr_operand, pair.program_tensor, layout, base, flat({}), tuple(lane_off), lane_strides,
            _classify(lane_off, group), group, pair.is_accumulator)
    return RewrittenNest(problem.workload, instruction, mapping, program, tuple(outer), plans, rewritten.validate(),
                         dict(padded))
