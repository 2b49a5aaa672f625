"""The base of every screen that draws frames: it redraws from the app's latest view on resume."""

from __future__ import annotations

from typing import Protocol

from textual import events
from textual.screen import Screen

from gpuwatch.multirank import RankTick
from gpuwatch.tui.panels.header import HeaderBar
from gpuwatch.tui.panels.steady import SteadyLines
from gpuwatch.tui.view import View


class WatchApp(Protocol):
    """What screens read from the app (gpuwatch/tui/app.py), named here so screens need not import it."""

    view: View | None
    paused: bool
    recording_path: str | None
    ended: str | None
    self_cpu: float | None
    rank_tick: RankTick | None

    @property
    def shown_rank(self) -> int | None: ...


class WatchScreen(SteadyLines, Screen):
    """A screen that shows the latest :class:`View` and the app's state flags."""

    composed = False
    """True once the screen's widgets, theirs included, are mounted (its Mount comes after them).
    A frame can arrive between a push and that moment; it is drawn on mount instead."""
    _resumed = False
    """True once the screen was resumed (shown) a first time."""

    def on_mount(self) -> None:
        self.composed = True
        self.on_screen_resume()

    @property
    def watch_app(self) -> WatchApp:
        return self.app  # type: ignore[return-value]

    def show(self, view: View) -> None:
        """Draw ``view``. Called for every rendered frame while this screen is on top."""

    _headers: tuple[HeaderBar, ...] | None = None
    """The screen's header bars (one, or none), kept once the screen is composed: the query walks
    and matches every widget of the screen, ~0.4 ms of CPU at 200x60 on the CPU VM, and the own-CPU
    figure syncs the header every 2 s."""

    def sync_header(self) -> None:
        """Copy the app's flags (paused, recording, ended, own CPU) into this screen's header."""
        app = self.watch_app
        headers = self._headers
        if headers is None:
            headers = tuple(self.query(HeaderBar))
            if self.composed:  # every widget is mounted: none is left to come
                self._headers = headers
        for header in headers:
            header.paused = app.paused
            header.recording = app.recording_path or ""
            header.ended = app.ended or ""
            header.self_cpu = app.self_cpu
            header.replay = app.replay_state

    def on_screen_resume(self, event: events.ScreenResume | None = None) -> None:
        if event is not None and not self._resumed:
            # The first resume comes as the screen is pushed: its widgets took their styles as they
            # mounted, moments ago. Textual would restyle the whole screen again (a full CSS apply
            # of every widget, ~35 ms of CPU at start on the 2-core VM); later resumes still do,
            # for what changed while the screen was covered (theme, app classes).
            event.refresh_styles = False
            self._resumed = True
        if not self.composed:
            return
        self.sync_header()
        view = self.watch_app.view
        if view is not None:
            self.show(view)
