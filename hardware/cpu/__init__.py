"""CPU (and descriptor-only) targets of UNIT tensorization (seed 002): the ``cpu`` family spec.

A target names the tensorized instruction it offers (a descriptor in
:mod:`solvermap.hardware.cpu.instructions`), the machine parameters of the analytical latency model
(:mod:`solvermap.hardware.cpu.latency_model`), the C toolchain used to compile generated kernels
(:mod:`solvermap.hardware.cpu.toolchain`; compiler and flags from allow-lists, checked when the spec
loads) and UNIT's CPU tuning limits (002:L310: fused parallel extent 3000, unroll 8). ``codegen`` says
how the rewritten nest is executed: ``intrinsics`` generates C with the instruction's x86 intrinsics
(AVX-512 VNNI, AVX-VNNI, AVX2) and runs it on this machine when the CPU has ``toolchain.
required_cpu_flags`` (:func:`runnable` says whether it does); ``emulate`` runs the rewritten nest with
the NumPy instruction emulator only (ARM SDOT, Tensor Core: descriptor tests on a machine without
them). Numbers not in the seed are listed in each preset's ``assumptions``.

Modules: ``instructions`` (descriptors as tiny loop-nest programs), ``latency_model`` (analytical
latency for pre-filtering), ``codegen`` (C from a rewritten nest), ``toolchain`` (gcc, compile, load,
time), ``emulator`` (NumPy execution of a rewritten nest through the instruction's semantics).
"""

from __future__ import annotations

import shutil
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from solvermap.hardware.cpu import toolchain
from solvermap.hardware.targets import TargetSpec, register_family


class CoreModel(BaseModel):
    """Per-core parameters of the analytical latency model (all assumptions, see the preset)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    frequency_ghz: float = Field(gt=0, description="sustained core clock")
    instruction_latency_cycles: float = Field(gt=0, description="latency of one tensorized instruction (RAW chain)")
    instruction_throughput: float = Field(gt=0, description="tensorized instructions issued per cycle")
    load_ports: float = Field(gt=0, description="vector loads (incl. broadcast loads) per cycle")
    gather_cycles: float = Field(ge=0, description="cycles of one 16-lane gather / lane concatenation")
    vector_registers: int = Field(ge=4, description="architectural vector registers")
    loop_overhead_cycles: float = Field(ge=0, description="cycles per executed iteration of a non-unrolled loop")
    l1_bytes: int = Field(gt=0)
    l2_bytes: int = Field(gt=0)
    l2_bandwidth_bytes_per_cycle: float = Field(gt=0)
    dram_bandwidth_bytes_per_cycle: float = Field(gt=0)


class Toolchain(BaseModel):
    """Compiler (a name from an allow-list, found on PATH) and flags (each from an allow-list): nothing
    here can make the compiler run another program (issue #22, :mod:`solvermap.hardware.cpu.toolchain`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cc: str = "gcc"
    flags: list[str] = ["-O3", "-march=native", "-fno-strict-aliasing"]
    required_cpu_flags: list[str] = []  # /proc/cpuinfo flags the generated code needs

    @field_validator("cc")
    @classmethod
    def _allowed_compiler(cls, cc: str) -> str:
        reason = toolchain.check_compiler(cc)
        if reason:
            raise ValueError(reason)
        return cc

    @field_validator("flags")
    @classmethod
    def _allowed_flags(cls, flags: list[str]) -> list[str]:
        for flag in flags:
            reason = toolchain.check_flag(flag)
            if reason:
                raise ValueError(reason)
        return flags


class Tuning(BaseModel):
    """UNIT's CPU tuning space (002:L203-205, L308-312)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    parallel_limit: int = Field(3000, ge=1, description="default fused-parallel extent limit (002:L310)")
    unroll_limit: int = Field(8, ge=1, description="default unroll limit (002:L310)")
    parallel_limits: list[int] = Field(default_factory=lambda: [3000, 1500, 6000, 750, 12000, 375])
    unroll_limits: list[int] = Field(default_factory=lambda: [8, 4, 16, 2, 32, 1])
    threads: int = Field(1, ge=1, description="threads the generated kernels run with")
    register_budget: int | None = Field(None, ge=4, description=(
        "live vector registers a register tile may use (default: core.vector_registers): the compiler may "
        "spill before the architectural limit"))


class Timing(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    rounds: int = Field(5, ge=1, description="interleaved rounds; the reported time is the median of round medians")
    min_seconds: float = Field(0.05, gt=0, description="minimum timed seconds per round and kernel")
    min_reps: int = Field(3, ge=1)


@register_family("cpu")
class CpuTarget(TargetSpec):
    """A processor with one tensorized instruction, its latency model, toolchain and tuning space."""

    instruction: str = Field(description="descriptor name in solvermap.hardware.cpu.instructions")
    codegen: Literal["intrinsics", "emulate"] = "intrinsics"
    allow_padding: bool = Field(True, description="pad loops to instruction-extent multiples (002:L87)")
    cores: int = Field(1, ge=1, description="cores of the modelled machine")
    core: CoreModel
    toolchain: Toolchain = Toolchain()
    tuning: Tuning = Tuning()
    timing: Timing = Timing()

    def runs_here(self) -> tuple[bool | None, str]:
        return runnable(self)


def runnable(target: CpuTarget) -> tuple[bool, str]:
    """Whether this machine can compile and run the target's generated code, and if not, why."""
    if target.codegen == "emulate":
        return False, "descriptor only (NumPy instruction emulator)"
    missing = toolchain.missing_cpu_flags(target.toolchain.required_cpu_flags)
    if missing:
        return False, f"this CPU lacks {', '.join(missing)}"
    if shutil.which(target.toolchain.cc) is None:
        return False, f"no C compiler {target.toolchain.cc!r} on PATH"
    return True, ""


X86_TARGETS = ("x86-vnni", "x86-avxvnni", "x86-avx2")  # fastest first; x86-avx2-u7 is a labelled mode


def best_x86_target() -> str | None:
    """The first of :data:`X86_TARGETS` this CPU runs (picked by its flags), None on other machines."""
    from solvermap.hardware.targets import load_target

    return next((name for name in X86_TARGETS if runnable(load_target(name))[0]), None)
