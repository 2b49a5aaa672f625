"""Block devices over one tick, where the job's data lives, and how fast the job reads it.

Devices come from /proc/diskstats, read and parsed here into the counters psutil's
``disk_io_counters(perdisk=True)`` gives (which also stats the file, keeps its wrap bookkeeping and
builds namedtuples: 95 against 39 µs a call on the 2-core CPU VM). Only whole devices
are listed (a partition's I/O is already in its disk's counters); loop, ram and zram devices only
when they were active. ``busy_pct`` is the share of the tick the device had I/O in flight
(``io_ticks``): 100 % saturates a single-queue disk, but an NVMe or a RAID set can serve much more
while showing 100 %, so read it with ``await_ms``.

Locations are the target's working directory and the folders of files the main processes and
DataLoader workers have open for reading (collectors/open_files.py), each with its mount, file system
and block device (a partition is mapped to its parent disk, so ``device`` matches a row of
``devices``). Workers open and close files inside ``__getitem__``, so a folder seen once stays
listed for ``RECENT_S`` (longer while the pace is relaxed, as fewer processes are scanned a tick:
RELAXED_SCAN_PER_TICK).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable

import psutil

from gpuwatch.collectors.base import FIRST_WINDOW_S, Collector, FirstWindow
from gpuwatch.collectors.open_files import readable_files
from gpuwatch.collectors.procfd import ProcFiles
from gpuwatch.collectors.procfs import DiskCounters, Mount, mount_of, parse_diskstats, parse_io, parse_mountinfo, \
    read_age
from gpuwatch.collectors.target import Target, TargetGone
from gpuwatch.model.disk import NO_IO, BlockDevice, DataLocation, DiskSample
from gpuwatch.model.procs import ROLE_MAIN, ROLE_WORKER
from gpuwatch.model.values import Maybe, Unsupported
from gpuwatch.untrusted import clean

RECENT_S = 30.0
"""A data folder stays listed this long after its files were last seen open (a few epochs' worth of
brief opens by workers; long enough not to flicker, short enough to drop a finished phase)."""
MAX_LOCATIONS = 8
"""More data folders than this (ImageNet-style class folders) are merged per mount into their
common parent, so the panel stays readable."""
SCAN_PER_TICK = 3
"""Processes whose open files are listed per tick, taken in turn over the mains and the DataLoader
workers. A CUDA process holds a couple of hundred fds (driver nodes, shared memory) and its workers
inherit them, so listing all nine processes of a job with 8 workers cost ~1 % of a core per tick on
the H200 (bench/profile_self.py). Three a tick sees each of them every 3 s; workers of one loader
open the same kind of files, and a folder seen stays listed for RECENT_S."""
RELAXED_SCAN_PER_TICK = 1
"""Processes whose open files are listed per tick while the pace is relaxed (gpuwatch/pace.py: the job
steadily GPU-bound), and a folder seen then stays listed SCAN_PER_TICK / RELAXED_SCAN_PER_TICK times
RECENT_S: each process is scanned as many times before a folder it had open is dropped, so a folder
is as likely to stay listed as at full pace, and the listing is slower only to show a new one.
The locations feed the verdict through the input and system stages (which device's busy time is
the data's, the data's path and file system in the sentence); a GPU-bound verdict reads none of it,
and the first tick busy falls brings the full pace and SCAN_PER_TICK back. The scan is a readlink of
every descriptor of the process (a CUDA process and its workers hold dozens: driver nodes, shared
memory), the larger part of the disk collector's 1.1 ms a tick on the H200 (run 34's
collector_cost)."""
MOUNTS_TTL_S = 10.0
"""The mount table is re-read this often (mounts rarely change during a run)."""
QUIET_PREFIXES = ("loop", "ram", "zram")
"""Virtual devices listed only while they do I/O."""

NETWORK_FS = frozenset({
    "nfs", "nfs4", "cifs", "smb3", "smbfs", "lustre", "gpfs", "beegfs", "ceph", "glusterfs",
    "afs", "wekafs", "panfs", "orangefs", "pvfs2", "ncpfs", "davfs",
})
LOCAL_FUSE = frozenset({
    "fuse.lxcfs", "fuse.squashfuse", "fuse.fuse-overlayfs", "fuse.portal", "fuse.gvfsd-fuse",
    "fuse.snapfuse", "fuse.bindfs", "fuse.mergerfs", "fuse.encfs", "fuse.gocryptfs", "fuse.ntfs-3g",
    "fuse.appimagelauncherfs", "fuse.xdg-document-portal",
})
"""FUSE file systems that are local: every other ``fuse.*`` (s3fs, gcsfuse, juicefs, rclone,
sshfs, blobfuse2 ...) is treated as network storage."""
NETWORK_FUSE_SOURCES = ("s3fs", "gcsfuse", "rclone", "goofys", "mountpoint-s3", "blobfuse", "juicefs",
                        "sshfs", "alluxio", "ossfs", "geesefs")
"""Source names of network FUSE clients that mount with plain fstype ``fuse``."""

_SKIP_PREFIXES = ("/dev/", "/proc/", "/sys/", "/run/")
_SKIP_PARTS = ("/site-packages/", "/dist-packages/", "/lib/python")
_SKIP_SUFFIXES = (".so", ".py", ".pyc", ".log")


def is_network_fs(fstype: str, source: str = "") -> bool:
    if fstype in NETWORK_FS:
        return True
    if fstype.startswith("fuse."):
        return fstype not in LOCAL_FUSE
    if fstype == "fuse":
        return any(s in os.path.basename(source) for s in NETWORK_FUSE_SOURCES)
    return False


def is_data_file(path: str, mode: str) -> bool:
    """A file a job reads data from: opened for reading, not a library, log or pseudo file."""
    if "r" not in mode or not path.startswith("/"):
        return False
    if path.startswith(_SKIP_PREFIXES) or any(p in path for p in _SKIP_PARTS):
        return False
    return not path.endswith(_SKIP_SUFFIXES)


def block_name(major: int, minor: int, sys_root: str = "/sys") -> str | None:
    """Kernel name of a block device (``nvme0n1p1``, ``dm-0``) from its numbers, or None."""
    if major == 0:  # anonymous devices: tmpfs, overlay, network file systems, btrfs subvolumes
        return None
    link = f"{sys_root}/dev/block/{major}:{minor}"
    if not os.path.exists(link):
        return None
    return os.path.basename(os.path.realpath(link))


def parent_disk(name: str, sys_root: str = "/sys") -> str:
    """The whole disk a partition belongs to (``nvme0n1p1`` -> ``nvme0n1``); other names unchanged."""
    node = f"{sys_root}/class/block/{name}"
    if os.path.exists(f"{node}/partition"):
        return os.path.basename(os.path.dirname(os.path.realpath(node)))
    return name


def is_partition(name: str, sys_root: str = "/sys") -> bool:
    return os.path.exists(f"{sys_root}/class/block/{name}/partition")


def device_of(m: Mount, sys_root: str = "/sys") -> str:
    """The ``devices`` row a mount's I/O lands on, or the mount source when it has no block device."""
    name = block_name(m.major, m.minor, sys_root)
    if name is None and m.source.startswith("/dev/"):  # btrfs reports an anonymous st_dev
        real = os.path.realpath(m.source)
        name = os.path.basename(real) if os.path.exists(f"{sys_root}/class/block/{os.path.basename(real)}") else None
    return parent_disk(name, sys_root) if name else m.source


class DiskCollector(Collector):
    field = "disk"

    def __init__(self, target: Target, interval: float = 1.0, proc_root: str = "/proc", sys_root: str = "/sys"):
        self.target = target
        self.interval = interval
        self.proc_root = proc_root
        self.sys_root = sys_root
        self._prev_disks: dict | None = None
        self._prev_t = 0.0
        self._io: dict[tuple[int, float], int] = {}
        self._io_t: float | None = None
        self._recent: dict[str, tuple[float, int, float]] = {}
        """data folder -> (monotonic time last seen, files open then, how long it stays listed at the pace
        it was seen at; longer if the pace now keeps folders longer)."""
        self._per_tick = SCAN_PER_TICK
        self._partitions: dict[str, bool] = {}
        self._scan_from = 0
        self._mounts_cache: tuple[float, list[Mount]] | None = None
        self._devices_of: dict[Mount, str] = {}
        """Mount -> its block device (sysfs reads), kept as long as the mount table is."""
        self.files = ProcFiles()
        """Kept descriptors of each process's /proc/PID/io (collectors/procfd.py)."""
        self._first = FirstWindow()

    def probe(self) -> Unsupported | None:
        try:
            self._read_disks()
        except (OSError, RuntimeError, ValueError) as e:
            return Unsupported(f"no block device statistics: {e}")
        self._baseline()
        return None

    def _baseline(self) -> None:
        self._prev_disks = self._read_disks()
        self._prev_t = time.monotonic()
        self._target_read_bps()
        self._first.open()

    def sample(self) -> DiskSample:
        if self._prev_disks is None:
            self._baseline()
        self._first.wait()  # the rest of a short first window, the first time
        disks = self._read_disks()
        now = time.monotonic()
        dt = max(now - self._prev_t, 1e-3)
        devices = tuple(self._devices(disks, self._prev_disks, dt))
        self._prev_disks, self._prev_t = disks, now
        read_bps = self._target_read_bps()
        return DiskSample(t=now, devices=devices, locations=self._locations(now), target_read_bps=read_bps)

    # -- devices -------------------------------------------------------------------------
    def _read_disks(self) -> dict[str, DiskCounters]:
        """Every device's counters. psutil reads /sys/block where /proc/diskstats is missing."""
        try:
            with open(f"{self.proc_root}/diskstats", "rb") as f:  # written record by record: read to the end
                return parse_diskstats(f.read())
        except FileNotFoundError:
            return psutil.disk_io_counters(perdisk=True) or {}

    def _devices(self, cur: dict, prev: dict, dt: float) -> Iterable[BlockDevice]:
        for name in sorted(cur):
            if name not in self._partitions:
                self._partitions[name] = is_partition(name, self.sys_root)
            if self._partitions[name] or name not in prev:
                continue
            c, p = cur[name], prev[name]
            reads, writes = _grown(c.read_count, p.read_count), _grown(c.write_count, p.write_count)
            busy_ms = _grown(getattr(c, "busy_time", 0), getattr(p, "busy_time", 0))
            if name.startswith(QUIET_PREFIXES) and reads + writes == 0 and busy_ms == 0:
                continue
            ios = reads + writes
            wait_ms = _grown(c.read_time, p.read_time) + _grown(c.write_time, p.write_time)
            await_ms: Maybe[float] = wait_ms / ios if ios else NO_IO
            yield BlockDevice(
                name=name,
                busy_pct=min(100.0, busy_ms / (dt * 1000.0) * 100.0),
                read_bps=_grown(c.read_bytes, p.read_bytes) / dt,
                write_bps=_grown(c.write_bytes, p.write_bytes) / dt,
                read_iops=reads / dt,
                write_iops=writes / dt,
                await_ms=await_ms,
            )

    # -- the job's reads -----------------------------------------------------------------
    def _target_read_bps(self) -> Maybe[float]:
        """Storage-layer bytes read per second by every process of the tree. A process first seen
        this tick counts from its birth; one that exited during the tick loses its last bytes."""
        nodes = self.target.tree().nodes
        now_wall, now = time.time(), time.monotonic()
        dt = max(now - (self._io_t if self._io_t is not None else now - FIRST_WINDOW_S), 1e-3)
        total, readable, denied = 0.0, 0, 0
        seen = {}
        for n in nodes:
            key = (n.pid, n.create_time)
            try:
                raw = self.files.read(f"{self.proc_root}/{n.pid}/io")
                if raw is None:  # exited
                    continue
                rb = parse_io(raw)[0]
            except PermissionError:
                denied += 1
                continue
            except ValueError:  # not the file the kernel writes: no reading
                continue
            readable += 1
            seen[key] = rb
            if key in self._io:
                total += max(0, rb - self._io[key]) / dt
            else:  # born since the last tick (or first tick): average since birth
                age = read_age(n.pid, self.proc_root)
                total += rb / max(age if age is not None else now_wall - n.create_time, 0.01)
        self._io, self._io_t = seen, now
        self.files.sweep()  # the files of processes and threads that have exited
        if not readable and denied:
            return Unsupported("/proc/PID/io of the job is not readable: run gpuwatch as the job's user or as root")
        return total

    # -- where the data lives ------------------------------------------------------------
    def _locations(self, now: float) -> tuple[DataLocation, ...]:
        try:
            tree = self.target.tree()
        except TargetGone:
            return ()
        mounts = self._mounts()
        out = []
        try:
            # The job chooses its working directory's name: cleaned at the boundary like the data
            # folders (collectors/open_files.py) and the mount points it is matched against.
            cwd = clean(self.target.process.cwd())
        except psutil.Error:
            cwd = None
        if cwd:
            out.append(self._location("cwd", cwd, mounts, 0))
        counts: dict[str, int] = {}
        for n in self._to_scan(tree.nodes):
            try:
                files = readable_files(n.pid, lambda path: is_data_file(path, "r"), self.proc_root)
            except OSError:  # gone, or its fds are not ours to read
                continue
            for path in files:
                d = os.path.dirname(path)
                counts[d] = counts.get(d, 0) + 1
        hold = RECENT_S * SCAN_PER_TICK / self._per_tick
        for d, c in counts.items():
            self._recent[d] = (now, c, hold)
        # Held for the pace it was seen at or the pace now, the longer: a folder last seen at the
        # full pace waits for its process's next scan at the relaxed one too.
        for d in [d for d, (seen, _, kept) in self._recent.items() if now - seen > max(kept, hold)]:
            del self._recent[d]
        folders = {d: c for d, (_, c, _) in self._recent.items()}
        if len(folders) > MAX_LOCATIONS:
            folders = _merge_by_mount(folders, mounts)
        for d in sorted(folders):
            out.append(self._location("data", d, mounts, folders[d]))
        return tuple(out)

    def _to_scan(self, nodes) -> list:
        pool = [n for n in nodes if n.role == ROLE_MAIN] + [n for n in nodes if n.role == ROLE_WORKER]
        n = self._per_tick
        if len(pool) <= n:
            return pool
        start = self._scan_from % len(pool)
        self._scan_from = start + n
        return (pool + pool)[start:start + n]

    def set_pace(self, main: float, workers: float | None = None) -> None:
        """The relaxed pace (``main`` under 1: the job steadily GPU-bound) lists the open files of
        RELAXED_SCAN_PER_TICK processes a tick instead of SCAN_PER_TICK."""
        self._per_tick = RELAXED_SCAN_PER_TICK if main < 1.0 else SCAN_PER_TICK

    def close(self) -> None:
        self.files.close()

    def _mounts(self) -> list[Mount]:
        """The target's view of the mounts (its namespace); ours when that is unreadable."""
        now = time.monotonic()
        if self._mounts_cache is not None and now - self._mounts_cache[0] < MOUNTS_TTL_S:
            return self._mounts_cache[1]
        mounts: list[Mount] = []
        for who in (str(self.target.pid), "self"):
            try:
                with open(f"{self.proc_root}/{who}/mountinfo", encoding="utf-8", errors="replace") as f:
                    mounts = parse_mountinfo(f.read())
                break
            except OSError:
                continue
        self._mounts_cache = (now, mounts)
        self._devices_of.clear()
        return mounts

    def _location(self, kind: str, path: str, mounts: list[Mount], nfiles: int) -> DataLocation:
        m = mount_of(path, mounts)
        if m is None:
            return DataLocation(kind, path, "?", "?", "?", False, nfiles)
        device = self._devices_of.get(m)
        if device is None:
            device = self._devices_of[m] = device_of(m, self.sys_root)
        return DataLocation(kind=kind, path=path, mountpoint=m.mountpoint, device=device,
                            fstype=m.fstype, network=is_network_fs(m.fstype, m.source), open_files=nfiles)


def _grown(cur: int, prev: int) -> int:
    """How far a counter grew over the tick. One that went down wrapped or restarted from zero
    (the kernel keeps the millisecond counters in 32 bits): it grew by its new value, which is what
    psutil's ``nowrap`` counters gave."""
    return cur - prev if cur >= prev else cur


def _merge_by_mount(folders: dict[str, int], mounts: list[Mount]) -> dict[str, int]:
    groups: dict[str, list[str]] = {}
    for d in folders:
        m = mount_of(d, mounts)
        groups.setdefault(m.mountpoint if m else "?", []).append(d)
    out = {}
    for dirs in groups.values():
        common = os.path.commonpath(dirs) if len(dirs) > 1 else dirs[0]
        out[common] = sum(folders[d] for d in dirs)
    return out
