"""Per-tick series of a watched run, for the HTML report's charts and the figures ``compare`` reads.

One value per kept frame (``Collected.frames``), ``None`` where the collector could not read it,
never a made-up 0. The GPU values cover the GPUs the job used at any time in the run, in every tick
(the ticks before the job opened its GPU show that GPU idle), or every GPU listed when NVML never
named one as the job's. Pure: frames and verdicts in, numbers out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gpuwatch.diagnosis.stack_counts import each_sample
from gpuwatch.diagnosis.thresholds import WINDOW_S
from gpuwatch.model import stacks as lb
from gpuwatch.model.frame import Frame
from gpuwatch.model.gpu import GpuSample
from gpuwatch.model.procs import ROLE_WORKER
from gpuwatch.model.stacks import ROLE_MAIN_THREAD, StackSample
from gpuwatch.model.values import known
from gpuwatch.model.verdict import Verdict

DATA_WAIT_WINDOW_S = WINDOW_S
"""Main-thread stack samples are pooled over the verdict's evidence window: one dump or two a
second alone would read 0 % or 100 % each tick (a dump sees the main thread in one place), and the
same window is what the verdict's own data-wait share reads."""
WAIT_LABELS = (lb.DATA_WAIT, lb.DATA_IPC)
"""The main thread waiting for a batch: the same two labels the verdict counts as data wait."""
# lb.INPUT_LABELS: the main thread on its input (waiting, loading or preparing in the loop), as the
# TUI's "input" line counts it.
WORKER_STATES = (("running", ("R",)), ("sleeping", ("S", "I")), ("disk", ("D",)))
"""Worker process states as the kernel reports them (/proc/PID/stat), grouped as the chart shows them;
any other state counts as "other"."""


@dataclass(frozen=True, slots=True)
class Tick:
    t_s: float
    """Seconds from the first frame."""
    stage: str
    gpu_busy: float | None
    """NVML utilization.gpu, percent, mean over the job's GPUs."""
    sm_active: float | None
    """GPM SM active, percent, mean over the job's GPUs (Hopper and newer)."""
    data_wait: float | None
    """Percent of main-thread stack samples waiting for a batch over the last DATA_WAIT_WINDOW_S."""
    input: float | None
    """Percent of main-thread stack samples on the input (lb.INPUT_LABELS: waiting for a batch,
    loading one itself or preparing one in the training loop) over the same window."""
    worker_cpu: float | None
    """DataLoader workers' CPU summed, percent of one core."""
    workers: dict[str, int] | None
    """Worker processes per state (running, sleeping, disk, other)."""
    pcie_rx: float | None
    """Host-to-device bytes per second, summed over the job's GPUs."""
    pcie_tx: float | None
    host_cpu: float | None
    """Host CPU busy, percent."""
    cpu_pressure: float | None
    """Pressure stall information, ``some`` avg10 percent."""
    io_pressure: float | None
    memory_pressure: float | None
    stall_period_s: float | None
    """The verdict's periodic GPU stall at this tick (None: none seen)."""
    stall_idle_s: float | None


def run_series(frames: Sequence[Frame], verdicts: Sequence[Verdict]) -> tuple[Tick, ...]:
    """One Tick per frame (``verdicts`` aligned with ``frames``)."""
    if not frames:
        return ()
    t0 = frames[0].t
    wait, inputs = main_shares(frames, WAIT_LABELS), main_shares(frames, lb.INPUT_LABELS)
    used = run_gpus(frames)
    out = []
    for f, v, wait_pct, input_pct in zip(frames, verdicts, wait, inputs):
        gpus = job_gpus(f, used)
        rx, tx = _pcie(f, {g.index for g in gpus} if gpus is not None else None)
        psi = f.host.psi if known(f.host) and known(f.host.psi) else None
        out.append(Tick(
            t_s=round(f.t - t0, 3),
            stage=v.stage,
            gpu_busy=_mean(g.util_gpu for g in gpus or () if not g.lost),
            sm_active=_mean(g.gpm.sm_active for g in gpus or () if not g.lost and known(g.gpm)),
            data_wait=wait_pct,
            input=input_pct,
            worker_cpu=(sum(p.cpu_pct for p in f.procs.processes if p.role == ROLE_WORKER)
                        if known(f.procs) else None),
            workers=worker_states(f),
            pcie_rx=rx,
            pcie_tx=tx,
            host_cpu=f.host.cpu_pct if known(f.host) else None,
            cpu_pressure=psi.cpu_some if psi else None,
            io_pressure=psi.io_some if psi else None,
            memory_pressure=psi.mem_some if psi else None,
            stall_period_s=v.stall.period_s if v.stall else None,
            stall_idle_s=v.stall.idle_s if v.stall else None,
        ))
    return tuple(out)


def run_gpus(frames: Sequence[Frame]) -> frozenset[int]:
    """Indexes of the GPUs NVML named as the job's in any frame."""
    return frozenset(g.index for f in frames if known(f.gpus) for g in f.gpus if g.used_by_target)


def job_gpus(f: Frame, used: frozenset[int]) -> tuple[GpuSample, ...] | None:
    """This frame's samples of the ``used`` GPUs (all of them when ``used`` is empty); None without NVML."""
    if not known(f.gpus):
        return None
    return tuple(g for g in f.gpus if g.index in used) if used else tuple(f.gpus)


def main_shares(frames: Sequence[Frame], labels: tuple[str, ...]) -> list[float | None]:
    """For each frame, the percent of main-thread samples with one of ``labels`` among the distinct
    stack samples of the frames in its window (those less than DATA_WAIT_WINDOW_S before it, and
    itself): the count the TUI's chart makes (tui/chart_series.py). The verdict's own window
    (window.last_ticks) cuts half a tick inside that edge, so with jittered ticks it may hold one frame
    fewer: the charts read the window's seconds, the verdict its ticks."""
    own: dict[int, tuple[int, int]] = {}  # frame index -> (labelled, main-thread) of the sample it brought
    index = {id(f): i for i, f in enumerate(frames)}
    for f, s in each_sample(frames):
        if isinstance(s, StackSample):
            main = [th for th in s.threads if th.role == ROLE_MAIN_THREAD]
            own[index[id(f)]] = (sum(th.label in labels for th in main), len(main))
    out: list[float | None] = []
    hit = n = 0
    first = 0
    for i, f in enumerate(frames):
        h, m = own.get(i, (0, 0))
        hit, n = hit + h, n + m
        while f.t - frames[first].t >= DATA_WAIT_WINDOW_S:
            h, m = own.get(first, (0, 0))
            hit, n = hit - h, n - m
            first += 1
        out.append(100.0 * hit / n if n else None)
    return out


def worker_states(f: Frame) -> dict[str, int] | None:
    if not known(f.procs):
        return None
    out = {name: 0 for name, _ in WORKER_STATES} | {"other": 0}
    for p in f.procs.processes:
        if p.role == ROLE_WORKER:
            out[next((name for name, codes in WORKER_STATES if p.state in codes), "other")] += 1
    return out


def _pcie(f: Frame, indexes: set[int] | None) -> tuple[float | None, float | None]:
    if not known(f.pcie):
        return None, None
    mine = [s for s in f.pcie if indexes is None or s.index in indexes]
    return _sum(s.rx_bps for s in mine), _sum(s.tx_bps for s in mine)


def _mean(values) -> float | None:
    vals = [float(v) for v in values if known(v) and v == v]
    return sum(vals) / len(vals) if vals else None


def _sum(values) -> float | None:
    vals = [float(v) for v in values if known(v) and v == v]
    return sum(vals) if vals else None
