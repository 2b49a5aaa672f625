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
from gpuwatch.collectors.procfd import ProcFiles
from gpuwatch.collectors.procfs import CLK_TCK
from gpuwatch.untrusted import clean

from gpuwatch.model.host import OtherProc

TOP_OTHERS = 5
OTHER_MIN_PCT = 1.0
"""Processes below 1 % of a core are not contention suspects; leaving them out keeps the list to
the ones that matter (and empty on a quiet host)."""
EVERY_S = 3.0
"""Seconds between scans: three ticks at the default refresh, so a new outside hog is named within
about 3 s (the verdict's latency target), for a third of the cost."""
RELAXED_EVERY_S = 6.0
"""Seconds between scans while the pace is relaxed (gpuwatch/pace.py: the job steadily GPU-bound).
The list names who uses the CPU outside the job. How much is used is the host's busy time minus the
job's, read every tick (diagnosis/host_signals.py); the list's sum is a floor under it, and stands
in for it on ticks where the job's processes come and go, so a held list can keep a hog that has
just stopped in that figure until the next scan. An outside process that holds the job back shows
first in the GPU's busy time, which brings the full pace back at once, and with it a scan as soon
as the last is EVERY_S old: the first full-pace tick names it as soon as before, over a window of
up to this long. Each scan reads the stat file of every process on the host (~7 us each on the 2-core
CPU VM; on the H200 host a scan took ~1.7 ms, run 34's collector_cost: host 0.41 ms a tick median,
0.97 mean), so this halves what the list costs while relaxed. Replayed on the H200 recordings with
the list held this long on relaxed ticks (tests/test_relaxed_others_replay.py)."""


KEPT_FDS = 128
"""Stat files of other processes kept open at most: a quarter of the process-wide budget
(collectors/procfd.py), which the job's own files, read every tick, need more than this scan."""
NAME_TTL_S = 30.0
"""How long a process's name and whether it belongs to the job or gpuwatch are kept."""


class OtherProcs:
    def __init__(self, proc_root: str = "/proc", top_n: int = TOP_OTHERS, every_s: float = EVERY_S) -> None:
        self.proc_root = proc_root
        self.top_n = top_n
        self.every_s = every_s
        self._ticks: dict[tuple[int, int], int] = {}
        """(pid, starttime) -> utime + stime at the last scan: a reused PID is a new process."""
        self._t: float | None = None
        self._last: tuple[OtherProc, ...] = ()
        self._who: dict[tuple[int, int], tuple[float, str | None]] = {}
        """(pid, starttime) -> (when asked, its name; None for ours or the job's): see _named."""
        self.files = ProcFiles(max_open=KEPT_FDS)
        """Kept descriptors of the stat files: one ``pread`` a process instead of an open, a read
        and a close (half the scan's CPU)."""

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
        rows: list[tuple[float, int, int]] = []
        for pid, starttime, ticks in _cpu_ticks(self.proc_root, self.files):
            key = (pid, starttime)
            seen[key] = ticks
            before = self._ticks.get(key)
            if dt is not None and before is not None and pid not in job:
                pct = 100.0 * (ticks - before) / CLK_TCK / dt
                if pct >= OTHER_MIN_PCT:
                    rows.append((pct, pid, starttime))
        self._ticks, self._t = seen, now
        self.files.sweep()  # the stat files of processes that have exited
        rows.sort(reverse=True)
        return self._named(rows, job, now)

    def _named(self, rows: list[tuple[float, int, int]], job: set[int], now: float) -> tuple[OtherProc, ...]:
        """Names for the top rows, skipping gpuwatch's own tree and any descendant of the job: a
        worker, pin or compile process started since the job's tree was last walked is the job's.
        Each process's answer (its name, or None: skipped) is kept NAME_TTL_S: psutil's walk up a
        process's parents reads a stat file per ancestor, and the same hogs top the list scan after
        scan."""
        me = os.getpid()
        out = []
        for pct, pid, start in rows:
            if len(out) >= self.top_n:
                break
            hit = self._who.get((pid, start))
            if hit is None or now - hit[0] >= NAME_TTL_S:
                hit = self._who[(pid, start)] = (now, self._name(pid, me, job))
            if hit[1] is not None:
                out.append(OtherProc(pid=pid, name=hit[1], cpu_pct=pct))
        for key in [k for k, (t, _) in self._who.items() if now - t >= NAME_TTL_S]:
            del self._who[key]
        return tuple(out)

    @staticmethod
    def _name(pid: int, me: int, job: set[int]) -> str | None:
        try:
            p = psutil.Process(pid)
            parents = p.parents()
            if pid == me or any(a.pid == me or a.pid in job for a in parents):
                return None
            return clean(p.name(), 64)
        except psutil.Error:
            return None


def _cpu_ticks(proc_root: str, files: ProcFiles | None = None) -> list[tuple[int, int, int]]:
    """``(pid, starttime, utime + stime)`` of every process, from one raw read of each
    /proc/PID/stat (through ``files``' kept descriptors when given): no file object, no decoding
    and no name (the few that make the list are named through psutil). Two to three times cheaper
    than parsing whole stat lines, and this reads every process on the host. Processes that exit
    mid-scan are skipped. A kept descriptor of a process that has exited never reads the next
    holder of its PID (collectors/procfd.py), and the start time tells a reused PID apart."""
    try:
        names = os.listdir(proc_root)
    except OSError:
        return []
    out = []
    for name in names:
        if not name.isdigit():
            continue
        try:
            if files is not None:
                raw = files.read(f"{proc_root}/{name}/stat")
                if raw is None:
                    continue
            else:
                fd = os.open(f"{proc_root}/{name}/stat", os.O_RDONLY | os.O_CLOEXEC)
                try:
                    raw = os.read(fd, 4096)
                finally:
                    os.close(fd)
            rest = raw[raw.rindex(b")") + 2:].split()  # the name may hold spaces and parentheses
            out.append((int(name), int(rest[19]), int(rest[11]) + int(rest[12])))
        except (OSError, ValueError, IndexError):
            continue
    return out
