"""Headless mode: one JSON object per tick on stdout (the schema is in docs/SCHEMA.md)."""

from __future__ import annotations

import asyncio
import sys
from typing import TextIO

from gpuwatch.analysis import Analysis
from gpuwatch.multirank import MultiRank
from gpuwatch.recording import Recorder, RecordingError, dumps, tick_record


async def stream_json(
    source,
    out: TextIO | None = None,
    recorder: Recorder | None = None,
    stop: asyncio.Event | None = None,
    analysis: Analysis | None = None,
    on_tick=None,
    ranks: MultiRank | None = None,
) -> int:
    """Print every tick of ``source`` as JSON until it ends or ``stop`` is set. Returns 0.

    ``on_tick(frame, verdict)`` is called after each tick; if it also has an ``on_ranks`` method (the
    Prometheus exporter does), that gets each tick's :class:`gpuwatch.multirank.RankTick` first (None: fewer than two ranks)."""
    out = out or sys.stdout
    analysis = analysis or Analysis()
    ranks = ranks or MultiRank()
    on_ranks = getattr(on_tick, "on_ranks", None)
    follow = getattr(source, "follow", None)  # a live source adapts its sampling to the verdicts
    agen = source.frames()
    try:
        async for frame in _until(agen, stop):
            verdict = analysis.update(frame)
            if follow is not None:
                follow(analysis.verdicts, analysis.frames)
            tick = ranks.update(frame)
            if recorder is not None and recorder.active:
                try:
                    recorder.write(frame, verdict, *(() if tick is None else (tick,)))
                except RecordingError as e:
                    print(f"gpuwatch: {e}; watching continues", file=sys.stderr)
            if out is not None:
                out.write(dumps(tick_record(frame, verdict, tick)) + "\n")
                out.flush()
            if on_ranks is not None:
                on_ranks(tick)
            if on_tick is not None:
                on_tick(frame, verdict)
    finally:
        await agen.aclose()
    return 0


async def _until(agen, stop: asyncio.Event | None):
    """Iterate ``agen`` but end early once ``stop`` is set."""
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
