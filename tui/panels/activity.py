"""What each kind of thread spends its stack samples on (wide layouts only)."""

from __future__ import annotations

from gpuwatch.model.stacks import LABEL_WORDS
from gpuwatch.tui import format as fmt
from gpuwatch.tui.hot import STACK_WINDOW, label_shares, stack_samples, threads
from gpuwatch.tui.panels.plain import Plain
from gpuwatch.tui.plot import bar
from gpuwatch.tui.roles import ROLES
from gpuwatch.tui.view import View

BAR_W = 10


class ActivityPanel(Plain):
    """``main thread   waiting for a batch ██████▎ 62 %  backward pass ██ 20 %`` per role, over the stack window."""

    _view: View | None = None
    """The latest view, drawn when the panel is (or becomes) displayed."""

    def on_mount(self) -> None:
        self.border_title = f"Threads (stacks, last {STACK_WINDOW} frames)"

    def on_show(self) -> None:
        """The layout made room for the panel (the screen became wide): draw what it missed."""
        if self._view is not None:
            self._draw(self._view)

    def show(self, view: View) -> None:
        """Keep ``view``; draw it only while displayed (a narrow screen hides the panel)."""
        self._view = view
        if self.display:
            self._draw(view)

    _drawn: tuple | None = None
    """The stack samples (by time) and the reason drawn last: a frame without a new stack sample
    (most frames, at the relaxed pace) changes nothing here."""

    def _draw(self, view: View) -> None:
        reason = fmt.reason(view.frame.stacks)
        samples = stack_samples(view.frames)
        key = (reason, tuple(s.t for s in samples))
        if key == self._drawn:
            return
        self._drawn = key
        lines = []
        for role, title in ROLES:
            mine = threads(samples, lambda t, r=role: t.role == r and (t.active or r != "other"))
            if not mine:
                continue
            shares = "  ".join(f"{LABEL_WORDS.get(label, label)} {bar(share, BAR_W).rstrip()} {share:.0%}"
                               for label, share in label_shares(mine)[:3])
            lines.append(f"{title:<18} {shares}")
        if not lines:
            lines.append(f"Stacks N/A: {reason}" if reason else "No stack samples yet.")
        self.update("\n".join(lines))
