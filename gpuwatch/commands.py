"""What each subcommand does, once its arguments are known to be good."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys

from gpuwatch.assemble import WatchOptions, build_collectors
from gpuwatch.collectors.target import Target
from gpuwatch.engine import Watch
from gpuwatch.headless import stream_json
from gpuwatch.recording import NotARecording, Recorder, RecordingError
from gpuwatch.source import LiveSource, ReplaySource


def _options(ns: argparse.Namespace) -> WatchOptions:
    rate = 0.0 if getattr(ns, "no_stacks", False) else ns.stack_rate
    return WatchOptions(interval=ns.interval, gpus=ns.gpu, stack_rate=rate)


def live_source(pid: int, ns: argparse.Namespace, duration: float | None) -> LiveSource:
    target = Target(pid)
    opts = _options(ns)
    return LiveSource(Watch(target, build_collectors(target, opts), interval=opts.interval), duration)


def _open_recorder(path: str | None) -> Recorder | None:
    if not path:
        return None
    from gpuwatch.cli import UsageError

    try:
        return Recorder(path)
    except OSError as e:
        raise UsageError(f"cannot write recording {path}: {e.strerror or e}") from None
    except RecordingError as e:  # opened, but the header did not fit (a full disk, /dev/full)
        raise UsageError(f"cannot write recording {path}: {getattr(e.__cause__, 'strerror', None) or e}") from None


def _run_headless(source, recorder: Recorder | None, prometheus=None) -> int:
    from gpuwatch.cli import install_signal_handlers

    async def go() -> int:
        stop = asyncio.Event()
        got = install_signal_handlers(asyncio.get_running_loop(), stop)
        on_tick = None
        if prometheus is not None:
            from gpuwatch.exporter import start_exporter

            on_tick = start_exporter(*prometheus)
        rc = await stream_json(source, recorder=recorder, stop=stop, on_tick=on_tick)
        return 130 if signal.SIGINT in got else rc  # Ctrl-C: 128 + 2, as shells report it

    try:
        return asyncio.run(go())
    finally:
        if recorder is not None:
            recorder.close()


def watch(ns: argparse.Namespace) -> int:
    source = live_source(ns.pid, ns, ns.duration)
    recorder = _open_recorder(ns.record)
    source.watch.prestart()  # collectors take their first readings while the TUI starts
    if ns.json:
        return _run_headless(source, recorder, ns.prometheus)
    from gpuwatch.tui.app import run_app

    return run_app(source, recorder=recorder, prometheus=ns.prometheus)


def replay(ns: argparse.Namespace) -> int:
    def bad(b) -> None:
        print(f"gpuwatch: {ns.file}: {b}", file=sys.stderr)

    source = ReplaySource(ns.file, speed=ns.speed if not ns.json else 0.0 if ns.speed == 1.0 else ns.speed,
                          on_bad_line=bad)
    if ns.json:
        from gpuwatch.cli import UsageError

        try:
            return _run_headless(source, None)
        except NotARecording as e:  # a FIFO or pipe: known only once read
            raise UsageError(str(e)) from None
    from gpuwatch.tui.app import run_app

    return run_app(source)


def diagnose(ns: argparse.Namespace) -> int:
    from gpuwatch.report import run_diagnose

    return run_diagnose(ns)


def compare(ns: argparse.Namespace) -> int:
    from gpuwatch.cli import UsageError
    from gpuwatch.compare import run_compare

    return run_compare(ns, UsageError)


def demo(ns: argparse.Namespace) -> int:
    from gpuwatch.demo import run_demo

    return run_demo(ns)
