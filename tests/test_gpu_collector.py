"""The GPU collector and the NVML session against the fake NVML replaying H200 data.

The replayed values come from tests/fake_nvml.py:CAPTURE, the real capture of bench/capture_nvml.py
on an H200 (tests/data/nvml/README.md). Expected values are computed from that capture. Values a
test sets itself are synthetic and marked so: what the capture cannot show (another tenant, HW
thermal throttling, a lost GPU, errors) or lacks (memory info v2: it recorded v1).
"""

from __future__ import annotations

import os
import sys
import threading

import pytest

from gpuwatch.collectors.gpu import RELAXED_PROCESSES_S, RELAXED_SLOW_S, RELAXED_THROTTLE_S, GpuCollector
from gpuwatch.collectors.nspid import INIT_PIDNS_INODE, PidMap
from gpuwatch.collectors.nvml_collector import SLOW_TTL_S
from gpuwatch.collectors.nvml_session import NvmlSession
from gpuwatch.collectors.pcie import MIB, PcieCollector
from gpuwatch.model.gpu import GpmMetrics
from gpuwatch.model.values import Unsupported
from gpuwatch.pace import FULL, RELAXED
from tests.fake_nvml import CAPTURE, FakeNvml, load_capture

MIB = 2**20

ME = os.getpid()
HOST_PID = load_capture(CAPTURE)["pids"]["workload"]
"""The captured workload's PID, as NVML reported it (a host PID)."""


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


class StubTarget:
    """The watched job's process tree, reduced to what the collectors ask for."""

    def __init__(self, *pids: int) -> None:
        self._pids = pids

    def tree(self):
        return self

    def pids(self):
        return self._pids


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def fake():
    # The captured workload process becomes this test process, so it is "on the GPU".
    return FakeNvml(CAPTURE, workload_pid=ME, gpus=2)


@pytest.fixture
def session(fake, clock):
    return NvmlSession(nvml=fake, pid_map=lambda pid: pid, clock=clock)


def collector(session, clock, **kw):
    return GpuCollector(StubTarget(ME), session, clock=clock, **kw)


def step(fake, clock, n=1):
    fake.advance(n)
    clock.t += 0.5 * n  # the capture's tick period


def raw_samples(fake, key="samples_gpu"):
    return [(ts, float(v)) for ts, v in fake.raw(key)["v"]["s"]]


# -- probe ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("scenario", "expected"),
    [
        ("no_library", "NVML library (libnvidia-ml.so.1) not found: install the NVIDIA driver"),
        ("driver_not_loaded", "the NVIDIA kernel driver is not loaded"),
        ("version_mismatch", "different versions (driver upgraded without a reboot?): reboot"),
        ("no_permission", "run as root"),
        ("no_gpu", "NVML sees no GPU: check nvidia-smi -L"),
    ],
)
def test_probe_gives_the_precise_reason(scenario, expected, clock):
    s = NvmlSession(nvml=FakeNvml(CAPTURE, scenario=scenario), pid_map=lambda p: p, clock=clock)
    c = collector(s, clock)
    problem = c.probe()
    assert isinstance(problem, Unsupported)
    assert expected in problem.reason
    assert c.sample() == problem  # sample() never raises: it says the same thing


def test_probe_without_nvidia_ml_py(monkeypatch, clock):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml -> ImportError
    problem = NvmlSession(pid_map=lambda p: p).probe()
    assert problem == Unsupported("nvidia-ml-py is not installed: pip install nvidia-ml-py")


def test_probe_rejects_a_gpu_index_that_does_not_exist(session, clock):
    problem = collector(session, clock, gpus=[0, 5]).probe()
    assert problem == Unsupported("GPU index 5 does not exist: NVML sees 2 GPU(s), indices 0..1 (nvidia-smi order)")


def test_nvml_shuts_down_once_after_both_collectors_close(fake, session, clock):
    g, p = collector(session, clock), PcieCollector(StubTarget(ME), session, clock=clock)
    assert g.probe() is None and p.probe() is None
    g.close()
    assert fake.calls["nvmlShutdown"] == 0  # the PCIe collector still uses it
    p.close()
    assert fake.calls["nvmlShutdown"] == 1
    assert fake.calls["nvmlInit"] == 1


# -- GPU selection ---------------------------------------------------------------------------
def test_selects_the_gpus_the_job_uses(fake, session, clock):
    fake.goto("matmul_bf16", 2)
    out = collector(session, clock).sample()
    assert [(s.index, s.used_by_target) for s in out] == [(0, True)]  # GPU 1 runs nothing of ours
    (proc,) = out[0].processes
    assert (proc.pid, proc.local_pid, proc.is_target) == (ME, ME, True)


def test_job_on_no_gpu_yet_shows_all_gpus_unused(fake, clock):
    s = NvmlSession(nvml=fake, pid_map=lambda p: p, clock=clock)
    out = GpuCollector(StubTarget(999_999_999), s, clock=clock).sample()
    assert [(g.index, g.used_by_target) for g in out] == [(0, False), (1, False)]
    assert [p.is_target for p in out[0].processes] == [False]


def test_the_jobs_exited_process_still_listed_stays_the_jobs(fake, session, clock):
    """The driver lists a process a moment after it exited; the job's tree no longer holds it then
    (the H200 field job's last tick showed its own main process as another tenant). It stays the
    job's while listed; once the list is read without it, its PID is a stranger's again."""
    fake.goto("matmul_bf16", 2)
    target = StubTarget(ME)
    c = GpuCollector(target, session, clock=clock, gpus=[0])
    assert [(p.pid, p.is_target) for p in c.sample()[0].processes] == [(ME, True)]
    target._pids = ()  # the job exited; NVML still lists its process
    step(fake, clock)
    assert [(p.pid, p.is_target) for p in c.sample()[0].processes] == [(ME, True)]
    fake.set("compute_procs", [], gpu=0)  # the driver let go of it
    step(fake, clock)
    assert c.sample()[0].processes == ()
    fake.set("compute_procs", [[ME, 1 << 29]], gpu=0)  # the PID reused by another program (synthetic)
    step(fake, clock)
    assert [(p.pid, p.is_target) for p in c.sample()[0].processes] == [(ME, False)]


def test_explicit_gpus_are_exactly_those(fake, session, clock):
    out = collector(session, clock, gpus=[1]).sample()
    assert [(g.index, g.used_by_target) for g in out] == [(1, False)]


def test_a_gpu_once_used_stays_selected(fake, session, clock):
    c = collector(session, clock)
    assert [g.index for g in c.sample()] == [0]
    fake.set("compute_procs", [], gpu=0)  # the job let go of the GPU for a moment
    step(fake, clock)
    assert [(g.index, g.used_by_target) for g in c.sample()] == [(0, True)]


def test_host_pids_map_through_nspid(fake, clock):
    # NVML reports the captured host PID; in our namespace that process is ME.
    s = NvmlSession(nvml=FakeNvml(CAPTURE, gpus=1), pid_map=lambda p: ME if p == HOST_PID else None, clock=clock)
    (g,) = GpuCollector(StubTarget(ME), s, clock=clock).sample()
    assert g.used_by_target
    assert [(p.pid, p.local_pid, p.is_target) for p in g.processes] == [(HOST_PID, ME, True)]


# -- utilization from the driver's sample buffer ------------------------------------------------
def test_util_is_the_mean_of_new_samples_and_the_cursor_advances(fake, session, clock):
    fake.not_supported("gpm_support")  # without GPM, memory utilization is read every tick too
    fake.goto("matmul_bf16", 2)
    c = collector(session, clock)
    first = c.sample()[0]
    assert first.util_trace[-1][0] - first.util_trace[0][0] <= 1.0  # first read: one interval of history
    step(fake, clock)
    second = c.sample()[0]
    new = raw_samples(fake)  # exactly what the driver gained since the cursor
    assert second.util_trace == tuple((ts / 1e6, v) for ts, v in new)
    assert second.util_trace[0][0] > first.util_trace[-1][0]
    assert second.util_gpu == pytest.approx(sum(v for _, v in new) / len(new))
    mem = raw_samples(fake, "samples_mem")
    assert second.util_mem == pytest.approx(sum(v for _, v in mem) / len(mem))
    # real: the driver's 200 ms samples read 99 % gpu and 22-25 % memory under the bf16 matmul
    assert second.util_gpu == 99.0 and 22 <= second.util_mem <= 25


def test_beside_gpm_memory_utilization_is_read_every_slow_ttl_as_the_mean_since_the_last_read(fake, session, clock):
    # The capture's own timing: each buffer read cost the H200 ~2 ms (bench/results/HISTORY.md, run 8).
    fake.goto("matmul_bf16", 0)
    c = collector(session, clock)
    first = c.sample()[0]
    assert fake.calls["nvmlDeviceGetSamples"] == 2  # GPU and memory
    step(fake, clock)
    second = c.sample()[0]
    assert not isinstance(second.gpm, Unsupported) and second.util_mem == first.util_mem
    assert fake.calls["nvmlDeviceGetSamples"] == 3  # GPU only
    step(fake, clock, 8)  # the rest of the bf16 matmul's capture ticks
    clock.t = first.t + SLOW_TTL_S
    later = c.sample()[0]
    assert fake.calls["nvmlDeviceGetSamples"] == 5
    read_before = max(ts for k in range(fake.tick - 8) for ts, _ in fake.raw("samples_mem", tick=k)["v"]["s"])
    since = {ts: float(v) for k in range(fake.tick - 8, fake.tick + 1)
             for ts, v in fake.raw("samples_mem", tick=k)["v"]["s"] if ts > read_before}
    assert len(since) >= 9 and later.util_mem == pytest.approx(sum(since.values()) / len(since))


def per_tick_calls(fake, c, clock, ticks):
    """(GPU samples, NVML calls by name) of ``ticks`` capture ticks, the calls counted over them."""
    before = dict(fake.calls)
    out = []
    for _ in range(ticks):
        step(fake, clock)
        out.append(c.sample()[0])
    return out, {fn: n - before.get(fn, 0) for fn, n in fake.calls.items() if n != before.get(fn, 0)}


def test_relaxed_pace_reads_the_process_lists_when_a_gpus_memory_changes(fake, session, clock):
    fake.goto("matmul_bf16", 0)
    mem = [dict(fake.raw("memory", gpu=g)["v"]) for g in (0, 1)]
    for g in (0, 1):  # the capture's memory, held steady (synthetic)
        fake.set("memory", mem[g], gpu=g)
    c = collector(session, clock)
    c.sample()
    c.set_pace(*RELAXED)
    got, calls = per_tick_calls(fake, c, clock, 4)
    assert calls["nvmlDeviceGetComputeRunningProcesses"] == 2  # both GPUs once, on the first relaxed tick
    assert calls["nvmlDeviceGetMemoryInfo"] == 4 * 2  # both GPUs each tick; the job's read shared with its sample
    assert [[p.pid for p in s.processes] for s in got] == [[ME]] * 4
    # A tenant starts on the job's GPU: its context's memory shows, and so does it, on the same tick.
    tenant = 1 << 29
    fake.set("compute_procs", [[ME, fake.raw("compute_procs")["v"][0][1]], [4242, tenant]])
    fake.set("memory", {**mem[0], "used": mem[0]["used"] + tenant, "free": mem[0]["free"] - tenant})
    got, calls = per_tick_calls(fake, c, clock, 2)
    assert [[p.pid for p in s.processes] for s in got] == [[ME, 4242]] * 2
    assert got[0].mem_used == mem[0]["used"] + tenant
    assert calls["nvmlDeviceGetComputeRunningProcesses"] == 1  # the job's GPU, once
    # Memory unchanged: read again all the same once RELAXED_PROCESSES_S has passed.
    clock.t += RELAXED_PROCESSES_S
    _, calls = per_tick_calls(fake, c, clock, 1)
    assert calls["nvmlDeviceGetComputeRunningProcesses"] == 2
    c.set_pace(*FULL)  # every tick again
    _, calls = per_tick_calls(fake, c, clock, 2)
    assert calls["nvmlDeviceGetComputeRunningProcesses"] == 2 * 2


def test_relaxed_pace_reads_the_process_lists_every_tick_where_the_gpu_is_a_numa_node(fake, session, clock):
    """Where the GPU is a NUMA node (Grace Hopper: NVML names its node) the OS manages its memory and
    keeps pages after a process ends (nvmlDeviceGetMemoryInfo's note), so used memory need not move
    when a process starts or leaves: the lists are not held there (synthetic memory and node)."""
    fake.goto("matmul_bf16", 0)
    for g in (0, 1):
        fake.set("memory", dict(fake.raw("memory", gpu=g)["v"]), gpu=g)
        fake.set("numa_node", 1 + g, gpu=g)
    c = collector(session, clock)
    c.sample()
    c.set_pace(*RELAXED)
    per_tick_calls(fake, c, clock, 2)
    fake.set("compute_procs", [[ME, fake.raw("compute_procs")["v"][0][1]], [4242, 1 << 29]])  # used memory as it was
    got, calls = per_tick_calls(fake, c, clock, 1)
    assert [p.pid for p in got[0].processes] == [ME, 4242]
    assert calls["nvmlDeviceGetComputeRunningProcesses"] == 2


def test_relaxed_pace_reads_the_gpu_buffer_every_second_tick(fake, session, clock):
    # The pageable copy: its samples vary (37-42 %), so the buffer's trace and the tick's mean tell
    # ticks apart. The skipped ticks' period is synthetic (90 %): at 37-42 % the pace would not be
    # relaxed (under BUSY_STARVED), and such a period is checked against the buffer (the test below).
    fake.goto("h2d_pageable", 1)
    c = collector(session, clock, interval=0.5)
    c.sample()
    full, calls = per_tick_calls(fake, c, clock, 4)
    assert calls["nvmlDeviceGetSamples"] == 4 and "nvmlDeviceGetUtilizationRates" not in calls
    assert all(g.util_trace for g in full)
    c.set_pace(*RELAXED)
    fake.set("utilization_rates", {"gpu": 90})
    relaxed, calls = per_tick_calls(fake, c, clock, 4)
    # Memory utilization is read every SLOW_TTL_S beside GPM, not in these 2 s: the buffer reads are GPU's.
    assert calls["nvmlDeviceGetSamples"] == 2 and calls["nvmlDeviceGetUtilizationRates"] == 2
    skipped, read = relaxed[0], relaxed[1]
    assert skipped.util_trace == () and skipped.util_gpu == 90.0
    # The buffer read after it carries both ticks' samples; its mean is over its own tick's.
    both = [(ts / 1e6, float(v)) for k in (fake.tick - 3, fake.tick - 2) for ts, v in fake.raw("samples_gpu", tick=k)["v"]["s"]]
    assert read.util_trace == tuple(both)
    own = [v for ts, v in both if ts >= both[-1][0] - 0.5]
    assert read.util_gpu == pytest.approx(sum(own) / len(own))
    assert relaxed[2].util_trace == () and relaxed[3].util_trace


def test_relaxed_a_period_that_looks_like_a_fall_reads_the_buffer_on_the_same_tick(fake, session, clock):
    # The matmul keeps the GPU 99 % busy; one period reading 50 % (synthetic: the capture has no
    # period readings; on the H100 such periods read 37-66 % between two steps of a busy job) is
    # checked against the buffer, whose mean over the tick says 99 % and keeps the pace relaxed.
    fake.goto("matmul_bf16", 1)
    c = collector(session, clock)
    c.sample()
    c.set_pace(*RELAXED)
    first, calls = per_tick_calls(fake, c, clock, 2)  # a skipped tick, then a buffer read
    assert calls["nvmlDeviceGetSamples"] == 1 and first[0].util_trace == ()
    fake.set("utilization_rates", {"gpu": 50})
    got, calls = per_tick_calls(fake, c, clock, 1)
    assert calls["nvmlDeviceGetSamples"] == 1 and calls["nvmlDeviceGetUtilizationRates"] == 1
    assert got[0].util_gpu == 99.0 and got[0].util_trace
    fake.set("utilization_rates", {"gpu": 97})  # saturated: the pace stays relaxed whatever came before
    got, calls = per_tick_calls(fake, c, clock, 2)
    assert calls["nvmlDeviceGetSamples"] == 1 and got[0].util_trace == () and got[0].util_gpu == 97.0
    fake.set("utilization_rates", {"gpu": 69})  # under BUSY_STARVED (70 %): checked
    got, calls = per_tick_calls(fake, c, clock, 1)
    assert calls["nvmlDeviceGetSamples"] == 1 and got[0].util_trace and got[0].util_gpu == 99.0


def test_back_at_full_pace_the_next_tick_reads_the_buffer(fake, session, clock):
    fake.goto("matmul_bf16", 1)
    c = collector(session, clock)
    c.sample()
    c.set_pace(*RELAXED)
    step(fake, clock)
    assert c.sample()[0].util_trace == ()
    c.set_pace(*FULL)  # busy fell: the pace went back to full
    after, calls = per_tick_calls(fake, c, clock, 2)
    assert calls["nvmlDeviceGetSamples"] == 2 and "nvmlDeviceGetUtilizationRates" not in calls
    assert after[0].util_trace[0][0] < after[0].util_trace[-1][0] - 0.5  # the skipped tick's samples too


def test_relaxed_pace_without_utilization_rates_reads_the_buffer_every_tick(fake, session, clock):
    fake.goto("matmul_bf16", 1)
    c = collector(session, clock)
    c.sample()
    c.set_pace(*RELAXED)
    fake.not_supported("utilization_rates")
    got, calls = per_tick_calls(fake, c, clock, 3)
    assert calls["nvmlDeviceGetSamples"] == 3 and calls["nvmlDeviceGetUtilizationRates"] == 1  # asked once
    assert all(g.util_trace and g.util_gpu == 99.0 for g in got)


def test_relaxed_pace_after_a_passing_utilization_rates_error_skips_again(fake, session, clock):
    # One error that is not "not supported" (here the driver timing out) costs that tick's saving
    # only: the buffer is read then, and the next relaxed tick asks the cheap call again.
    fake.goto("matmul_bf16", 1)
    c = collector(session, clock)
    c.sample()
    c.set_pace(*RELAXED)
    fake.set("utilization_rates", err="NVMLError_Timeout")
    got, calls = per_tick_calls(fake, c, clock, 1)
    assert calls["nvmlDeviceGetSamples"] == 1 and calls["nvmlDeviceGetUtilizationRates"] == 1
    assert got[0].util_trace
    fake.clear("utilization_rates")
    got, calls = per_tick_calls(fake, c, clock, 2)
    assert calls["nvmlDeviceGetSamples"] == 1 and calls["nvmlDeviceGetUtilizationRates"] == 1
    assert got[0].util_trace == () and got[1].util_trace


def test_relaxed_pace_reads_memory_and_per_process_utilization_every_relaxed_slow_s(fake, session, clock):
    fake.goto("matmul_bf16", 0)
    c = collector(session, clock)
    first = c.sample()[0]
    assert fake.calls["nvmlDeviceGetProcessUtilization"] == 1
    c.set_pace(*RELAXED)
    ticks = int(RELAXED_SLOW_S / 0.5)
    got, calls = per_tick_calls(fake, c, clock, ticks - 1)  # 9.5 s: past SLOW_TTL_S, not RELAXED_SLOW_S
    assert "nvmlDeviceGetProcessUtilization" not in calls
    # Every tick reads the GPU-utilization buffer or the latest period: no memory buffer read besides.
    assert calls["nvmlDeviceGetSamples"] + calls["nvmlDeviceGetUtilizationRates"] == ticks - 1
    assert {g.util_mem for g in got} == {first.util_mem}
    assert {g.processes[0].sm_util for g in got} == {first.processes[0].sm_util}
    _, calls = per_tick_calls(fake, c, clock, 1)  # RELAXED_SLOW_S since the last read: both read again
    assert calls["nvmlDeviceGetProcessUtilization"] == 1
    assert calls["nvmlDeviceGetSamples"] + calls.get("nvmlDeviceGetUtilizationRates", 0) == 2
    c.set_pace(*FULL)
    clock.t += SLOW_TTL_S - 0.5  # back at full pace, SLOW_TTL_S again
    _, calls = per_tick_calls(fake, c, clock, 1)
    assert calls["nvmlDeviceGetProcessUtilization"] == 1


def test_no_new_samples_after_a_good_read_is_a_real_zero(fake, session, clock):
    fake.goto("matmul_bf16", 2)
    c = collector(session, clock)
    assert c.sample()[0].util_gpu > 0
    clock.t += 0.5  # no driver tick in between: NVML answers NOT_FOUND
    again = c.sample()[0]
    assert (again.util_gpu, again.util_trace) == (0.0, ())


def test_no_new_sample_within_one_driver_period_is_not_called_idle(fake, session, clock):
    fake.goto("matmul_bf16", 2)
    c = collector(session, clock)
    first = c.sample()[0]
    period_ms = round(min(b[0] - a[0] for a, b in zip(first.util_trace, first.util_trace[1:])) * 1e3)
    clock.t += 0.1  # a tick shorter than the driver's sample period
    assert c.sample()[0].util_gpu == Unsupported(
        f"GPU utilization: no new driver sample yet (it samples every {period_ms} ms)"
    )


def test_empty_buffer_before_any_read_is_unsupported_not_zero(fake, session, clock):
    fake.set("samples_gpu", err="NVMLError_NotFound")
    c = collector(session, clock)
    g = c.sample()[0]
    assert g.util_gpu == Unsupported(
        "GPU utilization: the driver's sample buffer is empty (it fills once the GPU runs work)"
    )
    assert g.util_trace == ()


# -- GPM ---------------------------------------------------------------------------------------
def test_gpm_ping_pongs_two_samples_and_reads_all_metrics_in_one_call(fake, session, clock):
    fake.goto("matmul_bf16", 2)
    c = collector(session, clock)
    assert c.sample()[0].gpm == Unsupported("GPM: first window")
    for _ in range(2):
        step(fake, clock)
        gpm = c.sample()[0].gpm
        expect = {m[0]: m for m in fake.raw("gpm")["v"]["m"]}
        assert isinstance(gpm, GpmMetrics)
        assert gpm.window_s == 0.5
        assert gpm.gr_engine == expect[1][2] and gpm.sm_active == expect[2][2]
        assert gpm.sm_occupancy == expect[3][2] and gpm.tensor == expect[5][2]
        assert gpm.dram_bw == expect[10][2] and gpm.pcie_rx_mibs == expect[21][2]
        if expect[20][1] != 0:  # a metric NVML did not answer is that metric's Unsupported only
            assert isinstance(gpm.pcie_tx_mibs, Unsupported)
    assert (fake.calls["nvmlGpmSampleAlloc"], fake.calls["nvmlGpmSampleGet"], fake.calls["nvmlGpmMetricsGet"]) == (2, 3, 2)


def test_gpm_tells_a_pinned_copy_from_compute(fake, session, clock):
    # h200-signatures.md: a pinned H2D copy reads 100 % NVML util while the SMs do nothing.
    fake.goto("h2d_pinned", 2)
    c = collector(session, clock)
    c.sample()
    step(fake, clock)
    g = c.sample()[0]
    assert g.util_gpu >= 90
    assert g.gpm.sm_active < 1.0
    assert g.gpm.pcie_rx_mibs > 40_000


def test_gpm_window_shorter_than_100ms_is_skipped(fake, session, clock):
    c = collector(session, clock)
    c.sample()
    clock.t += 0.05
    assert c.sample()[0].gpm == Unsupported("GPM: less than 100 ms since the last GPM sample")


def test_gpu_and_pcie_collectors_share_one_gpm_sample_per_tick(fake, session, clock):
    # nvmlGpmSampleGet is the costliest call per tick; both collectors' metrics come from one.
    fake.goto("h2d_pinned", 2)
    g, p = collector(session, clock), PcieCollector(StubTarget(ME), session, clock=clock)
    for _ in range(3):
        gpu, link = g.sample()[0], p.sample()[0]
        step(fake, clock)
    assert fake.calls["nvmlGpmSampleGet"] == 3  # one GPU used by the job, three ticks
    assert link.rx_bps == gpu.gpm.pcie_rx_mibs * MIB > 40_000 * MIB  # the same window's numbers
    g.close()
    assert fake.calls["nvmlGpmSampleFree"] == 0  # the PCIe collector still reads GPM
    p.close()
    assert fake.calls["nvmlGpmSampleFree"] == 2


def test_a_collector_never_gets_the_same_gpm_window_twice(fake, session, clock):
    g, p = collector(session, clock), PcieCollector(StubTarget(ME), session, clock=clock)
    g.sample()
    step(fake, clock)
    g.sample()
    p.sample()  # shares the GPU collector's second sample
    assert fake.calls["nvmlGpmSampleGet"] == 2
    clock.t += 0.2  # within half a tick, but the PCIe collector already had that window: a new one
    p.sample()
    assert fake.calls["nvmlGpmSampleGet"] == 3
    assert g.sample()[0].gpm.window_s == pytest.approx(0.2)  # and the GPU collector shares that
    assert fake.calls["nvmlGpmSampleGet"] == 3


def test_relaxed_pace_takes_a_gpm_sample_every_second_tick_for_both_collectors(fake, session, clock):
    fake.goto("h2d_pinned", 2)
    g, p = collector(session, clock, interval=0.5), PcieCollector(StubTarget(ME), session, clock=clock, interval=0.5)
    for _ in range(2):  # the first window, then one at the full pace
        gpu, link = g.sample()[0], p.sample()[0]
        step(fake, clock)
    last_full = (gpu.gpm, link.rx_bps)
    g.set_pace(*RELAXED)
    before = fake.calls["nvmlGpmSampleGet"], fake.calls["nvmlGpmMetricsGet"]
    shown = []
    for _ in range(4):
        gpu, link = g.sample()[0], p.sample()[0]
        shown.append((gpu.gpm, link.rx_bps))
        step(fake, clock)
    # Four relaxed ticks, two GPM samples: each held tick shows the window before it, in both.
    assert (fake.calls["nvmlGpmSampleGet"] - before[0], fake.calls["nvmlGpmMetricsGet"] - before[1]) == (2, 2)
    assert shown[0] == last_full and shown[2] == shown[1]
    assert last_full[0].window_s == pytest.approx(0.5)
    assert shown[1][0].window_s == pytest.approx(1.0)  # a sample after a held tick spans both ticks
    assert shown[1][1] == shown[1][0].pcie_rx_mibs * MIB
    g.set_pace(*FULL)  # busy fell: every tick takes its own window again
    n = fake.calls["nvmlGpmSampleGet"]
    for _ in range(2):
        g.sample(), p.sample()
        step(fake, clock)
    assert fake.calls["nvmlGpmSampleGet"] - n == 2


def test_rarely_changing_values_are_read_every_few_seconds_not_every_tick(fake, session, clock):
    g, p = collector(session, clock), PcieCollector(StubTarget(ME), session, clock=clock)
    ticks = int(SLOW_TTL_S / 0.5) * 2  # 0.5 s ticks over two SLOW_TTL_S periods
    for _ in range(ticks):
        gpu, link = g.sample()[0], p.sample()[0]
        step(fake, clock)
    assert fake.calls["nvmlDeviceGetEnforcedPowerLimit"] == 2
    assert fake.calls["nvmlDeviceGetCurrPcieLinkWidth"] == 2
    assert gpu.power_limit_w > 0 and link.width_current == 16  # the latest reading, shown in between
    assert fake.calls["nvmlDeviceGetPowerUsage"] == ticks  # power itself: every tick


def test_gpm_unsupported_gpu(fake, session, clock):
    fake.set("gpm_support", 0)
    assert collector(session, clock).sample()[0].gpm == Unsupported("GPM: needs a Hopper or newer GPU")


# -- per-field problems, units --------------------------------------------------------------------
def test_one_field_not_supported_leaves_the_others(fake, session, clock):
    fake.not_supported("temperature")
    fake.goto("matmul_bf16", 2)
    g = collector(session, clock).sample()[0]
    assert g.temp_c == Unsupported("temperature: not supported on this GPU or driver (NVML: Not Supported)")
    mem = fake.raw("memory")["v"]
    assert (g.mem_used, g.mem_total) == (mem["used"], mem["total"])  # v1: the capture holds no v2
    assert (g.power_w, g.power_limit_w) == (pytest.approx(fake.raw("power_usage")["v"] / 1e3), 700.0)  # mW
    assert g.power_w > 600  # real: ~690 W of the 700 W limit under the bf16 matmul
    assert g.sm_clock_mhz == float(fake.raw("clock_sm")["v"])
    assert g.clock_reasons == fake.raw("clock_reasons")["v"]
    assert g.name == fake.raw("name")["v"] == "NVIDIA H200" and g.uuid == fake.raw("uuid")["v"]
    assert g.lost is None


# -- memory: v2 (used without reserved, as nvidia-smi) with a v1 fallback ----------------------
def test_v1_used_includes_the_reserved_memory_nvidia_smi_leaves_out(fake):
    # Real: in every captured workload, NVML v1 'used' is 614 MiB above nvidia-smi's memory.used read
    # in the same workload; the healthy recording shows the same (3142 vs 2527 MiB, tests/data/h200/).
    for w in fake.doc["workloads"]:
        smi_used = int(w["nvidia_smi"]["stdout"].splitlines()[1].split(",")[1].split()[0])
        tick = next(i for i, t in enumerate(fake.ticks) if t["t_unix"] >= w["t_start"] + 2.5)  # smi ran mid-run
        assert fake.raw("memory", tick=tick)["v"]["used"] // MIB - smi_used == 614, w["name"]


def test_memory_v2_is_asked_first_and_v1_used_when_the_capture_lacks_it(fake, session, clock):
    c = collector(session, clock)
    g = c.sample()[0]
    assert g.mem_used == fake.raw("memory")["v"]["used"]
    assert "memory_v2" in fake.gaps  # the real capture recorded v1 only (bench/capture_nvml.py)
    step(fake, clock)
    before = fake.calls["nvmlDeviceGetMemoryInfo"]
    c.sample()
    assert fake.calls["nvmlDeviceGetMemoryInfo"] - before == 1  # v2 is not asked again


def test_memory_v2_used_leaves_out_reserved(fake, session, clock):
    # Reserved = 644,743,168 B (614.9 MiB): inferred from the real healthy recording, where v1 said
    # 3,294,494,720 B used and nvidia-smi 2527 MiB at the same time. The rest is the real capture.
    mem = dict(fake.raw("memory")["v"], reserved=644_743_168)
    fake.set("memory", mem)
    g = collector(session, clock).sample()[0]
    assert g.mem_used == mem["used"] - 644_743_168 and g.mem_total == mem["total"]
    assert "memory_v2" not in fake.gaps


def test_memory_v2_missing_in_the_driver_falls_back_to_v1(fake, session, clock):
    fake.set("memory_v2", err="NVMLError_FunctionNotFound")  # synthetic: a driver without the v2 call
    g = collector(session, clock).sample()[0]
    assert g.mem_used == fake.raw("memory")["v"]["used"]


def test_memory_v2_error_is_that_fields_unsupported(fake, session, clock):
    fake.set("memory_v2", err="NVMLError_NoPermission")  # synthetic
    g = collector(session, clock).sample()[0]
    assert g.mem_used == g.mem_total == Unsupported("memory: NVML denied permission: run gpuwatch as root")
    assert isinstance(g.util_gpu, float)


def test_a_value_the_capture_lacks_is_unsupported_with_the_reason(session, clock, fake):
    fake.goto("matmul_bf16", 2)
    fake.not_supported("clock_mem")
    g = collector(session, clock).sample()[0]
    assert g.mem_clock_mhz == Unsupported("memory clock: not supported on this GPU or driver (NVML: Not Supported)")
    assert isinstance(g.util_gpu, float)


def test_throttle_fractions_from_cumulative_ns_counters(fake, session, clock):
    # Synthetic counters: the real capture never throttled for heat (tests/test_report_gpu.py reads
    # its real SW power cap counter). Here 250 ms of SW power cap and 50 ms of HW thermal in 0.5 s.
    t0 = 1_796_212_800_000_000
    for fid in (74, 76, 269, 270, 271):
        fake.set_field(fid, 1_000_000_000, ts_us=t0)
    c = collector(session, clock)
    assert c.sample()[0].throttle == Unsupported("throttle: first window (needs two reads of the counters)")
    fake.set_field(74, 1_250_000_000, ts_us=t0 + 500_000)
    fake.set_field(270, 1_050_000_000, ts_us=t0 + 500_000)
    for fid in (76, 269, 271):
        fake.set_field(fid, 1_000_000_000, ts_us=t0 + 500_000)
    step(fake, clock)
    assert dict(c.sample()[0].throttle) == {
        "sw_power_cap": 0.5, "sync_boost": 0.0, "sw_thermal": 0.0, "hw_thermal": pytest.approx(0.1), "hw_power_brake": 0.0,
    }


def test_throttle_counters_are_read_every_slow_ttl_and_cover_the_time_since_the_last_read(fake, session, clock):
    # Synthetic counters, as above: 1 s of SW power cap over the 4 s after the second read.
    t0 = 1_796_212_800_000_000
    for fid in (74, 76, 269, 270, 271):
        fake.set_field(fid, 0, ts_us=t0)
    c = collector(session, clock)
    c.sample()
    for fid in (74, 76, 269, 270, 271):
        fake.set_field(fid, 0, ts_us=t0 + 500_000)
    step(fake, clock)
    assert dict(c.sample()[0].throttle)["sw_power_cap"] == 0.0
    reads = fake.calls["nvmlDeviceGetFieldValues"]
    assert reads == 2  # the first window closes a tick after it opens
    fake.set_field(74, 1_000_000_000, ts_us=t0 + 4_500_000)
    for _ in range(int(SLOW_TTL_S / 0.5) - 1):  # within SLOW_TTL_S: the last shares stand, no read
        step(fake, clock)
        assert dict(c.sample()[0].throttle)["sw_power_cap"] == 0.0
    assert fake.calls["nvmlDeviceGetFieldValues"] == reads
    step(fake, clock)
    assert dict(c.sample()[0].throttle)["sw_power_cap"] == pytest.approx(0.25)  # 1 s of the 4 s since the last read
    assert fake.calls["nvmlDeviceGetFieldValues"] == reads + 1


def test_relaxed_pace_reads_the_throttle_counters_less_often_until_a_bad_reason_shows(fake, session, clock):
    # Synthetic counters and reasons: the SW power cap (0x4) the saturated H200 sits at, then SW thermal (0x20).
    t0 = 1_796_212_800_000_000
    fake.set("clock_reasons", 0x4)
    c = collector(session, clock)
    for k in range(2):  # the first window closes a tick after it opens
        for fid in (74, 76, 269, 270, 271):
            fake.set_field(fid, 0, ts_us=t0 + k * 500_000)
        c.sample()
        step(fake, clock)
    c.set_pace(*RELAXED)
    reads = fake.calls["nvmlDeviceGetFieldValues"]
    fake.set_field(74, 2_000_000_000, ts_us=t0 + 10_500_000)  # the SW power cap for 2 s of the next 10
    for _ in range(int(RELAXED_THROTTLE_S / 0.5) - 1):  # SLOW_TTL_S passes: no read while relaxed
        c.sample()
        step(fake, clock)
    assert fake.calls["nvmlDeviceGetFieldValues"] == reads
    assert dict(c.sample()[0].throttle)["sw_power_cap"] == pytest.approx(0.2)  # the whole 10 s since the last read
    assert fake.calls["nvmlDeviceGetFieldValues"] == reads + 1
    fake.set("clock_reasons", 0x4 | 0x20)  # a bad reason shows for one tick: every SLOW_TTL_S again
    step(fake, clock)
    c.sample()
    fake.set("clock_reasons", 0x4)
    for _ in range(int(SLOW_TTL_S / 0.5) - 1):
        step(fake, clock)
        c.sample()
    assert fake.calls["nvmlDeviceGetFieldValues"] == reads + 2
    for _ in range(int(SLOW_TTL_S / 0.5)):  # none since that read: the relaxed step again
        step(fake, clock)
        c.sample()
    assert fake.calls["nvmlDeviceGetFieldValues"] == reads + 2


def test_per_process_utilization_of_the_real_capture(fake, session, clock):
    fake.goto("matmul_bf16", 0)
    c = collector(session, clock)
    c.sample()
    assert fake.calls["nvmlDeviceGetProcessUtilization"] == 1
    step(fake, clock)  # the job alone on its GPU: the last read stands (it cost ~2 ms, see the capture)
    (p,) = c.sample()[0].processes
    assert fake.calls["nvmlDeviceGetProcessUtilization"] == 1 and fake.raw("proc_util")["us"] > 1000
    step(fake, clock, 8)  # the rest of the bf16 matmul's capture ticks
    clock.t += SLOW_TTL_S - 0.5 * 9
    (p,) = c.sample()[0].processes
    assert fake.calls["nvmlDeviceGetProcessUtilization"] == 2
    # real: one driver sample per capture tick, 99 % SM for the matmul: the mean of those since the last read
    recs = [fake.raw("proc_util", tick=k)["v"][0] for k in range(fake.tick - 8, fake.tick + 1)]
    assert (p.pid, p.sm_util, p.is_target) == (ME, sum(r[2] for r in recs) / len(recs), True) and p.sm_util == 99.0
    assert p.used_memory == fake.raw("compute_procs")["v"][0][1]


def test_per_process_utilization_uses_a_cursor(fake, session, clock):
    # Synthetic per-process samples: the capture ran one process; OTHER is another tenant's.
    other = 999_999_999
    fake.set("compute_procs", [[HOST_PID, 1 << 30], [other, 2 << 30]])
    fake.set("proc_util", [[HOST_PID, 1_796_212_805_000_000, 80, 10, 0, 0], [HOST_PID, 1_796_212_805_200_000, 60, 10, 0, 0],
                           [other, 1_796_212_805_100_000, 30, 5, 0, 0]])
    fake.goto("matmul_bf16", 2)
    c = collector(session, clock)
    procs = {p.pid: p for p in c.sample()[0].processes}
    assert (procs[ME].sm_util, procs[ME].used_memory, procs[ME].is_target) == (70.0, 1 << 30, True)
    assert (procs[other].sm_util, procs[other].is_target, procs[other].name) == (30.0, False, "?")
    clock.t += 0.5  # another tenant: read every tick; nothing newer than the cursor, both idle, a real 0
    assert [p.sm_util for p in c.sample()[0].processes] == [0.0, 0.0]


def test_per_process_utilization_before_any_sample(fake, session, clock):
    fake.set("proc_util", err="NVMLError_NotFound")
    (p,) = collector(session, clock).sample()[0].processes
    assert p.sm_util == Unsupported("per-process utilization: no samples yet (a process shows once it ran work)")


# -- a lost GPU --------------------------------------------------------------------------------
def test_gpu_lost_mid_run_marks_that_gpu_only(fake, session, clock):
    fake.goto("matmul_bf16", 2)
    c = collector(session, clock, gpus=[0, 1])
    assert [g.lost for g in c.sample()] == [None, None]
    fake.lose_gpu(1)
    step(fake, clock)
    g0, g1 = c.sample()
    assert g0.lost is None and g0.util_gpu == pytest.approx(sum(v for _, v in raw_samples(fake)) / len(raw_samples(fake)))
    assert g1.lost.startswith("GPU 1 is lost: the GPU fell off the bus or stopped answering: check `dmesg` for NVIDIA Xid 79")
    assert g1.util_gpu == Unsupported(g1.lost) and g1.gpm == Unsupported(g1.lost) and g1.processes == ()
    assert g1.uuid.endswith("-copy1")  # still named, from the reads before it was lost
    before = fake.calls["nvmlDeviceGetSamples"]
    step(fake, clock)
    g0, g1 = c.sample()
    assert g1.lost and g0.lost is None
    assert fake.calls["nvmlDeviceGetSamples"] - before == 1  # only GPU 0 is asked (its memory buffer every SLOW_TTL_S)


# -- shared session, costs ---------------------------------------------------------------------------
def test_gpu_and_pcie_collectors_share_one_session_from_two_threads(fake):
    s = NvmlSession(nvml=fake, pid_map=lambda p: p)
    g = GpuCollector(StubTarget(ME), s)
    p = PcieCollector(StubTarget(ME), s)
    assert g.probe() is None and p.probe() is None
    results, errors = {"gpus": [], "pcie": []}, []

    def run(c):
        try:
            for _ in range(30):
                results[c.field].append(c.sample())
        except Exception as e:  # noqa: BLE001 - collected and asserted below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(c,)) for c in (g, p)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == []
    assert all(isinstance(r, tuple) and r[0].index == 0 for r in results["gpus"] + results["pcie"])
    assert len(results["gpus"]) == len(results["pcie"]) == 30
    assert fake.calls["nvmlInit"] == 1
    assert "nvmlDeviceGetPcieThroughput" not in fake.calls  # blocks ~21 ms on an H200
    assert not hasattr(fake, "nvmlDeviceGetPcieThroughput")


# -- host <-> container PIDs ----------------------------------------------------------------------
def _proc(root, pid, ns, nspid=None):
    d = root / str(pid)
    (d / "ns").mkdir(parents=True)
    os.symlink(f"pid:[{ns}]", d / "ns" / "pid")  # a dangling link reads like the kernel's
    if nspid is not None:
        (d / "status").write_text(f"Name:\tpython\nNSpid:\t{nspid}\nUid:\t0\n")


def test_pid_map_in_a_container_with_the_host_proc_mounted(tmp_path):
    ours, other = 4026532999, 4026533111
    _proc(tmp_path / "proc", "self", ours)
    host = tmp_path / "host_proc"
    _proc(host, 1, INIT_PIDNS_INODE, "1")
    _proc(host, 5000, ours, "5000\t42")  # our container's PID 42 is host PID 5000
    _proc(host, 6000, other, "6000\t42")  # PID 42 of another container
    m = PidMap(str(tmp_path / "proc"), [str(host)])
    assert (m(5000), m(6000), m(7000)) == (42, None, None)
    assert m.explanation is None


def test_pid_map_on_the_host_is_the_identity(tmp_path):
    _proc(tmp_path, "self", INIT_PIDNS_INODE)
    assert PidMap(str(tmp_path), [])(1234) == 1234


def test_pid_map_in_a_container_without_the_host_proc_says_why(tmp_path):
    _proc(tmp_path, "self", 4026532999)
    m = PidMap(str(tmp_path), [str(tmp_path / "absent")])
    assert m(5000) is None
    assert "NVML reports host PIDs: run it on the host, start the container with --pid=host" in m.explanation


# -- the capture script's format replays through the fake ----------------------------------------
def test_capture_script_output_replays_through_the_fake(tmp_path, clock):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "bench" / "capture_nvml.py"
    spec = importlib.util.spec_from_file_location("capture_nvml", path)
    capture = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(capture)

    # Record four ticks of the replayed H200 data with the script's own Recorder...
    src = FakeNvml(CAPTURE)
    src.nvmlInit()
    src.goto("matmul_bf16")
    rec = capture.Recorder(src, 0)
    doc = {"schema": "gpuwatch-nvml-capture/1", "source": {"kind": "round trip"}, "pids": {"workload": HOST_PID},
           "gpu": 0, "static": rec.static(), "workloads": [], "ticks": []}
    expected = []
    for _ in range(4):
        doc["ticks"].append({"workload": src.workload, "t_unix": 0.0, "t_mono": 0.0, "calls": rec.tick()})
        expected.append((src.raw("samples_gpu")["v"]["s"], src.raw("gpm")["v"]["m"]))
        src.advance()
    out = tmp_path / "capture.json"
    capture._write(doc, str(out))
    assert all("us" in r for r in doc["ticks"][0]["calls"].values())  # every call's cost is recorded

    # ...and the collector reads the same values back from the written file.
    replay = FakeNvml(out, workload_pid=ME)
    c = GpuCollector(StubTarget(ME), NvmlSession(nvml=replay, pid_map=lambda p: p, clock=clock), clock=clock)
    c.sample()
    for samples, gpm in expected[1:]:
        replay.advance()
        clock.t += 0.5
        g = c.sample()[0]
        assert g.util_trace == tuple((ts / 1e6, float(v)) for ts, v in samples)
        assert (g.gpm.sm_active, g.gpm.tensor) == ({m[0]: m[2] for m in gpm}[2], {m[0]: m[2] for m in gpm}[5])
        assert g.used_by_target


def test_a_read_after_close_does_not_start_nvml_again(fake, session, clock):
    """The watch closes its collectors without waiting for their threads (gpuwatch/engine.py): a read
    that starts just as the collector closes must not initialize NVML again (left so for good: no
    user is left to shut it down) nor take handles or GPM buffers."""
    g, p = collector(session, clock), PcieCollector(StubTarget(ME), session, clock=clock)
    assert g.probe() is None and p.probe() is None
    g.sample()
    g.close()
    p.close()
    assert not fake.initialized
    inits = fake.calls["nvmlInit"]
    assert isinstance(g.sample(), Unsupported) and isinstance(p.sample(), Unsupported)
    assert fake.calls["nvmlInit"] == inits and not fake.initialized
