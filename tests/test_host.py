"""The host collector: PSI and cgroup files on fixtures (v1, v2, hybrid, bind-mounted), a real
CPU quota on a temporary cgroup, and the live host around a real job."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from gpuwatch.collectors import host as host_mod
from gpuwatch.collectors.host import (
    PSI_DISABLED,
    PSI_MISSING,
    CgroupReading,
    HostCollector,
    read_cgroup,
    online_cpus,
    read_cpu_times,
    read_memory,
    read_psi,
    throttle,
)
from gpuwatch.collectors.procfd import ProcFiles
from gpuwatch.collectors.target import Target
from gpuwatch.model.host import Psi
from gpuwatch.model.values import Unsupported

pytestmark = pytest.mark.timeout(120)
DATA = Path(__file__).parent / "data"

HALF_BURN = ("import time\nwhile True:\n    end = time.perf_counter() + 0.05\n"
             "    while time.perf_counter() < end: pass\n    time.sleep(0.05)\n")
"""Busy half the time: about 50 % of a core."""
FULL_BURN = "while True: pass\n"


# -- PSI -------------------------------------------------------------------------------------
def test_psi_fixture():
    assert read_psi(str(DATA / "proc")) == Psi(cpu_some=12.5, io_some=31.25, io_full=20.75, mem_some=0.0,
                                               mem_full=0.0)


def test_psi_through_kept_descriptors_reads_the_same(tmp_path):
    files = ProcFiles()
    assert read_psi(str(DATA / "proc"), files) == read_psi(str(DATA / "proc"))
    assert len(files) == 3  # kept for the next tick
    assert read_psi(str(tmp_path), files) is PSI_MISSING  # a missing file still gives its reason
    files.close()


def test_psi_disabled_at_boot_through_kept_descriptors(monkeypatch):
    def refuse(*a, **k):
        raise OSError(errno.EOPNOTSUPP, "Operation not supported")

    monkeypatch.setattr(host_mod, "open", refuse, raising=False)
    monkeypatch.setattr(ProcFiles, "read", lambda self, path: refuse())
    assert read_psi("/proc", ProcFiles()) is PSI_DISABLED


def test_memory_and_swap_match_psutil():
    files = ProcFiles()
    got = read_memory(files)
    vm, sw = psutil.virtual_memory(), psutil.swap_memory()
    assert got is not None
    assert got.total == vm.total and got.swap_used == sw.used
    assert abs(got.available - vm.available) < 64 << 20  # read a moment apart on a busy machine
    # psutil counts swapped pages at 4 KiB; /proc/vmstat counts pages of the kernel's page size
    assert got.swap_in * 4096 == sw.sin * host_mod.PAGE_SIZE and got.swap_out * 4096 == sw.sout * host_mod.PAGE_SIZE
    files.close()


def test_memory_lines_missing_or_unparsable_leave_it_to_psutil(tmp_path):
    (tmp_path / "vmstat").write_bytes(b"nr_free_pages 10\npswpin 3\npswpout 4\n")
    (tmp_path / "meminfo").write_bytes(b"MemTotal:  100 kB\nMemFree: 5 kB\nSwapTotal: 8 kB\nSwapFree: 2 kB\n")
    assert read_memory(ProcFiles(), str(tmp_path)) is None  # no MemAvailable (before 3.14)
    (tmp_path / "meminfo").write_bytes(b"MemTotal:  100 kB\nMemAvailable: 50 kB\nSwapTotal: 8 kB\nSwapFree: 2 kB")
    got = read_memory(ProcFiles(), str(tmp_path))  # the last line without its newline
    assert got == host_mod.Memory(102400, 51200, 6144, 3 * host_mod.PAGE_SIZE, 4 * host_mod.PAGE_SIZE)
    (tmp_path / "vmstat").write_bytes(b"pswpin x\npswpout 4\n")
    assert read_memory(ProcFiles(), str(tmp_path)) is None


def test_cpu_times_match_psutil():
    files = ProcFiles()
    before = psutil.cpu_times()._asdict()
    got = read_cpu_times(files)
    after = psutil.cpu_times()._asdict()
    assert got is not None and list(got) == list(after)  # the same fields, in psutil's order
    for name, v in got.items():
        assert before[name] - 1e-9 <= v <= after[name] + 1e-9, name
    assert read_cpu_times(files) is not None and len(files) == 1  # kept for the next tick
    files.close()


def test_cpu_times_of_older_kernels_and_odd_files(tmp_path):
    (tmp_path / "stat").write_bytes(b"cpu  100 0 50 800 10 0 5\ncpu0 100 0 50 800 10 0 5\nintr 1 2 3\n")
    got = read_cpu_times(ProcFiles(), str(tmp_path))  # before 2.6.11: no steal, guest, guest_nice
    assert list(got) == ["user", "nice", "system", "idle", "iowait", "irq", "softirq"]
    assert got["user"] == 100 / host_mod.CLK_TCK
    (tmp_path / "stat").write_bytes(b"cpu  100 0 50\n")
    assert read_cpu_times(ProcFiles(), str(tmp_path)) is None
    (tmp_path / "stat").write_bytes(b"intr 1 2 3\n")
    assert read_cpu_times(ProcFiles(), str(tmp_path)) is None


def test_online_cpus(tmp_path):
    assert online_cpus(ProcFiles()) == psutil.cpu_count()
    cpus = tmp_path / "devices" / "system" / "cpu"
    cpus.mkdir(parents=True)
    for text, n in ((b"0-15\n", 16), (b"0\n", 1), (b"0-3,5,8-11\n", 9), (b"\n", None), (b"0-x\n", None)):
        (cpus / "online").write_bytes(text)
        assert online_cpus(ProcFiles(), str(tmp_path)) == n, text
    assert online_cpus(ProcFiles(), str(tmp_path / "nowhere")) is None


def test_psi_old_kernel_without_cpu_full():
    psi = read_psi(str(DATA / "proc_psi_old"))
    assert psi.cpu_some == 5.0 and psi.io_full == 0.5


def test_psi_missing(tmp_path):
    psi = read_psi(str(tmp_path))
    assert psi is PSI_MISSING and "CONFIG_PSI" in psi.reason


def test_psi_disabled_at_boot(monkeypatch):
    def refuse(*a, **k):
        raise OSError(errno.EOPNOTSUPP, "Operation not supported")

    monkeypatch.setattr(host_mod, "open", refuse, raising=False)
    psi = read_psi("/proc")
    assert psi is PSI_DISABLED and "psi=1" in psi.reason


def test_psi_of_this_kernel_in_range():
    psi = read_psi()
    if isinstance(psi, Unsupported):
        pytest.skip(psi.reason)
    for v in (psi.cpu_some, psi.io_some, psi.io_full, psi.mem_some, psi.mem_full):
        assert 0.0 <= v <= 100.0


# -- cgroup files ----------------------------------------------------------------------------
def cg(name: str):
    base = DATA / "cgroup" / name
    return read_cgroup(4242, str(base / "proc"), str(base))


def test_cgroup_v1_docker():
    r = cg("v1")
    assert r.version == 1 and r.quota_cores == 2.5
    assert r.path.endswith("/sys/fs/cgroup/cpu,cpuacct/docker/abc123")
    assert (r.nr_periods, r.nr_throttled) == (5120, 1024)


def test_cgroup_v2_takes_the_tightest_ancestor_quota():
    r = cg("v2")
    # ctr allows 4 cores but its pod only 1.5: the pod's quota binds, so its counters are read.
    assert r.version == 2 and r.quota_cores == 1.5
    assert r.path.endswith("/kubepods.slice/pod1")
    assert (r.nr_periods, r.nr_throttled) == (300, 120)


def test_cgroup_v2_without_cpu_controller_has_no_quota():
    r = cg("v2_noquota")
    assert r.version == 2 and r.quota_cores is None and r.nr_periods == 0
    out = throttle(r, r)
    assert isinstance(out.quota_cores, Unsupported) and out.throttled_frac == 0.0


def test_cgroup_hybrid_uses_v1_cpu_controller():
    r = cg("hybrid")
    assert r.version == 1 and r.quota_cores is None and r.path.endswith("/sys/fs/cgroup/cpu")


def test_cgroup_bind_mounted_subtree():
    r = cg("v1_bind")
    assert r.version == 1 and r.quota_cores == 0.5 and r.path.endswith("/sys/fs/cgroup/cpu")


def test_cgroup_unknown_process_is_unsupported():
    r = read_cgroup(999999, str(DATA / "cgroup/v1/proc"), str(DATA / "cgroup/v1"))
    assert isinstance(r, Unsupported) and "cgroup" in r.reason


def test_throttle_deltas():
    a = CgroupReading(2, "/x", 1.5, 300, 120)
    b = CgroupReading(2, "/x", 1.5, 310, 126)
    out = throttle(b, a)
    assert out.version == 2 and out.quota_cores == 1.5
    assert out.throttled_frac == pytest.approx(0.6) and out.nr_throttled_delta == 6
    first = throttle(a, None)  # no previous tick: nothing measured yet, no throttling counted
    assert first.throttled_frac == 0.0 and first.nr_throttled_delta == 0
    moved = throttle(b, CgroupReading(2, "/y", 1.5, 0, 0))  # the job moved cgroup: no delta
    assert moved.throttled_frac == 0.0


@contextlib.contextmanager
def v1_cgroup_with_quota(cores: float):
    """A temporary cgroup v1 ``cpu`` group with a CFS quota (needs root and a writable v1 mount)."""
    root = "/sys/fs/cgroup/cpu"
    if os.geteuid() != 0 or not os.access(f"{root}/cgroup.procs", os.W_OK):
        pytest.skip("needs root and a writable cgroup v1 cpu hierarchy at /sys/fs/cgroup/cpu")
    path = f"{root}/gwtest_{os.getpid()}"
    os.mkdir(path)
    try:
        Path(path, "cpu.cfs_period_us").write_text("100000")
        Path(path, "cpu.cfs_quota_us").write_text(str(int(cores * 100000)))
        yield path
    finally:
        deadline = time.monotonic() + 10
        while True:
            try:
                os.rmdir(path)
                break
            except OSError:  # a killed process leaves the group a moment later
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)


def test_real_quota_throttles_a_busy_process():
    with v1_cgroup_with_quota(0.2) as path:
        proc = subprocess.Popen([sys.executable, "-c", FULL_BURN])
        try:
            Path(path, "cgroup.procs").write_text(str(proc.pid))
            c = HostCollector(Target(proc.pid))
            c.sample()
            time.sleep(1.0)
            s = c.sample()
            assert s.cgroup.version == 1
            assert s.cgroup.quota_cores == pytest.approx(0.2)
            # It wants a whole core and may use a fifth: nearly every 100 ms period ends throttled.
            assert s.cgroup.throttled_frac > 0.5, s.cgroup
            assert s.cgroup.nr_throttled_delta >= 5
        finally:
            proc.kill()
            proc.wait(10)


# -- the live host ---------------------------------------------------------------------------
def start_orphan(code: str) -> int:
    """A process outside our tree: started by a child that exits at once, so it is re-parented."""
    out = subprocess.run(
        [sys.executable, "-c",
         "import subprocess, sys\n"
         f"p = subprocess.Popen([sys.executable, '-c', {code!r}], start_new_session=True,"
         " stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\nprint(p.pid)\n"],
        capture_output=True, text=True, timeout=30, check=True)
    return int(out.stdout.strip())


def test_the_first_window_opens_before_the_scan_of_other_processes():
    """The probe's scan of every process on the host comes after the first window has opened: it is
    not one of the rates that window measures, and on the shared proc thread it ran before it."""
    c = HostCollector(Target(os.getpid()))
    opened_at_scan = []
    scan = c.others.baseline
    c.others.baseline = lambda job: (opened_at_scan.append(c._first.start is not None), scan(job))
    assert c.probe() is None
    assert opened_at_scan == [True]
    c.close()


@pytest.mark.slow
def test_live_host_sample_in_range_and_top_others(busy_job):
    orphan = start_orphan(HALF_BURN)
    child = subprocess.Popen([sys.executable, "-c", HALF_BURN])  # ours: like gpuwatch's py-spy
    try:
        assert orphan not in {c.pid for c in psutil.Process().children(recursive=True)}
        c = HostCollector(Target(busy_job.pid))
        c.others.every_s = 0.0  # scan on every sample here (the default is every few ticks)
        assert c.probe() is None
        c.sample()
        time.sleep(1.0)
        s = c.sample()
        assert s.cpu_count == psutil.cpu_count()
        assert 0.0 <= s.cpu_pct <= 100.0
        # The busy worker and the half-burners keep at least a quarter of 2 cores busy.
        assert s.cpu_pct > 10.0
        for v in (s.steal_pct, s.iowait_pct):
            assert isinstance(v, float) and 0.0 <= v <= 100.0
        assert s.load1 >= 0.0
        assert s.mem_total == psutil.virtual_memory().total and 0 < s.mem_available <= s.mem_total
        assert s.swap_used >= 0 and s.swap_in_bps >= 0.0 and s.swap_out_bps >= 0.0
        if not isinstance(s.psi, Unsupported):
            assert 0.0 <= s.psi.cpu_some <= 100.0
        assert not isinstance(s.cgroup, Unsupported) and s.cgroup.version in (1, 2)
        assert 0.0 <= s.cgroup.throttled_frac <= 1.0

        assert len(s.top_others) <= 5
        assert [o.cpu_pct for o in s.top_others] == sorted((o.cpu_pct for o in s.top_others), reverse=True)
        # Every busy process, not only the top 5 (other suites may be busier than the burner here).
        c.others.top_n = 10_000
        time.sleep(1.0)
        others = {o.pid: o for o in c.sample().top_others}
        job = {busy_job.pid, *(p.pid for p in psutil.Process(busy_job.pid).children(recursive=True))}
        assert not job & set(others), "the job's own processes are not 'others'"
        assert child.pid not in others and os.getpid() not in others, "gpuwatch and its children are excluded"
        # The outside half-burner uses ~50 % of a core; well over 5 % even on a loaded 2-core box.
        assert orphan in others and 5.0 < others[orphan].cpu_pct < 100.0, others.get(orphan)
        assert "python" in others[orphan].name
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(orphan, signal.SIGKILL)
        child.kill()
        child.wait(10)


def test_relaxed_pace_scans_other_processes_less_often():
    from gpuwatch.collectors.base import Paced
    from gpuwatch.collectors.others import EVERY_S, RELAXED_EVERY_S
    from gpuwatch.pace import FULL, RELAXED

    c = HostCollector(Target(os.getpid()))
    assert isinstance(c, Paced)  # the watch hands it the pace
    c.set_pace(*RELAXED)
    assert c.others.every_s == RELAXED_EVERY_S > EVERY_S
    c.set_pace(*FULL)
    assert c.others.every_s == EVERY_S
    c.close()
