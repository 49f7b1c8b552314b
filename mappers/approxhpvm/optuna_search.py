"""Outer-search baseline: Optuna over the per-op error levels (the seed used OpenTuner, 5000 iterations, L1060).

The search space is the one the budget models use: one level E ∈ 1..15 per op. It is minimised with Optuna's
TPE sampler, seeded. Every trial evaluates one configuration as the seed's tuner did (L1078–1084). A single
injection run screens it: a configuration whose loss exceeds the limit is rejected. Otherwise it gets the same
acceptance test as the solver's candidates (:func:`accept_twice`: two batches of ``mc_runs`` runs, each with pass
rate ≥ 95 %, pooled ≥ ``accept_rate``). ``objective(levels)`` scores an accepted configuration. The default is the cost function of the
problem; the study passes the hardware energy of the knob mapping. Rejected trials are reported to Optuna as
constraint violations (screen loss − limit, or missing pass rate), Optuna's own constrained-TPE mechanism
(``constrained=False``: one flat penalty instead, which leaves TPE blind to the accuracy boundary).

Evaluation budget. ``evaluations`` is the number of *distinct* configurations whose accuracy is measured (the
unit the solver path is counted in: each profiled single-op configuration, each candidate). TPE may propose a
configuration it has already seen; such a trial measures nothing and is not counted (its stored score is told
again), so the search runs until ``evaluations`` distinct configurations are measured or ``max_trials`` trials
have been asked. ``runs`` counts the injected forward runs spent (screens plus Monte Carlo).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from solvermap.formulations.problems.accuracy_budget import (
    BudgetConfiguration,
    BudgetProblem,
    accept_twice,
    decision_for,
    modelled_loss,
    total_cost,
)


@dataclass
class SearchResult:
    best: dict[str, int] | None
    best_value: float
    evaluations: int  # distinct configurations measured
    passed: int  # configurations that passed the acceptance test
    seconds: float
    history: list[tuple[int, float]]  # (evaluations so far, best value so far)
    trials: int = 0  # trials asked (≥ evaluations: repeated proposals are not re-measured)
    accepted: list[tuple[float, dict[str, int], dict]] = field(default_factory=list)  # (value, levels, mc) by value


def search(problem: BudgetProblem, *, evaluations: int, screen: Callable[[Mapping[str, int]], float],
           objective: Callable[[Mapping[str, int]], float] | None = None, seed: int = 0,
           max_trials: int | None = None, constrained: bool = True) -> SearchResult:
    """``constrained=False`` tells every rejected trial one flat penalty (1e30) and no violation."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    score = objective or (lambda levels: total_cost(problem, levels))
    sampler = optuna.samplers.TPESampler(seed=seed)
    study = optuna.create_study(direction="minimize", sampler=sampler)
    max_trials = max_trials if max_trials is not None else 20 * max(evaluations, 1)
    best, best_value, history = None, float("inf"), []
    verified: dict = {}
    accepted: list[tuple[float, dict[str, int], dict]] = []
    trials = 0
    start = time.perf_counter()
    while len(verified) < evaluations and trials < max_trials:
        trial = study.ask()
        trials += 1
        levels = {op: trial.suggest_int(op, 1, len(problem.sigma)) for op in problem.ops}
        key = tuple(sorted(levels.items()))
        if key in verified:
            value, violation = verified[key]
        else:
            value = float("inf")
            loss = screen(levels)
            violation = loss - problem.loss_limit
            if violation <= 0:
                mc = accept_twice(problem, levels)
                if mc["accepted"]:
                    violation = 0.0
                else:
                    pooled = mc["pooled_pass_rate"] if mc["pooled_pass_rate"] is not None else mc["pass_rate"]
                    violation = max(problem.accept_rate - pooled, 1e-6)
                if violation <= 0:
                    value = float(score(levels))
                    accepted.append((value, levels, mc))
            verified[key] = value, violation
            history.append((len(verified), min(best_value, value)))
        # Optuna's constrained TPE: feasible trials are ranked by value, infeasible ones by their violation, so
        # the sampler learns where the accuracy boundary lies instead of seeing one flat penalty.
        if constrained:
            trial.set_constraint("accuracy", violation)
        study.tell(trial, value if value != float("inf") else 1e30)
        if value < best_value:
            best, best_value = levels, value
    accepted.sort(key=lambda a: a[0])
    return SearchResult(best, best_value, len(verified), len(accepted), time.perf_counter() - start, history, trials,
                        accepted)


def optuna_baseline(problem: BudgetProblem, evaluations: int, screen: Callable[[Mapping[str, int]], float]):
    """A ``run_decision`` baseline: the best accepted configuration Optuna finds in ``evaluations`` evaluations."""
    result = search(problem, evaluations=evaluations, screen=screen, seed=problem.seed)
    if result.best is None:
        return None
    value, levels, mc = result.accepted[0]
    c = BudgetConfiguration(levels, problem.cost_function, total_cost(problem, levels),
                            modelled_loss(problem, levels), mc["pass_rate"], mc["runs"],
                            mc.get("accuracy_mean", float("nan")), mc.get("accuracy_std", float("nan")))
    return decision_for(problem, c, evaluations=result.evaluations)
