"""C code from a rewritten nest: AVX-512 VNNI intrinsics, the same nest untensorized, the naive nest.

Three kernels per workload, all over the same tensors (002:L224-L236, Fig. 5c, Fig. 7):

* :func:`tensorized_kernel` — the rewritten nest under a :class:`~solvermap.hardware.cpu.nest.Schedule`:
  the fused-parallel loop (OpenMP when more than one thread), the serial data-parallel loops, one
  accumulator register per unrolled point, the reduction loops, and in the body one instruction per
  unrolled point with its operands prepared as the rewriter decided (``contiguous`` →
  ``loadu``, ``broadcast`` → ``set1_epi32`` of one 32-bit group, ``gather`` →
  ``i32gather_epi32``, ``lanewise`` → element copies); registers shared by several unrolled points are
  loaded once. Accumulators start at zero and are stored once after the reduction.
* :func:`untensorized_kernel` — exactly the same loops, layouts, schedule and unrolling, but the
  instruction replaced by its descriptor's semantics as scalar C loops over the instruction loops (what
  the nest is without tensorization; gcc's auto-vectoriser may vectorise it as it can).
* :func:`naive_kernel` — the original statement as written (original layouts, program loop order).

The intrinsic family comes from the descriptor's ``x86`` field (vector type, width prefix, call), so a
new dot-product instruction of the same shape (e.g. ``vpdpwssd``, 256-bit ``vpdpbusd``) needs no code
here. All kernels compute with wrapping int32 arithmetic (compiled with ``-fwrapv``), the hardware's.
"""

from __future__ import annotations

import itertools
import math

from solvermap.errors import InputError
from solvermap.hardware.cpu.nest import RewrittenNest, Schedule, ScheduledLoop, fused_extent, split_dp_loops
from solvermap.ir.loopnest import Access, Call, Cast, Const, Load, Program

C_TYPES = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "uint16": "uint16_t", "int32": "int32_t",
           "int64": "int64_t", "float32": "float", "float64": "double"}
HEADER = """#include <immintrin.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
static inline int32_t sm_load32(const void* p) { int32_t v; memcpy(&v, p, 4); return v; }
static inline double sm_now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
"""


def _c_ident(name: str, prefix: str = "L_") -> str:
    """A C identifier for a program name; prefixes keep tensors (T_), loops (L_) and instruction loops
    (I_) apart from each other and from the generator's own locals."""
    return prefix + "".join(ch if ch.isalnum() else "_" for ch in name)


def _tensor(name: str) -> str:
    return _c_ident(name, "T_")


def _signature(program: Program, name: str) -> tuple[str, list[str]]:
    params, names = [], []
    for t in program.tensors.values():
        const = "const " if t.role == "input" else ""
        params.append(f"{const}{C_TYPES[t.dtype]}* restrict {_tensor(t.name)}")
        names.append(_tensor(t.name))
    return f"void {name}({', '.join(params)})", names


def _bench(program: Program, name: str) -> str:
    sig, names = _signature(program, name)
    params = sig[sig.index("(") + 1:-1]
    return (f"double {name}_bench({params}, int sm_reps, double* sm_times) {{\n"
            f"  double sm_total = 0.0;\n"
            f"  for (int sm_rep = 0; sm_rep < sm_reps; sm_rep++) {{\n"
            f"    double sm_t0 = sm_now();\n"
            f"    {name}({', '.join(names)});\n"
            f"    sm_times[sm_rep] = sm_now() - sm_t0;\n"
            f"    sm_total += sm_times[sm_rep];\n"
            f"  }}\n  return sm_total;\n}}\n")


def _affine(terms: list[tuple[int, str]], const: int = 0) -> str:
    parts = [f"{c}L*{v}" if c != 1 else v for c, v in terms if c]
    if const or not parts:
        parts.append(f"{const}L")
    return " + ".join(parts)


def _loop_parts(nest: RewrittenNest, schedule: Schedule) -> list[ScheduledLoop]:
    extents = {l.var: l.extent for l in nest.dp_loops}
    try:
        return split_dp_loops(extents, schedule)
    except ValueError as exc:
        raise InputError(nest.workload, "schedule", str(exc)) from None


def _unrolled_points(parts: list[ScheduledLoop]) -> list[dict[str, int]]:
    """Per unrolled point, the contribution of the unrolled parts to each dp loop variable."""
    unrolled = [p for p in parts if p.role == "unroll"]
    points = []
    for values in itertools.product(*(range(p.extent) for p in unrolled)):
        contribution: dict[str, int] = {}
        for p, v in zip(unrolled, values):
            contribution[p.var] = contribution.get(p.var, 0) + v * p.weight
        points.append(contribution)
    return points


def _prologue(nest: RewrittenNest, schedule: Schedule, parallel: bool) -> tuple[list[str], str, list[ScheduledLoop]]:
    """Loop headers down to the serial level; returns (lines, indent, parts)."""
    parts = _loop_parts(nest, schedule)
    lines, ind = [], "  "
    par = [p for p in parts if p.role == "parallel"]
    fused = fused_extent(parts)
    if parallel:
        lines.append(f"{ind}#pragma omp parallel for schedule(static)")
    lines.append(f"{ind}for (long fused = 0; fused < {fused}L; fused++) {{")
    ind += "  "
    lines.append(f"{ind}long rest = fused;")
    for k, p in reversed(list(enumerate(par))):
        lines.append(f"{ind}const long p{k} = rest % {p.extent}L; rest /= {p.extent}L;")
    serial = [p for p in parts if p.role == "serial"]
    for k, p in enumerate(serial):
        lines.append(f"{ind}for (long s{k} = 0; s{k} < {p.extent}L; s{k}++) {{")
        ind += "  "
    # dp variable values without the unrolled parts
    for loop in nest.dp_loops:
        terms = [(p.weight, f"p{k}") for k, p in enumerate(par) if p.var == loop.var]
        terms += [(p.weight, f"s{k}") for k, p in enumerate(serial) if p.var == loop.var]
        lines.append(f"{ind}const long {_c_ident(loop.var)} = {_affine(terms)};")
    return lines, ind, parts


def _epilogue(lines: list[str], parts: list[ScheduledLoop]) -> None:
    serial = [p for p in parts if p.role == "serial"]
    ind = "  " * (2 + len(serial))
    for _ in serial:
        ind = ind[:-2]
        lines.append(f"{ind}}}")
    lines.append("  }")


def _base(plan, loops, ptr: str) -> str:
    terms = [(plan.base_stride(l.var), _c_ident(l.var)) for l in loops]
    return f"{ptr} + ({_affine(terms, plan.base_const)})"


def tensorized_kernel(nest: RewrittenNest, schedule: Schedule, name: str, *, parallel: bool = False) -> str:
    x86 = nest.instruction.x86
    if x86 is None:
        raise InputError(nest.workload, "instruction", f"{nest.instruction.name} has no x86 intrinsic form; "
                                                       "use codegen: emulate")
    if nest.accumulator.group != 1:
        raise InputError(nest.workload, "instruction", "the C generator needs 32-bit accumulator lanes")
    vt, px, bits = x86.vector_type, x86.prefix, x86.register_bits
    suffix = f"si{bits}"
    lanes32 = bits // 32
    sig, _ = _signature(nest.original, name)
    lines, ind, parts = _prologue(nest, schedule, parallel)
    dp = nest.dp_loops
    red = nest.reduction_loops
    for plan in nest.operands.values():
        ctype = C_TYPES[plan.layout.dtype]
        qual = "" if plan.is_accumulator else "const "
        lines.append(f"{ind}{qual}{ctype}* restrict base_{plan.operand} = {_base(plan, dp, _tensor(plan.tensor))};")
    points = _unrolled_points(parts)
    for u in range(len(points)):
        lines.append(f"{ind}{vt} acc{u} = {px}_setzero_{suffix}();")
    for k, loop in enumerate(red):
        lines.append(f"{ind}for (long {_c_ident(loop.var)} = 0; {_c_ident(loop.var)} < {loop.extent}L; {_c_ident(loop.var)}++) {{")
        ind += "  "
    for plan in nest.sources:
        ctype = C_TYPES[plan.layout.dtype]
        terms = [(plan.base_stride(l.var), _c_ident(l.var)) for l in red]
        lines.append(f"{ind}const {ctype}* p_{plan.operand} = base_{plan.operand} + ({_affine(terms)});")
    # operand registers, loaded once per distinct offset
    regs: dict[tuple[str, int], str] = {}
    for plan in nest.sources:
        esize = {"int8": 1, "uint8": 1, "int16": 2, "uint16": 2}.get(plan.layout.dtype)
        if esize is None:
            raise InputError(nest.workload, "instruction", f"unsupported source dtype {plan.layout.dtype}")
        for point in points:
            delta = sum(plan.base_stride(var) * v for var, v in point.items())
            key = (plan.operand, delta)
            if key in regs:
                continue
            reg = f"r_{plan.operand}{len([k for k in regs if k[0] == plan.operand])}"
            regs[key] = reg
            ptr = f"p_{plan.operand} + {delta}L"
            if plan.action == "contiguous":
                lines.append(f"{ind}const {vt} {reg} = {px}_loadu_{suffix}((const void*)({ptr}));")
            elif plan.action == "broadcast":
                lines.append(f"{ind}const {vt} {reg} = {px}_set1_epi32(sm_load32({ptr} + {plan.lane_offsets[0]}L));")
            elif plan.action == "gather":
                idx = ", ".join(str(o * esize) for o in reversed(plan.group_offsets()))
                if bits == 512:
                    lines.append(f"{ind}const {vt} {reg} = {px}_i32gather_epi32({px}_set_epi32({idx}), (const void*)({ptr}), 1);")
                else:
                    lines.append(f"{ind}const {vt} {reg} = {px}_i32gather_epi32((const int*)({ptr}), {px}_set_epi32({idx}), 1);")
            else:
                ctype = C_TYPES[plan.layout.dtype]
                n = len(plan.lane_offsets)
                lines.append(f"{ind}{ctype} t_{reg}[{n}] __attribute__((aligned(64)));")
                for l, o in enumerate(plan.lane_offsets):
                    lines.append(f"{ind}t_{reg}[{l}] = " + (f"({ptr})[{o}];" if o >= 0 else "0;"))
                lines.append(f"{ind}const {vt} {reg} = {px}_loadu_{suffix}((const void*)t_{reg});")
    order = nest.instruction.sources  # expression order: (a, b) of the intrinsic
    for u, point in enumerate(points):
        args = []
        for operand in order:
            plan = nest.operands[operand]
            delta = sum(plan.base_stride(var) * v for var, v in point.items())
            args.append(regs[(operand, delta)])
        lines.append(f"{ind}acc{u} = {x86.call}(acc{u}, {', '.join(args)});")
    for _ in red:
        ind = ind[:-2]
        lines.append(f"{ind}}}")
    acc = nest.accumulator
    for u, point in enumerate(points):
        delta = sum(acc.base_stride(var) * v for var, v in point.items())
        ptr = f"base_{acc.operand} + {delta}L"
        if acc.action == "contiguous":
            lines.append(f"{ind}{px}_storeu_{suffix}((void*)({ptr}), acc{u});")
        elif acc.action in ("gather", "broadcast") and len(acc.lane_offsets) == lanes32 and min(acc.lane_offsets) >= 0:
            idx = ", ".join(str(o * 4) for o in reversed(acc.lane_offsets))
            lines.append(f"{ind}{px}_i32scatter_epi32((void*)({ptr}), {px}_set_epi32({idx}), acc{u}, 1);")
        else:
            lines.append(f"{ind}{{ int32_t t[{lanes32}] __attribute__((aligned(64))); {px}_storeu_{suffix}((void*)t, acc{u});")
            for l, o in enumerate(acc.lane_offsets):
                if o >= 0:
                    lines.append(f"{ind}  ({ptr})[{o}] = t[{l}];")
            lines.append(f"{ind}}}")
    _epilogue(lines, parts)
    return f"{sig} {{\n" + "\n".join(lines) + "\n}\n" + _bench(nest.original, name)


def _c_expr(expr, load) -> str:
    if isinstance(expr, Load):
        return load(expr.access)
    if isinstance(expr, Const):
        return repr(expr.value)
    if isinstance(expr, Cast):
        return f"(({C_TYPES[expr.dtype]})({_c_expr(expr.arg, load)}))"
    ops = {"add": "+", "sub": "-", "mul": "*", "and": "&", "or": "|", "shr": ">>", "shl": "<<"}
    if isinstance(expr, Call) and expr.op in ops and len(expr.args) == 2:
        return f"({_c_expr(expr.args[0], load)} {ops[expr.op]} {_c_expr(expr.args[1], load)})"
    if isinstance(expr, Call) and expr.op in ("max", "min") and len(expr.args) == 2:
        a, b = _c_expr(expr.args[0], load), _c_expr(expr.args[1], load)
        return f"(({a}) {'>' if expr.op == 'max' else '<'} ({b}) ? ({a}) : ({b}))"
    raise InputError("", "expr", f"no C form for {expr!r}")


def untensorized_kernel(nest: RewrittenNest, schedule: Schedule, name: str, *, parallel: bool = False) -> str:
    """The same nest with the instruction's semantics written as scalar loops (see module docstring)."""
    instr = nest.instruction
    istmt = instr.statement
    acc = nest.accumulator
    acc_ctype = C_TYPES[acc.layout.dtype]
    n_lanes = len(acc.lane_offsets)
    sig, _ = _signature(nest.original, name)
    lines, ind, parts = _prologue(nest, schedule, parallel)
    dp, red = nest.dp_loops, nest.reduction_loops
    for plan in nest.operands.values():
        ctype = C_TYPES[plan.layout.dtype]
        qual = "" if plan.is_accumulator else "const "
        lines.append(f"{ind}{qual}{ctype}* restrict base_{plan.operand} = {_base(plan, dp, _tensor(plan.tensor))};")
    points = _unrolled_points(parts)
    for u in range(len(points)):
        lines.append(f"{ind}{acc_ctype} acc{u}[{n_lanes}] = {{0}};")
    for loop in red:
        v = _c_ident(loop.var)
        lines.append(f"{ind}for (long {v} = 0; {v} < {loop.extent}L; {v}++) {{")
        ind += "  "
    for plan in nest.sources:
        ctype = C_TYPES[plan.layout.dtype]
        terms = [(plan.base_stride(l.var), _c_ident(l.var)) for l in red]
        lines.append(f"{ind}const {ctype}* p_{plan.operand} = base_{plan.operand} + ({_affine(terms)});")
    reg_stride = {}
    for operand in list(instr.sources) + [instr.accumulator]:
        reg_stride[operand] = instr.lane_strides(operand)
    for u, point in enumerate(points):
        loop_vars = [l.var for l in istmt.loops]
        for l in istmt.loops:
            iv = _c_ident(l.var, "I_")
            lines.append(f"{ind}for (int {iv} = 0; {iv} < {l.extent}; {iv}++) {{")
            ind += "  "

        def load(access: Access, point=point) -> str:
            plan = nest.operands[access.tensor]
            delta = sum(plan.base_stride(var) * v for var, v in point.items())
            strides = dict(plan.lane_strides)
            terms = [(strides[v], _c_ident(v, "I_")) for v in loop_vars]
            return f"p_{plan.operand}[{_affine(terms, delta)}]"

        lane = _affine([(reg_stride[instr.accumulator][v], _c_ident(v, "I_")) for v in loop_vars])
        lines.append(f"{ind}acc{u}[{lane}] += {_c_expr(istmt.expr, load)};")
        for _ in istmt.loops:
            ind = ind[:-2]
            lines.append(f"{ind}}}")
    for _ in red:
        ind = ind[:-2]
        lines.append(f"{ind}}}")
    for u, point in enumerate(points):
        delta = sum(acc.base_stride(var) * v for var, v in point.items())
        for l, o in enumerate(acc.lane_offsets):
            if o >= 0:
                lines.append(f"{ind}base_{acc.operand}[{delta + o}L] = acc{u}[{l}];")
    _epilogue(lines, parts)
    return f"{sig} {{\n" + "\n".join(lines) + "\n}\n" + _bench(nest.original, name)


def naive_kernel(program: Program, name: str) -> str:
    """The original statement as written: program loop order, original layouts."""
    if len(program.statements) != 1:
        raise InputError(program.source, "statements", "the naive kernel needs a one-statement program")
    stmt = program.statements[0]
    sig, _ = _signature(program, name)

    def index(access: Access) -> str:
        shape = program.tensor(access.tensor).shape
        strides = [math.prod(shape[d + 1:]) for d in range(len(shape))]
        terms: dict[str, int] = {}
        const = 0
        for d, (row, off) in enumerate(zip(access.coeffs, access.offsets)):
            if access.divisors[d] != 1:
                raise InputError(program.source, access.text(), "divisors are not supported by the naive kernel")
            for c, v in zip(row, access.loop_vars):
                terms[v] = terms.get(v, 0) + c * strides[d]
            const += off * strides[d]
        return f"{_tensor(access.tensor)}[{_affine([(c, _c_ident(v)) for v, c in terms.items()], const)}]"

    out = program.tensor(stmt.write.tensor)
    lines = [f"  memset({_tensor(out.name)}, 0, {out.size}L * sizeof({C_TYPES[out.dtype]}));"]
    ind = "  "
    for loop in stmt.loops:
        v = _c_ident(loop.var)
        lines.append(f"{ind}for (long {v} = {loop.lo}L; {v} < {loop.hi}L; {v}++) {{")
        ind += "  "
    op = "+=" if stmt.accumulate else "="
    lines.append(f"{ind}{index(stmt.write)} {op} {_c_expr(stmt.expr, index)};")
    for _ in stmt.loops:
        ind = ind[:-2]
        lines.append(f"{ind}}}")
    return f"{sig} {{\n" + "\n".join(lines) + "\n}\n" + _bench(program, name)


def translation_unit(kernels: list[str], *, parallel: bool = False) -> str:
    """One C file: the header, the kernels, and with ``parallel`` an ``sm_set_threads(n)`` entry point."""
    omp = "#include <omp.h>\nvoid sm_set_threads(int n) { omp_set_num_threads(n); }\n" if parallel else ""
    return HEADER + omp + "\n".join(kernels)
