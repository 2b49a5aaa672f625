"""The job's processes over one tick: role, CPU, state, memory, I/O rates, scheduler wait, and the
CPU of the threads that matter (main thread, ``pt_data_pin``, ``pt_autograd_*``).

Rates are deltas against the previous tick, keyed by ``(pid, create_time)`` so a reused PID or a
respawned worker never inherits another process's counters. A process first seen this tick (a
worker respawned at an epoch boundary) is measured from its birth: its counters started at zero
when it was created. Processes that exited or turned zombie are dropped (no stale rows).

Cost per tick: the tree walk (shared with the other collectors, about once a tick), two /proc
reads per process (``stat`` and ``io``) and one ``sched_getaffinity`` call, two small reads per
thread of a main process (stat and schedstat, signals.md §1.7) and one per thread of the others
(schedstat: their threads' names and CPU are not shown). Every file is read through a descriptor
kept open between ticks (collectors/procfd.py): one ``pread`` each; a process's threads are listed
again only when its thread count changes (collectors/tid_lists.py). With psutil's ``oneshot`` per process (four files
opened and parsed: stat, status, statm, io) and every file opened afresh, a tick of the steady job
with 8 workers cost 3.0 ms of CPU on the 2-core CPU VM; this way 1.0 ms (bench/collector_cost.py).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import NamedTuple

import psutil

from gpuwatch.collectors.base import Collector, FirstWindow
from gpuwatch.collectors.procfd import ProcFiles
from gpuwatch.collectors.procfs import CLK_TCK, Task, age_s, parse_io, read_stat, read_tasks, read_waits
from gpuwatch.collectors.target import Node, Target, TargetGone
from gpuwatch.collectors.tid_lists import TidLists
from gpuwatch.model.procs import ROLE_MAIN, ProcInfo, ProcsSample, ThreadCpu
from gpuwatch.model.values import JOB_EXITED, Maybe, Unsupported

FRESH_TREE_S = 0.1
"""The table lists the processes of this moment: a tree another collector walked longer ago than
this is walked again. Non-persistent DataLoader workers are re-forked every epoch, and a tree from
the previous tick lists workers that have exited since (tests/test_reliability_signals.py)."""
PIN_THREAD = "pt_data_pin"
AUTOGRAD_PREFIX = "pt_autograd_"
"""Thread names PyTorch sets (the names DataLoader and autograd give their threads): the pin-memory thread and the autograd engine's."""

PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
"""Bytes per page: /proc/PID/stat counts the resident set in pages."""
START_SLACK_S = 1.0
"""How far a process's start time from its stat may be from the tree's create time (psutil's, from
the same field plus the boot time) and still be the same process: a reused PID starts later by far
more than the clock-tick and boot-time rounding of the two."""

LIST_TTL_S = 10.0
"""A main process's threads are listed, and all their names read, at least this often. Reads here
see a thread exit (its schedstat answers ESRCH) and the count shows a new one, so the listing only
bounds how long a thread that renamed itself keeps its old name in the table (the pin thread names
itself as it starts: at most one listing can fall in between)."""

IO_DENIED = Unsupported("/proc/PID/io is not readable: run gpuwatch as the job's user or as root")



@dataclass(frozen=True, slots=True)
class _Reading:
    t: float
    cpu_s: float
    io: tuple[int, int] | None
    """(read_bytes, write_bytes), None when denied."""
    waits: dict[int, int]
    """tid -> run-queue wait (ns)."""
    ticks: dict[tuple[int, int], int]
    """(tid, starttime) -> utime + stime (clock ticks)."""


OWED_PASSES = 3
"""Passes the CPU of a process gone from /proc (reaped) waits for its ancestor's counter of
waited-for children to rise (exited_cpu): reading the two is not atomic, so the rise can come a pass
after the process is gone. While the process is a zombie, not yet reaped, it waits on."""


@dataclass(frozen=True, slots=True)
class _Total:
    pid: int
    ppid: int
    starttime: int
    own_s: float
    """utime + stime."""
    children_s: float
    """cutime + cstime."""


class _Owed(NamedTuple):
    """CPU already counted of a process gone from the tree, to be paid from a later rise."""

    pid: int
    starttime: int
    cpu_s: float


class ProcsCollector(Collector):
    field = "procs"

    def __init__(self, target: Target, interval: float = 1.0, proc_root: str = "/proc") -> None:
        self.target = target
        self.interval = interval
        self.root = proc_root
        self.files = ProcFiles()
        self._tids = TidLists(proc_root, ttl_s=LIST_TTL_S)
        self._shown: dict[int, tuple[tuple[int, ...], set[int]]] = {}
        """Main process -> (the thread listing it was learned from, the tids the table shows)."""
        self._boot = psutil.boot_time()
        self._starts: dict[tuple[int, float], int] = {}
        """(pid, create time) -> the starttime its stat showed when first read."""
        self._prev: dict[tuple[int, float], _Reading] = {}
        self._last_pass: float | None = None
        """When the previous pass over the tree began (monotonic): a process born since then is rated
        over the whole tick, as top does, so one tick's rates add up to the CPU the tick had."""
        self._first = FirstWindow()
        self._totals: dict[tuple[int, float], _Total] = {}
        """(pid, create time) -> its CPU counters at this pass (see exited_cpu)."""
        self._owed: list[tuple[_Owed, int]] = []
        """Processes gone from the tree whose CPU their ancestors have not yet been seen to count (a
        zombie leaves the tree before it is reaped), with the passes left to wait once gone."""
        self._exited_pct = 0.0

    def probe(self) -> Unsupported | None:
        try:
            self.target.tree()
        except TargetGone as e:
            return Unsupported(f"{JOB_EXITED}: {e}")
        if not os.path.exists(f"{self.root}/{self.target.pid}/task"):
            return Unsupported(f"{self.root}/{self.target.pid}/task is not readable: is /proc mounted?")
        self._baseline()
        return None

    def _baseline(self) -> None:
        self._measure(self.target.tree())
        self._first.open()

    def sample(self) -> ProcsSample:
        if self._first.start is None:
            self._baseline()
        self._first.wait()  # the rest of a short first window, the first time
        tree = self.target.tree(max_age=FRESH_TREE_S)
        rows = self._measure(tree)
        try:
            usable = len(os.sched_getaffinity(self.target.pid))
        except OSError:
            usable = psutil.cpu_count() or 1
        return ProcsSample(t=time.monotonic(), processes=tuple(rows), usable_cpus=usable,
                           exited_cpu_pct=self._exited_pct)

    def _measure(self, tree) -> list[ProcInfo]:
        began = time.monotonic()
        rows = []
        seen = set()
        before, self._totals = self._totals, {}
        for node in tree.nodes:
            key = (node.pid, node.create_time)
            seen.add(key)
            row = self._one(node, key)
            if row is not None:
                rows.append(row)
        if self._last_pass is not None:
            pct = self._exited_cpu(before, self._totals) / max(began - self._last_pass, 1e-3) * 100.0
            self._exited_pct = min(pct, 100.0 * (os.cpu_count() or 1))  # never more than the host's CPUs
        for cache in (self._prev, self._starts):
            for key in [k for k in cache if k not in seen]:
                del cache[key]
        pids = {pid for pid, _ in seen}
        self._tids.keep_only(pids)
        for pid in [p for p in self._shown if p not in pids]:
            del self._shown[pid]
        self.files.sweep()  # the files of processes and threads that have exited
        self._last_pass = began
        return rows

    def _exited_cpu(self, before: dict[tuple[int, float], _Total], now: dict[tuple[int, float], _Total]) -> float:
        """CPU seconds used since the last pass by the job's processes that exited in between, beyond
        what the rows counted of them.

        A process that waits for a child adds the child's whole CPU (and its waited-for children's)
        to its own cutime and cstime. Their rise over the pass, summed over the job's processes,
        less the CPU already counted of the processes that left the tree (their last reading), is
        what no row showed: a command the job ran and waited for within one tick (``subprocess.run``
        of a tokenizer, ffmpeg or ``du``) and the last moments of an ending worker. The host counts
        that CPU as busy; without this it read as used outside the job, and named contention with
        no outside process behind it (trial 23: a job pacing on ``subprocess.run``).

        What is owed for a process gone from the tree is paid from a later rise: its parent's, or,
        where the parent left in the same pass (``sh -c`` around a command, a launcher and its
        ranks), the nearest ancestor still here. A zombie leaves the tree before its parent reaps
        it, so what is owed waits for the rise while the zombie is still there, and OWED_PASSES
        passes after it is gone (review: a child reaped 4 s late was counted again in full)."""
        rose = 0.0
        for key, cur in now.items():
            was = before.get(key)
            if was is not None:  # first seen: its counter holds children reaped before gpuwatch looked
                rose += max(0.0, cur.children_s - was.children_s)
        alive = {cur.pid for cur in now.values()}
        gone = {was.pid: was for key, was in before.items() if key not in now}
        owed = [(o, n if self._zombie(o) else n - 1) for o, n in self._owed]
        owed = [(o, n) for o, n in owed if n > 0]
        for was in gone.values():
            up, hops = was.ppid, 0
            while up in gone and hops < len(gone):  # its parent left too: the rise is further up
                up, hops = gone[up].ppid, hops + 1
            if up in alive:
                owed.append((_Owed(was.pid, was.starttime, was.own_s + was.children_s), OWED_PASSES))
        left = rose
        self._owed = []
        for o, n in owed:  # oldest first
            paid = min(o.cpu_s, left)
            left -= paid
            if o.cpu_s - paid > 0:
                self._owed.append((o._replace(cpu_s=o.cpu_s - paid), n))
        return left

    def _zombie(self, o: _Owed) -> bool:
        """The owed process is still there, exited but not yet reaped (state Z)."""
        st = read_stat(o.pid, self.root)
        return st is not None and st.starttime == o.starttime and st.state in ("Z", "X")

    def _same_process(self, key: tuple[int, float], node: Node, starttime: int) -> bool:
        """Whether the stat just read is the process the tree named: its start time (ticks after
        boot) matches the tree's create time on first sight, and the first sight's ever after."""
        known_start = self._starts.get(key)
        if known_start is None:
            if abs(self._boot + starttime / CLK_TCK - node.create_time) > START_SLACK_S:
                return False
            self._starts[key] = starttime
            return True
        return starttime == known_start

    def close(self) -> None:
        self.files.close()

    def _main_threads(self, pid: int, tids: tuple[int, ...] | None) -> tuple[list[Task], int, dict[int, int], bool]:
        """(the threads read in full, the number of threads, {tid: run-queue wait ns}, whether a
        listed thread was found gone) of a main process.

        Every thread's stat is read when its threads are listed (a new thread count, or every
        TidLists.ttl_s): that names them. In between, only the threads the table shows (the main
        thread, the pin thread, autograd's: _interesting) have their stat read; the others only
        their schedstat, for the run-queue wait. A CUDA training process has a score of threads
        and shows two to four. A thread that renames itself is seen by the next listing."""
        known = self._shown.get(pid)
        if tids is None or known is None or known[0] is not tids:
            tasks = read_tasks(pid, self.root, files=self.files, tids=tids) or []
            if tids is not None:
                self._shown[pid] = (tids, {t.stat.tid for t in tasks if _interesting(pid, t)})
            waits = {t.stat.tid: t.wait_ns for t in tasks if t.wait_ns is not None}
            return tasks, len(tasks), waits, tids is not None and len(tasks) < len(tids)
        shown = known[1]
        want = [t for t in tids if t in shown]
        tasks = read_tasks(pid, self.root, files=self.files, tids=want) or []
        waits = {t.stat.tid: t.wait_ns for t in tasks if t.wait_ns is not None}
        rest = [t for t in tids if t not in shown]
        _, rest_waits = read_waits(pid, self.root, self.files, rest) or (0, {})
        waits.update(rest_waits)
        gone = len(tasks) < len(want) or len(rest_waits) < len(rest)
        return tasks, len(tasks) + len(rest), waits, gone

    def _one(self, node: Node, key: tuple[int, float]) -> ProcInfo | None:
        base = f"{self.root}/{node.pid}"
        st = read_stat(node.pid, self.root, self.files)
        if st is None or st.state in ("Z", "X"):  # exited, or a zombie: no row
            return None
        if not self._same_process(key, node, st.starttime):  # the PID now belongs to someone else
            return None
        self._totals[key] = _Total(node.pid, st.ppid, st.starttime, st.cpu_ticks / CLK_TCK, st.child_ticks / CLK_TCK)
        try:
            raw = self.files.read(f"{base}/io")
            if raw is None:  # exited since its stat was read
                return None
            io: tuple[int, int] | None = parse_io(raw)
        except (PermissionError, ValueError):
            io = None
        try:
            affinity = tuple(sorted(os.sched_getaffinity(node.pid)))
        except OSError:
            affinity = ()
        nthreads = st.num_threads
        tids = self._tids.get(node.pid, st.starttime, nthreads)
        if node.role == ROLE_MAIN:  # its threads are shown: names, states, CPU
            tasks, n_tasks, waits, missing = self._main_threads(node.pid, tids)
        else:
            tasks = []
            n_tasks, waits = read_waits(node.pid, self.root, self.files, tids) or (0, {})
            missing = tids is not None and len(waits) < len(tids)
        if missing:  # a listed thread has exited: list the process's threads again next tick
            self._tids.forget(node.pid)
        now = time.monotonic()
        cur = _Reading(
            t=now,
            cpu_s=st.cpu_ticks / CLK_TCK,
            io=io,
            waits=waits,
            ticks={(t.stat.tid, t.stat.starttime): t.stat.cpu_ticks for t in tasks},
        )
        leader = next((t for t in tasks if t.stat.tid == node.pid), None)
        prev = self._prev.get(key)
        self._prev[key] = cur
        if prev is None:  # first seen: counters started at zero at the process's birth
            age = age_s(st.starttime)
            # starttime has clock-tick (10 ms) resolution: a 10 ms floor keeps a just-forked
            # process's rate finite.
            age = max(age, 1.0 / CLK_TCK)
            if self._last_pass is not None:
                # Born during this tick: its CPU since birth over the whole tick, not over its own
                # short life. Rated over its life, a pair of workers forked 0.3 s before the read
                # showed ~1 core each, and a tick's workers added up to 2.6 cores on a 2-CPU host.
                age = max(age, now - self._last_pass)
            prev = _Reading(now - age, 0.0, (0, 0) if io is not None else None, {}, {})
        dt = max(now - prev.t, 1e-3)
        state = leader.stat.state if leader is not None else st.state
        return ProcInfo(
            pid=node.pid,
            ppid=node.ppid,
            role=node.role,
            rank=node.rank,
            main_pid=node.main_pid,
            name=node.name,
            cmdline=node.cmdline,
            # Never more than its threads could run (guards the birth estimate's tick rounding).
            cpu_pct=min(max(0.0, (cur.cpu_s - prev.cpu_s) / dt * 100.0), 100.0 * max(nthreads, 1)),
            state=state,
            rss=st.rss_pages * PAGE_SIZE,
            num_threads=nthreads,
            read_bps=_rate(cur.io, prev.io, 0, dt),
            write_bps=_rate(cur.io, prev.io, 1, dt),
            run_delay_frac=_run_delay(cur, prev, n_tasks, dt),
            threads=_threads(node, tasks, cur, prev, dt) if node.role == ROLE_MAIN else (),
            affinity=affinity,
            started=node.create_time or None,
        )


def _rate(cur: tuple[int, int] | None, prev: tuple[int, int] | None, i: int, dt: float) -> Maybe[float]:
    if cur is None or prev is None:
        return IO_DENIED
    return max(0.0, (cur[i] - prev[i]) / dt)


def _run_delay(cur: _Reading, prev: _Reading, n_tasks: int, dt: float) -> Maybe[float]:
    """Sum over threads of the run-queue wait this tick, over the wall time: the mean number of the
    process's threads that were runnable but had no CPU. A thread new this tick counts from zero."""
    if n_tasks and not cur.waits:
        return Unsupported("/proc/PID/task/*/schedstat is missing: the kernel lacks CONFIG_SCHED_INFO")
    if not cur.waits:
        return Unsupported("the process's threads could not be read")
    total = sum(w - prev.waits.get(tid, 0) for tid, w in cur.waits.items())
    return max(0.0, total / 1e9 / dt)


def _interesting(pid: int, t: Task) -> bool:
    name = t.stat.name
    return t.stat.tid == pid or name == PIN_THREAD or name.startswith(AUTOGRAD_PREFIX)


def _threads(node: Node, tasks: list[Task], cur: _Reading, prev: _Reading, dt: float) -> tuple[ThreadCpu, ...]:
    out = []
    for t in tasks:
        if not _interesting(node.pid, t):
            continue
        key = (t.stat.tid, t.stat.starttime)
        before = prev.ticks.get(key, 0)
        pct = max(0.0, (cur.ticks[key] - before) / CLK_TCK / dt * 100.0)
        out.append(ThreadCpu(tid=t.stat.tid, name=t.stat.name, cpu_pct=pct, state=t.stat.state))
    out.sort(key=lambda th: (th.tid != node.pid, th.name, th.tid))
    return tuple(out)
