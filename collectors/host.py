"""The host around the job over one tick: CPU (with steal and iowait), memory and swap, pressure
stall information, the CPU quota of the job's cgroup, and the busiest processes outside the job.

All of it is read from /proc, /sys and the cgroup files by hand, through descriptors kept open
from tick to tick (collectors/procfd.py): psutil opens and parses the files afresh at each call,
and has neither PSI nor the cgroup files. psutil answers where the kernel's files lack a field
(CPU times, memory and swap on kernels before 3.14, the online CPUs where /sys is not mounted).
"""

from __future__ import annotations

import errno
import os
import time
from dataclasses import dataclass
from typing import NamedTuple

import psutil

from gpuwatch.collectors.base import Collector, FirstWindow
from gpuwatch.collectors.others import EVERY_S, RELAXED_EVERY_S, OtherProcs
from gpuwatch.collectors.procfd import ProcFiles
from gpuwatch.collectors.procfs import CLK_TCK, parse_cpu_max, parse_flat_keyed, parse_mountinfo, parse_pressure, \
    parse_proc_cgroup
from gpuwatch.collectors.target import Target, TargetGone
from gpuwatch.model.host import NO_CPU_QUOTA, CgroupCpu, HostSample, Psi
from gpuwatch.model.values import Maybe, Unsupported

CGROUP_TTL_S = 10.0
"""How long the job's cgroup and its quota are kept before they are looked up again (its
/proc/PID/cgroup, our mountinfo and the quota files up the tree); its counters are read each tick."""

PSI_MISSING = Unsupported("the kernel has no pressure stall information (/proc/pressure is missing): "
                          "it needs Linux >= 4.20 built with CONFIG_PSI=y")
PSI_DISABLED = Unsupported("pressure stall information is disabled: boot the kernel with psi=1")


def read_psi(proc_root: str = "/proc", files: ProcFiles | None = None) -> Maybe[Psi]:
    """avg10 of /proc/pressure/{cpu,io,memory} (Documentation/accounting/psi.rst). ``files``: read
    through kept descriptors; a file they cannot read is opened afresh for the precise reason."""
    vals = {}
    for res in ("cpu", "io", "memory"):
        path = f"{proc_root}/pressure/{res}"
        try:
            raw = files.read(path) if files is not None else None
        except OSError:
            raw = None
        if raw is not None:
            vals[res] = parse_pressure(raw.decode("ascii", "replace"))
            continue
        try:
            with open(path, encoding="ascii") as f:
                vals[res] = parse_pressure(f.read())
        except FileNotFoundError:
            return PSI_MISSING
        except OSError as e:
            if e.errno == errno.EOPNOTSUPP:
                return PSI_DISABLED
            return Unsupported(f"cannot read {proc_root}/pressure/{res}: {e.strerror or e}")

    def avg10(res: str, kind: str) -> float:
        return vals[res].get(kind, {}).get("avg10", 0.0)

    if "some" not in vals["cpu"]:
        return Unsupported(f"{proc_root}/pressure/cpu has no 'some' line")
    return Psi(cpu_some=avg10("cpu", "some"), io_some=avg10("io", "some"), io_full=avg10("io", "full"),
               mem_some=avg10("memory", "some"), mem_full=avg10("memory", "full"))


class Memory(NamedTuple):
    """Memory and swap, as psutil's virtual_memory and swap_memory give them (bytes)."""

    total: int
    available: int
    swap_used: int
    swap_in: int
    """Bytes swapped in since boot."""
    swap_out: int


PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def read_memory(files: ProcFiles, proc_root: str = "/proc") -> Memory | None:
    """/proc/meminfo and the swap counters of /proc/vmstat (through kept descriptors: vmstat is
    written record by record, each shorter than procfd.RECORD_MAX), searched for the five numbers
    the host panel needs: psutil's virtual_memory and swap_memory parse both files whole into
    dictionaries, twice for meminfo, each tick. None where MemAvailable or the swap counters are
    missing (the caller asks psutil, which estimates them)."""
    try:
        raw = files.read(f"{proc_root}/meminfo")
        vm = files.read(f"{proc_root}/vmstat")
    except OSError:
        return None
    if raw is None or vm is None:
        return None
    try:
        total, available, swap_total, swap_free = (
            _number(raw, key) * 1024 for key in (b"MemTotal:", b"MemAvailable:", b"SwapTotal:", b"SwapFree:"))
        swap_in, swap_out = (_number(vm, key) * PAGE_SIZE for key in (b"pswpin ", b"pswpout "))
    except (LookupError, ValueError):  # a line missing, or not a number
        return None
    return Memory(total, available, swap_total - swap_free, swap_in, swap_out)


def _number(raw: bytes, key: bytes) -> int:
    """The number after ``key`` on the line of ``raw`` that starts with it. Raises LookupError when no
    line does, ValueError when what follows is not a number."""
    if raw.startswith(key):
        at = 0
    else:
        at = raw.find(b"\n" + key) + 1
        if not at:
            raise LookupError(key)
    end = raw.find(b"\n", at)
    return int(raw[at + len(key):end if end >= 0 else None].split()[0])


CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal", "guest", "guest_nice")
"""The host's CPU times on the first line of /proc/stat, in order (proc(5)), by psutil's
``cpu_times`` names; kernels before 3.2, 2.6.24 and 2.6.11 end the line sooner."""
CPU_LINE_MAX = 512
"""Bytes read from the start of /proc/stat: its first line, ten numbers of at most 20 digits."""


def read_cpu_times(files: ProcFiles, proc_root: str = "/proc") -> dict[str, float] | None:
    """The host's CPU times in seconds, from the first line of /proc/stat read through a kept
    descriptor (the file's start only: on a host with many CPUs and interrupts the file runs to
    tens of kilobytes). The same numbers as ``psutil.cpu_times()``, which opens and parses the file
    afresh and builds a named tuple (48 against 22 us a call on the 2-core CPU VM). None when the
    line cannot be read (the caller asks psutil)."""
    try:
        raw = files.read(f"{proc_root}/stat", head=CPU_LINE_MAX)
    except OSError:
        return None
    if not raw or not raw.startswith(b"cpu "):
        return None
    end = raw.find(b"\n")
    if end < 0:
        return None
    try:
        ticks = [int(v) for v in raw[4:end].split()]
    except ValueError:
        return None
    if len(ticks) < 7:  # before Linux 2.6: no iowait, irq, softirq
        return None
    return {name: v / CLK_TCK for name, v in zip(CPU_FIELDS, ticks)}


def online_cpus(files: ProcFiles, sys_root: str = "/sys") -> int | None:
    """The number of CPUs online now, from /sys/devices/system/cpu/online (``0-15``, ``0-3,5,8-11``)
    through a kept descriptor: the file ``psutil.cpu_count()`` (glibc's
    ``sysconf(_SC_NPROCESSORS_ONLN)``) opens and reads at each call. None when unreadable."""
    try:
        raw = files.read(f"{sys_root}/devices/system/cpu/online")
        n = 0
        for part in (raw or b"").split(b","):
            first, _, last = part.partition(b"-")
            n += int(last) - int(first) + 1 if last else 1 if first.strip() else 0
    except (OSError, ValueError):
        return None
    return n or None


@dataclass(frozen=True, slots=True)
class CgroupReading:
    """One read of the cgroup that limits the job's CPU."""

    version: int
    path: str
    """The cgroup folder whose counters are read: the tightest quota's, else the job's own."""
    quota_cores: float | None
    nr_periods: int
    nr_throttled: int


def cgroup_cpu_dir(pid: int, proc_root: str = "/proc", fs_root: str = "") -> tuple[int, str, str] | Unsupported:
    """(version, the job's cgroup folder, its hierarchy's mount point) for the CPU controller.

    Found from /proc/PID/cgroup and our mountinfo; a hybrid host (v1 ``cpu`` plus a v2 unified
    tree) has the controller on v1. ``fs_root`` prefixes every path (tests use fixture trees).
    """
    try:
        with open(f"{proc_root}/{pid}/cgroup", encoding="utf-8") as f:
            entries = parse_proc_cgroup(f.read())
        with open(f"{proc_root}/self/mountinfo", encoding="utf-8", errors="replace") as f:
            mounts = parse_mountinfo(f.read())
    except OSError as e:
        return Unsupported(f"cannot read the job's cgroup: {e.strerror or e}")
    candidates = [(1, e) for e in entries if e.hierarchy != 0 and "cpu" in e.controllers]
    candidates += [(2, e) for e in entries if e.hierarchy == 0]
    for version, entry in candidates:
        for m in mounts:
            ok = ("cpu" in m.super_options and m.fstype == "cgroup") if version == 1 else m.fstype == "cgroup2"
            if not ok or not (entry.path == m.root or entry.path.startswith(m.root.rstrip("/") + "/")):
                continue
            rel = entry.path[len(m.root.rstrip("/")):].lstrip("/")
            top = fs_root + m.mountpoint
            folder = os.path.join(top, rel) if rel else top
            stat = "cpu.cfs_quota_us" if version == 1 else "cpu.stat"
            if os.path.exists(os.path.join(folder, stat)):
                return version, folder, top
    return Unsupported("the job's cgroup has no CPU controller files (cgroup not mounted, or another "
                       "cgroup namespace): CPU quota and throttling are unknown")


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii") as f:
            return f.read()
    except OSError:
        return None


def _quota(version: int, folder: str) -> float | None:
    """CPU quota of one cgroup folder in cores, None when unlimited."""
    try:
        if version == 1:
            q, p = _read(f"{folder}/cpu.cfs_quota_us"), _read(f"{folder}/cpu.cfs_period_us")
            if q is None or p is None or int(q) < 0 or int(p) <= 0:
                return None
            return int(q) / int(p)
        text = _read(f"{folder}/cpu.max")
        if text is None:
            return None
        quota, period = parse_cpu_max(text)
    except (ValueError, IndexError):  # not what the kernel writes: treat as no quota
        return None
    return None if quota is None or period <= 0 else quota / period


def locate_cgroup(pid: int, proc_root: str = "/proc", fs_root: str = "") -> CgroupReading | Unsupported:
    """The cgroup that limits the job's CPU and its quota (the tightest of its cgroup and its
    ancestors), with counters at zero: :func:`read_counters` fills them in."""
    found = cgroup_cpu_dir(pid, proc_root, fs_root)
    if isinstance(found, Unsupported):
        return found
    version, folder, top = found
    best: tuple[float, str] | None = None
    cur = folder
    while True:
        q = _quota(version, cur)
        if q is not None and (best is None or q < best[0]):
            best = (q, cur)
        if cur == top or len(cur) <= len(top):
            break
        cur = os.path.dirname(cur)
    return CgroupReading(version, best[1] if best else folder, best[0] if best else None, 0, 0)


def read_counters(where: CgroupReading, files: ProcFiles | None = None) -> CgroupReading:
    """``where`` with its cgroup's throttling counters read now (through ``files``' kept descriptors
    when given: cpu.stat is written in one piece, like the /proc files)."""
    path = f"{where.path}/cpu.stat"
    if files is not None:
        try:
            raw = files.read(path)
        except OSError:
            raw = None
        text = raw.decode("ascii", "replace") if raw is not None else None
    else:
        text = _read(path)
    stat = parse_flat_keyed(text or "")
    return CgroupReading(where.version, where.path, where.quota_cores, stat.get("nr_periods", 0),
                         stat.get("nr_throttled", 0))


def read_cgroup(pid: int, proc_root: str = "/proc", fs_root: str = "") -> CgroupReading | Unsupported:
    """The job's CPU quota (the tightest of its cgroup and its ancestors) and that cgroup's
    throttling counters."""
    where = locate_cgroup(pid, proc_root, fs_root)
    return where if isinstance(where, Unsupported) else read_counters(where)


def throttle(cur: CgroupReading, prev: CgroupReading | None) -> CgroupCpu:
    """Throttled fraction over the tick: the share of CFS enforcement periods in which the cgroup
    used up its quota (Δnr_throttled / Δnr_periods, Kubernetes' CPUThrottlingHigh measure). Periods
    only count while the cgroup has runnable work, so an idle or unlimited cgroup reads 0.
    ``throttled_usec`` is not used: the kernel sums it over CPUs, so it has no fixed scale."""
    same = prev is not None and prev.path == cur.path
    periods = cur.nr_periods - prev.nr_periods if same else 0
    throttled = cur.nr_throttled - prev.nr_throttled if same else 0
    frac = min(1.0, throttled / periods) if periods > 0 and throttled > 0 else 0.0
    quota: Maybe[float] = cur.quota_cores if cur.quota_cores is not None else NO_CPU_QUOTA
    return CgroupCpu(version=cur.version, quota_cores=quota, throttled_frac=frac, nr_throttled_delta=max(0, throttled))


class HostCollector(Collector):
    field = "host"

    def __init__(self, target: Target, interval: float = 1.0, proc_root: str = "/proc", fs_root: str = "",
                 sys_root: str = "/sys") -> None:
        self.target = target
        self.interval = interval
        self.proc_root = proc_root
        self.fs_root = fs_root
        self.sys_root = sys_root
        self._prev_cpu = None
        self._prev_swap = None
        self._prev_t = 0.0
        self._prev_cg: CgroupReading | None = None
        self._where: tuple[float, CgroupReading | Unsupported] | None = None
        self.others = OtherProcs(proc_root)
        self.files = ProcFiles()
        """Kept descriptors of /proc/stat, /proc/meminfo, /proc/vmstat, the pressure files, the list
        of online CPUs and the cgroup's cpu.stat."""
        self._first = FirstWindow()

    def probe(self) -> Unsupported | None:
        self._baseline()
        return None

    def sample(self) -> HostSample:
        if self._prev_cpu is None:
            self._baseline()
        self._first.wait()  # the rest of a short first window, the first time
        now = time.monotonic()
        dt = max(now - self._prev_t, 1e-3)
        cpu, mem = self._cpu_times(), self._memory()
        busy, steal, iowait = _cpu_shares(cpu, self._prev_cpu)
        sin = max(0, mem.swap_in - self._prev_swap.swap_in) / dt
        sout = max(0, mem.swap_out - self._prev_swap.swap_out) / dt
        self._prev_cpu, self._prev_swap, self._prev_t = cpu, mem, now
        return HostSample(
            t=now,
            cpu_count=online_cpus(self.files, self.sys_root) or psutil.cpu_count() or 1,
            cpu_pct=busy,
            steal_pct=steal,
            iowait_pct=iowait,
            load1=os.getloadavg()[0],
            mem_total=mem.total,
            mem_available=mem.available,
            swap_used=mem.swap_used,
            swap_in_bps=sin,
            swap_out_bps=sout,
            psi=read_psi(self.proc_root, self.files),
            cgroup=self._cgroup(),
            top_others=self.others.sample(self._job_pids()),
        )

    def set_pace(self, main: float, workers: float | None = None) -> None:
        """The relaxed pace (``main`` under 1: the job steadily GPU-bound) scans the processes outside
        the job every RELAXED_EVERY_S instead of EVERY_S (collectors/others.py)."""
        self.others.every_s = RELAXED_EVERY_S if main < 1.0 else EVERY_S

    def _cpu_times(self) -> dict[str, float]:
        got = read_cpu_times(self.files, self.proc_root)
        return got if got is not None else psutil.cpu_times()._asdict()

    def _memory(self) -> Memory:
        got = read_memory(self.files)
        if got is None:  # no MemAvailable or no swap counters (kernels before 3.14): psutil works them out
            vm, sw = psutil.virtual_memory(), psutil.swap_memory()
            got = Memory(vm.total, vm.available, sw.used, sw.sin, sw.sout)
        return got

    def close(self) -> None:
        self.files.close()
        self.others.files.close()

    def _baseline(self) -> None:
        self._prev_cpu, self._prev_swap, self._prev_t = self._cpu_times(), self._memory(), time.monotonic()
        self._cgroup()
        self._first.open()
        # After the window opens: the scan of every process on the host is not one of the rates the
        # first window measures (its list has a window of its own, OtherProcs.every_s), and on the
        # shared proc thread it ran, hundreds of /proc reads long, before the window could start.
        self.others.baseline(self._job_pids())

    def _cgroup(self) -> Maybe[CgroupCpu]:
        now = time.monotonic()
        if self._where is None or now - self._where[0] >= CGROUP_TTL_S:
            self._where = (now, locate_cgroup(self.target.pid, self.proc_root, self.fs_root))
        where = self._where[1]
        cur = where if isinstance(where, Unsupported) else read_counters(where, self.files)
        if isinstance(cur, Unsupported):
            self._prev_cg = None
            return cur
        prev, self._prev_cg = self._prev_cg, cur
        return throttle(cur, prev)

    def _job_pids(self) -> set[int]:
        try:
            return set(self.target.tree().pids())
        except TargetGone:
            return set()


def _cpu_shares(cur: dict[str, float], prev: dict[str, float]) -> tuple[float, Maybe[float], Maybe[float]]:
    """Busy, steal and iowait percent of all CPUs between two readings of the host's CPU times
    (:func:`read_cpu_times`). guest and guest_nice are already inside user and nice, so they are not
    added again."""
    delta = {f: max(0.0, v - prev.get(f, 0.0)) for f, v in cur.items() if f not in ("guest", "guest_nice")}
    total = sum(delta.values())
    if total <= 0:
        return 0.0, 0.0 if "steal" in delta else Unsupported("no steal time on this OS"), \
            0.0 if "iowait" in delta else Unsupported("no iowait time on this OS")
    idle = delta.get("idle", 0.0) + delta.get("iowait", 0.0)
    busy = 100.0 * (total - idle) / total
    steal: Maybe[float] = (100.0 * delta["steal"] / total if "steal" in delta
                           else Unsupported("no steal time on this OS"))
    iowait: Maybe[float] = 100.0 * delta["iowait"] / total if "iowait" in delta else Unsupported(
        "no iowait time on this OS")
    return busy, steal, iowait
