"""One tick pipeline for every front end: frames in, :class:`Tick` values out.

Each frame from a source goes through the same steps, in the same order, whoever shows it:

    frame -> Analysis.update (the verdict) -> source.follow (the stack sampling pace, live only)
          -> MultiRank.update (per-rank verdicts and the straggler) -> Tick -> every sink

The TUI, the headless JSON stream, the diagnose report, the recorder and the Prometheus exporter
are sinks of it (callables that take a Tick) or iterate :meth:`Pipeline.ticks` themselves, so
they all see the same verdict and the same ranks for a tick.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from gpuwatch.analysis import Analysis
from gpuwatch.model.frame import Frame
from gpuwatch.model.verdict import Verdict
from gpuwatch.multirank import MultiRank, RankTick
from gpuwatch.straggler import Straggler


@dataclass(frozen=True)
class Tick:
    """One tick: the frame and all that gpuwatch concludes from it."""

    frame: Frame
    verdict: Verdict
    ranks: RankTick | None = None
    """Per-rank verdicts and the straggler; None while the job shows fewer than two ranks."""

    @property
    def straggler(self) -> Straggler | None:
        return self.ranks.straggler if self.ranks is not None else None


class Source(Protocol):
    """Where frames come from: a live watch or a recording (gpuwatch/source.py)."""

    live: bool
    """True for a live watch (it ends at --duration or with the job), False for a recording."""

    def describe(self) -> str: ...

    def frames(self) -> AsyncIterator[Frame]: ...


@runtime_checkable
class Follows(Protocol):
    """A source that adapts its sampling to the verdicts so far (a live watch: gpuwatch/pace.py)."""

    def follow(self, verdicts: Sequence[Verdict], frames: Sequence[Frame]) -> None: ...


Sink = Callable[[Tick], object]
"""Takes every tick, on the event loop, in order; must not block."""


class Pipeline:
    """Turns a source's frames into ticks and hands each to the sinks, in order."""

    def __init__(
        self,
        source: Source,
        analysis: Analysis | None = None,
        ranks: MultiRank | None = None,
        sinks: Sequence[Sink | None] = (),
    ) -> None:
        self.source = source
        self.analysis = analysis or Analysis()
        self.ranks = ranks or MultiRank()
        self.sinks = [s for s in sinks if s is not None]
        self._follow = source.follow if isinstance(source, Follows) else None

    def step(self, frame: Frame) -> Tick:
        """One frame through analysis, pace and ranks, then to every sink."""
        verdict = self.analysis.update(frame)
        if self._follow is not None:
            self._follow(self.analysis.verdicts, self.analysis.frames)
        tick = Tick(frame, verdict, self.ranks.update(frame))
        for sink in self.sinks:
            sink(tick)
        return tick

    async def ticks(self, stop: asyncio.Event | None = None) -> AsyncIterator[Tick]:
        """Every frame of the source as a Tick, until the source ends or ``stop`` is set."""
        agen = self.source.frames()
        try:
            async for frame in until(agen, stop):
                yield self.step(frame)
        finally:
            await agen.aclose()

    async def run(self, stop: asyncio.Event | None = None) -> Tick | None:
        """Drive the pipeline to the end (the sinks do the work); returns the last tick."""
        last = None
        agen = self.ticks(stop)
        try:
            async for last in agen:
                pass
        finally:
            await agen.aclose()
        return last


async def until(agen: AsyncIterator[Frame], stop: asyncio.Event | None) -> AsyncIterator[Frame]:
    """Iterate ``agen`` but end early once ``stop`` is set (the pending step is cancelled)."""
    if stop is None:
        async for x in agen:
            yield x
        return
    while not stop.is_set():
        nxt = asyncio.ensure_future(agen.__anext__())
        waiter = asyncio.ensure_future(stop.wait())
        try:
            done, _ = await asyncio.wait({nxt, waiter}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:  # Ctrl-C: stop the pending step so ``agen`` can be closed
            waiter.cancel()
            nxt.cancel()
            try:
                await nxt
            except (asyncio.CancelledError, StopAsyncIteration):
                pass
            raise
        if nxt in done:
            waiter.cancel()
            try:
                yield nxt.result()
            except StopAsyncIteration:
                return
        else:
            nxt.cancel()
            try:
                await nxt
            except (asyncio.CancelledError, StopAsyncIteration):
                pass
            return
