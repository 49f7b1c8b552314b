"""Typed JSON round trip of decisions and solve records (the design-space cache stores no pickles).

:func:`encode` turns a value into plain JSON types; :func:`decode` rebuilds it from the *declared* type
(a dataclass's field annotations, ``Mapping[K, V]``, ``tuple[X, ...]``, unions, enums, literals), so
nothing in the data names a class or a function: a file can only fill in the fields of the type the
reader asked for. Mappings are encoded as ``[[key, value], ...]`` pairs, so tuple keys (links, bins
of a retiming map) survive; tuples and frozensets come back as tuples and frozensets. Floats keep
NaN and infinities (Python's JSON reads them back).

A value that does not fit the declared type raises :class:`CodecError`.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import types
import typing
from collections.abc import Mapping, Sequence, Set
from typing import Any


class CodecError(ValueError):
    """The data does not fit the declared type."""


def encode(value: Any) -> Any:
    """Plain JSON types (dict, list, str, int, float, bool, None) for ``value``."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, enum.Enum):
        return encode(value.value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init}
    if isinstance(value, Mapping):
        return [[encode(k), encode(v)] for k, v in value.items()]
    if isinstance(value, (Set, frozenset)):
        return sorted((encode(v) for v in value), key=repr)
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    item = getattr(value, "item", None)  # numpy scalars
    if callable(item) and type(value).__module__ == "numpy":
        return encode(item())
    raise CodecError(f"cannot encode a {type(value).__name__}")


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def decode(data: Any, hint: Any) -> Any:  # noqa: C901 - one branch per kind of declared type
    """Rebuild a value of type ``hint`` from :func:`encode`'s output."""
    if hint is Any or hint is object:
        return data
    if hint is None or hint is type(None):
        if data is not None:
            raise CodecError(f"expected null, got {data!r}")
        return None
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if data is None and type(None) in args:
            return None
        for option in args:
            if option is type(None):
                continue
            try:
                return decode(data, option)
            except (CodecError, TypeError, ValueError):
                continue
        raise CodecError(f"{data!r} fits none of {hint}")
    if origin is typing.Literal:
        if data not in args:
            raise CodecError(f"{data!r} is not one of {args}")
        return data
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint(data)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        if not isinstance(data, dict):
            raise CodecError(f"expected an object for {hint.__name__}, got {type(data).__name__}")
        hints = _hints(hint)
        fields = {f.name: f for f in dataclasses.fields(hint) if f.init}
        unknown = set(data) - set(fields)
        if unknown:
            raise CodecError(f"{hint.__name__} has no field {sorted(unknown)[0]!r}")
        return hint(**{name: decode(value, hints[name]) for name, value in data.items()})
    if hint is bool:
        if not isinstance(data, bool):
            raise CodecError(f"expected a boolean, got {data!r}")
        return data
    if hint is int:
        if not isinstance(data, int) or isinstance(data, bool):
            raise CodecError(f"expected an integer, got {data!r}")
        return data
    if hint is float:
        if not isinstance(data, (int, float)) or isinstance(data, bool):
            raise CodecError(f"expected a number, got {data!r}")
        return float(data)
    if hint is str:
        if not isinstance(data, str):
            raise CodecError(f"expected a string, got {data!r}")
        return data
    container = origin or hint
    if not isinstance(data, list):
        raise CodecError(f"expected a list for {hint}, got {type(data).__name__}")
    if isinstance(container, type) and issubclass(container, Mapping):
        key, value = args if args else (Any, Any)
        return {decode(k, key): decode(v, value) for k, v in data}
    if container is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(decode(v, args[0]) for v in data)
        if not args:
            return tuple(data)
        if len(args) != len(data):
            raise CodecError(f"expected {len(args)} items for {hint}, got {len(data)}")
        return tuple(decode(v, a) for v, a in zip(data, args))
    if isinstance(container, type) and issubclass(container, (Set, frozenset)):
        item = args[0] if args else Any
        values = (decode(v, item) for v in data)
        return set(values) if container is set else frozenset(values)
    if isinstance(container, type) and issubclass(container, Sequence):
        item = args[0] if args else Any
        return [decode(v, item) for v in data]
    raise CodecError(f"cannot decode type {hint}")
