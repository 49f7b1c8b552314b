"""Loop-nest program files: the text spelling of :class:`~solvermap.ir.loopnest.Program` (YAML or JSON).

A program file and a Python builder are two spellings of one IR: :func:`dumps` writes any program,
:func:`load` reads it back to an equal :class:`Program` (``solvermap workloads --export NAME`` writes every
built-in this way). Schema version 1::

    solvermap-program: 1
    name: blur5
    description: 5x5 box blur as an init and an update with a reduction domain    # optional
    attrs: {image: 16}                  # optional, plain data (``coarse_loops: 1`` marks a tile loop)
    buffers:                            # name → shape, dtype, role (input | output | temp, default temp)
      input:  {shape: [16, 16], dtype: int16, role: input,
               data: {generator: uniform, low: 0, high: 255, seed: 7}}
      sum:    {shape: [12, 12], dtype: int16}
      output: {shape: [12, 12], dtype: int16, role: output}
    statements:                         # executed in order, each over its whole box domain
      - name: init                      # f(x, y) = 0
        loops: [{var: y, hi: 12}, {var: x, hi: 12}]
        write: sum[y, x]
        expr: 0
      - name: update                    # f(x, y) += g(x + r.x, y + r.y)
        loops: [{var: y, hi: 12}, {var: x, hi: 12},
                {var: ry, hi: 5, kind: reduction}, {var: rx, hi: 5, kind: reduction}]
        write: sum[y, x]
        op: +=
        expr: input[y + ry, x + rx]
      - name: hw_output
        loops: [{var: y, hi: 12}, {var: x, hi: 12}]
        write: output[y, x]
        expr: sum[y, x] >> 5

Loops are ``lo <= var < hi`` (``lo`` defaults to 0; ``kind`` data_parallel or reduction). Accesses are
affine in the statement's loop variables with an optional floor divisor per dimension (``in[y/2, x/2]``);
expressions use ``+ - * // >> << & |``, unary minus, integer and float literals, ``max min abs select
clamp`` and casts written as dtype calls (``int32(a[i])``). A statement computes in its ``dtype``
(default: the dtype of the buffer it writes). ``op: +=`` accumulates into the buffer — the Halide
update: an init statement and one or more update statements on one buffer make a reduction. Input data
generators (``data``, inputs only): ``uniform`` (low, high), ``normal`` (mean, std), ``constant``
(value), ``ramp`` (start, step), ``values`` (nested lists in the buffer's shape); each takes an optional
``seed``. Without ``data`` an input gets :func:`~solvermap.ir.loopnest.random_inputs`' default. The
reference output is :func:`~solvermap.ir.loopnest.evaluate` of the file.

Reading is defensive: a file is at most :data:`MAX_FILE_BYTES`, YAML aliases are refused, names, counts
and numbers are bounded, and the memory the buffers need is estimated before anything is allocated
(:data:`MAX_BUFFER_BYTES`; :data:`MAX_POINTS` operations per statement). Every problem is one
:class:`~solvermap.errors.InputError` naming the file, the field and the problem. Nothing in a file runs
code: expressions are read by :mod:`ast` into the IR's expression tree, never evaluated by Python.
"""

from __future__ import annotations

import json
import keyword
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, Union

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict, Field, JsonValue, StrictFloat, StrictInt, StrictStr, ValidationError, model_validator

from solvermap.errors import InputError
from solvermap.ir.loopnest import (
    GENERATORS,
    LOOP_KINDS,
    NUMPY_DTYPES,
    Call,
    Cast,
    Const,
    Expr,
    Generator,
    Load,
    Loop,
    Program,
    Statement,
    Tensor,
    expr_text,
    parse_access,
    parse_expr,
)

SCHEMA_KEY = "solvermap-program"
VERSION = 1
SUFFIXES = (".yaml", ".yml", ".json")
MAX_FILE_BYTES = 16 << 20
MAX_BUFFER_BYTES = 2 << 30  # the buffers of one program (every tensor once, as the golden executor holds them)
MAX_POINTS = 1 << 32  # operations of one statement (the golden executor enumerates them)
MAX_RANK = 8
MAX_LOOPS = 10  # bounds checks visit the 2^loops corners of a domain
MAX_EXPR_CHARS = 20_000
MAX_EXPR_DEPTH = 200
MAX_COEFF = 1 << 20
MAX_OFFSET = 1 << 40
MAX_BOUND = 1 << 31

Name = Annotated[StrictStr, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", max_length=64)]
Extent = Annotated[StrictInt, Field(ge=1, le=MAX_BOUND - 1)]
Bound = Annotated[StrictInt, Field(ge=-MAX_BOUND, le=MAX_BOUND)]
Number = Union[StrictInt, Annotated[StrictFloat, Field(allow_inf_nan=False)]]
Dtype = Literal[tuple(NUMPY_DTYPES)]  # type: ignore[valid-type]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DataSpec(_Strict):
    generator: Literal[GENERATORS]  # type: ignore[valid-type]
    low: Number | None = None
    high: Number | None = None
    mean: Number | None = None
    std: Annotated[Number, Field(ge=0)] | None = None
    value: Number | None = None
    start: Number | None = None
    step: Number | None = None
    values: list[Any] | None = None
    seed: Annotated[StrictInt, Field(ge=0, le=(1 << 63) - 1)] | None = None

    @model_validator(mode="after")
    def _fields_of_generator(self) -> DataSpec:
        used = {"uniform": {"low", "high"}, "normal": {"mean", "std"}, "constant": {"value"},
                "ramp": {"start", "step"}, "values": {"values"}}[self.generator]
        for key in ("low", "high", "mean", "std", "value", "start", "step", "values"):
            if getattr(self, key) is not None and key not in used:
                raise ValueError(f"'{key}' is not a parameter of generator {self.generator} "
                                 f"(it takes {', '.join(sorted(used))})")
        if self.generator == "values" and self.values is None:
            raise ValueError("generator values needs 'values'")
        if self.low is not None and self.high is not None and self.low > self.high:
            raise ValueError(f"low {self.low} is above high {self.high}")
        return self


class BufferSpec(_Strict):
    shape: Annotated[list[Extent], Field(min_length=1, max_length=MAX_RANK)]
    dtype: Dtype
    role: Literal["input", "output", "temp"] = "temp"
    data: DataSpec | None = None


class LoopSpec(_Strict):
    var: Name
    lo: Bound = 0
    hi: Bound
    kind: Literal[LOOP_KINDS] = "data_parallel"  # type: ignore[valid-type]


class StatementSpec(_Strict):
    name: Name
    loops: Annotated[list[LoopSpec], Field(max_length=MAX_LOOPS)]
    write: Annotated[StrictStr, Field(max_length=4096)]
    expr: Union[Annotated[StrictStr, Field(max_length=MAX_EXPR_CHARS)], StrictInt,
                Annotated[StrictFloat, Field(allow_inf_nan=False)]]
    op: Literal["=", "+="] = "="
    dtype: Dtype | None = None
    attrs: dict[str, JsonValue] = {}


class ProgramSpec(_Strict):
    version: Literal[1] = Field(alias=SCHEMA_KEY)
    name: Annotated[StrictStr, Field(min_length=1, max_length=200)]
    description: Annotated[StrictStr, Field(max_length=10_000)] = ""
    attrs: dict[str, JsonValue] = {}
    buffers: Annotated[dict[Name, BufferSpec], Field(min_length=1, max_length=10_000)]
    statements: Annotated[list[StatementSpec], Field(min_length=1, max_length=10_000)]


# ------------------------------------------------------------------ reading


class _NoAliasLoader(yaml.SafeLoader):
    """Safe YAML without anchors and aliases (a few aliases can expand into an enormous document)."""

    def compose_node(self, parent, index):  # noqa: ANN001 - PyYAML's signature
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(None, None, "aliases are not allowed in a program file", event.start_mark)
        return super().compose_node(parent, index)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def parse_text(text: str, source: str, fmt: str) -> Any:
    """YAML or JSON text → plain data; every failure one :class:`InputError`."""
    if not text.strip():
        raise InputError(source, "", "empty file")
    try:
        if fmt == "json":
            return json.loads(text)
        return yaml.load(text, Loader=_NoAliasLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else ""
        raise InputError(source, where, _one_line(f"invalid YAML: {getattr(exc, 'problem', None) or exc}")) from None
    except json.JSONDecodeError as exc:
        raise InputError(source, f"line {exc.lineno}", _one_line(f"invalid JSON: {exc.msg}")) from None
    except RecursionError:
        raise InputError(source, "", "nested too deeply") from None
    except (ValueError, TypeError, MemoryError) as exc:  # e.g. an integer literal of more than 4300 digits
        raise InputError(source, "", _one_line(f"cannot read: {exc}")[:300]) from None


def _error_field(err: Mapping[str, Any]) -> str:
    loc = [str(p) for p in err["loc"]]
    # union members put their type into the location ("expr.str"); keep the user's path only
    loc = [p for p in loc if not re.fullmatch(r"(str|int|float|bool|none|list\[.*\]|dict\[.*\]|function-after\[.*\]|"
                                              r"constrained-.*|lax-or-strict\[.*\]|json-or-python\[.*\])", p)]
    out = ""
    for p in loc:
        out += f"[{p}]" if p.isdigit() else (f".{p}" if out else p)
    return out


def _spec(data: Any, source: str) -> ProgramSpec:
    if not isinstance(data, dict):
        raise InputError(source, "", f"expected a mapping with '{SCHEMA_KEY}: {VERSION}', got {type(data).__name__}")
    if SCHEMA_KEY not in data:
        raise InputError(source, SCHEMA_KEY, f"missing: not a loop-nest program file (expected '{SCHEMA_KEY}: {VERSION}')")
    if data[SCHEMA_KEY] != VERSION:
        raise InputError(source, SCHEMA_KEY, f"unsupported version {_one_line(repr(data[SCHEMA_KEY]))[:40]}; "
                                             f"this solvermap reads version {VERSION}")
    try:
        return ProgramSpec.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        err = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
        message = {"extra_forbidden": "unknown field", "missing": "missing required field"}.get(err["type"], err["msg"])
        message = message.removeprefix("Value error, ")
        more = len(errors) - 1
        suffix = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
        raise InputError(source, _error_field(err), _one_line(message)[:300] + suffix) from None
    except RecursionError:
        raise InputError(source, "", "nested too deeply") from None


def _generator(spec: DataSpec, buffer: str, shape: tuple[int, ...], dtype: str, source: str) -> Generator:
    where = f"buffers.{buffer}.data"
    np_dtype = np.dtype(NUMPY_DTYPES[dtype])
    values: tuple = ()
    if spec.generator == "values":
        try:
            array = np.asarray(spec.values, dtype=object)
        except (ValueError, RecursionError):
            raise InputError(source, f"{where}.values", "must be nested lists in the buffer's shape") from None
        if array.shape != shape:
            raise InputError(source, f"{where}.values", f"shape {list(array.shape)} but the buffer has shape {list(shape)}")
        flat = array.ravel().tolist()
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in flat):
            raise InputError(source, f"{where}.values", "must be numbers")
        values = tuple(flat)
    if np.issubdtype(np_dtype, np.integer):
        info = np.iinfo(np_dtype)
        for key in ("low", "high", "value"):
            v = getattr(spec, key)
            if v is not None and not info.min <= v <= info.max:
                raise InputError(source, f"{where}.{key}", f"{v} is outside the range of {dtype} [{info.min}, {info.max}]")
        if values and not all(info.min <= v <= info.max and float(v).is_integer() for v in values):
            raise InputError(source, f"{where}.values", f"every value must be an integer in the range of {dtype}")
        for key in ("start", "step"):
            v = getattr(spec, key)
            if v is not None and (not float(v).is_integer() or abs(v) > MAX_OFFSET):
                raise InputError(source, f"{where}.{key}", f"must be an integer of at most 2^40 for {dtype}, got {v}")
    elif any(abs(v) > np.finfo(np_dtype).max for v in values):
        raise InputError(source, f"{where}.values", f"a value is outside the range of {dtype}")
    return Generator(spec.generator, spec.low, spec.high, spec.mean, spec.std, spec.value, spec.start, spec.step,
                     values, spec.seed)


def _check_access(access, stmt_name: str, what: str, source: str) -> None:
    where = f"statement '{stmt_name}'.{what}"
    if any(abs(c) > MAX_COEFF for row in access.coeffs for c in row):
        raise InputError(source, where, f"a coefficient exceeds 2^20 in {access.text()}")
    if any(abs(o) > MAX_OFFSET for o in access.offsets) or any(d > MAX_BOUND for d in access.divisors):
        raise InputError(source, where, f"an offset exceeds 2^40 or a divisor 2^31 in {access.tensor}[...]")


def _expr_depth(expr: Expr, limit: int) -> int:
    """Depth of an expression tree, iteratively (a deep tree must not exhaust the stack here)."""
    deepest, stack = 0, [(expr, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        if isinstance(node, Call):
            stack.extend((a, depth + 1) for a in node.args)
        elif isinstance(node, Cast):
            stack.append((node.arg, depth + 1))
    return deepest


_BITWISE = {"shr": ">>", "shl": "<<", "and": "&", "or": "|"}


def _operand_dtype(node: Expr, context: str) -> str:
    """The dtype an operand reaches its operator in (the golden executor casts loads and most results to the
    context; a cast keeps its own dtype, and so do neg and abs of it)."""
    while isinstance(node, Call) and node.op in ("neg", "abs") and len(node.args) == 1:
        node = node.args[0]
    return node.dtype if isinstance(node, Cast) else context


def _check_constants(expr: Expr, dtype: str, where: str, source: str) -> None:
    """Every literal is finite and fits the dtype it is computed in (the statement's, or a cast's); shifts and
    bitwise operators are computed in an integer dtype."""
    stack = [(expr, dtype)]
    while stack:
        node, context = stack.pop()
        if isinstance(node, Const):
            np_dtype = np.dtype(NUMPY_DTYPES[context])
            value = node.value
            if isinstance(value, float) and not math.isfinite(value):
                raise InputError(source, where, f"constant {value} is not finite")
            if np.issubdtype(np_dtype, np.integer):
                info = np.iinfo(np_dtype)
                if not info.min <= value <= info.max:
                    raise InputError(source, where, f"constant {value} does not fit {context} [{info.min}, {info.max}]")
            elif np.issubdtype(np_dtype, np.floating) and abs(value) > np.finfo(np_dtype).max:
                raise InputError(source, where, f"constant {value} does not fit {context}")
        elif isinstance(node, Call):
            if node.op == "neg" and len(node.args) == 1 and isinstance(node.args[0], Const):
                stack.append((Const(-node.args[0].value), context))  # a negative literal: check -c, not c
                continue
            if node.op in _BITWISE:
                for arg in node.args:
                    kind = np.dtype(NUMPY_DTYPES[_operand_dtype(arg, context)])
                    if not (np.issubdtype(kind, np.integer) or (node.op in ("and", "or") and kind == bool)):
                        raise InputError(source, where, f"{_BITWISE[node.op]} needs integer operands, got {kind}")
            stack.extend((a, context) for a in node.args)
        elif isinstance(node, Cast):
            stack.append((node.arg, node.dtype))


def _arity(expr: Expr, where: str, source: str) -> None:
    wanted = {"max": 2, "min": 2, "abs": 1, "select": 3, "clamp": 3}
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, Call):
            if node.op in wanted and len(node.args) != wanted[node.op]:
                raise InputError(source, where, f"{node.op} takes {wanted[node.op]} operands, got {len(node.args)}")
            stack.extend(node.args)
        elif isinstance(node, Cast):
            if not isinstance(node.arg, (Load, Const, Call, Cast)):
                raise InputError(source, where, f"cast to {node.dtype} takes one operand")
            stack.append(node.arg)


def _statement(spec: StatementSpec, index: int, tensors: Mapping[str, Tensor], source: str) -> Statement:
    where = f"statements[{index}]"
    loops = tuple(Loop(lp.var, lp.lo, lp.hi, lp.kind) for lp in spec.loops)
    names = [lp.var for lp in loops]
    for lp in loops:
        if keyword.iskeyword(lp.var):
            raise InputError(source, f"{where}.loops", f"loop variable '{lp.var}' is a reserved word")
        if lp.hi <= lp.lo:
            raise InputError(source, f"{where}.loops", f"loop '{lp.var}' has an empty range [{lp.lo}, {lp.hi})")
    if len(set(names)) != len(names):
        raise InputError(source, f"{where}.loops", f"a loop variable repeats in {names}")
    try:
        write = parse_access(spec.write, names)
        expr = parse_expr(str(spec.expr), names) if isinstance(spec.expr, str) else Const(spec.expr)
    except InputError as exc:
        raise InputError(source, f"{where}.{exc.field}", exc.problem) from None
    except (RecursionError, MemoryError):
        raise InputError(source, f"{where}.expr", "nested too deeply") from None
    if _expr_depth(expr, MAX_EXPR_DEPTH) > MAX_EXPR_DEPTH:
        raise InputError(source, f"{where}.expr", f"nested deeper than {MAX_EXPR_DEPTH} levels")
    if write.tensor not in tensors:
        raise InputError(source, f"{where}.write", f"unknown buffer '{write.tensor}'")
    dtype = spec.dtype or tensors[write.tensor].dtype
    stmt = Statement(spec.name, loops, write, expr, dtype, spec.op == "+=", dict(spec.attrs))
    for access in [write, *stmt.reads]:
        _check_access(access, spec.name, "write" if access is write else "expr", source)
    _arity(expr, f"{where}.expr", source)
    _check_constants(expr, dtype, f"{where}.expr", source)
    return stmt


def estimate_bytes(tensors: Mapping[str, Tensor]) -> int:
    """Bytes the buffers of a program need (each tensor once), from shapes and dtypes alone."""
    return sum(math.prod(t.shape) * np.dtype(NUMPY_DTYPES[t.dtype]).itemsize for t in tensors.values())


def from_data(data: Any, source: str = "", *, max_bytes: int = MAX_BUFFER_BYTES) -> Program:
    """A validated :class:`Program` from the plain data of a program file."""
    spec = _spec(data, source)
    tensors: dict[str, Tensor] = {}
    for name, b in spec.buffers.items():
        shape = tuple(b.shape)
        if b.data is not None and b.role != "input":
            raise InputError(source, f"buffers.{name}.data", "only input buffers take a data generator")
        generator = _generator(b.data, name, shape, b.dtype, source) if b.data is not None else None
        tensors[name] = Tensor(name, shape, b.dtype, b.role, generator)
    need = estimate_bytes(tensors)
    if need > max_bytes:
        raise InputError(source, "buffers", f"the buffers need {need / 2**30:.3g} GiB, more than the "
                                            f"{max_bytes / 2**30:.3g} GiB a program may use")
    for i, s in enumerate(spec.statements):
        points = math.prod(lp.hi - lp.lo for lp in s.loops) if s.loops else 1
        if points > MAX_POINTS:
            raise InputError(source, f"statements[{i}].loops", f"{points} operations, more than the 2^32 a statement may have")
    statements = [_statement(s, i, tensors, source) for i, s in enumerate(spec.statements)]
    program = Program(spec.name, tensors, statements, dict(spec.attrs), source=source)
    if spec.description:
        program.attrs.setdefault("description", spec.description)
    return program.validate()


def loads(text: str, source: str = "", fmt: str = "yaml", *, max_bytes: int = MAX_BUFFER_BYTES) -> Program:
    return from_data(parse_text(text, source, fmt), source, max_bytes=max_bytes)


def load(path: str | Path, *, max_bytes: int = MAX_BUFFER_BYTES) -> Program:
    """Read a program file (``.yaml``/``.yml``/``.json``)."""
    path = Path(path)
    source = str(path)
    if not path.is_file():
        raise InputError(source, "", "no such file")
    if path.stat().st_size > MAX_FILE_BYTES:
        raise InputError(source, "", f"{path.stat().st_size} bytes, more than the {MAX_FILE_BYTES >> 20} MiB a program file may have")
    return loads_bytes(path.read_bytes(), source, "json" if path.suffix.lower() == ".json" else "yaml", max_bytes=max_bytes)


def loads_bytes(raw: bytes, source: str = "", fmt: str = "yaml", *, max_bytes: int = MAX_BUFFER_BYTES) -> Program:
    """A program from the bytes of a file (UTF-8 YAML or JSON)."""
    if len(raw) > MAX_FILE_BYTES:
        raise InputError(source, "", f"{len(raw)} bytes, more than the {MAX_FILE_BYTES >> 20} MiB a program file may have")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(source, "", f"not UTF-8 text (byte {exc.start})") from None
    return loads(text, source, fmt, max_bytes=max_bytes)


def is_program_file(path: str | Path) -> bool:
    """True for a ``.yaml``/``.yml`` or ``.json`` file whose top level names the program schema
    (``solvermap-program: 1``), or that is not UTF-8 text at all (this loader says so in one line). Other YAML
    files are layer-shape files (:mod:`solvermap.ir.layer_shapes`)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in (".yaml", ".yml"):
        if not path.is_file() or path.stat().st_size > MAX_FILE_BYTES:
            return True  # this loader's one line: not a file, or too large
        try:
            text = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            return True
        return re.search(rf"^['\"]?{re.escape(SCHEMA_KEY)}['\"]?\s*:", text, re.MULTILINE) is not None
    if suffix != ".json" or not path.is_file() or path.stat().st_size > MAX_FILE_BYTES:
        return False
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError:
        return True
    except (ValueError, RecursionError):
        return False
    return isinstance(data, dict) and SCHEMA_KEY in data


# ------------------------------------------------------------------ writing


def _plain(value: Any, where: str) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v, where) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, where) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    if value is None or isinstance(value, str):
        return value
    raise InputError("", where, f"{type(value).__name__} value has no file form")


def _data_spec(tensor: Tensor) -> dict[str, Any]:
    gen = tensor.data
    out: dict[str, Any] = {"generator": gen.kind}
    for key in ("low", "high", "mean", "std", "value", "start", "step"):
        if getattr(gen, key) is not None:
            out[key] = _plain(getattr(gen, key), f"buffers.{tensor.name}.data")
    if gen.kind == "values":
        out["values"] = np.asarray(gen.values, dtype=object).reshape(tensor.shape).tolist()
    if gen.seed is not None:
        out["seed"] = int(gen.seed)
    return out


def to_data(program: Program) -> dict[str, Any]:
    """The plain data of ``program``'s file (what :func:`from_data` reads back to an equal program)."""
    attrs = dict(program.attrs)
    description = attrs.pop("description", None) if isinstance(program.attrs.get("description"), str) else None
    out: dict[str, Any] = {SCHEMA_KEY: VERSION, "name": program.name}
    if description:
        out["description"] = description
    if attrs:
        out["attrs"] = _plain(attrs, "attrs")
    buffers = {}
    for t in program.tensors.values():
        b: dict[str, Any] = {"shape": [int(d) for d in t.shape], "dtype": t.dtype}
        if t.role != "temp":
            b["role"] = t.role
        if t.data is not None:
            b["data"] = _data_spec(t)
        buffers[t.name] = b
    out["buffers"] = buffers
    statements = []
    for s in program.statements:
        loops = []
        for lp in s.loops:
            loop: dict[str, Any] = {"var": lp.var}
            if lp.lo:
                loop["lo"] = int(lp.lo)
            loop["hi"] = int(lp.hi)
            if lp.kind != "data_parallel":
                loop["kind"] = lp.kind
            loops.append(loop)
        stmt: dict[str, Any] = {"name": s.name, "loops": loops, "write": s.write.text()}
        if s.accumulate:
            stmt["op"] = "+="
        stmt["expr"] = _bare_constant(s.expr) if isinstance(s.expr, Const) else expr_text(s.expr)
        if s.dtype != program.tensors[s.write.tensor].dtype:
            stmt["dtype"] = s.dtype
        if s.attrs:
            stmt["attrs"] = _plain(s.attrs, f"statement '{s.name}'.attrs")
        statements.append(stmt)
    out["statements"] = statements
    return out


def _bare_constant(expr: Const) -> Any:
    """A constant expression is written as a number (``expr: 0``) where it reads back as itself."""
    value = _plain(expr.value, "expr")
    return value if not isinstance(value, bool) else expr_text(expr)


class _Flow(list):
    """A list written on one line (shapes, loop lists)."""


class _FlowMap(dict):
    """A mapping written on one line (a loop, a buffer)."""


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(_Flow, lambda d, v: d.represent_sequence("tag:yaml.org,2002:seq", v, flow_style=True))
_Dumper.add_representer(_FlowMap, lambda d, v: d.represent_mapping("tag:yaml.org,2002:map", v.items(), flow_style=True))


def _yaml_layout(data: dict[str, Any]) -> dict[str, Any]:
    out = dict(data)
    out["buffers"] = {k: _FlowMap({**b, "shape": _Flow(b["shape"])}) if "data" not in b or b["data"]["generator"] != "values"
                      else {**b, "shape": _Flow(b["shape"]), "data": {**b["data"], "values": [_Flow(r) if isinstance(r, list) else r
                                                                                             for r in b["data"]["values"]]}}
                      for k, b in data["buffers"].items()}
    out["statements"] = [{**s, "loops": _Flow([_FlowMap(lp) for lp in s["loops"]])} for s in data["statements"]]
    return out


def dumps(program: Program, fmt: str = "yaml") -> str:
    """``program`` as a program file (``fmt``: yaml or json)."""
    data = to_data(program)
    if fmt == "json":
        return json.dumps(data, indent=2) + "\n"
    return yaml.dump(_yaml_layout(data), Dumper=_Dumper, sort_keys=False, width=200, allow_unicode=True)


def save(program: Program, path: str | Path) -> None:
    path = Path(path)
    path.write_text(dumps(program, "json" if path.suffix.lower() == ".json" else "yaml"))


def export_workload(name: str, family: str | None = None, params: Mapping[str, Any] | None = None, fmt: str = "yaml") -> str:
    """A built-in loop-nest workload as a program file (``family`` picks among several of that name)."""
    from solvermap.errors import UnknownNameError
    from solvermap.ir.workloads import all_workloads, build

    if fmt not in ("yaml", "json"):
        raise InputError("--format", "", f"expected yaml or json, got {fmt!r}")
    families = sorted(w.family for w in all_workloads() if w.name == name)
    if not families:
        raise UnknownNameError(f"unknown workload {name!r}; see `solvermap workloads`")
    if family is not None and family not in families:
        raise UnknownNameError(f"workload {name!r} exists for {', '.join(families)}, not for {family!r}")
    built = [build(name, f, params) for f in ([family] if family else families)]
    programs = [w for w in built if isinstance(w.ir, Program)]
    if not programs:
        raise InputError(name, "", f"workload {name!r} ({', '.join(families)}) is a dataflow graph, not a loop-nest "
                                   "program; only loop-nest programs have a program file")
    if len(programs) > 1:
        raise InputError(name, "--family", f"{name!r} is a program for {', '.join(w.family for w in programs)}; pick one")
    return dumps(programs[0].ir, fmt)
