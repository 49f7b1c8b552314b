"""PUMA functional simulation study: fixed-point, bit-sliced crossbar outputs vs the float reference.

Part 1 (``functional.csv``): every study workload (mlp_l4, mlp_l5, lstm_lm, lenet, vgg; optimised as in
:mod:`.run`) and the digits classifier, on the ``puma`` preset (16-bit fixed point 4.12, 2-bit cells,
1-bit DAC, 8-bit ADC): ``--samples`` seeded random inputs (digits: its test images), the largest
|simulated − float reference|, the largest element of the simulator's rigorous error bound
(:mod:`solvermap.hardware.puma.functional_sim`; it applies when nothing saturates, the ADC is lossless
and there is no device noise), whether every element is inside it, and the largest |reference| for scale.

Part 2 (``digits_accuracy.csv``, ``digits_accuracy.png``): test-set accuracy of the digits MLP (trained
on sklearn's digits, seed 0) in float64 and on the simulator, for ADC resolutions 4–8 bits (8 is the
preset; below 8 the 128-row, 2-bit-cell MVM is lossy and the bound does not apply) — the accuracy loss
the seed reports as < 0.1 % at 8 bits (seed 003 L123).

    .venv/bin/python -m solvermap.studies.puma_placement.functional [--samples 4] [--out DIR]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from solvermap.hardware.puma.functional_sim import simulate
from solvermap.hardware.puma.network import forward_float
from solvermap.hardware.targets import load_target
from solvermap.ir.workloads import build
from solvermap.ir.workloads.puma_digits import digits_split
from solvermap.mappers.puma import application_optimizer as ao
from solvermap.mappers.puma.crossbar_partition import partition
from solvermap.mappers.puma.frontend import lower
from solvermap.studies.puma_placement.run import WORKLOADS, prepare

HERE = Path(__file__).parent


def digits_network(spec):
    """The digits MLP optimised as the pipeline does (calibrated on 64 training images), and its float original."""
    original = lower(build("digits_mlp", "puma").ir)
    net = ao.fold_bias(ao.set_unroll(ao.fold_batchnorm(original), "per_position"), spec.crossbar.rows)
    x_train = digits_split(0)[0]
    return original, ao.quantize(net, 2.0 ** (spec.data.int_bits - 1), x_train[:64].astype(np.float64))


def agreement_row(name: str, net, spec, x: np.ndarray) -> dict:
    part = partition(net, spec.crossbar.rows, spec.crossbar.cols, spec.data.bits / 8)
    result = simulate(net, part, spec, x)
    return {"workload": name, "samples": len(x), "outputs": int(result.output.size), "max_error": result.max_error,
            "max_bound": float(result.bound.max()), "within_bound": result.within_bound,
            "bound_applies": result.bound_applies, "saturations": result.saturations,
            "max_abs_reference": float(np.abs(result.reference).max()),
            "data_bits": spec.data.bits, "frac_bits": spec.data.frac_bits, "adc_bits": spec.crossbar.adc_bits}


def accuracy_rows(spec) -> list[dict]:
    original, net = digits_network(spec)
    _, x_test, _, y_test = digits_split(0)
    x_test = x_test.astype(np.float64)
    acc_float = float((forward_float(original, x_test).argmax(1) == y_test).mean())
    rows = []
    for adc in (4, 5, 6, 7, 8):
        variant = spec.model_copy(update={"crossbar": spec.crossbar.model_copy(update={"adc_bits": adc})})
        part = partition(net, variant.crossbar.rows, variant.crossbar.cols, variant.data.bits / 8)
        result = simulate(net, part, variant, x_test)
        acc = float((result.output.argmax(1) == y_test).mean())
        rows.append({"adc_bits": adc, "data_bits": spec.data.bits, "test_images": len(y_test), "accuracy_float": acc_float,
                     "accuracy_fixed": acc, "accuracy_loss": acc_float - acc, "max_error": result.max_error,
                     "bound_applies": result.bound_applies, "within_bound": result.within_bound})
    return rows


def plot(acc: pd.DataFrame, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    ax.plot(acc["adc_bits"], 100 * acc["accuracy_fixed"], marker="o", label="PUMA functional sim (16-bit fixed point)")
    ax.axhline(100 * acc["accuracy_float"].iloc[0], color="k", ls="--", lw=1, label="float64 reference")
    ax.set_xlabel("ADC resolution (bits)")
    ax.set_ylabel("digits test accuracy (%)")
    ax.set_title("Digits MLP on the PUMA functional simulator")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "digits_accuracy.png", dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=4)
    parser.add_argument("--workloads", nargs="*", default=WORKLOADS)
    parser.add_argument("--out", default=str(HERE / "results"))
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    spec = load_target("puma")
    rows = []
    for name in args.workloads:
        net = prepare(name, spec)
        x = np.random.default_rng(1).random((args.samples,) + tuple(net.input_shape))
        rows.append(agreement_row(name, net, spec, x))
        print(rows[-1], flush=True)
    _, digits = digits_network(spec)
    rows.append(agreement_row("digits_mlp", digits, spec, digits_split(0)[1].astype(np.float64)))
    pd.DataFrame(rows).to_csv(out / "functional.csv", index=False)
    acc = pd.DataFrame(accuracy_rows(spec))
    acc.to_csv(out / "digits_accuracy.csv", index=False)
    plot(acc, out)
    print(pd.DataFrame(rows).to_string(index=False))
    print(acc.to_string(index=False))


if __name__ == "__main__":
    main()
