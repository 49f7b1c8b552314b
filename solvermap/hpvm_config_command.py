"""``solvermap hpvm-config FILE --workload W``: read an HPVM tuner configuration file (:mod:`.hpvm_config`) and
evaluate every configuration on the SoC simulator and the Monte Carlo test (the approxhpvm family).

For each configuration: the stated speedup, energy and loss beside the predicted speedup and energy reduction over
all-FP32, the pass rate over ``--runs`` functional runs against the stated loss, and whether it meets it (pass rate
≥ the target's, 95 %, L1058). A configuration with HPVM knobs the simulator does not model (perforation, sampling)
is listed as not evaluated, with the knob named. Registered on the ``solvermap`` app by ``solvermap.cli``.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from solvermap.cli import QuietOpt, VerboseOpt, progress  # registered by solvermap.cli.main, once cli is loaded


def register(app: typer.Typer) -> None:
    @app.command("hpvm-config")
    def hpvm_config_command(
        path: Annotated[str, typer.Argument(help="HPVM tuner configuration file (tuner_confs.txt layout)")],
        workload: Annotated[str, typer.Option("--workload", "-w", help="the approxhpvm network the file configures")],
        target: Annotated[str, typer.Option("--target", "-t", help="approxhpvm target preset or YAML")] = "promise-soc",
        runs: Annotated[int | None, typer.Option("--runs", help="Monte Carlo runs (default: the target's mc_runs)")] = None,
        seed: Annotated[int, typer.Option("--seed", help="Monte Carlo seed")] = 0,
        as_json: Annotated[bool, typer.Option("--json", help="print one JSON object to stdout")] = False,
        quiet: QuietOpt = False, verbose: VerboseOpt = False,
    ) -> None:
        """Evaluate every configuration of an HPVM tuner configuration file on the SoC simulator."""
        from rich.console import Console
        from rich.table import Table

        from solvermap.errors import InputError
        from solvermap.hardware.targets import load_target
        from solvermap.ir.workloads import build
        from solvermap.ir.workloads.approxhpvm_tensor_ops import TensorNetwork, single_threaded_blas
        from solvermap.mappers.approxhpvm import hpvm_config

        spec = load_target(target)
        if spec.family != "approxhpvm":
            raise InputError(target, "family", f"hpvm-config needs an approxhpvm target, got {spec.family!r}")
        if runs is not None and runs < 1:
            raise InputError("--runs", "", f"must be ≥ 1, got {runs}")
        net = build(workload, "approxhpvm").ir
        if not isinstance(net, TensorNetwork):
            raise InputError(workload, "workload", "hpvm-config needs a trained network (lenet, dnn1, …, lenet_mnist)")
        configs = hpvm_config.read(path)
        with progress(quiet, verbose), single_threaded_blas():
            results = hpvm_config.evaluate(configs, net, spec, runs=runs or spec.mc_runs, seed=seed)
        if as_json:
            payload = {"file": path, "workload": workload, "target": spec.name,
                       "baseline_time_ms": configs.baseline_time, "configurations": [r.to_json() for r in results]}
            sys.stdout.write(json.dumps(payload, indent=2) + "\n")
            return
        table = Table(title=f"{path} on {workload} / {spec.name}", header_style="bold")
        for col in ("conf", "settings", "stated speedup", "stated energy", "stated loss %", "speedup", "energy red.",
                    "pass rate", "meets loss"):
            table.add_column(col)
        for r in results:
            if r.not_evaluated:
                table.add_row(r.name, r.settings, f"{r.stated_speedup:.3g}", f"{r.stated_energy:.3g}",
                              f"{r.stated_loss:.3g}", "—", "—", "—", f"not evaluated: {r.not_evaluated}")
                continue
            table.add_row(r.name, r.settings, f"{r.stated_speedup:.3g}", f"{r.stated_energy:.3g}", f"{r.stated_loss:.3g}",
                          f"{r.speedup:.3g}", f"{r.energy_reduction:.3g}", f"{100 * r.pass_rate:.1f}% of {r.runs}",
                          "yes" if r.meets_stated_loss else "no")
        Console().print(table)
