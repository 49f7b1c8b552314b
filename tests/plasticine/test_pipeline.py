"""The Plasticine pipeline end to end: CLI contract, baselines, checker, infeasible specs."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from solvermap.errors import InfeasibleError, UnknownError
from solvermap.formulations.solver import SolverConfig
from solvermap.hardware.checks.partition import check
from solvermap.hardware.targets import load_target
from solvermap.ir.workloads import build
from solvermap.mappers.pipeline import Context
from solvermap.mappers.plasticine import PIPELINE, decomposition, lowering, merge_step, traversal

CLI = [sys.executable, "-m", "solvermap.cli"]


def run_cli(*args, tmp_path):
    return subprocess.run([*CLI, *args, "--out", str(tmp_path / "run"), "-q"], capture_output=True, text=True,
                          timeout=300)


def test_solve_partition_json_has_the_contract_keys(tmp_path):
    proc = run_cli("solve", "partition", "--workload", "tpchq6", "--target", "plasticine", "--solver", "cpsat",
                   "--time-limit", "20", "--json", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["decision"] == "partition" and out["workload"] == "tpchq6"
    for key in ("backend", "status", "objective", "bound", "gap", "build_seconds", "solve_seconds"):
        assert key in out["solver"]
    assert out["baseline"]["name"] in ("dfs-forward", "dfs-backward", "bfs-forward", "bfs-backward")
    assert out["check"]["ok"] is True
    assert out["solver"]["objective"] <= out["baseline"]["objective"]
    assert out["solver"]["bound"] <= out["solver"]["objective"]
    assert out["validation"]["cycles"] > 0 and 0 < out["validation"]["throughput"] <= 1


def test_map_runs_the_default_workload_and_reports_the_metric_keys(tmp_path):
    proc = run_cli("map", "--json", "--time-limit", "10", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["target"] == "plasticine" and [d["decision"] for d in out["decisions"]] == ["partition", "merge"]
    for key in ("cycles", "throughput", "pbs_used", "area_mm2", "predicted_cycles", "simulated_cycles"):
        assert key in out["validation"]
    assert all(d["check"]["ok"] for d in out["decisions"])


def test_a_pcu_with_too_few_inputs_is_explained_with_node_and_limit(tmp_path):
    proc = run_cli("solve", "partition", "--workload", "dotproduct", "--set", "target.pcu.inputs.vector=1",
                   tmp_path=tmp_path)
    assert proc.returncode == 2
    line = proc.stderr.strip().splitlines()[-1]
    assert "node 'dot." in line and "vector inputs" in line and "has 1" in line
    assert "Traceback" not in proc.stderr


def test_literal_table42_variant_is_selectable():
    ctx = Context(workload=build("tpchq6", "plasticine"), target=load_target("plasticine"),
                  solver=SolverConfig(time_limit_s=20), options={"partition": {"variant": "table42"}})
    result = PIPELINE.run(ctx, upto="partition")
    record = result.records[-1]
    assert record.check.ok and record.details["variant"] == "table42"


def test_retiming_search_is_a_mapper_option_and_a_bad_one_is_one_line(tmp_path):
    """The option reaches the formulation, which validates it (tpchq6 is proven in phase A, so this does
    not exercise phase B: the column path is tested in test_delay_relaxation.py)."""
    proc = run_cli("solve", "partition", "--workload", "tpchq6", "--solver", "highs", "--time-limit", "10", "--json",
                   "--set", "decisions.partition.retiming_search=columns", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["check"]["ok"] is True
    proc = run_cli("solve", "partition", "--workload", "tpchq6", "--set", "decisions.partition.retiming_search=fast",
                   tmp_path=tmp_path / "bad")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert "decisions.partition.retiming_search: 'fast' is not allowed" in line and "one of auto, slots, columns" in line


def test_infeasible_pipeline_raises_before_solving():
    spec = load_target("plasticine", {"pcu.inputs.vector": 1})
    ctx = Context(workload=build("dotproduct", "plasticine"), target=spec, solver=SolverConfig(time_limit_s=5))
    with pytest.raises(InfeasibleError, match="vector inputs"):
        PIPELINE.run(ctx, upto="partition")


@pytest.mark.parametrize("app", ["gemm", "lstm", "lenet"])
def test_every_traversal_heuristic_passes_the_checker(app):
    spec = load_target("plasticine")
    graph, _ = decomposition.decompose(build(app, "plasticine").ir, spec)
    problem = lowering.partition_problem(graph, spec)
    for name, heuristic in traversal.partition_baselines(problem).items():
        assert check(problem, heuristic(problem)).ok, name


def test_traversal_merger_passes_the_checker_and_beats_no_merging():
    spec = load_target("plasticine")
    graph, _ = decomposition.decompose(build("gemm", "plasticine").ir, spec)
    problem = lowering.partition_problem(graph, spec)
    vbg = lowering.vb_graph(graph, spec, traversal.traversal_partition(problem))
    merge = lowering.merge_problem(vbg, spec)
    merged, alone = traversal.traversal_merge(merge), traversal.unmerged(merge)
    assert check(merge, merged).ok and check(merge, alone).ok
    assert len(merged.bins) < len(alone.bins)


def test_rnn_target_variant_loads_with_two_pmus_per_pcu():
    spec = load_target("plasticine-rnn")
    assert spec.pmu.count == 2 * spec.pcu.count and spec.pcu.stages == 4


def test_merge_without_a_packing_within_its_budget_is_unknown_and_names_the_scarce_pb_type():
    # gemm par 16 on 32 PCUs: feasible (the solver finds 52 PBs in a minute), but the traversal mergers
    # need 40 PCUs and a 1 s solve finds nothing: the error names the scarce type and a node, no traceback
    spec = load_target("plasticine", {"grid.columns": 8, "pcu.count": 32, "pmu.count": 32})
    graph, _ = decomposition.decompose(build("gemm", "plasticine", {"par": 16}).ir, spec)
    problem = lowering.partition_problem(graph, spec)
    ctx = Context(workload=build("gemm", "plasticine", {"par": 16}), target=spec,
                  solver=SolverConfig(time_limit_s=1, threads=1))
    ctx.state["vbgraph"] = lowering.vb_graph(graph, spec, traversal.traversal_partition(problem))
    with pytest.raises(UnknownError, match=r"fit only a pcu \(e\.g\. node '.*'\).*raise the pcu count"):
        merge_step(ctx)
