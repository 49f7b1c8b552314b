"""Study figures a reader understands: units and minimise/maximise on the axes, the hypervolume's scale said,
integer trial axes; StudyResults as the API returns it."""

from __future__ import annotations

import pandas as pd

from solvermap.search.report import analyse, axis_label, front_figure, history_figure, unit_of


class Trial:
    def __init__(self, number, values, params):
        self.number, self.values, self.params = number, values, params
        self.user_attrs = {"result": {"feasible": True}}
        self.constraints = None
        self.state = type("State", (), {"name": "COMPLETE"})()


class Study:
    def __init__(self, trials):
        self.trials = trials

    def get_trials(self, deepcopy=False):
        return self.trials


def results(objectives=("cycles", "chip_area_mm2"), directions=("minimize", "minimize")):
    points = [(100.0, 4.0), (80.0, 6.0), (120.0, 5.0), (60.0, 9.0)]
    trials = [Trial(k, list(p[: len(objectives)]), {"target.pcu.stages": 4 + k}) for k, p in enumerate(points)]
    return analyse(Study(trials), list(objectives), list(directions))


def test_units_come_from_the_metric_names():
    assert [unit_of(m) for m in ("cycles", "chip_area_mm2", "energy_j", "latency_s", "power_w", "throughput")] == [
        "cycles", "mm²", "J", "s", "W", "results/cycle"]


def test_axis_labels_spell_out_the_unit_and_the_direction():
    assert axis_label("chip_area_mm2", "minimize") == "chip_area_mm2 (mm², minimise)"
    assert axis_label("cycles", "minimize") == "cycles (minimise)"
    assert axis_label("throughput", "maximize") == "throughput (results/cycle, maximise)"


def test_the_front_figure_labels_both_axes_with_unit_and_direction():
    figure = results().figure("cycles", "chip_area_mm2")
    ax = figure.axes[0]
    assert ax.get_xlabel() == "cycles (minimise)" and ax.get_ylabel() == "chip_area_mm2 (mm², minimise)"
    assert "(min)" not in ax.get_xlabel() + ax.get_ylabel()


def test_the_hypervolume_figure_says_what_it_is_scaled_to_and_its_largest_value():
    r = results()
    figure = history_figure(r)
    ax = figure.axes[0]
    assert "scaled to [0, 1]" in ax.get_title() and "at most 1.21" in ax.get_title()
    assert max(r.history) <= 1.21


def test_trial_axes_have_integer_ticks():
    single = results(("cycles",), ("minimize",))
    for figure in (front_figure(single, 0, 0), history_figure(results())):
        ax = figure.axes[0]
        ax.set_xlim(0.5, 3.5)
        ticks = [t for t in ax.get_xticks() if 0.5 <= t <= 3.5]
        assert ticks and all(float(t).is_integer() for t in ticks)


def test_study_results_to_dict_and_to_frame():
    r = results()
    r.meta = {"study": "toy", "directory": "runs/x"}
    data = r.to_dict()
    assert data["study"] == "toy" and data["counts"]["complete"] == 4 and len(data["front"]) == len(r.front)
    assert isinstance(r.to_frame(), pd.DataFrame) and len(r.to_frame()) == 4
