"""The help screen: keys, what the levels mean, and where the numbers come from."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen

from gpuwatch.model.verdict import PIPELINE, STAGE_TITLES
from gpuwatch.tui.levels import LEVEL_GLYPHS, LEVEL_WORDS
from gpuwatch.tui.panels.plain import Plain

KEYS = (
    ("← → 1-6", "select a pipeline stage (the verdict's, until you pick one)"),
    ("Enter", "stage details: evidence, history, stacks, remedies"),
    ("s", "hottest frames per thread role (py-spy top style)"),
    ("p", "pause the display (collecting and recording go on)"),
    ("r", "start / stop recording to gpuwatch-DATE-TIME.jsonl"),
    ("k", "next rank of a multi-rank job (all, 0, 1, ...)"),
    ("?", "this help"),
    ("Escape", "back"),
    ("q", "quit"),
)


def help_text() -> str:
    keys = "\n".join(f"{k:<9} {what}" for k, what in KEYS)
    stages = " → ".join(STAGE_TITLES[s] for s in PIPELINE)
    levels = "   ".join(f"{LEVEL_GLYPHS[lv]} {LEVEL_WORDS[lv]}" for lv in LEVEL_GLYPHS)
    return (
        "gpuwatch: what is holding the GPU back?\n\n"
        f"{keys}\n\n"
        f"{stages}\n"
        f"Levels: {levels}\n"
        "The verdict names the stage that limits the job, how sure it is and how much "
        "faster the job could run if that stage were fixed.\n\n"
        "Processes, Hottest frame: what the process ran in the latest stack sample; dimmed, "
        "from an earlier one (workers are sampled in turn).\n"
        "N/A: a value could not be read. The reason and the fix are shown next to it "
        "(panel notes, stage details)."
    )


class HelpScreen(ModalScreen[None]):
    """Keys and legend."""

    BINDINGS = [
        Binding("escape", "dismiss", "Back", tooltip="Close the help."),
        Binding("question_mark", "dismiss", "Back", show=False),
        Binding("q", "dismiss", "Back", show=False),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-body"):
            yield Plain(help_text(), id="help-text")
