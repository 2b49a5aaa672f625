"""The footer, Help and Quit first: a narrow terminal cuts the footer's right end, and those two
are the keys a user must always find (htop keeps F1 Help and F10 Quit on screen the same way)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Footer

FIRST = ("help", "quit")
"""Actions whose keys lead the footer, in this order (the screen's own Back goes right after)."""
REPLAY = ("toggle_pause", "replay_step", "replay_seek", "replay_speed")
"""In a replay, the playback keys come next: a replay must look like one."""


def _rank(widget: object, first: tuple[str, ...]) -> int:
    action = str(getattr(widget, "action", "")).rsplit(".", 1)[-1].split("(", 1)[0]
    if "-command-palette" in getattr(widget, "classes", ()):
        return 99  # Textual docks it right anyway
    return first.index(action) if action in first else len(first)


class KeysFooter(Footer):
    """Textual's footer with the keys reordered: Help, Quit, then the screen's own, then the app's."""

    def compose(self) -> ComposeResult:
        keys = list(super().compose())  # FooterKeys only: gpuwatch's bindings use no groups
        first = FIRST + REPLAY if getattr(self.app, "replay", None) is not None else FIRST
        yield from sorted(keys, key=lambda key: _rank(key, first))  # stable: the rest keep Textual's order
