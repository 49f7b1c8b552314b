"""Layer screening for the knobs step: after a mapping fails the end-to-end Monte Carlo test, find its layers that
fail on their own (option ``decisions.knobs.layer_screen``; off by default).

A mapping meets its per-op budgets, which come from the injection model; when PROMISE's own noise disagrees, the
end-to-end test fails it (seed L1163) and the knobs step cuts that mapping and every mapping at least as inaccurate
on every op. When one layer is the culprit, that cut is weak: the MILP keeps the layer's setting and tries the other
layers' settings one by one. The screen runs each approximated layer of the failed mapping alone (every other op
in FP32) through the same Monte Carlo test; a layer that fails alone gives the cut "this layer at this setting or
less accurate, anything elsewhere" (the failed mapping with every other op at FP32, in the same dominance form as
the mapping cuts). The cut is a heuristic, not a proof: a setting that fails alone could pass beside others only by
luck of cancelling errors. It never ships anything unvalidated; the mapping finally chosen is still tested whole.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from solvermap.hardware.approxhpvm.soc_sim import monte_carlo
from solvermap.ir.workloads.approxhpvm_tensor_ops import TensorNetwork


def layer_screen(net: TensorNetwork, spec, *, runs: int, loss_limit: float, seed: int,
                 pass_rate: float) -> Callable[[Mapping[str, str]], list[dict[str, str]]]:
    """``screen(knobs)`` → the cuts of the layers of ``knobs`` that fail the Monte Carlo test alone (cached)."""
    tested: dict[tuple, bool] = {}

    def screen(knobs: Mapping[str, str]) -> list[dict[str, str]]:
        cuts = []
        for layer in net.layers:
            ops = {op.name for op in net.layer_ops(layer)}
            if all(knobs[o] == "FP32" for o in ops):
                continue
            alone = {o: knobs[o] if o in ops else "FP32" for o in knobs}
            key = tuple(sorted(alone.items()))
            if key not in tested:
                mc = monte_carlo(net, spec, alone, runs=runs, loss_limit=loss_limit, seed=seed)
                tested[key] = mc.pass_rate >= pass_rate
            if not tested[key]:
                cuts.append(alone)
        return cuts

    screen.tested = tested  # what was screened, for the record
    return screen
