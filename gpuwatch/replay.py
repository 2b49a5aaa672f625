"""Feed a recording back as a frame source, so everything downstream works the same on a replay."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

from gpuwatch.model.frame import Frame
from gpuwatch.recording import BadLine, Tick, read_recording


async def replay_frames(
    path: str,
    speed: float = 1.0,
    on_bad_line: Callable[[BadLine], None] | None = None,
) -> AsyncIterator[Frame]:
    """Yield the recording's frames, paced by their timestamps divided by ``speed``.

    ``speed`` 0 means as fast as possible. Bad lines go to ``on_bad_line`` and are skipped.
    """
    prev_t: float | None = None
    for item in read_recording(path):
        if isinstance(item, BadLine):
            if on_bad_line is not None:
                on_bad_line(item)
            continue
        assert isinstance(item, Tick)
        frame = item.frame
        if speed > 0 and prev_t is not None:
            gap = (frame.t - prev_t) / speed
            if 0 < gap < 3600:
                await asyncio.sleep(gap)
        else:
            await asyncio.sleep(0)
        prev_t = frame.t
        yield frame


def load_frames(path: str, on_bad_line: Callable[[BadLine], None] | None = None) -> list[Frame]:
    """All good frames of a recording at once (for reports and tests)."""
    frames = []
    for item in read_recording(path):
        if isinstance(item, BadLine):
            if on_bad_line is not None:
                on_bad_line(item)
        else:
            frames.append(item.frame)
    return frames
