"""The README's operator table is the one the code's support tables give (bench/operator_table.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path


def test_readme_operator_table_matches_the_support_tables():
    path = Path(__file__).resolve().parents[2] / "bench" / "operator_table.py"
    spec = importlib.util.spec_from_file_location("operator_table", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.current() == module.table(), "README.md is stale: run .venv/bin/python bench/operator_table.py"
