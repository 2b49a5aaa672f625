"""Frames in, verdicts out: the bounded history window that the diagnosis judges."""

from __future__ import annotations

from collections import deque

from gpuwatch.diagnosis import READ_S, DiagnosisState, diagnose
from gpuwatch.model.frame import Frame
from gpuwatch.model.verdict import Verdict

HISTORY_FRAMES = 900
"""Frames kept for plots and drill-downs: 15 minutes at the default 1 s tick, then the oldest go."""


class Analysis:
    """Holds the recent frames and the verdict state; call :meth:`update` once per frame."""

    def __init__(self, history: int = HISTORY_FRAMES, rank: int | None = None) -> None:
        self.frames: deque[Frame] = deque(maxlen=history)
        self.verdicts: deque[Verdict] = deque(maxlen=history)
        self.state: DiagnosisState | None = None
        self.rank = rank
        self.first_t: float | None = None
        """The first frame's time: the watch began there, however many frames the window has let go."""
        self._added = 0
        """Frames added so far."""
        self._went_back: int | None = None
        """The number (0 first) of the last frame added whose time is not at or after the one
        before it (a replay seeking back, a NaN): the history is in time order once it is the oldest."""

    def update(self, frame: Frame) -> Verdict:
        if self.first_t is None:
            self.first_t = frame.t
        if self.frames and not frame.t >= self.frames[-1].t:
            self._went_back = self._added
        self.frames.append(frame)
        self._added += 1
        verdict, self.state = diagnose(self._read(), self.state, rank=self.rank)
        self.verdicts.append(verdict)
        return verdict

    def _read(self) -> list[Frame]:
        """The frames the diagnosis reads. In a history in time order, the last READ_S seconds
        (diagnosis.READ_S: every window it reads is cut from those): a full history is 900 frames,
        and each of the diagnosis's three cuts through all of them cost ~25 us (CPU VM). Else all of
        them, each window then cut from the whole history as before."""
        if self._went_back is not None and self._went_back > self._added - len(self.frames):
            return list(self.frames)
        cut = self.frames[-1].t - READ_S
        out = []
        for f in reversed(self.frames):
            if f.t <= cut:  # in time order, so are all before it: outside every window
                break
            out.append(f)
        out.reverse()
        return out or [self.frames[-1]]

    @property
    def latest(self) -> Verdict | None:
        return self.verdicts[-1] if self.verdicts else None
