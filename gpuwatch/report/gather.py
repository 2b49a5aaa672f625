"""Frames and verdicts for the report, from a live watch or a recording.

A long diagnose (up to a day) must not hold every frame: every tick's (t, stage, confidence) is
kept for the timeline, but full frames and verdicts only up to ``MAX_KEPT``; past that the kept
set is thinned to every other one and only every 2nd, 4th... new tick is kept, so what remains is
an even sample of the whole run for the checks and stack counts.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from gpuwatch.analysis import Analysis
from gpuwatch.model.frame import Frame
from gpuwatch.model.values import job_exited
from gpuwatch.model.verdict import Verdict
from gpuwatch.multirank import MultiRank, RankTick
from gpuwatch.pipeline import Pipeline, Source, Tick
from gpuwatch.report.model import STOPPED_EARLY
from gpuwatch.report.sections import Mark
from gpuwatch.signals import stopping_on_signals
from gpuwatch.straggler import Straggler

MAX_KEPT = 3600
"""Full frames kept: one hour at the default 1 s tick, a few tens of MB."""


@dataclass
class Collected:
    frames: list[Frame] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)
    """Aligned with ``frames``."""
    marks: list[Mark] = field(default_factory=list)
    """Every tick, kept or not."""
    last: Frame | None = None
    """The latest frame, kept or not (it says whether the job is still alive)."""
    stride: int = 1
    ended: str = ""
    early: bool = False
    """True when the job exited or the user stopped the watch before the duration."""
    rank_ticks: int = 0
    """Ticks that showed two or more ranks."""
    stragglers: list[Straggler] = field(default_factory=list)
    """The straggler of each such tick that named one, in order."""

    def add(self, frame: Frame, verdict: Verdict, ranks: RankTick | None = None) -> None:
        if ranks is not None:
            self.rank_ticks += 1
            if ranks.straggler is not None:
                self.stragglers.append(ranks.straggler)
        self.marks.append((frame.t, verdict.stage, verdict.confidence))
        self.last = frame
        if (len(self.marks) - 1) % self.stride == 0:
            self.frames.append(frame)
            self.verdicts.append(verdict)
            if len(self.frames) > MAX_KEPT:
                self.frames, self.verdicts = self.frames[::2], self.verdicts[::2]
                self.stride *= 2

    @property
    def interval(self) -> float:
        return self.last.interval if self.last is not None else 1.0

    @property
    def covered_s(self) -> float:
        return self.marks[-1][0] - self.marks[0][0] + self.interval if self.marks else 0.0


def from_frames(frames: list[Frame], analysis: Analysis | None = None) -> Collected:
    """Recompute the verdicts of recorded frames, as a replay does."""
    analysis = analysis or Analysis()
    ranks = MultiRank()  # the straggler, as replay --json and the TUI name it
    out = Collected()
    for f in frames:
        out.add(f, analysis.update(f), ranks.update(f))
    out.ended = "end of the recording"
    if out.last is not None and not out.last.target.alive:
        # said as a live watch says it: a replay of a job that exited ended with the job, not only
        # with the file (a trial's report read "end of the recording" for a worker's crash)
        out.ended += f"; {job_exited(out.last.target.exit_reason)}"
    return out


async def watch_live(
    source: Source, on_tick: Callable[[Frame, Verdict, float], None] | None = None, analysis: Analysis | None = None
) -> Collected:
    """Run ``source`` (a LiveSource) through the tick pipeline to its end, the job's exit, or
    Ctrl-C / SIGTERM / SIGHUP.

    ``on_tick(frame, verdict, elapsed_s)`` is called for each tick (the progress bar)."""
    out = Collected()

    def collect(tick: Tick) -> None:
        out.add(tick.frame, tick.verdict, tick.ranks)
        if on_tick is not None:
            on_tick(tick.frame, tick.verdict, out.covered_s)

    stop = asyncio.Event()
    error: Exception | None = None
    with stopping_on_signals(asyncio.get_running_loop(), stop.set):
        try:
            await Pipeline(source, analysis, sinks=(collect,)).run(stop)
        except Exception as e:  # noqa: BLE001 - a bug or a lost source: still report on the ticks seen so far
            error = e
    if error is not None:
        out.ended, out.early = f"watching stopped on an error ({type(error).__name__}: {error})", True
    elif stop.is_set():
        out.ended, out.early = f"{STOPPED_EARLY}interrupted)", True
    elif out.last is not None and not out.last.target.alive:
        out.ended, out.early = job_exited(out.last.target.exit_reason), True
    else:
        out.ended = "duration reached"
    return out
