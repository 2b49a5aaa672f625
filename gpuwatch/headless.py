"""Headless mode: one JSON object per tick on stdout (the schema is in docs/SCHEMA.md)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from typing import TextIO

from gpuwatch.analysis import Analysis
from gpuwatch.errors import UsageError
from gpuwatch.multirank import MultiRank
from gpuwatch.pipeline import Pipeline, Sink, Source, Tick
from gpuwatch.ranks import ScopeNotice
from gpuwatch.recording import Recorder, RecordingError, tick_line
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
    if out is None:
        raise UsageError(STDOUT_CLOSED)

    last: list = [None, ""]

    def line_of(tick: Tick) -> str:
        """The tick's JSON line, written once for the recording and stdout both (they are the same)."""
        if last[0] is not tick:
            last[:] = [tick, tick_line(tick.frame, tick.verdict, tick.ranks)]
        return last[1]

    def record(tick: Tick) -> None:
        if recorder is not None and recorder.active:
            try:
                recorder.write_line(line_of(tick))
            except RecordingError as e:
                print(f"gpuwatch: {e}; watching continues", file=sys.stderr)

    def emit(tick: Tick) -> None:
        line = line_of(tick) + "\n"
        try:
            out.write(line)
            out.flush()
        except BrokenPipeError:
            raise  # the reader went away (`| head`): a quiet end, cli.py
        except (OSError, ValueError) as e:  # a full disk (/dev/full), a closed descriptor
            _drop_stdout()
            raise UsageError(f"cannot write the JSON stream to stdout: {getattr(e, 'strerror', None) or e}; "
                             "watching stopped") from None

    notice = ScopeNotice()

    def scope(tick: Tick) -> None:
        """Where the PID given is one rank, that every rank is watched (each line's procs show the
        launcher and every rank too)."""
        if words := notice.once(tick.frame, tick.ranks is not None):
            print(f"gpuwatch: {words}", file=sys.stderr)

    await Pipeline(source, analysis, ranks, sinks=(record, emit, scope, on_tick)).run(stop)
    return 0


STDOUT_CLOSED = "stdout is closed: --json has nowhere to write (redirect it, e.g. > run.jsonl)"


def _drop_stdout() -> None:
    """Let the rest of the run (and interpreter shutdown) write stdout into nothing, instead of
    failing again on the buffered remainder ("Exception ignored ... No space left on device")."""
    try:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process
    except OSError:
        pass


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
            if recorder is not None:
                # Closed while the loop still takes the stop signals, so a signal now only sets
                # ``stop`` again; after the loop (the signals at their defaults, then raising Stopped)
                # one could end gpuwatch or break into the gzip trailer's write.
                recorder.close()
        return 130 if signal.SIGINT in got else rc  # Ctrl-C: 128 + 2, as shells report it

    try:
        return asyncio.run(go())
    finally:
        rearm()  # the loop reset the signals to their defaults as it closed
        if recorder is not None:
            recorder.close()  # a stop before the loop took the signals: closed here (a no-op once closed)
            print(f"gpuwatch: {recorder.summary()}", file=sys.stderr)
