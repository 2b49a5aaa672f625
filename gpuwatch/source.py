"""Where frames come from: a live watch or a recording. Everything downstream takes either."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field

from gpuwatch.assemble import WatchOptions, build_collectors
from gpuwatch.collectors.target import Target
from gpuwatch.engine import Watch
from gpuwatch.model.frame import Frame
from gpuwatch.model.verdict import Verdict
from gpuwatch.recording import BadLine, gave_up_words
from gpuwatch.replay import replay_frames
from gpuwatch.replay_control import ReplayControl


@dataclass
class LiveSource:
    watch: Watch
    duration: float | None = None
    live: bool = True

    def describe(self) -> str:
        return f"PID {self.watch.target.pid}"

    def frames(self) -> AsyncIterator[Frame]:
        return self.watch.frames(self.duration)

    def follow(self, verdicts: Sequence[Verdict], frames: Sequence[Frame]) -> None:
        """Adapt the sampling to the verdicts and frames so far (gpuwatch/pace.py)."""
        # Imported here, not with this module: it loads the diagnosis, which the collectors do not
        # wait for at start-up (gpuwatch/commands.py starts them before it).
        from gpuwatch.pace import stack_pace

        self.watch.set_pace(*stack_pace(verdicts, frames))


def live_source(pid: int, opts: WatchOptions, duration: float | None) -> LiveSource:
    """A live watch of ``pid`` and its process tree with every collector (gpuwatch/assemble.py)."""
    target = Target(pid)
    return LiveSource(Watch(target, build_collectors(target, opts), interval=opts.interval), duration)


@dataclass
class ReplaySource:
    path: str
    speed: float = 1.0
    on_bad_line: Callable[[BadLine], None] | None = None
    live: bool = False
    bad_lines: list[BadLine] = field(default_factory=list)
    control: ReplayControl | None = None
    """Pause, step, seek and speed, for a front end with keys (the TUI); None: plays at ``speed``."""

    def describe(self) -> str:
        return f"replay of {self.path}"

    def frames(self) -> AsyncIterator[Frame]:
        def bad(b: BadLine) -> None:
            self.bad_lines.append(b)
            if self.on_bad_line is not None:
                self.on_bad_line(b)

        return replay_frames(self.path, self.speed, bad, self.control)


@dataclass
class FirstFrames:
    """The first ``n`` frames of another source (all of them when ``n`` is None), so a replay
    stops at a fixed point: snapshot tests and screenshots."""

    source: LiveSource | ReplaySource
    n: int | None
    live: bool = False

    def describe(self) -> str:
        return self.source.describe()

    @property
    def control(self) -> ReplayControl | None:
        return getattr(self.source, "control", None)

    async def frames(self) -> AsyncIterator[Frame]:
        agen = self.source.frames()
        try:
            count = 0
            async for f in agen:
                yield f
                count += 1
                if self.n is not None and count >= self.n:
                    return
        finally:
            await agen.aclose()


def damaged(source: object) -> str | None:
    """What a replay's file lost, in one sentence for the screen (the report says the same): a cut
    its compressed data ends at, another recording joined on, or lines that could not be read. None
    for a whole file, or a source that is no replay."""
    while isinstance(source, FirstFrames):
        source = source.source
    bad = getattr(source, "bad_lines", None)
    if not bad:
        return None
    cut = next((b.line for b in bad if b.cut), None)
    if cut is not None:
        return (f"The recording is cut short at line {cut}, where its compressed data ends or is damaged: "
                "what came after is lost.")
    gave_up = next((b.line for b in bad if b.gave_up), None)
    if gave_up is not None:
        return f"The recording is {gave_up_words(gave_up)}."
    joined = next((b.line for b in bad if b.joined), None)
    if joined is not None:
        return (f"Another recording starts at line {joined} of this file and is not shown: replay each "
                "on its own.")
    n = len(bad)
    return f"{n} unreadable line{'s' if n != 1 else ''} of the recording skipped (listed when gpuwatch quits)."
