"""The whole verdict (v): what the main screen's verdict line shows, with nothing cut, then what
to do about it. On a short terminal the main screen keeps the verdict to the lines it can spare
(panels/verdict_line.py); this is where the rest is read. A snapshot of the verdict on show when
it was opened."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.markup import escape
from textual.screen import ModalScreen
from textual.widgets import Static

from gpuwatch.model.verdict import Verdict
from gpuwatch.tui.panels.pipeline import verdict_text
from gpuwatch.tui.panels.verdict_line import KeptWords


def whole_verdict(v: Verdict | None) -> str:
    """The verdict line's text, then the remedies as a list (markup; the job's strings escaped)."""
    if v is None:
        return "No verdict yet: waiting for the first frame."
    text = verdict_text(v)
    if v.remedies:
        text += "\n\n[b]What to do[/b]\n" + "\n".join(f"• {escape(r)}" for r in v.remedies)
    return text


class VerdictScreen(ModalScreen[None]):
    """The verdict whole, over the screen it was opened from."""

    BINDINGS = [
        Binding("escape", "dismiss", "Back", tooltip="Close the whole verdict."),
        Binding("v", "dismiss", "Back", show=False, tooltip="Close the whole verdict."),
        Binding("q", "dismiss", "Back", show=False, tooltip="Close the whole verdict."),
    ]

    def __init__(self, verdict: Verdict | None) -> None:
        super().__init__()
        self._verdict = verdict

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="verdict-body"):
            # KeptWords: a number stays with its unit ("11 %" read "11" at a line's end, "%" below)
            yield Static(KeptWords(whole_verdict(self._verdict)), id="verdict-text")
