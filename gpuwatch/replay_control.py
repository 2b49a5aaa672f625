"""Playback of a replay as a front end steers it: pause, step, seek and speed.

The replay (``replay.replay_frames``) asks :meth:`ReplayControl.wait` before each frame; keys
change the control and wake that wait, so a pause or a new speed takes effect at once, not after
the gap to the next frame. A seek forward replays the frames in between without waiting (the
verdict is stateful: it must see them); a seek backward starts the recording again from the top
and fast-forwards to the new position, after ``on_restart`` told the consumer to forget its state.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

SPEEDS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0)
"""The speeds the speed keys step through (1 is the recording's own pace)."""


class ReplayControl:
    """What the user asked of the replay; read by the replay before each frame."""

    def __init__(self, speed: float = 1.0) -> None:
        self.speed = speed
        """Playback speed (0: as fast as possible)."""
        self.paused = False
        self.position = 0.0
        """Seconds from the recording's first frame to the frame last given out."""
        self.frames = 0
        """Frames given out since the last start from the top."""
        self.on_restart: Callable[[], None] | None = None
        """Called before the first frame of a pass that starts again from the top (a backward seek)."""
        self.on_change: Callable[[], None] | None = None
        """Called after each change the user made (pause, speed, seek, step), to redraw state."""
        self._steps = 0
        self._seek_to: float | None = None
        self._wake = asyncio.Event()

    # ---- what the keys call ----

    def toggle_pause(self) -> None:
        self.paused = not self.paused
        self._changed()

    def step(self) -> None:
        """One frame forward, then hold (pauses a running replay)."""
        self.paused = True
        self._steps += 1
        self._changed()

    def seek(self, delta_s: float) -> None:
        """Move by ``delta_s`` seconds of the recording (negative: back)."""
        base = self._seek_to if self._seek_to is not None else self.position
        self._seek_to = max(0.0, base + delta_s)
        self._changed()

    def faster(self, steps: int = 1) -> None:
        """Next speed up (``steps`` > 0) or down (< 0) in :data:`SPEEDS`."""
        now = min(range(len(SPEEDS)), key=lambda i: abs(SPEEDS[i] - (self.speed or SPEEDS[-1])))
        self.speed = SPEEDS[max(0, min(len(SPEEDS) - 1, now + steps))]
        self._changed()

    def describe(self) -> str:
        """``REPLAY ▶ 2×`` / ``REPLAY ❚❚``: the header's flag."""
        if self.paused:
            return "REPLAY ❚❚ paused"
        speed = "max" if self.speed == 0 else f"{self.speed:g}×"
        return f"REPLAY ▶ {speed}"

    def _changed(self) -> None:
        self._wake.set()
        if self.on_change is not None:
            self.on_change()

    # ---- what the replay calls ----

    def rewinds(self) -> bool:
        """True when a seek asks for a point before the frame last given out: start again from the
        top. Compared with that frame, not the next one: a forward seek's target falls between two
        frames, and the first frame past it ends the seek (``wait``), it is no reason to rewind."""
        return self._seek_to is not None and self._seek_to < self.position - 1e-9

    def restart(self) -> None:
        self.frames = 0
        self.position = 0.0
        if self.on_restart is not None:
            self.on_restart()

    async def wait(self, position: float, gap_s: float) -> None:
        """Hold the frame at ``position`` until it is due: ``gap_s`` after the last at the current
        speed, at once while seeking towards it or stepping, never while paused."""
        seek = self._seek_to
        if seek is not None:
            if position < seek - 1e-9:
                await asyncio.sleep(0)  # fast-forward, but let the UI breathe
                return
            self._seek_to = None  # arrived: play on from here at the pace asked
        while True:
            if self._steps > 0:
                self._steps -= 1
                return
            if self._seek_to is not None:  # a seek while we waited: go there
                return
            self._wake.clear()
            if not self.paused:
                if self.speed <= 0 or gap_s <= 0:
                    await asyncio.sleep(0)
                    return
                speed, loop = self.speed, asyncio.get_running_loop()
                start = loop.time()
                try:
                    await asyncio.wait_for(self._wake.wait(), timeout=min(gap_s / speed, 3600.0))
                except asyncio.TimeoutError:
                    return
                gap_s = max(0.0, gap_s - (loop.time() - start) * speed)  # woken by a key: the rest
                continue
            await self._wake.wait()

    def ran_out(self) -> None:
        """The recording ended: a forward seek past its end is over (the next seek counts from the
        last frame, not from the unreachable target)."""
        self._seek_to = None

    def gave(self, position: float) -> None:
        """The replay gave out the frame at ``position``."""
        self.position = position
        self.frames += 1
