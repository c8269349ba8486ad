"""A one-line progress display on stderr: stage, files done / total, rate, ETA.

Only drawn when asked for (the command line asks when stderr is a terminal
and ``-q`` is not given); otherwise every method is a no-op, so nothing --
no carriage return, no escape code -- reaches a pipe or a log file.
"""

from __future__ import annotations

import sys
import time
from typing import Optional, TextIO

REFRESH_S = 0.1


def _clock(seconds: float) -> str:
    seconds = int(max(0, seconds))
    if seconds >= 3600:
        return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"
    return f"{seconds // 60:02d}:{seconds % 60:02d}"


class Progress:
    def __init__(self, enabled: bool = False, stream: Optional[TextIO] = None):
        self.enabled = enabled
        self.stream = stream if stream is not None else sys.stderr
        self.label = ""
        self.total = 0
        self.done = 0
        self._t0 = 0.0
        self._last = 0.0
        self._width = 0

    def start(self, label: str, total: int) -> None:
        self.label, self.total, self.done = label, total, 0
        self._t0 = time.monotonic()
        self._last = 0.0
        self._draw(force=True)

    def advance(self, n: int = 1) -> None:
        self.done += n
        self._draw(force=self.done >= self.total)

    def _draw(self, force: bool = False) -> None:
        if not self.enabled or self.total <= 0:
            return
        now = time.monotonic()
        if not force and now - self._last < REFRESH_S:
            return
        self._last = now
        elapsed = now - self._t0
        rate = self.done / elapsed if elapsed > 0 else 0.0
        pct = 100.0 * self.done / self.total
        width = 24
        filled = int(width * self.done / self.total)
        bar = "#" * filled + "-" * (width - filled)
        eta = _clock((self.total - self.done) / rate) if rate > 0 else "--:--"
        line = (f"{self.label:<10} [{bar}] {self.done}/{self.total} files {pct:3.0f}%  "
                f"{rate:6.1f} files/s  ETA {eta}")
        self._width = max(self._width, len(line))
        try:
            self.stream.write("\r" + line.ljust(self._width))
            self.stream.flush()
        except (OSError, ValueError):
            self.enabled = False

    def close(self) -> None:
        if not self.enabled or not self._width:
            return
        try:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
        except (OSError, ValueError):
            pass
        self._width = 0
