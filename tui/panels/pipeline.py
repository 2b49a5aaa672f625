"""The pipeline panel: the six stages as a flow, each with its level, and the verdict sentence."""

from __future__ import annotations

from functools import cached_property

from textual.app import ComposeResult
from textual.markup import escape
from textual.containers import Vertical
from textual.message import Message
from textual.reactive import reactive

from gpuwatch.model.verdict import (FIX_WORDS, LEVEL_BOTTLENECK, LEVEL_WARNING, PIPELINE, STAGE_TITLES, FixGain,
                                    Verdict, gain_words, times)
from gpuwatch.tui.levels import LEVEL_GLYPHS, LEVEL_WAITING, LEVEL_WORDS, set_level
from gpuwatch.tui.panels.lazy_static import LazyStatic
from gpuwatch.tui.panels.steady import SteadyHorizontal, SteadyLines, SteadyStatic
from gpuwatch.tui.panels.verdict_line import VerdictLine


class StageBox(LazyStatic):
    """One stage: its name and level. Clicking it selects it (the keyboard does the same)."""

    def __init__(self, stage: str, position: int) -> None:
        super().__init__(id=f"stage-{stage}", classes="stage-box")
        self.stage = stage
        self.position = position
        self.level = LEVEL_WAITING
        self._draw()

    def set_level(self, level: str) -> None:
        if level != self.level:
            self.level = level
            set_level(self, level)
            self._draw()

    def _draw(self) -> None:
        glyph = LEVEL_GLYPHS.get(self.level, "?")
        self.update(f"{STAGE_TITLES[self.stage]}\n{glyph} {LEVEL_WORDS.get(self.level, self.level)}")
        self.border_title = str(self.position)  # shown where the layout gives the box a border

    def on_click(self) -> None:
        self.post_message(PipelinePanel.StageClicked(self.stage))


def verdict_text(v: Verdict) -> str:
    """The verdict as one paragraph, most important first (a short terminal cuts the end off):
    stage, confidence, what the fix could bring, then the sentence."""
    title, said = v.headed
    head = []
    if v.confidence > 0:
        head.append(f"{v.confidence_word} confidence {v.confidence:.2f}")
    if v.speedup is not None and v.speedup_floor:  # the samples bound it only from below: a floor
        head.append(f"fixing it: {v.speedup:.1f}× faster or more while it holds")
    elif v.speedup is not None and v.speedup > 1.0:
        head.append(f"fixing it: {gain_words(v.stage)} {v.speedup:.1f}× faster while it holds")
    best = max((g for g in v.gains if g.factor is not None), key=lambda g: g.factor or 0.0, default=None)
    if best is not None:  # the ceiling above is the stage made free; this is what a proposed fix gives
        # the fix's figure as its remedy line says it (model.verdict.times): "about 1.4×" stood above the
        # remedy's "about 1.35x" and read as another estimate (review 30)
        head.append(f"{FIX_WORDS[best.fix]}: {'up to' if best.bound else 'about'} {times(best.factor)}×"
                    f"{more_words(best)}")
    lead = f"[b]{escape(title)}[/b]" + (f" ({escape('; '.join(head))})" if head else "")
    text = f"{lead}: {escape(said)}"
    if v.secondary:  # each warning with its reason: its cut is not among the verdict's, so it is said here
        text += " Also: " + escape("; ".join(also(v, s) for s in v.secondary)) + "."
    return text


def more_words(g: FixGain) -> str:
    """Beside a fix's figure, what it may give beyond it: its bound where one is known."""
    if not g.partial:
        return ""
    return f", up to {times(g.upper)}×" if g.upper is not None else ", maybe more"


def also(v: Verdict, stage: str) -> str:
    """A stage at warning level beside the verdict, with why: ``PCIe (main thread in host-to-device
    copies 15 % of the latest 40 samples, warns from 5 %)``."""
    why = v.why_warned(stage)
    return f"{STAGE_TITLES.get(stage, stage)} ({why})" if why else STAGE_TITLES.get(stage, stage)


class PipelinePanel(SteadyLines, Vertical):
    """I/O → CPU prep → PCIe → GPU memory → Launch → Contention, then the verdict."""

    selected: reactive[str] = reactive(PIPELINE[0])
    """The stage Enter drills into: the verdict's stage until the user picks one (:meth:`pick`)."""
    picked = False
    """True once the user chose a stage: from then on the cursor stays where they put it."""
    cursor_shown = False
    """The cursor is drawn once it means something: on the verdict's stage (or, while the verdict
    names none, the first stage with a warning), or where the user put it; never on I/O merely
    because I/O comes first."""

    class StageClicked(Message):
        """A stage box was clicked."""

        def __init__(self, stage: str) -> None:
            super().__init__()
            self.stage = stage

    def compose(self) -> ComposeResult:
        with SteadyHorizontal(classes="flow"):
            for i, stage in enumerate(PIPELINE):
                if i:
                    yield SteadyStatic("→", classes="arrow")
                yield StageBox(stage, i + 1)
        yield VerdictLine("Waiting for the first frame…", classes="verdict")  # markup: the stage in bold

    _boxes: tuple[StageBox, ...] = ()
    """The six stage boxes, looked up on mount rather than by a DOM query each tick."""

    def watch_selected(self, old: str, new: str) -> None:
        for box in self._boxes:
            box.set_class(self.cursor_shown and box.stage == new, "-selected")

    def on_mount(self) -> None:
        self._boxes = tuple(self.query(StageBox))
        self.watch_selected(self.selected, self.selected)

    @cached_property
    def verdict_line(self) -> VerdictLine:
        return self.query_one(".verdict", VerdictLine)

    def pick(self, stage: str) -> None:
        self.picked = True
        self._place(stage)

    def _place(self, stage: str) -> None:
        shown, self.cursor_shown = self.cursor_shown, True
        self.selected = stage
        if not shown:
            self.watch_selected(stage, stage)

    def show(self, verdict: Verdict) -> None:
        if not self.picked:
            if verdict.stage in PIPELINE and verdict.confidence > 0:
                self._place(verdict.stage)  # Enter opens the bottleneck's drill-down at once
            else:
                # a stage to look at: warning or bottleneck, not n/a (nothing measured there)
                flagged = next((s for s in PIPELINE if verdict.level(s) in (LEVEL_WARNING, LEVEL_BOTTLENECK)), None)
                if flagged is not None:
                    self._place(flagged)
                elif self.cursor_shown:
                    # Nothing to point at now (GPU-bound, every stage ok): a box left highlighted from an
                    # earlier tick's verdict read as the problem (review 46: Launch from tick 2 stayed
                    # selected through a healthy run). Enter still opens the last one placed.
                    self.cursor_shown = False
                    self.watch_selected(self.selected, self.selected)
        for box in self._boxes:
            box.set_level(verdict.level(box.stage))
        line = self.verdict_line
        line.update(verdict_text(verdict))
        set_level(line, "bottleneck" if verdict.stage in PIPELINE and verdict.confidence > 0 else "ok")
