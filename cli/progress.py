"""A one-line spinner on stderr while a command waits, only when a person watches.

It shows only when stdout is a terminal (a pipe or a file gets exactly the
answer, nothing else), starts after a short delay (a quick answer shows no
flicker), and erases its line before the answer is printed.
"""

from __future__ import annotations

import sys
import threading
import time
from types import TracebackType
from typing import TextIO

_FRAMES = "|/-\\"
_CLEAR = "\r\x1b[K"


def on_terminal(stream: TextIO | None = None) -> bool:
    stream = stream or sys.stdout
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Progress:
    """``with Progress("backfilling"):`` around a wait; ``update()`` changes the text."""

    def __init__(
        self,
        text: str,
        *,
        enabled: bool | None = None,
        stream: TextIO | None = None,
        delay_s: float = 0.3,
        every_s: float = 0.1,
    ) -> None:
        self.text = text
        self.enabled = on_terminal() if enabled is None else enabled
        self.stream = stream or sys.stderr
        self.delay_s = delay_s
        self.every_s = every_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._drawn = False
        self._lock = threading.Lock()

    def update(self, text: str) -> None:
        self.text = text

    def __enter__(self) -> Progress:
        if self.enabled:
            self._thread = threading.Thread(target=self._spin, daemon=True)
            self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        with self._lock:
            if self._drawn:
                self.stream.write(_CLEAR)
                self.stream.flush()
                self._drawn = False

    def _spin(self) -> None:
        started = time.monotonic()
        if self._stop.wait(self.delay_s):
            return
        frame = 0
        while True:
            elapsed = time.monotonic() - started
            with self._lock:
                self.stream.write(
                    f"{_CLEAR}{_FRAMES[frame % len(_FRAMES)]} {self.text} ({elapsed:.0f}s)"
                )
                self.stream.flush()
                self._drawn = True
            frame += 1
            if self._stop.wait(self.every_s):
                return
