"""Tensorized instructions as tiny tensor programs (UNIT's unified semantic abstraction, 002:L127-L135).

Each instruction is a one-statement :class:`~solvermap.ir.loopnest.Program`: its tensors are the
register operands (shape = lanes, dtype = lane type, the written tensor is the accumulator), its loops
carry the data-parallel / reduction annotations, and its expression tree is what the inspector's
Algorithm 1 matches against an operation (002:L143-L167). ``accumulate=True`` is the instruction's
``+=``: the accumulator register is also the addend (002:L133).

Shipped descriptors (a new instruction is one more :class:`InstructionDescriptor`; nothing else in the
inspector, rewriter, emulator or code generator changes):

* ``vnni_vpdpbusd`` — Intel AVX-512 VNNI ``vpdpbusd zmm``: ``c[i] += Σ_j int32(a[4i+j])·int32(b[4i+j])``,
  ``a`` 64×uint8, ``b`` 64×int8, ``c`` 16×int32, i data-parallel (16), j reduction (4) (002:L131,
  Fig. 4a; the seed spells it "pbpdusd", L165).
* ``avxvnni_vpdpbusd`` — AVX-VNNI (VEX) ``vpdpbusd ymm``: the same expression on 256-bit registers,
  i (8) × j (4); exact like its AVX-512 form (no intermediate saturation).
* ``avx2_vpmaddwd_u8s8`` — the exact AVX2 sequence: both operands widened to int16 when they are packed
  (zero-extended uint8, sign-extended int8: ``storage``), then ``vpmaddwd`` (pairs of int16 products
  summed into int32; |sum| ≤ 2·255·128 cannot overflow) and ``vpaddd``:
  ``c[i] += Σ_{j<2} int32(a[2i+j])·int32(b[2i+j])``, i (8) × j (2).
* ``avx2_vpmaddubsw_u7s8`` — the fast AVX2 sequence ``vpmaddubsw`` + ``vpmaddwd`` (by ones) + ``vpaddd``
  on bytes, i (8) × j (4). ``vpmaddubsw`` saturates each sum of two products to int16, so the
  instruction equals the expression only while |a|·|b|·2 ≤ 32767: for uint8 ``a`` below 128 (7-bit
  activations, ``exact_ranges``); on full-range activations it is not exact, and the emulator
  reproduces the saturation (``saturation``).
* ``arm_sdot`` — ARMv8.2 ``SDOT`` (vector form): same expression over 16×int8 · 16×int8 → 4×int32,
  i (4) × j (4). The seed says only "a different number of lanes and data types" (002:L131); the lane
  count is the ARMv8.2 definition.
* ``tensorcore_wmma_16x16x16`` — Nvidia Tensor Core ``mma_sync`` 16×16×16:
  ``C[i,n] += float32(A[i,k])·float32(B[k,n])``, fp16 → fp32 (dtypes assumed from 002:L59; the seed
  states 16³ and ``+=``, L133).

``x86`` says how the C generator spells an instruction of the dot-product form "each 32-bit
accumulator lane consumes one 32-bit group of each source register": the C expression of one
instruction, the register type and width, the storage type of widened operands and the mnemonics its
disassembly must contain; descriptors without it run only through the emulator.
"""

from __future__ import annotations

from dataclasses import dataclass

from solvermap.errors import InputError
from solvermap.ir.loopnest import Program, Statement, Tensor, statement


@dataclass(frozen=True)
class X86Intrinsic:
    """How the C generator spells this instruction on ``vector_type`` registers.

    ``call`` is either an intrinsic name, called as ``call(acc, a, b)`` with the sources in expression
    order, or a C expression with the placeholders ``{acc}`` and one ``{operand}`` per source register
    (e.g. ``_mm256_add_epi32({acc}, _mm256_madd_epi16({a}, {b}))``). ``storage`` gives, per source
    operand, the lane type it is stored as in its packed tensor when that differs from the operand's
    type (widening done once, when the tensor is packed); ``setup`` are C declarations the body uses
    (constants); ``mnemonics`` are the instructions the compiled kernel must contain.
    """

    call: str  # e.g. "_mm512_dpbusd_epi32"
    vector_type: str = "__m512i"
    prefix: str = "_mm512"  # load/store/set1/gather intrinsics of the same width
    register_bits: int = 512
    storage: tuple[tuple[str, str], ...] = ()
    setup: tuple[str, ...] = ()
    mnemonics: tuple[str, ...] = ()

    def expression(self, acc: str, sources: dict[str, str], order: list[str]) -> str:
        if "{" in self.call:
            return self.call.format(acc=acc, **sources)
        return f"{self.call}({acc}, {', '.join(sources[o] for o in order)})"

    def storage_dtype(self, operand: str, dtype: str) -> str:
        return dict(self.storage).get(operand, dtype)


@dataclass(frozen=True)
class Saturation:
    """The hardware sums ``terms`` consecutive products along the instruction's reduction loop and
    saturates each such sum to ``dtype`` before accumulating (``vpmaddubsw``: 2 products, int16)."""

    terms: int
    dtype: str


@dataclass(frozen=True)
class InstructionDescriptor:
    name: str
    program: Program
    isa: str
    description: str = ""
    x86: X86Intrinsic | None = None
    seed_lines: str = ""
    saturation: Saturation | None = None
    exact_ranges: tuple[tuple[str, int, int], ...] = ()  # (operand, lo, hi): the instruction is exact inside

    @property
    def exact_on_full_range(self) -> bool:
        """Whether the instruction equals its expression for every value of its operand types."""
        return self.saturation is None

    @property
    def statement(self) -> Statement:
        return self.program.statements[0]

    @property
    def accumulator(self) -> str:
        return self.statement.write.tensor

    @property
    def sources(self) -> list[str]:
        """Source register operands in expression order (left to right, each once)."""
        seen: list[str] = []
        for access in self.statement.reads:
            if access.tensor not in seen:
                seen.append(access.tensor)
        return seen

    def extent(self, loop: str) -> int:
        return self.statement.loop(loop).extent

    @property
    def macs(self) -> int:
        """Multiply-accumulates one instruction performs (its iteration-space size)."""
        return self.statement.points

    def lane_strides(self, operand: str) -> dict[str, int]:
        """Per instruction loop, how far one step moves along the operand's flattened register lanes."""
        tensor = self.program.tensor(operand)
        access = self.statement.write if operand == self.accumulator else next(
            a for a in self.statement.reads if a.tensor == operand)
        flat = [1] * len(tensor.shape)
        for d in range(len(tensor.shape) - 2, -1, -1):
            flat[d] = flat[d + 1] * tensor.shape[d + 1]
        return {var: sum(flat[d] * access.coeffs[d][j] for d in range(access.rank))
                for j, var in enumerate(access.loop_vars)}

    def validate(self) -> InstructionDescriptor:
        self.program.validate()
        if len(self.program.statements) != 1:
            raise InputError(self.name, "program", "an instruction descriptor is exactly one statement")
        if not self.statement.accumulate:
            raise InputError(self.name, "program", "a tensorized instruction accumulates (horizontal reduction, 002:L71)")
        return self


def _descriptor(name: str, isa: str, tensors: list[Tensor], loops: list[tuple], write: str, expr: str,
                dtype: str, **kwargs) -> InstructionDescriptor:
    stmt = statement(name, loops, write, expr, dtype=dtype, accumulate=True)
    program = Program(name, {t.name: t for t in tensors}, [stmt], source=f"instruction {name}")
    return InstructionDescriptor(name, program, isa, **kwargs).validate()


VNNI_VPDPBUSD = _descriptor(
    "vnni_vpdpbusd", "x86-avx512-vnni",
    [Tensor("a", (64,), "uint8", "input"), Tensor("b", (64,), "int8", "input"), Tensor("c", (16,), "int32", "output")],
    [("i", 0, 16, "data_parallel"), ("j", 0, 4, "reduction")],
    "c[i]", "int32(a[4*i + j]) * int32(b[4*i + j])", "int32",
    description="vpdpbusd zmm: 16 int32 lanes += dot of 4 uint8 x 4 int8",
    x86=X86Intrinsic("_mm512_dpbusd_epi32", mnemonics=("vpdpbusd",)),
    seed_lines="002:L131, L165 (Fig. 4a)",
)

AVXVNNI_VPDPBUSD = _descriptor(
    "avxvnni_vpdpbusd", "x86-avx-vnni",
    [Tensor("a", (32,), "uint8", "input"), Tensor("b", (32,), "int8", "input"), Tensor("c", (8,), "int32", "output")],
    [("i", 0, 8, "data_parallel"), ("j", 0, 4, "reduction")],
    "c[i]", "int32(a[4*i + j]) * int32(b[4*i + j])", "int32",
    description="AVX-VNNI vpdpbusd ymm: 8 int32 lanes += dot of 4 uint8 x 4 int8",
    x86=X86Intrinsic("_mm256_dpbusd_avx_epi32", "__m256i", "_mm256", 256, mnemonics=("vpdpbusd",)),
    seed_lines="002:L131 (the VNNI expression on 256-bit registers)",
)

AVX2_VPMADDWD = _descriptor(
    "avx2_vpmaddwd_u8s8", "x86-avx2",
    [Tensor("a", (16,), "uint8", "input"), Tensor("b", (16,), "int8", "input"), Tensor("c", (8,), "int32", "output")],
    [("i", 0, 8, "data_parallel"), ("j", 0, 2, "reduction")],
    "c[i]", "int32(a[2*i + j]) * int32(b[2*i + j])", "int32",
    description="AVX2 exact: operands widened to int16 at packing, vpmaddwd + vpaddd: 8 int32 lanes += dot of 2",
    x86=X86Intrinsic("_mm256_add_epi32({acc}, _mm256_madd_epi16({a}, {b}))", "__m256i", "_mm256", 256,
                     storage=(("a", "int16"), ("b", "int16")), mnemonics=("vpmaddwd", "vpaddd")),
    seed_lines="002:L131 (a dot-product instruction with other lanes and types)",
)

AVX2_VPMADDUBSW = _descriptor(
    "avx2_vpmaddubsw_u7s8", "x86-avx2",
    [Tensor("a", (32,), "uint8", "input"), Tensor("b", (32,), "int8", "input"), Tensor("c", (8,), "int32", "output")],
    [("i", 0, 8, "data_parallel"), ("j", 0, 4, "reduction")],
    "c[i]", "int32(a[4*i + j]) * int32(b[4*i + j])", "int32",
    description="AVX2 7-bit activations: vpmaddubsw (int16-saturating pairs) + vpmaddwd by ones + vpaddd; "
                "exact only for activations below 128",
    x86=X86Intrinsic("_mm256_add_epi32({acc}, _mm256_madd_epi16(_mm256_maddubs_epi16({a}, {b}), sm_ones16))",
                     "__m256i", "_mm256", 256, setup=("const __m256i sm_ones16 = _mm256_set1_epi16(1);",),
                     mnemonics=("vpmaddubsw", "vpmaddwd")),
    saturation=Saturation(2, "int16"),
    exact_ranges=(("a", 0, 127),),
    seed_lines="002:L131 (a dot-product instruction with other lanes and types)",
)

ARM_SDOT = _descriptor(
    "arm_sdot", "armv8.2-dotprod",
    [Tensor("a", (16,), "int8", "input"), Tensor("b", (16,), "int8", "input"), Tensor("c", (4,), "int32", "output")],
    [("i", 0, 4, "data_parallel"), ("j", 0, 4, "reduction")],
    "c[i]", "int32(a[4*i + j]) * int32(b[4*i + j])", "int32",
    description="SDOT v.4s: 4 int32 lanes += dot of 4 int8 x 4 int8",
    seed_lines="002:L131 (Fig. 4b), L264",
)

TENSORCORE_WMMA = _descriptor(
    "tensorcore_wmma_16x16x16", "nvidia-tensorcore",
    [Tensor("A", (16, 16), "float16", "input"), Tensor("B", (16, 16), "float16", "input"),
     Tensor("C", (16, 16), "float32", "output")],
    [("i", 0, 16, "data_parallel"), ("n", 0, 16, "data_parallel"), ("k", 0, 16, "reduction")],
    "C[i, n]", "float32(A[i, k]) * float32(B[k, n])", "float32",
    description="mma_sync 16x16x16: C += A x B, fp16 inputs, fp32 accumulator (the += of 002:L133)",
    seed_lines="002:L133 (Fig. 4c); dtypes assumed from L59",
)

DESCRIPTORS: dict[str, InstructionDescriptor] = {
    d.name: d for d in (VNNI_VPDPBUSD, AVXVNNI_VPDPBUSD, AVX2_VPMADDWD, AVX2_VPMADDUBSW, ARM_SDOT, TENSORCORE_WMMA)}


def register_descriptor(descriptor: InstructionDescriptor) -> InstructionDescriptor:
    """Make a new instruction available by name (the descriptor is all UNIT needs, 002:L337)."""
    DESCRIPTORS[descriptor.name] = descriptor.validate()
    return descriptor


def descriptor(name: str, source: str = "") -> InstructionDescriptor:
    if name not in DESCRIPTORS:
        raise InputError(source, "instruction", f"unknown instruction {name!r}; known: {', '.join(sorted(DESCRIPTORS))}")
    return DESCRIPTORS[name]


def make_descriptor(name: str, isa: str, tensors: list[Tensor], loops: list[tuple], write: str, expr: str,
                    dtype: str, **kwargs) -> InstructionDescriptor:
    """Public constructor: a descriptor from text, as the shipped ones are written."""
    return _descriptor(name, isa, tensors, loops, write, expr, dtype, **kwargs)
