"""Target pipelines: ``solvermap.mappers.<family>`` defines ``PIPELINE`` for targets of that family.

``pipeline`` holds the step protocol and the :class:`~solvermap.mappers.pipeline.Decision` descriptor,
``decisions`` the registry of every shipped decision.
"""

from __future__ import annotations

import importlib
import pkgutil

from solvermap.errors import UnknownNameError


_REGISTERED: dict = {}


def register_pipeline(pipeline) -> None:
    """Register a pipeline programmatically (a user's own target family, or a test's)."""
    _REGISTERED[pipeline.family] = pipeline


def pipeline_for(family: str):
    """The :class:`~solvermap.mappers.pipeline.Pipeline` for a target family."""
    if family in _REGISTERED:
        return _REGISTERED[family]
    try:
        module = importlib.import_module(f"{__name__}.{family}")
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.endswith(family):
            raise UnknownNameError(f"no mapper for target family {family!r}; known: {', '.join(families())}") from None
        raise
    pipeline = getattr(module, "PIPELINE", None)
    if pipeline is None:
        raise UnknownNameError(f"module {module.__name__} defines no PIPELINE")
    return pipeline


def families() -> list[str]:
    """Family modules/packages in this package (everything but ``pipeline``, ``decisions`` and private modules)."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__)
                  if m.name not in ("pipeline", "decisions") and not m.name.startswith("_"))


def all_pipelines() -> list:
    return [pipeline_for(f) for f in families()] + [p for f, p in _REGISTERED.items() if f not in families()]
