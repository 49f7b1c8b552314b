"""The network steps end to end: CLI contract of ``solve place|route|vc``, no deadlock, ideal network
never slower, VCs against their bound, and a one-line error on a target without a network."""

from __future__ import annotations

import json
import subprocess
import sys

CLI = [sys.executable, "-m", "solvermap.cli"]


def run_cli(*args, tmp_path):
    return subprocess.run([*CLI, *args, "--out", str(tmp_path / "run"), "-q"], capture_output=True, text=True,
                          timeout=300)


def test_solve_vc_on_the_dynamic_target_reports_vcs_against_the_load_bound(tmp_path):
    proc = run_cli("solve", "vc", "--workload", "tpchq6", "--target", "plasticine-dynamic", "--time-limit", "4",
                   "--json", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["decision"] == "vc" and out["target"] == "plasticine-dynamic"
    for key in ("backend", "status", "objective", "bound", "gap", "build_seconds", "solve_seconds"):
        assert key in out["solver"]
    assert out["check"]["ok"] is True
    assert out["solver"]["bound"] == out["details"]["lower_bound"] <= out["solver"]["objective"] <= 4
    assert out["solver"]["objective"] == out["solver"]["bound"]  # per-hop VCs reach the load bound
    v = out["validation"]
    assert v["deadlock"] is False and v["ideal_cycles"] <= v["cycles"]
    assert v["network"] == "D-x0-v4-f512-b3" and v["network_area_mm2"] > 0 and v["network_energy_j"] > 0


def test_map_on_the_hybrid_target_routes_every_link_and_simulates_the_network(tmp_path):
    proc = run_cli("map", "--workload", "tpchq6", "--target", "plasticine-hybrid", "--time-limit", "4", "--json",
                   tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    names = [d["decision"] for d in out["decisions"]]
    assert names == ["partition", "merge", "place", "split", "route", "vc"]
    assert all(d["check"]["ok"] for d in out["decisions"])
    split = next(d for d in out["decisions"] if d["decision"] == "split")
    assert split["solver"]["objective"] >= split["baseline"]["objective"] - 1e-9  # ILP ≥ the L320 rule
    v = out["validation"]
    assert v["deadlock"] is False and v["ideal_cycles"] <= v["cycles"]
    for key in ("cycles", "throughput", "energy_j", "area_mm2", "network_area_mm2", "network_energy_j",
                "hops", "dataflow_cycles", "predicted_cycles", "simulated_cycles"):
        assert key in v


def test_a_network_decision_on_a_target_without_a_network_is_one_line(tmp_path):
    proc = run_cli("solve", "place", "--workload", "tpchq6", "--target", "plasticine", tmp_path=tmp_path)
    assert proc.returncode == 2
    assert "network.type" in proc.stderr.strip().splitlines()[-1] and "Traceback" not in proc.stderr
