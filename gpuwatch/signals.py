"""SIGTERM, SIGHUP and SIGINT end a watch cleanly, in every front end (TUI, --json, diagnose).

SIGHUP is an SSH drop, SIGTERM a `kill`. SIGINT (Ctrl-C) is caught too rather than left to
asyncio, whose own handler cancels the main task: on Python < 3.12 a cancel that meets a finishing
``asyncio.wait_for`` is lost, so the watch went on (seen in CI under load: no exit within 20 s of
SIGINT, while SIGTERM's path ended in time).

Clean from gpuwatch's first instruction, not only once an event loop runs (before, SIGINT at 0.1 s
gave a KeyboardInterrupt traceback and SIGTERM/SIGHUP in the first second killed it with -15/-1):

Steps 1-2 and :func:`rearm` live in gpuwatch/stopping.py, which imports only ``os`` and ``signal``
(this module's asyncio import alone takes a noticeable part of a second on a busy host):

1. :func:`guard_startup`, the first thing the ``gpuwatch`` command runs: a stop signal while
   modules import exits at once (nothing is started yet: no thread, child or terminal change).
2. :func:`raising_stop` around the command: a stop signal raises :class:`Stopped`, which unwinds
   through every ``finally`` (collectors closed, py-spy killed) to cli.main, which exits 0 for
   SIGTERM/SIGHUP and 130 for SIGINT, as a stop during the watch does.
3. While an event loop runs, its handlers (:func:`install_signal_handlers`) end the watch; when the
   loop closes it resets the signals to their defaults, so :func:`rearm` puts step 2 back.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from gpuwatch.stopping import STOP_SIGNALS, Stopped, exit_code, finish, guard_startup, raising_stop, rearm

__all__ = ["STOP_SIGNALS", "Stopped", "exit_code", "finish", "guard_startup", "install_signal_handlers", "raising_stop",
           "rearm", "stopping_on_signals"]


def install_signal_handlers(loop: asyncio.AbstractEventLoop, on_stop: Callable[[], object]) -> list[int]:
    """Call ``on_stop()`` on the event loop when one of STOP_SIGNALS arrives. Returns the list that
    the signals received are appended to. Where the loop cannot take signal handlers (not the main
    thread, no signals on this platform) nothing is installed."""
    got: list[int] = []

    def on(sig: int) -> None:
        got.append(sig)
        on_stop()

    for sig in STOP_SIGNALS:
        try:
            loop.add_signal_handler(sig, on, sig)
        except (NotImplementedError, RuntimeError, ValueError):
            pass
    return got


@contextmanager
def stopping_on_signals(loop: asyncio.AbstractEventLoop, on_stop: Callable[[], object]) -> Iterator[list[int]]:
    """:func:`install_signal_handlers` for the ``with`` block; the handlers are removed after it."""
    try:
        yield install_signal_handlers(loop, on_stop)
    finally:
        for sig in STOP_SIGNALS:
            try:
                loop.remove_signal_handler(sig)
            except (NotImplementedError, RuntimeError, ValueError):
                pass
        rearm()
