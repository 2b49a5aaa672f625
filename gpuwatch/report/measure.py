"""Computes a run's :class:`~gpuwatch.report.figures.Figures` from its marks, series and remedies."""

from __future__ import annotations

from collections.abc import Sequence
from statistics import median

from gpuwatch.model.frame import Frame
from gpuwatch.model.values import known
from gpuwatch.model.verdict import GPU_BOUND, IDLE, PIPELINE
from gpuwatch.report.figures import Figures, Mean, SpeedupLeft
from gpuwatch.report.model import Remedy
from gpuwatch.report.sections import Mark, stage_shares
from gpuwatch.report.series import Tick, job_gpus, run_gpus


def run_figures(marks: Sequence[Mark], series: Sequence[Tick], frames: Sequence[Frame],
                remedies: Sequence[Remedy], covered_s: float, cmdline: str) -> Figures:
    stalls = [t.stall_period_s for t in series if t.stall_period_s is not None]
    shares = sorted(stage_shares(marks).items(), key=lambda kv: (-kv[1], kv[0]))
    return Figures(
        ticks=len(marks),
        covered_s=round(covered_s, 3),
        gpus=_gpu_names(frames),
        cmdline=cmdline,
        stage_shares=tuple((s, round(v, 4)) for s, v in shares),
        gpu_busy=_mean(t.gpu_busy for t in series),
        sm_active=_mean(t.sm_active for t in series),
        data_wait=_mean(t.data_wait for t in series),
        input=_mean(t.input for t in series),
        worker_cpu=_mean(t.worker_cpu for t in series),
        workers=_mean(sum(t.workers.values()) if t.workers is not None else None for t in series),
        pcie_rx=_mean(t.pcie_rx for t in series),
        pcie_tx=_mean(t.pcie_tx for t in series),
        host_cpu=_mean(t.host_cpu for t in series),
        cpu_pressure=_mean(t.cpu_pressure for t in series),
        io_pressure=_mean(t.io_pressure for t in series),
        stall_share=round(len(stalls) / len(series), 4) if series else 0.0,
        stall_period_s=round(median(stalls), 2) if stalls else None,
        speedup_left=speedup_left(remedies),
    )


def speedup_left(remedies: Sequence[Remedy]) -> SpeedupLeft | None:
    """What fixing one stage could still give over the whole run: the largest of the remedies'
    estimates (``speedup_run``) and, for each pipeline stage that came without one, Amdahl's
    ceiling ``1 / (1 - share)`` (its time gone entirely), marked as a bound. So a small estimated
    stage never stands for a large one nobody estimated, and a stage of a few ticks without an
    estimate cannot hide that little is left."""
    stages: dict[str, tuple[float, float | None, bool]] = {}
    for r in remedies:
        if r.stage is None or r.stage in (GPU_BOUND, IDLE) or r.beside is not None:
            continue  # (a stage met beside the verdict held no share of the run: "at most 1.00x" is no figure)
        share, factor, floor = stages.get(r.stage, (r.share, None, False))
        if r.speedup_run is not None and r.speedup_run > (factor or 0.0):
            factor, floor = r.speedup_run, r.speedup_floor
        stages[r.stage] = (max(share, r.share), factor, floor)
    options = []
    for stage, (share, factor, floor) in stages.items():
        if factor is not None:
            options.append((factor, False, stage, floor))
        elif stage in PIPELINE:
            options.append((1.0 / (1.0 - share) if share < 1.0 else float("inf"), True, stage, False))
    if not options:
        return None
    factor, bound, stage, floor = max(options, key=lambda o: (o[0], not o[1]))
    return SpeedupLeft(stage, round(factor, 2) if factor != float("inf") else None, bound, floor)


def _gpu_names(frames: Sequence[Frame]) -> tuple[str, ...]:
    used = run_gpus(frames)
    for f in reversed(frames):
        gpus = job_gpus(f, used)
        if gpus:
            return tuple(g.name for g in gpus)
    return ()


def _mean(values) -> Mean:
    vals = [v for v in values if v is not None and known(v)]
    return Mean(round(sum(vals) / len(vals), 3) if vals else None, len(vals))
