"""The terminal input thread, asleep until there is something to read.

Textual's Linux driver (8.2.8, pinned in constraints.txt) reads keys on a thread that waits in
``select`` with a 0.1 s timeout, so that it sees its exit flag and can end a lone Escape after the
parser's timeout: ten wake-ups a second for as long as the app runs. On the H200, Textual's two
unnamed threads (this one and its output writer) took 0.07 % of a core together
(bench/results/2026-12-04-h200/run34, "a thread named gpuwatch"), 18 of their 23 py-spy samples in
this loop (run35/profile_self/tui.txt); this module names the thread ``gw-input``. No option
changes that timeout, so :func:`sleeping_input` gives the driver a loop of its own that does what
Textual's does with the events it reads, and waits with no timeout unless the parser holds an
unfinished escape sequence (then 0.1 s, as before); the driver's exit flag also writes to a pipe
that the loop watches, so quitting does not wait for a key.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import selectors
import threading
from codecs import getincrementaldecoder
from typing import Any

from gpuwatch.threadname import name_this_thread

ESCAPE_POLL_S = 0.1
"""How often the loop looks at the clock while the parser waits to end an escape sequence (a lone
Escape key): Textual's own loop interval."""

THREAD_NAME = "gw-input"


class WakingEvent(threading.Event):
    """A threading.Event whose ``set`` also makes a pipe readable, to wake a ``select`` on it."""

    def __init__(self) -> None:
        super().__init__()
        self.read_fd, self.write_fd = os.pipe()
        os.set_blocking(self.read_fd, False)
        os.set_blocking(self.write_fd, False)

    def set(self) -> None:
        super().set()
        if self.write_fd < 0:  # closed: the number may be another file's now
            return
        with contextlib.suppress(OSError):  # a full pipe is awake already
            os.write(self.write_fd, b"x")

    def drain(self) -> None:
        with contextlib.suppress(OSError):
            while os.read(self.read_fd, 512):
                pass

    def close(self) -> None:
        """Close the pipe, once: Textual's SIGTSTP and SIGCONT handlers outlive the driver and may
        set the flag after this, when the pipe's numbers may name other files."""
        fds, (self.read_fd, self.write_fd) = (self.read_fd, self.write_fd), (-1, -1)
        for fd in fds:
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)


def sleeping_input(base: type) -> type:
    """``base`` (Textual's LinuxDriver or a subclass) with the input loop described above; a driver
    without ``run_input_thread`` (Windows, headless) is returned as it is."""
    if not hasattr(base, "run_input_thread"):
        return base
    try:
        from textual._xterm_parser import XTermParser  # noqa: PLC0415 - the parser Textual's loop uses
    except ImportError:
        return base

    class SleepingInputDriver(base):  # type: ignore[valid-type, misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.exit_event = WakingEvent()

        def close(self) -> None:
            super().close()
            self.exit_event.close()

        def start_application_mode(self) -> None:
            # A stop (SIGTSTP) closed the driver and with it the exit pipe: the resumed loop needs
            # a new one (the closed one keeps its fds at -1 for the handlers that outlive the app).
            if self.exit_event.read_fd < 0:
                self.exit_event = WakingEvent()
            super().start_application_mode()

        def _sigcont_application(self, *args: Any) -> None:
            """Textual restarts application mode on every SIGCONT. One with no stop before it (a
            hung-up terminal sends SIGHUP and SIGCONT; ``kill -CONT``) finds this loop running:
            a restart would start a second loop beside it on the same exit pipe, and the loop a
            quit joins could sleep on after the other had drained the pipe (the app then hung,
            deaf to SIGTERM). A real stop (SIGTSTP, Ctrl+Z) ended the loop first: that resumes.
            The handler outlives the app: once its event loop has ended there is nothing to resume
            (Textual's restart asks for the running loop and raised, a traceback at exit)."""
            if self._key_thread is not None and self._key_thread.is_alive():
                return
            try:
                asyncio.get_running_loop()  # signal handlers run on the main thread, the app's loop's
            except RuntimeError:
                return
            super()._sigcont_application(*args)

        def run_input_thread(self) -> None:
            name_this_thread(THREAD_NAME)
            wake: WakingEvent = self.exit_event
            fileno = self.fileno
            parser = XTermParser(self._debug)
            # errors="replace": a byte that is not UTF-8 (an 8-bit Alt+key, a stray byte in a paste)
            # reads as U+FFFD; strict, as in Textual's loop, it raised here and the app ended.
            decode = getincrementaldecoder("utf-8")(errors="replace").decode
            selector = selectors.SelectSelector()  # as Textual's: select() works on every tty
            selector.register(fileno, selectors.EVENT_READ)
            selector.register(wake.read_fd, selectors.EVENT_READ)

            watching = [True]

            def handle(events: list[tuple[selectors.SelectorKey, int]], final: bool = False) -> None:
                if any(k.fd == wake.read_fd for k, _ in events):
                    wake.drain()  # a wake-up left from an earlier exit (suspend and resume): not a key
                ready = [k for k, mask in events if k.fd == fileno and mask & selectors.EVENT_READ]
                for n, _ in enumerate(ready):
                    data = decode(os.read(fileno, 1024 * 4), final=final and n == len(ready) - 1)
                    if not data:
                        # stdin at its end (/dev/null, a closed pipe, a hung-up terminal): nothing
                        # more comes, and select() would return at once every time; the loop waits
                        # on the exit flag alone from now on.
                        selector.unregister(fileno)
                        watching[0] = False
                        break
                    for event in parser.feed(data):
                        self.process_message(event)
                for event in parser.tick():  # ends a lone Escape once its timeout has passed
                    self.process_message(event)

            try:
                while not wake.is_set():
                    pending = getattr(parser, "_timeout_time", 0.0) is not None
                    handle(selector.select(ESCAPE_POLL_S if pending else None))
                wake.drain()
                if watching[0]:
                    selector.unregister(fileno)
                handle(selector.select(0.1), final=True)
            finally:
                selector.close()
                with contextlib.suppress(Exception):  # Textual's loop ignores EOFError and ParseError here
                    for _ in parser.feed(""):
                        pass

    return SleepingInputDriver
