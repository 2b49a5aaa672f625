"""The PCIe collector against the fake NVML: rates from GPM and from cumulative counters, wrap,
link, replays.

The replayed values are the real H200 capture (tests/fake_nvml.py:CAPTURE). Counter values a test
sets itself are synthetic and say so.
"""

from __future__ import annotations

import os

import pytest

from gpuwatch.collectors.nvml_session import NvmlSession
from gpuwatch.collectors.pcie import MIB, REPLAYS_HELD, PcieCollector, lane_bps
from gpuwatch.model.values import Unsupported
from gpuwatch.pace import FULL, RELAXED
from tests.fake_nvml import CAPTURE, FakeNvml
from tests.test_gpu_collector import Clock, StubTarget

ME = os.getpid()
T0 = 1_796_212_800_000_000  # us since 1970 (2026-12-02T12:00Z): synthetic counter timestamps


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def fake():
    return FakeNvml(CAPTURE, workload_pid=ME, gpus=2)


@pytest.fixture
def pcie(fake, clock):
    return PcieCollector(StubTarget(ME), NvmlSession(nvml=fake, pid_map=lambda p: p, clock=clock), clock=clock)


@pytest.fixture
def no_gpm(fake):
    """The counter path: a GPU without GPM (pre-Hopper), otherwise the replayed H200."""
    fake.set("gpm_support", 0)
    return fake


def step(fake, clock):
    fake.advance()
    clock.t += 0.5


def counter(fake, fid, tick=None):
    fid, ret, ts, vtype, value, _ = next(e for e in fake.raw("fields_pcie", tick=tick)["v"] if e[0] == fid)
    return ret, ts, vtype, value


def gpm(fake, mid):
    return {m[0]: m for m in fake.raw("gpm")["v"]["m"]}[mid]


def test_lane_capacity_per_generation():
    # DCGM: Gen3 985 MB/s per lane; doubling per generation after it; Gen1/2 after 8b/10b.
    assert [lane_bps(g) for g in (1, 2, 3, 4, 5)] == [250e6, 500e6, 985e6, 1970e6, 3940e6]


def test_rx_rate_of_the_real_pinned_copy_comes_from_gpm(fake, clock, pcie):
    fake.goto("h2d_pinned", 2)
    (first,) = pcie.sample()
    assert first.rx_bps == Unsupported("PCIe traffic: first window (needs two reads of the counters)")
    step(fake, clock)
    (s,) = pcie.sample()
    assert s.rx_bps == gpm(fake, 21)[2] * MIB and s.tx_bps == gpm(fake, 20)[2] * MIB
    gen, width = fake.raw("max_link_gen")["v"], fake.raw("max_link_width")["v"]
    assert s.capacity_bps == lane_bps(gen) * width == 63.04e9  # Gen5 x16, as captured
    # Real: ~56,440 MiB/s = 94 % of the link, as h200-signatures.md measured (56,509 MiB/s).
    assert 0.9 < s.rx_bps / s.capacity_bps < 1.0
    assert fake.calls["nvmlDeviceGetFieldValues"] == 0  # the counters are not needed with GPM


def test_the_real_32_bit_counter_wraps_many_times_per_tick_under_a_pinned_copy(fake):
    # What the real capture shows: the RX byte counter is a 32-bit value (NVML value type 1), and
    # over one 0.5 s tick of the pinned copy GPM counted ~29.6 GB, i.e. the counter wrapped ~6.9
    # times; its delta modulo 2^32 (what a one-wrap counter reader computes) says ~7.5 GiB/s, and the
    # plain difference is negative. Neither is the rate.
    fake.goto("h2d_pinned", 2)
    _, ts0, vtype, rx0 = counter(fake, 198)
    fake.advance()
    _, ts1, _, rx1 = counter(fake, 198)
    dt = (ts1 - ts0) / 1e6
    assert vtype == 1 and rx1 < rx0
    true_bytes = gpm(fake, 21)[2] * MIB * dt
    assert true_bytes / 2**32 > 6
    one_wrap = ((rx1 - rx0) % 2**32) / dt
    assert one_wrap < 0.15 * true_bytes / dt


def test_a_32_bit_counter_that_can_wrap_twice_in_a_tick_is_unsupported(no_gpm, clock, pcie):
    no_gpm.goto("h2d_pinned", 2)
    pcie.sample()
    step(no_gpm, clock)
    (s,) = pcie.sample()
    assert s.rx_bps == Unsupported(
        "PCIe RX: NVML's byte counter is 32-bit on this GPU and wraps every 68 ms at full link speed, so a "
        "0.50 s delta cannot tell how often it wrapped; GPM (Hopper or newer) measures the rate exactly")
    assert isinstance(s.tx_bps, Unsupported) and "32-bit" in s.tx_bps.reason
    assert s.gen_current == 5 and s.capacity_bps == 63.04e9  # the rest of the link still reads


def test_a_32_bit_counter_on_a_link_too_slow_to_wrap_twice(no_gpm, clock, pcie):
    # Synthetic: a Gen1 x1 link moves at most 125 MB in 0.5 s, far below 2^32, so one wrap is certain.
    no_gpm.set("max_link_gen", 1)
    no_gpm.set("max_link_width", 1)
    no_gpm.set_field(197, 2**32 - 100, ts_us=T0, vtype=1)
    pcie.sample()
    no_gpm.set_field(197, 100, ts_us=T0 + 500_000, vtype=1)
    step(no_gpm, clock)
    assert pcie.sample()[0].tx_bps == 400.0  # 200 bytes in 0.5 s, across the wrap


def test_64_bit_counter_wrap(no_gpm, clock, pcie):
    # Synthetic counters: 1,000 bytes before the 64-bit wrap, 500 after it, one second later.
    no_gpm.set_field(198, 2**64 - 1000, ts_us=T0, vtype=3)
    pcie.sample()
    no_gpm.set_field(198, 500, ts_us=T0 + 1_000_000, vtype=3)
    step(no_gpm, clock)
    assert pcie.sample()[0].rx_bps == 1500.0


def test_counter_reset_is_not_traffic(no_gpm, clock, pcie):
    no_gpm.set_field(198, 10**12, ts_us=T0)  # synthetic 64-bit: the driver reloads and the counter restarts
    pcie.sample()
    no_gpm.set_field(198, 10**6, ts_us=T0 + 1_000_000)
    step(no_gpm, clock)
    assert pcie.sample()[0].rx_bps == Unsupported("PCIe RX: the byte counter was reset (driver reload?)")


def test_counter_not_refreshed(no_gpm, clock, pcie):
    no_gpm.set_field(198, 5_000, ts_us=T0)  # synthetic: same value and timestamp twice
    pcie.sample()
    step(no_gpm, clock)
    assert pcie.sample()[0].rx_bps == Unsupported("PCIe RX: the counter was not refreshed since the last tick")


def test_gpm_window_too_short_says_so(fake, clock, pcie):
    pcie.sample()
    clock.t += 0.05
    assert pcie.sample()[0].rx_bps == Unsupported("PCIe traffic: GPM: less than 100 ms since the last GPM sample")


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


def test_relaxed_pace_reads_the_replay_counter_every_second_tick_and_loses_no_count(fake, clock, pcie):
    fake.set("replay", 10)  # synthetic replay counts
    pcie.sample()
    pcie.set_pace(*RELAXED)
    seen = []
    for n in (12, 15, 15, 19, 20):
        fake.set("replay", n)
        step(fake, clock)
        seen.append(pcie.sample()[0].replay_delta)
    assert seen == [REPLAYS_HELD, 5, REPLAYS_HELD, 4, REPLAYS_HELD]  # a read counts the held tick's replays too
    assert fake.calls["nvmlDeviceGetPcieReplayCounter"] == 3  # the job's GPU: the first tick and two reads
    pcie.set_pace(*FULL)  # busy fell: every tick again
    for n, delta in ((21, 2), (24, 3)):
        fake.set("replay", n)
        step(fake, clock)
        assert pcie.sample()[0].replay_delta == delta


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
        "with the NVIDIA Container Toolkit (--gpus all)"
    )
