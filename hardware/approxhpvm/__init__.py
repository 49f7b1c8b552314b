"""ApproxHPVM SoC target: a GPU (FP32 / FP16) beside PROMISE, an analog in-SRAM accelerator (seed 000 Ch. 4–5).

The spec is the seed's Table 5.2 (TX2 GPU + DRAM, PROMISE 256 × 16 KB banks at 1 GHz, L1146–1157),
Table 4.3 (PROMISE class energies and delays, L882–896) and the swing model of eq. 4.2 (L788–790).
Every number the seed does not give is an entry of the preset's ``assumptions:`` list
(``hardware/presets/promise-soc.yaml``), which cites the seed line it fills in for.

Knobs (L1110–1114): ``FP32`` (golden) and ``FP16`` on the GPU, ``P1`` … ``P7`` on PROMISE (swing levels
in increasing order of voltage and decreasing error). :data:`KNOBS` orders them from least to most accurate
(L1119: P1 < … < P7 < FP16 < FP32).

Supported tensor ops (Table 5.1, L934–948, plus sigmoid and max pooling, L1123), and the ops HPVM's DNN
benchmarks add (batch normalisation, grouped convolution, mean pooling, softmax; HPVM's tensor runtime
``batchnorm``, ``group_conv``, ``pool_mean``, ``softmax``): :data:`SUPPORTED_OPS`.
:func:`check_supported` rejects a network with any other op with one :class:`InputError` line.

Beside this module: ``promise_sim.py`` (PROMISE functional, timing and energy models), ``gpu_cost.py`` (the
GPU FP32/FP16 cost table and precision-conversion costs) and ``soc_sim.py`` (a whole knob configuration:
Monte Carlo accuracy, time and energy).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from solvermap.errors import InputError
from solvermap.hardware.targets import TargetSpec, register_family

PROMISE_KNOBS = tuple(f"P{k}" for k in range(1, 8))
GPU_KNOBS = ("FP16", "FP32")
KNOBS = PROMISE_KNOBS + GPU_KNOBS  # least → most accurate (seed L1119)
SUPPORTED_OPS = ("conv", "gemm", "add", "batchnorm", "tanh", "relu", "sigmoid", "pool", "avgpool", "softmax")
ACTIVATIONS = ("tanh", "relu", "sigmoid")


def knob_device(knob: str) -> str:
    return "promise" if knob in PROMISE_KNOBS else "gpu"


def knob_precision(knob: str) -> str:
    """Data format a knob produces: fp32, fp16 or int8 (PROMISE computes on 8-bit integers, L1047)."""
    return {"FP32": "fp32", "FP16": "fp16"}.get(knob, "int8")


def swing_level(knob: str) -> int:
    return int(knob[1:])


def parse_knobs(names, source: str = "decisions.knobs", field: str = "allowed") -> tuple[str, ...]:
    """Validate user-given knob names; an unknown knob is a one-line :class:`InputError`."""
    out = []
    for name in names:
        if str(name) not in KNOBS:
            raise InputError(source, field, f"unknown knob {name!r}; known: {', '.join(KNOBS)}")
        out.append(str(name))
    if not out:
        raise InputError(source, field, "no knob allowed")
    return tuple(sorted(set(out), key=KNOBS.index))


def check_supported(graph, source: str = "") -> None:
    """Raise :class:`InputError` naming the first leaf whose op PROMISE/GPU cannot run (Table 5.1)."""
    from solvermap.ir.graph import NodeKind

    for node in graph.nodes():
        if node.kind == NodeKind.HIERARCHY:
            check_supported(node.child, source)
        elif node.kind == NodeKind.OP and node.op.lower() not in SUPPORTED_OPS:  # ONNX's "Conv" is our "conv"
            raise InputError(source or graph.source or graph.name, f"node '{node.name}'.op",
                             f"unsupported tensor op {node.op!r}; ApproxHPVM supports {', '.join(SUPPORTED_OPS)}")


class PromiseSpec(BaseModel):
    """PROMISE (seed 000 Ch. 4): banks, analog pipeline timing, energies, swing levels."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    banks: int = Field(256, ge=1, description="banks (Table 5.2, L1154)")
    bank_rows: int = Field(128, ge=1, description="8-bit words per column group = dot-product length per row op (L616)")
    bank_words: int = Field(128, ge=1, description="W rows held per bank (128×128 8-bit words = 16 KB, L1154)")
    clock_ghz: float = Field(1.0, gt=0, description="L1154")
    dot_ns: float = Field(14.0, gt=0, description="one 128-element row op: T_P = sign_mult delay 14 cycles (Table 4.3)")
    reduction_ns: float = Field(10.0, ge=0, description="cross-bank reduction of partial sums (assumption, see preset)")
    reduction_pj: float = Field(0.5, ge=0, description="pJ per 8-bit cross-bank transfer (L621)")
    swing_f: list[float] = Field(description="f(SWING) for P1..P7 (eq. 4.2 range 0.75 … 0.08, L788)")
    dot_energy_pj: list[float] | None = Field(None, description="pJ per 128-element dot product at P1..P7 (a table; "
                                              "None: derived from Table 4.3 and the swing model below)")
    swing_mv: list[float] | None = Field(None, description="bit-line swing ΔV_BL (mV/LSB) at P1..P7 (L656: 5 … 30)")
    swing_fixed_fraction: float | None = Field(None, ge=0, le=1, description="share of the Class-1 + Class-2 "
                                               "energy at SWING=111 that does not scale with ΔV_BL")
    data_bits: int = Field(8, description="X precision (L1047)")
    weight_bits: int = Field(7, description="B_W = 7 magnitude bits + sign (L805)")
    min_dot_length: int = Field(64, ge=1, description="no PROMISE below this dot-product length (L1248)")
    quantize_pj_per_element: float = Field(0.0, ge=0, description="pDMA INT8 quantization energy per element")
    class_energy_pj: dict[str, float] = Field(description="Table 4.3 energy per bank op at SWING=111")
    class_delay_cycles: dict[str, float] = Field(description="Table 4.3 delay in cycles")
    leakage_pj_per_cycle_bank: float = Field(0.6, ge=0, description="Table 4.3")
    ctrl_pj_per_cycle: float = Field(5.4, ge=0, description="Table 4.3")
    swing_scaled_classes: list[str] = Field(default_factory=lambda: ["class1", "class2"],
                                            description="classes whose energy scales with swing (L902)")
    soc_static_energy: bool = Field(False, description="charge Table 4.3 leakage (per active bank) and CTRL energy "
                                    "per cycle to the SoC's PROMISE tasks")
    output_format: Literal["consumer", "fp32"] = Field("consumer", description="what PROMISE writes to DRAM "
                                                       "(gpu_cost.py): the consumer's format, or FP32 (L1183)")
    pdma: bool = Field(True, description="pDMA quantizes and patches; false: the GPU does it (L1273–1275)")

    @field_validator("swing_f")
    @classmethod
    def _f_range(cls, value: list[float]) -> list[float]:
        if len(value) != 7:
            raise ValueError(f"need 7 values (P1..P7), got {len(value)}")
        if any(not 0 < f < 1 for f in value) or any(a <= b for a, b in zip(value, value[1:])):
            raise ValueError("f(SWING) must lie in (0, 1) and decrease from P1 to P7")
        return value

    @field_validator("dot_energy_pj")
    @classmethod
    def _energy(cls, value: list[float] | None) -> list[float] | None:
        if value is not None and (len(value) != 7 or any(e <= 0 for e in value)
                                  or any(a > b for a, b in zip(value, value[1:]))):
            raise ValueError("need 7 positive energies, non-decreasing from P1 to P7")
        return value

    @field_validator("swing_mv")
    @classmethod
    def _swing_mv(cls, value: list[float] | None) -> list[float] | None:
        if value is not None and (len(value) != 7 or any(v <= 0 for v in value)
                                  or any(a >= b for a, b in zip(value, value[1:]))):
            raise ValueError("need 7 positive swings, increasing from P1 to P7")
        return value

    @model_validator(mode="after")
    def _energy_model(self) -> PromiseSpec:
        derived = self.swing_mv is not None and self.swing_fixed_fraction is not None
        if self.dot_energy_pj is None and not derived:
            raise ValueError("give dot_energy_pj, or swing_mv and swing_fixed_fraction")
        if self.dot_energy_pj is not None and (self.swing_mv is not None or self.swing_fixed_fraction is not None):
            raise ValueError("give either dot_energy_pj or the swing model (swing_mv, swing_fixed_fraction), not both")
        missing = [c for c in ("aREAD", "sign_mult", "ADC") if c not in self.class_energy_pj]
        if derived and missing:
            raise ValueError(f"class_energy_pj lacks {', '.join(missing)}")
        if not self.pdma and self.output_format == "consumer":
            raise ValueError("pdma: false needs output_format: fp32 (the GPU dequantizes PROMISE's INT8 output)")
        return self

    def f(self, level: int) -> float:
        return self.swing_f[level - 1]

    def swing_scale(self, level: int) -> float:
        """Class-1 and Class-2 energy at ``level`` relative to SWING=111 (L902)."""
        if self.dot_energy_pj is not None:
            return self.dot_energy_pj[level - 1] / self.dot_energy_pj[6]
        a = self.swing_fixed_fraction
        return a + (1.0 - a) * self.swing_mv[level - 1] / self.swing_mv[6]

    def dot_energy(self, level: int) -> float:
        """pJ per 128-element row op (aREAD + sign_mult + ADC of Table 4.3 at the level's swing, or the table)."""
        if self.dot_energy_pj is not None:
            return self.dot_energy_pj[level - 1]
        c = self.class_energy_pj
        return c["ADC"] + (c["aREAD"] + c["sign_mult"]) * self.swing_scale(level)


class GpuSpec(BaseModel):
    """The GPU of the TX2 SoC (Table 5.2) and the FP32/FP16 cost-table parameters (assumptions)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sms: int = Field(2, ge=1, description="GPU cores (SMs), Table 5.2")
    cores_per_sm: int = Field(128, ge=1)
    clock_ghz: float = Field(1.12, gt=0, description="Table 5.2")
    fp16_rate: float = Field(2.0, ge=1, description="FP16 FLOP rate / FP32 FLOP rate")
    efficiency: dict[str, float] = Field(description="achieved fraction of peak FLOP/s per op kind")
    launch_us: float = Field(10.0, ge=0, description="per-kernel overhead: launch and HPVM runtime work per op")
    power_w: float = Field(5.0, gt=0, description="GPU rail power while a kernel runs (static part)")
    energy_per_flop_pj: float = Field(0.0, ge=0, description="dynamic energy per FP32 FLOP (FP16: ÷ fp16_rate)")
    dram_efficiency: float = Field(1.0, gt=0, le=1, description="achieved fraction of the sustained DRAM bandwidth "
                                   "for GPU kernels' activation traffic")
    half_efficiency_dot_length: float = Field(0.0, ge=0, description="K½: conv/GEMM efficiency × K/(K + K½) for dot "
                                              "products of length K (0: no dependence on K)")
    fp16_round_trip: bool = Field(False, description="FP16 ops convert their input to FP16 and their output back "
                                  "to FP32, as HPVM's tensor runtime does")
    max_fused_ops: int = Field(3, ge=1, description="ops per fused GPU kernel (register / scratchpad cap, L466)")


class DramSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    bandwidth_gbs: float = Field(33.0, gt=0, description="sustained, Table 5.2")
    energy_pj_per_bit: float = Field(20.0, gt=0, description="Table 5.2")


class NoiseModel(BaseModel):
    """Stage-1 error injection X·(1+σ(E)·N(0,1)), E = 1..15 (L1066–1068)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    levels: int = Field(15, ge=2, description="E = 1..15 (L1066)")
    l1_min: float = Field(0.005, gt=0, description="relative L1 error at E = 1 (0.5 %, L1068)")
    l1_max: float = Field(0.40, gt=0, description="relative L1 error at E = 15 (40 %, L1068)")

    def l1(self, level: int) -> float:
        """Relative L1 error of level E: linear in E from l1_min to l1_max (L1068)."""
        return self.l1_min + (level - 1) * (self.l1_max - self.l1_min) / (self.levels - 1)

    def sigma(self, level: int) -> float:
        """Std of the multiplicative noise giving ``l1(level)``: E|z| = √(2/π) for z ~ N(0, 1)."""
        return self.l1(level) / (2.0 / 3.141592653589793) ** 0.5


@register_family("approxhpvm")
class ApproxHpvmSpec(TargetSpec):
    """An ApproxHPVM SoC: GPU + PROMISE + DRAM, the noise model and the tuning protocol."""

    promise: PromiseSpec
    gpu: GpuSpec
    dram: DramSpec = DramSpec()
    noise: NoiseModel = NoiseModel()
    batch: int = Field(5000, ge=1, description="images per inference batch for time/energy (L1191)")
    loss_limit: float = Field(0.01, description="end-to-end accuracy-loss limit (1 % or 2 %, L1189)")
    mc_runs: int = Field(100, ge=1, description="Monte Carlo runs per candidate (L1082)")
    pass_rate: float = Field(0.95, gt=0, le=1, description="R_success acceptance (L1058)")
    mismatch_probability: float = Field(0.01, description="p_m for swing selection (L782, L869)")

    @field_validator("loss_limit", "mismatch_probability")
    @classmethod
    def _fraction(cls, value: float) -> float:
        if not 0.0 < value < 1.0:
            raise ValueError(f"must be in (0, 1), got {value}")
        return value

    @model_validator(mode="after")
    def _gpu_efficiency(self) -> ApproxHpvmSpec:
        missing = [op for op in SUPPORTED_OPS if op not in self.gpu.efficiency]
        if missing:
            raise ValueError(f"gpu.efficiency lacks {', '.join(missing)}")
        return self


def validate_loss_limit(value, source: str, field: str = "loss_limit") -> float:
    """A loss limit must be a number in (0, 1); anything else is a one-line :class:`InputError`."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InputError(source, field, f"must be a number in (0, 1), got {value!r}") from None
    if not 0.0 < number < 1.0:
        raise InputError(source, field, f"must be in (0, 1), got {value!r}")
    return number
