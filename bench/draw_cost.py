"""What the TUI's drawing alone costs per frame: the panels' updates, Textual's layout, compositor
and the terminal's escape codes, without the diagnosis, the collectors or a pty.

A recording's frames are diagnosed first (not timed); then the app runs headless (Textual's
``run_test``) at ``--size`` and is handed one analysed frame at a time, as the tick pipeline hands
it over live; the main thread's CPU (``time.thread_time``) from the frame's hand-over until the
screen has painted it is the frame's cost; the part spent in the panels' updates (``render_latest``,
before Textual lays out and paints) is shown beside it. Headless Textual skips turning the compositor's update
into escape codes; that step is done here too, so the figure holds what a terminal would cost.
The first ``--skip`` frames (start-up, first layouts) are left out. The header's own-CPU figure
is measured with every other frame and timed with it, as the app does live (every 2 s at one frame
a second, in ``render_latest``). The garbage collector is set as the program sets it
(gpuwatch/startup_heap.py: held while the recording is diagnosed and the app's modules load, then
what was loaded frozen and the youngest generation collected every 10,000 allocations), not at
Python's defaults, which collected about once a frame.

    python -m bench.draw_cost                                   # run 11b's TUI recording, 200x60
    python -m bench.draw_cost REC.jsonl.gz --size 80x24 --passes 5
    python -m bench.draw_cost --profile /tmp/draw.prof          # cProfile of the timed frames
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from collections import deque

if __package__ in (None, ""):  # run as a file: make `bench` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from gpuwatch import startup_heap
from gpuwatch.analysis import Analysis
from gpuwatch.replay import load_frames

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT = os.path.join(ROOT, "bench/results/2026-12-03-h200/run11/self2/rec/tui.jsonl.gz")
"""The H200 benchmark job (8 DataLoader workers) as the TUI recorded it, run 11b: 90 frames."""


class _Analysed:
    """The app's ``analysis`` (what the TUI reads of gpuwatch.analysis.Analysis) with the frames and
    verdicts worked out beforehand."""

    def __init__(self) -> None:
        self.frames: deque = deque(maxlen=Analysis().frames.maxlen)
        self.verdicts: deque = deque(maxlen=Analysis().verdicts.maxlen)
        self.first_t: float | None = None

    def add(self, frame, verdict) -> None:  # noqa: ANN001
        """As Analysis.update keeps them, without the diagnosis."""
        if self.first_t is None:
            self.first_t = frame.t
        self.frames.append(frame)
        self.verdicts.append(verdict)


class _Idle:
    """A source that yields nothing: frames are handed to the app by the bench."""

    live = True

    def describe(self) -> str:
        return "bench"

    async def frames(self):  # noqa: ANN201 - an async iterator
        await asyncio.Event().wait()
        yield  # pragma: no cover


def analysed(path: str) -> list:
    a = Analysis()
    return [(f, a.update(f)) for f in load_frames(path)]


def _clean(screen) -> bool:  # noqa: ANN001
    return not (screen._dirty_widgets or screen._layout_required or screen._repaint_required
                or screen._compositor._dirty_regions or screen._update_timer._active.is_set())


async def _painted(app) -> None:  # noqa: ANN001
    """Until the screen has handled the frame's updates and painted them: clean at three checks in
    a row, 5 ms apart (Textual paints from a timer; Pilot.pause would add a callback per widget)."""
    clean = 0
    for _ in range(200):
        await asyncio.sleep(0.005)
        clean = clean + 1 if _clean(app.screen) else 0
        if clean == 3:
            return


async def one_pass(ticks: list, size: tuple[int, int], skip: int, profile=None) -> list[tuple[float, float]]:  # noqa: ANN001
    """(ms of the whole frame, ms of it in the panels' updates) for each timed frame."""
    from gpuwatch.tui.app import GpuwatchApp

    cpu = iter([3.4, 3.6, 9.7, 10.2] * 1000)
    app = GpuwatchApp(_Idle(), analysis=_Analysed(), self_cpu=lambda: next(cpu))  # type: ignore[arg-type]
    display = app._display

    def to_terminal(screen, renderable) -> None:  # noqa: ANN001
        display(screen, renderable)
        if renderable is not None and hasattr(renderable, "render_segments"):
            renderable.render_segments(app.console)  # what a real terminal's driver does with it

    app._display = to_terminal  # type: ignore[method-assign]
    costs: list[float] = []
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        for i, (frame, verdict) in enumerate(ticks):
            timed = i >= skip
            if timed and profile is not None:
                profile.enable()
            t0 = time.thread_time()
            if i % 2 == 0:
                app._measure_self()  # live: every 2 s, one frame a second, with the frame
            app.analysis.add(frame, verdict)
            app._latest = (frame, verdict)
            app.render_latest()  # what the app does on each FrameReady
            tm = time.thread_time()
            await _painted(app)
            t1 = time.thread_time()
            if timed and profile is not None:
                profile.disable()
            if timed:
                costs.append((1000 * (t1 - t0), 1000 * (tm - t0)))
        app.exit()
    return costs


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("recording", nargs="?", default=DEFAULT)
    p.add_argument("--size", default="200x60")
    p.add_argument("--passes", type=int, default=3)
    p.add_argument("--skip", type=int, default=10, help="first frames left out (start-up)")
    p.add_argument("--profile", help="write a cProfile of the timed frames (all passes) here")
    ns = p.parse_args(argv)
    w, h = (int(x) for x in ns.size.split("x"))
    startup_heap.hold()
    ticks = analysed(ns.recording)
    import gpuwatch.tui.app  # noqa: F401 - loaded before the freeze, as the program loads it

    startup_heap.release()
    prof = None
    if ns.profile:
        import cProfile

        prof = cProfile.Profile()
    meds, panel_meds = [], []
    for _ in range(ns.passes):
        runs = asyncio.run(one_pass(ticks, (w, h), ns.skip, prof))
        costs = [c for c, _ in runs]
        med, panels = statistics.median(costs), statistics.median(p for _, p in runs)
        meds.append(med)
        panel_meds.append(panels)
        print(f"{len(costs)} frames: median {med:.2f} ms (panels' updates {panels:.2f}), mean "
              f"{statistics.fmean(costs):.2f}, p90 {sorted(costs)[int(0.9 * len(costs))]:.2f}, max {max(costs):.2f}")
    print(f"ms of CPU a frame (medians of {ns.passes} passes): {' '.join(f'{m:.2f}' for m in meds)}; "
          f"least {min(meds):.2f}; panels' updates least {min(panel_meds):.2f}, {ns.size}")
    if prof is not None:
        prof.dump_stats(ns.profile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
