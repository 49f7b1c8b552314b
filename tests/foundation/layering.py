"""The layering rules of the installed ``solvermap`` package, and a checker that reads imports with ``ast``.

Data flows one way. Each module of the package belongs to one layer; a module may import (at module level,
inside a function, absolute or relative, or through ``importlib.import_module("solvermap....")`` with a
literal name) only modules of the layers its own layer lists in :data:`ALLOWED`:

==============  ==========================================================  ===========================================
layer           modules                                                     may import
==============  ==========================================================  ===========================================
``root``        ``solvermap`` (package), ``solvermap.errors``,              ``root``
                ``solvermap.results``, ``solvermap.codec``,
                ``solvermap.limits``, ``solvermap.inputs``
``ir``          ``solvermap.ir.*``                                          ``root``, ``ir``
``facade``      ``solvermap.formulations`` (package),                       ``root``, ``facade``
                ``solvermap.formulations.solver[.*]``,
                ``solvermap.formulations.decision``
``problems``    ``solvermap.formulations.problems.*``                       ``root``, ``ir``, ``facade``, ``problems``
``model-part``  :data:`MODEL_PARTS` (constraint families several            ``root``, ``ir``, ``facade``, ``problems``,
                formulations share; no decision of their own)               ``model-part``
``formulation`` every other ``solvermap.formulations.<name>[.*]``           ``model-part`` and below, and its own
                                                                            package ``formulations.<name>.*`` only: a
                                                                            formulation knows no other formulation
``checker``     ``solvermap.hardware.checks.*``                             ``root``, ``ir``, ``problems``,
                                                                            ``hardware``, ``checker``: problem types,
                                                                            never the solver or a formulation model
``hardware``    every other ``solvermap.hardware.*`` (specs, cost models,   ``root``, ``ir``, ``facade``, ``problems``,
                simulators, PUMA's program and placement-problem types)     ``hardware``, ``checker``: never a
                                                                            formulation model (a simulator that called
                                                                            the model it validates would prove nothing)
``run``         ``solvermap.config``, ``solvermap.runs``                    ``root``, ``facade``, ``run``
``mappers``     ``solvermap.mappers.*``                                     every layer above, and ``mappers``
``search``      ``solvermap.search.*``                                      ``mappers`` and below, and ``search``
``studies``     ``solvermap.studies.*``                                     ``search`` and below, ``api``, and ``studies``
``api``         ``solvermap.api``                                           ``search`` and below, and ``api``
``cli``         ``solvermap.cli``                                           everything
==============  ==========================================================  ===========================================

The package ``solvermap`` itself re-exports the public API: its module ``__getattr__`` imports
``solvermap.api`` on first use of a public name (:data:`LAZY_EXPORTS`). That import, inside that function
only, is the one arrow allowed to point up: importing ``solvermap`` (as every import of a submodule does)
runs none of it.

The root modules ``errors`` and ``results`` are importable from every layer and import nothing below them.
``config`` and ``runs`` describe a run (a ``RunConfig`` holds a ``SolverConfig``; a run directory records the
backends' versions), so they stand on the solver facade and only mappers, search, studies and the CLI use them.
A module the table does not place (a new root module, a new subpackage) is itself a violation: give it a layer.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

#: Modules of ``formulations/`` that hold constraint families shared by formulations but are no decision of
#: their own (no objective, no solve); a formulation may import them.
MODEL_PARTS = {
    "solvermap.formulations.tree_flow": "the tree-flow families of the routing and link-split models",
}

BELOW_MAPPERS = {"root", "ir", "facade", "problems", "model-part", "formulation", "checker", "hardware", "run"}
ALLOWED: dict[str, set[str]] = {
    "root": {"root"},
    "ir": {"root", "ir"},
    "facade": {"root", "facade"},
    "problems": {"root", "ir", "facade", "problems"},
    "model-part": {"root", "ir", "facade", "problems", "model-part"},
    "formulation": {"root", "ir", "facade", "problems", "model-part", "formulation"},
    "checker": {"root", "ir", "problems", "hardware", "checker"},
    "hardware": {"root", "ir", "facade", "problems", "hardware", "checker"},
    "run": {"root", "facade", "run"},
    "mappers": BELOW_MAPPERS | {"mappers"},
    "search": BELOW_MAPPERS | {"mappers", "search"},
    "studies": BELOW_MAPPERS | {"mappers", "search", "api", "studies"},  # study scripts may use the public API
    "api": BELOW_MAPPERS | {"mappers", "search", "api"},
    "cli": BELOW_MAPPERS | {"mappers", "search", "studies", "api", "cli"},
}

#: module -> modules its module-level ``__getattr__`` may import lazily whatever their layer (the public API)
LAZY_EXPORTS = {"solvermap": ("solvermap.api",)}

ROOT_LAYERS = {
    "solvermap": "root",
    "solvermap.errors": "root",
    "solvermap.results": "root",
    "solvermap.codec": "root",
    "solvermap.limits": "root",
    "solvermap.inputs": "root",
    "solvermap.config": "run",
    "solvermap.runs": "run",
    "solvermap.api": "api",
    "solvermap.cli": "cli",
    "solvermap.hpvm_config_command": "cli",
}
SUBPACKAGE_LAYERS = {
    "solvermap.ir": "ir",
    "solvermap.hardware": "hardware",
    "solvermap.mappers": "mappers",
    "solvermap.search": "search",
    "solvermap.studies": "studies",
}
FACADE = ("solvermap.formulations.solver", "solvermap.formulations.decision", "solvermap.formulations.pyomo_backend",
          "solvermap.formulations.strategy")


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def layer_of(module: str) -> str | None:
    """The layer of a module of the package, or None when the table does not place it."""
    if module in ROOT_LAYERS:
        return ROOT_LAYERS[module]
    if module == "solvermap.formulations" or any(_within(module, f) for f in FACADE):
        return "facade"
    if _within(module, "solvermap.formulations.problems"):
        return "problems"
    if module in MODEL_PARTS:
        return "model-part"
    if _within(module, "solvermap.formulations"):
        return "formulation"
    if _within(module, "solvermap.hardware.checks"):
        return "checker"
    for package, layer in SUBPACKAGE_LAYERS.items():
        if _within(module, package):
            return layer
    return None


def formulation_of(module: str) -> str:
    """``solvermap.formulations.<name>`` of a formulation module (its own package)."""
    return ".".join(module.split(".")[:3])


@dataclass(frozen=True)
class Import:
    path: Path
    line: int
    importer: str
    target: str


@dataclass(frozen=True)
class Violation:
    path: Path
    line: int
    importer: str
    target: str
    arrow: str  # "checker -> mappers", or "unplaced module"

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.importer} imports {self.target} ({self.arrow})"


def modules(roots: Mapping[str, Path]) -> dict[str, Path]:
    """Every module of the package: ``roots`` maps a package name to its folder (as setup.py installs it).

    A subfolder is a package when it has an ``__init__.py``; folders below one that is not are skipped, as
    the packaging skips them. The folder of the root package ``solvermap`` holds only its own modules.
    """
    out: dict[str, Path] = {}
    for package, folder in roots.items():
        folder = Path(folder)
        for path in sorted(folder.rglob("*.py")):
            parts = path.relative_to(folder).with_suffix("").parts
            if any(not (folder.joinpath(*parts[:k]) / "__init__.py").exists() for k in range(1, len(parts))):
                continue
            if "__pycache__" in parts:
                continue
            name = ".".join((package, *parts))
            if name.endswith(".__init__"):
                name = name[: -len(".__init__")]
            out[name] = path
    return out


def lazy_lines(tree: ast.Module) -> set[int]:
    """The lines of the module-level ``__getattr__`` function (where :data:`LAZY_EXPORTS` imports may stand)."""
    return {line for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "__getattr__"
            for line in range(node.lineno, (node.end_lineno or node.lineno) + 1)}


def imports(module: str, path: Path, known: set[str]) -> Iterator[Import]:
    """Every import of a ``solvermap`` module in ``path``: anywhere in the file, absolute or relative; an
    import :data:`LAZY_EXPORTS` allows in the module's ``__getattr__`` is left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    lazy, allowed = lazy_lines(tree), LAZY_EXPORTS.get(module, ())
    for imp in _imports(tree, module, package, path, known):
        if imp.line in lazy and any(_within(imp.target, target) for target in allowed):
            continue
        yield imp


def _imports(tree: ast.Module, module: str, package: str, path: Path, known: set[str]) -> Iterator[Import]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(path, node.lineno, module, alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                yield Import(path, node.lineno, module, submodule if submodule in known else source)
        elif isinstance(node, ast.Call) and _is_import_module(node.func) and node.args:
            name = _literal_prefix(node.args[0])
            if name:
                yield Import(path, node.lineno, module, name)


def _is_import_module(func: ast.expr) -> bool:
    return (isinstance(func, ast.Attribute) and func.attr == "import_module") or (
        isinstance(func, ast.Name) and func.id in ("import_module", "__import__"))


def _literal_prefix(arg: ast.expr) -> str:
    """The module named by a literal (``"solvermap.x.y"``) or the package an f-string starts with
    (``f"solvermap.hardware.{family}"`` → ``solvermap.hardware``)."""
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    if isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
        head = str(arg.values[0].value)
        return head.rpartition(".")[0] if "." in head else ""
    return ""


def resolve(target: str, known: set[str]) -> str:
    """The longest known module that ``target`` names or lies in (``solvermap.x.y.Name`` → ``solvermap.x.y``)."""
    while target and target not in known:
        target = target.rpartition(".")[0]
    return target


def check(roots: Mapping[str, Path]) -> list[Violation]:
    """Every import that breaks an arrow of :data:`ALLOWED`, and every module no layer places."""
    found = modules(roots)
    known = set(found)
    violations: dict[Violation, None] = {}  # one per import statement and target, in file order
    for module, path in sorted(found.items()):
        layer = layer_of(module)
        if layer is None:
            violations[Violation(path, 1, module, module, "unplaced module: give it a layer")] = None
            continue
        for imp in imports(module, path, known):
            if imp.target != "solvermap" and not imp.target.startswith("solvermap."):
                continue
            target = resolve(imp.target, known) or imp.target
            target_layer = layer_of(target)
            if target_layer is None:
                violations[Violation(path, imp.line, module, target, "unplaced module: give it a layer")] = None
            elif target_layer not in ALLOWED[layer]:
                violations[Violation(path, imp.line, module, target, f"{layer} -> {target_layer}")] = None
            elif layer == target_layer == "formulation" and formulation_of(module) != formulation_of(target):
                violations[Violation(path, imp.line, module, target, "formulation -> another formulation")] = None
    return list(violations)
