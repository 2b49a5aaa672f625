"""SYNTHETIC frames and verdicts for the TUI tests, and the one place that names the recording
the snapshot tests replay.

Everything built here is made up for layout only (no real job produced it). Where a GPU number
is needed, it is taken from the real H200 measurements in /work/shared/docs/h200-signatures.md
(the "45 ms sleep then 3 matmuls (starved for input)" row) so the screen looks plausible; the
rest (CPU, disk, stacks) is invented. This module holds no tests.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from gpuwatch.analysis import Analysis
from gpuwatch.model import (
    BlockDevice, DataLocation, DiskSample, DumpResult, Evidence, Frame, GpmMetrics, GpuProcess,
    GpuSample, HostSample, PcieSample, ProcInfo, ProcsSample, Psi, StackSample, TargetInfo,
    ThreadCpu, ThreadStack, Unsupported, Verdict,
)
from gpuwatch.model.verdict import DECODE, LEVEL_BOTTLENECK, LEVEL_OK, LEVEL_WARNING, PIPELINE, IO
from gpuwatch.recording import Recorder

ROOT = Path(__file__).resolve().parent
SNAPSHOT_RECORDINGS: dict[str, tuple[Path, int]] = {
    # A real recording of `gpuwatch demo --cpu`'s job on this 2-core VM (no GPU), made with
    # `gpuwatch --pid P --json --duration 62 --record`: compute, then decode-bound, then idle.
    "cpu_demo": (ROOT / "data" / "cpu_demo.jsonl", 30),
    # A real recording of bench/scenarios/healthy.py on one H200 (10 frames).
    "h200_healthy": (ROOT / "data" / "h200" / "healthy.jsonl", 10),
}
"""The recordings the snapshot tests replay, each with how many frames to replay before the
snapshot. The one place to add or switch recordings (GPUWATCH_TUI_RECORDING=path adds one)."""
if os.environ.get("GPUWATCH_TUI_RECORDING"):
    SNAPSHOT_RECORDINGS["env"] = (Path(os.environ["GPUWATCH_TUI_RECORDING"]), 30)

GIB = 1024**3
MAIN_PID, WORKER_PIDS = 4242, (4250, 4251)


def _gpu(i: int, t: float) -> GpuSample:
    wobble = (i % 5) - 2  # invented variation around the measured means
    return GpuSample(
        t=t, index=0, uuid="GPU-synthetic", name="NVIDIA H200 (synthetic)", used_by_target=True,
        util_gpu=9.0 + wobble, util_mem=3.0, util_trace=(),
        mem_used=int(38.5 * GIB), mem_total=int(141 * GIB), temp_c=41.0, power_w=165.0 + 3 * wobble,
        power_limit_w=700.0, sm_clock_mhz=1980.0, sm_clock_max_mhz=1980.0, mem_clock_mhz=2619.0,
        mem_clock_max_mhz=2619.0, clock_reasons=1, throttle=(("gpu_idle", 0.6),),
        gpm=GpmMetrics(window_s=1.0, gr_engine=9.1, sm_active=7.2 + wobble, sm_occupancy=1.1,
                       tensor=6.9 + wobble, dram_bw=1.9, pcie_rx_mibs=2.0, pcie_tx_mibs=1.0),
        processes=(GpuProcess(MAIN_PID, MAIN_PID, "python", int(38 * GIB), 9.0, True),),
    )


def _pcie(t: float) -> PcieSample:
    return PcieSample(t=t, index=0, gen_current=5, gen_max=5, width_current=16, width_max=16,
                      rx_bps=2.1e6, tx_bps=1.0e6, capacity_bps=63.0e9, replay_delta=0)


def _procs(t: float) -> ProcsSample:
    main = ProcInfo(MAIN_PID, 4200, "main", None, None, "python", "python train.py --workers 2", 61.0, "R",
                    int(5.5 * GIB), 14, 0.0, 0.0, 0.01, (ThreadCpu(MAIN_PID, "python", 58.0, "R"),), (0, 1))
    workers = tuple(
        ProcInfo(pid, MAIN_PID, "worker", None, MAIN_PID, "pt_data_worker", "python train.py", 98.0, "R",
                 int(1.2 * GIB), 3, 18.0e6, 0.0, 0.02, (), (0, 1))
        for pid in WORKER_PIDS
    )
    return ProcsSample(t=t, processes=(main, *workers), usable_cpus=2)


def _host(t: float) -> HostSample:
    return HostSample(t=t, cpu_count=2, cpu_pct=97.0, steal_pct=0.0, iowait_pct=1.0, load1=3.1,
                      mem_total=31 * GIB, mem_available=19 * GIB, swap_used=0, swap_in_bps=0.0,
                      swap_out_bps=0.0, psi=Psi(24.0, 1.0, 0.0, 0.0, 0.0),
                      cgroup=Unsupported("no cgroup CPU quota"), top_others=())


def _disk(t: float) -> DiskSample:
    return DiskSample(
        t=t, devices=(BlockDevice("nvme0n1", 12.0, 36.0e6, 0.0, 280.0, 0.0, 0.4),),
        locations=(DataLocation("data", "/data/imagenet", "/data", "nvme0n1", "ext4", False, 6),),
        target_read_bps=36.0e6,
    )


def _stacks(t: float) -> StackSample:
    main = ThreadStack(MAIN_PID, MAIN_PID, "main", None, "MainThread", "data_wait", "Queue.get", True, False,
                       ("wait (threading.py:331)", "get (multiprocessing/queues.py:113)",
                        "_try_get_data (torch/utils/data/dataloader.py:1133)", "train (train.py:52)"))
    workers = tuple(
        ThreadStack(pid, pid, "worker", None, "pt_data_worker", "busy", "Image.convert", True, True,
                    ("convert (PIL/Image.py:995)", "__getitem__ (dataset.py:40)",
                     "fetch (torch/utils/data/_utils/fetch.py:52)"))
        for pid in WORKER_PIDS
    )
    pin = ThreadStack(MAIN_PID, MAIN_PID + 3, "pin", None, "pt_data_pin", "pin_idle", "", False, False,
                      ("get (queue.py:180)", "_pin_memory_loop (torch/utils/data/_utils/pin_memory.py:52)"))
    return StackSample(t=t, threads=(main, *workers, pin),
                       dumps=tuple(DumpResult(p, True, 6.0) for p in (MAIN_PID, *WORKER_PIDS)))


def synthetic_frame(i: int, *, gpus: bool = True, stacks: bool = True, procs: bool = True) -> Frame:
    """Frame ``i`` (one per second) of a made-up decode-bound job on one GPU."""
    t = 1000.0 + i
    return Frame(
        seq=i + 1, t=t, wall=1_780_000_000.0 + i, interval=1.0,
        target=TargetInfo(MAIN_PID, "python train.py --workers 2", True),
        gpus=(_gpu(i, t),) if gpus else Unsupported("NVML library not found (libnvidia-ml.so.1): "
                                                    "install the NVIDIA driver, or run where the GPU is"),
        pcie=(_pcie(t),) if gpus else Unsupported("NVML library not found"),
        disk=_disk(t),
        procs=_procs(t) if procs else Unsupported("cannot read /proc/4242: permission denied; run as the "
                                                  "job's user or root"),
        host=_host(t),
        stacks=_stacks(t) if stacks else Unsupported("py-spy cannot attach: ptrace not permitted; run as "
                                                     "root or set kernel.yama.ptrace_scope=0"),
    )


def synthetic_frames(n: int, **kw) -> list[Frame]:
    return [synthetic_frame(i, **kw) for i in range(n)]


def synthetic_verdict(frame: Frame) -> Verdict:
    """A made-up decode-bound verdict with evidence, for drill-down layout."""
    levels = tuple((s, LEVEL_BOTTLENECK if s == DECODE else LEVEL_WARNING if s == IO else LEVEL_OK)
                   for s in PIPELINE)
    evidence = (
        Evidence(DECODE, "wait", 0.62, 0.20, ">=", True, "main thread waits for data 62 % of samples"),
        Evidence(DECODE, "wbusy", 0.91, 0.70, ">=", True, "workers busy in transforms 91 % of samples"),
        Evidence(DECODE, "wcpu", 0.98, 0.80, ">=", True, "workers use 0.98 core each"),
        Evidence(IO, "wio", 0.05, 0.40, ">=", False, "workers read files 5 % of samples"),
    )
    return Verdict(
        t=frame.t, stage=DECODE, confidence=0.82,
        sentence="Input-bound: DataLoader workers are saturated decoding images (SYNTHETIC).",
        evidence=evidence, secondary=(IO,), speedup=3.4,
        remedies=("Raise num_workers (2 now, 2 cores usable: add CPUs first).",
                  "Decode on the GPU (torchvision.io.decode_jpeg(device='cuda')) or use DALI."),
        levels=levels,
    )


class SyntheticAnalysis(Analysis):
    """An Analysis whose verdicts are :func:`synthetic_verdict` (the diagnosis is not under test)."""

    def update(self, frame: Frame) -> Verdict:
        self.frames.append(frame)
        v = synthetic_verdict(frame)
        self.verdicts.append(v)
        return v


class ListSource:
    """A frame source over a list; stops after the list (like a finished replay)."""

    live = False

    def __init__(self, frames: Sequence[Frame], hold: bool = False) -> None:
        self._frames = list(frames)
        self.hold = hold
        """Keep the iterator open after the last frame (like a live watch between ticks)."""

    def describe(self) -> str:
        return "synthetic frames"

    async def frames(self) -> AsyncIterator[Frame]:
        import asyncio

        for f in self._frames:
            await asyncio.sleep(0)
            yield f
        while self.hold:
            await asyncio.sleep(3600)


def write_recording(path: Path, frames: Sequence[Frame]) -> Path:
    """Write SYNTHETIC frames as a recording (verdicts left out: replay recomputes them)."""
    rec = Recorder(str(path), note="SYNTHETIC frames for TUI layout tests")
    try:
        for f in frames:
            rec.write(f, None)
    finally:
        rec.close()
    return path


class QueueSource:
    """A live-like source the test feeds one frame at a time (``put``); ``close`` ends it."""

    live = True

    def __init__(self) -> None:
        import asyncio

        self.queue: asyncio.Queue = asyncio.Queue()

    def describe(self) -> str:
        return "PID 4242 (test)"

    def put(self, frame: Frame | None) -> None:
        self.queue.put_nowait(frame)

    async def frames(self) -> AsyncIterator[Frame]:
        while True:
            f = await self.queue.get()
            if f is None:
                return
            yield f


def make_app(source, **kw):
    """The app as the tests build it: synthetic verdicts, own CPU frozen at 1.5 %."""
    from gpuwatch.tui.app import GpuwatchApp

    kw.setdefault("analysis", SyntheticAnalysis())
    kw.setdefault("self_cpu", lambda: 1.5)
    return GpuwatchApp(source, **kw)


async def settle(pilot, app) -> None:
    """Wait until every frame of a finite source is drawn."""
    await app.workers.wait_for_complete()
    await pilot.pause()
    await pilot.pause()


def screen_text(app) -> str:
    """The screen as plain text (what a user would read)."""
    import io

    from rich.console import Console

    w, h = app.size
    console = Console(width=w, height=h, file=io.StringIO(), force_terminal=True, record=True,
                      legacy_windows=False)
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.export_text()
