"""Run a rewritten nest through the instruction's own semantics, in NumPy (no hardware needed).

For every point of the outer loops, each source register is filled from its packed tensor at
``base + lane_offset`` (the operand preparation of the rewriter), the instruction descriptor's program
is evaluated on the registers by the golden executor (batched: one leading call dimension), and the
accumulator lanes are added into the packed output. Integer instructions (vpdpbusd, SDOT) wrap like the
hardware, so the result is bit-exact with the NumPy reference; floating-point ones (Tensor Core) add
in a different order and are compared with a tolerance by the caller. An instruction that saturates
partial sums (``vpmaddubsw``: each sum of two products clipped to int16, the descriptor's
``saturation``) is emulated as the hardware does it: products, sums of ``terms`` consecutive products
along the reduction loop, clipped to the saturation type, then accumulated — so the emulator shows
where such an instruction is not exact.
"""

from __future__ import annotations

import itertools

import numpy as np

from solvermap.hardware.cpu.instructions import InstructionDescriptor
from solvermap.hardware.cpu.nest import RewrittenNest
from solvermap.ir.loopnest import NUMPY_DTYPES, Access, Call, Cast, Load, Loop, Program, Statement, Tensor, evaluate


def _with_call_dim(instruction: InstructionDescriptor) -> tuple:
    """(vars, widen, expr): the descriptor's loop variables after a leading ``__call`` loop, and
    functions that give an access / expression tree a leading call dimension."""
    stmt = instruction.statement
    vars_ = ("__call",) + stmt.loop_vars

    def widen(access: Access) -> Access:
        coeffs = ((1,) + (0,) * len(stmt.loop_vars),) + tuple((0,) + tuple(r) for r in access.coeffs)
        return Access(access.tensor, coeffs, (0,) + access.offsets, (1,) + access.divisors, vars_)

    def expr(e):
        if isinstance(e, Load):
            return Load(widen(e.access))
        if isinstance(e, Cast):
            return Cast(e.dtype, expr(e.arg))
        if isinstance(e, Call):
            return Call(e.op, tuple(expr(a) for a in e.args))
        return e

    return vars_, widen, expr


def _batched(instruction: InstructionDescriptor, calls: int) -> Program:
    """The descriptor with a leading data-parallel ``call`` loop and a leading call dim on every register."""
    stmt = instruction.statement
    _, widen, expr = _with_call_dim(instruction)
    loops = (Loop("__call", 0, calls, "data_parallel"),) + stmt.loops
    batched = Statement(stmt.name, loops, widen(stmt.write), expr(stmt.expr), stmt.dtype, stmt.accumulate)
    tensors = {t.name: Tensor(t.name, (calls,) + t.shape, t.dtype, t.role) for t in instruction.program.tensors.values()}
    return Program(instruction.name + "@batched", tensors, [batched])


def _products(instruction: InstructionDescriptor, calls: int) -> Program:
    """Every product of the instruction unreduced: ``p[call, <accumulator index>, j] = expr`` with the
    reduction loop j turned data-parallel."""
    stmt = instruction.statement
    reductions = [l.var for l in stmt.loops if l.kind == "reduction"]
    if len(reductions) != 1:
        raise ValueError(f"{instruction.name}: saturation needs exactly one reduction loop")
    vars_, widen, expr = _with_call_dim(instruction)
    j = vars_.index(reductions[0])
    write = widen(stmt.write)
    last = tuple(1 if k == j else 0 for k in range(len(vars_)))
    write = Access("__p", write.coeffs + (last,), write.offsets + (0,), write.divisors + (1,), vars_)
    loops = (Loop("__call", 0, calls, "data_parallel"),) + tuple(Loop(l.var, l.lo, l.hi, "data_parallel")
                                                                 for l in stmt.loops)
    acc = instruction.program.tensor(instruction.accumulator)
    tensors = {t.name: Tensor(t.name, (calls,) + t.shape, t.dtype, t.role)
               for t in instruction.program.tensors.values() if t.name != acc.name}
    tensors["__p"] = Tensor("__p", (calls,) + acc.shape + (stmt.loop(reductions[0]).extent,), stmt.dtype, "output")
    return Program(instruction.name + "@products", tensors,
                   [Statement(stmt.name, loops, write, expr(stmt.expr), stmt.dtype, False)])


def execute_instruction(instruction: InstructionDescriptor, registers: dict[str, np.ndarray], calls: int) -> np.ndarray:
    """The accumulator increment of ``calls`` instructions on batched registers, shape (calls, lanes)."""
    saturation = instruction.saturation
    if saturation is None:
        return evaluate(_batched(instruction, calls), registers)[instruction.accumulator].reshape(calls, -1)
    products = evaluate(_products(instruction, calls), registers)["__p"].astype(np.int64)
    extent = products.shape[-1]
    if extent % saturation.terms:
        raise ValueError(f"{instruction.name}: reduction extent {extent} is not a multiple of {saturation.terms}")
    info = np.iinfo(NUMPY_DTYPES[saturation.dtype])
    groups = products.reshape(products.shape[:-1] + (extent // saturation.terms, saturation.terms)).sum(axis=-1)
    return np.clip(groups, info.min, info.max).sum(axis=-1).reshape(calls, -1)


def emulate(nest: RewrittenNest, packed_inputs: dict[str, np.ndarray], *, chunk: int = 16384) -> np.ndarray:
    """The packed output tensor computed instruction by instruction (see module docstring)."""
    instruction = nest.instruction
    acc = nest.accumulator
    out = np.zeros(acc.layout.size, dtype=NUMPY_DTYPES[acc.layout.dtype])
    flat_inputs = {name: np.ascontiguousarray(a).reshape(-1) for name, a in packed_inputs.items()}
    grids = np.array(list(itertools.product(*(range(l.extent) for l in nest.outer))), dtype=np.int64).reshape(-1, len(nest.outer))
    names = [l.var for l in nest.outer]
    for start in range(0, len(grids), chunk):
        points = grids[start:start + chunk]
        calls = len(points)
        registers = {}
        for plan in nest.sources:
            base = plan.base_const + sum(plan.base_stride(v) * points[:, k] for k, v in enumerate(names))
            offsets = np.array(plan.lane_offsets, dtype=np.int64)
            used = offsets >= 0
            values = np.zeros((calls, len(offsets)), dtype=NUMPY_DTYPES[plan.layout.dtype])
            values[:, used] = flat_inputs[plan.tensor][np.asarray(base)[:, None] + offsets[used][None, :]]
            register = instruction.program.tensor(plan.operand)
            registers[plan.operand] = values.reshape((calls,) + register.shape).astype(NUMPY_DTYPES[register.dtype])
        result = execute_instruction(instruction, registers, calls)
        base = acc.base_const + sum(acc.base_stride(v) * points[:, k] for k, v in enumerate(names))
        offsets = np.array(acc.lane_offsets, dtype=np.int64)
        used = offsets >= 0
        with np.errstate(over="ignore"):
            np.add.at(out, (np.asarray(base)[:, None] + offsets[used][None, :]).reshape(-1),
                      result[:, used].reshape(-1).astype(out.dtype))
    return out.reshape(acc.layout.shape)
