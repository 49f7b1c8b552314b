"""The README's table of ONNX operators per target family, generated from the code's support tables.

    .venv/bin/python bench/operator_table.py          # rewrite the table in README.md (between the markers)
    .venv/bin/python bench/operator_table.py --check  # exit 1 when README.md's table is stale

Sources: the importer's :data:`solvermap.ir.onnx_import.SUPPORTED`; PUMA's lowering
(:data:`solvermap.mappers.puma.frontend.SUPPORTED`); the Plasticine lowering
(:data:`solvermap.mappers.plasticine.from_model.SUPPORTED`); the CPU tensorize families (every Conv, Gemm,
MatMul becomes a loop nest; other operators are accepted and not tensorized); push memory
(:data:`solvermap.mappers.pushmem.from_model.SUPPORTED`; others accepted, not mapped); promise-soc
(:data:`solvermap.mappers.approxhpvm.from_model.SUPPORTED`; anything else is refused).
tests/onnx/test_operator_table.py checks that README.md holds what this prints.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"
BEGIN, END = "<!-- operator-table:begin -->", "<!-- operator-table:end -->"
CATEGORY = {"mvm": "matrix", "recurrent": "recurrent", "activation": "activation", "elementwise": "element-wise",
            "normalization": "normalization", "pooling": "pooling", "reduction": "reduction", "movement": "data movement",
            "conversion": "conversion"}


def table() -> str:
    from solvermap.ir.onnx_import import SUPPORTED
    from solvermap.mappers.approxhpvm.from_model import SUPPORTED as HPVM
    from solvermap.mappers.plasticine.from_model import SUPPORTED as PLASTICINE
    from solvermap.mappers.puma.frontend import SUPPORTED as PUMA
    from solvermap.mappers.pushmem.from_model import SUPPORTED as PUSHMEM

    tensorized = {"Conv", "Gemm", "MatMul"}
    lines = ["| operator | kind | puma | plasticine | cpu (tensorize) | pushmem | promise-soc |",
             "|---|---|:-:|:-:|:-:|:-:|:-:|"]
    for op, category in sorted(SUPPORTED.items(), key=lambda item: (list(CATEGORY).index(item[1]), item[0])):
        cells = ["✓" if op in PUMA else "✗", "✓" if op in PLASTICINE else "✗", "✓" if op in tensorized else "·",
                 "✓" if op in PUSHMEM else "·", "✓" if op in HPVM else "✗"]
        lines.append(f"| `{op}` | {CATEGORY[category]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def current() -> str:
    text = README.read_text()
    return text[text.index(BEGIN) + len(BEGIN):text.index(END)].strip("\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    fresh = table()
    if args.check:
        return 0 if current() == fresh else 1
    text = README.read_text()
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    README.write_text(text[:start] + "\n" + fresh + "\n" + text[end:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
