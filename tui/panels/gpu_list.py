"""Many GPUs at once: one line per GPU (two per line on a narrow screen), nvidia-smi style.

With three or more GPUs the per-GPU panels (ten rows each) no longer fit a screen; this list keeps
every GPU in view: its busy bar, SM activity, memory, PCIe, power, temperature and which of the
job's ranks runs on it. Columns that do not fit the width are left out, least telling first.
"""

from __future__ import annotations

from typing import ClassVar

from gpuwatch.model.frame import Frame
from gpuwatch.model.values import known
from gpuwatch.tui import format as fmt
from gpuwatch.tui.gpu_metrics import METRICS, gpu_of
from gpuwatch.tui.panels.parts_widget import Part, PartsWidget
from gpuwatch.tui.plot import bar

_BY_KEY = {m.key: m for m in METRICS}
FOLD_AT = 3
"""From this many GPUs in the frame on, the GPU area shows this list instead of a panel per GPU."""
CELL_MIN = 38
"""A GPU's cell is at least this wide; a line holds two cells when the width allows and the screen
is narrow (the wide layout gives the list half the screen, enough for every column)."""

# (key, title, width), in the order shown; the util bar's width is what is left over
COLUMNS = (("gpu", "GPU", 6), ("bar", "util", 0), ("util", "", 5), ("sm", "SM", 7), ("mem", "memory", 9),
           ("rx", "PCIe RX", 11), ("tx", "TX", 11), ("power", "power", 10), ("temp", "temp", 7),
           ("job", "job", 9))
PRIORITY = ("gpu", "bar", "util", "sm", "mem", "job", "rx", "tx", "power", "temp")
"""What stays as the width shrinks: the columns first in this order."""
BAR_MIN, BAR_MAX = 6, 30
GIB = 1024**3


def layout(width: int) -> tuple[list[str], int]:
    """The columns that fit in ``width`` cells (in display order) and the bar's width."""
    widths = {k: w for k, _, w in COLUMNS}
    chosen: list[str] = []
    used = 0
    for key in PRIORITY:
        need = (BAR_MIN if key == "bar" else widths[key]) + (1 if chosen else 0)
        if used + need > width:
            break
        chosen.append(key)
        used += need
    bar_w = BAR_MIN + min(BAR_MAX - BAR_MIN, max(0, width - used)) if "bar" in chosen else 0
    return [k for k, _, _ in COLUMNS if k in chosen], bar_w


def job_text(frame: Frame, index: int) -> str:
    """Which of the job's processes use GPU ``index``: ``rank 3``, ``job``, ``other`` or ``-``."""
    gpu, _ = gpu_of(frame, index)
    if gpu is None:
        return "-"
    mine = [p for p in gpu.processes if p.is_target]
    if not mine:
        return "other" if gpu.processes else "-"
    ranks = {}
    if known(frame.procs):
        ranks = {p.pid: p.rank for p in frame.procs.processes}  # type: ignore[union-attr]
    seen = sorted({ranks.get(p.local_pid) for p in mine if ranks.get(p.local_pid) is not None})
    if not seen:
        return "job"
    return f"rank {seen[0]}" if len(seen) == 1 else "ranks " + ",".join(str(r) for r in seen)


class GpuList(PartsWidget):
    """Every GPU of the frame on one line each (or two a line), with a header line."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"gpu-list--head", "gpu-list--bar", "gpu-list--bar-empty",
                                             "gpu-list--value", "gpu-list--na", "gpu-list--muted"}
    DEFAULT_CSS = """
    GpuList { height: 2; width: 1fr; margin: 0 1; }
    GpuList > .gpu-list--head { color: $text-muted; text-style: bold; }
    GpuList > .gpu-list--bar { color: $primary; }
    GpuList > .gpu-list--bar-empty { background: $panel; }
    GpuList > .gpu-list--value { text-style: bold; }
    GpuList > .gpu-list--na { color: $text-disabled; }
    GpuList > .gpu-list--muted { color: $text-muted; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._rows: tuple = ()
        self._two = False
        self._height = 0

    @property
    def lines(self) -> int:
        """The lines the list takes: its header and a line per GPU (or per two)."""
        return self._height

    def show(self, frame: Frame, two_a_line: bool) -> None:
        """The GPUs of ``frame``; ``two_a_line`` puts two GPUs on a line (narrow screens)."""
        gpus = sorted(g.index for g in frame.gpus) if known(frame.gpus) else []  # type: ignore[union-attr]
        rows = tuple(self._row(frame, i) for i in gpus)
        lines = 1 + (-(-len(rows) // 2) if two_a_line else len(rows))
        if lines != self._height:
            self._height = lines
            self.styles.height = lines
        if (rows, two_a_line) == (self._rows, self._two):
            return
        self._rows, self._two = rows, two_a_line
        self.redraw()

    @staticmethod
    def _row(frame: Frame, index: int) -> tuple:
        gpu, pcie = gpu_of(frame, index)
        cells: dict[str, tuple[str, bool]] = {"gpu": (f"GPU {index}", False), "job": (job_text(frame, index), False)}
        frac = None
        for key in ("util", "sm", "mem", "rx", "tx", "power", "temp"):
            m = _BY_KEY[key]
            value = m.read(gpu, pcie) if gpu is not None else None
            text = m.text(value, gpu, pcie) if gpu is not None else fmt.NA
            if key == "mem" and gpu is not None and known(value) and known(gpu.mem_total):
                text = f"{value / GIB:.1f}/{gpu.mem_total / GIB:.0f}G"  # type: ignore[operator]
            cells[key] = (text, not known(value))
            if key == "util" and known(value):
                frac = float(value) / 100  # type: ignore[arg-type]
        return tuple(sorted(cells.items())), frac

    def _parts(self) -> list[list[Part]]:
        width = self.size.width
        per_line = 2 if self._two else 1
        cell_w = (width - (per_line - 1) * 2) // per_line
        keys, bar_w = layout(cell_w)
        titles = {k: t for k, t, _ in COLUMNS}
        widths = {k: w for k, _, w in COLUMNS}
        widths["bar"] = bar_w
        head_cell = " ".join(titles[k].ljust(widths[k])[:widths[k]] for k in keys)
        head: list[Part] = [("  ".join([head_cell] * min(per_line, max(1, len(self._rows)))), "gpu-list--head")]
        lines = [head]
        cells = [self._cell(row, keys, widths) for row in self._rows]
        for i in range(0, len(cells), per_line):
            line: list[Part] = []
            for j, cell in enumerate(cells[i:i + per_line]):
                if j:
                    line.append(("  ", None))
                line += cell
            lines.append(line)
        return lines

    @staticmethod
    def _cell(row: tuple, keys: list[str], widths: dict[str, int]) -> list[Part]:
        values, frac = dict(row[0]), row[1]
        parts: list[Part] = []
        for n, key in enumerate(keys):
            if n:
                parts.append((" ", None))
            w = widths[key]
            if key == "bar":
                filled = bar(frac, w).rstrip(" ")
                parts += [(filled, "gpu-list--na" if frac is None else "gpu-list--bar"),
                          (" " * (w - len(filled)), "gpu-list--bar-empty")]
                continue
            text, na = values[key]
            text = fmt.ellipsize(text, w)
            right = key not in ("gpu", "job")
            style = "gpu-list--na" if na else ("gpu-list--value" if key == "util" else
                                               "gpu-list--muted" if key == "job" else None)
            parts.append((text.rjust(w) if right else text.ljust(w), style))
        return parts
