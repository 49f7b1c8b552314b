"""The package's imports point down the layers (rules and checker: ``tests/foundation/layering.py``)."""

from __future__ import annotations

import ast
import importlib.util
import shutil
from pathlib import Path

import pytest

from tests.foundation.layering import MODEL_PARTS, check, layer_of, modules

REPO = Path(__file__).resolve().parents[2]


def installed_roots() -> dict[str, Path]:
    """The package names setup.py installs, each at the folder the installed package imports it from."""
    tree = ast.parse((REPO / "setup.py").read_text())
    names = next(ast.literal_eval(node.value) for node in tree.body
                 if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "ROOTS")
    roots = {}
    for name in names:
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.submodule_search_locations, f"{name} is not installed"
        roots[name] = Path(next(iter(spec.submodule_search_locations)))
    return roots


def test_installed_package_imports_follow_the_layers():
    violations = check(installed_roots())
    assert not violations, "layering broken:\n" + "\n".join(map(str, violations))


def test_every_declared_model_part_is_a_module_of_the_package_with_no_decision_of_its_own():
    found = modules(installed_roots())
    assert set(MODEL_PARTS) <= set(found)
    for name in MODEL_PARTS:
        tree = ast.parse(found[name].read_text())
        top = {t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets if isinstance(t, ast.Name)}
        top |= {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
        assert not top & {"NAME", "KIND", "solve"}, f"{name} declares a decision: it is a formulation, not a model part"


# ---------------------------------------------------------------------------------------------- planted


def write(root: Path, relative: str, source: str = "") -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    for parent in path.relative_to(root).parents:
        if parent.parts:
            (root / parent / "__init__.py").touch()
    path.write_text(source)
    return path


def synthetic(tmp_path: Path, relative: str, source: str) -> tuple[dict[str, Path], Path]:
    """A small package laid out as setup.py lays it out, with one module holding ``source``."""
    roots = {"solvermap": tmp_path / "solvermap"}
    for top in ("ir", "formulations", "hardware", "mappers", "search", "studies"):
        roots[f"solvermap.{top}"] = tmp_path / top
        write(tmp_path, f"{top}/__init__.py")
    write(tmp_path, "solvermap/__init__.py")
    write(tmp_path, "solvermap/errors.py", "class InputError(Exception):\n    pass\n")
    write(tmp_path, "ir/graph.py", "from solvermap.errors import InputError\n")
    write(tmp_path, "formulations/solver.py", "")
    write(tmp_path, "formulations/problems/placement.py", "from solvermap.ir.graph import InputError\n")
    write(tmp_path, "formulations/placement.py", "from solvermap.formulations.problems.placement import InputError\n")
    write(tmp_path, "formulations/routing.py", "")
    write(tmp_path, "hardware/puma/__init__.py", "")
    write(tmp_path, "hardware/checks/placement.py", "from solvermap.formulations.problems.placement import X\n")
    write(tmp_path, "mappers/pipeline.py", "from solvermap.hardware.checks import placement\n")
    return roots, write(tmp_path, relative, source)


def test_a_clean_synthetic_package_passes(tmp_path):
    roots, _ = synthetic(tmp_path, "ir/loopnest.py", "from solvermap.ir import graph\n")
    assert check(roots) == []


def test_a_planted_module_level_import_names_file_line_and_arrow(tmp_path):
    roots, path = synthetic(tmp_path, "ir/kernels.py", '"""doc"""\n\nfrom solvermap.hardware.puma import PumaSpec\n')
    [violation] = check(roots)
    assert (violation.path, violation.line, violation.arrow) == (path, 3, "ir -> hardware")
    assert f"{path}:3:" in str(violation) and "ir -> hardware" in str(violation)


def test_a_planted_function_level_import_is_found(tmp_path):
    source = "def simulate():\n    from solvermap.hardware.puma import PumaSpec\n    return PumaSpec\n"
    roots, path = synthetic(tmp_path, "ir/kernels.py", source)
    assert [(v.path, v.line, v.arrow) for v in check(roots)] == [(path, 2, "ir -> hardware")]


PLANTED = {
    "relative import": ("hardware/checks/routing.py", "from ...mappers import pipeline\n",
                        "solvermap.mappers.pipeline", "checker -> mappers"),
    "checker imports a model": ("hardware/checks/routing.py", "import solvermap.formulations.placement\n",
                                "solvermap.formulations.placement", "checker -> formulation"),
    "formulation imports another": ("formulations/link_split.py", "from solvermap.formulations import routing\n",
                                    "solvermap.formulations.routing", "formulation -> another formulation"),
    "import_module by name": ("hardware/targets.py", "import importlib\nimportlib.import_module(f'solvermap.mappers.{n}')\n",
                              "solvermap.mappers", "hardware -> mappers"),
}


@pytest.mark.parametrize("case", PLANTED)
def test_a_planted_import_breaks_its_arrow(tmp_path, case):
    relative, source, target, arrow = PLANTED[case]
    roots, path = synthetic(tmp_path, relative, source)
    assert [(v.path, v.target, v.arrow) for v in check(roots)] == [(path, target, arrow)]


def test_a_formulation_importing_its_own_package_passes(tmp_path):
    roots, _ = synthetic(tmp_path, "formulations/partition/strategy.py", "from . import slot\n")
    write(tmp_path, "formulations/partition/slot.py", "from solvermap.formulations.solver import X\n")
    assert check(roots) == []


def test_a_module_without_a_layer_is_reported(tmp_path):
    roots, path = synthetic(tmp_path, "solvermap/registry.py", "")
    assert [(v.importer, v.arrow) for v in check(roots)] == [("solvermap.registry", "unplaced module: give it a layer")]


LAZY_API = "def __getattr__(name):\n    from solvermap import api\n    return getattr(api, name)\n"


def test_the_package_may_load_the_public_api_lazily_in_its_getattr(tmp_path):
    roots, _ = synthetic(tmp_path, "solvermap/__init__.py", LAZY_API)
    write(tmp_path, "solvermap/api.py", "from solvermap.mappers import pipeline\n")
    assert check(roots) == []


def test_the_package_may_not_import_the_public_api_at_module_level(tmp_path):
    roots, path = synthetic(tmp_path, "solvermap/__init__.py", "from solvermap import api\n")
    write(tmp_path, "solvermap/api.py", "")
    assert [(v.path, v.arrow) for v in check(roots)] == [(path, "root -> api")]


def test_the_packages_getattr_may_not_import_anything_else_from_above(tmp_path):
    roots, path = synthetic(tmp_path, "solvermap/__init__.py", LAZY_API.replace("from solvermap import api",
                                                                                "from solvermap.mappers import pipeline as api"))
    assert [(v.path, v.arrow) for v in check(roots)] == [(path, "root -> mappers")]


def test_planting_a_forbidden_import_in_a_copy_of_the_real_package_fails(tmp_path):
    roots = {}
    for name, folder in installed_roots().items():
        roots[name] = tmp_path / folder.name
        shutil.copytree(folder, roots[name], ignore=shutil.ignore_patterns("__pycache__", "results"))
    checker = roots["solvermap.hardware"] / "checks" / "placement.py"
    source = checker.read_text()
    checker.write_text(source + "\n\ndef solved(problem, config):\n    from solvermap.formulations.placement import solve\n"
                       "    return solve(problem, config)\n")
    line = source.count("\n") + 4
    assert [(v.path, v.line, v.arrow) for v in check(roots)] == [(checker, line, "checker -> formulation")]


@pytest.mark.parametrize(("module", "layer"), [
    ("solvermap.results", "root"), ("solvermap.runs", "run"), ("solvermap.formulations.solver.milp", "facade"),
    ("solvermap.formulations.problems.routing", "problems"), ("solvermap.formulations.tree_flow", "model-part"),
    ("solvermap.formulations.partition.slot", "formulation"), ("solvermap.hardware.checks.partition", "checker"),
    ("solvermap.hardware.puma.program", "hardware"), ("solvermap.studies.dse_methods.run", "studies"),
])
def test_layer_of_places_each_kind_of_module(module, layer):
    assert layer_of(module) == layer
