"""Frames in, verdicts out: the bounded history window that the diagnosis judges."""

from __future__ import annotations

from collections import deque

from gpuwatch.diagnosis import READ_S, DiagnosisState, diagnose
from gpuwatch.history import History
from gpuwatch.model.frame import Frame
from gpuwatch.model.verdict import Verdict

HISTORY_FRAMES = 900
"""Frames kept for plots and drill-downs: 15 minutes at the default 1 s tick, then the oldest go."""


class Analysis:
    """Holds the recent frames and the verdict state; call :meth:`update` once per frame."""

    def __init__(self, history: int = HISTORY_FRAMES, rank: int | None = None) -> None:
        self._history = History(history)
        self.frames: deque[Frame] = self._history.frames
        self.verdicts: deque[Verdict] = deque(maxlen=history)
        self.state: DiagnosisState | None = None
        self.rank = rank
        self.first_t: float | None = None
        """The first frame's time: the watch began there, however many frames the window has let go."""

    def update(self, frame: Frame) -> Verdict:
        if self.first_t is None:
            self.first_t = frame.t
        self._history.append(frame)
        # The last READ_S seconds: every window the diagnosis reads is cut from those (history.py).
        verdict, self.state = diagnose(self._history.last(READ_S), self.state, rank=self.rank)
        self.verdicts.append(verdict)
        return verdict

    @property
    def latest(self) -> Verdict | None:
        return self.verdicts[-1] if self.verdicts else None
