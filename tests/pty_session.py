"""A command under a real pseudo-terminal (its controlling terminal), its output drained on a
thread: for TUI tests that send signals or keys and read what the terminal got."""

from __future__ import annotations

import contextlib
import os
import pty
import subprocess
import threading
from collections.abc import Iterator, Sequence


class PtySession:
    def __init__(self, proc: subprocess.Popen, master: int) -> None:
        self.proc = proc
        self.master = master
        self.chunks: list[bytes] = []

    def drain(self) -> None:
        with contextlib.suppress(OSError):
            while data := os.read(self.master, 65536):
                self.chunks.append(data)

    def type(self, keys: bytes) -> None:
        os.write(self.master, keys)

    @property
    def text(self) -> str:
        return b"".join(self.chunks).decode("utf-8", "replace")


@contextlib.contextmanager
def pty_session(argv: Sequence[str]) -> Iterator[PtySession]:
    """``argv`` started in a new session on a pty; killed (if still running) and reaped after."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(list(argv), stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
                            env=dict(os.environ, TERM="xterm-256color"))
    os.close(slave)
    s = PtySession(proc, master)
    reader = threading.Thread(target=s.drain, daemon=True)
    reader.start()
    try:
        yield s
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        reader.join(5)
        os.close(master)
