"""The footer, Help and Quit first: a narrow terminal cuts the footer's right end, and those two
are the keys a user must always find (htop keeps F1 Help and F10 Quit on screen the same way)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from gpuwatch.tui.panels.steady import SteadyLines

FIRST = ("help", "quit", "pop_screen", "dismiss")
"""Actions whose keys lead the footer, in this order: Help, Quit, then the screen's own Back (a
drill-down's way out, kept at 80 columns ahead of a replay's playback keys)."""
REPLAY = ("toggle_pause", "replay_step", "replay_seek", "replay_speed")
"""In a replay, the playback keys come next: a replay must look like one."""


def not_here(app: object) -> set[str]:
    """Actions that mean nothing in this session, left out of the footer and the help (pressed,
    they still say why): the playback keys in a live watch, the rank key for a single process."""
    out: set[str] = set()
    if getattr(app, "replay", None) is None:
        out.update(REPLAY[1:])
    if getattr(app, "rank_tick", None) is None:
        out.add("next_rank")
    return out


def _action(widget: object) -> str:
    return str(getattr(widget, "action", "")).rsplit(".", 1)[-1].split("(", 1)[0]


def _rank(widget: object, first: tuple[str, ...]) -> int:
    action = _action(widget)
    if "-command-palette" in getattr(widget, "classes", ()):
        return 99  # Textual docks it right anyway
    return first.index(action) if action in first else len(first)


class KeysFooter(SteadyLines, Footer):
    """Textual's footer with the keys reordered: Help, Quit, then the screen's own, then the app's."""

    def compose(self) -> ComposeResult:
        keys = list(super().compose())  # FooterKeys only: gpuwatch's bindings use no groups
        replay = getattr(self.app, "replay", None) is not None
        first = FIRST + REPLAY if replay else FIRST
        hidden = not_here(self.app)
        keys = [k for k in keys if _action(k) not in hidden]
        for key in keys:
            if "-command-palette" in key.classes:
                continue  # not bound to the footer's compact: keeps its own default
            # A binding's key is born with the footer's compact value, which Footer binds it to
            # anyway: its own default (compact) and then the bound value each restyled the key on
            # mount, two style passes per key at every recompose (the footer recomposes as the
            # bindings settle at start).
            key.set_reactive(type(key).compact, self.compact)
            key.set_class(self.compact, "-compact", update=False)
        yield from sorted(keys, key=lambda key: _rank(key, first))  # stable: the rest keep Textual's order

    # ---- a narrow terminal: whole keys give way, none is cut mid-word ----

    _fitted_width = 0
    """The width the keys were last fitted to (hiding a key resizes the footer's content, not it)."""
    _stale = False
    """True from a resize or recompose until the keys are fitted."""

    def on_mount(self) -> None:
        # Keys composed while their screen is hidden (the main screen's footer recomposes under a
        # drill-down as bindings change) have no place until that screen is laid out again.
        self.screen.screen_layout_refresh_signal.subscribe(self, self._laid_out)

    def on_unmount(self) -> None:
        self.screen.screen_layout_refresh_signal.unsubscribe(self)

    def on_resize(self) -> None:
        if self.size.width == self._fitted_width:
            return
        self._fitted_width = self.size.width
        for key in self.query_children(FooterKey):
            key.display = True  # the layout after this paint tells which fit now
        self._stale = True
        self.call_after_refresh(self._fit)

    async def recompose(self) -> None:
        await super().recompose()
        self._stale = True
        self.call_after_refresh(self._fit)

    def _laid_out(self, _screen: object) -> None:
        if self._stale:
            self._fit()

    def _fit(self) -> None:
        """Hide the keys that run past the palette key, from the first that does: the footer's
        right end used to cut a key with no mark ("↑↓ Process  ←" at 80 columns in a replay)."""
        if not self._stale:
            return
        keys = [k for k in self.query_children(FooterKey) if not k.has_class("-command-palette")]
        palette = next((k for k in self.query_children(FooterKey) if k.has_class("-command-palette")), None)
        if any(k.display and not k.region for k in keys):
            # Not laid out yet: the next layout of this screen fits them. Asking again after each
            # refresh instead spun the event loop while the screen was hidden under a drill-down.
            return
        self._stale = False
        right = palette.region.x if palette is not None and palette.display else self.region.right
        cut = False
        for key in keys:
            cut = cut or key.region.right > right
            if key.display == cut:
                key.display = not cut
