"""Reliability of the GPU and PCIe collectors when any single NVML read fails, against the fake
NVML replaying the real H200 capture (tests/fake_nvml.py). The errors are injected (synthetic); the
values that are still read come from the capture.

The probe-level faults (library missing, driver/library mismatch, no permission, no GPU, GPU lost
mid-run) are tests/test_gpu_collector.py's: see docs/RELIABILITY.md.
"""

from __future__ import annotations

import os
from dataclasses import fields

import pytest

from gpuwatch.collectors.gpu import GpuCollector
from gpuwatch.collectors.nvml_session import NvmlSession
from gpuwatch.collectors.pcie import PcieCollector
from gpuwatch.model.gpu import GpuSample
from gpuwatch.model.pcie import PcieSample
from gpuwatch.model.values import Unsupported
from tests.fake_nvml import CAPTURE, FakeNvml

ME = os.getpid()
_CAPTURE = FakeNvml(CAPTURE)
KEYS = sorted(set(_CAPTURE.ticks[0]["calls"]) | set(_CAPTURE.static))
"""Every NVML read the collectors make, by its capture key (name, memory, gpm_support, ...)."""
ERRORS = ["NVMLError_NotSupported", "NVMLError_Unknown", "NVMLError_NoPermission", "NVMLError_Timeout"]


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


class StubTarget:
    def tree(self):
        return self

    def pids(self):
        return (ME,)


def _readings(sample) -> dict[str, object]:
    return {f.name: getattr(sample, f.name) for f in fields(sample)}


SHOWS_IN = {
    "clock_mem": ("mem_clock_mhz",), "clock_reasons": ("clock_reasons",), "clock_sm": ("sm_clock_mhz",),
    "fields_throttle": ("throttle",), "gpm_support": ("gpm", "pcie.rx_bps", "pcie.tx_bps"),
    "link_gen": ("pcie.gen_current",), "link_width": ("pcie.width_current",),
    "max_clock_mem": ("mem_clock_max_mhz",), "max_clock_sm": ("sm_clock_max_mhz",),
    "max_link_gen": ("pcie.gen_max", "pcie.capacity_bps"), "max_link_width": ("pcie.width_max", "pcie.capacity_bps"),
    "memory": ("mem_used", "mem_total"), "power_limit": ("power_limit_w",), "power_usage": ("power_w",),
    "replay": ("pcie.replay_delta",), "samples_gpu": ("util_gpu",), "samples_mem": ("util_mem",),
    "temperature": ("temp_c",), "proc_util": ("processes[].sm_util",),
}
"""Where a failing read shows, as Unsupported with the reason. Not listed, on purpose:
``fields_pcie`` (read only where GPM is missing, and the capture's H200 has GPM); ``name``/``uuid``
(plain strings in the model: an empty name); ``compute_procs`` (the model's ``processes`` is a plain
tuple, so a failing read shows as no processes and ``used_by_target`` False: a known gap, see
docs/RELIABILITY.md)."""


def _sample_with_failing(key: str, err: str):
    """GPU and PCIe samples after three ticks with ``key`` failing from before the probe on."""
    fake = FakeNvml(CAPTURE, workload_pid=ME, gpus=1)
    fake.goto("matmul_bf16", 2)
    fake.set(key, err=err)  # synthetic: this one read fails, from the start (statics included)
    clock = Clock()
    session = NvmlSession(nvml=fake, pid_map=lambda p: p, clock=clock)
    gpu = GpuCollector(StubTarget(), session, clock=clock)
    pcie = PcieCollector(StubTarget(), session, clock=clock)
    assert gpu.probe() is None and pcie.probe() is None  # one bad read never turns the GPU off
    for _ in range(3):  # the first read and the ones after it (cursors, first windows)
        fake.advance()
        clock.t += 0.5
        g, p = gpu.sample(), pcie.sample()
        assert isinstance(g, tuple) and isinstance(g[0], GpuSample), g
        assert isinstance(p, tuple) and isinstance(p[0], PcieSample), p
    readings = _readings(g[0]) | {f"pcie.{k}": v for k, v in _readings(p[0]).items()}
    readings["processes[].sm_util"] = next((x.sm_util for x in g[0].processes), None)
    return g[0], readings


@pytest.mark.parametrize("err", ERRORS)
@pytest.mark.parametrize("key", KEYS)
def test_one_failing_nvml_read_costs_only_its_own_fields(key, err):
    g, readings = _sample_with_failing(key, err)
    assert g.lost is None  # an error is not a lost GPU
    for name in SHOWS_IN.get(key, ()):
        value = readings[name]
        assert isinstance(value, Unsupported) and value.reason, (name, value)
    # The rest of the GPU is still read: a failing read never blanks the panel.
    others = [k for k, v in _readings(g).items() if k not in SHOWS_IN.get(key, ()) and k not in ("t", "index")]
    read = [k for k in others if not isinstance(readings[k], Unsupported)]
    assert len(read) >= len(others) - 2, {k: readings[k] for k in others if k not in read}
