"""The search space of a study: sampling through an Optuna trial, enumeration, and distances.

Parameters are visited in file order; a parameter with a ``when`` condition is sampled only when the
earlier parameters it names took one of the listed values (so ``target.network.vcs`` exists only for
dynamic or hybrid networks). :func:`enumerate_space` lists every distinct configuration of a finite
space (ints with their step, categoricals, floats with a step) respecting the conditions: it is the
grid sampler's sweep and the exhaustive front of ``studies/dse_methods``.

A configuration is a plain ``dict`` from parameter name to value; :func:`split` turns it into the
target overrides, workload parameters, decision options and solver settings a trial applies.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping
from typing import Any

from solvermap.errors import InputError
from solvermap.search.study_file import CategoricalParam, FloatParam, IntParam, StudyFile

MAX_ENUMERATION = 200_000


def suggest(space: Mapping[str, Any], trial: Any) -> dict[str, Any]:
    """Sample one configuration through ``trial.suggest_*`` (conditions decide which names exist)."""
    chosen: dict[str, Any] = {}
    for name, param in space.items():
        if not param.active(chosen):
            continue
        if isinstance(param, IntParam):
            chosen[name] = trial.suggest_int(name, param.low, param.high, step=param.step, log=param.log)
        elif isinstance(param, FloatParam):
            chosen[name] = trial.suggest_float(name, param.low, param.high, step=param.step, log=param.log)
        else:
            chosen[name] = trial.suggest_categorical(name, list(param.choices))
    return chosen


def values_of(name: str, param: Any) -> list[Any]:
    """The finite list of values a parameter takes in an enumeration."""
    if isinstance(param, CategoricalParam):
        return list(param.choices)
    if isinstance(param, IntParam):
        return list(range(param.low, param.high + 1, param.step))
    if param.step is None:
        raise InputError("", f"space.{name}", "a float without `step` cannot be enumerated (grid sampler); give a step")
    count = int(math.floor((param.high - param.low) / param.step + 1e-9)) + 1
    return [round(param.low + k * param.step, 12) for k in range(count)]


def enumerate_space(space: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every distinct configuration of a finite space, in a fixed order (file order, values ascending)."""
    out: list[dict[str, Any]] = []

    def walk(names: list[str], chosen: dict[str, Any]) -> None:
        if len(out) > MAX_ENUMERATION:
            raise InputError("", "space", f"more than {MAX_ENUMERATION} configurations; too large to enumerate")
        if not names:
            out.append(dict(chosen))
            return
        name, rest = names[0], names[1:]
        param = space[name]
        if not param.active(chosen):
            walk(rest, chosen)
            return
        for value in values_of(name, param):
            chosen[name] = value
            walk(rest, chosen)
            del chosen[name]

    walk(list(space), {})
    return out


def space_size(space: Mapping[str, Any]) -> int:
    return len(enumerate_space(space))


def distance(space: Mapping[str, Any], a: Mapping[str, Any], b: Mapping[str, Any]) -> float:
    """L1 distance between configurations with every parameter scaled to [0, 1] (log where declared);
    a categorical contributes 0 or 1, a parameter active in only one of them contributes 1."""
    total = 0.0
    for name, param in space.items():
        if name not in a and name not in b:
            continue
        if name not in a or name not in b:
            total += 1.0
            continue
        x, y = a[name], b[name]
        if isinstance(param, CategoricalParam):
            total += 0.0 if x == y else 1.0
            continue
        low, high = float(param.low), float(param.high)
        if param.log:
            x, y, low, high = math.log(x), math.log(y), math.log(low), math.log(high)
        width = high - low
        total += abs(float(x) - float(y)) / width if width > 0 else 0.0
    return total


def split(study: StudyFile, config: Mapping[str, Any], workload: str, workload_params: Mapping[str, Any]) -> dict[str, Any]:
    """What a configuration changes for one workload: target overrides, workload params, decisions, solver
    (a categorical's ``sets`` first, then the parameters themselves)."""
    target = dict(study.target.overrides)
    params: dict[str, Any] = {}
    decisions: dict[str, dict[str, Any]] = {k: dict(v) for k, v in study.decisions.items()}
    solver: dict[str, Any] = {}
    settings: list[tuple[str, Any]] = []
    for name, value in config.items():
        param = study.space.get(name)
        if isinstance(param, CategoricalParam):
            settings += list(param.implied(value).items())
        if not name.startswith("choice."):
            settings.append((name, value))
    for name, value in settings:
        root, rest = name.split(".", 1)
        if root == "target":
            target[rest] = value
        elif root == "workload":
            head, _, tail = rest.partition(".")
            if tail:
                if head == workload:
                    params[tail] = value
            elif rest in workload_params:
                params[rest] = value
        elif root == "decisions":
            decision, _, option = rest.partition(".")
            node = decisions.setdefault(decision, {})
            parts = option.split(".")
            for part in parts[:-1]:
                node = node.setdefault(part, {})
            node[parts[-1]] = value
        elif root == "solver":
            solver[rest] = value
    return {"target": target, "workload": params, "decisions": decisions, "solver": solver}


def iter_pairs(names: list[str]) -> Iterator[tuple[str, str]]:
    return itertools.combinations(names, 2)
