"""Install the repository's top-level folders as subpackages of the one import package ``solvermap``.

The layout keeps ``ir/``, ``formulations/``, ... at the repository root (the design card), while the
installed names are ``solvermap.ir``, ``solvermap.formulations``, ... so nothing generic lands in
site-packages. Subpackages are discovered here so that adding one needs no edit to pyproject.toml.
"""

from setuptools import find_packages, setup

ROOTS = {
    "solvermap": "solvermap",
    "solvermap.ir": "ir",
    "solvermap.formulations": "formulations",
    "solvermap.mappers": "mappers",
    "solvermap.search": "search",
    "solvermap.hardware": "hardware",
    "solvermap.studies": "studies",
}

packages: list[str] = []
for package, folder in ROOTS.items():
    packages.append(package)
    packages += [f"{package}.{sub}" for sub in find_packages(folder)]

setup(
    package_dir=ROOTS,
    packages=packages,
    package_data={"": ["*.yaml", "*.yml", "*.json", "*.csv", "*.onnx"], "solvermap.hardware": ["presets/*.yaml"]},
    include_package_data=True,
)
