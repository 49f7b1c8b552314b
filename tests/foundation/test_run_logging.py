"""Progress messages: stdlib logging to each run's log.txt and, through rich's handler, to the console."""

from __future__ import annotations

import io
import logging
import re

from rich.console import Console

from solvermap.runs import LOG, RunDirectory, console_logging


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
