"""Shared builders for the cpu-family tests (reduced layer sizes: the suite stays well under 60 s)."""

from __future__ import annotations

import pytest

from solvermap.hardware.cpu.instructions import VNNI_VPDPBUSD
from solvermap.hardware.cpu.toolchain import cpu_flags
from solvermap.ir.workloads import build
from solvermap.ir.workloads.cpu_conv import TABLE_I
from solvermap.mappers.cpu.inspector import inspect

TABLE_I_NAMES = [f"conv_table1_{i}" for i in range(1, 17)]


def reduced_params(name: str) -> dict:
    """A small version of a Table I layer: same R and stride, C=8, K=32, OHW=5 (odd, like #1 and #4)."""
    index = int(name.rsplit("_", 1)[1])
    _, _, _, R, stride = TABLE_I[index - 1]
    return {"C": 8, "K": 32, "IHW": R + stride * 4}


def problem_for(name: str, params: dict | None = None, instruction=VNNI_VPDPBUSD, allow_padding: bool = True):
    program = build(name, "cpu", params or {}).ir
    verdict = inspect(program, instruction, allow_padding=allow_padding, workload=name)
    assert verdict.applicable, verdict.reason
    return verdict.problem


def can_run_vnni() -> bool:
    import shutil

    return shutil.which("gcc") is not None and {"avx512f", "avx512bw", "avx512_vnni", "avx512vl"} <= cpu_flags()


needs_vnni = pytest.mark.skipif(not can_run_vnni(), reason="needs gcc and an AVX-512 VNNI CPU")
