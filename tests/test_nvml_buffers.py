"""The buffered NVML reads in one driver call: the same samples as nvidia-ml-py's two-call functions.

The fake NVML (tests/fake_nvml.py) replays the real H200 capture and answers both through
pynvml-style functions and through C entry points with nvml.h's buffer contract, so the one-call
path and the two-call path can be compared on the same driver buffers.
"""

from __future__ import annotations

import os

import pytest

from gpuwatch.collectors import nvml_buffers
from gpuwatch.collectors.gpu import GpuCollector
from gpuwatch.collectors.nvml_buffers import NvmlBuffers
from gpuwatch.collectors.nvml_session import GpuLost, NvmlSession
from tests.fake_nvml import CAPTURE, FakeNvml
from tests.test_gpu_collector import Clock, StubTarget

ME = os.getpid()


def _fake(c_api: bool) -> FakeNvml:
    fake = FakeNvml(CAPTURE, workload_pid=ME, c_api=c_api)
    fake.nvmlInit()
    return fake


def test_one_call_per_read_with_a_kept_buffer():
    fake = _fake(c_api=True)
    bufs, h = NvmlBuffers(fake), fake.nvmlDeviceGetHandleByIndex(0)
    fake.goto("matmul_bf16", 2)
    vtype, got = bufs.samples(h, fake.NVML_GPU_UTILIZATION_SAMPLES, 0)
    assert fake.calls["nvmlDeviceGetSamples"] == 1
    two_call = _fake(c_api=False)
    two_call.goto("matmul_bf16", 2)
    want_type, want = two_call.nvmlDeviceGetSamples(two_call.nvmlDeviceGetHandleByIndex(0),
                                                    fake.NVML_GPU_UTILIZATION_SAMPLES, 0)
    assert vtype == want_type
    assert got == [(int(s.timeStamp), s.sampleValue.uiVal) for s in want]
    assert len(got) > 1


def test_a_cursor_returns_only_newer_samples_and_none_newer_is_not_found():
    fake = _fake(c_api=True)
    bufs, h = NvmlBuffers(fake), fake.nvmlDeviceGetHandleByIndex(0)
    fake.goto("matmul_bf16", 2)
    _, first = bufs.samples(h, fake.NVML_GPU_UTILIZATION_SAMPLES, 0)
    newest = max(ts for ts, _ in first)
    with pytest.raises(fake.NVMLError_NotFound):
        bufs.samples(h, fake.NVML_GPU_UTILIZATION_SAMPLES, newest)
    fake.advance()
    _, more = bufs.samples(h, fake.NVML_GPU_UTILIZATION_SAMPLES, newest)
    assert more and all(ts > newest for ts, _ in more)


def test_a_buffer_too_small_is_grown_and_read_again(monkeypatch):
    monkeypatch.setattr(nvml_buffers, "FIRST_CAPACITY", 2)
    fake = _fake(c_api=True)
    bufs, h = NvmlBuffers(fake), fake.nvmlDeviceGetHandleByIndex(0)
    fake.goto("matmul_bf16", 4)
    _, got = bufs.samples(h, fake.NVML_GPU_UTILIZATION_SAMPLES, 0)
    assert len(got) > 2
    assert fake.calls["nvmlDeviceGetSamples"] == 2  # too small, then the grown buffer
    _, again = bufs.samples(h, fake.NVML_GPU_UTILIZATION_SAMPLES, 0)
    assert again == got and fake.calls["nvmlDeviceGetSamples"] == 3  # the grown buffer is kept


def test_process_utilization_matches_the_two_call_function():
    fake, two_call = _fake(c_api=True), _fake(c_api=False)
    for f in (fake, two_call):
        f.goto("matmul_bf16", 3)
    got = NvmlBuffers(fake).process_util(fake.nvmlDeviceGetHandleByIndex(0), 0)
    want = NvmlBuffers(two_call).process_util(two_call.nvmlDeviceGetHandleByIndex(0), 0)
    assert got == want and got
    assert {pid for pid, _, _ in got} == {ME}
    assert fake.calls["nvmlDeviceGetProcessUtilization"] == 1


def test_a_lost_gpu_in_the_one_call_read_is_a_lost_gpu():
    fake = _fake(c_api=True)
    session = NvmlSession(nvml=fake, pid_map=lambda p: p, clock=Clock())
    c = GpuCollector(StubTarget(ME), session, clock=session.clock)
    assert c.probe() is None
    fake.goto("matmul_bf16", 2)
    fake.lose_gpu(0)
    with pytest.raises(GpuLost):
        session.invoke(0, "nvmlDeviceGetSamples", NvmlBuffers(fake).samples, fake.NVML_GPU_UTILIZATION_SAMPLES, 0)


def test_the_gpu_collector_reads_the_same_values_either_way():
    """Over a stretch of the capture (busy, copies, idle), the one-call and two-call paths give the
    GPU collector identical utilization, traces and per-process shares."""
    runs = []
    for c_api in (True, False):
        fake, clock = FakeNvml(CAPTURE, workload_pid=ME, c_api=c_api), Clock()
        session = NvmlSession(nvml=fake, pid_map=lambda p: p, clock=clock)
        c = GpuCollector(StubTarget(ME), session, clock=clock)
        assert c.probe() is None
        fake.goto("matmul_bf16")
        out = []
        for _ in range(40):
            (g,) = c.sample()
            out.append((g.util_gpu, g.util_mem, g.util_trace, tuple(p.sm_util for p in g.processes)))
            fake.advance()
            clock.t += 0.5
        runs.append(out)
    assert runs[0] == runs[1]
    assert any(trace for _, _, trace, _ in runs[0])
