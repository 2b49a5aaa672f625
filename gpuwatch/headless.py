"""Headless mode: one JSON object per tick on stdout (the schema is in docs/SCHEMA.md)."""

from __future__ import annotations

import asyncio
import signal
import sys
from typing import TextIO

from gpuwatch.analysis import Analysis
from gpuwatch.multirank import MultiRank
from gpuwatch.pipeline import Pipeline, Sink, Source, Tick
from gpuwatch.recording import Recorder, RecordingError, dumps, tick_record
from gpuwatch.signals import install_signal_handlers, rearm


async def stream_json(
    source: Source,
    out: TextIO | None = None,
    recorder: Recorder | None = None,
    stop: asyncio.Event | None = None,
    analysis: Analysis | None = None,
    on_tick: Sink | None = None,
    ranks: MultiRank | None = None,
) -> int:
    """Print every tick of ``source`` as JSON until it ends or ``stop`` is set. Returns 0.

    Each tick goes to ``recorder`` (if any), then to ``out``, then to ``on_tick`` (the Prometheus
    exporter, when serving)."""
    out = out or sys.stdout

    def record(tick: Tick) -> None:
        if recorder is not None and recorder.active:
            try:
                recorder.write(tick.frame, tick.verdict, tick.ranks)
            except RecordingError as e:
                print(f"gpuwatch: {e}; watching continues", file=sys.stderr)

    def emit(tick: Tick) -> None:
        out.write(dumps(tick_record(tick.frame, tick.verdict, tick.ranks)) + "\n")
        out.flush()

    await Pipeline(source, analysis, ranks, sinks=(record, emit, on_tick)).run(stop)
    return 0


def run_headless(source: Source, recorder: Recorder | None, prometheus: tuple[str, int] | None = None) -> int:
    """``--json``: stream until the source ends or a signal arrives; returns the exit code."""

    async def go() -> int:
        stop = asyncio.Event()
        got = install_signal_handlers(asyncio.get_running_loop(), stop.set)
        exporter = None
        if prometheus is not None:
            from gpuwatch.exporter import start_exporter

            exporter = start_exporter(*prometheus)
        try:
            rc = await stream_json(source, recorder=recorder, stop=stop, on_tick=exporter)
        finally:
            if exporter is not None:
                exporter.close()  # stop serving metrics
        return 130 if signal.SIGINT in got else rc  # Ctrl-C: 128 + 2, as shells report it

    try:
        return asyncio.run(go())
    finally:
        rearm()  # the loop reset the signals to their defaults as it closed
        if recorder is not None:
            recorder.close()
            print(f"gpuwatch: {recorder.summary()}", file=sys.stderr)
