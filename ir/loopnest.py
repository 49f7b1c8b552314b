"""Affine loop-nest programs: the IR of the push-memory (seed 001) and tensorize (seed 002) targets.

A :class:`Program` is a list of :class:`Statement` s over named :class:`Tensor` s, executed in order
(each statement over its whole domain before the next; the Halide-style sequential semantics that
schedules must preserve).

Statement
    ``loops``: iteration domain as a box, outermost first: ``Loop(var, lo, hi, kind)`` with
    ``lo <= var < hi`` and ``kind`` ∈ {``data_parallel``, ``reduction``} (UNIT's annotations);
    ``write``: one :class:`Access`; ``expr``: expression tree over :class:`Load` s, :class:`Const` s,
    :class:`Call` s and :class:`Cast` s; ``accumulate=True`` means ``write += expr`` (reductions);
    ``dtype``: the dtype the expression is computed and stored in.

Access
    ``tensor[ floor((A·i + b) / div) ]`` — an affine map of the loop variables (rows of ``A`` in loop
    order), with an optional positive integer divisor per dimension (up-sampling ``in[x/2]``).

Build accesses from text with :func:`parse_access` (``"img[y + 1, 2*x - 1]"``, ``"in[x/2, y/2]"``).
:func:`evaluate` executes a program with NumPy (vectorised per statement) and is the golden model that
schedules, rewritten nests and simulators are checked against. :meth:`Program.validate` checks every
access stays inside its tensor over the whole domain.
"""

from __future__ import annotations

import ast
import itertools
import keyword
import math
import re
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

import numpy as np

from solvermap.errors import InputError

LOOP_KINDS = ("data_parallel", "reduction")
NUMPY_DTYPES = {
    "bool": np.bool_, "int8": np.int8, "uint8": np.uint8, "int16": np.int16, "uint16": np.uint16,
    "int32": np.int32, "int64": np.int64, "float16": np.float16, "float32": np.float32, "float64": np.float64,
}


GENERATORS = ("uniform", "normal", "constant", "ramp", "values")


@dataclass(frozen=True)
class Generator:
    """How the data of an input tensor is made (:func:`generate`); a field not used by ``kind`` stays None.

    ``uniform``: integers in [low, high] (floats in [low, high)); ``normal``: mean, std (rounded and clipped
    for integer dtypes); ``constant``: value; ``ramp``: start + step · flat index (wrapping like the dtype);
    ``values``: the row-major values themselves. ``seed`` fixes the random stream; without one the run's
    seed is used (mixed with the tensor name, so two inputs never share a stream).
    """

    kind: str = "uniform"
    low: float | int | None = None
    high: float | int | None = None
    mean: float | int | None = None
    std: float | int | None = None
    value: float | int | None = None
    start: float | int | None = None
    step: float | int | None = None
    values: tuple[float | int, ...] = ()
    seed: int | None = None


@dataclass(frozen=True)
class Tensor:
    name: str
    shape: tuple[int, ...]
    dtype: str = "int32"
    role: str = "temp"  # input | output | temp
    data: Generator | None = None  # inputs only: how test data is made (None: :func:`random_inputs`' default)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape)) if self.shape else 1


@dataclass(frozen=True)
class Loop:
    var: str
    lo: int
    hi: int  # exclusive
    kind: str = "data_parallel"

    @property
    def extent(self) -> int:
        return self.hi - self.lo


@dataclass(frozen=True)
class Access:
    """``tensor[floor((coeffs · loop_vars + offsets) / divisors)]``; coeffs row per tensor dimension."""

    tensor: str
    coeffs: tuple[tuple[int, ...], ...]
    offsets: tuple[int, ...]
    divisors: tuple[int, ...] = ()
    loop_vars: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.divisors:
            object.__setattr__(self, "divisors", (1,) * len(self.offsets))

    @property
    def rank(self) -> int:
        return len(self.offsets)

    def index(self, point: Sequence[int]) -> tuple[int, ...]:
        return tuple(
            (sum(c * p for c, p in zip(row, point)) + off) // div
            for row, off, div in zip(self.coeffs, self.offsets, self.divisors)
        )

    def strides(self) -> dict[str, tuple[int, ...]]:
        """Per loop variable, how one step moves each tensor index (before division)."""
        return {var: tuple(row[j] for row in self.coeffs) for j, var in enumerate(self.loop_vars)}

    def text(self) -> str:
        dims = []
        for row, off, div in zip(self.coeffs, self.offsets, self.divisors):
            terms = [(f"{c}*{v}" if c not in (1, -1) else ("-" if c == -1 else "") + v)
                     for c, v in zip(row, self.loop_vars) if c]
            expr = " + ".join(terms).replace("+ -", "- ") or "0"
            if off:
                expr += f" + {off}" if off > 0 else f" - {-off}"
            dims.append(f"({expr})/{div}" if div != 1 else expr)
        return f"{self.tensor}[{', '.join(dims)}]"


# ------------------------------------------------------------------ expressions


@dataclass(frozen=True)
class Load:
    access: Access


@dataclass(frozen=True)
class Const:
    value: float | int


@dataclass(frozen=True)
class Call:
    """An operator: add, sub, mul, div (floor for ints), max, min, shr, shl, and, or, select, abs, neg, clamp."""

    op: str
    args: tuple[Expr, ...]


@dataclass(frozen=True)
class Cast:
    dtype: str
    arg: Expr


Expr = Union[Load, Const, Call, Cast]

_BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "max": np.maximum, "min": np.minimum,
    "shr": np.right_shift, "shl": np.left_shift, "and": np.bitwise_and, "or": np.bitwise_or,
}


def loads(expr: Expr) -> list[Access]:
    """Every read access in an expression, left to right."""
    if isinstance(expr, Load):
        return [expr.access]
    if isinstance(expr, Call):
        return [a for arg in expr.args for a in loads(arg)]
    if isinstance(expr, Cast):
        return loads(expr.arg)
    return []


@dataclass(frozen=True)
class Statement:
    name: str
    loops: tuple[Loop, ...]
    write: Access
    expr: Expr
    dtype: str = "int32"
    accumulate: bool = False
    attrs: Mapping[str, Any] = field(default_factory=dict)

    @property
    def loop_vars(self) -> tuple[str, ...]:
        return tuple(loop.var for loop in self.loops)

    @property
    def reads(self) -> list[Access]:
        return loads(self.expr)

    @property
    def points(self) -> int:
        return int(np.prod([loop.extent for loop in self.loops])) if self.loops else 1

    def loop(self, var: str) -> Loop:
        for loop in self.loops:
            if loop.var == var:
                return loop
        raise KeyError(var)


@dataclass
class Program:
    name: str
    tensors: dict[str, Tensor]
    statements: list[Statement]
    attrs: dict[str, Any] = field(default_factory=dict)
    source: str = ""

    def tensor(self, name: str) -> Tensor:
        return self.tensors[name]

    @property
    def inputs(self) -> list[Tensor]:
        return [t for t in self.tensors.values() if t.role == "input"]

    @property
    def outputs(self) -> list[Tensor]:
        return [t for t in self.tensors.values() if t.role == "output"]

    def producers(self, tensor: str) -> list[Statement]:
        return [s for s in self.statements if s.write.tensor == tensor]

    def consumers(self, tensor: str) -> list[Statement]:
        return [s for s in self.statements if any(a.tensor == tensor for a in s.reads)]

    def validate(self) -> Program:
        names = set()
        for tensor in self.tensors.values():
            if any(d <= 0 for d in tensor.shape):
                raise InputError(self.source, f"tensor '{tensor.name}'.shape", f"dimensions must be positive, got {list(tensor.shape)}")
            if tensor.dtype not in NUMPY_DTYPES:
                raise InputError(self.source, f"tensor '{tensor.name}'.dtype", f"unknown dtype {tensor.dtype!r}")
            if tensor.role not in ("input", "output", "temp"):
                raise InputError(self.source, f"tensor '{tensor.name}'.role", f"unknown role {tensor.role!r}")
        for stmt in self.statements:
            where = f"statement '{stmt.name}'"
            if stmt.name in names:
                raise InputError(self.source, where, "duplicate statement name")
            names.add(stmt.name)
            for loop in stmt.loops:
                if loop.hi <= loop.lo:
                    raise InputError(self.source, f"{where}.loop '{loop.var}'", f"empty range [{loop.lo}, {loop.hi})")
                if loop.kind not in LOOP_KINDS:
                    raise InputError(self.source, f"{where}.loop '{loop.var}'", f"unknown loop kind {loop.kind!r}")
            if stmt.dtype not in NUMPY_DTYPES:
                raise InputError(self.source, f"{where}.dtype", f"unknown dtype {stmt.dtype!r}")
            for access in [stmt.write, *stmt.reads]:
                self._check_access(stmt, access)
        return self

    def _check_access(self, stmt: Statement, access: Access) -> None:
        where = f"statement '{stmt.name}' access {access.text()}"
        if access.tensor not in self.tensors:
            raise InputError(self.source, where, f"unknown tensor '{access.tensor}'")
        tensor = self.tensors[access.tensor]
        if access.rank != len(tensor.shape):
            raise InputError(self.source, where, f"rank {access.rank} but tensor has rank {len(tensor.shape)}")
        if tuple(access.loop_vars) != stmt.loop_vars:
            raise InputError(self.source, where, f"indexes loops {list(access.loop_vars)}, statement has {list(stmt.loop_vars)}")
        if any(d <= 0 for d in access.divisors):
            raise InputError(self.source, where, "divisors must be positive")
        # Affine maps (and floor division by a positive constant) reach their extremes at box corners.
        corners = itertools.product(*((loop.lo, loop.hi - 1) for loop in stmt.loops)) if stmt.loops else [()]
        lo = [None] * access.rank
        hi = [None] * access.rank
        for corner in corners:
            index = access.index(corner)
            for d, value in enumerate(index):
                lo[d] = value if lo[d] is None else min(lo[d], value)
                hi[d] = value if hi[d] is None else max(hi[d], value)
        for d, extent in enumerate(tensor.shape):
            if lo[d] < 0 or hi[d] >= extent:
                raise InputError(self.source, where,
                                 f"dimension {d} spans [{lo[d]}, {hi[d]}] outside [0, {extent - 1}]")


# ------------------------------------------------------------------ parsing


_ACCESS = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*\[(.*)\]\s*$", re.S)


def parse_access(text: str, loop_vars: Sequence[str]) -> Access:
    """Parse ``"name[e0, e1, ...]"`` with affine ``e`` in ``loop_vars`` (``/ k`` = floor division)."""
    match = _ACCESS.match(_unmangle(text))
    if not match:
        raise InputError("", "access", f"expected name[index, ...], got {text!r}")
    name, body = match.group(1), match.group(2)
    try:
        tree = ast.parse(f"({body},)", mode="eval").body
    except SyntaxError as exc:
        raise InputError("", "access", f"cannot parse {text!r}: {exc.msg}") from None
    coeffs, offsets, divisors = [], [], []
    for dim in tree.elts:
        div = 1
        if isinstance(dim, ast.BinOp) and isinstance(dim.op, (ast.Div, ast.FloorDiv)):
            if not isinstance(dim.right, ast.Constant) or not isinstance(dim.right.value, int):
                raise InputError("", "access", f"divisor must be an integer constant in {text!r}")
            div, dim = dim.right.value, dim.left
        linear, constant = _affine(dim, list(loop_vars), text)
        coeffs.append(tuple(linear))
        offsets.append(constant)
        divisors.append(div)
    return Access(name, tuple(coeffs), tuple(offsets), tuple(divisors), tuple(loop_vars))


_MANGLE = "__kw_"


def _mangle(text: str) -> str:
    """Tensor names that are Python keywords (``in``) are renamed so expressions parse."""
    return re.sub(r"\b([A-Za-z_]\w*)(?=\s*\[)", lambda m: _MANGLE + m.group(1) if keyword.iskeyword(m.group(1)) else m.group(1), text)


def _unmangle(text: str) -> str:
    return text.replace(_MANGLE, "")


def _affine(node: ast.AST, loop_vars: list[str], text: str) -> tuple[list[int], int]:
    zero = [0] * len(loop_vars)
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return zero, node.value
    if isinstance(node, ast.Name):
        if node.id not in loop_vars:
            raise InputError("", "access", f"unknown loop variable '{node.id}' in {text!r}")
        linear = list(zero)
        linear[loop_vars.index(node.id)] = 1
        return linear, 0
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        linear, constant = _affine(node.operand, loop_vars, text)
        return [-c for c in linear], -constant
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        (la, ca), (lb, cb) = _affine(node.left, loop_vars, text), _affine(node.right, loop_vars, text)
        sign = 1 if isinstance(node.op, ast.Add) else -1
        return [a + sign * b for a, b in zip(la, lb)], ca + sign * cb
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        (la, ca), (lb, cb) = _affine(node.left, loop_vars, text), _affine(node.right, loop_vars, text)
        if any(la) and any(lb):
            raise InputError("", "access", f"non-affine product in {text!r}")
        if any(la):
            return [a * cb for a in la], ca * cb
        return [b * ca for b in lb], ca * cb
    raise InputError("", "access", f"non-affine index expression in {text!r}")


def statement(name: str, loops: Sequence[tuple], write: str, expr: Expr | str, *, dtype: str = "int32",
              accumulate: bool = False, attrs: Mapping[str, Any] | None = None) -> Statement:
    """Convenience constructor: ``loops`` as ``(var, lo, hi[, kind])``; ``write``/``expr`` as text.

    Text expressions use Python syntax over accesses and integer constants, e.g.
    ``"(in[y, x] + 2*in[y, x+1] + in[y, x+2]) >> 2"``; functions ``max``, ``min``, ``abs``, ``select``
    and ``int32(...)``-style casts are allowed.
    """
    loop_objs = tuple(Loop(l[0], int(l[1]), int(l[2]), l[3] if len(l) > 3 else "data_parallel") for l in loops)
    vars_ = [loop.var for loop in loop_objs]
    expr_obj = parse_expr(expr, vars_) if isinstance(expr, str) else expr
    return Statement(name, loop_objs, parse_access(write, vars_), expr_obj, dtype, accumulate, dict(attrs or {}))


_AST_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.FloorDiv: "div", ast.Div: "div",
               ast.RShift: "shr", ast.LShift: "shl", ast.BitAnd: "and", ast.BitOr: "or"}


def parse_expr(text: str, loop_vars: Sequence[str]) -> Expr:
    try:
        tree = ast.parse(_mangle(text.strip()), mode="eval").body
    except SyntaxError as exc:
        raise InputError("", "expr", f"cannot parse {text!r}: {exc.msg}") from None
    return _expr(tree, list(loop_vars), text)


def _expr(node: ast.AST, loop_vars: list[str], text: str) -> Expr:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return Const(node.value)
    if isinstance(node, ast.Subscript):
        return Load(parse_access(ast.unparse(node), loop_vars))
    if isinstance(node, ast.BinOp) and type(node.op) in _AST_BINOPS:
        return Call(_AST_BINOPS[type(node.op)], (_expr(node.left, loop_vars, text), _expr(node.right, loop_vars, text)))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return Call("neg", (_expr(node.operand, loop_vars, text),))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        name = node.func.id
        args = tuple(_expr(a, loop_vars, text) for a in node.args)
        if name in NUMPY_DTYPES:
            return Cast(name, args[0])
        if name in ("max", "min", "abs", "select", "clamp"):
            return Call(name, args)
        raise InputError("", "expr", f"unknown function {name!r} in {text!r}")
    raise InputError("", "expr", f"unsupported expression {ast.unparse(node)!r} in {text!r}")


# ------------------------------------------------------------------ printing

# Python precedence of the operators the parser reads (higher binds tighter); all are left-associative.
_SYMBOLS = {"or": ("|", 1), "and": ("&", 2), "shl": ("<<", 3), "shr": (">>", 3), "add": ("+", 4), "sub": ("-", 4),
            "mul": ("*", 5), "div": ("//", 5)}
_UNARY = 6
_ATOM = 7


def expr_text(expr: Expr) -> str:
    """The text :func:`parse_expr` reads back into ``expr`` (the same tree: parentheses where precedence and
    left-associativity need them). A negative :class:`Const` prints as ``-c``, which reads back as
    ``neg(c)``: the same values, another tree (the parser makes no negative constants)."""
    return _text(expr)[0]


def _text(expr: Expr) -> tuple[str, int]:
    if isinstance(expr, Const):
        value = expr.value
        if isinstance(value, (bool, np.bool_)):
            text = repr(bool(value))
        elif isinstance(value, (int, np.integer)):
            text = str(int(value))
        else:
            value = float(value)
            if not math.isfinite(value):
                raise InputError("", "expr", f"constant {value} has no text form")
            text = repr(value)
        return text, (_UNARY if text.startswith("-") else _ATOM)
    if isinstance(expr, Load):
        return expr.access.text(), _ATOM
    if isinstance(expr, Cast):
        return f"{expr.dtype}({_text(expr.arg)[0]})", _ATOM
    op = expr.op
    if op in _SYMBOLS and len(expr.args) == 2:
        symbol, prec = _SYMBOLS[op]
        (left, lp), (right, rp) = _text(expr.args[0]), _text(expr.args[1])
        left = left if lp >= prec else f"({left})"
        right = right if rp > prec else f"({right})"
        return f"{left} {symbol} {right}", prec
    if op == "neg" and len(expr.args) == 1:
        inner, prec = _text(expr.args[0])
        return "-" + (inner if prec >= _UNARY and not inner.startswith("-") else f"({inner})"), _UNARY
    if op in ("max", "min", "abs", "select", "clamp"):
        return f"{op}({', '.join(_text(a)[0] for a in expr.args)})", _ATOM
    raise InputError("", "expr", f"operator {op!r} with {len(expr.args)} operands has no text form")


# ------------------------------------------------------------------ evaluation


def _grid(stmt: Statement) -> list[np.ndarray]:
    if not stmt.loops:
        return []
    axes = [np.arange(loop.lo, loop.hi, dtype=np.int64) for loop in stmt.loops]
    return [g.ravel() for g in np.meshgrid(*axes, indexing="ij")]


def access_indices(access: Access, grid: list[np.ndarray], points: int) -> tuple[np.ndarray, ...]:
    """The index, per dimension, that ``access`` touches at each of ``points`` points of the loop ``grid``."""
    out = []
    for row, off, div in zip(access.coeffs, access.offsets, access.divisors):
        value = np.full(points, off, dtype=np.int64)
        for c, g in zip(row, grid):
            if c:
                value = value + c * g
        out.append(np.floor_divide(value, div))
    return tuple(out)


def _eval(expr: Expr, env: Mapping[str, np.ndarray], grid, points: int, dtype) -> np.ndarray:
    if isinstance(expr, Const):
        return np.full(points, expr.value, dtype=dtype)
    if isinstance(expr, Load):
        return env[expr.access.tensor][access_indices(expr.access, grid, points)].astype(dtype, copy=False)
    if isinstance(expr, Cast):
        target = NUMPY_DTYPES[expr.dtype]
        return _eval(expr.arg, env, grid, points, target).astype(target)
    args = [_eval(a, env, grid, points, dtype) for a in expr.args]
    op = expr.op
    with np.errstate(over="ignore"):
        if op in _BINARY:
            return _BINARY[op](args[0], args[1]).astype(dtype, copy=False)
        if op == "div":
            if np.issubdtype(np.dtype(dtype), np.integer):
                return np.floor_divide(args[0], args[1]).astype(dtype, copy=False)
            return np.divide(args[0], args[1]).astype(dtype, copy=False)
        if op == "neg":  # in the statement's dtype, like every other operator (int8: -(-128) wraps to -128)
            return np.negative(args[0]).astype(dtype, copy=False)
        if op == "abs":
            return np.abs(args[0]).astype(dtype, copy=False)
        if op == "select":
            return np.where(args[0] != 0, args[1], args[2]).astype(dtype, copy=False)
        if op == "clamp":
            return np.clip(args[0], args[1], args[2]).astype(dtype, copy=False)
    raise InputError("", "expr", f"unknown operator {op!r}")


def evaluate(program: Program, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Execute ``program`` on ``inputs``; returns every tensor (inputs, temporaries, outputs)."""
    env: dict[str, np.ndarray] = {}
    for tensor in program.tensors.values():
        np_dtype = NUMPY_DTYPES[tensor.dtype]
        if tensor.role == "input":
            if tensor.name not in inputs:
                raise InputError(program.source, f"input '{tensor.name}'", "missing input array")
            array = np.asarray(inputs[tensor.name])
            if tuple(array.shape) != tuple(tensor.shape):
                raise InputError(program.source, f"input '{tensor.name}'", f"shape {array.shape} != {tensor.shape}")
            env[tensor.name] = array.astype(np_dtype)
        else:
            env[tensor.name] = np.zeros(tensor.shape, dtype=np_dtype)
    for stmt in program.statements:
        grid = _grid(stmt)
        points = stmt.points
        np_dtype = NUMPY_DTYPES[stmt.dtype]
        values = _eval(stmt.expr, env, grid, points, np_dtype)
        target = env[stmt.write.tensor]
        index = access_indices(stmt.write, grid, points)
        with np.errstate(over="ignore"):
            if stmt.accumulate:
                acc = target.astype(np_dtype)
                np.add.at(acc, index, values)
                env[stmt.write.tensor] = acc.astype(target.dtype)
            else:
                target[index] = values.astype(target.dtype)
    return env


def default_range(dtype: str) -> tuple[int, int]:
    """The integer range :func:`random_inputs` draws from by default: the dtype's range cut to [-128, 255]."""
    info = np.iinfo(NUMPY_DTYPES[dtype])
    return max(info.min, -128), min(info.max, 255)


def generate(tensor: Tensor, seed: int = 0) -> np.ndarray:
    """The data of an input tensor made by its :class:`Generator` (``seed``: the run's seed)."""
    gen = tensor.data or Generator()
    np_dtype = NUMPY_DTYPES[tensor.dtype]
    integer = np.issubdtype(np_dtype, np.integer)
    size = math.prod(tensor.shape)
    stream = gen.seed if gen.seed is not None else [int(seed) & 0xFFFFFFFF, zlib.crc32(tensor.name.encode())]
    rng = np.random.default_rng(stream)
    if gen.kind == "uniform":
        if integer:
            lo, hi = default_range(tensor.dtype)
            lo, hi = int(gen.low if gen.low is not None else lo), int(gen.high if gen.high is not None else hi)
            data = rng.integers(lo, hi + 1, size=size)
        else:
            data = rng.uniform(gen.low if gen.low is not None else -1.0, gen.high if gen.high is not None else 1.0, size)
    elif gen.kind == "normal":
        data = rng.normal(gen.mean or 0.0, gen.std if gen.std is not None else 1.0, size)
        if integer:
            info = np.iinfo(np_dtype)
            data = np.clip(np.rint(data), info.min, info.max)
    elif gen.kind == "constant":
        data = np.full(size, gen.value or 0)
    elif gen.kind == "ramp":
        data = (gen.start or 0) + (gen.step if gen.step is not None else 1) * np.arange(size, dtype=np.int64 if integer else np.float64)
    elif gen.kind == "values":
        data = np.asarray(gen.values)
    else:
        raise InputError("", f"tensor '{tensor.name}'.data", f"unknown generator {gen.kind!r}")
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(data).astype(np_dtype).reshape(tensor.shape)


def random_inputs(program: Program, seed: int = 0) -> dict[str, np.ndarray]:
    """Deterministic inputs: each input tensor's :class:`Generator` where it has one, else random values in
    its dtype range (cut to [-128, 255]; standard normal for floats) from one stream seeded by ``seed``."""
    rng = np.random.default_rng(seed)
    out = {}
    for tensor in program.inputs:
        np_dtype = NUMPY_DTYPES[tensor.dtype]
        if tensor.data is not None:
            out[tensor.name] = generate(tensor, seed)
        elif np.issubdtype(np_dtype, np.integer):
            lo, hi = default_range(tensor.dtype)
            out[tensor.name] = rng.integers(lo, hi + 1, size=tensor.shape).astype(np_dtype)
        else:
            out[tensor.name] = rng.standard_normal(tensor.shape).astype(np_dtype)
    return out
