"""What a screen draws from: the latest frame and verdict plus the history behind them."""

from __future__ import annotations

from dataclasses import dataclass

from gpuwatch.model.frame import Frame
from gpuwatch.model.verdict import Verdict


@dataclass(frozen=True)
class View:
    """An immutable copy of the app's state at one render, so screens never see it change."""

    frame: Frame
    verdict: Verdict
    frames: tuple[Frame, ...]
    """Recent frames, oldest first (the Analysis window)."""
    verdicts: tuple[Verdict, ...]
    """The verdict after each of those frames."""
    source: str
    """Where the frames come from ("PID 1234", "replay of x.jsonl")."""
    ended: str | None = None
    """Why no more frames will come (replay finished, target exited), or None."""

    @property
    def watched_s(self) -> float:
        """Seconds covered by the history window (first to latest frame)."""
        return self.frame.t - self.frames[0].t if self.frames else 0.0
