"""gpuwatch's own commands in the command palette (^p): typing "rec" finds Record.

The palette lists what the keys do (record, pause, replay playback, stages, stacks, help, rank),
plus what has no key: open any process by PID, export the report. Textual's Theme, Quit and
Screenshot stay; its "Keys" panel (which squeezed the view to a side column) is replaced by
gpuwatch's help screen.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from functools import partial
from typing import Any

from textual.app import App, SystemCommand
from textual.command import DiscoveryHit, Hit, Hits, Matcher, Provider
from textual.content import Content
from textual.markup import escape
from textual.screen import Screen

from gpuwatch.model.procs import ProcsSample
from gpuwatch.model.verdict import PIPELINE, STAGE_TITLES

GpuwatchApp = Any
"""The app (tui/app.py), not imported: it imports this module."""
Command = tuple[str, str, Callable[[], object]]
"""(title, help, callback)."""


def commands(app: GpuwatchApp) -> Iterator[Command]:
    """The commands that make sense now, in the order the empty palette lists them."""
    recording = app.recording_path
    if recording:
        yield "Record: stop", f"Stop recording to {recording}", app.action_toggle_record
    else:
        yield "Record: start", f"Record every frame to a new gpuwatch-DATE-TIME.jsonl in {app.record_dir}", \
            app.action_toggle_record
    replay = app.replay
    if replay is not None:
        yield ("Replay: play" if replay.paused else "Replay: pause", "Pause or resume the playback",
               app.action_toggle_pause)
        yield "Replay: step one frame", "One frame forward, then hold", app.action_replay_step
        yield "Replay: seek 10 s forward", "Skip ahead (the frames between are still analysed)", \
            partial(app.action_replay_seek, 10)
        yield "Replay: seek 10 s back", "Replay from the start up to 10 s before", partial(app.action_replay_seek, -10)
        yield "Replay: faster", "Double the playback speed", partial(app.action_replay_speed, 1)
        yield "Replay: slower", "Halve the playback speed", partial(app.action_replay_speed, -1)
    else:
        yield ("Resume the display" if app.paused else "Pause the display",
               "Freeze the display; collecting and recording go on", app.action_toggle_pause)
    for i, stage in enumerate(PIPELINE):
        yield (f"Go to stage {i + 1}: {STAGE_TITLES[stage]}", "Its evidence, history, stacks and remedies",
               partial(go_to_stage, app, stage))
    view = app.view
    if view is not None and isinstance(view.frame.procs, ProcsSample):
        for p in view.frame.procs.processes:
            rank = f" r{p.rank}" if p.rank is not None else ""
            yield (f"Open process {p.pid} ({p.role}{rank}, {p.name})",
                   "Role, command line, CPU and state over time, hottest stacks", partial(open_process, app, p.pid))
    yield "Whole verdict", "The verdict and what to do, uncut", app.action_verdict
    yield "Export report", f"Write the diagnose report of the frames on hand (Markdown) to {app.record_dir}", \
        app.action_export_report
    yield "Stacks", "Hottest frames per thread role (py-spy top style)", partial(open_stacks, app)
    if app.rank_tick is not None:
        yield "Next rank", "Show the next rank of a multi-rank job (all, 0, 1, ...)", app.action_next_rank
    yield "Help", "Every key of this screen, and the legend", app.action_help


def _to_main(app: GpuwatchApp) -> None:
    from gpuwatch.tui.screens.main import MainScreen

    while len(app.screen_stack) > 1 and not isinstance(app.screen, MainScreen):
        app.pop_screen()


def go_to_stage(app: GpuwatchApp, stage: str) -> None:
    from gpuwatch.tui.screens.main import MainScreen
    from gpuwatch.tui.screens.stage import StageScreen

    _to_main(app)
    if isinstance(app.screen, MainScreen):
        app.screen.pipeline.pick(stage)
    app.push_screen(StageScreen(stage))


def open_process(app: GpuwatchApp, pid: int) -> None:
    from gpuwatch.tui.screens.process import ProcessScreen

    _to_main(app)
    app.push_screen(ProcessScreen(pid))


def open_stacks(app: GpuwatchApp) -> None:
    from gpuwatch.tui.screens.stacks import StacksScreen

    _to_main(app)
    app.push_screen(StacksScreen())


def system_commands(app: GpuwatchApp, screen: Screen) -> Iterable[SystemCommand]:
    """Textual's system commands without "Keys" (gpuwatch's Help lists every key instead)."""
    for command in App.get_system_commands(app, screen):
        if command.title != "Keys":
            yield command


def highlight(matcher: Matcher, title: str) -> Content:
    """``title`` as plain text with the query's letters marked. Textual's ``Matcher.highlight`` and a
    str title read it as markup, and a title may hold a process name the job chose: a name such as
    ``[b]x`` lost its brackets (``[@click=...]`` would have made an action link)."""
    content = Content(title)
    score, offsets = matcher.fuzzy_search.match(matcher.query, title)
    if not score:
        return content
    for offset in offsets:
        if not title[offset].isspace():
            content = content.stylize(matcher.match_style, offset, offset + 1)
    return content


class GpuwatchCommands(Provider):
    """Finds gpuwatch's commands by a fuzzy match on their titles."""

    @property
    def _app(self) -> GpuwatchApp:
        return self.app

    async def discover(self) -> Hits:
        for title, about, callback in commands(self._app):
            yield DiscoveryHit(Content(title), callback, text=title, help=escape(about))

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, about, callback in commands(self._app):
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, highlight(matcher, title), callback, text=title, help=escape(about))
