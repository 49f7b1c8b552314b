"""Shared builders for the cpu-family tests (reduced layer sizes: the suite stays well under 60 s)."""

from __future__ import annotations

import shutil

import pytest

from solvermap.hardware.cpu.instructions import VNNI_VPDPBUSD
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


X86_TARGETS = ("x86-vnni", "x86-avxvnni", "x86-avx2", "x86-avx2-u7")


def runnable_here(target: str) -> tuple[bool, str]:
    from solvermap.hardware.cpu import runnable
    from solvermap.hardware.targets import load_target

    return runnable(load_target(target))


def needs_target(target: str):
    ok, why = runnable_here(target)
    return pytest.mark.skipif(not ok, reason=f"target {target} cannot run here: {why}")


needs_vnni = needs_target("x86-vnni")
needs_objdump = pytest.mark.skipif(shutil.which("objdump") is None,
                                   reason="objdump (binutils) is not installed: the disassembly cannot be checked")


def x86_target_params():
    """One pytest param per x86 target, skipped with the reason where this CPU cannot run it."""
    return [pytest.param(t, marks=needs_target(t)) for t in X86_TARGETS]
