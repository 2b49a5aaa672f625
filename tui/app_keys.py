"""The app's actions beyond watching: help, quit, back, replay playback, report export.

A mixin so that ``app.py`` keeps to the frame loop; the bindings themselves are declared in
``GpuwatchApp.BINDINGS`` (Textual reads BINDINGS from widget classes only).
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

from gpuwatch.replay_control import ReplayControl

REPLAY_ACTIONS = ("replay_step", "replay_seek", "replay_speed")
"""Actions that only mean something in a replay: left out of a live watch's footer (panels/footer.py);
pressed there, they say so rather than do nothing."""


class AppKeys:
    """Mixed into GpuwatchApp (whose attributes these methods use: analysis, ranks, source,
    record_dir, render_latest, consume ...); not typed as it, which would import app.py here."""

    analysis: Any
    ranks: Any
    rank_tick: Any
    source: Any
    record_dir: str
    paused: bool
    ended: str | None
    replay_state: str

    replay: ReplayControl | None = None
    """The replay's playback control, or None for a live watch."""
    pipeline: Any = None
    """The tick pipeline that updates ``analysis`` and ``ranks`` (set when frames start coming)."""

    def attach_replay(self, source: Any) -> None:
        """Take the source's playback control, if it has one (a replay the TUI steers)."""
        control = getattr(source, "control", None)
        if not isinstance(control, ReplayControl):
            return
        self.replay = control
        control.on_change = self._replay_changed
        control.on_restart = self._replay_restarted

    def notify(self, message: str, *, title: str = "", severity: Any = "information",
               timeout: float | None = None, markup: bool = False) -> None:
        """Textual's notify, as plain text unless asked: the app's toasts quote paths and error
        texts, where ``[...]`` is not markup (a record folder ``x[/y]`` showed no toast at all)."""
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)  # type: ignore[misc]

    # ---- help, quit, back ----

    def action_verdict(self) -> None:
        from gpuwatch.tui.screens.verdict import VerdictScreen

        if isinstance(self.screen, VerdictScreen):
            self.pop_screen()
            return
        view = self.view
        self.push_screen(VerdictScreen(view.verdict if view is not None else None))

    def action_help(self) -> None:
        from gpuwatch.tui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.screen))

    def action_back(self) -> None:
        """Escape: close the screen on top; on the main screen, clear a process filter or say how to quit."""
        if len(self.screen_stack) > 1:
            self.pop_screen()
            return
        clear = getattr(self.screen, "clear_filter", None)
        if clear is not None and clear():
            return
        self.notify("This is the main screen: q or F10 quits, ? shows every key.", timeout=3)

    # ---- replay playback ----

    def toggle_pause(self) -> None:
        """p / space: pause a replay's playback; in a live watch, freeze the display."""
        if self.replay is not None:
            if self.ended:  # nothing plays: say so rather than flip a state no frame shows
                self.notify("The replay ended: [ seeks back, and it plays again from there.", timeout=2)
                return
            self.replay.toggle_pause()
            return
        self.paused = not self.paused
        self.render_latest()

    def _live(self) -> bool:
        """True (after saying so) when there is no replay to steer."""
        if self.replay is None:
            self.notify("Step, seek and speed steer a replay (gpuwatch replay FILE); this is a live watch.",
                        timeout=3)
        return self.replay is None

    def action_replay_step(self) -> None:
        if self._live():
            return
        assert self.replay is not None
        if self.ended:
            self.notify("The replay ended: [ seeks back.", timeout=2)
            return
        self.replay.step()

    def action_replay_seek(self, seconds: float) -> None:
        if self._live():
            return
        assert self.replay is not None
        if self.ended and seconds > 0:
            self.notify("The replay ended: [ seeks back.", timeout=2)
            return
        self.replay.seek(seconds)
        where = "back" if seconds < 0 else "forward"
        self.notify(f"Seeking {abs(seconds):g} s {where}", timeout=1.5)
        if self.ended:  # the frames ran out: read the recording again from the top
            self.replay.restart()
            self.consume()

    def action_replay_speed(self, steps: int) -> None:
        if self._live():
            return
        assert self.replay is not None
        self.replay.faster(steps)
        if self.ended:  # the speed holds for when it plays again; say so, as nothing moves now
            speed = "max" if self.replay.speed == 0 else f"{self.replay.speed:g}×"
            self.notify(f"Speed {speed} for when it plays again: the replay ended, [ seeks back.", timeout=2)

    def _replay_changed(self) -> None:
        assert self.replay is not None
        self.replay_state = self.replay.describe()

    def _replay_restarted(self) -> None:
        """A backward seek replays from the top: verdicts and ranks start again, as on a fresh replay.
        The running pipeline is handed the new ones: it updates them, and the screens read them."""
        self.analysis = type(self.analysis)()
        self.ranks = type(self.ranks)()
        if self.pipeline is not None:
            self.pipeline.analysis, self.pipeline.ranks = self.analysis, self.ranks
        self.rank_tick = None
        self.ended = None

    # ---- report ----

    async def action_export_report(self) -> None:
        """Write the diagnose report (Markdown) of the frames in the analysis window."""
        frames = list(self.analysis.frames)
        if not frames:
            self.notify("No frames yet: nothing to report.", severity="warning")
            return
        path = os.path.join(self.record_dir, time.strftime("gpuwatch-report-%Y%m%d-%H%M%S.md"))
        try:
            n = await asyncio.get_running_loop().run_in_executor(
                None, _write_report, frames, path, getattr(self.source, "path", None))
        except OSError as e:
            self.notify(f"Cannot write the report: {e.strerror or e}", severity="error", timeout=10)
            return
        self.reports.append(path)  # said again once the terminal is back (run_app)
        self.notify(f"Report of the last {n} frames written to\n{path}", timeout=6)


def _write_report(frames: list, path: str, recording: str | None) -> int:
    """The report of ``frames``: of a replay when ``recording`` names one, else of the live watch."""
    from gpuwatch.model.values import Unsupported
    from gpuwatch.report.build import build_report
    from gpuwatch.report.gather import from_frames
    from gpuwatch.report.render_md import render_markdown

    env = Unsupported("the TUI reports the frames it holds; gpuwatch diagnose --pid PID also probes the "
                      "environment (driver, NUMA, cgroup, ptrace, storage)")
    kind = "replay" if recording else "live"
    text = render_markdown(build_report(from_frames(frames), env, kind, path=recording))
    with open(path, "x", encoding="utf-8") as f:  # never over an existing file
        f.write(text)
    return len(frames)
