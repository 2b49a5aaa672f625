"""The /proc parsers and readers, on fixture files (tests/data/proc) and on this machine's /proc."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from gpuwatch.collectors.procfs import (
    CLK_TCK,
    mount_of,
    DiskCounters,
    parse_cpu_max,
    parse_diskstats,
    parse_flat_keyed,
    parse_mountinfo,
    parse_pressure,
    parse_proc_cgroup,
    parse_schedstat,
    parse_stat,
    read_schedstat,
    read_tasks,
    read_waits,
)

DATA = Path(__file__).parent / "data"
PROC = str(DATA / "proc")

# Real lines from this VM's kernel 6.18 (a cpu_train.py main thread), the name edited.
STAT = ("13643 (py (x) y) S 13641 13643 13643 0 -1 4194304 65119 0 0 0 153 15 0 0 20 0 4 0 95315 889081856 "
        "78083 18446744073709551615 94812988596224 94812988596565 140720499450912 0 0 0 0 16781312 65538 1 0 0 "
        "17 0 0 0 0 0 0 94812988607920 94812988608536 94813841846272 140720499456574 140720499456730 "
        "140720499456730 140720499458012 0\n")


def test_parse_stat_handles_parentheses_in_the_name():
    st = parse_stat(STAT)
    assert st.tid == 13643
    assert st.name == "py (x) y"
    assert st.state == "S"
    assert st.cpu_ticks == 153 + 15
    assert st.starttime == 95315


def test_parse_stat_of_this_thread_matches_os():
    text = Path(f"/proc/self/task/{threading.get_native_id()}/stat").read_text()
    st = parse_stat(text)
    assert st.tid == threading.get_native_id()
    assert st.state == "R"  # it is running: it is reading its own stat
    assert st.cpu_ticks / CLK_TCK <= sum(os.times()[:2]) + 0.02


def test_parse_schedstat():
    assert parse_schedstat("1694371838 193891115 274\n") == (1694371838, 193891115, 274)


def test_read_tasks_fixture():
    tasks = {t.stat.tid: t for t in read_tasks(4242, PROC)}
    assert set(tasks) == {4242, 4250, 4251, 4252}
    assert tasks[4250].stat.name == "pt_autograd_0"
    assert tasks[4251].stat.name == "pt_data_pin" and tasks[4251].stat.state == "D"
    assert tasks[4252].stat.name == "odd) name (x"
    assert tasks[4242].wait_ns == 193891115 and tasks[4242].run_ns == 1694371838
    assert tasks[4242].stat.cpu_ticks == 168


def test_read_tasks_without_schedstat_and_for_gone_process():
    (task,) = read_tasks(4243, PROC)
    assert task.stat.name == "pt_data_worker"
    assert task.wait_ns is None and task.run_ns is None
    assert read_tasks(999999, PROC) is None
    assert read_schedstat(999999, root=PROC) is None


def test_read_schedstat_leader_and_thread():
    assert read_schedstat(4242, root=PROC) == (1694371838, 193891115, 274)
    assert read_schedstat(4242, 4250, root=PROC) == (105417715, 144086069, 59)


def test_read_tasks_of_this_process_sees_a_named_thread():
    ready, stop = threading.Event(), threading.Event()

    def body():
        ready.set()
        stop.wait(5)

    th = threading.Thread(target=body, name="gw_probe_thread")
    th.start()
    try:
        ready.wait(5)
        # Python sets the OS thread name on Linux since 3.14 only; set it by hand through /proc.
        Path(f"/proc/self/task/{th.native_id}/comm").write_text("gw_probe")
        tasks = {t.stat.tid: t for t in read_tasks(os.getpid())}
        assert tasks[th.native_id].stat.name == "gw_probe"
        assert tasks[th.native_id].stat.state in ("S", "R")  # R for a moment while it is woken
        assert tasks[os.getpid()].wait_ns is not None
    finally:
        stop.set()
        th.join()


def test_parse_pressure_fixture():
    cpu = parse_pressure((DATA / "proc/pressure/cpu").read_text())
    io = parse_pressure((DATA / "proc/pressure/io").read_text())
    assert cpu["some"]["avg10"] == 12.5 and cpu["full"]["avg10"] == 0.0
    assert io["some"]["avg10"] == 31.25 and io["full"]["avg10"] == 20.75
    assert io["some"]["total"] == 3364494


def test_parse_pressure_old_kernel_without_cpu_full():
    cpu = parse_pressure((DATA / "proc_psi_old/pressure/cpu").read_text())
    assert set(cpu) == {"some"}


def test_parse_proc_cgroup():
    entries = parse_proc_cgroup((DATA / "cgroup/v1/proc/4242/cgroup").read_text())
    cpu = [e for e in entries if "cpu" in e.controllers]
    assert len(cpu) == 1
    assert cpu[0].hierarchy == 4 and cpu[0].controllers == ("cpu", "cpuacct") and cpu[0].path == "/docker/abc123"
    v2 = [e for e in entries if e.hierarchy == 0]
    assert v2[0].controllers == () and v2[0].path == "/system.slice/docker.service"


MOUNTINFO = r"""27 1 259:2 / / rw,relatime - ext4 /dev/nvme0n1p2 rw
28 27 253:0 / /data rw,relatime shared:5 - xfs /dev/mapper/vg-data rw,attr2
29 27 0:50 / /mnt/nfs rw,relatime - nfs4 fs1:/export/imagenet rw,vers=4.2
30 27 0:51 / /mnt/my\040data rw,relatime - fuse.s3fs s3fs rw,user_id=0
31 28 253:0 /datasets /data/bind rw,relatime - xfs /dev/mapper/vg-data rw
32 27 0:52 / /data/bind rw,relatime - tmpfs tmpfs rw
"""


def test_parse_mountinfo_and_mount_of():
    mounts = parse_mountinfo(MOUNTINFO)
    assert len(mounts) == 6
    nfs = mounts[2]
    assert (nfs.major, nfs.minor, nfs.fstype, nfs.source) == (0, 50, "nfs4", "fs1:/export/imagenet")
    assert nfs.super_options == ("rw", "vers=4.2")
    assert mounts[3].mountpoint == "/mnt/my data"  # \040 unescaped
    assert mounts[4].root == "/datasets"
    assert mount_of("/mnt/nfs/train/n01/x.jpg", mounts).fstype == "nfs4"
    assert mount_of("/mnt/nfsother/x", mounts).mountpoint == "/"  # a prefix of the name is not a parent
    assert mount_of("/data/a.bin", mounts).source == "/dev/mapper/vg-data"
    assert mount_of("/mnt/my data/y", mounts).fstype == "fuse.s3fs"
    assert mount_of("/data/bind/z", mounts).fstype == "tmpfs"  # mounted over: the later mount wins
    assert mount_of("/etc/passwd", mounts).fstype == "ext4"


def test_parse_mountinfo_of_this_machine_has_root():
    mounts = parse_mountinfo(Path("/proc/self/mountinfo").read_text())
    assert mount_of("/", mounts) is not None
    assert mount_of("/proc/self", mounts).fstype == "proc"


DISKSTATS = (
    # Linux 5.5+: 20 fields (discard and flush counters appended).
    " 259       0 nvme0n1 4137 1203 402854 1611 9283 7120 1170992 9310 0 5724 11015 0 0 0 0 1247 93\n"
    " 259       1 nvme0n1p1 3900 1203 398000 1500 9000 7120 1169000 9200 0 5600 10800 0 0 0 0 0 0\n"
    # Linux 2.6 to 4.17: 14 fields; a partition in the 2.6.x short layout: 7.
    "   8       0 sda 10 2 160 7 4 1 48 3 0 9 10\n"
    "   8       1 sda1 5 80 2 16\n"
    # Linux 2.4: the name comes fourth.
    "   3     0   8 hda 9 10 11 12 13 14 15 16 17 18 19\n"
    "   7       0 odd 1 2 3\n"  # no layout psutil knows: skipped
)


def test_parse_diskstats_layouts():
    d = parse_diskstats(DISKSTATS.encode())
    assert set(d) == {"nvme0n1", "nvme0n1p1", "sda", "sda1", "hda"}
    assert d["nvme0n1"] == DiskCounters(read_count=4137, write_count=9283, read_bytes=402854 * 512,
                                        write_bytes=1170992 * 512, read_time=1611, write_time=9310, busy_time=5724)
    assert d["sda"] == DiskCounters(10, 4, 160 * 512, 48 * 512, 7, 3, 9)
    assert d["sda1"] == DiskCounters(5, 2, 80 * 512, 16 * 512, 0, 0, 0)
    assert d["hda"] == DiskCounters(8, 12, 10 * 512, 14 * 512, 11, 15, 17)


def test_parse_diskstats_matches_psutil_on_this_machine():
    psutil = pytest.importorskip("psutil")
    ours = parse_diskstats(Path("/proc/diskstats").read_bytes())
    theirs = psutil.disk_io_counters(perdisk=True)
    assert set(ours) == set(theirs)
    for name, c in ours.items():  # counters move between the two reads: only an idle device is compared exactly
        t = theirs[name]
        assert c.read_count <= t.read_count and c.write_count <= t.write_count and c.busy_time <= t.busy_time


def test_cgroup_value_files():
    assert parse_cpu_max("max 100000\n") == (None, 100000)
    assert parse_cpu_max("150000 100000\n") == (150000, 100000)
    stat = parse_flat_keyed("usage_usec 7\nnr_periods 300\nnr_throttled 120\nthrottled_usec 4500000\nbad x\n")
    assert stat == {"usage_usec": 7, "nr_periods": 300, "nr_throttled": 120, "throttled_usec": 4500000}


@pytest.mark.parametrize("text", ["", "garbage", "1 (x"])
def test_parse_stat_rejects_garbage(text):
    with pytest.raises((ValueError, IndexError)):
        parse_stat(text)


def test_read_waits_reads_only_the_schedstat_files():
    n, waits = read_waits(4242, PROC)
    assert n == 4 and waits[4242] == 193891115
    assert waits == {t.stat.tid: t.wait_ns for t in read_tasks(4242, PROC) if t.wait_ns is not None}
    assert read_waits(4243, PROC) == (1, {})  # a thread without schedstat: counted, no wait
    assert read_waits(999999, PROC) is None


_THREADED = (
    "import sys, threading\n"
    "stop = threading.Event()\n"
    "print(flush=True)\n"
    "sys.stdin.readline()\n"
    "th = threading.Thread(target=stop.wait)\n"
    "th.start()\n"
    "print(th.native_id, flush=True)\n"
    "sys.stdin.readline()\n"
    "stop.set()\n"
    "th.join()\n"
    "print(flush=True)\n"
    "sys.stdin.readline()\n"
)
"""A process that starts one thread and ends it, each on cue: its threads are the test's alone (the
test process's own come and go with other tests' daemon threads, which can leave the count as it was)."""


def test_thread_lists_follow_the_thread_count_and_forget():
    """A process's thread list is listed again when its stat's thread count changes, or after a
    reader found one of its threads gone; else the kept list is handed back."""
    from gpuwatch.collectors.procfs import read_stat
    from gpuwatch.collectors.tid_lists import TidLists

    proc = subprocess.Popen([sys.executable, "-c", _THREADED], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdin is not None and proc.stdout is not None
    lists = TidLists(ttl_s=60.0)

    def tids() -> tuple[int, ...] | None:
        st = read_stat(proc.pid)
        return lists.get(proc.pid, st.starttime, st.num_threads)

    def cue() -> str:
        proc.stdin.write("\n")
        proc.stdin.flush()
        return proc.stdout.readline().strip()

    try:
        proc.stdout.readline()  # up
        before = tids()
        assert proc.pid in before and tids() is before  # same count: the kept list
        tid = int(cue())
        with_thread = tids()
        assert tid in with_thread and tid not in before
        cue()  # the thread has ended in Python: its task may still be leaving the kernel for a moment
        deadline = time.monotonic() + 10.0
        while read_stat(proc.pid).num_threads > 1 and time.monotonic() < deadline:
            time.sleep(0.005)
        assert tid not in tids()
        kept = tids()
        lists.forget(proc.pid)
        assert tids() is not kept and tids() == kept
    finally:
        proc.kill()
        proc.wait()
        proc.stdin.close()
        proc.stdout.close()
    assert lists.get(999_999_999, 0, 1) is None


def test_parse_diskstats_skips_a_line_it_cannot_read_and_keeps_the_others():
    good = "   8       0 sda 10 0 80 5 20 0 160 7 0 9 12 0 0 0 0\n"
    bad = "   8      16 sdb x 0 80 5 20 0 160 7 0 9 12 0 0 0 0\n"
    assert list(parse_diskstats((bad + good).encode())) == ["sda"]
