"""Real H200 data end to end: a gpuwatch recording checked against nvidia-smi, and py-spy stacks.

tests/data/h200/healthy.jsonl is a real 10-tick ``gpuwatch --pid P --json --record`` recording of
bench/scenarios/healthy.py (bf16 MLP, compute-bound) on an NVIDIA H200, 2026-12-02, and
healthy_nvidia_smi.csv is nvidia-smi read at 1 Hz during the same run (tests/data/h200/README.md).
Both clocks are the device's, in UTC. tests/data/pyspy/gpu-stacks.json holds real py-spy dumps of
CUDA jobs on the same machine (tests/data/pyspy/README.md).
"""

from __future__ import annotations

import csv
import json
import pathlib
from datetime import datetime, timezone
from pathlib import Path

import pytest

from gpuwatch.analysis import Analysis
from gpuwatch.collectors.pyspy import parse_dump
from gpuwatch.collectors.stack_labels import classify, thread_role
from gpuwatch.model import stacks as S
from gpuwatch.model.gpu import GpmMetrics
from gpuwatch.model.values import Unsupported
from gpuwatch.model.verdict import GPU_BOUND
from gpuwatch.replay import load_frames

DATA = Path(__file__).parent / "data"
RECORDING = DATA / "h200" / "healthy.jsonl"
SMI = DATA / "h200" / "healthy_nvidia_smi.csv"
MIB = 2**20

PAIR_S = 0.5
"""Both sides read once a second, so each gpuwatch read has an nvidia-smi row within half a second."""
UTIL_POINTS = 3.0
"""NVML utilization is a mean over the driver's 200 ms samples, nvidia-smi's over its own period:
a few points apart on a steady job (here 98-100 % against 99 %)."""
TEMP_C = 1.0
"""An integer sensor read ~0.4 s apart: one degree either way."""
POWER_REL = 0.03
"""Power under load moves a few watts from read to read (680-690 W here): 3 %."""
SM_CLOCK_STEP_MHZ = 15.0
"""The H200's SM clock moves in 15 MHz steps (1950, 1965, 1980 MHz in this run): one step apart."""
DRIVER_PERIOD_S = 0.2
"""The driver's utilization sample period on the H200 (h200-signatures.md)."""
WARMUP_TICKS = 2
"""Tick 1 has no GPM (first window) and tick 2 one GPM window: the verdict settles from tick 3."""
HIGH_CONFIDENCE = 0.9


def smi_rows(path: Path = SMI) -> list[tuple[float, dict[str, str]]]:
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.reader(f, skipinitialspace=True)
        head = [h.split(" [")[0] for h in next(reader)]
        rows = []
        for r in reader:
            when = datetime.strptime(r[0], "%Y/%m/%d %H:%M:%S.%f").replace(tzinfo=timezone.utc)
            rows.append((when.timestamp(), dict(zip(head, r))))
    return rows


def num(text: str) -> float:
    return float(text.split()[0])


@pytest.fixture(scope="module")
def frames():
    bad = []
    out = load_frames(str(RECORDING), on_bad_line=bad.append)
    assert bad == [] and [f.seq for f in out] == list(range(1, 11))
    return out


@pytest.fixture(scope="module")
def pairs(frames):
    """(frame, GPU sample, PCIe sample, nvidia-smi row) where the two reads overlap in time.

    The GPU sample was read at monotonic ``g.t``, before the frame (``frame.t``, wall ``frame.wall``)
    was assembled, so its wall time is ``frame.wall - (frame.t - g.t)``.
    """
    rows = smi_rows()
    out = []
    for f in frames:
        g, p = f.gpus[0], f.pcie[0]
        wall = f.wall - (f.t - g.t)
        ts, row = min(rows, key=lambda r: abs(r[0] - wall))
        if abs(ts - wall) <= PAIR_S:
            out.append((f, g, p, row, wall))
    assert len(out) == len(frames)  # every tick of this run has an nvidia-smi row beside it
    return out


def test_the_recording_is_the_h200_run(frames):
    for f in frames:
        (g,) = f.gpus
        assert g.name == "NVIDIA H200" and g.used_by_target and g.lost is None
        assert "bench.scenarios.healthy" in f.target.cmdline


def test_wall_clock_and_the_drivers_clock_agree(pairs):
    # The driver timestamps its utilization samples in unix time; the newest sample a read returns
    # is at most one driver period older than the read, if both clocks agree.
    for _, g, _, _, wall in pairs:
        assert 0.0 <= wall - g.util_trace[-1][0] <= DRIVER_PERIOD_S + 0.05


def test_utilization_matches_nvidia_smi(pairs):
    for _, g, _, row, _ in pairs:
        assert abs(g.util_gpu - num(row["utilization.gpu"])) <= UTIL_POINTS


def test_temperature_matches_nvidia_smi(pairs):
    for _, g, _, row, _ in pairs:
        assert abs(g.temp_c - num(row["temperature.gpu"])) <= TEMP_C


def test_power_matches_nvidia_smi(pairs):
    for _, g, _, row, _ in pairs:
        assert g.power_w == pytest.approx(num(row["power.draw"]), rel=POWER_REL)


def test_sm_clock_within_one_step_of_nvidia_smi(pairs):
    for _, g, _, row, _ in pairs:
        assert abs(g.sm_clock_mhz - num(row["clocks.current.sm"])) <= SM_CLOCK_STEP_MHZ


def test_pcie_link_gen5_x16_as_nvidia_smi(pairs):
    for _, _, p, row, _ in pairs:
        assert (p.gen_current, p.width_current) == (int(row["pcie.link.gen.current"]), int(row["pcie.link.width.current"]))
        assert (p.gen_current, p.width_current, p.gen_max, p.width_max) == (5, 16, 5, 16)


def test_recorded_memory_was_v1_with_the_reserved_memory(pairs):
    # This recording predates the switch to nvmlDeviceGetMemoryInfo v2 (collectors/gpu.py): its
    # mem_used is v1 'used', 615 MiB (the driver's reserved memory) above nvidia-smi on every tick.
    # A recording made after the fix should match nvidia-smi's 2527 MiB instead.
    for _, g, _, row, _ in pairs:
        assert num(row["memory.used"]) == 2527
        assert round(g.mem_used / MIB - num(row["memory.used"])) == 615


def test_gpm_from_the_second_tick(frames):
    assert frames[0].gpus[0].gpm == Unsupported("GPM: first window")
    for f in frames[1:]:
        gpm = f.gpus[0].gpm
        assert isinstance(gpm, GpmMetrics)
        assert gpm.window_s == pytest.approx(1.0, abs=0.05)  # one 1 s tick
        assert gpm.sm_active > 80 and gpm.tensor > 30  # real: SMs 86 % active, tensor 35 %


def test_low_pcie_traffic_counter_and_gpm_agree(frames):
    # At ~115 MB/s the 32-bit byte counter cannot wrap twice in a 1 s tick, so its delta is exact;
    # it reads ~3 % above GPM's PCIe RX (the same traffic, GPM in MiB/s).
    for f in frames[1:]:
        ratio = f.pcie[0].rx_bps / (f.gpus[0].gpm.pcie_rx_mibs * MIB)
        assert 0.95 < ratio < 1.10


def test_verdict_is_gpu_bound_with_high_confidence_after_warmup(frames):
    a = Analysis()
    verdicts = [a.update(f) for f in frames]
    assert all(v.stage == GPU_BOUND for v in verdicts)
    assert all(v.confidence >= HIGH_CONFIDENCE for v in verdicts[WARMUP_TICKS:])
    assert all(level == "ok" for v in verdicts for _, level in v.levels)  # no pipeline stage lags


# -- py-spy dumps of CUDA jobs on the same H200 --------------------------------------------------
def _gpu_bound_main_dumps(mode: str) -> list:
    doc = json.loads((DATA / "pyspy" / "gpu-stacks.json").read_text())
    job = next(j for j in doc["jobs"] if j["name"] == "gpu_bound")
    out = []
    for d in job["dumps"]:
        if d["mode"] == mode and d["process_role"] == "main" and "output" in d:
            (main,) = [t for t in parse_dump(json.dumps(d["output"]), d["pid"]) if t.tid == d["pid"]]
            out.append(main)
    return out


def test_native_dump_shows_item_waiting_in_cuda_stream_synchronize():
    # Real: the gpu_bound job's main thread at `float(x[0, 0].item())` (tests/jobs/stack_targets.py:175),
    # dumped with --native: .item() -> _local_scalar_dense_cuda -> cudaStreamSynchronize.
    (main,) = _gpu_bound_main_dumps("blocking-native")
    names = [f.name for f in main.frames]
    assert "cuStreamSynchronize" in names and "at::native::item" in names
    assert classify(main, thread_role(main, "main")) == (S.SYNC, "gpu_bound.<locals>.step (stack_targets.py:175)")


def test_python_only_dumps_of_the_same_line_are_sync_when_the_source_is_read():
    # Without --native, py-spy shows only the user line; the stack collector reads that line's text
    # (through /proc/PID/root) and calls `.item()` there a sync. Here the same script is read from
    # this checkout, as the collector would read it on the H200.
    jobs = pathlib.Path(__file__).parent / "jobs"

    def source(filename: str, line: int) -> str | None:
        lines = (jobs / pathlib.Path(filename).name).read_text().splitlines()
        return lines[line - 1] if 0 < line <= len(lines) else None

    mains = _gpu_bound_main_dumps("nonblocking")
    assert len(mains) == 10
    assert all(t.frames[0].line == 175 for t in mains)  # the same line the native dump shows
    assert {classify(t, thread_role(t, "main"))[0] for t in mains} == {S.DISPATCH}  # frames alone
    assert {classify(t, thread_role(t, "main"), source_line=source)[0] for t in mains} == {S.SYNC}
