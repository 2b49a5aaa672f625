"""The ranks of a multi-rank job as a table (wide, tall screens): each rank's verdict and what its
main thread and workers did over the straggler window, the straggler marked."""

from __future__ import annotations

from gpuwatch.model.verdict import STAGE_TITLES
from gpuwatch.multirank import RankTick
from gpuwatch.tui.panels.plain import Plain

HEAD = f"{'rank':<6}{'verdict':<13}{'conf':>5}  {'waits input':>11}  {'in collectives':>14}  {'busy in':<12}{'worker CPU':>10}"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.0%}"


def rank_rows(tick: RankTick, selected: int | None) -> list[str]:
    """The header and one line per rank, ``▶`` on the rank on show, ``◀ straggler`` on the straggler."""
    signals = {s.rank: s for s in tick.signals}
    straggler = tick.straggler.rank if tick.straggler is not None else None
    lines = [HEAD]
    for rank, v in tick.verdicts:
        s = signals.get(rank)
        cpu = "-" if s is None or s.worker_cpu is None else f"{s.worker_cpu:.2f}"
        mark = "▶" if rank == selected else " "
        line = (f"{mark}{rank:<5}{STAGE_TITLES.get(v.stage, v.stage)[:12]:<13}{v.confidence:>5.2f}  "
                f"{_pct(s.input_share if s else None):>11}  {_pct(s.collective_share if s else None):>14}  "
                f"{((s.top_label or '-') if s else '-')[:11]:<12}{cpu:>10}")
        lines.append(line + ("  ◀ straggler" if rank == straggler else ""))
    return lines


class RankTable(Plain):
    """Hidden for jobs of fewer than ``min_ranks`` ranks (the ranks line says enough there)."""

    BORDER_TITLE = "Ranks"
    """Shown where the layout gives the table a border; set once, by Textual on mount, never in a
    tick's update: each assignment parses the title and repaints the widget."""

    DEFAULT_CSS = """
    RankTable { height: auto; padding: 0 1; display: none; }
    RankTable.-shown { display: block; }
    """

    def __init__(self, *, min_ranks: int, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.min_ranks = min_ranks

    def show(self, tick: RankTick | None, selected: int | None) -> None:
        shown = tick is not None and len(tick.verdicts) >= self.min_ranks
        self.set_class(shown, "-shown")  # a class, not `display`: the layout's rules still hide it
        if shown:
            self.update("\n".join(rank_rows(tick, selected)))  # type: ignore[arg-type]
