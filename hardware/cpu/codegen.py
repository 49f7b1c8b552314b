"""C code from a rewritten nest: x86 intrinsics (AVX-512 VNNI, AVX-VNNI, AVX2), the same nest
untensorized, the naive nest.

Three kernels per workload, all over the same tensors (002:L224-L236, Fig. 5c, Fig. 7):

* :func:`tensorized_kernel` — the rewritten nest under a :class:`~solvermap.hardware.cpu.nest.Schedule`:
  the fused-parallel loop (OpenMP when more than one thread), the serial data-parallel loops, one
  accumulator register per unrolled point, the reduction loops, and in the body one instruction per
  unrolled point with its operands prepared as the rewriter decided (``contiguous`` →
  ``loadu``, ``broadcast`` → ``set1_epi32`` of one 32-bit group, ``gather`` →
  ``i32gather_epi32``, ``lanewise`` → element copies); registers shared by several unrolled points are
  loaded once, in register-tile order (the operand with fewer registers resident, each register of the
  other loaded just before its instructions). Accumulators start at zero and are stored once after
  the reduction. A loop whose unroll factor leaves a residue gets one more, partial block after its
  serial loop.
* :func:`untensorized_kernel` — exactly the same loops, layouts, schedule and unrolling, but the
  instruction replaced by its descriptor's semantics as scalar C loops over the instruction loops (what
  the nest is without tensorization; gcc's auto-vectoriser may vectorise it as it can).
* :func:`naive_kernel` — the original statement as written (original layouts, program loop order).

The intrinsic family comes from the descriptor's ``x86`` field (vector type, width prefix, the C
expression of one instruction, constants it needs), so a new dot-product instruction of the same shape
(e.g. ``vpdpwssd``, 256-bit ``vpdpbusd``, the AVX2 ``vpmaddwd`` sequence) needs no code here. All kernels compute with wrapping int32 arithmetic (compiled with ``-fwrapv``), the hardware's.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

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
static inline double sm_cpu_now(void) { struct timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
"""


def _c_ident(name: str, prefix: str = "L_") -> str:
    """A C identifier for a program name; prefixes keep tensors (T_), loops (L_) and instruction loops
    (I_) apart from each other and from the generator's own locals."""
    return prefix + "".join(ch if ch.isalnum() else "_" for ch in name)


def _tensor(name: str) -> str:
    return _c_ident(name, "T_")


def _signature(program: Program, name: str, dtypes: dict[str, str] | None = None) -> tuple[str, list[str]]:
    """The kernel's C signature; ``dtypes`` overrides a tensor's element type (packed, widened storage)."""
    params, names = [], []
    for t in program.tensors.values():
        const = "const " if t.role == "input" else ""
        params.append(f"{const}{C_TYPES[(dtypes or {}).get(t.name, t.dtype)]}* restrict {_tensor(t.name)}")
        names.append(_tensor(t.name))
    return f"void {name}({', '.join(params)})", names


def _bench(program: Program, name: str, dtypes: dict[str, str] | None = None) -> str:
    sig, names = _signature(program, name, dtypes)
    params = sig[sig.index("(") + 1:-1]
    return (f"double {name}_bench({params}, int sm_reps, int sm_inner, double* sm_times) {{\n"
            f"  double sm_total = 0.0;\n"
            f"  for (int sm_rep = 0; sm_rep < sm_reps; sm_rep++) {{\n"
            f"    double sm_t0 = sm_cpu_now();\n"
            f"    for (int sm_i = 0; sm_i < sm_inner; sm_i++) {name}({', '.join(names)});\n"
            f"    sm_times[sm_rep] = (sm_cpu_now() - sm_t0) / sm_inner;\n"
            f"    sm_total += sm_times[sm_rep] * sm_inner;\n"
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



def _unrolled_points(parts: list[ScheduledLoop], tail: bool = False) -> list[dict[str, int]]:
    """Per unrolled point, the contribution of the unrolled parts to each dp loop variable (with
    ``tail``: the points of the last, partial block of the loop whose unroll factor leaves a residue)."""
    unrolled = [p for p in parts if p.role == "unroll"]
    points = []
    for values in itertools.product(*(range(p.tail if tail and p.tail else p.extent) for p in unrolled)):
        contribution: dict[str, int] = {}
        for p, v in zip(unrolled, values):
            contribution[p.var] = contribution.get(p.var, 0) + v * p.weight
        points.append(contribution)
    return points


def _loop_nest(nest: RewrittenNest, schedule: Schedule, parallel: bool,
               block: Callable[[str, list[dict[str, int]]], list[str]]) -> list[str]:
    """The data-parallel loops down to the serial level with ``block(ind, points)`` inside: the fused
    parallel loop, the serial loops, the dp variable values and the full blocks; after the innermost
    serial loop, the partial block of a tail (that loop's index at its end). With a reduction block,
    all of it runs once per block ``[rb, rb_hi)`` of the outermost reduction loop."""
    parts = _loop_parts(nest, schedule)
    par = [p for p in parts if p.role == "parallel"]
    serial = [p for p in parts if p.role == "serial"]
    has_tail = any(p.tail for p in parts)
    lines, ind = [], "  "
    if schedule.reduction_block:
        extent, size = nest.reduction_loops[0].extent, schedule.reduction_block
        lines.append(f"{ind}for (long rb = 0; rb < {extent}L; rb += {size}L) {{")
        ind += "  "
        lines.append(f"{ind}const long rb_hi = rb + {size}L < {extent}L ? rb + {size}L : {extent}L;")
    top = ind
    if parallel:
        lines.append(f"{ind}#pragma omp parallel for schedule(static)")
    lines.append(f"{ind}for (long fused = 0; fused < {fused_extent(parts)}L; fused++) {{")
    ind += "  "
    lines.append(f"{ind}long rest = fused;")
    for k, p in reversed(list(enumerate(par))):
        lines.append(f"{ind}const long p{k} = rest % {p.extent}L; rest /= {p.extent}L;")

    def dp_values(ind: str, fixed: dict[int, int]) -> None:
        for loop in nest.dp_loops:
            terms = [(p.weight, f"p{k}") for k, p in enumerate(par) if p.var == loop.var]
            const = 0
            for k, p in enumerate(serial):
                if p.var != loop.var:
                    continue
                if k in fixed:
                    const += p.weight * fixed[k]
                else:
                    terms.append((p.weight, f"s{k}"))
            lines.append(f"{ind}const long {_c_ident(loop.var)} = {_affine(terms, const)};")

    for k, p in enumerate(serial):
        lines.append(f"{ind}for (long s{k} = 0; s{k} < {p.extent}L; s{k}++) {{")
        ind += "  "
    dp_values(ind, {})
    lines.extend(block(ind, _unrolled_points(parts)))
    for k in reversed(range(len(serial))):
        ind = ind[:-2]
        lines.append(f"{ind}}}")
        if has_tail and k == len(serial) - 1:
            lines.append(f"{ind}{{")
            dp_values(ind + "  ", {k: serial[k].extent})
            lines.extend(block(ind + "  ", _unrolled_points(parts, tail=True)))
            lines.append(f"{ind}}}")
    lines.append(f"{top}}}")
    if schedule.reduction_block:
        lines.append("  }")
    return lines


def _base(plan, loops, ptr: str) -> str:
    terms = [(plan.base_stride(l.var), _c_ident(l.var)) for l in loops]
    return f"{ptr} + ({_affine(terms, plan.base_const)})"


def _delta(plan, point: dict[str, int]) -> int:
    """Element offset of an unrolled point's register from the block's base, in the packed tensor."""
    return sum(plan.base_stride(var) * v for var, v in point.items())


def _block_head(nest: RewrittenNest, ind: str, points: list[dict[str, int]], blocked: bool,
                acc_zero: Callable[[int], str], acc_load: Callable[[int, dict[str, int]], str]) -> tuple[list[str], str]:
    """Base pointers, accumulators (zero, or with a reduction block after the first one, the partial
    sums stored by the previous block), the reduction loops and the operand pointers of one block."""
    lines = []
    for plan in nest.operands.values():
        qual = "" if plan.is_accumulator else "const "
        lines.append(f"{ind}{qual}{C_TYPES[plan.layout.dtype]}* restrict base_{plan.operand} = "
                     f"{_base(plan, nest.dp_loops, _tensor(plan.tensor))};")
    lines += [f"{ind}{acc_zero(u)}" for u in range(len(points))]
    if blocked:
        lines.append(f"{ind}if (rb) {{")
        lines += [f"{ind}  {acc_load(u, point)}" for u, point in enumerate(points)]
        lines.append(f"{ind}}}")
    for k, loop in enumerate(nest.reduction_loops):
        v = _c_ident(loop.var)
        lo, hi = ("rb", "rb_hi") if blocked and k == 0 else ("0L", f"{loop.extent}L")
        if nest.instruction.x86 is not None and "{" in nest.instruction.x86.call:
            # a separate-multiply sequence (vpmaddwd): gcc unrolls a 3-step kernel loop, keeps products
            # and broadcasts of several steps alive and spills on 16 ymm registers; a fused
            # multiply-accumulate (vpdpbusd) gains from that unrolling (conv_table1_14: 570 vs 366 GMAC/s)
            lines.append(f"{ind}#pragma GCC unroll 1")
        lines.append(f"{ind}for (long {v} = {lo}; {v} < {hi}; {v}++) {{")
        ind += "  "
    for plan in nest.sources:
        terms = [(plan.base_stride(l.var), _c_ident(l.var)) for l in nest.reduction_loops]
        lines.append(f"{ind}const {C_TYPES[plan.layout.dtype]}* p_{plan.operand} = base_{plan.operand} + ({_affine(terms)});")
    return lines, ind


def _close_reduction(nest: RewrittenNest, lines: list[str], ind: str) -> str:
    for _ in nest.reduction_loops:
        ind = ind[:-2]
        lines.append(f"{ind}}}")
    return ind


def _register_load(plan, reg: str, ptr: str, x86, ind: str) -> list[str]:
    """C lines that fill register ``reg`` from ``ptr`` as the operand's preparation says."""
    vt, px, bits = x86.vector_type, x86.prefix, x86.register_bits
    suffix = f"si{bits}"
    esize = {"int8": 1, "uint8": 1, "int16": 2, "uint16": 2}[plan.layout.dtype]
    if plan.action == "contiguous":
        return [f"{ind}const {vt} {reg} = {px}_loadu_{suffix}((const void*)({ptr}));"]
    if plan.action == "broadcast":
        return [f"{ind}const {vt} {reg} = {px}_set1_epi32(sm_load32({ptr} + {plan.lane_offsets[0]}L));"]
    if plan.action == "gather":
        idx = ", ".join(str(o * esize) for o in reversed(plan.group_offsets()))
        if bits == 512:
            return [f"{ind}const {vt} {reg} = {px}_i32gather_epi32({px}_set_epi32({idx}), (const void*)({ptr}), 1);"]
        return [f"{ind}const {vt} {reg} = {px}_i32gather_epi32((const int*)({ptr}), {px}_set_epi32({idx}), 1);"]
    ctype = C_TYPES[plan.layout.dtype]
    lines = [f"{ind}{ctype} t_{reg}[{len(plan.lane_offsets)}] __attribute__((aligned(64)));"]
    for lane, offset in enumerate(plan.lane_offsets):
        lines.append(f"{ind}t_{reg}[{lane}] = " + (f"({ptr})[{offset}];" if offset >= 0 else "0;"))
    lines.append(f"{ind}const {vt} {reg} = {px}_loadu_{suffix}((const void*)t_{reg});")
    return lines


def _instruction_body(nest: RewrittenNest, points: list[dict[str, int]], ind: str) -> list[str]:
    """Loads and instructions of one reduction step of a block, in register-tile order: the registers of
    the operand with fewer distinct registers stay resident (loaded first), then each register of the
    other operand is loaded right before the instructions that use it (an outer-product microkernel:
    few registers are live at once, so a tile of many accumulators need not spill). For a sequence
    with a separate multiply, an empty asm after each group pins its accumulators, so the compiler
    cannot batch the additions of unrolled reduction steps (see the comment below)."""
    x86 = nest.instruction.x86
    order = nest.instruction.sources  # expression order: (a, b) of the intrinsic
    for plan in nest.sources:
        if plan.layout.dtype not in ("int8", "uint8", "int16", "uint16"):
            raise InputError(nest.workload, "instruction", f"unsupported source dtype {plan.layout.dtype}")
    names: dict[tuple[str, int], str] = {}
    uses: list[dict[str, tuple[str, int]]] = []
    for point in points:
        use = {}
        for operand in order:
            key = (operand, _delta(nest.operands[operand], point))
            if key not in names:
                names[key] = f"r_{operand}{sum(1 for k in names if k[0] == operand)}"
            use[operand] = key
        uses.append(use)
    lines: list[str] = []
    loaded: set[tuple[str, int]] = set()

    def load(key: tuple[str, int]) -> None:
        if key not in loaded:
            loaded.add(key)
            lines.extend(_register_load(nest.operands[key[0]], names[key], f"p_{key[0]} + {key[1]}L", x86, ind))

    def instruction(u: int) -> None:
        regs = {operand: names[key] for operand, key in uses[u].items()}
        lines.append(f"{ind}acc{u} = {x86.expression(f'acc{u}', regs, order)};")

    if len(order) == 2:
        counts = {o: len({k for k in names if k[0] == o}) for o in order}
        resident = min(order, key=lambda o: (counts[o], nest.operands[o].action != "contiguous"))
        streamed = next(o for o in order if o != resident)
        for key in dict.fromkeys(use[resident] for use in uses):
            load(key)
        fused = "{" not in x86.call  # the accumulator is the instruction's own destination (vpdpbusd)
        for key in dict.fromkeys(use[streamed] for use in uses):
            load(key)
            group = [u for u, use in enumerate(uses) if use[streamed] == key]
            for u in group:
                instruction(u)
            if not fused:
                # the products of a separate multiply (vpmaddwd) do not depend on the accumulators: gcc
                # unrolls the short reduction loops, reassociates acc + p1 + p2 + p3 and keeps all the
                # products alive (spills); an empty asm that "reads and writes" the group's accumulators
                # makes each addition happen where it is written
                regs = ", ".join(f'"+v"(acc{u})' for u in group)
                lines.append(f'{ind}__asm__("" : {regs});')
    else:
        for use in uses:
            for key in use.values():
                load(key)
        for u in range(len(uses)):
            instruction(u)
    return lines


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
    storage = {t: layout.dtype for t, layout in nest.layouts().items()}
    sig, _ = _signature(nest.original, name, storage)
    acc = nest.accumulator

    def acc_load(u: int, point: dict[str, int]) -> str:
        ptr = f"base_{acc.operand} + {_delta(acc, point)}L"
        if acc.action == "contiguous":
            return f"acc{u} = {px}_loadu_{suffix}((const void*)({ptr}));"
        lanes = ", ".join(f"({ptr})[{o}]" if o >= 0 else "0" for o in reversed(acc.lane_offsets))
        return f"acc{u} = {px}_set_epi32({lanes});"

    def block(ind: str, points: list[dict[str, int]]) -> list[str]:
        lines, inner = _block_head(nest, ind, points, bool(schedule.reduction_block),
                                   lambda u: f"{vt} acc{u} = {px}_setzero_{suffix}();", acc_load)
        lines += _instruction_body(nest, points, inner)
        _close_reduction(nest, lines, inner)
        for u, point in enumerate(points):
            ptr = f"base_{acc.operand} + {_delta(acc, point)}L"
            if acc.action == "contiguous":
                lines.append(f"{ind}{px}_storeu_{suffix}((void*)({ptr}), acc{u});")
            elif (bits == 512 and acc.action in ("gather", "broadcast") and len(acc.lane_offsets) == lanes32
                  and min(acc.lane_offsets) >= 0):
                idx = ", ".join(str(o * 4) for o in reversed(acc.lane_offsets))
                lines.append(f"{ind}{px}_i32scatter_epi32((void*)({ptr}), {px}_set_epi32({idx}), acc{u}, 1);")
            else:
                lines.append(f"{ind}{{ int32_t t[{lanes32}] __attribute__((aligned(64))); "
                             f"{px}_storeu_{suffix}((void*)t, acc{u});")
                for lane, offset in enumerate(acc.lane_offsets):
                    if offset >= 0:
                        lines.append(f"{ind}  ({ptr})[{offset}] = t[{lane}];")
                lines.append(f"{ind}}}")
        return lines

    body = [f"  {decl}" for decl in x86.setup] + _loop_nest(nest, schedule, parallel, block)
    return f"{sig} {{\n" + "\n".join(body) + "\n}\n" + _bench(nest.original, name, storage)


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
    n_lanes = len(acc.lane_offsets)
    storage = {t: layout.dtype for t, layout in nest.layouts().items()}
    sig, _ = _signature(nest.original, name, storage)
    lane_of = instr.lane_strides(instr.accumulator)
    loop_vars = [l.var for l in istmt.loops]

    def acc_load(u: int, point: dict[str, int]) -> str:
        delta = _delta(acc, point)
        return " ".join(f"acc{u}[{lane}] = base_{acc.operand}[{delta + o}L];"
                        for lane, o in enumerate(acc.lane_offsets) if o >= 0)

    def block(ind: str, points: list[dict[str, int]]) -> list[str]:
        lines, inner = _block_head(nest, ind, points, bool(schedule.reduction_block),
                                   lambda u: f"{C_TYPES[acc.layout.dtype]} acc{u}[{n_lanes}] = {{0}};", acc_load)
        for u, point in enumerate(points):
            body_ind = inner
            for l in istmt.loops:
                iv = _c_ident(l.var, "I_")
                lines.append(f"{body_ind}for (int {iv} = 0; {iv} < {l.extent}; {iv}++) {{")
                body_ind += "  "

            def load(access: Access, point=point) -> str:
                plan = nest.operands[access.tensor]
                strides = dict(plan.lane_strides)
                terms = [(strides[v], _c_ident(v, "I_")) for v in loop_vars]
                return f"p_{plan.operand}[{_affine(terms, _delta(plan, point))}]"

            lane = _affine([(lane_of[v], _c_ident(v, "I_")) for v in loop_vars])
            lines.append(f"{body_ind}acc{u}[{lane}] += {_c_expr(istmt.expr, load)};")
            for _ in istmt.loops:
                body_ind = body_ind[:-2]
                lines.append(f"{body_ind}}}")
        _close_reduction(nest, lines, inner)
        for u, point in enumerate(points):
            delta = _delta(acc, point)
            for lane, offset in enumerate(acc.lane_offsets):
                if offset >= 0:
                    lines.append(f"{ind}base_{acc.operand}[{delta + offset}L] = acc{u}[{lane}];")
        return lines

    return (f"{sig} {{\n" + "\n".join(_loop_nest(nest, schedule, parallel, block)) + "\n}\n"
            + _bench(nest.original, name, storage))


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


def peak_kernel(instruction, name: str, chains: int) -> str:
    """A throughput microkernel of one instruction: ``chains`` independent accumulators (distinct
    initial values, so no two chains can be merged), each updated once per iteration;
    ``double name(long iters)`` returns the seconds ``iters`` iterations took. Its MACs per second
    are the instruction's peak on this core (no loads, no stores); ``chains`` must cover the
    instruction's latency × throughput. A fused multiply-accumulate (``vpdpbusd``: the accumulator
    is the destination) takes constant sources; a sequence whose product does not involve the
    accumulator (``vpmaddwd`` then ``vpaddd``) takes the accumulator itself as its first source, so
    the compiler cannot hoist the product out of the loop."""
    x86 = instruction.x86
    if x86 is None:
        raise InputError(instruction.name, "instruction", "no x86 form: no peak to measure")
    vt, px = x86.vector_type, x86.prefix
    order = instruction.sources
    lines = [f"double {name}(long iters) {{", "  volatile int seed = 3;", "  double t0 = sm_cpu_now();"]
    lines += [f"  {decl}" for decl in x86.setup]
    lines += [f"  const {vt} s{k} = {px}_set1_epi32(seed * {k + 1} + 0x01010101);" for k in range(4)]
    lines += [f"  {vt} acc{k} = {px}_set1_epi32(seed + {k});" for k in range(chains)]
    lines.append("  for (long i = 0; i < iters; i++) {")
    for k in range(chains):
        fused = "{" not in x86.call
        regs = {o: (f"s{(k + 2 * j) % 4}" if fused else (f"acc{k}" if j == 0 else f"s{k % 4}"))
                for j, o in enumerate(order)}
        lines.append(f"    acc{k} = {x86.expression(f'acc{k}', regs, order)};")
    lines.append("  }")
    # the results go to memory (extracting them into integers makes gcc 12 shuffle the accumulators
    # through other registers in every iteration); the clock is read after they exist
    lines.append(f"  {vt} out[{chains}] __attribute__((aligned(64)));")
    lines += [f"  {px}_store_si{x86.register_bits}((void*)&out[{k}], acc{k});" for k in range(chains)]
    lines.append('  __asm__ volatile("" :: "r"(out) : "memory");')
    lines.append("  return sm_cpu_now() - t0;\n}")
    return "\n".join(lines)


def channels_last_kernel(program: Program, name: str, unroll: int, spatial_outer: bool = False) -> str:
    """A 2-D convolution written for the compiler's vectoriser, without any intrinsic: activations
    ``H W C`` and weights ``K R S C`` (channels last, packed once like the tensorized operands), and
    per output a dot product over the contiguous channels — the idiom gcc turns into ``vpdpbusd`` /
    ``vpmaddwd`` on its own where the flags allow. ``unroll`` output channels share each activation
    load (one sum each); ``spatial_outer`` puts the output pixels outside the channel blocks."""
    conv = program.attrs.get("conv2d")
    if conv is None:
        raise InputError(program.source, "workload", "the channels-last kernel is written for 2-D convolutions")
    C, K, R, stride, W, O = conv["C"], conv["K"], conv["R"], conv["stride"], conv["IHW"], conv["OHW"]
    if K % unroll:
        raise InputError(program.source, "unroll", f"{unroll} does not divide K = {K}")
    data_t, weight_t = (C_TYPES[program.tensor(n).dtype] for n in ("data", "weight"))
    sig, _ = _signature(program, name)
    block = R * R * C
    loops = (["for (long y = 0; y < {O}L; y++)", "for (long x = 0; x < {O}L; x++)",
              "for (long k0 = 0; k0 < {K}L; k0 += {U}L)"] if spatial_outer else
             ["for (long k0 = 0; k0 < {K}L; k0 += {U}L)", "for (long y = 0; y < {O}L; y++)",
              "for (long x = 0; x < {O}L; x++)"])
    lines, ind = [], "  "
    for loop in loops:
        lines.append(ind + loop.format(O=O, K=K, U=unroll) + " {")
        ind += "  "
    lines += [f"{ind}int32_t sum{u} = 0;" for u in range(unroll)]
    lines.append(f"{ind}for (long r = 0; r < {R}L; r++) for (long s = 0; s < {R}L; s++) {{")
    lines.append(f"{ind}  const {data_t}* restrict a = {_tensor('data')} + (({stride}L*y + r) * {W}L + {stride}L*x + s) * {C}L;")
    lines.append(f"{ind}  const {weight_t}* restrict b = {_tensor('weight')} + (k0 * {R * R}L + r * {R}L + s) * {C}L;")
    lines.append(f"{ind}  for (long c = 0; c < {C}L; c++) {{")
    lines.append(f"{ind}    const int32_t av = a[c];")
    lines += [f"{ind}    sum{u} += av * (int32_t)b[{u * block}L + c];" for u in range(unroll)]
    lines.append(f"{ind}  }}")
    lines.append(f"{ind}}}")
    lines += [f"{ind}{_tensor('out')}[((k0 + {u}L) * {O}L + y) * {O}L + x] = sum{u};" for u in range(unroll)]
    for _ in loops:
        ind = ind[:-2]
        lines.append(f"{ind}}}")
    return f"{sig} {{\n" + "\n".join(lines) + "\n}\n" + _bench(program, name)


def pack_channels_last(inputs: dict) -> dict:
    """The inputs of :func:`channels_last_kernel`: data ``C H W`` → ``H W C``, weights ``K C R S`` → ``K R S C``."""
    import numpy as np

    return {"data": np.ascontiguousarray(np.transpose(inputs["data"], (1, 2, 0))),
            "weight": np.ascontiguousarray(np.transpose(inputs["weight"], (0, 2, 3, 1)))}
