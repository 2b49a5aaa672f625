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
    """Why no more frames will come (replay finished, the job ended), or None."""
    first_t: float | None = None
    """When the watch began (its first frame's time), or None for the window's first frame."""

    @property
    def watched_s(self) -> float:
        """Seconds watched: from the first frame to the latest, plus the latest frame's tick (as the
        report's covered time and the charts' span count it). Not capped at the history window."""
        start = self.first_t if self.first_t is not None else (self.frames[0].t if self.frames else self.frame.t)
        return max(0.0, self.frame.t - start) + max(0.0, self.frame.interval)
