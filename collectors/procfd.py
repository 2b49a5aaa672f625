"""Small /proc files read through file descriptors kept open from tick to tick.

The /proc readers read the same few files of the same processes every tick (each process's
``stat`` and ``io``, each thread's ``schedstat``, the pressure files). Opening a file costs a path
walk in the kernel and, through Python's ``open``, a file object and a text decoder; reading an
fd that is already open is one ``pread`` system call. /proc regenerates a file's text on every
read from offset 0 (the kernel's seq_file), so a kept fd reads the current values.

A kept fd belongs to the process it was opened for: once that process has exited, reading it
fails with ESRCH even if the PID has been reused, so a reused PID never reads another process's
counters through an old fd. Such an fd is closed and the path opened afresh: it answers for
whoever holds the PID now (None when nobody does), and telling a new process from the old one is
the caller's check (its start time), as it is for any fresh open.

Kept fds are bounded, per reader (``max_open``) and for the whole process (``KEPT_TOTAL``, shared
by every reader): past either bound a file is opened, read and closed as before, so a job with
thousands of threads or a host with thousands of processes cannot exhaust gpuwatch's descriptor
limit.
"""

from __future__ import annotations

import os
import threading

try:
    import resource
except ImportError:  # not on Linux: no limit to read
    resource = None  # type: ignore[assignment]

MAX_OPEN = 256
"""Descriptors kept open at most per reader: a 9-process job with a few dozen threads in its main
process needs ~80; the default soft limit (``ulimit -n``) is 1024 and gpuwatch has other uses for
descriptors (py-spy's pipes, the recording, the terminal)."""

CHUNK = 4096
"""Bytes asked for per ``pread``. A file the kernel writes in one piece comes back whole from one
read of this many bytes when it is that small (a stat line is ~300 bytes); a longer one is read on
until the end."""
RECORD_MAX = 64
"""A file the kernel writes record by record stops a read short, by less than one record, when the
next record does not fit: a read that ends further than this from the chunk's end is the whole
file when its records are shorter than this (a thread's ``children`` list: a PID and a space each)."""

KEPT_TOTAL = 512
"""Descriptors kept open at most by all readers together, and at most half of the soft limit: the
common default soft limit is 1024, and the rest is for py-spy's pipes, the recording, the
terminal and the libraries."""


def _kept_total() -> int:
    soft = 1024
    if resource is not None:
        try:
            soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        except (OSError, ValueError):
            pass
        if soft == resource.RLIM_INFINITY:
            soft = 1 << 20
    return max(16, min(KEPT_TOTAL, soft // 2))


class _Budget:
    """How many descriptors every ProcFiles of this process keeps open together."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self._lock = threading.Lock()

    def take(self) -> bool:
        with self._lock:
            if self.used >= self.limit:
                return False
            self.used += 1
            return True

    def give(self) -> None:
        with self._lock:
            self.used = max(0, self.used - 1)


BUDGET = _Budget(_kept_total())

GONE = (FileNotFoundError, ProcessLookupError, NotADirectoryError)
"""What opening or reading a file of a process that has exited raises."""


class ProcFiles:
    """``read(path)``: the file's bytes now, through a kept descriptor; None once the file is gone.

    For files the kernel writes in one piece (its ``single_open`` files: a process's or thread's
    ``stat``, ``statm``, ``status``, ``io``, ``schedstat``, ``/proc/pressure/*``, ``/proc/meminfo``,
    cgroup ``cpu.stat``), where a read returns the whole text when the buffer holds it, and for
    files written in records shorter than RECORD_MAX (a thread's ``children``, ``/proc/vmstat``'s
    lines). Other files written record by record in longer records (``/proc/diskstats``,
    ``smaps``) may come back short from one read: read those with ``open``.

    PermissionError is raised, not swallowed: "not allowed" is a different answer from "gone"
    (``/proc/PID/io`` of another user's process). One instance per collector; the lock makes it
    safe to share between threads all the same.
    """

    def __init__(self, max_open: int = MAX_OPEN) -> None:
        self.max_open = max_open
        self._fds: dict[str, int] = {}
        self._used: set[str] = set()
        self._lock = threading.Lock()

    def read(self, path: str, head: int = 0) -> bytes | None:
        """The file's bytes now; with ``head``, its first ``head`` bytes only (one ``pread``): for
        a file of which only the start is needed, such as the first line of /proc/stat, which on a
        host with many CPUs and interrupts runs to tens of kilobytes."""
        with self._lock:
            self._used.add(path)
            fd = self._fds.get(path)
            if fd is not None:
                try:
                    return os.pread(fd, head, 0) if head else _pread_all(fd)
                except OSError:  # ESRCH: the process exited; the path may name another one now
                    self._drop(path)
            try:
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            except GONE:
                return None
            try:
                data = os.pread(fd, head, 0) if head else _pread_all(fd)
            except GONE:
                os.close(fd)
                return None
            except OSError as e:
                os.close(fd)
                if isinstance(e, PermissionError):  # an answer ("not allowed"), not "gone"
                    raise
                return None
            if len(self._fds) < self.max_open and BUDGET.take():
                self._fds[path] = fd
            else:
                os.close(fd)
            return data

    def text(self, path: str) -> str | None:
        """:meth:`read`, decoded (names in /proc files are the job's choice: undecodable bytes replaced)."""
        raw = self.read(path)
        return None if raw is None else raw.decode("utf-8", "replace")

    def sweep(self) -> None:
        """Close the kept descriptors not read since the previous sweep: the files of threads and
        processes that have exited (a collector sweeps once a tick, after its reads)."""
        with self._lock:
            for path in [p for p in self._fds if p not in self._used]:
                self._drop(path)
            self._used.clear()

    def forget(self, path: str) -> None:
        with self._lock:
            self._drop(path)

    def close(self) -> None:
        with self._lock:
            for path in list(self._fds):
                self._drop(path)

    def __del__(self) -> None:  # a reader dropped without close() (a Target, a test's collector)
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown: nothing left to release
            pass

    def __len__(self) -> int:
        return len(self._fds)

    def _drop(self, path: str) -> None:
        fd = self._fds.pop(path, None)
        if fd is not None:
            BUDGET.give()
            try:
                os.close(fd)
            except OSError:
                pass


def _pread_all(fd: int) -> bytes:
    data = os.pread(fd, CHUNK, 0)
    if len(data) <= CHUNK - RECORD_MAX:
        return data
    parts = [data]
    offset = len(data)
    while True:
        more = os.pread(fd, CHUNK, offset)
        if not more:
            return b"".join(parts)
        parts.append(more)
        offset += len(more)
