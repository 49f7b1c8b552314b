"""Results of a study: trial table, Pareto front, hypervolume, figures and the printed summary.

Files written into the study directory::

    tables/trials.{csv,parquet}        every trial: number, state, feasible, reason, objectives, params,
                                       metrics, certified bounds (``bound.<objective>``, ``dominated_by``),
                                       cache hits, seconds, run directory. ``state`` is the outcome of a
                                       finished trial — ``complete`` (evaluated, feasible), ``infeasible``
                                       (proven, or over a cap), ``unknown`` (a solve stopped with neither a
                                       solution nor a proof), ``pruned`` (never evaluated: its bounds are
                                       dominated, or prove it infeasible) — else ``running``, ``waiting``,
                                       ``fail``; ``optuna_state`` is Optuna's
                                       (a proposal that repeated a finished configuration was not evaluated
                                       and is left out; counts["repeats"] says how many)
    tables/front.{csv,parquet}         the feasible non-dominated trials (all objectives at once), one
                                       per distinct configuration (the first trial that sampled it)
    tables/hypervolume.csv             hypervolume of the first k full evaluations, k = 1..n (see below)
    figures/front_<a>__<b>.png|.html   per objective pair: feasible trials, trials over a cap (×), pruned
                                       trials at their bounds (▽), the Pareto-optimal trials and the pair's
                                       own front line; infeasible and unknown trials (no values) are counted
                                       in the title
    figures/hypervolume.png|.html      hypervolume against trials

The HTML figures are plotly, with ``plotly.min.js`` written once beside them (no network needed). Axes name
each objective with its unit (known metric names and suffixes: ``_mm2`` mm², ``_j`` J, ``_s`` s, ``_w`` W)
and whether it is minimised or maximised. The hypervolume is that of the feasible trials with each
objective scaled to [0, 1] between its best and worst feasible value and the reference point at 1.1 in
every objective, so it lies between 0 and 1.1^d (1.21 for two objectives); the figures say so.

:class:`StudyResults` is also what :func:`solvermap.explore` returns: ``.trials`` and ``.front`` (pandas),
``.figure()`` (matplotlib), ``.to_dict()`` (exactly ``solvermap explore --json``), ``.to_frame()``.
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from solvermap.search.pareto import REFERENCE, hypervolume, hypervolume_history, normaliser, pareto_mask, to_minimisation
from solvermap.search.storage import REPEAT_ATTR


PARAM_ROOTS = ("target", "workload", "decisions", "solver", "choice")
#: units of the metrics pipelines report (DEVELOPERS.md), then of metric-name suffixes
UNITS = {"cycles": "cycles", "throughput": "results/cycle", "accuracy_loss": "fraction", "pbs_used": "PBs",
         "tiles_used": "tiles", "solver_seconds": "s", "trial_seconds": "s", "max_gap": "relative gap"}
SUFFIX_UNITS = (("_mm2", "mm²"), ("_seconds", "s"), ("_cycles", "cycles"), ("_bytes", "bytes"), ("_j", "J"),
                ("_s", "s"), ("_w", "W"))


def unit_of(metric: str) -> str:
    """The unit of a metric by its name (``chip_area_mm2`` → mm², ``cycles`` → cycles), or ''."""
    name = metric.rsplit(".", 1)[-1]
    if name in UNITS:
        return UNITS[name]
    return next((unit for suffix, unit in SUFFIX_UNITS if name.endswith(suffix)), "")


def axis_label(metric: str, direction: str) -> str:
    """``chip_area_mm2 (mm², minimise)``, ``cycles (minimise)``, ``throughput (results/cycle, maximise)``."""
    unit = unit_of(metric)
    sense = "minimise" if direction.startswith("min") else "maximise"
    return f"{metric} ({unit + ', ' if unit and unit != metric else ''}{sense})"


def hypervolume_label(dimensions: int) -> str:
    return (f"hypervolume (objectives scaled to [0, 1] between the best and worst feasible trial, "
            f"reference point {REFERENCE:g}; at most {REFERENCE ** dimensions:.3g})")


@dataclass
class StudyResults:
    """Everything derived from the trials of a study (and what :func:`solvermap.explore` returns).

    ``trials`` (one row per trial) and ``front`` (the feasible non-dominated trials) are pandas frames;
    ``hypervolume`` and ``history`` are scaled as the module docstring says; ``meta`` holds the study's name,
    directory and worker reports, as ``--json`` prints them."""

    trials: pd.DataFrame
    front: pd.DataFrame
    objectives: list[str]
    directions: list[str]
    hypervolume: float
    history: list[float]
    counts: dict[str, int]
    files: dict[str, str] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)  # failed trials of this process, one line each

    @property
    def directory(self) -> Path | None:
        return Path(self.meta["directory"]) if self.meta.get("directory") else None

    def to_dict(self) -> dict[str, Any]:
        """Exactly what ``solvermap explore --json`` (or ``batch --json``) prints."""
        return json.loads(json.dumps(summary_json(self, self.meta), default=str))

    def to_frame(self) -> pd.DataFrame:
        """Every trial: number, state, feasibility, objectives, parameters, metrics, times (a copy)."""
        return self.trials.copy()

    def figure(self, x: str | int = 0, y: str | int = 1) -> Any:
        """A matplotlib figure of the front over objectives ``x`` and ``y`` (labels or indices): every feasible
        trial, the infeasible ones, the pair's front line and the study's Pareto-optimal trials."""
        pick = [self.objectives.index(v) if isinstance(v, str) else int(v) for v in (x, y)]
        if len(self.objectives) == 1:
            pick = [0, 0]
        return front_figure(self, *pick)


def trials_frame(study: Any, objectives: list[str]) -> pd.DataFrame:
    """One row per trial of an Optuna study, with the solvermap user attributes unpacked."""
    rows = []
    for t in study.get_trials(deepcopy=False):
        if REPEAT_ATTR in t.user_attrs:
            continue
        attrs = {**t.user_attrs, **(t.user_attrs.get("result") or {})}
        feasible = bool(attrs.get("feasible", False)) if t.state.name == "COMPLETE" else False
        row: dict[str, Any] = {"number": t.number, "state": _state(t.state.name, attrs, feasible),
                               "optuna_state": t.state.name.lower(), "feasible": feasible,
                               "reason": attrs.get("reason") or attrs.get("error") or ""}
        for label, value in zip(objectives, t.values or [None] * len(objectives)):
            row[label] = value if value is not None and math.isfinite(value) else None
        bounds = attrs.get("bounds") or {}
        for label in objectives:
            row[f"bound.{label}"] = bounds.get(label)
        row["dominated_by"] = (attrs.get("dominated_by") or {}).get("number")
        row["bound_violations"] = "; ".join(attrs.get("bound_violations") or [])
        for key, value in t.params.items():
            row[key] = value
        for key, value in (attrs.get("metrics") or {}).items():
            if key not in row:
                row[key] = value
        cache = attrs.get("cache") or {}
        row["cache_hits"] = cache.get("hits")
        row["cache_misses"] = cache.get("misses")
        row["warm_from_neighbour"] = cache.get("warm_from_neighbour")
        row["seconds"] = attrs.get("seconds")
        row["retry_of"] = attrs.get("retry_of")
        row["run_dir"] = attrs.get("run_dir")
        row["constraints"] = json.dumps(t.constraints) if t.constraints else ""
        rows.append(row)
    frame = pd.DataFrame(rows)
    if frame.empty:
        frame = pd.DataFrame(columns=["number", "state", "feasible", "reason", *objectives])
    for column in objectives:  # no trial has finished yet (all running, waiting or failed)
        if column not in frame.columns:
            frame[column] = float("nan")
    return frame.sort_values("number").reset_index(drop=True)


def _state(optuna_state: str, attrs: dict[str, Any], feasible: bool) -> str:
    """The outcome of a finished trial (module docstring), else Optuna's state."""
    if optuna_state == "PRUNED":
        return "pruned"
    if optuna_state != "COMPLETE":
        return optuna_state.lower()
    return attrs.get("outcome") or ("complete" if feasible else "infeasible")


def _evaluated(frame: pd.DataFrame) -> pd.DataFrame:
    """Trials fully evaluated (Optuna COMPLETE: complete, infeasible or unknown)."""
    column = "optuna_state" if "optuna_state" in frame.columns else "state"
    return frame[frame[column] == "complete"]


def analyse(study: Any, objectives: list[str], directions: list[str]) -> StudyResults:
    """Front, hypervolume and counts from an Optuna study. ``counts['complete']`` counts full evaluations
    (every outcome but pruned), ``finished`` adds the pruned trials."""
    frame = trials_frame(study, objectives)
    done = _evaluated(frame)
    feasible = done.loc[done["feasible"].astype(bool)]  # (an empty object column would select columns)
    state = frame["state"]
    counts = {"trials": len(frame), "complete": len(done), "feasible": len(feasible),
              "infeasible": int((state == "infeasible").sum()), "unknown": int((state == "unknown").sum()),
              "pruned": int((state == "pruned").sum()), "finished": int(len(done) + (state == "pruned").sum()),
              "running": int((state == "running").sum()), "waiting": int((state == "waiting").sum()),
              "failed": int((state == "fail").sum()),
              "repeats": sum(1 for t in study.get_trials(deepcopy=False) if REPEAT_ATTR in t.user_attrs)}
    if len(feasible):
        points = to_minimisation(feasible[objectives].to_numpy(dtype=float), directions)
        front = feasible[pareto_mask(points)].copy()
        norm = normaliser(points)
        hv = hypervolume(norm(points), norm.ref)
        all_points = to_minimisation(done[objectives].to_numpy(dtype=float), directions)
        history = hypervolume_history(all_points, done["feasible"].tolist(), norm)
    else:
        front, hv, history = feasible.copy(), 0.0, [0.0] * len(done)
    params = [c for c in frame.columns if c.split(".", 1)[0] in PARAM_ROOTS]
    if params and len(front):
        # a configuration sampled twice is one design: keep its first trial
        front = front.sort_values("number").drop_duplicates(subset=params, keep="first")
        counts["distinct_configs"] = int(len(done.drop_duplicates(subset=params)))
    front = front.sort_values(objectives).reset_index(drop=True)
    return StudyResults(frame, front, objectives, directions, hv, history, counts)


def write_results(results: StudyResults, root: str | Path, *, html: bool = True) -> dict[str, str]:
    """Write the tables and figures listed in the module docstring; returns their paths by role."""
    root = Path(root)
    tables, figures = root / "tables", root / "figures"
    tables.mkdir(parents=True, exist_ok=True)
    figures.mkdir(parents=True, exist_ok=True)
    files: dict[str, str] = {}
    for name, frame in (("trials", results.trials), ("front", results.front)):
        frame = frame.copy()
        for column in frame.columns:
            if frame[column].dtype == object:
                frame[column] = frame[column].map(lambda v: v if v is None or isinstance(v, str) else str(v))
        frame.to_csv(tables / f"{name}.csv", index=False)
        frame.to_parquet(tables / f"{name}.parquet", index=False)
        files[f"{name}_csv"] = str(tables / f"{name}.csv")
        files[f"{name}_parquet"] = str(tables / f"{name}.parquet")
    done = _evaluated(results.trials)
    pd.DataFrame({"trials": range(1, len(results.history) + 1), "number": done["number"].tolist(),
                  "hypervolume": results.history}).to_csv(tables / "hypervolume.csv", index=False)
    files["hypervolume_csv"] = str(tables / "hypervolume.csv")
    pairs = list(itertools.combinations(range(len(results.objectives)), 2)) or [(0, 0)]
    for i, j in pairs:
        a, b = results.objectives[i], results.objectives[j]
        stem = f"front_{_slug(a)}__{_slug(b)}" if i != j else f"front_{_slug(a)}"
        files[f"{stem}_png"] = _front_png(results, i, j, figures / f"{stem}.png")
        if html:
            files[f"{stem}_html"] = _front_html(results, i, j, figures / f"{stem}.html")
    files["hypervolume_png"] = _history_png(results, figures / "hypervolume.png")
    if html:
        files["hypervolume_html"] = _history_html(results, figures / "hypervolume.html")
    results.files = files
    return files


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text).strip("_")


def _pair_front(x: np.ndarray, y: np.ndarray, dx: str, dy: str) -> np.ndarray:
    points = to_minimisation(np.column_stack([x, y]), [dx, dy])
    idx = np.where(pareto_mask(points))[0]
    return idx[np.argsort(x[idx])]


def front_figure(results: StudyResults, i: int, j: int) -> Any:
    """The front figure of objectives ``i`` and ``j`` (one objective, ``i == j``: value against trial)."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    a, b = results.objectives[i], results.objectives[j]
    done = _evaluated(results.trials)
    feasible = done.loc[done["feasible"].astype(bool)]  # (an empty object column would select columns)
    infeasible = done[~done["feasible"] & done[a].notna() & done[b].notna()]
    pruned = _pruned_at_bounds(results, a, b)
    fig = Figure(figsize=(6, 4.5), dpi=110)
    ax = fig.add_subplot()
    if i == j:
        ax.plot(feasible["number"], feasible[a], "o", color="0.6", label="feasible trials")
        ax.plot(results.front["number"], results.front[a], "o", color="C3", label="best")
        ax.set_xlabel("trial number")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel(axis_label(a, results.directions[i]))
    else:
        ax.scatter(feasible[a], feasible[b], s=18, color="0.65", label=f"feasible ({len(feasible)})")
        if len(infeasible):
            ax.scatter(infeasible[a], infeasible[b], s=24, marker="x", color="C1", label=f"over a cap ({len(infeasible)})")
        if len(pruned):
            ax.scatter(pruned[f"bound.{a}"], pruned[f"bound.{b}"], s=22, marker="v", facecolors="none", edgecolors="C2",
                       lw=0.9, label=f"pruned, at its bounds ({len(pruned)})")
        if len(feasible):
            x, y = feasible[a].to_numpy(float), feasible[b].to_numpy(float)
            order = _pair_front(x, y, results.directions[i], results.directions[j])
            ax.step(x[order], y[order], where="post", color="C0", lw=1.2, label=f"{a}–{b} front")
        ax.scatter(results.front[a], results.front[b], s=36, facecolors="none", edgecolors="C3", lw=1.5,
                   label=f"Pareto-optimal ({len(results.front)})")
        ax.set_xlabel(axis_label(a, results.directions[i]))
        ax.set_ylabel(axis_label(b, results.directions[j]))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(_title(results), fontsize=9)
    fig.tight_layout()
    return fig


def _front_png(results: StudyResults, i: int, j: int, path: Path) -> str:
    front_figure(results, i, j).savefig(path)
    return str(path)


def _pruned_at_bounds(results: StudyResults, a: str, b: str) -> pd.DataFrame:
    """Pruned trials with bounds on both objectives (those are drawn at their bounds)."""
    frame = results.trials
    if f"bound.{a}" not in frame.columns or f"bound.{b}" not in frame.columns:
        return frame.iloc[0:0]
    return frame[(frame["state"] == "pruned") & frame[f"bound.{a}"].notna() & frame[f"bound.{b}"].notna()]


def _title(results: StudyResults) -> str:
    c = results.counts
    parts = [f"{c['complete']} evaluated ({c['feasible']} feasible, {c.get('infeasible', 0)} infeasible, "
             f"{c.get('unknown', 0)} unknown), {c.get('pruned', 0)} pruned"]
    return (", ".join(parts) + f"; hypervolume {results.hypervolume:.3f} of at most "
            f"{REFERENCE ** len(results.objectives):.3g} (objectives scaled to [0, 1])")


def _hover(frame: pd.DataFrame, objectives: list[str]) -> list[str]:
    params = [c for c in frame.columns if c.split(".", 1)[0] in PARAM_ROOTS]
    out = []
    for _, row in frame.iterrows():
        parts = [f"trial {row['number']}"] + [f"{c}={row[c]}" for c in params if pd.notna(row[c])]
        parts += [f"{o}={row[o]:.4g}" for o in objectives if pd.notna(row.get(o))]
        if row.get("reason"):
            parts.append(str(row["reason"])[:120])
        out.append("<br>".join(parts))
    return out


def _write_html(fig: Any, path: Path) -> str:
    fig.write_html(str(path), include_plotlyjs="directory", full_html=True)
    return str(path)


def _front_html(results: StudyResults, i: int, j: int, path: Path) -> str:
    import plotly.graph_objects as go

    a, b = results.objectives[i], results.objectives[j]
    done = _evaluated(results.trials)
    feasible = done.loc[done["feasible"].astype(bool)]  # (an empty object column would select columns)
    infeasible = done[~done["feasible"] & done[a].notna() & done[b].notna()]
    pruned = _pruned_at_bounds(results, a, b)
    fig = go.Figure()
    if i == j:
        fig.add_trace(go.Scatter(x=feasible["number"], y=feasible[a], mode="markers", name="feasible",
                                 text=_hover(feasible, results.objectives), hoverinfo="text"))
        fig.update_layout(xaxis_title="trial number", yaxis_title=axis_label(a, results.directions[i]),
                          xaxis={"tickformat": "d", "dtick": 1 if len(feasible) <= 20 else None})
    else:
        fig.add_trace(go.Scatter(x=feasible[a], y=feasible[b], mode="markers", name="feasible",
                                 marker={"color": "#aaaaaa"}, text=_hover(feasible, results.objectives), hoverinfo="text"))
        if len(infeasible):
            fig.add_trace(go.Scatter(x=infeasible[a], y=infeasible[b], mode="markers", name="over a cap",
                                     marker={"symbol": "x", "color": "#ff7f0e"},
                                     text=_hover(infeasible, results.objectives), hoverinfo="text"))
        if len(pruned):
            fig.add_trace(go.Scatter(x=pruned[f"bound.{a}"], y=pruned[f"bound.{b}"], mode="markers",
                                     name="pruned, at its bounds", marker={"symbol": "triangle-down-open", "color": "#2ca02c"},
                                     text=_hover(pruned, results.objectives), hoverinfo="text"))
        if len(feasible):
            x, y = feasible[a].to_numpy(float), feasible[b].to_numpy(float)
            order = _pair_front(x, y, results.directions[i], results.directions[j])
            fig.add_trace(go.Scatter(x=x[order], y=y[order], mode="lines", line={"shape": "hv"}, name=f"{a}–{b} front"))
        fig.add_trace(go.Scatter(x=results.front[a], y=results.front[b], mode="markers", name="Pareto-optimal",
                                 marker={"size": 10, "color": "rgba(0,0,0,0)", "line": {"color": "#d62728", "width": 2}},
                                 text=_hover(results.front, results.objectives), hoverinfo="text"))
        fig.update_layout(xaxis_title=axis_label(a, results.directions[i]), yaxis_title=axis_label(b, results.directions[j]))
    fig.update_layout(title=_title(results), template="plotly_white")
    return _write_html(fig, path)


def history_figure(results: StudyResults) -> Any:
    """Hypervolume of the first k finished trials against k, its scale in the title."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    fig = Figure(figsize=(6.5, 3.8), dpi=110)
    ax = fig.add_subplot()
    ax.plot(range(1, len(results.history) + 1), results.history, color="C0", marker="." if len(results.history) < 40 else None)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("full evaluations (pruned trials not counted)")
    ax.set_ylabel("hypervolume")
    ax.set_ylim(bottom=0)
    ax.set_title(hypervolume_label(len(results.objectives)), fontsize=8, wrap=True)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def _history_png(results: StudyResults, path: Path) -> str:
    history_figure(results).savefig(path)
    return str(path)


def _history_html(results: StudyResults, path: Path) -> str:
    import plotly.graph_objects as go

    fig = go.Figure(go.Scatter(x=list(range(1, len(results.history) + 1)), y=results.history, mode="lines+markers"))
    fig.update_layout(xaxis_title="finished trials", yaxis_title="hypervolume", title=hypervolume_label(len(results.objectives)),
                      xaxis={"tickformat": "d"}, template="plotly_white")
    return _write_html(fig, path)


# ------------------------------------------------------------------------------- printing


def front_records(results: StudyResults, limit: int | None = None) -> list[dict[str, Any]]:
    """The front as JSON-ready rows: trial number, parameters and objective values."""
    params = [c for c in results.trials.columns if c.split(".", 1)[0] in PARAM_ROOTS]
    rows = []
    for _, row in results.front.head(limit).iterrows() if limit else results.front.iterrows():
        rows.append({"number": int(row["number"]),
                     "params": {c: _plain(row[c]) for c in params if c in row and pd.notna(row[c])},
                     "objectives": {o: _plain(row[o]) for o in results.objectives},
                     "run_dir": row.get("run_dir")})
    return rows


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    return value


def _short(param: str) -> str:
    """A column label: ``target.pcu.stages`` → ``pcu.stages``, ``workload.gda.par`` → ``gda.par``."""
    root, _, rest = param.partition(".")
    return rest if root in ("target", "workload", "choice") and rest else param


def _number(value: Any) -> str:
    value = float(value)
    if abs(value) >= 1e4 and abs(value) < 1e15:
        return f"{value:,.0f}"
    return f"{value:.4g}"


def _cell(value: Any) -> str:
    value = _plain(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def summary_json(results: StudyResults, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    return {**(extra or {}), "counts": results.counts, "objectives": dict(zip(results.objectives, results.directions)),
            "hypervolume": results.hypervolume, "front": front_records(results), "files": results.files}


def print_summary(results: StudyResults, console: Any, title: str = "Pareto front", limit: int = 20) -> None:
    """A rich table of the front (parameters and objectives) and one line of counts."""
    from rich.table import Table

    c = results.counts
    console.print(f"{c['complete']} evaluated trials ({c['feasible']} feasible, {c['infeasible']} infeasible, "
                  f"{c.get('unknown', 0)} unknown), {c.get('pruned', 0)} pruned, "
                  f"{c['failed']} failed, {c['running']} running, {c['waiting']} queued"
                  + (f", {c['distinct_configs']} distinct configurations" if "distinct_configs" in c else "") + "; "
                  f"hypervolume {results.hypervolume:.4f} of at most {REFERENCE ** len(results.objectives):.3g} "
                  "(objectives scaled to [0, 1])", highlight=False, soft_wrap=True)
    if results.front.empty:
        console.print("no feasible trial yet", highlight=False)
        return
    params = [col for col in results.trials.columns
              if col.split(".", 1)[0] in PARAM_ROOTS]
    table = Table(title=f"{title} ({len(results.front)} trials)", header_style="bold")
    table.add_column("trial", justify="right")
    for p in params:
        table.add_column(_short(p))
    for o, d in zip(results.objectives, results.directions):
        table.add_column(f"{o} {'↓' if d == 'minimize' else '↑'}", justify="right")
    for _, row in results.front.head(limit).iterrows():
        cells = [str(int(row["number"]))]
        cells += ["-" if pd.isna(row.get(p)) else _cell(row[p]) for p in params]
        cells += [_number(row[o]) for o in results.objectives]
        table.add_row(*cells)
    console.print(table)
    if len(results.front) > limit:
        console.print(f"... and {len(results.front) - limit} more in tables/front.csv", highlight=False)
