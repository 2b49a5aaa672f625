"""The report's GPU checks on samples from the real GPU and PCIe collectors, fed by the fake NVML
replaying the H200 measurements (tests/fake_nvml.py, h200-signatures.md): pageable copies are
caught, pinned ones are not, and the link and throttle checks read what the collectors write."""

from __future__ import annotations

import os
from dataclasses import replace

from gpuwatch.collectors.gpu import GpuCollector
from gpuwatch.collectors.nvml_session import NvmlSession
from gpuwatch.collectors.pcie import PcieCollector
from gpuwatch.report.checks_gpu import check_pageable_copies, check_pcie_link, check_throttling, links_under_load
from gpuwatch.report.model import PASS, WARN
from tests.fake_nvml import CAPTURE, FakeNvml
from tests.test_report_checks import make_env, make_frame, verdict

ME = os.getpid()


class Clock:
    t = 100.0

    def __call__(self) -> float:
        return self.t


class StubTarget:
    def tree(self):
        return self

    def pids(self):
        return (ME,)


def frames_of(workload: str, ticks: int, main_label: str = "sync"):
    """Frames whose gpus/pcie come from the collectors replaying ``workload``; the rest synthetic."""
    fake, clock = FakeNvml(CAPTURE, workload_pid=ME), Clock()
    session = NvmlSession(nvml=fake, pid_map=lambda p: p, clock=clock)
    gpu = GpuCollector(StubTarget(), session, clock=clock)
    pcie = PcieCollector(StubTarget(), session, clock=clock)
    assert gpu.probe() is None and pcie.probe() is None
    fake.goto(workload)
    out = []
    for i in range(ticks):
        g, p = gpu.sample(), pcie.sample()
        if i:  # the first read only primes the counters
            out.append(replace(make_frame(i, main_label=main_label), gpus=g, pcie=p))
        fake.advance()
        clock.t += 0.5
    gpu.close()
    pcie.close()
    return out


def test_pageable_copies_from_the_measured_h2d_pageable_run():
    frames = frames_of("h2d_pageable", 6, main_label="h2d")
    assert frames[0].gpus[0].used_by_target
    c = check_pageable_copies(frames, [verdict(f.t) for f in frames], make_env())
    assert c.status == WARN and "RX ran at 6,608 MiB/s = 11% of the link's 63 GB/s" in c.reason


def test_pinned_copies_from_the_measured_h2d_pinned_run():
    frames = frames_of("h2d_pinned", 6, main_label="h2d")
    c = check_pageable_copies(frames, [verdict(f.t) for f in frames], make_env())
    assert c.status == PASS and "near link speed" in c.reason
    # the pinned copy keeps util.gpu at 100 %: the link is judged under load, Gen5 x16 as measured
    assert check_pcie_link(frames, make_env()).status == PASS
    (link,) = links_under_load(frames)
    assert (link.gen, link.width, link.gen_max, link.width_max) == (5, 16, 5, 16)


def test_throttle_check_falls_back_to_the_measured_reason_bits():
    frames = frames_of("matmul_bf16", 6)
    # the seed has no throttle counters, so the check reads the reason bits: 4 (SW power cap) under
    # the bf16 matmul, as measured; that is the normal state of a saturated GPU, not a slowdown
    assert frames[-1].gpus[0].clock_reasons == 4
    c = check_throttling(frames, make_env())
    assert c.status == PASS
    assert c.reason == "no slowdown beyond the SW power cap; SW power cap 100% of the time (normal for a saturated GPU)"
