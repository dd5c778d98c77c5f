"""The spinner a slow command shows on a terminal, and never in a pipe."""

from __future__ import annotations

import io
import threading

from cli.progress import Progress, on_terminal


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_pipe_gets_no_progress() -> None:
    assert on_terminal(io.StringIO()) is False
    stream = io.StringIO()
    with Progress("backfilling", enabled=on_terminal(io.StringIO()), stream=stream, delay_s=0):
        threading.Event().wait(0.05)
    assert stream.getvalue() == ""


def test_a_terminal_sees_the_text_and_the_line_is_erased_after() -> None:
    assert on_terminal(Tty()) is True
    stream = Tty()
    with Progress("backfilling", enabled=True, stream=stream, delay_s=0, every_s=0.01) as p:
        threading.Event().wait(0.05)
        p.update("reading runs")
        threading.Event().wait(0.05)
    text = stream.getvalue()
    assert "backfilling (0s)" in text
    assert "reading runs" in text
    assert text.endswith("\r\x1b[K")


def test_a_quick_answer_shows_nothing_even_on_a_terminal() -> None:
    stream = Tty()
    with Progress("reading", enabled=True, stream=stream, delay_s=5):
        pass
    assert stream.getvalue() == ""
