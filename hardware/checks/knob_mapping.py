"""Independent checker of a knob mapping (seed 000 L1102–1136, L1248).

Rules (stable names):
  assignment      every op has exactly one knob and the knob is an allowed one
  error-budget    the op's measured L1e and L2e under its knob are within its budgets (L1123)
  promise-task    a layer on PROMISE has all its ops on PROMISE with one swing (L1136)
  promise-eligibility  PROMISE only on layers matching f(X·W+B) / f(X⊛W+B) with N ≥ 64 (L1133, L1248)
  group-precision the ops of one fused GPU kernel share a precision
  failed-mapping  the mapping is not at least as inaccurate on every op as a mapping that already failed the
                  end-to-end Monte Carlo test (``problem.failed``)
  loss-budget     joint budget variant: the modelled loss Σ loss(op, knob) is within ``problem.loss_budget``
  excluded        joint budget variant: the mapping is not inside an excluded combination (``problem.excluded``)
"""

from __future__ import annotations

from solvermap.formulations.problems.knob_mapping import PROMISE_KNOBS, KnobDecision, KnobProblem
from solvermap.results import CheckReport


def check(problem: KnobProblem, decision: KnobDecision) -> CheckReport:
    report = CheckReport()
    knobs = decision.knobs
    for o in problem.ops:
        knob = knobs.get(o)
        if knob is None:
            report.add("assignment", f"op {o!r} has no knob")
        elif knob not in problem.allowed:
            report.add("assignment", f"op {o!r} has knob {knob!r}, not among {', '.join(problem.allowed)}")
    for o in knobs:
        if o not in problem.layer_of:
            report.add("assignment", f"unknown op {o!r}")
    if not report.ok:
        return report
    for o in problem.ops:
        knob = knobs[o]
        if knob not in problem.errors[o]:
            report.add("promise-eligibility", f"op {o!r} cannot run with {knob}")
            continue
        l1, l2 = problem.errors[o][knob]
        if l1 > problem.l1_budget[o] + 1e-12 or l2 > problem.l2_budget[o] + 1e-12:
            report.add("error-budget", f"op {o!r} with {knob}: L1e {l1:.4f} / L2e {l2:.4f} exceed budgets "
                                       f"{problem.l1_budget[o]:.4f} / {problem.l2_budget[o]:.4f}")
    for layer in problem.layers:
        ops = problem.layer_ops(layer)
        on_promise = [o for o in ops if knobs[o] in PROMISE_KNOBS]
        if not on_promise:
            continue
        if not problem.promise_eligible.get(layer, False):
            report.add("promise-eligibility", f"layer {layer!r} cannot run on PROMISE")
        if len(on_promise) != len(ops) or len({knobs[o] for o in ops}) != 1:
            report.add("promise-task", f"layer {layer!r} mixes {sorted({knobs[o] for o in ops})}; a PROMISE task "
                                       "needs all its ops at one swing")
    for g in problem.gpu_groups:
        gpu = {knobs[o] for o in g if knobs[o] not in PROMISE_KNOBS}
        if len(gpu) > 1:
            report.add("group-precision", f"fused GPU kernel {list(g)} mixes {sorted(gpu)}")
    failure = problem.dominating_failure(knobs)
    if failure is not None:
        report.add("failed-mapping", "the mapping is at least as inaccurate on every op as one that failed the "
                                     f"Monte Carlo test ({'-'.join(failure[o] for o in problem.ops)})")
    if problem.loss_budget is not None and problem.loss is not None:
        if any(knobs[o] not in problem.loss[o] for o in problem.ops):
            report.add("loss-budget", "a knob has no modelled loss (no error level admits it)")
        elif problem.modelled_loss(knobs) > problem.loss_budget + 1e-9:
            report.add("loss-budget", f"modelled loss {problem.modelled_loss(knobs):.4f} exceeds the budget "
                                      f"{problem.loss_budget:.4f}")
    combo = problem.excluding(knobs)
    if combo is not None:
        report.add("excluded", f"the mapping lies in excluded combination {problem.excluded.index(combo)}")
    return report
