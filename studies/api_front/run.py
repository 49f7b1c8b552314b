"""A Pareto front from scratch with the public API only (``import solvermap``): GEMM mapped onto Plasticine
arrays of 4-, 6- and 8-stage PCUs at parallelization factors 1, 2, 4 and 8; cycles against the silicon area
of the units the mapping occupies, both minimised.

Each design is one ``solvermap.map`` call (the whole SARA pipeline: decomposition, partitioning and merging
as ILPs, each checked, then simulated) on a target from ``solvermap.load_target`` and a workload from
``solvermap.load_workload``; a design that does not fit is recorded with its one-line reason. The front is the
designs no other design beats in both objectives, computed here in a few lines of pandas.

    nice .venv/bin/python studies/api_front/run.py            # 12 designs
    nice .venv/bin/python studies/api_front/run.py --quick    # 4 designs

Writes ``results/designs.csv`` (one row per design: PCU stages, par, status, cycles, area_mm2, PBs, power,
seconds, reason), ``results/front.csv`` and ``results/front.png``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

import solvermap  # noqa: E402

RESULTS = Path(__file__).with_name("results")


def designs(quick: bool) -> list[tuple[int, int]]:
    stages, pars = ((4, 8), (2, 8)) if quick else ((4, 6, 8), (1, 2, 4, 8))
    return [(s, p) for s in stages for p in pars]


def measure(stages: int, par: int, runs: Path) -> dict:
    row: dict = {"pcu_stages": stages, "par": par}
    start = time.perf_counter()
    try:
        result = solvermap.map(solvermap.load_workload("gemm", par=par),
                               solvermap.load_target("plasticine", pcu={"stages": stages}),
                               time_limit=10, out=runs / f"stages{stages}-par{par}")
    except solvermap.InfeasibleError as error:
        row.update(status="does not fit", reason=str(error))
    else:
        v = result.validation
        row.update(status="mapped", cycles=v["cycles"], area_mm2=v["area_mm2"], pbs_used=v["pbs_used"],
                   power_w=v["power_w"], reason="")
    row["seconds"] = round(time.perf_counter() - start, 1)
    return row


def pareto_front(frame: pd.DataFrame, objectives: list[str]) -> pd.DataFrame:
    """The rows no other row beats: <= in every objective and < in one (all minimised)."""
    values = frame[objectives].to_numpy(float)
    keep = [not any((other <= mine).all() and (other < mine).any() for other in values) for mine in values]
    return frame[keep].sort_values(objectives)


def plot(mapped: pd.DataFrame, front: pd.DataFrame, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(6.5, 4.5), dpi=110)
    for stages, group in mapped.groupby("pcu_stages"):
        ax.scatter(group["area_mm2"], group["cycles"], s=30, label=f"{stages}-stage PCUs")
        for _, row in group.iterrows():
            ax.annotate(f"par {row['par']}", (row["area_mm2"], row["cycles"]), fontsize=7, xytext=(4, 3),
                        textcoords="offset points")
    ax.step(front["area_mm2"], front["cycles"], where="post", color="C3", lw=1.2, label="Pareto front")
    ax.set_xlabel("area of the occupied PCUs/PMUs (mm², minimise)")
    ax.set_ylabel("GEMM 256³ cycles (minimise)")
    ax.set_title("GEMM on Plasticine: each design one solvermap.map call", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="4 designs instead of 12")
    args = parser.parse_args()
    RESULTS.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="api-front-") as runs:
        rows = []
        for stages, par in designs(args.quick):
            rows.append(measure(stages, par, Path(runs)))
            print(f"{stages}-stage PCUs, par {par}: {rows[-1]['status']} ({rows[-1]['seconds']} s)", flush=True)
    frame = pd.DataFrame(rows)
    frame.to_csv(RESULTS / "designs.csv", index=False)
    mapped = frame[frame["status"] == "mapped"]
    front = pareto_front(mapped, ["area_mm2", "cycles"])
    front.to_csv(RESULTS / "front.csv", index=False)
    plot(mapped, front, RESULTS / "front.png")
    print(front[["pcu_stages", "par", "cycles", "area_mm2", "pbs_used"]].to_string(index=False))


if __name__ == "__main__":
    main()
