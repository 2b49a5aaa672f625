"""The thread ids of each watched process, listed again only when its thread count changes.

The /proc readers visit every thread of the job's processes each tick (their ``children`` files
for the tree walk, their ``schedstat`` for the run-queue wait), and listing ``/proc/PID/task`` each
time costs a directory read per process. A process's stat line, which the readers read anyway,
gives its thread count: while the count and the process (its start time) stay the same, so does
the list, except where one thread exits as another starts. A reader that finds a listed thread
gone calls :meth:`TidLists.forget` (the thread's ``stat`` or ``schedstat`` answers ESRCH once it
has exited); and every list is read again after ``ttl_s`` at the latest, which bounds how long a
reader that cannot see an exit (an exited thread's ``children`` file reads as empty) can miss a
thread that replaced it.
"""

from __future__ import annotations

import os
import time

TTL_S = 3.0
"""A list is read again at least this often (about three ticks at the default refresh)."""


class TidLists:
    def __init__(self, proc_root: str = "/proc", ttl_s: float = TTL_S) -> None:
        self.root = proc_root
        self.ttl_s = ttl_s
        self._lists: dict[int, tuple[int, int, float, tuple[int, ...]]] = {}
        """pid -> (its starttime, its thread count, when listed, the tids)."""

    def get(self, pid: int, starttime: int, num_threads: int) -> tuple[int, ...] | None:
        """The tids of ``pid``; None when the process is gone. ``starttime`` and ``num_threads``
        come from the process's stat line read this tick."""
        now = time.monotonic()
        hit = self._lists.get(pid)
        if hit is not None and hit[0] == starttime and hit[1] == num_threads and now - hit[2] < self.ttl_s:
            return hit[3]
        try:
            names = os.listdir(f"{self.root}/{pid}/task")
        except (FileNotFoundError, ProcessLookupError, NotADirectoryError):
            self._lists.pop(pid, None)
            return None
        tids = tuple(int(n) for n in names if n.isdigit())
        # A count that differs from the listing (a thread started or ended in between) is kept
        # as the stat said, so the next tick lists again.
        self._lists[pid] = (starttime, num_threads if num_threads == len(tids) else -1, now, tids)
        return tids

    def forget(self, pid: int) -> None:
        """List ``pid`` again next time (one of its threads was found gone)."""
        self._lists.pop(pid, None)

    def keep_only(self, pids: set[int]) -> None:
        """Drop the lists of processes no longer watched."""
        for pid in [p for p in self._lists if p not in pids]:
            del self._lists[pid]
