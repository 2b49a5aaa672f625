"""Frames + verdicts + environment -> a Report: the one place the sections are put together."""

from __future__ import annotations

from dataclasses import replace

from gpuwatch.collectors.environment import Environment
from gpuwatch.diagnosis.thresholds import WINDOW_S
from gpuwatch.model.values import Maybe
from gpuwatch.ranks import scope_words
from gpuwatch.report import sections
from gpuwatch.report.checks import run_checks
from gpuwatch.report.checks_gpu import links_under_load
from gpuwatch.report.gaps import collect_gaps
from gpuwatch.report.gather import Collected
from gpuwatch.report.measure import run_figures
from gpuwatch.report.model import Report, Source
from gpuwatch.report.series import run_series
from gpuwatch.report.ranking import stage_costs
from gpuwatch.report.stacks import hot_stacks
from gpuwatch.report.words import epochs_over


def build_report(
    got: Collected,
    environment: Maybe[Environment],
    kind: str,
    pid: int | None = None,
    path: str | None = None,
    requested_s: float | None = None,
    bad_lines: int = 0,
) -> Report:
    first = got.frames[0] if got.frames else None
    last = got.last
    covered = got.covered_s
    early = got.early
    source = Source(
        kind=kind, pid=pid if pid is not None else (last.target.pid if last else None),
        cmdline=(last.target.cmdline if last and last.target.cmdline else first.target.cmdline if first else ""),
        path=path, started_wall=first.wall if first else None, covered_s=round(covered, 3),
        requested_s=requested_s, frames=len(got.marks), ended=got.ended, early=early, bad_lines=bad_lines,
        scope=next((w for f in reversed(got.frames) if (w := scope_words(f))), ""),
    )
    checks = run_checks(got.frames, got.verdicts, environment)
    costs = stage_costs(got.marks, got.verdicts)
    remedies = sections.remedies(got.marks, got.verdicts, checks, costs)
    snapshot = covered < WINDOW_S  # too short to judge the run: what its ticks held (words.too_short)
    figures = run_figures(got.marks, run_series(got.frames, got.verdicts), got.frames, remedies, covered,
                          source.cmdline)
    return Report(
        source=source,
        environment=environment,
        links=links_under_load(got.frames),
        summary=replace(sections.summary(got.marks, got.verdicts, costs,
                                         sections.straggler(got.stragglers, got.rank_ticks)), snapshot=snapshot,
                        epochs=epochs_over(got.verdicts[-1].phases, covered) if got.verdicts else ""),
        checks=checks,
        remedies=remedies,
        timeline=sections.timeline(got.marks, got.interval),
        evidence=sections.evidence(got.verdicts),
        stall=sections.stall(got.verdicts),
        stacks=hot_stacks(got.frames),
        not_checked=collect_gaps(got.frames, environment),
        figures=figures if not snapshot else replace(figures, speedup_left=None),
        epochs=got.verdicts[-1].phases if got.verdicts else (),
        **_earlier_epochs(got),
    )


def _earlier_epochs(got: Collected) -> dict:
    """The latest epoch structure said before the run's end, where the last verdict says none."""
    if not got.verdicts or got.verdicts[-1].phases:
        return {}
    v = next((v for v in reversed(got.verdicts) if v.phases), None)
    if v is None:
        return {}
    return {"epochs_earlier": v.phases, "epochs_earlier_s": round(v.t - got.verdicts[0].t, 1)}
