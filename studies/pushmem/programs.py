"""Study: programs written in the program-file format, as Halide writes them, on the push-memory CGRA.

Every program of ``tests/pushmem/programs/`` (a 5x5 blur, a downsample, a strided convolution and a tiled
convolution written with init + update reductions, and a pointwise chain) is mapped by the whole pushmem
pipeline twice — as the pipeline maps it by default (small integer reductions unrolled into the PE
expression, the seed's ``unroll(r)``, 001:L210) and with every reduction loop kept in its PE
(``decisions.unroll.max_taps=0``) — and, in each mode, once more with the sequential schedule imposed
in place of the schedule decision (001:L372) on an array with as many MEM tiles as it needs. Every design
is run by the cycle simulator; both cycle columns are simulated cycles, ``check`` says whether the design
was bit-exact against the program file's golden model with no hazard and every checker passing. A
mapping the pipeline refuses (one line) is recorded with that line. Last, ``gaussian`` at its default size
is mapped as the built-in and as the program file ``solvermap workloads --export gaussian`` writes.

Writes ``results/programs.csv`` and ``results/programs.json`` (with the machine).

    nice .venv/bin/python studies/pushmem/programs.py
"""

from __future__ import annotations

import csv
import json
import tempfile
import time
from pathlib import Path

from solvermap.errors import SolvermapError
from solvermap.formulations.solver import SolverConfig
from solvermap.hardware.targets import load_target
from solvermap.ir.program_file import export_workload
from solvermap.ir.workloads import build
from solvermap.mappers.pipeline import Context
from solvermap.mappers.pushmem import PIPELINE
from solvermap.studies.pushmem.run import OUT, TARGET, UNBOUNDED_TILES, machine

PROGRAMS = Path(__file__).resolve().parents[2] / "tests" / "pushmem" / "programs"
MODES = {"default": {}, "reduction-in-pe": {"unroll": {"max_taps": 0}}}


def _context(path: str, options: dict, **target) -> Context:
    return Context(workload=build(path, "pushmem"), target=load_target(TARGET).model_copy(update=target),
                   solver=SolverConfig(backend="highs", time_limit_s=60), options=options)


def _ok(validation: dict, records) -> bool:
    return bool(validation["bit_exact"] and not validation["hazards"] and validation["storage_check_ok"]
                and all(r.check.ok for r in records))


def mapped(path: str, options: dict) -> dict:
    ctx = _context(path, options)
    result = PIPELINE.run(ctx)
    v = result.validation
    return {"cycles": v["simulated_cycles"], "words": v["sram_words"], "tiles": v["tiles_used"],
            "ok": _ok(v, result.records), "sources": ";".join(f"{r.decision}:{r.solution_source}" for r in result.records)}


def mapped_sequentially(path: str, options: dict) -> dict:
    ctx = _context(path, options, mem_tiles=UNBOUNDED_TILES)
    ctx._typed.update(PIPELINE.check_options(ctx.options))
    records = []
    for step in PIPELINE.steps:
        record = step.run(ctx)
        records += [record] if record is not None else []
        if step.name == "schedule":
            ctx.state["schedule"] = ctx.state["sequential_schedule"]
    v = PIPELINE.validate(ctx)
    return {"cycles": v["simulated_cycles"], "words": v["sram_words"], "ok": _ok(v, records)}


def programs() -> list[dict]:
    rows = []
    for path in sorted(PROGRAMS.glob("*.yaml")):
        for mode, options in MODES.items():
            start = time.perf_counter()
            row = {"program": path.stem, "mode": mode}
            try:
                opt, seq = mapped(str(path), options), mapped_sequentially(str(path), options)
                row.update({"opt_cycles": opt["cycles"], "seq_cycles": seq["cycles"],
                            "speedup": round(seq["cycles"] / max(1, opt["cycles"]), 2), "opt_words": opt["words"],
                            "seq_words": seq["words"], "tiles": opt["tiles"],
                            "check": "ok" if opt["ok"] and seq["ok"] else "FAILED", "sources": opt["sources"], "refused": ""})
            except SolvermapError as exc:
                row.update({"check": "refused", "refused": str(exc)})
            row["seconds"] = round(time.perf_counter() - start, 1)
            print(row, flush=True)
            rows.append(row)
    return rows


def exported_gaussian() -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "gaussian.yaml"
        path.write_text(export_workload("gaussian"))
        from_file = mapped(str(path), {})
    ctx = Context(workload=build("gaussian", "pushmem"), target=load_target(TARGET),
                  solver=SolverConfig(backend="highs", time_limit_s=60))
    v = PIPELINE.run(ctx).validation
    return {"file": {"cycles": from_file["cycles"], "sram_words": from_file["words"]},
            "built_in": {"cycles": v["simulated_cycles"], "sram_words": v["sram_words"]}}


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    rows = programs()
    fields = ["program", "mode", "opt_cycles", "seq_cycles", "speedup", "opt_words", "seq_words", "tiles", "check",
              "sources", "refused", "seconds"]
    with open(OUT / "programs.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    summary = {"command": "nice .venv/bin/python studies/pushmem/programs.py", "backend": "highs", "target": TARGET,
               "programs": rows, "exported_gaussian": exported_gaussian(), "machine": machine()}
    (OUT / "programs.json").write_text(json.dumps(summary, indent=1) + "\n")


if __name__ == "__main__":
    main()
