"""NVML calls never overlap across threads: on the H200 (driver 580.159.04) nvmlGpmSampleGet on the
GPU collector's thread while the PCIe collector's thread was inside nvmlDeviceGetCurrPcieLinkWidth
crashed gpuwatch with SIGSEGV (bench/results/HISTORY.md, run 6). The fake NVML replays the real H200 capture; here
every one of its calls notes how many threads are inside NVML at once."""

from __future__ import annotations

import os
import threading
import time

from gpuwatch.collectors.gpu import GpuCollector
from gpuwatch.collectors.nvml_session import NvmlSession
from gpuwatch.collectors.pcie import PcieCollector
from tests.fake_nvml import CAPTURE, FakeNvml
from tests.test_gpu_collector import StubTarget

ME = os.getpid()


class Watching(FakeNvml):
    """Every nvml* call counts the threads inside NVML and lingers a moment, so overlaps show."""

    def __init__(self, *a, **kw) -> None:
        super().__init__(*a, **kw)
        self.inside = 0
        self.most = 0
        self.total = 0
        self._count_lock = threading.Lock()

    def __getattribute__(self, name):
        attr = super().__getattribute__(name)
        if not name.startswith("nvml") or not callable(attr):
            return attr

        def counted(*args, **kwargs):
            with self._count_lock:
                self.inside += 1
                self.total += 1
                self.most = max(self.most, self.inside)
            try:
                time.sleep(0.0005)
                return attr(*args, **kwargs)
            finally:
                with self._count_lock:
                    self.inside -= 1

        return counted


def test_gpu_and_pcie_collectors_on_two_threads_never_call_nvml_at_once():
    fake = Watching(CAPTURE, workload_pid=ME)
    gpu = GpuCollector(StubTarget(ME), NvmlSession(nvml=fake, pid_map=lambda p: p))
    pcie = PcieCollector(StubTarget(ME), NvmlSession(nvml=fake, pid_map=lambda p: p))
    assert gpu.probe() is None and pcie.probe() is None
    errors = []

    def run(c):
        try:
            for _ in range(15):
                c.sample()
                time.sleep(0.11)  # past GPM's 100 ms minimum window
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(c,)) for c in (gpu, pcie)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    assert fake.total > 100  # both collectors really read (GPM included) many times
    assert fake.most == 1
