"""The GPU panel: one block of metric rows (label, bar, value) per GPU the job uses, or why there is none."""

from __future__ import annotations

from functools import cached_property

from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll

from gpuwatch.model.frame import Frame
from gpuwatch.model.gpu import GpuSample
from gpuwatch.model.values import Unsupported, known
from gpuwatch.tui import format as fmt
from gpuwatch.tui.gpu_metrics import METRICS, gpu_of, reading
from gpuwatch.tui.panels.gpu_list import FOLD_AT, GpuList
from gpuwatch.tui.panels.metric_rows import MetricRows
from gpuwatch.tui.panels.plain import Plain
from gpuwatch.tui.panels.steady import SteadyLines
from gpuwatch.tui.view import View

NARROW_W = 120
"""Below this terminal width the GPU area is the full width (tui/app.py's breakpoint): the list puts
two GPUs on a line."""
SCALE_FRAMES = 60
"""Frames whose values scale a bar without a natural full scale (PCIe on a link of unknown width).
The rows draw no history: the time charts above them do."""


class GpuPanel(SteadyLines, Vertical):
    """Every metric of one GPU."""

    def __init__(self, index: int) -> None:
        super().__init__(id=f"gpu-{index}", classes="gpu-panel")
        self.index = index
        self._ready = False
        self._pending: View | None = None
        self._readings: dict[int, tuple[float | None, ...]] = {}
        """Every metric's value in each frame of the window, by ``id(frame)``: a tick reads the new
        frame's, not the whole window's again (ten metrics over up to a screen's width of frames)."""
        self._read: tuple[Frame, ...] = ()
        """The frames ``_readings`` holds, kept alive with it: the analysis drops its oldest frames
        while this panel is not drawn (paused, a detail screen on top), and a freed frame's id is
        the next new frame's (tests/test_tui_frame_caches.py)."""

    def compose(self) -> ComposeResult:
        yield Plain(f"GPU {self.index}", classes="gpu-title")
        yield Plain("", classes="na-note")
        yield MetricRows([(m.key, m.label, m.about) for m in METRICS], classes="gpu-metrics")

    def on_mount(self) -> None:
        self._ready = True
        self._rows = self.query_one(MetricRows)  # not a query a tick
        self._title = self.query_one(".gpu-title", Plain)
        self._note = self.query_one(".na-note", Plain)
        if self._pending is not None:
            self.show(self._pending)

    def show(self, view: View) -> None:
        if not self._ready:  # mounted this tick: draw once the rows exist
            self._pending = view
            return
        gpu, pcie = gpu_of(view.frame, self.index)
        title = self._title
        if gpu is None:
            title.update(f"GPU {self.index}: not in this frame")
            return
        title.update(_title(gpu))
        title.set_class(gpu.lost is not None, "-bottleneck")
        columns = self._history(view.frames[-SCALE_FRAMES:])
        reasons: dict[str, list[str]] = {}
        readings = []
        for m, values in zip(METRICS, columns):
            value = m.read(gpu, pcie)
            scale = m.scale(gpu, pcie)
            frac = float(value) / scale if known(value) and scale else None  # type: ignore[arg-type]
            reason = fmt.reason(value)
            if reason is not None:
                reasons.setdefault(reason, []).append(m.label)
            readings.append((m.text(value, gpu, pcie), frac, values, scale, reason))
        self._rows.set_data(readings)
        note = self._note
        note.update("\n".join(f"N/A {', '.join(labels)}: {r}" for r, labels in reasons.items()))
        note.display = bool(reasons)

    def _history(self, frames: tuple[Frame, ...]) -> list[tuple[float | None, ...]]:
        """Each metric's values over ``frames``, oldest first (one tuple per metric)."""
        known_rows = self._readings
        rows = []
        for f in frames:
            row = known_rows.get(id(f))
            if row is None:
                gpu, pcie = gpu_of(f, self.index)
                row = tuple(reading(m, gpu, pcie) for m in METRICS)
            rows.append(row)
        self._readings = {id(f): row for f, row in zip(frames, rows)}
        self._read = frames
        return list(zip(*rows)) if rows else [() for _ in METRICS]


def _title(g: GpuSample) -> str:
    parts = [f"GPU {g.index}", g.name]
    if not g.used_by_target:
        parts.append("not used by the job")
    others = [p for p in g.processes if not p.is_target]
    if others:
        parts.append(f"{len(others)} other process{'es' if len(others) > 1 else ''}")
    if g.lost:
        parts.append(f"LOST: {g.lost}")
    return " · ".join(parts)


class GpuArea(SteadyLines, VerticalScroll):
    """Holds a GpuPanel per GPU in the frame, or a GpuList of them all when there are FOLD_AT or
    more; says why when the GPU field is unsupported."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._panels: dict[int, GpuPanel] = {}
        """The GPU panels by GPU index (kept here: not a DOM query a tick)."""
        self._list: GpuList | None = None
        """The one-line-per-GPU list, shown instead of the panels from FOLD_AT GPUs on."""

    def compose(self) -> ComposeResult:
        yield Plain("GPU: waiting for the first sample", classes="gpu-notice")

    @cached_property
    def _notice(self) -> Plain:
        """Looked up once (composed once, never removed): not a DOM query a frame."""
        return self.query_one(".gpu-notice", Plain)

    def show(self, view: View) -> None:
        gpus = view.frame.gpus
        notice = self._notice
        if isinstance(gpus, Unsupported):
            notice.update(f"GPU: unavailable — {gpus.reason}")
            notice.display = True
            notice.set_class(True, "-disabled")
            self._keep(set())
            self._drop_list()
            return
        notice.set_class(False, "-disabled")
        if not gpus:
            notice.update("GPU: the job uses no GPU yet")
            notice.display = True
        else:
            notice.display = False
        wanted = {g.index for g in gpus}
        if len(wanted) >= FOLD_AT:  # a panel each would not fit: one line each
            self._keep(set())
            if self._list is None:
                self._list = GpuList()
                self.mount(self._list)
            self._list.show(view.frame, two_a_line=self.app.size.width < NARROW_W)
            return
        self._drop_list()
        self._keep(wanted)
        for index in sorted(wanted):
            panel = self._panels.get(index)
            if panel is None:
                panel = self._panels[index] = GpuPanel(index)
                panel.show(view)
                self.mount(panel)
            else:
                panel.show(view)

    def rows_beyond_one(self) -> int:
        """Rows the GPU area needs above one GPU's least (its title and two metric rows) when it
        stacks over the processes (narrow screens): the lines of the many-GPU list past three."""
        if self._list is None or self.app.size.width >= NARROW_W:
            return 0
        return max(0, self._list.lines - 3)

    def _drop_list(self) -> None:
        if self._list is not None:
            self._list.remove()
            self._list = None

    def _keep(self, indexes: set[int]) -> None:
        for index in [i for i in self._panels if i not in indexes]:
            self._panels.pop(index).remove()
