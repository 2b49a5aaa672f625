"""Run a program (a TUI under a pseudo-terminal of a given size, or a plain one on a pipe), drain its
output on a thread, and note when a marker text first appeared: for a TUI, its first real frame.

Markers are matched on the output with escape sequences and blanks removed (a TUI moves the cursor
and may skip spaces), so ``"PID 1234"`` matches ``PID\\x1b[1C1234`` too. A marker is a regular
expression applied to that normalised text.

The standard library's ``pty.openpty`` is used rather than a library such as pexpect: we only need a
terminal of a fixed size and a reader, which is a few lines, and it keeps the GPU machine's carried
wheels to what gpuwatch itself needs.

    python -m bench.pty_run --cols 200 --rows 60 --marker 'PID \\d+' --timeout 30 -- gpuwatch --pid 1234
"""

from __future__ import annotations

import argparse
import fcntl
import os
import re
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Sequence

_ESCAPES = re.compile(
    rb"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: cursor moves, colours, modes
    rb"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC: titles, hyperlinks
    rb"|\x1b[PX^_][^\x1b]*\x1b\\"  # DCS / SOS / PM / APC strings
    rb"|\x1b[@-Z\\-_()*+][0-~]?"  # two- or three-byte escapes (charset selects, keypad modes)
)
_BLANKS = re.compile(rb"[ \t\r\x0e\x0f]+")
KEEP_BYTES = 16384
"""Raw output kept from the chunks before: enough to hold a marker or an escape sequence split
across two reads (each new chunk is searched whole, with this tail in front), and the end of the
output for error messages."""
READ_BYTES = 65536


def normalise(raw: bytes) -> bytes:
    """Output without escape sequences and blanks (newlines kept, so ``^`` anchors still work)."""
    return _BLANKS.sub(b"", _ESCAPES.sub(b"", raw))


def _set_size(fd: int, cols: int, rows: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def _take_terminal() -> None:  # runs in the child after setsid(): the pty becomes its controlling tty
    try:
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    except OSError:
        pass  # a TUI runs without a controlling terminal too; it only misses SIGHUP on close


class Running:
    """A started program whose output is being drained. Its own session, so ``stop`` ends it and
    every process it started (py-spy children) by its process-group ID."""

    def __init__(self, argv: Sequence[str], marker: str | None = None, pty_size: tuple[int, int] | None = None,
                 env: dict[str, str] | None = None, cwd: str | None = None) -> None:
        self.argv = list(argv)
        # blanks go from the marker as from the output (also re.escape's "\\ ")
        self._marker = re.compile(re.sub(r"\\?[ \t]", "", marker).encode()) if marker else None
        self.marker_at: float | None = None
        """time.monotonic() when the marker first showed; None until it did."""
        self._seen = threading.Event()
        self._tail = b""
        self.bytes_read = 0
        env = dict(os.environ if env is None else env)
        if pty_size is not None:
            master, slave = os.openpty()
            cols, rows = pty_size
            _set_size(slave, cols, rows)
            env.update(TERM=env.get("BENCH_TERM", "xterm-256color"), COLUMNS=str(cols), LINES=str(rows))
            self.started = time.monotonic()
            try:
                self.proc = subprocess.Popen(self.argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd,
                                             start_new_session=True, preexec_fn=_take_terminal, close_fds=True)
            finally:
                os.close(slave)
            self._fd = master
        else:
            self.started = time.monotonic()
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                         stderr=subprocess.STDOUT, env=env, cwd=cwd, start_new_session=True)
            self._fd = self.proc.stdout.fileno()
        self._reader = threading.Thread(target=self._drain, name=f"drain-{self.proc.pid}", daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self._fd, READ_BYTES)
            except OSError:  # EIO: the pty's other side closed (the program exited)
                return
            if not chunk:
                return
            self.bytes_read += len(chunk)
            if self._marker is None and self._tail:
                continue  # nothing to look for: keep only the first chunk for error messages
            buf = self._tail + chunk
            if self._marker is not None and self.marker_at is None and self._marker.search(normalise(buf)):
                self.marker_at = time.monotonic()
                self._seen.set()
            self._tail = buf[-KEEP_BYTES:]

    def wait_marker(self, timeout: float) -> float | None:
        """Seconds from start to the marker, or None if it did not show within ``timeout`` or the
        program exited first."""
        deadline = time.monotonic() + timeout
        while not self._seen.wait(0.05):
            if time.monotonic() > deadline or (self.proc.poll() is not None and not self._reader.is_alive()):
                return None
        return self.first_marker_s

    @property
    def first_marker_s(self) -> float | None:
        return None if self.marker_at is None else self.marker_at - self.started

    def alive(self) -> bool:
        return self.proc.poll() is None

    def tail(self, n: int = 400) -> str:
        """The end of what it printed, escape sequences removed (for error messages)."""
        return _ESCAPES.sub(b"", self._tail)[-n:].decode(errors="replace")

    def stop(self, grace: float = 5.0) -> int | None:
        """SIGTERM to its process group, SIGKILL after ``grace`` seconds; returns the exit code."""
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
            if self.proc.poll() is not None:
                break
            try:
                os.killpg(self.proc.pid, sig)
            except (ProcessLookupError, PermissionError):
                break
            try:
                self.proc.wait(wait)
            except subprocess.TimeoutExpired:
                continue
        try:  # children left in the group (it exited but they did not)
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        rc = self.proc.wait()
        self._reader.join(2.0)
        if self.proc.stdout is None:  # pty: we own the master side
            try:
                os.close(self._fd)
            except OSError:
                pass
        else:
            self.proc.stdout.close()
        return rc


def run_pty(argv: Sequence[str], cols: int = 200, rows: int = 60, marker: str | None = None, **kw) -> Running:
    return Running(argv, marker, pty_size=(cols, rows), **kw)


def run_piped(argv: Sequence[str], marker: str | None = None, **kw) -> Running:
    return Running(argv, marker, pty_size=None, **kw)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cols", type=int, default=200)
    p.add_argument("--rows", type=int, default=60)
    p.add_argument("--marker", required=True, help="regular expression (blanks and escapes are removed first)")
    p.add_argument("--timeout", type=float, default=30.0)
    p.add_argument("command", nargs=argparse.REMAINDER)
    ns = p.parse_args(argv)
    cmd = ns.command[1:] if ns.command[:1] == ["--"] else ns.command
    if not cmd:
        p.error("give the command after --")
    run = run_pty(cmd, ns.cols, ns.rows, ns.marker)
    try:
        s = run.wait_marker(ns.timeout)
    finally:
        rc = run.stop()
    if s is None:
        print(f"no marker within {ns.timeout:g} s (exit {rc}); last output: {run.tail()!r}", file=sys.stderr)
        return 1
    print(f"first frame after {s:.3f} s ({run.bytes_read} bytes read)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
