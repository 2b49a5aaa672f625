"""The gpuwatch TUI app: takes frames from a source, gets a verdict for each, shows the latest.

Thin on purpose: panels live in ``panels/``, screens in ``screens/``, colours in ``gpuwatch.tcss``.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psutil
from textual import work
from textual.app import App
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.driver import Driver
from textual.message import Message
from textual.reactive import var
from textual.screen import Screen

from gpuwatch.analysis import Analysis
from gpuwatch.model.frame import Frame
from gpuwatch.model.verdict import Verdict
from gpuwatch.multirank import MultiRank, RankTick
from gpuwatch.pipeline import Pipeline, Sink, Source, Tick
from gpuwatch.ranks import ScopeNotice
from gpuwatch.recording import Recorder, RecordingError
from gpuwatch.signals import install_signal_handlers, rearm
from gpuwatch.source import damaged
from gpuwatch.threadname import name_this_thread
from gpuwatch.tui.app_keys import AppKeys
from gpuwatch.tui.commands import GpuwatchCommands, system_commands
from gpuwatch.tui.input_thread import sleeping_input
from gpuwatch.tui.record import open_recording
from gpuwatch.tui.screens.base import WatchScreen
from gpuwatch.tui.screens.main import MainScreen
from gpuwatch.tui.screens.too_small import TooSmallScreen, too_small
from gpuwatch.tui.strip_divide import install as install_strip_divide
from gpuwatch.tui.view import View

SELF_CPU_INTERVAL = 2.0
"""Seconds between measurements of gpuwatch's own CPU use (one /proc read each)."""
SELF_CPU_SLACK = 0.25
"""A measurement this much early still counts as due: frames and timer ticks come a little early or
late, and a figure just missed would otherwise wait a whole interval more."""


class GpuwatchApp(AppKeys, App[int]):
    """Watches one source of frames."""

    CSS_PATH = "gpuwatch.tcss"
    TITLE = "gpuwatch"
    COMMANDS = App.COMMANDS | {GpuwatchCommands}
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]
    """Below 120 columns the GPU panel stacks over the processes and metrics go two per line."""
    VERTICAL_BREAKPOINTS = [(0, "-short"), (34, "-tall"), (50, "-very-tall")]
    """From 34 lines on, panels get borders and the time charts three plots; from 50 lines, taller
    plots (tui/gpuwatch.tcss, #charts)."""

    BINDINGS = [
        Binding("p,space", "toggle_pause", "Pause", tooltip="Freeze the display (collecting and recording go on); "
                "in a replay, pause and resume the playback.", id="pause"),
        Binding("full_stop", "replay_step", "Step", key_display=".", tooltip="Replay: one frame forward, then hold.",
                id="replay-step"),
        Binding("right_square_bracket", "replay_seek(10)", "Seek", key_display="[ ]",
                tooltip="Replay: 10 s forward.", id="replay-forward"),
        Binding("left_square_bracket", "replay_seek(-10)", "Seek", show=False,
                tooltip="Replay: 10 s back (replays from the start up to there).", id="replay-back"),
        Binding("plus,equals_sign", "replay_speed(1)", "Speed", key_display="+ -",
                tooltip="Replay: faster (up to 32×).", id="replay-faster"),
        Binding("minus", "replay_speed(-1)", "Speed", show=False, tooltip="Replay: slower (down to ¼×).",
                id="replay-slower"),
        Binding("r", "toggle_record", "Record", tooltip="Start or stop recording frames to a JSONL file.",
                id="record"),
        Binding("k", "next_rank", "Rank", tooltip="Show the next rank of a multi-rank job (all, 0, 1, ...).",
                id="rank"),
        Binding("v", "verdict", "Verdict", show=False, tooltip="The whole verdict and what to do, uncut (a short "
                "terminal shows the lines it can spare).", id="verdict"),
        Binding("question_mark,f1,h", "help", "Help", key_display="?", tooltip="Every key of this screen, and the legend.",
                id="help"),
        Binding("q,f10", "quit", "Quit", tooltip="Quit gpuwatch.", id="quit"),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True, tooltip="Quit gpuwatch."),
        Binding("escape", "back", "Back", show=False, tooltip="Back to the previous screen; on the main screen, "
                "clear the process filter."),
    ]

    # App state is `var`, not `reactive`: a reactive on the App repaints the whole screen when it
    # changes (App.refresh), and self_cpu changes every 2 s; the header, which shows these, repaints
    # only itself through its own reactives (profile: a full-screen render every 2 s was ~8 % of
    # the TUI's CPU).
    paused: var[bool] = var(False)
    """While True the display keeps its last frame; frames are still analysed and recorded."""
    recording_path: var[str | None] = var(None)
    """The file being recorded to, or None."""
    ended: var[str | None] = var(None)
    """Why no more frames will come, or None while they do."""
    self_cpu: var[float | None] = var(None)
    """gpuwatch's own CPU use, percent of one core."""
    selected_rank: var[int | None] = var(None)
    """The rank on show (its frame, verdict and history), or None for the whole job."""
    replay_state: var[str] = var("")
    """The replay's playback (``REPLAY ▶ 1×``), shown from the first frame; empty for a live watch."""

    class FrameReady(Message):
        """A new frame was analysed. Supersedes an unhandled one, so a slow UI draws only the latest."""

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, GpuwatchApp.FrameReady)

    def __init__(
        self,
        source: Source,
        recorder: Recorder | None = None,
        *,
        analysis: Analysis | None = None,
        on_tick: Sink | None = None,
        self_cpu: Callable[[], float | None] | None = None,
        record_dir: str = ".",
        handle_signals: bool = False,
    ) -> None:
        install_strip_divide()  # no garbage cycle per undivided line a frame (tui/strip_divide.py)
        # NO_COLOR: the terminal's own colours (Textual's NoColor filter, which it picks for ANSI
        # themes), not Textual's grey rendering of the truecolor theme with its backgrounds.
        no_color = "NO_COLOR" in os.environ
        super().__init__(ansi_color=True if no_color else None)
        if no_color:
            self.theme = "ansi-dark"
        self.source = source
        self.attach_replay(source)
        if self.replay is not None:
            self.replay_state = self.replay.describe()
        self.analysis = analysis or Analysis()
        self.ranks = MultiRank()
        """Per-rank verdicts and the straggler (multi-rank jobs)."""
        self.rank_tick: RankTick | None = None
        """The latest tick's ranks, or None while the job shows fewer than two."""
        self.on_tick = on_tick
        self.record_dir = os.path.abspath(record_dir)
        """Where ``r`` records and the palette exports, absolute: the palette and the toasts name it
        (relative, the palette read "... .jsonl in .")."""
        self.handle_signals = handle_signals
        self.view: View | None = None
        self._recorder = recorder
        self.recordings: list[Recorder] = [recorder] if recorder is not None else []
        """Every recording made in this session (``--record`` and ``r``), said on quit."""
        self.reports: list[str] = []
        """The reports written from the TUI (export report), said again on quit."""
        self._io = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gw-record", initializer=name_this_thread,
                                      initargs=("gw-record",))
        """Recording I/O, in order, off the event loop."""
        self._latest: tuple[Frame, Verdict] | None = None
        self._leaving = False
        """Set once exit() was called: widgets are being torn down, draw nothing more."""
        self._self_cpu = self_cpu or _own_cpu_meter()
        self._self_cpu_at = float("-inf")
        """When the own-CPU figure was last measured (monotonic seconds)."""
        self._drawn_at = float("-inf")
        """When a frame was last drawn (monotonic seconds)."""
        self._scope = ScopeNotice()
        """The notice that the PID given is one rank of the job watched whole."""
        if recorder is not None:
            self.recording_path = recorder.path

    def get_driver_class(self) -> type[Driver]:
        return _with_guarded_output(sleeping_input(super().get_driver_class()), self._terminal_gone)

    def _terminal_gone(self) -> None:
        """The terminal went away (called from Textual's output thread): end as on SIGHUP."""
        loop = getattr(self, "_event_loop", None)
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self.exit)

    def get_default_screen(self) -> Screen:
        return MainScreen()

    def on_mount(self) -> None:
        self._event_loop = asyncio.get_running_loop()
        if self.handle_signals:  # an SSH drop, `kill` or Ctrl-C ends it cleanly (gpuwatch/signals.py)
            install_signal_handlers(self._event_loop, self.exit)
        self._measure_self()
        self.set_interval(SELF_CPU_INTERVAL, self._measure_self_idle)
        # Frames start coming now, while the main screen composes (a quarter of a second on the
        # H200's VM): the first one is analysed by the time the screen can show it.
        self.consume()

    def on_ready(self) -> None:
        """The main screen was painted once. A frame that came while it composed was drawn before
        that paint (render_latest keeps the view, WatchScreen.on_mount shows it): the first paint
        is the first frame, not an empty screen and a second full layout and paint after it."""
        if self.view is None:
            self.call_after_refresh(self.render_latest)
        self.fit_screen()

    def on_resize(self) -> None:
        self.call_later(self.fit_screen)  # after Textual's own handler has taken the new size

    def fit_screen(self) -> None:
        """Below the smallest usable size, a screen that says so stands in for the others; back
        above it, the screen that was on top returns and redraws the latest frame."""
        if self._leaving or not self.screen_stack:
            return
        small, shown = too_small(self.size), isinstance(self.screen, TooSmallScreen)
        if small and not shown:
            self.push_screen(TooSmallScreen())
        elif shown and not small:
            self.pop_screen()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """While the terminal is too small only quitting works: help, the palette or a replay key
        would act on screens that cannot be seen (Escape would even take the notice away)."""
        if self.screen_stack and isinstance(self.screen, TooSmallScreen):
            return action == "quit"
        return super().check_action(action, parameters)

    @work(exclusive=True, group="frames", exit_on_error=False, description="Reading frames")
    async def consume(self) -> None:
        """Run the tick pipeline: record each tick and ask for a redraw (coalesced)."""
        self.pipeline = Pipeline(self.source, self.analysis, self.ranks, sinks=(self.on_tick,))
        ticks = self.pipeline.ticks()
        last: Frame | None = None
        try:
            async for tick in ticks:
                last = tick.frame
                if (tick.ranks is None) != (self.rank_tick is None):
                    self.refresh_bindings()  # the Rank key shows only for multi-rank jobs
                if said := self._scope.once(tick.frame, tick.ranks is not None):  # why every rank shows
                    self.notify(f"{said}; k shows one rank.", timeout=8)
                self._latest, self.rank_tick = (tick.frame, tick.verdict), tick.ranks
                await self._record(tick)
                self.post_message(self.FrameReady())
        except (OSError, ValueError) as e:  # an unreadable recording, a source that broke
            self.notify(f"Frames stopped: {e}", severity="error", timeout=10)
            self.ended = "source failed"
        else:
            if last is not None and not last.target.alive:
                self.ended = f"job ended: {last.target.exit_reason or 'gone'}"  # stay: show what happened
            elif self.source.live:
                self.exit(0)  # a live watch ran its --duration: done, as in --json mode
            else:
                self.ended = "replay ended"  # stay on the last frame
                if said := damaged(self.source):
                    self.notify(said, severity="warning", timeout=15)
        finally:
            await ticks.aclose()
        self.post_message(self.FrameReady())

    async def _record(self, tick: Tick) -> None:
        rec = self._recorder
        if rec is None:
            return
        try:
            await asyncio.get_running_loop().run_in_executor(self._io, rec.write, tick.frame, tick.verdict, tick.ranks)
        except RecordingError as e:
            if self._recorder is rec:
                self._recorder = None
                self.recording_path = None
            self.notify(f"{e}; watching goes on", severity="error", timeout=10)

    def on_gpuwatch_app_frame_ready(self, _: FrameReady) -> None:
        self.render_latest()

    def render_latest(self) -> None:
        """Draw the latest frame on the screen on top (unless paused)."""
        if self._latest is None or self.paused or self._leaving:
            return
        now = time.monotonic()
        self._drawn_at = now
        if now - self._self_cpu_at >= SELF_CPU_INTERVAL - SELF_CPU_SLACK:
            self._measure_self()  # drawn with this frame: no paint of its own in between frames
        frame, verdict = self._latest
        frames, verdicts = tuple(self.analysis.frames), tuple(self.analysis.verdicts)
        rank = self.shown_rank
        if rank is not None:  # that rank's own frames and verdicts, as if gpuwatch watched it alone
            mine = self.ranks.by_rank[rank]
            frame, verdict = mine.frames[-1], mine.verdicts[-1]
            frames, verdicts = tuple(mine.frames), tuple(mine.verdicts)
        self.view = View(
            frame=frame,
            verdict=verdict,
            frames=frames,
            verdicts=verdicts,
            source=self.source.describe(),
            ended=self.ended,
            first_t=self.analysis.first_t,
        )
        screen = self._watch_screen()
        if screen is not None:
            try:
                screen.show(self.view)
            except NoMatches:
                # A frame handled while Textual takes the screens down without App.exit (Pilot's
                # run_test ends in App._shutdown, which clears _running first and removes a
                # screen's widgets before the screen): nothing to draw on. While the app runs,
                # every widget a screen's show() asks for is there.
                # The same after App.exit (a SIGTERM as the TUI starts: the screens come down while
                # a frame is handled).
                if getattr(self, "_running", True) and not getattr(self, "_exit", False):
                    raise

    def _watch_screen(self) -> WatchScreen | None:
        """The screen on top if it draws frames and is composed; None while quitting (no screens left)."""
        if not self.screen_stack:
            return None
        screen = self.screen
        return screen if isinstance(screen, WatchScreen) and screen.composed else None

    def _sync_header(self) -> None:
        screen = self._watch_screen()
        if screen is not None:
            screen.sync_header()

    watch_paused = watch_recording_path = watch_ended = watch_self_cpu = watch_replay_state = _sync_header

    def get_system_commands(self, screen: Screen):  # noqa: ANN201 - Textual's signature
        return system_commands(self, screen)

    def _measure_self(self) -> None:
        self._self_cpu_at = time.monotonic()
        self.self_cpu = self._self_cpu()

    def _measure_self_idle(self) -> None:
        """The own-CPU figure while no frames are drawn (paused, ended, slow frames). While they
        are, each frame measures it when due (render_latest) and the header repaints with the frame;
        measured here as well, its header change was a paint of its own every 2 s."""
        now = time.monotonic()
        if min(now - self._drawn_at, now - self._self_cpu_at) >= SELF_CPU_INTERVAL - SELF_CPU_SLACK:
            self._measure_self()

    @property
    def shown_rank(self) -> int | None:
        """The selected rank while the job shows it, else None (the whole job)."""
        rank = self.selected_rank
        if rank is None or self.rank_tick is None or rank not in self.ranks.by_rank:
            return None
        return rank if self.ranks.by_rank[rank].verdicts else None

    def rank_caption(self) -> str:
        """What the header says about ranks: ``rank 1 of 2``, ``all 2 ranks``; empty for a single process."""
        if self.rank_tick is None:
            return ""
        n = len(self.rank_tick.verdicts)
        rank = self.shown_rank
        return f"all {n} ranks" if rank is None else f"rank {rank} of {n}"

    def action_next_rank(self) -> None:
        """all -> 0 -> 1 -> ... -> all."""
        tick = self.rank_tick
        if tick is None:  # the footer leaves the key out (panels/footer.py); pressed, it says why
            self.notify("k shows one rank at a time of a multi-rank job; this job shows fewer than two.", timeout=3)
            return
        order: list[int | None] = [None, *tick.ranks]
        i = order.index(self.selected_rank) if self.selected_rank in order else 0
        self.selected_rank = order[(i + 1) % len(order)]
        shown = "all ranks" if self.selected_rank is None else f"rank {self.selected_rank}"
        self.notify(f"Showing {shown}" + (" (from the next frame: paused)" if self.paused else ""), timeout=2)
        self.render_latest()

    def action_toggle_pause(self) -> None:
        self.toggle_pause()

    async def action_toggle_record(self) -> None:
        loop = asyncio.get_running_loop()
        rec = self._recorder
        if rec is not None:
            self._recorder = None
            self.recording_path = None
            await loop.run_in_executor(self._io, rec.close)
            if rec.ticks == 0:  # a header alone holds nothing to replay: the close removed the file
                self.recordings.remove(rec)  # nothing to say where it is on quit
                self.notify("Recording stopped before its first tick: no file kept")
                return
            self.notify(f"Recording stopped: {rec.ticks} ticks in\n{rec.path}")
            return
        if self.ended:  # no tick will come: a recording would hold its header alone (review 30)
            self.notify(f"Nothing to record: {self.ended}.", timeout=3)
            return
        try:
            rec = await loop.run_in_executor(self._io, open_recording, self.record_dir)
        except OSError as e:
            self.notify(f"Cannot record: {e.strerror or e}", severity="error", timeout=10)
            return
        except RecordingError as e:  # created, but even the header did not fit (disk full)
            self.notify(f"Cannot record: {e}", severity="error", timeout=10)
            return
        self._recorder = rec
        self.recordings.append(rec)
        self.recording_path = rec.path
        self.notify(f"Recording to\n{rec.path}")

    def exit(self, *args: Any, **kwargs: Any) -> None:
        self._leaving = True
        super().exit(*args, **kwargs)

    async def action_quit(self) -> None:
        self.close_recorder()
        self.exit(0)

    def close_recorder(self) -> None:
        """Close the recording (idempotent). The last line was flushed whole when written."""
        rec, self._recorder = self._recorder, None
        if rec is not None:
            rec.close()
        self._io.shutdown(wait=False)


class _GuardedOutput:
    """The terminal as Textual's output thread writes to it. A write that fails (EIO: the pty was
    closed and no SIGHUP reached us, e.g. gpuwatch started with setsid) would kill that thread,
    after which the app blocks for good on its full output queue and ignores SIGTERM. Instead the
    error ends the app once, and later output is dropped."""

    def __init__(self, file: Any, on_gone: Callable[[], None]) -> None:
        self._file = file
        self._on_gone = on_gone
        self.gone = False

    def write(self, text: str) -> None:
        self._guard(self._file.write, text)

    def flush(self) -> None:
        self._guard(self._file.flush)

    def _guard(self, fn: Callable[..., Any], *args: Any) -> None:
        if self.gone:
            return
        try:
            fn(*args)
        except OSError:  # EIO / EBADF: nobody is reading any more
            self.gone = True
            self._on_gone()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._file, name)


def _with_guarded_output(base: type[Driver], on_gone: Callable[[], None]) -> type[Driver]:
    """``base`` with its terminal output wrapped in :class:`_GuardedOutput` (drivers that write
    through ``_file``, as Textual's Linux driver does; other drivers are left as they are)."""

    class GuardedDriver(base):  # type: ignore[valid-type, misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            if getattr(self, "_file", None) is not None:
                self._file = _GuardedOutput(self._file, on_gone)

    return GuardedDriver


def _own_cpu_meter() -> Callable[[], float | None]:
    proc = psutil.Process(os.getpid())
    proc.cpu_percent(None)  # the first call only sets the baseline

    def measure() -> float | None:
        try:
            return proc.cpu_percent(None)
        except psutil.Error:
            return None

    return measure


def run_app(source: Source, recorder: Recorder | None = None, prometheus: tuple[str, int] | None = None) -> int:
    """Run the TUI on ``source`` until the user quits. Returns the exit code."""
    exporter = None
    if prometheus is not None:
        from gpuwatch.exporter import start_exporter

        exporter = start_exporter(*prometheus)
    app = GpuwatchApp(source, recorder=recorder, on_tick=exporter, handle_signals=True)
    try:
        app.run()
    finally:
        rearm()  # the app's loop reset the signals to their defaults as it closed
        app.close_recorder()
        if exporter is not None:
            exporter.close()  # stop serving metrics
        for rec in app.recordings:  # the terminal is back: say where each recording is
            print(f"gpuwatch: {rec.summary()}", file=sys.stderr)
        for path in app.reports:  # and each report (a toast's path was wrapped mid-name at 80 columns)
            print(f"gpuwatch: report written to {path}", file=sys.stderr)
    return app.return_code or 0
