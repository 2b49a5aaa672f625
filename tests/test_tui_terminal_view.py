"""What the terminal is sent, frame after frame, adds up to the screen drawn whole.

Panels mark only what changed for repaint (the processes table's rows, the threads panel's lines:
tui/panels/keyed_table.py, lazy_static.py); a changed line left out of the repaint regions would stay
stale on the terminal while every test that renders the screen whole sees it right. Here each
update the app sends is applied to a grid of cells, as a terminal would, and compared with the
screen rendered whole after every frame of an H200 recording. (That the widgets' own lines are
right is for their tests: test_lazy_static, test_metric_row and the snapshots.)
"""

from __future__ import annotations

import pytest
from textual._compositor import ChopsUpdate, LayoutUpdate

from bench.draw_cost import _Analysed, _Idle, _painted, analysed

RECORDING = "tests/data/h200/run25_lightning_persistent.jsonl.gz"


def _cells(strip) -> list[tuple[str, str]]:
    return [(ch, str(seg.style)) for seg in strip for ch in seg.text]


@pytest.mark.parametrize("size", [(200, 60), (121, 40), (80, 24)])
async def test_the_terminal_gets_every_change_of_the_screen(size):
    from gpuwatch.tui.app import GpuwatchApp

    ticks = analysed(RECORDING)[:45]
    app = GpuwatchApp(_Idle(), analysis=_Analysed(), self_cpu=lambda: 3.0)  # type: ignore[arg-type]
    width, height = size
    grid: list[list[tuple[str, str] | None]] = [[None] * width for _ in range(height)]

    def put(y: int, x: int, strip) -> None:
        for i, cell in enumerate(_cells(strip)):
            if 0 <= x + i < width:
                grid[y][x + i] = cell

    display = app._display

    def terminal(screen, update) -> None:  # noqa: ANN001 - as App._display
        display(screen, update)
        if isinstance(update, LayoutUpdate):
            for y, strips in enumerate(update.strips):
                x = 0
                for strip in strips:
                    put(update.region.y + y, update.region.x + x, strip)
                    x += strip.cell_length
        elif isinstance(update, ChopsUpdate):  # as ChopsUpdate.render_segments writes it
            for y, x1, x2 in update.spans:
                for end, (x, strip) in zip(update.chop_ends[y], update.chops[y].items()):
                    if strip is None or x > x2 or end <= x1:
                        continue
                    if not (x2 > x >= x1 and end <= x2):
                        strip = strip.crop(0, min(end, x2) - x)
                    put(y, x, strip)

    app._display = terminal  # type: ignore[method-assign]
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        for i, (frame, verdict) in enumerate(ticks):
            app.analysis.add(frame, verdict)
            app._latest = (frame, verdict)
            app.render_latest()
            await _painted(app)
            screen = [_cells(strip) for strip in app.screen._compositor.render_strips()]
            assert [y for y in range(height) if screen[y] != grid[y]] == [], f"frame {i}"
