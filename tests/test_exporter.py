"""The Prometheus exporter: scraped over real HTTP, parsed with prometheus_client's own parser, and
checked against the frame the numbers came from. Also: nothing listens unless --prometheus is given."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import psutil
import pytest
from prometheus_client.parser import text_string_to_metric_families

from gpuwatch.cli import UsageError
from gpuwatch.exporter import start_exporter
from gpuwatch.prom_families import FAMILIES as METRICS
from gpuwatch.prom_families import LEVELS
from gpuwatch.model import GpmMetrics, Unsupported
from gpuwatch.model.gpu import GpuProcess
from gpuwatch.model.verdict import (
    CONTENTION, DECODE, GPU_MEMORY, H2D, IO, LAUNCH, LEVEL_BOTTLENECK, LEVEL_NA, LEVEL_OK, LEVEL_WARNING, PIPELINE,
    STAGES, Verdict,
)
from gpuwatch.multirank import MultiRank
from gpuwatch.pipeline import Tick
from tests.test_ranks import ddp_frame

pytestmark = pytest.mark.timeout(120)
MIB = 1024 * 1024


def full_gpu_frame(seq=1, t=1.0, replay=0, pcie_t=None):
    """ddp_frame with GPU 0 filled in. GPU numbers are the bf16-matmul row of the real H200
    measurements in /work/shared/docs/h200-signatures.md; temperature is left unreadable."""
    f = ddp_frame(seq, t)
    g0 = dataclasses.replace(
        f.gpus[0], util_gpu=100.0, util_mem=24.0, mem_used=40 << 30, mem_total=141 << 30, temp_c=Unsupported("n/a"),
        power_w=650.0, power_limit_w=700.0, sm_clock_mhz=1448.0, sm_clock_max_mhz=1980.0, mem_clock_mhz=2619.0,
        mem_clock_max_mhz=2619.0, clock_reasons=4, throttle=(("sw_power_cap", 0.5),),
        gpm=GpmMetrics(window_s=1.0, gr_engine=100.0, sm_active=96.6, sm_occupancy=14.3, tensor=93.8, dram_bw=17.2,
                       pcie_rx_mibs=13.0, pcie_tx_mibs=Unsupported("n/a")),
    )
    pcie = tuple(dataclasses.replace(s, replay_delta=replay, t=t if pcie_t is None else pcie_t) for s in f.pcie)
    return dataclasses.replace(f, gpus=(g0,) + f.gpus[1:], pcie=pcie)


def verdict(t=1.0, speedup=None):
    levels = tuple((s, LEVEL_BOTTLENECK if s == DECODE else LEVEL_WARNING if s == IO else LEVEL_OK) for s in PIPELINE)
    return Verdict(t=t, stage=DECODE, confidence=0.8, sentence="test", evidence=(), secondary=(), speedup=speedup,
                   remedies=(), levels=levels)


def scrape(port: int) -> dict[tuple[str, frozenset], float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name.endswith("_created"):
                continue
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def val(metrics, name, /, **labels):
    return metrics.get((name, frozenset((k, str(v)) for k, v in labels.items())))


def names(metrics):
    return {n for n, _ in metrics}


class Fed:
    """The exporter as the tick pipeline feeds it (gpuwatch/pipeline.py): each frame with the given
    verdict and the ranks that MultiRank finds in it."""

    def __init__(self, exporter) -> None:
        self.exporter, self.ranks = exporter, MultiRank()
        self.port = exporter.port

    def __call__(self, frame, v) -> None:
        self.exporter(Tick(frame, v, self.ranks.update(frame)))


@pytest.fixture
def exporter():
    e = start_exporter("127.0.0.1", 0)
    try:
        yield Fed(e)
    finally:
        e.close()


def test_before_the_first_frame_only_the_frame_count(exporter):
    assert scrape(exporter.port) == {("gpuwatch_frames_total", frozenset()): 0.0}


def test_gpu_metrics_match_the_frame(exporter):
    frame = full_gpu_frame()
    exporter(frame, verdict())
    m = scrape(exporter.port)
    assert val(m, "gpuwatch_target_up") == 1.0
    assert val(m, "gpuwatch_frame_timestamp_seconds") == frame.wall
    assert val(m, "gpuwatch_gpu_utilization_ratio", gpu=0) == 1.0
    assert val(m, "gpuwatch_gpu_memory_used_bytes", gpu=0) == float(40 << 30)
    assert val(m, "gpuwatch_gpu_power_watts", gpu=0) == 650.0
    assert val(m, "gpuwatch_gpu_sm_clock_hertz", gpu=0) == 1448e6
    assert val(m, "gpuwatch_gpu_throttled_seconds_total", gpu=0, reason="sw_power_cap") == 0.0  # first sample: no window yet
    assert val(m, "gpuwatch_gpu_clock_event_reason", gpu=0, reason="sw_power_cap") == 1.0  # bit 0x4
    assert val(m, "gpuwatch_gpu_clock_event_reason", gpu=0, reason="hw_slowdown") == 0.0
    assert val(m, "gpuwatch_gpm_sm_active_ratio", gpu=0) == pytest.approx(0.966)
    assert val(m, "gpuwatch_gpu_info", gpu=0, uuid="GPU-0aaa", name="test") == 1.0
    assert val(m, "gpuwatch_gpu_process_memory_used_bytes", gpu=0, pid=200, rank=0, target=1) == float(1 << 30)
    assert val(m, "gpuwatch_gpu_process_sm_utilization_ratio", gpu=1, pid=999, rank="", target=0) == 0.4
    assert val(m, "gpuwatch_pcie_rx_bytes_total", gpu=2) == 0.0
    assert val(m, "gpuwatch_pcie_link_generation", gpu=1) == 5.0


def test_unreadable_values_are_absent_not_zero(exporter):
    exporter(full_gpu_frame(), verdict())
    m = scrape(exporter.port)
    assert val(m, "gpuwatch_gpu_temperature_celsius", gpu=0) is None
    assert val(m, "gpuwatch_gpu_memory_used_bytes", gpu=1) is None  # test GPU 1 has it Unsupported
    assert val(m, "gpuwatch_pcie_link_capacity_bytes_per_second", gpu=0) is None
    assert not any(n.startswith("gpuwatch_host_") for n in names(m))  # the host sample is Unsupported
    assert val(m, "gpuwatch_collector_up", collector="host") == 0.0
    assert val(m, "gpuwatch_collector_up", collector="procs") == 1.0
    assert val(m, "gpuwatch_verdict_speedup_factor") is None


def test_processes_per_role_and_rank(exporter):
    exporter(full_gpu_frame(), verdict())
    m = scrape(exporter.port)
    assert val(m, "gpuwatch_processes", role="worker", rank=1) == 2.0
    assert val(m, "gpuwatch_cpu_seconds_total", role="worker", rank=1) == 0.0
    assert val(m, "gpuwatch_cpu_seconds_total", role="main", rank=0) == 0.0
    assert val(m, "gpuwatch_read_bytes_total", role="worker", rank=1) == 0.0
    assert val(m, "gpuwatch_processes", role="launcher", rank="") == 1.0
    assert val(m, "gpuwatch_rank_gpu", rank=0, gpu=0) == 1.0 and val(m, "gpuwatch_rank_gpu", rank=1, gpu=1) == 1.0
    assert val(m, "gpuwatch_target_read_bytes_total") == 0.0


def test_verdict_levels_and_confidence(exporter):
    exporter(full_gpu_frame(), verdict(speedup=2.5))
    m = scrape(exporter.port)
    assert {s: val(m, "gpuwatch_verdict", stage=s) for s in STAGES} == {s: float(s == DECODE) for s in STAGES}
    assert {lv: val(m, "gpuwatch_stage_level", stage=DECODE, level=lv) for lv in LEVELS} == {
        "ok": 0.0, "warning": 0.0, "bottleneck": 1.0, "n/a": 0.0}
    assert val(m, "gpuwatch_stage_level", stage=IO, level="warning") == 1.0
    assert val(m, "gpuwatch_stage_level", stage="h2d", level="ok") == 1.0
    assert val(m, "gpuwatch_verdict_confidence_ratio") == 0.8
    assert val(m, "gpuwatch_verdict_speedup_factor") == 2.5


def test_a_stage_nothing_measured_is_level_na_not_ok(exporter):
    """No GPU to judge: PCIe, GPU memory and Launch are n/a, and their level="ok" series reads 0."""
    from dataclasses import replace

    na = (H2D, GPU_MEMORY, LAUNCH)
    v = verdict()
    exporter(full_gpu_frame(), replace(v, levels=tuple((s, LEVEL_NA if s in na else lv) for s, lv in v.levels)))
    m = scrape(exporter.port)
    for stage in na:
        assert {lv: val(m, "gpuwatch_stage_level", stage=stage, level=lv) for lv in LEVELS} == {
            "ok": 0.0, "warning": 0.0, "bottleneck": 0.0, "n/a": 1.0}
    assert val(m, "gpuwatch_stage_level", stage=CONTENTION, level="ok") == 1.0
    assert val(m, "gpuwatch_stage_level", stage=CONTENTION, level="n/a") == 0.0


def test_each_fixs_own_estimate_is_a_series_by_fix(exporter):
    from dataclasses import replace

    from gpuwatch.model.verdict import FixGain

    gains = (FixGain("more_workers", 2.1, "why"), FixGain("cheaper_transform", None, "too few samples"))
    exporter(full_gpu_frame(), replace(verdict(speedup=5.0), gains=gains))
    m = scrape(exporter.port)
    assert val(m, "gpuwatch_verdict_fix_speedup_factor", fix="more_workers") == 2.1
    assert val(m, "gpuwatch_verdict_fix_speedup_factor", fix="cheaper_transform") is None  # not estimated: left out


def test_straggler_and_per_rank_shares(exporter):
    for i in range(12):
        exporter(full_gpu_frame(i + 1, float(i + 1)), verdict(float(i + 1)))
    m = scrape(exporter.port)
    assert val(m, "gpuwatch_frames_total") == 12.0
    assert val(m, "gpuwatch_straggler", rank=1, cause="input") == 1.0
    assert val(m, "gpuwatch_rank_collective_wait_ratio", rank=0) == 1.0
    assert val(m, "gpuwatch_rank_input_wait_ratio", rank=1) == 1.0
    assert val(m, "gpuwatch_rank_stack_samples", rank=1) == 10.0  # 10 s window, one sample a second


def test_pcie_replays_accumulate_once_per_sample(exporter):
    exporter(full_gpu_frame(1, 1.0, replay=2, pcie_t=1.0), None)
    exporter(full_gpu_frame(2, 2.0, replay=2, pcie_t=1.0), None)  # the same PCIe sample again
    exporter(full_gpu_frame(3, 3.0, replay=3, pcie_t=3.0), None)
    assert val(scrape(exporter.port), "gpuwatch_pcie_replays_total", gpu=1) == 5.0


def test_every_exposed_name_is_declared_with_a_unit_or_known_suffix(exporter):
    for i in range(12):
        exporter(full_gpu_frame(i + 1, float(i + 1), replay=1), verdict(float(i + 1), speedup=2.0))
    exposed = names(scrape(exporter.port))
    assert exposed <= set(METRICS)
    assert all(n.startswith("gpuwatch_") for n in exposed)
    # Every metric the test frame can fill is there (host ones need a host sample).
    assert set(METRICS) - exposed == {n for n in METRICS if n.startswith(("gpuwatch_host_", "gpuwatch_cgroup_"))} | {
        "gpuwatch_gpu_temperature_celsius", "gpuwatch_pcie_link_capacity_bytes_per_second",
        "gpuwatch_thread_cpu_seconds_total",
        "gpuwatch_verdict_fix_speedup_factor"}  # the test verdict proposes no fix (see the by-fix test)


def test_counters_add_rate_times_the_time_between_samples(exporter):
    f1 = full_gpu_frame(1, 1.0, pcie_t=1.0)
    f2 = full_gpu_frame(2, 3.0, pcie_t=3.0)
    f2 = dataclasses.replace(f2, procs=dataclasses.replace(f2.procs, t=f1.procs.t + 2.0))
    exporter(f1, None)
    exporter(f2, None)
    exporter(f2, None)  # the same samples again (a slow collector): counted once
    m = scrape(exporter.port)
    assert val(m, "gpuwatch_pcie_rx_bytes_total", gpu=2) == 2.0 * 2.0  # 2 B/s over the 2 s between samples
    assert val(m, "gpuwatch_cpu_seconds_total", role="main", rank=0) == pytest.approx(0.95 * 2.0)  # 95 % of a core
    assert val(m, "gpuwatch_cpu_seconds_total", role="worker", rank=1) == pytest.approx(0.04 * 2.0)
    assert val(m, "gpuwatch_read_bytes_total", role="worker", rank=1) == pytest.approx(500.0 * 2.0)


def test_series_of_the_jobs_processes_go_when_it_exits(exporter):
    for i in range(3):
        exporter(full_gpu_frame(i + 1, float(i + 1)), verdict(float(i + 1)))
    m = scrape(exporter.port)
    assert val(m, "gpuwatch_processes", role="main", rank=0) == 1.0
    assert val(m, "gpuwatch_cpu_seconds_total", role="main", rank=0) is not None
    gone = full_gpu_frame(4, 4.0)
    # NVML still lists the job's process after it exits, no longer marked the job's (review 30: it
    # stayed in the scrape as an outside process, target="0"); an outside process stays
    outside = GpuProcess(4242, 4242, "other", 1 << 30, 5.0, False)
    gpus = tuple(dataclasses.replace(g, processes=tuple(dataclasses.replace(p, is_target=False) for p in g.processes)
                                     + (outside,)) for g in gone.gpus)
    gone = dataclasses.replace(gone, gpus=gpus,
                               target=dataclasses.replace(gone.target, alive=False, exit_reason="exit code 0"))
    exporter(gone, verdict(4.0))
    m = scrape(exporter.port)
    assert val(m, "gpuwatch_target_up") == 0.0
    procs = [dict(ls) for n, ls in m if n == "gpuwatch_gpu_process_memory_used_bytes"]
    job = {str(p.local_pid or p.pid) for g in full_gpu_frame().gpus for p in g.processes if p.is_target}
    assert job and procs and all(p["pid"] not in job and p["target"] == "0" for p in procs), procs
    assert {"gpu": "0", "pid": "4242", "rank": "", "target": "0"} in procs
    assert all(val(m, "gpuwatch_gpu_used_by_target", gpu=g.index) == 0.0 for g in gone.gpus)
    per_process = ("gpuwatch_processes", "gpuwatch_cpu_seconds_total", "gpuwatch_resident_memory_bytes",
                   "gpuwatch_thread_cpu_seconds_total", "gpuwatch_rank_", "gpuwatch_straggler",
                   "gpuwatch_target_read_bytes_total")
    assert not [n for n in names(m) if n.startswith(per_process)]
    assert all(labels.get("target") != "1" for n, ls in m if n == "gpuwatch_gpu_process_memory_used_bytes"
               for labels in [dict(ls)])
    assert val(m, "gpuwatch_gpu_utilization_ratio", gpu=0) == 1.0  # the GPU itself is still there


def test_port_in_use_is_a_usage_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        with pytest.raises(UsageError, match=r"cannot serve Prometheus metrics on 127.0.0.1:\d+"):
            start_exporter("127.0.0.1", s.getsockname()[1])


# -- the CLI: a listener only with --prometheus -----------------------------------------------------

def _listening(pid: int) -> list[int]:
    p = psutil.Process(pid)
    conns = p.net_connections(kind="inet") if hasattr(p, "net_connections") else p.connections(kind="inet")
    return [c.laddr.port for c in conns if c.status == psutil.CONN_LISTEN]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def _watching(*extra: str):
    """A sleeping Python process, and ``gpuwatch --json`` watching it, once its first tick is out."""
    target = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    gw = None
    try:
        gw = subprocess.Popen([sys.executable, "-m", "gpuwatch", "--pid", str(target.pid), "--json", "--duration", "30",
                               "--no-stacks", *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first = gw.stdout.readline()
        assert first.startswith("{"), gw.stderr.read() if gw.poll() is not None else first
        yield gw
    finally:
        for p in (gw, target):
            if p is not None:
                p.kill()
                p.wait(timeout=10)


@pytest.mark.slow
def test_nothing_listens_without_prometheus():
    with _watching() as gw:
        assert _listening(gw.pid) == []


@pytest.mark.slow
def test_prometheus_flag_serves_the_live_frame():
    port = _free_port()
    with _watching("--prometheus", f"127.0.0.1:{port}") as gw:
        assert _listening(gw.pid) == [port]
        m = scrape(port)
        assert val(m, "gpuwatch_target_up") == 1.0
        assert val(m, "gpuwatch_processes", role="main", rank="") == 1.0


def test_docs_and_dashboard_use_declared_names_only():
    root = Path(__file__).parent.parent
    doc = (root / "docs" / "PROMETHEUS.md").read_text()
    assert all(f"`{n}`" in doc for n in METRICS), "docs/PROMETHEUS.md misses a metric"
    dashboard = json.loads((root / "deploy" / "grafana-dashboard.json").read_text())
    current = re.sub(r"### Renamed from the first release.*?\n## ", "## ", doc, flags=re.S)  # old names, on purpose
    used = {n for n in re.findall(r"gpuwatch_[a-z0-9_]+", json.dumps(dashboard) + current) if not n.endswith("_")}
    assert used - set(METRICS) == set()


def test_byte_counters_are_whole_bytes(exporter):
    """rate x dt sums carry float noise ("4095.9999999999995"); a byte counter shows whole bytes,
    rounded from the exact sum each time, so it still never goes down."""
    f1 = full_gpu_frame(1, 1.0, pcie_t=1.0)
    f2 = full_gpu_frame(2, 1.3, pcie_t=1.3)  # 1.3 - 1.0 is 0.30000000000000004
    f2 = dataclasses.replace(f2, procs=dataclasses.replace(f2.procs, t=f1.procs.t + 0.3))
    exporter(f1, None)
    exporter(f2, None)
    m = scrape(exporter.port)
    assert val(m, "gpuwatch_read_bytes_total", role="worker", rank=1) == 150.0  # 500 B/s over 0.3 s
    byte_counts = {k: v for k, v in m.items() if k[0].endswith("_bytes_total")}
    assert byte_counts and all(float(v).is_integer() for v in byte_counts.values()), byte_counts
