"""Calibration of the SoC cost model on the seed's component-level data (seed 000 L1246–1275, Table 4.3, Table 5.2).

The seed reports, for LeNet on MNIST (batch 5000, L1191) and its three 2 % configurations (Fig. 5.9 (b)):

===============================  ==============================  ============
figure                           seed                            lines
===============================  ==============================  ============
baseline time shares             Conv1 28, Conv2 58.3, FC1 13.4,  L1246
                                 FC2 0.3 %
baseline energy shares           14, 65.7, 20.1, 0.2 %            L1246
Conv2 on P4 (C1, C3) / P5 (C2)   10.9× speedup; 14.9× / 14.4×     L1250
                                 energy
FC1 on P4 (C1, C2) / P6 (C3)     8.3× speedup; 15× / 12.9× energy  L1250–1252
FC2 on FP16 (C3)                 1.7× slower, 2.5× more energy    L1254
FP16-P4-P6-FP16 without pDMA     2.38× speedup, 1.98× energy      L1275
                                 over FP32
===============================  ==============================  ============

plus numbers that are not fitted: DRAM 33 GB/s and 20 pJ/bit (Table 5.2), PROMISE's 256 banks at 1 GHz
(Table 5.2) and its per-operation energies and delays (Table 4.3). A layer's figure is the ratio of its time
or energy in the configuration to all-FP32, with the activation transfers attributed to layers as the seed's
per-layer model does (``CostReport.layer_totals``); the GPU runs one tensor op per kernel (L1187).

:data:`PARAMETERS` are the free parameters: the GPU's achieved FLOP efficiency for convolutions and GEMMs and its
fall for short dot products, the achieved DRAM bandwidth of its kernels, its per-op overhead, static power and energy
per FLOP (the TX2 tables the seed measured, L1167–1177, and does not print), and the share of PROMISE's Class-1 +
Class-2 energy that does not scale with the swing (energy per swing is not in the seed, L902). The swing's effect
enters as the seed's ratio of one layer's two energy reductions (14.9/14.4 for Conv2, 15/12.9 for FC1), which
depends on PROMISE alone. :func:`fit` minimises the squared log-ratios ours/seed of the figures
(:func:`component_figures`) with ``scipy.optimize.least_squares`` (trust-region reflective within the bounds,
deterministic, from :data:`INITIAL`): first the PROMISE parameter on the two swing ratios, then the GPU parameters
on the rest. The end-to-end figures (LeNet 2.75× / 4.5×, the 2.7–20× speedup range, the energy bands,
:data:`SEED_END_TO_END`) are not used: :func:`seed_configuration_ratios` and :func:`end_to_end_figures` predict
them afterwards from the seed's own configurations (Fig. 5.9).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from solvermap.hardware.approxhpvm.soc_sim import CostReport, all_fp32, schedule_cost, schedule_units
from solvermap.hardware.targets import validate_spec
from solvermap.ir.workloads.approxhpvm_tensor_ops import TensorNetwork

LENET_LAYERS = ("conv1", "conv2", "fc1", "fc2")
# LeNet's three 2 % configurations (Fig. 5.9 (b), L1236–1240), the configurations of the component figures
C1, C2, C3 = "FP16-P4-P4-P6", "FP16-P5-P4-P6", "FP16-P4-P6-FP16"


@dataclass(frozen=True)
class Parameter:
    path: str  # dotted field of the approxhpvm spec
    low: float
    high: float
    meaning: str
    stage: str = "soc"  # "promise": fitted first, to the figures that depend on PROMISE alone
    sources: str = ""  # the seed figures that constrain it most


PARAMETERS: tuple[Parameter, ...] = (
    Parameter("promise.swing_fixed_fraction", 0.001, 1.0, "share of Class-1 + Class-2 energy independent of the "
              "swing", stage="promise", sources="Conv2 P4 vs P5 (L1250), FC1 P4 vs P6 (L1250–1252)"),
    Parameter("gpu.efficiency.conv", 0.005, 1.0, "achieved fraction of peak FP32 FLOP/s, convolution (cuDNN)",
              sources="Conv2 10.9× on P4 (L1250), time shares (L1246)"),
    Parameter("gpu.efficiency.gemm", 0.005, 1.0, "achieved fraction of peak FP32 FLOP/s, GEMM (cuBLAS)",
              sources="FC1 8.3× on P4 (L1250), time shares (L1246)"),
    Parameter("gpu.half_efficiency_dot_length", 0.01, 5000.0, "dot-product length at which conv/GEMM reach half "
              "their efficiency", sources="Conv1's 28 % time share (L1246)"),
    Parameter("gpu.dram_efficiency", 0.02, 1.0, "achieved fraction of 33 GB/s for GPU kernels' activation traffic",
              sources="time shares (L1246), FC2 on FP16 (L1254), no pDMA (L1275)"),
    Parameter("gpu.launch_us", 0.1, 20000.0, "per tensor op: kernel launch and HPVM runtime overhead (µs)",
              sources="FC2's 0.3 % time share (L1246), FC2 1.7× slower on FP16 (L1254)"),
    Parameter("gpu.power_w", 0.01, 30.0, "GPU power while a kernel runs, static part (W)",
              sources="energy shares (L1246), Conv2/FC1 energy reductions (L1250–1252), FC2 on FP16 (L1254)"),
    Parameter("gpu.energy_per_flop_pj", 0.001, 500.0, "dynamic GPU energy per FP32 FLOP (pJ)",
              sources="energy shares (L1246), Conv2/FC1 energy reductions (L1250–1252), no pDMA (L1275)"),
)
# the fit starts here, whatever the preset holds (the preset's values are this fit's result)
INITIAL: dict[str, float] = {
    "promise.swing_fixed_fraction": 0.5, "gpu.efficiency.conv": 0.45, "gpu.efficiency.gemm": 0.6,
    "gpu.half_efficiency_dot_length": 50.0, "gpu.dram_efficiency": 0.6, "gpu.launch_us": 100.0, "gpu.power_w": 1.0,
    "gpu.energy_per_flop_pj": 20.0,
}


@dataclass(frozen=True)
class Figure:
    """One figure of the seed: its value, lines, and how the cost model computes it."""

    name: str
    seed: float
    lines: str
    compute: Callable[[Mapping[str, CostReport]], float]
    note: str = ""
    stage: str = "soc"


def layer_knobs(net: TensorNetwork, settings: str | Sequence[str]) -> dict[str, str]:
    """Knob per op from a per-layer settings string like ``FP16-P4-P4-P6`` (every op of a layer takes its layer's
    setting). A string shorter than the network (some of Fig. 5.9's, as printed) repeats its last setting."""
    parts = settings.split("-") if isinstance(settings, str) else list(settings)
    knobs = {}
    for i, layer in enumerate(net.layers):
        knob = parts[min(i, len(parts) - 1)]
        knobs.update({op.name: knob for op in net.layer_ops(layer)})
    return knobs


def configuration_cost(net: TensorNetwork, spec, settings: str | Sequence[str] | Mapping[str, str]) -> CostReport:
    """Time and energy of a configuration with one tensor op per GPU kernel (L1187)."""
    knobs = dict(settings) if isinstance(settings, Mapping) else layer_knobs(net, settings)
    return schedule_cost(net, spec, schedule_units(net, knobs, ()))


def _share(kind: str, layer: str):
    def compute(r):
        base = r["FP32"]
        value = lambda c: c.time_s if kind == "time" else c.energy_j  # noqa: E731
        return 100.0 * value(base.layer_totals[layer]) / value(base.total)
    return compute


def _layer_ratio(kind: str, layer: str, config: str, slower: bool = False):
    def compute(r):
        value = (lambda c: c.time_s) if kind == "time" else (lambda c: c.energy_j)
        a, b = value(r["FP32"].layer_totals[layer]), value(r[config].layer_totals[layer])
        return b / a if slower else a / b
    return compute


def _swing_ratio(layer: str, higher: str, lower: str):
    def compute(r):
        return r[higher].layer_totals[layer].energy_j / r[lower].layer_totals[layer].energy_j
    return compute


def _overall(kind: str, config: str):
    def compute(r):
        value = (lambda c: c.time_s) if kind == "time" else (lambda c: c.energy_j)
        return value(r["FP32"].total) / value(r[config].total)
    return compute


NO_PDMA = "no-pDMA " + C3
SEED_COMPONENTS: tuple[Figure, ...] = (
    *(Figure(f"time share {layer}", share, "L1246", _share("time", layer))
      for layer, share in zip(LENET_LAYERS, (28.0, 58.3, 13.4, 0.3))),
    *(Figure(f"energy share {layer}", share, "L1246", _share("energy", layer))
      for layer, share in zip(LENET_LAYERS, (14.0, 65.7, 20.1, 0.2))),
    Figure("conv2 speedup (P4)", 10.9, "L1250", _layer_ratio("time", "conv2", C1)),
    Figure("conv2 energy reduction (P4)", 14.9, "L1250", _layer_ratio("energy", "conv2", C1)),
    # the swing's effect as the seed's ratio of two energy reductions of the same layer: it depends on PROMISE's
    # energy per swing alone, not on how well the GPU side matches
    Figure("conv2 energy P5 / P4", 14.9 / 14.4, "L1250", _swing_ratio("conv2", C2, C1), stage="promise"),
    Figure("fc1 speedup (P4)", 8.3, "L1250", _layer_ratio("time", "fc1", C1)),
    Figure("fc1 energy reduction (P4)", 15.0, "L1252", _layer_ratio("energy", "fc1", C1)),
    Figure("fc1 energy P6 / P4", 15.0 / 12.9, "L1250–1252", _swing_ratio("fc1", C3, C1), stage="promise"),
    Figure("fc2 slowdown on FP16", 1.7, "L1254", _layer_ratio("time", "fc2", C3, slower=True)),
    Figure("fc2 energy increase on FP16", 2.5, "L1254", _layer_ratio("energy", "fc2", C3, slower=True)),
    Figure("speedup without pDMA (FP16-P4-P6-FP16)", 2.38, "L1275", _overall("time", NO_PDMA)),
    Figure("energy reduction without pDMA (FP16-P4-P6-FP16)", 1.98, "L1275", _overall("energy", NO_PDMA)),
)
# reported beside the fit, not fitted: the seed gives no number (L1248)
CONV1_FP16 = (Figure("conv1 slowdown on FP16", 1.0, "L1248", _layer_ratio("time", "conv1", C1, slower=True),
                     "seed: a slight slowdown"),
              Figure("conv1 energy increase on FP16", 1.0, "L1248", _layer_ratio("energy", "conv1", C1, slower=True),
                     "seed: a slight energy increase"))


def with_values(spec, values: Mapping[str, float]):
    """A copy of ``spec`` with dotted fields set (validated like a preset)."""
    data = spec.model_dump()
    for path, value in values.items():
        node = data
        parts = path.split(".")
        for part in parts[:-1]:
            node = node[part]
        node[parts[-1]] = float(value)
    return validate_spec(data, f"{spec.name} (calibration)")


def lenet_reports(spec, net: TensorNetwork) -> dict[str, CostReport]:
    """All-FP32, C1, C2, C3 and C3 without pDMA on LeNet."""
    reports = {"FP32": schedule_cost(net, spec, schedule_units(net, all_fp32(net), ()))}
    for config in (C1, C2, C3):
        reports[config] = configuration_cost(net, spec, config)
    no_pdma = _without_pdma(spec) if spec.promise.pdma else spec
    reports[NO_PDMA] = configuration_cost(net, no_pdma, C3)
    return reports


def _without_pdma(spec):
    data = spec.model_dump()
    data["promise"]["pdma"] = False
    data["promise"]["output_format"] = "fp32"
    return validate_spec(data, f"{spec.name} without pDMA")


def component_figures(spec, net: TensorNetwork, figures: Sequence[Figure] = SEED_COMPONENTS) -> dict[str, float]:
    reports = lenet_reports(spec, net)
    return {f.name: f.compute(reports) for f in figures}


@dataclass
class FitResult:
    values: dict[str, float]
    figures: dict[str, float]  # ours, calibrated
    initial_figures: dict[str, float]  # ours, before the fit
    cost: float  # ½ Σ log² (ours / seed)
    iterations: int
    status: str
    extra: dict = field(default_factory=dict)

    def log_error(self, name: str) -> float:
        seed = next(f.seed for f in SEED_COMPONENTS if f.name == name)
        return math.log(self.figures[name] / seed)


def _get(spec, path: str) -> float:
    node = spec
    for part in path.split("."):
        node = node[part] if isinstance(node, Mapping) else getattr(node, part)
    return float(node)


STAGES = ("promise", "soc")


def fit(spec, net: TensorNetwork, *, figures: Sequence[Figure] = SEED_COMPONENTS,
        parameters: Sequence[Parameter] = PARAMETERS) -> FitResult:
    """Least squares on log(ours / seed), in the log of each parameter (bounded), from :data:`INITIAL`, in two
    stages: the PROMISE parameter on the figures that depend on PROMISE alone (the energy ratio of one layer at two
    swings), then the GPU parameters on the rest with it fixed, so a GPU-side misfit cannot move PROMISE's swing
    model."""
    from scipy.optimize import least_squares

    spec = with_values(spec, {p.path: INITIAL[p.path] for p in parameters if p.path in INITIAL})
    current = spec
    values: dict[str, float] = {}
    cost, evaluations, messages = 0.0, 0, []
    for stage in STAGES:
        params = [p for p in parameters if p.stage == stage]
        figs = [f for f in figures if f.stage == stage]
        if not params or not figs:
            continue
        seeds = np.array([f.seed for f in figs])
        lows = np.array([math.log(p.low) for p in params])
        highs = np.array([math.log(p.high) for p in params])
        start = np.clip([math.log(max(_get(current, p.path), p.low)) for p in params], lows + 1e-9, highs - 1e-9)
        base = current

        def spec_at(x, base=base, params=params):
            return with_values(base, {p.path: math.exp(v) for p, v in zip(params, x)})

        def residuals(x, spec_at=spec_at, figs=figs, seeds=seeds):
            ours = component_figures(spec_at(x), net, figs)
            return np.log(np.array([ours[f.name] for f in figs]) / seeds)

        result = least_squares(residuals, start, bounds=(lows, highs), method="trf", max_nfev=2000)
        current = spec_at(result.x)
        values.update({p.path: float(math.exp(v)) for p, v in zip(params, result.x)})
        cost += float(result.cost)
        evaluations += int(result.nfev)
        messages.append(f"{stage}: {result.message}")
    every = (*figures, *CONV1_FP16)
    return FitResult(values, component_figures(current, net, every), component_figures(spec, net, every), cost,
                     evaluations, "; ".join(messages))


# ---------------------------------------------------------------------- end-to-end predictions (not fitted)

NETWORKS = ("lenet", "dnn1", "dnn2", "dnn3")
LIMITS = (0.01, 0.02)
# Fig. 5.9 (L1230–1240) as printed; a string shorter than its network repeats its last setting (layer_knobs)
SEED_SETTINGS: dict[float, dict[str, tuple[str, str, str]]] = {
    0.01: {"lenet": ("FP16-P6-P6", "FP16-P6-P6-FP16", "FP16-P6-P7-FP16"), "dnn1": ("P7-P7", "P7-FP16", "P7-FP32"),
           "dnn2": ("P7-P7-P7", "P7-FP16-P7", "P7-FP32-FP32"),
           "dnn3": ("P7-P7-P6-P7", "P6-P7-P7-FP16", "P6-FP16-FP16")},
    0.02: {"lenet": ("FP16-P4-P4-P6", "FP16-P5-P4-P6", "FP16-P4-P6-FP16"), "dnn1": ("P5-P6", "P5-P7", "P6-P6"),
           "dnn2": ("P5-P4-P4", "P5-P5-P4", "P5-P5-P5"), "dnn3": ("P4-P4-P5", "P4-P4-P6", "P4-FP16-P4-P4")},
}


@dataclass(frozen=True)
class EndToEnd:
    """An end-to-end figure of the seed and the configurations (limit, network, rank) it summarises."""

    name: str
    seed: float
    lines: str
    kind: str  # speedup | energy
    reduce: str  # mean | min | max | one
    configurations: tuple[tuple[float, str, int], ...]


def _all(limits=LIMITS, networks=NETWORKS) -> tuple[tuple[float, str, int], ...]:
    return tuple((lim, net, rank) for lim in limits for net in networks for rank in range(3))


SEED_END_TO_END: tuple[EndToEnd, ...] = (
    EndToEnd("LeNet mean speedup at 2 %", 2.75, "L1260", "speedup", "mean", ((0.02, "lenet", 0), (0.02, "lenet", 1),
                                                                           (0.02, "lenet", 2))),
    EndToEnd("LeNet mean energy reduction at 2 %", 4.5, "L1260", "energy", "mean",
             ((0.02, "lenet", 0), (0.02, "lenet", 1), (0.02, "lenet", 2))),
    EndToEnd("lowest speedup (LeNet C3)", 2.7, "L1201", "speedup", "min", _all()),
    EndToEnd("highest speedup (DNN1 C1)", 20.0, "L1201", "speedup", "max", _all()),
    EndToEnd("lowest energy reduction at 1 % (DNN3 C3)", 1.8, "L1201", "energy", "min", _all((0.01,))),
    EndToEnd("highest energy reduction at 1 % (DNN1 C1)", 6.6, "L1201", "energy", "max", _all((0.01,))),
    EndToEnd("lowest energy reduction at 2 % (DNN3 C3)", 2.5, "L1201", "energy", "min", _all((0.02,))),
    EndToEnd("highest energy reduction at 2 % (DNN1 C1)", 8.3, "L1201", "energy", "max", _all((0.02,))),
    EndToEnd("DNN1 C1 speedup at 1 %", 20.0, "L1201", "speedup", "one", ((0.01, "dnn1", 0),)),
    EndToEnd("DNN1 C1 energy reduction at 1 %", 6.6, "L1201", "energy", "one", ((0.01, "dnn1", 0),)),
    EndToEnd("DNN1 C1 energy reduction at 2 %", 8.3, "L1201", "energy", "one", ((0.02, "dnn1", 0),)),
    EndToEnd("DNN3 C3 energy reduction at 1 %", 1.8, "L1201", "energy", "one", ((0.01, "dnn3", 2),)),
    EndToEnd("DNN3 C3 energy reduction at 2 %", 2.5, "L1201", "energy", "one", ((0.02, "dnn3", 2),)),
)


def seed_configuration_ratios(spec, networks: Mapping[str, TensorNetwork],
                              ) -> dict[tuple[float, str, int], tuple[float, float]]:
    """(speedup, energy reduction) over all-FP32 of each of Fig. 5.9's configurations on our cost model."""
    out = {}
    for name, net in networks.items():
        base = schedule_cost(net, spec, schedule_units(net, all_fp32(net), ()))
        for limit in LIMITS:
            for rank, settings in enumerate(SEED_SETTINGS[limit][name]):
                r = configuration_cost(net, spec, settings)
                out[(limit, name, rank)] = (base.total.time_s / r.total.time_s, base.total.energy_j / r.total.energy_j)
    return out


def end_to_end_figures(ratios: Mapping[tuple[float, str, int], tuple[float, float]],
                       figures: Sequence[EndToEnd] = SEED_END_TO_END) -> dict[str, float]:
    """Each end-to-end figure computed from the configuration ratios as the seed computes it."""
    out = {}
    for f in figures:
        values = [ratios[c][0 if f.kind == "speedup" else 1] for c in f.configurations]
        reduced = {"mean": float(np.mean(values)), "min": min(values), "max": max(values), "one": values[0]}
        out[f.name] = reduced[f.reduce]
    return out
