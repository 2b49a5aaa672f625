"""The last frames a front end keeps, and the recent ones cut from them without a walk through all.

A watch keeps 900 frames (15 minutes at 1 s) and reads windows of seconds from them each tick: the
diagnosis up to a minute (diagnosis.READ_S), the straggler rule 10 s a rank. Cutting a window by
time walks every frame kept (window.recent). While the frames' times never go back (a live watch,
a replay played on), the frames of the last ``seconds`` are the newest ones, found from the end;
a window cut by time from them is the one cut from all. A replay that seeks back (or a frame
without a time) puts them out of order until that frame is the oldest kept; meanwhile all are read.
"""

from __future__ import annotations

from collections import deque

from gpuwatch.model.frame import Frame


class History:
    """Up to ``size`` frames, oldest first (``frames``), and whether their times are in order."""

    def __init__(self, size: int) -> None:
        self.frames: deque[Frame] = deque(maxlen=size)
        self._added = 0
        """Frames added so far."""
        self._went_back: int | None = None
        """The number (0 first) of the last frame added whose time is not at or after the one
        before it: the frames are in time order once it is the oldest kept."""

    def append(self, frame: Frame) -> None:
        if self.frames and not frame.t >= self.frames[-1].t:
            self._went_back = self._added
        self.frames.append(frame)
        self._added += 1

    @property
    def in_order(self) -> bool:
        return self._went_back is None or self._went_back <= self._added - len(self.frames)

    def last(self, seconds: float) -> list[Frame]:
        """Frames that hold every window of up to ``seconds`` back from the newest, as
        window.recent cuts it: in time order, the frames after ``newest - seconds`` (the newest
        alone where none is); out of order, all of them."""
        if not self.frames:
            return []
        if not self.in_order:
            return list(self.frames)
        cut = self.frames[-1].t - seconds
        out = []
        for f in reversed(self.frames):
            if f.t <= cut:  # in time order, so are all before it
                break
            out.append(f)
        out.reverse()
        return out or [self.frames[-1]]
