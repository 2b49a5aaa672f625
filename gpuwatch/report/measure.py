"""Computes a run's :class:`~gpuwatch.report.figures.Figures` from its marks, series and remedies."""

from __future__ import annotations

from collections.abc import Sequence
from statistics import median

from gpuwatch.model.frame import Frame
from gpuwatch.model.values import known
from gpuwatch.model.verdict import PIPELINE
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
    """The largest whole-run estimate among the remedies of pipeline stages; but when a stage
    without an estimate held more of the run than that one, that stage, not estimated: a small
    estimated stage must not stand for what is left when most of the run is not estimated."""
    stages: dict[str, tuple[float, float | None]] = {}
    for r in remedies:
        if r.stage in PIPELINE:
            share, factor = stages.get(r.stage, (r.share, None))
            if r.speedup_run is not None:
                factor = max(factor or 0.0, r.speedup_run)
            stages[r.stage] = (max(share, r.share), factor)
    est = [(f, sh, st) for st, (sh, f) in stages.items() if f is not None]
    unest = [(sh, st) for st, (sh, f) in stages.items() if f is None]
    best = max(est, default=None)
    top = max(unest, default=None)
    if top is not None and (best is None or top[0] > best[1]):
        return SpeedupLeft(top[1], None)
    return SpeedupLeft(best[2], round(best[0], 2)) if best is not None else None


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
