"""Area and power of the PBs a mapping uses (28 nm; PCU 0.849 mm² / 224 mW, PMU 0.532 mm² / 300.3 mW —
the authors' plasticine_model.py, digest Appendix A, preset assumption A5). Unallocated PBs are assumed
power-gated, like unallocated switches and routers in the seed's network model (L357)."""

from __future__ import annotations

from collections.abc import Mapping

from solvermap.hardware.plasticine import PlasticineSpec


def area_mm2(spec: PlasticineSpec, used: Mapping[str, int]) -> float:
    return (used.get("pcu", 0) * spec.pcu.area_mm2 + used.get("pmu", 0) * spec.pmu.area_mm2
            + used.get("dag", 0) * spec.dag.area_mm2)


def power_w(spec: PlasticineSpec, used: Mapping[str, int]) -> float:
    return (used.get("pcu", 0) * spec.pcu.power_w + used.get("pmu", 0) * spec.pmu.power_w
            + used.get("dag", 0) * spec.dag.power_w)


def chip_area_mm2(spec: PlasticineSpec) -> float:
    """Area of every PCU and PMU on the array (the denominator of utilisation by area)."""
    return area_mm2(spec, {"pcu": spec.pcu.count, "pmu": spec.pmu.count, "dag": spec.dag.count})
