"""What each kind of thread spends its stack samples on (wide layouts only)."""

from __future__ import annotations

from gpuwatch.diagnosis.stack_counts import shares as count_shares
from gpuwatch.model.stacks import LABEL_WORDS
from gpuwatch.tui import format as fmt
from gpuwatch.tui.hot import STACK_WINDOW, WindowCounts, stack_samples
from gpuwatch.tui.panels.plain import Plain
from gpuwatch.tui.plot import bar
from gpuwatch.tui.roles import ROLES
from gpuwatch.tui.view import View

BAR_W = 10


class ActivityPanel(Plain):
    """``main thread   waiting for a batch ██████▎ 62 %  backward pass ██ 20 %`` per role, over the stack window."""

    CHANGED_LINES = True  # a new stack sample usually changes one role's line (the main thread's)

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

    _counts: WindowCounts | None = None
    """The window's samples counted per role: a new frame brings at most one new sample, and
    counting the window's ~30 samples again for each role was most of the panel's CPU a tick."""

    _drawn: tuple | None = None
    """The stack samples (by identity: a rank's samples carry the job's times) and the reason drawn
    last: a frame without a new stack sample (most frames, at the relaxed pace) changes nothing
    here. The samples drawn are held by ``_counts``, so their ids name no other sample."""

    def _draw(self, view: View) -> None:
        reason = fmt.reason(view.frame.stacks)
        samples = stack_samples(view.frames)
        key = (reason, tuple(map(id, samples)))
        if key == self._drawn:
            return
        self._drawn = key
        if self._counts is None:
            self._counts = WindowCounts()
        totals = self._counts.update(samples)
        lines = []
        for role, title in ROLES:
            mine = totals.get(role)
            if not mine:
                continue
            shares = "  ".join(f"{LABEL_WORDS.get(label, label)} {bar(share, BAR_W).rstrip()} {share:.0%}"
                               for label, share in count_shares(mine)[:3])
            lines.append(f"{title:<18} {shares}")
        if not lines:
            lines.append(f"Stacks N/A: {reason}" if reason else "No stack samples yet.")
        self.update("\n".join(lines))
