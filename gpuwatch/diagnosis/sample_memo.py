"""What one sample gives the diagnosis, worked out once per sample instead of once per window.

A sample stays in every window of the next minute (sixty ticks at the default 1 s), and each tick
reads several windows (the candidate's, the verdict's, the minute's): reading the same sample's
processes or stacks again each time was most of the diagnosis's CPU. A :class:`SampleMemo` keeps
the reading by the sample's identity (the sample is held, so its id stays its own) and the other
inputs named in the key. A :class:`WindowMemo` does the same for a reading over a whole window
that a tick asks for twice. The diagnosis stays pure: the value depends on the key's inputs only.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Generic, TypeVar

T = TypeVar("T")


class SampleMemo(Generic[T]):
    """Readings by sample; emptied whole when ``size`` entries are held (a few minutes of ticks)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._held: dict[tuple, tuple[object, T]] = {}

    def get(self, sample: object, key: tuple, work: Callable[[], T]) -> T:
        """``work()``'s value for ``sample`` and ``key`` (``key`` starts with ``id(sample)``)."""
        hit = self._held.get(key)
        if hit is not None and hit[0] is sample:
            return hit[1]
        if len(self._held) >= self.size:
            self._held.clear()
        value = work()
        self._held[key] = (sample, value)
        return value


class WindowMemo(Generic[T]):
    """Readings by window (a run of frames), for a reading two decisions of a tick make over the
    same frames: the candidate's held window is the verdict's own window on a steady tick. Keyed
    by the frames' ids; the entry holds the frames, so while it is kept no other frame can take
    one of their ids, and an equal key means the same frames. Emptied whole at ``size`` entries."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._held: dict[tuple, tuple[tuple, T]] = {}

    def get(self, frames: Sequence[object], extra: Hashable, work: Callable[[], T]) -> T:
        """``work()``'s value for these ``frames`` and ``extra`` (the reading's other inputs)."""
        key = (extra, *map(id, frames))
        hit = self._held.get(key)
        if hit is not None:
            return hit[1]
        if len(self._held) >= self.size:
            self._held.clear()
        value = work()
        self._held[key] = (tuple(frames), value)
        return value
