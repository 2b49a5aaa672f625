"""Feed a recording back as a frame source, so everything downstream works the same on a replay."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, TypeVar

from gpuwatch.model.frame import Frame
from gpuwatch.recording import BadLine, Tick, read_recording
from gpuwatch.replay_control import ReplayControl


async def replay_frames(
    path: str,
    speed: float = 1.0,
    on_bad_line: Callable[[BadLine], None] | None = None,
    control: ReplayControl | None = None,
) -> AsyncIterator[Frame]:
    """Yield the recording's frames, paced by their timestamps divided by ``speed``.

    ``speed`` 0 means as fast as possible. Bad lines go to ``on_bad_line`` and are skipped.
    With a ``control``, the control paces the frames instead (pause, step, seek, speed keys).
    """
    if control is None:
        prev_t: float | None = None
        async with contextlib.aclosing(_good_frames(path, on_bad_line)) as frames:
            async for frame in frames:
                if speed > 0 and prev_t is not None:
                    gap = (frame.t - prev_t) / speed
                    if 0 < gap < 3600:
                        await asyncio.sleep(gap)
                prev_t = frame.t
                yield frame
        return
    first_pass = True
    while True:
        start_t = prev = None
        rewound = False
        async with contextlib.aclosing(_good_frames(path, on_bad_line if first_pass else None)) as frames:
            async for frame in frames:
                start_t = frame.t if start_t is None else start_t
                position = frame.t - start_t
                gap = 0.0 if prev is None else frame.t - prev
                prev = frame.t
                if not control.rewinds():
                    await control.wait(position, gap if 0 < gap < 3600 else 0.0)
                if control.rewinds():
                    rewound = True
                    break
                control.gave(position)
                yield frame
        if not rewound:
            control.ran_out()
            return
        first_pass = False
        control.restart()


async def _good_frames(path: str, on_bad_line: Callable[[BadLine], None] | None) -> AsyncIterator[Frame]:
    """The recording's good frames. A regular file is read here, line by line, between frames (the
    loop gets a turn after each); a FIFO or a pipe on a thread of its own (:func:`in_thread`), since
    its reads can block for as long as its writer is silent."""
    items = read_recording(path)
    stream = _as_async(items) if os.path.isfile(path) else in_thread(items)
    async for item in stream:
        if isinstance(item, BadLine):
            if on_bad_line is not None:
                on_bad_line(item)
            continue
        assert isinstance(item, Tick)
        yield item.frame
        await asyncio.sleep(0)  # as fast as possible, but the loop still draws and takes keys


async def _as_async(items: Iterator[T]) -> AsyncIterator[T]:
    for x in items:
        yield x


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


T = TypeVar("T")
QUEUE = 64
"""Items read ahead of the consumer (a few frames' worth of memory)."""


async def in_thread(items: Iterator[T], name: str = "gw-replay") -> AsyncIterator[T]:
    """Iterate ``items`` on a daemon thread and yield them here, so that a read that blocks (a FIFO
    whose writer is slow, a pipe) never blocks the event loop: signals and keys are still handled,
    and a reader stuck in the kernel does not keep gpuwatch from exiting. An exception raised by
    ``items`` is raised here."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue(maxsize=QUEUE)
    stop = threading.Event()

    def put(kind: str, x: Any) -> bool:
        try:
            fut = asyncio.run_coroutine_threadsafe(queue.put((kind, x)), loop)
        except RuntimeError:  # the loop is closed: nobody is reading
            return False
        while not stop.is_set():
            try:
                fut.result(timeout=0.5)
                return True
            except concurrent.futures.TimeoutError:
                continue
            except (concurrent.futures.CancelledError, RuntimeError):
                return False
        fut.cancel()
        return False

    def run() -> None:
        try:
            for x in items:
                if not put("item", x):
                    return
        except Exception as e:  # noqa: BLE001 - handed to the consumer, raised there
            put("error", e)
            return
        put("end", None)

    threading.Thread(target=run, name=name, daemon=True).start()
    try:
        while True:
            kind, x = await queue.get()
            if kind == "item":
                yield x
            elif kind == "end":
                return
            else:
                raise x
    finally:
        stop.set()
