"""The ranks line under the header (multi-rank jobs only): each rank's verdict, which rank is on
show, and the straggler when one is named."""

from __future__ import annotations

from gpuwatch.model.verdict import STAGE_TITLES
from gpuwatch.multirank import RankTick, straggler_line
from gpuwatch.tui.panels.plain import Plain


def ranks_text(tick: RankTick, selected: int | None) -> str:
    """``Ranks: [all] · 0 Unknown · 1 I/O`` with the rank on show in brackets."""
    parts = ["[all]" if selected is None else "all"]
    for rank, v in tick.verdicts:
        text = f"{rank} {STAGE_TITLES.get(v.stage, v.stage)}"
        parts.append(f"[{text}]" if rank == selected else text)
    return "Ranks: " + " · ".join(parts)


class RankBar(Plain):
    """One line: the ranks and their verdicts; a second line naming the straggler. Hidden for
    single-process jobs. Classes: ``-straggler`` when a straggler is named."""

    DEFAULT_CSS = """
    RankBar { height: auto; padding: 0 1; background: $panel; color: $text-muted; }
    RankBar.-straggler { color: $text-warning; text-style: bold; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.display = False

    def show(self, tick: RankTick | None, selected: int | None) -> None:
        if tick is None:
            self.display = False
            return
        line = straggler_line(tick)
        self.update(ranks_text(tick, selected) + (f"\n{line}" if line else ""))
        self.set_class(bool(line), "-straggler")
        self.display = True

