"""Progress messages: stdlib logging to each run's log.txt and, through rich's handler, to the console."""

from __future__ import annotations

import io
import logging
import re

from rich.console import Console

from solvermap.runs import LOG, STATUS_AFTER_S, ProgressHandler, RunDirectory, console_logging, elapsed_text


def test_a_progress_message_is_one_time_stamped_line_of_log_txt(tmp_path):
    run = RunDirectory(tmp_path)
    with run.logging():
        LOG.info("partition: solving with cpsat")
    assert re.fullmatch(r"\d\d:\d\d:\d\d partition: solving with cpsat\n", (tmp_path / "log.txt").read_text())


def test_a_run_log_takes_no_message_once_closed(tmp_path):
    handlers = list(LOG.handlers)
    with RunDirectory(tmp_path).logging():
        LOG.info("inside")
    LOG.info("after")
    assert "after" not in (tmp_path / "log.txt").read_text() and LOG.handlers == handlers


def test_a_run_without_messages_writes_no_log_txt(tmp_path):
    with RunDirectory(tmp_path).logging():
        pass
    assert not (tmp_path / "log.txt").exists()


def test_the_console_shows_each_message_as_a_dim_dot_line_with_brackets_kept():
    out = io.StringIO()
    with console_logging(Console(file=out, force_terminal=True, width=80)):
        LOG.info("merge: [7 bins] kept")
    assert out.getvalue() == "\x1b[2m· merge: [7 bins] kept\x1b[0m\n"


def test_messages_below_info_reach_neither_handler(tmp_path):
    out = io.StringIO()
    with RunDirectory(tmp_path).logging(), console_logging(Console(file=out, width=80)):
        LOG.debug("noise")
    assert out.getvalue() == "" and not (tmp_path / "log.txt").exists()
    assert LOG.level == logging.NOTSET


class FakeClock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def handler_on(out: io.StringIO, clock: FakeClock, **kwargs) -> ProgressHandler:
    handler = ProgressHandler(Console(file=out, force_terminal=True, width=100), clock=clock, **kwargs)
    handler.setLevel(logging.INFO)
    return handler


def test_the_live_status_shows_the_running_phase_and_its_elapsed_time():
    clock, out = FakeClock(), io.StringIO()
    handler = handler_on(out, clock)
    handler.handle(LOG.makeRecord("solvermap", logging.INFO, __file__, 1, "budget: Monte Carlo test of candidate 3 "
                                  "(100 noisy runs)", (), None))
    clock.now += 87
    frame = io.StringIO()
    Console(file=frame, force_terminal=True, width=100).print(handler)
    text = frame.getvalue()
    assert "budget: Monte Carlo test of candidate 3 (100 noisy runs)" in text and "1 min 27 s" in text


def test_the_live_status_shows_the_steps_elapsed_time_across_its_phases():
    clock, out = FakeClock(), io.StringIO()
    handler = handler_on(out, clock)
    for message in ("budget: baselines uniform-level", "budget: Monte Carlo test 7 of a candidate (100 noisy runs)"):
        handler.handle(LOG.makeRecord("solvermap", logging.INFO, __file__, 1, message, (), None))
        clock.now += 40
    assert handler.status().plain == ("budget: Monte Carlo test 7 of a candidate (100 noisy runs)  40 s  "
                                      "· budget step 1 min 20 s")


def test_a_phase_younger_than_two_seconds_shows_no_status():
    clock, out = FakeClock(), io.StringIO()
    handler = handler_on(out, clock)
    handler.handle(LOG.makeRecord("solvermap", logging.INFO, __file__, 1, "merge: solving", (), None))
    clock.now += STATUS_AFTER_S - 0.5
    assert handler.status() is None
    clock.now += 1.0
    assert "merge: solving" in handler.status().plain


def test_on_a_pipe_a_long_phase_gets_one_line_per_heartbeat():
    clock, out = FakeClock(), io.StringIO()
    handler = ProgressHandler(Console(file=out, width=100), clock=clock, heartbeat_s=60)
    handler.setLevel(logging.INFO)
    handler.handle(LOG.makeRecord("solvermap", logging.INFO, __file__, 1, "budget: solving", (), None))
    for seconds in (30, 59, 61, 62, 119, 121):
        clock.now = 1000.0 + seconds
        handler.beat()
    lines = out.getvalue().splitlines()
    assert lines == ["· budget: solving", "· budget: solving (still running after 1 min 1 s)",
                     "· budget: solving (still running after 2 min 1 s)"]


def test_the_live_console_still_prints_every_message():
    out = io.StringIO()
    with console_logging(Console(file=out, force_terminal=True, width=80), live=True):
        LOG.info("partition: solving")
    assert "· partition: solving" in out.getvalue()


def test_elapsed_text_reads_as_seconds_minutes_hours():
    assert [elapsed_text(s) for s in (7.9, 87, 7380)] == ["7 s", "1 min 27 s", "2 h 03 min"]
