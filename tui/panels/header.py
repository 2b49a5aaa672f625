"""The header line: what is watched, on which GPUs, for how long, and what gpuwatch costs."""

from __future__ import annotations

from functools import cached_property

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.css.query import NoMatches
from textual.reactive import var

from gpuwatch.model.values import known
from gpuwatch.tui import format as fmt
from gpuwatch.tui.panels.parts_widget import Part, PartsWidget
from gpuwatch.tui.panels.plain import Plain
from gpuwatch.tui.panels.steady import SteadyLines
from gpuwatch.tui.view import View


REPLAY_ENDED = "REPLAY ■ ended ([ seeks back)"
"""A replay whose frames ran out (the keys' handlers say the same: "The replay ended: [ seeks back.")."""


class StateLine(PartsWidget):
    """The header's right part, one line that changes every frame (the watch time): drawn as one run
    of text in the widget's style, without Textual's content layout and per-line styling pass (a
    Plain cost ~0.4 ms of CPU a frame on the CPU box, for a line of 30 cells)."""

    OWN_PADDING = True
    _text = ""

    def show(self, text: str) -> None:
        if text == self._text:
            return
        wider = len(text) != len(self._text)
        self._text = text
        self.redraw()
        if wider:  # its width is auto: a new width lays the header out
            self.refresh(layout=True)

    def _parts(self) -> list[list[Part]]:
        return [[(self._text, None)]]


class HeaderBar(SteadyLines, Horizontal):
    """Left: ``PID 1234 python train.py · GPU 0 NVIDIA H200`` (``Rank 1 of 2 · ...`` when the job has
    ranks); right: state, watch time, own CPU.

    The right part never gets cut: a long command line is what gives way on a narrow terminal.
    """

    # var, not reactive: the watchers draw into the child lines; a reactive would also repaint the
    # bar itself each time one changes (the CPU figure: every 2 s).
    self_cpu: var[float | None] = var(None)
    """gpuwatch's own CPU use in percent of one core (None until measured)."""
    recording: var[str] = var("")
    """The recording's file name while recording, else empty."""
    paused: var[bool] = var(False)
    """True while the display is frozen."""
    ended: var[str] = var("")
    """Why frames stopped coming (replay finished, the job ended), else empty."""
    replay: var[str] = var("")
    """The replay's playback (``REPLAY ▶ 1×``), else empty: a replay never looks like a live watch."""

    def __init__(self) -> None:
        super().__init__(id="header")
        self._view: View | None = None
        self._commands: dict[int, str] = {}

    def compose(self) -> ComposeResult:
        yield Plain("gpuwatch: waiting for the first frame", id="header-what")
        yield Plain("", id="header-flags")
        yield StateLine(id="header-state")

    @cached_property
    def _pieces(self) -> tuple[Plain, Plain, StateLine]:
        """What is watched, the flags, the state: each looked up once (composed once, never removed),
        not a DOM query a frame."""
        return (self.query_one("#header-what", Plain), self.query_one("#header-flags", Plain),
                self.query_one("#header-state", StateLine))

    def show(self, view: View) -> None:
        self._view = view
        t = view.frame.target
        # A job that has exited has no command line to read: the last one read stays (a bare "?" stood
        # there, review 46).
        if t.cmdline:
            self._commands[t.pid] = fmt.short_command(t.cmdline)
        parts = [f"PID {t.pid} {self._commands.get(t.pid) or '(command not readable)'}"]
        caption = getattr(self.app, "rank_caption", None)  # multi-rank jobs: which rank is on show
        rank = caption() if caption is not None else ""
        if rank:
            parts.insert(0, rank.capitalize())
        gpus = view.frame.gpus
        if known(gpus) and gpus:
            names = "/".join(sorted({g.name for g in gpus}))  # type: ignore[union-attr]
            parts.append(f"GPU {','.join(str(g.index) for g in gpus)} {names}")  # type: ignore[union-attr]
        elif known(gpus):
            parts.append("no GPU in use")
        else:
            parts.append("GPU N/A")
        self._pieces[0].update(" · ".join(parts))
        self._draw_state()

    def watch_self_cpu(self) -> None:
        self._draw_state()

    def watch_recording(self) -> None:
        self._draw_flags()

    def watch_paused(self) -> None:
        self._draw_flags()

    def watch_ended(self) -> None:
        self._draw_flags()

    def watch_replay(self) -> None:
        self._draw_flags()

    def _draw_flags(self) -> None:
        flags = []
        if self.replay and self.ended:  # its play mark and speed no longer hold: only the way back does
            flags.append(REPLAY_ENDED)
        elif self.replay:
            flags.append(self.replay)
        if self.paused:
            flags.append("❚❚ PAUSED")
        if self.recording:
            flags.append("● REC")
        if self.ended and not self.replay:
            flags.append(f"■ {self.ended}")
        w = self._pieces[1]
        w.update(" ".join(flags))
        w.display = bool(flags)
        w.set_class(self.paused or "❚❚" in self.replay, "-paused")
        w.set_class(bool(self.recording), "-recording")

    def _draw_state(self) -> None:
        parts = []
        control = getattr(self.app, "replay", None)
        if self._view is not None and control is not None:
            parts.append(f"at {fmt.duration(control.position)}")  # into the recording
        elif self._view is not None:
            parts.append(f"watched {fmt.duration(round(self._view.watched_s))}")  # rounded as the charts' span
        pad = ""
        if self.self_cpu is not None:
            cpu = f"{min(self.self_cpu, 99.9):.1f}"
            parts.append(f"self {cpu} % CPU")
            # One width for one and two digits (a leading blank for one): the state's width is auto,
            # and a new width means a layout of the whole screen and a full repaint (on a replay of
            # the H200 benchmark job, every time the figure went between 9.x and 10.x).
            pad = " " * (4 - len(cpu))
        self._pieces[2].show(pad + " · ".join(parts))

    def on_mount(self) -> None:
        try:
            self._draw_flags()
        except NoMatches:  # a stop signal while the app starts removed the children before this ran
            pass
