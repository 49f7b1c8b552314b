"""Nothing in a target file runs code (issue #22): compiler and flags come from allow-lists, and the
compile cache is private and loads only libraries whose bytes it can vouch for."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from solvermap.errors import BackendUnavailable, InputError
from solvermap.hardware.cpu import toolchain
from solvermap.hardware.targets import load_target

needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc on PATH")

INJECTION = ["-O1", "-wrapper", '/bin/sh,-c,touch {marker}; exec "$0" "$@"']


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "solvermap" / "cpu-kernels"


def _evil_target(tmp_path: Path, toolchain_block: dict) -> Path:
    path = tmp_path / "evil.yaml"
    path.write_text(json.dumps({"name": "evil", "extends": "x86-avx2", "toolchain": toolchain_block}))
    return path


def test_wrapper_flag_in_a_target_file_is_refused_with_one_line_and_runs_nothing(tmp_path):
    marker = tmp_path / "PWNED"
    target = _evil_target(tmp_path, {"flags": [f.format(marker=marker) for f in INJECTION]})
    proc = subprocess.run([sys.executable, "-m", "solvermap.cli", "map", "--workload", "conv_table1_3", "--target",
                           str(target), "--set", "workload.C=8", "--set", "workload.K=16", "-q",
                           "--out", str(tmp_path / "run")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert "evil.yaml" in lines[0] and "toolchain.flags" in lines[0] and "-wrapper" in lines[0]
    assert not marker.exists()


def test_compiler_must_be_a_name_from_the_allow_list(tmp_path):
    for cc in ("sh", "/usr/bin/gcc", "gcc; touch x", "python3"):
        with pytest.raises(InputError, match="toolchain.cc"):
            load_target(_evil_target(tmp_path, {"cc": cc}))


@pytest.mark.parametrize("flag", ["-B/tmp/evil", "-specs=/tmp/evil.specs", "--specs=x", "-fplugin=/tmp/x.so",
                                  "@/tmp/flags.txt", "-Wl,-rpath,/tmp", "-Xlinker", "--sysroot=/tmp", "-include/etc/passwd",
                                  "-fprofile-use=/tmp/p", "-O3 -wrapper", "-DX=1", "-o/tmp/out"])
def test_flags_that_run_programs_or_read_files_are_refused(flag):
    reason = toolchain.check_flag(flag)
    assert reason is not None and repr(flag) in reason


def test_shipped_presets_use_only_allowed_flags():
    for name in ("x86-vnni", "x86-avxvnni", "x86-avx2", "x86-avx2-u7"):
        spec = load_target(name)
        assert all(toolchain.check_flag(f) is None for f in spec.toolchain.flags)
        assert toolchain.check_compiler(spec.toolchain.cc) is None


def test_compile_library_vets_flags_before_running_anything(tmp_path, private_cache):
    marker = tmp_path / "PWNED"
    with pytest.raises(InputError, match="-wrapper"):
        toolchain.compile_library("int f(void) { return 1; }", flags=[f.format(marker=marker) for f in INJECTION],
                                  name="evil")
    assert not marker.exists()


def test_compile_cache_is_a_private_directory_under_the_xdg_cache_home(private_cache):
    path = toolchain.cache_dir()
    assert path == private_cache
    for directory in (path, path.parent):
        info = os.lstat(directory)
        assert stat.S_IMODE(info.st_mode) == 0o700 and info.st_uid == os.getuid()


def test_a_too_open_cache_directory_is_tightened(private_cache):
    private_cache.mkdir(parents=True)
    os.chmod(private_cache, 0o777)
    toolchain.cache_dir()
    assert stat.S_IMODE(os.lstat(private_cache).st_mode) == 0o700


def test_a_symlinked_cache_directory_is_refused(tmp_path, private_cache):
    private_cache.parent.mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    private_cache.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(BackendUnavailable, match="not a directory"):
        toolchain.cache_dir()


@pytest.mark.skipif(os.getuid() != 0, reason="giving a directory to another user needs root")
def test_a_cache_directory_of_another_user_is_refused(private_cache):
    private_cache.mkdir(parents=True)
    os.chown(private_cache, 12345, 12345)
    with pytest.raises(BackendUnavailable, match="belongs to uid 12345"):
        toolchain.cache_dir()


PLANTED = """#include <stdio.h>
__attribute__((constructor)) static void planted(void) { FILE* f = fopen("%s", "w"); if (f) fclose(f); }
int answer(void) { return 666; }
"""
REAL = "int answer(void) { return 42; }\n"


def _plant(tmp_path: Path, target: Path, marker: Path) -> None:
    src = tmp_path / "planted.c"
    src.write_text(PLANTED % marker)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(target), str(src)], check=True)


@needs_gcc
@pytest.mark.parametrize("sidecar", ["none", "genuine sidecar of other bytes"])
def test_a_planted_library_in_the_cache_is_not_loaded(tmp_path, private_cache, sidecar):
    marker = tmp_path / "LOADED"
    name = "planted" if sidecar == "none" else "forged"
    if sidecar != "none":
        toolchain.compile_library(REAL, flags=["-O1"], name=name)  # a genuine sidecar for the genuine bytes
    paths = toolchain.cache_paths(REAL, flags=["-O1"], name=name)
    _plant(tmp_path, paths.library, marker)
    lib = toolchain.compile_library(REAL, flags=["-O1"], name=name)
    assert not marker.exists()
    assert lib.function("answer")() == 42


@needs_gcc
def test_a_verified_library_is_reused_without_recompiling(private_cache):
    first = toolchain.compile_library(REAL, flags=["-O1"], name="reused")
    second = toolchain.compile_library(REAL, flags=["-O1"], name="reused")
    assert first.compile_seconds > 0 and second.compile_seconds == 0
    assert second.sha256 == first.sha256 and second.function("answer")() == 42
