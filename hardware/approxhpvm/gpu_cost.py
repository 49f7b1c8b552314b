"""GPU FP32 / FP16 cost table of the ApproxHPVM SoC (seed 000 L1167–1177, L1183; assumptions A5–A10).

The seed measured per-op FP32 and FP16 time and energy on a TX2 and tabulated them (L1177). It does not
print the tables, so this module computes them from the preset:

* compute time = FLOPs / (peak · efficiency[op] · rate). Peak = SMs × cores × 2 × clock; rate is 1 for
  FP32 and ``fp16_rate`` for FP16 (L1110: FP16 is 1.5–4× cheaper than FP32);
* parameter reads: every launch reads the op's weights or bias from DRAM at its precision;
* every kernel (a fused group is one kernel) pays ``launch_us``;
* energy = GPU power × kernel time + DRAM bits × 20 pJ.

Activation tensors moving between kernels are costed on the edges (:func:`transfer_cost`): the producer
writes the tensor to DRAM in its format and the consumer reads it. A GPU consumer in another floating-point
precision first runs a cast kernel (the FP32 → FP16 overhead of L1253). PROMISE's pDMA reads and writes
any format and quantizes to INT8 on the way (L1181, L1183).
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
    seconds = nbytes / (spec.dram.bandwidth_gbs * 1e9)
    energy = nbytes * 8 * spec.dram.energy_pj_per_bit * 1e-12 + (spec.gpu.power_w * seconds if gpu_busy else 0.0)
    return Cost(seconds, energy)


def gpu_op_cost(spec, *, op: str, flops_per_image: float, param_elements: float, precision: str, batch: int) -> Cost:
    """Compute and parameter reads of one op on the GPU, without the launch and the activation I/O."""
    seconds = flops_per_image * batch / (peak_flops(spec, precision) * spec.gpu.efficiency[op])
    return Cost(seconds, spec.gpu.power_w * seconds) + _dram(spec, param_elements * BYTES[precision], True)


def launch_cost(spec) -> Cost:
    seconds = spec.gpu.launch_us * 1e-6
    return Cost(seconds, spec.gpu.power_w * seconds)


def transfer_cost(spec, *, elements: float, src: str, dst: str, src_device: str, dst_device: str) -> Cost:
    """An activation tensor (``elements`` for the whole batch) from a producer in format ``src`` to a consumer.

    ``src``/``dst`` are the producer's and consumer's data formats (fp32 | fp16 | int8); the devices are gpu,
    promise or host (the network input and output live on the host in FP32).
    """
    if src_device == "promise":
        # pDMA writes the output in the consumer's format (L1183)
        written = BYTES["fp32"] if dst_device == "host" else BYTES[dst]
        return _dram(spec, elements * written * 2, dst_device == "gpu")
    write = _dram(spec, elements * BYTES[src], src_device == "gpu")
    if dst_device == "promise" or src == dst or dst_device == "host" and src == "fp32":
        return write + _dram(spec, elements * BYTES[src], dst_device == "gpu")
    # GPU consumer in another precision (or host reading FP16): a cast kernel, then the read (L1253)
    cast = launch_cost(spec) + _dram(spec, elements * (BYTES[src] + BYTES[dst]), True)
    return write + cast + _dram(spec, elements * BYTES[dst], dst_device == "gpu")
