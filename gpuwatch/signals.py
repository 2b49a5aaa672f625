"""SIGTERM, SIGHUP and SIGINT end a watch cleanly, in every front end (TUI, --json, diagnose).

SIGHUP is an SSH drop, SIGTERM a `kill`. SIGINT (Ctrl-C) is caught too rather than left to
asyncio, whose own handler cancels the main task: on Python < 3.12 a cancel that meets a finishing
``asyncio.wait_for`` is lost, so the watch went on (seen in CI under load: no exit within 20 s of
SIGINT, while SIGTERM's path ended in time).
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


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
