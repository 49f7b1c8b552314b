"""The network design-space study (studies/network_dse/run.py): the default designs stay the committed
thirteen, the seed scale holds the seed's array and named designs, normalisation to the worst or to a named
design, the window check, shared solves, and one-line errors for bad flags."""

from __future__ import annotations

import math
import sys

import pandas as pd
import pytest

from solvermap.formulations.solver import SolverConfig
from solvermap.mappers.plasticine import network as net
from solvermap.studies.network_dse import run

COMMITTED = [  # the designs of the committed results/ (design, execution), in row order
    ("S-x1-db", "pipelined"), ("S-x2-db", "pipelined"), ("S-x3-db", "pipelined"), ("S-x2-cd", "pipelined"),
    ("H-x1-v2-f128", "pipelined"), ("H-x2-v2-f128", "pipelined"), ("H-x3-v2-f128", "pipelined"),
    ("H-x2-v4-f512", "pipelined"), ("D-x0-v4-f512", "pipelined"), ("S-x1-db", "time_scheduled"),
    ("S-x2-db", "time_scheduled"), ("H-x1-v2-f128", "time_scheduled"), ("H-x2-v2-f128", "time_scheduled"),
]


def test_the_default_scale_runs_the_committed_thirteen_designs_on_the_preset_array():
    scale = run.scale_of("default")
    assert [(label, execution) for label, execution, _, _ in scale.designs] == COMMITTED
    assert scale.array == {} and scale.tag == "" and not scale.share_solves and scale.out == run.HERE / "results"
    assert scale.window == 1024
    assert run.COLUMNS[-4:] == ["backstop_fired", "status", "seconds", "error"]


def test_the_default_par_factors_are_default_and_twice_default_capped():
    assert run.pars("dotproduct") == [4, 8] and run.pars("sgd") == [4]  # sgd: 2 x 4 is capped at 4


def test_the_seed_grid_holds_the_seeds_named_designs_in_both_cgra_classes():
    designs = run.scale_of("seed").designs
    for execution in ("pipelined", "time_scheduled"):
        labels = [label for label, ex, _, _ in designs if ex == execution]
        assert set(run.SEED_NAMED) <= set(labels)
        assert len(labels) == len(set(labels)) == 56


def test_the_seed_grid_is_the_product_of_its_axes_per_network_type():
    labels = [label for label, _, _ in run.seed_grid()]
    assert sum(label.startswith("S-") for label in labels) == 4 * 2
    assert sum(label.startswith("H-") for label in labels) == 3 * 2 * 3 * 2
    assert sum(label.startswith("D-") for label in labels) == 2 * 3 * 2
    assert "S-x4-cd" in labels and "H-x1-v4-f256-b6-db" in labels and "D-x0-v2-f128-b3" in labels


def test_the_seed_array_is_14x14_end_points_in_a_checkerboard_with_dag_columns():
    spec = run.spec_for("hybrid", {}, "pipelined", run.SEED_ARRAY)
    kinds = [site.types[0] for site in net.sites_of(spec)]
    assert (kinds.count("pcu"), kinds.count("pmu"), kinds.count("dag")) == (98, 98, 28)
    assert (spec.pcu.count, spec.pmu.count, spec.dag.count) == (98, 98, 28)
    assert net.mesh_of(spec).rows == 14 and net.mesh_of(spec).cols == 16


def test_designs_that_differ_only_in_flit_buffers_or_flow_control_share_a_solve():
    key = lambda preset, o: run.solve_key(run.spec_for(preset, o, "pipelined"))  # noqa: E731
    base = {"network.static.vector_links": 2, "network.dynamic.vcs": 2}
    assert key("hybrid", base) == key("hybrid", {**base, "network.dynamic.flit_bits": 512,
                                                 "network.dynamic.buffers_per_vc": 6})
    assert key("static", {"network.static.flow_control": "cd"}) == key("static", {})
    assert key("hybrid", base) != key("hybrid", {**base, "network.dynamic.vcs": 4})
    assert key("hybrid", base) != key("hybrid", {**base, "network.static.vector_links": 3})


def synthetic_runs() -> pd.DataFrame:
    """Two apps, three designs of one class; cycles, area and power chosen so every ratio is known."""
    rows = []
    for app, cycles in (("a", {"S": 100, "H": 50, "D": 400}), ("b", {"S": 200, "H": 100, "D": 200})):
        for design, c in cycles.items():
            rows.append({"app": app, "par": 1, "design": design, "execution": "pipelined",
                         "network": {"S": "static", "H": "hybrid", "D": "dynamic"}[design], "status": "ok",
                         "cycles": c, "overhead": 0.0, "network_area_mm2": 1.0, "network_power_w": 1.0,
                         "vcs": 0, "vc_bound": 0, "vcs_per_path": 0})
    return pd.DataFrame(rows)


def test_normalising_to_the_worst_design_divides_each_app_by_its_slowest_then_takes_the_geomean():
    _, summary, _ = run.summarise(synthetic_runs())
    geo = summary.set_index("design")["geo_perf"]
    assert geo["D"] == pytest.approx(1.0)
    assert geo["S"] == pytest.approx(math.sqrt(4.0 * 1.0))  # a: 400/100, b: 200/200
    assert geo["H"] == pytest.approx(math.sqrt(8.0 * 2.0))


def test_normalising_to_a_named_design_divides_by_that_design():
    _, summary, fig = run.summarise(synthetic_runs(), reference="S")
    geo = summary.set_index("design")["geo_perf"]
    assert geo["S"] == pytest.approx(1.0)
    assert geo["H"] == pytest.approx(2.0) and geo["D"] == pytest.approx(math.sqrt(0.25 * 1.0))
    assert fig.set_index(["cgra", "network"]).loc[("pipelined", "hybrid"), "ours_perf"] == pytest.approx(2.0)


def test_an_app_the_reference_design_does_not_map_drops_out_of_the_geomeans():
    runs = synthetic_runs()
    runs.loc[(runs["app"] == "b") & (runs["design"] == "S"), "status"] = "par-failed"
    _, summary, _ = run.summarise(runs, reference="S")
    assert summary.set_index("design").loc["H", "geo_perf"] == pytest.approx(2.0)  # app a only


def test_the_window_check_reports_each_ratios_relative_change_against_the_two_percent_tolerance():
    fig = pd.DataFrame([{"cgra": "pipelined", "network": "hybrid", "ours_perf": 4.0, "ours_perf_design": "H",
                         "ours_perf_per_w": 2.0, "ours_perf_per_w_design": "H", "ours_perf_per_area": None,
                         "ours_perf_per_area_design": None}])
    longer = fig.assign(ours_perf=4.2, ours_perf_per_w=2.02)
    check = run.window_check(fig, longer, 1024).set_index("metric")
    assert check.loc["perf", "rel_change"] == pytest.approx(0.05) and not check.loc["perf", "within_tolerance"]
    assert check.loc["perf_per_w", "rel_change"] == pytest.approx(0.01) and check.loc["perf_per_w", "within_tolerance"]
    assert pd.isna(check.loc["perf_per_area", "rel_change"]) and check.loc["perf", "window_2x"] == 2048


def test_a_shared_solve_resimulated_on_another_design_equals_solving_that_design(tmp_path):
    config = SolverConfig(time_limit_s=2.0)
    workload, vbgraph, merge, _ = run.mapped("tpchq6", 2, "router-ports", tmp_path, config)
    first = run.spec_for("hybrid", {"network.dynamic.vcs": 2}, "pipelined")
    other = run.spec_for("hybrid", {"network.dynamic.vcs": 2, "network.dynamic.flit_bits": 512,
                                    "network.dynamic.buffers_per_vc": 6}, "pipelined")
    placed = run.place(workload, vbgraph, merge, first, config)
    first_row, ctx = run.run_design(workload, placed, first, config, 256)
    solved, _ = run.run_design(workload, placed, other, config, 256)
    assert solved["network_area_mm2"] != first_row["network_area_mm2"]  # the designs differ in what is simulated
    assert run.resimulate(ctx, other, 256) == {column: solved[column] for column in run.SIM_COLUMNS}
    # a third design that differs from `other` only in flit width reuses its ideal run (the memo of the solve)
    third = run.spec_for("hybrid", {"network.dynamic.vcs": 2, "network.dynamic.flit_bits": 128,
                                    "network.dynamic.buffers_per_vc": 6}, "pipelined")
    runs = ctx.state["sim.ideal_runs"]
    assert len(runs) == 1
    s = ctx.state
    fresh = net.simulate_mapping(s["network.view"], third, s["place"], s["route.problem"], s["route"], s.get("vc"),
                                 window=256)
    assert run.resimulate(ctx, third, 256) == run.sim_columns(fresh) and len(runs) == 1


@pytest.mark.parametrize("flags, field", [(["--normalise", "S-x9-db"], "--normalise"),
                                          (["--apps", "nonesuch"], "--apps"),
                                          (["--par-factors", "1,x"], "--par-factors"),
                                          (["--scale", "huge"], "--scale"),
                                          (["--window", "0"], "--window"),
                                          (["--par-cap", "0"], "--par-cap"),
                                          (["--designs", "H-x9-v2-f128"], "--designs")])
def test_a_bad_flag_exits_2_naming_the_flag(flags, field, monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(sys, "argv", ["run", "--out", str(tmp_path), "--analyse-only", *flags])
    with pytest.raises(SystemExit) as exit_:
        run.main()
    assert exit_.value.code == 2
    assert field in capsys.readouterr().err.strip().splitlines()[-1]


def test_designs_cuts_the_scale_to_the_named_labels_in_both_classes():
    parser = run.argparse.ArgumentParser()
    args = run.argparse.Namespace(apps="dotproduct", par_factors="1,2", window=None, scale="seed", normalise="worst",
                                  designs="S-x1-db,D-x0-v4-f512-b3", par_cap=None)
    scale, factors, reference = run.checked(parser, args)
    assert [(label, execution) for label, execution, _, _ in scale.designs] == [
        ("S-x1-db", "pipelined"), ("D-x0-v4-f512-b3", "pipelined"),
        ("S-x1-db", "time_scheduled"), ("D-x0-v4-f512-b3", "time_scheduled")]
    assert scale.window == 4096 and factors == (1, 2) and reference is None


def test_the_seed_scale_runs_four_times_the_default_par_unless_par_factors_says_otherwise():
    parser = run.argparse.ArgumentParser()
    args = run.argparse.Namespace(apps="gemm", par_factors=None, window=None, scale="seed", normalise="worst",
                                  designs=None, par_cap=None)
    assert run.checked(parser, args)[1] == (1, 2, 4)
    assert run.checked(parser, run.argparse.Namespace(**{**vars(args), "scale": "default"}))[1] == (1, 2)
    assert run.checked(parser, run.argparse.Namespace(**{**vars(args), "par_factors": "1,2"}))[1] == (1, 2)


def _two_pars() -> pd.DataFrame:
    """Design S is fastest at par 2 but 50 % slower than its ideal network there; at par 1 it is within 10 %."""
    runs = synthetic_runs()
    late = runs[(runs["app"] == "a") & (runs["design"] == "S")].assign(par=2, cycles=60, overhead=0.5)
    return pd.concat([runs, late], ignore_index=True)


def test_a_design_runs_at_its_fastest_par_within_ten_percent_of_its_ideal_network():
    chosen = run.best_par(_two_pars()).set_index(["app", "design"])
    assert chosen.loc[("a", "S"), "par"] == 1 and chosen.loc[("a", "S"), "cycles"] == 100
    chosen, summary, _ = run.summarise(_two_pars())
    assert summary.set_index("design").loc["S", "apps_kept"] == 2


def test_the_former_reading_takes_the_fastest_par_and_then_drops_the_design():
    chosen = run.best_par(_two_pars(), select="designs").set_index(["app", "design"])
    assert chosen.loc[("a", "S"), "par"] == 2
    _, summary, _ = run.summarise(_two_pars(), select="designs")
    assert summary.set_index("design").loc["S", "apps_kept"] == 1  # app a's S is 50 % over its ideal


def test_a_design_with_no_par_within_the_filter_takes_its_fastest_par_and_is_not_kept():
    runs = _two_pars()
    runs.loc[(runs["app"] == "a") & (runs["design"] == "S"), "overhead"] = 0.3
    chosen, _, _ = run.summarise(runs)
    row = chosen.set_index(["app", "design"]).loc[("a", "S")]
    assert row["par"] == 2 and not row["kept"]


def test_readings_of_the_worst_design_divide_by_what_they_name():
    runs = synthetic_runs()
    b_d = (runs["app"] == "b") & (runs["design"] == "D")
    runs.loc[b_d, ["cycles", "network_power_w"]] = [400, 0.25]  # b: D is the slowest, S the worst perf/W
    slowest = run.summarise(runs, base="worst-perf")[0].set_index(["app", "design"])
    assert slowest.loc[("b", "S"), "norm_perf_per_w"] == pytest.approx((1 / 200) / ((1 / 400) / 0.25))
    own = run.summarise(runs)[0].set_index(["app", "design"])
    assert own.loc[("b", "S"), "norm_perf_per_w"] == pytest.approx(1.0)  # S is b's worst perf/W
    no_dynamic = run.summarise(runs, base="worst-static-hybrid")[0].set_index(["app", "design"])
    assert no_dynamic.loc[("a", "H"), "norm_perf"] == pytest.approx(2.0)  # a: S (100) is the slowest non-dynamic
    with pytest.raises(ValueError, match="base"):
        run.summarise(runs, base="best")


def test_sensitivity_lists_every_reading_and_each_named_design_present_with_the_25_percent_verdict():
    table = run.sensitivity(synthetic_runs(), designs={"S-x1-db", "S", "H", "D"})
    assert set(table["reading"]) == {name for name, *_ in run.READINGS} | {"normalised to S-x1-db"}
    row = table[(table["reading"] == "default") & (table["cgra"] == "pipelined") & (table["network"] == "hybrid")
                & (table["metric"] == "perf")].iloc[0]
    assert row["ours"] == pytest.approx(4.0) and row["seed"] == 6.4  # H: sqrt(8 * 2)
    assert row["off"] == pytest.approx(4.0 / 6.4 - 1, abs=1e-3) and not row["within_25pct"]


def test_the_ceiling_is_the_worst_designs_cycles_over_the_ideal_networks_fewest():
    runs = synthetic_runs().assign(ideal_cycles=40.0)
    chosen, _, _ = run.summarise(runs)
    table = run.ceiling(runs, chosen).set_index(["app", "execution"])
    assert table.loc[("a", "pipelined"), "cap"] == pytest.approx(400 / 40)
    assert table.loc[("a", "pipelined"), "ratio"] == pytest.approx(400 / 50)
    assert table.loc[("geomean", "pipelined"), "cap"] == pytest.approx(math.sqrt(10 * 5))


def test_hybrid_vs_static_pairs_designs_of_one_static_bandwidth_and_takes_geomeans_of_hybrid_over_static():
    rows = []
    for app, (pbs_s, pbs_h) in (("a", (10, 5)), ("b", (8, 8))):
        for design, pbs, power in (("S-x2-db", pbs_s, 1.0), ("H-x2-v2-f128-b3-db", pbs_h, 2.0),
                                   ("H-x2-v4-f512-b3-db", 1, 9.0), ("S-x1-db", 1, 9.0)):
            rows.append({"app": app, "design": design, "execution": "pipelined", "par": 1, "pbs_used": pbs,
                         "hops": 100, "network_power_w": power, "perf_per_w": 1 / power})
    table = run.hybrid_vs_static(pd.DataFrame(rows))
    assert len(table[table["app"] != "geomean"]) == 2  # only x2 has both sides; the v4-f512 hybrid is not paired
    geo = table[table["app"] == "geomean"].iloc[0]
    assert geo["x"] == 2 and geo["pbs_used_hybrid_over_static"] == pytest.approx(math.sqrt(0.5 * 1.0))
    assert geo["network_power_w_hybrid_over_static"] == pytest.approx(2.0) and geo["hops_hybrid_over_static"] == 1.0


def test_the_grid_reading_leaves_out_the_designs_whose_values_the_seed_does_not_state():
    runs = synthetic_runs()
    slow = runs[runs["design"] == "D"].assign(design="D-x0-v4-f512-b6", cycles=800)  # the new worst, b6 (NT16)
    table = run.sensitivity(pd.concat([runs, slow], ignore_index=True))
    hybrid_perf = table[(table["cgra"] == "pipelined") & (table["network"] == "hybrid") & (table["metric"] == "perf")]
    ours = hybrid_perf.set_index("reading")["ours"]
    assert ours["grid without x4 and b6"] == pytest.approx(4.0)  # as without the b6 design: sqrt(8 * 2)
    assert ours["default"] == pytest.approx(math.sqrt(16 * 8), abs=0.005)  # a: 800/50, b: 800/100 (2 decimals)


def test_the_window_check_compares_only_rows_solved_alike_at_both_windows():
    runs = synthetic_runs().assign(place_obj=1.0, split_status="optimal", split_obj=2.0, route_status="optimal",
                                   route_obj=3.0, vc_status="optimal", vc_obj=0.0, pbs_used=5, backstop_fired="")
    longer = runs.assign(cycles=runs["cycles"] * 1.01)
    longer.loc[(longer["app"] == "a") & (longer["design"] == "S"), ["route_obj", "backstop_fired"]] = [4.0, "route"]
    longer = longer[~((longer["app"] == "b") & (longer["design"] == "H"))]
    w, w2, left_out = run.same_solves(runs, longer)
    assert len(w) == len(w2) == 4
    reasons = left_out.set_index(["app", "design"])["reason"]
    assert reasons[("a", "S")] == "differs: route_obj" and reasons[("b", "H")] == "missing at 2W"
    assert left_out.set_index(["app", "design"]).loc[("a", "S"), "backstop_fired_2w"] == "route"


def test_missing_rows_counts_the_scales_rows_not_in_yet():
    scale = run.Scale("tiny", {}, [("S", "pipelined", "static", {}), ("H", "pipelined", "hybrid", {})], False,
                      run.HERE, 64)
    runs = pd.DataFrame([{"app": "gemm", "par": 4, "design": "S", "execution": "pipelined"}])
    assert run.missing_rows(runs, scale, (1, 2), apps=["gemm"]) == 3  # pars 4 and 8, two designs, one done


def test_the_seed_block_puts_each_given_seed_ratio_under_every_reading_with_caps_and_the_window_check():
    runs = synthetic_runs().assign(ideal_cycles=40.0)
    chosen, _, fig = run.summarise(runs)
    table = run.sensitivity(runs)
    check = run.window_check(fig, fig.assign(ours_perf=fig["ours_perf"] * 1.01), 4096).assign(rows=6, rows_left_out=0)
    block = run.seed_block(fig, table, run.ceiling(runs, chosen), check)
    assert block.startswith(run.SEED_BEGIN) and block.endswith(run.SEED_END)
    assert "| 6.4 / 4.00 (H) |" in block.replace("| pipelined | hybrid ", "")
    assert "pipe H perf (6.4)" in block and "t-s S perf/area (2.6)" in block and "t-s S perf/W" not in block
    assert all(f"| {name} |" in block for name, *_ in run.READINGS)
    assert "pipelined 7.07" in block  # ceiling: sqrt(400/40 * 200/40)
    assert "no ratio moves by more than 1.0 %" in block


def test_replace_block_keeps_the_text_around_the_markers(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"before\n{run.SEED_BEGIN}\nold\n{run.SEED_END}\nafter\n")
    run.replace_block(readme, run.SEED_BEGIN, run.SEED_END, f"{run.SEED_BEGIN}\nnew\n{run.SEED_END}")
    assert readme.read_text() == f"before\n{run.SEED_BEGIN}\nnew\n{run.SEED_END}\nafter\n"


def test_pars_within_one_percent_of_the_fastest_count_as_equally_fast_and_the_smallest_is_taken():
    runs = synthetic_runs()
    close = runs[(runs["app"] == "a") & (runs["design"] == "H")].assign(par=2, cycles=49.8)  # 0.4 % faster
    far = runs[(runs["app"] == "b") & (runs["design"] == "H")].assign(par=2, cycles=90)  # 10 % faster
    chosen = run.best_par(pd.concat([runs, close, far], ignore_index=True)).set_index(["app", "design"])
    assert chosen.loc[("a", "H"), "par"] == 1 and chosen.loc[("a", "H"), "cycles"] == 50
    assert chosen.loc[("b", "H"), "par"] == 2


def test_the_ceiling_by_pars_repeats_the_geomeans_over_each_apps_smallest_pars():
    runs = synthetic_runs().assign(ideal_cycles=40.0)
    faster = runs.assign(par=2, cycles=runs["cycles"] / 2, ideal_cycles=20.0)
    both = pd.concat([runs, faster], ignore_index=True)
    table = run.ceiling(both, run.summarise(both)[0])
    geo = table[table["app"] == "geomean"].set_index("pars")
    assert geo.loc["all", "cap"] == pytest.approx(math.sqrt((200 / 20) * (100 / 20)))  # worst at par 2, ideal 20
    assert geo.loc["1", "cap"] == pytest.approx(math.sqrt((400 / 40) * (200 / 40)))  # par 1 only
    row = table[(table["app"] == "a") & (table["pars"] == "all")].iloc[0]
    assert row["worst_design"] == "D" and row["worst_par"] == 2 and row["best_kept_par"] == 2


def test_par_cap_replaces_the_studys_cap_within_the_apps_own_par_range():
    assert run.pars("gemm", (1, 2, 4)) == [4, 8, 16]  # PAR_LIMIT 16
    assert run.pars("gemm", (1, 8, 16), cap=64) == [4, 32, 64]
    assert run.pars("gemm", (1, 32), cap=1000) == [4, 64]  # gemm's own range ends at the tile's 64 rows
    parser = run.argparse.ArgumentParser()
    args = run.argparse.Namespace(apps="gemm", par_factors="1,8", window=None, scale="seed", normalise="worst",
                                  designs=None, par_cap=32)
    assert run.checked(parser, args)[0].par_cap == 32


def test_the_partition_merge_cache_is_json_and_a_planted_pickle_is_never_opened(tmp_path, monkeypatch):
    import pickle

    marker = tmp_path / "unpickled"

    class Bomb:
        def __reduce__(self):
            return (marker.write_text, ("ran",))

    cache = tmp_path / "cache"
    cache.mkdir()
    for name in ("dotproduct-p1-router-ports.v2.pkl", "dotproduct-p1-router-ports.pkl"):
        (cache / name).write_bytes(pickle.dumps(Bomb()))  # what an older study version left behind
    config = SolverConfig(time_limit_s=10)
    first = run.mapped("dotproduct", 1, "router-ports", cache, config)
    run._MAPPED.clear()  # a new process: only the disk cache is left
    solves = []
    real = run.SolveCache.solve
    monkeypatch.setattr(run.SolveCache, "solve",
                        lambda self, *a, **k: solves.append(real(self, *a, **k)) or solves[-1])
    again = run.mapped("dotproduct", 1, "router-ports", cache, config)
    assert not marker.exists()
    assert [s.details["cache"] for s in solves] == ["hit", "hit"]  # partition and merge read back from JSON
    assert again[2] == first[2] and again[3] == first[3] == []
    assert {p.parent.name for p in cache.rglob("*.json")} == {"partition", "merge"}
