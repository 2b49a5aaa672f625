"""What one sample gives the diagnosis, worked out once per sample instead of once per window.

A sample stays in every window of the next minute (sixty ticks at the default 1 s), and each tick
reads several windows (the candidate's, the verdict's, the minute's): reading the same sample's
processes or stacks again each time was most of the diagnosis's CPU. A :class:`SampleMemo` keeps
the reading by the sample's identity (the sample is held, so its id stays its own) and the other
inputs named in the key. The diagnosis stays pure: the value depends on the key's inputs only.
"""

from __future__ import annotations

from collections.abc import Callable
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
