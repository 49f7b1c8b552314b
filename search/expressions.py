"""Derived metrics: small arithmetic expressions over a trial's metrics, spec fields and workload parameters.

A study's ``metrics:`` section defines new metric names, computed per workload after the pipeline ran::

    metrics:
      chip_area_mm2: target.pcu.count * target.pcu.area_mm2 + target.pmu.count * target.pmu.area_mm2
      perf_per_watt: throughput / power_w

Names resolve, in order, to the workload's metrics (validation keys, ``solver_seconds``,
``partition.objective``, earlier derived metrics), to ``target.<field>`` of the trial's spec and to
``workload.<param>``. Allowed: numbers, names (dotted), ``+ - * / // % **``, unary minus, comparisons
and ``a if c else b``, and the functions ``min max abs log log2 sqrt exp ceil floor``. Anything else
is rejected when the study is loaded.

Cost is bounded before anything is evaluated: an expression has at most :data:`MAX_CHARS` characters
and nests at most :data:`MAX_DEPTH` operations or brackets deep, and an exponent is a number constant of magnitude
at most :data:`MAX_EXPONENT` (``x ** 2``, ``x ** -0.5``; not ``9 ** 9 ** 9 ** 9``, whose integer value
would take longer to compute than any trial). Evaluation is in floating point, and a result that is not
finite (an overflow) is an error naming the expression rather than a silent ``inf``.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Mapping
from typing import Any

FUNCTIONS: dict[str, Callable[..., float]] = {
    "min": min, "max": max, "abs": abs, "log": math.log, "log2": math.log2, "sqrt": math.sqrt, "exp": math.exp,
    "ceil": math.ceil, "floor": math.floor,
}
_BINARY = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
           ast.Div: lambda a, b: a / b, ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b,
           ast.Pow: lambda a, b: a ** b}
_COMPARE = {ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b,
            ast.GtE: lambda a, b: a >= b, ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b}


MAX_CHARS = 1000
MAX_DEPTH = 100  # a sum of 100 terms nests 99 deep
MAX_EXPONENT = 64


class ExpressionError(ValueError):
    """A malformed expression, or a name that does not resolve."""


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return f"{head}.{node.attr}" if head is not None else None
    return None


def parse(text: str) -> ast.Expression:
    """Parse and vet an expression (see module docstring); raises :class:`ExpressionError`."""
    text = str(text)
    if len(text) > MAX_CHARS:
        raise ExpressionError(f"{len(text):,} characters: over the limit of {MAX_CHARS}")
    if _bracket_depth(text) > MAX_DEPTH:
        raise ExpressionError(f"brackets nested more than {MAX_DEPTH} deep: over the limit")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"not an expression: {exc.msg}") from None
    except (RecursionError, MemoryError, ValueError):  # ValueError: NUL bytes in the text
        raise ExpressionError("not an expression the parser accepts") from None
    if _depth(tree) > MAX_DEPTH:
        raise ExpressionError(f"nested more than {MAX_DEPTH} operations deep: over the limit")
    for node in ast.walk(tree):
        if isinstance(node, (ast.Expression, ast.Load, ast.operator, ast.cmpop, ast.unaryop)):
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            continue
        if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.IfExp)):
            if isinstance(node, ast.BinOp) and type(node.op) not in _BINARY:
                raise ExpressionError(f"operator {type(node.op).__name__} is not allowed")
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
                _check_exponent(node.right)
            if isinstance(node, ast.UnaryOp) and not isinstance(node.op, (ast.USub, ast.UAdd)):
                raise ExpressionError(f"operator {type(node.op).__name__} is not allowed")
            continue
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS or node.keywords:
                raise ExpressionError(f"only the functions {', '.join(FUNCTIONS)} may be called")
            continue
        if isinstance(node, (ast.Name, ast.Attribute)) and _dotted(node) is not None:
            continue
        raise ExpressionError(f"{type(node).__name__} is not allowed in a metric expression")
    return tree


def _bracket_depth(text: str) -> int:
    """Deepest nesting of brackets in the text (the parse tree drops redundant parentheses)."""
    depth = deepest = 0
    for ch in text:
        if ch in "([{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in ")]}":
            depth -= 1
    return deepest


def _depth(tree: ast.AST) -> int:
    """Nesting depth of the operations of a parsed expression (iterative: the tree may be deep)."""
    deepest, stack = 0, [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > MAX_DEPTH:
            break
        step = 1 if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.IfExp, ast.Call)) else 0
        stack.extend((child, depth + step) for child in ast.iter_child_nodes(node))
    return deepest


def _check_exponent(node: ast.AST) -> None:
    """An exponent is a number constant (optionally signed) of magnitude at most MAX_EXPONENT."""
    value = node
    while isinstance(value, ast.UnaryOp) and isinstance(value.op, (ast.USub, ast.UAdd)):
        value = value.operand
    if not (isinstance(value, ast.Constant) and isinstance(value.value, (int, float))
            and not isinstance(value.value, bool) and abs(value.value) <= MAX_EXPONENT):
        raise ExpressionError(f"an exponent must be a number between -{MAX_EXPONENT} and {MAX_EXPONENT} "
                              f"(got {ast.unparse(node)[:40]!r})")


def evaluate(tree: ast.Expression, resolve: Callable[[str], Any]) -> float:
    """Value of a parsed expression; ``resolve(dotted_name)`` returns a number or raises KeyError."""

    def ev(node: ast.AST) -> Any:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant):
            return float(node.value)
        if isinstance(node, ast.BinOp):
            return _finite(_BINARY[type(node.op)](ev(node.left), ev(node.right)))
        if isinstance(node, ast.UnaryOp):
            value = ev(node.operand)
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.Compare):
            left = ev(node.left)
            for op, right_node in zip(node.ops, node.comparators):
                right = ev(right_node)
                if not _COMPARE[type(op)](left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.IfExp):
            return ev(node.body) if ev(node.test) else ev(node.orelse)
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS:
                return _finite(float(FUNCTIONS[node.func.id](*(ev(a) for a in node.args))))
        name = _dotted(node)
        if name in FUNCTIONS:
            raise ExpressionError(f"{name} is a function")
        if name is None:  # pragma: no cover - parse() rejects these
            raise ExpressionError(f"{type(node).__name__} is not allowed")
        try:
            return float(resolve(name))
        except KeyError:
            raise ExpressionError(f"unknown name {name!r}") from None

    try:
        value = ev(tree)
    except (ZeroDivisionError, OverflowError, ValueError, TypeError) as exc:
        if isinstance(exc, ExpressionError):
            raise
        raise ExpressionError(f"{type(exc).__name__}: {exc}") from None
    return float(value)


def _finite(value: Any) -> Any:
    if isinstance(value, complex):
        raise ExpressionError("the value is not a real number (a fractional power of a negative number)")
    if isinstance(value, float) and not math.isfinite(value):
        raise ExpressionError("the value overflows (it is not a finite number)")
    return value


def resolver(metrics: Mapping[str, float], spec: Mapping[str, Any], params: Mapping[str, Any]) -> Callable[[str], Any]:
    """Name lookup for one workload of a trial: metrics, then ``target.<field>``, then ``workload.<param>``."""

    def resolve(name: str) -> Any:
        if name in metrics:
            return metrics[name]
        root, _, rest = name.partition(".")
        if root == "target" and rest:
            node: Any = spec
            for part in rest.split("."):
                if not isinstance(node, Mapping) or part not in node:
                    raise KeyError(name)
                node = node[part]
            if isinstance(node, bool) or not isinstance(node, (int, float)):
                raise KeyError(name)
            return node
        if root == "workload" and rest in params and isinstance(params[rest], (int, float)):
            return params[rest]
        raise KeyError(name)

    return resolve
