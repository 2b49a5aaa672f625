"""The evidence list of a drill-down: each signal against its threshold, wrapped to the width."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual.widget import Widget

from gpuwatch.model.verdict import Evidence
from gpuwatch.tui.panels.measured import Measured


def evidence_line(e: Evidence) -> str:
    """``✓ data_wait 0.62 (>= 0.22): main thread waiting for a batch: 62 %``."""
    value = "N/A" if e.value is None else f"{e.value:.3g}"
    test = f" ({e.op} {e.threshold:.3g})" if e.threshold is not None else ""
    return f"{'✓' if e.supports else '✗'} {e.signal} {value}{test}: {e.text}"


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
        ordered = tuple(sorted(items, key=lambda e: not e.supports))  # stable: keeps the diagnosis's order
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
            cls = "evidence--supports" if e.supports else "evidence--against"
            text.append(evidence_line(e), self.get_component_rich_style(cls))
        return text
