"""The PCIe collector against the fake NVML: rates from cumulative counters, wrap, link, replays.

Counter values set by a test are synthetic (marked); the rest replays tests/fake_nvml.py:CAPTURE.
"""

from __future__ import annotations

import os

import pytest

from gpuwatch.collectors.nvml_session import NvmlSession
from gpuwatch.collectors.pcie import PcieCollector, lane_bps
from gpuwatch.model.values import Unsupported
from tests.fake_nvml import CAPTURE, FakeNvml
from tests.test_gpu_collector import Clock, StubTarget

ME = os.getpid()
T0 = 1_796_212_800_000_000  # us since 1970 (2026-12-02T12:00Z), the seed's first tick


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def fake():
    return FakeNvml(CAPTURE, workload_pid=ME, gpus=2)


@pytest.fixture
def pcie(fake, clock):
    return PcieCollector(StubTarget(ME), NvmlSession(nvml=fake, pid_map=lambda p: p, clock=clock), clock=clock)


def step(fake, clock):
    fake.advance()
    clock.t += 0.5


def counter(fake, fid):
    fid, ret, ts, vtype, value, _ = next(e for e in fake.raw("fields_pcie")["v"] if e[0] == fid)
    return ret, ts, value


def test_lane_capacity_per_generation():
    # DCGM: Gen3 985 MB/s per lane; doubling per generation after it; Gen1/2 after 8b/10b.
    assert [lane_bps(g) for g in (1, 2, 3, 4, 5)] == [250e6, 500e6, 985e6, 1970e6, 3940e6]


def test_rx_rate_from_the_byte_counter_delta(fake, clock, pcie):
    fake.goto("h2d_pinned", 2)
    (first,) = pcie.sample()
    assert first.rx_bps == Unsupported("PCIe traffic: first window (needs two reads of the counters)")
    _, ts0, rx0 = counter(fake, 198)
    step(fake, clock)
    (s,) = pcie.sample()
    _, ts1, rx1 = counter(fake, 198)
    assert s.rx_bps == pytest.approx((rx1 - rx0) / ((ts1 - ts0) / 1e6))
    gen, width = fake.raw("max_link_gen")["v"], fake.raw("max_link_width")["v"]
    assert s.capacity_bps == lane_bps(gen) * width
    # h200-signatures.md: pinned H2D moves 56,509 MiB/s, ~94 % of Gen5 x16 (63.04 GB/s).
    assert s.rx_bps > 0.5 * s.capacity_bps
    ret, _, _ = counter(fake, 197)
    if ret != 0:
        assert s.tx_bps == Unsupported("PCIe byte counters (field 197): NVML has no data for it")


def test_64_bit_counter_wrap(fake, clock, pcie):
    # Synthetic counters: 1,000 bytes before the 64-bit wrap, 500 after it, one second later.
    fake.set_field(198, 2**64 - 1000, ts_us=T0, vtype=3)
    pcie.sample()
    fake.set_field(198, 500, ts_us=T0 + 1_000_000, vtype=3)
    step(fake, clock)
    assert pcie.sample()[0].rx_bps == 1500.0


def test_32_bit_counter_wraps_at_2_to_the_32(fake, clock, pcie):
    fake.set_field(197, 2**32 - 100, ts_us=T0, vtype=1)  # synthetic
    pcie.sample()
    fake.set_field(197, 100, ts_us=T0 + 500_000, vtype=1)
    step(fake, clock)
    assert pcie.sample()[0].tx_bps == 400.0  # 200 bytes in 0.5 s


def test_counter_reset_is_not_traffic(fake, clock, pcie):
    fake.set_field(198, 10**12, ts_us=T0)  # synthetic: the driver reloads and the counter restarts
    pcie.sample()
    fake.set_field(198, 10**6, ts_us=T0 + 1_000_000)
    step(fake, clock)
    assert pcie.sample()[0].rx_bps == Unsupported("PCIe RX: the byte counter was reset (driver reload?)")


def test_counter_not_refreshed(fake, clock, pcie):
    fake.set_field(198, 5_000, ts_us=T0)  # synthetic: same value and timestamp twice
    pcie.sample()
    step(fake, clock)
    assert pcie.sample()[0].rx_bps == Unsupported("PCIe RX: the counter was not refreshed since the last tick")


def test_downgraded_link_shows_current_against_max(fake, clock, pcie):
    fake.set("link_gen", 3)  # synthetic: the link trained down to Gen3 x8
    fake.set("link_width", 8)
    (s,) = pcie.sample()
    assert (s.gen_current, s.width_current) == (3, 8)
    assert (s.gen_max, s.width_max) == (fake.raw("max_link_gen")["v"], fake.raw("max_link_width")["v"])
    assert s.capacity_bps == lane_bps(s.gen_max) * s.width_max  # capacity of the link it could have


def test_link_width_not_supported_only_hides_that_field(fake, clock, pcie):
    fake.not_supported("link_width")
    (s,) = pcie.sample()
    assert s.width_current == Unsupported("PCIe link width: not supported on this GPU or driver (NVML: Not Supported)")
    assert s.gen_current == fake.raw("link_gen")["v"]


def test_replay_counter_delta_and_wrap(fake, clock, pcie):
    fake.set("replay", 2**32 - 2)  # synthetic replay counts
    assert pcie.sample()[0].replay_delta == Unsupported("PCIe replays: first window")
    fake.set("replay", 2**32 - 1)
    step(fake, clock)
    assert pcie.sample()[0].replay_delta == 1
    fake.set("replay", 2)
    step(fake, clock)
    assert pcie.sample()[0].replay_delta == 3  # wrapped at 2^32


def test_lost_gpu_marks_its_link_only(fake, clock):
    s = NvmlSession(nvml=fake, pid_map=lambda p: p, clock=clock)
    c = PcieCollector(StubTarget(ME), s, gpus=[0, 1], clock=clock)
    c.sample()
    fake.lose_gpu(0)
    step(fake, clock)
    a, b = c.sample()
    assert a.gen_current == Unsupported(s.lost(0)) and a.rx_bps == Unsupported(s.lost(0))
    assert "fell off the bus" in s.lost(0)
    assert b.gen_current == fake.raw("link_gen", gpu=1)["v"] and s.lost(1) is None


def test_no_nvml_is_the_probe_reason(clock):
    s = NvmlSession(nvml=FakeNvml(CAPTURE, scenario="no_library"), pid_map=lambda p: p, clock=clock)
    c = PcieCollector(StubTarget(ME), s, clock=clock)
    assert c.probe() == c.sample() == Unsupported(
        "NVML library (libnvidia-ml.so.1) not found: install the NVIDIA driver, or run the container "
        "with the NVIDIA Container Toolkit (`--gpus all`)"
    )
