"""Target specs: pydantic models loaded from YAML presets shipped in ``hardware/presets/``.

A preset is a YAML mapping with ``name``, ``family`` and the family's fields. ``extends: <preset>``
inherits another preset and overrides fields (deep merge), so variants stay one screen long. The
family's pydantic model lives in module ``solvermap.hardware.<family>`` and registers itself with
:func:`register_family`; unknown fields are errors (``extra='forbid'``).

A user passes a preset name or a YAML path; ``--set target.a.b=v`` overrides a field after loading.
Every error is one line naming the file, the field and the reason.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from solvermap.errors import InputError, UnknownNameError
from solvermap.inputs import MAX_DEPTH, input_file, load_yaml

PRESET_DIR = Path(__file__).parent / "presets"


class TargetSpec(BaseModel):
    """Base of every target spec: a name, a family (selects the mapper) and a description."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    family: str
    description: str = ""
    assumptions: list[str] = []  # numbers not in the seed, with the reason each was chosen

    def runs_here(self) -> tuple[bool | None, str]:
        """Whether this machine executes the target's code natively (None: simulated, not applicable)
        and, if not, why. Families that generate code for the host override it."""
        return None, ""


_FAMILIES: dict[str, type[TargetSpec]] = {}


def register_family(family: str):
    """Class decorator: the spec model for ``family``."""

    def decorate(cls: type[TargetSpec]) -> type[TargetSpec]:
        _FAMILIES[family] = cls
        return cls

    return decorate


def spec_class(family: str, source: str = "") -> type[TargetSpec]:
    if family not in _FAMILIES:
        try:
            importlib.import_module(f"solvermap.hardware.{family}")
        except ModuleNotFoundError:
            pass
    if family not in _FAMILIES:
        raise InputError(source, "family", f"unknown target family {family!r}; known: {', '.join(sorted(known_families()))}")
    return _FAMILIES[family]


def known_families() -> list[str]:
    names = set(_FAMILIES)
    names.update(_raw(p).get("family", "?") for p in PRESET_DIR.glob("*.yaml"))
    return sorted(names)


@dataclass(frozen=True)
class PresetInfo:
    name: str
    family: str
    description: str
    path: Path


def presets() -> list[PresetInfo]:
    out = []
    for path in sorted(PRESET_DIR.glob("*.yaml")):
        data = _resolved(path)
        out.append(PresetInfo(str(data.get("name", path.stem)), str(data.get("family", "?")),
                              str(data.get("description", "")).strip().split("\n")[0], path))
    return out


def preset_path(name: str) -> Path:
    path = PRESET_DIR / f"{name}.yaml"
    if not path.exists():
        raise UnknownNameError(f"unknown target {name!r}; known presets: {', '.join(p.name for p in presets())} "
                               "(or pass a YAML file path)")
    return path


def load_target(name_or_path: str | Path, overrides: Mapping[str, Any] | None = None) -> TargetSpec:
    """Load a preset by name or a YAML file, apply dotted ``overrides`` and validate. An error that an
    override causes names the override (``--set target.pcu.stagez=3: unknown field``), not the file."""
    text = str(name_or_path)
    looks_like_path = text.endswith((".yaml", ".yml")) or "/" in text or Path(text).exists()
    path = input_file(text) if looks_like_path else preset_path(text)
    data = _resolved(path)
    if not overrides:
        return validate_spec(data, str(path))
    validate_spec(data, str(path))  # the file's own errors name the file
    for dotted, value in overrides.items():
        set_dotted(data, dotted, value, _override(dotted, value))
    try:
        return validate_spec(data, str(path))
    except InputError as exc:
        culprit = _culprit(exc.field, overrides)
        if culprit is None:
            raise InputError(", ".join(_override(k, v) for k, v in overrides.items()), exc.field, exc.problem) from None
        raise InputError(_override(*culprit), "", exc.problem) from None


def _override(dotted: str, value: Any) -> str:
    return f"--set target.{dotted}={value}"


def _culprit(field: str, overrides: Mapping[str, Any]) -> tuple[str, Any] | None:
    """The override a validation error at ``field`` comes from (the longest key on the field's path)."""
    matches = [(k, v) for k, v in overrides.items() if field == k or field.startswith(k + ".") or k.startswith(field + ".")]
    return max(matches, key=lambda kv: len(kv[0])) if matches else None


def validate_spec(data: Mapping[str, Any], source: str) -> TargetSpec:
    if "family" not in data:
        raise InputError(source, "family", "missing required field")
    cls = spec_class(str(data["family"]), source)
    try:
        spec = cls.model_validate(dict(data))
    except ValidationError as exc:
        raise InputError(source, *_first_error(exc)) from None
    _finite_numbers(spec.model_dump(), source)
    return spec


def _finite_numbers(data: Any, source: str, prefix: str = "") -> None:
    """Every number of a validated spec is finite: ``.inf`` (or the text ``1e400``, which pydantic reads as
    a float) would pass ``ge=0`` and reach the models."""
    items = data.items() if isinstance(data, Mapping) else enumerate(data) if isinstance(data, (list, tuple)) else ()
    for key, value in items:
        field = f"{prefix}{key}" if isinstance(data, Mapping) else f"{prefix.rstrip('.')}[{key}]"
        if isinstance(value, float) and not math.isfinite(value):
            raise InputError(source, field, f"{value} is not a finite number")
        _finite_numbers(value, source, field + ".")


def _first_error(exc: ValidationError) -> tuple[str, str]:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"])
    message = err["msg"].removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        message = "unknown field"
    more = len(exc.errors()) - 1
    return loc, message + (f" (and {more} more problem{'s' if more > 1 else ''})" if more else "")


def _raw(path: Path) -> dict[str, Any]:
    data = load_yaml(path)
    if not isinstance(data, dict):
        raise InputError(str(path), "", "expected a YAML mapping")
    return data


def _resolved(path: Path, seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    data = _raw(path)
    parent = data.pop("extends", None)
    if parent is None:
        return data
    if not isinstance(parent, str) or not parent.strip():
        raise InputError(str(path), "extends", f"expected a preset name or a YAML path, got {parent!r}")
    parent_path = (path.parent / f"{parent}.yaml") if not str(parent).endswith(".yaml") else path.parent / parent
    if not parent_path.exists():
        parent_path = PRESET_DIR / f"{parent}.yaml"
    if not parent_path.exists():
        raise InputError(str(path), "extends", f"unknown preset {parent!r}")
    if parent_path.resolve() in seen + (path.resolve(),):
        raise InputError(str(path), "extends", "circular extends")
    base = _resolved(parent_path, seen + (path.resolve(),))
    return deep_merge(base, data)


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def set_dotted(data: dict[str, Any], dotted: str, value: Any, source: str = "--set") -> None:
    """Set ``a.b.c`` in nested dicts; the parent path must exist (typos are errors, not new fields)."""
    parts = dotted.split(".")
    if len(parts) > MAX_DEPTH:
        raise InputError(source, dotted, f"more than {MAX_DEPTH} dotted parts")
    node = data
    for i, part in enumerate(parts[:-1]):
        if not isinstance(node.get(part), dict):
            raise InputError(source, "", f"no section {'.'.join(parts[: i + 1])!r} to override")
        node[part] = dict(node[part])
        node = node[part]
    node[parts[-1]] = value
