"""GPU FP32 / FP16 costs and activation transfers of the ApproxHPVM SoC (seed 000 L1167–1183; assumptions A5–A10,
calibrated values in ``promise-soc-tx2``).

The seed measured per-op FP32 and FP16 time and energy on a TX2 and tabulated them (L1177). It does not
print the tables, so this module computes them from the preset (an energy roofline):

* compute time = FLOPs / (peak · efficiency[op] · rate). Peak = SMs × cores × 2 × clock; rate is 1 for
  FP32 and ``fp16_rate`` for FP16 (L1110: FP16 is 1.5–4× cheaper than FP32);
* parameter reads: every launch reads the op's weights or bias from DRAM at its precision;
* every kernel (a fused group is one kernel) pays ``launch_us`` (HPVM's per-op runtime overhead);
* energy = ``power_w`` × busy time + ``energy_per_flop_pj`` × FLOPs (÷ ``fp16_rate`` in FP16) + DRAM bits ×
  20 pJ (Table 5.2).

Activation tensors moving between kernels are costed on the edges (:func:`transfer_parts`): the producer
writes the tensor to DRAM in its format and the consumer reads it; GPU kernels move data at
``dram_efficiency`` × 33 GB/s, PROMISE's pDMA at 33 GB/s. A GPU consumer in another floating-point
precision first runs a cast kernel (the FP32 → FP16 overhead of L1253). What PROMISE writes is
``promise.output_format``: ``consumer`` (the earlier model: pDMA writes the consumer's format) or ``fp32``
(L1183: "PROMISE performed quantization internally while a CUDA kernel performed quantization for the GPU":
PROMISE reads any format and writes FP32; a GPU consumer in FP16 casts). Without pDMA (``promise.pdma``
false, L1273–1275) the GPU quantizes and patches a PROMISE task's input (the patch matrix, k²/stride² times
the input for a k×k convolution) and dequantizes its INT8 output; these kernels run pipelined with PROMISE,
so their time overlaps the task's (:attr:`Transfer.overlappable`) while their energy adds. With
``gpu.fp16_round_trip`` an FP16 op works as HPVM's tensor runtime does (``half_precision_api.cu``): it converts
its FP32 input to FP16 (an F2H kernel) and its FP16 output back to FP32 (H2F), so FP16 tensors between GPU
ops are stored in FP32.
"""

from __future__ import annotations

from dataclasses import dataclass

BYTES = {"fp32": 4.0, "fp16": 2.0, "int8": 1.0}


@dataclass(frozen=True)
class Cost:
    time_s: float = 0.0
    energy_j: float = 0.0

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.time_s + other.time_s, self.energy_j + other.energy_j)

    def value(self, objective: str) -> float:
        return self.time_s if objective == "time" else self.energy_j


def peak_flops(spec, precision: str) -> float:
    g = spec.gpu
    rate = g.fp16_rate if precision == "fp16" else 1.0
    return g.sms * g.cores_per_sm * 2.0 * g.clock_ghz * 1e9 * rate


def _dram(spec, nbytes: float, gpu_busy: bool) -> Cost:
    """DRAM traffic; a GPU kernel moves it at ``dram_efficiency`` of the sustained bandwidth and draws
    ``power_w`` meanwhile."""
    bandwidth = spec.dram.bandwidth_gbs * 1e9 * (spec.gpu.dram_efficiency if gpu_busy else 1.0)
    seconds = nbytes / bandwidth
    energy = nbytes * 8 * spec.dram.energy_pj_per_bit * 1e-12 + (spec.gpu.power_w * seconds if gpu_busy else 0.0)
    return Cost(seconds, energy)


def efficiency(spec, op: str, dot_length: int = 0) -> float:
    """Achieved fraction of peak: ``efficiency[op]``, times K / (K + K½) for a convolution or GEMM whose dot
    products have length K when ``half_efficiency_dot_length`` = K½ > 0 (short reductions keep the GPU's
    pipelines under-used; a 1-channel 5×5 convolution has K = 25)."""
    base = spec.gpu.efficiency[op]
    k_half = spec.gpu.half_efficiency_dot_length
    if k_half > 0 and op in ("conv", "gemm") and dot_length > 0:
        return base * dot_length / (dot_length + k_half)
    return base


def gpu_op_cost(spec, *, op: str, flops_per_image: float, param_elements: float, precision: str, batch: int,
                dot_length: int = 0) -> Cost:
    """Compute and parameter reads of one op on the GPU, without the launch and the activation I/O."""
    flops = flops_per_image * batch
    seconds = flops / (peak_flops(spec, precision) * efficiency(spec, op, dot_length))
    dynamic = flops * spec.gpu.energy_per_flop_pj * 1e-12 / (spec.gpu.fp16_rate if precision == "fp16" else 1.0)
    return Cost(seconds, spec.gpu.power_w * seconds + dynamic) + _dram(spec, param_elements * BYTES[precision], True)


def launch_cost(spec) -> Cost:
    seconds = spec.gpu.launch_us * 1e-6
    return Cost(seconds, spec.gpu.power_w * seconds)


def gpu_kernel(spec, read_bytes: float, write_bytes: float) -> Cost:
    """A memory-bound GPU kernel (cast, quantization, patching): a launch plus its DRAM traffic."""
    return launch_cost(spec) + _dram(spec, read_bytes + write_bytes, True)


@dataclass(frozen=True)
class Transfer:
    """One activation tensor's move from producer to consumer: the producer's part (its write, and the GPU's
    dequantization of a PROMISE output without pDMA), the consumer's part (casts and its read) and the time of
    the GPU's quantization/patching kernels that can overlap a PROMISE task (no pDMA only)."""

    producer: Cost
    consumer: Cost
    overlappable: float = 0.0

    @property
    def total(self) -> Cost:
        return self.producer + self.consumer


def transfer_parts(spec, *, elements: float, src: str, dst: str, src_device: str, dst_device: str,
                   patch_factor: float = 1.0) -> Transfer:
    """An activation tensor (``elements`` for the whole batch) from a producer in format ``src`` to a consumer.

    ``src``/``dst`` are the producer's and consumer's data formats (fp32 | fp16 | int8); the devices are gpu,
    promise or host (the network input and output live on the host in FP32). ``patch_factor`` = patch-matrix
    elements per input element of a PROMISE consumer (used without pDMA).
    """
    p = spec.promise
    if p.output_format == "consumer":
        return _transfer_consumer_format(spec, elements, src, dst, src_device, dst_device)
    producer, consumer, overlap = Cost(), Cost(), 0.0
    fmt = src
    if src_device == "promise":
        if p.pdma:
            fmt = "fp32"
            producer += _dram(spec, elements * BYTES["fp32"], False)
        else:  # PROMISE writes INT8; a GPU kernel dequantizes (unpatches) it
            fmt = "int8" if dst_device == "promise" else "fp32"
            producer += _dram(spec, elements * BYTES["int8"], False)
            if dst_device != "promise":
                kernel = gpu_kernel(spec, elements * BYTES["int8"], elements * BYTES["fp32"])
                producer += kernel
                overlap += kernel.time_s
    elif src_device == "gpu" and src == "fp16" and spec.gpu.fp16_round_trip:
        # HPVM's FP16 ops convert their output back to FP32 (H2F kernel) before returning it
        fmt = "fp32"
        producer += _dram(spec, elements * BYTES["fp16"], True) + gpu_kernel(spec, elements * BYTES["fp16"],
                                                                             elements * BYTES["fp32"])
    else:
        producer += _dram(spec, elements * BYTES[src], src_device == "gpu")
    if dst_device == "promise":
        if p.pdma:
            consumer += _dram(spec, elements * BYTES[fmt], False)
        else:  # the GPU quantizes and patches; PROMISE reads the INT8 patch matrix
            kernel = gpu_kernel(spec, elements * BYTES[fmt], elements * patch_factor * BYTES["int8"])
            consumer += kernel + _dram(spec, elements * patch_factor * BYTES["int8"], False)
            overlap += kernel.time_s
        return Transfer(producer, consumer, overlap)
    if dst_device == "gpu" and dst == "fp16" and spec.gpu.fp16_round_trip:
        # HPVM's FP16 ops take an FP32 tensor and convert it (F2H kernel), then read the FP16 copy
        if fmt != "fp32":
            consumer += gpu_kernel(spec, elements * BYTES[fmt], elements * BYTES["fp32"])
        consumer += gpu_kernel(spec, elements * BYTES["fp32"], elements * BYTES["fp16"])
        consumer += _dram(spec, elements * BYTES["fp16"], True)
        return Transfer(producer, consumer, overlap)
    want = "fp32" if dst_device == "host" else dst
    if fmt != want:  # a cast kernel on the GPU (L1183, L1253)
        consumer += gpu_kernel(spec, elements * BYTES[fmt], elements * BYTES[want])
    consumer += _dram(spec, elements * BYTES[want], dst_device == "gpu")
    return Transfer(producer, consumer, overlap)


def _transfer_consumer_format(spec, elements, src, dst, src_device, dst_device) -> Transfer:
    """The earlier model (``output_format: consumer``), kept so promise-soc's results reproduce: pDMA writes a
    PROMISE output in the consumer's format and the GPU counts as busy for the whole move to a GPU consumer."""
    if src_device == "promise":
        written = BYTES["fp32"] if dst_device == "host" else BYTES[dst]
        half = _dram(spec, elements * written, dst_device == "gpu")
        return Transfer(half, half)
    write = _dram(spec, elements * BYTES[src], src_device == "gpu")
    if dst_device == "promise" or src == dst or dst_device == "host" and src == "fp32":
        return Transfer(write, _dram(spec, elements * BYTES[src], dst_device == "gpu"))
    cast = launch_cost(spec) + _dram(spec, elements * (BYTES[src] + BYTES[dst]), True)
    return Transfer(write, cast + _dram(spec, elements * BYTES[dst], dst_device == "gpu"))


def transfer_cost(spec, **kwargs) -> Cost:
    """The whole move (:func:`transfer_parts`)."""
    return transfer_parts(spec, **kwargs).total
