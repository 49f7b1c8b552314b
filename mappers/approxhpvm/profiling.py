"""Stage-1 profiling by noise injection (seed 000 L1066–1084) and the Monte Carlo test of a configuration.

Injection: op i's output becomes X·(1 + σ(E_i)·N(0,1)) (L1066), where σ(E) gives a relative L1 error that grows
linearly from 0.5 % to 40 % (L1068; ``NoiseModel`` of the target).

:func:`profile_sensitivity` injects one op at a time, at each level E = 1..15, ``repeats`` times. Only the ops
downstream of the injected one are rerun; the golden activations of the ops before it are reused. The result:

* ``loss[op][E−1]`` — the mean accuracy loss (golden − noisy accuracy), clipped at 0 and made non-decreasing
  in E, because more noise never helps on average;
* ``sensitivity[op]`` — a_op of the fitted model loss ≈ a·σ(E)² (least squares through the origin);
* ``evaluations`` — the number of injected runs.

:func:`injection_monte_carlo` is the statistical test of L1082–1084: ``runs`` injected runs of a whole
configuration. Each run is a Bernoulli trial that succeeds when its loss ≤ the limit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from solvermap.ir.workloads.approxhpvm_tensor_ops import TensorNetwork


def inject_hook(levels: Mapping[str, int], sigma, rng: np.random.Generator,
                reference: Mapping[str, np.ndarray] | None = None):
    """The injection hook. With ``reference`` (the golden activations, ``"input"`` included), an op whose inputs
    are all the golden arrays themselves takes its golden output instead of recomputing it: same values, one
    convolution less per run when the first op is noisy."""

    def hook(op, inputs, golden):
        if reference is not None and op.name in reference and all(
                a is reference.get(name) for a, name in zip(inputs, op.inputs)):
            out = reference[op.name]
        else:
            out = golden()
        level = levels.get(op.name, 0)
        if level:
            factor = rng.standard_normal(out.shape, dtype=np.float32)
            factor *= sigma(level)  # in place, same float32 arithmetic as 1 + σ·N
            factor += 1.0
            out = out * factor  # a new array: ``reference`` is never written
        return out

    return hook


@dataclass(frozen=True)
class SensitivityProfile:
    ops: tuple[str, ...]
    loss: dict[str, tuple[float, ...]]
    raw_mean: dict[str, tuple[float, ...]]
    raw_std: dict[str, tuple[float, ...]]
    sensitivity: dict[str, float]
    sigma: tuple[float, ...]
    l1: tuple[float, ...]
    evaluations: int  # injected runs
    seconds: float

    @property
    def configurations(self) -> int:
        """Distinct configurations measured: one op at one level (each measured ``repeats`` times)."""
        return len(self.ops) * len(self.sigma)


def profile_sensitivity(net: TensorNetwork, spec, *, repeats: int = 3, seed: int = 0) -> SensitivityProfile:
    import time

    start_time = time.perf_counter()
    golden = net.golden()
    base = net.golden_accuracy()
    levels = tuple(range(1, spec.noise.levels + 1))
    sigma = tuple(spec.noise.sigma(k) for k in levels)
    l1 = tuple(spec.noise.l1(k) for k in levels)
    loss, raw_mean, raw_std, fit = {}, {}, {}, {}
    evaluations = 0
    for index, op in enumerate(net.ops):
        start = {o.name: golden[o.name] for o in net.ops[:index]}
        means, stds = [], []
        for k in levels:
            drops = []
            for r in range(repeats):
                rng = np.random.default_rng([seed, index, k, r])
                logits = net.forward(net.data.x_test, inject_hook({op.name: k}, spec.noise.sigma, rng, golden),
                                     start=start)
                drops.append(base - net.accuracy(logits))
                evaluations += 1
            means.append(float(np.mean(drops)))
            stds.append(float(np.std(drops)))
        monotone = np.maximum.accumulate(np.maximum(np.asarray(means), 0.0))
        loss[op.name] = tuple(float(v) for v in monotone)
        raw_mean[op.name], raw_std[op.name] = tuple(means), tuple(stds)
        s2 = np.asarray(sigma) ** 2
        fit[op.name] = float(max(np.dot(s2, monotone) / np.dot(s2, s2), 0.0))
    return SensitivityProfile(tuple(o.name for o in net.ops), loss, raw_mean, raw_std, fit, sigma, l1, evaluations,
                              time.perf_counter() - start_time)


def injection_monte_carlo(net: TensorNetwork, spec, levels: Mapping[str, int], *, runs: int, loss_limit: float,
                          seed: int = 0, pass_rate: float | None = None) -> dict:
    """``runs`` whole-configuration injection runs; pass rate = fraction with loss ≤ limit (L1082).

    With ``pass_rate`` given, the test stops as soon as more than ⌊runs·(1 − pass_rate)⌋ runs have failed: the
    configuration can then no longer pass. The result is marked ``stopped_early``, and its pass rate is the
    fraction among the runs made, which is below the threshold either way.
    """
    golden = net.golden()
    base = net.golden_accuracy()
    first = next((i for i, op in enumerate(net.ops) if levels.get(op.name, 0)), len(net.ops))
    start = {op.name: golden[op.name] for op in net.ops[:first]}
    allowed = None if pass_rate is None else int(np.floor(runs * (1.0 - pass_rate) + 1e-9))
    acc, failures = [], 0
    for r in range(runs):
        rng = np.random.default_rng([seed, r, 1013])
        acc.append(net.accuracy(net.forward(net.data.x_test, inject_hook(levels, spec.noise.sigma, rng, golden),
                                           start=start)))
        failures += int(base - acc[-1] > loss_limit + 1e-12)
        if allowed is not None and failures > allowed:
            break
    acc_arr = np.asarray(acc)
    losses = base - acc_arr
    return {"runs": len(acc), "pass_rate": float(np.mean(losses <= loss_limit + 1e-12)),
            "accuracy_mean": float(acc_arr.mean()), "accuracy_std": float(acc_arr.std()),
            "loss_mean": float(losses.mean()), "golden_accuracy": base, "seed": seed,
            "stopped_early": len(acc) < runs}
