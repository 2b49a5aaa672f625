"""Stop signals outside an event loop: gpuwatch ends cleanly from its first instruction.

The first steps of gpuwatch/signals.py's three (read that module's docstring). This module imports
only ``os`` and ``signal``, so the ``gpuwatch`` command takes the signals within milliseconds of its
start, before any heavy import.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


class Stopped(BaseException):
    """A stop signal arrived outside an event loop. BaseException, as KeyboardInterrupt is, so
    ``except Exception`` on the way out does not swallow it."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"stopped by signal {signum}")
        self.signum = signum


def exit_code(signum: int) -> int:
    """0 for a requested stop (SIGTERM, SIGHUP), 130 for Ctrl-C (128 + 2, as shells report it)."""
    return 130 if signum == signal.SIGINT else 0


STOP_GRACE_S = 10.0
"""After a stop signal, the clean-up (collectors closed, py-spy killed, files closed) gets this long;
then the process ends anyway. An exception raised by a signal handler can land anywhere, even
where a lock is held, so a clean-up that waits on it must not become a hang."""

_entry = False
"""True in the ``gpuwatch`` process itself (set by :func:`guard_startup`), False where gpuwatch is
a library (tests calling cli.main): only the command may end the process."""


def _exit_now(signum: int, _frame: object) -> None:
    os._exit(exit_code(signum))


def guard_startup() -> None:
    """Step 1: until :func:`raising_stop` takes over, a stop signal ends the process at once."""
    global _entry
    _entry = True
    _install(_exit_now)


def finish(code: int) -> int:
    """The exit after a :class:`Stopped` clean-up: in the command, end now (stdio flushed), so that
    interpreter shutdown does not wait on a worker thread the signal interrupted; as a library,
    return ``code``."""
    if not _entry:
        return code
    for f in (sys.stdout, sys.stderr):
        try:
            if f is not None:
                f.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def _watchdog(signum: int) -> None:
    if _entry:
        import threading

        t = threading.Timer(STOP_GRACE_S, os._exit, (exit_code(signum),))
        t.daemon = True
        t.start()


_armed = False
_stopping: list[int] = []


def _raise_stop(signum: int, _frame: object) -> None:
    if _stopping:  # already unwinding: a second signal must not interrupt the clean-up
        return
    _stopping.append(signum)
    _watchdog(signum)
    raise Stopped(signum)


RESIGNAL_S = 0.02
"""How long after a swallowed stop the signal comes again: long enough for the hook to return."""


def _unraisable(args) -> None:
    """sys.unraisablehook while stop signals raise: a :class:`Stopped` that landed where Python
    cannot raise (a weakref or ``__del__`` callback, e.g. importlib's module-lock clean-up during an
    import) is swallowed and printed as "Exception ignored ... Traceback", and the program runs
    on. Here it is not printed, and the signal is sent again a moment later from another thread
    (sent now, its handler would run inside this hook and be swallowed again), so that the handler raises
    it in the main thread's own flow, where the ``with`` block's clean-up catches it; should it land
    in such a callback again, this hook sends it once more."""
    exc = args.exc_value
    if isinstance(exc, Stopped):
        import threading

        _stopping.clear()
        again = threading.Timer(RESIGNAL_S, os.kill, (os.getpid(), exc.signum))
        again.daemon = True
        again.start()
        return
    _before_unraisable(args)


_before_unraisable = sys.unraisablehook


def rearm() -> None:
    """Step 3: after an event loop closed (it resets the signals to their defaults), stop signals
    raise :class:`Stopped` again, while :func:`raising_stop` is active."""
    if _armed:
        _install(_raise_stop)


@contextmanager
def raising_stop() -> Iterator[None]:
    """Step 2, for the ``with`` block (cli.main); the previous handlers come back after it."""
    global _armed
    before = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    if not _install(_raise_stop):  # not the main thread: signals are not ours to take
        yield
        return
    _stopping.clear()
    _armed = True
    rearm()
    global _before_unraisable
    _before_unraisable, sys.unraisablehook = sys.unraisablehook, _unraisable
    try:
        yield
    finally:
        _armed = False
        sys.unraisablehook = _before_unraisable
        for sig, h in before.items():
            signal.signal(sig, h if h is not None else signal.SIG_DFL)


def _install(handler) -> bool:
    """``handler`` for every stop signal; False where signals cannot be set (not the main thread)."""
    try:
        for sig in STOP_SIGNALS:
            signal.signal(sig, handler)
    except ValueError:
        return False
    return True
