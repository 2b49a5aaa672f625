"""The busiest processes outside the job: contention suspects for the host panel and the verdict.

Read from /proc by hand rather than with ``psutil.process_iter``: one ``stat`` read per process is
all it needs (CPU ticks and start time), and psutil's per-process objects and caches made this scan
the largest single cost of a tick on the H200 (about 1.2 % of a core, bench/profile_self.py). Names
and ancestry are read with psutil for the few processes that make the list.

The scan runs every ``every_s`` seconds, not every tick: the verdict's measure of outside CPU is the
host's busy time minus the job's (diagnosis/host_signals.py), read every tick; this list only names
who it is, and a name a few seconds old is as good.
"""

from __future__ import annotations

import os
import time

import psutil
from gpuwatch.collectors.procfs import CLK_TCK, read_stats
from gpuwatch.untrusted import clean

from gpuwatch.model.host import OtherProc

TOP_OTHERS = 5
OTHER_MIN_PCT = 1.0
"""Processes below 1 % of a core are not contention suspects; leaving them out keeps the list to
the ones that matter (and empty on a quiet host)."""
EVERY_S = 3.0
"""Seconds between scans: three ticks at the default refresh, so a new outside hog is named within
about 3 s (the verdict's latency target), for a third of the cost."""


class OtherProcs:
    def __init__(self, proc_root: str = "/proc", top_n: int = TOP_OTHERS, every_s: float = EVERY_S) -> None:
        self.proc_root = proc_root
        self.top_n = top_n
        self.every_s = every_s
        self._ticks: dict[tuple[int, int], int] = {}
        """(pid, starttime) -> utime + stime at the last scan: a reused PID is a new process."""
        self._t: float | None = None
        self._last: tuple[OtherProc, ...] = ()

    def baseline(self, job: set[int]) -> None:
        self._scan(job)

    def sample(self, job: set[int]) -> tuple[OtherProc, ...]:
        """The top ``top_n`` processes by CPU outside ``job`` and outside gpuwatch's own tree, over the
        time since the last scan; the last list while a scan is not due."""
        if self._t is not None and time.monotonic() - self._t < self.every_s:
            return self._last
        self._last = self._scan(job)
        return self._last

    def _scan(self, job: set[int]) -> tuple[OtherProc, ...]:
        now = time.monotonic()
        dt = max(now - self._t, 1e-3) if self._t is not None else None
        seen: dict[tuple[int, int], int] = {}
        rows: list[tuple[float, int]] = []
        for st in read_stats(self.proc_root) or ():
            key = (st.tid, st.starttime)
            seen[key] = st.cpu_ticks
            before = self._ticks.get(key)
            if dt is not None and before is not None and st.tid not in job:
                pct = 100.0 * (st.cpu_ticks - before) / CLK_TCK / dt
                if pct >= OTHER_MIN_PCT:
                    rows.append((pct, st.tid))
        self._ticks, self._t = seen, now
        rows.sort(reverse=True)
        return self._named(rows, job)

    def _named(self, rows: list[tuple[float, int]], job: set[int]) -> tuple[OtherProc, ...]:
        """Names for the top rows, skipping gpuwatch's own tree and any descendant of the job: a
        worker, pin or compile process started since the job's tree was last walked is the job's."""
        me = os.getpid()
        out = []
        for pct, pid in rows:
            if len(out) >= self.top_n:
                break
            try:
                p = psutil.Process(pid)
                parents = p.parents()
                if pid == me or any(a.pid == me or a.pid in job for a in parents):
                    continue
                name = clean(p.name(), 64)
            except psutil.Error:
                continue
            out.append(OtherProc(pid=pid, name=name, cpu_pct=pct))
        return tuple(out)
