"""Progress of a live diagnose on stderr: a redrawn bar on a terminal, a line every few seconds otherwise."""

from __future__ import annotations

from typing import TextIO

from gpuwatch.model.frame import Frame
from gpuwatch.model.verdict import STAGE_TITLES, Verdict

BAR_WIDTH = 30
LINE_EVERY_S = 10.0
"""Seconds between plain progress lines when stderr is a file or a pipe (logs stay short)."""


class Progress:
    def __init__(self, stream: TextIO, total_s: float, label: str, tty: bool | None = None) -> None:
        self.stream = stream
        self.total_s = total_s
        self.label = label
        self.tty = stream.isatty() if tty is None else tty
        self._next_line = 0.0
        self._drawn = 0

    def tick(self, frame: Frame, verdict: Verdict, elapsed_s: float) -> None:
        stage = STAGE_TITLES.get(verdict.stage, verdict.stage)
        done = min(elapsed_s, self.total_s)
        if self.tty:
            filled = int(BAR_WIDTH * done / self.total_s) if self.total_s else BAR_WIDTH
            text = (f"{self.label} [{'#' * filled}{'-' * (BAR_WIDTH - filled)}] "
                    f"{done:.0f}/{self.total_s:.0f} s  verdict: {stage}")
            self.stream.write("\r" + text.ljust(self._drawn))
            self._drawn = len(text)
        elif elapsed_s >= self._next_line:
            self.stream.write(f"{self.label}: {done:.0f}/{self.total_s:.0f} s watched, verdict so far: {stage}\n")
            self._next_line = elapsed_s + LINE_EVERY_S
        self.stream.flush()

    def done(self) -> None:
        """Clear the bar so the report (or a shell prompt) starts on a clean line."""
        if self.tty and self._drawn:
            self.stream.write("\r" + " " * self._drawn + "\r")
            self.stream.flush()
            self._drawn = 0
