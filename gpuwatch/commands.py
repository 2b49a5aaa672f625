"""What each subcommand does, once its arguments are known to be good."""

from __future__ import annotations

import argparse
import sys

from gpuwatch.assemble import WatchOptions
from gpuwatch.errors import UsageError
from gpuwatch.recording import BadLineReport, NotARecording, Recorder, RecordingError
from gpuwatch.source import ReplaySource, live_source
from gpuwatch.startup_heap import release
from gpuwatch.startup_switch import restore


def _open_recorder(path: str | None, force: bool = False) -> Recorder | None:
    if not path:
        return None
    try:
        return Recorder(path, force=force)
    except FileExistsError:
        raise UsageError(f"{path} exists: give --force to overwrite it, or another name") from None
    except OSError as e:
        raise UsageError(f"cannot write recording {path}: {e.strerror or e}") from None
    except RecordingError as e:  # opened, but the header did not fit (a full disk, /dev/full)
        raise UsageError(f"cannot write recording {path}: {getattr(e.__cause__, 'strerror', None) or e}") from None


def watch(ns: argparse.Namespace) -> int:
    if ns.json and sys.stdout is None:  # before any collector starts
        from gpuwatch.headless import STDOUT_CLOSED

        raise UsageError(STDOUT_CLOSED)
    source = live_source(ns.pid, WatchOptions.from_args(ns), ns.duration)
    recorder = _open_recorder(ns.record, getattr(ns, "force", False))
    # Collectors take their first readings while the rest of gpuwatch loads: the analysis, and
    # the TUI or the JSON stream (all imported from here on, not before).
    try:
        source.watch.prestart()
        if ns.json:
            from gpuwatch.headless import run_headless

            release()
            return run_headless(source, recorder, ns.prometheus)
        from gpuwatch.tui.app import run_app

        release()  # every module is loaded: freeze them out of garbage collection (gpuwatch/startup_heap.py)
        return run_app(source, recorder=recorder, prometheus=ns.prometheus)
    finally:
        # Watch.frames puts Python's switch interval back, but only once it runs: a stop signal
        # before the first frame is asked for (Pipeline's `until` then never asks), or an error
        # while the TUI starts, would leave prestart's short one.
        restore()
        if recorder is not None:
            # A stop signal before the watch or the TUI ran (they close it themselves) left a
            # header-only file behind: closed here, a recording with no tick keeps no file.
            recorder.close()


def replay(ns: argparse.Namespace) -> int:
    bad = BadLineReport(ns.file)
    source = ReplaySource(ns.file, speed=ns.speed if not ns.json else 0.0 if ns.speed == 1.0 else ns.speed,
                          on_bad_line=bad)
    try:
        if ns.json:
            from gpuwatch.headless import run_headless

            release()
            try:
                return run_headless(source, None)
            except NotARecording as e:  # a FIFO or pipe: known only once read
                raise UsageError(str(e)) from None
        from gpuwatch.replay_control import ReplayControl
        from gpuwatch.tui.app import run_app

        source.control = ReplayControl(ns.speed)  # the TUI's pause, step, seek and speed keys
        bad.hold()  # said once the terminal is back; the TUI says a cut-short file itself
        release()
        return run_app(source)
    finally:
        bad.close()


def diagnose(ns: argparse.Namespace) -> int:
    from gpuwatch.report import run_diagnose

    return run_diagnose(ns)


def compare(ns: argparse.Namespace) -> int:
    from gpuwatch.compare import run_compare

    return run_compare(ns)


def demo(ns: argparse.Namespace) -> int:
    from gpuwatch.demo import run_demo

    return run_demo(ns)
