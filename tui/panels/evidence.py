"""The evidence list of a drill-down: each signal against its threshold, wrapped to the width."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual.widget import Widget

from gpuwatch.diagnosis.evidence import EVIDENCE_MARKS, FACT_MARKS, MET, mark, status
from gpuwatch.model.verdict import Evidence
from gpuwatch.tui.panels.measured import Measured


def evidence_line(e: Evidence) -> str:
    """``● main thread waiting for a batch: 62 % (needs at least 20 %)``: the mark says met, not
    met, not measured or does not apply (the legend is under the list)."""
    return mark(e)


LEGEND = " · ".join(f"{m} {word}" for word, m in EVIDENCE_MARKS.items()) + f" ({FACT_MARKS})"


class EvidenceList(Measured, Widget):
    """One line per evidence item (wrapping), items that point to the stage first."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"evidence--supports", "evidence--against"}
    DEFAULT_CSS = """
    EvidenceList { height: auto; }
    """

    def __init__(self, id: str | None = None) -> None:
        super().__init__(id=id)
        self.items: tuple[Evidence, ...] = ()

    def show(self, items: Sequence[Evidence]) -> None:
        ordered = tuple(sorted(items, key=lambda e: status(e) != MET))  # stable: keeps the diagnosis's order
        if ordered != self.items:
            self.items = ordered
            self.refresh()
            if self.size_changed():  # height auto: more or fewer (wrapped) lines
                self.refresh(layout=True)

    def render(self) -> Text:
        if not self.items:
            return Text("No evidence for this stage in the latest verdict.")
        text = Text()
        for i, e in enumerate(self.items):
            if i:
                text.append("\n")
            cls = "evidence--supports" if status(e) == MET else "evidence--against"
            text.append(evidence_line(e), self.get_component_rich_style(cls))
        text.append(f"\n{LEGEND}", self.get_component_rich_style("evidence--against"))
        return text
