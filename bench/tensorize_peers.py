"""UNIT tensorized kernels against the peers a user would run, on this CPU, per Table I layer (seed 002).

For every layer (full size, batch 1, one thread) and every x86 target this CPU runs (``solvermap
targets``: AVX-512 VNNI, AVX-VNNI, AVX2 exact, AVX2 7-bit mode), the solver's loop mapping
(formulations/tensorize.py, checked) is rewritten, tuned by timing (UNIT pairs, register tiles with
and without reduction blocks, Optuna) and compiled. Then, in interleaved rounds, the script times:

* each target's tuned kernel (``ours:<target>``; the 7-bit mode is timed on 7-bit activations, its
  only exact domain);
* the untensorized convolution tuned for itself, compiled with the first target's flags: the faster
  of the rewritten nest with the instruction as scalar C (tuned by the same tuner) and the
  channels-last dot product over contiguous channels (tuned over its unroll and loop order), which
  gcc vectorises on its own — with AVX-512 VNNI flags it emits ``vpdpbusd`` itself
  (``untensorized``);
* onnxruntime's ``ConvInteger`` and ``QLinearConv`` (profiler node times, 1 thread);
* TVM's Relax build of the convolution (untuned: see ``peers.TVM_TUNING_REASON``), where TVM loads;
* NumPy (im2col + float64 BLAS, 1 thread).

Every kernel's output on the same full-range data (activations 0..255, weights -128..127) is compared
with the exact int32 reference (QLinearConv: within one output level of the exact requantization).
Reported per layer and kernel: the median over rounds of the per-round fastest call by the thread's
CPU clock (on this shared machine the time a thread waits for a core is the load's, not the kernel's;
onnxruntime and TVM: the lesser of their own wall-clock timer and the CPU time per call, see
``mappers/cpu/peers.py``), GMAC/s (useful MACs),
% of this CPU's int8 peak (the fastest instruction it has, measured by ``execution.measure_peak``)
and % of the kernel's own instruction peak, exactness, and the latency model's bound for our
kernels (there is no hardware performance counter in this VM, so this and the instruction peak are
where the time goes). CPU model, flags, compiler and library versions and the load average are
recorded in every file.

    nice .venv/bin/python bench/tensorize_peers.py                        # 16 Table I layers
    nice .venv/bin/python bench/tensorize_peers.py --layers conv_table1_3 --rounds 3

Writes ``studies/unit_tensorize/results/peers.csv``, ``peers_summary.json``, ``peers.png`` and, when
all 16 Table I layers ran, the table of the README's UNIT section (between its markers).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("TVM_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from solvermap.formulations import tensorize as tensorize_model  # noqa: E402
from solvermap.formulations.solver import SolverConfig  # noqa: E402
from solvermap.hardware.checks.tensorize import check  # noqa: E402
from solvermap.hardware.cpu import X86_TARGETS, codegen, toolchain  # noqa: E402
from solvermap.hardware.cpu.instructions import descriptor  # noqa: E402
from solvermap.hardware.cpu.latency_model import estimate  # noqa: E402
from solvermap.hardware.targets import load_target  # noqa: E402
from solvermap.ir.workloads import build  # noqa: E402
from solvermap.ir.workloads.cpu_conv import TABLE_I, conv2d_inputs  # noqa: E402
from solvermap.mappers.cpu import peers  # noqa: E402
from solvermap.mappers.cpu.execution import (  # noqa: E402
    Bench,
    ValidationOptions,
    error_summary,
    input_ranges,
    measure_peak,
    reference,
    tune_channels_last,
    tune_kernel,
)
from solvermap.mappers.cpu.inspector import inspect  # noqa: E402
from solvermap.mappers.cpu.rewriter import rewrite  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "studies" / "unit_tensorize" / "results"
README = ROOT / "README.md"
TABLE_LAYERS = [f"conv_table1_{i}" for i in range(1, len(TABLE_I) + 1)]
ALL_TARGETS = X86_TARGETS + ("x86-avx2-u7",)
ISA_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx_vnni",
             "avx512_bf16", "amx_int8")
README_BEGIN, README_END = "<!-- unit-peers:begin -->", "<!-- unit-peers:end -->"


def geomean(values) -> float:
    values = [v for v in values if v and v > 0 and math.isfinite(v)]
    return float(math.exp(sum(math.log(v) for v in values) / len(values))) if values else float("nan")


class OurKernel:
    """One target's tuned kernel for one layer: the solver's mapping, rewritten, tuned, compiled."""

    def __init__(self, name: str, program, args) -> None:
        self.target = load_target(name)
        self.instruction = descriptor(self.target.instruction)
        verdict = inspect(program, self.instruction, allow_padding=self.target.allow_padding, workload=program.name)
        problem = verdict.raise_if_not(program.name)
        solved = tensorize_model.solve(problem, SolverConfig(time_limit_s=30, seed=args.seed))
        report = check(problem, solved.decision)
        if not report.ok:
            raise RuntimeError(f"{name}: the solver's mapping fails its check: {report.violations}")
        self.mapping = " ".join(f"{b}<-{a}" for b, a in solved.decision.loop_map)
        self.nest = rewrite(problem, solved.decision, self.instruction)
        self.ranges = input_ranges(self.nest)
        self.inputs = conv2d_inputs(program, args.seed, self.ranges)
        self.bench = Bench(self.nest, self.target, self.inputs)
        options = ValidationOptions(tuner="optuna", trials=args.trials, unit_pairs=args.pairs, tiles=args.tiles,
                                    min_seconds=args.tune_seconds, min_reps=3, seed=args.seed)
        ref = reference(program, self.inputs)
        self.tuning = tune_kernel(self.bench, problem, self.nest, self.target, options, ref,
                                  codegen.tensorized_kernel, "tuned")
        self.problem, self.options, self.ref = problem, options, ref
        self.lib = self.bench.library([codegen.tensorized_kernel(self.nest, self.tuning.best, "k_ours")])

    def untensorized(self):
        """The untensorized convolution tuned for itself, in the faster of its two forms: the rewritten
        nest with the instruction as scalar C, or the channels-last dot product gcc vectorises.
        Returns (run(inputs, min_seconds, min_reps) -> (seconds, output), form, schedule, candidates)."""
        tuning = tune_kernel(self.bench, self.problem, self.nest, self.target, self.options, self.ref,
                             codegen.untensorized_kernel, "untensorized")
        channels_last = tune_channels_last(self.bench, self.problem.program, self.inputs, self.ref, self.options)
        if channels_last is not None and min(t["measured_s"] for t in channels_last.tuning) < tuning.best_seconds:
            return (lambda inputs, s, r: channels_last.run(inputs, min_seconds=s, min_reps=r),
                    "channels-last dot product", channels_last.params, tuning.measured + len(channels_last.tuning))
        lib = self.bench.library([codegen.untensorized_kernel(self.nest, tuning.best, "k_untensorized")])
        return (lambda inputs, s, r: self.bench.run(lib, "k_untensorized", packed=True, min_seconds=s, min_reps=r,
                                                    inputs=inputs),
                "rewritten nest, scalar lanes", tuning.best.to_json(),
                tuning.measured + (len(channels_last.tuning) if channels_last else 0))


def run_layer(name: str, targets: list[str], peaks: dict, cpu_peak: float, args) -> list[dict]:
    load_before = os.getloadavg()[0]
    program = build(name, "cpu").ir
    conv = program.attrs["conv2d"]
    macs = conv["K"] * conv["C"] * conv["R"] ** 2 * conv["OHW"] ** 2
    full = conv2d_inputs(program, args.seed)
    full_ref = reference(program, full)
    start = time.perf_counter()
    ours = {t: OurKernel(t, program, args) for t in targets}
    first = ours[targets[0]]
    untensorized_run, untensorized_form, untensorized_schedule, untensorized_measured = first.untensorized()
    # (kernel, timing function, output on full-range data, extra row fields)
    entries: list[tuple[str, object, np.ndarray | None, dict]] = []
    for t, k in ours.items():
        _, out = k.bench.run(k.lib, "k_ours", packed=True, min_seconds=0.0, min_reps=1, inputs=full)
        own = k.bench.run(k.lib, "k_ours", packed=True, min_seconds=0.0, min_reps=1)[1]
        extra = {"isa": k.instruction.isa, "instruction": k.instruction.name, "mapping": k.mapping,
                 "schedule": json.dumps(k.tuning.best.to_json()),
                 "exact_on_own_range": bool(np.array_equal(own, k.ref)),
                 "own_range": json.dumps({n: list(r) for n, r in k.ranges.items()}) if k.ranges else "full",
                 "pct_isa_peak_denominator": peaks[t]["gmacs"],
                 "model_bound": estimate(k.nest, k.tuning.best, k.target.core).bound,
                 "schedules_measured": k.tuning.measured}
        label = f"ours:{t}" + (" (7-bit activations)" if k.ranges else "")
        entries.append((label, (lambda k=k: k.bench.run(k.lib, "k_ours", packed=True, min_seconds=args.min_seconds,
                                                        min_reps=args.min_reps)[0]), out, extra))
    _, out = untensorized_run(full, 0.0, 1)
    entries.append(("untensorized", lambda: untensorized_run(first.inputs, args.min_seconds, args.min_reps)[0], out,
                    {"isa": f"gcc -O3 auto-vectorised ({targets[0]} flags): {untensorized_form}",
                     "schedule": json.dumps(untensorized_schedule), "schedules_measured": untensorized_measured}))
    ort = {}
    if not peers.onnxruntime_unavailable():
        y_scale = peers.output_scale(full_ref)
        for op in peers.OPS:
            session = peers.OnnxRuntimeConv(op, full["data"].shape, full["weight"], conv["stride"], y_scale)
            ort[op] = (session, peers.check_output(op, session.run(full["data"]), full_ref, y_scale))
    tvm = None
    if args.tvm and not peers.tvm_unavailable():
        tvm = peers.TvmConv(full["data"].shape, full["weight"], conv["stride"])
        tvm_out = tvm.run(full["data"])
    rounds: dict[str, list[float]] = {label: [] for label, *_ in entries}
    rounds["numpy"] = []
    for _ in range(args.rounds):
        for label, timer, _, _ in entries:
            rounds[label].append(timer())
        for session, _ in ort.values():
            session.timed_round(full["data"], args.min_seconds, args.min_reps)
        if tvm is not None:
            tvm.timed_round(full["data"], args.min_seconds, 1)
        from threadpoolctl import threadpool_limits

        samples = []
        with threadpool_limits(limits=1):
            while not samples or sum(samples) < args.min_seconds:
                s = time.thread_time()
                reference(program, full)
                samples.append(time.thread_time() - s)
        rounds["numpy"].append(min(samples))
    base = {"layer": name, **{k: conv[k] for k in ("C", "K", "IHW", "R", "stride", "OHW")}, "macs": macs,
            "load_before": load_before, "cpu_model": toolchain.cpu_model(),
            "cpu_isa": " ".join(f for f in ISA_FLAGS if f in toolchain.cpu_flags())}
    rows = []

    def row(kernel: str, seconds: float, exact: dict, **extra) -> None:
        rows.append({**base, "kernel": kernel, "latency_s": seconds, "gmacs": macs / seconds / 1e9,
                     "pct_cpu_int8_peak": 100 * macs / seconds / 1e9 / cpu_peak, **exact, **extra})

    for label, _, out, extra in entries:
        denominator = extra.pop("pct_isa_peak_denominator", None)
        seconds = statistics.median(rounds[label])
        if denominator:
            extra["pct_isa_peak"] = 100 * macs / seconds / 1e9 / denominator
        row(label, seconds, {f"{k}_full_range" if k == "exact" else k: v for k, v in error_summary(out, full_ref).items()},
            **extra)
    ort_rounds = {}
    for op, (session, (exact, wrong, max_error)) in ort.items():
        kernel_rounds, run_rounds = session.profile(warmup_calls=1)
        ort_rounds[op] = kernel_rounds
        row(f"onnxruntime:{op}", statistics.median(kernel_rounds),
            {"exact_full_range": exact, "wrong_fraction": wrong, "max_error": max_error},
            isa="MLAS (onnxruntime picks by CPUID)", run_latency_s=statistics.median(run_rounds),
            notes="exact = within 1 output level of the exact requantization" if op == "QLinearConv" else "")
    if not ort:
        rows.append({**base, "kernel": "onnxruntime", "notes": peers.onnxruntime_unavailable()})
    if tvm is not None:
        row("tvm", statistics.median(tvm.rounds), {f"{k}_full_range" if k == "exact" else k: v
                                                   for k, v in error_summary(tvm_out, full_ref).items()},
            isa=f"TVM {peers.tvm_version()} Relax, {tvm.target.attrs.get('mcpu', '')}", notes=peers.TVM_TUNING_REASON)
    else:
        rows.append({**base, "kernel": "tvm", "notes": peers.tvm_unavailable() or "--no-tvm"})
    row("numpy (im2col + float64 BLAS)", statistics.median(rounds["numpy"]), {"exact_full_range": True},
        isa="BLAS, 1 thread")
    load_after = os.getloadavg()[0]
    qlinear = statistics.median(ort_rounds["QLinearConv"]) if "QLinearConv" in ort_rounds else None
    for r in rows:
        r["load_after"] = load_after
        r["layer_seconds"] = time.perf_counter() - start
        if qlinear and r.get("latency_s"):
            r["speedup_vs_qlinearconv"] = qlinear / r["latency_s"]
    return rows


def summarise(df: pd.DataFrame, targets: list[str], peaks: dict, args) -> dict:
    timed = df.dropna(subset=["gmacs"])
    per_kernel = {}
    for kernel, g in timed.groupby("kernel", sort=False):
        per_kernel[kernel] = {"layers": int(len(g)), "geomean_gmacs": geomean(g["gmacs"]),
                              "geomean_pct_cpu_int8_peak": geomean(g["pct_cpu_int8_peak"]),
                              "geomean_pct_instruction_peak": geomean(g["pct_isa_peak"]) if "pct_isa_peak" in g else None,
                              "all_exact_full_range": bool(g["exact_full_range"].fillna(False).astype(bool).all()),
                              "wrong_fraction_max": float(g["wrong_fraction"].max()) if "wrong_fraction" in g else None,
                              "geomean_speedup_vs_qlinearconv": geomean(g["speedup_vs_qlinearconv"])
                              if "speedup_vs_qlinearconv" in g else None}
    picked = f"ours:{targets[0]}"
    goal = None
    if picked in per_kernel and "onnxruntime:QLinearConv" in per_kernel:
        ours, theirs = per_kernel[picked]["geomean_gmacs"], per_kernel["onnxruntime:QLinearConv"]["geomean_gmacs"]
        goal = {"kernel": picked, "ours_geomean_gmacs": ours, "qlinearconv_geomean_gmacs": theirs,
                "ratio": ours / theirs, "met": bool(ours >= theirs and per_kernel[picked]["all_exact_full_range"]),
                "statement": "our kernels, bit-exact on full-range data, at least as fast as QLinearConv "
                             "(geomean over the layers run, same run)"}
    flags = toolchain.cpu_flags()
    return {
        "cpu": {"model": toolchain.cpu_model(), "machine": platform.machine(), "isa": [f for f in ISA_FLAGS if f in flags],
                "flags": sorted(flags), "logical_cpus": os.cpu_count()},
        "targets_run": targets, "target_picked_by_cpu_flags": targets[0],
        "instruction_peaks_gmacs": {t: p["gmacs"] for t, p in peaks.items()},
        "cpu_int8_peak_gmacs": max(p["gmacs"] for p in peaks.values()),
        "per_kernel": per_kernel, "goal": goal,
        "versions": {"python": platform.python_version(), "numpy": np.__version__,
                     "compiler": toolchain.compiler_version("gcc"), "onnxruntime": peers.onnxruntime_version(),
                     "tvm": peers.tvm_version() if args.tvm else None},
        "tvm_note": peers.TVM_TUNING_REASON if args.tvm and not peers.tvm_unavailable() else peers.tvm_unavailable(),
        "timing": {"rounds": args.rounds, "min_seconds": args.min_seconds, "threads": 1,
                   "statistic": "median over interleaved rounds of the per-round fastest call (thread CPU time)",
                   "load_average_range": [float(df[["load_before", "load_after"]].min().min()),
                                          float(df[["load_before", "load_after"]].max().max())]},
        "command": "nice .venv/bin/python bench/tensorize_peers.py " + " ".join(sys.argv[1:]),
        "layers": sorted(set(df["layer"]), key=lambda n: int(n.rsplit("_", 1)[1])),
    }


def readme_table(summary: dict) -> str:
    """The README's UNIT table, from the summary (nothing typed by hand)."""
    lines = [f"Measured by `{summary['command'].strip()}` on {summary['cpu']['model']} "
             f"({', '.join(summary['cpu']['isa'])}), one thread, {len(summary['layers'])} Table I layers, "
             f"load average {summary['timing']['load_average_range'][0]:.1f}–"
             f"{summary['timing']['load_average_range'][1]:.1f} "
             f"(`studies/unit_tensorize/results/peers.csv`, `peers_summary.json`):", "",
             "| kernel | geomean GMAC/s | % of this CPU's int8 peak | % of its instruction's peak | "
             "exact on full-range data | vs QLinearConv |",
             "|---|---:|---:|---:|---|---:|"]

    def number(value, fmt: str) -> str:
        return "" if value is None or not math.isfinite(value) else format(value, fmt)

    for kernel, k in summary["per_kernel"].items():
        exact = "yes" if k["all_exact_full_range"] else f"no (up to {100 * (k['wrong_fraction_max'] or 0):.0f} % of outputs wrong)"
        isa = number(k.get("geomean_pct_instruction_peak"), ".0f")
        lines.append(f"| {kernel} | {k['geomean_gmacs']:.1f} | {k['geomean_pct_cpu_int8_peak']:.0f} % | "
                     f"{isa + ' %' if isa else ''} | {exact} | {number(k.get('geomean_speedup_vs_qlinearconv'), '.2f')}"
                     f"{'x' if number(k.get('geomean_speedup_vs_qlinearconv'), '.2f') else ''} |")
    qlinear = summary["per_kernel"].get("onnxruntime:QLinearConv")
    if qlinear:
        lines += ["", f"onnxruntime picks its kernels by CPUID: on this CPU QLinearConv is "
                      f"{'exact' if qlinear['all_exact_full_range'] else 'not exact'} on full-range activations "
                      "(within one output level of the exact requantization)."]
    goal = summary.get("goal")
    if goal:
        lines += ["", f"Goal ({goal['statement']}): {goal['kernel']} {goal['ours_geomean_gmacs']:.1f} against "
                      f"{goal['qlinearconv_geomean_gmacs']:.1f} GMAC/s, ratio {goal['ratio']:.2f} — "
                      f"{'met' if goal['met'] else 'not met'}. Int8 peak of this CPU: "
                      f"{summary['cpu_int8_peak_gmacs']:.0f} GMAC/s (measured, fastest instruction)."]
    if summary.get("tvm_note"):
        lines += ["", f"TVM: {summary['tvm_note']}."]
    return "\n".join(lines)


def update_readme(summary: dict) -> None:
    text = README.read_text()
    if README_BEGIN not in text or README_END not in text:
        raise SystemExit(f"{README}: the markers {README_BEGIN} / {README_END} are missing")
    head, rest = text.split(README_BEGIN, 1)
    _, tail = rest.split(README_END, 1)
    README.write_text(head + README_BEGIN + "\n" + readme_table(summary) + "\n" + README_END + tail)


def plot(df: pd.DataFrame, summary: dict, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    timed = df.dropna(subset=["gmacs"])
    kernels = list(dict.fromkeys(timed["kernel"]))
    layers = summary["layers"]
    fig, ax = plt.subplots(figsize=(14, 6))
    width = 0.85 / len(kernels)
    for k, kernel in enumerate(kernels):
        g = timed[timed["kernel"] == kernel].set_index("layer").reindex(layers)
        ax.bar(np.arange(len(layers)) + (k - len(kernels) / 2) * width, g["gmacs"], width=width, label=kernel)
    ax.axhline(summary["cpu_int8_peak_gmacs"], color="black", linestyle="--", linewidth=0.8, label="CPU int8 peak")
    ax.set_yscale("log")
    ax.set_xticks(np.arange(len(layers)), [n.replace("conv_table1_", "T") for n in layers])
    ax.set_ylabel("GMAC/s (log)")
    ax.set_title(f"Table I layers, 1 thread, {summary['cpu']['model']}")
    ax.legend(ncol=5, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.07))
    fig.tight_layout()
    fig.savefig(out / "peers.png", dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", nargs="*", default=TABLE_LAYERS)
    parser.add_argument("--targets", nargs="*", default=None, help="default: every x86 target this CPU runs")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--min-seconds", type=float, default=0.05)
    parser.add_argument("--min-reps", type=int, default=3)
    parser.add_argument("--tune-seconds", type=float, default=0.02, help="timed seconds per tuning candidate")
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument("--pairs", type=int, default=8)
    parser.add_argument("--tiles", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-tvm", dest="tvm", action="store_false")
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument("--resummarise", action="store_true",
                        help="rewrite the summary, figure and README table from the peers.csv in --out")
    args = parser.parse_args()
    if args.resummarise:
        out = Path(args.out)
        previous = json.loads((out / "peers_summary.json").read_text())
        peaks = {t: {"gmacs": g} for t, g in previous["instruction_peaks_gmacs"].items()}
        df = pd.read_csv(out / "peers.csv")
        summary = summarise(df, previous["targets_run"], peaks, args)
        for key in ("command", "versions", "tvm_note", "cpu"):  # as recorded by the run that measured
            summary[key] = previous[key]
        summary["timing"].update({k: previous["timing"][k] for k in ("rounds", "min_seconds")})
        (out / "peers_summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        plot(df, summary, out)
        if sorted(summary["layers"]) == sorted(TABLE_LAYERS) and out == RESULTS:
            update_readme(summary)
        print(readme_table(summary))
        return
    targets = args.targets or [t for t in ALL_TARGETS if load_target(t).runs_here()[0]]
    if not targets:
        raise SystemExit("this CPU runs none of the x86 targets (solvermap targets)")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    peaks = {t: measure_peak(descriptor(load_target(t).instruction), load_target(t)) for t in targets}
    cpu_peak = max(p["gmacs"] for p in peaks.values())
    print("instruction peaks (GMAC/s):", {t: round(p["gmacs"], 1) for t, p in peaks.items()}, flush=True)
    rows = []
    for name in args.layers:
        layer_rows = run_layer(name, targets, peaks, cpu_peak, args)
        rows += layer_rows
        print(name, {r["kernel"]: round(r["gmacs"], 1) for r in layer_rows if r.get("gmacs")},
              f"load {layer_rows[0]['load_before']:.1f}-{layer_rows[0]['load_after']:.1f}", flush=True)
    df = pd.DataFrame(rows)
    df.to_csv(out / "peers.csv", index=False)
    summary = summarise(df, targets, peaks, args)
    (out / "peers_summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    plot(df, summary, out)
    if sorted(args.layers) == sorted(TABLE_LAYERS) and out == RESULTS:
        update_readme(summary)
    print(readme_table(summary))


if __name__ == "__main__":
    main()
