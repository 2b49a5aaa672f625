"""The ranks line under the header (multi-rank jobs only): each rank's verdict, which rank is on
show, and the straggler when one is named."""

from __future__ import annotations

from gpuwatch.model.verdict import STAGE_TITLES
from gpuwatch.multirank import RankTick, straggler_line
from gpuwatch.tui.panels.plain import Plain


GROUP_FROM = 5
"""From this many ranks on, the line groups ranks by verdict (``GPU-bound 0-2,4-7``): a rank each
would run past 80 columns with eight ranks and wrap."""


def ranks_text(tick: RankTick, selected: int | None) -> str:
    """``Ranks: [all] · 0 Unknown · 1 I/O`` with the rank on show in brackets; from GROUP_FROM ranks
    on ``Ranks (8): [all] · GPU-bound 0-2,4-7 · CPU prep 3``, the rank on show after them."""
    parts = ["[all]" if selected is None else "all"]
    if len(tick.verdicts) >= GROUP_FROM:
        groups: dict[str, list[int]] = {}
        for rank, v in tick.verdicts:
            groups.setdefault(STAGE_TITLES.get(v.stage, v.stage), []).append(rank)
        parts += [f"{title} {spans(ranks)}" for title, ranks in groups.items()]
        mine = tick.verdict(selected) if selected is not None else None
        if mine is not None:
            parts.append(f"[{selected} {STAGE_TITLES.get(mine.stage, mine.stage)}]")
        return f"Ranks ({len(tick.verdicts)}): " + " · ".join(parts)
    for rank, v in tick.verdicts:
        text = f"{rank} {STAGE_TITLES.get(v.stage, v.stage)}"
        parts.append(f"[{text}]" if rank == selected else text)
    return "Ranks: " + " · ".join(parts)


def spans(ranks: list[int]) -> str:
    """``0-2,4-7`` for ranks 0, 1, 2, 4, 5, 6, 7."""
    runs: list[list[int]] = []
    for r in sorted(ranks):
        if runs and r == runs[-1][1] + 1:
            runs[-1][1] = r
        else:
            runs.append([r, r])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


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
