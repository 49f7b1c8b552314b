"""Energy and area of a mapped push-memory design from Table II (001:L305-L315).

    energy = word accesses at UB ports × E_access(variant)      (4.8 / 3.6 / 2.5 pJ, Table II)
           + shift-register stage shifts × E_reg + PE operations × E_op         (preset A7, A8)
    area   = MEM tiles used × total UB area(variant) (34k / 23k / 17k µm², Table II, unit A6)
           + PE tiles used × PE area + shift-register stages × register area   (A7, A8)

PE tiles used = ALU operations of all statements (one PE per operation, fully spatial, as on the CGRA
of 001:L299). The seed's relative claims follow from the table: an integrated AG saves 32% area and
25% energy (dp_pe → dp_ag), the wide single-port buffer a further 26% / 30% (dp_ag → sp_wide, 001:L313-L315).
"""

from __future__ import annotations

from solvermap.ir.loopnest import Call, Cast, Const, Program


def _ops(expr) -> int:
    if isinstance(expr, Call):
        if expr.op == "neg" and isinstance(expr.args[0], Const):
            return 0
        return 1 + sum(_ops(a) for a in expr.args)
    if isinstance(expr, Cast):
        return _ops(expr.arg)
    return 0


def pe_tiles(program: Program) -> int:
    return sum(max(1, _ops(s.expr)) for s in program.statements)


def cost(spec, *, word_accesses: int, sr_shifts: int, pe_ops: int, mem_tiles: int, pes: int, sr_stages: int,
         cycles: int, variant: str | None = None) -> dict[str, float]:
    d = spec.designs[variant or spec.memory]
    c = spec.costs
    energy_pj = word_accesses * d.energy_pj_per_access + sr_shifts * c.register_energy_pj + pe_ops * c.pe_energy_pj_per_op
    area_um2 = mem_tiles * d.total_ub_area_um2 + pes * c.pe_area_um2 + sr_stages * c.register_area_um2
    latency_s = cycles / (spec.clock_mhz * 1e6)
    return {
        "energy_j": energy_pj * 1e-12,
        "memory_energy_j": word_accesses * d.energy_pj_per_access * 1e-12,
        "area_mm2": area_um2 * 1e-6,
        "memory_area_mm2": mem_tiles * d.total_ub_area_um2 * 1e-6,
        "latency_s": latency_s,
        "power_w": (energy_pj * 1e-12 / latency_s) if latency_s > 0 else 0.0,
    }
