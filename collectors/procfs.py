"""Small parsers and readers for /proc files psutil does not cover.

psutil has no per-thread state, name or scheduler wait time, no PSI and no cgroup files, so these
are read by hand. Parsers take the file's text and are pure; readers take a ``root`` (default
``/proc``) so tests can point them at fixture trees under ``tests/data/``, and optionally a
:class:`~gpuwatch.collectors.procfd.ProcFiles` that keeps the files' descriptors open between ticks.
Readers return None (never raise) for a process or thread that vanished while being read.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from gpuwatch.collectors.procfd import ProcFiles
from gpuwatch.untrusted import clean

CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
"""Clock ticks per second, the unit of utime/stime in /proc/PID/stat (100 on every Linux build)."""


@dataclass(frozen=True, slots=True)
class TaskStat:
    """The fields of /proc/PID/task/TID/stat gpuwatch uses (proc(5))."""

    tid: int
    name: str
    state: str
    cpu_ticks: int
    """utime + stime, in clock ticks."""
    starttime: int
    """Clock ticks after boot the thread started: with the TID it names the thread uniquely."""
    ppid: int = 0
    """The parent process (of the thread's process)."""
    num_threads: int = 0
    """Threads of the process (field 20)."""
    rss_pages: int = 0
    """Resident set size in pages (field 24): the same counter as psutil's ``memory_info().rss``."""
    child_ticks: int = 0
    """cutime + cstime (fields 16, 17), in clock ticks: the CPU of the process's children that have
    exited and that it waited for (theirs, and their own waited-for children's)."""


@dataclass(frozen=True, slots=True)
class Task:
    """One thread: its stat line and its scheduler counters (None where schedstat is missing)."""

    stat: TaskStat
    run_ns: int | None
    wait_ns: int | None


def parse_stat(text: str) -> TaskStat:
    """Parse a /proc/PID/stat or /proc/PID/task/TID/stat line.

    The name sits in parentheses and may itself hold spaces and ``)``, so split at the last ``)``.
    The name is the job's own choice (``prctl(PR_SET_NAME)``): it comes back cleaned
    (gpuwatch/untrusted.py). Raises ValueError on a line that is not a stat line.
    """
    lpar = text.find("(")
    rpar = text.rfind(")")
    if lpar < 0 or rpar < lpar:
        raise ValueError("no (name) in the stat line")
    tid = int(text[:lpar])
    name = clean(text[lpar + 1:rpar], 64)
    rest = text[rpar + 2:].split()
    if len(rest) < 22:
        raise ValueError(f"{len(rest) + 2} fields in the stat line, expected at least 24")
    # rest[0] is field 3 (state); field n is rest[n - 3]: utime 14, stime 15, starttime 22.
    return TaskStat(tid=tid, name=name, state=rest[0], cpu_ticks=int(rest[11]) + int(rest[12]),
                    starttime=int(rest[19]), ppid=int(rest[1]), num_threads=int(rest[17]),
                    rss_pages=int(rest[21]), child_ticks=int(rest[13]) + int(rest[14]))


def parse_schedstat(text: str) -> tuple[int, int, int]:
    """``run_ns wait_ns timeslices`` of /proc/PID/schedstat (Documentation/scheduler/sched-stats.rst).
    Raises ValueError."""
    run, wait, slices = text.split()[:3]  # fewer than 3: ValueError (not enough values to unpack)
    return int(run), int(wait), int(slices)


def age_s(starttime: int) -> float:
    """Seconds since a process or thread started, from its ``starttime`` (ticks after boot).

    Better than ``time.time() - psutil create_time`` for young processes: create_time adds the boot
    time from /proc/stat, which has whole-second resolution. /proc/PID/stat counts starttime on the
    boot-time clock (Linux >= 4.17; monotonic before, which only differs after a suspend).
    """
    return max(0.0, time.clock_gettime(time.CLOCK_BOOTTIME) - starttime / CLK_TCK)


def read_stat(pid: int, root: str = "/proc", files: ProcFiles | None = None) -> TaskStat | None:
    """/proc/PID/stat, parsed; None when the process is gone."""
    text = _read(f"{root}/{pid}/stat", files)
    try:
        return parse_stat(text) if text else None
    except (ValueError, IndexError):
        return None


def read_age(pid: int, root: str = "/proc") -> float | None:
    """:func:`age_s` of a process, None when it is gone."""
    st = read_stat(pid, root)
    return age_s(st.starttime) if st is not None else None


def _read(path: str, files: ProcFiles | None = None) -> str | None:
    if files is not None:
        return files.text(path)
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except (FileNotFoundError, ProcessLookupError, NotADirectoryError):
        return None


def read_schedstat(pid: int, tid: int | None = None, root: str = "/proc",
                   files: ProcFiles | None = None) -> tuple[int, int, int] | None:
    """Scheduler counters of a process's leader thread, or of one of its threads."""
    path = f"{root}/{pid}/schedstat" if tid is None else f"{root}/{pid}/task/{tid}/schedstat"
    text = _read(path, files)
    if not text:
        return None
    try:
        return parse_schedstat(text)
    except ValueError:
        return None


def read_stats(folder: str, files: ProcFiles | None = None, names: Iterable[int] | None = None) -> list[TaskStat] | None:
    """The stat line of every numeric entry of ``folder``: ``/proc`` (every process) or
    ``/proc/PID/task`` (every thread); of ``names`` only when given (the entries, listed before).
    None when the folder is gone; entries that vanish mid-read are skipped."""
    if names is None:
        try:
            names = [int(n) for n in os.listdir(folder) if n.isdigit()]
        except (FileNotFoundError, ProcessLookupError, NotADirectoryError):
            return None
    out = []
    for name in names:
        text = _read(f"{folder}/{name}/stat", files)
        if not text:
            continue
        try:
            out.append(parse_stat(text))
        except (ValueError, IndexError):
            continue
    return out


def read_tasks(pid: int, root: str = "/proc", schedstat: bool = True,
               files: ProcFiles | None = None, tids: Iterable[int] | None = None) -> list[Task] | None:
    """Every thread of ``pid`` (of ``tids``, when the caller listed them); None when the process is
    gone. Threads that exit mid-read are skipped.

    Cost: two small reads per thread (about 9 µs each through ``open``; one ``pread`` each with ``files``).
    """
    stats = read_stats(f"{root}/{pid}/task", files, tids)
    if stats is None:
        return None
    out = []
    for st in stats:
        run = wait = None
        if schedstat:
            ss = read_schedstat(pid, st.tid, root, files)
            if ss is not None:
                run, wait = ss[0], ss[1]
        out.append(Task(st, run, wait))
    return out


def read_waits(pid: int, root: str = "/proc", files: ProcFiles | None = None,
               tids: Sequence[int] | None = None) -> tuple[int, dict[int, int]] | None:
    """(number of threads, {tid: run-queue wait ns}) of ``pid`` (of ``tids``, when the caller listed
    them) from the threads' schedstat files only: half the reads of :func:`read_tasks` where names,
    states and CPU ticks are not needed. None when the process is gone."""
    if tids is None:
        try:
            tids = [int(n) for n in os.listdir(f"{root}/{pid}/task") if n.isdigit()]
        except (FileNotFoundError, ProcessLookupError, NotADirectoryError):
            return None
    waits = {}
    for tid in tids:
        ss = read_schedstat(pid, tid, root, files)
        if ss is not None:
            waits[tid] = ss[1]
    return len(tids), waits


def parse_io(raw: bytes) -> tuple[int, int]:
    """``(read_bytes, write_bytes)`` of /proc/PID/io: bytes the process made the storage layer
    fetch and send (proc(5)). Raises ValueError when either line is missing."""
    got = {}
    for line in raw.split(b"\n"):
        key, _, value = line.partition(b": ")
        if key in (b"read_bytes", b"write_bytes"):
            got[key] = int(value)
    if len(got) < 2:
        raise ValueError("no read_bytes/write_bytes lines in /proc/PID/io")
    return got[b"read_bytes"], got[b"write_bytes"]


def parse_pressure(text: str) -> dict[str, dict[str, float]]:
    """/proc/pressure/* (Documentation/accounting/psi.rst): ``{"some": {"avg10": ..}, "full": {..}}``."""
    out: dict[str, dict[str, float]] = {}
    for line in text.splitlines():
        parts = line.split()
        if not parts or parts[0] not in ("some", "full"):
            continue
        vals = {}
        for kv in parts[1:]:
            k, _, v = kv.partition("=")
            try:
                vals[k] = float(v)
            except ValueError:
                continue
        out[parts[0]] = vals
    return out


class DiskCounters(NamedTuple):
    """One device's line of /proc/diskstats (Documentation/admin-guide/iostats.rst), with the names
    and units of psutil's ``disk_io_counters(perdisk=True)``: bytes, times in milliseconds."""

    read_count: int
    write_count: int
    read_bytes: int
    write_bytes: int
    read_time: int
    write_time: int
    busy_time: int
    """Milliseconds the device had I/O in flight (``io_ticks``)."""


SECTOR_BYTES = 512
"""/proc/diskstats counts sectors of 512 bytes whatever the device's own sector size."""


def parse_diskstats(raw: bytes) -> dict[str, DiskCounters]:
    """Every device of /proc/diskstats, by kernel name. The line layouts psutil reads: 14 or 18+
    fields (Linux 2.6+; 4.18 and 5.5 appended discard and flush counters), 7 (a partition on 2.6
    kernels before 2.6.25: no times), 15 (Linux 2.4); a line of any other layout, or with a counter
    that is not a number, is skipped (the other devices are still read)."""
    out = {}
    for line in raw.split(b"\n"):
        f = line.split()
        n = len(f)
        try:
            if n == 14 or n >= 18:
                reads, rsect, rtime, writes, wsect, wtime, busy = (
                    int(f[3]), int(f[5]), int(f[6]), int(f[7]), int(f[9]), int(f[10]), int(f[12]))
                name = f[2]
            elif n == 7:
                reads, rsect, writes, wsect = int(f[3]), int(f[4]), int(f[5]), int(f[6])
                rtime = wtime = busy = 0
                name = f[2]
            elif n == 15:
                reads, rsect, rtime, writes, wsect, wtime, busy = (
                    int(f[2]), int(f[5]), int(f[6]), int(f[7]), int(f[9]), int(f[10]), int(f[12]))
                name = f[3]
            else:
                continue
        except ValueError:
            continue
        out[name.decode("utf-8", "replace")] = DiskCounters(
            reads, writes, rsect * SECTOR_BYTES, wsect * SECTOR_BYTES, rtime, wtime, busy)
    return out


@dataclass(frozen=True, slots=True)
class CgroupEntry:
    """A line of /proc/PID/cgroup: ``hierarchy-ID:controllers:path`` (hierarchy 0 is cgroup v2)."""

    hierarchy: int
    controllers: tuple[str, ...]
    path: str


def parse_proc_cgroup(text: str) -> list[CgroupEntry]:
    out = []
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3 or not parts[0].isdigit():
            continue
        ctrls = tuple(c for c in parts[1].split(",") if c)
        out.append(CgroupEntry(int(parts[0]), ctrls, clean(parts[2])))
    return out


@dataclass(frozen=True, slots=True)
class Mount:
    """A line of /proc/PID/mountinfo (proc(5))."""

    major: int
    minor: int
    root: str
    """The part of the file system that is mounted (``/`` unless it is a bind mount)."""
    mountpoint: str
    fstype: str
    source: str
    super_options: tuple[str, ...]


def _unescape(s: str) -> str:
    r"""mountinfo escapes space, tab, newline and backslash as \040 \011 \012 \134."""
    if "\\" not in s:
        return s
    for code, ch in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        s = s.replace(code, ch)
    return s


def parse_mountinfo(text: str) -> list[Mount]:
    out = []
    for line in text.splitlines():
        parts = line.split()
        try:
            sep = parts.index("-", 6)
            major, minor = parts[2].split(":")
            out.append(Mount(int(major), int(minor), clean(_unescape(parts[3])), clean(_unescape(parts[4])),
                             clean(parts[sep + 1], 64), clean(_unescape(parts[sep + 2])),
                             tuple(parts[sep + 3].split(",")) if len(parts) > sep + 3 else ()))
        except (ValueError, IndexError):
            continue
    return out


def mount_of(path: str, mounts: list[Mount]) -> Mount | None:
    """The mount holding ``path``: the longest mount point that is a prefix of it (the last one
    mounted wins when several mounts share a mount point)."""
    best: Mount | None = None
    for m in mounts:
        mp = m.mountpoint
        if path == mp or mp == "/" or path.startswith(mp.rstrip("/") + "/"):
            if best is None or len(mp) >= len(best.mountpoint):
                best = m
    return best


def parse_flat_keyed(text: str) -> dict[str, int]:
    """``key value`` lines (cgroup cpu.stat, both versions)."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2:
            try:
                out[parts[0]] = int(parts[1])
            except ValueError:
                continue
    return out


def parse_cpu_max(text: str) -> tuple[int | None, int]:
    """cgroup v2 cpu.max: ``$MAX $PERIOD`` in µs, ``max`` for no quota. Raises ValueError."""
    parts = text.split()
    if not parts:
        raise ValueError("empty cpu.max")
    quota = None if parts[0] == "max" else int(parts[0])
    period = int(parts[1]) if len(parts) > 1 else 100000
    return quota, period
