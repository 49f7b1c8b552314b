"""Real DNN models at real sizes, through the ONNX path, on three target families.

The models are built with ``onnx.helper`` in PyTorch's export style (:mod:`solvermap.ir.onnx_zoo`; shapes of the
published architectures, seeded Gaussian weights): ResNet-18 and MobileNetV2 at 224 × 224, AlexNet (with LRN)
at 224 × 224, one BERT-base encoder layer (128 tokens, d = 768, 12 heads, FFN 3072), and an eight-layer
super-resolution conv net at 540 × 960. Each is saved to a ``.onnx`` file and mapped, in a fresh process, with
the whole pipeline of

* ``puma`` (import, optimiser with streamed calibration, replication, crossbar partitioning, placement with
  its certified bound, communication, performance simulation), and ``puma-x2`` (8 x 4 routers instead of
  4 x 4, ``--set target.noc.router_cols=8``: 128 tile positions) for AlexNet, which needs more crossbars
  than ``puma`` has,
* ``plasticine`` (64 PCUs, 64 PMUs, 16 DAGs: a model larger than the chip is refused before partitioning,
  by the merge's count of the PCUs its operations need at least) and ``plasticine-x8``, the same
  architecture on a 32 × 32 grid (512 PCUs, 512 PMUs, 32 DAGs: ``--set target.grid.columns=32
  target.grid.rows=32 target.pcu.count=512 …``), sized for whole networks (merge solves a VB graph of
  a thousand VBs in chunks of the traversal merger's warm start, within the PB counts, with the certified
  bound of the whole problem), and ``plasticine-x16`` (64 × 32, 1,024 PCUs and PMUs, 64 DAGs) for AlexNet,
  whose fully connected weights need at least 943 PMUs: there neither traversal merger packs its 3,749 VBs
  within the counts (without counts they need 1,202 and 1,211 PCUs), so the chunks start from the
  partition formulation's constructive first fit,
* ``x86-vnni`` (each distinct Conv/Gemm/MatMul tensorized, rewritten, tuned with 4 Optuna trials, compiled
  and timed in 3 rounds),

with the default solver settings (30 s deterministic budget per solve). Per run the CSV holds the status
(``ok`` or the one-line refusal), wall and CPU seconds, the peak resident memory of the process
(``VmHWM``; ``resource.getrusage`` where /proc is missing), the load average, and per decision objective, bound and gap
(``bench/results/onnx_models.csv`` one row per run with the family's main decision: puma ``place``,
plasticine ``merge``, cpu the sum over layers of ``tensorize``; ``bench/results/onnx_decisions.csv`` one row
per decision). The README's table is rewritten from the CSV (between its markers).

    nice .venv/bin/python bench/onnx_models.py [--models resnet18,...] [--targets puma,...] [--update] [--readme]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
README = HERE.parent / "README.md"
BEGIN, END = "<!-- onnx-bench:begin -->", "<!-- onnx-bench:end -->"

MODELS = {
    "resnet18": ("resnet18", {}),
    "mobilenet_v2": ("mobilenet_v2", {}),
    "alexnet": ("alexnet", {}),
    "transformer": ("transformer", {}),
    "conv_net_540x960": ("conv_net", {"height": 540, "width": 960}),
}
TARGETS = {
    "puma": ("puma", {}),
    "plasticine": ("plasticine", {}),
    "plasticine-x8": ("plasticine", {"grid.columns": 32, "grid.rows": 32, "pcu.count": 512, "pmu.count": 512, "dag.count": 32}),
    "plasticine-x16": ("plasticine", {"grid.columns": 64, "grid.rows": 32, "pcu.count": 1024, "pmu.count": 1024, "dag.count": 64}),
    "puma-x2": ("puma", {"noc.router_cols": 8}),
    "x86-vnni": ("x86-vnni", {}),
}
PLAN = {  # which targets each model runs on
    "resnet18": ("puma", "plasticine", "plasticine-x8", "x86-vnni"),
    "mobilenet_v2": ("puma", "plasticine", "plasticine-x8", "x86-vnni"),
    "alexnet": ("puma", "puma-x2", "plasticine", "plasticine-x8", "plasticine-x16", "x86-vnni"),
    "transformer": ("puma", "plasticine", "plasticine-x8", "x86-vnni"),
    "conv_net_540x960": ("puma",),
}
OPTIONS = {"cpu": {"tensorize": {"trials": 4, "rounds": 3}}}
MAIN = {"puma": "place", "plasticine": "merge", "cpu": "tensorize"}


# =========================================================================== one run (child process)


def one(model_file: str, target: str) -> dict:
    from solvermap.errors import SolvermapError
    from solvermap.formulations.solver import SolverConfig
    from solvermap.hardware.targets import load_target
    from solvermap.ir.workloads import build
    from solvermap.mappers import pipeline_for
    from solvermap.mappers.pipeline import Context

    name, overrides = TARGETS[target]
    start, cpu0 = time.perf_counter(), time.process_time()
    out: dict = {"status": "ok", "message": "", "decisions": [], "validation": {}}
    try:
        spec = load_target(name, overrides)
        workload = build(model_file, spec.family)
        ctx = Context(workload, spec, SolverConfig(), options=OPTIONS.get(spec.family, {}), progress=None)
        result = pipeline_for(spec.family).run(ctx)
        for r in result.records:
            out["decisions"].append({"decision": r.decision, "layer": r.details.get("layer", ""),
                                     "status": str(r.solver.status), "objective": r.solver.objective,
                                     "bound": r.solver.bound, "gap": r.solver.gap,
                                     "baseline": r.baseline.name if r.baseline else None,
                                     "baseline_objective": r.baseline.objective if r.baseline else None,
                                     "solution_source": r.solution_source, "check_ok": r.check.ok})
        keep = ("latency_s", "cycles", "deadlock", "tiles_used", "pbs_used", "energy_j", "functional_simulation",
                "predicted_hop_weighted_bytes", "simulated_hop_weighted_bytes", "layers_total", "layers_tensorized",
                "bit_exact", "weights")
        out["validation"] = {k: result.validation.get(k) for k in keep if k in result.validation}
        out["family"] = spec.family
    except SolvermapError as exc:
        out.update(status="refused", message=str(exc))
    out["wall_s"] = time.perf_counter() - start
    out["cpu_s"] = time.process_time() - cpu0
    out["peak_rss_mb"] = peak_rss_mb()
    return out


def peak_rss_mb() -> float:
    """This process's peak resident memory: VmHWM of /proc (per address space, so not inherited across exec
    like ``ru_maxrss``), else ``resource.getrusage``."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


# =========================================================================== the driver


def build_models(names: list[str], directory: Path) -> dict[str, Path]:
    from solvermap.ir import onnx_zoo

    files = {}
    for name in names:
        builder, kwargs = MODELS[name]
        files[name] = onnx_zoo.save(onnx_zoo.ARCHITECTURES[builder](**kwargs), directory / f"{name}.onnx")
    return files


def summarize(model: str, target: str, run: dict) -> dict:
    family = run.get("family", "")
    main = [d for d in run["decisions"] if d["decision"] == MAIN.get(family)]
    row = {"model": model, "target": target, "status": run["status"], "message": run["message"],
           "wall_s": round(run["wall_s"], 1), "cpu_s": round(run["cpu_s"], 1), "peak_rss_mb": round(run["peak_rss_mb"]),
           "load_1min": run.get("load"), "decision": MAIN.get(family, ""), "objective": None, "bound": None, "gap": None,
           "baseline": None, "baseline_objective": None}
    if main:
        if family == "cpu":  # one tensorize decision per distinct layer: sums, and the worst gap
            row.update(objective=sum(d["objective"] or 0 for d in main), bound=sum(d["bound"] or 0 for d in main),
                       gap=max(d["gap"] or 0 for d in main), baseline="unit-greedy-innermost",
                       baseline_objective=sum(d["baseline_objective"] or 0 for d in main))
        else:
            d = main[-1]
            row.update(objective=d["objective"], bound=d["bound"], gap=d["gap"], baseline=d["baseline"],
                       baseline_objective=d["baseline_objective"])
    row.update({f"v_{k}": v for k, v in run["validation"].items()})
    return row


def readme_table(frame) -> str:
    lines = ["| model | target | status | wall s | CPU s | peak MB | objective | bound | gap | baseline | simulated |",
             "|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|"]

    def num(value, fmt="{:,.0f}"):
        return "–" if value is None or value != value else fmt.format(value)

    for _, r in frame.iterrows():
        status = r["status"] if r["status"] == "ok" else f"refused: {str(r['message']).split(': ', 1)[-1][:90]}"
        lines.append(f"| {r['model']} | {r['target']} | {status} | {num(r['wall_s'])} | {num(r['cpu_s'])} | "
                     f"{num(r['peak_rss_mb'])} | {num(r['objective'])} | {num(r['bound'])} | {num(r['gap'], '{:.2f}')} | "
                     f"{num(r['baseline_objective'])} | {simulated(r)} |")
    return "\n".join(lines)


def simulated(r) -> str:
    """What the target's simulator measured on the mapping: a deadlock, or the latency of one inference."""
    if str(r.get("v_deadlock")) == "True":
        return "deadlock"
    latency = r.get("v_latency_s")
    return "–" if latency is None or latency != latency else f"{latency * 1e3:,.2f} ms"


def write_readme(frame) -> None:
    """The README's bench table (between its markers) from ``frame``."""
    text = README.read_text()
    if BEGIN in text:
        start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
        README.write_text(text[:start] + "\n" + readme_table(frame) + "\n" + text[end:])


def main() -> int:
    parser = argparse.ArgumentParser(description="real-size ONNX models on puma, plasticine and x86-vnni")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--targets", default="")
    parser.add_argument("--update", action="store_true", help="replace only the re-run rows of the CSVs")
    parser.add_argument("--readme", action="store_true", help="only rewrite the README table from the CSV")
    parser.add_argument("--one", nargs=2, metavar=("MODEL_FILE", "TARGET"), help=argparse.SUPPRESS)
    parser.add_argument("--build", nargs=2, metavar=("MODELS", "DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(*args.one), default=str))
        return 0
    if args.build:
        build_models(args.build[0].split(","), Path(args.build[1]))
        return 0
    import pandas as pd

    if args.readme:
        write_readme(pd.read_csv(RESULTS / "onnx_models.csv"))
        return 0
    models = [m for m in args.models.split(",") if m]
    RESULTS.mkdir(exist_ok=True)
    rows, decisions = [], []
    with tempfile.TemporaryDirectory(prefix="solvermap-onnx-bench-") as tmp:
        # the models are built in a child process, so that the runs fork from a small driver
        subprocess.run([sys.executable, __file__, "--build", ",".join(models), tmp], check=True)
        files = {model: Path(tmp) / f"{model}.onnx" for model in models}
        for model in models:
            targets = [t for t in PLAN[model] if not args.targets or t in args.targets.split(",")]
            for target in targets:
                load = os.getloadavg()[0]
                proc = subprocess.run([sys.executable, __file__, "--one", str(files[model]), target],
                                      capture_output=True, text=True)
                if proc.returncode != 0:
                    run = {"status": "crashed", "message": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "",
                           "decisions": [], "validation": {}, "wall_s": float("nan"), "cpu_s": float("nan"),
                           "peak_rss_mb": float("nan")}
                else:
                    run = json.loads(proc.stdout.strip().splitlines()[-1])
                run["load"] = round(load, 2)
                row = summarize(model, target, run)
                rows.append(row)
                decisions += [{"model": model, "target": target, **d} for d in run["decisions"]]
                print(f"{model:18s} {target:14s} {row['status']:8s} {row['wall_s']:7.1f} s {row['peak_rss_mb']:6.0f} MB "
                      f"obj {row['objective']} bound {row['bound']} {row['message'][:100]}", flush=True)
    frame, per_decision = pd.DataFrame(rows), pd.DataFrame(decisions)
    runs_csv, decisions_csv = RESULTS / "onnx_models.csv", RESULTS / "onnx_decisions.csv"
    if args.update and runs_csv.exists():
        old = pd.read_csv(runs_csv)
        done = set(zip(frame["model"], frame["target"]))
        frame = pd.concat([old[[(m, t) not in done for m, t in zip(old["model"], old["target"])]], frame])
        # the old decisions of the rows not re-run are kept also when the re-run rows have none (all refused)
        old_d = pd.read_csv(decisions_csv) if decisions_csv.exists() and decisions_csv.stat().st_size > 1 else None
        if old_d is not None:
            per_decision = pd.concat([old_d[[(m, t) not in done for m, t in zip(old_d["model"], old_d["target"])]], per_decision])
    order = {m: k for k, m in enumerate(MODELS)}
    frame = frame.sort_values(["model", "target"], key=lambda s: s.map(order) if s.name == "model" else s)
    frame.to_csv(runs_csv, index=False)
    per_decision.to_csv(decisions_csv, index=False)
    write_readme(frame)
    return 0


if __name__ == "__main__":
    sys.exit(main())
