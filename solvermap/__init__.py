"""solvermap: a mapping compiler and design-space explorer for accelerators.

Every compilation decision is an explicit, solver-backed model. The root package holds only the CLI,
configuration and result types; the work lives in the subpackages ``solvermap.ir``,
``solvermap.formulations``, ``solvermap.mappers``, ``solvermap.hardware``, ``solvermap.search`` and
``solvermap.studies``.
"""

__version__ = "0.1.0"
