"""The disk collector: device rates on fixture counters and sysfs, file-system rules, and a real
job whose DataLoader workers read files from a temporary folder."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import namedtuple
from pathlib import Path

import psutil
import pytest

from gpuwatch.collectors import disk as disk_mod
from gpuwatch.collectors.disk import (
    RECENT_S,
    RELAXED_SCAN_PER_TICK,
    SCAN_PER_TICK,
    DiskCollector,
    block_name,
    device_of,
    is_data_file,
    is_network_fs,
    parent_disk,
)
from gpuwatch.collectors.procfs import parse_mountinfo
from gpuwatch.collectors.target import Node, Target, TargetGone, Tree
from gpuwatch.model.values import Unsupported

pytestmark = pytest.mark.timeout(120)
SYS = str(Path(__file__).parent / "data" / "sys")


sdiskio = namedtuple("sdiskio", "read_count write_count read_bytes write_bytes read_time write_time "
                     "read_merged_count write_merged_count busy_time")
"""psutil's per-disk counters on Linux, field for field."""


def io(reads=0, writes=0, rbytes=0, wbytes=0, rtime=0, wtime=0, busy=0):
    return sdiskio(reads, writes, rbytes, wbytes, rtime, wtime, 0, 0, busy)


# -- pure rules ------------------------------------------------------------------------------
@pytest.mark.parametrize("fstype,source,net", [
    ("nfs4", "fs1:/export", True),
    ("nfs", "fs1:/export", True),
    ("cifs", "//srv/share", True),
    ("lustre", "10.0.0.1@tcp:/lfs", True),
    ("ceph", "mon1:/", True),
    ("fuse.s3fs", "s3fs", True),
    ("fuse.gcsfuse", "bucket", True),
    ("fuse.juicefs", "redis://x", True),
    ("fuse", "/usr/bin/s3fs", True),
    ("fuse.lxcfs", "lxcfs", False),
    ("fuse.squashfuse", "img", False),
    ("fuse", "something", False),
    ("ext4", "/dev/nvme0n1p1", False),
    ("xfs", "/dev/mapper/vg-data", False),
    ("overlay", "overlay", False),
    ("tmpfs", "tmpfs", False),
])
def test_network_fs(fstype, source, net):
    assert is_network_fs(fstype, source) is net


@pytest.mark.parametrize("path,mode,data", [
    ("/data/imagenet/train/n01/x.jpg", "r", True),
    ("/mnt/nfs/shard-0001.tar", "r", True),
    ("/data/train.npy", "r+", True),  # np.memmap's default mode
    ("/runs/exp1/log.txt", "w", False),
    ("/runs/exp1/metrics.jsonl", "a", False),
    ("/usr/lib/python3.11/site-packages/torch/lib/libtorch.so", "r", False),
    ("/dev/shm/torch_123_456", "r", False),
    ("/proc/123/stat", "r", False),
    ("/home/u/.venv/lib/python3.11/site-packages/x/data.json", "r", False),
    ("/home/u/train.py", "r", False),
])
def test_data_file_filter(path, mode, data):
    assert is_data_file(path, mode) is data


def test_partition_maps_to_parent_disk_on_fixture_sysfs():
    assert block_name(259, 1, SYS) == "nvme0n1p1"
    assert parent_disk("nvme0n1p1", SYS) == "nvme0n1"
    assert parent_disk("nvme0n1", SYS) == "nvme0n1"
    assert parent_disk("dm-0", SYS) == "dm-0"
    assert block_name(0, 50, SYS) is None  # anonymous device (nfs, tmpfs, overlay)
    assert block_name(8, 0, SYS) is None  # not on this fixture
    mounts = parse_mountinfo(
        "27 1 259:2 / / rw - ext4 /dev/nvme0n1p2 rw\n"
        "28 27 253:0 / /data rw - xfs /dev/mapper/vg-data rw\n"
        "29 27 0:50 / /mnt/nfs rw - nfs4 fs1:/export/imagenet rw\n")
    assert [device_of(m, SYS) for m in mounts] == ["nvme0n1", "dm-0", "fs1:/export/imagenet"]


def test_devices_skip_partitions_and_idle_loops_and_compute_rates():
    c = DiskCollector.__new__(DiskCollector)
    c.sys_root, c._partitions = SYS, {}
    prev = {"nvme0n1": io(100, 10, 1 << 20, 0, 50, 5, 1000), "nvme0n1p1": io(100, 10, 1 << 20, 0, 50, 5, 1000),
            "dm-0": io(), "loop0": io(), "loop1": io()}
    cur = {"nvme0n1": io(300, 10, 201 << 20, 0, 450, 5, 1500), "nvme0n1p1": io(300, 10, 201 << 20, 0, 450, 5, 1500),
           "dm-0": io(), "loop0": io(), "loop1": io(reads=4, rbytes=4096, busy=1), "new0": io(5)}
    rows = {d.name: d for d in c._devices(cur, prev, 2.0)}
    assert set(rows) == {"nvme0n1", "dm-0", "loop1"}  # no partition, idle loop, or device new this tick
    n = rows["nvme0n1"]
    assert n.busy_pct == pytest.approx(25.0)  # 500 ms busy in 2 s
    assert n.read_bps == pytest.approx((200 << 20) / 2.0)
    assert n.read_iops == pytest.approx(100.0) and n.write_iops == 0.0
    assert n.await_ms == pytest.approx(2.0)  # 400 ms of waiting over 200 reads
    assert isinstance(rows["dm-0"].await_ms, Unsupported) and rows["dm-0"].busy_pct == 0.0


def test_device_counters_that_wrapped_grew_by_their_new_value():
    """The kernel prints the millisecond counters in 32 bits: one that went down wrapped (psutil's
    ``nowrap`` counters read the same)."""
    c = DiskCollector.__new__(DiskCollector)
    c.sys_root, c._partitions = SYS, {}
    prev = {"nvme0n1": io(100, 0, 0, 0, (1 << 32) - 100, 0, (1 << 32) - 10)}
    cur = {"nvme0n1": io(200, 0, 0, 0, 300, 0, 490)}
    n = next(iter(c._devices(cur, prev, 1.0)))
    assert n.busy_pct == pytest.approx(49.0) and n.await_ms == pytest.approx(3.0)


def test_open_file_scan_is_bounded_and_rotates_over_workers():
    nodes = [Node(1, 0, "main", 0, None, "python", ""), Node(2, 0, "main", 1, None, "python", "")]
    nodes += [Node(100 + i, 1, "worker", 0, 1, "pt_data_worker", "") for i in range(30)]
    nodes.append(Node(99, 1, "other", None, 1, "python", ""))
    c = DiskCollector.__new__(DiskCollector)
    c._scan_from, c._per_tick = 0, SCAN_PER_TICK
    covered = set()
    ticks = -(-32 // SCAN_PER_TICK)  # 2 mains + 30 workers, in turn
    for _ in range(ticks):
        batch = c._to_scan(nodes)
        assert len(batch) == SCAN_PER_TICK
        assert all(n.role != "other" for n in batch)
        covered |= {n.pid for n in batch}
    assert covered == {1, 2} | {100 + i for i in range(30)}
    assert [n.pid for n in c._to_scan(nodes[:2])] == [1, 2]  # a small job: every process, every tick


class _Job:
    """A target with a main process and ``workers`` workers (pids from 100); its working directory
    cannot be read."""

    pid = os.getpid()

    class process:  # noqa: N801 - stands in for the psutil.Process attribute
        @staticmethod
        def cwd():
            raise psutil.AccessDenied(os.getpid())

    def __init__(self, workers: int = 8) -> None:
        self.workers = workers

    def tree(self):
        nodes = [Node(1, 0, "main", None, None, "python", "")]
        nodes += [Node(100 + i, 1, "worker", None, 1, "pt_data_worker", "") for i in range(self.workers)]
        return Tree(1, tuple(nodes))


def _open_files(monkeypatch, open_now: dict[int, list[str]]) -> list[int]:
    """The open-file listing replaced by ``open_now`` (pid -> paths); returns the pids listed, in turn."""
    scanned: list[int] = []

    def files(pid, keep, proc_root="/proc"):
        scanned.append(pid)
        return open_now.get(pid, [])

    monkeypatch.setattr(disk_mod, "readable_files", files)
    return scanned


def test_relaxed_pace_scans_one_process_a_tick_and_keeps_folders_as_many_scans(monkeypatch):
    from gpuwatch.pace import FULL, RELAXED

    open_now = {100: ["/data/a/x.bin"]}
    scanned = _open_files(monkeypatch, open_now)
    c = DiskCollector(_Job())
    c.set_pace(*RELAXED)
    t = 0.0
    while 100 not in scanned:
        t += 1.0
        c._locations(t)
        assert len(scanned) == t * RELAXED_SCAN_PER_TICK
    seen = t
    assert [loc.path for loc in c._locations(t + 1)] == ["/data/a"]
    open_now.clear()  # closed: listed as long as the same number of scans of each process allows
    hold = RECENT_S * SCAN_PER_TICK / RELAXED_SCAN_PER_TICK
    assert [loc.path for loc in c._locations(seen + hold - 1)] == ["/data/a"]
    assert c._locations(seen + hold + 1) == ()
    c.set_pace(*FULL)
    open_now[100] = ["/data/a/x.bin"]
    scanned.clear()
    t = seen + hold + 1
    while 100 not in scanned:
        t += 1.0
        c._locations(t)
    assert len(scanned) % SCAN_PER_TICK == 0
    open_now.clear()
    assert [loc.path for loc in c._locations(t + RECENT_S - 1)] == ["/data/a"]
    assert c._locations(t + RECENT_S + 1) == ()
    c.close()


def test_a_folder_seen_just_before_the_pace_relaxes_stays_listed_until_its_process_is_scanned_again(monkeypatch):
    # 41 processes: one a tick comes back to each every 41 s, longer than RECENT_S. A folder last
    # seen at the full pace, open in one worker only, stays listed through the slower round.
    from gpuwatch.pace import FULL, RELAXED

    scanned = _open_files(monkeypatch, {100: ["/data/a/x.bin"]})
    c = DiskCollector(_Job(workers=40))
    c.set_pace(*FULL)
    t = 0.0
    while 100 not in scanned:
        t += 1.0
        c._locations(t)
    c.set_pace(*RELAXED)
    scanned.clear()
    while 100 not in scanned:
        t += 1.0
        assert [loc.path for loc in c._locations(t)] == ["/data/a"], (t, len(scanned))
    c.close()


# -- a real job ------------------------------------------------------------------------------
def _data_locations(sample):
    return [loc for loc in sample.locations if loc.kind == "data"]


@pytest.mark.slow
def test_reading_job_rates_and_locations(read_job):
    c = DiskCollector(Target(read_job.pid))
    assert c.probe() is None
    samples = [c.sample()]
    for _ in range(2):
        time.sleep(1.0)
        samples.append(c.sample())
    s = samples[-1]
    # Two workers each read a 256 KiB file from the device every ~20 ms (up to ~12 MB/s each).
    rates = [x.target_read_bps for x in samples[1:]]
    assert all(isinstance(r, float) for r in rates)
    assert max(rates) > 1e6, rates

    root = os.stat("/")
    names = {d.name for d in s.devices}
    (cwd,) = [loc for loc in s.locations if loc.kind == "cwd"]
    assert cwd.path == os.path.realpath(read_job.workdir)
    assert cwd.network is False and cwd.mountpoint == "/"
    if os.major(root.st_dev) != 0:  # the root file system sits on a block device listed in devices
        assert cwd.device in names
        dev = next(d for d in s.devices if d.name == cwd.device)
        assert 0.0 <= dev.busy_pct <= 100.0 and dev.read_bps >= 0.0

    data = _data_locations(s)
    assert len(data) == 1, s.locations
    (loc,) = data
    assert loc.path == os.path.realpath(os.path.join(read_job.workdir, "data"))
    assert loc.open_files >= 1 and loc.fstype == cwd.fstype and loc.device == cwd.device
    assert all(f.startswith("item_") for f in os.listdir(loc.path))


@pytest.mark.slow
def test_idle_job_reads_nothing_and_sees_no_data_folder(busy_job):
    c = DiskCollector(Target(busy_job.pid))
    c.sample()
    time.sleep(0.5)
    s = c.sample()
    assert _data_locations(s) == []
    # The busy job reads no files: anything left is the odd page-in, far below the reader's MB/s.
    assert isinstance(s.target_read_bps, float) and s.target_read_bps < 1e6


def test_loop_and_ram_devices_hidden_when_idle():
    c = DiskCollector(Target(os.getpid()))
    s = c.sample()
    counters = psutil.disk_io_counters(perdisk=True)
    for d in s.devices:
        assert d.name in counters
        assert not os.path.exists(f"/sys/class/block/{d.name}/partition")
        if d.name.startswith(("loop", "ram", "zram")):
            assert d.read_iops + d.write_iops > 0 or d.busy_pct > 0


def test_exited_target_raises_target_gone():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        c = DiskCollector(Target(proc.pid, refresh_s=0.0))
        assert isinstance(c.sample().target_read_bps, float)
        proc.kill()
        proc.wait(10)
        with pytest.raises(TargetGone):
            c.sample()
    finally:
        proc.kill()
        proc.wait(10)


def test_the_working_directory_the_job_named_is_cleaned(tmp_path):
    """The job chooses its working directory's name: an OSC title sequence and a bidi override in it
    come back written out, as the data folders do (review 32, item 4: the cwd location reached the
    --json stream raw)."""
    work = tmp_path / "dir_\x1b]0;CWD\x07_\u202e_x"
    work.mkdir()
    job = subprocess.Popen([sys.executable, "-c", "import time; print('ok', flush=True); time.sleep(60)"],
                           stdout=subprocess.PIPE, cwd=str(work))
    try:
        assert job.stdout.readline().strip() == b"ok"
        c = DiskCollector(Target(job.pid))
        (cwd,) = [loc for loc in c._locations(time.monotonic()) if loc.kind == "cwd"]
        c.close()
    finally:
        job.kill()
        job.wait()
    assert cwd.path == os.path.realpath(tmp_path) + "/dir_\\x1b]0;CWD\\x07_\\u202e_x"
    assert cwd.mountpoint != "?"  # still matched to its mount
